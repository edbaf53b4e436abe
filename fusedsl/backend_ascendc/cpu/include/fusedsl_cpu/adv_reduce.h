// fusedsl CPU implementation of the Ascend C API: the high-level Sum (归约操作/Sum) and Arange
// (索引计算/Arange), and the pattern reductions ReduceMax / ReduceMin (归约操作).
//
// Sum adds each row's first n elements the way the API page says the device does (the same
// binary tree as ReduceSum: adjacent pairs added level by level, an odd last element carried
// up), rounding every partial sum to T.  Arange writes first + i * diff.
// ReduceMax<T, Pattern::Reduce::AR|RA>(dst, src, [tmp,] srcShape, srcInnerPad): srcShape {d0, d1}
// with rows d1 elements apart, or d1 rounded up to 32 bytes when srcInnerPad (the page: the kernel
// pads the inner axis itself); AR reduces each row (dst[d0]), RA each column (dst[d1]).
#pragma once

#include "adv_common.h"
#include "adv_tmp_sizes.h"
#include "reduce_pattern.h"

namespace AscendC {

struct SumParams {
    uint32_t outter = 1;
    uint32_t inner = 0;   // n rounded up to 32 bytes of T
    uint32_t n = 0;
};

}  // namespace AscendC

namespace fusedsl_cpu {

template <typename T>
inline double PairTreeSum(std::vector<double> v) {
    auto round_t = [](double x) { return static_cast<double>(ToCompute(FromCompute<T>(static_cast<float>(x)))); };
    while (v.size() > 1) {
        std::vector<double> next((v.size() + 1) / 2);
        for (size_t i = 0; i + 1 < v.size(); i += 2) {
            next[i / 2] = round_t(v[i] + v[i + 1]);
        }
        if (v.size() % 2 != 0) {
            next.back() = v.back();
        }
        v.swap(next);
    }
    return v.empty() ? 0.0 : v[0];
}

template <typename T>
inline void SumImpl(Site site, const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>* tmp,
                    const AscendC::SumParams& p) {
    AtSite at(site);
    const char* api = "Sum";
    CheckAdvApi(api, kChipsA2A3_310P, TypeName<T>(), " half float ");
    uint32_t want_inner = static_cast<uint32_t>((p.n * sizeof(T) + 31) / 32 * 32 / sizeof(T));
    if (p.n == 0 || p.inner != want_inner) {
        Fail("%s: sumParams (outter %u, inner %u, n %u): n must be at least 1 and inner n rounded up to 32 bytes "
             "(%u elements of this type)", api, p.outter, p.inner, p.n, want_inner);
    }
    if (p.outter == 0) {
        return;
    }
    uint64_t in_count = static_cast<uint64_t>(p.outter) * p.inner;
    uint64_t out_count = (static_cast<uint64_t>(p.outter) * sizeof(T) + 31) / 32 * 32 / sizeof(T);
    uint32_t s = CheckUb(api, "srcTensor", src.fs_addr, src.GetLength(), in_count * sizeof(T), sizeof(T));
    // only each row's first n elements are read; the padding may hold anything
    for (uint32_t r = 0; r < p.outter; ++r) {
        CheckWritten(api, "srcTensor", s + r * p.inner * sizeof(T), static_cast<uint64_t>(p.n) * sizeof(T));
    }
    uint32_t d = AdvOut(api, "dstTensor", dst, out_count);
    AdvSpan sd{"dstTensor", d, out_count * sizeof(T)};
    AdvSpan ss{"srcTensor", s, in_count * sizeof(T)};
    AdvNoOverlap(api, sd, ss);
    uint64_t need = adv::SumBytes(p.n, sizeof(T));
    AdvScratch(api, tmp, need, need, {sd, ss}, "GetSumMaxMinTmpSize");
    std::vector<double> row(p.n);
    for (uint32_t r = 0; r < p.outter; ++r) {
        for (uint32_t i = 0; i < p.n; ++i) {
            row[i] = AdvLoad<T>(Bytes(src), static_cast<uint64_t>(r) * p.inner + i);
        }
        AdvStore<T>(Bytes(dst), r, PairTreeSum<T>(row));
    }
    // the rest of the last 32-byte block of dst is left as it was
    MarkWritten(d, static_cast<uint64_t>(p.outter) * sizeof(T));
    CountVector(in_count * sizeof(T));
}

template <typename T, typename Pat>
inline void PatternReduceRun(Site site, const char* api, bool is_max, const LocalTensor<T>& dst,
                             const LocalTensor<T>& src, const LocalTensor<uint8_t>* tmp, const uint32_t* shape,
                             bool inner_pad, bool reuse) {
    AtSite at(site);
    CheckAdvApi(api, kChipA2A3, TypeName<T>(), " half float ");
    static_assert(Pat::value == AscendC::ReducePattern::AR || Pat::value == AscendC::ReducePattern::RA,
                  "the pattern reductions support Pattern::Reduce::AR and RA only (the API page)");
    bool ra = Pat::value == AscendC::ReducePattern::RA;
    uint32_t d0 = shape[0], d1 = shape[1];
    if (d0 == 0 || d1 == 0) {
        Fail("%s: srcShape {%u, %u} has an empty axis", api, d0, d1);
    }
    uint64_t per = 32 / sizeof(T);
    uint64_t stride = inner_pad ? (d1 + per - 1) / per * per : d1;
    uint64_t n_src = (static_cast<uint64_t>(d0) - 1) * stride + d1;
    uint64_t n_dst = ra ? d1 : d0;
    AdvSpan ss{"srcTensor", AdvIn(api, "srcTensor", src, n_src), n_src * sizeof(T)};
    AdvSpan sd{"dstTensor", AdvOut(api, "dstTensor", dst, n_dst), n_dst * sizeof(T)};
    AdvNoOverlap(api, sd, ss);
    std::vector<double> x(n_src);
    for (uint64_t i = 0; i < n_src; ++i) {
        x[i] = AdvLoad<T>(Bytes(src), i);
    }
    adv::TmpRange need = adv::PatternReduce(d0, ra ? stride : d1, sizeof(T), ra, reuse);
    AdvScratch(api, tmp, need.min, need.max, {sd, ss}, is_max ? "GetReduceMaxMaxMinTmpSize" :
                                                               "GetReduceMinMaxMinTmpSize");
    if (reuse) {   // isReuseSource: the device may leave anything in the source
        std::memset(Bytes(src), 0xFF, ss.bytes);
    }
    for (uint64_t o = 0; o < n_dst; ++o) {
        double best = ra ? x[o] : x[o * stride];
        uint64_t len = ra ? d0 : d1;
        for (uint64_t j = 1; j < len; ++j) {
            double v = ra ? x[j * stride + o] : x[o * stride + j];
            best = is_max ? std::max(best, v) : std::min(best, v);
        }
        AdvStore<T>(Bytes(dst), o, best);
    }
    MarkWritten(sd.off, sd.bytes);
    CountVector(ss.bytes);
}

}  // namespace fusedsl_cpu

namespace AscendC {

template <typename T, int32_t reduceDim = -1, bool isReuseSource = false, bool isBasicBlock = false>
inline void Sum(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                const LocalTensor<uint8_t>& sharedTmpBuffer, const SumParams& sumParams, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::SumImpl(fs_site, dstTensor, srcTensor, &sharedTmpBuffer, sumParams);
}
template <typename T, int32_t reduceDim = -1, bool isReuseSource = false, bool isBasicBlock = false>
inline void Sum(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, const SumParams& sumParams,
                FUSEDSL_CPU_SITE) {
    fusedsl_cpu::SumImpl(fs_site, dstTensor, srcTensor, nullptr, sumParams);
}

// dst[i] = firstValue + i * diffValue, i < count (int16_t, half, int32_t, float).
template <typename T>
inline void Arange(const LocalTensor<T>& dst, const T firstValue, const T diffValue, const int32_t count,
                   FUSEDSL_CPU_SITE) {
    using namespace fusedsl_cpu;
    AtSite at(fs_site);
    const char* api = "Arange";
    CheckAdvApi(api, kChipsA2A3_310P, TypeName<T>(), " int16_t half int32_t float ");
    if (count < 0) {
        Fail("%s: count = %d is negative", api, count);
    }
    if (count == 0) {
        return;
    }
    uint32_t d = AdvOut(api, "dst", dst, static_cast<uint64_t>(count));
    double first = static_cast<double>(ToCompute(firstValue));
    double diff = static_cast<double>(ToCompute(diffValue));
    for (int32_t i = 0; i < count; ++i) {
        if constexpr (std::is_integral_v<T>) {
            AdvStore<T>(Bytes(dst), i, static_cast<double>(static_cast<int64_t>(first) +
                                                           static_cast<int64_t>(i) * static_cast<int64_t>(diff)));
        } else {
            // in float, as the vector unit computes it
            AdvStore<T>(Bytes(dst), i, static_cast<float>(first) + static_cast<float>(i) * static_cast<float>(diff));
        }
    }
    MarkWritten(d, static_cast<uint64_t>(count) * sizeof(T));
    CountVector(static_cast<uint64_t>(count) * sizeof(T));
}

template <class T, class pattern, bool isReuseSource = false>
inline void ReduceMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                      const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t srcShape[], bool srcInnerPad,
                      FUSEDSL_CPU_SITE) {
    fusedsl_cpu::PatternReduceRun<T, pattern>(fs_site, "ReduceMax", true, dstTensor, srcTensor, &sharedTmpBuffer,
                                              srcShape, srcInnerPad, isReuseSource);
}
template <class T, class pattern, bool isReuseSource = false>
inline void ReduceMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, const uint32_t srcShape[],
                      bool srcInnerPad, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::PatternReduceRun<T, pattern>(fs_site, "ReduceMax", true, dstTensor, srcTensor, nullptr, srcShape,
                                              srcInnerPad, isReuseSource);
}
template <class T, class pattern, bool isReuseSource = false>
inline void ReduceMin(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                      const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t srcShape[], bool srcInnerPad,
                      FUSEDSL_CPU_SITE) {
    fusedsl_cpu::PatternReduceRun<T, pattern>(fs_site, "ReduceMin", false, dstTensor, srcTensor, &sharedTmpBuffer,
                                              srcShape, srcInnerPad, isReuseSource);
}
template <class T, class pattern, bool isReuseSource = false>
inline void ReduceMin(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, const uint32_t srcShape[],
                      bool srcInnerPad, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::PatternReduceRun<T, pattern>(fs_site, "ReduceMin", false, dstTensor, srcTensor, nullptr, srcShape,
                                              srcInnerPad, isReuseSource);
}

}  // namespace AscendC

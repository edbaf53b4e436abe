// fusedsl CPU implementation of the Ascend C API: the high-level Sum (归约操作/Sum) and Arange
// (索引计算/Arange).
//
// Sum adds each row's first n elements the way the API page says the device does (the same
// binary tree as ReduceSum: adjacent pairs added level by level, an odd last element carried
// up), rounding every partial sum to T.  Arange writes first + i * diff.
#pragma once

#include "adv_common.h"
#include "adv_tmp_sizes.h"

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

}  // namespace AscendC

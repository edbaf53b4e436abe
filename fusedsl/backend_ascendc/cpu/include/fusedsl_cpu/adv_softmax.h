// fusedsl CPU implementation of the Ascend C API: the SoftMax family of high-level APIs
// (asc-devkit docs 激活函数/SoftMax接口, LogSoftMax接口): SoftMax, SimpleSoftMax, SoftmaxFlashV2, SoftmaxFlashV3,
// LogSoftMax, SoftmaxGrad, SoftmaxGradFront and AdjustSoftMaxRes, ND format.
//
// The input is [m, k] (k 32-byte aligned; oriSrcK <= k valid columns take part in the row
// reductions).  Per-row results (max, sum) are written as the API pages say: one 32-byte block
// per row holding the value repeated.  Values follow the pages' numpy formulas, computed in
// double and rounded once to the output type (LogSoftMax is log10 of the softmax, as its page
// states).  The shape comes from softmaxShapeInfo, or from the tiling when that is empty.
// Checks beyond adv_common.h: srcK alignment, the shape info against the tensors, isBasicBlock
// only for basic-block shapes (the page's rule), dst may share memory with src only exactly,
// NZ format is not modelled, and the scratch is at least one row's minimum.
#pragma once

#include "adv_common.h"
#include "adv_tmp_sizes.h"
#include "kernel_tiling/kernel_tiling.h"

namespace AscendC {

enum class SoftmaxMode { SOFTMAX_NORMAL = 0, SOFTMAX_OUTPUT_WITHOUT_BRC = 1 };

struct SoftmaxConfig {
    constexpr SoftmaxConfig(const bool isCheckTilingIn) : isCheckTiling(isCheckTilingIn) {}
    constexpr SoftmaxConfig(const bool isCheckTilingIn, const uint32_t oriSrcMIn, const uint32_t oriSrcKIn)
        : isCheckTiling(isCheckTilingIn), oriSrcM(oriSrcMIn), oriSrcK(oriSrcKIn) {}
    constexpr SoftmaxConfig(const bool isCheckTilingIn, const uint32_t oriSrcMIn, const uint32_t oriSrcKIn,
                            const SoftmaxMode modeIn)
        : isCheckTiling(isCheckTilingIn), oriSrcM(oriSrcMIn), oriSrcK(oriSrcKIn), mode(modeIn) {}
    bool isCheckTiling = true;
    uint32_t oriSrcM = 0;
    uint32_t oriSrcK = 0;
    SoftmaxMode mode = SoftmaxMode::SOFTMAX_NORMAL;
};
constexpr SoftmaxConfig SOFTMAX_DEFAULT_CFG = {true, 0, 0, SoftmaxMode::SOFTMAX_NORMAL};

// SoftmaxFlashV3's shape and formula parameters (its page).
struct SoftMaxParams {
    uint32_t srcM;
    uint32_t srcK;
    uint32_t oriSrcM;
    uint32_t oriSrcK;
    uint32_t loopCnt;
    uint32_t splitMeanCnt;
    float alpha;
};

struct SoftMaxShapeInfo {
    uint32_t srcM{0};
    uint32_t srcK{0};
    uint32_t oriSrcM{0};
    uint32_t oriSrcK{0};
};

}  // namespace AscendC

namespace fusedsl_cpu {

struct SmShape {
    uint32_t m;
    uint32_t k;
    uint32_t ori_k;
};

template <typename T>
inline SmShape SoftmaxShape(const char* api, const AscendC::SoftMaxShapeInfo& info, uint32_t tiling_m,
                            uint32_t tiling_k) {
    SmShape s{info.srcM, info.srcK, info.oriSrcK};
    if (s.m == 0 || s.k == 0) {
        s = SmShape{tiling_m, tiling_k, 0};
    }
    if (s.m == 0 || s.k == 0) {
        Fail("%s: softmaxShapeInfo is empty and the tiling holds no shape; pass the [srcM, srcK] shape or a tiling "
             "from the host TilingFunc", api);
    }
    if (s.k * sizeof(T) % 32 != 0) {
        Fail("%s: srcK = %u is not 32-byte aligned (%zu elements of %s); pad the last axis and pass the real length "
             "as oriSrcK", api, s.k, 32 / sizeof(T), TypeName<T>());
    }
    if (s.ori_k == 0) {
        s.ori_k = s.k;
    }
    if (s.ori_k > s.k) {
        Fail("%s: oriSrcK = %u is larger than srcK = %u", api, s.ori_k, s.k);
    }
    return s;
}

// The API page's basic-block shape: 256/sizeof(T) <= k < 2048, k a multiple of 64, m of 8.
template <typename T>
inline void CheckBasicBlock(const char* api, const SmShape& s) {
    bool ok = s.k < 2048 && s.k >= 256 / sizeof(T) && s.k % 64 == 0 && s.m % 8 == 0;
    if (!ok) {
        Fail("%s: isBasicBlock is set but [%u, %u] is not a basic block (the last axis in [%zu, 2048) and a multiple "
             "of 64, the other a multiple of 8); the device would compute wrong rows — leave isBasicBlock false",
             api, s.m, s.k, 256 / sizeof(T));
    }
}

inline void RejectNz(const char* api, bool nz) {
    if (nz) {
        Fail("%s: the NZ data format is not modelled by fusedsl's CPU implementation (ND only)", api);
    }
}

// dst may coincide with src exactly (the pages allow reuse) but not partly overlap it.
inline void SameOrApart(const char* api, const AdvSpan& a, const AdvSpan& b) {
    if (a.off == b.off && a.bytes == b.bytes) {
        return;
    }
    AdvNoOverlap(api, a, b);
}

template <typename T>
inline std::vector<double> LoadRows(const LocalTensor<T>& t, uint64_t n) {
    std::vector<double> v(n);
    for (uint64_t i = 0; i < n; ++i) {
        v[i] = AdvLoad<T>(Bytes(t), i);
    }
    return v;
}

// One value per row, broadcast over the row's 32-byte block.
template <typename U>
inline void StoreRowBlocks(const char* api, const char* role, const LocalTensor<U>& t, const std::vector<double>& v) {
    uint64_t epb = 32 / sizeof(U);
    uint32_t off = AdvOut(api, role, t, v.size() * epb);
    for (size_t r = 0; r < v.size(); ++r) {
        for (uint64_t j = 0; j < epb; ++j) {
            AdvStore<U>(Bytes(t), r * epb + j, v[r]);
        }
    }
    MarkWritten(off, v.size() * epb * sizeof(U));
}

template <typename U>
inline std::vector<double> LoadRowBlocks(const char* api, const char* role, const LocalTensor<U>& t, uint32_t m) {
    uint64_t epb = 32 / sizeof(U);
    AdvIn(api, role, t, static_cast<uint64_t>(m) * epb);
    std::vector<double> v(m);
    for (uint32_t r = 0; r < m; ++r) {
        v[r] = AdvLoad<U>(Bytes(t), r * epb);
    }
    return v;
}

template <typename T>
inline void StoreRows(const char* api, const LocalTensor<T>& dst, const std::vector<double>& v) {
    uint32_t off = AdvOut(api, "dstTensor", dst, v.size());
    for (size_t i = 0; i < v.size(); ++i) {
        AdvStore<T>(Bytes(dst), i, v[i]);
    }
    MarkWritten(off, v.size() * sizeof(T));
    CountVector(v.size() * sizeof(T));
}

enum class SmKind { kSoftMax, kLog, kSimple };

// SoftMax / LogSoftMax / SimpleSoftMax.  sum/max are outputs (inputs for SimpleSoftMax).
template <typename T, typename U>
inline void SoftmaxRun(const char* api, Site site, SmKind kind, const LocalTensor<T>& dst, const LocalTensor<U>* sum,
                       const LocalTensor<U>* max, const LocalTensor<T>& src, const LocalTensor<uint8_t>* tmp,
                       uint32_t tiling_m, uint32_t tiling_k, const AscendC::SoftMaxShapeInfo& info, bool basic,
                       bool nz) {
    AtSite at(site);
    CheckAdvApi(api, kChipsA2A3_310P, TypeName<T>(), " half float ");
    RejectNz(api, nz);
    SmShape s = SoftmaxShape<T>(api, info, tiling_m, tiling_k);
    if (basic) {
        CheckBasicBlock<T>(api, s);
    }
    uint64_t n = static_cast<uint64_t>(s.m) * s.k;
    uint32_t so = AdvIn(api, "srcTensor", src, n);
    uint32_t d = AdvOut(api, "dstTensor", dst, n);
    AdvSpan ss{"srcTensor", so, n * sizeof(T)};
    AdvSpan sd{"dstTensor", d, n * sizeof(T)};
    SameOrApart(api, sd, ss);
    uint64_t row_block = static_cast<uint64_t>(s.m) * 32;
    AdvSpan ssum{"sumTensor", 0, 0};
    AdvSpan smax{"maxTensor", 0, 0};
    if (sum != nullptr) {
        ssum = {"sumTensor", AdvOut(api, "sumTensor", *sum, row_block / sizeof(U)), row_block};
        smax = {"maxTensor", AdvOut(api, "maxTensor", *max, row_block / sizeof(U)), row_block};
        AdvNoOverlap(api, ssum, sd);
        AdvNoOverlap(api, smax, sd);
        AdvNoOverlap(api, ssum, smax);
    }
    uint64_t need = adv::SoftMaxRowMin(s.k, sizeof(T));
    AdvScratch(api, tmp, need, need * s.m, {sd, ss, ssum, smax}, "GetSoftMaxMinTmpSize");
    std::vector<double> x = LoadRows(src, n);
    std::vector<double> in_max, in_sum;
    if (kind == SmKind::kSimple) {
        in_max = LoadRowBlocks(api, "inMaxTensor", *max, s.m);
        in_sum = LoadRowBlocks(api, "inSumTensor", *sum, s.m);
    }
    std::vector<double> out(n), row_max(s.m), row_sum(s.m);
    for (uint32_t r = 0; r < s.m; ++r) {
        const double* xr = x.data() + static_cast<uint64_t>(r) * s.k;
        double mx = -INFINITY, sm = 0.0;
        if (kind == SmKind::kSimple) {
            mx = in_max[r];
            sm = in_sum[r];
        } else {
            for (uint32_t j = 0; j < s.ori_k; ++j) {
                mx = std::max(mx, xr[j]);
            }
            // the reduced max is held in U before it is subtracted
            mx = AdvRound<U>(mx);
            for (uint32_t j = 0; j < s.ori_k; ++j) {
                sm += std::exp(xr[j] - mx);
            }
            sm = AdvRound<U>(sm);
        }
        row_max[r] = mx;
        row_sum[r] = sm;
        for (uint32_t j = 0; j < s.k; ++j) {
            double v = std::exp(xr[j] - mx) / sm;
            out[static_cast<uint64_t>(r) * s.k + j] = kind == SmKind::kLog ? std::log10(v) : v;
        }
    }
    StoreRows(api, dst, out);
    if (sum != nullptr && kind != SmKind::kSimple) {
        StoreRowBlocks(api, "sumTensor", *sum, row_sum);
        StoreRowBlocks(api, "maxTensor", *max, row_max);
    }
}

// SoftmaxFlashV2: one block of columns of a longer row; with isUpdate the running max and
// sum of the earlier blocks come in (inMax, inExpSum) and expMax = e^(inMax - newMax) rescales.
template <typename T, typename U>
inline void FlashV2Run(Site site, bool update, const LocalTensor<T>& dst, const LocalTensor<U>& exp_sum,
                       const LocalTensor<U>& max, const LocalTensor<T>& src, const LocalTensor<T>& exp_max,
                       const LocalTensor<U>& in_exp_sum, const LocalTensor<U>& in_max,
                       const LocalTensor<uint8_t>* tmp, uint32_t tiling_m, uint32_t tiling_k,
                       const AscendC::SoftMaxShapeInfo& info, bool basic, bool nz) {
    const char* api = "SoftmaxFlashV2";
    AtSite at(site);
    CheckAdvApi(api, kChipsA2A3_310P, TypeName<T>(), " half float ");
    RejectNz(api, nz);
    SmShape s = SoftmaxShape<T>(api, info, tiling_m, tiling_k);
    if (basic) {
        CheckBasicBlock<T>(api, s);
    }
    uint64_t n = static_cast<uint64_t>(s.m) * s.k;
    uint32_t so = AdvIn(api, "srcTensor", src, n);
    uint32_t d = AdvOut(api, "dstTensor", dst, n);
    AdvSpan ss{"srcTensor", so, n * sizeof(T)};
    AdvSpan sd{"dstTensor", d, n * sizeof(T)};
    SameOrApart(api, sd, ss);
    std::vector<double> x = LoadRows(src, n);
    std::vector<double> old_max, old_sum;
    if (update) {   // read before anything is written: the outputs may be the same tensors
        old_max = LoadRowBlocks(api, "inMaxTensor", in_max, s.m);
        old_sum = LoadRowBlocks(api, "inExpSumTensor", in_exp_sum, s.m);
    }
    uint64_t need = adv::SoftMaxFlashV2Min(s.k, sizeof(T), sizeof(U), basic);
    AdvScratch(api, tmp, need, need * s.m, {sd, ss}, "GetSoftMaxFlashV2MinTmpSize");
    std::vector<double> out(n), new_max(s.m), new_sum(s.m), rescale(s.m);
    for (uint32_t r = 0; r < s.m; ++r) {
        const double* xr = x.data() + static_cast<uint64_t>(r) * s.k;
        double mx = update ? old_max[r] : -INFINITY;
        for (uint32_t j = 0; j < s.ori_k; ++j) {
            mx = std::max(mx, xr[j]);
        }
        mx = AdvRound<U>(mx);
        double sm = 0.0;
        for (uint32_t j = 0; j < s.k; ++j) {
            double e = std::exp(xr[j] - mx);
            out[static_cast<uint64_t>(r) * s.k + j] = e;
            if (j < s.ori_k) {
                sm += e;
            }
        }
        if (update) {
            rescale[r] = std::exp(old_max[r] - mx);
            sm += rescale[r] * old_sum[r];
        }
        new_max[r] = mx;
        new_sum[r] = sm;
    }
    StoreRows(api, dst, out);
    StoreRowBlocks(api, "expSumTensor", exp_sum, new_sum);
    StoreRowBlocks(api, "maxTensor", max, new_max);
    if (update) {
        StoreRowBlocks(api, "expMaxTensor", exp_max, rescale);
    }
}

// SoftmaxFlashV3 (the PASA form of SoftmaxFlash), as its page's pseudo-code computes it per row of k
// (k >= 512, a multiple of 64; m a multiple of 8; splitMeanCnt = 8): eight partial means over the
// columns the block sums gather (64-column group c % 512 / 64 of the first 512, then 8-column group
// (c - 512) % 64 / 8 of each further 64), the row mean, each baseK = k / 8 contiguous columns shifted
// by (mean - partial mean) * alpha / (1 - alpha), then the running max / sum / mean with update
// (loopCnt the block count so far) and dst = exp(x - max); expMax = exp(inMax - max + shiftPrev).
template <typename T, typename U>
inline void FlashV3Run(Site site, bool update, const LocalTensor<T>& dst, const LocalTensor<U>& mean_out,
                       const LocalTensor<U>& sum_out, const LocalTensor<U>& max_out, const LocalTensor<T>& src,
                       const LocalTensor<T>& exp_max, const LocalTensor<U>& in_mean, const LocalTensor<U>& in_sum,
                       const LocalTensor<U>& in_max, const LocalTensor<uint8_t>* tmp,
                       const AscendC::SoftMaxParams& p) {
    const char* api = "SoftmaxFlashV3";
    AtSite at(site);
    CheckAdvApi(api, kChipA2A3, TypeName<T>(), " half ");
    if (!std::is_same_v<U, float>) {
        Fail("%s: U = %s; the page supports float for the mean/sum/max tensors", api, TypeName<U>());
    }
    const uint32_t m = p.srcM, k = p.srcK;
    if (p.oriSrcM != m || p.oriSrcK != k) {
        Fail("%s: oriSrcM x oriSrcK = %u x %u differs from srcM x srcK = %u x %u; the page supports aligned shapes "
             "only", api, p.oriSrcM, p.oriSrcK, m, k);
    }
    if (k < 512 || k % 64 != 0 || m % 8 != 0 || m == 0) {
        Fail("%s: srcM x srcK = %u x %u; the page needs srcK >= 512 and a multiple of 64, srcM a multiple of 8", api,
             m, k);
    }
    if (p.splitMeanCnt != 8) {
        Fail("%s: splitMeanCnt = %u; the page supports only 8", api, p.splitMeanCnt);
    }
    if (update && p.loopCnt < 1) {
        Fail("%s: loopCnt = %u; with isUpdate it is the number of blocks so far, at least 1", api, p.loopCnt);
    }
    if (!(p.alpha > 0.0f && p.alpha < 1.0f)) {
        Fail("%s: alpha = %g; the formula divides by 1 - alpha (recommended 0.9375, 0.96889, 0.984497)", api,
             static_cast<double>(p.alpha));
    }
    const uint64_t n = static_cast<uint64_t>(m) * k;
    uint32_t so = AdvIn(api, "srcTensor", src, n);
    uint32_t d = AdvOut(api, "dstTensor", dst, n);
    AdvSpan ss{"srcTensor", so, n * sizeof(T)};
    AdvSpan sd{"dstTensor", d, n * sizeof(T)};
    SameOrApart(api, sd, ss);
    std::vector<double> x = LoadRows(src, n);
    std::vector<double> old_mean, old_sum, old_max;
    if (update) {   // read first: the outputs may be the same tensors (the page allows it)
        old_mean = LoadRowBlocks(api, "inMeanTensor", in_mean, m);
        old_sum = LoadRowBlocks(api, "inExpSumTensor", in_sum, m);
        old_max = LoadRowBlocks(api, "inMaxTensor", in_max, m);
    }
    const uint64_t need = adv::SoftMaxFlashV3Min(k);
    AdvScratch(api, tmp, need, need * m, {sd, ss}, "GetSoftMaxFlashV3MaxMinTmpSize");
    const double scalar = static_cast<double>(p.alpha) / (1.0 - static_cast<double>(p.alpha));
    const uint32_t base_k = k / 8;
    std::vector<double> out(n), new_mean(m), new_sum(m), new_max(m), rescale(m);
    for (uint32_t r = 0; r < m; ++r) {
        double* xr = x.data() + static_cast<uint64_t>(r) * k;
        double part[8] = {};
        for (uint32_t c = 0; c < k; ++c) {
            part[c < 512 ? c / 64 : (c - 512) % 64 / 8] += xr[c];
        }
        double mean = 0.0;
        for (double& v : part) {
            v /= base_k;
            mean += v;
        }
        mean /= 8;
        for (uint32_t c = 0; c < k; ++c) {
            xr[c] -= (mean - part[c / base_k]) * scalar;
        }
        double row_max = -INFINITY;
        for (uint32_t c = 0; c < k; ++c) {
            row_max = std::max(row_max, xr[c]);
        }
        const double x_mean = update ? (mean + old_mean[r] * (p.loopCnt - 1)) / p.loopCnt : mean;
        const double shift_curr = (mean - x_mean) * scalar;
        double x_max = shift_curr + row_max;
        double shift_prev = 0.0;
        if (update) {
            shift_prev = (old_mean[r] - x_mean) * scalar;
            x_max = std::max(x_max, shift_prev + old_max[r]);
        }
        const double sub = x_max - shift_curr;
        double sum = 0.0;
        for (uint32_t c = 0; c < k; ++c) {
            const double e = std::exp(xr[c] - sub);
            out[static_cast<uint64_t>(r) * k + c] = e;
            sum += e;
        }
        if (update) {
            rescale[r] = std::exp(old_max[r] - x_max + shift_prev);
            sum += rescale[r] * old_sum[r];
        }
        new_mean[r] = x_mean;
        new_sum[r] = sum;
        new_max[r] = x_max;
    }
    StoreRows(api, dst, out);
    StoreRowBlocks(api, "meanTensor", mean_out, new_mean);
    StoreRowBlocks(api, "expSumTensor", sum_out, new_sum);
    StoreRowBlocks(api, "maxTensor", max_out, new_max);
    if (update) {
        StoreRowBlocks(api, "expMaxTensor", exp_max, rescale);
    }
}

// SoftmaxGrad / SoftmaxGradFront: d = rowsum(grad * src); dst = (grad - d) * src, or d per row.
template <typename T>
inline void GradRun(const char* api, Site site, bool front, const LocalTensor<T>& dst, const LocalTensor<T>& grad,
                    const LocalTensor<T>& src, const LocalTensor<uint8_t>* tmp, uint32_t tiling_m, uint32_t tiling_k,
                    const AscendC::SoftMaxShapeInfo& info, bool basic, bool nz) {
    AtSite at(site);
    CheckAdvApi(api, kChipsA2A3_310P, TypeName<T>(), " half float ");
    RejectNz(api, nz);
    SmShape s = SoftmaxShape<T>(api, info, tiling_m, tiling_k);
    if (basic) {
        CheckBasicBlock<T>(api, s);
    }
    uint64_t n = static_cast<uint64_t>(s.m) * s.k;
    AdvSpan sg{"gradTensor", AdvIn(api, "gradTensor", grad, n), n * sizeof(T)};
    AdvSpan ss{"srcTensor", AdvIn(api, "srcTensor", src, n), n * sizeof(T)};
    uint64_t dn = front ? static_cast<uint64_t>(s.m) * (32 / sizeof(T)) : n;
    AdvSpan sd{"dstTensor", AdvOut(api, "dstTensor", dst, dn), dn * sizeof(T)};
    if (!front) {
        SameOrApart(api, sd, sg);
        SameOrApart(api, sd, ss);
    } else if (!(sd.off == ss.off || sd.off == sg.off)) {
        AdvNoOverlap(api, sd, ss);
        AdvNoOverlap(api, sd, sg);
    }
    uint64_t need = adv::SoftMaxGradRowMin(s.k, sizeof(T), front);
    AdvScratch(api, tmp, need, need * s.m, {sd, sg, ss}, "GetSoftMaxGradMinTmpSize");
    std::vector<double> g = LoadRows(grad, n), y = LoadRows(src, n);
    std::vector<double> d(s.m), out(front ? 0 : n);
    for (uint32_t r = 0; r < s.m; ++r) {
        double acc = 0.0;
        for (uint32_t j = 0; j < s.ori_k; ++j) {
            uint64_t i = static_cast<uint64_t>(r) * s.k + j;
            acc += g[i] * y[i];
        }
        d[r] = AdvRound<T>(acc);
        if (!front) {
            for (uint32_t j = 0; j < s.k; ++j) {
                uint64_t i = static_cast<uint64_t>(r) * s.k + j;
                out[i] = (g[i] - d[r]) * y[i];
            }
        }
    }
    if (front) {
        StoreRowBlocks(api, "dstTensor", dst, d);
    } else {
        StoreRows(api, dst, out);
    }
}

}  // namespace fusedsl_cpu

namespace AscendC {

// ---- SoftMax ----
template <typename T, bool isReuseSource = false, bool isBasicBlock = false, bool isDataFormatNZ = false,
          const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SoftMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& sumTensor, const LocalTensor<T>& maxTensor,
                    const LocalTensor<T>& srcTensor, const LocalTensor<uint8_t>& sharedTmpBuffer,
                    const SoftMaxTiling& tiling, const SoftMaxShapeInfo& softmaxShapeInfo = {}, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::SoftmaxRun<T, T>("SoftMax", fs_site, fusedsl_cpu::SmKind::kSoftMax, dstTensor, &sumTensor, &maxTensor,
                                  srcTensor, &sharedTmpBuffer, tiling.srcM, tiling.srcK, softmaxShapeInfo,
                                  isBasicBlock, isDataFormatNZ);
}
template <typename T, bool isReuseSource = false, bool isBasicBlock = false, bool isDataFormatNZ = false,
          const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SoftMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& sumTensor, const LocalTensor<T>& maxTensor,
                    const LocalTensor<T>& srcTensor, const SoftMaxTiling& tiling,
                    const SoftMaxShapeInfo& softmaxShapeInfo = {}, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::SoftmaxRun<T, T>("SoftMax", fs_site, fusedsl_cpu::SmKind::kSoftMax, dstTensor, &sumTensor, &maxTensor,
                                  srcTensor, nullptr, tiling.srcM, tiling.srcK, softmaxShapeInfo, isBasicBlock,
                                  isDataFormatNZ);
}
template <typename T, bool isReuseSource = false, bool isBasicBlock = false, bool isDataFormatNZ = false,
          const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SoftMax(const LocalTensor<half>& dstTensor, const LocalTensor<float>& sumTensor,
                    const LocalTensor<float>& maxTensor, const LocalTensor<half>& srcTensor,
                    const LocalTensor<uint8_t>& sharedTmpBuffer, const SoftMaxTiling& tiling,
                    const SoftMaxShapeInfo& softmaxShapeInfo = {}, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::SoftmaxRun<half, float>("SoftMax", fs_site, fusedsl_cpu::SmKind::kSoftMax, dstTensor, &sumTensor,
                                         &maxTensor, srcTensor, &sharedTmpBuffer, tiling.srcM, tiling.srcK,
                                         softmaxShapeInfo, isBasicBlock, isDataFormatNZ);
}
template <typename T, bool isReuseSource = false, bool isBasicBlock = false,
          const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SoftMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                    const LocalTensor<uint8_t>& sharedTmpBuffer, const SoftMaxTiling& tiling,
                    const SoftMaxShapeInfo& softmaxShapeInfo = {}, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::SoftmaxRun<T, T>("SoftMax", fs_site, fusedsl_cpu::SmKind::kSoftMax, dstTensor, nullptr, nullptr,
                                  srcTensor, &sharedTmpBuffer, tiling.srcM, tiling.srcK, softmaxShapeInfo,
                                  isBasicBlock, false);
}
template <typename T, bool isReuseSource = false, bool isBasicBlock = false,
          const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SoftMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, const SoftMaxTiling& tiling,
                    const SoftMaxShapeInfo& softmaxShapeInfo = {}, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::SoftmaxRun<T, T>("SoftMax", fs_site, fusedsl_cpu::SmKind::kSoftMax, dstTensor, nullptr, nullptr,
                                  srcTensor, nullptr, tiling.srcM, tiling.srcK, softmaxShapeInfo, isBasicBlock, false);
}

// ---- SimpleSoftMax: exp(src - inMax) / inSum with the given per-row max and sum ----
template <typename T, bool isReuseSource = false, bool isBasicBlock = false, bool isDataFormatNZ = false,
          const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SimpleSoftMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& inSumTensor,
                          const LocalTensor<T>& inMaxTensor, const LocalTensor<T>& srcTensor,
                          const LocalTensor<uint8_t>& sharedTmpBuffer, const SoftMaxTiling& tiling,
                          const SoftMaxShapeInfo& softmaxShapeInfo = {}, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::SoftmaxRun<T, T>("SimpleSoftMax", fs_site, fusedsl_cpu::SmKind::kSimple, dstTensor, &inSumTensor,
                                  &inMaxTensor, srcTensor, &sharedTmpBuffer, tiling.srcM, tiling.srcK,
                                  softmaxShapeInfo, isBasicBlock, isDataFormatNZ);
}
template <typename T, bool isReuseSource = false, bool isBasicBlock = false, bool isDataFormatNZ = false,
          const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SimpleSoftMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& inSumTensor,
                          const LocalTensor<T>& inMaxTensor, const LocalTensor<T>& srcTensor,
                          const SoftMaxTiling& tiling, const SoftMaxShapeInfo& softmaxShapeInfo = {},
                          FUSEDSL_CPU_SITE) {
    fusedsl_cpu::SoftmaxRun<T, T>("SimpleSoftMax", fs_site, fusedsl_cpu::SmKind::kSimple, dstTensor, &inSumTensor,
                                  &inMaxTensor, srcTensor, nullptr, tiling.srcM, tiling.srcK, softmaxShapeInfo,
                                  isBasicBlock, isDataFormatNZ);
}

// ---- LogSoftMax: log10 of the softmax (the API page's formula) ----
template <typename T, bool isReuseSource = false, bool isDataFormatNZ = false>
inline void LogSoftMax(const LocalTensor<T>& dst, const LocalTensor<T>& sum, const LocalTensor<T>& max,
                       const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer,
                       const LogSoftMaxTiling& tiling, const SoftMaxShapeInfo& softmaxShapeInfo = {},
                       FUSEDSL_CPU_SITE) {
    fusedsl_cpu::SoftmaxRun<T, T>("LogSoftMax", fs_site, fusedsl_cpu::SmKind::kLog, dst, &sum, &max, src,
                                  &sharedTmpBuffer, tiling.srcM, tiling.srcK, softmaxShapeInfo, false, isDataFormatNZ);
}

// ---- SoftmaxFlashV3 ----
template <typename T, typename U, bool isUpdate = false, bool isReuseSource = false, bool isBasicBlock = false,
          bool isDataFormatNZ = false, const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SoftmaxFlashV3(const LocalTensor<T>& dstTensor, const LocalTensor<U>& meanTensor,
                           const LocalTensor<U>& expSumTensor, const LocalTensor<U>& maxTensor,
                           const LocalTensor<T>& srcTensor, const LocalTensor<T>& expMaxTensor,
                           const LocalTensor<U>& inMeanTensor, const LocalTensor<U>& inExpSumTensor,
                           const LocalTensor<U>& inMaxTensor, const LocalTensor<uint8_t>& sharedTmpBuffer,
                           const SoftMaxTiling& tiling, const SoftMaxParams& params, FUSEDSL_CPU_SITE) {
    (void)tiling;
    static_assert(!isReuseSource && !isBasicBlock && !isDataFormatNZ, "SoftmaxFlashV3: isReuseSource, isBasicBlock "
                  "and isDataFormatNZ are reserved (the page: keep the defaults)");
    fusedsl_cpu::FlashV3Run<T, U>(fs_site, isUpdate, dstTensor, meanTensor, expSumTensor, maxTensor, srcTensor,
                                  expMaxTensor, inMeanTensor, inExpSumTensor, inMaxTensor, &sharedTmpBuffer, params);
}
template <typename T, typename U, bool isUpdate = false, bool isReuseSource = false, bool isBasicBlock = false,
          bool isDataFormatNZ = false, const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SoftmaxFlashV3(const LocalTensor<T>& dstTensor, const LocalTensor<U>& meanTensor,
                           const LocalTensor<U>& expSumTensor, const LocalTensor<U>& maxTensor,
                           const LocalTensor<T>& srcTensor, const LocalTensor<T>& expMaxTensor,
                           const LocalTensor<U>& inMeanTensor, const LocalTensor<U>& inExpSumTensor,
                           const LocalTensor<U>& inMaxTensor, const SoftMaxTiling& tiling,
                           const SoftMaxParams& params, FUSEDSL_CPU_SITE) {
    (void)tiling;
    static_assert(!isReuseSource && !isBasicBlock && !isDataFormatNZ, "SoftmaxFlashV3: isReuseSource, isBasicBlock "
                  "and isDataFormatNZ are reserved (the page: keep the defaults)");
    fusedsl_cpu::FlashV3Run<T, U>(fs_site, isUpdate, dstTensor, meanTensor, expSumTensor, maxTensor, srcTensor,
                                  expMaxTensor, inMeanTensor, inExpSumTensor, inMaxTensor, nullptr, params);
}

// ---- SoftmaxFlashV2 ----
template <typename T, bool isUpdate = false, bool isReuseSource = false, bool isBasicBlock = false,
          bool isDataFormatNZ = false, const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SoftmaxFlashV2(const LocalTensor<T>& dstTensor, const LocalTensor<T>& expSumTensor,
                           const LocalTensor<T>& maxTensor, const LocalTensor<T>& srcTensor,
                           const LocalTensor<T>& expMaxTensor, const LocalTensor<T>& inExpSumTensor,
                           const LocalTensor<T>& inMaxTensor, const LocalTensor<uint8_t>& sharedTmpBuffer,
                           const SoftMaxTiling& tiling, const SoftMaxShapeInfo& softmaxShapeInfo = {},
                           FUSEDSL_CPU_SITE) {
    fusedsl_cpu::FlashV2Run<T, T>(fs_site, isUpdate, dstTensor, expSumTensor, maxTensor, srcTensor, expMaxTensor,
                                  inExpSumTensor, inMaxTensor, &sharedTmpBuffer, tiling.srcM, tiling.srcK,
                                  softmaxShapeInfo, isBasicBlock, isDataFormatNZ);
}
template <typename T, bool isUpdate = false, bool isReuseSource = false, bool isBasicBlock = false,
          bool isDataFormatNZ = false, const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SoftmaxFlashV2(const LocalTensor<T>& dstTensor, const LocalTensor<T>& expSumTensor,
                           const LocalTensor<T>& maxTensor, const LocalTensor<T>& srcTensor,
                           const LocalTensor<T>& expMaxTensor, const LocalTensor<T>& inExpSumTensor,
                           const LocalTensor<T>& inMaxTensor, const SoftMaxTiling& tiling,
                           const SoftMaxShapeInfo& softmaxShapeInfo = {}, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::FlashV2Run<T, T>(fs_site, isUpdate, dstTensor, expSumTensor, maxTensor, srcTensor, expMaxTensor,
                                  inExpSumTensor, inMaxTensor, nullptr, tiling.srcM, tiling.srcK, softmaxShapeInfo,
                                  isBasicBlock, isDataFormatNZ);
}
template <typename T, bool isUpdate = false, bool isReuseSource = false, bool isBasicBlock = false,
          bool isDataFormatNZ = false, const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SoftmaxFlashV2(const LocalTensor<half>& dstTensor, const LocalTensor<float>& expSumTensor,
                           const LocalTensor<float>& maxTensor, const LocalTensor<half>& srcTensor,
                           const LocalTensor<half>& expMaxTensor, const LocalTensor<float>& inExpSumTensor,
                           const LocalTensor<float>& inMaxTensor, const LocalTensor<uint8_t>& sharedTmpBuffer,
                           const SoftMaxTiling& tiling, const SoftMaxShapeInfo& softmaxShapeInfo = {},
                           FUSEDSL_CPU_SITE) {
    fusedsl_cpu::FlashV2Run<half, float>(fs_site, isUpdate, dstTensor, expSumTensor, maxTensor, srcTensor,
                                         expMaxTensor, inExpSumTensor, inMaxTensor, &sharedTmpBuffer, tiling.srcM,
                                         tiling.srcK, softmaxShapeInfo, isBasicBlock, isDataFormatNZ);
}

// ---- SoftmaxGrad / SoftmaxGradFront ----
template <typename T, bool isReuseSource = false, bool isDataFormatNZ = false>
inline void SoftmaxGrad(const LocalTensor<T>& dstTensor, const LocalTensor<T>& gradTensor,
                        const LocalTensor<T>& srcTensor, const LocalTensor<uint8_t>& sharedTmpBuffer,
                        const SoftMaxTiling& tiling, bool isFront = false,
                        const SoftMaxShapeInfo& softmaxShapeInfo = {}, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::GradRun<T>("SoftmaxGrad", fs_site, isFront, dstTensor, gradTensor, srcTensor, &sharedTmpBuffer,
                            tiling.srcM, tiling.srcK, softmaxShapeInfo, false, isDataFormatNZ);
}
template <typename T, bool isReuseSource = false, bool isDataFormatNZ = false>
inline void SoftmaxGrad(const LocalTensor<T>& dstTensor, const LocalTensor<T>& gradTensor,
                        const LocalTensor<T>& srcTensor, const SoftMaxTiling& tiling, bool isFront = false,
                        const SoftMaxShapeInfo& softmaxShapeInfo = {}, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::GradRun<T>("SoftmaxGrad", fs_site, isFront, dstTensor, gradTensor, srcTensor, nullptr, tiling.srcM,
                            tiling.srcK, softmaxShapeInfo, false, isDataFormatNZ);
}
template <typename T, bool isBasicBlock = false, bool isDataFormatNZ = false>
inline void SoftmaxGradFront(const LocalTensor<T>& dstTensor, const LocalTensor<T>& gradTensor,
                             const LocalTensor<T>& srcTensor, const LocalTensor<uint8_t>& sharedTmpBuffer,
                             const SoftMaxTiling& tiling, const SoftMaxShapeInfo& softmaxShapeInfo = {},
                             FUSEDSL_CPU_SITE) {
    fusedsl_cpu::GradRun<T>("SoftmaxGradFront", fs_site, true, dstTensor, gradTensor, srcTensor, &sharedTmpBuffer,
                            tiling.srcM, tiling.srcK, softmaxShapeInfo, isBasicBlock, isDataFormatNZ);
}
template <typename T, bool isBasicBlock = false, bool isDataFormatNZ = false>
inline void SoftmaxGradFront(const LocalTensor<T>& dstTensor, const LocalTensor<T>& gradTensor,
                             const LocalTensor<T>& srcTensor, const SoftMaxTiling& tiling,
                             const SoftMaxShapeInfo& softmaxShapeInfo = {}, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::GradRun<T>("SoftmaxGradFront", fs_site, true, dstTensor, gradTensor, srcTensor, nullptr, tiling.srcM,
                            tiling.srcK, softmaxShapeInfo, isBasicBlock, isDataFormatNZ);
}

// ---- AdjustSoftMaxRes: rows whose max has the bit pattern `from` become `to` ----
template <typename T1, typename T2, bool isDataFormatNZ = false, uint8_t stepSizeMode = 0>
inline bool AdjustSoftMaxRes(const LocalTensor<T1>& softMaxRes, const LocalTensor<T2>& maxTensor, const uint32_t from,
                             const T1 to, const SoftMaxShapeInfo& softmaxShapeInfo, FUSEDSL_CPU_SITE) {
    using namespace fusedsl_cpu;
    const char* api = "AdjustSoftMaxRes";
    AtSite at(fs_site);
    CheckAdvApi(api, kChipsA2A3_310P, TypeName<T1>(), " half float ");
    RejectNz(api, isDataFormatNZ);
    SmShape s = SoftmaxShape<T1>(api, softmaxShapeInfo, 0, 0);
    uint64_t n = static_cast<uint64_t>(s.m) * s.k;
    uint32_t off = AdvIn(api, "softMaxRes", softMaxRes, n);
    uint64_t epb = 32 / sizeof(T2);
    AdvIn(api, "maxTensor", maxTensor, s.m * epb);
    bool any = false;
    for (uint32_t r = 0; r < s.m; ++r) {
        T2 mv = LoadAs<T2>(Bytes(maxTensor) + r * epb * sizeof(T2));
        uint32_t bits = 0;
        std::memcpy(&bits, &mv, sizeof(T2));
        if (bits != (sizeof(T2) == 4 ? from : (from & 0xFFFFu))) {
            continue;
        }
        any = true;
        for (uint32_t j = 0; j < s.k; ++j) {
            StoreAs(Bytes(softMaxRes) + (static_cast<uint64_t>(r) * s.k + j) * sizeof(T1), to);
        }
    }
    MarkWritten(off, n * sizeof(T1));
    return any;
}

}  // namespace AscendC

// fusedsl CPU implementation of the Ascend C API: RmsNorm (asc-devkit docs 归一化操作/RmsNorm) and
// PopStackBuffer (the UB that TPipe::InitBuffer left free, which the framework-allocated
// high-level APIs use as scratch).
//
// DeepNorm over [B, S, H]: LayerNorm(alpha * x + gx) with the LayerNorm [B, S, H] outputs — the
// normalised tensor, and per row the mean and the variance (the sample's golden and LayerNorm's
// page; DeepNorm's parameter table calls the second output rstd).
//
// RmsNorm over [B, S, H] (H 32-byte aligned, originalHLength <= H valid): y = x / sqrt(mean(x^2)
// + epsilon) * gamma per row, the mean over the original H (the tiling's reciprocalOfHLength),
// computed in float as the vector unit does.  Shapes come from the tiling; src, dst and gamma
// must hold them; the scratch is at least one row's temporaries (GetRmsNormMinTmpSize's rule).
#pragma once

#include "adv_common.h"
#include "adv_tmp_sizes.h"
#include "kernel_tiling/kernel_tiling.h"

namespace AscendC {

// The free UB after the TPipe's buffers: the stack the framework-allocated APIs take scratch from.
template <typename T, TPosition pos = TPosition::LCM>
inline bool PopStackBuffer(LocalTensor<T>& popLocal) {
    using namespace fusedsl_cpu;
    Core& c = CurCore();
    uint32_t used = c.pipe != nullptr ? c.pipe->fs_cursor : 0;
    if (used >= c.ub_bytes) {
        return false;
    }
    popLocal = LocalTensor<T>(reinterpret_cast<T*>(c.ub.data() + used), (c.ub_bytes - used) / sizeof(T), pos);
    return true;
}

}  // namespace AscendC

namespace fusedsl_cpu {

// Row r of a layer normalisation: x holds the row's h values as the API computes them, the mean
// and variance are over the first oh, every value becomes gamma * (x - mean) * rstd + beta, and the
// row's mean and variance are stored (LayerNorm's [B, S, H] form and DeepNorm share it).
template <typename T>
inline void NormalizeRow(const std::vector<double>& x, uint64_t r, uint32_t h, uint32_t oh, double epsilon,
                         const LocalTensor<T>& gamma, const LocalTensor<T>& beta, const LocalTensor<T>& dst,
                         const LocalTensor<T>& mean, const LocalTensor<T>& var) {
    double sum = 0.0;
    for (uint32_t j = 0; j < oh; ++j) {
        sum += x[j];
    }
    double mu = sum / oh;
    double sq = 0.0;
    for (uint32_t j = 0; j < oh; ++j) {
        sq += (x[j] - mu) * (x[j] - mu);
    }
    double v = sq / oh;
    double rstd = 1.0 / std::sqrt(v + epsilon);
    for (uint32_t j = 0; j < h; ++j) {
        double y = AdvLoad<T>(Bytes(gamma), j) * ((x[j] - mu) * rstd) + AdvLoad<T>(Bytes(beta), j);
        AdvStore<T>(Bytes(dst), r * h + j, y);
    }
    AdvStore<T>(Bytes(mean), r, mu);
    AdvStore<T>(Bytes(var), r, v);
}

template <typename T>
inline void DeepNormRun(Site site, const LocalTensor<T>& dst, const LocalTensor<T>& mean, const LocalTensor<T>& var,
                        const LocalTensor<T>& src, const LocalTensor<T>& gx, const LocalTensor<T>& beta,
                        const LocalTensor<T>& gamma, const LocalTensor<uint8_t>* tmp, double alpha, double epsilon,
                        const AscendC::tiling::DeepNormTiling& t, bool reuse, bool basic) {
    const char* api = "DeepNorm";
    AtSite at(site);
    CheckAdvApi(api, kChipsA2A3_310P, TypeName<T>(), " half float ");
    uint32_t h = t.hLength;
    uint32_t oh = t.originalHLength ? t.originalHLength : h;
    uint64_t rows = static_cast<uint64_t>(t.bLength) * t.sLength;
    if (h == 0 || rows == 0 || h * sizeof(T) % 32 != 0 || oh > h || h > 2040) {
        Fail("%s: tiling shape B %u, S %u, H %u (original H %u): H must be a non-zero multiple of 32 bytes of %s, at "
             "most 2040, and the original H at most H; fill the tiling with GetDeepNormTilingInfo", api, t.bLength,
             t.sLength, h, oh, TypeName<T>());
    }
    if (basic && (h % 64 != 0 || rows % 8 != 0)) {
        Fail("%s: isBasicBlock is set but B*S = %llu, H = %u is not a basic block (H a multiple of 64, B*S of 8)", api,
             static_cast<unsigned long long>(rows), h);
    }
    if (reuse && sizeof(T) != 4) {
        Fail("%s: isReuseSrc applies to float sources only", api);
    }
    uint64_t n = rows * h;
    AdvSpan ss{"srcLocal", AdvIn(api, "srcLocal", src, n), n * sizeof(T)};
    AdvSpan sg{"gxLocal", AdvIn(api, "gxLocal", gx, n), n * sizeof(T)};
    AdvSpan sb{"betaLocal", AdvIn(api, "betaLocal", beta, h), h * sizeof(T)};
    AdvSpan sgm{"gammaLocal", AdvIn(api, "gammaLocal", gamma, h), h * sizeof(T)};
    AdvSpan sd{"dstLocal", AdvOut(api, "dstLocal", dst, n), n * sizeof(T)};
    AdvSpan sm{"meanLocal", AdvOut(api, "meanLocal", mean, rows), rows * sizeof(T)};
    AdvSpan sv{"rstdLocal", AdvOut(api, "rstdLocal", var, rows), rows * sizeof(T)};
    for (const AdvSpan* in : {&ss, &sg, &sb, &sgm}) {
        AdvNoOverlap(api, sd, *in);
        AdvNoOverlap(api, sm, *in);
        AdvNoOverlap(api, sv, *in);
    }
    AdvNoOverlap(api, sd, sm);
    AdvNoOverlap(api, sd, sv);
    AdvNoOverlap(api, sm, sv);
    adv::TmpRange need = adv::DeepNorm(rows, h, sizeof(T), reuse);
    AdvScratch(api, tmp, need.min, need.max, {sd, ss, sg, sb, sgm, sm, sv}, "GetDeepNormMaxMinTmpSize");
    float a = static_cast<float>(alpha);
    std::vector<double> x1(h);
    for (uint64_t r = 0; r < rows; ++r) {
        for (uint32_t j = 0; j < h; ++j) {   // the sum rounded to float, as the API computes it
            uint64_t i = r * h + j;
            x1[j] = a * static_cast<float>(AdvLoad<T>(Bytes(src), i)) + static_cast<float>(AdvLoad<T>(Bytes(gx), i));
        }
        NormalizeRow(x1, r, h, oh, epsilon, gamma, beta, dst, mean, var);
    }
    MarkWritten(sd.off, sd.bytes);
    MarkWritten(sm.off, sm.bytes);
    MarkWritten(sv.off, sv.bytes);
    CountVector(sd.bytes);
}

template <typename T>
inline void RmsNormRun(Site site, const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& gamma,
                       const LocalTensor<uint8_t>* tmp, double epsilon, const RmsNormTiling& t, bool basic) {
    const char* api = "RmsNorm";
    AtSite at(site);
    CheckAdvApi(api, kChipsA2A3_310P, TypeName<T>(), " half float ");
    uint32_t h = t.hLength;
    uint32_t oh = t.originalHLength ? t.originalHLength : h;
    uint64_t rows = static_cast<uint64_t>(t.bLength) * t.sLength;
    if (h == 0 || rows == 0 || h * sizeof(T) % 32 != 0 || oh > h) {
        Fail("%s: tiling shape B %u, S %u, H %u (original H %u): H must be a non-zero multiple of 32 bytes of %s and "
             "the original H at most H; fill the tiling from the shape first", api, t.bLength, t.sLength, h, oh,
             TypeName<T>());
    }
    if (basic && (h % 64 != 0 || rows % 8 != 0)) {
        Fail("%s: isBasicBlock is set but B*S = %llu, H = %u is not a basic block (H a multiple of 64, B*S of 8)", api,
             static_cast<unsigned long long>(rows), h);
    }
    uint64_t n = rows * h;
    AdvSpan ss{"srcTensor", AdvIn(api, "srcTensor", src, n), n * sizeof(T)};
    AdvSpan sg{"gammaTensor", AdvIn(api, "gammaTensor", gamma, h), h * sizeof(T)};
    AdvSpan sd{"dstTensor", AdvOut(api, "dstTensor", dst, n), n * sizeof(T)};
    AdvNoOverlap(api, sd, sg);
    if (!(sd.off == ss.off && sd.bytes == ss.bytes)) {
        AdvNoOverlap(api, sd, ss);
    }
    uint64_t need = adv::RmsNormRowMin(h, sizeof(T));
    AdvScratch(api, tmp, need, need * rows, {sd, ss, sg}, "GetRmsNormMaxMinTmpSize");
    std::vector<float> x(n), g(h);
    for (uint64_t i = 0; i < n; ++i) {
        x[i] = static_cast<float>(AdvLoad<T>(Bytes(src), i));
    }
    for (uint32_t j = 0; j < h; ++j) {
        g[j] = static_cast<float>(AdvLoad<T>(Bytes(gamma), j));
    }
    float recip = t.reciprocalOfHLength != 0.0f ? t.reciprocalOfHLength : 1.0f / static_cast<float>(oh);
    for (uint64_t r = 0; r < rows; ++r) {
        double ss2 = 0.0;
        for (uint32_t j = 0; j < oh; ++j) {
            ss2 += static_cast<double>(x[r * h + j]) * x[r * h + j];
        }
        float rstd = 1.0f / std::sqrt(static_cast<float>(ss2) * recip + static_cast<float>(epsilon));
        for (uint32_t j = 0; j < h; ++j) {
            AdvStore<T>(Bytes(dst), r * h + j, x[r * h + j] * rstd * g[j]);
        }
    }
    MarkWritten(sd.off, sd.bytes);
    CountVector(sd.bytes);
}

}  // namespace fusedsl_cpu

namespace AscendC {

template <typename T, bool isBasicBlock = false>
inline void RmsNorm(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const LocalTensor<T>& gammaLocal,
                    const LocalTensor<uint8_t>& sharedTmpBuffer, const T epsilon, const RmsNormTiling& tiling,
                    FUSEDSL_CPU_SITE) {
    fusedsl_cpu::RmsNormRun(fs_site, dstLocal, srcLocal, gammaLocal, &sharedTmpBuffer,
                            static_cast<double>(fusedsl_cpu::ToCompute(epsilon)), tiling, isBasicBlock);
}
template <typename T, bool isBasicBlock = false>
inline void RmsNorm(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const LocalTensor<T>& gammaLocal,
                    const T epsilon, const RmsNormTiling& tiling, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::RmsNormRun(fs_site, dstLocal, srcLocal, gammaLocal, nullptr,
                            static_cast<double>(fusedsl_cpu::ToCompute(epsilon)), tiling, isBasicBlock);
}

template <typename T, bool isReuseSrc = false, bool isBasicBlock = false>
inline void DeepNorm(const LocalTensor<T>& dstLocal, const LocalTensor<T>& meanLocal, const LocalTensor<T>& rstdLocal,
                     const LocalTensor<T>& srcLocal, const LocalTensor<T>& gxLocal, const LocalTensor<T>& betaLocal,
                     const LocalTensor<T>& gammaLocal, const LocalTensor<uint8_t>& sharedTmpBuffer, const T alpha,
                     const T epsilon, DeepNormTiling& tiling, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::DeepNormRun(fs_site, dstLocal, meanLocal, rstdLocal, srcLocal, gxLocal, betaLocal, gammaLocal,
                             &sharedTmpBuffer, fusedsl_cpu::ToCompute(alpha), fusedsl_cpu::ToCompute(epsilon), tiling,
                             isReuseSrc, isBasicBlock);
}
template <typename T, bool isReuseSrc = false, bool isBasicBlock = false>
inline void DeepNorm(const LocalTensor<T>& dstLocal, const LocalTensor<T>& meanLocal, const LocalTensor<T>& rstdLocal,
                     const LocalTensor<T>& srcLocal, const LocalTensor<T>& gxLocal, const LocalTensor<T>& betaLocal,
                     const LocalTensor<T>& gammaLocal, const T alpha, const T epsilon, DeepNormTiling& tiling,
                     FUSEDSL_CPU_SITE) {
    fusedsl_cpu::DeepNormRun(fs_site, dstLocal, meanLocal, rstdLocal, srcLocal, gxLocal, betaLocal, gammaLocal,
                             nullptr, fusedsl_cpu::ToCompute(alpha), fusedsl_cpu::ToCompute(epsilon), tiling,
                             isReuseSrc, isBasicBlock);
}

}  // namespace AscendC

// fusedsl CPU implementation of the Ascend C API: LayerNorm and its companions (asc-devkit docs
// 归一化操作/LayerNorm, LayerNormGrad, LayerNormGradBeta, Normalize, WelfordUpdate,
// WelfordFinalize).
//
// - LayerNorm over [B, S, H]: y = gamma * (x - mean) / sqrt(var + eps) + beta per row, with the
//   row's mean and (biased) variance as outputs, the statistics over the original H.
// - LayerNorm over [A, R] (LayerNormPara, LayerNormSeparateTiling): the same with mean and
//   rstd = 1 / sqrt(var + eps) as outputs (A2/A3/310P output rstd only: isOutputRstd must be true).
// - LayerNormGrad: d(x) of that LayerNorm from dy, x, var, mean and gamma (the page's pd_var,
//   pd_mean, pd_x steps), and resForGamma = (x - mean) * rstd for LayerNormGradBeta.
// - LayerNormGradBeta: pd_gamma = sum over B, S of dy * resForGamma; pd_beta = sum of dy.
// - Normalize over [A, R]: y = gamma * (x - mean) * rstd + beta from given mean and variance,
//   rstd = 1 / sqrt(var + eps) as an output.
// - WelfordUpdate over [rn, ab]: for the first abComputeLength elements of each row,
//   mean' = mean + (x - mean) * nRec, M' = M + (x - mean) * (x - mean'); the rest of the outputs
//   are the inputs when isInplace is set and are left alone otherwise.
// - WelfordFinalize: mean = rRec * sum(count_i * mean_i), var = rRec * (sum(M_i) +
//   sum(count_i * (mean_i - mean)^2)), count_i from `counts` or from headCount/tailCount (the
//   first headCountLength elements count headCount); both results are one float at element 0.
//
// Everything but WelfordUpdate (float steps, as the samples' goldens) is computed in double from
// the operands' values and rounded once to the output type; the scratch follows the host helpers' minimum (adv_tmp_sizes.h) as for every
// high-level API.
#pragma once

#include <cmath>

#include "adv_common.h"
#include "adv_tmp_sizes.h"
#include "kernel_tiling/kernel_tiling.h"
#include "reduce_pattern.h"

namespace AscendC {

struct LayerNormConfig {
    bool isNoBeta = false;
    bool isNoGamma = false;
    bool isOnlyOutput = false;
    bool isOutputRstd = true;
};
constexpr LayerNormConfig LNCFG_NORM = {false, false, false, true};

struct LayerNormPara {
    uint32_t aLength;
    uint32_t rLength;
    uint32_t rLengthWithPadding;
};

struct LayerNormGradShapeInfo {
    DataFormat dataFormat = DataFormat::ND;
};


struct NormalizeConfig {
    ReducePattern reducePattern = ReducePattern::AR;
    int32_t aLength = -1;
    bool isNoBeta = false;
    bool isNoGamma = false;
    bool isOnlyOutput = false;
};
constexpr NormalizeConfig NLCFG_NORM = {ReducePattern::AR, -1, false, false, false};

struct NormalizePara {
    uint32_t aLength;
    uint32_t rLength;
    uint32_t rLengthWithPadding;
};

struct WelfordUpdateConfig {
    bool isInplace = false;
};
constexpr WelfordUpdateConfig WFUPDATE_DEFAULT_CFG = {false};

struct WelfordUpdateParam {
    uint32_t rnLength;
    uint32_t abLength;
    uint32_t abComputeLength;
    float nRec;
};

struct WelfordFinalizeConfig {
    bool isCorrection = false;
};
constexpr WelfordFinalizeConfig WFFINALIZE_DEFAULT_CFG = {false};

struct WelfordFinalizePara {
    uint32_t rnLength;
    uint32_t abLength;
    uint32_t headCount;
    uint32_t headCountLength;
    uint32_t tailCount;
    uint32_t tailCountLength;
    float abRec;
    float rRec;
    float rRecWithCorrection;
};

}  // namespace AscendC

namespace fusedsl_cpu {

// The [B, S, H] shape of a LayerNorm-family tiling; H is the padded row (32 bytes of T), the
// statistics run over the original H.
template <typename T>
inline void LnShape(const char* api, uint32_t b, uint32_t s, uint32_t h, uint32_t oh, const char* host) {
    if (b == 0 || s == 0 || h == 0 || h * sizeof(T) % 32 != 0 || oh > h) {
        Fail("%s: tiling shape B %u, S %u, H %u (original H %u): H must be a non-zero multiple of 32 bytes of %s and "
             "the original H at most H; fill the tiling with %s", api, b, s, h, oh, TypeName<T>(), host);
    }
}

template <typename T>
inline void LayerNormBshRun(Site site, const LocalTensor<T>& dst, const LocalTensor<T>& mean,
                            const LocalTensor<T>& var, const LocalTensor<T>& src, const LocalTensor<T>& gamma,
                            const LocalTensor<T>& beta, const LocalTensor<uint8_t>* tmp, double epsilon,
                            const LayerNormTiling& t, bool reuse) {
    const char* api = "LayerNorm";
    AtSite at(site);
    CheckAdvApi(api, kChipsA2A3_310P, TypeName<T>(), " half float ");
    uint32_t h = t.hLength;
    uint32_t oh = t.originalHLength ? t.originalHLength : h;
    LnShape<T>(api, t.bLength, t.sLength, h, oh, "GetLayerNormNDTilingInfo");
    if (reuse && sizeof(T) != 4) {
        Fail("%s: isReuseSource applies to float sources only (the API page)", api);
    }
    uint64_t rows = static_cast<uint64_t>(t.bLength) * t.sLength;
    uint64_t n = rows * h;
    AdvSpan ss{"inputX", AdvIn(api, "inputX", src, n), n * sizeof(T)};
    AdvSpan sg{"gamma", AdvIn(api, "gamma", gamma, h), h * sizeof(T)};
    AdvSpan sb{"beta", AdvIn(api, "beta", beta, h), h * sizeof(T)};
    AdvSpan sd{"output", AdvOut(api, "output", dst, n), n * sizeof(T)};
    AdvSpan sm{"outputMean", AdvOut(api, "outputMean", mean, rows), rows * sizeof(T)};
    AdvSpan sv{"outputVariance", AdvOut(api, "outputVariance", var, rows), rows * sizeof(T)};
    for (const AdvSpan* out : {&sd, &sm, &sv}) {
        for (const AdvSpan* in : {&ss, &sg, &sb}) {
            AdvNoOverlap(api, *out, *in);
        }
    }
    AdvNoOverlap(api, sd, sm);
    AdvNoOverlap(api, sd, sv);
    AdvNoOverlap(api, sm, sv);
    adv::TmpRange need = adv::LayerNorm(rows, h, sizeof(T), reuse);
    AdvScratch(api, tmp, need.min, need.max, {sd, ss, sg, sb, sm, sv}, "GetLayerNormMaxMinTmpSize");
    std::vector<double> x(h);
    for (uint64_t r = 0; r < rows; ++r) {
        for (uint32_t j = 0; j < h; ++j) {
            x[j] = AdvLoad<T>(Bytes(src), r * h + j);
        }
        NormalizeRow(x, r, h, oh, epsilon, gamma, beta, dst, mean, var);
    }
    MarkWritten(sd.off, sd.bytes);
    MarkWritten(sm.off, sm.bytes);
    MarkWritten(sv.off, sv.bytes);
    CountVector(sd.bytes);
}

// The [A, R] forms (LayerNorm with rstd, Normalize): R valid of rLengthWithPadding per row.
inline void ArShape(const char* api, uint32_t a, uint32_t r, uint32_t r_pad, uint32_t type_size) {
    if (a == 0 || r == 0 || r > r_pad || r_pad * type_size % 32 != 0) {
        Fail("%s: para aLength %u, rLength %u, rLengthWithPadding %u: the lengths must be non-zero, rLength at most "
             "rLengthWithPadding and rLengthWithPadding a multiple of 32 bytes of the input type", api, a, r, r_pad);
    }
}

// LayerNorm [A, R] (mean/rstd outputs) when `mean_in` is null; Normalize (given mean and
// variance) otherwise.
template <typename U, typename T>
inline void ArNormRun(Site site, const char* api, const LocalTensor<T>& dst, const LocalTensor<float>& mean,
                      const LocalTensor<float>& rstd, const LocalTensor<float>* var_in, const LocalTensor<T>& src,
                      const LocalTensor<U>& gamma, const LocalTensor<U>& beta, const LocalTensor<uint8_t>* tmp,
                      double epsilon, uint32_t a, uint32_t r, uint32_t r_pad, bool no_beta, bool no_gamma,
                      bool only_output) {
    AtSite at(site);
    CheckAdvApi(api, kChipsA2A3_310P, TypeName<T>(), " half float ");
    if (sizeof(U) < sizeof(T)) {
        Fail("%s<%s, %s>: gamma and beta must be at least as precise as the input (the API page's U)", api,
             TypeName<U>(), TypeName<T>());
    }
    if (only_output) {
        Fail("%s: isOnlyOutput = true is not supported (the API page: only false, y, mean and rstd are all output)",
             api);
    }
    ArShape(api, a, r, r_pad, sizeof(T));
    uint64_t n = static_cast<uint64_t>(a) * r_pad;
    bool normalize = var_in != nullptr;
    AdvSpan ss{"inputX", AdvIn(api, "inputX", src, n), n * sizeof(T)};
    AdvSpan sg{"gamma", no_gamma ? 0u : AdvIn(api, "gamma", gamma, r), no_gamma ? 0u : r * sizeof(U)};
    AdvSpan sb{"beta", no_beta ? 0u : AdvIn(api, "beta", beta, r), no_beta ? 0u : r * sizeof(U)};
    AdvSpan sd{"output", AdvOut(api, "output", dst, n), n * sizeof(T)};
    AdvSpan sr{"outputRstd", AdvOut(api, "outputRstd", rstd, a), a * sizeof(float)};
    AdvSpan sm{"outputMean", 0, 0};
    AdvSpan svi{"inputVariance", 0, 0};
    if (normalize) {
        sm = {"inputMean", AdvIn(api, "inputMean", mean, a), a * sizeof(float)};
        svi = {"inputVariance", AdvIn(api, "inputVariance", *var_in, a), a * sizeof(float)};
    } else {
        sm = {"outputMean", AdvOut(api, "outputMean", mean, a), a * sizeof(float)};
    }
    std::vector<const AdvSpan*> outs = {&sd, &sr};
    std::vector<const AdvSpan*> ins = {&ss, &sg, &sb};
    (normalize ? ins : outs).push_back(&sm);
    if (normalize) {
        ins.push_back(&svi);
    }
    for (const AdvSpan* o : outs) {
        for (const AdvSpan* i : ins) {
            if (i->bytes != 0) {
                AdvNoOverlap(api, *o, *i);
            }
        }
    }
    AdvNoOverlap(api, sd, sr);
    if (!normalize) {
        AdvNoOverlap(api, sd, sm);
        AdvNoOverlap(api, sr, sm);
    }
    adv::TmpRange need = normalize ? adv::Normalize(a, r_pad, sizeof(U)) : adv::LayerNormRstd(a, r_pad, sizeof(T));
    AdvScratch(api, tmp, need.min, need.max, {sd, ss, sg, sb, sm, sr, svi},
               normalize ? "GetNormalizeMaxMinTmpSize" : "GetLayerNormMaxMinTmpSize");
    for (uint32_t i = 0; i < a; ++i) {
        double mu;
        double v;
        if (normalize) {
            mu = AdvLoad<float>(Bytes(mean), i);
            v = AdvLoad<float>(Bytes(*var_in), i);
        } else {
            double sum = 0.0;
            for (uint32_t j = 0; j < r; ++j) {
                sum += AdvLoad<T>(Bytes(src), static_cast<uint64_t>(i) * r_pad + j);
            }
            mu = sum / r;
            double sq = 0.0;
            for (uint32_t j = 0; j < r; ++j) {
                double d = AdvLoad<T>(Bytes(src), static_cast<uint64_t>(i) * r_pad + j) - mu;
                sq += d * d;
            }
            v = sq / r;
        }
        double rs = 1.0 / std::sqrt(v + epsilon);
        for (uint32_t j = 0; j < r; ++j) {
            uint64_t k = static_cast<uint64_t>(i) * r_pad + j;
            double y = (AdvLoad<T>(Bytes(src), k) - mu) * rs;
            if (!no_gamma) {
                y *= AdvLoad<U>(Bytes(gamma), j);
            }
            if (!no_beta) {
                y += AdvLoad<U>(Bytes(beta), j);
            }
            AdvStore<T>(Bytes(dst), k, y);
        }
        if (!normalize) {
            AdvStore<float>(Bytes(mean), i, mu);
        }
        AdvStore<float>(Bytes(rstd), i, rs);
    }
    // The padding columns of each row are the device's to fill: only the R valid ones are written.
    for (uint32_t i = 0; i < a; ++i) {
        MarkWritten(sd.off + static_cast<uint64_t>(i) * r_pad * sizeof(T), r * sizeof(T));
    }
    if (!normalize) {
        MarkWritten(sm.off, sm.bytes);
    }
    MarkWritten(sr.off, sr.bytes);
    CountVector(sd.bytes);
}

template <typename T>
inline void LayerNormGradRun(Site site, const LocalTensor<T>& pd_x, const LocalTensor<T>& res_gamma,
                             const LocalTensor<T>& dy, const LocalTensor<T>& x, const LocalTensor<T>& var,
                             const LocalTensor<T>& mean, const LocalTensor<T>& gamma, const LocalTensor<uint8_t>* tmp,
                             double epsilon, const LayerNormGradTiling& t, AscendC::DataFormat format) {
    const char* api = "LayerNormGrad";
    AtSite at(site);
    CheckAdvApi(api, kChipsA2A3_310P, TypeName<T>(), " half float ");
    if (format != AscendC::DataFormat::ND) {
        Fail("%s: shapeInfo.dataFormat must be DataFormat::ND (the only format the API page lists)", api);
    }
    uint32_t h = t.hLength;
    uint32_t oh = t.originalHLength ? t.originalHLength : h;
    LnShape<T>(api, t.bLength, t.sLength, h, oh, "GetLayerNormGradNDTilingInfo");
    uint64_t rows = static_cast<uint64_t>(t.bLength) * t.sLength;
    uint64_t n = rows * h;
    AdvSpan sdy{"inputDy", AdvIn(api, "inputDy", dy, n), n * sizeof(T)};
    AdvSpan sx{"inputX", AdvIn(api, "inputX", x, n), n * sizeof(T)};
    AdvSpan sv{"inputVariance", AdvIn(api, "inputVariance", var, rows), rows * sizeof(T)};
    AdvSpan sm{"inputMean", AdvIn(api, "inputMean", mean, rows), rows * sizeof(T)};
    AdvSpan sg{"inputGamma", AdvIn(api, "inputGamma", gamma, h), h * sizeof(T)};
    AdvSpan sp{"outputPdX", AdvOut(api, "outputPdX", pd_x, n), n * sizeof(T)};
    AdvSpan sr{"resForGamma", AdvOut(api, "resForGamma", res_gamma, n), n * sizeof(T)};
    for (const AdvSpan* o : {&sp, &sr}) {
        for (const AdvSpan* i : {&sdy, &sx, &sv, &sm, &sg}) {
            AdvNoOverlap(api, *o, *i);
        }
    }
    AdvNoOverlap(api, sp, sr);
    adv::TmpRange need = adv::LayerNormGrad(rows, h, sizeof(T));
    AdvScratch(api, tmp, need.min, need.max, {sp, sr, sdy, sx, sv, sm, sg}, "GetLayerNormGradMaxMinTmpSize");
    std::vector<double> pd_xl(h), xm(h);
    for (uint64_t r = 0; r < rows; ++r) {
        double mu = AdvLoad<T>(Bytes(mean), r);
        double ve = AdvLoad<T>(Bytes(var), r) + epsilon;
        double rstd = 1.0 / std::sqrt(ve);
        double pd_var = 0.0;
        double sum_pdxl_rstd = 0.0;
        double sum_xm = 0.0;
        for (uint32_t j = 0; j < oh; ++j) {
            uint64_t k = r * h + j;
            pd_xl[j] = AdvLoad<T>(Bytes(dy), k) * AdvLoad<T>(Bytes(gamma), j);
            xm[j] = AdvLoad<T>(Bytes(x), k) - mu;
            pd_var += -0.5 * pd_xl[j] * xm[j] * std::pow(ve, -1.5);
            sum_pdxl_rstd += -pd_xl[j] * rstd;
            sum_xm += -2.0 * xm[j];
        }
        double inv_h = 1.0 / oh;
        double pd_mean = sum_pdxl_rstd + pd_var * inv_h * sum_xm;
        for (uint32_t j = 0; j < h; ++j) {
            uint64_t k = r * h + j;
            if (j >= oh) {
                pd_xl[j] = AdvLoad<T>(Bytes(dy), k) * AdvLoad<T>(Bytes(gamma), j);
                xm[j] = AdvLoad<T>(Bytes(x), k) - mu;
            }
            double px = pd_mean * inv_h + pd_var * 2.0 * inv_h * xm[j] + pd_xl[j] * rstd;
            AdvStore<T>(Bytes(pd_x), k, px);
            AdvStore<T>(Bytes(res_gamma), k, xm[j] * rstd);
        }
    }
    MarkWritten(sp.off, sp.bytes);
    MarkWritten(sr.off, sr.bytes);
    CountVector(sp.bytes + sr.bytes);
}

template <typename T>
inline void LayerNormGradBetaRun(Site site, const LocalTensor<T>& pd_gamma, const LocalTensor<T>& pd_beta,
                                 const LocalTensor<T>& res_gamma, const LocalTensor<T>& dy,
                                 const LocalTensor<uint8_t>* tmp, const LayerNormGradBetaTiling& t) {
    const char* api = "LayerNormGradBeta";
    AtSite at(site);
    CheckAdvApi(api, kChipsA2A3_310P, TypeName<T>(), " half float ");
    uint32_t h = t.hLength;
    uint32_t oh = t.originalHLength ? t.originalHLength : h;
    LnShape<T>(api, t.bLength, t.sLength, h, oh, "GetLayerNormGradBetaNDTilingInfo");
    uint64_t rows = static_cast<uint64_t>(t.bLength) * t.sLength;
    uint64_t n = rows * h;
    AdvSpan sr{"resForGamma", AdvIn(api, "resForGamma", res_gamma, n), n * sizeof(T)};
    AdvSpan sdy{"inputDy", AdvIn(api, "inputDy", dy, n), n * sizeof(T)};
    AdvSpan sg{"outputPdGamma", AdvOut(api, "outputPdGamma", pd_gamma, h), h * sizeof(T)};
    AdvSpan sb{"outputPdBeta", AdvOut(api, "outputPdBeta", pd_beta, h), h * sizeof(T)};
    for (const AdvSpan* o : {&sg, &sb}) {
        AdvNoOverlap(api, *o, sr);
        AdvNoOverlap(api, *o, sdy);
    }
    AdvNoOverlap(api, sg, sb);
    adv::TmpRange need = adv::LayerNormGradBeta(rows, h, sizeof(T));
    AdvScratch(api, tmp, need.min, need.max, {sg, sb, sr, sdy}, "GetLayerNormGradBetaMaxMinTmpSize");
    for (uint32_t j = 0; j < h; ++j) {
        double g = 0.0;
        double b = 0.0;
        for (uint64_t r = 0; r < rows; ++r) {
            double d = AdvLoad<T>(Bytes(dy), r * h + j);
            g += d * AdvLoad<T>(Bytes(res_gamma), r * h + j);
            b += d;
        }
        AdvStore<T>(Bytes(pd_gamma), j, g);
        AdvStore<T>(Bytes(pd_beta), j, b);
    }
    MarkWritten(sg.off, sg.bytes);
    MarkWritten(sb.off, sb.bytes);
    CountVector(sr.bytes);
}

template <typename T, typename U>
inline void WelfordUpdateRun(Site site, const LocalTensor<U>& out_mean, const LocalTensor<U>& out_var,
                             const LocalTensor<U>& in_mean, const LocalTensor<U>& in_var, const LocalTensor<T>& x,
                             const LocalTensor<uint8_t>* tmp, const AscendC::WelfordUpdateParam& p, bool reuse,
                             bool inplace) {
    const char* api = "WelfordUpdate";
    AtSite at(site);
    CheckAdvApi(api, kChipsA2A3_310P, TypeName<T>(), " half float ");
    if (sizeof(U) != 4) {
        Fail("%s: the mean and variance operands (U) must be float (the API page), not %s", api, TypeName<U>());
    }
    if (p.rnLength == 0 || p.abLength == 0 || p.abLength * sizeof(T) % 32 != 0 || p.abComputeLength == 0 ||
        p.abComputeLength > p.abLength) {
        Fail("%s: para rnLength %u, abLength %u, abComputeLength %u: the lengths must be non-zero, abLength a "
             "multiple of 32 bytes of %s and abComputeLength at most abLength", api, p.rnLength, p.abLength,
             p.abComputeLength, TypeName<T>());
    }
    uint64_t n = static_cast<uint64_t>(p.rnLength) * p.abLength;
    AdvSpan sx{"inputX", AdvIn(api, "inputX", x, n), n * sizeof(T)};
    AdvSpan smi{"inputMean", AdvIn(api, "inputMean", in_mean, n), n * sizeof(U)};
    AdvSpan svi{"inputVariance", AdvIn(api, "inputVariance", in_var, n), n * sizeof(U)};
    AdvSpan smo{"outputMean", AdvOut(api, "outputMean", out_mean, n), n * sizeof(U)};
    AdvSpan svo{"outputVariance", AdvOut(api, "outputVariance", out_var, n), n * sizeof(U)};
    for (const AdvSpan* o : {&smo, &svo}) {
        for (const AdvSpan* i : {&sx, &smi, &svi}) {
            AdvNoOverlap(api, *o, *i);
        }
    }
    AdvNoOverlap(api, smo, svo);
    adv::TmpRange need = adv::WelfordUpdate(n, sizeof(T), reuse);
    AdvScratch(api, tmp, need.min, need.max, {sx, smi, svi, smo, svo}, "GetWelfordUpdateMaxMinTmpSize");
    for (uint32_t i = 0; i < p.rnLength; ++i) {
        for (uint32_t j = 0; j < p.abLength; ++j) {
            uint64_t k = static_cast<uint64_t>(i) * p.abLength + j;
            double m = AdvLoad<U>(Bytes(in_mean), k);
            double v = AdvLoad<U>(Bytes(in_var), k);
            if (j < p.abComputeLength) {
                // The vector unit's float steps, each rounded: d = x - mean, mean' = mean + d * nRec,
                // M' = M + d * (x - mean').
                float xv = static_cast<float>(AdvLoad<T>(Bytes(x), k));
                float fm = static_cast<float>(m);
                float d = xv - fm;
                float m2 = fm + d * p.nRec;
                float v2 = static_cast<float>(v) + d * (xv - m2);
                AdvStore<U>(Bytes(out_mean), k, m2);
                AdvStore<U>(Bytes(out_var), k, v2);
                MarkWritten(smo.off + k * sizeof(U), sizeof(U));
                MarkWritten(svo.off + k * sizeof(U), sizeof(U));
            } else if (inplace) {
                AdvStore<U>(Bytes(out_mean), k, m);
                AdvStore<U>(Bytes(out_var), k, v);
                MarkWritten(smo.off + k * sizeof(U), sizeof(U));
                MarkWritten(svo.off + k * sizeof(U), sizeof(U));
            }
        }
    }
    CountVector(smo.bytes + svo.bytes);
}

inline void WelfordFinalizeRun(Site site, const LocalTensor<float>& out_mean, const LocalTensor<float>& out_var,
                               const LocalTensor<float>& in_mean, const LocalTensor<float>& in_var,
                               const LocalTensor<int32_t>* counts, const LocalTensor<uint8_t>* tmp,
                               const AscendC::WelfordFinalizePara& p, bool correction) {
    const char* api = "WelfordFinalize";
    AtSite at(site);
    CheckAdvApi(api, kChipsA2A3_310P, "float", " float ");
    if (correction) {
        Fail("%s: WelfordFinalizeConfig::isCorrection is an Ascend 950 option (the API page); %s computes the "
             "uncorrected variance", api, Target().name);
    }
    if (p.abLength == 0 || p.abLength % 8 != 0) {
        Fail("%s: para.abLength %u must be a non-zero multiple of 8 (32 bytes of float, the API page)", api,
             p.abLength);
    }
    if (counts == nullptr) {
        if (p.headCountLength + p.tailCountLength != p.abLength) {
            Fail("%s: para.headCountLength %u + para.tailCountLength %u must equal para.abLength %u (the API page)",
                 api, p.headCountLength, p.tailCountLength, p.abLength);
        }
        if (p.tailCount == 0 && p.tailCountLength != 0) {
            Fail("%s: para.tailCount is 0 but para.tailCountLength is %u; on %s it must then be 0 (the API page)", api,
                 p.tailCountLength, Target().name);
        }
    }
    uint64_t n = p.abLength;
    AdvSpan smi{"inputMean", AdvIn(api, "inputMean", in_mean, n), n * 4};
    AdvSpan svi{"inputVariance", AdvIn(api, "inputVariance", in_var, n), n * 4};
    AdvSpan sc{"counts", counts ? AdvIn(api, "counts", *counts, n) : 0u, counts ? n * 4 : 0};
    AdvSpan smo{"outputMean", AdvOut(api, "outputMean", out_mean, 1), 4};
    AdvSpan svo{"outputVariance", AdvOut(api, "outputVariance", out_var, 1), 4};
    for (const AdvSpan* o : {&smo, &svo}) {
        for (const AdvSpan* i : {&smi, &svi, &sc}) {
            if (i->bytes != 0) {
                AdvNoOverlap(api, *o, *i);
            }
        }
    }
    AdvNoOverlap(api, smo, svo);
    adv::TmpRange need = adv::WelfordFinalize(n);
    AdvScratch(api, tmp, need.min, need.max, {smi, svi, sc, smo, svo}, "GetWelfordFinalizeMaxMinTmpSize");
    auto count = [&](uint64_t i) -> double {
        if (counts != nullptr) {
            return static_cast<double>(LoadAs<int32_t>(Bytes(*counts) + i * 4));
        }
        return i < p.headCountLength ? p.headCount : p.tailCount;
    };
    double sum = 0.0;
    for (uint64_t i = 0; i < n; ++i) {
        sum += count(i) * AdvLoad<float>(Bytes(in_mean), i);
    }
    double mu = sum * p.rRec;
    double acc = 0.0;
    for (uint64_t i = 0; i < n; ++i) {
        double d = AdvLoad<float>(Bytes(in_mean), i) - mu;
        acc += AdvLoad<float>(Bytes(in_var), i) + count(i) * d * d;
    }
    AdvStore<float>(Bytes(out_mean), 0, mu);
    AdvStore<float>(Bytes(out_var), 0, acc * p.rRec);
    MarkWritten(smo.off, 4);
    MarkWritten(svo.off, 4);
    CountVector(smi.bytes + svi.bytes);
}

}  // namespace fusedsl_cpu

namespace AscendC {

// AscendCUtils::SetOverflow selects the float overflow mode (1: inf/nan, 0: saturation).  The
// CPU computes IEEE results (the inf/nan mode) whatever the mode: a kernel whose results depend
// on saturation is not modelled.
struct AscendCUtils {
    static inline void SetOverflow(uint64_t ctrlValue) { (void)ctrlValue; }
};

template <typename T, bool isReuseSource = false>
inline void LayerNorm(const LocalTensor<T>& output, const LocalTensor<T>& outputMean,
                      const LocalTensor<T>& outputVariance, const LocalTensor<T>& inputX, const LocalTensor<T>& gamma,
                      const LocalTensor<T>& beta, const LocalTensor<uint8_t>& sharedTmpBuffer, const T epsilon,
                      LayerNormTiling& tiling, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::LayerNormBshRun(fs_site, output, outputMean, outputVariance, inputX, gamma, beta, &sharedTmpBuffer,
                                 fusedsl_cpu::ToCompute(epsilon), tiling, isReuseSource);
}
template <typename T, bool isReuseSource = false>
inline void LayerNorm(const LocalTensor<T>& output, const LocalTensor<T>& outputMean,
                      const LocalTensor<T>& outputVariance, const LocalTensor<T>& inputX, const LocalTensor<T>& gamma,
                      const LocalTensor<T>& beta, const T epsilon, LayerNormTiling& tiling, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::LayerNormBshRun(fs_site, output, outputMean, outputVariance, inputX, gamma, beta, nullptr,
                                 fusedsl_cpu::ToCompute(epsilon), tiling, isReuseSource);
}

template <typename U, typename T, bool isReuseSource = false, const LayerNormConfig& config = LNCFG_NORM>
inline void LayerNorm(const LocalTensor<T>& output, const LocalTensor<float>& outputMean,
                      const LocalTensor<float>& outputRstd, const LocalTensor<T>& inputX, const LocalTensor<U>& gamma,
                      const LocalTensor<U>& beta, const float epsilon, const LocalTensor<uint8_t>& sharedTmpBuffer,
                      const LayerNormPara& para, const LayerNormSeparateTiling& tiling, FUSEDSL_CPU_SITE) {
    (void)tiling;
    if (!config.isOutputRstd) {
        fusedsl_cpu::AtSite at(fs_site);
        fusedsl_cpu::Fail("LayerNorm: LayerNormConfig::isOutputRstd = false (variance output) is an Ascend 950 "
                          "option (the API page); %s outputs rstd", fusedsl_cpu::Target().name);
    }
    fusedsl_cpu::ArNormRun<U, T>(fs_site, "LayerNorm", output, outputMean, outputRstd, nullptr, inputX, gamma, beta,
                                 &sharedTmpBuffer, epsilon, para.aLength, para.rLength, para.rLengthWithPadding,
                                 config.isNoBeta, config.isNoGamma, config.isOnlyOutput);
}
template <typename U, typename T, bool isReuseSource = false, const LayerNormConfig& config = LNCFG_NORM>
inline void LayerNorm(const LocalTensor<T>& output, const LocalTensor<float>& outputMean,
                      const LocalTensor<float>& outputRstd, const LocalTensor<T>& inputX, const LocalTensor<U>& gamma,
                      const LocalTensor<U>& beta, const float epsilon, const LayerNormPara& para,
                      const LayerNormSeparateTiling& tiling, FUSEDSL_CPU_SITE) {
    (void)tiling;
    if (!config.isOutputRstd) {
        fusedsl_cpu::AtSite at(fs_site);
        fusedsl_cpu::Fail("LayerNorm: LayerNormConfig::isOutputRstd = false (variance output) is an Ascend 950 "
                          "option (the API page); %s outputs rstd", fusedsl_cpu::Target().name);
    }
    fusedsl_cpu::ArNormRun<U, T>(fs_site, "LayerNorm", output, outputMean, outputRstd, nullptr, inputX, gamma, beta,
                                 nullptr, epsilon, para.aLength, para.rLength, para.rLengthWithPadding,
                                 config.isNoBeta, config.isNoGamma, config.isOnlyOutput);
}

template <typename U, typename T, bool isReuseSource = false, const NormalizeConfig& config = NLCFG_NORM>
inline void Normalize(const LocalTensor<T>& output, const LocalTensor<float>& outputRstd,
                      const LocalTensor<float>& inputMean, const LocalTensor<float>& inputVariance,
                      const LocalTensor<T>& inputX, const LocalTensor<U>& gamma, const LocalTensor<U>& beta,
                      const LocalTensor<uint8_t>& sharedTmpBuffer, const float epsilon, const NormalizePara& para,
                      FUSEDSL_CPU_SITE) {
    fusedsl_cpu::ArNormRun<U, T>(fs_site, "Normalize", output, inputMean, outputRstd, &inputVariance, inputX, gamma,
                                 beta, &sharedTmpBuffer, epsilon, para.aLength, para.rLength, para.rLengthWithPadding,
                                 config.isNoBeta, config.isNoGamma, config.isOnlyOutput);
}
template <typename U, typename T, bool isReuseSource = false, const NormalizeConfig& config = NLCFG_NORM>
inline void Normalize(const LocalTensor<T>& output, const LocalTensor<float>& outputRstd,
                      const LocalTensor<float>& inputMean, const LocalTensor<float>& inputVariance,
                      const LocalTensor<T>& inputX, const LocalTensor<U>& gamma, const LocalTensor<U>& beta,
                      const float epsilon, const NormalizePara& para, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::ArNormRun<U, T>(fs_site, "Normalize", output, inputMean, outputRstd, &inputVariance, inputX, gamma,
                                 beta, nullptr, epsilon, para.aLength, para.rLength, para.rLengthWithPadding,
                                 config.isNoBeta, config.isNoGamma, config.isOnlyOutput);
}

template <typename T, bool isReuseSource = false>
inline void LayerNormGrad(const LocalTensor<T>& outputPdX, const LocalTensor<T>& resForGamma,
                          const LocalTensor<T>& inputDy, const LocalTensor<T>& inputX,
                          const LocalTensor<T>& inputVariance, const LocalTensor<T>& inputMean,
                          const LocalTensor<T>& inputGamma, const LocalTensor<uint8_t>& sharedTmpBuffer, T epsilon,
                          LayerNormGradTiling& tiling, const LayerNormGradShapeInfo& shapeInfo = {},
                          FUSEDSL_CPU_SITE) {
    fusedsl_cpu::LayerNormGradRun(fs_site, outputPdX, resForGamma, inputDy, inputX, inputVariance, inputMean,
                                  inputGamma, &sharedTmpBuffer, fusedsl_cpu::ToCompute(epsilon), tiling,
                                  shapeInfo.dataFormat);
}
template <typename T, bool isReuseSource = false>
inline void LayerNormGrad(const LocalTensor<T>& outputPdX, const LocalTensor<T>& resForGamma,
                          const LocalTensor<T>& inputDy, const LocalTensor<T>& inputX,
                          const LocalTensor<T>& inputVariance, const LocalTensor<T>& inputMean,
                          const LocalTensor<T>& inputGamma, T epsilon, LayerNormGradTiling& tiling,
                          const LayerNormGradShapeInfo& shapeInfo = {}, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::LayerNormGradRun(fs_site, outputPdX, resForGamma, inputDy, inputX, inputVariance, inputMean,
                                  inputGamma, nullptr, fusedsl_cpu::ToCompute(epsilon), tiling, shapeInfo.dataFormat);
}

template <typename T, bool isReuseSource = false>
inline void LayerNormGradBeta(const LocalTensor<T>& outputPdGamma, const LocalTensor<T>& outputPdBeta,
                              const LocalTensor<T>& resForGamma, const LocalTensor<T>& inputDy,
                              const LocalTensor<uint8_t>& sharedTmpBuffer, const LayerNormGradBetaTiling& tiling,
                              FUSEDSL_CPU_SITE) {
    fusedsl_cpu::LayerNormGradBetaRun(fs_site, outputPdGamma, outputPdBeta, resForGamma, inputDy, &sharedTmpBuffer,
                                      tiling);
}
template <typename T, bool isReuseSource = false>
inline void LayerNormGradBeta(const LocalTensor<T>& outputPdGamma, const LocalTensor<T>& outputPdBeta,
                              const LocalTensor<T>& resForGamma, const LocalTensor<T>& inputDy,
                              const LayerNormGradBetaTiling& tiling, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::LayerNormGradBetaRun(fs_site, outputPdGamma, outputPdBeta, resForGamma, inputDy, nullptr, tiling);
}

template <typename T, typename U, bool isReuseSource = false, const WelfordUpdateConfig& config = WFUPDATE_DEFAULT_CFG>
inline void WelfordUpdate(const LocalTensor<U>& outputMean, const LocalTensor<U>& outputVariance,
                          const LocalTensor<U>& inputMean, const LocalTensor<U>& inputVariance,
                          const LocalTensor<T>& inputX, const LocalTensor<uint8_t>& sharedTmpBuffer,
                          const WelfordUpdateParam& para, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::WelfordUpdateRun<T, U>(fs_site, outputMean, outputVariance, inputMean, inputVariance, inputX,
                                        &sharedTmpBuffer, para, isReuseSource, config.isInplace);
}
template <typename T, typename U, bool isReuseSource = false, const WelfordUpdateConfig& config = WFUPDATE_DEFAULT_CFG>
inline void WelfordUpdate(const LocalTensor<U>& outputMean, const LocalTensor<U>& outputVariance,
                          const LocalTensor<U>& inputMean, const LocalTensor<U>& inputVariance,
                          const LocalTensor<T>& inputX, const WelfordUpdateParam& para, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::WelfordUpdateRun<T, U>(fs_site, outputMean, outputVariance, inputMean, inputVariance, inputX, nullptr,
                                        para, isReuseSource, config.isInplace);
}

template <bool isReuseSource = false, const WelfordFinalizeConfig& config = WFFINALIZE_DEFAULT_CFG>
inline void WelfordFinalize(const LocalTensor<float>& outputMean, const LocalTensor<float>& outputVariance,
                            const LocalTensor<float>& inputMean, const LocalTensor<float>& inputVariance,
                            const LocalTensor<uint8_t>& sharedTmpBuffer, WelfordFinalizePara& para,
                            FUSEDSL_CPU_SITE) {
    fusedsl_cpu::WelfordFinalizeRun(fs_site, outputMean, outputVariance, inputMean, inputVariance, nullptr,
                                    &sharedTmpBuffer, para, config.isCorrection);
}
template <bool isReuseSource = false, const WelfordFinalizeConfig& config = WFFINALIZE_DEFAULT_CFG>
inline void WelfordFinalize(const LocalTensor<float>& outputMean, const LocalTensor<float>& outputVariance,
                            const LocalTensor<float>& inputMean, const LocalTensor<float>& inputVariance,
                            const LocalTensor<int32_t>& counts, const LocalTensor<uint8_t>& sharedTmpBuffer,
                            WelfordFinalizePara& para, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::WelfordFinalizeRun(fs_site, outputMean, outputVariance, inputMean, inputVariance, &counts,
                                    &sharedTmpBuffer, para, config.isCorrection);
}
template <bool isReuseSource = false, const WelfordFinalizeConfig& config = WFFINALIZE_DEFAULT_CFG>
inline void WelfordFinalize(const LocalTensor<float>& outputMean, const LocalTensor<float>& outputVariance,
                            const LocalTensor<float>& inputMean, const LocalTensor<float>& inputVariance,
                            WelfordFinalizePara& para, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::WelfordFinalizeRun(fs_site, outputMean, outputVariance, inputMean, inputVariance, nullptr, nullptr,
                                    para, config.isCorrection);
}
template <bool isReuseSource = false, const WelfordFinalizeConfig& config = WFFINALIZE_DEFAULT_CFG>
inline void WelfordFinalize(const LocalTensor<float>& outputMean, const LocalTensor<float>& outputVariance,
                            const LocalTensor<float>& inputMean, const LocalTensor<float>& inputVariance,
                            const LocalTensor<int32_t>& counts, WelfordFinalizePara& para, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::WelfordFinalizeRun(fs_site, outputMean, outputVariance, inputMean, inputVariance, &counts, nullptr,
                                    para, config.isCorrection);
}

}  // namespace AscendC

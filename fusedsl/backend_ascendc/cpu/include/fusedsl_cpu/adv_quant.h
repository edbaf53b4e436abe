// fusedsl CPU implementation of the Ascend C API: AscendQuant and AscendDequant (asc-devkit docs
// 高阶API/量化操作).
//
// AscendQuant: int8 = saturate(rint(x * scale + offset)), with scale/offset scalars or per
// channel (element i uses scale[i % scaleCount]); computed in half like the device (910B/310P
// cast to half, Muls and Adds in half, half -> int8 round-half-to-even), saturated to [-128, 127].
// AscendDequant: int32 [m, n] rows times deqScale (a tensor: the first calCount of each row use
// deqScale[j]; or one scalar) into dst rows of n_dst (n rounded up to 32 bytes of dst); in the
// DEQUANT_WITH_SINGLE_ROW mode {1, n, calCount} with calCount a block multiple dividing n is
// {n / calCount, calCount, calCount}, as its API page says.
// AscendAntiQuant: int8 [K, N] (isTranspose: [N, K]) to half/bfloat16, per channel
// dst[i][j] = scale[i / g][j] * (src[i][j] + offset[i / g][j]) with g = K / offset rows (transposed:
// along j), or per tensor with scalar scale/offset; half output in half steps (the cast, the Add,
// the Mul each rounded to half), bfloat16 output in float (the page's bf16 algorithm).
#pragma once

#include "adv_common.h"
#include "adv_tmp_sizes.h"

namespace AscendC {

struct AscendQuantConfig {
    constexpr AscendQuantConfig(const uint32_t calcCountIn, const uint32_t offsetCountIn, const uint32_t scaleCountIn,
                                const uint32_t workLocalSizeIn)
        : calcCount(calcCountIn), offsetCount(offsetCountIn), scaleCount(scaleCountIn), workLocalSize(workLocalSizeIn) {}
    uint32_t calcCount = 0;
    uint32_t offsetCount = 0;
    uint32_t scaleCount = 0;
    uint32_t workLocalSize = 0;
};
constexpr AscendQuantConfig ASCEND_QUANT_DEFAULT_CFG = {0, 0, 0, 0};

enum class DeQuantMode { DEQUANT_WITH_SINGLE_ROW = 0, DEQUANT_WITH_MULTI_ROW };

struct AntiQuantShapeInfo {
    uint32_t offsetHeight{0};
    uint32_t offsetWidth{0};
    uint32_t scaleHeight{0};
    uint32_t scaleWidth{0};
};

struct DequantParams {
    uint32_t m;
    uint32_t n;
    uint32_t calCount;
};

}  // namespace AscendC

namespace fusedsl_cpu {

template <typename T>
inline void QuantRun(Site site, const LocalTensor<int8_t>& dst, const LocalTensor<T>& src,
                     const LocalTensor<uint8_t>* tmp, const LocalTensor<T>* scale_t, float scale, uint32_t scale_count,
                     const LocalTensor<T>* offset_t, float offset, uint32_t offset_count, uint32_t count) {
    const char* api = "AscendQuant";
    AtSite at(site);
    CheckAdvApi(api, kChipsA2A3_310P | kChip910A, TypeName<T>(), " half float ");
    if (count == 0) {
        return;
    }
    uint32_t s = AdvIn(api, "srcTensor", src, count);
    uint32_t d = AdvOut(api, "dstTensor", dst, count);
    AdvSpan ss{"srcTensor", s, static_cast<uint64_t>(count) * sizeof(T)};
    AdvSpan sd{"dstTensor", d, count};
    AdvNoOverlap(api, sd, ss);
    if (scale_t != nullptr) {
        if (scale_count == 0 || count % scale_count != 0) {
            Fail("%s: scaleCount = %u must be non-zero and divide calCount = %u", api, scale_count, count);
        }
        AdvIn(api, "scaleTensor", *scale_t, scale_count);
    }
    if (offset_t != nullptr) {
        if (offset_count == 0 || count % offset_count != 0) {
            Fail("%s: offsetCount = %u must be non-zero and divide calCount = %u", api, offset_count, count);
        }
        AdvIn(api, "offsetTensor", *offset_t, offset_count);
    }
    adv::TmpRange need = adv::AscendQuant(count);
    AdvScratch(api, tmp, need.min, need.max, {sd, ss}, "GetAscendQuantMaxMinTmpSize");
    for (uint32_t i = 0; i < count; ++i) {
        // in half, as the device does it on these chips: src, scale and offset cast to half, the
        // product and the sum each rounded to half, then half -> int8 (round half to even)
        auto h = [](double v) { return static_cast<float>(static_cast<half>(static_cast<float>(v))); };
        float x = h(AdvLoad<T>(Bytes(src), i));
        float sc = h(scale_t != nullptr ? AdvLoad<T>(Bytes(*scale_t), i % scale_count) : scale);
        float of = h(offset_t != nullptr ? AdvLoad<T>(Bytes(*offset_t), i % offset_count) : offset);
        float v = std::nearbyint(h(h(x * sc) + of));
        v = std::isnan(v) ? 0.0f : std::min(127.0f, std::max(-128.0f, v));
        StoreAs(Bytes(dst) + i, static_cast<int8_t>(v));
    }
    MarkWritten(d, count);
    CountVector(static_cast<uint64_t>(count) * sizeof(T));
}

template <typename DstT, typename ScaleT>
inline void DequantRun(Site site, const LocalTensor<DstT>& dst, const LocalTensor<int32_t>& src,
                       const LocalTensor<ScaleT>* scale_t, double scale, const LocalTensor<uint8_t>* tmp,
                       AscendC::DequantParams p, bool single_row_mode) {
    const char* api = "AscendDequant";
    AtSite at(site);
    CheckAdvApi(api, kChipsA2A3_310P, TypeName<DstT>(), " half float bfloat16_t ");
    if (single_row_mode && p.m == 1 && p.calCount != 0 && p.calCount % (32 / sizeof(DstT)) == 0 &&
        p.n % p.calCount == 0) {
        p = AscendC::DequantParams{p.n / p.calCount, p.calCount, p.calCount};
    }
    if (p.n * sizeof(int32_t) % 32 != 0) {
        Fail("%s: params.n = %u; a row of int32 must be 32-byte aligned (a multiple of 8 elements)", api, p.n);
    }
    if (p.calCount > p.n) {
        Fail("%s: params.calCount = %u is larger than params.n = %u", api, p.calCount, p.n);
    }
    uint64_t n_dst = (static_cast<uint64_t>(p.n) * sizeof(DstT) + 31) / 32 * 32 / sizeof(DstT);
    uint64_t in_n = static_cast<uint64_t>(p.m) * p.n;
    uint32_t s = AdvIn(api, "srcTensor", src, in_n);
    uint32_t d = AdvOut(api, "dstTensor", dst, p.m * n_dst);
    AdvSpan ss{"srcTensor", s, in_n * 4};
    AdvSpan sd{"dstTensor", d, p.m * n_dst * sizeof(DstT)};
    AdvNoOverlap(api, sd, ss);
    AdvSpan sc{"deqScale", 0, 0};
    if (scale_t != nullptr) {
        if (scale_t->GetSize() < p.calCount) {
            Fail("%s: deqScale has %u elements; calCount = %u of them are used", api, scale_t->GetSize(), p.calCount);
        }
        sc = {"deqScale", AdvIn(api, "deqScale", *scale_t, p.calCount), static_cast<uint64_t>(p.calCount) * sizeof(ScaleT)};
    }
    adv::TmpRange need = adv::AscendDequant(p.m, p.n);
    AdvScratch(api, tmp, need.min, need.max, {sd, ss, sc}, "GetAscendDequantMaxMinTmpSize");
    for (uint32_t r = 0; r < p.m; ++r) {
        for (uint32_t j = 0; j < p.calCount; ++j) {
            double v = static_cast<double>(LoadAs<int32_t>(Bytes(src) + (static_cast<uint64_t>(r) * p.n + j) * 4));
            double k = scale_t != nullptr ? AdvLoad<ScaleT>(Bytes(*scale_t), j) : scale;
            // int32 -> float, times the scale in float (the vector unit's order)
            AdvStore<DstT>(Bytes(dst), r * n_dst + j, static_cast<float>(v) * static_cast<float>(k));
        }
        // the rest of the row is left undefined by the device: fusedsl marks only what it wrote
        MarkWritten(d + static_cast<uint32_t>(r * n_dst * sizeof(DstT)), static_cast<uint64_t>(p.calCount) * sizeof(DstT));
    }
    CountVector(in_n * 4);
}

// The [height, width] of a per-channel scale/offset: AntiQuantShapeInfo's, else the tensor's
// ShapeInfo, else `fallback`.
template <typename T>
inline void AntiQuantParamShape(const LocalTensor<T>& t, uint32_t h, uint32_t w, uint32_t& oh, uint32_t& ow,
                                uint32_t fh, uint32_t fw) {
    if (h != 0 && w != 0) {
        oh = h;
        ow = w;
    } else if (t.GetShapeInfo().shapeDim == 2) {
        oh = t.GetShapeInfo().shape[0];
        ow = t.GetShapeInfo().shape[1];
    } else {
        oh = fh;
        ow = fw;
    }
}

template <typename In, typename Out>
inline void AntiQuantRun(Site site, const LocalTensor<Out>& dst, const LocalTensor<In>& src,
                         const LocalTensor<Out>* offset_t, double offset, const LocalTensor<Out>* scale_t,
                         double scale, const LocalTensor<uint8_t>* tmp, uint32_t k, bool transpose,
                         const AscendC::AntiQuantShapeInfo& info) {
    const char* api = "AscendAntiQuant";
    AtSite at(site);
    CheckAdvApi(api, kChipsA2A3_310P, TypeName<Out>(), CurrentChip() == kChip310P ? " half " : " half bfloat16_t ");
    if (!std::is_same_v<In, int8_t>) {
        Fail("%s<%s, %s>: the source type must be int8_t on %s (the API page's types)", api, TypeName<In>(),
             TypeName<Out>(), Target().name);
    }
    uint64_t total = src.GetSize();
    if (k == 0 || total % k != 0) {
        Fail("%s: k = %u must be non-zero and divide the source's %llu elements", api, k,
             static_cast<unsigned long long>(total));
    }
    uint64_t other = total / k;   // N
    uint64_t rows = transpose ? other : k;
    uint64_t cols = transpose ? k : other;
    AdvSpan ss{"src", AdvIn(api, "src", src, total), total};
    AdvSpan sd{"dst", AdvOut(api, "dst", dst, total), total * sizeof(Out)};
    AdvNoOverlap(api, sd, ss);
    // per channel: groups along the K axis (rows, or columns when transposed)
    uint32_t oh = 1, ow = 1, sh = 1, sw = 1;
    uint64_t group = 1;
    if (scale_t != nullptr) {
        uint32_t fh = transpose ? static_cast<uint32_t>(rows) : 1u;
        uint32_t fw = transpose ? 1u : static_cast<uint32_t>(cols);
        AntiQuantParamShape(*scale_t, info.scaleHeight, info.scaleWidth, sh, sw, fh, fw);
        if (offset_t != nullptr) {
            AntiQuantParamShape(*offset_t, info.offsetHeight, info.offsetWidth, oh, ow, sh, sw);
        } else {
            oh = sh;
            ow = sw;
        }
        uint32_t groups = transpose ? sw : sh;
        bool ok = transpose ? (sh == rows && groups != 0 && cols % groups == 0)
                            : (sw == cols && groups != 0 && rows % groups == 0);
        if (!ok || oh != sh || ow != sw) {
            Fail("%s: scale [%u, %u] and offset [%u, %u] do not fit the source [%llu, %llu] (k = %u%s): they must "
                 "match it along %s and divide k into groups", api, sh, sw, oh, ow,
                 static_cast<unsigned long long>(rows), static_cast<unsigned long long>(cols), k,
                 transpose ? ", transposed" : "", transpose ? "N (the rows)" : "N (the columns)");
        }
        group = transpose ? cols / groups : rows / groups;
        AdvIn(api, "scale", *scale_t, static_cast<uint64_t>(sh) * sw);
        if (offset_t != nullptr) {
            AdvIn(api, "offset", *offset_t, static_cast<uint64_t>(oh) * ow);
        }
    }
    uint64_t s_count = scale_t != nullptr ? static_cast<uint64_t>(sh) * sw : 1;
    adv::TmpRange need = adv::AscendAntiQuant(total, transpose ? other : k, s_count, transpose,
                                              std::is_same_v<Out, half>);
    AdvScratch(api, tmp, need.min, need.max, {sd, ss}, "GetAscendAntiQuantMaxMinTmpSize");
    for (uint64_t i = 0; i < rows; ++i) {
        for (uint64_t j = 0; j < cols; ++j) {
            uint64_t p = transpose ? i * sw + j / group : (i / group) * sw + j;
            double sc = scale_t != nullptr ? AdvLoad<Out>(Bytes(*scale_t), p) : scale;
            double of = offset_t != nullptr ? AdvLoad<Out>(Bytes(*offset_t), p) : offset;
            double x = static_cast<double>(LoadAs<In>(Bytes(src) + i * cols + j));
            double y;
            if constexpr (std::is_same_v<Out, half>) {
                y = AdvRound<half>(AdvRound<half>(x + of) * sc);
            } else {
                y = static_cast<double>(static_cast<float>(static_cast<float>(x) + static_cast<float>(of)) *
                                        static_cast<float>(sc));
            }
            AdvStore<Out>(Bytes(dst), i * cols + j, y);
        }
    }
    MarkWritten(sd.off, sd.bytes);
    CountVector(sd.bytes);
}

}  // namespace fusedsl_cpu

namespace AscendC {

template <typename T, bool isReuseSource = false, const AscendQuantConfig& config = ASCEND_QUANT_DEFAULT_CFG>
inline void AscendQuant(const LocalTensor<int8_t>& dstTensor, const LocalTensor<T>& srcTensor,
                        const LocalTensor<uint8_t>& sharedTmpBuffer, const float scale, const float offset,
                        const uint32_t calCount, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::QuantRun<T>(fs_site, dstTensor, srcTensor, &sharedTmpBuffer, nullptr, scale, 1, nullptr, offset, 1,
                             calCount);
}
template <typename T, bool isReuseSource = false, const AscendQuantConfig& config = ASCEND_QUANT_DEFAULT_CFG>
inline void AscendQuant(const LocalTensor<int8_t>& dstTensor, const LocalTensor<T>& srcTensor,
                        const LocalTensor<uint8_t>& sharedTmpBuffer, const float scale, const float offset,
                        FUSEDSL_CPU_SITE) {
    fusedsl_cpu::QuantRun<T>(fs_site, dstTensor, srcTensor, &sharedTmpBuffer, nullptr, scale, 1, nullptr, offset, 1,
                             srcTensor.GetSize());
}
template <typename T, bool isReuseSource = false, const AscendQuantConfig& config = ASCEND_QUANT_DEFAULT_CFG>
inline void AscendQuant(const LocalTensor<int8_t>& dstTensor, const LocalTensor<T>& srcTensor, const float scale,
                        const float offset, const uint32_t calCount, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::QuantRun<T>(fs_site, dstTensor, srcTensor, nullptr, nullptr, scale, 1, nullptr, offset, 1, calCount);
}
template <typename T, bool isReuseSource = false, const AscendQuantConfig& config = ASCEND_QUANT_DEFAULT_CFG>
inline void AscendQuant(const LocalTensor<int8_t>& dstTensor, const LocalTensor<T>& srcTensor, const float scale,
                        const float offset, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::QuantRun<T>(fs_site, dstTensor, srcTensor, nullptr, nullptr, scale, 1, nullptr, offset, 1,
                             srcTensor.GetSize());
}
// Per channel: scale (and offset) tensors of scaleCount (offsetCount) elements.
template <typename T, bool isReuseSource = false, const AscendQuantConfig& config = ASCEND_QUANT_DEFAULT_CFG>
inline void AscendQuant(const LocalTensor<int8_t>& dstTensor, const LocalTensor<T>& srcTensor,
                        const LocalTensor<uint8_t>& sharedTmpBuffer, const LocalTensor<T>& scaleTensor, const T offset,
                        const uint32_t scaleCount, const uint32_t calCount, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::QuantRun<T>(fs_site, dstTensor, srcTensor, &sharedTmpBuffer, &scaleTensor, 0.0f, scaleCount, nullptr,
                             static_cast<float>(fusedsl_cpu::ToCompute(offset)), 1, calCount);
}
template <typename T, bool isReuseSource = false, const AscendQuantConfig& config = ASCEND_QUANT_DEFAULT_CFG>
inline void AscendQuant(const LocalTensor<int8_t>& dstTensor, const LocalTensor<T>& srcTensor,
                        const LocalTensor<uint8_t>& sharedTmpBuffer, const LocalTensor<T>& scaleTensor,
                        const LocalTensor<T>& offsetTensor, const uint32_t scaleCount, const uint32_t offsetCount,
                        const uint32_t calCount, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::QuantRun<T>(fs_site, dstTensor, srcTensor, &sharedTmpBuffer, &scaleTensor, 0.0f, scaleCount,
                             &offsetTensor, 0.0f, offsetCount, calCount);
}

template <typename dstT, typename scaleT, DeQuantMode mode = DeQuantMode::DEQUANT_WITH_SINGLE_ROW>
inline void AscendDequant(const LocalTensor<dstT>& dstTensor, const LocalTensor<int32_t>& srcTensor,
                          const LocalTensor<scaleT>& deqScale, const LocalTensor<uint8_t>& sharedTmpBuffer,
                          DequantParams params, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::DequantRun<dstT, scaleT>(fs_site, dstTensor, srcTensor, &deqScale, 0.0, &sharedTmpBuffer, params,
                                          mode == DeQuantMode::DEQUANT_WITH_SINGLE_ROW);
}
template <typename dstT, typename scaleT, DeQuantMode mode = DeQuantMode::DEQUANT_WITH_SINGLE_ROW>
inline void AscendDequant(const LocalTensor<dstT>& dstTensor, const LocalTensor<int32_t>& srcTensor,
                          const LocalTensor<scaleT>& deqScale, DequantParams params, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::DequantRun<dstT, scaleT>(fs_site, dstTensor, srcTensor, &deqScale, 0.0, nullptr, params,
                                          mode == DeQuantMode::DEQUANT_WITH_SINGLE_ROW);
}
template <typename dstT, typename scaleT, DeQuantMode mode = DeQuantMode::DEQUANT_WITH_SINGLE_ROW,
          typename = std::enable_if_t<!std::is_class_v<scaleT>>>
inline void AscendDequant(const LocalTensor<dstT>& dstTensor, const LocalTensor<int32_t>& srcTensor,
                          const scaleT deqScale, const LocalTensor<uint8_t>& sharedTmpBuffer, DequantParams params,
                          FUSEDSL_CPU_SITE) {
    fusedsl_cpu::DequantRun<dstT, scaleT>(fs_site, dstTensor, srcTensor, nullptr,
                                          static_cast<double>(fusedsl_cpu::ToCompute(deqScale)), &sharedTmpBuffer,
                                          params, mode == DeQuantMode::DEQUANT_WITH_SINGLE_ROW);
}
template <typename dstT, typename scaleT, DeQuantMode mode = DeQuantMode::DEQUANT_WITH_SINGLE_ROW,
          typename = std::enable_if_t<!std::is_class_v<scaleT>>>
inline void AscendDequant(const LocalTensor<dstT>& dstTensor, const LocalTensor<int32_t>& srcTensor,
                          const scaleT deqScale, DequantParams params, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::DequantRun<dstT, scaleT>(fs_site, dstTensor, srcTensor, nullptr,
                                          static_cast<double>(fusedsl_cpu::ToCompute(deqScale)), nullptr, params,
                                          mode == DeQuantMode::DEQUANT_WITH_SINGLE_ROW);
}
// One row of calCount elements.
template <typename dstT, typename scaleT, DeQuantMode mode = DeQuantMode::DEQUANT_WITH_SINGLE_ROW>
inline void AscendDequant(const LocalTensor<dstT>& dstTensor, const LocalTensor<int32_t>& srcTensor,
                          const LocalTensor<scaleT>& deqScale, const LocalTensor<uint8_t>& sharedTmpBuffer,
                          const uint32_t calCount, FUSEDSL_CPU_SITE) {
    uint32_t n = (calCount + 7) / 8 * 8;
    fusedsl_cpu::DequantRun<dstT, scaleT>(fs_site, dstTensor, srcTensor, &deqScale, 0.0, &sharedTmpBuffer,
                                          DequantParams{1, n, calCount}, false);
}

// AscendAntiQuant: per channel (tensor scale and offset, or scale only) and per tensor (scalars).
template <typename InputDataType, typename OutputDataType, bool isTranspose>
inline void AscendAntiQuant(const LocalTensor<OutputDataType>& dst, const LocalTensor<InputDataType>& src,
                            const LocalTensor<OutputDataType>& offset, const LocalTensor<OutputDataType>& scale,
                            const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t k,
                            const AntiQuantShapeInfo& shapeInfo = {}, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::AntiQuantRun(fs_site, dst, src, &offset, 0.0, &scale, 0.0, &sharedTmpBuffer, k, isTranspose,
                              shapeInfo);
}
template <typename InputDataType, typename OutputDataType, bool isTranspose>
inline void AscendAntiQuant(const LocalTensor<OutputDataType>& dst, const LocalTensor<InputDataType>& src,
                            const LocalTensor<OutputDataType>& offset, const LocalTensor<OutputDataType>& scale,
                            const uint32_t k, const AntiQuantShapeInfo& shapeInfo = {}, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::AntiQuantRun(fs_site, dst, src, &offset, 0.0, &scale, 0.0, nullptr, k, isTranspose, shapeInfo);
}
template <typename InputDataType, typename OutputDataType, bool isTranspose>
inline void AscendAntiQuant(const LocalTensor<OutputDataType>& dst, const LocalTensor<InputDataType>& src,
                            const LocalTensor<OutputDataType>& scale, const LocalTensor<uint8_t>& sharedTmpBuffer,
                            const uint32_t k, const AntiQuantShapeInfo& shapeInfo = {}, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::AntiQuantRun<InputDataType, OutputDataType>(fs_site, dst, src, nullptr, 0.0, &scale, 0.0,
                                                             &sharedTmpBuffer, k, isTranspose, shapeInfo);
}
template <typename InputDataType, typename OutputDataType, bool isTranspose>
inline void AscendAntiQuant(const LocalTensor<OutputDataType>& dst, const LocalTensor<InputDataType>& src,
                            const OutputDataType offset, const OutputDataType scale,
                            const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t k,
                            const AntiQuantShapeInfo& shapeInfo = {}, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::AntiQuantRun<InputDataType, OutputDataType>(
        fs_site, dst, src, nullptr, fusedsl_cpu::ToCompute(offset), nullptr, fusedsl_cpu::ToCompute(scale),
        &sharedTmpBuffer, k, isTranspose, shapeInfo);
}
template <typename InputDataType, typename OutputDataType, bool isTranspose>
inline void AscendAntiQuant(const LocalTensor<OutputDataType>& dst, const LocalTensor<InputDataType>& src,
                            const OutputDataType offset, const OutputDataType scale, const uint32_t k,
                            const AntiQuantShapeInfo& shapeInfo = {}, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::AntiQuantRun<InputDataType, OutputDataType>(
        fs_site, dst, src, nullptr, fusedsl_cpu::ToCompute(offset), nullptr, fusedsl_cpu::ToCompute(scale), nullptr,
        k, isTranspose, shapeInfo);
}
template <typename InputDataType, typename OutputDataType, bool isTranspose>
inline void AscendAntiQuant(const LocalTensor<OutputDataType>& dst, const LocalTensor<InputDataType>& src,
                            const OutputDataType scale, const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t k,
                            const AntiQuantShapeInfo& shapeInfo = {}, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::AntiQuantRun<InputDataType, OutputDataType>(fs_site, dst, src, nullptr, 0.0, nullptr,
                                                             fusedsl_cpu::ToCompute(scale), &sharedTmpBuffer, k,
                                                             isTranspose, shapeInfo);
}

}  // namespace AscendC

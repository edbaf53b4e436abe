// Host side of the high-level APIs: GetXxxMaxMinTmpSize (the scratch range a kernel call needs,
// fusedsl_cpu/adv_tmp_sizes.h) and GetXxxTmpBufferFactorSize (maxLiveNodeCount, extraBuf:
// maxTmpBuffer = maxLiveNodeCount * inputSize * typeSize + extraBuf).
#pragma once

#include <cstdint>

#include "fusedsl_cpu/adv_tmp_sizes.h"
#include "fusedsl_cpu/ge_types.h"
#include "fusedsl_cpu/reduce_pattern.h"
#include "kernel_tiling/kernel_tiling.h"
#include "tiling/pad_tiling.h"   // AscendC::TensorShape
#include "tiling/platform/platform_ascendc.h"

namespace AscendC {

namespace fusedsl_host {
inline uint64_t Elements(const TensorShape& shape) {
    int64_t n = shape.GetShapeSize();
    return n > 0 ? static_cast<uint64_t>(n) : 0;
}
inline void Put(const ::fusedsl_cpu::adv::TmpRange& r, uint32_t& maxValue, uint32_t& minValue) {
    maxValue = static_cast<uint32_t>(r.max);
    minValue = static_cast<uint32_t>(r.min);
}
}  // namespace fusedsl_host

#define FUSEDSL_ADV_TMP(NAME, RULE)                                                                              \
    inline void Get##NAME##MaxMinTmpSize(const TensorShape& srcShape, const uint32_t typeSize,                  \
                                          const bool isReuseSource, uint32_t& maxValue, uint32_t& minValue) {    \
        (void)isReuseSource;                                                                                    \
        fusedsl_host::Put(::fusedsl_cpu::adv::RULE(fusedsl_host::Elements(srcShape), typeSize), maxValue,        \
                          minValue);                                                                            \
    }
FUSEDSL_ADV_TMP(Acosh, Acosh)
FUSEDSL_ADV_TMP(Ceil, Ceil)
FUSEDSL_ADV_TMP(Floor, Floor)
FUSEDSL_ADV_TMP(Trunc, Trunc)
FUSEDSL_ADV_TMP(Frac, Frac)
FUSEDSL_ADV_TMP(Erf, Erf)
FUSEDSL_ADV_TMP(Fmod, Fmod)
FUSEDSL_ADV_TMP(Xor, Xor)
FUSEDSL_ADV_TMP(Log, Log)
FUSEDSL_ADV_TMP(Log10, Log)
FUSEDSL_ADV_TMP(Log2, Log2)
FUSEDSL_ADV_TMP(Clamp, Clamp)
FUSEDSL_ADV_TMP(Axpy, Axpy)
FUSEDSL_ADV_TMP(Sigmoid, Sigmoid)
FUSEDSL_ADV_TMP(GeGLU, GeGLU)
#undef FUSEDSL_ADV_TMP

// Silu and Swish need no scratch.
inline void GetSiluTmpSize(const TensorShape&, const uint32_t, const bool, uint32_t& maxValue, uint32_t& minValue) {
    maxValue = minValue = 0;
}
inline void GetSwishTmpSize(const TensorShape&, const uint32_t, const bool, uint32_t& maxValue, uint32_t& minValue) {
    maxValue = minValue = 0;
}
// SwiGLU's helper takes isReuseSource last.
inline void GetSwiGLUMaxMinTmpSize(const TensorShape& srcShape, const uint32_t typeSize, uint32_t& maxValue,
                                   uint32_t& minValue, const bool isReuseSource = false) {
    (void)isReuseSource;
    fusedsl_host::Put(::fusedsl_cpu::adv::SwiGLU(fusedsl_host::Elements(srcShape), typeSize), maxValue, minValue);
}
inline uint32_t GetGeluMinTmpSize(const TensorShape& srcShape, const uint32_t typeSize) {
    return static_cast<uint32_t>(::fusedsl_cpu::adv::Gelu(fusedsl_host::Elements(srcShape), typeSize).min);
}
inline uint32_t GetGeluMaxTmpSize(const TensorShape& srcShape, const uint32_t typeSize) {
    return static_cast<uint32_t>(::fusedsl_cpu::adv::Gelu(fusedsl_host::Elements(srcShape), typeSize).max);
}
inline void GetGeluMaxMinTmpSize(const TensorShape& srcShape, const uint32_t typeSize, uint32_t& maxValue,
                                 uint32_t& minValue) {
    fusedsl_host::Put(::fusedsl_cpu::adv::Gelu(fusedsl_host::Elements(srcShape), typeSize), maxValue, minValue);
}

inline bool GetExpMaxMinTmpSize(const TensorShape& srcShape, const uint32_t typeSize, const bool isReuseSource,
                                uint32_t& maxValue, uint32_t& minValue) {
    fusedsl_host::Put(::fusedsl_cpu::adv::Exp(fusedsl_host::Elements(srcShape), typeSize, isReuseSource), maxValue,
                      minValue);
    return true;
}

inline void GetSumMaxMinTmpSize(const uint32_t n, const uint32_t typeSize, const bool isReuseSource,
                                uint32_t& maxValue, uint32_t& minValue) {
    (void)isReuseSource;
    maxValue = minValue = static_cast<uint32_t>(::fusedsl_cpu::adv::SumBytes(n, typeSize));
}

// A shape of one element [1] stands for a scalar operand.
inline void GetPowerMaxMinTmpSize(const TensorShape& srcShape1, const TensorShape& srcShape2, const bool typeIsInt,
                                  const uint32_t typeSize, const bool isReuseSource, uint32_t& maxValue,
                                  uint32_t& minValue) {
    (void)isReuseSource;
    auto is_tensor = [](const TensorShape& s) { return !(s.GetDimNum() == 1 && s.GetDim(0) == 1); };
    bool t1 = is_tensor(srcShape1);
    bool t2 = is_tensor(srcShape2);
    uint64_t n = fusedsl_host::Elements(t1 ? srcShape1 : srcShape2);
    fusedsl_host::Put(::fusedsl_cpu::adv::Power(::fusedsl_cpu::Target().arch, n, t1 && t2, typeIsInt, typeSize),
                      maxValue, minValue);
}

// srcShape is [outter, inner].
inline void GetCumSumMaxMinTmpSize(const TensorShape& srcShape, const uint32_t typeSize, const bool isLastAxis,
                                   const bool isReuseSource, uint32_t& maxValue, uint32_t& minValue) {
    (void)isReuseSource;
    fusedsl_host::Put(::fusedsl_cpu::adv::CumSum(static_cast<uint64_t>(srcShape.GetDim(0)),
                                                 static_cast<uint64_t>(srcShape.GetDim(1)), typeSize, isLastAxis),
                      maxValue, minValue);
}

// Broadcast of a [m, 1] source to [m, k] (the shapes' dims 1 or 2).
inline void GetBroadCastMaxMinTmpSize(const platform_ascendc::PlatformAscendC& ascendcPlatform,
                                      const TensorShape& srcShape, const TensorShape& dstShape, uint32_t typeSize,
                                      const bool isReuseSource, uint32_t& maxValue, uint32_t& minValue) {
    (void)ascendcPlatform;
    (void)isReuseSource;
    (void)srcShape;
    uint64_t m = dstShape.GetDimNum() == 2 ? static_cast<uint64_t>(dstShape.GetDim(0)) : 1;
    uint64_t k = static_cast<uint64_t>(dstShape.GetDim(dstShape.GetDimNum() - 1));
    fusedsl_host::Put(::fusedsl_cpu::adv::BroadcastRows(m, k, typeSize), maxValue, minValue);
}

// ---- DeepNorm: srcShape [B, S, H] ----
inline bool GetDeepNormMaxMinTmpSize(const TensorShape& srcShape, const uint32_t typeSize, const bool isReuseSource,
                                     const bool isBasicBlock, uint32_t& maxValue, uint32_t& minValue) {
    (void)isBasicBlock;
    if (srcShape.GetDimNum() != 3) {
        return false;
    }
    uint64_t bs = static_cast<uint64_t>(srcShape.GetDim(0)) * static_cast<uint64_t>(srcShape.GetDim(1));
    fusedsl_host::Put(::fusedsl_cpu::adv::DeepNorm(bs, static_cast<uint64_t>(srcShape.GetDim(2)), typeSize,
                                                   isReuseSource), maxValue, minValue);
    return true;
}
inline bool GetDeepNormTilingInfo(const TensorShape& srcShape, const TensorShape& originSrcShape,
                                  const uint32_t stackBufferSize, const uint32_t typeSize, const bool isReuseSource,
                                  const bool isBasicBlock, DeepNormTiling& tiling) {
    (void)typeSize;
    (void)isReuseSource;
    (void)isBasicBlock;
    if (srcShape.GetDimNum() != 3 || originSrcShape.GetDimNum() != 3) {
        return false;
    }
    tiling = DeepNormTiling{};
    tiling.bLength = static_cast<uint32_t>(srcShape.GetDim(0));
    tiling.sLength = static_cast<uint32_t>(srcShape.GetDim(1));
    tiling.hLength = static_cast<uint32_t>(srcShape.GetDim(2));
    tiling.originalHLength = static_cast<uint32_t>(originSrcShape.GetDim(2));
    tiling.tmpBufSize = stackBufferSize;
    tiling.lastDimValueBack = tiling.originalHLength ? 1.0f / static_cast<float>(tiling.originalHLength) : 0.0f;
    return true;
}

// ---- LayerNorm family: srcShape [B, S, H] or [B, S, H, original H]; [A, R] for the rstd form ----
namespace fusedsl_host {
inline bool BshShape(const TensorShape& s, uint64_t& bs, uint64_t& h, uint64_t& oh) {
    if (s.GetDimNum() != 3 && s.GetDimNum() != 4) {
        return false;
    }
    bs = static_cast<uint64_t>(s.GetDim(0)) * static_cast<uint64_t>(s.GetDim(1));
    h = static_cast<uint64_t>(s.GetDim(2));
    oh = s.GetDimNum() == 4 ? static_cast<uint64_t>(s.GetDim(3)) : h;
    return true;
}
inline uint64_t PadTo32Bytes(uint64_t n, uint32_t typeSize) {
    uint64_t per = typeSize ? 32 / typeSize : 1;
    return (n + per - 1) / per * per;
}
}  // namespace fusedsl_host

inline void GetLayerNormMaxMinTmpSize(const TensorShape& srcShape, const uint32_t typeSize, const bool isReuseSource,
                                      uint32_t& maxValue, uint32_t& minValue) {
    uint64_t bs, h, oh;
    maxValue = minValue = 0;
    if (fusedsl_host::BshShape(srcShape, bs, h, oh)) {
        fusedsl_host::Put(::fusedsl_cpu::adv::LayerNorm(bs, h, typeSize, isReuseSource), maxValue, minValue);
    }
}
inline void GetLayerNormMaxMinTmpSize(const TensorShape& srcShape, const uint32_t typeSize, const bool isReuseSource,
                                      const bool isComputeRstd, const bool isOnlyOutput, uint32_t& maxValue,
                                      uint32_t& minValue) {
    (void)isReuseSource;
    (void)isComputeRstd;
    (void)isOnlyOutput;
    maxValue = minValue = 0;
    if (srcShape.GetDimNum() == 2) {
        uint64_t a = static_cast<uint64_t>(srcShape.GetDim(0));
        uint64_t r = fusedsl_host::PadTo32Bytes(static_cast<uint64_t>(srcShape.GetDim(1)), typeSize);
        fusedsl_host::Put(::fusedsl_cpu::adv::LayerNormRstd(a, r, typeSize), maxValue, minValue);
    }
}
inline void GetLayerNormNDTilingInfo(const TensorShape& srcShape, const uint32_t stackBufferSize,
                                     const uint32_t typeSize, const bool isReuseSource, LayerNormTiling& tiling) {
    (void)typeSize;
    (void)isReuseSource;
    tiling = LayerNormTiling{};
    if (srcShape.GetDimNum() != 3 && srcShape.GetDimNum() != 4) {
        return;
    }
    tiling.bLength = static_cast<uint32_t>(srcShape.GetDim(0));
    tiling.sLength = static_cast<uint32_t>(srcShape.GetDim(1));
    tiling.hLength = static_cast<uint32_t>(srcShape.GetDim(2));
    tiling.originalHLength = static_cast<uint32_t>(srcShape.GetDim(srcShape.GetDimNum() - 1));
    tiling.tmpBufSize = stackBufferSize;
    tiling.lastDimValueBack = tiling.originalHLength ? 1.0f / static_cast<float>(tiling.originalHLength) : 0.0f;
}
inline void GetLayerNormNDTillingInfo(const TensorShape& srcShape, const uint32_t stackBufferSize,
                                      const uint32_t typeSize, const bool isReuseSource, LayerNormTiling& tilling) {
    GetLayerNormNDTilingInfo(srcShape, stackBufferSize, typeSize, isReuseSource, tilling);
}
inline void GetLayerNormNDTilingInfo(const TensorShape& srcShape, const uint32_t stackBufferSize,
                                     const uint32_t typeSize, const bool isReuseSource, const bool isComputeRstd,
                                     LayerNormSeparateTiling& tiling) {
    (void)typeSize;
    (void)isReuseSource;
    tiling = LayerNormSeparateTiling{};
    if (srcShape.GetDimNum() != 2) {
        return;
    }
    tiling.aLength = static_cast<uint32_t>(srcShape.GetDim(0));
    tiling.rLength = static_cast<uint32_t>(srcShape.GetDim(1));
    tiling.tmpBufSize = stackBufferSize;
    tiling.isComputeRstd = isComputeRstd ? 1u : 0u;
    tiling.rValueBack = tiling.rLength ? 1.0f / static_cast<float>(tiling.rLength) : 0.0f;
}
inline void GetNormalizeMaxMinTmpSize(const TensorShape& srcShape, const uint32_t typeSizeU, const uint32_t typeSizeT,
                                      const bool isReuseSource, const bool isComputeRstd, const bool isOnlyOutput,
                                      uint32_t& maxValue, uint32_t& minValue) {
    (void)isReuseSource;
    (void)isComputeRstd;
    (void)isOnlyOutput;
    maxValue = minValue = 0;
    if (srcShape.GetDimNum() == 2) {
        uint64_t a = static_cast<uint64_t>(srcShape.GetDim(0));
        uint64_t r = fusedsl_host::PadTo32Bytes(static_cast<uint64_t>(srcShape.GetDim(1)), typeSizeT);
        fusedsl_host::Put(::fusedsl_cpu::adv::Normalize(a, r, typeSizeU), maxValue, minValue);
    }
}
inline void GetLayerNormGradMaxMinTmpSize(const TensorShape& srcShape, const uint32_t typeSize,
                                          const bool isReuseSource, uint32_t& maxValue, uint32_t& minValue) {
    (void)isReuseSource;
    uint64_t bs, h, oh;
    maxValue = minValue = 0;
    if (fusedsl_host::BshShape(srcShape, bs, h, oh)) {
        fusedsl_host::Put(::fusedsl_cpu::adv::LayerNormGrad(bs, h, typeSize), maxValue, minValue);
    }
}
inline void GetLayerNormGradNDTilingInfo(const TensorShape srcShape, const uint32_t stackBufferSize,
                                         const uint32_t typeSize, const bool isReuseSource,
                                         LayerNormGradTiling& tiling) {
    (void)typeSize;
    (void)isReuseSource;
    tiling = LayerNormGradTiling{};
    uint64_t bs, h, oh;
    if (!fusedsl_host::BshShape(srcShape, bs, h, oh)) {
        return;
    }
    tiling.stackBufferSize = stackBufferSize;
    tiling.bLength = static_cast<uint32_t>(srcShape.GetDim(0));
    tiling.sLength = static_cast<uint32_t>(srcShape.GetDim(1));
    tiling.hLength = static_cast<uint32_t>(h);
    tiling.originalHLength = static_cast<uint32_t>(oh);
    tiling.lastDimValueBack = oh ? 1.0f / static_cast<float>(oh) : 0.0f;
}
inline void GetLayerNormGradBetaMaxMinTmpSize(const TensorShape& srcShape, const uint32_t typeSize,
                                              const bool isReuseSource, uint32_t& maxValue, uint32_t& minValue) {
    (void)isReuseSource;
    uint64_t bs, h, oh;
    maxValue = minValue = 0;
    if (fusedsl_host::BshShape(srcShape, bs, h, oh)) {
        fusedsl_host::Put(::fusedsl_cpu::adv::LayerNormGradBeta(bs, h, typeSize), maxValue, minValue);
    }
}
inline void GetLayerNormGradBetaNDTilingInfo(const TensorShape srcShape, const uint32_t stackBufferSize,
                                             const uint32_t typeSize, const bool isReuseSource,
                                             LayerNormGradBetaTiling& tiling) {
    (void)typeSize;
    (void)isReuseSource;
    tiling = LayerNormGradBetaTiling{};
    uint64_t bs, h, oh;
    if (!fusedsl_host::BshShape(srcShape, bs, h, oh)) {
        return;
    }
    tiling.stackBufferSize = stackBufferSize;
    tiling.bLength = static_cast<uint32_t>(srcShape.GetDim(0));
    tiling.sLength = static_cast<uint32_t>(srcShape.GetDim(1));
    tiling.hLength = static_cast<uint32_t>(h);
    tiling.originalHLength = static_cast<uint32_t>(oh);
    tiling.bshLength = static_cast<uint32_t>(bs * h);
    tiling.bsLength = static_cast<uint32_t>(bs);
}
// srcShape [rn, ab].
inline void GetWelfordUpdateMaxMinTmpSize(const TensorShape& srcShape, const uint32_t typeSizeT,
                                          const uint32_t typeSizeU, const bool isReuseSource, const bool isInplace,
                                          uint32_t& maxValue, uint32_t& minValue) {
    (void)typeSizeU;
    (void)isInplace;
    fusedsl_host::Put(::fusedsl_cpu::adv::WelfordUpdate(fusedsl_host::Elements(srcShape), typeSizeT, isReuseSource),
                      maxValue, minValue);
}
// srcShape [ab].
inline void GetWelfordFinalizeMaxMinTmpSize(const TensorShape& srcShape, const uint32_t typeSize,
                                            const bool isReuseSource, uint32_t& maxValue, uint32_t& minValue) {
    (void)typeSize;
    (void)isReuseSource;
    fusedsl_host::Put(::fusedsl_cpu::adv::WelfordFinalize(fusedsl_host::Elements(srcShape)), maxValue, minValue);
}

// ---- pattern reductions: srcShape [first, last] ----
namespace fusedsl_host {
inline uint32_t GeTypeSize(TensorDataType t) {
    switch (t) {
        case ge::DT_FLOAT16: case ge::DT_BF16: case ge::DT_INT16: case ge::DT_UINT16: return 2;
        case ge::DT_INT8: case ge::DT_UINT8: case ge::DT_BOOL: return 1;
        case ge::DT_INT64: case ge::DT_UINT64: case ge::DT_DOUBLE: return 8;
        default: return 4;
    }
}
inline void PatternReduceTmp(const TensorShape& s, TensorDataType t, ReducePattern p, bool reuse, uint32_t& maxValue,
                             uint32_t& minValue) {
    maxValue = minValue = 0;
    if (s.GetDimNum() == 2) {
        Put(::fusedsl_cpu::adv::PatternReduce(static_cast<uint64_t>(s.GetDim(0)), static_cast<uint64_t>(s.GetDim(1)),
                                              GeTypeSize(t), p == ReducePattern::RA, reuse), maxValue, minValue);
    }
}
}  // namespace fusedsl_host
inline void GetReduceMaxMaxMinTmpSize(const TensorShape& srcShape, const TensorDataType dataType, ReducePattern pattern,
                                      bool isSrcInnerPad, bool isReuseSource, uint32_t& maxValue, uint32_t& minValue) {
    (void)isSrcInnerPad;
    fusedsl_host::PatternReduceTmp(srcShape, dataType, pattern, isReuseSource, maxValue, minValue);
}
inline void GetReduceMinMaxMinTmpSize(const TensorShape& srcShape, const TensorDataType dataType, ReducePattern pattern,
                                      bool isSrcInnerPad, bool isReuseSource, uint32_t& maxValue, uint32_t& minValue) {
    (void)isSrcInnerPad;
    fusedsl_host::PatternReduceTmp(srcShape, dataType, pattern, isReuseSource, maxValue, minValue);
}

// ---- sort ----
// The SortConfig Sort (radix / merge sort with an ascending option) is an Ascend 950 API: CANN's
// helper refuses other chips and leaves the outputs unset; fusedsl reports 0 for both so a caller
// that sizes an optional buffer from them skips it (the Sort A2/A3 have takes no sharedTmpBuffer).
enum class SortType { RADIX_SORT, MERGE_SORT };
struct SortConfig {
    SortType type = SortType::RADIX_SORT;
    bool isDescend = false;
    bool hasSrcIndex = false;
    bool hasDstIndex = false;
};
inline void GetSortMaxMinTmpSize(const TensorShape& srcShape, TensorDataType valueType, TensorDataType indexType,
                                 bool isReuseSource, const SortConfig& config, uint32_t& maxValue,
                                 uint32_t& minValue) {
    (void)srcShape;
    (void)valueType;
    (void)indexType;
    (void)isReuseSource;
    (void)config;
    maxValue = minValue = 0;
}
// Concat needs none on A2/A3 (it hands the scores over); 310P's region proposals take 8 elements each.
inline uint32_t GetConcatTmpSize(const platform_ascendc::PlatformAscendC& ascendcPlatform, const uint32_t elemCount,
                                 const uint32_t dataTypeSize) {
    return ascendcPlatform.GetSocVersion() == platform_ascendc::SocVersion::ASCEND310P ? elemCount * 8 * dataTypeSize
                                                                                       : 0;
}
// Sort's merge lists: one 8-byte record per element on A2/A3, a region proposal on 310P.
inline uint32_t GetSortTmpSize(const platform_ascendc::PlatformAscendC& ascendcPlatform, const uint32_t elemCount,
                               const uint32_t dataTypeSize) {
    return ascendcPlatform.GetSocVersion() == platform_ascendc::SocVersion::ASCEND310P ? elemCount * 8 * dataTypeSize
                                                                                       : elemCount * 8;
}

// ---- TopK ----
inline bool GetTopKMaxMinTmpSize(const platform_ascendc::PlatformAscendC& ascendcPlatform, const int32_t inner,
                                 const int32_t outter, const bool isReuseSource, const bool isInitIndex, TopKMode mode,
                                 const bool isLargest, const uint32_t dataTypeSize, uint32_t& maxValue,
                                 uint32_t& minValue) {
    (void)isReuseSource;
    if (inner <= 0 || outter <= 0 || dataTypeSize == 0) {
        return false;
    }
    bool proposals = ascendcPlatform.GetSocVersion() == platform_ascendc::SocVersion::ASCEND310P;
    fusedsl_host::Put(::fusedsl_cpu::adv::TopK(static_cast<uint64_t>(inner), static_cast<uint64_t>(outter),
                                               mode == TopKMode::TOPK_NSMALL, isInitIndex, isLargest, dataTypeSize,
                                               proposals), maxValue, minValue);
    return true;
}
inline bool TopKTilingFunc(const platform_ascendc::PlatformAscendC& ascendcPlatform, const int32_t inner,
                           const int32_t outter, const int32_t k, const uint32_t dataTypeSize, const bool isInitIndex,
                           TopKMode mode, const bool isLargest, TopkTiling& topKTiling) {
    uint32_t mx = 0, mn = 0;
    if (k <= 0 || !GetTopKMaxMinTmpSize(ascendcPlatform, inner, outter, false, isInitIndex, mode, isLargest,
                                        dataTypeSize, mx, mn)) {
        return false;
    }
    topKTiling = TopkTiling{};
    topKTiling.tmpLocalSize = static_cast<int32_t>(mn);
    topKTiling.allDataSize = inner * outter;
    topKTiling.innerDataSize = inner;
    topKTiling.k = k;
    topKTiling.kAlignFourBytes = (k + 7) / 8 * 8;
    topKTiling.kAlignTwoBytes = (k + 15) / 16 * 16;
    topKTiling.mode = static_cast<int32_t>(mode);
    topKTiling.isLargest = isLargest ? 1 : 0;
    topKTiling.isInitIndex = isInitIndex ? 1 : 0;
    topKTiling.outter = outter;
    return true;
}

// ---- filters ----
inline void GetDropOutMaxMinTmpSize(const TensorShape& srcShape, const uint32_t typeSize, const bool isReuseSource,
                                    uint32_t& maxValue, uint32_t& minValue) {
    (void)typeSize;
    (void)isReuseSource;
    fusedsl_host::Put(::fusedsl_cpu::adv::DropOut(fusedsl_host::Elements(srcShape)), maxValue, minValue);
}
// One of src0Shape/src1Shape is the tensor ([first, last]), the other a scalar; maskShape [first, last'].
inline void GetSelectMaxMinTmpSize(const TensorShape& src0Shape, const TensorShape& src1Shape,
                                   const uint32_t srcTypeSize, const TensorShape& maskShape,
                                   const uint32_t maskTypeSize, const bool isReuseMask, uint32_t& maxValue,
                                   uint32_t& minValue) {
    (void)srcTypeSize;
    bool src0_scalar = src0Shape.GetDimNum() == 0 || src0Shape.GetShapeSize() == 1;
    const TensorShape& src = src0_scalar ? src1Shape : src0Shape;
    int64_t src_last = src.GetDimNum() ? src.GetDim(src.GetDimNum() - 1) : 1;
    int64_t mask_last = maskShape.GetDimNum() ? maskShape.GetDim(maskShape.GetDimNum() - 1) : 1;
    fusedsl_host::Put(::fusedsl_cpu::adv::SelectBytesMask(fusedsl_host::Elements(src),
                                                          mask_last != src_last && mask_last > 1, maskTypeSize,
                                                          isReuseMask), maxValue, minValue);
}
inline void GetSelectWithBytesMaskMaxMinTmpSize(const TensorShape& src0Shape, const TensorShape& src1Shape,
                                                const uint32_t srcTypeSize, const TensorShape& maskShape,
                                                const uint32_t maskTypeSize, const bool isReuseMask,
                                                uint32_t& maxValue, uint32_t& minValue) {
    GetSelectMaxMinTmpSize(src0Shape, src1Shape, srcTypeSize, maskShape, maskTypeSize, isReuseMask, maxValue,
                           minValue);
}

// ---- quantization ----
// AscendAntiQuant: srcShape [K, N] ([N, K] transposed), scaleShape the scale's; half output needs
// no scratch, bfloat16 output float copies (the API's host helper rules).
inline void GetAscendAntiQuantMaxMinTmpSize(const TensorShape& srcShape, const TensorShape& scaleShape,
                                            bool isTranspose, TensorDataType inputDataType,
                                            TensorDataType outputDataType, uint32_t& maxValue, uint32_t& minValue) {
    (void)inputDataType;
    uint64_t k = srcShape.GetDimNum() > 0 ? static_cast<uint64_t>(srcShape.GetDim(0)) : 0;
    fusedsl_host::Put(::fusedsl_cpu::adv::AscendAntiQuant(fusedsl_host::Elements(srcShape), k,
                                                          fusedsl_host::Elements(scaleShape), isTranspose,
                                                          outputDataType == ge::DT_FLOAT16), maxValue, minValue);
}
inline void GetAscendQuantMaxMinTmpSize(const TensorShape& srcShape, const uint32_t typeSize, uint32_t& maxValue,
                                        uint32_t& minValue) {
    (void)typeSize;
    fusedsl_host::Put(::fusedsl_cpu::adv::AscendQuant(fusedsl_host::Elements(srcShape)), maxValue, minValue);
}
// srcShape: [m, n] or [n] of int32.
inline void GetAscendDequantMaxMinTmpSize(const TensorShape& srcShape, const uint32_t typeSize, uint32_t& maxValue,
                                          uint32_t& minValue) {
    (void)typeSize;
    size_t d = srcShape.GetDimNum();
    uint64_t outer = d == 2 ? static_cast<uint64_t>(srcShape.GetDim(0)) : 1;
    uint64_t inner = d ? static_cast<uint64_t>(srcShape.GetDim(d - 1)) : 0;
    fusedsl_host::Put(::fusedsl_cpu::adv::AscendDequant(outer, inner), maxValue, minValue);
}

// ---- SoftMax family: [m, k] is the shape's product of leading axes by its last axis. ----
namespace fusedsl_host {
inline void RowsCols(const TensorShape& shape, uint32_t& m, uint32_t& k) {
    size_t d = shape.GetDimNum();
    k = d ? static_cast<uint32_t>(shape.GetDim(d - 1)) : 0;
    uint64_t n = Elements(shape);
    m = k ? static_cast<uint32_t>(n / k) : 0;
}
// fusedsl's tiling: rows per pass = how many rows' temporaries fit the workspace.
template <typename Tiling>
inline void FillSoftmaxTiling(const TensorShape& shape, uint32_t typeSize, uint64_t rowBytes, uint32_t workspace,
                              Tiling& t) {
    uint32_t m = 0, k = 0;
    RowsCols(shape, m, k);
    uint32_t epb = typeSize ? 32 / typeSize : 0;
    uint32_t split = rowBytes ? static_cast<uint32_t>(std::min<uint64_t>(workspace / rowBytes, m)) : m;
    split = std::max<uint32_t>(split, m ? 1 : 0);
    t = Tiling{};
    t.srcM = m;
    t.srcK = k;
    t.srcSize = m * k;
    t.outMaxM = m;
    t.outMaxK = epb;
    t.outMaxSize = m * epb;
    t.splitM = split;
    t.splitK = k;
    t.splitSize = split * k;
    t.reduceM = split;
    t.reduceK = epb;
    t.reduceSize = split * epb;
    t.rangeM = split ? m / split : 0;
    t.tailM = split ? m % split : 0;
    t.tailSplitSize = t.tailM * k;
    t.tailReduceSize = t.tailM * epb;
}
}  // namespace fusedsl_host

inline uint32_t GetSoftMaxMinTmpSize(const TensorShape& srcShape, const uint32_t dataTypeSize, const bool isReuseSource) {
    (void)isReuseSource;
    uint32_t m = 0, k = 0;
    fusedsl_host::RowsCols(srcShape, m, k);
    return static_cast<uint32_t>(::fusedsl_cpu::adv::SoftMaxRowMin(k, dataTypeSize));
}
inline uint32_t GetSoftMaxMaxTmpSize(const TensorShape& srcShape, const uint32_t dataTypeSize, const bool isReuseSource) {
    uint32_t m = 0, k = 0;
    fusedsl_host::RowsCols(srcShape, m, k);
    return GetSoftMaxMinTmpSize(srcShape, dataTypeSize, isReuseSource) * m;
}
inline void SoftMaxTilingFunc(const TensorShape& srcShape, const uint32_t dataTypeSize, const uint32_t localWorkSpaceSize,
                              SoftMaxTiling& softmaxTiling) {
    uint32_t m = 0, k = 0;
    fusedsl_host::RowsCols(srcShape, m, k);
    fusedsl_host::FillSoftmaxTiling(srcShape, dataTypeSize, ::fusedsl_cpu::adv::SoftMaxRowMin(k, dataTypeSize),
                                    localWorkSpaceSize, softmaxTiling);
}
inline uint32_t GetLogSoftMaxMinTmpSize(const TensorShape srcShape, const uint32_t dataTypeSize,
                                        const bool isReuseSource) {
    return GetSoftMaxMinTmpSize(srcShape, dataTypeSize, isReuseSource);
}
inline uint32_t GetLogSoftMaxMaxTmpSize(const TensorShape srcShape, const uint32_t dataTypeSize,
                                        const bool isReuseSource) {
    return GetSoftMaxMaxTmpSize(srcShape, dataTypeSize, isReuseSource);
}
inline void LogSoftMaxTilingFunc(const TensorShape srcShape, const uint32_t dataTypeSize,
                                 const uint32_t localWorkSpaceSize, LogSoftMaxTiling& softmaxTiling) {
    uint32_t m = 0, k = 0;
    fusedsl_host::RowsCols(srcShape, m, k);
    fusedsl_host::FillSoftmaxTiling(srcShape, dataTypeSize, ::fusedsl_cpu::adv::SoftMaxRowMin(k, dataTypeSize),
                                    localWorkSpaceSize, softmaxTiling);
}
inline uint32_t GetSoftMaxGradMinTmpSize(const TensorShape& srcShape, const uint32_t dataTypeSize, const bool isFront,
                                         const bool isReuseSource) {
    (void)isReuseSource;
    uint32_t m = 0, k = 0;
    fusedsl_host::RowsCols(srcShape, m, k);
    return static_cast<uint32_t>(::fusedsl_cpu::adv::SoftMaxGradRowMin(k, dataTypeSize, isFront));
}
inline uint32_t GetSoftMaxGradMaxTmpSize(const TensorShape& srcShape, const uint32_t dataTypeSize, const bool isFront,
                                         const bool isReuseSource) {
    uint32_t m = 0, k = 0;
    fusedsl_host::RowsCols(srcShape, m, k);
    return GetSoftMaxGradMinTmpSize(srcShape, dataTypeSize, isFront, isReuseSource) * m;
}
inline void SoftMaxGradTilingFunc(const TensorShape& srcShape, const uint32_t dataTypeSize,
                                  const uint32_t localWorkSpaceSize, SoftMaxTiling& softmaxGradTiling,
                                  const bool isFront = false) {
    uint32_t m = 0, k = 0;
    fusedsl_host::RowsCols(srcShape, m, k);
    fusedsl_host::FillSoftmaxTiling(srcShape, dataTypeSize,
                                    ::fusedsl_cpu::adv::SoftMaxGradRowMin(k, dataTypeSize, isFront),
                                    localWorkSpaceSize, softmaxGradTiling);
}
inline uint32_t GetSoftMaxFlashV2MinTmpSize(const TensorShape& srcShape, const uint32_t dataTypeSize1,
                                            const uint32_t dataTypeSize2, const bool isUpdate,
                                            const bool isBasicBlock = false, const bool isFlashOutputBrc = false) {
    (void)isUpdate;
    (void)isFlashOutputBrc;
    uint32_t m = 0, k = 0;
    fusedsl_host::RowsCols(srcShape, m, k);
    return static_cast<uint32_t>(::fusedsl_cpu::adv::SoftMaxFlashV2Min(k, dataTypeSize1, dataTypeSize2, isBasicBlock));
}
inline uint32_t GetSoftMaxFlashV2MaxTmpSize(const TensorShape& srcShape, const uint32_t dataTypeSize1,
                                            const uint32_t dataTypeSize2, const bool isUpdate,
                                            const bool isBasicBlock = false, const bool isFlashOutputBrc = false) {
    uint32_t m = 0, k = 0;
    fusedsl_host::RowsCols(srcShape, m, k);
    return GetSoftMaxFlashV2MinTmpSize(srcShape, dataTypeSize1, dataTypeSize2, isUpdate, isBasicBlock,
                                       isFlashOutputBrc) * m;
}
inline void SoftMaxFlashV2TilingFunc(const TensorShape& srcShape, const uint32_t dataTypeSize1,
                                     const uint32_t dataTypeSize2, const uint32_t localWorkSpaceSize,
                                     SoftMaxTiling& softmaxFlashTiling, const bool isUpdate,
                                     const bool isBasicBlock = false, const bool isFlashOutputBrc = false) {
    (void)isUpdate;
    (void)isFlashOutputBrc;
    uint32_t m = 0, k = 0;
    fusedsl_host::RowsCols(srcShape, m, k);
    fusedsl_host::FillSoftmaxTiling(
        srcShape, dataTypeSize2, ::fusedsl_cpu::adv::SoftMaxFlashV2Min(k, dataTypeSize1, dataTypeSize2, isBasicBlock),
        localWorkSpaceSize, softmaxFlashTiling);
}
// SoftmaxFlashV3 (its Tiling page): T half (2), U float (4); the minimum is one row's scratch of
// fusedsl's model (adv::SoftMaxFlashV3Min), the maximum every row's.
inline void GetSoftMaxFlashV3MaxMinTmpSize(const TensorShape& srcShape, const uint32_t dataTypeSize1,
                                           const uint32_t dataTypeSize2, uint32_t& maxValue, uint32_t& minValue,
                                           const bool isUpdate, const bool isBasicBlock = false) {
    (void)isUpdate;
    (void)isBasicBlock;
    (void)dataTypeSize1;
    (void)dataTypeSize2;
    uint32_t m = 0, k = 0;
    fusedsl_host::RowsCols(srcShape, m, k);
    minValue = static_cast<uint32_t>(::fusedsl_cpu::adv::SoftMaxFlashV3Min(k));
    maxValue = minValue * m;
}
inline void SoftMaxFlashV3TilingFunc(const TensorShape& srcShape, const uint32_t dataTypeSize1,
                                     const uint32_t dataTypeSize2, const uint32_t localWorkSpaceSize,
                                     SoftMaxTiling& softmaxFlashV3Tiling, const bool isUpdate,
                                     const bool isBasicBlock = false) {
    (void)isUpdate;
    (void)isBasicBlock;
    (void)dataTypeSize1;
    uint32_t m = 0, k = 0;
    fusedsl_host::RowsCols(srcShape, m, k);
    fusedsl_host::FillSoftmaxTiling(srcShape, dataTypeSize2, ::fusedsl_cpu::adv::SoftMaxFlashV3Min(k),
                                    localWorkSpaceSize, softmaxFlashV3Tiling);
}
// The API page's basic-block rule on the tiling's shape.
inline bool IsBasicBlockInSoftMax(SoftMaxTiling& tiling, const uint32_t dataTypeSize = 2) {
    uint32_t k = tiling.srcK, m = tiling.srcM;
    return dataTypeSize && k < 2048 && k >= 256 / dataTypeSize && k % 64 == 0 && m % 8 == 0;
}

}  // namespace AscendC

// Host side of the high-level APIs: GetXxxMaxMinTmpSize (the scratch range a kernel call needs,
// fusedsl_cpu/adv_tmp_sizes.h) and GetXxxTmpBufferFactorSize (maxLiveNodeCount, extraBuf:
// maxTmpBuffer = maxLiveNodeCount * inputSize * typeSize + extraBuf).
#pragma once

#include <cstdint>

#include "fusedsl_cpu/adv_tmp_sizes.h"
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

}  // namespace AscendC

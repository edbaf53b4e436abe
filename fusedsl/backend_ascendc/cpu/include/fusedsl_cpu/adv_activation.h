// fusedsl CPU implementation of the Ascend C API: the element-wise high-level activations
// (asc-devkit docs/zh/api/SIMD-API/高阶API/激活函数): Gelu (tanh form), FasterGelu, Sigmoid, Silu, Swish,
// SwiGLU and GeGLU.  Computed in double, rounded once to T; checks as adv_common.h.
#pragma once

#include "adv_common.h"
#include "adv_tmp_sizes.h"

namespace fusedsl_cpu {

// The tanh-form GELU the API pages give: x / (1 + e^(-2 sqrt(2/pi) (x + 0.044715 x^3))).
inline double GeluTanh(double x) {
    return x / (1.0 + std::exp(-1.5957691216057308 * (x + 0.044715 * x * x * x)));
}

inline double SigmoidOf(double x) {
    return 1.0 / (1.0 + std::exp(-x));
}

// FasterGelu: the simplified fast GELU of asc-devkit's impl (gelu_impl.h FastGeluCalcSimplified),
// x / (1 + e^(-1.702 x)).
inline double FasterGeluOf(double x) {
    return x / (1.0 + std::exp(-1.702 * x));
}

}  // namespace fusedsl_cpu

namespace AscendC {

// highPrecision / highPerformance pick the device's instruction sequence; the value is GELU's.
template <typename T, bool highPrecision = false, bool highPerformance = false>
inline void Gelu(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal,
                 const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t dataSize, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::AdvUnary("Gelu", fs_site, fusedsl_cpu::kChipsA2A3_310P, " half float ", dstLocal, srcLocal,
                          &sharedTmpBuffer, dataSize, fusedsl_cpu::adv::Gelu(dataSize, sizeof(T)),
                          "GetGeluMaxMinTmpSize", fusedsl_cpu::GeluTanh);
}
template <typename T, bool highPrecision = false, bool highPerformance = false>
inline void Gelu(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const uint32_t dataSize,
                 FUSEDSL_CPU_SITE) {
    fusedsl_cpu::AdvUnary("Gelu", fs_site, fusedsl_cpu::kChipsA2A3_310P, " half float ", dstLocal, srcLocal, nullptr,
                          dataSize, fusedsl_cpu::adv::Gelu(dataSize, sizeof(T)), "GetGeluMaxMinTmpSize",
                          fusedsl_cpu::GeluTanh);
}

// FasterGelu page: half/float on A2/A3 and 310P AI Core, its scratch sized by GetGeluMaxMinTmpSize.
template <typename T, bool highPrecision = false, bool highPerformance = false>
inline void FasterGelu(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal,
                       const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t dataSize, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::AdvUnary("FasterGelu", fs_site, fusedsl_cpu::kChipsA2A3_310P, " half float ", dstLocal, srcLocal,
                          &sharedTmpBuffer, dataSize, fusedsl_cpu::adv::Gelu(dataSize, sizeof(T)),
                          "GetGeluMaxMinTmpSize", fusedsl_cpu::FasterGeluOf);
}
template <typename T, bool highPrecision = false, bool highPerformance = false>
inline void FasterGelu(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const uint32_t dataSize,
                       FUSEDSL_CPU_SITE) {
    fusedsl_cpu::AdvUnary("FasterGelu", fs_site, fusedsl_cpu::kChipsA2A3_310P, " half float ", dstLocal, srcLocal,
                          nullptr, dataSize, fusedsl_cpu::adv::Gelu(dataSize, sizeof(T)), "GetGeluMaxMinTmpSize",
                          fusedsl_cpu::FasterGeluOf);
}

template <typename T, bool isReuseSource = false>
inline void Sigmoid(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                    const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::AdvUnary("Sigmoid", fs_site, fusedsl_cpu::kChipsA2A3_310P, " half float ", dstTensor, srcTensor,
                          &sharedTmpBuffer, calCount, fusedsl_cpu::adv::Sigmoid(calCount, sizeof(T)),
                          "GetSigmoidMaxMinTmpSize", fusedsl_cpu::SigmoidOf);
}
template <typename T, bool isReuseSource = false>
inline void Sigmoid(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                    const LocalTensor<uint8_t>& sharedTmpBuffer, FUSEDSL_CPU_SITE) {
    Sigmoid<T, isReuseSource>(dstTensor, srcTensor, sharedTmpBuffer, srcTensor.GetSize(), fs_site);
}
template <typename T, bool isReuseSource = false>
inline void Sigmoid(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, const uint32_t calCount,
                    FUSEDSL_CPU_SITE) {
    fusedsl_cpu::AdvUnary("Sigmoid", fs_site, fusedsl_cpu::kChipsA2A3_310P, " half float ", dstTensor, srcTensor,
                          nullptr, calCount, fusedsl_cpu::adv::Sigmoid(calCount, sizeof(T)),
                          "GetSigmoidMaxMinTmpSize", fusedsl_cpu::SigmoidOf);
}
template <typename T, bool isReuseSource = false>
inline void Sigmoid(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, FUSEDSL_CPU_SITE) {
    Sigmoid<T, isReuseSource>(dstTensor, srcTensor, srcTensor.GetSize(), fs_site);
}

// Silu(x) = x * sigmoid(x); Swish(x) = x * sigmoid(beta * x).  No scratch.
template <typename T, bool isReuseSource = false>
inline void Silu(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, uint32_t dataSize, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::AdvUnary("Silu", fs_site, fusedsl_cpu::kChipsA2A3_310P, " half float ", dstLocal, srcLocal, nullptr,
                          dataSize, fusedsl_cpu::adv::None(dataSize, sizeof(T)), "GetSiluTmpSize",
                          [](double x) { return x * fusedsl_cpu::SigmoidOf(x); });
}
template <typename T, bool isReuseSource = false>
inline void Swish(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, uint32_t dataSize,
                  const T scalarValue, FUSEDSL_CPU_SITE) {
    double beta = static_cast<double>(fusedsl_cpu::ToCompute(scalarValue));
    fusedsl_cpu::AdvUnary("Swish", fs_site, fusedsl_cpu::kChipsA2A3_310P, " half float ", dstLocal, srcLocal, nullptr,
                          dataSize, fusedsl_cpu::adv::None(dataSize, sizeof(T)), "GetSwishTmpSize",
                          [beta](double x) { return x * fusedsl_cpu::SigmoidOf(beta * x); });
}

// SwiGLU(a, b) = a * Swish(b, beta); GeGLU(a, b) = a * Gelu(b).
template <typename T, bool isReuseSource = false>
inline void SwiGLU(LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor0, const LocalTensor<T>& srcTensor1,
                   const float& scalarValue, const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount,
                   FUSEDSL_CPU_SITE) {
    double beta = scalarValue;
    fusedsl_cpu::AdvBinary("SwiGLU", fs_site, fusedsl_cpu::kChipsA2A3_310P, " half float ", dstTensor, &srcTensor0,
                           0.0, &srcTensor1, 0.0, &sharedTmpBuffer, calCount,
                           fusedsl_cpu::adv::SwiGLU(calCount, sizeof(T)), "GetSwiGLUMaxMinTmpSize",
                           [beta](double a, double b) { return a * b * fusedsl_cpu::SigmoidOf(beta * b); });
}
template <typename T, bool isReuseSource = false>
inline void SwiGLU(LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor0, const LocalTensor<T>& srcTensor1,
                   const float& scalarValue, const LocalTensor<uint8_t>& sharedTmpBuffer, FUSEDSL_CPU_SITE) {
    SwiGLU<T, isReuseSource>(dstTensor, srcTensor0, srcTensor1, scalarValue, sharedTmpBuffer, srcTensor0.GetSize(),
                             fs_site);
}
template <typename T, bool isReuseSource = false>
inline void SwiGLU(LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor0, const LocalTensor<T>& srcTensor1,
                   const float& scalarValue, const uint32_t calCount, FUSEDSL_CPU_SITE) {
    double beta = scalarValue;
    fusedsl_cpu::AdvBinary("SwiGLU", fs_site, fusedsl_cpu::kChipsA2A3_310P, " half float ", dstTensor, &srcTensor0,
                           0.0, &srcTensor1, 0.0, nullptr, calCount, fusedsl_cpu::adv::SwiGLU(calCount, sizeof(T)),
                           "GetSwiGLUMaxMinTmpSize",
                           [beta](double a, double b) { return a * b * fusedsl_cpu::SigmoidOf(beta * b); });
}
template <typename T, bool isReuseSource = false>
inline void SwiGLU(LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor0, const LocalTensor<T>& srcTensor1,
                   const float& scalarValue, FUSEDSL_CPU_SITE) {
    SwiGLU<T, isReuseSource>(dstTensor, srcTensor0, srcTensor1, scalarValue, srcTensor0.GetSize(), fs_site);
}

template <typename T, bool isReuseSource = false>
inline void GeGLU(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor0, const LocalTensor<T>& srcTensor1,
                  const LocalTensor<uint8_t>& sharedTmpBuffer, uint32_t calCount, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::AdvBinary("GeGLU", fs_site, fusedsl_cpu::kChipsA2A3_310P, " half float ", dstTensor, &srcTensor0, 0.0,
                           &srcTensor1, 0.0, &sharedTmpBuffer, calCount, fusedsl_cpu::adv::GeGLU(calCount, sizeof(T)),
                           "GetGeGLUMaxMinTmpSize", [](double a, double b) { return a * fusedsl_cpu::GeluTanh(b); });
}
template <typename T, bool isReuseSource = false>
inline void GeGLU(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor0, const LocalTensor<T>& srcTensor1,
                  const LocalTensor<uint8_t>& sharedTmpBuffer, FUSEDSL_CPU_SITE) {
    GeGLU<T, isReuseSource>(dstTensor, srcTensor0, srcTensor1, sharedTmpBuffer, srcTensor0.GetSize(), fs_site);
}
template <typename T, bool isReuseSource = false>
inline void GeGLU(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor0, const LocalTensor<T>& srcTensor1,
                  uint32_t calCount, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::AdvBinary("GeGLU", fs_site, fusedsl_cpu::kChipsA2A3_310P, " half float ", dstTensor, &srcTensor0, 0.0,
                           &srcTensor1, 0.0, nullptr, calCount, fusedsl_cpu::adv::GeGLU(calCount, sizeof(T)),
                           "GetGeGLUMaxMinTmpSize", [](double a, double b) { return a * fusedsl_cpu::GeluTanh(b); });
}
template <typename T, bool isReuseSource = false>
inline void GeGLU(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor0, const LocalTensor<T>& srcTensor1,
                  FUSEDSL_CPU_SITE) {
    GeGLU<T, isReuseSource>(dstTensor, srcTensor0, srcTensor1, srcTensor0.GetSize(), fs_site);
}

}  // namespace AscendC

// fusedsl CPU implementation of the Ascend C API: the high-level math APIs (asc-devkit
// docs/zh/api/SIMD-API/高阶API/数学计算): Acosh, Ceil, Floor, Trunc, Frac, Erf, Exp (with Taylor
// terms), Log/Log2/Log10, ClampMin/ClampMax, Xor, Axpy with a scratch buffer, Fmod, Power and
// CumSum.  Each computes in double and rounds once to T; the checks are adv_common.h's.
#pragma once

#include "adv_common.h"
#include "adv_tmp_sizes.h"

namespace AscendC {

enum class ErfAlgo { PADE_APPROXIMATION = 0, SUBSECTION_POLYNOMIAL_APPROXIMATION };
struct ErfConfig {
    ErfAlgo algo = ErfAlgo::PADE_APPROXIMATION;
};
constexpr ErfConfig defaultErfConfig = {ErfAlgo::PADE_APPROXIMATION};

constexpr uint32_t FMOD_ITERATION_NUM_MAX = 11;
enum class FmodAlgo { NORMAL = 0, ITERATION_COMPENSATION = 1 };
struct FmodConfig {
    FmodAlgo algo = FmodAlgo::NORMAL;
    uint32_t iterationNum = FMOD_ITERATION_NUM_MAX;
};
constexpr FmodConfig DEFAULT_FMOD_CONFIG = {FmodAlgo::NORMAL, FMOD_ITERATION_NUM_MAX};

enum class PowerAlgo { INTRINSIC = 0, DOUBLE_FLOAT_TECH };
struct PowerConfig {
    PowerAlgo algo = PowerAlgo::INTRINSIC;
};
constexpr PowerConfig defaultPowerConfig = {PowerAlgo::INTRINSIC};

enum class CumSumAlgorithm { CUMSUM_ALGORITHM_LINEBYLINE = 0, CUMSUM_ALGORITHM_SKLANSKY = 1 };
struct CumSumConfig {
    bool isLastAxis{true};
    bool isReuseSource{false};
    bool outputLastRow{false};
    CumSumAlgorithm algorithm{CumSumAlgorithm::CUMSUM_ALGORITHM_LINEBYLINE};
};
constexpr CumSumConfig defaultCumSumConfig = {true, false, false, CumSumAlgorithm::CUMSUM_ALGORITHM_LINEBYLINE};
struct CumSumInfo {
    uint32_t outter{0};
    uint32_t inner{0};   // elements per row, a 32-byte multiple
};

}  // namespace AscendC

namespace fusedsl_cpu {

// dst[i] = f(src[i]) for the first `count` elements.
template <typename T, typename F>
inline void AdvUnary(const char* api, Site site, uint32_t chips, const char* types, const LocalTensor<T>& dst,
                     const LocalTensor<T>& src, const LocalTensor<uint8_t>* tmp, uint32_t count, adv::TmpRange need,
                     const char* host_api, F f) {
    AtSite at(site);
    CheckAdvApi(api, chips, TypeName<T>(), types);
    if (count == 0) {
        return;
    }
    uint64_t bytes = static_cast<uint64_t>(count) * sizeof(T);
    uint32_t s = AdvIn(api, "srcTensor", src, count);
    uint32_t d = AdvOut(api, "dstTensor", dst, count);
    AdvNoOverlap(api, {"dstTensor", d, bytes}, {"srcTensor", s, bytes});
    AdvScratch(api, tmp, need.min, need.max, {{"dstTensor", d, bytes}, {"srcTensor", s, bytes}}, host_api);
    const uint8_t* ps = Bytes(src);
    uint8_t* pd = Bytes(dst);
    for (uint32_t i = 0; i < count; ++i) {
        AdvStore<T>(pd, i, f(AdvLoad<T>(ps, i)));
    }
    MarkWritten(d, bytes);
    CountVector(bytes);
}

// dst[i] = f(a[i], b[i]); `a_scalar`/`b_scalar` replace a tensor operand by one value.
template <typename T, typename F>
inline void AdvBinary(const char* api, Site site, uint32_t chips, const char* types, const LocalTensor<T>& dst,
                      const LocalTensor<T>* a, double a_scalar, const LocalTensor<T>* b, double b_scalar,
                      const LocalTensor<uint8_t>* tmp, uint32_t count, adv::TmpRange need, const char* host_api,
                      F f) {
    AtSite at(site);
    CheckAdvApi(api, chips, TypeName<T>(), types);
    if (count == 0) {
        return;
    }
    uint64_t bytes = static_cast<uint64_t>(count) * sizeof(T);
    AdvSpan sa{"src0Tensor", 0, 0};
    AdvSpan sb{"src1Tensor", 0, 0};
    if (a != nullptr) {
        sa.off = AdvIn(api, "src0Tensor", *a, count);
        sa.bytes = bytes;
    }
    if (b != nullptr) {
        sb.off = AdvIn(api, "src1Tensor", *b, count);
        sb.bytes = bytes;
    }
    uint32_t d = AdvOut(api, "dstTensor", dst, count);
    AdvSpan sd{"dstTensor", d, bytes};
    if (a != nullptr) {
        AdvNoOverlap(api, sd, sa);
    }
    if (b != nullptr) {
        AdvNoOverlap(api, sd, sb);
    }
    AdvScratch(api, tmp, need.min, need.max, {sd, sa, sb}, host_api);
    uint8_t* pd = Bytes(dst);
    for (uint32_t i = 0; i < count; ++i) {
        double x = a != nullptr ? AdvLoad<T>(Bytes(*a), i) : a_scalar;
        double y = b != nullptr ? AdvLoad<T>(Bytes(*b), i) : b_scalar;
        AdvStore<T>(pd, i, f(x, y));
    }
    MarkWritten(d, bytes);
    CountVector(bytes);
}

constexpr const char* kHalfFloat = " half float ";

// Exp with Taylor terms: e^x = e^floor(x) * sum_{k<=n} frac^k / k!, in float as the device
// does (the API page's formula); 0 terms is plain e^x.
inline double TaylorExp(double x, int terms) {
    if (terms == 0) {
        return std::exp(x);
    }
    float xa = std::floor(static_cast<float>(x));
    float xb = static_cast<float>(x) - xa;
    float item = 1.0f;
    float sum = 1.0f;
    for (int k = 0; k < terms; ++k) {
        item *= xb / static_cast<float>(k + 1);
        sum += item;
    }
    return static_cast<double>(static_cast<float>(std::exp(static_cast<double>(xa)))) * sum;
}

template <typename T>
inline double IntPow(double base, double exp) {
    // Integer Power: negative exponents truncate towards zero as integer division would.
    int64_t b = static_cast<int64_t>(base);
    int64_t e = static_cast<int64_t>(exp);
    if (e < 0) {
        return b == 1 ? 1.0 : (b == -1 ? (e % 2 == 0 ? 1.0 : -1.0) : 0.0);
    }
    uint64_t r = 1;
    uint64_t p = static_cast<uint64_t>(b);
    while (e > 0) {
        if (e & 1) {
            r *= p;
        }
        p *= p;
        e >>= 1;
    }
    return static_cast<double>(static_cast<T>(r));
}

}  // namespace fusedsl_cpu

namespace AscendC {

// Four forms each: with sharedTmpBuffer (+ calCount) and framework-allocated (+ calCount);
// without calCount the whole srcTensor takes part.
#define FUSEDSL_ADV_UNARY(NAME, CHIPS, TYPES, TMP, FN)                                                          \
    template <typename T, bool isReuseSource = false>                                                           \
    inline void NAME(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,                         \
                     const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount, FUSEDSL_CPU_SITE) {  \
        fusedsl_cpu::AdvUnary(#NAME, fs_site, CHIPS, TYPES, dstTensor, srcTensor, &sharedTmpBuffer, calCount,   \
                              TMP(calCount, sizeof(T)), "Get" #NAME "MaxMinTmpSize", FN);                       \
    }                                                                                                           \
    template <typename T, bool isReuseSource = false>                                                           \
    inline void NAME(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,                         \
                     const LocalTensor<uint8_t>& sharedTmpBuffer, FUSEDSL_CPU_SITE) {                           \
        uint32_t n = srcTensor.GetSize();                                                                       \
        fusedsl_cpu::AdvUnary(#NAME, fs_site, CHIPS, TYPES, dstTensor, srcTensor, &sharedTmpBuffer, n,          \
                              TMP(n, sizeof(T)), "Get" #NAME "MaxMinTmpSize", FN);                              \
    }                                                                                                           \
    template <typename T, bool isReuseSource = false>                                                           \
    inline void NAME(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, const uint32_t calCount, \
                     FUSEDSL_CPU_SITE) {                                                                        \
        fusedsl_cpu::AdvUnary(#NAME, fs_site, CHIPS, TYPES, dstTensor, srcTensor, nullptr, calCount,            \
                              TMP(calCount, sizeof(T)), "Get" #NAME "MaxMinTmpSize", FN);                       \
    }                                                                                                           \
    template <typename T, bool isReuseSource = false>                                                           \
    inline void NAME(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, FUSEDSL_CPU_SITE) {     \
        uint32_t n = srcTensor.GetSize();                                                                       \
        fusedsl_cpu::AdvUnary(#NAME, fs_site, CHIPS, TYPES, dstTensor, srcTensor, nullptr, n, TMP(n, sizeof(T)), \
                              "Get" #NAME "MaxMinTmpSize", FN);                                                 \
    }

FUSEDSL_ADV_UNARY(Acosh, fusedsl_cpu::kChipsA2A3_310P, fusedsl_cpu::kHalfFloat, fusedsl_cpu::adv::Acosh,
                  [](double x) { return std::acosh(x); })
FUSEDSL_ADV_UNARY(Ceil, fusedsl_cpu::kChipsA2A3_310P, fusedsl_cpu::kHalfFloat, fusedsl_cpu::adv::Ceil,
                  [](double x) { return std::ceil(x); })
FUSEDSL_ADV_UNARY(Floor, fusedsl_cpu::kChipsA2A3_310P, fusedsl_cpu::kHalfFloat, fusedsl_cpu::adv::Floor,
                  [](double x) { return std::floor(x); })
FUSEDSL_ADV_UNARY(Trunc, fusedsl_cpu::kChipsA2A3_310P, fusedsl_cpu::kHalfFloat, fusedsl_cpu::adv::Trunc,
                  [](double x) { return std::trunc(x); })
// Frac keeps the sign of x: x - trunc(x).
FUSEDSL_ADV_UNARY(Frac, fusedsl_cpu::kChipsA2A3_310P, fusedsl_cpu::kHalfFloat, fusedsl_cpu::adv::Frac,
                  [](double x) { return std::isinf(x) ? 0.0 : x - std::trunc(x); })
FUSEDSL_ADV_UNARY(Log2, fusedsl_cpu::kChipsA2A3_310P, fusedsl_cpu::kHalfFloat, fusedsl_cpu::adv::Log2,
                  [](double x) { return std::log2(x); })
#undef FUSEDSL_ADV_UNARY

// Erf's config picks the device's approximation; fusedsl computes erf itself.
template <typename T, bool isReuseSource = false, const ErfConfig& config = defaultErfConfig>
inline void Erf(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::AdvUnary("Erf", fs_site, fusedsl_cpu::kChipsA2A3_310P, fusedsl_cpu::kHalfFloat, dstTensor, srcTensor,
                          &sharedTmpBuffer, calCount, fusedsl_cpu::adv::Erf(calCount, sizeof(T)),
                          "GetErfMaxMinTmpSize", [](double x) { return std::erf(x); });
}
template <typename T, bool isReuseSource = false, const ErfConfig& config = defaultErfConfig>
inline void Erf(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                const LocalTensor<uint8_t>& sharedTmpBuffer, FUSEDSL_CPU_SITE) {
    Erf<T, isReuseSource, config>(dstTensor, srcTensor, sharedTmpBuffer, srcTensor.GetSize(), fs_site);
}
template <typename T, bool isReuseSource = false, const ErfConfig& config = defaultErfConfig>
inline void Erf(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, const uint32_t calCount,
                FUSEDSL_CPU_SITE) {
    fusedsl_cpu::AdvUnary("Erf", fs_site, fusedsl_cpu::kChipsA2A3_310P, fusedsl_cpu::kHalfFloat, dstTensor, srcTensor,
                          nullptr, calCount, fusedsl_cpu::adv::Erf(calCount, sizeof(T)), "GetErfMaxMinTmpSize",
                          [](double x) { return std::erf(x); });
}
template <typename T, bool isReuseSource = false, const ErfConfig& config = defaultErfConfig>
inline void Erf(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, FUSEDSL_CPU_SITE) {
    Erf<T, isReuseSource, config>(dstTensor, srcTensor, srcTensor.GetSize(), fs_site);
}

// Log and Log10 need no scratch (GetLogMaxMinTmpSize reports 0).
template <typename T, bool isReuseSource = false>
inline void Log(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, uint32_t calCount,
                FUSEDSL_CPU_SITE) {
    fusedsl_cpu::AdvUnary("Log", fs_site, fusedsl_cpu::kChipsA2A3_310P, fusedsl_cpu::kHalfFloat, dstTensor, srcTensor,
                          nullptr, calCount, fusedsl_cpu::adv::Log(calCount, sizeof(T)), "GetLogMaxMinTmpSize",
                          [](double x) { return std::log(x); });
}
template <typename T, bool isReuseSource = false>
inline void Log(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, FUSEDSL_CPU_SITE) {
    Log<T, isReuseSource>(dstTensor, srcTensor, srcTensor.GetSize(), fs_site);
}
template <typename T, bool isReuseSource = false>
inline void Log10(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, uint32_t calCount,
                  FUSEDSL_CPU_SITE) {
    fusedsl_cpu::AdvUnary("Log10", fs_site, fusedsl_cpu::kChipsA2A3_310P, fusedsl_cpu::kHalfFloat, dstTensor,
                          srcTensor, nullptr, calCount, fusedsl_cpu::adv::Log(calCount, sizeof(T)),
                          "GetLog10MaxMinTmpSize", [](double x) { return std::log10(x); });
}
template <typename T, bool isReuseSource = false>
inline void Log10(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, FUSEDSL_CPU_SITE) {
    Log10<T, isReuseSource>(dstTensor, srcTensor, srcTensor.GetSize(), fs_site);
}

// Exp<T, taylorExpandLevel>: A2/A3 only (the 310P has the basic Exp only).
template <typename T, uint8_t taylorExpandLevel, bool isReuseSource = false>
inline void Exp(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal,
                const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::AdvUnary("Exp (high-level, Taylor)", fs_site, fusedsl_cpu::kChipA2A3, fusedsl_cpu::kHalfFloat,
                          dstLocal, srcLocal, &sharedTmpBuffer, calCount,
                          fusedsl_cpu::adv::Exp(calCount, sizeof(T), isReuseSource), "GetExpMaxMinTmpSize",
                          [](double x) { return fusedsl_cpu::TaylorExp(x, taylorExpandLevel); });
}
template <typename T, uint8_t taylorExpandLevel, bool isReuseSource = false>
inline void Exp(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const uint32_t calCount,
                FUSEDSL_CPU_SITE) {
    fusedsl_cpu::AdvUnary("Exp (high-level, Taylor)", fs_site, fusedsl_cpu::kChipA2A3, fusedsl_cpu::kHalfFloat,
                          dstLocal, srcLocal, nullptr, calCount,
                          fusedsl_cpu::adv::Exp(calCount, sizeof(T), isReuseSource), "GetExpMaxMinTmpSize",
                          [](double x) { return fusedsl_cpu::TaylorExp(x, taylorExpandLevel); });
}

// ClampMin(x) = max(x, scalar), ClampMax(x) = min(x, scalar) (A2/A3 only).
template <typename T, bool isReuseSource = false>
inline void ClampMin(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                     const LocalTensor<uint8_t>& sharedTmpBuffer, const T scalar, const uint32_t calCount,
                     FUSEDSL_CPU_SITE) {
    double s = static_cast<double>(fusedsl_cpu::ToCompute(scalar));
    fusedsl_cpu::AdvUnary("ClampMin", fs_site, fusedsl_cpu::kChipA2A3, fusedsl_cpu::kHalfFloat, dstTensor, srcTensor,
                          &sharedTmpBuffer, calCount, fusedsl_cpu::adv::Clamp(calCount, sizeof(T)),
                          "GetClampMaxMinTmpSize", [s](double x) { return std::isnan(x) ? x : (x < s ? s : x); });
}
template <typename T, bool isReuseSource = false>
inline void ClampMin(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, const T scalar,
                     const uint32_t calCount, FUSEDSL_CPU_SITE) {
    double s = static_cast<double>(fusedsl_cpu::ToCompute(scalar));
    fusedsl_cpu::AdvUnary("ClampMin", fs_site, fusedsl_cpu::kChipA2A3, fusedsl_cpu::kHalfFloat, dstTensor, srcTensor,
                          nullptr, calCount, fusedsl_cpu::adv::Clamp(calCount, sizeof(T)), "GetClampMaxMinTmpSize",
                          [s](double x) { return std::isnan(x) ? x : (x < s ? s : x); });
}
template <typename T, bool isReuseSource = false>
inline void ClampMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                     const LocalTensor<uint8_t>& sharedTmpBuffer, const T scalar, const uint32_t calCount,
                     FUSEDSL_CPU_SITE) {
    double s = static_cast<double>(fusedsl_cpu::ToCompute(scalar));
    fusedsl_cpu::AdvUnary("ClampMax", fs_site, fusedsl_cpu::kChipA2A3, fusedsl_cpu::kHalfFloat, dstTensor, srcTensor,
                          &sharedTmpBuffer, calCount, fusedsl_cpu::adv::Clamp(calCount, sizeof(T)),
                          "GetClampMaxMinTmpSize", [s](double x) { return std::isnan(x) ? x : (x > s ? s : x); });
}
template <typename T, bool isReuseSource = false>
inline void ClampMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, const T scalar,
                     const uint32_t calCount, FUSEDSL_CPU_SITE) {
    double s = static_cast<double>(fusedsl_cpu::ToCompute(scalar));
    fusedsl_cpu::AdvUnary("ClampMax", fs_site, fusedsl_cpu::kChipA2A3, fusedsl_cpu::kHalfFloat, dstTensor, srcTensor,
                          nullptr, calCount, fusedsl_cpu::adv::Clamp(calCount, sizeof(T)), "GetClampMaxMinTmpSize",
                          [s](double x) { return std::isnan(x) ? x : (x > s ? s : x); });
}

// Xor on 16-bit integers (A2/A3 and 310P).
#define FUSEDSL_ADV_BINARY(NAME, CHIPS, TYPES, TMP, FN)                                                           \
    template <typename T, bool isReuseSource = false>                                                             \
    inline void NAME(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor,                          \
                     const LocalTensor<T>& src1Tensor, const LocalTensor<uint8_t>& sharedTmpBuffer,               \
                     const uint32_t calCount, FUSEDSL_CPU_SITE) {                                                 \
        fusedsl_cpu::AdvBinary(#NAME, fs_site, CHIPS, TYPES, dstTensor, &src0Tensor, 0.0, &src1Tensor, 0.0,       \
                               &sharedTmpBuffer, calCount, TMP(calCount, sizeof(T)), "Get" #NAME "MaxMinTmpSize", \
                               FN);                                                                               \
    }                                                                                                             \
    template <typename T, bool isReuseSource = false>                                                             \
    inline void NAME(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor,                          \
                     const LocalTensor<T>& src1Tensor, const LocalTensor<uint8_t>& sharedTmpBuffer,               \
                     FUSEDSL_CPU_SITE) {                                                                          \
        uint32_t n = src0Tensor.GetSize();                                                                        \
        fusedsl_cpu::AdvBinary(#NAME, fs_site, CHIPS, TYPES, dstTensor, &src0Tensor, 0.0, &src1Tensor, 0.0,       \
                               &sharedTmpBuffer, n, TMP(n, sizeof(T)), "Get" #NAME "MaxMinTmpSize", FN);          \
    }                                                                                                             \
    template <typename T, bool isReuseSource = false>                                                             \
    inline void NAME(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor,                          \
                     const LocalTensor<T>& src1Tensor, const uint32_t calCount, FUSEDSL_CPU_SITE) {               \
        fusedsl_cpu::AdvBinary(#NAME, fs_site, CHIPS, TYPES, dstTensor, &src0Tensor, 0.0, &src1Tensor, 0.0,       \
                               nullptr, calCount, TMP(calCount, sizeof(T)), "Get" #NAME "MaxMinTmpSize", FN);     \
    }                                                                                                             \
    template <typename T, bool isReuseSource = false>                                                             \
    inline void NAME(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor,                          \
                     const LocalTensor<T>& src1Tensor, FUSEDSL_CPU_SITE) {                                        \
        uint32_t n = src0Tensor.GetSize();                                                                        \
        fusedsl_cpu::AdvBinary(#NAME, fs_site, CHIPS, TYPES, dstTensor, &src0Tensor, 0.0, &src1Tensor, 0.0,       \
                               nullptr, n, TMP(n, sizeof(T)), "Get" #NAME "MaxMinTmpSize", FN);                   \
    }

FUSEDSL_ADV_BINARY(Xor, fusedsl_cpu::kChipsA2A3_310P, " int16_t uint16_t ", fusedsl_cpu::adv::Xor,
                   [](double a, double b) {
                       return static_cast<double>(static_cast<int64_t>(a) ^ static_cast<int64_t>(b));
                   })
#undef FUSEDSL_ADV_BINARY

// Fmod: a - trunc(a / b) * b, the C fmod (sign of a); the config picks the device's algorithm.
template <typename T, bool isReuseSource = false, const FmodConfig& config = DEFAULT_FMOD_CONFIG>
inline void Fmod(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const LocalTensor<T>& src1Tensor,
                 const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::AdvBinary("Fmod", fs_site, fusedsl_cpu::kChipsA2A3_310P, fusedsl_cpu::kHalfFloat, dstTensor,
                           &src0Tensor, 0.0, &src1Tensor, 0.0, &sharedTmpBuffer, calCount,
                           fusedsl_cpu::adv::Fmod(calCount, sizeof(T)), "GetFmodMaxMinTmpSize",
                           [](double a, double b) { return std::fmod(a, b); });
}
template <typename T, bool isReuseSource = false, const FmodConfig& config = DEFAULT_FMOD_CONFIG>
inline void Fmod(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const LocalTensor<T>& src1Tensor,
                 const LocalTensor<uint8_t>& sharedTmpBuffer, FUSEDSL_CPU_SITE) {
    Fmod<T, isReuseSource, config>(dstTensor, src0Tensor, src1Tensor, sharedTmpBuffer, src0Tensor.GetSize(), fs_site);
}
template <typename T, bool isReuseSource = false, const FmodConfig& config = DEFAULT_FMOD_CONFIG>
inline void Fmod(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const LocalTensor<T>& src1Tensor,
                 const uint32_t calCount, FUSEDSL_CPU_SITE) {
    fusedsl_cpu::AdvBinary("Fmod", fs_site, fusedsl_cpu::kChipsA2A3_310P, fusedsl_cpu::kHalfFloat, dstTensor,
                           &src0Tensor, 0.0, &src1Tensor, 0.0, nullptr, calCount,
                           fusedsl_cpu::adv::Fmod(calCount, sizeof(T)), "GetFmodMaxMinTmpSize",
                           [](double a, double b) { return std::fmod(a, b); });
}
template <typename T, bool isReuseSource = false, const FmodConfig& config = DEFAULT_FMOD_CONFIG>
inline void Fmod(const LocalTensor<T>& dstTensor, const LocalTensor<T>& src0Tensor, const LocalTensor<T>& src1Tensor,
                 FUSEDSL_CPU_SITE) {
    Fmod<T, isReuseSource, config>(dstTensor, src0Tensor, src1Tensor, src0Tensor.GetSize(), fs_site);
}

// Power: base^exp with either operand a scalar; half, float and int32_t.
namespace fusedsl_power {
template <typename T>
inline double Pow(double a, double b) {
    if constexpr (std::is_integral_v<T>) {
        return fusedsl_cpu::IntPow<T>(a, b);
    } else {
        return std::pow(a, b);
    }
}
template <typename T>
inline void Run(fusedsl_cpu::Site site, const LocalTensor<T>& dst, const LocalTensor<T>* a, double as,
                const LocalTensor<T>* b, double bs, const LocalTensor<uint8_t>* tmp, uint32_t n) {
    auto need = fusedsl_cpu::adv::Power(fusedsl_cpu::Target().arch, n, a != nullptr && b != nullptr,
                                        std::is_integral_v<T>, sizeof(T));
    fusedsl_cpu::AdvBinary("Power", site, fusedsl_cpu::kChipsA2A3_310P, " half float int32_t ", dst, a, as, b, bs, tmp,
                           n, need, "GetPowerMaxMinTmpSize", [](double x, double y) { return Pow<T>(x, y); });
}
}  // namespace fusedsl_power

#define FUSEDSL_POWER_FORMS(A_DECL, A_PTR, A_VAL, B_DECL, B_PTR, B_VAL, SIZE_OF)                              \
    template <typename T, bool isReuseSource = false, const PowerConfig& config = defaultPowerConfig>          \
    inline void Power(const LocalTensor<T>& dstTensor, A_DECL, B_DECL, const LocalTensor<uint8_t>& sharedTmpBuffer, \
                      uint32_t calCount, FUSEDSL_CPU_SITE) {                                                    \
        fusedsl_power::Run<T>(fs_site, dstTensor, A_PTR, A_VAL, B_PTR, B_VAL, &sharedTmpBuffer, calCount);     \
    }                                                                                                           \
    template <typename T, bool isReuseSource = false, const PowerConfig& config = defaultPowerConfig>          \
    inline void Power(const LocalTensor<T>& dstTensor, A_DECL, B_DECL, const LocalTensor<uint8_t>& sharedTmpBuffer, \
                      FUSEDSL_CPU_SITE) {                                                                       \
        fusedsl_power::Run<T>(fs_site, dstTensor, A_PTR, A_VAL, B_PTR, B_VAL, &sharedTmpBuffer, SIZE_OF);      \
    }                                                                                                           \
    template <typename T, bool isReuseSource = false, const PowerConfig& config = defaultPowerConfig>          \
    inline void Power(const LocalTensor<T>& dstTensor, A_DECL, B_DECL, uint32_t calCount, FUSEDSL_CPU_SITE) {   \
        fusedsl_power::Run<T>(fs_site, dstTensor, A_PTR, A_VAL, B_PTR, B_VAL, nullptr, calCount);              \
    }                                                                                                           \
    template <typename T, bool isReuseSource = false, const PowerConfig& config = defaultPowerConfig>          \
    inline void Power(const LocalTensor<T>& dstTensor, A_DECL, B_DECL, FUSEDSL_CPU_SITE) {                      \
        fusedsl_power::Run<T>(fs_site, dstTensor, A_PTR, A_VAL, B_PTR, B_VAL, nullptr, SIZE_OF);               \
    }

FUSEDSL_POWER_FORMS(const LocalTensor<T>& src0Tensor, &src0Tensor, 0.0, const LocalTensor<T>& src1Tensor, &src1Tensor,
                    0.0, src0Tensor.GetSize())
FUSEDSL_POWER_FORMS(const LocalTensor<T>& src0Tensor, &src0Tensor, 0.0, const T& src1Scalar, nullptr,
                    static_cast<double>(fusedsl_cpu::ToCompute(src1Scalar)), src0Tensor.GetSize())
FUSEDSL_POWER_FORMS(const T& src0Scalar, nullptr, static_cast<double>(fusedsl_cpu::ToCompute(src0Scalar)),
                    const LocalTensor<T>& src1Tensor, &src1Tensor, 0.0, src1Tensor.GetSize())
#undef FUSEDSL_POWER_FORMS

// Axpy with a scratch buffer: dst += scalar * src, (T, U) = (half, half), (float, float) or
// (float, half); computed in float and rounded once, like the basic Axpy.
template <typename T, typename U, bool isReuseSource = false>
inline void Axpy(const LocalTensor<T>& dstTensor, const LocalTensor<U>& srcTensor, const U scalarValue,
                 const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount, FUSEDSL_CPU_SITE) {
    using namespace fusedsl_cpu;
    AtSite at(fs_site);
    CheckAxpyTypes<T, U>();
    const char* api = "Axpy (high-level)";
    CheckAdvApi(api, kChipsA2A3_310P, TypeName<U>(), kHalfFloat);
    if (calCount == 0) {
        return;
    }
    uint32_t d = AdvIn(api, "dstTensor", dstTensor, calCount);   // dst is read: dst += scalar * src
    uint32_t s = AdvIn(api, "srcTensor", srcTensor, calCount);
    AdvSpan sd{"dstTensor", d, static_cast<uint64_t>(calCount) * sizeof(T)};
    AdvSpan ss{"srcTensor", s, static_cast<uint64_t>(calCount) * sizeof(U)};
    AdvNoOverlap(api, sd, ss);
    adv::TmpRange need = adv::Axpy(calCount, sizeof(U));
    AdvScratch(api, &sharedTmpBuffer, need.min, need.max, {sd, ss}, "GetAxpyMaxMinTmpSize");
    for (uint32_t i = 0; i < calCount; ++i) {
        T v = AxpyValue(LoadAs<T>(Bytes(dstTensor) + i * sizeof(T)), LoadAs<U>(Bytes(srcTensor) + i * sizeof(U)),
                        scalarValue);
        StoreAs(Bytes(dstTensor) + i * sizeof(T), v);
    }
    MarkWritten(d, sd.bytes);
    CountVector(sd.bytes);
}

// CumSum over a [outter, inner] tensor: along the last axis (each row's running sum) or the
// first (each column's); lastRowTensor gets the last row of the result when outputLastRow.
template <typename T, const CumSumConfig& config = defaultCumSumConfig>
inline void CumSum(LocalTensor<T>& dstTensor, LocalTensor<T>& lastRowTensor, const LocalTensor<T>& srcTensor,
                   LocalTensor<uint8_t>& sharedTmpBuffer, const CumSumInfo& cumSumInfo, FUSEDSL_CPU_SITE);

namespace fusedsl_cumsum {
template <typename T, const CumSumConfig& config>
inline void Run(fusedsl_cpu::Site site, LocalTensor<T>& dst, LocalTensor<T>& last_row, const LocalTensor<T>& src,
                const LocalTensor<uint8_t>* tmp, const CumSumInfo& info) {
    using namespace fusedsl_cpu;
    AtSite at(site);
    const char* api = "CumSum";
    CheckAdvApi(api, kChipsA2A3_310P, TypeName<T>(), kHalfFloat);
    if (info.inner * sizeof(T) % 32 != 0 || info.inner == 0) {
        Fail("%s: cumSumInfo.inner = %u; a row must be a non-zero multiple of 32 bytes (%zu elements of this type)",
             api, info.inner, 32 / sizeof(T));
    }
    uint64_t n = static_cast<uint64_t>(info.outter) * info.inner;
    if (n == 0) {
        return;
    }
    uint64_t bytes = n * sizeof(T);
    uint32_t s = AdvIn(api, "srcTensor", src, n);
    uint32_t d = AdvOut(api, "dstTensor", dst, n);
    AdvSpan sd{"dstTensor", d, bytes};
    AdvSpan ss{"srcTensor", s, bytes};
    AdvSpan sl{"lastRowTensor", 0, 0};
    if (config.outputLastRow) {
        sl.off = AdvOut(api, "lastRowTensor", last_row, info.inner);
        sl.bytes = static_cast<uint64_t>(info.inner) * sizeof(T);
        AdvNoOverlap(api, sl, sd);
        AdvNoOverlap(api, sl, ss);
    }
    if (!config.isReuseSource) {
        AdvNoOverlap(api, sd, ss);
    }
    adv::TmpRange need = adv::CumSum(info.outter, info.inner, sizeof(T), config.isLastAxis);
    AdvScratch(api, tmp, need.min, need.max, {sd, ss, sl}, "GetCumSumMaxMinTmpSize");
    std::vector<double> out(n);
    // The sum is kept in T after every addition (half sums round each step, as the device's
    // vector adds do when it adds row by row).
    auto round_t = [](double v) { return static_cast<double>(ToCompute(FromCompute<T>(static_cast<float>(v)))); };
    for (uint32_t r = 0; r < info.outter; ++r) {
        for (uint32_t c = 0; c < info.inner; ++c) {
            uint64_t i = static_cast<uint64_t>(r) * info.inner + c;
            double x = AdvLoad<T>(Bytes(src), i);
            double prev = 0.0;
            bool first = config.isLastAxis ? c == 0 : r == 0;
            if (!first) {
                prev = config.isLastAxis ? out[i - 1] : out[i - info.inner];
            }
            out[i] = first ? x : round_t(prev + x);
        }
    }
    for (uint64_t i = 0; i < n; ++i) {
        AdvStore<T>(Bytes(dst), i, out[i]);
    }
    MarkWritten(d, bytes);
    if (config.outputLastRow) {
        for (uint32_t c = 0; c < info.inner; ++c) {
            AdvStore<T>(Bytes(last_row), c, out[static_cast<uint64_t>(info.outter - 1) * info.inner + c]);
        }
        MarkWritten(sl.off, sl.bytes);
    }
    CountVector(bytes);
}
}  // namespace fusedsl_cumsum

template <typename T, const CumSumConfig& config>
inline void CumSum(LocalTensor<T>& dstTensor, LocalTensor<T>& lastRowTensor, const LocalTensor<T>& srcTensor,
                   LocalTensor<uint8_t>& sharedTmpBuffer, const CumSumInfo& cumSumInfo, fusedsl_cpu::Site fs_site) {
    fusedsl_cumsum::Run<T, config>(fs_site, dstTensor, lastRowTensor, srcTensor, &sharedTmpBuffer, cumSumInfo);
}
template <typename T, const CumSumConfig& config = defaultCumSumConfig>
inline void CumSum(LocalTensor<T>& dstTensor, LocalTensor<T>& lastRowTensor, const LocalTensor<T>& srcTensor,
                   const CumSumInfo& cumSumInfo, FUSEDSL_CPU_SITE) {
    fusedsl_cumsum::Run<T, config>(fs_site, dstTensor, lastRowTensor, srcTensor, nullptr, cumSumInfo);
}

}  // namespace AscendC

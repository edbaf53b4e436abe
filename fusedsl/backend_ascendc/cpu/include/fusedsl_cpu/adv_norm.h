// fusedsl CPU implementation of the Ascend C API: RmsNorm (asc-devkit docs 归一化操作/RmsNorm) and
// PopStackBuffer (the UB that TPipe::InitBuffer left free, which the framework-allocated
// high-level APIs use as scratch).
//
// RmsNorm over [B, S, H] (H 32-byte aligned, originalHLength <= H valid): y = x / sqrt(mean(x^2)
// + epsilon) * gamma per row, the mean over the original H (the tiling's reciprocalOfHLength),
// computed in float as the vector unit does.  Shapes come from the tiling; src, dst and gamma
// must hold them; the scratch is at least one row's temporaries (GetRmsNormMinTmpSize's rule).
#pragma once

#include "adv_common.h"

// The RmsNorm tiling a host or kernel fills (GetRmsNormTilingInfo); plain struct, CANN's names.
struct RmsNormTiling {
    uint32_t bLength = 0;
    uint32_t sLength = 0;
    uint32_t hLength = 0;
    uint32_t originalHLength = 0;
    float reciprocalOfHLength = 0;
    uint32_t mainBshLength = 0;
    uint32_t mainBsLength = 0;
    uint32_t mainBsLengthAlign = 0;
    uint32_t loopRound = 0;
    uint32_t inputTailPos = 0;
    uint32_t tailBshLength = 0;
    uint32_t tailBsLength = 0;
};

namespace AscendC {
namespace tiling {
using ::RmsNormTiling;
}  // namespace tiling

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

inline uint64_t RmsNormRowMin(uint32_t h, uint32_t ts) {
    return (ts == 4 ? h + 8 : 2 * h + 8) * 4ull;
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
    uint64_t need = RmsNormRowMin(h, sizeof(T));
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

}  // namespace AscendC

// Tiling structs of the normalisation APIs (RmsNorm, DeepNorm), shared by host and kernel headers:
// RmsNormTiling with CANN's field names (kernels fill it themselves, as the RmsNorm sample does);
// DeepNormTiling is fusedsl's own (GetDeepNormTilingInfo writes it, DeepNorm reads it).
#pragma once

#include <cstdint>

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

struct DeepNormTiling {
    uint32_t bLength = 0;
    uint32_t sLength = 0;
    uint32_t hLength = 0;
    uint32_t originalHLength = 0;
    uint32_t tmpBufSize = 0;
    float lastDimValueBack = 0;   // 1 / originalHLength
};
}  // namespace tiling
using tiling::DeepNormTiling;
}  // namespace AscendC

// Tiling structs of the normalisation APIs (RmsNorm, DeepNorm, LayerNorm and its gradients),
// shared by host and kernel headers: RmsNormTiling with CANN's field names (kernels fill it
// themselves, as the RmsNorm sample does); the others are fusedsl's own layouts with the field
// names kernels read (bLength, sLength, hLength ...): GetXxxTilingInfo writes them, the API
// reads them, and a kernel copies them word by word as plain data.
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

// LayerNorm over [B, S, H] (mean and variance outputs).
struct LayerNormTiling {
    uint32_t bLength = 0;
    uint32_t sLength = 0;
    uint32_t hLength = 0;
    uint32_t originalHLength = 0;
    uint32_t tmpBufSize = 0;
    float lastDimValueBack = 0;   // 1 / originalHLength
};

struct LayerNormGradTiling {
    uint32_t stackBufferSize = 0;
    uint32_t bLength = 0;
    uint32_t sLength = 0;
    uint32_t hLength = 0;
    uint32_t originalHLength = 0;
    float lastDimValueBack = 0;   // 1 / originalHLength
};

struct LayerNormGradBetaTiling {
    uint32_t stackBufferSize = 0;
    uint32_t bLength = 0;
    uint32_t sLength = 0;
    uint32_t hLength = 0;
    uint32_t originalHLength = 0;
    uint32_t bshLength = 0;
    uint32_t bsLength = 0;
};

namespace AscendC {
namespace tiling {
using ::RmsNormTiling;
using ::LayerNormTiling;
using ::LayerNormGradTiling;
using ::LayerNormGradBetaTiling;

// LayerNorm over [A, R] (mean and rstd outputs); the shape itself comes with LayerNormPara.
struct LayerNormSeparateTiling {
    uint32_t aLength = 0;
    uint32_t rLength = 0;
    uint32_t tmpBufSize = 0;
    uint32_t isComputeRstd = 1;
    float rValueBack = 0;         // 1 / rLength
};

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
using tiling::LayerNormSeparateTiling;
}  // namespace AscendC

// CANN's host spelling of the same structs (optiling::LayerNormTiling ...).
namespace optiling {
using ::LayerNormTiling;
using ::LayerNormGradTiling;
using ::LayerNormGradBetaTiling;
using ::AscendC::tiling::LayerNormSeparateTiling;
}  // namespace optiling

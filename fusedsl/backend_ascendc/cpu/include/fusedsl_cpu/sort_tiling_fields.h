// TopKMode and TopKInfo, and TopkTiling: the TopK tiling TopKTilingFunc fills and TopK reads.  fusedsl's own fields (the
// shape and mode the call was tiled for) padded to the 112 bytes of CANN's struct, so tiling data
// that embeds it keeps CANN's size; kernels copy it as plain words.
#pragma once

#include <cstdint>

struct TopkTiling {
    int32_t tmpLocalSize = 0;
    int32_t allDataSize = 0;     // inner * outter
    int32_t innerDataSize = 0;   // inner
    int32_t k = 0;
    int32_t kAlignFourBytes = 0;   // k rounded up to 8 (the index rows)
    int32_t kAlignTwoBytes = 0;    // k rounded up to 16
    int32_t mode = 0;              // TopKMode
    int32_t isLargest = 1;
    int32_t isInitIndex = 0;
    int32_t outter = 0;
    int32_t reserved[18] = {};
};
static_assert(sizeof(TopkTiling) == 112, "TopkTiling keeps the size of CANN's struct");

namespace optiling {
using ::TopkTiling;
}  // namespace optiling
namespace AscendC {
namespace tiling {
using ::TopkTiling;
}  // namespace tiling

enum class TopKMode { TOPK_NORMAL, TOPK_NSMALL };

// The shape of a TopK call: outter rows of inner elements (n rounded up to 32), n of them valid.
struct TopKInfo {
    int32_t outter = 1;
    int32_t inner = 0;
    int32_t n = 0;
};
}  // namespace AscendC

// Host-side tiling of the Pad/UnPad high-level APIs: AscendC::TensorShape (ge::Shape),
// GetPadMaxMinTmpSize/PadTilingFunc, GetUnPadMaxMinTmpSize/UnPadTilingFunc, and the host
// structs optiling::PadTiling/UnPadTiling (set_/get_ accessors, SaveToBuffer).
//
// fusedsl's Pad/UnPad move one row at a time, so the scratch they need is one 32-byte aligned
// row of the wider (padded) width: that is the minimum; the maximum lets every row be staged
// at once.  The tiling records the shape and how many rows fit the given scratch.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fusedsl_cpu/ge_shape.h"
#include "fusedsl_cpu/pad_tiling_fields.h"
#include "tiling/platform/platform_ascendc.h"

namespace optiling {

#define FUSEDSL_HOST_TILING(NAME, FIELDS)                                              \
    class NAME {                                                                       \
    public:                                                                            \
        FIELDS(FUSEDSL_HOST_ACCESSORS)                                                 \
        size_t GetDataSize() const { return sizeof(fs_data); }                         \
        void SaveToBuffer(void* buf, size_t capacity) const {                          \
            std::memcpy(buf, &fs_data, std::min(capacity, sizeof(fs_data)));           \
        }                                                                              \
        AscendC::tiling::NAME fs_data;                                                 \
    };
#define FUSEDSL_HOST_ACCESSORS(name)                          \
    void set_##name(uint32_t v) { fs_data.name = v; }         \
    uint32_t get_##name() const { return fs_data.name; }
FUSEDSL_HOST_TILING(PadTiling, FUSEDSL_PAD_TILING_FIELDS)
FUSEDSL_HOST_TILING(UnPadTiling, FUSEDSL_UNPAD_TILING_FIELDS)
#undef FUSEDSL_HOST_ACCESSORS
#undef FUSEDSL_HOST_TILING

}  // namespace optiling

namespace AscendC {

using TensorShape = ge::Shape;

namespace detail {

inline uint32_t PadRowBytes(int64_t width, uint32_t typeSize) {
    return static_cast<uint32_t>((width * typeSize + 31) / 32 * 32);
}

}  // namespace detail

// srcShape: [height, width] of the source (width including any redundant columns).
inline void GetPadMaxMinTmpSize(const TensorShape& srcShape, const uint32_t typeSize, uint32_t& maxValue,
                                uint32_t& minValue) {
    uint32_t row = detail::PadRowBytes(srcShape.GetDim(1), typeSize);
    minValue = row;
    maxValue = row * static_cast<uint32_t>(std::max<int64_t>(1, srcShape.GetDim(0)));
}

inline void PadTilingFunc(const TensorShape srcShape, const TensorShape oriSrcShape, const uint32_t stackBufferSize,
                          const uint32_t typeSize, AscendC::tiling::PadTiling& tiling) {
    tiling = AscendC::tiling::PadTiling{};
    tiling.srcHeight = static_cast<uint32_t>(srcShape.GetDim(0));
    tiling.srcWidth = static_cast<uint32_t>(srcShape.GetDim(1));
    tiling.srcOriWidth = static_cast<uint32_t>(oriSrcShape.GetDim(1));
    uint32_t row = detail::PadRowBytes(srcShape.GetDim(1), typeSize);
    tiling.blocksPerRow = row / 32;
    tiling.widthWithoutLastBlock = tiling.srcWidth * typeSize / 32 * 32 / (typeSize ? typeSize : 1);
    tiling.tmpBuffer1RowNum = row ? stackBufferSize / row : 0;   // rows the scratch stages at once
    tiling.tmpBuffer1BlockNum = tiling.tmpBuffer1RowNum * tiling.blocksPerRow;
    tiling.heightTiling = std::min(tiling.srcHeight, tiling.tmpBuffer1RowNum);
    tiling.heightFractal = tiling.heightTiling ? tiling.srcHeight / tiling.heightTiling : 0;
    tiling.heightFractalTail = tiling.heightTiling ? tiling.srcHeight % tiling.heightTiling : 0;
    tiling.maxRepeatTimes = 255;
}

inline void PadTilingFunc(const TensorShape srcShape, const TensorShape oriSrcShape, const uint32_t stackBufferSize,
                          const uint32_t typeSize, optiling::PadTiling& tiling) {
    PadTilingFunc(srcShape, oriSrcShape, stackBufferSize, typeSize, tiling.fs_data);
}

inline void GetUnPadMaxMinTmpSize(const platform_ascendc::PlatformAscendC& ascendcPlatform, const TensorShape& srcShape,
                                  const uint32_t typeSize, uint32_t& maxValue, uint32_t& minValue) {
    (void)ascendcPlatform;
    GetPadMaxMinTmpSize(srcShape, typeSize, maxValue, minValue);
}

inline void UnPadTilingFunc(const TensorShape srcShape, const uint32_t stackBufferSize, const uint32_t typeSize,
                            AscendC::tiling::UnPadTiling& tiling) {
    tiling = AscendC::tiling::UnPadTiling{};
    tiling.srcHeight = static_cast<uint32_t>(srcShape.GetDim(0));
    tiling.srcWidth = static_cast<uint32_t>(srcShape.GetDim(1));
    uint32_t row = detail::PadRowBytes(srcShape.GetDim(1), typeSize);
    tiling.tmpBuffer1RowNum = row ? stackBufferSize / row : 0;
    tiling.tmpBuffer1BlockNum = tiling.tmpBuffer1RowNum * (row / 32);
    tiling.widthTiling = tiling.srcWidth;
}

inline void UnPadTilingFunc(const TensorShape srcShape, const uint32_t stackBufferSize, const uint32_t typeSize,
                            optiling::UnPadTiling& tiling) {
    UnPadTilingFunc(srcShape, stackBufferSize, typeSize, tiling.fs_data);
}

}  // namespace AscendC

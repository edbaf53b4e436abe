// ge::Shape, GE's tensor shape as the host tiling helpers take it (AscendC::GetPadMaxMinTmpSize,
// PadTilingFunc, ...).  Shared by tiling/pad_tiling.h and graph/tensor.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ge {

class Shape {
public:
    Shape() = default;
    explicit Shape(const std::vector<int64_t>& dims) : fs_dims(dims) {}
    size_t GetDimNum() const { return fs_dims.size(); }
    int64_t GetDim(size_t i) const { return i < fs_dims.size() ? fs_dims[i] : 0; }
    int64_t GetShapeSize() const {
        int64_t n = 1;
        for (int64_t d : fs_dims) {
            n *= d;
        }
        return fs_dims.empty() ? 0 : n;
    }
    std::vector<int64_t> GetDims() const { return fs_dims; }

private:
    std::vector<int64_t> fs_dims;
};

}  // namespace ge

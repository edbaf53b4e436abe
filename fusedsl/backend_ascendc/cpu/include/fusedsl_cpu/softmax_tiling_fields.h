// SoftMax-family tiling structs (SoftMaxTiling, LogSoftMaxTiling): CANN's 16 uint32 fields in
// CANN's order, with the host class's set_/get_ accessors on the same struct, so one type serves
// op_host (optiling::SoftMaxTiling, TILING_DATA_FIELD_DEF_STRUCT) and the kernel (a struct a
// kernel copies word by word from GM).  Shared by kernel and host headers.
#pragma once

#include <cstddef>
#include <cstdint>

#define FUSEDSL_SOFTMAX_TILING_FIELDS(X)                                                                   \
    X(srcM) X(srcK) X(srcSize) X(outMaxM) X(outMaxK) X(outMaxSize) X(splitM) X(splitK) X(splitSize)         \
    X(reduceM) X(reduceK) X(reduceSize) X(rangeM) X(tailM) X(tailSplitSize) X(tailReduceSize)

namespace AscendC {
namespace tiling {

#define FUSEDSL_SOFTMAX_FIELD(name)                          \
    uint32_t name = 0;                                       \
    void set_##name(uint32_t v) { name = v; }                \
    uint32_t get_##name() const { return name; }
struct SoftMaxTiling {
    FUSEDSL_SOFTMAX_TILING_FIELDS(FUSEDSL_SOFTMAX_FIELD)
    size_t GetDataSize() const { return sizeof(*this); }
};
struct LogSoftMaxTiling {
    FUSEDSL_SOFTMAX_TILING_FIELDS(FUSEDSL_SOFTMAX_FIELD)
    size_t GetDataSize() const { return sizeof(*this); }
};
#undef FUSEDSL_SOFTMAX_FIELD

static_assert(sizeof(SoftMaxTiling) == 16 * sizeof(uint32_t), "SoftMaxTiling is 16 uint32 fields");

}  // namespace tiling
}  // namespace AscendC

using AscendC::tiling::LogSoftMaxTiling;
using AscendC::tiling::SoftMaxTiling;

namespace optiling {
using SoftMaxTiling = ::AscendC::tiling::SoftMaxTiling;
using LogSoftMaxTiling = ::AscendC::tiling::LogSoftMaxTiling;
}  // namespace optiling

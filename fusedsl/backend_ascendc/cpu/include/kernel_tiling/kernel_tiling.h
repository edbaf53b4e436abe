// Kernel-side tiling structs of the Ascend C high-level APIs: TCubeTiling (Matmul).
//
// Same field names, order and types as CANN's kernel_tiling/kernel_tiling.h, so a kernel
// that copies sizeof(TCubeTiling)/4 words from a GM tiling buffer (the kernel-launch samples'
// CopyTiling) reads what the host tiling API wrote.
#pragma once

#include <cstdint>

#include "fusedsl_cpu/cube_tiling_fields.h"
#include "fusedsl_cpu/pad_tiling_fields.h"
#include "fusedsl_cpu/softmax_tiling_fields.h"
#include "fusedsl_cpu/norm_tiling_fields.h"
#include "fusedsl_cpu/sort_tiling_fields.h"

namespace AscendC {
namespace tiling {

#pragma pack(push, 8)
struct TCubeTiling {
#define FUSEDSL_FIELD(name) int32_t name = 0;
    FUSEDSL_CUBE_TILING_FIELDS(FUSEDSL_FIELD)
#undef FUSEDSL_FIELD
};
#pragma pack(pop)

static_assert(sizeof(TCubeTiling) == 50 * sizeof(int32_t), "TCubeTiling is 50 int32 fields");

}  // namespace tiling
}  // namespace AscendC

using AscendC::tiling::TCubeTiling;

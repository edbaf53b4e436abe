// The Ascend C Matmul high-level API (kernel side) on fusedsl's CPU implementation.
// See fusedsl_cpu/matmul.h for what runs and what is checked.
#pragma once

#include "kernel_operator.h"
#include "fusedsl_cpu/matmul.h"

// Older samples write `using namespace matmul;` and then Matmul<...>, MatmulType<...>.
namespace matmul {
using namespace AscendC;
}  // namespace matmul

// CANN 9's printf header for kernels: AscendC::printf / PRINTF (fusedsl_cpu/tensor.h) print on
// the CPU; a plain printf in a kernel is the C library's.
#pragma once

#include "kernel_operator.h"

// fusedsl's CPU implementation of the Ascend C kernel API subset.
//
// Kernels written for the NPU include this header unchanged and build with g++ -std=c++17;
// each API call runs on the CPU and checks the hardware rules (UB capacity, 32-byte
// alignment, the queue protocol, per-chip dtype support, uninitialised reads, GM bounds and
// cross-core write overlap).  The chip is chosen by __NPU_ARCH__, $FUSEDSL_TARGET or
// fusedsl_cpu_set_target(); see tikicpulib.h for running kernels from a main program.
#pragma once

#include <cassert>   // kernels call assert() (CANN's headers bring it in)

#include "securec.h"
#include "fusedsl_cpu/base.h"
#include "fusedsl_cpu/runtime.h"
#include "fusedsl_cpu/tensor.h"
#include "fusedsl_cpu/data_copy.h"
#include "fusedsl_cpu/cube.h"
#include "fusedsl_cpu/load3d.h"
#include "fusedsl_cpu/tscm.h"
#include "fusedsl_cpu/vector.h"
#include "fusedsl_cpu/reduce.h"
#include "fusedsl_cpu/kernel_utils.h"
#include "fusedsl_cpu/pad.h"
#include "fusedsl_cpu/sort.h"
#include "fusedsl_cpu/sync.h"
#include "fusedsl_cpu/adv_math.h"
#include "fusedsl_cpu/adv_activation.h"
#include "fusedsl_cpu/adv_reduce.h"
#include "fusedsl_cpu/adv_softmax.h"
#include "fusedsl_cpu/adv_quant.h"
#include "fusedsl_cpu/adv_misc.h"
#include "fusedsl_cpu/adv_norm.h"
#include "fusedsl_cpu/adv_layernorm.h"
#include "fusedsl_cpu/adv_filter.h"
#include "fusedsl_cpu/adv_sort.h"
#include "fusedsl_cpu/launch.h"

// Kernel-side branch on the key the host set (ICPU_SET_TILING_KEY in CPU mode).
#ifndef TILING_KEY_IS
#define TILING_KEY_IS(key) (::fusedsl_cpu::RT().tiling_key == static_cast<uint64_t>(key))
#endif

#ifdef __NPU_ARCH__
// Each translation unit built for an arch records it; the first launch picks its target.
namespace {
[[maybe_unused]] const bool fusedsl_cpu_arch_noted = ::fusedsl_cpu::NoteCompiledArch(__NPU_ARCH__);
}
#endif

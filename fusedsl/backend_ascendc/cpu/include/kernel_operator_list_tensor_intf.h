// CANN's header for ListTensorDesc / TensorDesc (kernels include it next to kernel_operator.h); in
// fusedsl the classes live in fusedsl_cpu/kernel_utils.h, which kernel_operator.h brings in.
#pragma once

#include "kernel_operator.h"

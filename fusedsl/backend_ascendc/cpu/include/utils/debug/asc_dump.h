// CANN 9's dump header for kernels: AscendC::DumpTensor and printf (kernel_operator.h).
#pragma once

#include "kernel_operator.h"

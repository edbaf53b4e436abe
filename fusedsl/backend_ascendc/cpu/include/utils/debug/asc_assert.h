// CANN 9's assert header for kernels: ascendc_assert (kernel_operator.h).
#pragma once

#include "kernel_operator.h"

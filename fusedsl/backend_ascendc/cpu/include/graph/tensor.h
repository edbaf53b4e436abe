// GE's graph/tensor.h, the part host tiling code of CANN's samples uses: ge::Shape and the
// ge::DataType numbering (the samples' tiling functions build a ge::Shape for the high-level
// API tiling helpers, e.g. AscendC::PadTilingFunc).  GE's Tensor/TensorDesc graph objects are
// not modelled: fusedsl runs no graph engine.
#pragma once

#include "fusedsl_cpu/ge_shape.h"
#include "fusedsl_cpu/ge_types.h"

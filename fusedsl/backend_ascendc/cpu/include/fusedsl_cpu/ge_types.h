// ge::DataType (GE's tensor element types, CANN's numbering) and AscendC::TensorDataType, its
// name in the high-level API host helpers.  Shared by the op-project registry and the tiling
// headers.
#pragma once

namespace ge {

enum DataType {
    DT_FLOAT = 0, DT_FLOAT16 = 1, DT_INT8 = 2, DT_INT32 = 3, DT_UINT8 = 4, DT_INT16 = 6,
    DT_UINT16 = 7, DT_UINT32 = 8, DT_INT64 = 9, DT_UINT64 = 10, DT_DOUBLE = 11, DT_BOOL = 12,
    DT_BF16 = 27,
};

}  // namespace ge

namespace AscendC {
using TensorDataType = ge::DataType;
}  // namespace AscendC

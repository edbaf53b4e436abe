// Pad/UnPad tiling structs (kernel side: AscendC::tiling::PadTiling / UnPadTiling), with the
// field names and order of CANN's tiling definitions so a kernel that copies the words from
// a GM tiling buffer reads what the host helpers wrote.  Shared by kernel and host headers.
#pragma once

#include <cstdint>

#define FUSEDSL_UNPAD_TILING_FIELDS(X) \
    X(srcHeight) X(srcWidth) X(tmpBuffer1BlockNum) X(tmpBuffer1RowNum) X(tmpBuffer2Offset) X(widthTiling) \
    X(widthFractal) X(widthFractalTail)

#define FUSEDSL_PAD_TILING_FIELDS(X)                                                                       \
    X(srcHeight) X(srcWidth) X(srcOriWidth) X(widthWithoutLastBlock) X(blocksPerRow) X(heightTiling)       \
    X(heightFractal) X(heightFractalTail) X(mainLoopOffset) X(tailBlockOffset) X(tmpBuffer1BlockNum)       \
    X(tmpBuffer1RowNum) X(tmpBuffer2Offset) X(widthTiling) X(widthFractal) X(widthFractalTail)             \
    X(widthFractalTailAlingned) X(brcbTiling) X(brcbFractal) X(brcbFractalTail) X(maxRepeatTimes)          \
    X(brcbTilingRepeatTimes) X(brcbTilingRepeatTimesTail) X(brcbFractalTailRepeatTimes)                   \
    X(brcbFractalTailRepeatTimesTail) X(reserved)

namespace AscendC {
namespace tiling {

#define FUSEDSL_U32_FIELD(name) uint32_t name = 0;
struct PadTiling {
    FUSEDSL_PAD_TILING_FIELDS(FUSEDSL_U32_FIELD)
};
struct UnPadTiling {
    FUSEDSL_UNPAD_TILING_FIELDS(FUSEDSL_U32_FIELD)
};
#undef FUSEDSL_U32_FIELD

}  // namespace tiling
}  // namespace AscendC

using AscendC::tiling::PadTiling;
using AscendC::tiling::UnPadTiling;

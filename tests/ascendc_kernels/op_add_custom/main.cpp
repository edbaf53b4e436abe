// fusedsl test op (op-project style): CPU run of AddCustom through its registered tiling function.
#include <cmath>
#include <cstdio>
#include <cstring>

#include "acl/acl.h"
#include "register/op_def_registry.h"
#include "tikicpulib.h"

extern "C" __global__ __aicore__ void add_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR workspace, GM_ADDR tiling);

int main()
{
    const int64_t rows = 16, cols = 1024;
    const size_t n = static_cast<size_t>(rows * cols), bytes = n * sizeof(aclFloat16);
    fusedsl_cpu::OpTilingResult op = fusedsl_cpu::RunOpTiling("AddCustom", {gert::Shape{rows, cols}, gert::Shape{rows, cols}});
    if (!(op.outputs.size() == 1 && op.outputs[0] == gert::Shape{rows, cols})) {
        std::printf("[FAILED] InferShape\n");
        return 1;
    }
    uint8_t* x = (uint8_t*)AscendC::GmAlloc(bytes);
    uint8_t* y = (uint8_t*)AscendC::GmAlloc(bytes);
    uint8_t* z = (uint8_t*)AscendC::GmAlloc(bytes);
    uint8_t* tiling = (uint8_t*)AscendC::GmAlloc(op.tiling.size());
    std::memcpy(tiling, op.tiling.data(), op.tiling.size());
    auto* xs = reinterpret_cast<aclFloat16*>(x);
    auto* ys = reinterpret_cast<aclFloat16*>(y);
    for (size_t i = 0; i < n; ++i) {
        xs[i] = aclFloatToFloat16(0.5f * static_cast<float>(i % 61) - 7.0f);
        ys[i] = aclFloatToFloat16(0.25f * static_cast<float>(i % 17));
    }
    AscendC::SetKernelMode(KernelMode::AIV_MODE);
    ICPU_RUN_KF(add_custom, op.blockDim, x, y, z, nullptr, tiling);
    auto* zs = reinterpret_cast<aclFloat16*>(z);
    int bad = 0;
    for (size_t i = 0; i < n; ++i) {
        float want = aclFloat16ToFloat(aclFloatToFloat16(aclFloat16ToFloat(xs[i]) + aclFloat16ToFloat(ys[i])));
        bad += aclFloat16ToFloat(zs[i]) != want;
    }
    std::printf(bad == 0 ? "[SUCCESS] blockDim %u, %zu tiling bytes\n" : "[FAILED] %d mismatches\n",
                bad == 0 ? op.blockDim : bad, op.tiling.size());
    return bad == 0 ? 0 : 1;
}

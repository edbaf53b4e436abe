// CPU-mode host program for add_custom, the way the CANN samples write main.cpp for
// RUN_MODE=cpu: GmAlloc'ed buffers, SetKernelMode, ICPU_RUN_KF, then a result check.
#include <cmath>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "add_custom_tiling.h"
#include "tikicpulib.h"

extern "C" __global__ __aicore__ void add_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z, AddCustomTilingData tiling);

int main() {
    constexpr uint32_t blockDim = 8;
    constexpr uint32_t totalLength = blockDim * 2048;
    AddCustomTilingData tiling{totalLength, 8};
    size_t bytes = totalLength * sizeof(aclFloat16);

    uint8_t* x = (uint8_t*)AscendC::GmAlloc(bytes);
    uint8_t* y = (uint8_t*)AscendC::GmAlloc(bytes);
    uint8_t* z = (uint8_t*)AscendC::GmAlloc(bytes);
    auto* xs = reinterpret_cast<aclFloat16*>(x);
    auto* ys = reinterpret_cast<aclFloat16*>(y);
    for (uint32_t i = 0; i < totalLength; ++i) {
        xs[i] = aclFloatToFloat16(0.25f * static_cast<float>(i % 97));
        ys[i] = aclFloatToFloat16(1.5f - 0.125f * static_cast<float>(i % 13));
    }

    AscendC::SetKernelMode(KernelMode::AIV_MODE);
    ICPU_SET_TILING_KEY(0);
    ICPU_RUN_KF(add_custom, blockDim, x, y, z, tiling);

    auto* zs = reinterpret_cast<aclFloat16*>(z);
    int bad = 0;
    for (uint32_t i = 0; i < totalLength; ++i) {
        float want = aclFloat16ToFloat(aclFloatToFloat16(aclFloat16ToFloat(xs[i]) + aclFloat16ToFloat(ys[i])));
        if (aclFloat16ToFloat(zs[i]) != want && bad++ < 5) {
            std::printf("mismatch at %u: got %f want %f\n", i, aclFloat16ToFloat(zs[i]), want);
        }
    }
    AscendC::GmFree(x);
    AscendC::GmFree(y);
    AscendC::GmFree(z);
    if (bad != 0) {
        std::printf("[FAILED] %d mismatches\n", bad);
        return 1;
    }
    std::printf("[SUCCESS] add_custom matches\n");
    return 0;
}

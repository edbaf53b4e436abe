// CPU-mode host program for leaky_relu_custom; device buffers come from aclrtMalloc this time,
// as a host program written for the NPU would have them.
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "leaky_relu_custom_tiling.h"
#include "tikicpulib.h"

extern "C" __global__ __aicore__ void leaky_relu_custom(GM_ADDR x, GM_ADDR y, LeakyReluCustomTilingData tiling);

int main() {
    constexpr uint32_t blockDim = 8;
    LeakyReluCustomTilingData tiling{blockDim * 1001, 256, 0.1f};
    size_t bytes = tiling.totalLength * sizeof(float);
    std::vector<float> host(tiling.totalLength);
    for (uint32_t i = 0; i < tiling.totalLength; ++i) {
        host[i] = static_cast<float>(static_cast<int>(i % 41) - 20) * 0.37f;
    }

    aclInit(nullptr);
    aclrtSetDevice(0);
    aclrtStream stream = nullptr;
    aclrtCreateStream(&stream);
    uint8_t* x = nullptr;
    uint8_t* y = nullptr;
    aclrtMalloc((void**)&x, bytes, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc((void**)&y, bytes, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMemcpy(x, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE);

    AscendC::SetKernelMode(KernelMode::AIV_MODE);
    ICPU_RUN_KF(leaky_relu_custom, blockDim, x, y, tiling);
    aclrtSynchronizeStream(stream);

    std::vector<float> out(tiling.totalLength);
    aclrtMemcpy(out.data(), bytes, y, bytes, ACL_MEMCPY_DEVICE_TO_HOST);
    int bad = 0;
    for (uint32_t i = 0; i < tiling.totalLength; ++i) {
        float want = host[i] < 0 ? host[i] * tiling.alpha : host[i];
        if (out[i] != want && bad++ < 5) {
            std::printf("mismatch at %u: got %f want %f\n", i, out[i], want);
        }
    }
    aclrtFree(x);
    aclrtFree(y);
    aclrtDestroyStream(stream);
    aclrtResetDevice(0);
    aclFinalize();
    if (bad != 0) {
        std::printf("[FAILED] %d mismatches\n", bad);
        return 1;
    }
    std::printf("[SUCCESS] leaky_relu_custom matches\n");
    return 0;
}

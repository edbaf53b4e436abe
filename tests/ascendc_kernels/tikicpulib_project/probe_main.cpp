// Host side of the probe: GmAlloc'd data and output, a ListTensorDesc on main's stack (as
// CANN's AddN sample passes it), ICPU_RUN_KF with no SetKernelMode (tikicpulib's default,
// MIX_MODE: 2 vector instances per block on Ascend910B), then one line per output slot.
#include <cstdio>

#include "graph/tensor.h"   // ge::Shape, as the samples' host tiling code builds it
#include "tikicpulib.h"

extern "C" __global__ __aicore__ void probe(GM_ADDR list, GM_ADDR out);

int main() {
    constexpr int kSlots = 6;
    auto* x = static_cast<float*>(AscendC::GmAlloc(64 * sizeof(float)));
    auto* out = static_cast<float*>(AscendC::GmAlloc(16 * kSlots * sizeof(float)));
    for (int i = 0; i < 64; ++i) {
        x[i] = static_cast<float>(i + 1);
    }
    for (int i = 0; i < 16 * kSlots; ++i) {
        out[i] = -1.0f;
    }
    // one tensor of shape [64]: pointer array offset, header (dim 1, index 0), the shape, the pointer
    uint64_t list[4] = {3 * sizeof(uint64_t), 1, 64, reinterpret_cast<uint64_t>(x)};
    ICPU_RUN_KF(probe, 2, reinterpret_cast<uint8_t*>(list), reinterpret_cast<uint8_t*>(out));
    for (int i = 0; i < kSlots; ++i) {
        std::printf("slot %d: idx %g ws %g last %g\n", i, out[16 * i], out[16 * i + 1], out[16 * i + 2]);
    }
    std::printf("shape size %lld\n", static_cast<long long>(ge::Shape({8, 2048}).GetShapeSize()));
    AscendC::GmFree(x);
    AscendC::GmFree(out);
    return 0;
}

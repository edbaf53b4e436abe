// CPU-mode host program for matmul_leakyrelu_custom, as the kernel-launch sample's main.cpp
// runs it: host tiling for the SoC, GmAlloc'ed buffers with the system workspace in front,
// MIX_MODE, the tiling key, ICPU_RUN_KF, then a check against a host reference.
//   usage: matmul_leakyrelu_custom [SocVersion]   (default Ascend910B2)
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "kernel_tiling/kernel_tiling.h"
#include "tiling/platform/platform_ascendc.h"
#include "tikicpulib.h"

extern "C" __global__ __aicore__ void matmul_leakyrelu_custom(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c,
                                                              GM_ADDR workspace, GM_ADDR tiling);
extern "C" int64_t GenerateTiling(const char* socVersion, int32_t M, int32_t N, int32_t K, int32_t usedCoreNum,
                                  int32_t baseM, int32_t baseN, int32_t fp32Inputs, uint8_t* buf, uint32_t capacity);

int main(int argc, char** argv) {
    const char* soc = argc > 1 ? argv[1] : "Ascend910B2";
    const bool is310p = std::strncmp(soc, "Ascend310P", 10) == 0;
    const int32_t M = 1024, N = 640, K = 256, usedCoreNum = 2;
    // 910B: one AIC drives two AIV (usedCoreNum 2 -> blockDim 1); 310P: two AI cores.
    const uint32_t blockDim = is310p ? 2 : 1;

    uint8_t* tiling = (uint8_t*)AscendC::GmAlloc(sizeof(TCubeTiling));
    if (GenerateTiling(soc, M, N, K, usedCoreNum, 256, 128, 0, tiling, sizeof(TCubeTiling)) < 0) {
        std::printf("[FAILED] gen tiling failed\n");
        return 1;
    }
    auto* platform = platform_ascendc::PlatformAscendCManager::GetInstance(soc);
    size_t workspaceSize = platform->GetLibApiWorkSpaceSize();

    uint8_t* a = (uint8_t*)AscendC::GmAlloc(M * K * sizeof(half));
    uint8_t* b = (uint8_t*)AscendC::GmAlloc(K * N * sizeof(half));
    uint8_t* bias = (uint8_t*)AscendC::GmAlloc(N * sizeof(float));
    uint8_t* c = (uint8_t*)AscendC::GmAlloc(M * N * sizeof(float));
    uint8_t* workspace = (uint8_t*)AscendC::GmAlloc(workspaceSize);
    auto* ah = reinterpret_cast<half*>(a);
    auto* bh = reinterpret_cast<half*>(b);
    auto* bf = reinterpret_cast<float*>(bias);
    for (int i = 0; i < M * K; ++i) ah[i] = static_cast<half>(static_cast<float>((i * 7) % 17 - 8) * 0.125f);
    for (int i = 0; i < K * N; ++i) bh[i] = static_cast<half>(static_cast<float>((i * 5) % 13 - 6) * 0.25f);
    for (int i = 0; i < N; ++i) bf[i] = static_cast<float>(i % 9) - 4.0f;

    AscendC::SetKernelMode(KernelMode::MIX_MODE);
    ICPU_SET_TILING_KEY(is310p ? 2 : 1);
    ICPU_RUN_KF(matmul_leakyrelu_custom, blockDim, a, b, bias, c, workspace, tiling);

    int bad = 0;
    const auto* out = reinterpret_cast<const float*>(c);
    std::vector<float> row(N);
    for (int i = 0; i < M; ++i) {
        for (int j = 0; j < N; ++j) row[j] = bf[j];
        for (int k = 0; k < K; ++k) {
            float av = static_cast<float>(ah[i * K + k]);
            for (int j = 0; j < N; ++j) row[j] += av * static_cast<float>(bh[k * N + j]);
        }
        for (int j = 0; j < N; ++j) {
            float want = row[j] < 0 ? row[j] * 0.1f : row[j];
            if (std::fabs(out[i * N + j] - want) > 1e-3f * (1.0f + std::fabs(want)) && bad++ < 5) {
                std::printf("mismatch at (%d, %d): got %f want %f\n", i, j, out[i * N + j], want);
            }
        }
    }
    for (uint8_t* p : {a, b, bias, c, workspace, tiling}) AscendC::GmFree(p);
    if (bad != 0) {
        std::printf("[FAILED] %d mismatches\n", bad);
        return 1;
    }
    std::printf("[SUCCESS] matmul_leakyrelu_custom matches on %s\n", soc);
    return 0;
}

// Host tiling for matmul_leakyrelu_custom with the CANN tiling API, as the kernel-launch
// sample's GenerateTiling does it: MultiCoreMatmulTiling on the platform of a SoC, fixed
// baseM x baseN, bias on, serialised to a buffer the kernel copies from GM.
#include "tiling/tiling_api.h"

// Writes the tiling into buf and returns its size in bytes, or -1 when GetTiling fails.
extern "C" int64_t GenerateTiling(const char* socVersion, int32_t M, int32_t N, int32_t K, int32_t usedCoreNum,
                                  int32_t baseM, int32_t baseN, int32_t fp32Inputs, uint8_t* buf, uint32_t capacity) {
    // Qualified names: this file is also compiled together with the kernel, whose
    // `using namespace matmul` brings AscendC's TPosition into scope.
    namespace mt = matmul_tiling;
    auto ascendcPlatform = platform_ascendc::PlatformAscendCManager::GetInstance(socVersion);
    mt::DataType inType = fp32Inputs ? mt::DataType::DT_FLOAT : mt::DataType::DT_FLOAT16;
    mt::MultiCoreMatmulTiling tilingApi(*ascendcPlatform);
    tilingApi.SetDim(usedCoreNum);
    tilingApi.SetAType(mt::TPosition::GM, mt::CubeFormat::ND, inType, false);
    tilingApi.SetBType(mt::TPosition::GM, mt::CubeFormat::ND, inType, false);
    tilingApi.SetCType(mt::TPosition::VECIN, mt::CubeFormat::ND, mt::DataType::DT_FLOAT);
    tilingApi.SetBiasType(mt::TPosition::GM, mt::CubeFormat::ND, mt::DataType::DT_FLOAT);
    tilingApi.SetOrgShape(M, N, K);
    tilingApi.SetShape(M, N, K);
    tilingApi.SetBias(true);
    tilingApi.SetTraverse(mt::MatrixTraverse::FIRSTM);
    tilingApi.SetFixSplit(baseM, baseN, -1);
    tilingApi.SetBufferSpace(-1, -1, -1);
    optiling::TCubeTiling tilingData;
    int64_t res = tilingApi.GetTiling(tilingData);
    if (res == -1) {
        return -1;
    }
    tilingData.set_stepM(1);
    tilingData.set_stepN(1);
    tilingData.SaveToBuffer(buf, capacity);
    return static_cast<int64_t>(tilingData.GetDataSize());
}

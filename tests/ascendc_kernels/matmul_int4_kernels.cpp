// The Matmul high-level API with int4b_t A and B (Matmul使用说明 table 2: int4b_t x int4b_t + int32_t bias ->
// int32_t, Atlas A2/A3), written from the asc-devkit docs: host tiling with DataType::DT_INT4, and a cube-only
// kernel (ASCENDC_CUBE_ONLY, SetSubBlockIdx + Init on the AIC) computing C = A x B + bias for A (M x K) and
// B (K x N) int4 in GM, ND, two values a byte (element 2i in the low nibble).
#include <cstring>

#include "tikicpulib.h"
#define ASCENDC_CUBE_ONLY
#include "lib/matmul_intf.h"
#include "tiling/tiling_api.h"

// Host: the tiling for M x N x K on one core, serialised into buf; -1 when GetTiling fails.
extern "C" int64_t Int4Tiling(int32_t M, int32_t N, int32_t K, uint8_t* buf, uint32_t capacity) {
    namespace mt = matmul_tiling;
    auto platform = platform_ascendc::PlatformAscendCManager::GetInstance("Ascend910B1");
    mt::MultiCoreMatmulTiling api(*platform);
    api.SetDim(1);
    api.SetAType(mt::TPosition::GM, mt::CubeFormat::ND, mt::DataType::DT_INT4, false);
    api.SetBType(mt::TPosition::GM, mt::CubeFormat::ND, mt::DataType::DT_INT4, false);
    api.SetCType(mt::TPosition::GM, mt::CubeFormat::ND, mt::DataType::DT_INT32);
    api.SetBiasType(mt::TPosition::GM, mt::CubeFormat::ND, mt::DataType::DT_INT32);
    api.SetOrgShape(M, N, K);
    api.SetShape(M, N, K);
    api.SetBias(true);
    api.SetBufferSpace(-1, -1, -1);
    optiling::TCubeTiling tiling;
    if (api.GetTiling(tiling) == -1) {
        return -1;
    }
    tiling.SaveToBuffer(buf, capacity);
    return static_cast<int64_t>(tiling.GetDataSize());
}

using Int4 = AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, AscendC::int4b_t>;
using Int32 = AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, int32_t>;

extern "C" __global__ __aicore__ void matmul_int4(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR t) {
    if ASCEND_IS_AIV {
        return;
    }
    TCubeTiling tiling;
    std::memcpy(&tiling, t, sizeof tiling);
    AscendC::TPipe pipe;
    AscendC::Matmul<Int4, Int4, Int32, Int32> mm;
    mm.SetSubBlockIdx(0);
    mm.Init(&tiling, &pipe);
    AscendC::GlobalTensor<AscendC::int4b_t> ag, bg;
    AscendC::GlobalTensor<int32_t> biasg, cg;
    ag.SetGlobalBuffer(reinterpret_cast<__gm__ AscendC::int4b_t*>(a), tiling.M * tiling.Ka);
    bg.SetGlobalBuffer(reinterpret_cast<__gm__ AscendC::int4b_t*>(b), tiling.Ka * tiling.N);
    biasg.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(bias), tiling.N);
    cg.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(c), tiling.M * tiling.N);
    mm.SetTensorA(ag);
    mm.SetTensorB(bg);
    mm.SetBias(biasg);
    mm.IterateAll(cg);   // LINE:iterate_all
    mm.End();
}

// The kernel as a cube-only (__cube__) launch and as a mixed one (tikicpulib's default mode), whose vector
// cores return at once and whose cube cores compute.
extern "C" int fusedsl_launch_matmul_int4(uint32_t blockDim, uint8_t** args) {
    AscendC::SetKernelMode(KernelMode::AIC_MODE);
    return fusedsl_cpu::Launch(matmul_int4, blockDim, args[0], args[1], args[2], args[3], args[4]);
}

extern "C" int fusedsl_launch_matmul_int4_mix(uint32_t blockDim, uint8_t** args) {
    AscendC::SetKernelMode(KernelMode::MIX_MODE);
    return fusedsl_cpu::Launch(matmul_int4, blockDim, args[0], args[1], args[2], args[3], args[4]);
}

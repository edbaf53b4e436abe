// Batch matmul through the Matmul API (IterateBatch / IterateNBatch), written from the asc-devkit docs: host
// tiling with SetALayout / SetBLayout / SetCLayout / SetBatchNum (BSNGD) or SetBatchInfoForNormal (NORMAL),
// and mixed kernels that run the batches.  half A and B, float C and bias.
#include <cstring>

#include "tikicpulib.h"
#include "lib/matmul_intf.h"
#include "tiling/tiling_api.h"

// Host: layout 0 = BSNGD with A [1, S=M, 1, gA, D=K], B transposed [1, S=N, 1, gB, D=K], C [1, M, 1, g, N]
// (g = max(gA, gB)); layout 1 = NORMAL with `batch` M x K / K x N / M x N matrices one after another.
extern "C" int64_t BatchTiling(int32_t layout, int32_t M, int32_t N, int32_t K, int32_t gA, int32_t gB, int32_t bias,
                               uint8_t* buf, uint32_t capacity) {
    namespace mt = matmul_tiling;
    auto platform = platform_ascendc::PlatformAscendCManager::GetInstance("Ascend910B1");
    mt::BatchMatmulTiling api(*platform);
    api.SetAType(mt::TPosition::GM, mt::CubeFormat::ND, mt::DataType::DT_FLOAT16, false);
    api.SetBType(mt::TPosition::GM, mt::CubeFormat::ND, mt::DataType::DT_FLOAT16, layout == 0);
    api.SetCType(mt::TPosition::GM, mt::CubeFormat::ND, mt::DataType::DT_FLOAT);
    api.SetBiasType(mt::TPosition::GM, mt::CubeFormat::ND, mt::DataType::DT_FLOAT);
    api.SetOrgShape(M, N, K);
    api.SetShape(M, N, K);
    api.EnableBias(bias != 0);
    api.SetBufferSpace(-1, -1, -1);
    const int32_t g = gA > gB ? gA : gB;
    if (layout == 0) {
        api.SetALayout(1, M, 1, gA, K);
        api.SetBLayout(1, N, 1, gB, K);
        api.SetCLayout(1, M, 1, g, N);
    } else {
        api.SetBatchInfoForNormal(gA, gB, M, N, K);
    }
    api.SetBatchNum(g);
    optiling::TCubeTiling tiling;
    if (api.GetTiling(tiling) == -1) {
        return -1;
    }
    tiling.SaveToBuffer(buf, capacity);
    return static_cast<int64_t>(tiling.GetDataSize());
}

constexpr MatmulConfig kBatchCfg =
    GetMMConfig<MatmulConfigMode::CONFIG_NORM>(MatmulBatchParams{false, BatchMode::BATCH_LESS_THAN_L1, false});

template <LayoutMode L, bool TransB>
using Mm = AscendC::Matmul<AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, half, false, L>,
                           AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, half, TransB, L>,
                           AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, float, false, L>,
                           AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, float>, kBatchCfg>;

template <class M_>
__aicore__ inline void Setup(M_& mm, AscendC::TPipe& pipe, GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR ws,
                             TCubeTiling& tiling, GM_ADDR t, bool transB) {
    std::memcpy(&tiling, t, sizeof tiling);
    REGIST_MATMUL_OBJ(&pipe, ws, mm, &tiling);
    AscendC::GlobalTensor<half> ag, bg;
    AscendC::GlobalTensor<float> biasg;
    ag.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(a));
    bg.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(b));
    biasg.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(bias));
    mm.SetTensorA(ag);
    mm.SetTensorB(bg, transB);
    if (tiling.isBias) {
        mm.SetBias(biasg);
    }
}

// BSNGD, B transposed: one IterateBatch of max(gA, gB) products (the smaller G broadcast).
extern "C" __global__ __aicore__ void batch_bsngd(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR ws,
                                                  GM_ADDR t) {
    AscendC::TPipe pipe;
    TCubeTiling tiling;
    Mm<LayoutMode::BSNGD, true> mm;
    Setup(mm, pipe, a, b, bias, ws, tiling, t, true);
    AscendC::GlobalTensor<float> cg;
    cg.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(c));
    mm.IterateBatch(cg, tiling.ALayoutInfoG, tiling.BLayoutInfoG, false);
}

// NORMAL: `BatchNum` products one after another, the bias shared (isBiasBatch false).
extern "C" __global__ __aicore__ void batch_normal(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR ws,
                                                   GM_ADDR t) {
    AscendC::TPipe pipe;
    TCubeTiling tiling;
    Mm<LayoutMode::NORMAL, false> mm;
    Setup(mm, pipe, a, b, bias, ws, tiling, t, false);
    AscendC::GlobalTensor<float> cg;
    cg.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(c));
    mm.IterateBatch(cg, tiling.ALayoutInfoB, tiling.BLayoutInfoB, false);
}

// Broken on purpose: IterateNBatch with a MatmulConfig whose isNBatch is off.
extern "C" __global__ __aicore__ void batch_n_without_is_n_batch(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c,
                                                                 GM_ADDR ws, GM_ADDR t) {
    AscendC::TPipe pipe;
    TCubeTiling tiling;
    Mm<LayoutMode::BSNGD, true> mm;
    Setup(mm, pipe, a, b, bias, ws, tiling, t, true);
    mm.SetWorkspace(c, 4096);
    mm.IterateNBatch(1, tiling.ALayoutInfoG, tiling.BLayoutInfoG, false);   // LINE:n_batch
}

#define BATCH_ENTRY(name)                                                                               \
    extern "C" int fusedsl_launch_##name(uint32_t blockDim, uint8_t** args) {                           \
        AscendC::SetKernelMode(KernelMode::MIX_MODE);                                                   \
        return fusedsl_cpu::Launch(name, blockDim, args[0], args[1], args[2], args[3], args[4], args[5]); \
    }
BATCH_ENTRY(batch_bsngd)
BATCH_ENTRY(batch_normal)
BATCH_ENTRY(batch_n_without_is_n_batch)

// The Matmul object's own buffers in the cube memories (written from asc-devkit's Matmul impl: the object
// plans its A1/B1 queues, all of L0A and L0B, its L0C accumulators and the bias table in the kernel's TPipe)
// next to a kernel's own TQue on those positions.  Cube-only kernels (ASCENDC_CUBE_ONLY, AIC_MODE) with
// C = A x B (half A M x K, half B K x N, float C, no bias) on one core; mm_nz reads A and / or B stored in GM
// in CubeFormat::NZ.
#include <cstring>

#include "tikicpulib.h"
#define ASCENDC_CUBE_ONLY
#include "lib/matmul_intf.h"
#include "tiling/tiling_api.h"

using namespace AscendC;

// Host: the tiling for M x N x K on one core, serialised into buf; -1 when GetTiling fails.
extern "C" int64_t LocalTiling(int32_t M, int32_t N, int32_t K, uint8_t* buf, uint32_t capacity) {
    namespace mt = matmul_tiling;
    auto platform = platform_ascendc::PlatformAscendCManager::GetInstance("Ascend910B1");
    mt::MultiCoreMatmulTiling api(*platform);
    api.SetDim(1);
    api.SetAType(mt::TPosition::GM, mt::CubeFormat::ND, mt::DataType::DT_FLOAT16, false);
    api.SetBType(mt::TPosition::GM, mt::CubeFormat::ND, mt::DataType::DT_FLOAT16, false);
    api.SetCType(mt::TPosition::GM, mt::CubeFormat::ND, mt::DataType::DT_FLOAT);
    api.SetBiasType(mt::TPosition::GM, mt::CubeFormat::ND, mt::DataType::DT_FLOAT);
    api.SetOrgShape(M, N, K);
    api.SetShape(M, N, K);
    api.SetBias(false);
    api.SetBufferSpace(-1, -1, -1);
    optiling::TCubeTiling tiling;
    if (api.GetTiling(tiling) == -1) {
        return -1;
    }
    tiling.SaveToBuffer(buf, capacity);
    return static_cast<int64_t>(tiling.GetDataSize());
}

using HalfGm = MatmulType<TPosition::GM, CubeFormat::ND, half>;
using FloatGm = MatmulType<TPosition::GM, CubeFormat::ND, float>;
using Mm = Matmul<HalfGm, HalfGm, FloatGm, FloatGm>;

// keep: 256 halves the kernel parks in L1 around the Matmul and copies back out.
__aicore__ inline void RunMatmul(Mm& mm, const TCubeTiling& tiling, GM_ADDR a, GM_ADDR b, GM_ADDR c) {
    GlobalTensor<half> ag, bg;
    GlobalTensor<float> cg;
    ag.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(a), tiling.M * tiling.Ka);
    bg.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(b), tiling.Ka * tiling.N);
    cg.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(c), tiling.M * tiling.N);
    mm.SetTensorA(ag);
    mm.SetTensorB(bg);
    mm.IterateAll(cg);
}

// mode 0: an A1 queue planned before the Matmul (CANN then plans the object after it) and one after
//         (at the object's start plus the tiling's shareL1Size): both keep their data, C = A x B.
// mode 1: a TQue<A2> planned before the Matmul, which takes all of L0A from byte 0 (refused at its line).
// mode 2: a TQue<B2> planned after the Matmul holds all of L0B (refused at its line).
// mode 3: the tiling's shareL1Size cleared, so an A1 queue planned after the Matmul lands on its A1/B1
//         buffers (refused at its line).
extern "C" __global__ __aicore__ void mm_local(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR keep, GM_ADDR t) {
    if ASCEND_IS_AIV {
        return;
    }
    TCubeTiling tiling;
    std::memcpy(&tiling, t + 4, sizeof tiling);
    const int32_t mode = *reinterpret_cast<__gm__ int32_t*>(t);
    GlobalTensor<half> kg;
    kg.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(keep), 512);
    TPipe pipe;
    TQue<TPosition::A1, 1> before, after;
    TQue<TPosition::A2, 1> l0a;
    TQue<TPosition::B2, 1> l0b;
    Mm mm;
    if (mode == 0) {
        pipe.InitBuffer(before, 1, 256 * sizeof(half));
        LocalTensor<half> x = before.AllocTensor<half>();
        DataCopy(x, kg, 256);
        mm.Init(&tiling, &pipe);
        pipe.InitBuffer(after, 1, 256 * sizeof(half));
        LocalTensor<half> y = after.AllocTensor<half>();
        DataCopy(y, kg[256], 256);
        RunMatmul(mm, tiling, a, b, c);
        SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
        // the kernel's L1 data, read back after the Matmul ran: swapped halves in GM
        DataCopy(kg, y, 256);
        DataCopy(kg[256], x, 256);
        before.FreeTensor(x);
        after.FreeTensor(y);
    } else if (mode == 1) {
        pipe.InitBuffer(l0a, 1, 512 * sizeof(half));   // LINE:a2_before
        mm.Init(&tiling, &pipe);                        // LINE:mm_after_a2
    } else if (mode == 2) {
        mm.Init(&tiling, &pipe);                        // LINE:mm_before_b2
        pipe.InitBuffer(l0b, 1, 512 * sizeof(half));   // LINE:b2_after
    } else {
        tiling.shareL1Size = 0;
        mm.Init(&tiling, &pipe);                        // LINE:mm_no_share
        pipe.InitBuffer(after, 1, 256 * sizeof(half));  // LINE:a1_after
    }
}

extern "C" int fusedsl_launch_mm_local(uint32_t blockDim, uint8_t** args) {
    AscendC::SetKernelMode(KernelMode::AIC_MODE);
    return fusedsl_cpu::Launch(mm_local, blockDim, args[0], args[1], args[2], args[3], args[4]);
}

// A and / or B in GM in CubeFormat::NZ (16-column groups of the rows rounded up to 16): mode 1 B NZ, 2 A NZ,
// 3 both.
template <class A, class B>
__aicore__ inline void NzMatmul(const TCubeTiling& tiling, GM_ADDR a, GM_ADDR b, GM_ADDR c) {
    TPipe pipe;
    Matmul<A, B, FloatGm, FloatGm> mm;
    mm.Init(&tiling, &pipe);
    GlobalTensor<half> ag, bg;
    GlobalTensor<float> cg;
    ag.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(a), (tiling.M + 15) / 16 * 16 * tiling.Ka);
    bg.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(b), (tiling.Ka + 15) / 16 * 16 * tiling.N);
    cg.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(c), tiling.M * tiling.N);
    mm.SetTensorA(ag);
    mm.SetTensorB(bg);
    mm.IterateAll(cg);
}

using HalfNz = MatmulType<TPosition::GM, CubeFormat::NZ, half>;

extern "C" __global__ __aicore__ void mm_nz(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR, GM_ADDR t) {
    if ASCEND_IS_AIV {
        return;
    }
    TCubeTiling tiling;
    std::memcpy(&tiling, t + 4, sizeof tiling);
    const int32_t mode = *reinterpret_cast<__gm__ int32_t*>(t);
    if (mode == 1) {
        NzMatmul<HalfGm, HalfNz>(tiling, a, b, c);
    } else if (mode == 2) {
        NzMatmul<HalfNz, HalfGm>(tiling, a, b, c);
    } else {
        NzMatmul<HalfNz, HalfNz>(tiling, a, b, c);
    }
}

extern "C" int fusedsl_launch_mm_nz(uint32_t blockDim, uint8_t** args) {
    AscendC::SetKernelMode(KernelMode::AIC_MODE);
    return fusedsl_cpu::Launch(mm_nz, blockDim, args[0], args[1], args[2], args[3], args[4]);
}

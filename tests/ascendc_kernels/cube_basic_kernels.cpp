// fusedsl's own kernels for the basic cube API (written from the asc-devkit API docs): C = A x B
// through L1 (DataCopy with Nd2NzParams), L0A/L0B (LoadData2DParams, B's fractals transposed),
// Mmad into L0C and Fixpipe to GM with a float -> half conversion, one M-block per core.
// cube_float_relu_static: static tensors, C = relu(2 A B) in float (a second Mmad accumulates).
// Args: a [M, K] half, b [K, N] half, c [M, N] half (or float for the NoQuant entry), dims
// (uint32 M, K, N).  M, N multiples of 16 and K of 16; each core does M / blockDim rows.
#include "tikicpulib.h"

using namespace AscendC;

constexpr uint32_t CUBE = 16;
static_assert(IsSameType<half, half>::value && !IsSameType<half, float>::value, "CANN's IsSameType");

template <typename CT, QuantMode_t Q, bool Relu, bool StaticTensors, bool Twice = false, bool Nz = false>
void CubeMatmul(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR dims)
{
    auto d = reinterpret_cast<__gm__ uint32_t*>(dims);
    uint32_t M = d[0], K = d[1], N = d[2];
    uint32_t rows = M / GetBlockNum();
    uint32_t m0 = rows * GetBlockIdx();
    GlobalTensor<half> ag, bg;
    GlobalTensor<CT> cg;
    ag.SetGlobalBuffer((__gm__ half*)a + m0 * K, rows * K);
    bg.SetGlobalBuffer((__gm__ half*)b, K * N);
    cg.SetGlobalBuffer((__gm__ CT*)c + m0 * N, rows * N);
    LocalTensor<half> a1, b1, a2, b2;
    LocalTensor<float> co1;
    if constexpr (StaticTensors) {
        a1 = LocalTensor<half>(TPosition::A1, 0, rows * K);
        b1 = LocalTensor<half>(TPosition::B1, rows * K * sizeof(half), K * N);
        a2 = LocalTensor<half>(TPosition::A2, 0, rows * K);
        b2 = LocalTensor<half>(TPosition::B2, 0, K * N);
        co1 = LocalTensor<float>(TPosition::CO1, 0, rows * N);
    } else {
        LocalMemAllocator<Hardware::L1> l1;
        LocalMemAllocator<Hardware::L0A> l0a;
        LocalMemAllocator<Hardware::L0B> l0b;
        LocalMemAllocator<Hardware::L0C> l0c;
        a1 = l1.Alloc<TPosition::A1, half>(rows * K);
        b1 = l1.Alloc<TPosition::B1, half>(K * N);
        a2 = l0a.Alloc<TPosition::A2, half>(rows * K);
        b2 = l0b.Alloc<TPosition::B2, half>(K * N);
        co1 = l0c.Alloc<TPosition::CO1, float>(rows * N);
    }
    // ND -> NZ: column block j of row r at (j * nValue + r) 16-element blocks
    DataCopy(a1, ag, Nd2NzParams{1, static_cast<uint16_t>(rows), static_cast<uint16_t>(K), 0,
                                 static_cast<uint16_t>(K), static_cast<uint16_t>(rows), 1, 0});
    DataCopy(b1, bg, Nd2NzParams{1, static_cast<uint16_t>(K), static_cast<uint16_t>(N), 0,
                                 static_cast<uint16_t>(N), static_cast<uint16_t>(K), 1, 0});
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    for (uint32_t i = 0; i < rows / CUBE; ++i) {   // A: one row block of fractals per load
        LoadData(a2[i * K * CUBE], a1[i * CUBE * CUBE],
                 LoadData2DParams{0, static_cast<uint8_t>(K / CUBE), static_cast<uint16_t>(rows / CUBE), 0, 0,
                                  false, 0});
    }
    for (uint32_t i = 0; i < K / CUBE; ++i) {      // B: fractals transposed
        LoadData(b2[i * N * CUBE], b1[i * CUBE * CUBE],
                 LoadData2DParams{0, static_cast<uint8_t>(N / CUBE), static_cast<uint16_t>(K / CUBE), 0, 0, true, 0});
    }
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    MmadParams mp{static_cast<uint16_t>(rows), static_cast<uint16_t>(N), static_cast<uint16_t>(K), 0, false, true};
    Mmad(co1, a2, b2, mp);
    if constexpr (Twice) {   // cmatrixInitVal = false accumulates onto L0C: C = 2 A B
        mp.cmatrixInitVal = false;
        Mmad(co1, a2, b2, mp);
    }
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    if constexpr (Nz) {   // NZ output: 16-column groups of M rows, M * 16 elements apart (in 32-byte blocks)
        GlobalTensor<CT> cz;
        cz.SetGlobalBuffer((__gm__ CT*)c + m0 * 16, M * N - m0 * 16);
        Fixpipe<CT, float, CFG_NZ>(cz, co1, FixpipeParamsV220{static_cast<uint16_t>(N), static_cast<uint16_t>(rows),
                                                              static_cast<uint16_t>(rows),
                                                              static_cast<uint32_t>(M * 16 * sizeof(CT) / 32), Relu,
                                                              Q, 0, 1, 0, 0, 0});
    } else {
        Fixpipe(cg, co1, FixpipeParamsV220{static_cast<uint16_t>(N), static_cast<uint16_t>(rows),
                                           static_cast<uint16_t>(rows), N, Relu, Q, 0, 1, 0, 0, 0});
    }
}

extern "C" __global__ __aicore__ void cube_nz_out(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR d)
{
    CubeMatmul<float, QuantMode_t::NoQuant, false, false, false, true>(a, b, c, d);
}

extern "C" __global__ __aicore__ void cube_half(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR d)
{
    CubeMatmul<half, QuantMode_t::F322F16, false, false>(a, b, c, d);
}
extern "C" __global__ __aicore__ void cube_float_relu_static(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR d)
{
    CubeMatmul<float, QuantMode_t::NoQuant, true, true, true>(a, b, c, d);
}

// GEMV (m = 1): A is one row of K halves, contiguous in L1 and L0A (K a multiple of 256); c = a x b
// in float (dims M = 1, K, N).
extern "C" __global__ __aicore__ void cube_gemv(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR dims)
{
    auto d = reinterpret_cast<__gm__ uint32_t*>(dims);
    uint32_t K = d[1], N = d[2];
    GlobalTensor<half> ag, bg;
    GlobalTensor<float> cg;
    ag.SetGlobalBuffer((__gm__ half*)a, K);
    bg.SetGlobalBuffer((__gm__ half*)b, K * N);
    cg.SetGlobalBuffer((__gm__ float*)c, N);
    LocalTensor<half> a1(TPosition::A1, 0, K), b1(TPosition::B1, K * sizeof(half), K * N);
    LocalTensor<half> a2(TPosition::A2, 0, K), b2(TPosition::B2, 0, K * N);
    LocalTensor<float> co1(TPosition::CO1, 0, 16 * N);
    DataCopy(a1, ag, K);   // GM -> L1, contiguous
    DataCopy(b1, bg, Nd2NzParams{1, static_cast<uint16_t>(K), static_cast<uint16_t>(N), 0,
                                 static_cast<uint16_t>(N), static_cast<uint16_t>(K), 1, 0});
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    LoadData(a2, a1, LoadData2DParams{0, static_cast<uint8_t>(K / 256), 1, 0, 0, false, 0});   // the row as 16 x 16
    for (uint32_t i = 0; i < K / CUBE; ++i) {
        LoadData(b2[i * N * CUBE], b1[i * CUBE * CUBE],
                 LoadData2DParams{0, static_cast<uint8_t>(N / CUBE), static_cast<uint16_t>(K / CUBE), 0, 0, true, 0});
    }
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    Mmad(co1, a2, b2, MmadParams{1, static_cast<uint16_t>(N), static_cast<uint16_t>(K), 0, false, true});
    SetFixPipeConfig<float>(co1, true);   // clears the unit flags (A2/A3 only)
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    Fixpipe(cg, co1, FixpipeParamsV220{static_cast<uint16_t>(N), 1, 16, N, false, QuantMode_t::NoQuant, 0, 1, 0, 0,
                                       0});
}

// L1 round trip (dims: M = 1, K, N unused): c[0:K] = 3 (Fill on L1, 32-byte blocks), c[K:2K] = a
// (GM -> L1 -> GM); dims[3] = 1 asks Mmad for isBias (not modelled: refused).
extern "C" __global__ __aicore__ void cube_l1_roundtrip(GM_ADDR a, GM_ADDR, GM_ADDR c, GM_ADDR dims)
{
    auto d = reinterpret_cast<__gm__ uint32_t*>(dims);
    uint32_t K = d[1];
    GlobalTensor<half> ag, cg;
    ag.SetGlobalBuffer((__gm__ half*)a, K);
    cg.SetGlobalBuffer((__gm__ half*)c, 2 * K);
    LocalTensor<half> a1(TPosition::A1, 0, 2 * K);
    Fill(a1, InitConstValueParams<half>(1, static_cast<uint16_t>(K * sizeof(half) / 32), 0, static_cast<half>(3)));
    DataCopy(a1[K], ag, K);
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    DataCopy(cg, a1, 2 * K);
    if (d[3] == 1) {
        LocalTensor<half> a2(TPosition::A2, 0, 256), b2(TPosition::B2, 0, 256);
        LocalTensor<float> co1(TPosition::CO1, 0, 256);
        Fill(a2, InitConstValueParams<half>(1, 1, 0, static_cast<half>(1)));
        Fill(b2, InitConstValueParams<half>(1, 1, 0, static_cast<half>(1)));
        MmadParams mp{16, 16, 16, 0, false, true};
        mp.isBias = true;
        Mmad(co1, a2, b2, mp);
    }
}

// Broken on purpose: Mmad reads an L0B tensor nothing was loaded into.
extern "C" __global__ __aicore__ void cube_unloaded_b(GM_ADDR a, GM_ADDR, GM_ADDR, GM_ADDR)
{
    GlobalTensor<half> ag;
    ag.SetGlobalBuffer((__gm__ half*)a, 16 * 16);
    LocalTensor<half> a1(TPosition::A1, 0, 256), a2(TPosition::A2, 0, 256), b2(TPosition::B2, 0, 256);
    LocalTensor<float> co1(TPosition::CO1, 0, 256);
    DataCopy(a1, ag, Nd2NzParams{1, 16, 16, 0, 16, 16, 1, 0});
    LoadData(a2, a1, LoadData2DParams{0, 1, 1, 0, 0, false, 0});
    Mmad(co1, a2, b2, MmadParams{16, 16, 16, 0, false, true});
}

// Broken on purpose: a static tensor at an address that is not 32-byte aligned.
extern "C" __global__ __aicore__ void cube_misaligned(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR)
{
    LocalTensor<half> a1(TPosition::A1, 48, 256);
    (void)a1;
}

#define CUBE_ENTRY(name, mode)                                                  \
    extern "C" int fusedsl_launch_##name(uint32_t blockDim, uint8_t** args) {   \
        AscendC::SetKernelMode(KernelMode::mode);                               \
        return fusedsl_cpu::Launch(name, blockDim, args[0], args[1], args[2], args[3]); \
    }
CUBE_ENTRY(cube_half, AIC_MODE)
CUBE_ENTRY(cube_float_relu_static, AIC_MODE)
CUBE_ENTRY(cube_unloaded_b, AIC_MODE)
CUBE_ENTRY(cube_misaligned, AIC_MODE)
CUBE_ENTRY(cube_gemv, AIC_MODE)
CUBE_ENTRY(cube_nz_out, AIC_MODE)
CUBE_ENTRY(cube_l1_roundtrip, AIC_MODE)
extern "C" int fusedsl_launch_cube_half_in_aiv(uint32_t blockDim, uint8_t** args) {
    AscendC::SetKernelMode(KernelMode::AIV_MODE);
    return fusedsl_cpu::Launch(cube_half, blockDim, args[0], args[1], args[2], args[3]);
}

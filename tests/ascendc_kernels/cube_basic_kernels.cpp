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

template <typename CT, QuantMode_t Q, bool Relu, bool StaticTensors, bool Twice = false, bool Nz = false,
          bool Queues = false>
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
    // Queues: TPipe-planned TQue on A1/B1 (L1), A2 (L0A), B2 (L0B) and CO1 (L0C), as CANN's MmadInvocation
    TPipe pipe;
    TQue<TPosition::A1, 1> qa1;
    TQue<TPosition::B1, 1> qb1;
    TQue<TPosition::A2, 1> qa2;
    TQue<TPosition::B2, 1> qb2;
    TQue<TPosition::CO1, 1> qc1;
    if constexpr (Queues) {
        pipe.InitBuffer(qa1, 1, rows * K * sizeof(half));
        pipe.InitBuffer(qb1, 1, K * N * sizeof(half));
        pipe.InitBuffer(qa2, 1, rows * K * sizeof(half));
        pipe.InitBuffer(qb2, 1, K * N * sizeof(half));
        pipe.InitBuffer(qc1, 1, rows * N * sizeof(float));
        a1 = qa1.template AllocTensor<half>();
        b1 = qb1.template AllocTensor<half>();
        a2 = qa2.template AllocTensor<half>();
        b2 = qb2.template AllocTensor<half>();
        co1 = qc1.template AllocTensor<float>();
    } else if constexpr (StaticTensors) {
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
    if constexpr (Queues) {   // the queue protocol the sample follows between stages
        qa1.EnQue(a1);
        qb1.EnQue(b1);
        a1 = qa1.template DeQue<half>();
        b1 = qb1.template DeQue<half>();
    }
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
    if constexpr (Queues) {
        qa1.FreeTensor(a1);
        qb1.FreeTensor(b1);
        qa2.FreeTensor(a2);
        qb2.FreeTensor(b2);
        qc1.EnQue(co1);
        co1 = qc1.template DeQue<float>();
    }
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
    if constexpr (Queues) {
        qc1.FreeTensor(co1);
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
// (GM -> L1 -> GM); dims[3] = 1 asks Mmad for a feature-map offset (not modelled: refused).
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
        mp.fmOffset = 1;
        Mmad(co1, a2, b2, mp);
    }
}

// C (16 x 16 float) = ones(16 x 16) x ones(16 x 16) + bias (16 floats in GM), C initialised from the bias
// table by the bias-less Mmad (dims[3] = mode):
//   0: bias at BT 0, isBias with cmatrixInitVal left true (CANN clears cmatrixInitVal for isBias);
//   1: bias at BT 128, cmatrixSource without a bias tensor: the instruction reads BT 0, never written (refused);
//   2: bias at BT 128 passed as the bias tensor (C = bias + 16).
extern "C" __global__ __aicore__ void cube_bias_table_mode(GM_ADDR bias, GM_ADDR, GM_ADDR c, GM_ADDR dims)
{
    const uint32_t mode = reinterpret_cast<__gm__ uint32_t*>(dims)[3];
    GlobalTensor<float> biasg, cg;
    biasg.SetGlobalBuffer((__gm__ float*)bias, 16);
    cg.SetGlobalBuffer((__gm__ float*)c, 256);
    LocalTensor<float> bias1(TPosition::C1, 0, 16);
    LocalTensor<float> bt(TPosition::C2, mode == 0 ? 0 : 128, 16);
    LocalTensor<half> a2(TPosition::A2, 0, 256), b2(TPosition::B2, 0, 256);
    LocalTensor<float> co1(TPosition::CO1, 0, 256);
    DataCopy(bias1, biasg, 16);
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    DataCopy(bt, bias1, DataCopyParams{1, 1, 0, 0});
    Fill(a2, InitConstValueParams<half>(1, 1, 0, static_cast<half>(1)));
    Fill(b2, InitConstValueParams<half>(1, 1, 0, static_cast<half>(1)));
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    MmadParams mp{16, 16, 16, 0, true, mode == 0};
    mp.isBias = mode == 0;
    if (mode == 2) {
        Mmad(co1, a2, b2, bt, mp);
    } else {
        Mmad(co1, a2, b2, mp);   // LINE:bias_source
    }
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    Fixpipe(cg, co1, FixpipeParamsV220{16, 16, 16, 16, false, QuantMode_t::NoQuant, 0, 1, 0, 0, 0});
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

// LoadData (卷积数据搬运) v2 into both L0 buffers, checked through Mmad: a is an NC1HWC0 feature map
// unfolded into A (L0A), or with mode 1 A^T stored as a [1 x K x M] map and loaded with enTranspose;
// b is B stored as a [1 x K x N] map (L0B, the load transposes); c = A x B, M x N float.
// mode 2: as 0 but only the first half of the map is copied into L1 (the Mmad then reads unfolded
// bytes nothing wrote); mode 3: as 0 but C goes through L1 (Fixpipe L0C->L1, NZ, as half) and
// DataCopy L1->GM, so c holds the NZ half matrix; mode 4: as 0 but the Mmad runs twice into two L0C
// matrices and one Fixpipe with ndNum = 2 writes both, c = [C; C] (2M x N).
// dims = {mode, C1, H, W, Kh, Kw, strideH, strideW, dilationH, dilationW, padL, padR, padT, padB,
//         mStartPt, kStartPt, mExtension, kExtension (of the A load), N, M, K (of the Mmad),
//         kDirectionAlign (of the Mmad)}.
template <typename T>
void Load3dMatmul(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR dims)
{
    auto d = reinterpret_cast<__gm__ uint32_t*>(dims);
    constexpr uint32_t c0 = 32 / sizeof(T);
    const uint32_t n = d[18], m = d[19], k = d[20];
    const uint32_t mapElems = d[1] * d[2] * d[3] * c0;
    const uint32_t round16 = 16 * ((d[16] + 15) / 16) * 16 * ((d[17] + 15) / 16);
    GlobalTensor<T> ag, bg;
    GlobalTensor<float> cg;
    ag.SetGlobalBuffer((__gm__ T*)a, mapElems);
    bg.SetGlobalBuffer((__gm__ T*)b, k * n);
    const uint32_t copies = d[0] == 4 ? 2 : 1;
    cg.SetGlobalBuffer((__gm__ float*)c, copies * m * n);
    LocalMemAllocator<Hardware::L1> l1;
    LocalMemAllocator<Hardware::L0A> l0a;
    LocalMemAllocator<Hardware::L0B> l0b;
    LocalMemAllocator<Hardware::L0C> l0c;
    auto a1 = l1.Alloc<TPosition::A1, T>(mapElems);
    auto b1 = l1.Alloc<TPosition::B1, T>(k * n);
    auto a2 = l0a.Alloc<TPosition::A2, T>(round16);
    // B's L0B tensor: K x N rounded to 16 x C0 only, as CANN's mmad_load3dv2 sizes it (the float layout
    // rounds N to 16: the load then warns that it writes past the tensor)
    auto b2 = l0b.Alloc<TPosition::B2, T>(16 * ((k + 15) / 16) * c0 * ((n + c0 - 1) / c0));
    const uint32_t cElems = 16 * ((m + 15) / 16) * 16 * ((n + 15) / 16);
    auto co1 = l0c.Alloc<TPosition::CO1, float>(copies * cElems);
    DataCopy(a1, ag, d[0] == 2 ? mapElems / 2 : mapElems);
    DataCopy(b1, bg, k * n);
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    LoadData3DParamsV2<T> pa;
    pa.l1H = d[2];
    pa.l1W = d[3];
    pa.channelSize = d[1] * c0;
    pa.filterH = d[4];
    pa.filterW = d[5];
    pa.strideH = d[6];
    pa.strideW = d[7];
    pa.dilationFilterH = d[8];
    pa.dilationFilterW = d[9];
    for (int i = 0; i < 4; ++i) {
        pa.padList[i] = d[10 + i];
    }
    pa.mStartPt = d[14];
    pa.kStartPt = d[15];
    pa.mExtension = d[16];
    pa.kExtension = d[17];
    pa.enTranspose = d[0] == 1;
    LoadData(a2, a1, pa);
    const uint8_t noPad[4] = {0, 0, 0, 0};   // B: 1 x K pixels of N channels, a 1 x 1 filter
    LoadData(b2, b1, LoadData3DParamsV2<T>(noPad, 1, k, n, n, k, 0, 0, 1, 1, 1, 1, 1, 1, false, false, T{}));
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    MmadParams mp{static_cast<uint16_t>(m), static_cast<uint16_t>(n), static_cast<uint16_t>(k), 0, false, true};
    mp.kDirectionAlign = d[21] != 0;
    Mmad(co1, a2, b2, mp);
    if (copies == 2) {
        Mmad(co1[cElems], a2, b2, mp);
    }
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    if (d[0] == 3) {
        auto c1 = l1.Alloc<TPosition::C1, half>(m * n);
        Fixpipe<half, float, CFG_NZ>(c1, co1, FixpipeParamsV220{static_cast<uint16_t>(n), static_cast<uint16_t>(m),
                                                               static_cast<uint16_t>(16 * ((m + 15) / 16)),
                                                               static_cast<uint32_t>(m * 16 * sizeof(half) / 32),
                                                               false, QuantMode_t::F322F16, 0, 1, 0, 0, 0});
        SetFlag<HardEvent::FIX_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::FIX_MTE3>(EVENT_ID0);
        GlobalTensor<half> ch;
        ch.SetGlobalBuffer((__gm__ half*)c, m * n);
        DataCopy(ch, c1, m * n);
        return;
    }
    Fixpipe(cg, co1, FixpipeParamsV220{static_cast<uint16_t>(n), static_cast<uint16_t>(m),
                                       static_cast<uint16_t>(16 * ((m + 15) / 16)), n, false,
                                       QuantMode_t::NoQuant, 0, static_cast<uint16_t>(copies),
                                       static_cast<uint16_t>(copies == 2 ? cElems / 256 : 0),
                                       static_cast<uint16_t>(copies == 2 ? m * n : 0), 0});
}

extern "C" __global__ __aicore__ void cube_load3d_half(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR d)
{
    Load3dMatmul<half>(a, b, c, d);
}
extern "C" __global__ __aicore__ void cube_load3d_float(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR d)
{
    Load3dMatmul<float>(a, b, c, d);
}

// Broken on purpose: an int8_t map unfolded into L0B, which the LoadData page excludes.
extern "C" __global__ __aicore__ void cube_load3d_int8_l0b(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR)
{
    LocalMemAllocator<Hardware::L1> l1;
    LocalMemAllocator<Hardware::L0B> l0b;
    auto b1 = l1.Alloc<TPosition::B1, int8_t>(1024);
    auto b2 = l0b.Alloc<TPosition::B2, int8_t>(1024);
    LoadData3DParamsV2<int8_t> p;
    p.l1H = 1;
    p.l1W = 32;
    p.channelSize = 32;
    p.mExtension = 32;
    p.kExtension = 32;
    LoadData(b2, b1, p);
}

// LoadDataWithTranspose (both operands), the bias table and C initialised from it:
// c = a_t^T x b + bias with a_t [TK, TM] and b [TK, TN] ND in GM (T = int8_t, half, float; bias and c
// in the accumulator type, the half case's bias half).  Each type puts its squares in L1 so the page's
// square (two 16 x 32 int8 fractals one above the other, one 16 x 16 half fractal, two 16 x 8 float
// fractals side by side) holds a block of the matrix: int8/half by one ND2NZ, float by one ND2NZ
// matrix per 16 rows so that column blocks j and j + 1 of a row group are adjacent.
constexpr uint32_t TM = 32, TK = 64, TN = 32;

template <typename T>
void TransposeToL1(const LocalTensor<T>& dst, const GlobalTensor<T>& src, uint32_t rows, uint32_t cols)
{
    if constexpr (sizeof(T) == 4) {
        DataCopy(dst, src, Nd2NzParams{static_cast<uint16_t>(rows / 16), 16, static_cast<uint16_t>(cols),
                                       static_cast<uint16_t>(16 * cols), static_cast<uint16_t>(cols), 16, 1,
                                       static_cast<uint16_t>(cols / 8 * 128)});
    } else {
        DataCopy(dst, src, Nd2NzParams{1, static_cast<uint16_t>(rows), static_cast<uint16_t>(cols), 0,
                                       static_cast<uint16_t>(cols), static_cast<uint16_t>(rows), 1, 0});
    }
}

// Out: 0 Fixpipe (Acc, ND); 1 DataCopy L0C -> GM, DEQF16 x 0.5 with ReLU, NZ2ND (half); 2 DataCopy L0C -> GM,
// REQ8 x 1/64, NZ (int8_t: groups of 32 columns, TM rows of 32 bytes each); 3 and 4 as 1 and 2 with a
// scale per column (VDEQF16 without ReLU, VREQ8 with it): TN uint64_t parameters after the TN biases in the
// bias buffer, moved GM -> L1 -> Fixpipe Buffer (the L1ToFixpipe-Buffer page: blockLen in 128 bytes) and named
// by SetFixPipeConfig.
template <typename T, typename Acc, typename BiasT, int Out = 0>
void CubeTranspose(GM_ADDR at, GM_ADDR b, GM_ADDR bias, GM_ADDR c)
{
    GlobalTensor<T> ag, bg;
    GlobalTensor<BiasT> biasg;
    GlobalTensor<Acc> cg;
    ag.SetGlobalBuffer((__gm__ T*)at, TK * TM);
    bg.SetGlobalBuffer((__gm__ T*)b, TK * TN);
    biasg.SetGlobalBuffer((__gm__ BiasT*)bias, TN);
    cg.SetGlobalBuffer((__gm__ Acc*)c, TM * TN);
    LocalTensor<T> a1(TPosition::A1, 0, TK * TM), b1(TPosition::B1, TK * TM * sizeof(T), TK * TN);
    LocalTensor<BiasT> bias1(TPosition::C1, 2 * TK * TM * sizeof(T), TN);
    LocalTensor<T> a2(TPosition::A2, 0, TM * TK), b2(TPosition::B2, 0, TK * TN);
    LocalTensor<Acc> co1(TPosition::CO1, 0, TM * TN);
    // the float case keeps its bias 128 bytes into the table (the bias form reads it where it is)
    LocalTensor<Acc> bt(TPosition::C2, sizeof(T) == 4 ? 128 : 0, TN);
    TransposeToL1(a1, ag, TK, TM);
    TransposeToL1(b1, bg, TK, TN);
    DataCopy(bias1, biasg, TN);
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    DataCopy(bt, bias1, DataCopyParams{1, static_cast<uint16_t>(TN * sizeof(BiasT) / 64), 0, 0});
    constexpr uint32_t F = 512 / sizeof(T);   // elements per fractal
    if constexpr (sizeof(T) == 1) {
        // A: square (j, q) = a_t rows 32q.., columns 32j.. -> L0A fractals (2j, q), (2j + 1, q): TK / 32 apart
        for (uint32_t j = 0; j < TM / 32; ++j) {
            LoadDataWithTranspose(a2[j * 2 * (TK / 32) * F], a1[j * (TK / 32) * 2 * F],
                                  LoadData2dTransposeParams{0, TK / 32, 1, 0, TK / 32 - 1, 0});
        }
        // B: square (j, q) -> L0B fractals (q, 2j), (q, 2j + 1); repeats TN / 16 fractals apart
        for (uint32_t j = 0; j < TN / 32; ++j) {
            LoadDataWithTranspose(b2[2 * j * F], b1[j * (TK / 32) * 2 * F],
                                  LoadData2dTransposeParams{0, TK / 32, 1, TN / 16 - 1, 0, 0});
        }
    } else if constexpr (sizeof(T) == 2) {
        // A: fractal (j, kb) of L1 is fractal (j, kb) of L0A once transposed
        LoadDataWithTranspose(a2, a1, LoadData2dTransposeParams{0, (TM / 16) * (TK / 16), 1, 0, 0, 0});
        for (uint32_t j = 0; j < TN / 16; ++j) {   // B: (j, kb) -> (kb, j)
            LoadDataWithTranspose(b2[j * F], b1[j * (TK / 16) * F],
                                  LoadData2dTransposeParams{0, TK / 16, 1, TN / 16 - 1, 0, 0});
        }
    } else {
        // A: square (kb, s) -> L0A fractals (s, 2kb), (s, 2kb + 1); B: -> L0B fractals (2kb, s), (2kb + 1, s)
        for (uint32_t s = 0; s < TM / 16; ++s) {
            LoadDataWithTranspose(a2[s * (TK / 8) * F], a1[s * 2 * F],
                                  LoadData2dTransposeParams{0, TK / 16, TM / 16, 1, 0, 0});
        }
        for (uint32_t s = 0; s < TN / 16; ++s) {
            LoadDataWithTranspose(b2[s * F], b1[s * 2 * F],
                                  LoadData2dTransposeParams{0, TK / 16, TN / 16, 2 * (TN / 16) - 1, TN / 16 - 1, 0});
        }
    }
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    MmadParams mp{TM, TN, TK, 0, false, false};
    if constexpr (sizeof(T) == 1) {
        mp.cmatrixSource = true;   // C starts from the bias at the start of the table
        Mmad(co1, a2, b2, mp);
    } else {
        Mmad(co1, a2, b2, bt, mp);
    }
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    if constexpr (Out == 0) {
        Fixpipe(cg, co1, FixpipeParamsV220{TN, TM, TM, TN, false, QuantMode_t::NoQuant, 0, 1, 0, 0, 0});
    } else if constexpr (Out == 1) {
        GlobalTensor<half> hg;
        hg.SetGlobalBuffer((__gm__ half*)c, TM * TN);
        SetFixpipePreQuantFlag(0x3F000000ull);   // 0.5
        SetFixpipeNz2ndFlag(1, 0, 0);
        DataCopy(hg, co1, DataCopyCO12DstParams{TN, TM, TN, TM, QuantMode_t::DEQF16, 1, false, true});
    } else if constexpr (Out == 2) {
        GlobalTensor<int8_t> qg;
        qg.SetGlobalBuffer((__gm__ int8_t*)c, TM * TN);
        SetFixpipePreQuantFlag(0x3C800000ull | (1ull << 46));   // 1/64, signed output
        DataCopy(qg, co1, DataCopyCO12DstParams{TN, TM, TM * 32 / 32, TM, QuantMode_t::REQ8, 0, false, false});
    } else {
        GlobalTensor<uint64_t> scaleg;
        scaleg.SetGlobalBuffer((__gm__ uint64_t*)(bias + TN * sizeof(BiasT)), TN);
        LocalTensor<uint64_t> scale1(TPosition::C1, 3 * TK * TM * sizeof(T), TN);
        LocalTensor<uint64_t> fb(TPosition::C2PIPE2GM, 0, TN);
        DataCopy(scale1, scaleg, TN);
        SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID1);
        WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID1);
        DataCopy(fb, scale1, DataCopyParams{1, static_cast<uint16_t>(TN * sizeof(uint64_t) / 128), 0, 0});
        if constexpr (Out != 5) {   // 5: the table is never named
            SetFixPipeConfig(fb);
        }
        if constexpr (Out == 3 || Out == 5) {
            GlobalTensor<half> hg;
            hg.SetGlobalBuffer((__gm__ half*)c, TM * TN);
            SetFixpipeNz2ndFlag(1, 0, 0);
            DataCopy(hg, co1, DataCopyCO12DstParams{TN, TM, TN, TM, QuantMode_t::VDEQF16, 0, false, true});  // LINE:vquant
        } else {
            GlobalTensor<int8_t> qg;
            qg.SetGlobalBuffer((__gm__ int8_t*)c, TM * TN);
            DataCopy(qg, co1, DataCopyCO12DstParams{TN, TM, TM * 32 / 32, TM, QuantMode_t::VREQ8, 1, false, false});
        }
    }
}

extern "C" __global__ __aicore__ void cube_transpose_int8(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c)
{
    CubeTranspose<int8_t, int32_t, int32_t>(a, b, bias, c);
}
extern "C" __global__ __aicore__ void cube_l0c2gm_deq(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c)
{
    CubeTranspose<int8_t, int32_t, int32_t, 1>(a, b, bias, c);
}
extern "C" __global__ __aicore__ void cube_l0c2gm_req(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c)
{
    CubeTranspose<int8_t, int32_t, int32_t, 2>(a, b, bias, c);
}
extern "C" __global__ __aicore__ void cube_l0c2gm_vdeq(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c)
{
    CubeTranspose<int8_t, int32_t, int32_t, 3>(a, b, bias, c);
}
extern "C" __global__ __aicore__ void cube_l0c2gm_vreq(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c)
{
    CubeTranspose<int8_t, int32_t, int32_t, 4>(a, b, bias, c);
}
extern "C" __global__ __aicore__ void cube_l0c2gm_vdeq_unset(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c)
{
    CubeTranspose<int8_t, int32_t, int32_t, 5>(a, b, bias, c);
}
extern "C" __global__ __aicore__ void cube_transpose_half(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c)
{
    CubeTranspose<half, float, half>(a, b, bias, c);
}
extern "C" __global__ __aicore__ void cube_transpose_float(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c)
{
    CubeTranspose<float, float, float>(a, b, bias, c);
}

// Broken on purpose: mode 0 puts the second fractal of repeat 0 where repeat 1 starts; mode 1 moves a
// half bias into an int32_t table.
extern "C" __global__ __aicore__ void cube_transpose_misuse(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR mode)
{
    LocalTensor<int8_t> a1(TPosition::A1, 0, 4096), a2(TPosition::A2, 0, 4096);
    if (*reinterpret_cast<__gm__ int32_t*>(mode) == 0) {
        LoadDataWithTranspose(a2, a1, LoadData2dTransposeParams{0, 2, 1, 0, 0, 0});   // LINE:overlap
    } else {
        LocalTensor<half> h1(TPosition::C1, 0, 64);
        LocalTensor<int32_t> bt(TPosition::C2, 0, 64);
        DataCopy(bt, h1, DataCopyParams{1, 1, 0, 0});
    }
}

// 310P's vector-side moves into and out of L0C: x (32 floats) -> UB; BroadCastVecToMM makes L0C fractal 0
// of 16 rows x[0:16] and fractal 2 of 16 rows x[16:32] (dstGap 1 leaves fractal 1 out); DataCopy L0C -> UB
// (BLOCK_MODE_MATRIX, ReLU, float -> half) takes fractals 0 and 2 (srcGap 1) into 512 contiguous halves.
extern "C" __global__ __aicore__ void cube_broadcast_vec(GM_ADDR x, GM_ADDR, GM_ADDR, GM_ADDR z)
{
    GlobalTensor<float> xg;
    GlobalTensor<half> zg;
    xg.SetGlobalBuffer((__gm__ float*)x, 32);
    zg.SetGlobalBuffer((__gm__ half*)z, 512);
    LocalTensor<float> src(TPosition::VECIN, 0, 32);
    LocalTensor<float> brc(TPosition::CO1, 0, 3 * 256);
    DataCopy(src, xg, 32);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    BroadCastVecToMM(brc, src, 2, 1, 0, 1);   // LINE:broadcast
    PipeBarrier<PIPE_V>();
    LocalTensor<half> out(TPosition::CO2, 1024, 512);   // UB on 310P
    DataCopyEnhancedParams e;
    e.blockMode = BlockMode::BLOCK_MODE_MATRIX;
    e.isRelu = true;
    DataCopy(out, brc, DataCopyParams{2, 1, 1, 0}, e);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(zg, out, 512);
}

// 4:2 sparse B: c (16 x 16 int32) = a (16 x 64 int8, ND) x B, where B comes as its dense half (32 x 16)
// and the 2-bit index, both already in Zn fractals in GM (the host lays them out), loaded with
// LoadDataWithSparse; MmadWithSparse picks A's K values by the index.
extern "C" __global__ __aicore__ void cube_sparse(GM_ADDR a, GM_ADDR b, GM_ADDR idx, GM_ADDR c)
{
    constexpr uint32_t SM = 16, SK = 64, SN = 16;
    GlobalTensor<int8_t> ag, bg;
    GlobalTensor<uint8_t> ig;
    GlobalTensor<int32_t> cg;
    ag.SetGlobalBuffer((__gm__ int8_t*)a, SM * SK);
    bg.SetGlobalBuffer((__gm__ int8_t*)b, SK / 2 * SN);
    ig.SetGlobalBuffer((__gm__ uint8_t*)idx, SK / 2 * SN / 4);
    cg.SetGlobalBuffer((__gm__ int32_t*)c, SM * SN);
    LocalTensor<int8_t> a1(TPosition::A1, 0, SM * SK), b1(TPosition::B1, 4096, SK / 2 * SN);
    LocalTensor<uint8_t> i1(TPosition::B1, 8192, SK / 2 * SN / 4);
    LocalTensor<int8_t> a2(TPosition::A2, 0, SM * SK), b2(TPosition::B2, 0, SK / 2 * SN);
    LocalTensor<int32_t> co1(TPosition::CO1, 0, SM * SN);
    DataCopy(a1, ag, Nd2NzParams{1, SM, SK, 0, SK, SM, 1, 0});
    DataCopy(b1, bg, SK / 2 * SN);
    DataCopy(i1, ig, SK / 2 * SN / 4);
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    LoadData(a2, a1, LoadData2DParams{0, SK / 32, SM / 16, 0, 0, false, 0});
    LoadDataWithSparse(b2, b1, i1, LoadData2DParams{0, SK / 2 * SN / 512, 0, 0, 0, false, 0});   // LINE:sparse_load
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    MmadWithSparse(co1, a2, b2, MmadParams{SM, SN, SK, false, 0, false, false, false});
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    Fixpipe(cg, co1, FixpipeParamsV220{SN, SM, SM, SN, false, QuantMode_t::NoQuant, 0, 1, 0, 0, 0});
}

extern "C" __global__ __aicore__ void cube_half_queues(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR d)
{
    CubeMatmul<half, QuantMode_t::F322F16, false, false, false, false, true>(a, b, c, d);
}

// Broken on purpose: two 40 KB buffers of a TQue on A2 do not fit the 64 KB of L0A.
extern "C" __global__ __aicore__ void cube_queue_overflow(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR)
{
    TPipe pipe;
    TQue<TPosition::A2, 2> qa2;
    pipe.InitBuffer(qa2, 2, 40 * 1024);   // LINE:queue_overflow
}

// Broken on purpose: a static tensor at an address that is not 32-byte aligned.
extern "C" __global__ __aicore__ void cube_misaligned(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR)
{
    LocalTensor<half> a1(TPosition::A1, 48, 256);
    (void)a1;
}

// The convolution load's registers (dims[0] = mode): A (32 x 32 half) unfolded into L0A by a
// LoadData3DParamsV2Pro load (the feature map from SetFmatrix: 32 x 1 pixels of 32 channels), B (32 x 32) into
// L0B by a v2 load that takes its feature map and pad value from the registers (its own l1H / l1W left 0), then
// C = A' x B in GM, A' being A as the load read it.  Mode 0 sets SetLoadDataBoundary(1024) for A's load: A's
// channels 16-31 (L1 bytes 1024-2047) are read from L1 bytes 0-1023 again, i.e. channels 0-15; mode 1 sets no
// boundary.  Mode 2 asks for a 512-byte boundary (refused), mode 3 loads B from the registers before any
// SetFmatrix (refused).
extern "C" __global__ __aicore__ void cube_load3d_registers(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR dims)
{
    constexpr uint16_t S = 32;
    const uint32_t mode = reinterpret_cast<__gm__ uint32_t*>(dims)[0];
    GlobalTensor<half> ag, bg;
    GlobalTensor<float> cg;
    ag.SetGlobalBuffer((__gm__ half*)a, S * S);
    bg.SetGlobalBuffer((__gm__ half*)b, S * S);
    cg.SetGlobalBuffer((__gm__ float*)c, S * S);
    LocalTensor<half> a1(TPosition::A1, 0, S * S), b1(TPosition::B1, S * S * sizeof(half), S * S);
    LocalTensor<half> a2(TPosition::A2, 0, S * S), b2(TPosition::B2, 0, S * S);
    LocalTensor<float> co1(TPosition::CO1, 0, S * S);
    DataCopy(a1, ag, Nd2NzParams{1, S, S, 0, S, S, 1, 0});
    DataCopy(b1, bg, Nd2NzParams{1, S, S, 0, S, S, 1, 0});
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    static constexpr IsResetLoad3dConfig kFromRegisters = {false, false};
    LoadData3DParamsV2<half> pb;   // l1H, l1W and the padding: the registers'
    pb.channelSize = S;
    pb.kExtension = S;
    pb.mExtension = S;
    if (mode == 3) {
        LoadData<half, kFromRegisters>(b2, b1, pb);   // LINE:load3d_no_fmatrix
    }
    const uint8_t noPad[4] = {0, 0, 0, 0};
    SetFmatrix(S, 1, noPad, FmatrixMode::FMATRIX_LEFT);
    SetLoadDataRepeat({0, 1, 0});
    SetLoadDataBoundary(mode == 0 ? 1024 : mode == 2 ? 512 : 0);   // LINE:load3d_boundary
    LoadData3DParamsV2Pro pa;
    pa.channelSize = S;
    pa.extConfig = (static_cast<uint64_t>(S) << 16) | S;
    LoadData(a2, a1, pa);
    SetLoadDataBoundary(0);
    SetLoadDataPaddingValue<half>(0);
    LoadData<half, kFromRegisters>(b2, b1, pb);
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    Mmad(co1, a2, b2, MmadParams{S, S, S, 0, false, true});
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    Fixpipe(cg, co1, FixpipeParamsV220(S, S, S, S, false));
}

#define CUBE_ENTRY(name, mode)                                                  \
    extern "C" int fusedsl_launch_##name(uint32_t blockDim, uint8_t** args) {   \
        AscendC::SetKernelMode(KernelMode::mode);                               \
        return fusedsl_cpu::Launch(name, blockDim, args[0], args[1], args[2], args[3]); \
    }
CUBE_ENTRY(cube_half, AIC_MODE)
CUBE_ENTRY(cube_half_queues, AIC_MODE)
CUBE_ENTRY(cube_queue_overflow, AIC_MODE)
CUBE_ENTRY(cube_float_relu_static, AIC_MODE)
CUBE_ENTRY(cube_unloaded_b, AIC_MODE)
CUBE_ENTRY(cube_misaligned, AIC_MODE)
CUBE_ENTRY(cube_gemv, AIC_MODE)
CUBE_ENTRY(cube_nz_out, AIC_MODE)
CUBE_ENTRY(cube_l1_roundtrip, AIC_MODE)
CUBE_ENTRY(cube_load3d_registers, AIC_MODE)
CUBE_ENTRY(cube_load3d_half, AIC_MODE)
CUBE_ENTRY(cube_load3d_float, AIC_MODE)
CUBE_ENTRY(cube_load3d_int8_l0b, AIC_MODE)
CUBE_ENTRY(cube_transpose_int8, AIC_MODE)
CUBE_ENTRY(cube_transpose_half, AIC_MODE)
CUBE_ENTRY(cube_transpose_float, AIC_MODE)
CUBE_ENTRY(cube_transpose_misuse, AIC_MODE)
CUBE_ENTRY(cube_l0c2gm_deq, AIC_MODE)
CUBE_ENTRY(cube_l0c2gm_req, AIC_MODE)
CUBE_ENTRY(cube_l0c2gm_vdeq, AIC_MODE)
CUBE_ENTRY(cube_l0c2gm_vreq, AIC_MODE)
CUBE_ENTRY(cube_l0c2gm_vdeq_unset, AIC_MODE)
CUBE_ENTRY(cube_broadcast_vec, AIV_MODE)
CUBE_ENTRY(cube_sparse, AIC_MODE)
CUBE_ENTRY(cube_bias_table_mode, AIC_MODE)
extern "C" int fusedsl_launch_cube_half_in_aiv(uint32_t blockDim, uint8_t** args) {
    AscendC::SetKernelMode(KernelMode::AIV_MODE);
    return fusedsl_cpu::Launch(cube_half, blockDim, args[0], args[1], args[2], args[3]);
}

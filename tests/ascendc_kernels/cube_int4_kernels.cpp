// int4b_t through the Ascend C API, written from the asc-devkit docs (LocalTensor, DataCopy,
// DataCopy with Nd2NzParams, LoadData 2D / 3D v2, LoadDataWithTranspose, Mmad, Fixpipe): a
// LocalTensor<int4b_t> counts 4-bit elements (GetSize, operator[], DataCopy counts, Mmad's m/n/k),
// two to a byte, element 2i in the low nibble.
#include "tikicpulib.h"

using namespace AscendC;

// c (M x N int32, ND) = a (M x K int4, ND) x b, on the cube core of an Atlas A2.
//   mode 0: b given as B^T (N x K, ND); Nd2Nz into L1, LoadData 2D into L0A and L0B.
//   mode 1: b given as B (K x N, ND); A through Load3D v2 (1 x 1 filter: the NZ map is copied into
//           Zz), B through LoadDataWithTranspose (four 16 x 64 fractals make a 64 x 64 square).
//   mode 2: mode 0 with an odd k in MmadParams (refused: CANN's Mmad wants an even k for int4b_t).
constexpr uint32_t M = 32, K = 128, N = 64;
constexpr uint32_t M1 = M / 16, N1 = N / 16, K1 = K / 64;   // fractal counts (int4 fractal: 16 x 64)
constexpr uint32_t F = 16 * 64;                             // int4b_t elements per 512-byte fractal

template <int Mode>
void CubeInt4(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR probe)
{
    GlobalTensor<int4b_t> ag, bg;
    GlobalTensor<int32_t> cg, pg;
    ag.SetGlobalBuffer((__gm__ int4b_t*)a, M * K);
    bg.SetGlobalBuffer((__gm__ int4b_t*)b, K * N);
    cg.SetGlobalBuffer((__gm__ int32_t*)c, M * N);
    pg.SetGlobalBuffer((__gm__ int32_t*)probe, 8);
    LocalTensor<int4b_t> a1(TPosition::A1, 0, M * K), b1(TPosition::B1, M * K / 2, K * N);
    LocalTensor<int4b_t> a2(TPosition::A2, 0, M * K), b2(TPosition::B2, 0, K * N);
    LocalTensor<int32_t> co1(TPosition::CO1, 0, M * N);
    // sizes are in elements, lengths in bytes; a view moves half a byte per element
    pg.SetValue(0, static_cast<int32_t>(a1.GetSize()));
    pg.SetValue(1, static_cast<int32_t>(a1.GetLength()));
    pg.SetValue(2, static_cast<int32_t>(a1[F].GetSize()));
    pg.SetValue(3, static_cast<int32_t>(a1[F].GetPhyAddr()));
    pg.SetValue(4, static_cast<int32_t>(b1.ReinterpretCast<int8_t>().GetSize()));
    pg.SetValue(5, static_cast<int32_t>(a1.ReinterpretCast<int8_t>().ReinterpretCast<int4b_t>().GetSize()));
    pg.SetValue(6, static_cast<int32_t>(ag[64].GetPhyAddr() - ag.GetPhyAddr()));
    // Nd2Nz moves int4b_t as int8_t: the column counts are bytes (K / 2 values of a row of A)
    DataCopy(a1, ag, Nd2NzParams{1, M, K / 2, 0, K / 2, M, 1, 0});
    if constexpr (Mode == 1) {
        DataCopy(b1, bg, Nd2NzParams{1, K, N / 2, 0, N / 2, K, 1, 0});
    } else {
        DataCopy(b1, bg, Nd2NzParams{1, N, K / 2, 0, K / 2, N, 1, 0});
    }
    SetFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE1>(EVENT_ID0);
    if constexpr (Mode == 1) {
        LoadData3DParamsV2<int4b_t> p;
        p.l1H = 1;
        p.l1W = M;
        p.channelSize = K;
        p.kExtension = K;
        p.mExtension = M;
        LoadData(a2, a1, p);
        // square (nb, ks) of L1 (fractals nb * K / 16 + 4 ks ..) -> L0B fractals (ks, 4 nb + j)
        for (uint32_t ks = 0; ks < K / 64; ++ks) {
            LoadDataWithTranspose(b2[ks * N1 * F], b1[ks * 4 * F],
                                  LoadData2dTransposeParams{0, N / 64, K / 64, 3, 0, 0});
        }
    } else {
        for (uint32_t mb = 0; mb < M1; ++mb) {   // L1 NZ fractal (kb, mb) -> L0A Zz fractal (mb, kb)
            LoadData(a2[mb * K1 * F], a1[mb * F], LoadData2DParams{0, K1, M1, 0, 0, false, 0});
        }
        // B^T's NZ fractal order (kb, nb) is L0B's Zn order already
        LoadData(b2, b1, LoadData2DParams{0, K1 * N1, 1, 0, 0, false, 0});
    }
    SetFlag<HardEvent::MTE1_M>(EVENT_ID0);
    WaitFlag<HardEvent::MTE1_M>(EVENT_ID0);
    const uint16_t k = Mode == 2 ? K - 1 : K;
    Mmad(co1, a2, b2, MmadParams{M, N, k, 0, false, true});   // LINE:odd_k
    SetFlag<HardEvent::M_FIX>(EVENT_ID0);
    WaitFlag<HardEvent::M_FIX>(EVENT_ID0);
    Fixpipe(cg, co1, FixpipeParamsV220{N, M, M, N, false, QuantMode_t::NoQuant, 0, 1, 0, 0, 0});
}

extern "C" __global__ __aicore__ void int4_mmad_load2d(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR probe)
{
    CubeInt4<0>(a, b, c, probe);
}
extern "C" __global__ __aicore__ void int4_mmad_load3d_transpose(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR probe)
{
    CubeInt4<1>(a, b, c, probe);
}
extern "C" __global__ __aicore__ void int4_mmad_odd_k(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR probe)
{
    CubeInt4<2>(a, b, c, probe);
}

// On a vector core: DataCopy GM -> UB -> GM of `count` int4b_t elements (count / 2 bytes), with
// GetValue / SetValue reading and writing single nibbles in between: out = x with element 3 set to
// -5 and element 4 set to element 1 + element 2; probe[0..2] = elements 0, 1, 7 read as int.
constexpr uint32_t VN = 256;

extern "C" __global__ __aicore__ void int4_ub_roundtrip(GM_ADDR x, GM_ADDR out, GM_ADDR probe, GM_ADDR)
{
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, VN / 2);
    GlobalTensor<int4b_t> xg, og;
    GlobalTensor<int32_t> pg;
    xg.SetGlobalBuffer((__gm__ int4b_t*)x, VN);
    og.SetGlobalBuffer((__gm__ int4b_t*)out, VN);
    pg.SetGlobalBuffer((__gm__ int32_t*)probe, 8);
    LocalTensor<int4b_t> t = q.AllocTensor<int4b_t>();
    pg.SetValue(3, static_cast<int32_t>(t.GetSize()));
    DataCopy(t, xg, VN);
    q.EnQue(t);
    t = q.DeQue<int4b_t>();
    pg.SetValue(0, static_cast<int>(t.GetValue(0)));
    pg.SetValue(1, static_cast<int>(t.GetValue(1)));
    pg.SetValue(2, static_cast<int>(t.GetValue(7)));
    t.SetValue(3, int4b_t(-5));
    t.SetValue(4, int4b_t(static_cast<int>(t.GetValue(1)) + static_cast<int>(t.GetValue(2))));
    pg.SetValue(4, static_cast<int32_t>(xg.GetValue(5)));
    q.EnQue(t);
    t = q.DeQue<int4b_t>();
    DataCopy(og, t, VN);
    q.FreeTensor(t);
}

// Broken on purpose: an int4b_t view at an odd element starts in the middle of a byte.
extern "C" __global__ __aicore__ void int4_odd_view(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR)
{
    LocalTensor<int4b_t> a1(TPosition::A1, 0, 256);
    (void)a1[3];
}

#define INT4_ENTRY(name, mode)                                                  \
    extern "C" int fusedsl_launch_##name(uint32_t blockDim, uint8_t** args) {   \
        AscendC::SetKernelMode(KernelMode::mode);                               \
        return fusedsl_cpu::Launch(name, blockDim, args[0], args[1], args[2], args[3]); \
    }
INT4_ENTRY(int4_mmad_load2d, AIC_MODE)
INT4_ENTRY(int4_mmad_load3d_transpose, AIC_MODE)
INT4_ENTRY(int4_mmad_odd_k, AIC_MODE)
INT4_ENTRY(int4_ub_roundtrip, AIV_MODE)
INT4_ENTRY(int4_odd_view, AIC_MODE)

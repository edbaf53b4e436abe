// Single-block kernels that run one vector API on GM inputs and store the results, so the
// Python tests can compare each API with numpy.
#include "kernel_operator.h"

using namespace AscendC;

constexpr uint32_t N = 1024;

template <typename T>
__aicore__ inline LocalTensor<T> LoadTile(TBuf<TPosition::VECCALC>& buf, GM_ADDR src, uint32_t n) {
    GlobalTensor<T> g;
    g.SetGlobalBuffer((__gm__ T*)src, n);
    LocalTensor<T> t = buf.Get<T>();
    DataCopy(t, g, n);
    // TBuf memory has no queue protocol: the vector pipe waits for the DMA explicitly.
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    return t;
}

template <typename T>
__aicore__ inline void StoreTile(GM_ADDR dst, const LocalTensor<T>& t, uint32_t n) {
    GlobalTensor<T> g;
    g.SetGlobalBuffer((__gm__ T*)dst, n);
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(g, t, n);
}

// ---- Cast: src (N of U) -> dst (N of T) ---------------------------------------------------
template <typename T, typename U, RoundMode M>
__global__ __aicore__ void CastKernel(GM_ADDR src, GM_ADDR dst) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    pipe.InitBuffer(a, N * sizeof(U));
    pipe.InitBuffer(b, N * sizeof(T));
    LocalTensor<U> s = LoadTile<U>(a, src, N);
    LocalTensor<T> d = b.Get<T>();
    Cast(d, s, M, N);
    StoreTile(dst, d, N);
}

#define CAST(NAME, T, U, M)                                                            \
    extern "C" int fusedsl_launch_cast_##NAME##_##M(uint32_t blockDim, uint8_t** a) { \
        return fusedsl_cpu::Launch(CastKernel<T, U, RoundMode::CAST_##M>, blockDim, a[0], a[1]); \
    }
#define CAST_INT_MODES(NAME, T, U) \
    CAST(NAME, T, U, RINT) CAST(NAME, T, U, FLOOR) CAST(NAME, T, U, CEIL) CAST(NAME, T, U, ROUND) CAST(NAME, T, U, TRUNC)

CAST_INT_MODES(float_half, half, float)
CAST(float_half, half, float, NONE)
CAST(float_half, half, float, ODD)
CAST_INT_MODES(float_bfloat16, bfloat16_t, float)
CAST_INT_MODES(float_int32, int32_t, float)
CAST_INT_MODES(half_int32, int32_t, half)
CAST_INT_MODES(float_float, float, float)
CAST_INT_MODES(half_int8, int8_t, half)
CAST(half_int8, int8_t, half, NONE)
CAST(half_float, float, half, NONE)
CAST(bfloat16_float, float, bfloat16_t, NONE)
CAST(int32_float, float, int32_t, NONE)
CAST(int32_float, float, int32_t, RINT)
CAST(uint8_half, half, uint8_t, NONE)

// ---- Compare + Select (tensor/tensor), Compares + Select (tensor/scalar) ------------------
template <CMPMODE M>
__global__ __aicore__ void CmpSel(GM_ADDR a, GM_ADDR b, GM_ADDR mask, GM_ADDR sel) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bb, bm, bs;
    pipe.InitBuffer(ba, N * sizeof(float));
    pipe.InitBuffer(bb, N * sizeof(float));
    pipe.InitBuffer(bm, N / 8);
    pipe.InitBuffer(bs, N * sizeof(float));
    LocalTensor<float> x = LoadTile<float>(ba, a, N);
    LocalTensor<float> y = LoadTile<float>(bb, b, N);
    LocalTensor<uint8_t> m = bm.Get<uint8_t>();
    LocalTensor<float> s = bs.Get<float>();
    Compare(m, x, y, M, N);
    Select(s, m, x, y, SELMODE::VSEL_TENSOR_TENSOR_MODE, N);
    StoreTile(mask, m, N / 8);
    StoreTile(sel, s, N);
}

template <CMPMODE M>
__global__ __aicore__ void CmpsSel(GM_ADDR a, GM_ADDR, GM_ADDR mask, GM_ADDR sel) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bm, bs;
    pipe.InitBuffer(ba, N * sizeof(half));
    pipe.InitBuffer(bm, N / 8);
    pipe.InitBuffer(bs, N * sizeof(half));
    LocalTensor<half> x = LoadTile<half>(ba, a, N);
    LocalTensor<uint8_t> m = bm.Get<uint8_t>();
    LocalTensor<half> s = bs.Get<half>();
    Compares(m, x, static_cast<half>(0.25f), M, N);
    Select(s, m, x, static_cast<half>(-1.0f), SELMODE::VSEL_TENSOR_SCALAR_MODE, N);
    StoreTile(mask, m, N / 8);
    StoreTile(sel, s, N);
}

#define CMP(M)                                                                                     \
    extern "C" int fusedsl_launch_cmpsel_##M(uint32_t blockDim, uint8_t** a) {                     \
        return fusedsl_cpu::Launch(CmpSel<CMPMODE::M>, blockDim, a[0], a[1], a[2], a[3]);          \
    }                                                                                              \
    extern "C" int fusedsl_launch_cmpssel_##M(uint32_t blockDim, uint8_t** a) {                    \
        return fusedsl_cpu::Launch(CmpsSel<CMPMODE::M>, blockDim, a[0], a[1], a[2], a[3]);         \
    }
CMP(LT) CMP(GT) CMP(EQ) CMP(LE) CMP(GE) CMP(NE)

// ---- mask/repeat form: Add with strides, Muls with a bitwise mask -------------------------
// a, b: 1024 floats; out: 1024 floats pre-filled with -7 so untouched lanes show.
extern "C" __global__ __aicore__ void mask_forms(GM_ADDR a, GM_ADDR b, GM_ADDR out1, GM_ADDR out2) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bb, bo1, bo2;
    pipe.InitBuffer(ba, N * sizeof(float));
    pipe.InitBuffer(bb, N * sizeof(float));
    pipe.InitBuffer(bo1, N * sizeof(float));
    pipe.InitBuffer(bo2, N * sizeof(float));
    LocalTensor<float> x = LoadTile<float>(ba, a, N);
    LocalTensor<float> y = LoadTile<float>(bb, b, N);
    LocalTensor<float> o1 = bo1.Get<float>();
    LocalTensor<float> o2 = bo2.Get<float>();
    Duplicate(o1, -7.0f, N);
    Duplicate(o2, -7.0f, N);
    BinaryRepeatParams bp;
    bp.src0BlkStride = 2;
    bp.src0RepStride = 16;
    bp.dstRepStride = 10;
    Add(o1, x, y, 40, 3, bp);
    uint64_t bits[2] = {0xF0F0F0F0F0F0F0F0ull, 0};
    Muls(o2, x, 3.0f, bits, 4, UnaryRepeatParams{1, 1, 8, 8});
    StoreTile(out1, o1, N);
    StoreTile(out2, o2, N);
}
extern "C" int fusedsl_launch_mask_forms(uint32_t blockDim, uint8_t** a) {
    return fusedsl_cpu::Launch(mask_forms, blockDim, a[0], a[1], a[2], a[3]);
}

// ---- reductions and Brcb ------------------------------------------------------------------
// src: 512 floats.  out: 64 floats = [WholeReduceSum x8 | WholeReduceMax (value, index) x8 |
// ReduceSum | ReduceMax value, index | ReduceMin value, index], each group 32-B aligned.
// brcb: 128 floats, Brcb of src[0:16].
extern "C" __global__ __aicore__ void reductions(GM_ADDR src, GM_ADDR out, GM_ADDR brcb) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bs, bo, bt, bb;
    pipe.InitBuffer(bs, 512 * sizeof(float));
    pipe.InitBuffer(bo, 64 * sizeof(float));
    pipe.InitBuffer(bt, 64 * sizeof(float));
    pipe.InitBuffer(bb, 128 * sizeof(float));
    LocalTensor<float> s = LoadTile<float>(bs, src, 512);
    LocalTensor<float> o = bo.Get<float>();
    Duplicate(o, 0.0f, 64);
    WholeReduceSum(o, s, 64, 8, 1, 1, 8);
    WholeReduceMax(o[8], s, 48, 8, 1, 1, 8);
    ReduceSum(o[24], s, bt.Get<float>(), 512);
    ReduceMax(o[32], s, bt.Get<float>(), 500, true);
    ReduceMin(o[40], s, bt.Get<float>(), 512, true);
    StoreTile(out, o, 64);
    LocalTensor<float> b = bb.Get<float>();
    Brcb(b, s, 2, BrcbRepeatParams{1, 8});
    StoreTile(brcb, b, 128);
}
extern "C" int fusedsl_launch_reductions(uint32_t blockDim, uint8_t** a) {
    return fusedsl_cpu::Launch(reductions, blockDim, a[0], a[1], a[2]);
}

// ---- DataCopyPad and strided DataCopy -----------------------------------------------------
// src: 64 floats, read as 3 rows of 10 with an 8-byte gap; ub: the padded UB image (48 floats);
// out: the rows written back with a 4-byte gap (filled with 0 beforehand); strided: 16 floats.
extern "C" __global__ __aicore__ void pad_copies(GM_ADDR src, GM_ADDR ub, GM_ADDR out, GM_ADDR strided) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bp, bs;
    pipe.InitBuffer(bp, 48 * sizeof(float));
    pipe.InitBuffer(bs, 16 * sizeof(float));
    GlobalTensor<float> g, o;
    g.SetGlobalBuffer((__gm__ float*)src, 64);
    o.SetGlobalBuffer((__gm__ float*)out, 64);
    LocalTensor<float> p = bp.Get<float>();
    DataCopyPad(p, g, DataCopyExtParams{3, 40, 8, 0, 0}, DataCopyPadExtParams<float>{true, 0, 6, -1.0f});
    SetFlag<HardEvent::MTE2_MTE3>(0);   // GM -> UB -> GM with no vector op: MTE3 waits for MTE2
    WaitFlag<HardEvent::MTE2_MTE3>(0);
    StoreTile(ub, p, 48);
    DataCopyPad(o, p, DataCopyExtParams{3, 40, 0, 4, 0});
    LocalTensor<float> s = bs.Get<float>();
    DataCopy(s, g, DataCopyParams{2, 1, 1, 0});
    SetFlag<HardEvent::MTE2_MTE3>(0);
    WaitFlag<HardEvent::MTE2_MTE3>(0);
    StoreTile(strided, s, 16);
}
extern "C" int fusedsl_launch_pad_copies(uint32_t blockDim, uint8_t** a) {
    return fusedsl_cpu::Launch(pad_copies, blockDim, a[0], a[1], a[2], a[3]);
}

// ---- element-wise ops on half and float: out[k*256 + i] = op_k(x[i], y[i]) -------------------
template <typename T>
__global__ __aicore__ void Elementwise(GM_ADDR x, GM_ADDR y, GM_ADDR out) {
    constexpr uint32_t M = 256;
    constexpr int kOps = 14;
    TPipe pipe;
    TBuf<TPosition::VECCALC> bx, by, bo;
    pipe.InitBuffer(bx, M * sizeof(T));
    pipe.InitBuffer(by, M * sizeof(T));
    pipe.InitBuffer(bo, kOps * M * sizeof(T));
    LocalTensor<T> a = LoadTile<T>(bx, x, M);
    LocalTensor<T> b = LoadTile<T>(by, y, M);
    LocalTensor<T> o = bo.Get<T>();
    Add(o[0 * M], a, b, M);
    Sub(o[1 * M], a, b, M);
    Mul(o[2 * M], a, b, M);
    Div(o[3 * M], a, b, M);
    Max(o[4 * M], a, b, M);
    Min(o[5 * M], a, b, M);
    Exp(o[6 * M], a, M);
    Abs(o[7 * M], a, M);
    Relu(o[8 * M], a, M);
    Sqrt(o[9 * M], b, M);
    Ln(o[10 * M], b, M);
    Reciprocal(o[11 * M], b, M);
    Adds(o[12 * M], a, static_cast<T>(1.5f), M);
    LeakyRelu(o[13 * M], a, static_cast<T>(0.25f), M);
    StoreTile(out, o, kOps * M);
}
extern "C" int fusedsl_launch_elementwise_half(uint32_t blockDim, uint8_t** a) {
    return fusedsl_cpu::Launch(Elementwise<half>, blockDim, a[0], a[1], a[2]);
}
extern "C" int fusedsl_launch_elementwise_float(uint32_t blockDim, uint8_t** a) {
    return fusedsl_cpu::Launch(Elementwise<float>, blockDim, a[0], a[1], a[2]);
}

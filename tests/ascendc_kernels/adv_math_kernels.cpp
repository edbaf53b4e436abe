// fusedsl's own kernels for the high-level math and activation APIs (written from the asc-devkit API pages).
// adv_f32(x, y, p, out): p = int32 {op, n, tmpBytes, scalarBits}; x, y, out: n floats (n <= 2048),
//   the arrays padded to a multiple of 16 elements.
//   The op picks the API (see the switch); tmpBytes = 0 uses the framework-allocated form.
// adv_f16(x, y, p, out): the same for half (ops 0-9 only).
// adv_i16(x, y, p, out): Xor on int16_t.
// sum_f32: see below.
// cumsum_f32(x, y, p, out): p = {outter, inner, lastAxis, 0}; out = cumsum, then the last row.
#include <cstring>

#include "tikicpulib.h"
#include "tiling/tiling_api.h"

using namespace AscendC;

namespace {

constexpr uint32_t kMax = 2048;

template <typename T>
__aicore__ inline void RunOp(int32_t op, uint32_t n, uint32_t tmpBytes, float s, LocalTensor<T>& dst,
                             LocalTensor<T>& a, LocalTensor<T>& b, LocalTensor<uint8_t>& tmp)
{
    LocalTensor<uint8_t> t = tmp;
    t.SetSize(tmpBytes);
    bool fw = tmpBytes == 0;
    T ts = static_cast<T>(s);
    switch (op) {
        case 0: if (fw) Acosh(dst, a, n); else Acosh(dst, a, t, n); break;   // LINE:acosh_call
        case 1: if (fw) Ceil(dst, a, n); else Ceil(dst, a, t, n); break;
        case 2: if (fw) Floor(dst, a, n); else Floor(dst, a, t, n); break;
        case 3: if (fw) Trunc(dst, a, n); else Trunc(dst, a, t, n); break;
        case 4: if (fw) Frac(dst, a, n); else Frac(dst, a, t, n); break;
        case 5: if (fw) Erf(dst, a, n); else Erf(dst, a, t, n); break;
        case 6: Log(dst, a, n); break;
        case 7: if (fw) Log2(dst, a, n); else Log2(dst, a, t, n); break;
        case 8: Log10(dst, a, n); break;
        case 9: Exp<T, 10>(dst, a, t, n); break;   // LINE:exp_call
        case 10: Exp<T, 0>(dst, a, t, n); break;
        case 11: ClampMin(dst, a, t, ts, n); break;
        case 12: ClampMax(dst, a, t, ts, n); break;
        case 13: if (fw) Fmod(dst, a, b, n); else Fmod(dst, a, b, t, n); break;
        case 14: Power(dst, a, b, t, n); break;
        case 15: Power(dst, a, ts, t, n); break;
        case 16: Power(dst, ts, b, t, n); break;
        case 17: Duplicate(dst, T(0), n); Axpy(dst, a, ts, t, n); break;
        case 18: Acosh(dst, dst, t, n); break;   // LINE:overlap_call
        case 19: Acosh(dst, a, dst.template ReinterpretCast<uint8_t>(), n); break;
        case 20: if (fw) Gelu(dst, a, n); else Gelu(dst, a, t, n); break;
        case 21: if (fw) Sigmoid(dst, a, n); else Sigmoid(dst, a, t, n); break;
        case 22: Silu(dst, a, n); break;
        case 23: Swish(dst, a, n, ts); break;
        case 24: if (fw) SwiGLU(dst, a, b, s, n); else SwiGLU(dst, a, b, s, t, n); break;
        case 25: if (fw) GeGLU(dst, a, b, n); else GeGLU(dst, a, b, t, n); break;
        case 26: Gelu(dst, a, t, n); break;   // LINE:gelu_call
        case 27: Arange(dst, ts, static_cast<T>(0.5f), static_cast<int32_t>(n)); break;
        case 28: if (fw) FasterGelu(dst, a, n); else FasterGelu(dst, a, t, n); break;
        default: break;
    }
}

template <typename T>
__aicore__ inline void AdvKernel(GM_ADDR x, GM_ADDR y, GM_ADDR p, GM_ADDR out)
{
    int32_t prm[4];
    std::memcpy(prm, p, sizeof prm);
    uint32_t n = static_cast<uint32_t>(prm[1]);
    float s;
    std::memcpy(&s, &prm[3], sizeof s);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, yb, ob, tb;
    pipe.InitBuffer(xb, kMax * sizeof(T));
    pipe.InitBuffer(yb, kMax * sizeof(T));
    pipe.InitBuffer(ob, kMax * sizeof(T));
    pipe.InitBuffer(tb, 64 * 1024);
    LocalTensor<T> a = xb.Get<T>();
    LocalTensor<T> b = yb.Get<T>();
    LocalTensor<T> o = ob.Get<T>();
    LocalTensor<uint8_t> t = tb.Get<uint8_t>();
    uint32_t nc = (n + 15) / 16 * 16;   // GM arrays are padded to 32 bytes; the APIs take n
    GlobalTensor<T> xg, yg, og;
    xg.SetGlobalBuffer((__gm__ T*)x, nc);
    yg.SetGlobalBuffer((__gm__ T*)y, nc);
    og.SetGlobalBuffer((__gm__ T*)out, nc);
    DataCopy(a, xg, nc);
    DataCopy(b, yg, nc);
    DataCopy(o, yg, nc);   // dst starts as y (Axpy accumulates into it)
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    RunOp<T>(prm[0], n, static_cast<uint32_t>(prm[2]), s, o, a, b, t);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(og, o, nc);
}

}  // namespace

extern "C" __global__ __aicore__ void adv_f32(GM_ADDR x, GM_ADDR y, GM_ADDR p, GM_ADDR out)
{
    AdvKernel<float>(x, y, p, out);
}

extern "C" __global__ __aicore__ void adv_f16(GM_ADDR x, GM_ADDR y, GM_ADDR p, GM_ADDR out)
{
    AdvKernel<half>(x, y, p, out);
}

extern "C" __global__ __aicore__ void adv_i16(GM_ADDR x, GM_ADDR y, GM_ADDR p, GM_ADDR out)
{
    int32_t prm[4];
    std::memcpy(prm, p, sizeof prm);
    uint32_t n = static_cast<uint32_t>(prm[1]);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, yb, ob, tb;
    pipe.InitBuffer(xb, kMax * 2);
    pipe.InitBuffer(yb, kMax * 2);
    pipe.InitBuffer(ob, kMax * 2);
    pipe.InitBuffer(tb, 8192);
    LocalTensor<int16_t> a = xb.Get<int16_t>(), b = yb.Get<int16_t>(), o = ob.Get<int16_t>();
    LocalTensor<uint8_t> t = tb.Get<uint8_t>();
    GlobalTensor<int16_t> xg, yg, og;
    xg.SetGlobalBuffer((__gm__ int16_t*)x, n);
    yg.SetGlobalBuffer((__gm__ int16_t*)y, n);
    og.SetGlobalBuffer((__gm__ int16_t*)out, n);
    DataCopy(a, xg, n);
    DataCopy(b, yg, n);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Xor(o, a, b, t, n);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(og, o, n);
}

constexpr CumSumConfig kLastAxis = {true, false, true, CumSumAlgorithm::CUMSUM_ALGORITHM_LINEBYLINE};
constexpr CumSumConfig kFirstAxis = {false, false, true, CumSumAlgorithm::CUMSUM_ALGORITHM_LINEBYLINE};

// out holds outter*inner sums, then inner values of the last row.
extern "C" __global__ __aicore__ void cumsum_f32(GM_ADDR x, GM_ADDR, GM_ADDR p, GM_ADDR out)
{
    int32_t prm[4];
    std::memcpy(prm, p, sizeof prm);
    CumSumInfo info{static_cast<uint32_t>(prm[0]), static_cast<uint32_t>(prm[1])};
    uint32_t n = info.outter * info.inner;
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, ob, lb, tb;
    pipe.InitBuffer(xb, kMax * 4);
    pipe.InitBuffer(ob, kMax * 4);
    pipe.InitBuffer(lb, 256 * 4);
    pipe.InitBuffer(tb, 64 * 1024);
    LocalTensor<float> a = xb.Get<float>(), o = ob.Get<float>(), last = lb.Get<float>();
    LocalTensor<uint8_t> t = tb.Get<uint8_t>();
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, n);
    og.SetGlobalBuffer((__gm__ float*)out, n + info.inner);
    DataCopy(a, xg, n);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    if (prm[2]) {
        CumSum<float, kLastAxis>(o, last, a, t, info);
    } else {
        CumSum<float, kFirstAxis>(o, last, a, t, info);
    }
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(og, o, n);
    DataCopy(og[n], last, info.inner);
}

// sum_f32(x, y, p, out): p = {outter, n}; x is outter rows of inner = n rounded up to 8 floats;
// out[r] = the tree sum of row r's first n (out padded to 8); the scratch comes from a TBuf's
// queue interface (AllocTensor/FreeTensor), as CANN's Sum sample does it.
extern "C" __global__ __aicore__ void sum_f32(GM_ADDR x, GM_ADDR, GM_ADDR p, GM_ADDR out)
{
    int32_t prm[4];
    std::memcpy(prm, p, sizeof prm);
    SumParams sp;
    sp.outter = static_cast<uint32_t>(prm[0]);
    sp.n = static_cast<uint32_t>(prm[1]);
    sp.inner = (sp.n + 7) / 8 * 8;
    uint32_t outN = (sp.outter + 7) / 8 * 8;
    uint32_t maxV = 0, minV = 0;
    GetSumMaxMinTmpSize(sp.n, sizeof(float), false, maxV, minV);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, ob, tb;
    pipe.InitBuffer(xb, kMax * 4);
    pipe.InitBuffer(ob, 256);
    pipe.InitBuffer(tb, minV);
    LocalTensor<float> a = xb.Get<float>(), o = ob.Get<float>();
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, sp.outter * sp.inner);
    og.SetGlobalBuffer((__gm__ float*)out, outN);
    DataCopy(a, xg, sp.outter * sp.inner);
    Duplicate(o, 0.0f, outN);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    LocalTensor<uint8_t> t = tb.AllocTensor<uint8_t>();
    Sum(o, a, t, sp);   // LINE:sum_call
    tb.FreeTensor(t);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(og, o, outN);
}

// softmax_f32(x, y, p, out): p = {m, k, op, oriK}; x, y: m x k floats; out = [dst (m*k) | sum (m*8) |
// max (m*8) | expMax (m*8)].  op 0 SoftMax, 1 LogSoftMax, 2 SoftmaxFlashV2 (isUpdate, the running
// sum/max read from y's first 16 columns per row: sum in [0, 8), max in [8, 16)), 3 SoftmaxGrad
// (grad = y), 4 SoftmaxGradFront, 5 SimpleSoftMax (sum/max as op 2), 6 SoftMax<isBasicBlock> on a
// shape that is not a basic block, 7 SoftMax with a scratch of 64 bytes.
extern "C" __global__ __aicore__ void softmax_f32(GM_ADDR x, GM_ADDR y, GM_ADDR p, GM_ADDR out)
{
    int32_t prm[4];
    std::memcpy(prm, p, sizeof prm);
    uint32_t m = static_cast<uint32_t>(prm[0]), k = static_cast<uint32_t>(prm[1]);
    uint32_t n = m * k, rb = m * 8;
    SoftMaxShapeInfo shape{m, k, m, static_cast<uint32_t>(prm[3])};
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, yb, ob, sb, mb, eb, tb;
    pipe.InitBuffer(xb, n * 4);
    pipe.InitBuffer(yb, n * 4);
    pipe.InitBuffer(ob, n * 4);
    pipe.InitBuffer(sb, rb * 4);
    pipe.InitBuffer(mb, rb * 4);
    pipe.InitBuffer(eb, rb * 4);
    pipe.InitBuffer(tb, 32 * 1024);
    LocalTensor<float> a = xb.Get<float>(), g = yb.Get<float>(), o = ob.Get<float>();
    LocalTensor<float> sum = sb.Get<float>(), mx = mb.Get<float>(), em = eb.Get<float>();
    LocalTensor<uint8_t> t = tb.Get<uint8_t>();
    GlobalTensor<float> xg, yg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, n);
    yg.SetGlobalBuffer((__gm__ float*)y, n);
    og.SetGlobalBuffer((__gm__ float*)out, n + 3 * rb);
    DataCopy(a, xg, n);
    DataCopy(g, yg, n);
    Duplicate(o, 0.0f, n);
    Duplicate(sum, 0.0f, rb);
    Duplicate(mx, 0.0f, rb);
    Duplicate(em, 0.0f, rb);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    SoftMaxTiling tiling;   // empty: the shape comes from softmaxShapeInfo
    LogSoftMaxTiling logTiling;
    if (prm[2] == 2 || prm[2] == 5) {   // the running sum / max: per row, columns [0, 8) and [8, 16) of y
        for (uint32_t r = 0; r < m; ++r) {
            Adds(sum[r * 8], g[r * k], 0.0f, 8);
            Adds(mx[r * 8], g[r * k + 8], 0.0f, 8);
        }
        PipeBarrier<PIPE_V>();
    }
    switch (prm[2]) {
        case 0: SoftMax<float>(o, sum, mx, a, t, tiling, shape); break;
        case 1: LogSoftMax<float>(o, sum, mx, a, t, logTiling, shape); break;
        case 2: SoftmaxFlashV2<float, true>(o, sum, mx, a, em, sum, mx, t, tiling, shape); break;
        case 3: SoftmaxGrad<float>(o, g, a, t, tiling, false, shape); break;
        case 4: SoftmaxGradFront<float>(sum, g, a, t, tiling, shape); break;
        case 5: SimpleSoftMax<float>(o, sum, mx, a, t, tiling, shape); break;
        case 6: SoftMax<float, false, true>(o, sum, mx, a, t, tiling, shape); break;   // LINE:basic_block_call
        case 7: {
            LocalTensor<uint8_t> small = t;
            small.SetSize(64);
            SoftMax<float>(o, sum, mx, a, small, tiling, shape);   // LINE:small_scratch_call
            break;
        }
        default: break;
    }
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(og, o, n);
    DataCopy(og[n], sum, rb);
    DataCopy(og[n + rb], mx, rb);
    DataCopy(og[n + 2 * rb], em, rb);
}

// quant_f32(x, y, p, out): p = {n, perChannel, 0, 0}; x: n floats; y: 16 float scales then 16
// offsets (per channel) or y[0] scale, y[16] offset; out: n int8 (padded to 32).
extern "C" __global__ __aicore__ void quant_f32(GM_ADDR x, GM_ADDR y, GM_ADDR p, GM_ADDR out)
{
    int32_t prm[4];
    std::memcpy(prm, p, sizeof prm);
    uint32_t n = static_cast<uint32_t>(prm[0]);
    uint32_t n8 = (n + 31) / 32 * 32;
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, yb, ob, tb;
    pipe.InitBuffer(xb, n8 * 4);
    pipe.InitBuffer(yb, 32 * 4);
    pipe.InitBuffer(ob, n8);
    pipe.InitBuffer(tb, 8192);
    LocalTensor<float> a = xb.Get<float>(), q = yb.Get<float>();
    LocalTensor<int8_t> o = ob.Get<int8_t>();
    LocalTensor<uint8_t> t = tb.Get<uint8_t>();
    GlobalTensor<float> xg, yg;
    GlobalTensor<int8_t> og;
    xg.SetGlobalBuffer((__gm__ float*)x, n8);
    yg.SetGlobalBuffer((__gm__ float*)y, 32);
    og.SetGlobalBuffer((__gm__ int8_t*)out, n8);
    DataCopy(a, xg, n8);
    DataCopy(q, yg, 32);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    SetFlag<HardEvent::MTE2_S>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_S>(EVENT_ID0);
    Duplicate(o.ReinterpretCast<int16_t>(), int16_t(0), n8 / 2);
    if (prm[1]) {
        AscendQuant<float>(o, a, t, q, q[16], 16, 16, n);
    } else {
        AscendQuant<float>(o, a, t, q.GetValue(0), q.GetValue(16), n);
    }
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(og, o, n8);
}

// dequant_f32(x, y, p, out): p = {m, n, calCount, 0}; x: m x n int32; y: n float scales;
// out: m x n floats (the first calCount of each row).
extern "C" __global__ __aicore__ void dequant_f32(GM_ADDR x, GM_ADDR y, GM_ADDR p, GM_ADDR out)
{
    int32_t prm[4];
    std::memcpy(prm, p, sizeof prm);
    DequantParams dp{static_cast<uint32_t>(prm[0]), static_cast<uint32_t>(prm[1]), static_cast<uint32_t>(prm[2])};
    uint32_t total = dp.m * dp.n;
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, yb, ob, tb;
    pipe.InitBuffer(xb, total * 4);
    pipe.InitBuffer(yb, dp.n * 4);
    pipe.InitBuffer(ob, total * 4);
    pipe.InitBuffer(tb, 16384);
    LocalTensor<int32_t> a = xb.Get<int32_t>();
    LocalTensor<float> sc = yb.Get<float>(), o = ob.Get<float>();
    LocalTensor<uint8_t> t = tb.Get<uint8_t>();
    GlobalTensor<int32_t> xg;
    GlobalTensor<float> yg, og;
    xg.SetGlobalBuffer((__gm__ int32_t*)x, total);
    yg.SetGlobalBuffer((__gm__ float*)y, dp.n);
    og.SetGlobalBuffer((__gm__ float*)out, total);
    DataCopy(a, xg, total);
    DataCopy(sc, yg, dp.n);
    Duplicate(o, 0.0f, total);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    AscendDequant(o, a, sc, t, dp);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(og, o, total);
}

// AscendC::Std is the standard library's subset
static_assert(AscendC::Std::is_same_v<AscendC::Std::remove_cvref_t<const int&>, int>);
static_assert(AscendC::Std::is_floating_point<half>::value || !AscendC::Std::is_integral<half>::value);
static_assert(AscendC::Std::tuple_size_v<AscendC::Std::tuple<int, float>> == 2);

// bcast_f32(x, y, p, out): p = {m, k, axis, tmpBytes}; x holds the source ([m, 1] for axis 1,
// [1, k] for axis 0), out the [m, k] result; then Fill sets out[m * k, m * k + 8) to 7.
extern "C" __global__ __aicore__ void bcast_f32(GM_ADDR x, GM_ADDR, GM_ADDR p, GM_ADDR out)
{
    int32_t prm[4];
    std::memcpy(prm, p, sizeof prm);
    uint32_t m = static_cast<uint32_t>(prm[0]), k = static_cast<uint32_t>(prm[1]);
    uint32_t dstShape[2] = {m, k};
    uint32_t srcShape[2] = {prm[2] == 1 ? m : 1u, prm[2] == 1 ? 1u : k};
    uint32_t srcN = srcShape[0] * srcShape[1];
    uint32_t srcPad = (srcN + 7) / 8 * 8;
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, ob, tb;
    pipe.InitBuffer(xb, srcPad * 4);
    pipe.InitBuffer(ob, m * k * 4);
    pipe.InitBuffer(tb, 8192);
    LocalTensor<float> a = xb.Get<float>(), o = ob.Get<float>();
    LocalTensor<uint8_t> t = tb.Get<uint8_t>();
    t.SetSize(static_cast<uint32_t>(prm[3]));
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, srcPad);
    og.SetGlobalBuffer((__gm__ float*)out, m * k + 8);
    GlobalTensor<float> tail = og[m * k];
    Fill(tail, 8, 7.0f);
    DataCopy(a, xg, srcPad);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    if (prm[2] == 1) {
        Broadcast<float, 2, 1>(o, a, dstShape, srcShape, t);   // LINE:bcast_call
    } else {
        BroadCast<float, 2, 0>(o, a, dstShape, srcShape, t);   // CANN's other spelling
    }
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(og, o, m * k);
}

// rmsnorm_f32(x, y, p, out): p = {rows, H, originalH, tmpBytes}; x: rows x H; y: H gamma values;
// epsilon 1e-5; tmpBytes 0 takes the scratch with PopStackBuffer (the UB left free).
extern "C" __global__ __aicore__ void rmsnorm_f32(GM_ADDR x, GM_ADDR y, GM_ADDR p, GM_ADDR out)
{
    int32_t prm[4];
    std::memcpy(prm, p, sizeof prm);
    uint32_t rows = static_cast<uint32_t>(prm[0]), h = static_cast<uint32_t>(prm[1]);
    uint32_t n = rows * h;
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, gb, ob;
    pipe.InitBuffer(xb, n * 4);
    pipe.InitBuffer(gb, h * 4);
    pipe.InitBuffer(ob, n * 4);
    LocalTensor<float> a = xb.Get<float>(), g = gb.Get<float>(), o = ob.Get<float>();
    LocalTensor<uint8_t> t;
    PopStackBuffer<uint8_t, TPosition::LCM>(t);
    if (prm[3] != 0) {
        t.SetSize(static_cast<uint32_t>(prm[3]));
    }
    GlobalTensor<float> xg, yg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, n);
    yg.SetGlobalBuffer((__gm__ float*)y, h);
    og.SetGlobalBuffer((__gm__ float*)out, n);
    DataCopy(a, xg, n);
    DataCopy(g, yg, h);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    RmsNormTiling tiling;
    tiling.bLength = 1;
    tiling.sLength = rows;
    tiling.hLength = h;
    tiling.originalHLength = static_cast<uint32_t>(prm[2]);
    tiling.reciprocalOfHLength = 1.0f / static_cast<float>(prm[2]);
    RmsNorm<float>(o, a, g, t, 1e-5f, tiling);   // LINE:rmsnorm_call
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(og, o, n);
}

// deepnorm_f32(x, y, p, out): p = {rows, H, originalH, tmpBytes}; x: rows x H, then gx (rows x H),
// then gamma (H), then beta (H); alpha 0.5, epsilon 1e-5; out = [y (rows*H) | mean (8) | var (8)].
extern "C" __global__ __aicore__ void deepnorm_f32(GM_ADDR x, GM_ADDR, GM_ADDR p, GM_ADDR out)
{
    int32_t prm[4];
    std::memcpy(prm, p, sizeof prm);
    uint32_t rows = static_cast<uint32_t>(prm[0]), h = static_cast<uint32_t>(prm[1]);
    uint32_t n = rows * h;
    TPipe pipe;
    TBuf<TPosition::VECCALC> inb, ob, mb, vb, tb;
    pipe.InitBuffer(inb, (2 * n + 2 * h) * 4);
    pipe.InitBuffer(ob, n * 4);
    pipe.InitBuffer(mb, 32);
    pipe.InitBuffer(vb, 32);
    pipe.InitBuffer(tb, 4096);
    LocalTensor<float> in = inb.Get<float>(), o = ob.Get<float>(), mean = mb.Get<float>(), var = vb.Get<float>();
    LocalTensor<uint8_t> t = tb.Get<uint8_t>();
    t.SetSize(static_cast<uint32_t>(prm[3]));
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, 2 * n + 2 * h);
    og.SetGlobalBuffer((__gm__ float*)out, n + 16);
    DataCopy(in, xg, 2 * n + 2 * h);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    DeepNormTiling tiling;
    std::vector<int64_t> shape{1, rows, h}, ori{1, rows, prm[2]};
    GetDeepNormTilingInfo(TensorShape(shape), TensorShape(ori), static_cast<uint32_t>(prm[3]), 4, false, false, tiling);
    DeepNorm<float>(o, mean, var, in, in[n], in[2 * n + h], in[2 * n], t, 0.5f, 1e-5f, tiling);   // LINE:deepnorm_call
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(og, o, n);
    DataCopy(og[n], mean, 8);
    DataCopy(og[n + 8], var, 8);
}

// The UB planned to within 256 bytes of the 196608 bytes of 910B's UB: the framework-allocated Erf has no room.
extern "C" __global__ __aicore__ void adv_full_ub(GM_ADDR x, GM_ADDR, GM_ADDR, GM_ADDR out)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, rest;
    pipe.InitBuffer(xb, 256);
    pipe.InitBuffer(rest, 196608 - 512);
    LocalTensor<float> a = xb.Get<float>();
    GlobalTensor<float> xg;
    xg.SetGlobalBuffer((__gm__ float*)x, 64);
    DataCopy(a, xg, 64);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    LocalTensor<float> o = rest.Get<float>();
    Erf(o, a, 64);   // LINE:full_ub_call
}

#define ADV_ENTRY(name)                                                                  \
    extern "C" int fusedsl_launch_##name(uint32_t blockDim, uint8_t** args) {            \
        AscendC::SetKernelMode(KernelMode::AIV_MODE);                                    \
        return fusedsl_cpu::Launch(name, blockDim, args[0], args[1], args[2], args[3]);  \
    }
ADV_ENTRY(adv_f32)
ADV_ENTRY(adv_f16)
ADV_ENTRY(adv_i16)
ADV_ENTRY(cumsum_f32)
ADV_ENTRY(adv_full_ub)
ADV_ENTRY(sum_f32)
ADV_ENTRY(softmax_f32)
ADV_ENTRY(quant_f32)
ADV_ENTRY(dequant_f32)
ADV_ENTRY(bcast_f32)
ADV_ENTRY(rmsnorm_f32)
ADV_ENTRY(deepnorm_f32)

// Host helpers, as a tiling function calls them: out = {max, min} per API for n elements.
extern "C" void adv_tmp_sizes(uint32_t n, uint32_t typeSize, uint32_t* out)
{
    TensorShape shape(std::vector<int64_t>{static_cast<int64_t>(n)});
    GetAcoshMaxMinTmpSize(shape, typeSize, false, out[0], out[1]);
    GetErfMaxMinTmpSize(shape, typeSize, false, out[2], out[3]);
    GetExpMaxMinTmpSize(shape, typeSize, false, out[4], out[5]);
    GetFracMaxMinTmpSize(shape, typeSize, false, out[6], out[7]);
}

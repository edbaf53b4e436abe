// fusedsl's own kernels for AscendAntiQuant, DropOut, Select with a bytes mask, the pattern ReduceMax/
// ReduceMin, the high-level Concat/Sort/Extract and TopK (written from the asc-devkit API pages
// 量化操作/AscendAntiQuant, 数据过滤/DropOut, 数据过滤/Select, 归约操作/ReduceMax, 排序操作).
// antiquant_f16(x, y, p, out): p = int32 {K, N, groups, tmpBytes}; x = int8 src [K, N]; y = half
//   [offset (groups x N) | scale (groups x N)]; out = half dst [K, N] (per channel, not transposed).
// dropout_f32(x, y, p, out): p = {rows, W, maskW, keepProbBits}; x = float src [rows, W]; y = uint8 mask
//   [rows, maskW]; out = float dst.
// select_f32(x, y, p, out): p = {rows, W, maskW, scalarBits}; x = float src; y = uint8 mask [rows,
//   maskW]; out = [mask == 0 ? src : scalar | mask == 0 ? scalar : src].
// reduce_f32(x, y, p, out): p = {d0, d1, tmpBytes (0: 8 KB), 0}; x = float [d0, d1]; out = [ReduceMax AR
//   (d0, padded to 8) | ReduceMax RA (d1, padded to 8) | ReduceMin AR | ReduceMin RA (framework scratch)].
// sort_f32(x, y, p, out): p = {n, full, tmpBytes (0: n * 8), 0}; x = float scores (n); y = uint32 indices
//   (n); out = [values (n) | indices (n)] after Concat, Sort<float, full> and Extract.
// topk_f32(x, y, p, out): p = {outter, n, k, largest | small << 1 | initIndex << 2}; x = float [outter, 32];
//   y = [int32 indices (outter x 32) | bool finish (32 bytes)]; out = [values (outter x 8) | int32 indices
//   (outter x 8)], inner = 32, finish flags used.
// flashv3_f16(x, y, p, out): p = {m, k, update | loopCnt << 8, alphaBits}; x = half src [m, k]; y = float
//   [inMean | inSum | inMax] (m x 8 each); out = [half dst (m x k) | float mean, sum, max (m x 8 each) |
//   half expMax (m x 16)].  SoftmaxFlashV3 (激活函数/SoftmaxFlashV3), splitMeanCnt 8, framework scratch.
#include <cstring>

#include "tikicpulib.h"
#include "tiling/tiling_api.h"

using namespace AscendC;

namespace {
__aicore__ inline void Params(GM_ADDR p, int32_t* prm) { std::memcpy(prm, p, 4 * sizeof(int32_t)); }
}  // namespace

extern "C" __global__ __aicore__ void antiquant_f16(GM_ADDR x, GM_ADDR y, GM_ADDR p, GM_ADDR out)
{
    int32_t prm[4];
    Params(p, prm);
    uint32_t k = prm[0], n = prm[1], groups = prm[2];
    TPipe pipe;
    TBuf<TPosition::VECCALC> sb, pb, ob, tb;
    pipe.InitBuffer(sb, k * n);
    pipe.InitBuffer(pb, 2 * groups * n * sizeof(half));
    pipe.InitBuffer(ob, k * n * sizeof(half));
    pipe.InitBuffer(tb, 1024);
    LocalTensor<int8_t> src = sb.Get<int8_t>();
    LocalTensor<half> par = pb.Get<half>(), dst = ob.Get<half>();
    GlobalTensor<int8_t> xg;
    GlobalTensor<half> yg, og;
    xg.SetGlobalBuffer((__gm__ int8_t*)x, k * n);
    yg.SetGlobalBuffer((__gm__ half*)y, 2 * groups * n);
    og.SetGlobalBuffer((__gm__ half*)out, k * n);
    DataCopy(src, xg, k * n);
    DataCopy(par, yg, 2 * groups * n);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    LocalTensor<uint8_t> t = tb.Get<uint8_t>();
    AntiQuantShapeInfo info{groups, n, groups, n};
    AscendAntiQuant<int8_t, half, false>(dst, src, par, par[groups * n], t, k, info);   // LINE:antiquant_call
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(og, dst, k * n);
}

extern "C" __global__ __aicore__ void dropout_f32(GM_ADDR x, GM_ADDR y, GM_ADDR p, GM_ADDR out)
{
    int32_t prm[4];
    Params(p, prm);
    uint32_t rows = prm[0], w = prm[1], mw = prm[2];
    float keep;
    std::memcpy(&keep, &prm[3], 4);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, mb, ob, tb;
    pipe.InitBuffer(xb, rows * w * 4);
    pipe.InitBuffer(mb, rows * mw);
    pipe.InitBuffer(ob, rows * w * 4);
    pipe.InitBuffer(tb, 512);
    LocalTensor<float> src = xb.Get<float>(), dst = ob.Get<float>();
    LocalTensor<uint8_t> mask = mb.Get<uint8_t>(), t = tb.Get<uint8_t>();
    GlobalTensor<float> xg, og;
    GlobalTensor<uint8_t> mg;
    xg.SetGlobalBuffer((__gm__ float*)x, rows * w);
    mg.SetGlobalBuffer((__gm__ uint8_t*)y, rows * mw);
    og.SetGlobalBuffer((__gm__ float*)out, rows * w);
    DataCopy(src, xg, rows * w);
    DataCopy(mask, mg, rows * mw);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    DropOutShapeInfo info;
    info.firstAxis = rows;
    info.srcLastAxis = w;
    info.maskLastAxis = mw;
    DropOut(dst, src, mask, t, keep, info);   // LINE:dropout_call
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(og, dst, rows * w);
}

extern "C" __global__ __aicore__ void select_f32(GM_ADDR x, GM_ADDR y, GM_ADDR p, GM_ADDR out)
{
    int32_t prm[4];
    Params(p, prm);
    uint32_t rows = prm[0], w = prm[1], mw = prm[2];
    float s;
    std::memcpy(&s, &prm[3], 4);
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, mb, ob, tb;
    pipe.InitBuffer(xb, rows * w * 4);
    pipe.InitBuffer(mb, rows * mw);
    pipe.InitBuffer(ob, 2 * rows * w * 4);
    pipe.InitBuffer(tb, 4096);
    LocalTensor<float> src = xb.Get<float>(), dst = ob.Get<float>();
    LocalTensor<uint8_t> mask = mb.Get<uint8_t>(), t = tb.Get<uint8_t>();
    GlobalTensor<float> xg, og;
    GlobalTensor<uint8_t> mg;
    xg.SetGlobalBuffer((__gm__ float*)x, rows * w);
    mg.SetGlobalBuffer((__gm__ uint8_t*)y, rows * mw);
    og.SetGlobalBuffer((__gm__ float*)out, 2 * rows * w);
    DataCopy(src, xg, rows * w);
    DataCopy(mask, mg, rows * mw);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    SelectWithBytesMaskShapeInfo info;
    info.firstAxis = rows;
    info.srcLastAxis = w;
    info.maskLastAxis = mw;
    Select(dst, src, s, mask, t, info);   // LINE:select_call
    Select(dst[rows * w], s, src, mask, t, info);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(og, dst, 2 * rows * w);
}

extern "C" __global__ __aicore__ void reduce_f32(GM_ADDR x, GM_ADDR, GM_ADDR p, GM_ADDR out)
{
    int32_t prm[4];
    Params(p, prm);
    uint32_t d0 = prm[0], d1 = prm[1];
    uint32_t pad = (d0 > d1 ? d0 : d1) + 8;
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, ob, tb;
    pipe.InitBuffer(xb, d0 * d1 * 4);
    pipe.InitBuffer(ob, 4 * pad * 4);
    pipe.InitBuffer(tb, 8192);
    LocalTensor<float> src = xb.Get<float>(), o = ob.Get<float>();
    LocalTensor<uint8_t> t = tb.Get<uint8_t>();
    if (prm[2] != 0) {
        t.SetSize(prm[2]);
    }
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, d0 * d1);
    og.SetGlobalBuffer((__gm__ float*)out, 4 * pad);
    DataCopy(src, xg, d0 * d1);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Duplicate(o, 0.0f, 4 * pad);
    uint32_t shape[2] = {d0, d1};
    ReduceMax<float, Pattern::Reduce::AR>(o, src, t, shape, true);
    ReduceMax<float, Pattern::Reduce::RA>(o[pad], src, t, shape, true);   // LINE:reduce_call
    ReduceMin<float, Pattern::Reduce::AR>(o[2 * pad], src, t, shape, true);
    ReduceMin<float, Pattern::Reduce::RA>(o[3 * pad], src, shape, true);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(og, o, 4 * pad);
}

extern "C" __global__ __aicore__ void sort_f32(GM_ADDR x, GM_ADDR y, GM_ADDR p, GM_ADDR out)
{
    int32_t prm[4];
    Params(p, prm);
    uint32_t n = prm[0];
    TPipe pipe;
    TBuf<TPosition::VECCALC> vb, ib, sb, tb, ob;
    pipe.InitBuffer(vb, n * 4);
    pipe.InitBuffer(ib, n * 4);
    pipe.InitBuffer(sb, n * 8);
    pipe.InitBuffer(tb, n * 8);
    pipe.InitBuffer(ob, n * 8);
    LocalTensor<float> v = vb.Get<float>(), sorted = sb.Get<float>(), tmp = tb.Get<float>(), ov = ob.Get<float>();
    LocalTensor<uint32_t> idx = ib.Get<uint32_t>(), oi = ob.Get<uint32_t>()[n];
    if (prm[2] != 0) {
        tmp.SetSize(prm[2] / 4);
    }
    GlobalTensor<float> xg, og;
    GlobalTensor<uint32_t> yg;
    xg.SetGlobalBuffer((__gm__ float*)x, n);
    yg.SetGlobalBuffer((__gm__ uint32_t*)y, n);
    og.SetGlobalBuffer((__gm__ float*)out, 2 * n);
    DataCopy(v, xg, n);
    DataCopy(idx, yg, n);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    LocalTensor<float> concat;
    Concat(concat, v, tmp, n / 16);
    if (prm[1] != 0) {
        Sort<float, true>(sorted, concat, idx, tmp, n / 32);   // LINE:sort_call
    } else {
        Sort<float, false>(sorted, concat, idx, tmp, n / 32);
    }
    Extract(ov, oi, sorted, n / 32);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(og, ov, 2 * n);
}

extern "C" __global__ __aicore__ void topk_f32(GM_ADDR x, GM_ADDR y, GM_ADDR p, GM_ADDR out)
{
    int32_t prm[4];
    Params(p, prm);
    int32_t outter = prm[0], n = prm[1], k = prm[2];
    bool largest = (prm[3] & 1) != 0, small = (prm[3] & 2) != 0, init = (prm[3] & 4) != 0;
    TPipe pipe;
    TBuf<TPosition::VECCALC> xb, ib, fb, ob, tb;
    pipe.InitBuffer(xb, outter * 32 * 4);
    pipe.InitBuffer(ib, outter * 32 * 4);
    pipe.InitBuffer(fb, 32);
    pipe.InitBuffer(ob, outter * 16 * 4);
    pipe.InitBuffer(tb, 16384);
    LocalTensor<float> src = xb.Get<float>(), ov = ob.Get<float>();
    LocalTensor<int32_t> idx = ib.Get<int32_t>(), oi = ob.Get<int32_t>()[outter * 8];
    LocalTensor<bool> fin = fb.Get<bool>();
    LocalTensor<uint8_t> t = tb.Get<uint8_t>();
    GlobalTensor<float> xg, og;
    GlobalTensor<int32_t> yg;
    GlobalTensor<bool> fg;
    xg.SetGlobalBuffer((__gm__ float*)x, outter * 32);
    yg.SetGlobalBuffer((__gm__ int32_t*)y, outter * 32);
    fg.SetGlobalBuffer((__gm__ bool*)(y + outter * 32 * 4), 32);
    og.SetGlobalBuffer((__gm__ float*)out, outter * 16);
    DataCopy(src, xg, outter * 32);
    DataCopy(idx, yg, outter * 32);
    DataCopy(fin, fg, 32);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Duplicate(ov, 0.0f, outter * 16);
    TopkTiling tiling;
    auto* plat = platform_ascendc::PlatformAscendCManager::GetInstance();
    TopKMode mode = small ? TopKMode::TOPK_NSMALL : TopKMode::TOPK_NORMAL;
    TopKTilingFunc(*plat, 32, outter, k, 4, init, mode, largest, tiling);
    uint32_t mx = 0, mn = 0;
    GetTopKMaxMinTmpSize(*plat, 32, outter, false, init, mode, largest, 4, mx, mn);
    LocalTensor<uint8_t> tt = t;
    tt.SetSize(mn);
    TopKInfo info;
    info.outter = outter;
    info.inner = 32;
    info.n = n;
    if (small && init) {
        TopK<float, true, true, false, TopKMode::TOPK_NSMALL>(ov, oi, src, idx, fin, tt, k, tiling, info, largest);
    } else if (small) {
        TopK<float, false, true, false, TopKMode::TOPK_NSMALL>(ov, oi, src, idx, fin, tt, k, tiling, info, largest);
    } else if (init) {
        TopK<float, true, true>(ov, oi, src, idx, fin, tt, k, tiling, info, largest);
    } else {
        TopK<float, false, true>(ov, oi, src, idx, fin, k, tiling, info, largest);   // LINE:topk_call
    }
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(og, ov, outter * 16);
}

extern "C" __global__ __aicore__ void flashv3_f16(GM_ADDR x, GM_ADDR y, GM_ADDR p, GM_ADDR out)
{
    int32_t prm[4];
    Params(p, prm);
    uint32_t m = prm[0], k = prm[1], loop = static_cast<uint32_t>(prm[2]) >> 8;
    bool update = (prm[2] & 1) != 0;
    float alpha;
    std::memcpy(&alpha, &prm[3], sizeof(float));
    TPipe pipe;
    TBuf<TPosition::VECCALC> sb, db, ib, ob, eb;
    pipe.InitBuffer(sb, m * k * sizeof(half));
    pipe.InitBuffer(db, m * k * sizeof(half));
    pipe.InitBuffer(ib, 3 * m * 8 * sizeof(float));
    pipe.InitBuffer(ob, 3 * m * 8 * sizeof(float));
    pipe.InitBuffer(eb, m * 16 * sizeof(half));
    LocalTensor<half> src = sb.Get<half>(), dst = db.Get<half>(), expMax = eb.Get<half>();
    LocalTensor<float> in = ib.Get<float>(), o = ob.Get<float>();
    GlobalTensor<half> xg, og;
    GlobalTensor<float> yg, sg;
    xg.SetGlobalBuffer((__gm__ half*)x, m * k);
    yg.SetGlobalBuffer((__gm__ float*)y, 3 * m * 8);
    og.SetGlobalBuffer((__gm__ half*)out, m * k);
    sg.SetGlobalBuffer((__gm__ float*)out + m * k / 2, 3 * m * 8);
    DataCopy(src, xg, m * k);
    DataCopy(in, yg, 3 * m * 8);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    SoftMaxTiling tiling{};
    SoftMaxParams params = {m, k, m, k, loop, 8, alpha};
    if (update) {
        SoftmaxFlashV3<half, float, true>(dst, o, o[m * 8], o[2 * m * 8], src, expMax, in,   // LINE:flashv3_call
                                          in[m * 8], in[2 * m * 8], tiling, params);
    } else {
        SoftmaxFlashV3<half, float, false>(dst, o, o[m * 8], o[2 * m * 8], src, expMax, in, in[m * 8], in[2 * m * 8],
                                           tiling, params);
        Duplicate(expMax, static_cast<half>(0), m * 16);
    }
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(og, dst, m * k);
    DataCopy(sg, o, 3 * m * 8);
    GlobalTensor<half> eg;
    eg.SetGlobalBuffer((__gm__ half*)out + m * k + 6 * m * 8, m * 16);
    DataCopy(eg, expMax, m * 16);
}

#define FQ_ENTRY(name)                                                                   \
    extern "C" int fusedsl_launch_##name(uint32_t blockDim, uint8_t** args) {            \
        AscendC::SetKernelMode(KernelMode::AIV_MODE);                                    \
        return fusedsl_cpu::Launch(name, blockDim, args[0], args[1], args[2], args[3]);  \
    }
FQ_ENTRY(antiquant_f16)
FQ_ENTRY(dropout_f32)
FQ_ENTRY(select_f32)
FQ_ENTRY(reduce_f32)
FQ_ENTRY(sort_f32)
FQ_ENTRY(topk_f32)
FQ_ENTRY(flashv3_f16)

// Host helpers: out = {max, min} of GetAscendAntiQuantMaxMinTmpSize (half, then bfloat16 output for
// src [k, n] and scale [groups, n]), GetDropOutMaxMinTmpSize and GetSelectMaxMinTmpSize ([rows, w],
// uint8 mask [rows, mw], the mask not reused).
extern "C" void filter_tmp_sizes(uint32_t k, uint32_t n, uint32_t groups, uint32_t mw, uint32_t* out)
{
    TensorShape src(std::vector<int64_t>{k, n}), scale(std::vector<int64_t>{groups, n});
    GetAscendAntiQuantMaxMinTmpSize(src, scale, false, TensorDataType::DT_INT8, TensorDataType::DT_FLOAT16, out[0],
                                    out[1]);
    GetAscendAntiQuantMaxMinTmpSize(src, scale, false, TensorDataType::DT_INT8, TensorDataType::DT_BF16, out[2],
                                    out[3]);
    GetDropOutMaxMinTmpSize(src, 4, false, out[4], out[5]);
    TensorShape scalar(std::vector<int64_t>{1}), mask(std::vector<int64_t>{k, mw});
    GetSelectMaxMinTmpSize(src, scalar, 4, mask, 1, false, out[6], out[7]);
}

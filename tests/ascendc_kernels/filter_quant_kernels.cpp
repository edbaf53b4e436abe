// fusedsl's own kernels for AscendAntiQuant, DropOut and Select with a bytes mask (written from the
// asc-devkit API pages 量化操作/AscendAntiQuant, 数据过滤/DropOut, 数据过滤/Select).
// antiquant_f16(x, y, p, out): p = int32 {K, N, groups, tmpBytes}; x = int8 src [K, N]; y = half
//   [offset (groups x N) | scale (groups x N)]; out = half dst [K, N] (per channel, not transposed).
// dropout_f32(x, y, p, out): p = {rows, W, maskW, keepProbBits}; x = float src [rows, W]; y = uint8 mask
//   [rows, maskW]; out = float dst.
// select_f32(x, y, p, out): p = {rows, W, maskW, scalarBits}; x = float src; y = uint8 mask [rows,
//   maskW]; out = [mask == 0 ? src : scalar | mask == 0 ? scalar : src].
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

#define FQ_ENTRY(name)                                                                   \
    extern "C" int fusedsl_launch_##name(uint32_t blockDim, uint8_t** args) {            \
        AscendC::SetKernelMode(KernelMode::AIV_MODE);                                    \
        return fusedsl_cpu::Launch(name, blockDim, args[0], args[1], args[2], args[3]);  \
    }
FQ_ENTRY(antiquant_f16)
FQ_ENTRY(dropout_f32)
FQ_ENTRY(select_f32)

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

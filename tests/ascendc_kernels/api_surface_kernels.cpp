// The API surface CANN's vector samples use, one kernel exercising each against numpy:
// event_t + FetchEventID, operator expressions, GlobalTensor::address_, Copy (both forms),
// InitGlobalMemory, level-0 Compare + Select mode 0, DumpTensor, printf and ASSERT.
#include "kernel_operator.h"
#include "kernel_operator_list_tensor_intf.h"   // CANN's header name for ListTensorDesc
#include "utils/debug/asc_dump.h"                // asc_dump_gm / asc_dump_ubuf

using namespace AscendC;

constexpr uint32_t M = 256;  // floats per block

// x, y: inputs (M floats per block); out: 6 x M floats per block; init: 8 floats per block
extern "C" __global__ __aicore__ void surface(GM_ADDR x, GM_ADDR y, GM_ADDR out, GM_ADDR init) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> qx, qy;
    TBuf<TPosition::VECCALC> bo, bm;
    pipe.InitBuffer(qx, 1, M * sizeof(float));
    pipe.InitBuffer(qy, 1, M * sizeof(float));
    pipe.InitBuffer(bo, 6 * M * sizeof(float));
    pipe.InitBuffer(bm, 64);
    GlobalTensor<float> xg, yg, og, ig;
    xg.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * M, M);
    yg.SetGlobalBuffer((__gm__ float*)y + GetBlockIdx() * M, M);
    og.SetGlobalBuffer((__gm__ float*)out + GetBlockIdx() * 6 * M, 6 * M);
    ig.address_ = (__gm__ float*)init + GetBlockIdx() * 16;   // address_ is the tensor's GM pointer
    ig.fs_has_size = false;
    InitGlobalMemory(ig, 16, 2.5f);
    ASSERT(ig.GetPhyAddr() == ig.address_);

    LocalTensor<float> a = qx.AllocTensor<float>();
    LocalTensor<float> b = qy.AllocTensor<float>();
    DataCopy(a, xg, M);
    DataCopy(b, yg, M);
    qx.EnQue(a);
    qy.EnQue(b);
    a = qx.DeQue<float>();
    b = qy.DeQue<float>();
    LocalTensor<float> o = bo.Get<float>();
    LocalTensor<float> o0 = o[0], o1 = o[M], o2 = o[2 * M], o3 = o[3 * M], o4 = o[4 * M], o5 = o[5 * M];
    o0.SetSize(M);
    o1.SetSize(M);
    o2.SetSize(M);
    o0 = a * b;                       // Mul over dst.GetSize()
    o1 = a - b;
    Copy(o2, a, M);                   // contiguous UB -> UB
    Duplicate(o3, 0.0f, M);
    PipeBarrier<PIPE_V>();
    Copy(o3, b, 32, 2, CopyRepeatParams{1, 1, 16, 8});   // half of each of 2 repeats, dst repeats 512 B apart
    // 8 x 32-lane compare of a < b, then Select mode 0 (the first 64 bits for every repeat)
    LocalTensor<uint8_t> mask = bm.Get<uint8_t>();
    Compare(mask, a, b, CMPMODE::LT, 64, 1, BinaryRepeatParams{});
    PipeBarrier<PIPE_V>();
    Select(o4, mask, a, b, SELMODE::VSEL_CMPMASK_SPR, M);
    Duplicate(o5, 0.0f, M);
    PipeBarrier<PIPE_V>();
    LocalTensor<uint8_t> bits = o5.ReinterpretCast<uint8_t>();
    bits.SetSize(M / 8);
    bits = a > b;                     // Compare over a.GetSize() elements into a bit mask
    event_t toMte3 = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_MTE3));
    SetFlag<HardEvent::V_MTE3>(toMte3);
    WaitFlag<HardEvent::V_MTE3>(toMte3);
    DataCopy(og, o, 6 * M);
    if (GetBlockIdx() == 1) {
        DumpTensor(a, 7, 4);
        SetFlag<HardEvent::V_S>(EVENT_ID0);   // the scalar reads what the vector unit wrote
        WaitFlag<HardEvent::V_S>(EVENT_ID0);
        AscendC::printf("block %d sum0 %f\n", static_cast<int>(GetBlockIdx()), o0.GetValue(0) + o1.GetValue(0));
    }
    qx.FreeTensor(a);
    qy.FreeTensor(b);
}
extern "C" int fusedsl_launch_surface(uint32_t blockDim, uint8_t** a) {
    return fusedsl_cpu::Launch(surface, blockDim, a[0], a[1], a[2], a[3]);
}

extern "C" __global__ __aicore__ void assert_fails(GM_ADDR x) {
    GlobalTensor<int32_t> g;
    g.SetGlobalBuffer((__gm__ int32_t*)x, 16);
    ASSERT(g.GetValue(0) == 7 && "the first word must be 7");
}
extern "C" int fusedsl_launch_assert_fails(uint32_t blockDim, uint8_t** a) {
    return fusedsl_cpu::Launch(assert_fails, blockDim, a[0]);
}

// Select in mode 2 (VSEL_TENSOR_TENSOR_MODE): fine on 2201/2002, not on 910A.
extern "C" __global__ __aicore__ void select_mode2(GM_ADDR x) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bv, bm;
    pipe.InitBuffer(bv, 2 * M * sizeof(float));
    pipe.InitBuffer(bm, M / 8);
    LocalTensor<float> v = bv.Get<float>();
    LocalTensor<uint8_t> mask = bm.Get<uint8_t>();
    Duplicate(v, 1.0f, 2 * M);
    Duplicate(mask.ReinterpretCast<uint16_t>(), static_cast<uint16_t>(0x5555), M / 16);
    PipeBarrier<PIPE_V>();
    Select(v, mask, v, v[M], SELMODE::VSEL_TENSOR_TENSOR_MODE, M);
    (void)x;
}
extern "C" int fusedsl_launch_select_mode2(uint32_t blockDim, uint8_t** a) {
    return fusedsl_cpu::Launch(select_mode2, blockDim, a[0]);
}

// GatherMask: x (128 floats = 2 repeats) -> out rows of 128: fixed pattern 2 (odd lanes),
// a user pattern 0x99999999 (lanes 0 and 3 of every 4), pattern 1 (even lanes) in counter
// mode with mask 40; cnt[0..2] = rsvdCnt of each.
extern "C" __global__ __aicore__ void gather_mask(GM_ADDR x, GM_ADDR out, GM_ADDR cnt) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> qx;
    TBuf<TPosition::VECCALC> bo, bp;
    pipe.InitBuffer(qx, 1, 128 * sizeof(float));
    pipe.InitBuffer(bo, 3 * 128 * sizeof(float));
    pipe.InitBuffer(bp, 64);
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, 128);
    og.SetGlobalBuffer((__gm__ float*)out, 3 * 128);
    LocalTensor<float> s = qx.AllocTensor<float>();
    DataCopy(s, xg, 128);
    qx.EnQue(s);
    s = qx.DeQue<float>();
    LocalTensor<float> o = bo.Get<float>();
    Duplicate(o, 0.0f, 3 * 128);
    LocalTensor<uint32_t> pat = bp.Get<uint32_t>();
    Duplicate(pat, 0x99999999u, 16);
    PipeBarrier<PIPE_V>();
    uint64_t n[3] = {};
    GatherMask(o, s, static_cast<uint8_t>(2), false, 0, GatherMaskParams{1, 2, 8, 0}, n[0]);
    GatherMask(o[128], s, pat, false, 0, GatherMaskParams{1, 2, 8, 0}, n[1]);
    GatherMask(o[256], s, static_cast<uint8_t>(1), true, 40, GatherMaskParams{1, 2, 8, 0}, n[2]);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(og, o, 3 * 128);
    GlobalTensor<uint64_t> cg;
    cg.SetGlobalBuffer((__gm__ uint64_t*)cnt, 8);
    for (int i = 0; i < 3; ++i) {
        cg.SetValue(i, n[i]);
    }
    qx.FreeTensor(s);
}
extern "C" int fusedsl_launch_gather_mask(uint32_t blockDim, uint8_t** a) {
    return fusedsl_cpu::Launch(gather_mask, blockDim, a[0], a[1], a[2]);
}

// AddN over a dynamic input list: out = sum of the list's tensors (each M floats), the shape
// read through TensorDesc; framed by the SuperKernel early-start pair, with a plain assert().
extern "C" __global__ __aicore__ void add_n(GM_ADDR list, GM_ADDR out) {
    WaitPreTaskEnd();
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> qin;
    TBuf<TPosition::VECCALC> acc;
    pipe.InitBuffer(qin, 1, M * sizeof(float));
    pipe.InitBuffer(acc, M * sizeof(float));
    ListTensorDesc inputs(list);
    assert(inputs.GetSize() > 0);
    LocalTensor<float> sum = acc.Get<float>();
    Duplicate(sum, 0.0f, M);
    uint64_t shape[8];
    for (uint32_t i = 0; i < inputs.GetSize(); ++i) {
        TensorDesc<float> desc;
        desc.SetShapeAddr(shape);
        inputs.GetDesc(desc, i);
        ASSERT(desc.GetDim() == 1 && desc.GetShape(0) == M && desc.GetIndex() == i);
        GlobalTensor<float> g = desc.GetDataObj();
        ASSERT(g.GetPhyAddr() == inputs.GetDataPtr<float>(i));
        LocalTensor<float> t = qin.AllocTensor<float>();
        DataCopy(t, g, M);
        qin.EnQue(t);
        t = qin.DeQue<float>();
        Add(sum, sum, t, M);
        qin.FreeTensor(t);
    }
    GlobalTensor<float> og;
    og.SetGlobalBuffer((__gm__ float*)out, M);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(og, sum, M);
    SetNextTaskStart();
}
extern "C" int fusedsl_launch_add_n(uint32_t blockDim, uint8_t** a) {
    return fusedsl_cpu::Launch(add_n, blockDim, a[0], a[1]);
}

// ---- Pad / UnPad with their host tiling --------------------------------------------------------
#include "tiling/tiling_api.h"

// Host side, called by the test: the tiling words and GetPadMaxMinTmpSize's (max, min).
extern "C" void fusedsl_pad_tiling(int64_t h, int64_t w, int64_t ori, uint32_t stack, uint32_t unpad,
                                   uint32_t* words, uint32_t* maxmin) {
    AscendC::TensorShape src(std::vector<int64_t>{h, w});
    if (unpad) {
        optiling::UnPadTiling t;
        AscendC::GetUnPadMaxMinTmpSize(platform_ascendc::PlatformAscendC(), src, 4, maxmin[0], maxmin[1]);
        AscendC::UnPadTilingFunc(src, stack, 4, t);
        t.SaveToBuffer(words, t.GetDataSize());
    } else {
        optiling::PadTiling t;
        AscendC::GetPadMaxMinTmpSize(src, 4, maxmin[0], maxmin[1]);
        AscendC::PadTilingFunc(src, AscendC::TensorShape(std::vector<int64_t>{h, ori}), stack, 4, t);
        t.SaveToBuffer(words, t.GetDataSize());
    }
}

// p = [unpad, leftPad, rightPad, padValue, scratch bytes (0: the framework form)]; x: h*w floats.
extern "C" __global__ __aicore__ void pad_case(GM_ADDR params, GM_ADDR x, GM_ADDR out, GM_ADDR tilingGm) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> qx;
    TBuf<TPosition::VECCALC> bo, bt;
    pipe.InitBuffer(qx, 1, 1024 * sizeof(float));
    pipe.InitBuffer(bo, 1024 * sizeof(float));
    pipe.InitBuffer(bt, 1024);
    GlobalTensor<int32_t> pg;
    pg.SetGlobalBuffer((__gm__ int32_t*)params, 8);
    GlobalTensor<uint32_t> tg;
    tg.SetGlobalBuffer((__gm__ uint32_t*)tilingGm, 32);
    PadTiling padTiling;
    UnPadTiling unPadTiling;
    const bool unpad = pg.GetValue(0) != 0;
    uint32_t* words = unpad ? reinterpret_cast<uint32_t*>(&unPadTiling) : reinterpret_cast<uint32_t*>(&padTiling);
    uint32_t nwords = unpad ? sizeof(UnPadTiling) / 4 : sizeof(PadTiling) / 4;
    for (uint32_t i = 0; i < nwords; ++i) {
        words[i] = tg.GetValue(i);
    }
    const uint32_t h = unpad ? unPadTiling.srcHeight : padTiling.srcHeight;
    const uint32_t w = unpad ? unPadTiling.srcWidth : padTiling.srcWidth;
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, h * w);
    og.SetGlobalBuffer((__gm__ float*)out, 1024);
    LocalTensor<float> s = qx.AllocTensor<float>();
    DataCopy(s, xg, h * w);
    qx.EnQue(s);
    s = qx.DeQue<float>();
    LocalTensor<float> o = bo.Get<float>();
    Duplicate(o, -1.0f, 1024);
    PipeBarrier<PIPE_V>();
    const int32_t scratch = pg.GetValue(4);
    LocalTensor<uint8_t> tmp = bt.Get<uint8_t>(scratch > 0 ? static_cast<uint32_t>(scratch) : 32);
    if (unpad) {
        UnPadParams up{static_cast<uint16_t>(pg.GetValue(1)), static_cast<uint16_t>(pg.GetValue(2))};
        if (scratch > 0) {
            UnPad(o, s, up, tmp, unPadTiling);
        } else {
            UnPad(o, s, up, unPadTiling);
        }
    } else {
        PadParams pp{static_cast<uint16_t>(pg.GetValue(1)), static_cast<uint16_t>(pg.GetValue(2)), pg.GetValue(3)};
        if (scratch > 0) {
            Pad(o, s, pp, tmp, padTiling);
        } else {
            Pad(o, s, pp, padTiling);
        }
    }
    SetFlag<HardEvent::V_MTE3>(EVENT_ID1);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID1);
    DataCopy(og, o, 1024);
    qx.FreeTensor(s);
}
extern "C" int fusedsl_launch_pad_case(uint32_t blockDim, uint8_t** a) {
    return fusedsl_cpu::Launch(pad_case, blockDim, a[0], a[1], a[2], a[3]);
}

// Select's mask/repeat form: the first 32 lanes of 2 repeats of 64 floats, mode 2 (tensor) and
// mode 1 (scalar 5), the bits from a < b; out = [mode 2 | mode 1], other lanes keep -1.
extern "C" __global__ __aicore__ void select_l0(GM_ADDR x, GM_ADDR y, GM_ADDR out) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> ba, bb, bo, bm;
    pipe.InitBuffer(ba, 128 * sizeof(float));
    pipe.InitBuffer(bb, 128 * sizeof(float));
    pipe.InitBuffer(bo, 256 * sizeof(float));
    pipe.InitBuffer(bm, 32);
    GlobalTensor<float> xg, yg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, 128);
    yg.SetGlobalBuffer((__gm__ float*)y, 128);
    og.SetGlobalBuffer((__gm__ float*)out, 256);
    LocalTensor<float> a = ba.Get<float>(), b = bb.Get<float>(), o = bo.Get<float>();
    LocalTensor<uint8_t> m = bm.Get<uint8_t>();
    DataCopy(a, xg, 128);
    DataCopy(b, yg, 128);
    PipeBarrier<PIPE_ALL>();
    Duplicate(o, -1.0f, 256);
    Compare(m, a, b, CMPMODE::LT, 128);
    PipeBarrier<PIPE_V>();
    Select(o, m, a, b, SELMODE::VSEL_TENSOR_TENSOR_MODE, 32, 2, BinaryRepeatParams{});
    Select(o[128], m, a, 5.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, 32, 2, BinaryRepeatParams{});
    PipeBarrier<PIPE_ALL>();
    DataCopy(og, o, 256);
}
extern "C" int fusedsl_launch_select_l0(uint32_t blockDim, uint8_t** a) {
    return fusedsl_cpu::Launch(select_l0, blockDim, a[0], a[1], a[2]);
}

// AddRelu/SubRelu/Axpy on 64 floats (+ Axpy half -> float), ShiftLeft/ShiftRight (with roundEn)
// and CreateVecIndex on 128 int16, Compare into CMPMASK + GetCmpMask + Select from CMPMASK.
// f: [addrelu | subrelu | axpy f32 | axpy f16->f32 | select-from-register] (64 each);
// s: [shl 3 | shr 2 | shr 2 rounded | index from 5] (128 each); m: the 16 mask bytes.
extern "C" __global__ __aicore__ void more_ops(GM_ADDR x, GM_ADDR y, GM_ADDR h, GM_ADDR si, GM_ADDR f, GM_ADDR s,
                                               GM_ADDR m) {
    LocalMemAllocator<Hardware::UB> ub;
    LocalTensor<float> a = ub.Alloc<float, 64>(), b = ub.Alloc<float, 64>(), o = ub.Alloc<float, 5 * 64>();
    LocalTensor<half> hh = ub.Alloc<half, 64>();
    LocalTensor<int16_t> iv = ub.Alloc<int16_t, 128>(), so = ub.Alloc<int16_t, 4 * 128>();
    LocalTensor<uint8_t> mk = ub.Alloc<uint8_t, 32>();
    GlobalTensor<float> xg, yg, fg;
    GlobalTensor<half> hg;
    GlobalTensor<int16_t> ig, sg;
    GlobalTensor<uint8_t> mg;
    xg.SetGlobalBuffer((__gm__ float*)x, 64);
    yg.SetGlobalBuffer((__gm__ float*)y, 64);
    hg.SetGlobalBuffer((__gm__ half*)h, 64);
    ig.SetGlobalBuffer((__gm__ int16_t*)si, 128);
    fg.SetGlobalBuffer((__gm__ float*)f, 5 * 64);
    sg.SetGlobalBuffer((__gm__ int16_t*)s, 4 * 128);
    mg.SetGlobalBuffer((__gm__ uint8_t*)m, 32);
    DataCopy(a, xg, 64);
    DataCopy(b, yg, 64);
    DataCopy(hh, hg, 64);
    DataCopy(iv, ig, 128);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    AddRelu(o, a, b, 64);
    SubRelu(o[64], a, b, 64);
    Duplicate(o[128], 1.0f, 128);
    PipeBarrier<PIPE_V>();
    Axpy(o[128], a, 0.5f, 64);
    Axpy(o[192], hh, static_cast<half>(2.0f), 64);
    ShiftLeft(so, iv, static_cast<int16_t>(3), 128);
    ShiftRight(so[128], iv, static_cast<int16_t>(2), 128);
    ShiftRight(so[256], iv, static_cast<int16_t>(2), 128, 1, UnaryRepeatParams{}, true);
    CreateVecIndex(so[384], static_cast<int16_t>(5), 128);
    Compare(a, b, CMPMODE::GT, 64, BinaryRepeatParams{});
    Duplicate(mk.ReinterpretCast<uint16_t>(), static_cast<uint16_t>(0), 16);
    PipeBarrier<PIPE_V>();
    GetCmpMask(mk);
    SetVectorMask<float>(0, ~0ull);
    Select<float, SELMODE::VSEL_CMPMASK_SPR>(o[256], a, b, 1, BinaryRepeatParams{});
    ResetMask();
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(fg, o, 5 * 64);
    DataCopy(sg, so, 4 * 128);
    DataCopy(mg, mk, 32);
}
extern "C" int fusedsl_launch_more_ops(uint32_t blockDim, uint8_t** a) {
    return fusedsl_cpu::Launch(more_ops, blockDim, a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
}

// Gather (element byte offsets) and Gatherb (block offsets) on uint32: g = x[offsets / 4],
// b = blocks of x at the byte offsets (8 per repeat).  The copy-out of x's untouched half also
// shows that MTE2 -> V -> MTE3 flags order MTE2 before MTE3 (transitively).
extern "C" __global__ __aicore__ void gathers(GM_ADDR x, GM_ADDR offs, GM_ADDR boffs, GM_ADDR g, GM_ADDR b) {
    LocalMemAllocator<Hardware::UB> ub;
    LocalTensor<uint32_t> xs = ub.Alloc<uint32_t, 128>(), off = ub.Alloc<uint32_t, 64>(),
                          boff = ub.Alloc<uint32_t, 8>(), go = ub.Alloc<uint32_t, 64>(), bo = ub.Alloc<uint32_t, 64>();
    GlobalTensor<uint32_t> xg, og, bg, gg, bbg;
    xg.SetGlobalBuffer((__gm__ uint32_t*)x, 128);
    og.SetGlobalBuffer((__gm__ uint32_t*)offs, 64);
    bg.SetGlobalBuffer((__gm__ uint32_t*)boffs, 8);
    gg.SetGlobalBuffer((__gm__ uint32_t*)g, 64);
    bbg.SetGlobalBuffer((__gm__ uint32_t*)b, 64);
    DataCopy(xs, xg, 128);
    DataCopy(off, og, 64);
    DataCopy(boff, bg, 8);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Gather(go, xs, off, 0, 64);
    Gatherb(bo, xs, boff, 1, GatherRepeatParams{1, 8});
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(gg, go, 64);
    DataCopy(bbg, bo, 64);
}
extern "C" int fusedsl_launch_gathers(uint32_t blockDim, uint8_t** a) {
    return fusedsl_cpu::Launch(gathers, blockDim, a[0], a[1], a[2], a[3], a[4]);
}

// asc_dump_gm of x's first 4 floats (tag 7) and asc_dump_ubuf of their UB copy (tag 8, from the
// tensor's GetPhyAddr()); n > 0 asks the UB dump for n elements instead (past UB's end: refused).
extern "C" __global__ __aicore__ void asc_dumps(GM_ADDR x, GM_ADDR n) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 64);
    LocalTensor<float> t = b.Get<float>();
    GlobalTensor<float> xg;
    xg.SetGlobalBuffer((__gm__ float*)x, 16);
    DataCopy(t, xg, 16);
    SetFlag<HardEvent::MTE2_S>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_S>(EVENT_ID0);
    uint32_t count = *reinterpret_cast<__gm__ uint32_t*>(n);
    asc_dump_gm<float>((__gm__ float*)x, 7, 4);
    asc_dump_ubuf<float>((__ubuf__ float*)t.GetPhyAddr(), 8, count ? count : 4);
}
extern "C" int fusedsl_launch_asc_dumps(uint32_t blockDim, uint8_t** a) {
    return fusedsl_cpu::Launch(asc_dumps, blockDim, a[0], a[1]);
}

// Slice DataCopy: of src [3, 87] floats, rows 0 and 2, columns 16..39 and 47..70, packed into out
// [2, 48] through UB (the API page's example); bad = 1 makes the source's first dimension miss the
// run formula (endIndex one short).
extern "C" __global__ __aicore__ void slice_copy(GM_ADDR x, GM_ADDR out, GM_ADDR bad) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 96 * sizeof(float));
    LocalTensor<float> t = b.Get<float>();
    GlobalTensor<float> xg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, 3 * 87);
    og.SetGlobalBuffer((__gm__ float*)out, 96);
    xg.SetL2CacheHint(CacheMode::CACHE_MODE_DISABLE);   // timing only: the same bytes arrive
    uint32_t end = *reinterpret_cast<__gm__ uint32_t*>(bad) ? 69 : 70;
    SliceInfo src[] = {{16, end, 7, 3, 87}, {0, 2, 1, 1, 3}};
    SliceInfo dst[] = {{0, 47, 0, 3, 48}, {0, 1, 0, 1, 2}};
    DataCopy(t, xg, dst, src, 2);   // LINE:slice_call
    SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
    DataCopy(og, t, dst, dst, 2);
}
extern "C" int fusedsl_launch_slice_copy(uint32_t blockDim, uint8_t** a) {
    return fusedsl_cpu::Launch(slice_copy, blockDim, a[0], a[1], a[2]);
}

// Coordinates and layouts (kernel_operator_coord.h / kernel_operator_layout.h): out = the offsets of the
// coordinates (1, 2), (3, 0) in a row-major 4 x 5 layout and (1, 2) in a column-major one, and of a nested
// ((1, 1), 2) coordinate in a ((2, 2), 5) layout with strides ((10, 5), 1).
extern "C" __global__ __aicore__ void layout_offsets(GM_ADDR out) {
    AscendC::GlobalTensor<int32_t> og;
    og.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(out), 8);
    auto rows = AscendC::MakeLayout(AscendC::MakeShape(4, 5), AscendC::MakeStride(5, 1));
    auto cols = AscendC::MakeLayout(AscendC::MakeShape(4, 5), AscendC::MakeStride(1, 4));
    auto nested = AscendC::MakeLayout(AscendC::MakeShape(AscendC::MakeShape(2, 2), 5),
                                      AscendC::MakeStride(AscendC::MakeStride(10, 5), 1));
    AscendC::Coord<int64_t, int64_t> c = AscendC::MakeCoord(int64_t(1), int64_t(2));
    og.SetValue(0, static_cast<int32_t>(rows(c)));
    og.SetValue(1, static_cast<int32_t>(rows(AscendC::MakeCoord(3, 0))));
    og.SetValue(2, static_cast<int32_t>(cols(c)));
    og.SetValue(3, static_cast<int32_t>(nested(AscendC::MakeCoord(AscendC::MakeCoord(1, 1), 2))));
}
extern "C" int fusedsl_launch_layout_offsets(uint32_t blockDim, uint8_t** a) {
    return fusedsl_cpu::Launch(layout_offsets, blockDim, a[0]);
}

// TransData NCDHW -> NDC1HWC0 and back (A2/A3, half): x [2, 20, 1, 3, 5] with each 15-element h x w plane padded
// to 16 in UB -> y [2, 1, 2, 3, 5, 16] (C padded to 32 with zeros) -> back into UB, moved out plane by plane.
constexpr AscendC::TransDataConfig kToNdc1hwc0 = {AscendC::DataFormat::NCDHW, AscendC::DataFormat::NDC1HWC0};
constexpr AscendC::TransDataConfig kFromNdc1hwc0 = {AscendC::DataFormat::NDC1HWC0, AscendC::DataFormat::NCDHW};
extern "C" __global__ __aicore__ void trans_data(GM_ADDR x, GM_ADDR y, GM_ADDR back) {
    constexpr int n = 2, c = 20, d = 1, h = 3, w = 5, c1 = 2, planes = n * c * d;
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> bx, by, bb;
    pipe.InitBuffer(bx, planes * 16 * sizeof(half));
    pipe.InitBuffer(by, n * d * c1 * h * w * 16 * sizeof(half));
    pipe.InitBuffer(bb, planes * 16 * sizeof(half));
    AscendC::LocalTensor<half> tx = bx.Get<half>(), ty = by.Get<half>(), tb = bb.Get<half>();
    AscendC::GlobalTensor<half> xg, yg, bg;
    xg.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(x), planes * h * w);
    yg.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(y), n * d * c1 * h * w * 16);
    bg.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(back), planes * h * w);
    AscendC::DataCopyExtParams rows = {planes, h * w * sizeof(half), 0, 0, 0};
    AscendC::DataCopyPad(tx, xg, rows, AscendC::DataCopyPadExtParams<half>{true, 0, 1, static_cast<half>(0)});
    AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);
    AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);
    auto plain = AscendC::MakeLayout(AscendC::MakeShape(n, c, d, h, w), AscendC::MakeStride());
    auto blocked = AscendC::MakeLayout(AscendC::MakeShape(n, d, c1, h, w, 16), AscendC::MakeStride());
    AscendC::TransData<kToNdc1hwc0>(ty, tx, AscendC::TransDataParams<decltype(plain), decltype(blocked)>{plain, blocked});
    AscendC::PipeBarrier<PIPE_V>();
    AscendC::TransData<kFromNdc1hwc0>(tb, ty,
                                      AscendC::TransDataParams<decltype(blocked), decltype(plain)>{blocked, plain});
    AscendC::SetFlag<AscendC::HardEvent::V_MTE3>(EVENT_ID0);
    AscendC::WaitFlag<AscendC::HardEvent::V_MTE3>(EVENT_ID0);
    AscendC::DataCopy(yg, ty, n * d * c1 * h * w * 16);
    AscendC::DataCopyPad(bg, tb, rows);
}
extern "C" int fusedsl_launch_trans_data(uint32_t blockDim, uint8_t** a) {
    return fusedsl_cpu::Launch(trans_data, blockDim, a[0], a[1], a[2]);
}

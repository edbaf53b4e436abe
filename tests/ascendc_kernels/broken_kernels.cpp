// One small kernel per hardware rule, each breaking it on purpose.  Every kernel takes three
// float GM buffers (x, y, z) and has a fusedsl_launch_<name> entry; the Python tests assert
// the CPU implementation's message for each.
#include "kernel_operator.h"

using namespace AscendC;

constexpr uint32_t N = 256;  // floats per tile

#define ENTRY(name)                                                          \
    extern "C" int fusedsl_launch_##name(uint32_t blockDim, uint8_t** args) { \
        return fusedsl_cpu::Launch(name, blockDim, args[0], args[1], args[2]); \
    }

// A correct baseline: z = x + y over one tile per block.
extern "C" __global__ __aicore__ void good(GM_ADDR x, GM_ADDR y, GM_ADDR z) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> qx, qy;
    TQue<QuePosition::VECOUT, 1> qz;
    GlobalTensor<float> xg, yg, zg;
    xg.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * N, N);
    yg.SetGlobalBuffer((__gm__ float*)y + GetBlockIdx() * N, N);
    zg.SetGlobalBuffer((__gm__ float*)z + GetBlockIdx() * N, N);
    pipe.InitBuffer(qx, 1, N * sizeof(float));
    pipe.InitBuffer(qy, 1, N * sizeof(float));
    pipe.InitBuffer(qz, 1, N * sizeof(float));
    LocalTensor<float> a = qx.AllocTensor<float>();
    LocalTensor<float> b = qy.AllocTensor<float>();
    DataCopy(a, xg, N);
    DataCopy(b, yg, N);
    qx.EnQue(a);
    qy.EnQue(b);
    a = qx.DeQue<float>();
    b = qy.DeQue<float>();
    LocalTensor<float> c = qz.AllocTensor<float>();
    Add(c, a, b, N);
    qz.EnQue(c);
    qx.FreeTensor(a);
    qy.FreeTensor(b);
    c = qz.DeQue<float>();
    DataCopy(zg, c, N);
    qz.FreeTensor(c);
}
ENTRY(good)

extern "C" __global__ __aicore__ void ub_overflow(GM_ADDR, GM_ADDR, GM_ADDR) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    TBuf<TPosition::VECCALC> tmp;
    pipe.InitBuffer(q, 2, 65536);
    pipe.InitBuffer(tmp, 80000);
}
ENTRY(ub_overflow)

extern "C" __global__ __aicore__ void too_many_buffers(GM_ADDR, GM_ADDR, GM_ADDR) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bufs[65];
    for (auto& b : bufs) {
        pipe.InitBuffer(b, 32);
    }
}
ENTRY(too_many_buffers)

// Five VECIN buffers allocated at once: fine on 910B (8), too many on 910A (4).
extern "C" __global__ __aicore__ void too_many_outstanding(GM_ADDR, GM_ADDR, GM_ADDR) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q1, q2, q3;
    pipe.InitBuffer(q1, 2, 256);
    pipe.InitBuffer(q2, 2, 256);
    pipe.InitBuffer(q3, 2, 256);
    LocalTensor<float> t[5] = {q1.AllocTensor<float>(), q1.AllocTensor<float>(), q2.AllocTensor<float>(),
                               q2.AllocTensor<float>(), q3.AllocTensor<float>()};
    q1.FreeTensor(t[0]);
    q1.FreeTensor(t[1]);
    q2.FreeTensor(t[2]);
    q2.FreeTensor(t[3]);
    q3.FreeTensor(t[4]);
}
ENTRY(too_many_outstanding)

extern "C" __global__ __aicore__ void unaligned_subtensor(GM_ADDR x, GM_ADDR, GM_ADDR) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 2 * N * sizeof(float));
    GlobalTensor<float> xg;
    xg.SetGlobalBuffer((__gm__ float*)x, 2 * N);
    LocalTensor<float> t = buf.Get<float>();
    DataCopy(t, xg, 2 * N);
    Add(t[N], t[3], t[16], 64);
}
ENTRY(unaligned_subtensor)

extern "C" __global__ __aicore__ void datacopy_not_32b(GM_ADDR x, GM_ADDR, GM_ADDR) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, N * sizeof(float));
    GlobalTensor<float> xg;
    xg.SetGlobalBuffer((__gm__ float*)x, N);
    LocalTensor<float> t = q.AllocTensor<float>();
    // Only block 3 gets the length wrong, so the message must name block 3.
    DataCopy(t, xg, GetBlockIdx() == 3 ? 25 : 24);
    q.FreeTensor(t);
}
ENTRY(datacopy_not_32b)

extern "C" __global__ __aicore__ void deque_empty(GM_ADDR, GM_ADDR, GM_ADDR) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 2, 1024);
    LocalTensor<float> t = q.DeQue<float>();
    q.FreeTensor(t);
}
ENTRY(deque_empty)

extern "C" __global__ __aicore__ void alloc_beyond_capacity(GM_ADDR, GM_ADDR, GM_ADDR) {
    TPipe pipe;
    TQue<QuePosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 2, 1024);
    LocalTensor<float> a = q.AllocTensor<float>();
    LocalTensor<float> b = q.AllocTensor<float>();
    LocalTensor<float> c = q.AllocTensor<float>();
    q.FreeTensor(a);
    q.FreeTensor(b);
    q.FreeTensor(c);
}
ENTRY(alloc_beyond_capacity)

extern "C" __global__ __aicore__ void double_free(GM_ADDR, GM_ADDR, GM_ADDR) {
    TPipe pipe;
    TQue<QuePosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 2, 1024);
    LocalTensor<float> a = q.AllocTensor<float>();
    q.FreeTensor(a);
    q.FreeTensor(a);
}
ENTRY(double_free)

extern "C" __global__ __aicore__ void free_foreign(GM_ADDR, GM_ADDR, GM_ADDR) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q1, q2;
    pipe.InitBuffer(q1, 1, 1024);
    pipe.InitBuffer(q2, 1, 1024);
    LocalTensor<float> a = q1.AllocTensor<float>();
    q2.FreeTensor(a);
}
ENTRY(free_foreign)

extern "C" __global__ __aicore__ void enque_twice(GM_ADDR, GM_ADDR, GM_ADDR) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 2> q;
    pipe.InitBuffer(q, 2, 1024);
    LocalTensor<float> a = q.AllocTensor<float>();
    q.EnQue(a);
    q.EnQue(a);
}
ENTRY(enque_twice)

// Allocates and never frees.
extern "C" __global__ __aicore__ void leak(GM_ADDR, GM_ADDR, GM_ADDR) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 2, 1024);
    LocalTensor<float> a = q.AllocTensor<float>();
    Duplicate(a, 0.0f, 256);
}
ENTRY(leak)

// Enqueues and never dequeues.
extern "C" __global__ __aicore__ void leak_enqueued(GM_ADDR, GM_ADDR, GM_ADDR) {
    TPipe pipe;
    TQue<QuePosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 2, 1024);
    LocalTensor<float> a = q.AllocTensor<float>();
    Duplicate(a, 1.0f, 256);
    q.EnQue(a);
}
ENTRY(leak_enqueued)

extern "C" __global__ __aicore__ void relu_float(GM_ADDR x, GM_ADDR, GM_ADDR z) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, N * sizeof(float));
    GlobalTensor<float> xg, zg;
    xg.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * N, N);
    zg.SetGlobalBuffer((__gm__ float*)z + GetBlockIdx() * N, N);
    LocalTensor<float> t = buf.Get<float>();
    DataCopy(t, xg, N);
    PipeBarrier<PIPE_ALL>();
    Relu(t, t, N);
    PipeBarrier<PIPE_ALL>();
    DataCopy(zg, t, N);
}
ENTRY(relu_float)

extern "C" __global__ __aicore__ void datacopypad(GM_ADDR x, GM_ADDR, GM_ADDR) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, N * sizeof(float));
    GlobalTensor<float> xg;
    xg.SetGlobalBuffer((__gm__ float*)x, N);
    LocalTensor<float> t = buf.Get<float>();
    DataCopyPad(t, xg, DataCopyExtParams{1, 10 * sizeof(float), 0, 0, 0}, DataCopyPadExtParams<float>{true, 0, 2, 0.0f});
}
ENTRY(datacopypad)

extern "C" __global__ __aicore__ void uninit_read(GM_ADDR, GM_ADDR, GM_ADDR) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    TBuf<TPosition::VECCALC> out;
    pipe.InitBuffer(q, 1, 1024);
    pipe.InitBuffer(out, 1024);
    LocalTensor<float> a = q.AllocTensor<float>();
    Duplicate(a, 1.0f, 128);  // only the first 512 bytes
    Exp(out.Get<float>(), a, 144);
    q.FreeTensor(a);
}
ENTRY(uninit_read)

// A UB->UB move of a half-filled buffer is fine; the moved unfilled half is still unfilled.
extern "C" __global__ __aicore__ void moved_uninit_read(GM_ADDR, GM_ADDR, GM_ADDR) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> src, dst, out;
    pipe.InitBuffer(src, 1024);
    pipe.InitBuffer(dst, 1024);
    pipe.InitBuffer(out, 1024);
    Duplicate(src.Get<float>(), 1.0f, 128);  // only the first 512 bytes
    PipeBarrier<PIPE_ALL>();
    DataCopy(dst.Get<float>(), src.Get<float>(), 256);
    PipeBarrier<PIPE_ALL>();
    Exp(out.Get<float>(), dst.Get<float>(), 128);     // the filled half: fine
    Exp(out.Get<float>(), dst.Get<float>(), 144);     // 16 floats of the moved unfilled half
}
ENTRY(moved_uninit_read)

// Reads one tile past the end of x.
extern "C" __global__ __aicore__ void gm_out_of_bounds(GM_ADDR x, GM_ADDR, GM_ADDR) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, N * sizeof(float));
    GlobalTensor<float> xg;
    xg.SetGlobalBuffer((__gm__ float*)x);
    DataCopy(buf.Get<float>(), xg[(GetBlockIdx() + 4) * N], N);
}
ENTRY(gm_out_of_bounds)

// Stays inside x but past the length given to SetGlobalBuffer.
extern "C" __global__ __aicore__ void gm_past_length(GM_ADDR x, GM_ADDR, GM_ADDR) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, N * sizeof(float));
    GlobalTensor<float> xg;
    xg.SetGlobalBuffer((__gm__ float*)x, N / 2);
    DataCopy(buf.Get<float>(), xg, N);
}
ENTRY(gm_past_length)

// Every block writes the same first tile of z.
extern "C" __global__ __aicore__ void overlapping_writes(GM_ADDR x, GM_ADDR, GM_ADDR z) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, N * sizeof(float));
    GlobalTensor<float> xg, zg;
    xg.SetGlobalBuffer((__gm__ float*)x, N);
    zg.SetGlobalBuffer((__gm__ float*)z, N);
    LocalTensor<float> t = buf.Get<float>();
    DataCopy(t, xg, N);
    PipeBarrier<PIPE_ALL>();
    Adds(t, t, static_cast<float>(GetBlockIdx()), N);   // each block writes different values
    PipeBarrier<PIPE_ALL>();
    DataCopy(zg, t, N);
}
ENTRY(overlapping_writes)

// Every block writes the same values to the same bytes: a benign race, accepted (z = x).
extern "C" __global__ __aicore__ void same_value_writes(GM_ADDR x, GM_ADDR, GM_ADDR z) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, N * sizeof(float));
    GlobalTensor<float> xg, zg;
    xg.SetGlobalBuffer((__gm__ float*)x, N);
    zg.SetGlobalBuffer((__gm__ float*)z, N);
    LocalTensor<float> t = buf.Get<float>();
    DataCopy(t, xg, N);
    PipeBarrier<PIPE_ALL>();
    DataCopy(zg, t, N);
}
ENTRY(same_value_writes)

// The same, but accumulating with atomic add: allowed, and z = blockDim * x.
extern "C" __global__ __aicore__ void atomic_writes(GM_ADDR x, GM_ADDR, GM_ADDR z) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, N * sizeof(float));
    GlobalTensor<float> xg, zg;
    xg.SetGlobalBuffer((__gm__ float*)x, N);
    zg.SetGlobalBuffer((__gm__ float*)z, N);
    LocalTensor<float> t = buf.Get<float>();
    DataCopy(t, xg, N);
    PipeBarrier<PIPE_ALL>();
    SetAtomicAdd<float>();
    DataCopy(zg, t, N);
    SetAtomicNone();
}
ENTRY(atomic_writes)

extern "C" __global__ __aicore__ void wait_without_set(GM_ADDR, GM_ADDR, GM_ADDR) {
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::MTE2_V>(1);
}
ENTRY(wait_without_set)

extern "C" __global__ __aicore__ void set_never_waited(GM_ADDR, GM_ADDR, GM_ADDR) {
    PipeBarrier<PIPE_V>();
    SetFlag<HardEvent::MTE3_MTE2>(2);
}
ENTRY(set_never_waited)

extern "C" __global__ __aicore__ void compare_not_256b(GM_ADDR, GM_ADDR, GM_ADDR) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf, mask;
    pipe.InitBuffer(buf, N * sizeof(float));
    pipe.InitBuffer(mask, 256);
    LocalTensor<float> t = buf.Get<float>();
    Duplicate(t, 0.0f, N);
    Compares(mask.Get<uint8_t>(), t, 1.0f, CMPMODE::LT, 40);
}
ENTRY(compare_not_256b)

extern "C" __global__ __aicore__ void cast_rint(GM_ADDR, GM_ADDR, GM_ADDR) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    pipe.InitBuffer(a, N * sizeof(float));
    pipe.InitBuffer(b, N * sizeof(half));
    Duplicate(a.Get<float>(), 0.5f, N);
    Cast(b.Get<half>(), a.Get<float>(), RoundMode::CAST_RINT, N);
}
ENTRY(cast_rint)

extern "C" __global__ __aicore__ void scalar_gm(GM_ADDR x, GM_ADDR, GM_ADDR z) {
    GlobalTensor<float> xg, zg;
    xg.SetGlobalBuffer((__gm__ float*)x);
    zg.SetGlobalBuffer((__gm__ float*)z);
    int64_t i = GetBlockIdx() * 16;   // one 64-byte line per block: SetValue writes through the data cache
    zg.SetValue(i, xg.GetValue(i) * 2.0f);
}
ENTRY(scalar_gm)

// Not broken: reports what each block sees, and prints from the kernel.
extern "C" __global__ __aicore__ void block_info(GM_ADDR, GM_ADDR, GM_ADDR z) {
    GlobalTensor<float> zg;
    zg.SetGlobalBuffer((__gm__ float*)z + GetBlockIdx() * 16, 4);  // 64-byte lines of their own
    zg.SetValue(0, static_cast<float>(GetBlockIdx()));
    zg.SetValue(1, static_cast<float>(GetBlockNum()));
    zg.SetValue(2, static_cast<float>(GetSubBlockIdx()));
    zg.SetValue(3, static_cast<float>(GetTaskRatio() * 10 + GetTaskRation()));   // CANN's two spellings agree
    if (unlikely(GetBlockIdx() == 2)) {
        AscendC::printf("block %ld of %ld: %f\n", static_cast<long>(GetBlockIdx()), static_cast<long>(GetBlockNum()),
                        static_cast<half>(1.5f));
        PRINTF("done\n");
    }
}
ENTRY(block_info)

// ---- use after FreeTensor (three forms), a tensor touched while it sits in a queue ----------

#define QUEUE_TILE(q, pos)          \
    TPipe pipe;                     \
    TQue<pos, 1> q;                 \
    pipe.InitBuffer(q, 1, N * sizeof(float))

// 1. a vector instruction reads a freed tensor
extern "C" __global__ __aicore__ void free_then_vector(GM_ADDR, GM_ADDR, GM_ADDR) {
    QUEUE_TILE(q, QuePosition::VECOUT);
    TBuf<TPosition::VECCALC> tmp;
    pipe.InitBuffer(tmp, N * sizeof(float));
    LocalTensor<float> t = q.AllocTensor<float>();
    Duplicate(t, 1.0f, N);
    q.EnQue(t);
    t = q.DeQue<float>();
    q.FreeTensor(t);
    Exp(tmp.Get<float>(), t, N);
}
ENTRY(free_then_vector)

// 2. the copy-out moved after FreeTensor
extern "C" __global__ __aicore__ void free_then_copy_out(GM_ADDR, GM_ADDR, GM_ADDR z) {
    QUEUE_TILE(q, QuePosition::VECOUT);
    GlobalTensor<float> zg;
    zg.SetGlobalBuffer((__gm__ float*)z + GetBlockIdx() * N, N);
    LocalTensor<float> t = q.AllocTensor<float>();
    Duplicate(t, 1.0f, N);
    q.EnQue(t);
    t = q.DeQue<float>();
    q.FreeTensor(t);
    DataCopy(zg, t, N);
}
ENTRY(free_then_copy_out)

// 3. a scalar read of a freed tensor
extern "C" __global__ __aicore__ void free_then_get_value(GM_ADDR, GM_ADDR, GM_ADDR z) {
    QUEUE_TILE(q, QuePosition::VECIN);
    LocalTensor<float> t = q.AllocTensor<float>();
    Duplicate(t, 1.0f, N);
    PipeBarrier<PIPE_ALL>();
    q.FreeTensor(t);
    GlobalTensor<float> zg;
    zg.SetGlobalBuffer((__gm__ float*)z + GetBlockIdx() * N, N);
    zg.SetValue(0, t.GetValue(0));
}
ENTRY(free_then_get_value)

// The vector unit writes a tensor that was already handed to the queue.
extern "C" __global__ __aicore__ void write_after_enque(GM_ADDR x, GM_ADDR, GM_ADDR) {
    QUEUE_TILE(q, QuePosition::VECIN);
    GlobalTensor<float> xg;
    xg.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * N, N);
    LocalTensor<float> t = q.AllocTensor<float>();
    DataCopy(t, xg, N);
    q.EnQue(t);
    Adds(t, t, 1.0f, N);
    t = q.DeQue<float>();
    q.FreeTensor(t);
}
ENTRY(write_after_enque)

// ---- pipe ordering on TBuf memory (no queue protocol) ---------------------------------------

template <bool kSyncIn, bool kSyncOut>
__aicore__ inline void TbufAbs(GM_ADDR x, GM_ADDR z) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, N * sizeof(float));
    GlobalTensor<float> xg, zg;
    xg.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * N, N);
    zg.SetGlobalBuffer((__gm__ float*)z + GetBlockIdx() * N, N);
    LocalTensor<float> t = buf.Get<float>();
    DataCopy(t, xg, N);
    if (kSyncIn) {
        TEventID e = GetTPipePtr()->FetchEventID<HardEvent::MTE2_V>();
        SetFlag<HardEvent::MTE2_V>(e);
        WaitFlag<HardEvent::MTE2_V>(e);
    }
    Muls(t, t, -1.0f, N);
    if (kSyncOut) {
        SetFlag<HardEvent::V_MTE3>(0);
        WaitFlag<HardEvent::V_MTE3>(0);
    }
    DataCopy(zg, t, N);
}
extern "C" __global__ __aicore__ void tbuf_synced(GM_ADDR x, GM_ADDR, GM_ADDR z) { TbufAbs<true, true>(x, z); }
extern "C" __global__ __aicore__ void tbuf_no_mte2_v(GM_ADDR x, GM_ADDR, GM_ADDR z) { TbufAbs<false, true>(x, z); }
extern "C" __global__ __aicore__ void tbuf_no_v_mte3(GM_ADDR x, GM_ADDR, GM_ADDR z) { TbufAbs<true, false>(x, z); }
ENTRY(tbuf_synced)
ENTRY(tbuf_no_mte2_v)
ENTRY(tbuf_no_v_mte3)

// A scalar read right after the vector instruction that produced the value.
template <bool kBarrier>
__aicore__ inline void ScalarAfterVector(GM_ADDR z) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, N * sizeof(float));
    LocalTensor<float> t = buf.Get<float>();
    Duplicate(t, 3.0f, N);
    if (kBarrier) {
        SetFlag<HardEvent::V_S>(0);
        WaitFlag<HardEvent::V_S>(0);
    }
    GlobalTensor<float> zg;
    zg.SetGlobalBuffer((__gm__ float*)z + GetBlockIdx() * N, N);
    zg.SetValue(0, t.GetValue(0));
}
extern "C" __global__ __aicore__ void get_value_synced(GM_ADDR, GM_ADDR, GM_ADDR z) { ScalarAfterVector<true>(z); }
extern "C" __global__ __aicore__ void get_value_no_barrier(GM_ADDR, GM_ADDR, GM_ADDR z) { ScalarAfterVector<false>(z); }
ENTRY(get_value_synced)
ENTRY(get_value_no_barrier)

// ---- scalar GM writes through the data cache --------------------------------------------------

// Block b writes z[b] with SetValue: every block's value sits in the same 64-byte line (different bytes).
extern "C" __global__ __aicore__ void scalar_shared_line(GM_ADDR, GM_ADDR, GM_ADDR z) {
    GlobalTensor<float> zg;
    zg.SetGlobalBuffer((__gm__ float*)z);
    zg.SetValue(GetBlockIdx(), 1.0f);   // LINE:scalar_shared_line
}
ENTRY(scalar_shared_line)

// Every block writes z[0] with SetValue: block b writes b + 1 (the same bytes, another value), or 1 (kSame).
template <bool kSame>
__aicore__ inline void ScalarSameBytes(GM_ADDR z) {
    GlobalTensor<float> zg;
    zg.SetGlobalBuffer((__gm__ float*)z);
    zg.SetValue(0, kSame ? 1.0f : static_cast<float>(GetBlockIdx() + 1));   // LINE:scalar_same_bytes
}
extern "C" __global__ __aicore__ void scalar_same_bytes(GM_ADDR, GM_ADDR, GM_ADDR z) { ScalarSameBytes<false>(z); }
extern "C" __global__ __aicore__ void scalar_same_value(GM_ADDR, GM_ADDR, GM_ADDR z) { ScalarSameBytes<true>(z); }
ENTRY(scalar_same_bytes)
ENTRY(scalar_same_value)

// SetValue, then a DMA reads the same GM back: stale unless the line is cleaned first.
template <bool kClean>
__aicore__ inline void ScalarThenDma(GM_ADDR z) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, N * sizeof(float));
    GlobalTensor<float> zg;
    zg.SetGlobalBuffer((__gm__ float*)z + GetBlockIdx() * N, N);
    zg.SetValue(3, 42.0f);
    if (kClean) {
        DataCacheCleanAndInvalid<float, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(zg);
    }
    LocalTensor<float> t = q.AllocTensor<float>();
    DataCopy(t, zg, N);
    q.EnQue(t);
    t = q.DeQue<float>();
    q.FreeTensor(t);
}
extern "C" __global__ __aicore__ void scalar_then_dma_clean(GM_ADDR, GM_ADDR, GM_ADDR z) { ScalarThenDma<true>(z); }
extern "C" __global__ __aicore__ void scalar_then_dma(GM_ADDR, GM_ADDR, GM_ADDR z) { ScalarThenDma<false>(z); }
ENTRY(scalar_then_dma_clean)
ENTRY(scalar_then_dma)

// One float written, then DataCopy of `blocks` 32-byte blocks to GM: the first block is the
// whole-block idiom (its other bytes are just carried along), a second block is never written.
template <uint32_t kFloats>
__aicore__ inline void PartialBlockOut(GM_ADDR z) {
    TPipe pipe;
    TQue<QuePosition::VECOUT, 1> q;
    pipe.InitBuffer(q, 1, 64);
    GlobalTensor<float> zg;
    zg.SetGlobalBuffer((__gm__ float*)z + GetBlockIdx() * N, N);
    LocalTensor<float> t = q.AllocTensor<float>();
    Duplicate(t, 5.0f, 1);
    q.EnQue(t);
    t = q.DeQue<float>();
    DataCopy(zg, t, kFloats);
    q.FreeTensor(t);
}
extern "C" __global__ __aicore__ void one_block_partly_written(GM_ADDR, GM_ADDR, GM_ADDR z) { PartialBlockOut<8>(z); }
extern "C" __global__ __aicore__ void second_block_unwritten(GM_ADDR, GM_ADDR, GM_ADDR z) { PartialBlockOut<16>(z); }
ENTRY(one_block_partly_written)
ENTRY(second_block_unwritten)

// MTE2 -> V -> MTE3 with flags, then MTE3 copies bytes only MTE2 wrote: ordered transitively.
extern "C" __global__ __aicore__ void transitive_flags(GM_ADDR x, GM_ADDR, GM_ADDR z) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, N * sizeof(float));
    GlobalTensor<float> xg, zg;
    xg.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * N, N);
    zg.SetGlobalBuffer((__gm__ float*)z + GetBlockIdx() * N, N);
    LocalTensor<float> t = buf.Get<float>();
    DataCopy(t, xg, N);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    Muls(t, t, 2.0f, N / 2);              // V touches the first half only
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(zg, t, N);                   // the second half was last written by MTE2
}
ENTRY(transitive_flags)

// Not broken: KERNEL_LOG prints as CANN's CPU debug mode does (asc-tools cpudebug utils/kernel_log.h): on
// stdout, every level, each line led by the level, the block (with the core type and sub-block on a
// separated chip), the call's file:line and function, and the process id.
extern "C" __global__ __aicore__ void kernel_log(GM_ADDR, GM_ADDR, GM_ADDR) {
    if (GetBlockIdx() == 1) {
        KERNEL_LOG(KERNEL_WARN, "tile %d of %d", 3, 4);   // LINE:kernel_log
        KERNEL_LOG(KERNEL_DEBUG, "no arguments");
    }
}
ENTRY(kernel_log)

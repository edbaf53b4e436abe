// fusedsl's own kernels for inter-core synchronisation (written from the asc-devkit docs).
// Args: x [blocks * 16] int32, ws (zeroed int32 workspace), out [blocks * 16] int32.
// sync_all_sum: each block writes x's row to out, SyncAll, then adds every other block's row.
// ib_chain: block i waits for block i - 1 (IBWait), adds its row onto the running total, IBSet for i.
// poll_flag: blocks > 0 publish their row then a flag; block 0 polls the flags with GetValue.
// sync_all_missing: block 0 returns before SyncAll (the device would hang).
#include "tikicpulib.h"

using namespace AscendC;

constexpr uint32_t W = 16;   // one 64-byte GM line per row: scalar writes of different blocks never share a line

extern "C" __global__ __aicore__ void sync_all_sum(GM_ADDR x, GM_ADDR, GM_ADDR out)
{
    int32_t me = GetBlockIdx(), n = GetBlockNum();
    GlobalTensor<int32_t> xg, og;
    xg.SetGlobalBuffer((__gm__ int32_t*)x, n * W);
    og.SetGlobalBuffer((__gm__ int32_t*)out, n * W);
    LocalMemAllocator<Hardware::UB> ub;
    LocalTensor<int32_t> row = ub.Alloc<int32_t, W>();
    DataCopy(row, xg[me * W], W);
    PipeBarrier<PIPE_ALL>();
    DataCopy(og[me * W], row, W);
    SyncAll();
    int32_t sum[W] = {};
    for (int32_t b = 0; b < n; ++b) {
        for (uint32_t j = 0; j < W; ++j) {
            sum[j] += og.GetValue(b * W + j);
        }
    }
    SyncAll();   // everyone has read the rows before anyone overwrites its own
    for (uint32_t j = 0; j < W; ++j) {
        og.SetValue(me * W + j, sum[j]);
    }
    DataCacheCleanAndInvalid<int32_t, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(og[me * W]);
}

extern "C" __global__ __aicore__ void ib_chain(GM_ADDR x, GM_ADDR ws, GM_ADDR out)
{
    int32_t me = GetBlockIdx(), n = GetBlockNum();
    GlobalTensor<int32_t> xg, og, flags;
    xg.SetGlobalBuffer((__gm__ int32_t*)x, n * W);
    og.SetGlobalBuffer((__gm__ int32_t*)out, n * W);
    flags.SetGlobalBuffer((__gm__ int32_t*)ws, n * 8 + 8);
    LocalMemAllocator<Hardware::UB> ub;
    LocalTensor<int32_t> sync = ub.Alloc<int32_t, 8>();
    LocalTensor<int32_t> acc = ub.Alloc<int32_t, W>();
    LocalTensor<int32_t> row = ub.Alloc<int32_t, W>();
    DataCopy(row, xg[me * W], W);
    if (me > 0) {
        IBWait(flags, sync, me - 1, 0);
        DataCopy(acc, og[(me - 1) * W], W);
    } else {
        Duplicate(acc, 0, W);
    }
    PipeBarrier<PIPE_ALL>();
    Add(acc, acc, row, W);
    PipeBarrier<PIPE_ALL>();
    DataCopy(og[me * W], acc, W);
    PipeBarrier<PIPE_ALL>();
    IBSet(flags, sync, me, 0);
}

extern "C" __global__ __aicore__ void poll_flag(GM_ADDR x, GM_ADDR ws, GM_ADDR out)
{
    int32_t me = GetBlockIdx(), n = GetBlockNum();
    GlobalTensor<int32_t> xg, og, flags;
    xg.SetGlobalBuffer((__gm__ int32_t*)x, n * W);
    og.SetGlobalBuffer((__gm__ int32_t*)out, n * W);
    flags.SetGlobalBuffer((__gm__ int32_t*)ws, n * 16);
    if (me > 0) {
        for (uint32_t j = 0; j < W; ++j) {
            og.SetValue(me * W + j, 2 * xg.GetValue(me * W + j));
        }
        DataCacheCleanAndInvalid<int32_t, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(og[me * W]);
        flags.SetValue(me * 16, 1);   // one 64-byte line per block
        DataCacheCleanAndInvalid<int32_t, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(flags[me * 16]);
        return;
    }
    for (int32_t b = 1; b < n; ++b) {
        while (flags.GetValue(b * 16) == 0) {
        }
    }
    int32_t total = 0;
    for (uint32_t j = W; j < static_cast<uint32_t>(n) * W; ++j) {
        total += og.GetValue(j);
    }
    og.SetValue(0, total);
}

extern "C" __global__ __aicore__ void sync_all_missing(GM_ADDR, GM_ADDR, GM_ADDR)
{
    if (GetBlockIdx() == 0) {
        return;
    }
    SyncAll();   // LINE:sync_all_missing
}

// poll_unset: block 0 spins on a flag in ws that no block ever sets; the others end at once.
extern "C" __global__ __aicore__ void poll_unset(GM_ADDR, GM_ADDR ws, GM_ADDR)
{
    GlobalTensor<int32_t> flags;
    flags.SetGlobalBuffer((__gm__ int32_t*)ws, 32);
    if (GetBlockIdx() != 0) {
        return;
    }
    while (flags.GetValue(16) == 0) {   // LINE:poll_unset
    }
}

// param_reread: one block re-reads a GM word 4M times, with a vector instruction every 64K reads (a
// loop doing work between reads is not a poll), then writes the sum of what it read to out[0].
extern "C" __global__ __aicore__ void param_reread(GM_ADDR x, GM_ADDR, GM_ADDR out)
{
    GlobalTensor<int32_t> xg, og;
    xg.SetGlobalBuffer((__gm__ int32_t*)x, W);
    og.SetGlobalBuffer((__gm__ int32_t*)out, W);
    LocalMemAllocator<Hardware::UB> ub;
    LocalTensor<int32_t> row = ub.Alloc<int32_t, W>();
    int64_t total = 0;
    for (int32_t i = 0; i < (1 << 22); ++i) {
        total += xg.GetValue(0);
        if (i % (1 << 16) == 0) {
            Duplicate(row, i, W);
        }
    }
    og.SetValue(0, static_cast<int32_t>(total & 0x7FFFFFFF));
}

// atomic_max_rows: every block DataCopies its row of x onto row 0 of out with SetAtomicMax (int32).
extern "C" __global__ __aicore__ void atomic_max_rows(GM_ADDR x, GM_ADDR, GM_ADDR out)
{
    int32_t me = GetBlockIdx(), n = GetBlockNum();
    GlobalTensor<int32_t> xg, og;
    xg.SetGlobalBuffer((__gm__ int32_t*)x, n * W);
    og.SetGlobalBuffer((__gm__ int32_t*)out, W);
    LocalMemAllocator<Hardware::UB> ub;
    LocalTensor<int32_t> row = ub.Alloc<int32_t, W>();
    DataCopy(row, xg[me * W], W);
    PipeBarrier<PIPE_ALL>();
    SetAtomicMax<int32_t>();
    DataCopy(og, row, W);
    SetAtomicNone();
}

// bypass_poll: blocks > 0 write their doubled first element and a flag with WriteGmByPassDCache;
// block 0 polls the flags with ReadGmByPassDCache and writes the total.
extern "C" __global__ __aicore__ void bypass_poll(GM_ADDR x, GM_ADDR ws, GM_ADDR out)
{
    int32_t me = GetBlockIdx(), n = GetBlockNum();
    auto xs = reinterpret_cast<__gm__ int32_t*>(x);
    auto flags = reinterpret_cast<__gm__ int32_t*>(ws);
    auto o = reinterpret_cast<__gm__ int32_t*>(out);
    if (me > 0) {
        WriteGmByPassDCache<int32_t>(o + me * W, 2 * ReadGmByPassDCache<int32_t>(xs + me * W));
        DataSyncBarrier<MemDsbT::DDR>();
        WriteGmByPassDCache<int32_t>(flags + me * 16, 1);
        return;
    }
    int32_t total = 0;
    for (int32_t b = 1; b < n; ++b) {
        while (ReadGmByPassDCache<int32_t>(flags + b * 16) == 0) {
        }
        total += ReadGmByPassDCache<int32_t>(o + b * W);
    }
    WriteGmByPassDCache<int32_t>(o, total);
}

// Mixed kernel with its cube cores running (the x, ws arguments unused): the cube core releases its
// two vector cores (mode 2), vector core 0 of each block writes 1s to out[8 * block], vector core 1
// overwrites them with 2s after a mode-1 flag orders it behind core 0, then both report to the cube
// core (mode 2), which waits for them.  kVariant 1 leaves out the mode-1 flag (a race), 2 waits for a
// flag nobody sets.
template <int kVariant>
__aicore__ inline void CrossCore(GM_ADDR out)
{
    if ASCEND_IS_AIC {
        CrossCoreSetFlag<2, PIPE_FIX>(1);
        CrossCoreWaitFlag(2);   // LINE:xcore_aic_wait
        return;
    }
    CrossCoreWaitFlag(1);
    if (kVariant == 2) {
        CrossCoreWaitFlag(5);   // LINE:xcore_hang
    }
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 32);
    LocalTensor<float> t = buf.Get<float>();
    GlobalTensor<float> og;
    og.SetGlobalBuffer((__gm__ float*)out + GetBlockIdx() / 2 * 8, 8);
    uint32_t sub = GetSubBlockIdx();
    Duplicate(t, static_cast<float>(sub + 1), 8);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    if (sub == 0) {
        DataCopy(og, t, 8);
    }
    if (kVariant != 1) {
        CrossCoreSetFlag<1, PIPE_MTE3>(3);
        CrossCoreWaitFlag(3);
    }
    if (sub == 1) {
        DataCopy(og, t, 8);
    }
    CrossCoreSetFlag<2, PIPE_MTE3>(2);
}
extern "C" __global__ __aicore__ void cross_core(GM_ADDR, GM_ADDR, GM_ADDR out) { CrossCore<0>(out); }
extern "C" __global__ __aicore__ void cross_core_race(GM_ADDR, GM_ADDR, GM_ADDR out) { CrossCore<1>(out); }
extern "C" __global__ __aicore__ void cross_core_hang(GM_ADDR, GM_ADDR, GM_ADDR out) { CrossCore<2>(out); }
// The vector cores set flag 4 (mode 2) and end; the cube core waits for flag 6, which nobody will set.
extern "C" __global__ __aicore__ void cross_core_orphan(GM_ADDR, GM_ADDR, GM_ADDR)
{
    if ASCEND_IS_AIC {
        CrossCoreWaitFlag(4);
        CrossCoreWaitFlag(6);   // LINE:xcore_orphan
        return;
    }
    CrossCoreSetFlag<2, PIPE_MTE3>(4);
    CrossCoreSetFlag<2, PIPE_MTE3>(4);
}

// CrossCoreSetFlag's own rules broken on the vector cores of a mixed launch (the message names the line):
// PIPE_S is not a pipe modes 0-2 take, and the flag ids of modes 0-2 stop at 15.
extern "C" __global__ __aicore__ void cross_core_bad_pipe(GM_ADDR, GM_ADDR, GM_ADDR)
{
    if ASCEND_IS_AIV {
        CrossCoreSetFlag<2, PIPE_S>(1);   // LINE:xcore_bad_pipe
    }
}
extern "C" __global__ __aicore__ void cross_core_bad_flag(GM_ADDR, GM_ADDR, GM_ADDR)
{
    if ASCEND_IS_AIV {
        CrossCoreSetFlag<1, PIPE_MTE3>(16);   // LINE:xcore_bad_flag
    }
}

// mix_ids: every core of a mixed launch (cube cores running) writes what it sees — GetBlockIdx,
// GetBlockNum, GetSubBlockIdx, GetSubBlockNum, GetTaskRatio, whether it is the cube core — into its own
// 64-byte row of out: vector core v at row v, cube core b at row (vector cores) + b.  The cube core
// releases its vector cores (mode 2) and waits for all of them (mode 2) before writing.
extern "C" __global__ __aicore__ void mix_ids(GM_ADDR, GM_ADDR, GM_ADDR out)
{
    GlobalTensor<int32_t> og;
    og.SetGlobalBuffer((__gm__ int32_t*)out);
    int64_t row = GetBlockIdx();
    if ASCEND_IS_AIC {
        CrossCoreSetFlag<2, PIPE_FIX>(1);
        CrossCoreWaitFlag(2);
        row += GetBlockNum() * 2;   // after the vector rows of a 1:2 launch (the test sizes out for it)
    } else {
        CrossCoreWaitFlag(1);
    }
    const int32_t seen[6] = {static_cast<int32_t>(GetBlockIdx()), static_cast<int32_t>(GetBlockNum()),
                             static_cast<int32_t>(GetSubBlockIdx()), static_cast<int32_t>(GetSubBlockNum()),
                             static_cast<int32_t>(GetTaskRatio()), ASCEND_IS_AIC ? 1 : 0};
    for (int32_t j = 0; j < 6; ++j) {
        og.SetValue(row * 16 + j, seen[j]);
    }
    DataCacheCleanAndInvalid<int32_t, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(og[row * 16]);
    if ASCEND_IS_AIV {
        CrossCoreSetFlag<2, PIPE_MTE3>(2);
    }
}

#define MIX_ENTRY(name)                                                         \
    extern "C" int fusedsl_launch_##name(uint32_t blockDim, uint8_t** args) {   \
        AscendC::SetKernelMode(KernelMode::MIX_MODE);                           \
        fusedsl_cpu::EnableCubeCores();                                         \
        return fusedsl_cpu::Launch(name, blockDim, args[0], args[1], args[2]);  \
    }
MIX_ENTRY(cross_core)
MIX_ENTRY(cross_core_race)
MIX_ENTRY(cross_core_hang)
MIX_ENTRY(cross_core_orphan)
MIX_ENTRY(cross_core_bad_pipe)
MIX_ENTRY(cross_core_bad_flag)
MIX_ENTRY(mix_ids)
// the same kernel as __mix__(1, 1): one vector core per block
extern "C" int fusedsl_launch_mix_ids_1_1(uint32_t blockDim, uint8_t** args) {
    AscendC::SetKernelMode(KernelMode::MIX_AIC_1_1);
    fusedsl_cpu::EnableCubeCores();
    return fusedsl_cpu::Launch(mix_ids, blockDim, args[0], args[1], args[2]);
}

// GroupBarrier with 2 arrivers (blocks 3, 4: out row b = x row b) and 3 waiters (blocks 0-2: after
// Wait, out row b = out row 3 + out row 4); ws holds the barrier's 128-byte counters.  kBadIndex
// makes waiter 0 pass wait index 3 (only 0-2 exist).
template <bool kBadIndex>
__aicore__ inline void GroupBarrierRows(GM_ADDR x, GM_ADDR ws, GM_ADDR out)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> b0, b1;
    pipe.InitBuffer(b0, W * 4);
    pipe.InitBuffer(b1, W * 4);
    LocalTensor<int32_t> t0 = b0.Get<int32_t>(), t1 = b1.Get<int32_t>();
    GlobalTensor<int32_t> xg, og;
    xg.SetGlobalBuffer((__gm__ int32_t*)x, 5 * W);
    og.SetGlobalBuffer((__gm__ int32_t*)out, 5 * W);
    GroupBarrier<PipeMode::MTE3_MODE> bar(ws, 2, 3);
    uint32_t id = GetBlockIdx();
    if (id >= 3) {
        DataCopy(t0, xg[id * W], W);
        SetFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_MTE3>(EVENT_ID0);
        DataCopy(og[id * W], t0, W);
        bar.Arrive(id - 3);
        return;
    }
    bar.Wait(kBadIndex && id == 0 ? 3 : id);   // LINE:group_wait
    DataCopy(t0, og[3 * W], W);
    DataCopy(t1, og[4 * W], W);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Add(t0, t0, t1, W);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(og[id * W], t0, W);
}
extern "C" __global__ __aicore__ void group_barrier(GM_ADDR x, GM_ADDR ws, GM_ADDR out) { GroupBarrierRows<false>(x, ws, out); }
extern "C" __global__ __aicore__ void group_barrier_bad(GM_ADDR x, GM_ADDR ws, GM_ADDR out) { GroupBarrierRows<true>(x, ws, out); }

// Blocks in GetBlockIdx() order (WaitPreBlock / NotifyNextBlock): each sets out row 0 to
// out * 3 + (block + 1), an order-dependent result; ws is the gmWorkspace.  kSkipWait makes block 0
// notify without waiting (refused).
template <bool kSkipWait>
__aicore__ inline void InOrder(GM_ADDR ws, GM_ADDR out)
{
    TPipe pipe;
    TBuf<TPosition::VECCALC> wb, rb;
    pipe.InitBuffer(wb, GetBlockNum() * 32 + 32);
    pipe.InitBuffer(rb, W * 4);
    LocalTensor<int32_t> ubWs = wb.Get<int32_t>(), row = rb.Get<int32_t>();
    GlobalTensor<int32_t> gws, og;
    gws.SetGlobalBuffer((__gm__ int32_t*)ws, GetBlockNum() * 8);
    og.SetGlobalBuffer((__gm__ int32_t*)out, W);
    InitDetermineComputeWorkspace(gws, ubWs);
    if (!(kSkipWait && GetBlockIdx() == 0)) {
        WaitPreBlock(gws, ubWs);
    }
    DataCopy(row, og, W);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Muls(row, row, 3, W);
    Adds(row, row, static_cast<int32_t>(GetBlockIdx() + 1), W);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(og, row, W);
    NotifyNextBlock(gws, ubWs);   // LINE:notify
}
extern "C" __global__ __aicore__ void in_order(GM_ADDR, GM_ADDR ws, GM_ADDR out) { InOrder<false>(ws, out); }
extern "C" __global__ __aicore__ void in_order_skip(GM_ADDR, GM_ADDR ws, GM_ADDR out) { InOrder<true>(ws, out); }

#define SYNC_ENTRY(name)                                                        \
    extern "C" int fusedsl_launch_##name(uint32_t blockDim, uint8_t** args) {   \
        AscendC::SetKernelMode(KernelMode::AIV_MODE);                           \
        return fusedsl_cpu::Launch(name, blockDim, args[0], args[1], args[2]);  \
    }
SYNC_ENTRY(sync_all_sum)
SYNC_ENTRY(ib_chain)
SYNC_ENTRY(poll_flag)
SYNC_ENTRY(sync_all_missing)
SYNC_ENTRY(poll_unset)
SYNC_ENTRY(param_reread)
SYNC_ENTRY(atomic_max_rows)
SYNC_ENTRY(bypass_poll)
SYNC_ENTRY(group_barrier)
SYNC_ENTRY(group_barrier_bad)
SYNC_ENTRY(in_order)
SYNC_ENTRY(in_order_skip)

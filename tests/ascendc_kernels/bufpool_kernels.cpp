// TBufPool and EXTERN_IMPL_BUFPOOL (the asc-devkit TBufPool and 自定义TBufPool pages), one build:
// `pools` runs a pool and a pool laid over it one after the other, two nested pools sharing
// their parent's bytes, and a user-written pool that places a queue's buffers out of order and
// shares a TBuf; `whole_ub` plans the UB a TPipe may plan through one pool; `pool_misuse` breaks
// one rule per mode.
#include "kernel_operator.h"

using namespace AscendC;

constexpr uint32_t N = 256;             // floats per part
constexpr uint32_t BYTES = N * sizeof(float);

// A pool class of the user's own: each TQue's buffers go in reverse order with a 32-byte gap
// between them, a TBuf after them.
class ReversePool {
public:
    ReversePool() { Init(); }

    template <class Q>
    bool InitBuffer(Q& que, uint8_t num, uint32_t len) {
        TBufHandle first = GetBufHandle(GetCurBufSize());
        uint32_t base = GetCurAddr();
        que.InitStartBufHandle(first, num, len);
        for (uint32_t i = 0; i < num; ++i) {
            que.InitBufHandle(this, i, first, base + (num - 1 - i) * (len + 32), len);   // LINE:outside
        }
        SetCurAddr(base + num * (len + 32));
        SetCurBufSize(GetCurBufSize() + num);
        return true;
    }

    template <TPosition P>
    bool InitBuffer(TBuf<P>& buf, uint32_t len) {
        TBufHandle first = GetBufHandle(GetCurBufSize());
        buf.InitStartBufHandle(first, 1, len);
        buf.InitBufHandle(this, 0, first, GetCurAddr(), len);
        SetCurAddr(GetCurAddr() + len);
        SetCurBufSize(GetCurBufSize() + 1);
        return true;
    }

    EXTERN_IMPL_BUFPOOL(ReversePool, TPosition::VECCALC, 8);
};

template <typename Op>
__aicore__ inline void Binary(TQue<TPosition::VECIN, 1>& qa, TQue<TPosition::VECIN, 1>& qb,
                              TQue<TPosition::VECOUT, 1>& qo, GlobalTensor<float>& x, GlobalTensor<float>& y,
                              GlobalTensor<float> out, Op op) {
    LocalTensor<float> a = qa.AllocTensor<float>();
    LocalTensor<float> b = qb.AllocTensor<float>();
    DataCopy(a, x, N);
    DataCopy(b, y, N);
    qa.EnQue(a);
    qb.EnQue(b);
    a = qa.DeQue<float>();
    b = qb.DeQue<float>();
    LocalTensor<float> o = qo.AllocTensor<float>();
    op(o, a, b);
    qo.EnQue(o);
    qa.FreeTensor(a);
    qb.FreeTensor(b);
    o = qo.DeQue<float>();
    DataCopy(out, o, N);
    qo.FreeTensor(o);
}

// out: 5 x N floats = x + y | x * y | x - y | max(x, y) | x + y again (the user pool, y through a TBuf);
// info: the UB offsets of the buffers, to check where each pool placed them.
extern "C" __global__ __aicore__ void pools(GM_ADDR x, GM_ADDR y, GM_ADDR out, GM_ADDR info) {
    TPipe pipe;
    GlobalTensor<float> xg, yg, og;
    xg.SetGlobalBuffer((__gm__ float*)x, N);
    yg.SetGlobalBuffer((__gm__ float*)y, N);
    og.SetGlobalBuffer((__gm__ float*)out, 5 * N);
    GlobalTensor<int32_t> ig;
    ig.SetGlobalBuffer((__gm__ int32_t*)info, 16);
    auto where = [&ig](int i, TQue<TPosition::VECIN, 1>& q) {
        LocalTensor<float> t = q.AllocTensor<float>();
        ig.SetValue(i, static_cast<int32_t>(t.GetPhyAddr()));
        q.FreeTensor(t);
    };

    // Two pools over the same bytes, one after the other: Reset() switches.
    TBufPool<TPosition::VECCALC> first, second;
    TQue<TPosition::VECIN, 1> a1, b1, a2, b2;
    TQue<TPosition::VECOUT, 1> o1, o2;
    pipe.InitBufPool(first, 3 * BYTES);
    pipe.InitBufPool(second, 3 * BYTES - 20, first);   // rounded up to 32 bytes: as long as `first`
    first.InitBuffer(a1, 1, BYTES);
    first.InitBuffer(b1, 1, BYTES);
    first.InitBuffer(o1, 1, BYTES);
    where(0, b1);
    Binary(a1, b1, o1, xg, yg, og[0], [](auto& o, auto& a, auto& b) { Add(o, a, b, N); });
    first.Reset();
    second.InitBuffer(a2, 1, BYTES);
    second.InitBuffer(b2, 1, BYTES);
    second.InitBuffer(o2, 1, BYTES);
    where(1, b2);
    Binary(a2, b2, o2, xg, yg, og[N], [](auto& o, auto& a, auto& b) { Mul(o, a, b, N); });
    second.Reset();

    // Nested pools: `inner2` lies over `inner1`, both in `outer`, which also plans a queue of its own.
    TBufPool<TPosition::VECCALC> outer, inner1, inner2;
    TQue<TPosition::VECIN, 1> keep, a3, a4;
    TQue<TPosition::VECOUT, 1> o3, o4;
    pipe.InitBufPool(outer, 4 * BYTES);
    outer.InitBufPool(inner1, 2 * BYTES);
    outer.InitBuffer(keep, 1, BYTES);
    outer.InitBufPool(inner2, 2 * BYTES, inner1);
    inner1.InitBuffer(a3, 1, BYTES);
    inner1.InitBuffer(o3, 1, BYTES);
    where(2, keep);
    where(3, a3);
    Binary(a3, keep, o3, xg, yg, og[2 * N], [](auto& o, auto& a, auto& b) { Sub(o, a, b, N); });
    inner1.Reset();
    inner2.InitBuffer(a4, 1, BYTES);
    inner2.InitBuffer(o4, 1, BYTES);
    where(4, a4);
    Binary(a4, keep, o4, xg, yg, og[3 * N], [](auto& o, auto& a, auto& b) { Max(o, a, b, N); });
    inner2.Reset();
    outer.Reset();

    // The user's pool: a VECIN queue of two buffers placed in reverse order, and a TBuf for y,
    // filled by a DataCopy that the queue's EnQue/DeQue (MTE2 -> V) orders before the Add.
    ReversePool mine;
    TQue<TPosition::VECIN, 2> q5;
    TQue<TPosition::VECOUT, 1> o5;
    TBuf<TPosition::VECIN> yb;
    pipe.InitBufPool(mine, 4 * BYTES + 64);
    ig.SetValue(5, static_cast<int32_t>(mine.GetCurAddr()));
    mine.InitBuffer(q5, 2, BYTES);
    mine.InitBuffer(yb, BYTES);
    mine.InitBuffer(o5, 1, BYTES - 64);   // 64 bytes of the pool stay free
    ig.SetValue(6, mine.GetCurBufSize());
    LocalTensor<float> first_buf = q5.AllocTensor<float>();
    LocalTensor<float> second_buf = q5.AllocTensor<float>();
    ig.SetValue(7, static_cast<int32_t>(first_buf.GetPhyAddr()));
    ig.SetValue(8, static_cast<int32_t>(second_buf.GetPhyAddr()));
    ig.SetValue(9, static_cast<int32_t>(yb.Get<float>().GetPhyAddr()));
    q5.FreeTensor(second_buf);
    LocalTensor<float> yl = yb.Get<float>();
    DataCopy(first_buf, xg, N);
    DataCopy(yl, yg, N);
    q5.EnQue(first_buf);
    LocalTensor<float> xl = q5.DeQue<float>();
    LocalTensor<float> o = o5.AllocTensor<float>();
    Add(o, xl, yl, N - 16);
    o5.EnQue(o);
    q5.FreeTensor(xl);
    o = o5.DeQue<float>();
    DataCopy(og[4 * N], o, N - 16);
    o5.FreeTensor(o);
    mine.Reset();
    pipe.Reset();
}

// The UB a TPipe may plan, through one pool and one TBuf of `info[0]` bytes; its last 64 floats
// are set to 3 and copied to out.
extern "C" __global__ __aicore__ void whole_ub(GM_ADDR, GM_ADDR, GM_ADDR out, GM_ADDR info) {
    TPipe pipe;
    GlobalTensor<int32_t> ig;
    ig.SetGlobalBuffer((__gm__ int32_t*)info, 16);
    uint32_t bytes = static_cast<uint32_t>(ig.GetValue(0));
    TBufPool<TPosition::VECCALC, 1> all;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBufPool(all, bytes);   // LINE:whole_pool
    all.InitBuffer(buf, bytes);
    LocalTensor<float> t = buf.Get<float>()[bytes / sizeof(float) - 64];
    Duplicate(t, 3.0f, 64);
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    GlobalTensor<float> og;
    og.SetGlobalBuffer((__gm__ float*)out, 64);
    DataCopy(og, t, 64);
}

// One broken rule per mode (info[0]).
extern "C" __global__ __aicore__ void pool_misuse(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR info) {
    TPipe pipe;
    GlobalTensor<int32_t> ig;
    ig.SetGlobalBuffer((__gm__ int32_t*)info, 16);
    const int mode = ig.GetValue(0);
    TBufPool<TPosition::VECCALC> a, b;
    TBufPool<TPosition::VECCALC, 2> small;
    TQue<TPosition::VECIN, 1> q1, q2, q3;
    ReversePool mine;
    pipe.InitBufPool(a, 1024);
    if (mode == 1) {        // the second pool is used while the first still is
        pipe.InitBufPool(b, 1024, a);
        a.InitBuffer(q1, 1, 512);
        b.InitBuffer(q2, 1, 512);   // LINE:no_reset
    } else if (mode == 2) { // Reset with a tensor still allocated
        a.InitBuffer(q1, 1, 512);
        LocalTensor<float> t = q1.AllocTensor<float>();
        a.Reset();   // LINE:held
        q1.FreeTensor(t);
    } else if (mode == 3) { // more than the pool has
        a.InitBuffer(q1, 2, 600);   // LINE:overflow
    } else if (mode == 4) { // a shared pool longer than the one it lies over
        pipe.InitBufPool(b, 1040, a);   // LINE:longer
    } else if (mode == 5) { // more buffers than bufIDSize
        pipe.InitBufPool(small, 1024);
        small.InitBuffer(q1, 1, 32);
        small.InitBuffer(q2, 1, 32);
        small.InitBuffer(q3, 1, 32);   // LINE:ids
    } else if (mode == 6) { // a user pool's buffer placed past the pool's end
        pipe.InitBufPool(mine, 512);
        mine.InitBuffer(q1, 2, 256);   // fails in ReversePool::InitBuffer's InitBufHandle call
    }
}

#define POOL_ENTRY(name)                                                                  \
    extern "C" int fusedsl_launch_##name(uint32_t blockDim, uint8_t** args) {             \
        return fusedsl_cpu::Launch(name, blockDim, args[0], args[1], args[2], args[3]);  \
    }
POOL_ENTRY(pools)
POOL_ENTRY(whole_ub)
POOL_ENTRY(pool_misuse)

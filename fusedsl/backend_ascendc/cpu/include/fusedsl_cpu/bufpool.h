// fusedsl CPU implementation of the Ascend C API: TBufPool, the user-managed pools of UB that
// TPipe::InitBufPool carves out of the UB plan (or lays over another pool's bytes), and
// EXTERN_IMPL_BUFPOOL, a pool class the user writes.
//
// The rules enforced (asc-devkit docs, 基础API/资源管理/TBufPool and 自定义TBufPool):
// - a pool's length is rounded up to 32 bytes; a pool laid over another (the shared form) is no
//   longer than it and starts where it starts; a nested pool fits in what its parent has left;
// - a pool hands out at most bufIDSize buffers (1..16); a nested pool's bufIDSize is bounded by what its
//   parent has left (the shared form: no more than the parent's own bufIDSize);
// - pools that share bytes are used one at a time: switching to one needs Reset() of the other
//   first, and Reset() needs every tensor of the pool's queues freed (TBufPool简介, constraints
//   2-4; the automatic synchronisation of AllocTensor/FreeTensor relies on it);
// - fusedsl models UB pools (VECIN/VECOUT/VECCALC); the L1 ones (A1/B1/C1) are refused as TPipe's
//   L1 queues are.
// Every chip fusedsl targets has TBufPool (910B, 310P AI Core, 910A); 310B does not.
#pragma once

#include <algorithm>

#include "tensor.h"

namespace fusedsl_cpu {

struct PoolCore {
    PoolCore(TPosition p, uint32_t ids, bool user) : pos(p), id_limit(ids), user_defined(user) {
        handles.resize(ids);
        for (uint32_t i = 0; i < ids; ++i) {
            handles[i] = PoolHandle(this, i);
        }
    }
    PoolCore(const PoolCore&) = delete;
    PoolCore& operator=(const PoolCore&) = delete;
    ~PoolCore() {
        // A pool that goes out of scope before its TPipe leaves the pipe's list.
        Runtime& rt = RT();
        if (rt.in_block && rt.core.pipe != nullptr && generation == rt.core.generation) {
            auto& pools = rt.core.pipe->fs_pools;
            pools.erase(std::remove(pools.begin(), pools.end(), this), pools.end());
        }
    }

    const char* Kind() const { return user_defined ? "EXTERN_IMPL_BUFPOOL pool" : "TBufPool"; }
    std::string Where() const {
        return Format("%s<%s> (UB [%u, %u))", Kind(), PositionName(pos), start, start + len);
    }
    bool Within(const PoolCore* outer) const {
        for (const PoolCore* p = this; p != nullptr; p = p->parent) {
            if (p == outer) {
                return true;
            }
        }
        return false;
    }

    TPosition pos;
    uint32_t id_limit;
    bool user_defined;
    bool init = false;
    bool in_use = false;         // used since its last Reset (or since it was planned)
    uint64_t generation = 0;
    uint32_t start = 0;
    uint32_t len = 0;
    uint32_t cursor = 0;         // next free UB byte (GetCurAddr)
    uint32_t ids = 0;            // buffer ids handed out (GetCurBufSize)
    PoolCore* parent = nullptr;  // the pool it was carved from, if any
    std::vector<PoolHandle> handles;
    std::vector<QueueBase*> queues;
    std::vector<BufBase*> bufs;
};

inline void RequirePool(const char* api, const PoolCore& p, const char* which = "this") {
    if (!p.init || p.generation != CurCore().generation) {
        Fail("%s: %s %s<%s> was not initialised; call TPipe::InitBufPool (or InitBufPool of the pool that "
             "holds it) first", api, which, p.Kind(), PositionName(p.pos));
    }
}

inline void CheckPoolPosition(const char* api, TPosition pool, TPosition member, const char* kind) {
    if (!IsUbPosition(member)) {
        Fail("%s: a %s<%s> in a UB pool; a pool's TQue/TBuf must be in the pool's memory (the TBufPool InitBuffer "
             "page: the same physical memory), and %s<%s> is in UB", api, kind, PositionName(member), kind,
             PositionName(pool));
    }
}

// Tensors of the pool's (and its nested pools') queues still allocated or queued.
inline int PoolHeld(const PoolCore& p) {
    int held = 0;
    auto count = [&held](const PoolCore& q) {
        for (const QueueBase* que : q.queues) {
            if (que->fs_pool != &q || que->fs_generation != q.generation) {
                continue;   // planned again since, by another pool or by TPipe
            }
            for (uint8_t s : que->fs_state) {
                held += s != kFree;
            }
        }
    };
    count(p);
    if (TPipeState* pipe = CurCore().pipe) {
        for (const PoolCore* q : pipe->fs_pools) {
            if (q != &p && q->Within(&p)) {
                count(*q);
            }
        }
    }
    return held;
}

inline void PoolTouch(const char* api, PoolCore* p) {
    RequirePool(api, *p);
    if (p->in_use) {
        return;
    }
    if (TPipeState* pipe = CurCore().pipe) {
        for (const PoolCore* q : pipe->fs_pools) {
            if (q == p || !q->in_use || q->Within(p) || p->Within(q)) {
                continue;
            }
            if (q->start < p->start + p->len && p->start < q->start + q->len) {
                Fail("%s: %s shares UB with %s, which is still in use; call Reset() on that pool before switching "
                     "to this one (TBufPool: pools over the same memory are used one at a time, and the buffers of "
                     "different pools are not mixed)", api, p->Where().c_str(), q->Where().c_str());
            }
        }
    }
    for (PoolCore* a = p; a != nullptr; a = a->parent) {
        a->in_use = true;
    }
}

inline void ForgetPools(TPipeState& pipe) {
    for (PoolCore* p : pipe.fs_pools) {
        p->init = false;
    }
    pipe.fs_pools.clear();
}

inline void PoolPlace(PoolCore& p, uint32_t start, uint32_t len, PoolCore* parent) {
    p.init = true;
    p.in_use = false;
    p.generation = CurCore().generation;
    p.start = start;
    p.len = len;
    p.cursor = start;
    p.ids = 0;
    p.parent = parent;
    p.queues.clear();
    p.bufs.clear();
    if (TPipeState* pipe = CurCore().pipe) {
        pipe->fs_pools.push_back(&p);
    }
}

inline uint32_t PoolLength(const char* api, const PoolCore& p, uint32_t len, const PoolCore* shared) {
    if (p.init && p.generation == CurCore().generation) {
        Fail("%s: this %s is already initialised; TPipe::Reset() frees the whole plan", api, p.Where().c_str());
    }
    if (len == 0) {
        Fail("%s: a %s<%s> of 0 bytes", api, p.Kind(), PositionName(p.pos));
    }
    uint32_t each = static_cast<uint32_t>(RoundUp(len, 32));
    if (shared != nullptr) {
        RequirePool(api, *shared, "the shared");
        if (IsUbPosition(p.pos) != IsUbPosition(shared->pos)) {
            Fail("%s: a %s<%s> cannot share the memory of %s (the InitBufPool page: both pools must be in the same "
                 "physical memory)", api, p.Kind(), PositionName(p.pos), shared->Where().c_str());
        }
        if (each > shared->len) {
            Fail("%s: %u bytes (rounded up to 32) laid over %s, which has %u; the length may not exceed the shared "
                 "pool's (the InitBufPool page)", api, each, shared->Where().c_str(), shared->len);
        }
    }
    return each;
}

inline bool PipeInitBufPool(TPipeState& pipe_state, PoolCore& p, uint32_t len, PoolCore* shared) {
    const char* api = "TPipe::InitBufPool";
    uint32_t each = PoolLength(api, p, len, shared);
    CheckCoreHasUb(api);
    uint32_t start = 0;
    if (shared != nullptr) {
        start = shared->start;
    } else {
        start = static_cast<AscendC::TPipe&>(pipe_state).fs_ReservePool(p.pos, p.id_limit, each);
    }
    if (CurCore().pipe != &pipe_state) {
        Fail("%s: this TPipe is not the kernel's current one", api);
    }
    PoolPlace(p, start, each, shared != nullptr ? shared->parent : nullptr);
    return true;
}

// TBufPool::InitBufPool: a pool nested in `parent`, or laid over one of parent's pools.
inline bool PoolInitBufPool(PoolCore& parent, PoolCore& p, uint32_t len, PoolCore* shared) {
    const char* api = "TBufPool::InitBufPool";
    RequirePool(api, parent);
    uint32_t each = PoolLength(api, p, len, shared);
    uint32_t start = 0;
    if (shared != nullptr) {
        if (!shared->Within(&parent) || shared == &parent) {
            Fail("%s: the shared %s is not a pool of this %s; lay a pool over its sibling", api,
                 shared->Where().c_str(), parent.Where().c_str());
        }
        if (p.id_limit > parent.id_limit) {
            Fail("%s: a pool of %u buffer ids laid over %s of %s, which has %u (the TBufPool constructor page: a "
                 "shared pool's bufIDSize may not exceed its parent's)", api, p.id_limit, shared->Where().c_str(),
                 parent.Where().c_str(), parent.id_limit);
        }
        start = shared->start;
    } else {
        if (p.id_limit > parent.id_limit - parent.ids) {
            Fail("%s: a pool of %u buffer ids in %s, which has %u of its %u left (the TBufPool constructor page: a "
                 "nested pool's bufIDSize may not exceed what its parent has left)", api, p.id_limit, parent.Where().c_str(),
                 parent.id_limit - parent.ids, parent.id_limit);
        }
        if (static_cast<uint64_t>(parent.cursor) + each > parent.start + parent.len) {
            Fail("%s: %u bytes do not fit %s, which has %u of its %u bytes left", api, each, parent.Where().c_str(),
                 parent.start + parent.len - parent.cursor, parent.len);
        }
        // The constructor page bounds a nested pool's bufIDSize by what its parent has left; the ids
        // stay the parent's to give out (CANN's tbufpool_management nests a 4-id pool in a 4-id
        // pool that then plans a queue of its own).
        start = parent.cursor;
        parent.cursor += each;
    }
    PoolPlace(p, start, each, &parent);
    return true;
}

// The next `num` x `each` bytes and `num` ids of the pool, for a TQue or TBuf.
inline uint32_t PoolTake(const char* api, PoolCore& p, uint32_t num, uint32_t each, const char* kind) {
    if (p.ids + num > p.id_limit) {
        Fail("%s: %s<%s> needs %u buffer ids and %s has %u of its %u left (bufIDSize)", api, kind,
             PositionName(p.pos), num, p.Where().c_str(), p.id_limit - p.ids, p.id_limit);
    }
    uint64_t need = static_cast<uint64_t>(num) * each;
    if (p.cursor + need > static_cast<uint64_t>(p.start) + p.len) {
        Fail("%s: %u x %u bytes for a %s do not fit %s, which has %u of its %u bytes left", api, num, each, kind,
             p.Where().c_str(), p.start + p.len - p.cursor, p.len);
    }
    uint32_t off = p.cursor;
    p.cursor += static_cast<uint32_t>(need);
    p.ids += num;
    FreshUb(off, need);
    return off;
}

template <class Q>
bool PoolInitQueue(PoolCore& p, Q& que, uint8_t num, uint32_t len) {
    const char* api = "TBufPool::InitBuffer";
    PoolTouch(api, &p);
    CheckPoolPosition(api, p.pos, que.fs_pos, "TQue");
    if (!que.fs_state.empty() && que.fs_generation == CurCore().generation) {
        Fail("%s: this TQue<%s> is already planned; a pool's buffers stay planned across Reset()", api,
             PositionName(que.fs_pos));
    }
    if (num == 0 || len == 0) {
        Fail("%s: TQue<%s> with num = %u and len = %u; both must be at least 1", api, PositionName(que.fs_pos), num,
             len);
    }
    uint32_t each = static_cast<uint32_t>(RoundUp(len, 32));
    uint32_t off = PoolTake(api, p, num, each, "TQue");
    std::vector<uint32_t> offsets;
    for (uint32_t i = 0; i < num; ++i) {
        offsets.push_back(off + i * each);
    }
    que.fs_Plan(std::move(offsets), each, &p);
    p.queues.push_back(&que);
    return true;
}

inline void PlanBuf(BufBase& buf, uint32_t off, uint32_t each, PoolCore* p) {
    buf.fs_offset = off;
    buf.fs_len = each;
    buf.fs_generation = CurCore().generation;
    buf.fs_init = true;
    buf.fs_pool = p;
    SetSlotState(off, each, kSlotPlain);
    p->bufs.push_back(&buf);
}

inline bool PoolInitBuf(PoolCore& p, BufBase& buf, uint32_t len) {
    const char* api = "TBufPool::InitBuffer";
    PoolTouch(api, &p);
    CheckPoolPosition(api, p.pos, buf.fs_pos, "TBuf");
    if (buf.fs_init && buf.fs_generation == CurCore().generation) {
        Fail("%s: this TBuf<%s> is already planned", api, PositionName(buf.fs_pos));
    }
    if (len == 0) {
        Fail("%s: TBuf<%s> with len = 0", api, PositionName(buf.fs_pos));
    }
    uint32_t each = static_cast<uint32_t>(RoundUp(len, 32));
    PlanBuf(buf, PoolTake(api, p, 1, each, "TBuf"), each, &p);
    return true;
}

inline void PoolReset(PoolCore& p) {
    const char* api = p.user_defined ? "Reset (EXTERN_IMPL_BUFPOOL)" : "TBufPool::Reset";
    RequirePool(api, p);
    int held = PoolHeld(p);
    if (held != 0) {
        Fail("%s: %d tensor(s) of the queues of %s are still allocated or enqueued; FreeTensor (after DeQue) them "
             "before switching pools (TBufPool: AllocTensor/FreeTensor and EnQue/DeQue are paired when a pool is "
             "switched; its synchronisation relies on it)", api, held, p.Where().c_str());
    }
    p.in_use = false;
    if (TPipeState* pipe = CurCore().pipe) {
        for (PoolCore* q : pipe->fs_pools) {
            if (q->Within(&p)) {
                q->in_use = false;
            }
        }
    }
    if (p.user_defined) {
        // The EXTERN_IMPL_BUFPOOL Reset page: the pool and the buffers it gave out are not usable afterwards.
        for (QueueBase* que : p.queues) {
            if (que->fs_pool == &p) {
                que->fs_state.clear();
                que->fs_pool = nullptr;
            }
        }
        for (BufBase* buf : p.bufs) {
            if (buf->fs_pool == &p) {
                buf->fs_init = false;
                buf->fs_pool = nullptr;
            }
        }
        p.queues.clear();
        p.bufs.clear();
        p.cursor = p.start;
        p.ids = 0;
    }
}

// ---- the user-defined pool's calls -----------------------------------------------------------

inline PoolHandle* PoolHandleAt(PoolCore& p, uint32_t offset) {
    RequirePool("GetBufHandle", p);
    if (offset >= p.id_limit) {
        Fail("GetBufHandle(%u): %s has buffer ids 0..%u (the GetBufHandle page: offset may not exceed BUFID_SIZE)",
             offset, p.Where().c_str(), p.id_limit - 1);
    }
    return &p.handles[offset];
}

inline void PoolSetCurAddr(PoolCore& p, uint32_t addr) {
    RequirePool("SetCurAddr", p);
    if (addr < p.start || addr > p.start + p.len) {
        Fail("SetCurAddr(%u): outside %s", addr, p.Where().c_str());
    }
    p.cursor = addr;
}

inline void PoolSetCurBufSize(PoolCore& p, uint32_t n) {
    RequirePool("SetCurBufSize", p);
    if (n > p.id_limit) {
        Fail("SetCurBufSize(%u): %s has %u buffer ids (BUFID_SIZE)", n, p.Where().c_str(), p.id_limit);
    }
    p.ids = n;
}

// The first of `num` buffer ids a user pool gives a TQue/TBuf; checked against the pool's ids.
inline PoolCore& HandleRange(const char* api, PoolHandle* first, uint32_t num) {
    if (first == nullptr || first->first == nullptr) {
        Fail("%s: no buffer handle; take it with the pool's GetBufHandle", api);
    }
    PoolCore& p = *first->first;
    RequirePool(api, p);
    if (first->second + num > p.id_limit) {
        Fail("%s: %u buffers from id %u of %s, which has ids 0..%u (BUFID_SIZE)", api, num, first->second,
             p.Where().c_str(), p.id_limit - 1);
    }
    return p;
}

// One buffer of a user pool's TQue/TBuf at UB byte `addr`: inside the pool, 32-byte aligned,
// `len` the length InitStartBufHandle gave.
inline uint32_t HandleBuffer(const char* api, PoolCore& p, PoolHandle* first, uint32_t index, uint32_t addr,
                             uint32_t len, uint32_t planned_len, uint32_t planned_num) {
    if (first == nullptr || first->first != &p) {
        Fail("%s: the buffer handle is not one of %s's (GetBufHandle of the pool passed)", api, p.Where().c_str());
    }
    if (index >= planned_num) {
        Fail("%s: buffer %u of a queue InitStartBufHandle gave %u buffers", api, index, planned_num);
    }
    if (len != planned_len) {
        Fail("%s: buffer %u has len %u, InitStartBufHandle gave %u", api, index, len, planned_len);
    }
    if (addr % 32 != 0) {
        Fail("%s: buffer %u at UB byte %u, which is not 32-byte aligned", api, index, addr);
    }
    if (addr < p.start || static_cast<uint64_t>(addr) + len > static_cast<uint64_t>(p.start) + p.len) {
        Fail("%s: buffer %u at UB [%u, %u) is outside %s", api, index, addr, addr + len, p.Where().c_str());
    }
    FreshUb(addr, len);
    return addr;
}

inline void QueueBase::InitStartBufHandle(PoolHandle* first, uint8_t num, uint32_t len, Site fs_site) {
    AtSite at(fs_site);
    const char* api = "InitStartBufHandle";
    PoolCore& p = HandleRange(api, first, num);
    CheckPoolPosition(api, p.pos, fs_pos, "TQue");
    if (num == 0 || len == 0) {
        Fail("%s: TQue<%s> with num = %u and len = %u; both must be at least 1", api, PositionName(fs_pos), num, len);
    }
    PoolTouch(api, &p);
    // Planned with no buffer yet: InitBufHandle places each one.
    fs_Plan(std::vector<uint32_t>(num, UINT32_MAX), static_cast<uint32_t>(RoundUp(len, 32)), &p);
    p.queues.push_back(this);
}

template <class P>
void QueueBase::InitBufHandle(P* bufPool, uint32_t index, PoolHandle* handle, uint32_t addr, uint32_t len,
                              Site fs_site) {
    AtSite at(fs_site);
    PoolCore& p = bufPool->fs_pool;
    if (fs_pool != &p || fs_generation != CurCore().generation) {
        Fail("InitBufHandle: call InitStartBufHandle with a handle of %s first", p.Where().c_str());
    }
    fs_offsets[index < fs_offsets.size() ? index : 0] =
        HandleBuffer("InitBufHandle", p, handle, index, addr, len, fs_len, static_cast<uint32_t>(fs_offsets.size()));
    SetSlotState(addr, len, kSlotIdle);
}

inline void BufBase::InitStartBufHandle(PoolHandle* first, uint8_t num, uint32_t len, Site fs_site) {
    AtSite at(fs_site);
    const char* api = "InitStartBufHandle";
    PoolCore& p = HandleRange(api, first, num);
    CheckPoolPosition(api, p.pos, fs_pos, "TBuf");
    if (num != 1 || len == 0) {
        Fail("%s: a TBuf<%s> has one buffer of at least 1 byte (num = %u, len = %u)", api, PositionName(fs_pos), num,
             len);
    }
    PoolTouch(api, &p);
    fs_init = false;
    fs_pool = &p;
    fs_len = static_cast<uint32_t>(RoundUp(len, 32));
    fs_generation = CurCore().generation;
}

template <class P>
void BufBase::InitBufHandle(P* bufPool, uint32_t index, PoolHandle* handle, uint32_t addr, uint32_t len,
                            Site fs_site) {
    AtSite at(fs_site);
    PoolCore& p = bufPool->fs_pool;
    if (fs_pool != &p || fs_generation != CurCore().generation) {
        Fail("InitBufHandle: call InitStartBufHandle with a handle of %s first", p.Where().c_str());
    }
    PlanBuf(*this, HandleBuffer("InitBufHandle", p, handle, index, addr, len, fs_len, 1), fs_len, &p);
}

}  // namespace fusedsl_cpu

namespace AscendC {

using TBufHandle = fusedsl_cpu::PoolHandle*;

template <TPosition pos, uint32_t bufIDSize = 4>
class TBufPool {
    static_assert(bufIDSize >= 1 && bufIDSize <= 16, "TBufPool: bufIDSize is 1..16 (the TBufPool constructor page)");

public:
    TBufPool() : fs_pool(pos, bufIDSize, false) {}

    template <class T>
    bool InitBufPool(T& bufPool, uint32_t len, FUSEDSL_CPU_SITE) {
        fusedsl_cpu::AtSite at(fs_site);
        return fusedsl_cpu::PoolInitBufPool(fs_pool, bufPool.fs_pool, len, nullptr);
    }
    template <class T, class U>
    bool InitBufPool(T& bufPool, uint32_t len, U& shareBuf, FUSEDSL_CPU_SITE) {
        fusedsl_cpu::AtSite at(fs_site);
        return fusedsl_cpu::PoolInitBufPool(fs_pool, bufPool.fs_pool, len, &shareBuf.fs_pool);
    }
    template <class T>
    bool InitBuffer(T& que, uint8_t num, uint32_t len, FUSEDSL_CPU_SITE) {
        static_assert(std::is_base_of_v<fusedsl_cpu::QueueBase, T>, "TBufPool::InitBuffer(que, num, len) takes a TQue");
        fusedsl_cpu::AtSite at(fs_site);
        return fusedsl_cpu::PoolInitQueue(fs_pool, que, num, len);
    }
    template <TPosition bufPos>
    bool InitBuffer(TBuf<bufPos>& buf, uint32_t len, FUSEDSL_CPU_SITE) {
        fusedsl_cpu::AtSite at(fs_site);
        return fusedsl_cpu::PoolInitBuf(fs_pool, buf, len);
    }
    void Reset(FUSEDSL_CPU_SITE) {
        fusedsl_cpu::AtSite at(fs_site);
        fusedsl_cpu::PoolReset(fs_pool);
    }

    fusedsl_cpu::PoolCore fs_pool;
};

}  // namespace AscendC

// A user-written pool class (the EXTERN_IMPL_BUFPOOL page): the macro gives it the pool state
// TPipe::InitBufPool fills in and Init, Reset, GetBufHandle, Get/SetCurAddr, Get/SetCurBufSize;
// the class's own InitBuffer places its TQue/TBuf buffers with their InitStartBufHandle and
// InitBufHandle.  UB addresses are byte offsets in UB.
#define EXTERN_IMPL_BUFPOOL(EXT_BUFPOOL, POSITION, BUFID_SIZE)                                                  \
public:                                                                                                      \
    ::fusedsl_cpu::PoolCore fs_pool{POSITION, static_cast<uint32_t>(BUFID_SIZE), true};                      \
    void Init() {}                                                                                           \
    void Reset(FUSEDSL_CPU_SITE) {                                                                           \
        ::fusedsl_cpu::AtSite at(fs_site);                                                                   \
        ::fusedsl_cpu::PoolReset(fs_pool);                                                                   \
    }                                                                                                        \
    ::AscendC::TBufHandle GetBufHandle(uint8_t offset, FUSEDSL_CPU_SITE) {                                   \
        ::fusedsl_cpu::AtSite at(fs_site);                                                                   \
        return ::fusedsl_cpu::PoolHandleAt(fs_pool, offset);                                                 \
    }                                                                                                        \
    uint32_t GetCurAddr(FUSEDSL_CPU_SITE) {                                                                  \
        ::fusedsl_cpu::AtSite at(fs_site);                                                                   \
        ::fusedsl_cpu::RequirePool("GetCurAddr", fs_pool);                                                   \
        return fs_pool.cursor;                                                                               \
    }                                                                                                        \
    void SetCurAddr(uint32_t curAddr, FUSEDSL_CPU_SITE) {                                                    \
        ::fusedsl_cpu::AtSite at(fs_site);                                                                   \
        ::fusedsl_cpu::PoolSetCurAddr(fs_pool, curAddr);                                                     \
    }                                                                                                        \
    uint8_t GetCurBufSize(FUSEDSL_CPU_SITE) {                                                                \
        ::fusedsl_cpu::AtSite at(fs_site);                                                                   \
        ::fusedsl_cpu::RequirePool("GetCurBufSize", fs_pool);                                                \
        return static_cast<uint8_t>(fs_pool.ids);                                                            \
    }                                                                                                        \
    void SetCurBufSize(uint8_t curBufSize, FUSEDSL_CPU_SITE) {                                               \
        ::fusedsl_cpu::AtSite at(fs_site);                                                                   \
        ::fusedsl_cpu::PoolSetCurBufSize(fs_pool, curBufSize);                                               \
    }

// fusedsl CPU implementation of the Ascend C API: tensors, TPipe/TQue/TBuf, synchronisation,
// block indices and other kernel-side utilities.
#pragma once

#include <array>
#include <deque>

#include "runtime.h"

namespace fusedsl_cpu {

inline void CheckEvent(const char* api, HardEvent evt, int32_t id);
// Defined in cube.h: the address of byte `addr` of a position's memory (checked), and a local
// tensor's offset in its memory.
inline uint8_t* LocalAddress(const char* api, TPosition pos, uint64_t addr, uint64_t bytes);
inline uint64_t LocalOffset(const void* p);

// LocalAddress checked at the caller's line: a constructor's checks run in its initialiser list,
// before a guard in its body could name the site.
inline uint8_t* LocalAddressAt(const Site& site, const char* api, TPosition pos, uint64_t addr, uint64_t bytes) {
    AtSite at(site);
    return LocalAddress(api, pos, addr, bytes);
}

// PipeBarrier<PIPE_ALL>: every pipe waits for everything issued so far.
inline void SyncAllPipes() {
    Core& c = CurCore();
    for (auto& row : c.synced) {
        for (uint32_t& v : row) {
            v = c.clock;
        }
    }
}

}  // namespace fusedsl_cpu

namespace AscendC {

// GM cache modes (SetL2CacheHint) and access kinds, CANN's values.
enum class CacheMode { CACHE_MODE_DISABLE = 0, CACHE_MODE_NORMAL = 1, CACHE_MODE_LAST = 2, CACHE_MODE_PERSISTENT = 4 };
enum class CacheRwMode { READ = 1, WRITE = 2, RW = 3 };

enum class DataFormat : uint8_t { ND = 0, NZ, NCHW, NC1HWC0, NHWC, NCDHW, NDC1HWC0, FRACTAL_Z_3D };

constexpr int32_t K_MAX_SHAPE_DIM = 8;

// A tensor's logical shape (and the original one before padding), which some high-level APIs
// (RmsNorm, LayerNorm) read from their operands (LocalTensor::SetShapeInfo).
struct ShapeInfo {
    ShapeInfo() = default;
    ShapeInfo(const uint8_t inputShapeDim, const uint32_t inputShape[], const uint8_t inputOriginalShapeDim,
              const uint32_t inputOriginalShape[], const DataFormat inputFormat)
        : shapeDim(inputShapeDim), originalShapeDim(inputOriginalShapeDim), dataFormat(inputFormat) {
        if (inputShapeDim > K_MAX_SHAPE_DIM || inputOriginalShapeDim > K_MAX_SHAPE_DIM) {
            fusedsl_cpu::Fail("ShapeInfo: %u and %u dimensions; at most %d", inputShapeDim, inputOriginalShapeDim,
                              K_MAX_SHAPE_DIM);
        }
        for (int i = 0; i < shapeDim; ++i) {
            shape[i] = inputShape[i];
        }
        for (int i = 0; i < originalShapeDim; ++i) {
            originalShape[i] = inputOriginalShape[i];
        }
    }
    ShapeInfo(const uint8_t inputShapeDim, const uint32_t inputShape[],
              const DataFormat inputFormat = DataFormat::ND)
        : ShapeInfo(inputShapeDim, inputShape, inputShapeDim, inputShape, inputFormat) {}
    uint8_t shapeDim = 0;
    uint8_t originalShapeDim = 0;
    uint32_t shape[K_MAX_SHAPE_DIM] = {};
    uint32_t originalShape[K_MAX_SHAPE_DIM] = {};
    DataFormat dataFormat = DataFormat::ND;
};

inline uint64_t GetShapeSize(const ShapeInfo& shapeInfo) {
    uint64_t n = 1;
    for (int i = 0; i < shapeInfo.shapeDim; ++i) {
        n *= shapeInfo.shape[i];
    }
    return n;
}

template <typename T>
class LocalTensor {
public:
    using PrimType = T;

    LocalTensor() = default;
    LocalTensor(T* addr, uint32_t size, TPosition pos) : fs_addr(addr), fs_size(size), fs_pos(pos) {}
    // Static tensor programming: tileSize elements at byte `addr` of the position's memory (UB,
    // L1, L0A, L0B, L0C, BT or FB); addr must be 32-byte aligned and the tensor inside the memory.
    LocalTensor(TPosition pos, uint32_t addr, uint32_t tileSize, FUSEDSL_CPU_SITE)
        : fs_addr(reinterpret_cast<T*>(fusedsl_cpu::LocalAddressAt(fs_site, "LocalTensor(TPosition, addr, tileSize)",
                                                                    pos, addr, fusedsl_cpu::BytesOf<T>(tileSize)))),
          fs_size(tileSize), fs_pos(pos) {}
    LocalTensor(const LocalTensor&) = default;
    LocalTensor& operator=(const LocalTensor&) = default;

    // dst = a * b (and the other operator expressions of kernel_utils.h) run the vector op.
    template <class E, typename = typename E::fusedsl_expr_tag>
    LocalTensor& operator=(const E& expr) {
        expr.Run(*this);
        return *this;
    }

    // A view starting `offset` elements in; vector APIs require its start to be 32-B aligned.  An int4b_t
    // view moves offset / 2 bytes, so it must start on a byte: an odd offset would drop the half byte
    // (CANN's operator[] computes offset / INT4_TWO, asc-devkit kernel_tensor_impl.h) and is refused.
    LocalTensor operator[](uint32_t offset) const {
        if (offset > fs_size) {
            fusedsl_cpu::Fail("LocalTensor[%u]: offset is past the end of the tensor (%u elements)", offset,
                              fs_size);
        }
        if constexpr (fusedsl_cpu::kIsB4<T>) {
            CheckEvenB4("LocalTensor<int4b_t>[]", offset);
            return LocalTensor(fs_addr + offset / 2, fs_size - offset, fs_pos);
        } else {
            return LocalTensor(fs_addr + offset, fs_size - offset, fs_pos);
        }
    }

    // int4b_t elements are nibbles of a byte (element 2i low, 2i + 1 high), as CANN's GetValue/SetValue
    // read and write them (asc-devkit kernel_tensor_impl.h).
    T GetValue(uint32_t index, FUSEDSL_CPU_SITE) const {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        uint32_t off = ScalarOffset("LocalTensor::GetValue", index);
        fusedsl_cpu::OnPipe scalar(PIPE_S);
        fusedsl_cpu::CheckWritten("LocalTensor::GetValue", "the element", off, sizeof(T));
        if constexpr (fusedsl_cpu::kIsB4<T>) {
            uint8_t byte = *reinterpret_cast<const uint8_t*>(fs_addr + index / 2);
            return T(static_cast<int>((byte >> (4 * (index % 2))) & 0xF));
        } else {
            T v;
            std::memcpy(&v, fs_addr + index, sizeof(T));
            return v;
        }
    }

    void SetValue(uint32_t index, T value, FUSEDSL_CPU_SITE) const {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        uint32_t off = ScalarOffset("LocalTensor::SetValue", index);
        fusedsl_cpu::OnPipe scalar(PIPE_S);
        fusedsl_cpu::CurCore().cur_api = "LocalTensor::SetValue";
        if constexpr (fusedsl_cpu::kIsB4<T>) {
            uint8_t* byte = reinterpret_cast<uint8_t*>(fs_addr + index / 2);
            if (!fusedsl_cpu::IsWrittenByte(off)) {
                *byte = 0;   // the other nibble of a never-written byte reads as 0, not as the 0xFF fill
            }
            const int shift = 4 * (index % 2);
            *byte = static_cast<uint8_t>((*byte & ~(0xF << shift)) | ((value.storage & 0xF) << shift));
        } else {
            std::memcpy(fs_addr + index, &value, sizeof(T));
        }
        fusedsl_cpu::MarkWritten(off, sizeof(T));
    }

    uint32_t GetSize() const { return fs_size; }
    void SetSize(uint32_t size) { fs_size = size; }
    void SetShapeInfo(const ShapeInfo& shapeInfo) { fs_shape = shapeInfo; }
    ShapeInfo GetShapeInfo() const { return fs_shape; }
    uint32_t GetLength() const { return static_cast<uint32_t>(fusedsl_cpu::BytesOf<T>(fs_size)); }
    TPosition GetPosition() const { return fs_pos; }

    template <typename U>
    LocalTensor<U> ReinterpretCast() const {
        return LocalTensor<U>(reinterpret_cast<U*>(fs_addr),
                              static_cast<uint32_t>(fusedsl_cpu::ElemsIn<U>(fusedsl_cpu::BytesOf<T>(fs_size))), fs_pos);
    }

    // Byte offset in its memory (UB, L1, L0...), the value the device returns as the physical address.
    // For int4b_t the offset must be even: asc-devkit kernel_tensor_impl.h GetPhyAddr asserts "The offset
    // for int4b_t GetPhyAddr should be an even num."
    uint64_t GetPhyAddr() const { return fusedsl_cpu::LocalOffset(fs_addr); }
    uint64_t GetPhyAddr(uint32_t offset) const {
        if constexpr (fusedsl_cpu::kIsB4<T>) {
            CheckEvenB4("LocalTensor<int4b_t>::GetPhyAddr", offset);
        }
        return GetPhyAddr() + fusedsl_cpu::BytesOf<T>(offset);
    }

    // Implementation state; kernels use the methods above.
    T* fs_addr = nullptr;
    uint32_t fs_size = 0;
    TPosition fs_pos = TPosition::VECCALC;
    ShapeInfo fs_shape;

private:
    uint32_t ScalarOffset(const char* api, uint32_t index) const {
        if (fs_addr == nullptr) {
            fusedsl_cpu::Fail("%s: empty LocalTensor; get it from AllocTensor/DeQue or TBuf::Get first", api);
        }
        if (index >= fs_size) {
            fusedsl_cpu::Fail("%s(%u): index is past the end of the tensor (%u elements)", api, index, fs_size);
        }
        uint32_t off = fusedsl_cpu::UbOffset(fs_addr + (fusedsl_cpu::kIsB4<T> ? index / 2 : index));
        fusedsl_cpu::CheckSlot(api, "the tensor", off, sizeof(T));
        return off;
    }

    static void CheckEvenB4(const char* api, uint32_t offset) {
        if (offset % 2 != 0) {
            fusedsl_cpu::Fail("%s(%u): an odd int4b_t offset starts in the middle of a byte (two 4-bit elements "
                              "per byte); CANN requires an even offset (asc-devkit kernel_tensor_impl.h) — round "
                              "it to an even element", api, offset);
        }
    }
};

template <typename T>
class GlobalTensor {
public:
    using PrimType = T;

    void SetGlobalBuffer(__gm__ T* buffer, uint64_t bufferSize, FUSEDSL_CPU_SITE) {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        fs_addr = buffer;
        fs_size = bufferSize;
        fs_has_size = true;
    }
    void SetGlobalBuffer(__gm__ T* buffer, FUSEDSL_CPU_SITE) {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        fs_addr = buffer;
        fs_size = 0;
        fs_has_size = false;
    }

    // int4b_t: offset / 2 bytes (asc-devkit kernel_tensor_impl.h GlobalTensor::operator[]); an odd offset
    // would start mid-byte and is refused.
    GlobalTensor operator[](uint64_t offset) const {
        GlobalTensor g;
        if constexpr (fusedsl_cpu::kIsB4<T>) {
            if (offset % 2 != 0) {
                fusedsl_cpu::Fail("GlobalTensor<int4b_t>[%llu]: an odd int4b_t offset starts in the middle of a byte "
                                  "(two 4-bit elements per byte); use an even offset",
                                  static_cast<unsigned long long>(offset));
            }
            g.fs_addr = fs_addr + offset / 2;
        } else {
            g.fs_addr = fs_addr + offset;
        }
        g.fs_has_size = fs_has_size;
        g.fs_size = fs_has_size && offset <= fs_size ? fs_size - offset : 0;
        return g;
    }

    T GetValue(uint64_t offset, FUSEDSL_CPU_SITE) const {
        const uint8_t* p = Access("GlobalTensor::GetValue", offset);
        fusedsl_cpu::St().gm_bytes_read += sizeof(T);
        fusedsl_cpu::NoteGmPoll("GlobalTensor::GetValue", p, fs_site);
        if constexpr (fusedsl_cpu::kIsB4<T>) {
            return T(static_cast<int>((*p >> (4 * (offset % 2))) & 0xF));
        } else {
            T v;
            std::memcpy(&v, p, sizeof(T));
            return v;
        }
    }

    void SetValue(uint64_t offset, T value, FUSEDSL_CPU_SITE) const {
        fusedsl_cpu::AtSite at(fs_site);
        const char* api = "GlobalTensor::SetValue";
        uint8_t* p = Access(api, offset);
        if constexpr (fusedsl_cpu::kIsB4<T>) {
            const int shift = 4 * (offset % 2);
            uint8_t byte = static_cast<uint8_t>((*p & ~(0xF << shift)) | ((value.storage & 0xF) << shift));
            fusedsl_cpu::NoteGmWrite(api, fusedsl_cpu::FindGm(p), p, 1, true);
            fusedsl_cpu::St().gm_bytes_written += 1;
            *p = byte;
        } else {
            fusedsl_cpu::NoteGmWrite(api, fusedsl_cpu::FindGm(p), p, sizeof(T), true,
                                     reinterpret_cast<const uint8_t*>(&value));
            fusedsl_cpu::St().gm_bytes_written += sizeof(T);
            std::memcpy(p, &value, sizeof(T));
        }
    }

    uint64_t GetSize() const { return fs_size; }
    __gm__ T* GetPhyAddr() const { return fs_addr; }
    __gm__ T* GetPhyAddr(uint64_t offset) const { return fs_addr + (fusedsl_cpu::kIsB4<T> ? offset / 2 : offset); }

    // address_ is the public spelling CANN's samples use; both names are the same pointer.
    union {
        T* fs_addr = nullptr;
        T* address_;
    };
    uint64_t fs_size = 0;       // elements from fs_addr to the end of SetGlobalBuffer's range
    bool fs_has_size = false;
    // SetL2CacheHint: whether the data goes through the L2 cache — a placement choice that changes
    // timing only, so the CPU keeps the mode and moves the same bytes.
    CacheMode fs_cache_mode = CacheMode::CACHE_MODE_NORMAL;
    void SetL2CacheHint(CacheMode mode) { fs_cache_mode = mode; }

private:
    uint8_t* Access(const char* api, uint64_t offset) const {
        if (fs_addr == nullptr) {
            fusedsl_cpu::Fail("%s: GlobalTensor has no buffer; call SetGlobalBuffer first", api);
        }
        if (fs_has_size && offset >= fs_size) {
            fusedsl_cpu::Fail("%s(%llu): index is past the SetGlobalBuffer length (%llu elements)", api,
                              static_cast<unsigned long long>(offset), static_cast<unsigned long long>(fs_size));
        }
        auto p = reinterpret_cast<uint8_t*>(fs_addr + (fusedsl_cpu::kIsB4<T> ? offset / 2 : offset));
        if (reinterpret_cast<uintptr_t>(p) % sizeof(T) != 0) {
            fusedsl_cpu::Fail("%s: GM address %p is not aligned to sizeof(%s) = %zu", api, static_cast<void*>(p),
                              fusedsl_cpu::TypeName<T>(), sizeof(T));
        }
        fusedsl_cpu::CheckGmRange(api, p, sizeof(T));
        fusedsl_cpu::St().scalar_gm_accesses += 1;
        return p;
    }
};

}  // namespace AscendC

namespace fusedsl_cpu {

using AscendC::GlobalTensor;
using AscendC::LocalTensor;

// GM side of a DataCopy: the GlobalTensor has a buffer, is aligned, and bytes [first, end)
// from its start are inside one registered GM buffer.
//
// An access past the GlobalTensor's SetGlobalBuffer length but inside its GM buffer is allowed,
// with one warning per launch: the SetGlobalBuffer page defines bufferSize as the element count
// GetSize reports ("需自行保证不会超出实际数据的长度": it must not exceed the real data), not as a
// bound on accesses, and CANN's CPU debug mode checks a DataCopy's GM side for nothing but
// alignment (asc-tools cpudebug, kernel_data_copy_check.cpp).  CANN's samples rely on it:
// ReduceMinKernelInvocation reads 32 bytes at the end of a 24-byte GlobalTensor on purpose.
template <typename T>
inline GmBuffer* CheckGm(const char* api, const GlobalTensor<T>& g, uint64_t end_bytes, bool elem_aligned) {
    if (g.fs_addr == nullptr) {
        Fail("%s: GlobalTensor has no buffer; call SetGlobalBuffer first", api);
    }
    auto p = reinterpret_cast<const uint8_t*>(g.fs_addr);
    if (elem_aligned && reinterpret_cast<uintptr_t>(p) % sizeof(T) != 0) {
        Fail("%s: GM address %p is not aligned to sizeof(%s) = %zu", api, static_cast<const void*>(p),
             TypeName<T>(), sizeof(T));
    }
    GmBuffer* buf = CheckGmRange(api, p, end_bytes);
    if (g.fs_has_size && end_bytes > BytesOf<T>(g.fs_size)) {
        Warn("AscendCWarning",
             Format("%s accesses %llu bytes from a GlobalTensor whose SetGlobalBuffer length is %llu elements (%llu "
                    "bytes); allowed, it stays inside GM buffer '%s' (reported once per launch)", api,
                    static_cast<unsigned long long>(end_bytes), static_cast<unsigned long long>(g.fs_size),
                    static_cast<unsigned long long>(BytesOf<T>(g.fs_size)), buf != nullptr ? buf->name.c_str() : "?"),
             "past-length");
    }
    return buf;
}

inline bool IsUbPosition(TPosition pos) {
    switch (pos) {
        case TPosition::VECIN:
        case TPosition::VECOUT:
        case TPosition::VECCALC:
            return true;
        case TPosition::CO2:
        case TPosition::C1:
        case TPosition::C2:
            // ASCENDC.md §1.3: these live in UB only on the coupled chips (910A, 310P).
            return !Target().separated;
        default:
            return false;
    }
}

// The cube unit's memories by position (TQue on A1/B1/A2/B2/CO1 ..., LocalTensor addresses, cube.h).
inline const char* LocalMemName(int m) {
    static const char* const names[] = {"L1", "L0A", "L0B", "L0C", "BT", "FB"};
    return m >= 0 && m < kNumLocalMems ? names[m] : "UB";
}

// The memory a logical position lives in: -1 for UB.
inline int MemOfPosition(TPosition pos) {
    if (IsUbPosition(pos)) {
        return -1;
    }
    switch (pos) {
        case TPosition::A1:
        case TPosition::B1:
        case TPosition::C1:
        case TPosition::TSCM:
            return kMemL1;
        case TPosition::A2: return kMemL0A;
        case TPosition::B2: return kMemL0B;
        case TPosition::CO1: return kMemL0C;
        case TPosition::C2: return kMemBT;
        case TPosition::C2PIPE2GM: return kMemFB;
        default:
            Fail("LocalTensor: position %s is not an on-chip memory position", PositionName(pos));
    }
}

inline uint32_t LocalMemBytes(int m) {
    Core& c = CurCore();
    return c.local_at[m + 1] - c.local_at[m];
}

// The top of L1 a mixed kernel's cube core keeps for the Matmul messages (KFC) on Atlas A2/A3: asc-devkit
// impl/basic_api/utils/kernel_utils_constants.h sets TOTAL_L1_SIZE = 512 KB - KFC_L1_RESERVER_SIZE (128)
// for __NPU_ARCH__ 2201, kfc_comm_server.h writes the message's L1 address at byte TOTAL_L1_SIZE, and the
// TPipe's TSCM buffers start below it (kernel_tpipe_impl.h: tscmBufferPtr_ = TOTAL_L1_SIZE).  (The host
// platform API's GetCoreMemSize(L1) takes off 256 B, LOCAL_RESERV_SIZE: a host figure, not this one.)
constexpr uint32_t kKfcL1ReserveBytes = 128;

// L1 bytes below the KFC message area when the Matmul is served over KFC (`kfc`) on arch 2201.
inline uint32_t KfcL1Reserve(bool kfc) {
    return Target().arch == 2201 && kfc ? kKfcL1ReserveBytes : 0;
}

inline uint8_t* LocalMemBase(int m) {
    Core& c = CurCore();
    return c.local.data() + c.local_at[m];
}

inline void CheckHasCube(const char* api) {
    if (RT().kernel_mode == KernelMode::AIV_MODE && Target().separated) {
        Fail("%s: a vector-only kernel (AIV_MODE, __vector__) runs on %s's vector cores, which have no cube unit; "
             "launch it as a cube (__cube__) or mixed (__mix__) kernel", api, Target().name);
    }
    if (Target().num_matmul == 0) {
        Fail("%s: the basic cube API is not modelled on %s", api, Target().name);
    }
}

enum SlotState : uint8_t { kFree, kAllocated, kEnqueued, kDequeued };

// A TBufPool's share of UB (bufpool.h).
struct PoolCore;
using PoolHandle = std::pair<PoolCore*, uint32_t>;   // a pool and one of its buffer ids (TBufHandle)

class TPipeState {
public:
    uint32_t fs_cursor = 0;      // next free UB byte
    int fs_buffers = 0;          // buffers handed out by InitBuffer
    uint64_t fs_generation = 0;
    uint8_t fs_event_ids[kNumEvents] = {};
    uint64_t fs_tscm_bytes = 0;  // L1 taken by TSCM queues (tscm.h), all sub-blocks of the core
    uint32_t fs_local_cursor[kNumLocalMems] = {};   // next free byte of each cube memory (A1/B1/A2/... queues)
    std::vector<PoolCore*> fs_pools;   // the TBufPools carved from this plan, outermost first
    // What the cube memories hold: the TQue buffers planned by InitBuffer and the Matmul objects' own
    // buffers (matmul.h), each with the kernel line that planned it, so that a user buffer over a Matmul's
    // is reported (on the device both would silently use the same bytes).
    struct LocalPlan {
        int mem;
        uint32_t start, end;
        Site site;
        std::string what;
        bool matmul;
    };
    std::vector<LocalPlan> fs_local_plans;
    // CANN's InitShareBufStart: the Matmul objects of a pipe share one L1 / L0C region, starting where the
    // pipe's plan stood when the first one was initialised (-1: no Matmul yet).
    int64_t fs_share_start[kNumLocalMems] = {-1, -1, -1, -1, -1, -1};
};

// The plan of `pipe` in memory `m` that overlaps [start, end) and was made by the other side (a Matmul
// object's for a user buffer, a user buffer for a Matmul's), or nullptr.
inline const TPipeState::LocalPlan* LocalOverlap(const TPipeState& pipe, int m, uint64_t start, uint64_t end,
                                                 bool by_matmul) {
    for (const TPipeState::LocalPlan& p : pipe.fs_local_plans) {
        if (p.mem == m && p.matmul != by_matmul && p.start < end && start < p.end) {
            return &p;
        }
    }
    return nullptr;
}

inline std::string SiteText(const Site& s) {
    return s.file != nullptr ? Format("%s:%d", s.file, s.line) : std::string("an unknown line");
}

// State shared by every TQue instantiation, so TPipe can initialise any of them.
class QueueBase {
public:
    QueueBase(TPosition pos, int depth) : fs_pos(pos), fs_depth(depth) {}
    QueueBase(const QueueBase&) = delete;
    QueueBase& operator=(const QueueBase&) = delete;

    ~QueueBase() {
        // Rule 4, end of kernel: anything still allocated or queued is a leak.  Skipped while
        // unwinding from an earlier error, which is the one to report.
        Runtime& rt = RT();
        if (!rt.in_block || rt.core.generation != fs_generation || std::uncaught_exceptions() > 0 ||
            !rt.core.pending_error.empty()) {
            return;
        }
        int allocated = 0;
        int enqueued = 0;
        for (uint8_t s : fs_state) {
            allocated += s == kAllocated || s == kDequeued;
            enqueued += s == kEnqueued;
        }
        if (allocated == 0 && enqueued == 0) {
            return;
        }
        std::string what;
        if (allocated != 0) {
            what = Format("%d tensor(s) allocated but never freed", allocated);
        }
        if (enqueued != 0) {
            what += Format("%s%d tensor(s) enqueued but never dequeued", what.empty() ? "" : " and ", enqueued);
        }
        // A warning, once per launch: the TQue FreeTensor page pairs every AllocTensor with a FreeTensor,
        // but a buffer still held when the kernel ends harms nothing on the device, CANN's CPU debug mode
        // does not check it, and CANN's layernorm sample ends with one.  A leak that matters (a queue out
        // of buffers) is AllocTensor's error.
        Warn("AscendCWarning",
             Format("TQue<%s> %s: leak — at the end of the kernel %s; every AllocTensor needs EnQue, DeQue and "
                    "FreeTensor (the TQue FreeTensor page: AllocTensor and FreeTensor are used in pairs; the "
                    "TPipe-TQue automatic synchronisation relies on it) (reported once per launch)",
                    PositionName(fs_pos), Where().c_str(), what.c_str()),
             "leak");
    }

    std::string Where() const {
        if (fs_state.empty()) {
            return "(not initialised)";
        }
        return Format("(%s [%u, %u), %zu x %u bytes)", fs_mem < 0 ? "UB" : LocalMemName(fs_mem),
                      fs_offsets.front(), fs_offsets.back() + fs_len, fs_offsets.size(), fs_len);
    }

    // The byte offset of addr in the queue's memory (UB, or a cube memory for A1/B1/A2/B2/CO1 ... queues),
    // UINT32_MAX outside it.
    uint32_t OffsetOrMax(const void* addr) const {
        if (fs_mem < 0) {
            return UbOffsetOrMax(addr);
        }
        auto p = static_cast<const uint8_t*>(addr);
        const uint8_t* base = LocalMemBase(fs_mem);
        return p < base || p >= base + LocalMemBytes(fs_mem) ? UINT32_MAX : static_cast<uint32_t>(p - base);
    }

    uint8_t* SlotAddress(int slot) const {
        return fs_mem < 0 ? CurCore().ub.data() + fs_offsets[slot] : LocalMemBase(fs_mem) + fs_offsets[slot];
    }

    int FindSlot(const void* addr) const {
        if (addr == nullptr || fs_state.empty()) {
            return -1;
        }
        uint32_t off = OffsetOrMax(addr);
        for (size_t i = 0; i < fs_offsets.size(); ++i) {
            if (fs_offsets[i] == off) {
                return static_cast<int>(i);
            }
        }
        return -1;
    }

    static uint32_t UbOffsetOrMax(const void* addr) {
        Core& c = CurCore();
        auto p = static_cast<const uint8_t*>(addr);
        if (p < c.ub.data() || p >= c.ub.data() + c.ub_bytes) {
            return UINT32_MAX;
        }
        return static_cast<uint32_t>(p - c.ub.data());
    }

    TPosition fs_pos;
    int fs_depth;
    uint32_t fs_len = 0;
    uint64_t fs_generation = 0;
    std::vector<uint32_t> fs_offsets;
    std::vector<uint8_t> fs_state;
    std::deque<int> fs_fifo;
    size_t fs_next = 0;
    PoolCore* fs_pool = nullptr;   // the TBufPool that planned this queue, if one did
    int fs_mem = -1;               // -1: UB; else the cube memory (LocalMem) of an A1/B1/A2/B2/CO1 ... queue

    // Plans the queue's buffers at these offsets of UB, or of cube memory `mem` (TPipe::InitBuffer,
    // TBufPool::InitBuffer).
    void fs_Plan(std::vector<uint32_t> offsets, uint32_t each, PoolCore* pool, int mem = -1) {
        fs_len = each;
        fs_mem = mem;
        fs_generation = CurCore().generation;
        fs_offsets = std::move(offsets);
        fs_state.assign(fs_offsets.size(), kFree);
        for (uint32_t off : fs_offsets) {
            if (off != UINT32_MAX && mem < 0) {   // UINT32_MAX: placed later by InitBufHandle (bufpool.h)
                SetSlotState(off, each, kSlotIdle);
            }
        }
        fs_fifo.clear();
        fs_next = 0;
        fs_pool = pool;
        fs_vc.assign(fs_offsets.size(), {});
    }

    // The flag an EnQue sets and its DeQue waits for: MTE2 -> V on VECIN, V -> MTE3 on VECOUT
    // (CANN's TQue EnQue/DeQue are SetFlag/WaitFlag of that event).  Like a flag it orders every
    // earlier access of the setting pipe, not only this buffer's: data a DataCopy put in a TBuf
    // before a VECIN EnQue is ready after the DeQue.
    bool fs_QueueEvent(uint8_t* from, uint8_t* to) const {
        if (fs_pos == TPosition::VECIN) {
            *from = PIPE_MTE2;
            *to = PIPE_V;
            return true;
        }
        if (fs_pos == TPosition::VECOUT) {
            *from = PIPE_V;
            *to = PIPE_MTE3;
            return true;
        }
        return false;
    }
    void fs_SetQueueFlag(int slot) {
        uint8_t from = 0;
        uint8_t to = 0;
        if (fs_QueueEvent(&from, &to)) {
            Core& c = CurCore();
            for (int q = 0; q < 8; ++q) {
                fs_vc[slot][q] = q == from ? c.clock : c.synced[q][from];
            }
        }
    }
    void fs_WaitQueueFlag(int slot) {
        uint8_t from = 0;
        uint8_t to = 0;
        if (fs_QueueEvent(&from, &to)) {
            Core& c = CurCore();
            for (int q = 0; q < 8; ++q) {
                c.synced[q][to] = std::max(c.synced[q][to], fs_vc[slot][q]);
            }
        }
    }
    std::vector<std::array<uint32_t, 8>> fs_vc;   // per buffer: the flag its EnQue set

    // The internal calls a user-defined pool (EXTERN_IMPL_BUFPOOL) plans a queue with (bufpool.h).
    void InitStartBufHandle(PoolHandle* first, uint8_t num, uint32_t len, FUSEDSL_CPU_SITE);
    template <class P>
    void InitBufHandle(P* bufPool, uint32_t index, PoolHandle* handle, uint32_t addr, uint32_t len, FUSEDSL_CPU_SITE);
};

class BufBase {
public:
    explicit BufBase(TPosition pos) : fs_pos(pos) {}
    BufBase(const BufBase&) = delete;
    BufBase& operator=(const BufBase&) = delete;

    TPosition fs_pos;
    uint32_t fs_offset = 0;
    uint32_t fs_len = 0;
    uint64_t fs_generation = 0;
    bool fs_init = false;
    PoolCore* fs_pool = nullptr;   // the TBufPool that planned this buffer, if one did

    void InitStartBufHandle(PoolHandle* first, uint8_t num, uint32_t len, FUSEDSL_CPU_SITE);
    template <class P>
    void InitBufHandle(P* bufPool, uint32_t index, PoolHandle* handle, uint32_t addr, uint32_t len, FUSEDSL_CPU_SITE);
};

// A pool's buffer is used (AllocTensor, TBuf::Get): the pool becomes the one in use over its
// bytes (bufpool.h).
inline void PoolTouch(const char* api, PoolCore* pool);
// TPipe::InitBufPool (bufpool.h); `shared` is the pool whose bytes the new one lays over.
inline bool PipeInitBufPool(TPipeState& pipe, PoolCore& pool, uint32_t len, PoolCore* shared);
// TPipe::Reset: the pools of the plan are gone with it.
inline void ForgetPools(TPipeState& pipe);

// New UB for a plan: NaN bytes, unwritten, no pipe accesses remembered.
inline void FreshUb(uint32_t off, uint64_t bytes) {
    Core& c = CurCore();
    std::memset(c.ub.data() + off, 0xFF, bytes);
    std::memset(c.written.data() + off, 0, bytes);
    ForgetAccesses(off, bytes);
    c.ub_high_water = std::max<uint64_t>(c.ub_high_water, off + bytes);
}



// ASCENDC.md §1.2: on separated chips (910B) the cube core (AIC) has no UB; a cube-only
// kernel (AIC_MODE, __cube__) may not plan UB buffers.
inline void CheckCoreHasUb(const char* api) {
    if ((RT().kernel_mode == KernelMode::AIC_MODE || RT().on_aic) && Target().separated) {
        Fail("%s: this is a cube-only kernel (AIC_MODE, __cube__) and the cube core of %s has no UB; run vector "
             "work in an AIV or mixed (__mix__) kernel", api, Target().name);
    }
}

inline void NoteKernelType(int type) {
    RT().kernel_type = type;
}

}  // namespace fusedsl_cpu

namespace AscendC {

template <TPosition pos, int32_t depth, auto mask = 0>
class TQue : public fusedsl_cpu::QueueBase {
public:
    TQue() : QueueBase(pos, depth) {}

    template <typename T>
    LocalTensor<T> AllocTensor(FUSEDSL_CPU_SITE) {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        using namespace fusedsl_cpu;
        RequireInit("AllocTensor");
        if (fs_pool != nullptr) {
            PoolTouch("AllocTensor", fs_pool);
        }
        size_t n = fs_state.size();
        size_t slot = n;
        for (size_t k = 0; k < n; ++k) {
            size_t i = (fs_next + k) % n;
            if (fs_state[i] == kFree) {
                slot = i;
                break;
            }
        }
        if (slot == n) {
            Fail("AllocTensor: all %zu buffers of TQue<%s> %s are in use; FreeTensor one first (InitBuffer "
                 "gave this queue %zu buffers)", n, PositionName(pos), Where().c_str(), n);
        }
        if (fs_offsets[slot] == UINT32_MAX) {
            Fail("AllocTensor: buffer %zu of TQue<%s> has no UB yet; a user-defined pool places each buffer with "
                 "InitBufHandle", slot, PositionName(pos));
        }
        Core& c = CurCore();
        int& outstanding = c.outstanding[static_cast<int>(pos)];
        int limit = Target().max_queue_buffers_per_position;
        if (outstanding + 1 > limit) {
            Fail("AllocTensor: %d queue buffers of position %s would be allocated at once; %s allows %d per "
                 "position (each holds a hardware event id) — free tensors earlier or use fewer queues",
                 outstanding + 1, PositionName(pos), Target().name, limit);
        }
        ++outstanding;
        fs_state[slot] = kAllocated;
        fs_next = (slot + 1) % n;
        uint32_t off = fs_offsets[slot];
        // New buffers hold NaN bytes and count as unwritten (rule 6).
        uint8_t* at = SlotAddress(static_cast<int>(slot));
        std::memset(at, 0xFF, fs_len);
        if (fs_mem >= 0) {
            std::memset(c.local_written.data() + (at - c.local.data()), 0, fs_len);
        } else {
            std::memset(c.written.data() + off, 0, fs_len);
            SetSlotState(off, fs_len, kSlotLive);
            ForgetAccesses(off, fs_len);
        }
        return LocalTensor<T>(reinterpret_cast<T*>(at), ElemsIn<T>(fs_len), pos);
    }

    template <typename T>
    bool EnQue(const LocalTensor<T>& tensor, FUSEDSL_CPU_SITE) {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        using namespace fusedsl_cpu;
        RequireInit("EnQue");
        int slot = SlotOf("EnQue", tensor.fs_addr);
        if (fs_state[slot] == kEnqueued) {
            Fail("EnQue: the tensor at UB offset %u is already in TQue<%s> (EnQue twice without a DeQue)",
                 fs_offsets[slot], PositionName(pos));
        }
        if (fs_state[slot] == kFree) {
            Fail("EnQue: the tensor at UB offset %u was already freed (FreeTensor) from TQue<%s>",
                 fs_offsets[slot], PositionName(pos));
        }
        fs_state[slot] = kEnqueued;
        fs_SetQueueFlag(slot);
        fs_fifo.push_back(slot);
        if (fs_mem < 0) {
            SetSlotState(fs_offsets[slot], fs_len, kSlotQueued);
        }
        return true;
    }

    template <typename T>
    LocalTensor<T> DeQue(FUSEDSL_CPU_SITE) {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        using namespace fusedsl_cpu;
        RequireInit("DeQue");
        if (fs_fifo.empty()) {
            Fail("DeQue: TQue<%s> %s is empty; every DeQue needs an earlier EnQue of an allocated tensor",
                 PositionName(pos), Where().c_str());
        }
        int slot = fs_fifo.front();
        fs_fifo.pop_front();
        fs_state[slot] = kDequeued;
        fs_WaitQueueFlag(slot);
        if (fs_mem < 0) {
            SetSlotState(fs_offsets[slot], fs_len, kSlotLive);
            ForgetAccesses(fs_offsets[slot], fs_len);
        }
        return LocalTensor<T>(reinterpret_cast<T*>(SlotAddress(slot)), ElemsIn<T>(fs_len), pos);
    }

    template <typename T>
    void FreeTensor(LocalTensor<T>& tensor, FUSEDSL_CPU_SITE) {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        using namespace fusedsl_cpu;
        RequireInit("FreeTensor");
        int slot = SlotOf("FreeTensor", tensor.fs_addr);
        if (fs_state[slot] == kFree) {
            Fail("FreeTensor: double free of the tensor at UB offset %u in TQue<%s>", fs_offsets[slot],
                 PositionName(pos));
        }
        if (fs_state[slot] == kEnqueued) {
            Fail("FreeTensor: the tensor at UB offset %u is still enqueued in TQue<%s>; DeQue it first",
                 fs_offsets[slot], PositionName(pos));
        }
        fs_state[slot] = kFree;
        if (fs_mem < 0) {
            SetSlotState(fs_offsets[slot], fs_len, kSlotIdle);
        }
        --CurCore().outstanding[static_cast<int>(pos)];
    }

    bool VacantInQue() const { return static_cast<int>(fs_fifo.size()) < (depth > 0 ? depth : 1); }
    bool HasTensorInQue() const { return !fs_fifo.empty(); }
    int32_t GetTensorCountInQue() const { return static_cast<int32_t>(fs_fifo.size()); }
    bool HasIdleBuffer() const {
        for (uint8_t s : fs_state) {
            if (s == fusedsl_cpu::kFree) {
                return true;
            }
        }
        return false;
    }
    void FreeAllEvent() {}

private:
    void RequireInit(const char* api) const {
        if (fs_state.empty() || fs_generation != fusedsl_cpu::CurCore().generation) {
            fusedsl_cpu::Fail("%s: TQue<%s> was not initialised; call TPipe::InitBuffer(queue, num, len) first",
                              api, fusedsl_cpu::PositionName(pos));
        }
    }

    int SlotOf(const char* api, const void* addr) const {
        int slot = FindSlot(addr);
        if (slot < 0) {
            if (addr == nullptr) {
                fusedsl_cpu::Fail("%s: empty LocalTensor (it was never allocated)", api);
            }
            fusedsl_cpu::Fail("%s: the tensor at %s offset %u was not allocated from this TQue<%s> %s (a "
                              "sub-tensor, or a tensor from another queue or TBuf)", api,
                              fs_mem < 0 ? "UB" : fusedsl_cpu::LocalMemName(fs_mem), OffsetOrMax(addr),
                              fusedsl_cpu::PositionName(pos), Where().c_str());
        }
        return slot;
    }
};

template <TPosition pos = TPosition::LCM>
class TBuf : public fusedsl_cpu::BufBase {
public:
    TBuf() : BufBase(pos) {}

    template <typename T>
    LocalTensor<T> Get(FUSEDSL_CPU_SITE) const {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        return Get<T>(static_cast<uint32_t>(fusedsl_cpu::ElemsIn<T>(fs_len)));
    }

    template <typename T>
    LocalTensor<T> Get(uint32_t len, FUSEDSL_CPU_SITE) const {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        return GetWithOffset<T>(len, 0);
    }

    template <typename T>
    LocalTensor<T> GetWithOffset(uint32_t size, uint32_t bufOffset, FUSEDSL_CPU_SITE) const {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        using namespace fusedsl_cpu;
        Core& c = CurCore();
        if (!fs_init || fs_generation != c.generation) {
            Fail("TBuf::Get: TBuf<%s> was not initialised; call TPipe::InitBuffer(buf, len) first",
                 PositionName(pos));
        }
        if (fs_pool != nullptr) {
            PoolTouch("TBuf::Get", fs_pool);
        }
        if (bufOffset + BytesOf<T>(size) > fs_len) {
            Fail("TBuf::Get: %u elements of %s at byte offset %u do not fit the %u-byte TBuf<%s>", size,
                 TypeName<T>(), bufOffset, fs_len, PositionName(pos));
        }
        return LocalTensor<T>(reinterpret_cast<T*>(c.ub.data() + fs_offset + bufOffset), size, pos);
    }

    // The queue interface TBuf inherits in CANN: a TBuf has one buffer and no queue, so
    // AllocTensor/DeQue are Get and EnQue/FreeTensor do nothing (kernel_tbuf_impl's behaviour).
    // No queue means no ordering either: pipes still need SetFlag/WaitFlag around TBuf memory.
    template <typename T>
    LocalTensor<T> AllocTensor(FUSEDSL_CPU_SITE) const {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        return Get<T>();
    }
    template <typename T>
    LocalTensor<T> DeQue(FUSEDSL_CPU_SITE) const {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        return Get<T>();
    }
    template <typename T>
    void EnQue(const LocalTensor<T>&, FUSEDSL_CPU_SITE) const {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
    }
    template <typename T>
    void FreeTensor(LocalTensor<T>&, FUSEDSL_CPU_SITE) const {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
    }
};

// TSCM queues (user-managed L1): tscm.h.
template <TPosition src, TPosition dst, int32_t depth, auto mask = 0>
class TQueBind;

class TPipe : public fusedsl_cpu::TPipeState {
public:
    TPipe() {
        fusedsl_cpu::Core& c = fusedsl_cpu::CurCore();
        fs_generation = c.generation;
        c.pipe = this;
    }
    ~TPipe() {
        fusedsl_cpu::Runtime& rt = fusedsl_cpu::RT();
        if (rt.in_block && rt.core.pipe == this) {
            rt.core.pipe = nullptr;
        }
    }
    TPipe(const TPipe&) = delete;
    TPipe& operator=(const TPipe&) = delete;

    void Init() {}

    template <class Q>
    bool InitBuffer(Q& que, uint8_t num, uint32_t len, FUSEDSL_CPU_SITE) {
        static_assert(std::is_base_of_v<fusedsl_cpu::QueueBase, Q>, "InitBuffer(que, num, len) takes a TQue");
        using namespace fusedsl_cpu;
        AtSite at(fs_site);
        if (!que.fs_state.empty() && que.fs_generation == CurCore().generation) {
            Fail("InitBuffer: this TQue<%s> is already initialised; call TPipe::Reset() before re-planning UB",
                 PositionName(que.fs_pos));
        }
        if (num == 0 || len == 0) {
            Fail("InitBuffer: TQue<%s> with num = %u and len = %u; both must be at least 1",
                 PositionName(que.fs_pos), num, len);
        }
        if (!IsUbPosition(que.fs_pos) && IsCubeQueuePosition(que.fs_pos)) {
            return fs_InitCubeQueue(que, num, len, fs_site);
        }
        uint32_t each = static_cast<uint32_t>(RoundUp(len, 32));
        uint32_t off = Reserve(PositionName(que.fs_pos), "TQue", que.fs_pos, num, each);
        std::vector<uint32_t> offsets;
        for (uint32_t i = 0; i < num; ++i) {
            offsets.push_back(off + i * each);
        }
        que.fs_Plan(std::move(offsets), each, nullptr);
        return true;
    }

    template <TPosition src, int32_t depth, auto mask>
    bool InitBuffer(TQueBind<src, TPosition::TSCM, depth, mask>& que, uint8_t num, uint32_t len, FUSEDSL_CPU_SITE) {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        return que.fs_Init(*this, num, len);
    }

    template <TPosition pos>
    bool InitBuffer(TBuf<pos>& buf, uint32_t len, FUSEDSL_CPU_SITE) {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        using namespace fusedsl_cpu;
        if (buf.fs_init && buf.fs_generation == CurCore().generation) {
            Fail("InitBuffer: this TBuf<%s> is already initialised; call TPipe::Reset() before re-planning UB",
                 PositionName(pos));
        }
        if (len == 0) {
            Fail("InitBuffer: TBuf<%s> with len = 0", PositionName(pos));
        }
        uint32_t each = static_cast<uint32_t>(RoundUp(len, 32));
        buf.fs_offset = Reserve(PositionName(pos), "TBuf", pos, 1, each);
        buf.fs_len = each;
        buf.fs_generation = CurCore().generation;
        buf.fs_init = true;
        buf.fs_pool = nullptr;
        SetSlotState(buf.fs_offset, each, kSlotPlain);
        return true;
    }

    // TBufPool (bufpool.h): a pool carved from the plan, or one laid over another pool's bytes.
    template <class P>
    bool InitBufPool(P& bufPool, uint32_t len, FUSEDSL_CPU_SITE) {
        fusedsl_cpu::AtSite at(fs_site);
        return fusedsl_cpu::PipeInitBufPool(*this, bufPool.fs_pool, len, nullptr);
    }
    template <class P, class S>
    bool InitBufPool(P& bufPool, uint32_t len, S& shareBuf, FUSEDSL_CPU_SITE) {
        fusedsl_cpu::AtSite at(fs_site);
        return fusedsl_cpu::PipeInitBufPool(*this, bufPool.fs_pool, len, &shareBuf.fs_pool);
    }
    // The UB of a pool carved from the plan: `ids` buffer ids and `bytes` bytes.
    uint32_t fs_ReservePool(TPosition pos, uint32_t ids, uint32_t bytes) {
        return Reserve(fusedsl_cpu::PositionName(pos), "TBufPool", pos, ids, bytes, 1);
    }

    // Frees the whole UB plan so InitBuffer can be called again.
    void Reset(FUSEDSL_CPU_SITE) {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        fs_cursor = 0;
        fs_buffers = 0;
        fs_tscm_bytes = 0;
        std::fill(std::begin(fs_local_cursor), std::end(fs_local_cursor), 0u);
        fs_local_plans.clear();
        std::fill(std::begin(fs_share_start), std::end(fs_share_start), -1);
        fusedsl_cpu::ForgetPools(*this);
    }
    void Destroy() { Reset(); }

    template <HardEvent evt>
    TEventID FetchEventID() {
        int e = static_cast<int>(evt);
        for (int i = 0; i < fusedsl_cpu::Target().max_event_ids; ++i) {
            if (!(fs_event_ids[e] & (1u << i))) {
                return static_cast<TEventID>(i);
            }
        }
        fusedsl_cpu::Fail("FetchEventID<HardEvent::%s>: all %d event ids are allocated", fusedsl_cpu::EventName(evt),
                          fusedsl_cpu::Target().max_event_ids);
    }

    // The runtime-argument form CANN's samples use: FetchEventID(HardEvent::V_S).
    TEventID FetchEventID(HardEvent evt) {
        int e = static_cast<int>(evt);
        fusedsl_cpu::CheckEvent("FetchEventID", evt, 0);
        for (int i = 0; i < fusedsl_cpu::Target().max_event_ids; ++i) {
            if (!(fs_event_ids[e] & (1u << i))) {
                return static_cast<TEventID>(i);
            }
        }
        fusedsl_cpu::Fail("FetchEventID(HardEvent::%s): all %d event ids are allocated", fusedsl_cpu::EventName(evt),
                          fusedsl_cpu::Target().max_event_ids);
    }

    template <HardEvent evt>
    TEventID AllocEventID() {
        TEventID id = FetchEventID<evt>();
        fs_event_ids[static_cast<int>(evt)] |= static_cast<uint8_t>(1u << id);
        return id;
    }

    template <HardEvent evt>
    void ReleaseEventID(TEventID id) {
        fs_event_ids[static_cast<int>(evt)] &= static_cast<uint8_t>(~(1u << id));
    }

private:
    static bool IsCubeQueuePosition(TPosition p) {
        return p == TPosition::A1 || p == TPosition::B1 || p == TPosition::C1 || p == TPosition::A2 ||
               p == TPosition::B2 || p == TPosition::CO1 || p == TPosition::C2;
    }

    // A queue of the cube unit's memories (TQue<A1/B1/C1> in L1, A2 in L0A, B2 in L0B, CO1 in L0C, C2 in the
    // bias table on separated chips), planned from the bottom of that memory like UB (L1 below the TSCM
    // queues, which take it from the top).  L0 buffers keep the 512-byte alignment the cube's operands need.
    template <class Q>
    bool fs_InitCubeQueue(Q& que, uint8_t num, uint32_t len, fusedsl_cpu::Site site) {
        using namespace fusedsl_cpu;
        const char* api = "InitBuffer";
        CheckHasCube(api);
        const int m = MemOfPosition(que.fs_pos);
        const uint32_t align = m == kMemL0A || m == kMemL0B || m == kMemL0C ? 512 : 32;
        const uint32_t each = static_cast<uint32_t>(RoundUp(len, align));
        const uint64_t cap = LocalMemBytes(m) - (m == kMemL1 ? fs_tscm_bytes : 0);
        const uint64_t need = static_cast<uint64_t>(fs_local_cursor[m]) + static_cast<uint64_t>(num) * each;
        if (need > cap) {
            std::string held;
            for (const LocalPlan& p : fs_local_plans) {
                if (p.mem == m && p.matmul) {
                    held = Format("; the Matmul object registered at %s holds %s [%u, %u) for its own buffers, as "
                                  "CANN's Matmul plans them in the same TPipe", SiteText(p.site).c_str(),
                                  LocalMemName(m), p.start, p.end);
                    break;
                }
            }
            Fail("%s: TQue<%s> plan of %s needs %llu bytes, %s has %llu (this call adds %u x %u bytes on top of %u "
                 "already planned%s%s)", api, PositionName(que.fs_pos), LocalMemName(m),
                 static_cast<unsigned long long>(need), Target().name, static_cast<unsigned long long>(cap), num, each,
                 fs_local_cursor[m], m == kMemL1 && fs_tscm_bytes != 0 ? ", TSCM queues holding the top of L1" : "",
                 held.c_str());
        }
        const uint64_t end = need;
        if (const LocalPlan* mm = LocalOverlap(*this, m, fs_local_cursor[m], end, false)) {
            Fail("%s: TQue<%s> [%u, %llu) of %s overlaps the own %s buffers [%u, %u) of the Matmul object registered "
                 "at %s (%s); CANN places what is planned after a Matmul object at the object's start plus its tiling's "
                 "%s, so on the device both would use these bytes — plan this queue before REGIST_MATMUL_OBJ, or set "
                 "the tiling's %s to what the Matmul takes", api, PositionName(que.fs_pos),
                 fs_local_cursor[m], static_cast<unsigned long long>(end), LocalMemName(m), LocalMemName(m), mm->start,
                 mm->end, SiteText(mm->site).c_str(), mm->what.c_str(), m == kMemL1 ? "shareL1Size" : "shareL0CSize",
                 m == kMemL1 ? "shareL1Size" : "shareL0CSize");
        }
        fs_local_plans.push_back(LocalPlan{m, fs_local_cursor[m], static_cast<uint32_t>(end), site,
                                           Format("TQue<%s>", PositionName(que.fs_pos)), false});
        std::vector<uint32_t> offsets;
        for (uint32_t i = 0; i < num; ++i) {
            offsets.push_back(fs_local_cursor[m] + i * each);
        }
        fs_local_cursor[m] = static_cast<uint32_t>(need);
        que.fs_Plan(std::move(offsets), each, nullptr, m);
        return true;
    }

    // `num` buffer ids of `each` bytes (a pool: `num` ids, one block of `each` bytes).
    uint32_t Reserve(const char* pos_name, const char* kind, TPosition pos, uint32_t num, uint32_t each,
                     uint32_t blocks = 0) {
        if (blocks == 0) {
            blocks = num;
        }
        using namespace fusedsl_cpu;
        Core& c = CurCore();
        const TargetInfo& t = Target();
        if (!IsUbPosition(pos)) {
            Fail("InitBuffer: %s<%s> is not in UB on %s; the fusedsl CPU implementation models UB positions "
                 "(VECIN, VECOUT, VECCALC) only", kind, pos_name, t.name);
        }
        CheckCoreHasUb("InitBuffer");
        if (fs_buffers + static_cast<int>(num) > t.max_buffers) {
            Fail("InitBuffer: this TPipe would hold %d buffers; at most %d are allowed per kernel",
                 fs_buffers + static_cast<int>(num), t.max_buffers);
        }
        uint64_t need = static_cast<uint64_t>(fs_cursor) + static_cast<uint64_t>(blocks) * each;
        if (need > c.ub_bytes) {
            Fail("InitBuffer: UB plan needs %llu bytes, %s has %u (this call adds %u x %u bytes for %s<%s> on "
                 "top of %u already planned)", static_cast<unsigned long long>(need), t.name, c.ub_bytes, blocks,
                 each, kind, pos_name, fs_cursor);
        }
        uint32_t off = fs_cursor;
        fs_cursor = static_cast<uint32_t>(need);
        fs_buffers += static_cast<int>(num);
        FreshUb(off, need - off);
        return off;
    }
};

inline TPipe* GetTPipePtr() {
    return static_cast<TPipe*>(fusedsl_cpu::CurCore().pipe);
}

// ---- block indices ------------------------------------------------------------------------

inline int64_t GetBlockIdx() {
    fusedsl_cpu::CurCore();
    return fusedsl_cpu::RT().block_idx;
}
inline int64_t GetBlockNum() {
    fusedsl_cpu::CurCore();
    return fusedsl_cpu::RT().block_num;
}
inline int64_t GetSubBlockIdx() {
    fusedsl_cpu::CurCore();
    return fusedsl_cpu::RT().sub_block_idx;
}
// On a vector core: its block's vector cores (2 in __mix__(1, 2), 1 in __mix__(1, 1) and vector-only
// kernels); on a cube core 1 (asc-devkit GetTaskRatio.md, GetSubBlockNum(ISASI).md tables).
inline int64_t GetTaskRatio() {
    fusedsl_cpu::CurCore();
    return fusedsl_cpu::RT().on_aic || fusedsl_cpu::RT().kernel_mode == KernelMode::AIC_MODE
               ? 1 : fusedsl_cpu::RT().mix_ratio;
}
inline int64_t GetSubBlockNum() {
    return GetTaskRatio();
}
// CANN's older spelling, defined for every chip (asc-devkit kernel_operator_sys_var_intf_impl.h).
inline int64_t GetTaskRation() {
    return GetTaskRatio();
}

// ---- synchronisation ----------------------------------------------------------------------
// The CPU runs each instruction to completion, so barriers and flags change no data; they are
// checked for the pairing rules the hardware needs (ASCENDC.md §6.7).

template <pipe_t pipe>
inline void PipeBarrier(FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::CurCore();
    if (pipe == PIPE_S) {
        fusedsl_cpu::Fail("PipeBarrier<PIPE_S>: not supported by the hardware; scalar code is already in order");
    }
    if (pipe == PIPE_ALL) {
        fusedsl_cpu::SyncAllPipes();
    }
}

}  // namespace AscendC

inline void pipe_barrier(pipe_t pipe) {
    fusedsl_cpu::CurCore();
    if (pipe == PIPE_S) {
        fusedsl_cpu::Fail("pipe_barrier(PIPE_S): not supported by the hardware; scalar code is already in order");
    }
    if (pipe == PIPE_ALL) {
        fusedsl_cpu::SyncAllPipes();
    }
}

namespace fusedsl_cpu {

inline uint8_t PipeOf(const std::string& name) {
    if (name == "S") return PIPE_S;
    if (name == "V") return PIPE_V;
    if (name == "MTE2") return PIPE_MTE2;
    if (name == "MTE3") return PIPE_MTE3;
    return PIPE_ALL;
}

// HardEvent::MTE2_V -> (PIPE_MTE2, PIPE_V).
inline void EventPipes(HardEvent evt, uint8_t* from, uint8_t* to) {
    const char* name = EventName(evt);
    const char* us = std::strchr(name, '_');
    *from = PipeOf(std::string(name, us ? static_cast<size_t>(us - name) : std::strlen(name)));
    *to = PipeOf(us ? us + 1 : "");
}

inline void CheckEvent(const char* api, HardEvent evt, int32_t id) {
    const char* name = EventName(evt);
    std::string from(name, std::strcspn(name, "_"));
    std::string to(std::strchr(name, '_') ? std::strchr(name, '_') + 1 : "");
    // The cube pipes exist only on a core with a cube unit: not on 910B's vector cores (AIV_MODE).
    bool vector_core = RT().kernel_mode == KernelMode::AIV_MODE && Target().separated;
    for (const std::string& p : {from, to}) {
        if (vector_core && (p == "M" || p == "MTE1" || p == "FIX")) {
            Fail("%s<HardEvent::%s>: an event of the cube pipes (M, MTE1, FIX) in a vector-only kernel; the vector "
                 "cores of %s synchronise the S, V, MTE2 and MTE3 pipes", api, name, Target().name);
        }
    }
    int limit = Target().max_event_ids;
    if (id < 0 || id >= limit) {
        Fail("%s<HardEvent::%s>(%d): event id out of range; %s has ids 0..%d", api, name, id, Target().name,
             limit - 1);
    }
}

}  // namespace fusedsl_cpu

namespace AscendC {

template <HardEvent evt>
inline void SetFlag(int32_t eventID, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    CheckEvent("SetFlag", evt, eventID);
    uint8_t& f = CurCore().flags[static_cast<int>(evt)][eventID];
    if (f) {
        Fail("SetFlag<HardEvent::%s>(%d): set twice without a WaitFlag in between", EventName(evt), eventID);
    }
    f = 1;
    CurCore().flag_file[static_cast<int>(evt)][eventID] = CurrentSite().file;   // "never waited" names it
    CurCore().flag_line[static_cast<int>(evt)][eventID] = CurrentSite().line;
    uint8_t from = PIPE_S;
    uint8_t to = PIPE_S;
    EventPipes(evt, &from, &to);
    Core& c = CurCore();
    uint32_t* vc = c.flag_vc[static_cast<int>(evt)][eventID];
    for (int q = 0; q < 8; ++q) {
        vc[q] = q == from ? c.clock : c.synced[q][from];
    }
}

template <HardEvent evt>
inline void WaitFlag(int32_t eventID, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    CheckEvent("WaitFlag", evt, eventID);
    uint8_t& f = CurCore().flags[static_cast<int>(evt)][eventID];
    if (!f) {
        Fail("WaitFlag<HardEvent::%s>(%d): no SetFlag with the same event and id before it; the pipe would wait "
             "forever", EventName(evt), eventID);
    }
    f = 0;
    uint8_t from = PIPE_S;
    uint8_t to = PIPE_S;
    EventPipes(evt, &from, &to);
    Core& c = CurCore();
    const uint32_t* vc = c.flag_vc[static_cast<int>(evt)][eventID];
    for (int q = 0; q < 8; ++q) {
        c.synced[q][to] = std::max(c.synced[q][to], vc[q]);
    }
}

// ---- atomic GM writes, padding and mask registers -----------------------------------------

template <typename T>
inline void SetAtomicAdd(FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::Core& c = fusedsl_cpu::CurCore();
    c.atomic_add = true;
    c.atomic_type = fusedsl_cpu::TypeName<T>();
    c.atomic_op = 0;
}

}  // namespace AscendC

namespace fusedsl_cpu {

// SetAtomicMax/Min (ISASI): A2/A3 only; int8_t, int16_t, half, bfloat16_t, int32_t, float.
template <typename T>
inline void SetAtomicMaxMin(const char* api, uint8_t op) {
    static_assert(std::is_same_v<T, int8_t> || std::is_same_v<T, int16_t> || std::is_same_v<T, half> ||
                      std::is_same_v<T, bfloat16_t> || std::is_same_v<T, int32_t> || std::is_same_v<T, float>,
                  "SetAtomicMax/Min take int8_t, int16_t, half, bfloat16_t, int32_t or float");
    Core& c = CurCore();
    if (Target().arch != 2201) {
        Fail("%s is not available on %s (A2/A3 products only)", api, Target().name);
    }
    c.atomic_add = true;
    c.atomic_type = TypeName<T>();
    c.atomic_op = op;
}

}  // namespace fusedsl_cpu

namespace AscendC {

// GM writes of DataCopy(UB->GM) keep the larger (smaller) of the old and the new value.
template <typename T>
inline void SetAtomicMax(FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::SetAtomicMaxMin<T>("SetAtomicMax", 1);
}

template <typename T>
inline void SetAtomicMin(FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::SetAtomicMaxMin<T>("SetAtomicMin", 2);
}

enum class MemDsbT : uint8_t { ALL = 0, DDR, UB, SEQ };

// The CPU finishes every GM and UB access before the next instruction: nothing to wait for.
template <MemDsbT arg0 = MemDsbT::ALL>
inline void DataSyncBarrier(FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::CurCore();
}

// Scalar GM access that bypasses the data cache (A2/A3): the value is in GM at once, so no
// DataCacheCleanAndInvalid is needed and other blocks see it.
template <typename T>
inline T ReadGmByPassDCache(__gm__ T* addr, FUSEDSL_CPU_SITE) {
    using namespace fusedsl_cpu;
    const char* api = "ReadGmByPassDCache";
    if (Target().arch != 2201) {
        Fail("%s is not available on %s (A2/A3 products only)", api, Target().name);
    }
    CheckGmRange(api, reinterpret_cast<const uint8_t*>(addr), sizeof(T));
    St().gm_bytes_read += sizeof(T);
    St().scalar_gm_accesses += 1;
    NoteGmPoll(api, addr, fs_site);
    T v;
    std::memcpy(&v, addr, sizeof(T));
    return v;
}

template <typename T>
inline void WriteGmByPassDCache(__gm__ T* addr, T value, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    const char* api = "WriteGmByPassDCache";
    if (Target().arch != 2201) {
        Fail("%s is not available on %s (A2/A3 products only)", api, Target().name);
    }
    auto p = reinterpret_cast<uint8_t*>(addr);
    GmBuffer* b = CheckGmRange(api, p, sizeof(T));
    NoteGmWrite(api, b, p, sizeof(T), false, reinterpret_cast<const uint8_t*>(&value));
    RT().progress += 1;
    St().gm_bytes_written += sizeof(T);
    St().scalar_gm_accesses += 1;
    std::memcpy(addr, &value, sizeof(T));
}

inline void SetAtomicNone(FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::Core& c = fusedsl_cpu::CurCore();
    c.atomic_add = false;
    c.atomic_type = "";
}

// CANN 9.x name of SetAtomicNone (ASCENDC.md §2.6).
inline void DisableDmaAtomic(FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    SetAtomicNone();
}

template <typename T>
inline void SetPadValue(T value, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::Core& c = fusedsl_cpu::CurCore();
    c.pad_value = 0;
    std::memcpy(&c.pad_value, &value, sizeof(T));
    c.pad_value_set = true;
}

// Mask registers.  Normal mode: a 128-bit lane mask.  Counter mode (SetMaskCount, or
// SetVectorMask<T, MaskMode::COUNTER>): the low word is an element count, and a mask/repeat
// instruction processes that many elements in as many repeats as they need (its repeatTime
// argument is ignored), the last repeat partly.
template <typename T, MaskMode mode = MaskMode::NORMAL>
inline void SetVectorMask(uint64_t maskHigh, uint64_t maskLow, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::Core& c = fusedsl_cpu::CurCore();
    if (mode == MaskMode::COUNTER) {
        c.counter_mode = true;
    }
    c.vector_mask[0] = maskLow;
    c.vector_mask[1] = maskHigh;
}

template <typename T, MaskMode mode = MaskMode::NORMAL>
inline void SetVectorMask(int32_t len, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::Core& c = fusedsl_cpu::CurCore();
    if (mode == MaskMode::COUNTER || c.counter_mode) {
        c.counter_mode = true;
        c.vector_mask[0] = static_cast<uint64_t>(len);
        c.vector_mask[1] = 0;
        return;
    }
    c.vector_mask[0] = len >= 64 ? ~0ull : (1ull << len) - 1;
    c.vector_mask[1] = len >= 128 ? ~0ull : len > 64 ? (1ull << (len - 64)) - 1 : 0;
}

inline void ResetMask(FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::Core& c = fusedsl_cpu::CurCore();
    c.vector_mask[0] = ~0ull;
    c.vector_mask[1] = ~0ull;
}

inline void SetMaskNorm(FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::CurCore().counter_mode = false;
}

inline void SetMaskCount(FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::CurCore().counter_mode = true;
}

// ---- printf -------------------------------------------------------------------------------

namespace detail {
template <typename T>
inline auto PrintfArg(T v) {
    if constexpr (fusedsl_cpu::kIsLowFloat<T> || std::is_same_v<T, float>) {
        return static_cast<double>(static_cast<float>(v));
    } else {
        return v;
    }
}
}  // namespace detail

template <typename... Args>
inline void printf(const char* fmt, Args... args) {
    std::printf(fmt, detail::PrintfArg(args)...);
    // Kernel prints interleave with the host program's output, as the device's do after sync.
    std::fflush(stdout);
}

template <typename... Args>
inline void PRINTF(const char* fmt, Args... args) {
    AscendC::printf(fmt, args...);
}

}  // namespace AscendC

#define KERNEL_TASK_TYPE_DEFAULT(type) ::fusedsl_cpu::NoteKernelType(type)
// Which core the code runs on: a cube-only launch (AIC_MODE, __cube__) runs on cube cores; a mixed
// launch on a separated chip runs each block's two vector instances and its cube core (the Matmul
// API still runs the cube's work on the vector side, see matmul.h: the cube core leaves the kernel
// at REGIST_MATMUL_OBJ, as CANN's does once its KFC server ends); other launches run vector instances.
#define ASCEND_IS_AIV (::fusedsl_cpu::RT().kernel_mode != KernelMode::AIC_MODE && !::fusedsl_cpu::RT().on_aic)
#define ASCEND_IS_AIC (::fusedsl_cpu::RT().kernel_mode == KernelMode::AIC_MODE || ::fusedsl_cpu::RT().on_aic)

#include "bufpool.h"   // TBufPool: its UB comes from TPipe, its buffers are TQue/TBuf

// fusedsl CPU implementation of the Ascend C API: targets, per-launch and per-core state,
// the GM buffer registry, and the checks shared by every API.
#pragma once

#include <algorithm>
#include <exception>
#include <iterator>
#include <map>
#include <vector>

#include "base.h"

namespace fusedsl_cpu {

struct ApiTypes {
    const char* api;
    const char* types;  // " half float " (space-delimited, padded)
};

struct CastModes {
    const char* src;
    const char* dst;
    const char* modes;  // " CAST_NONE CAST_RINT "
};

// One (A, B, Bias, C) element-type combination of the Matmul high-level API.
struct MatmulTypes {
    const char* a;
    const char* b;
    const char* bias;
    const char* c;
};

struct TargetInfo {
    const char* name;
    const char* chip;
    int arch;
    uint32_t ub_bytes;
    int aic_cores;
    int aiv_cores;
    bool separated;
    int vector_cores;
    int max_queue_buffers_per_position;
    int max_buffers;
    bool has_datacopypad;
    uint32_t select_scratch_bytes;
    int max_event_ids;
    const ApiTypes* apis;
    size_t num_apis;
    const CastModes* casts;
    size_t num_casts;
    uint32_t l1_bytes;
    uint32_t l0a_bytes;
    uint32_t l0b_bytes;
    uint32_t l0c_bytes;
    const MatmulTypes* matmul;
    size_t num_matmul;
};

#include "targets.inc"

inline bool HasWord(const char* words, const char* word) {
    size_t n = std::strlen(word);
    for (const char* p = std::strstr(words, word); p != nullptr; p = std::strstr(p + 1, word)) {
        if (p[-1] == ' ' && p[n] == ' ') {
            return true;
        }
    }
    return false;
}

inline int FindTarget(const char* name) {
    for (int i = 0; i < kNumTargets; ++i) {
        if (std::strcmp(kTargets[i].name, name) == 0) {
            return i;
        }
    }
    return -1;
}

inline std::string KnownTargets() {
    std::string s;
    for (int i = 0; i < kNumTargets; ++i) {
        s += (i ? ", " : "") + std::string(kTargets[i].name);
    }
    return s;
}

struct Stats {
    uint64_t gm_bytes_read = 0;
    uint64_t gm_bytes_written = 0;
    uint64_t vector_instructions = 0;
    uint64_t vector_repeats = 0;
    uint64_t scalar_gm_accesses = 0;
    uint64_t ub_high_water = 0;
};

struct GmBuffer {
    uint8_t* base = nullptr;
    uint64_t bytes = 0;
    std::string name;
    // Which block (index + 1) wrote each byte during the current launch; 0 = nobody.
    // Allocated on the first write so read-only inputs cost nothing.
    std::vector<uint16_t> owner;
};

constexpr int kNumPositions = static_cast<int>(TPosition::MAX);
constexpr int kNumEvents = static_cast<int>(HardEvent::MAX);
constexpr int kMaxEventIds = 8;

class TPipeState;

// One AI core's private state, rebuilt for every block of a launch.
struct Core {
    std::vector<uint8_t> ub;
    std::vector<uint8_t> written;   // shadow: 1 = the UB byte was written since allocation
    uint32_t ub_bytes = 0;
    uint64_t generation = 0;        // tells queues of an earlier block apart
    TPipeState* pipe = nullptr;     // the most recently constructed TPipe
    int outstanding[kNumPositions] = {};
    uint8_t flags[kNumEvents][kMaxEventIds] = {};
    bool atomic_add = false;
    const char* atomic_type = "";
    bool pad_value_set = false;
    uint64_t pad_value = 0;
    uint64_t vector_mask[2] = {~0ull, ~0ull};
    std::string pending_error;      // found in a destructor, reported when the block ends
    uint64_t ub_high_water = 0;
};

struct Runtime {
    int target = -1;                // index into kTargets; -1 until first use
    int compiled_arch = 0;          // __NPU_ARCH__ of a translation unit, if any
    bool library_mode = false;
    KernelMode kernel_mode = KernelMode::AIV_MODE;
    int kernel_type = -1;
    uint64_t tiling_key = 0;
    Stats stats;
    std::map<uintptr_t, GmBuffer> gm;
    uint64_t gm_alloc_count = 0;
    std::string last_error;
    Core core;
    bool in_block = false;
    int64_t block_idx = 0;
    int64_t block_num = 1;
    int64_t sub_block_idx = 0;
    int64_t task_ratio = 1;
};

inline Runtime& RT() {
    static Runtime rt;
    return rt;
}

inline bool NoteCompiledArch(int arch) {
    RT().compiled_arch = arch;
    return true;
}

inline int ArchTarget(int arch) {
    switch (arch) {
        case 2201: return FindTarget("ascend910b");
        case 2002: return FindTarget("ascend310p");
        case 1001: return FindTarget("ascend910");
        default: return -1;
    }
}

// Target choice: fusedsl_cpu_set_target() > __NPU_ARCH__ of the build > $FUSEDSL_TARGET >
// ascend910b.  Resolved once, at first use.
inline const TargetInfo& Target() {
    Runtime& rt = RT();
    if (rt.target < 0) {
        int t = ArchTarget(rt.compiled_arch);
        const char* env = std::getenv("FUSEDSL_TARGET");
        if (t < 0 && env != nullptr && *env != '\0') {
            t = FindTarget(env);
            if (t < 0) {
                std::fprintf(stderr, "[WARNING] fusedsl CPU: FUSEDSL_TARGET=%s is not a known target (%s); "
                             "using ascend910b\n", env, KnownTargets().c_str());
            }
        }
        rt.target = t >= 0 ? t : FindTarget("ascend910b");
    }
    return kTargets[rt.target];
}

inline const char* FindApiTypes(const char* api) {
    const TargetInfo& t = Target();
    for (size_t i = 0; i < t.num_apis; ++i) {
        if (std::strcmp(t.apis[i].api, api) == 0) {
            return t.apis[i].types;
        }
    }
    return nullptr;
}

// Rule 5: the API exists on the target and takes this element type.
inline void CheckApi(const char* api, const char* type) {
    const char* types = FindApiTypes(api);
    if (types == nullptr) {
        Fail("%s is not available on %s", api, Target().name);
    }
    if (!HasWord(types, type)) {
        std::string list(types + 1);
        list.pop_back();
        std::string pretty;
        for (char c : list) {
            pretty += c == ' ' ? std::string(", ") : std::string(1, c);
        }
        Fail("%s<%s> is not supported on %s (supported: %s)", api, type, Target().name, pretty.c_str());
    }
}

inline Core& CurCore() {
    Runtime& rt = RT();
    if (!rt.in_block) {
        std::fprintf(stderr, "[ERROR] fusedsl CPU check: an AscendC kernel API was called outside a kernel "
                     "launch; run kernels with ICPU_RUN_KF (or fusedsl_cpu::Launch)\n");
        std::exit(1);
    }
    return rt.core;
}

inline Stats& St() {
    return RT().stats;
}

inline void CountVector(uint64_t bytes) {
    Stats& s = St();
    s.vector_instructions += 1;
    s.vector_repeats += (bytes + 255) / 256;
}

// ---- UB operands -------------------------------------------------------------------------

inline uint32_t UbOffset(const void* addr) {
    Core& c = CurCore();
    auto p = static_cast<const uint8_t*>(addr);
    if (p < c.ub.data() || p >= c.ub.data() + c.ub_bytes) {
        Fail("internal: address is not in this core's UB");
    }
    return static_cast<uint32_t>(p - c.ub.data());
}

// Rule 3 and the tensor-size rule: a UB operand exists, starts 32-byte aligned, and has room
// for the bytes the instruction touches.  Returns its UB byte offset.
inline uint32_t CheckUb(const char* api, const char* role, const void* addr, uint64_t tensor_bytes,
                        uint64_t need_bytes, uint32_t elem_size, bool aligned = true) {
    if (addr == nullptr) {
        Fail("%s: %s is an empty LocalTensor; get it from TQue::AllocTensor/DeQue or TBuf::Get first",
             api, role);
    }
    Core& c = CurCore();
    auto p = static_cast<const uint8_t*>(addr);
    if (p < c.ub.data() || p >= c.ub.data() + c.ub_bytes) {
        Fail("%s: %s does not point into this core's UB (a tensor kept from another block, or a "
             "sub-tensor offset past the end of UB)", api, role);
    }
    auto off = static_cast<uint32_t>(p - c.ub.data());
    if (aligned && off % 32 != 0) {
        Fail("%s: %s starts at UB offset %u, which is not 32-byte aligned; sub-tensor offsets must be "
             "multiples of %u elements of this type", api, role, off, 32 / elem_size);
    }
    if (need_bytes > tensor_bytes) {
        Fail("%s: %s needs %llu bytes but the LocalTensor has only %llu (UB offset %u); the count or "
             "repeat parameters run past the end of the tensor", api, role,
             static_cast<unsigned long long>(need_bytes), static_cast<unsigned long long>(tensor_bytes), off);
    }
    return off;
}

// Rule 6: every UB byte an instruction reads was written since its buffer was allocated.
inline void CheckWritten(const char* api, const char* role, uint32_t off, uint64_t bytes) {
    Core& c = CurCore();
    const uint8_t* w = c.written.data();
    auto first = static_cast<const uint8_t*>(std::memchr(w + off, 0, bytes));
    if (first == nullptr) {
        return;
    }
    uint64_t start = static_cast<uint64_t>(first - w);
    uint64_t end = start;
    while (end < off + bytes && w[end] == 0) {
        ++end;
    }
    Fail("%s: reads %llu bytes of UB at offset %llu that were never written (%s covers UB [%u, %llu)); "
         "AllocTensor/TBuf memory is uninitialised — fill it (DataCopy, Duplicate) before reading",
         api, static_cast<unsigned long long>(end - start), static_cast<unsigned long long>(start), role,
         off, static_cast<unsigned long long>(off + bytes));
}

inline void MarkWritten(uint32_t off, uint64_t bytes) {
    std::memset(CurCore().written.data() + off, 1, bytes);
}

// dst may share memory with a source only when they coincide (ASCENDC.md §2.8).
inline void CheckOverlap(const char* api, const char* role, uint32_t dst, uint64_t dst_bytes, uint32_t src,
                         uint64_t src_bytes) {
    bool overlap = dst < src + src_bytes && src < dst + dst_bytes;
    if (overlap && (dst != src || dst_bytes != src_bytes)) {
        Fail("%s: dst UB [%u, %llu) partially overlaps %s UB [%u, %llu); dst may share memory with a "
             "source only when both cover exactly the same bytes", api, dst,
             static_cast<unsigned long long>(dst + dst_bytes), role, src,
             static_cast<unsigned long long>(src + src_bytes));
    }
}

// ---- GM -----------------------------------------------------------------------------------

inline GmBuffer* FindGm(const uint8_t* p) {
    auto& gm = RT().gm;
    auto it = gm.upper_bound(reinterpret_cast<uintptr_t>(p));
    if (it == gm.begin()) {
        return nullptr;
    }
    --it;
    GmBuffer& b = it->second;
    return p < b.base + b.bytes ? &b : nullptr;
}

inline std::string RegisteredList() {
    std::string s;
    for (auto& kv : RT().gm) {
        if (!s.empty()) {
            s += ", ";
        }
        s += "'" + kv.second.name + "' (" + std::to_string(kv.second.bytes) + " bytes)";
    }
    return s;
}

// Rule 7: a GM access lies inside one registered buffer (when any are registered).
// Returns the buffer, or nullptr when nothing is registered.
inline GmBuffer* CheckGmRange(const char* api, const uint8_t* p, uint64_t bytes) {
    if (RT().gm.empty()) {
        return nullptr;
    }
    GmBuffer* b = FindGm(p);
    if (b == nullptr) {
        auto& gm = RT().gm;
        auto it = gm.upper_bound(reinterpret_cast<uintptr_t>(p));
        if (it != gm.begin()) {
            const GmBuffer& prev = std::prev(it)->second;
            Fail("%s: accesses %llu bytes starting %llu bytes past the end of GM buffer '%s' (%llu bytes), outside "
                 "every registered buffer", api, static_cast<unsigned long long>(bytes),
                 static_cast<unsigned long long>(p - (prev.base + prev.bytes)), prev.name.c_str(),
                 static_cast<unsigned long long>(prev.bytes));
        }
        Fail("%s: GM address %p is outside every registered GM buffer (%s)", api, static_cast<const void*>(p),
             RegisteredList().c_str());
    }
    uint64_t off = static_cast<uint64_t>(p - b->base);
    if (off + bytes > b->bytes) {
        Fail("%s: accesses bytes [%llu, %llu) of GM buffer '%s', which has only %llu bytes", api,
             static_cast<unsigned long long>(off), static_cast<unsigned long long>(off + bytes),
             b->name.c_str(), static_cast<unsigned long long>(b->bytes));
    }
    return b;
}

// Rule 8: within one launch, no two blocks write the same GM byte unless atomic add is on.
inline void NoteGmWrite(const char* api, GmBuffer* b, const uint8_t* p, uint64_t bytes) {
    if (b == nullptr || CurCore().atomic_add) {
        return;
    }
    if (b->owner.empty()) {
        b->owner.assign(b->bytes, 0);
    }
    auto me = static_cast<uint16_t>(RT().block_idx + 1);
    uint64_t off = static_cast<uint64_t>(p - b->base);
    uint16_t* o = b->owner.data() + off;
    for (uint64_t i = 0; i < bytes; ++i) {
        if (o[i] != 0 && o[i] != me) {
            Fail("%s: blocks %d and %lld both write byte %llu of GM buffer '%s'; cores must write disjoint GM "
                 "ranges (or enable SetAtomicAdd)", api, o[i] - 1, static_cast<long long>(RT().block_idx),
                 static_cast<unsigned long long>(off + i), b->name.c_str());
        }
        o[i] = me;
    }
}

inline void RegisterGm(void* p, uint64_t bytes, const std::string& name) {
    GmBuffer b;
    b.base = static_cast<uint8_t*>(p);
    b.bytes = bytes;
    b.name = name;
    RT().gm[reinterpret_cast<uintptr_t>(p)] = std::move(b);
}

inline void UnregisterGm(void* p) {
    RT().gm.erase(reinterpret_cast<uintptr_t>(p));
}

}  // namespace fusedsl_cpu

// fusedsl CPU implementation of the Ascend C API: what every high-level (adv_api) vector API
// shares — per-chip availability, operand checks and the scratch space rules.
//
// The high-level APIs (Exp with Taylor terms, Erf, Gelu, SoftMax, LayerNorm ...) are built on
// the device from basic vector instructions and keep their intermediate values in a scratch
// buffer: either `sharedTmpBuffer` passed by the kernel, or the UB that TPipe::InitBuffer left
// free (the "framework-allocated" forms without that argument).  The API pages say the scratch
// must be at least the minValue of the matching host GetXxxMaxMinTmpSize for correct results;
// fusedsl checks that, writes junk over the scratch bytes the API may use (the device leaves its
// intermediates there) and computes the result itself in float/double, rounded once to T.
//
// Checks, as CANN's high-level API checks and the API pages state them: the chip has the API,
// T is one of its types, calCount fits every operand, operands are in UB and 32-byte aligned,
// sources were written, dst does not overlap a source where the page forbids it, and
// sharedTmpBuffer overlaps no operand.  Messages start with the user's file:line (Site).
#pragma once

#include <initializer_list>
#include <vector>

#include "vector.h"

namespace fusedsl_cpu {

// Chips of the API pages' product-support tables, by the fusedsl target's arch.
enum AdvChip : uint32_t { kChipA2A3 = 1, kChip310P = 2, kChip910A = 4 };
constexpr uint32_t kChipsA2A3_310P = kChipA2A3 | kChip310P;

inline uint32_t CurrentChip() {
    switch (Target().arch) {
        case 2201: return kChipA2A3;
        case 2002: return kChip310P;
        default: return kChip910A;
    }
}

// `types` is space-padded (" half float "), as in the target tables.
inline void CheckAdvApi(const char* api, uint32_t chips, const char* type, const char* types) {
    if ((chips & CurrentChip()) == 0) {
        const char* where = chips == kChipA2A3 ? "Atlas A2/A3 products only" : "Atlas A2/A3 and 310P AI Core only";
        Fail("%s is not available on %s (%s, per the API page's product support table)", api, Target().name, where);
    }
    if (!HasWord(types, type)) {
        std::string list(types + 1);
        list.pop_back();
        std::string pretty;
        for (char ch : list) {
            pretty += ch == ' ' ? std::string(", ") : std::string(1, ch);
        }
        Fail("%s<%s> is not supported on %s (supported: %s)", api, type, Target().name, pretty.c_str());
    }
}

// An operand of a high-level API: `count` elements from the tensor's start.
template <typename T>
inline uint32_t AdvOut(const char* api, const char* role, const LocalTensor<T>& t, uint64_t count) {
    return CheckUb(api, role, t.fs_addr, t.GetLength(), count * sizeof(T), sizeof(T));
}

template <typename T>
inline uint32_t AdvIn(const char* api, const char* role, const LocalTensor<T>& t, uint64_t count) {
    uint32_t off = CheckUb(api, role, t.fs_addr, t.GetLength(), count * sizeof(T), sizeof(T));
    CheckWritten(api, role, off, count * sizeof(T));
    return off;
}

struct AdvSpan {
    const char* role;
    uint32_t off;
    uint64_t bytes;
};

// The API pages forbid dst overlapping a source ("不支持源操作数与目的操作数地址重叠") for most
// high-level APIs: the device reads a source after it has started writing dst.
inline void AdvNoOverlap(const char* api, const AdvSpan& a, const AdvSpan& b) {
    if (a.off < b.off + b.bytes && b.off < a.off + a.bytes) {
        Fail("%s: %s UB [%u, %llu) overlaps %s UB [%u, %llu); this API does not allow its operands to share "
             "memory (it writes one while still reading the other)", api, a.role, a.off,
             static_cast<unsigned long long>(a.off + a.bytes), b.role, b.off,
             static_cast<unsigned long long>(b.off + b.bytes));
    }
}

// The scratch space.  `tmp` null: the framework-allocated form, which takes the UB left free by
// TPipe::InitBuffer.  `min_bytes` is the host GetXxxMaxMinTmpSize minValue for this call and
// `use_bytes` the most the API may use (its maxValue).
inline void AdvScratch(const char* api, const LocalTensor<uint8_t>* tmp, uint64_t min_bytes, uint64_t use_bytes,
                       std::initializer_list<AdvSpan> operands, const char* host_api) {
    Core& c = CurCore();
    if (tmp == nullptr) {
        if (min_bytes == 0) {
            return;
        }
        uint32_t used = c.pipe != nullptr ? c.pipe->fs_cursor : 0;
        uint64_t free = c.ub_bytes > used ? c.ub_bytes - used : 0;
        if (free < min_bytes) {
            Fail("%s: without sharedTmpBuffer the API takes its scratch (at least %llu bytes, the minValue of %s) "
                 "from the UB that TPipe::InitBuffer left free, but only %llu of %u bytes are free; plan less UB "
                 "or pass a sharedTmpBuffer", api, static_cast<unsigned long long>(min_bytes), host_api,
                 static_cast<unsigned long long>(free), c.ub_bytes);
        }
        return;
    }
    uint32_t off = CheckUb(api, "sharedTmpBuffer", tmp->fs_addr, tmp->GetLength(), 0, 1);
    if (tmp->GetLength() < min_bytes) {
        Fail("%s: sharedTmpBuffer has %u bytes, but this call needs at least %llu (the minValue of %s for this "
             "shape and type); size it from the host helper", api, tmp->GetLength(),
             static_cast<unsigned long long>(min_bytes), host_api);
    }
    uint64_t len = tmp->GetLength();
    for (const AdvSpan& s : operands) {
        if (s.bytes != 0 && off < s.off + s.bytes && s.off < off + len) {
            Fail("%s: sharedTmpBuffer UB [%u, %llu) overlaps %s UB [%u, %llu); the API keeps its intermediate "
                 "values in sharedTmpBuffer, which must not share memory with its operands", api, off,
                 static_cast<unsigned long long>(off + len), s.role, s.off,
                 static_cast<unsigned long long>(s.off + s.bytes));
        }
    }
    uint64_t n = std::min<uint64_t>(len, std::max(min_bytes, use_bytes));
    if (n == 0) {
        return;
    }
    // The device leaves intermediate values there: what the kernel had in it is gone.
    std::memset(c.ub.data() + off, 0xFF, n);
    MarkWritten(off, n);
}

template <typename T>
inline double AdvLoad(const uint8_t* base, uint64_t i) {
    return static_cast<double>(ToCompute(LoadAs<T>(base + i * sizeof(T))));
}

template <typename T>
inline void AdvStore(uint8_t* base, uint64_t i, double v) {
    if constexpr (std::is_integral_v<T>) {
        StoreAs(base + i * sizeof(T), static_cast<T>(v));
    } else {
        StoreAs(base + i * sizeof(T), FromCompute<T>(static_cast<float>(v)));
    }
}

// v rounded to T and back: a value the device holds in a T register or UB.
template <typename T>
inline double AdvRound(double v) {
    return static_cast<double>(ToCompute(FromCompute<T>(static_cast<float>(v))));
}

inline uint32_t TypeBytesFloatOrHalf(uint32_t type_size) {
    return type_size == 4 ? 4u : 2u;
}

// The common tmp rule of the math APIs: `nodes` temporary tensors of the input's size, at least
// one 256-byte repeat each.
inline uint64_t NodesMin(uint32_t nodes) {
    return static_cast<uint64_t>(nodes) * 256u;
}

inline uint64_t NodesMax(uint32_t nodes, uint64_t count, uint32_t type_size) {
    return static_cast<uint64_t>(nodes) * std::max<uint64_t>(count * type_size, 256u);
}

}  // namespace fusedsl_cpu

// fusedsl CPU implementation of the Ascend C API: vector instructions (ASCENDC.md §2.1, §2.3-2.6).
//
// Two calling forms, as on the device:
//  * count form  Op(dst, src..., count): the first `count` elements, contiguous;
//  * mask/repeat form Op(dst, src..., mask, repeatTime, RepeatParams): `repeatTime` repeats
//    of 256 bytes, each made of 8 blocks of 32 bytes, lanes chosen by the mask, operand
//    addresses walked with per-operand block and repeat strides (in 32-byte blocks).
// Values are read and written with memcpy so that reinterpreting UB between types never
// depends on the compiler's aliasing rules.
#pragma once

#include <limits>
#include <type_traits>

#include "data_copy.h"

namespace AscendC {

struct BinaryRepeatParams {
    uint16_t dstBlkStride = 1;
    uint16_t src0BlkStride = 1;
    uint16_t src1BlkStride = 1;
    uint16_t dstRepStride = 8;
    uint16_t src0RepStride = 8;
    uint16_t src1RepStride = 8;
};

struct UnaryRepeatParams {
    uint16_t dstBlkStride = 1;
    uint16_t srcBlkStride = 1;
    uint16_t dstRepStride = 8;
    uint16_t srcRepStride = 8;
};

struct BrcbRepeatParams {
    uint16_t dstBlkStride = 1;
    uint16_t dstRepStride = 8;
};

}  // namespace AscendC

namespace fusedsl_cpu {

using AscendC::BinaryRepeatParams;
using AscendC::BrcbRepeatParams;
using AscendC::ReduceOrder;
using AscendC::SELMODE;
using AscendC::UnaryRepeatParams;

template <typename T>
inline T LoadAs(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
}

template <typename T>
inline void StoreAs(uint8_t* p, T v) {
    std::memcpy(p, &v, sizeof(T));
}

template <typename T>
inline uint8_t* Bytes(const LocalTensor<T>& t) {
    return reinterpret_cast<uint8_t*>(t.fs_addr);
}

// Integer arithmetic runs in int64 and wraps on the way back, so overflow is defined.
template <typename T>
using Wide = std::conditional_t<std::is_integral_v<T>, int64_t, Compute<T>>;

template <typename T>
inline Wide<T> ToWide(T v) {
    return static_cast<Wide<T>>(ToCompute(v));
}

template <typename W>
inline bool IsNan(W v) {
    if constexpr (std::is_floating_point_v<W>) {
        return std::isnan(v);
    } else {
        return false;
    }
}

// NaN-propagating max/min, matching numpy.maximum/minimum (fusedsl's reference).
struct OpAdd { template <class W> W operator()(W a, W b) const { return a + b; } };
struct OpSub { template <class W> W operator()(W a, W b) const { return a - b; } };
struct OpMul { template <class W> W operator()(W a, W b) const { return a * b; } };
struct OpDiv { template <class W> W operator()(W a, W b) const { return a / b; } };
struct OpMax {
    template <class W> W operator()(W a, W b) const { return IsNan(a) ? a : IsNan(b) ? b : (a > b ? a : b); }
};
struct OpMin {
    template <class W> W operator()(W a, W b) const { return IsNan(a) ? a : IsNan(b) ? b : (a < b ? a : b); }
};
struct OpAnd { template <class W> W operator()(W a, W b) const { return a & b; } };
struct OpOr { template <class W> W operator()(W a, W b) const { return a | b; } };

struct OpExp { template <class W> W operator()(W a) const { return static_cast<W>(std::exp(a)); } };
struct OpLn { template <class W> W operator()(W a) const { return static_cast<W>(std::log(a)); } };
struct OpSqrt { template <class W> W operator()(W a) const { return static_cast<W>(std::sqrt(a)); } };
struct OpRsqrt { template <class W> W operator()(W a) const { return static_cast<W>(W(1) / std::sqrt(a)); } };
struct OpReciprocal { template <class W> W operator()(W a) const { return W(1) / a; } };
// Abs clears the sign bit of a float (abs(-0.0) is +0.0, as on the device and in numpy)
struct OpAbs {
    template <class W> W operator()(W a) const {
        if constexpr (std::is_floating_point_v<W>) return std::fabs(a);
        else return a < W(0) ? -a : a;
    }
};
struct OpRelu { template <class W> W operator()(W a) const { return a < W(0) ? W(0) : a; } };
struct OpNot { template <class W> W operator()(W a) const { return ~a; } };

template <class Op, class W>
struct BindScalar {
    W s;
    W operator()(W a) const { return Op()(a, s); }
};

template <class W>
struct OpLeakyRelu {
    W alpha;
    W operator()(W a) const { return a < W(0) ? a * alpha : a; }
};

inline bool CheckCount(const char* api, int64_t count) {
    if (count < 0) {
        Fail("%s: count = %lld is negative", api, static_cast<long long>(count));
    }
    return count > 0;  // count 0 is a no-op (ASCENDC.md §2.1)
}

template <typename T>
inline uint32_t DstOperand(const char* api, const char* role, const LocalTensor<T>& t, uint64_t count) {
    return CheckUb(api, role, t.fs_addr, t.GetLength(), count * sizeof(T), sizeof(T));
}

template <typename T>
inline uint32_t SrcOperand(const char* api, const char* role, const LocalTensor<T>& t, uint64_t count) {
    uint32_t off = CheckUb(api, role, t.fs_addr, t.GetLength(), count * sizeof(T), sizeof(T));
    CheckWritten(api, role, off, count * sizeof(T));
    return off;
}

// ---- count form engines -------------------------------------------------------------------

template <typename T, typename F>
inline void UnaryCount(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src, int64_t count, F f) {
    CheckApi(api, TypeName<T>());
    if (!CheckCount(api, count)) {
        return;
    }
    uint64_t bytes = count * sizeof(T);
    uint32_t d = DstOperand(api, "dst", dst, count);
    uint32_t s = SrcOperand(api, "src", src, count);
    CheckOverlap(api, "src", d, bytes, s, bytes);
    uint8_t* pd = Bytes(dst);
    const uint8_t* ps = Bytes(src);
    for (int64_t i = 0; i < count; ++i) {
        StoreAs(pd + i * sizeof(T), FromCompute<T>(f(ToWide(LoadAs<T>(ps + i * sizeof(T))))));
    }
    MarkWritten(d, bytes);
    CountVector(bytes);
}

template <typename T, typename F>
inline void BinaryCount(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src0,
                        const LocalTensor<T>& src1, int64_t count, F f) {
    CheckApi(api, TypeName<T>());
    if (!CheckCount(api, count)) {
        return;
    }
    uint64_t bytes = count * sizeof(T);
    uint32_t d = DstOperand(api, "dst", dst, count);
    uint32_t s0 = SrcOperand(api, "src0", src0, count);
    uint32_t s1 = SrcOperand(api, "src1", src1, count);
    CheckOverlap(api, "src0", d, bytes, s0, bytes);
    CheckOverlap(api, "src1", d, bytes, s1, bytes);
    uint8_t* pd = Bytes(dst);
    const uint8_t* pa = Bytes(src0);
    const uint8_t* pb = Bytes(src1);
    for (int64_t i = 0; i < count; ++i) {
        size_t k = i * sizeof(T);
        StoreAs(pd + k, FromCompute<T>(f(ToWide(LoadAs<T>(pa + k)), ToWide(LoadAs<T>(pb + k)))));
    }
    MarkWritten(d, bytes);
    CountVector(bytes);
}

// ---- mask/repeat form engine --------------------------------------------------------------

struct RepOperand {
    const char* role;
    uint32_t off;       // UB offset of the tensor start
    uint64_t bytes;     // tensor length
    uint32_t esize;
    uint32_t blk;       // block stride, 32-byte units
    uint32_t rep;       // repeat stride, 32-byte units
    bool read;
};

template <typename T>
inline RepOperand Operand(const char* api, const char* role, const LocalTensor<T>& t, uint32_t blk, uint32_t rep,
                          bool read) {
    uint32_t off = CheckUb(api, role, t.fs_addr, t.GetLength(), 0, sizeof(T));
    return RepOperand{role, off, t.GetLength(), static_cast<uint32_t>(sizeof(T)), blk, rep, read};
}

struct Mask {
    uint64_t bits[2];
    uint64_t counter = 0;   // counter mode: elements in all (0: normal mode, bits apply to every repeat)
};

// Counter mode decides the repeat count and each repeat's lanes from the element count.
inline uint64_t EffectiveRepeats(const Mask& m, uint32_t lanes, uint64_t repeat) {
    return m.counter ? (m.counter + lanes - 1) / lanes : repeat;
}

inline Mask RepeatMask(const Mask& m, uint32_t lanes, uint64_t r) {
    if (!m.counter) {
        return m;
    }
    uint64_t n = m.counter - r * lanes;
    n = n < lanes ? n : lanes;
    return Mask{{n >= 64 ? ~0ull : (1ull << n) - 1, n > 64 ? (n >= 128 ? ~0ull : (1ull << (n - 64)) - 1) : 0}};
}

inline Mask ContinuousMask(const char* api, uint64_t mask, uint32_t lanes) {
    if (mask == 0 || mask > lanes) {
        Fail("%s: mask = %llu is out of range; with %u lanes per repeat it must be in [1, %u]", api,
             static_cast<unsigned long long>(mask), lanes, lanes);
    }
    Mask m{{mask >= 64 ? ~0ull : (1ull << mask) - 1, mask > 64 ? (mask >= 128 ? ~0ull : (1ull << (mask - 64)) - 1) : 0}};
    return m;
}

inline Mask BitwiseMask(const char* api, const uint64_t* mask, uint32_t lanes) {
    Mask m{{mask[0], lanes > 64 ? mask[1] : 0}};
    if (m.bits[0] == 0 && m.bits[1] == 0) {
        Fail("%s: the bitwise mask selects no lane", api);
    }
    return m;
}

template <bool isSetMask>
inline Mask PickMask(const char* api, uint64_t mask, uint32_t lanes) {
    Core& c = CurCore();
    if (c.counter_mode) {
        uint64_t n = isSetMask ? mask : c.vector_mask[0];
        if (n == 0) {
            Fail("%s: counter mode with a count of 0 elements", api);
        }
        return Mask{{~0ull, ~0ull}, n};
    }
    if constexpr (!isSetMask) {
        return Mask{{c.vector_mask[0], lanes > 64 ? c.vector_mask[1] : 0}};
    } else {
        return ContinuousMask(api, mask, lanes);
    }
}

template <bool isSetMask>
inline Mask PickMask(const char* api, const uint64_t* mask, uint32_t lanes) {
    if constexpr (!isSetMask) {
        return PickMask<false>(api, uint64_t{0}, lanes);
    } else {
        return BitwiseMask(api, mask, lanes);
    }
}

// Runs body(p) for every active lane of every repeat; p[k] points at operand k's element.
// Operand 0 is the destination unless it is marked as read.
template <size_t N, typename F>
inline void ForEachLane(const char* api, const RepOperand (&ops)[N], const Mask& m_in, uint32_t lanes,
                        uint32_t repeat, F body) {
    if (ops[0].blk == 0 && !ops[0].read) {
        Fail("%s: dstBlkStride = 0 is undefined behaviour on the device", api);
    }
    uint8_t* ub = CurCore().ub.data();
    const uint64_t repeats = EffectiveRepeats(m_in, lanes, repeat);
    for (uint32_t r = 0; r < repeats; ++r) {
        const Mask m = RepeatMask(m_in, lanes, r);
        for (uint32_t j = 0; j < lanes; ++j) {
            if (!((m.bits[j / 64] >> (j % 64)) & 1)) {
                continue;
            }
            uint8_t* p[N];
            for (size_t k = 0; k < N; ++k) {
                const RepOperand& o = ops[k];
                uint32_t per_block = 32 / o.esize;
                uint64_t a = (static_cast<uint64_t>(r) * o.rep + (j / per_block) * static_cast<uint64_t>(o.blk)) * 32 +
                             (j % per_block) * o.esize;
                if (a + o.esize > o.bytes) {
                    Fail("%s: repeat %u, lane %u of %s reaches byte %llu of a %llu-byte LocalTensor; the mask/repeat "
                         "parameters run past the end of the tensor", api, r, j, o.role,
                         static_cast<unsigned long long>(a + o.esize), static_cast<unsigned long long>(o.bytes));
                }
                if (o.read) {
                    CheckWritten(api, o.role, static_cast<uint32_t>(o.off + a), o.esize);
                }
                p[k] = ub + o.off + a;
            }
            body(p);
            if (!ops[0].read) {
                MarkWritten(static_cast<uint32_t>(p[0] - ub), ops[0].esize);
            }
        }
    }
    St().vector_instructions += 1;
    St().vector_repeats += repeats;
}

template <typename T>
constexpr uint32_t LanesOf() {
    return 256 / sizeof(T);
}

template <typename T, typename F>
inline void BinaryRepeat(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src0,
                         const LocalTensor<T>& src1, const Mask& m, uint8_t repeat, const BinaryRepeatParams& p, F f) {
    CheckApi(api, TypeName<T>());
    const RepOperand ops[3] = {
        Operand(api, "dst", dst, p.dstBlkStride, p.dstRepStride, false),
        Operand(api, "src0", src0, p.src0BlkStride, p.src0RepStride, true),
        Operand(api, "src1", src1, p.src1BlkStride, p.src1RepStride, true),
    };
    ForEachLane(api, ops, m, LanesOf<T>(), repeat, [&](uint8_t* const* q) {
        StoreAs(q[0], FromCompute<T>(f(ToWide(LoadAs<T>(q[1])), ToWide(LoadAs<T>(q[2])))));
    });
}

template <typename T, typename F>
inline void UnaryRepeat(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src, const Mask& m,
                        uint8_t repeat, const UnaryRepeatParams& p, F f) {
    CheckApi(api, TypeName<T>());
    const RepOperand ops[2] = {
        Operand(api, "dst", dst, p.dstBlkStride, p.dstRepStride, false),
        Operand(api, "src", src, p.srcBlkStride, p.srcRepStride, true),
    };
    ForEachLane(api, ops, m, LanesOf<T>(), repeat, [&](uint8_t* const* q) {
        StoreAs(q[0], FromCompute<T>(f(ToWide(LoadAs<T>(q[1])))));
    });
}

// ---- Cast ---------------------------------------------------------------------------------

template <typename T>
struct FloatBits;
template <>
struct FloatBits<half> {
    using Bits = uint16_t;
    static half Nearest(double x) { return static_cast<half>(x); }
};
template <>
struct FloatBits<bfloat16_t> {
    using Bits = uint16_t;
    // Sources reaching bf16 are float (exact in float), so one rounding happens here.
    static bfloat16_t Nearest(double x) { return bfloat16_t(static_cast<float>(x)); }
};
template <>
struct FloatBits<float> {
    using Bits = uint32_t;
    static float Nearest(double x) { return static_cast<float>(x); }
};

template <typename T>
inline typename FloatBits<T>::Bits ToBits(T v) {
    typename FloatBits<T>::Bits b;
    std::memcpy(&b, &v, sizeof b);
    return b;
}

template <typename T>
inline T FromBits(typename FloatBits<T>::Bits b) {
    T v;
    std::memcpy(&v, &b, sizeof v);
    return v;
}

template <typename T>
constexpr typename FloatBits<T>::Bits kSignBit = static_cast<typename FloatBits<T>::Bits>(1ull << (8 * sizeof(T) - 1));

template <typename T>
inline T StepUp(T v) {
    auto b = ToBits(v);
    if (b == 0 || b == kSignBit<T>) {
        return FromBits<T>(1);
    }
    return FromBits<T>((b & kSignBit<T>) ? b - 1 : b + 1);
}

template <typename T>
inline T StepDown(T v) {
    auto b = ToBits(v);
    if (b == 0 || b == kSignBit<T>) {
        return FromBits<T>(kSignBit<T> | 1);
    }
    return FromBits<T>((b & kSignBit<T>) ? b + 1 : b - 1);
}

// Rounds the exact value x to the float type T with an Ascend RoundMode: take the nearest-even
// result, find the two neighbours that bracket x, and pick one by the mode.
template <typename T>
inline T RoundToFloat(double x, RoundMode mode) {
    T r = FloatBits<T>::Nearest(x);
    double rv = static_cast<double>(static_cast<float>(r));
    if (std::isnan(x) || rv == x) {
        return r;
    }
    T lo = rv < x ? r : StepDown(r);
    T hi = rv < x ? StepUp(r) : r;
    switch (mode) {
        case RoundMode::CAST_FLOOR: return lo;
        case RoundMode::CAST_CEIL: return hi;
        case RoundMode::CAST_TRUNC: return x > 0 ? lo : hi;
        case RoundMode::CAST_ODD: return (ToBits(lo) & 1) ? lo : hi;
        case RoundMode::CAST_ROUND: {
            if (std::isinf(rv)) {
                return r;
            }
            double dlo = x - static_cast<double>(static_cast<float>(lo));
            double dhi = static_cast<double>(static_cast<float>(hi)) - x;
            if (dlo != dhi) {
                return dlo < dhi ? lo : hi;
            }
            return x > 0 ? hi : lo;  // ties away from zero
        }
        default: return r;  // CAST_RINT, and CAST_NONE when lossy
    }
}

inline double RoundToIntegral(double x, RoundMode mode) {
    switch (mode) {
        case RoundMode::CAST_FLOOR: return std::floor(x);
        case RoundMode::CAST_CEIL: return std::ceil(x);
        case RoundMode::CAST_TRUNC: return std::trunc(x);
        case RoundMode::CAST_ROUND: return std::round(x);
        default: return std::nearbyint(x);  // ties to even under the default FP environment
    }
}

template <typename T, typename U>
inline T ConvertValue(U v, RoundMode mode) {
    double x = static_cast<double>(static_cast<Compute<U>>(v));
    if constexpr (std::is_same_v<T, float> && std::is_same_v<U, float>) {
        return static_cast<float>(RoundToIntegral(x, mode));
    } else if constexpr (kIsFloat<T>) {
        return RoundToFloat<T>(x, mode);
    } else {
        // Integer results saturate; NaN becomes 0.  (The API pages do not say; saturation is
        // the behaviour of the device's conversion instructions documented for Cast to int8.)
        if (std::isnan(x)) {
            return T(0);
        }
        double y = RoundToIntegral(x, mode);
        double lo = static_cast<double>(std::numeric_limits<T>::min());
        double hi = static_cast<double>(std::numeric_limits<T>::max());
        return static_cast<T>(y < lo ? lo : y > hi ? hi : y);
    }
}

template <typename T, typename U>
inline void CheckCast(RoundMode mode) {
    const TargetInfo& t = Target();
    const char* src = TypeName<U>();
    const char* dst = TypeName<T>();
    CheckApi("Cast", src);
    CheckApi("Cast", dst);
    for (size_t i = 0; i < t.num_casts; ++i) {
        const CastModes& c = t.casts[i];
        if (std::strcmp(c.src, src) != 0 || std::strcmp(c.dst, dst) != 0) {
            continue;
        }
        if (!HasWord(c.modes, RoundModeName(mode))) {
            Fail("Cast: %s -> %s with %s is not supported on %s (supported:%s)", src, dst, RoundModeName(mode),
                 t.name, std::string(c.modes, std::strlen(c.modes) - 1).c_str());
        }
        return;
    }
    std::string pairs;
    for (size_t i = 0; i < t.num_casts; ++i) {
        if (std::strcmp(t.casts[i].src, src) == 0) {
            pairs += std::string(pairs.empty() ? "" : ", ") + t.casts[i].dst;
        }
    }
    Fail("Cast: %s -> %s is not supported on %s (from %s it can cast to: %s)", src, dst, t.name, src,
         pairs.empty() ? "nothing" : pairs.c_str());
}

}  // namespace fusedsl_cpu

namespace AscendC {

// ---- elementwise arithmetic ---------------------------------------------------------------

#define FUSEDSL_CPU_BINARY(NAME, OP)                                                                          \
    template <typename T>                                                                                     \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,       \
                     const int32_t& count, FUSEDSL_CPU_SITE) {                                                \
        ::fusedsl_cpu::AtSite fs_at(fs_site);                                                                 \
        fusedsl_cpu::BinaryCount(#NAME, dst, src0, src1, count, fusedsl_cpu::OP());                           \
    }                                                                                                         \
    template <typename T, bool isSetMask = true>                                                              \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,       \
                     uint64_t mask, const uint8_t repeatTime, const BinaryRepeatParams& repeatParams,        \
                     FUSEDSL_CPU_SITE) {                                                                     \
        ::fusedsl_cpu::AtSite fs_at(fs_site);                                                                \
        auto m = fusedsl_cpu::PickMask<isSetMask>(#NAME, mask, fusedsl_cpu::LanesOf<T>());                    \
        fusedsl_cpu::BinaryRepeat(#NAME, dst, src0, src1, m, repeatTime, repeatParams, fusedsl_cpu::OP());    \
    }                                                                                                         \
    template <typename T, bool isSetMask = true>                                                              \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,       \
                     const uint64_t mask[], const uint8_t repeatTime, const BinaryRepeatParams& repeatParams,   \
                     FUSEDSL_CPU_SITE) {                                                                        \
        ::fusedsl_cpu::AtSite fs_at(fs_site);                                                                   \
        auto m = fusedsl_cpu::PickMask<isSetMask>(#NAME, mask, fusedsl_cpu::LanesOf<T>());                    \
        fusedsl_cpu::BinaryRepeat(#NAME, dst, src0, src1, m, repeatTime, repeatParams, fusedsl_cpu::OP());    \
    }

FUSEDSL_CPU_BINARY(Add, OpAdd)
FUSEDSL_CPU_BINARY(Sub, OpSub)
FUSEDSL_CPU_BINARY(Mul, OpMul)
FUSEDSL_CPU_BINARY(Div, OpDiv)
FUSEDSL_CPU_BINARY(Max, OpMax)
FUSEDSL_CPU_BINARY(Min, OpMin)
FUSEDSL_CPU_BINARY(And, OpAnd)
FUSEDSL_CPU_BINARY(Or, OpOr)
#undef FUSEDSL_CPU_BINARY

#define FUSEDSL_CPU_UNARY(NAME, OP)                                                                           \
    template <typename T>                                                                                     \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count,              \
                     FUSEDSL_CPU_SITE) {                                                                      \
        ::fusedsl_cpu::AtSite fs_at(fs_site);                                                                 \
        fusedsl_cpu::UnaryCount(#NAME, dst, src, count, fusedsl_cpu::OP());                                   \
    }                                                                                                         \
    template <typename T, bool isSetMask = true>                                                              \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint64_t mask,                     \
                     const uint8_t repeatTime, const UnaryRepeatParams& repeatParams, FUSEDSL_CPU_SITE) {     \
        ::fusedsl_cpu::AtSite fs_at(fs_site);                                                                 \
        auto m = fusedsl_cpu::PickMask<isSetMask>(#NAME, mask, fusedsl_cpu::LanesOf<T>());                    \
        fusedsl_cpu::UnaryRepeat(#NAME, dst, src, m, repeatTime, repeatParams, fusedsl_cpu::OP());            \
    }                                                                                                         \
    template <typename T, bool isSetMask = true>                                                              \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],             \
                     const uint8_t repeatTime, const UnaryRepeatParams& repeatParams, FUSEDSL_CPU_SITE) {     \
        ::fusedsl_cpu::AtSite fs_at(fs_site);                                                                 \
        auto m = fusedsl_cpu::PickMask<isSetMask>(#NAME, mask, fusedsl_cpu::LanesOf<T>());                    \
        fusedsl_cpu::UnaryRepeat(#NAME, dst, src, m, repeatTime, repeatParams, fusedsl_cpu::OP());            \
    }

FUSEDSL_CPU_UNARY(Exp, OpExp)
FUSEDSL_CPU_UNARY(Ln, OpLn)
FUSEDSL_CPU_UNARY(Sqrt, OpSqrt)
FUSEDSL_CPU_UNARY(Rsqrt, OpRsqrt)
FUSEDSL_CPU_UNARY(Reciprocal, OpReciprocal)
FUSEDSL_CPU_UNARY(Abs, OpAbs)
FUSEDSL_CPU_UNARY(Relu, OpRelu)
FUSEDSL_CPU_UNARY(Not, OpNot)
#undef FUSEDSL_CPU_UNARY

// Tensor-scalar ops; the scalar has the tensor's element type, as on the device.
#define FUSEDSL_CPU_SCALAR(NAME, FN)                                                                          \
    template <typename T>                                                                                     \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,              \
                     const int32_t& count, FUSEDSL_CPU_SITE) {                                                \
        ::fusedsl_cpu::AtSite fs_at(fs_site);                                                                 \
        fusedsl_cpu::UnaryCount(#NAME, dst, src, count, FN{fusedsl_cpu::ToWide(scalarValue)});                \
    }                                                                                                         \
    template <typename T, bool isSetMask = true>                                                              \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,              \
                     uint64_t mask, const uint8_t repeatTime, const UnaryRepeatParams& repeatParams,          \
                     FUSEDSL_CPU_SITE) {                                                                      \
        ::fusedsl_cpu::AtSite fs_at(fs_site);                                                                 \
        auto m = fusedsl_cpu::PickMask<isSetMask>(#NAME, mask, fusedsl_cpu::LanesOf<T>());                    \
        fusedsl_cpu::UnaryRepeat(#NAME, dst, src, m, repeatTime, repeatParams,                                \
                                 FN{fusedsl_cpu::ToWide(scalarValue)});                                       \
    }                                                                                                         \
    template <typename T, bool isSetMask = true>                                                              \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,              \
                     const uint64_t mask[], const uint8_t repeatTime, const UnaryRepeatParams& repeatParams,   \
                     FUSEDSL_CPU_SITE) {                                                                       \
        ::fusedsl_cpu::AtSite fs_at(fs_site);                                                                  \
        auto m = fusedsl_cpu::PickMask<isSetMask>(#NAME, mask, fusedsl_cpu::LanesOf<T>());                    \
        fusedsl_cpu::UnaryRepeat(#NAME, dst, src, m, repeatTime, repeatParams,                                \
                                 FN{fusedsl_cpu::ToWide(scalarValue)});                                       \
    }

FUSEDSL_CPU_SCALAR(Adds, (fusedsl_cpu::BindScalar<fusedsl_cpu::OpAdd, fusedsl_cpu::Wide<T>>))
FUSEDSL_CPU_SCALAR(Muls, (fusedsl_cpu::BindScalar<fusedsl_cpu::OpMul, fusedsl_cpu::Wide<T>>))
FUSEDSL_CPU_SCALAR(Maxs, (fusedsl_cpu::BindScalar<fusedsl_cpu::OpMax, fusedsl_cpu::Wide<T>>))
FUSEDSL_CPU_SCALAR(Mins, (fusedsl_cpu::BindScalar<fusedsl_cpu::OpMin, fusedsl_cpu::Wide<T>>))
FUSEDSL_CPU_SCALAR(LeakyRelu, fusedsl_cpu::OpLeakyRelu<fusedsl_cpu::Wide<T>>)
#undef FUSEDSL_CPU_SCALAR

// ---- Duplicate ----------------------------------------------------------------------------

template <typename T>
inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, const int32_t& count, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    const char* api = "Duplicate";
    CheckApi(api, TypeName<T>());
    if (!CheckCount(api, count)) {
        return;
    }
    uint32_t d = DstOperand(api, "dst", dst, count);
    for (int32_t i = 0; i < count; ++i) {
        StoreAs(Bytes(dst) + i * sizeof(T), scalarValue);
    }
    MarkWritten(d, count * sizeof(T));
    CountVector(count * sizeof(T));
}

template <typename T, bool isSetMask = true>
inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, uint64_t mask, const uint8_t repeatTime,
                      const uint16_t dstBlockStride, const uint8_t dstRepeatStride, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    CheckApi("Duplicate", TypeName<T>());
    const RepOperand ops[1] = {Operand("Duplicate", "dst", dst, dstBlockStride, dstRepeatStride, false)};
    Mask m = PickMask<isSetMask>("Duplicate", mask, LanesOf<T>());
    ForEachLane("Duplicate", ops, m, LanesOf<T>(), repeatTime, [&](uint8_t* const* q) { StoreAs(q[0], scalarValue); });
}

template <typename T, bool isSetMask = true>
inline void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, const uint64_t mask[], const uint8_t repeatTime,
                      const uint16_t dstBlockStride, const uint8_t dstRepeatStride, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    CheckApi("Duplicate", TypeName<T>());
    const RepOperand ops[1] = {Operand("Duplicate", "dst", dst, dstBlockStride, dstRepeatStride, false)};
    Mask m = PickMask<isSetMask>("Duplicate", mask, LanesOf<T>());
    ForEachLane("Duplicate", ops, m, LanesOf<T>(), repeatTime, [&](uint8_t* const* q) { StoreAs(q[0], scalarValue); });
}

// ---- Cast ---------------------------------------------------------------------------------

template <typename T, typename U>
inline void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src, const RoundMode& roundMode, const uint32_t count,
                 FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    const char* api = "Cast";
    CheckCast<T, U>(roundMode);
    if (count == 0) {
        return;
    }
    uint32_t d = DstOperand(api, "dst", dst, count);
    uint32_t s = SrcOperand(api, "src", src, count);
    uint64_t db = static_cast<uint64_t>(count) * sizeof(T);
    uint64_t sb = static_cast<uint64_t>(count) * sizeof(U);
    if (d < s + sb && s < d + db && (d != s || sizeof(T) > sizeof(U))) {
        Fail("Cast: dst UB [%u, %llu) overlaps src UB [%u, %llu); only a same-start, non-widening cast may work "
             "in place", d, static_cast<unsigned long long>(d + db), s, static_cast<unsigned long long>(s + sb));
    }
    for (uint32_t i = 0; i < count; ++i) {
        StoreAs(Bytes(dst) + i * sizeof(T), ConvertValue<T>(LoadAs<U>(Bytes(src) + i * sizeof(U)), roundMode));
    }
    MarkWritten(d, db);
    CountVector(db > sb ? db : sb);
}

}  // namespace AscendC

namespace fusedsl_cpu {

// half -> int4b_t (Cast's type tables: A2/A3 only, modes RINT/FLOOR/CEIL/ROUND/TRUNC/NONE):
// round, saturate to [-8, 7], pack two to a byte.  A repeat takes 128 halves (mask: the count
// of lanes, from the first) and writes 64 bytes; strides are 32-byte blocks as for any cast,
// a dst block holding 64 elements.
template <typename U, bool isSetMask, typename M>
inline void CastToInt4(const AscendC::LocalTensor<AscendC::int4b_t>& dst, const AscendC::LocalTensor<U>& src,
                       RoundMode mode, M mask, uint8_t repeatTime, const AscendC::UnaryRepeatParams& p) {
    const char* api = "Cast<int4b_t, half>";
    static_assert(std::is_same_v<U, half>, "fusedsl models the int4b_t cast from half");
    if (Target().arch != 2201) {
        Fail("%s: int4b_t is not supported on %s (Cast's type tables: A2/A3)", api, Target().name);
    }
    if (mode == RoundMode::CAST_ODD || mode == RoundMode::CAST_HYBRID) {
        Fail("%s: round mode %s; half -> int4b_t takes CAST_NONE/RINT/FLOOR/CEIL/ROUND/TRUNC", api, RoundModeName(mode));
    }
    uint64_t lanes_on = 0;
    if constexpr (std::is_integral_v<M>) {
        lanes_on = static_cast<uint64_t>(mask);
    } else {
        for (int w = 0; w < 2; ++w) {
            for (int b = 0; b < 64; ++b) {
                lanes_on += (mask[w] >> b) & 1;
            }
        }
        if (lanes_on != 0 && !(((mask[0] + 1) & mask[0]) == 0 && (mask[0] == ~0ull || mask[1] == 0))) {
            Fail("%s: only contiguous masks (lanes 0..n-1) are modelled for int4b_t", api);
        }
    }
    if (lanes_on == 0 || lanes_on > 128) {
        Fail("%s: mask = %llu lanes; it must be in [1, 128]", api, static_cast<unsigned long long>(lanes_on));
    }
    if (repeatTime == 0) {
        return;
    }
    uint64_t dst_need = (static_cast<uint64_t>(repeatTime - 1) * p.dstRepStride +
                         static_cast<uint64_t>((lanes_on - 1) / 64) * p.dstBlkStride) * 32 + ((lanes_on - 1) % 64) / 2 + 1;
    uint64_t src_need = (static_cast<uint64_t>(repeatTime - 1) * p.srcRepStride +
                         static_cast<uint64_t>((lanes_on - 1) / 16) * p.srcBlkStride) * 32 + ((lanes_on - 1) % 16 + 1) * 2;
    uint32_t d = CheckUb(api, "dst", dst.fs_addr, dst.GetLength(), dst_need, 1);
    uint32_t s = CheckUb(api, "src", src.fs_addr, src.GetLength(), src_need, 2);
    uint8_t* ub = CurCore().ub.data();
    for (uint32_t r = 0; r < repeatTime; ++r) {
        for (uint64_t i = 0; i < lanes_on; ++i) {
            uint64_t so = s + (r * static_cast<uint64_t>(p.srcRepStride) + (i / 16) * p.srcBlkStride) * 32 + (i % 16) * 2;
            uint64_t dof = d + (r * static_cast<uint64_t>(p.dstRepStride) + (i / 64) * p.dstBlkStride) * 32 + (i % 64) / 2;
            CheckWritten(api, "src", static_cast<uint32_t>(so), 2);
            double v = RoundToIntegral(static_cast<double>(LoadAs<half>(ub + so)), mode == RoundMode::CAST_NONE
                                                                                       ? RoundMode::CAST_RINT : mode);
            int q = std::isnan(v) ? 0 : static_cast<int>(std::max(-8.0, std::min(7.0, v)));
            uint8_t nib = static_cast<uint8_t>(q) & 0xF;
            uint8_t& byte = ub[dof];
            if (CurCore().written[dof] == 0) {
                byte = 0;
            }
            byte = (i % 2 == 0) ? static_cast<uint8_t>((byte & 0xF0) | nib) : static_cast<uint8_t>((byte & 0x0F) | (nib << 4));
            MarkWritten(static_cast<uint32_t>(dof), 1);
        }
    }
    CountVector(256ull * repeatTime);
}

}  // namespace fusedsl_cpu

namespace AscendC {

// Mixed widths: lanes and strides follow the wider type (ASCENDC.md §2.4).
template <typename T, typename U, bool isSetMask = true, typename M>
inline void CastRepeat(const LocalTensor<T>& dst, const LocalTensor<U>& src, RoundMode roundMode, M mask,
                       uint8_t repeatTime, const UnaryRepeatParams& p, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    const char* api = "Cast";
    if constexpr (std::is_same_v<T, int4b_t>) {
        CastToInt4<U, isSetMask>(dst, src, roundMode, mask, repeatTime, p);
        return;
    } else {
    CheckCast<T, U>(roundMode);
    constexpr uint32_t lanes = 256 / (sizeof(T) > sizeof(U) ? sizeof(T) : sizeof(U));
    const RepOperand ops[2] = {
        Operand(api, "dst", dst, p.dstBlkStride, p.dstRepStride, false),
        Operand(api, "src", src, p.srcBlkStride, p.srcRepStride, true),
    };
    Mask m = PickMask<isSetMask>(api, mask, lanes);
    ForEachLane(api, ops, m, lanes, repeatTime,
                [&](uint8_t* const* q) { StoreAs(q[0], ConvertValue<T>(LoadAs<U>(q[1]), roundMode)); });
    }
}

template <typename T, typename U, bool isSetMask = true>
inline void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src, const RoundMode& roundMode, const uint64_t mask,
                 const uint8_t repeatTime, const UnaryRepeatParams& repeatParams, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    CastRepeat<T, U, isSetMask>(dst, src, roundMode, mask, repeatTime, repeatParams);
}

template <typename T, typename U, bool isSetMask = true>
inline void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src, const RoundMode& roundMode,
                 const uint64_t mask[], const uint8_t repeatTime, const UnaryRepeatParams& repeatParams,
                 FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    CastRepeat<T, U, isSetMask>(dst, src, roundMode, mask, repeatTime, repeatParams);
}

// ---- Compare / Compares / Select (count form) --------------------------------------------

}  // namespace AscendC

namespace fusedsl_cpu {

template <typename W>
inline bool CompareValues(W a, W b, CMPMODE mode) {
    switch (mode) {
        case CMPMODE::LT: return a < b;
        case CMPMODE::GT: return a > b;
        case CMPMODE::EQ: return a == b;
        case CMPMODE::LE: return a <= b;
        case CMPMODE::GE: return a >= b;
        case CMPMODE::NE: return a != b;
    }
    return false;
}

template <typename T, typename U>
inline void CompareCount(const char* api, const LocalTensor<U>& dst, const LocalTensor<T>& src0,
                         const LocalTensor<T>* src1, T scalar, CMPMODE mode, uint32_t count) {
    static_assert(std::is_same_v<U, uint8_t> || std::is_same_v<U, int8_t>,
                  "Compare/Compares write a bit mask into a uint8_t LocalTensor");
    CheckApi(api, TypeName<T>());
    if (std::is_same_v<T, int32_t> && mode != CMPMODE::EQ) {
        Fail("%s<int32_t>: only CMPMODE::EQ is supported for int32_t (got CMPMODE::%s)", api, CmpModeName(mode));
    }
    uint64_t bytes = static_cast<uint64_t>(count) * sizeof(T);
    if (bytes % 256 != 0) {
        Fail("%s: count*sizeof(%s) = %llu bytes is not a multiple of 256; the count form compares whole 256-byte "
             "repeats — round count up and fill the extra elements", api, TypeName<T>(),
             static_cast<unsigned long long>(bytes));
    }
    if (count == 0) {
        return;
    }
    uint32_t d = DstOperand(api, "dst", dst, count / 8);
    uint32_t s0 = SrcOperand(api, "src0", src0, count);
    CheckOverlap(api, "src0", d, count / 8, s0, bytes);
    const uint8_t* pa = Bytes(src0);
    const uint8_t* pb = nullptr;
    if (src1 != nullptr) {
        uint32_t s1 = SrcOperand(api, "src1", *src1, count);
        CheckOverlap(api, "src1", d, count / 8, s1, bytes);
        pb = Bytes(*src1);
    }
    Wide<T> b = ToWide(scalar);
    uint8_t* out = Bytes(dst);
    for (uint32_t byte = 0; byte < count / 8; ++byte) {
        uint8_t bits = 0;
        for (uint32_t k = 0; k < 8; ++k) {
            uint32_t i = byte * 8 + k;
            Wide<T> a = ToWide(LoadAs<T>(pa + i * sizeof(T)));
            if (pb != nullptr) {
                b = ToWide(LoadAs<T>(pb + i * sizeof(T)));
            }
            bits = static_cast<uint8_t>(bits | (CompareValues(a, b, mode) << k));
        }
        out[byte] = bits;
    }
    MarkWritten(d, count / 8);
    CountVector(bytes);
}

template <typename T, typename U>
inline void CompareRepeat(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                          CMPMODE mode, uint8_t repeat, const BinaryRepeatParams& p) {
    static_assert(std::is_same_v<U, uint8_t> || std::is_same_v<U, int8_t>,
                  "Compare writes a bit mask into a uint8_t LocalTensor");
    const char* api = "Compare";
    CheckApi(api, TypeName<T>());
    if (std::is_same_v<T, int32_t> && mode != CMPMODE::EQ) {
        Fail("%s<int32_t>: only CMPMODE::EQ is supported for int32_t (got CMPMODE::%s)", api, CmpModeName(mode));
    }
    constexpr uint32_t lanes = LanesOf<T>();
    constexpr uint32_t out_bytes = lanes / 8;
    if (repeat == 0) {
        return;
    }
    uint64_t span = (static_cast<uint64_t>(repeat) - 1) * p.dstRepStride * out_bytes + out_bytes;
    uint32_t d = CheckUb(api, "dst", dst.fs_addr, dst.GetLength(), span, 1);
    const RepOperand ops[2] = {Operand(api, "src0", src0, p.src0BlkStride, p.src0RepStride, true),
                               Operand(api, "src1", src1, p.src1BlkStride, p.src1RepStride, true)};
    std::vector<uint8_t> bits(static_cast<size_t>(repeat) * out_bytes, 0);
    uint32_t r = 0;
    uint32_t j = 0;
    Mask all{{~0ull, ~0ull}};
    ForEachLane(api, ops, all, lanes, repeat, [&](uint8_t* const* q) {
        bool v = CompareValues(ToWide(LoadAs<T>(q[0])), ToWide(LoadAs<T>(q[1])), mode);
        bits[r * out_bytes + j / 8] |= static_cast<uint8_t>(v << (j % 8));
        if (++j == lanes) {
            j = 0;
            ++r;
        }
    });
    uint8_t* ub = CurCore().ub.data();
    for (uint32_t k = 0; k < repeat; ++k) {
        uint64_t at = d + static_cast<uint64_t>(k) * p.dstRepStride * out_bytes;
        std::memcpy(ub + at, bits.data() + k * out_bytes, out_bytes);
        MarkWritten(static_cast<uint32_t>(at), out_bytes);
    }
}

template <typename T, typename U>
inline void SelectCount(const LocalTensor<T>& dst, const LocalTensor<U>& mask, const LocalTensor<T>& src0,
                        const LocalTensor<T>* src1, T scalar, SELMODE mode, uint32_t count) {
    const char* api = "Select";
    CheckApi(api, TypeName<T>());
    // Select.md: mode 0 (VSEL_CMPMASK_SPR) takes src1 as a tensor and reuses the first
    // 256/sizeof(T) bits of selMask for every repeat; modes 1/2 walk selMask continuously.
    // 910A (Atlas 训练系列) has mode 0 only.
    const bool mode0 = mode == SELMODE::VSEL_CMPMASK_SPR;
    const char* mode_name = mode0 ? "VSEL_CMPMASK_SPR" : mode == SELMODE::VSEL_TENSOR_SCALAR_MODE
                                                            ? "VSEL_TENSOR_SCALAR_MODE" : "VSEL_TENSOR_TENSOR_MODE";
    if (!mode0 && Target().arch == 1001) {
        Fail("Select: SELMODE::%s is not supported on %s, which has mode 0 (SELMODE::VSEL_CMPMASK_SPR) only", mode_name,
             Target().name);
    }
    bool tensor_mode = mode != SELMODE::VSEL_TENSOR_SCALAR_MODE;
    if (tensor_mode != (src1 != nullptr)) {
        Fail("Select: %s needs a %s src1", mode_name, tensor_mode ? "LocalTensor" : "scalar");
    }
    const TargetInfo& t = Target();
    TPipeState* pipe = CurCore().pipe;
    // The scratch starts at TMP_UB_OFFSET = 184 KB on 2201: the top 8 KB of the whole UB (ASCENDC.md §2.5).
    uint32_t limit = CurCore().ub_bytes - t.select_scratch_bytes;
    if (!mode0 && t.select_scratch_bytes != 0 && pipe != nullptr && pipe->fs_cursor > limit) {
        Fail("Select: this mode uses the top %u bytes of UB as scratch on %s, but the UB plan already uses %u bytes "
             "(keep it at most %u)", t.select_scratch_bytes, t.name, pipe->fs_cursor, limit);
    }
    if (count == 0) {
        return;
    }
    uint64_t bytes = static_cast<uint64_t>(count) * sizeof(T);
    constexpr uint32_t lanes = 256 / sizeof(T);
    // Mode 0 reads the bits of the lanes it uses: min(count, lanes) of them.
    uint64_t mask_bytes = ((mode0 && count > lanes ? lanes : count) + 7) / 8;
    uint32_t d = DstOperand(api, "dst", dst, count);
    uint32_t m = CheckUb(api, "selMask", mask.fs_addr, mask.GetLength(), mask_bytes, sizeof(U));
    CheckWritten(api, "selMask", m, mask_bytes);
    uint32_t s0 = SrcOperand(api, "src0", src0, count);
    CheckOverlap(api, "src0", d, bytes, s0, bytes);
    const uint8_t* pb = nullptr;
    if (src1 != nullptr) {
        uint32_t s1 = SrcOperand(api, "src1", *src1, count);
        CheckOverlap(api, "src1", d, bytes, s1, bytes);
        pb = Bytes(*src1);
    }
    const uint8_t* bits = Bytes(mask);
    uint8_t* out = Bytes(dst);
    for (uint32_t i = 0; i < count; ++i) {
        uint32_t bit = mode0 ? i % lanes : i;
        bool pick0 = (bits[bit / 8] >> (bit % 8)) & 1;
        T v = pick0 ? LoadAs<T>(Bytes(src0) + i * sizeof(T)) : pb ? LoadAs<T>(pb + i * sizeof(T)) : scalar;
        StoreAs(out + i * sizeof(T), v);
    }
    MarkWritten(d, bytes);
    CountVector(bytes);
}

}  // namespace fusedsl_cpu

namespace AscendC {

template <typename T, typename U>
inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode,
                    uint32_t count, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::CompareCount("Compare", dst, src0, &src1, T(0), cmpMode, count);
}

template <typename T, typename U>
inline void Compares(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const T src1Scalar, CMPMODE cmpMode,
                     uint32_t count, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::CompareCount<T, U>("Compares", dst, src0, nullptr, src1Scalar, cmpMode, count);
}

// The mask/repeat form: each repeat compares one 256-byte repeat and writes its 256/sizeof(T)
// result bits; Compare.md says the mask is a reserved, ignored argument on 2201, 2002 and 1001,
// so every lane is compared.  dstRepStride counts one repeat's bits (256/sizeof(T)/8 bytes).
template <typename T, typename U, bool isSetMask = true>
inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode,
                    const uint64_t mask, uint8_t repeatTime, const BinaryRepeatParams& repeatParams, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    (void)mask;
    fusedsl_cpu::CompareRepeat(dst, src0, src1, cmpMode, repeatTime, repeatParams);
}

template <typename T, typename U, bool isSetMask = true>
inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode,
                    const uint64_t mask[], uint8_t repeatTime, const BinaryRepeatParams& repeatParams,
                    FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    (void)mask;
    fusedsl_cpu::CompareRepeat(dst, src0, src1, cmpMode, repeatTime, repeatParams);
}

// Bit i of selMask = 1 picks src0[i], else src1[i] (or the scalar).
template <typename T, typename U>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                   const LocalTensor<T>& src1, SELMODE selMode, uint32_t count, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::SelectCount(dst, selMask, src0, &src1, T(0), selMode, count);
}

template <typename T, typename U>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0, T src1,
                   SELMODE selMode, uint32_t count, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::SelectCount<T, U>(dst, selMask, src0, nullptr, src1, selMode, count);
}

}  // namespace AscendC

namespace fusedsl_cpu {

// The mask/repeat form of Select: lanes chosen by `m` (others keep dst); selMask bit j of every
// repeat in mode 0, bit r*lanes + j (consumed continuously) in modes 1 and 2.
template <typename T, typename U>
inline void SelectRepeat(const LocalTensor<T>& dst, const LocalTensor<U>& mask, const LocalTensor<T>& src0,
                         const LocalTensor<T>* src1, T scalar, SELMODE mode, const Mask& m_all, uint8_t repeat,
                         const BinaryRepeatParams& p) {
    const char* api = "Select";
    CheckApi(api, TypeName<T>());
    const bool mode0 = mode == SELMODE::VSEL_CMPMASK_SPR;
    if (!mode0 && Target().arch == 1001) {
        Fail("Select: SELMODE::%s is not supported on %s, which has mode 0 (SELMODE::VSEL_CMPMASK_SPR) only",
             mode == SELMODE::VSEL_TENSOR_SCALAR_MODE ? "VSEL_TENSOR_SCALAR_MODE" : "VSEL_TENSOR_TENSOR_MODE",
             Target().name);
    }
    if ((mode != SELMODE::VSEL_TENSOR_SCALAR_MODE) != (src1 != nullptr)) {
        Fail("Select: this mode needs a %s src1", src1 == nullptr ? "LocalTensor" : "scalar");
    }
    constexpr uint32_t lanes = LanesOf<T>();
    uint64_t mask_bytes = (mode0 ? lanes : EffectiveRepeats(m_all, lanes, repeat) * lanes) / 8;
    uint32_t mo = CheckUb(api, "selMask", mask.fs_addr, mask.GetLength(), mask_bytes, sizeof(U));
    CheckWritten(api, "selMask", mo, mask_bytes);
    const uint8_t* bits = Bytes(mask);
    const LocalTensor<T>& other = src1 != nullptr ? *src1 : src0;
    const RepOperand ops[3] = {
        Operand(api, "dst", dst, p.dstBlkStride, p.dstRepStride, false),
        Operand(api, "src0", src0, p.src0BlkStride, p.src0RepStride, true),
        Operand(api, "src1", other, p.src1BlkStride, p.src1RepStride, true),
    };
    uint32_t r = 0;
    uint32_t j = 0;
    ForEachLane(api, ops, m_all, lanes, repeat, [&](uint8_t* const* q) {
        (void)q;
    });
    // ForEachLane visits only active lanes; walk again with the lane numbers for the bits.
    uint8_t* ub = CurCore().ub.data();
    for (r = 0; r < EffectiveRepeats(m_all, lanes, repeat); ++r) {
        const Mask m = RepeatMask(m_all, lanes, r);
        for (j = 0; j < lanes; ++j) {
            if (!((m.bits[j / 64] >> (j % 64)) & 1)) {
                continue;
            }
            uint64_t bit = mode0 ? j : static_cast<uint64_t>(r) * lanes + j;
            bool pick0 = (bits[bit / 8] >> (bit % 8)) & 1;
            auto at = [&](const RepOperand& o) {
                return ub + o.off + (static_cast<uint64_t>(r) * o.rep + (j / (32 / sizeof(T))) * o.blk) * 32 +
                       (j % (32 / sizeof(T))) * sizeof(T);
            };
            T v = pick0 ? LoadAs<T>(at(ops[1])) : src1 != nullptr ? LoadAs<T>(at(ops[2])) : scalar;
            StoreAs(at(ops[0]), v);
        }
    }
}

}  // namespace fusedsl_cpu

namespace AscendC {

#define FUSEDSL_CPU_SELECT_L0(SRC1_T, SRC1_PTR, SCALAR, MASK_T)                                                   \
    template <typename T, typename U, bool isSetMask = true>                                                       \
    inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,      \
                       SRC1_T src1, SELMODE selMode, MASK_T mask, uint8_t repeatTime,                             \
                       const BinaryRepeatParams& repeatParams, FUSEDSL_CPU_SITE) {                                \
        ::fusedsl_cpu::AtSite fs_at(fs_site);                                                                     \
        fusedsl_cpu::SelectRepeat<T, U>(dst, selMask, src0, SRC1_PTR, SCALAR, selMode,                            \
                                        fusedsl_cpu::PickMask<isSetMask>("Select", mask, fusedsl_cpu::LanesOf<T>()), \
                                        repeatTime, repeatParams);                                                \
    }
FUSEDSL_CPU_SELECT_L0(const LocalTensor<T>&, &src1, T(0), uint64_t)
FUSEDSL_CPU_SELECT_L0(const LocalTensor<T>&, &src1, T(0), const uint64_t*)
FUSEDSL_CPU_SELECT_L0(T, nullptr, src1, uint64_t)
FUSEDSL_CPU_SELECT_L0(T, nullptr, src1, const uint64_t*)
#undef FUSEDSL_CPU_SELECT_L0

}  // namespace AscendC


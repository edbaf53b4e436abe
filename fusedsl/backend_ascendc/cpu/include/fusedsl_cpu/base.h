// fusedsl CPU implementation of the Ascend C API: language macros, element types, enums.
//
// Everything here is header-only C++17; every function is `inline` (or a template) so a
// kernel translation unit and a host main.cpp that both include the headers link together.
#pragma once

#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

// Device-code qualifiers carry no meaning on the CPU.
#ifndef __aicore__
#define __aicore__
#endif
#ifndef __global__
#define __global__
#endif
#ifndef __gm__
#define __gm__
#endif
#ifndef __ubuf__
#define __ubuf__
#endif
#ifndef __cbuf__
#define __cbuf__
#endif
#ifndef __cc__
#define __cc__
#endif
#ifndef GM_ADDR
#define GM_ADDR __gm__ uint8_t*
// branch hints kernel code uses, as CANN's kernel_utils_macros.h defines them
#ifndef likely
#define likely(x) __builtin_expect(!!(x), 1)
#endif
#ifndef unlikely
#define unlikely(x) __builtin_expect(!!(x), 0)
#endif

// The cube model's multiply-accumulate loops are compiled with optimisation even in -O0 / -O1 builds
// (CANN's sample CMakeLists give no CMAKE_BUILD_TYPE): a 768 x 2048 x 6144 Matmul sample otherwise
// takes minutes.  Only the arithmetic kernels carry it; the checks stay as built.  O3 because GCC 12
// vectorises these loops only there (measured on a 128 x 1024 x 256 tile: float 4.5 -> 19 GFLOP/s, int32
// 4.5 -> 10 GOP/s); no fast-math, so every element's sum keeps its order and its rounding.
#if defined(__GNUC__) && !defined(__clang__)
#define FUSEDSL_CPU_HOT __attribute__((optimize("O3")))
#else
#define FUSEDSL_CPU_HOT
#endif
#endif

// Built-in pipe ids; unscoped and global because kernels write PipeBarrier<PIPE_V>().
enum pipe_t : uint8_t {
    PIPE_S = 0,
    PIPE_V,
    PIPE_M,
    PIPE_MTE1,
    PIPE_MTE2,
    PIPE_MTE3,
    PIPE_ALL,
    PIPE_MTE4,
    PIPE_MTE5,
    PIPE_V2,
    PIPE_FIX,
};

// Hardware event ids, as kernels spell them: static_cast<event_t>(pipe->FetchEventID(...)).
enum event_t : int32_t {
    EVENT_ID0 = 0,
    EVENT_ID1,
    EVENT_ID2,
    EVENT_ID3,
    EVENT_ID4,
    EVENT_ID5,
    EVENT_ID6,
    EVENT_ID7,
};

// CPU-debug kernel modes (tikicpulib); global, as the CANN samples write KernelMode::AIV_MODE.
// MIX_MODE is a mixed kernel with 1 cube core : 2 vector cores per block (__mix__(1, 2)), MIX_AIC_1_1
// one with 1 : 1 (__mix__(1, 1)); the names and order are cpudebug's (asc-tools cpudebug/include/stub_def.h,
// whose ELF reader maps the kernel's (aic, aiv) ratio (1, 1) to MIX_AIC_1_1 and (1, 2) to MIX_MODE).
enum class KernelMode { MIX_MODE = 0, AIC_MODE, AIV_MODE, MIX_AIC_1_1 };

// Kernel types accepted by KERNEL_TASK_TYPE_DEFAULT (ASCENDC.md §1.1).
enum fusedsl_kernel_type {
    KERNEL_TYPE_AIV_ONLY,
    KERNEL_TYPE_AIC_ONLY,
    KERNEL_TYPE_MIX_AIV_1_0,
    KERNEL_TYPE_MIX_AIC_1_0,
    KERNEL_TYPE_MIX_AIC_1_1,
    KERNEL_TYPE_MIX_AIC_1_2,
    KERNEL_TYPE_AICORE,
    KERNEL_TYPE_VECTORCORE,
    KERNEL_TYPE_MIX_AICORE,
    KERNEL_TYPE_MIX_VECTOR_CORE,
};

using half = _Float16;

// g++ 12 has no usable __bf16 in C++, so bfloat16 is emulated: the 16 high bits of a float.
struct bfloat16_t {
    uint16_t bits;

    bfloat16_t() = default;
    bfloat16_t(float f) : bits(FromFloat(f)) {}  // NOLINT: implicit like the device type

    operator float() const {
        uint32_t u = static_cast<uint32_t>(bits) << 16;
        float f;
        std::memcpy(&f, &u, sizeof f);
        return f;
    }

    static bfloat16_t FromBits(uint16_t b) {
        bfloat16_t r;
        r.bits = b;
        return r;
    }

    // Round to nearest, ties to even; NaN stays a quiet NaN with its sign.
    static uint16_t FromFloat(float f) {
        uint32_t u;
        std::memcpy(&u, &f, sizeof u);
        if (std::isnan(f)) {
            return static_cast<uint16_t>((u >> 16) | 0x0040u);
        }
        uint32_t rounding = 0x7FFFu + ((u >> 16) & 1u);
        return static_cast<uint16_t>((u + rounding) >> 16);
    }
};

namespace AscendC {

// A 4-bit signed integer, two to a byte (element 2i in the low nibble, 2i + 1 in the high one).
// Like CANN's, a LocalTensor<int4b_t> / GlobalTensor<int4b_t> counts 4-bit elements: GetSize,
// operator[], GetValue/SetValue and the element counts of the APIs are in elements, GetLength in
// bytes (asc-devkit impl/basic_api/kernel_tensor_impl.h: GetSize = dataLen * INT4_TWO, operator[]
// moves offset / INT4_TWO bytes).  sizeof(int4b_t) is 1, so the tensors' pointers stay byte pointers.
struct int4b_t {
    uint8_t storage = 0;   // the value in the low 4 bits (CANN's integer_sub_type keeps `storage`)
    int4b_t() = default;
    int4b_t(int v) : storage(static_cast<uint8_t>(v) & 0xF) {}
    operator int() const { return (storage & 0x8) ? static_cast<int>(storage & 0xF) - 16 : (storage & 0xF); }
};

using ::half;
using ::bfloat16_t;
using ::KernelMode;

using TEventID = int8_t;

enum class TPosition : uint8_t {
    GM,
    A1,
    A2,
    B1,
    B2,
    C1,
    C2,
    CO1,
    CO2,
    VECIN,
    VECOUT,
    VECCALC,
    LCM = VECCALC,
    SPM,
    SHM = SPM,
    TSCM,
    C2PIPE2GM,
    C2PIPE2LOCAL,
    MAX,
};
using QuePosition = TPosition;

enum class RoundMode {
    CAST_NONE = 0,
    CAST_RINT,
    CAST_FLOOR,
    CAST_CEIL,
    CAST_ROUND,
    CAST_TRUNC,
    CAST_ODD,
    CAST_HYBRID,
};

enum class CMPMODE : uint8_t { LT = 0, GT, EQ, LE, GE, NE };

enum class SELMODE : uint8_t { VSEL_CMPMASK_SPR = 0, VSEL_TENSOR_SCALAR_MODE, VSEL_TENSOR_TENSOR_MODE };

enum class ReduceOrder : uint8_t { ORDER_VALUE_INDEX = 0, ORDER_INDEX_VALUE, ORDER_ONLY_VALUE, ORDER_ONLY_INDEX };

enum class MaskMode : uint8_t { NORMAL = 0, COUNTER };

enum class HardEvent : uint8_t {
    MTE2_MTE1,
    MTE1_MTE2,
    MTE1_M,
    M_MTE1,
    MTE2_V,
    V_MTE2,
    MTE3_V,
    V_MTE3,
    M_V,
    V_M,
    V_V,
    MTE3_MTE1,
    MTE1_MTE3,
    MTE1_V,
    MTE2_M,
    M_MTE2,
    V_MTE1,
    M_FIX,
    FIX_M,
    MTE3_MTE2,
    MTE2_MTE3,
    S_V,
    V_S,
    S_MTE2,
    MTE2_S,
    S_MTE3,
    MTE3_S,
    MTE2_FIX,
    FIX_MTE2,
    FIX_S,
    M_S,
    FIX_MTE3,
    MTE1_FIX,
    FIX_MTE1,
    FIX_FIX,
    MAX,
};

// Vector-unit geometry shared by every arch (ASCENDC.md §2.1).
constexpr uint32_t ONE_BLK_SIZE = 32;
constexpr uint32_t ONE_REPEAT_BYTE_SIZE = 256;
constexpr uint32_t DEFAULT_BLK_NUM = 8;
constexpr uint32_t DEFAULT_BLK_STRIDE = 1;
// The cube's fractal: 16 rows (BLOCK_CUBE), 256 elements of a 2-byte type (CUBE_MAX_SIZE); CANN's
// kernel_utils_constants.h has them as int32_t in kernel code.
constexpr int32_t BLOCK_CUBE = 16;
constexpr int32_t CUBE_MAX_SIZE = 256;
constexpr uint32_t DEFAULT_REPEAT_STRIDE = 8;
constexpr uint32_t MAX_REPEAT_TIMES = 255;
constexpr uint64_t MASK_PLACEHOLDER = 0;

}  // namespace AscendC

namespace fusedsl_cpu {

using AscendC::CMPMODE;
using AscendC::HardEvent;
using AscendC::RoundMode;
using AscendC::TPosition;

// A broken hardware rule.  Thrown inside a launch only; Launch() turns it into a message,
// so it never crosses the extern "C" boundary.
struct CheckError {
    std::string message;
};

// Thrown to leave a kernel early the way a `return` in CANN's own code does (the cube core of a
// mixed kernel at REGIST_MATMUL_OBJ); the launch treats it as the block's normal end.
struct KernelReturn {};

// Where the user called an API from.  APIs that take a trailing FUSEDSL_CPU_SITE argument
// (GCC evaluates __builtin_FILE/__builtin_LINE in a default argument at the call site, and
// `fusedsl cpu-run` keeps the user's file name with #line) make a broken rule's message start
// with the user's file:line.  The outermost such API wins: one high-level API calling another
// still names the user's line.
// (The builtins are the constructor's default arguments: GCC gives those the location of the
// expression that calls the constructor, here the API's default argument, i.e. the user's call.
// Written directly into a braced default argument they would name this header.)
#if defined(__GNUC__)
#define FUSEDSL_CPU_INLINE __attribute__((always_inline)) inline
#define FUSEDSL_CPU_SITE_CTOR __attribute__((always_inline)) constexpr
#else
#define FUSEDSL_CPU_INLINE inline
#define FUSEDSL_CPU_SITE_CTOR constexpr
#endif
struct Site {
    const char* file;
    int line;
    FUSEDSL_CPU_SITE_CTOR Site(const char* file_ = __builtin_FILE(), int line_ = __builtin_LINE())
        : file(file_), line(line_) {}
};

// Every API call runs the three below, so they are inlined even in the -O0 builds (CANN's CPU mode
// builds unoptimised too), and the constexpr constructor makes the thread_local constant-initialised
// (no initialisation guard on each access): as calls with a guarded thread_local they made each call to
// Adds or GetValue about 55 ns slower.
FUSEDSL_CPU_INLINE Site& CurrentSite() {
    static thread_local Site site{nullptr, 0};
    return site;
}

struct AtSite {
    bool owner;
    FUSEDSL_CPU_INLINE explicit AtSite(Site s) : owner(CurrentSite().file == nullptr) {
        if (owner) {
            CurrentSite() = s;
        }
    }
    FUSEDSL_CPU_INLINE ~AtSite() {
        if (owner) {
            CurrentSite() = Site{nullptr, 0};
        }
    }
    AtSite(const AtSite&) = delete;
    AtSite& operator=(const AtSite&) = delete;
};

#define FUSEDSL_CPU_SITE ::fusedsl_cpu::Site fs_site = ::fusedsl_cpu::Site()

[[noreturn]] inline void Fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

inline void Fail(const char* fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    const Site& at = CurrentSite();
    if (at.file != nullptr) {
        throw CheckError{std::string(at.file) + ":" + std::to_string(at.line) + ": " + buf};
    }
    throw CheckError{buf};
}

// A broken rule reported at a given kernel line (a call made earlier than the one running now, e.g. the
// InitBuffer a later REGIST_MATMUL_OBJ collides with); the running call's line when `at` is unknown.
[[noreturn]] inline void FailAt(const Site& at, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

inline void FailAt(const Site& at, const char* fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    const Site& where = at.file != nullptr ? at : CurrentSite();
    if (where.file != nullptr) {
        throw CheckError{std::string(where.file) + ":" + std::to_string(where.line) + ": " + buf};
    }
    throw CheckError{buf};
}

inline std::string Format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

inline std::string Format(const char* fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return buf;
}

// Ascend C spelling of an element type: the key of the target's API table.
template <typename T>
struct TypeInfo;
#define FUSEDSL_CPU_TYPE(T, NAME)                         \
    template <>                                           \
    struct TypeInfo<T> {                                  \
        static constexpr const char* name = NAME;         \
    }
FUSEDSL_CPU_TYPE(half, "half");
FUSEDSL_CPU_TYPE(bfloat16_t, "bfloat16_t");
FUSEDSL_CPU_TYPE(float, "float");
FUSEDSL_CPU_TYPE(double, "double");
FUSEDSL_CPU_TYPE(int8_t, "int8_t");
FUSEDSL_CPU_TYPE(uint8_t, "uint8_t");
FUSEDSL_CPU_TYPE(int16_t, "int16_t");
FUSEDSL_CPU_TYPE(uint16_t, "uint16_t");
FUSEDSL_CPU_TYPE(int32_t, "int32_t");
FUSEDSL_CPU_TYPE(uint32_t, "uint32_t");
FUSEDSL_CPU_TYPE(int64_t, "int64_t");
FUSEDSL_CPU_TYPE(uint64_t, "uint64_t");
FUSEDSL_CPU_TYPE(bool, "bool");
FUSEDSL_CPU_TYPE(AscendC::int4b_t, "int4b_t");   // named in the messages of the APIs that refuse it
#undef FUSEDSL_CPU_TYPE

template <typename T>
constexpr const char* TypeName() {
    return TypeInfo<T>::name;
}

// The element type a data movement is checked as: DataCopy moves bytes, so a bool tensor (the
// TopK finish flags of CANN's samples) moves as uint8_t — CANN's CPU debug DataCopy check looks at
// the element size only.
// int4b_t moves as bytes too: asc-devkit kernel_operator_data_copy_check.h (IsBasicDataCopySupportedType)
// lists int4b_t for DataCopy on every chip.
template <typename T>
constexpr const char* MoveTypeName() {
    return std::is_same_v<T, bool> || std::is_same_v<T, AscendC::int4b_t> ? "uint8_t" : TypeInfo<T>::name;
}

template <typename T>
constexpr bool kIsLowFloat = std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>;

// 4-bit elements (int4b_t): two to a byte.  Element counts become bytes through these two, as in
// CANN (asc-devkit impl/basic_api/kernel_tensor_impl.h and kernel_check.h GetLoadDataLocalLen:
// tensorSize / INT4_TWO for int4b_t, tensorSize * sizeof(T) otherwise).
template <typename T>
constexpr bool kIsB4 = std::is_same_v<std::remove_cv_t<T>, AscendC::int4b_t>;

// Bytes that `elems` elements of T occupy (a trailing half byte counts as a byte).
template <typename T>
constexpr uint64_t BytesOf(uint64_t elems) {
    if constexpr (kIsB4<T>) {
        return (elems + 1) / 2;
    } else {
        return elems * sizeof(T);
    }
}

// Elements of T in `bytes` bytes.
template <typename T>
constexpr uint64_t ElemsIn(uint64_t bytes) {
    if constexpr (kIsB4<T>) {
        return bytes * 2;
    } else {
        return bytes / sizeof(T);
    }
}

template <typename T>
constexpr bool kIsFloat = kIsLowFloat<T> || std::is_floating_point_v<T>;

// The type arithmetic is done in: 16-bit floats compute in float and round once per op,
// the rule fusedsl's other executors follow (dtypes.py).
template <typename T>
using Compute = std::conditional_t<kIsLowFloat<T>, float, std::conditional_t<kIsB4<T>, int32_t, T>>;

template <typename T>
inline Compute<T> ToCompute(T v) {
    return static_cast<Compute<T>>(v);
}

template <typename T, typename C>
inline T FromCompute(C v) {
    if constexpr (std::is_same_v<T, bfloat16_t>) {
        return bfloat16_t(static_cast<float>(v));
    } else {
        return static_cast<T>(v);
    }
}

inline const char* PositionName(TPosition p) {
    switch (p) {
        case TPosition::GM: return "GM";
        case TPosition::A1: return "A1";
        case TPosition::A2: return "A2";
        case TPosition::B1: return "B1";
        case TPosition::B2: return "B2";
        case TPosition::C1: return "C1";
        case TPosition::C2: return "C2";
        case TPosition::CO1: return "CO1";
        case TPosition::CO2: return "CO2";
        case TPosition::VECIN: return "VECIN";
        case TPosition::VECOUT: return "VECOUT";
        case TPosition::VECCALC: return "VECCALC";
        case TPosition::SPM: return "SPM";
        case TPosition::TSCM: return "TSCM";
        default: return "?";
    }
}

inline const char* RoundModeName(RoundMode m) {
    switch (m) {
        case RoundMode::CAST_NONE: return "CAST_NONE";
        case RoundMode::CAST_RINT: return "CAST_RINT";
        case RoundMode::CAST_FLOOR: return "CAST_FLOOR";
        case RoundMode::CAST_CEIL: return "CAST_CEIL";
        case RoundMode::CAST_ROUND: return "CAST_ROUND";
        case RoundMode::CAST_TRUNC: return "CAST_TRUNC";
        case RoundMode::CAST_ODD: return "CAST_ODD";
        case RoundMode::CAST_HYBRID: return "CAST_HYBRID";
    }
    return "?";
}

inline const char* CmpModeName(CMPMODE m) {
    switch (m) {
        case CMPMODE::LT: return "LT";
        case CMPMODE::GT: return "GT";
        case CMPMODE::EQ: return "EQ";
        case CMPMODE::LE: return "LE";
        case CMPMODE::GE: return "GE";
        case CMPMODE::NE: return "NE";
    }
    return "?";
}

inline const char* EventName(HardEvent e) {
    static const char* const names[] = {
        "MTE2_MTE1", "MTE1_MTE2", "MTE1_M",    "M_MTE1",   "MTE2_V",   "V_MTE2",    "MTE3_V",
        "V_MTE3",    "M_V",       "V_M",       "V_V",      "MTE3_MTE1", "MTE1_MTE3", "MTE1_V",
        "MTE2_M",    "M_MTE2",    "V_MTE1",    "M_FIX",    "FIX_M",    "MTE3_MTE2", "MTE2_MTE3",
        "S_V",       "V_S",       "S_MTE2",    "MTE2_S",   "S_MTE3",   "MTE3_S",    "MTE2_FIX",
        "FIX_MTE2",  "FIX_S",     "M_S",       "FIX_MTE3", "MTE1_FIX", "FIX_MTE1",  "FIX_FIX",
    };
    auto i = static_cast<size_t>(e);
    return i < sizeof names / sizeof names[0] ? names[i] : "?";
}

inline uint64_t RoundUp(uint64_t v, uint64_t to) {
    return (v + to - 1) / to * to;
}

}  // namespace fusedsl_cpu

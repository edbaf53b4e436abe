// fusedsl CPU implementation of the Ascend C API: cache control, GM initialisation, kernel
// assertions and tensor dumps (the utilities CANN's vector samples use).
#pragma once

#include <array>
#include <unistd.h>

#include "cube.h"
#include "reduce.h"

namespace AscendC {

enum class CacheLine : uint8_t { SINGLE_CACHE_LINE = 0, ENTIRE_DATA_CACHE };
enum class DcciDst : uint8_t { CACHELINE_ALL = 0, CACHELINE_UB, CACHELINE_OUT, CACHELINE_ATOMIC };

}  // namespace AscendC

namespace fusedsl_cpu {

// Clean (write back) and invalidate this core's data-cache lines: one line (the one holding
// `p`) or the whole cache.  DataCacheCleanAndInvalid.md: not on 910A (Atlas 训练系列).
inline void CleanCache(const char* api, const uint8_t* p, bool entire) {
    if (Target().arch == 1001) {
        Fail("%s is not available on %s; keep GlobalTensor::SetValue writes away from GM that DMA or other "
             "cores touch", api, Target().name);
    }
    std::vector<uintptr_t>& dirty = CurCore().dirty_lines;
    if (entire) {
        dirty.clear();
        return;
    }
    GmBuffer* b = FindGm(p);
    if (b == nullptr) {
        return;
    }
    uintptr_t line = LineOf(b, p);
    dirty.erase(std::remove(dirty.begin(), dirty.end(), line), dirty.end());
}

}  // namespace fusedsl_cpu

namespace AscendC {

template <typename T, CacheLine entireType, DcciDst dcciDst>
inline void DataCacheCleanAndInvalid(const GlobalTensor<T>& dst, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    const char* api = "DataCacheCleanAndInvalid";
    if (fusedsl_cpu::Target().arch == 2002) {
        fusedsl_cpu::Fail("%s<T, CacheLine, DcciDst>: %s supports only the form without DcciDst "
                          "(DataCacheCleanAndInvalid<T, CacheLine>)", api, fusedsl_cpu::Target().name);
    }
    if (dcciDst == DcciDst::CACHELINE_UB) {
        fusedsl_cpu::Fail("%s: DcciDst::CACHELINE_UB keeps the cache coherent with UB, not GM; pass a LocalTensor "
                          "for that, or CACHELINE_OUT for a GlobalTensor", api);
    }
    fusedsl_cpu::CleanCache(api, reinterpret_cast<const uint8_t*>(dst.fs_addr),
                            entireType == CacheLine::ENTIRE_DATA_CACHE);
}

template <typename T, CacheLine entireType>
inline void DataCacheCleanAndInvalid(const GlobalTensor<T>& dst, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::CleanCache("DataCacheCleanAndInvalid", reinterpret_cast<const uint8_t*>(dst.fs_addr),
                            entireType == CacheLine::ENTIRE_DATA_CACHE);
}

// The UB form keeps the scalar cache coherent with UB; the CPU has no such cache.
template <typename T, CacheLine entireType, DcciDst dcciDst>
inline void DataCacheCleanAndInvalid(const LocalTensor<T>& dst, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::CheckUb("DataCacheCleanAndInvalid", "dst", dst.fs_addr, dst.GetLength(), 0, sizeof(T), false);
    if (fusedsl_cpu::Target().arch != 2201) {
        fusedsl_cpu::Fail("DataCacheCleanAndInvalid(LocalTensor) is not available on %s", fusedsl_cpu::Target().name);
    }
}

}  // namespace AscendC

// ---- ASSERT -----------------------------------------------------------------------------------

namespace fusedsl_cpu {

inline void KernelAssert(bool ok, const char* expr, const char* file, int line) {
    if (!ok) {
        Fail("ASSERT(%s) failed at %s:%d", expr, file, line);
    }
}

}  // namespace fusedsl_cpu

namespace fusedsl_cpu {

// ascendc_assert(cond, fmt, args...): the message is formatted like printf.
template <typename... Args>
inline void KernelAssertMsg(bool ok, const char* expr, const char* file, int line, const char* fmt = "",
                            Args... args) {
    if (ok) {
        return;
    }
    char msg[512];
    if constexpr (sizeof...(Args) == 0) {
        std::snprintf(msg, sizeof msg, "%s", fmt);
    } else {
        std::snprintf(msg, sizeof msg, fmt, args...);
    }
    std::string text(msg);
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) {
        text.pop_back();
    }
    Fail("ascendc_assert(%s) failed at %s:%d%s%s", expr, file, line, text.empty() ? "" : ": ", text.c_str());
}

// KERNEL_LOG's line head as CANN's CPU debug mode prints it (asc-tools cpudebug utils/kernel_log.h): on
// stdout like printf, every level (DEBUG included), the level, the block — on a separated chip the raw
// block index (a group's two vector cores share it) with the core type and sub-block, as "Core_<n>"
// elsewhere — the file:line and function of the call, and the process id (cpudebug's per-core child;
// here the one process running every block).
inline void KernelLogHead(int level, const char* file, int line, const char* function) {
    static const char* const kLevels[] = {"DEBUG", "INFO", "WARN", "ERROR"};
    const char* name = level >= 0 && level <= 3 ? kLevels[level] : "INFO";
    const Runtime& rt = RT();
    unsigned pid = static_cast<unsigned>(getpid());
    if (!Target().separated) {
        std::printf("[%s][Core_%lld][%s:%d][%s][%u] ", name, static_cast<long long>(rt.block_idx), file, line,
                    function, pid);
        return;
    }
    bool aic = rt.kernel_mode == AscendC::KernelMode::AIC_MODE || rt.on_aic;
    long long block = aic ? rt.block_idx : rt.block_idx / (rt.mix_ratio > 0 ? rt.mix_ratio : 1);
    std::printf("[%s][Block_%lld][%s_%lld][%s:%d][%s][%u] ", name, block, aic ? "AIC" : "AIV",
                static_cast<long long>(aic ? 0 : rt.sub_block_idx), file, line, function, pid);
}

}  // namespace fusedsl_cpu

// A failed kernel ASSERT / ascendc_assert stops the block with the expression and its place,
// as the device's assertion does (the launch reports it like any broken rule).
#ifndef ASSERT
#define ASSERT(expr) ::fusedsl_cpu::KernelAssert(static_cast<bool>(expr), #expr, __FILE__, __LINE__)
#endif
#ifndef ascendc_assert
#define ascendc_assert(expr, ...) \
    ::fusedsl_cpu::KernelAssertMsg(static_cast<bool>(expr), #expr, __FILE__, __LINE__, ##__VA_ARGS__)
#endif

// CANN's internal-style logging and assertion, which samples use too:
// ASCENDC_ASSERT(cond, { KERNEL_LOG(KERNEL_ERROR, "fmt", args...); }) runs the block, then stops
// the block like a failed ASSERT.  KERNEL_LOG prints as cpudebug's does (KernelLogHead), flushed like
// AscendC::printf so that it interleaves with the host's output.
enum FusedslKernelLogLevel { KERNEL_DEBUG = 0, KERNEL_INFO, KERNEL_WARN, KERNEL_ERROR };
#ifndef KERNEL_LOG
#define KERNEL_LOG(level, fmt, ...)                                                  \
    do {                                                                             \
        ::fusedsl_cpu::KernelLogHead((level), __FILE__, __LINE__, __FUNCTION__);     \
        std::printf(fmt "\n", ##__VA_ARGS__);                                        \
        std::fflush(stdout);                                                         \
    } while (0)
#endif
#ifndef ASCENDC_ASSERT
#define ASCENDC_ASSERT(cond, behavior)                                                             \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            behavior;                                                                              \
            ::fusedsl_cpu::Fail("ASCENDC_ASSERT(%s) failed at %s:%d", #cond, __FILE__, __LINE__);  \
        }                                                                                          \
    } while (0)
#endif

namespace AscendC {

// ---- InitGlobalMemory: fill `size` GM elements with a value (a DMA write) ---------------------

template <typename T>
inline void InitGlobalMemory(GlobalTensor<T>& gmWorkspaceAddr, const uint64_t size, const T value, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    const char* api = "InitGlobalMemory";
    CurCore();
    // a vector-unit API (Duplicate into UB, then DataCopyPad out): CANN's impl returns at once on a cube
    // core, so a __cube__ kernel's Fill/InitGlobalMemory leaves GM as it was
    if (ASCEND_IS_AIC) {
        return;
    }
    if (size == 0) {
        return;
    }
    GmBuffer* buf = CheckGm(api, gmWorkspaceAddr, size * sizeof(T), true);
    auto p = reinterpret_cast<uint8_t*>(gmWorkspaceAddr.fs_addr);
    std::vector<uint8_t> bytes(size * sizeof(T));   // what lands there: several cores writing it agree
    for (uint64_t i = 0; i < size; ++i) {
        std::memcpy(bytes.data() + i * sizeof(T), &value, sizeof(T));
    }
    NoteGmWrite(api, buf, p, size * sizeof(T), false, bytes.data());
    std::memcpy(p, bytes.data(), bytes.size());
    St().gm_bytes_written += size * sizeof(T);
}

// ---- Copy (UB -> UB on the vector unit) ------------------------------------------------------

struct CopyRepeatParams {
    uint16_t dstStride = DEFAULT_BLK_STRIDE;
    uint16_t srcStride = DEFAULT_BLK_STRIDE;
    uint16_t dstRepeatSize = DEFAULT_REPEAT_STRIDE;
    uint16_t srcRepeatSize = DEFAULT_REPEAT_STRIDE;

    CopyRepeatParams() = default;
    CopyRepeatParams(uint16_t dstStrideIn, uint16_t srcStrideIn, uint16_t dstRepeatSizeIn, uint16_t srcRepeatSizeIn)
        : dstStride(dstStrideIn), srcStride(srcStrideIn), dstRepeatSize(dstRepeatSizeIn),
          srcRepeatSize(srcRepeatSizeIn) {}
};

template <typename T, bool isSetMask = true>
inline void Copy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::UnaryCount("Copy", dst, src, count, [](auto v) { return v; });
}

template <typename T, bool isSetMask = true, typename M>
inline void CopyRepeatForm(const LocalTensor<T>& dst, const LocalTensor<T>& src, M mask, const uint8_t repeatTime,
                           const CopyRepeatParams& p) {
    using namespace fusedsl_cpu;
    const char* api = "Copy";
    CheckApi(api, TypeName<T>());
    const RepOperand ops[2] = {Operand(api, "dst", dst, p.dstStride, p.dstRepeatSize, false),
                               Operand(api, "src", src, p.srcStride, p.srcRepeatSize, true)};
    Mask m = PickMask<isSetMask>(api, mask, LanesOf<T>());
    ForEachLane(api, ops, m, LanesOf<T>(), repeatTime, [&](uint8_t* const* q) { std::memcpy(q[0], q[1], sizeof(T)); });
}

template <typename T, bool isSetMask = true>
inline void Copy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask, const uint8_t repeatTime,
                 const CopyRepeatParams& repeatParams, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    CopyRepeatForm<T, isSetMask>(dst, src, mask, repeatTime, repeatParams);
}

template <typename T, bool isSetMask = true>
inline void Copy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[], const uint8_t repeatTime,
                 const CopyRepeatParams& repeatParams, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    CopyRepeatForm<T, isSetMask>(dst, src, mask, repeatTime, repeatParams);
}

// ---- DumpTensor (ShapeInfo: tensor.h) ----------------------------------------------------------

}  // namespace AscendC

namespace fusedsl_cpu {

template <typename T>
inline void DumpValues(const char* where, uint64_t addr, const uint8_t* p, uint32_t desc, uint32_t n,
                       const AscendC::ShapeInfo* shape) {
    std::printf("DumpTensor: desc=%u, addr=%llu, data_type=%s, position=%s", desc,
                static_cast<unsigned long long>(addr), TypeName<T>(), where);
    if (shape != nullptr) {
        std::printf(", shape=[");
        for (uint8_t d = 0; d < shape->shapeDim && d < 8; ++d) {
            std::printf("%s%u", d ? ", " : "", shape->shape[d]);
        }
        std::printf("]");
    }
    std::printf("\n[");
    for (uint32_t i = 0; i < n; ++i) {
        T v;
        std::memcpy(&v, p + static_cast<uint64_t>(i) * sizeof(T), sizeof(T));
        if constexpr (kIsFloat<T>) {
            std::printf("%s%f", i ? ", " : "", static_cast<double>(static_cast<float>(v)));
        } else {
            std::printf("%s%lld", i ? ", " : "", static_cast<long long>(v));
        }
    }
    std::printf("]\n");
    std::fflush(stdout);
}

}  // namespace fusedsl_cpu

namespace AscendC {

// Prints the first dumpSize elements (no more than the tensor holds) with the tag `desc`.
template <typename T>
inline void DumpTensor(const LocalTensor<T>& tensor, uint32_t desc, uint32_t dumpSize) {
    uint32_t n = dumpSize < tensor.GetSize() ? dumpSize : tensor.GetSize();
    uint32_t off = fusedsl_cpu::CheckUb("DumpTensor", "tensor", tensor.fs_addr, tensor.GetLength(), 0, sizeof(T), false);
    fusedsl_cpu::DumpValues<T>("UB", off, reinterpret_cast<const uint8_t*>(tensor.fs_addr), desc, n, nullptr);
}

template <typename T>
inline void DumpTensor(const LocalTensor<T>& tensor, uint32_t desc, uint32_t dumpSize, const ShapeInfo& shapeInfo) {
    uint32_t n = dumpSize < tensor.GetSize() ? dumpSize : tensor.GetSize();
    uint32_t off = fusedsl_cpu::CheckUb("DumpTensor", "tensor", tensor.fs_addr, tensor.GetLength(), 0, sizeof(T), false);
    fusedsl_cpu::DumpValues<T>("UB", off, reinterpret_cast<const uint8_t*>(tensor.fs_addr), desc, n, &shapeInfo);
}

template <typename T>
inline void DumpTensor(const GlobalTensor<T>& tensor, uint32_t desc, uint32_t dumpSize) {
    fusedsl_cpu::CheckGm("DumpTensor", tensor, static_cast<uint64_t>(dumpSize) * sizeof(T), true);
    fusedsl_cpu::DumpValues<T>("GM", reinterpret_cast<uintptr_t>(tensor.fs_addr),
                               reinterpret_cast<const uint8_t*>(tensor.fs_addr), desc, dumpSize, nullptr);
}

// ---- LocalTensor operator expressions: dst = a * b runs Mul over dst.GetSize() elements -------

template <typename T, class Op>
struct TensorBinaryExpr {
    using fusedsl_expr_tag = void;
    const char* api;
    LocalTensor<T> a;
    LocalTensor<T> b;
    template <typename D>
    void Run(const LocalTensor<D>& dst) const {
        static_assert(std::is_same_v<D, T>, "dst = a op b: dst must have the operands' element type");
        fusedsl_cpu::BinaryCount(api, dst, a, b, dst.GetSize(), Op());
    }
};

template <typename T>
struct TensorCompareExpr {
    using fusedsl_expr_tag = void;
    LocalTensor<T> a;
    LocalTensor<T> b;
    CMPMODE mode;
    template <typename D>
    void Run(const LocalTensor<D>& dst) const {
        // Every element of the operands is compared (Compare's count form over a.GetSize()).
        fusedsl_cpu::CompareCount("Compare", dst, a, &b, T(0), mode, a.GetSize());
    }
};

#define FUSEDSL_CPU_TENSOR_OP(SYM, API, OP)                                                            \
    template <typename T>                                                                              \
    inline TensorBinaryExpr<T, fusedsl_cpu::OP> operator SYM(const LocalTensor<T>& a, const LocalTensor<T>& b) { \
        return TensorBinaryExpr<T, fusedsl_cpu::OP>{API, a, b};                                        \
    }
FUSEDSL_CPU_TENSOR_OP(+, "Add", OpAdd)
FUSEDSL_CPU_TENSOR_OP(-, "Sub", OpSub)
FUSEDSL_CPU_TENSOR_OP(*, "Mul", OpMul)
FUSEDSL_CPU_TENSOR_OP(/, "Div", OpDiv)
FUSEDSL_CPU_TENSOR_OP(&, "And", OpAnd)
FUSEDSL_CPU_TENSOR_OP(|, "Or", OpOr)
#undef FUSEDSL_CPU_TENSOR_OP

#define FUSEDSL_CPU_TENSOR_CMP(SYM, MODE)                                                               \
    template <typename T>                                                                              \
    inline TensorCompareExpr<T> operator SYM(const LocalTensor<T>& a, const LocalTensor<T>& b) {       \
        return TensorCompareExpr<T>{a, b, CMPMODE::MODE};                                              \
    }
FUSEDSL_CPU_TENSOR_CMP(<, LT)
FUSEDSL_CPU_TENSOR_CMP(>, GT)
FUSEDSL_CPU_TENSOR_CMP(<=, LE)
FUSEDSL_CPU_TENSOR_CMP(>=, GE)
FUSEDSL_CPU_TENSOR_CMP(==, EQ)
FUSEDSL_CPU_TENSOR_CMP(!=, NE)
#undef FUSEDSL_CPU_TENSOR_CMP

}  // namespace AscendC

// ---- GatherMask -------------------------------------------------------------------------------

namespace AscendC {

enum class GatherMaskMode : uint8_t { VERSION_V1 = 0, VERSION_V2 = 1 };
constexpr GatherMaskMode defaultGatherMaskMode = GatherMaskMode::VERSION_V1;

struct GatherMaskParams {
    GatherMaskParams() = default;
    GatherMaskParams(const uint8_t src0BlockStrideIn, const uint16_t repeatTimesIn, const uint16_t src0RepeatStrideIn,
                     const uint8_t src1RepeatStrideIn)
        : src0BlockStride(src0BlockStrideIn), repeatTimes(repeatTimesIn), src0RepeatStride(src0RepeatStrideIn),
          src1RepeatStride(src1RepeatStrideIn) {}

    uint8_t src0BlockStride = DEFAULT_BLK_STRIDE;
    uint16_t repeatTimes = 0;
    uint16_t src0RepeatStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src1RepeatStride = DEFAULT_REPEAT_STRIDE;
};

}  // namespace AscendC

namespace fusedsl_cpu {

// Keeps the selected elements of src0, packed into dst in order; returns how many.  The
// pattern is a fixed one (1..7: even, odd, every 4th from lane 0/1/2/3, all) or a bit
// tensor read continuously within a repeat, src1RepeatStride blocks apart between repeats.
// Normal mode: repeatTimes whole 256-byte repeats.  Counter mode (reduceMode): on 2201 each
// repeat takes the first `mask` lanes; on 2002 `mask` is the total element count
// (GatherMask.md, "配置方式一/二").
template <typename T, typename U>
inline uint64_t GatherMaskImpl(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<U>* pattern,
                               uint8_t fixed, bool reduceMode, uint32_t mask, const AscendC::GatherMaskParams& p) {
    const char* api = "GatherMask";
    const TargetInfo& t = Target();
    if (t.arch == 1001) {
        Fail("GatherMask is not available on %s", t.name);
    }
    static_assert(sizeof(T) == 2 || sizeof(T) == 4, "GatherMask takes 16- or 32-bit elements");
    if (pattern == nullptr && (fixed < 1 || fixed > 7 || (fixed == 7 && t.arch == 2002))) {
        Fail("GatherMask: src1Pattern = %u is not a fixed pattern of %s (1..%d)", fixed, t.name,
             t.arch == 2002 ? 6 : 7);
    }
    if (pattern != nullptr && sizeof(U) != sizeof(T)) {
        Fail("GatherMask: a %s pattern tensor with %s elements; the pattern type has the element's width (uint%zu_t)",
             TypeName<U>(), TypeName<T>(), sizeof(T) * 8);
    }
    constexpr uint32_t lanes = 256 / sizeof(T);
    uint64_t total_lanes = 0;
    uint32_t repeats = p.repeatTimes;
    uint32_t per_repeat = lanes;
    if (reduceMode) {
        if (mask == 0) {
            Fail("GatherMask: mask = 0 in counter mode (reduceMode = true); it counts elements, at least 1");
        }
        if (t.arch == 2002) {
            repeats = static_cast<uint32_t>(DivCeil(mask, lanes));
            total_lanes = mask;
        } else {
            per_repeat = mask;   // may pass one 256-byte repeat: the elements continue block by block
        }
    }
    const RepOperand ops[1] = {Operand(api, "src0", src0, p.src0BlockStride, p.src0RepeatStride, true)};
    uint32_t d = CheckUb(api, "dst", dst.fs_addr, dst.GetLength(), 0, sizeof(T));
    uint32_t pat = pattern ? CheckUb(api, "src1Pattern", pattern->fs_addr, pattern->GetLength(), 0, sizeof(U)) : 0;
    uint8_t* ub = CurCore().ub.data();
    std::vector<uint8_t> kept;
    uint64_t lane_no = 0;
    for (uint32_t r = 0; r < repeats; ++r) {
        uint32_t n = per_repeat;
        if (t.arch == 2002 && reduceMode) {
            n = static_cast<uint32_t>(std::min<uint64_t>(lanes, total_lanes - lane_no));
        }
        for (uint32_t j = 0; j < n; ++j, ++lane_no) {
            bool take;
            if (pattern == nullptr) {
                take = fixed == 7 || (fixed == 1 && j % 2 == 0) || (fixed == 2 && j % 2 == 1) ||
                       (fixed >= 3 && fixed <= 6 && j % 4 == static_cast<uint32_t>(fixed - 3));
            } else {
                uint64_t byte = static_cast<uint64_t>(r) * p.src1RepeatStride * 32 + j / 8;
                if (byte + 1 > pattern->GetLength()) {
                    Fail("GatherMask: repeat %u reads byte %llu of a %u-byte src1Pattern tensor", r,
                         static_cast<unsigned long long>(byte + 1), pattern->GetLength());
                }
                CheckWritten(api, "src1Pattern", static_cast<uint32_t>(pat + byte), 1);
                take = (ub[pat + byte] >> (j % 8)) & 1;
            }
            const RepOperand& o = ops[0];
            uint64_t a = (static_cast<uint64_t>(r) * o.rep + (j / (32 / sizeof(T))) * static_cast<uint64_t>(o.blk)) * 32 +
                         (j % (32 / sizeof(T))) * sizeof(T);
            if (a + sizeof(T) > o.bytes) {
                Fail("GatherMask: repeat %u, lane %u reads byte %llu of a %llu-byte src0 LocalTensor", r, j,
                     static_cast<unsigned long long>(a + sizeof(T)), static_cast<unsigned long long>(o.bytes));
            }
            if (take) {
                CheckWritten(api, "src0", static_cast<uint32_t>(o.off + a), sizeof(T));
                kept.insert(kept.end(), ub + o.off + a, ub + o.off + a + sizeof(T));
            }
        }
    }
    if (kept.size() > dst.GetLength()) {
        Fail("GatherMask: keeps %zu elements but dst holds only %u", kept.size() / sizeof(T), dst.GetSize());
    }
    if (!kept.empty()) {
        std::memcpy(ub + d, kept.data(), kept.size());
        MarkWritten(d, kept.size());
    }
    St().vector_instructions += 1;
    St().vector_repeats += repeats;
    return kept.size() / sizeof(T);
}

}  // namespace fusedsl_cpu

namespace AscendC {

template <typename T, typename U, GatherMaskMode mode = defaultGatherMaskMode>
inline void GatherMask(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<U>& src1Pattern,
                       const bool reduceMode, const uint32_t mask, const GatherMaskParams& gatherMaskParams,
                       uint64_t& rsvdCnt, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    rsvdCnt = fusedsl_cpu::GatherMaskImpl(dst, src0, &src1Pattern, 0, reduceMode, mask, gatherMaskParams);
}

template <typename T, GatherMaskMode mode = defaultGatherMaskMode>
inline void GatherMask(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const uint8_t src1Pattern,
                       const bool reduceMode, const uint32_t mask, const GatherMaskParams& gatherMaskParams,
                       uint64_t& rsvdCnt, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    rsvdCnt = fusedsl_cpu::GatherMaskImpl<T, uint8_t>(dst, src0, nullptr, src1Pattern, reduceMode, mask,
                                                      gatherMaskParams);
}

}  // namespace AscendC

// ---- ListTensorDesc / TensorDesc: a dynamic list of GM tensors (AddN-style inputs) ------------
//
// Layout of the list, in uint64 words: word 0 is the byte offset of the pointer array from the
// start; then one descriptor per tensor, a header (dim in the low 32 bits, index in the high
// 32) followed by `dim` shape words (one placeholder word when dim is 0); then the pointers.

namespace AscendC {

template <class T = uint8_t>
class TensorDesc {
public:
    void SetShapeAddr(uint64_t* shapePtr) {
        if (shapePtr == nullptr) {
            fusedsl_cpu::Fail("TensorDesc::SetShapeAddr: a null shape buffer");
        }
        fs_shape = shapePtr;
    }
    uint64_t* GetShapeAddr() { return fs_shape; }
    uint64_t GetDim() { return fs_dim; }
    uint64_t GetIndex() { return fs_index; }
    uint64_t GetShape(uint32_t offset) {
        if (offset >= fs_dim) {
            fusedsl_cpu::Fail("TensorDesc::GetShape(%u): the tensor has %u dimensions", offset, fs_dim);
        }
        return fs_shape[offset];
    }
    __gm__ T* GetDataPtr(FUSEDSL_CPU_SITE) {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        return fs_ptr;
    }
    GlobalTensor<T> GetDataObj() {
        uint64_t n = 1;
        for (uint32_t i = 0; i < fs_dim; ++i) {
            n *= fs_shape[i];
        }
        GlobalTensor<T> g;
        g.SetGlobalBuffer(fs_ptr, n);
        return g;
    }

    uint32_t fs_dim = 0;
    uint32_t fs_index = 0;
    uint64_t* fs_shape = nullptr;
    T* fs_ptr = nullptr;
};

class ListTensorDesc {
public:
    ListTensorDesc() = default;
    ListTensorDesc(__gm__ void* data, uint32_t length = 0xffffffff, uint32_t shapeSize = 0xffffffff,
                   FUSEDSL_CPU_SITE) {
        Init(data, length, shapeSize, fs_site);
    }

    void Init(__gm__ void* data, uint32_t length = 0xffffffff, uint32_t shapeSize = 0xffffffff, FUSEDSL_CPU_SITE) {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        using namespace fusedsl_cpu;
        const char* api = "ListTensorDesc::Init";
        if (data == nullptr) {
            Fail("%s: a null list address", api);
        }
        fs_words = static_cast<const uint8_t*>(data);
        // The ICPU_RUN_KF page asks for GmAlloc memory in every pointer argument, but CANN's
        // CPU debug mode forks its blocks from the host program, so a list descriptor built in
        // host memory (CANN's AddN kernel-launch sample passes a struct on main's stack) reads
        // fine there.  Accepted the same way, read-only, with one warning; the tensors the list
        // points to are still checked as GM.
        fs_host = !RT().gm.empty() && FindGm(fs_words) == nullptr;
        if (fs_host) {
            Warn("AscendCWarning",
                 Format("%s: the list at %p is not in GmAlloc memory (the ICPU_RUN_KF page: pointer arguments must be "
                        "GmAlloc'd); read as host memory, as CANN's CPU debug mode does (reported once per launch)",
                        api, data),
                 "host-list");
        }
        uint64_t ptr_off = Word(api, 0);
        if (ptr_off % 8 != 0 || ptr_off < 16) {
            Fail("%s: word 0 (the pointer array's byte offset) is %llu; it must be a multiple of 8 past the "
                 "descriptors", api, static_cast<unsigned long long>(ptr_off));
        }
        fs_ptr_word = ptr_off / 8;
        fs_desc.clear();
        for (uint64_t w = 1; w < fs_ptr_word;) {
            fs_desc.push_back(w);
            uint64_t dim = Word(api, w) & 0xffffffffu;
            w += 1 + (dim == 0 ? 1 : dim);
            if (w > fs_ptr_word) {
                Fail("%s: descriptor %zu (dim %llu) runs into the pointer array at word %llu", api, fs_desc.size() - 1,
                     static_cast<unsigned long long>(dim), static_cast<unsigned long long>(fs_ptr_word));
            }
        }
        if (shapeSize != 0xffffffff && shapeSize != fs_desc.size()) {
            Fail("%s: the list holds %zu tensors but shapeSize says %u", api, fs_desc.size(), shapeSize);
        }
        uint64_t bytes = ptr_off + fs_desc.size() * 8;
        if (length != 0xffffffff && length != bytes) {
            Fail("%s: the list takes %llu bytes but length says %u", api, static_cast<unsigned long long>(bytes),
                 length);
        }
    }

    uint32_t GetSize() { return static_cast<uint32_t>(fs_desc.size()); }

    template <class T>
    __gm__ T* GetDataPtr(uint32_t index, FUSEDSL_CPU_SITE) {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        Check("ListTensorDesc::GetDataPtr", index);
        return reinterpret_cast<T*>(Word("ListTensorDesc::GetDataPtr", fs_ptr_word + index));
    }

    template <class T>
    void GetDesc(TensorDesc<T>& desc, uint32_t index, FUSEDSL_CPU_SITE) {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        const char* api = "ListTensorDesc::GetDesc";
        Check(api, index);
        if (desc.fs_shape == nullptr) {
            fusedsl_cpu::Fail("%s: call TensorDesc::SetShapeAddr before GetDesc (it receives the shape)", api);
        }
        uint64_t head = Word(api, fs_desc[index]);
        desc.fs_dim = static_cast<uint32_t>(head & 0xffffffffu);
        desc.fs_index = index;
        for (uint32_t i = 0; i < desc.fs_dim; ++i) {
            desc.fs_shape[i] = Word(api, fs_desc[index] + 1 + i);
        }
        desc.fs_ptr = reinterpret_cast<T*>(Word(api, fs_ptr_word + index));
    }

private:
    uint64_t Word(const char* api, uint64_t i) {
        const uint8_t* p = fs_words + i * 8;
        if (!fs_host) {
            fusedsl_cpu::CheckGmRange(api, p, 8);
        }
        fusedsl_cpu::St().scalar_gm_accesses += 1;
        uint64_t v;
        std::memcpy(&v, p, 8);
        return v;
    }
    void Check(const char* api, uint32_t index) {
        if (fs_words == nullptr) {
            fusedsl_cpu::Fail("%s: the ListTensorDesc was not initialised (Init or the data constructor)", api);
        }
        if (index >= fs_desc.size()) {
            fusedsl_cpu::Fail("%s(%u): the list holds %zu tensors", api, index, fs_desc.size());
        }
    }

    const uint8_t* fs_words = nullptr;
    bool fs_host = false;   // the list lies in host memory, not a registered GM buffer (Init)
    uint64_t fs_ptr_word = 0;
    std::vector<uint64_t> fs_desc;
};

}  // namespace AscendC

// ---- CANN 9 sample utilities: LocalMemAllocator, InitSocState, GetSystemCycle, Conditional -----

namespace AscendC {

enum class Hardware : uint8_t { GM, UB, L1, L0A, L0B, L0C, BIAS, FIXBUF, MAX };

// Hands out tensors of one memory (UB, L1, L0A, L0B, L0C) from address 0 upwards, each start
// 32-byte aligned (no TPipe needed).
template <Hardware hard = Hardware::UB>
class LocalMemAllocator {
public:
    LocalMemAllocator() {
        static_assert(hard == Hardware::UB || hard == Hardware::L1 || hard == Hardware::L0A ||
                          hard == Hardware::L0B || hard == Hardware::L0C,
                      "the fusedsl CPU implementation allocates UB, L1, L0A, L0B and L0C");
        fusedsl_cpu::CurCore();
    }
    uint32_t GetCurAddr() const { return head_; }

    template <TPosition pos, class DataType, uint32_t tileSize>
    LocalTensor<DataType> Alloc() {
        return Take<DataType>(pos, tileSize);
    }
    template <TPosition pos, class DataType>
    LocalTensor<DataType> Alloc(uint32_t tileSize) {
        return Take<DataType>(pos, tileSize);
    }
    template <class DataType, uint32_t tileSize>
    LocalTensor<DataType> Alloc() {
        return Take<DataType>(DefaultPos(), tileSize);
    }
    template <class DataType>
    LocalTensor<DataType> Alloc(uint32_t tileSize) {
        return Take<DataType>(DefaultPos(), tileSize);
    }

private:
    static constexpr TPosition DefaultPos() {
        switch (hard) {
            case Hardware::L1: return TPosition::A1;
            case Hardware::L0A: return TPosition::A2;
            case Hardware::L0B: return TPosition::B2;
            case Hardware::L0C: return TPosition::CO1;
            default: return TPosition::VECCALC;
        }
    }
    template <class DataType>
    LocalTensor<DataType> Take(TPosition pos, uint32_t n) {
        using namespace fusedsl_cpu;
        const char* api = "LocalMemAllocator::Alloc";
        int want = hard == Hardware::UB ? -1 : hard == Hardware::L1 ? kMemL1 : hard == Hardware::L0A ? kMemL0A
                   : hard == Hardware::L0B ? kMemL0B : kMemL0C;
        if (MemOfPosition(pos) != want) {
            Fail("%s: position %s is not in %s", api, PositionName(pos), LocalMemName(want));
        }
        uint64_t bytes = RoundUp(BytesOf<DataType>(n), 32);
        LocalTensor<DataType> t(reinterpret_cast<DataType*>(LocalAddress(api, pos, head_, bytes)), n, pos);
        head_ += static_cast<uint32_t>(bytes);
        return t;
    }
    uint32_t head_ = 0;
};

// Resets the core's global vector state: atomic writes off, normal mask mode, all lanes on.
inline void InitSocState() {
    fusedsl_cpu::Core& c = fusedsl_cpu::CurCore();
    c.atomic_add = false;
    c.atomic_type = "";
    c.vector_mask[0] = c.vector_mask[1] = ~0ull;
}

// A cycle counter: the CPU has no device clock, so this counts the UB accesses issued so far.
inline int64_t GetSystemCycle() {
    return static_cast<int64_t>(fusedsl_cpu::CurCore().clock);
}

template <bool Cond, typename T, typename F>
struct Conditional {
    using type = T;
};
template <typename T, typename F>
struct Conditional<false, T, F> {
    using type = F;
};

// IsSameType<T, U>::value: whether two types are the same (CANN's type utility).
template <typename T, typename U>
struct IsSameType {
    static constexpr bool value = std::is_same_v<T, U>;
};

}  // namespace AscendC

// CANN's samples call GetTPipePtr() unqualified.
using AscendC::GetTPipePtr;

// ---- AddRelu/SubRelu, ShiftLeft/ShiftRight, CreateVecIndex ------------------------------------

namespace fusedsl_cpu {

struct OpAddRelu {
    template <class W> W operator()(W a, W b) const { W v = a + b; return v < W(0) ? W(0) : v; }
};
struct OpSubRelu {
    template <class W> W operator()(W a, W b) const { W v = a - b; return v < W(0) ? W(0) : v; }
};

// Shifts run on T itself: arithmetic for signed types, logical for unsigned (ShiftLeft.md);
// roundEn rounds a right shift to nearest (adds half of the dropped range first).
template <typename T>
struct ShiftOp {
    T amount;
    bool left;
    bool round;
    T operator()(T v) const {
        using U = std::make_unsigned_t<T>;
        int s = static_cast<int>(amount);
        if (s < 0 || s >= static_cast<int>(8 * sizeof(T))) {
            Fail("%s: shift amount %d is outside [0, %zu)", left ? "ShiftLeft" : "ShiftRight", s, 8 * sizeof(T));
        }
        if (left) {
            return static_cast<T>(static_cast<U>(v) << s);
        }
        if (round && s > 0) {
            int64_t w = static_cast<int64_t>(v) + (int64_t{1} << (s - 1));
            return static_cast<T>(w >> s);
        }
        return static_cast<T>(v >> s);
    }
};

template <typename T>
inline void ShiftCount(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src, ShiftOp<T> op,
                       int64_t count) {
    static_assert(std::is_integral_v<T>, "shifts take integer tensors");
    CheckApi(api, TypeName<T>());
    if (!CheckCount(api, count)) {
        return;
    }
    uint64_t bytes = count * sizeof(T);
    uint32_t d = DstOperand(api, "dst", dst, count);
    uint32_t s = SrcOperand(api, "src", src, count);
    CheckOverlap(api, "src", d, bytes, s, bytes);
    for (int64_t i = 0; i < count; ++i) {
        StoreAs(Bytes(dst) + i * sizeof(T), op(LoadAs<T>(Bytes(src) + i * sizeof(T))));
    }
    MarkWritten(d, bytes);
    CountVector(bytes);
}

template <typename T, typename M>
inline void ShiftRepeat(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src, ShiftOp<T> op,
                        M mask, uint8_t repeat, const UnaryRepeatParams& p) {
    CheckApi(api, TypeName<T>());
    const RepOperand ops[2] = {Operand(api, "dst", dst, p.dstBlkStride, p.dstRepStride, false),
                               Operand(api, "src", src, p.srcBlkStride, p.srcRepStride, true)};
    Mask m = PickMask<true>(api, mask, LanesOf<T>());
    ForEachLane(api, ops, m, LanesOf<T>(), repeat, [&](uint8_t* const* q) { StoreAs(q[0], op(LoadAs<T>(q[1]))); });
}

}  // namespace fusedsl_cpu

namespace AscendC {

#define FUSEDSL_CPU_RELU_OP(NAME, OP)                                                                          \
    template <typename T>                                                                                      \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,        \
                     const int32_t& count, FUSEDSL_CPU_SITE) {                                                 \
        ::fusedsl_cpu::AtSite fs_at(fs_site);                                                                  \
        fusedsl_cpu::BinaryCount(#NAME, dst, src0, src1, count, fusedsl_cpu::OP());                            \
    }                                                                                                          \
    template <typename T, bool isSetMask = true>                                                               \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,        \
                     uint64_t mask, const uint8_t repeatTime, const BinaryRepeatParams& repeatParams,         \
                     FUSEDSL_CPU_SITE) {                                                                      \
        ::fusedsl_cpu::AtSite fs_at(fs_site);                                                                 \
        fusedsl_cpu::BinaryRepeat(#NAME, dst, src0, src1,                                                      \
                                  fusedsl_cpu::PickMask<isSetMask>(#NAME, mask, fusedsl_cpu::LanesOf<T>()),    \
                                  repeatTime, repeatParams, fusedsl_cpu::OP());                                \
    }                                                                                                          \
    template <typename T, bool isSetMask = true>                                                               \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,        \
                     uint64_t mask[], const uint8_t repeatTime, const BinaryRepeatParams& repeatParams,       \
                     FUSEDSL_CPU_SITE) {                                                                      \
        ::fusedsl_cpu::AtSite fs_at(fs_site);                                                                 \
        fusedsl_cpu::BinaryRepeat(#NAME, dst, src0, src1,                                                      \
                                  fusedsl_cpu::PickMask<isSetMask>(#NAME, static_cast<const uint64_t*>(mask),  \
                                                                   fusedsl_cpu::LanesOf<T>()),                 \
                                  repeatTime, repeatParams, fusedsl_cpu::OP());                                \
    }
FUSEDSL_CPU_RELU_OP(AddRelu, OpAddRelu)
FUSEDSL_CPU_RELU_OP(SubRelu, OpSubRelu)
#undef FUSEDSL_CPU_RELU_OP

#define FUSEDSL_CPU_SHIFT(NAME, LEFT)                                                                          \
    template <typename T, bool isSetMask = true>                                                               \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,               \
                     const int32_t& count, FUSEDSL_CPU_SITE) {                                                 \
        ::fusedsl_cpu::AtSite fs_at(fs_site);                                                                  \
        fusedsl_cpu::ShiftCount(#NAME, dst, src, fusedsl_cpu::ShiftOp<T>{scalarValue, LEFT, false}, count);    \
    }                                                                                                          \
    template <typename T, bool isSetMask = true>                                                               \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, uint64_t mask, \
                     const uint8_t repeatTime, const UnaryRepeatParams& repeatParams, bool roundEn = false,    \
                     FUSEDSL_CPU_SITE) {                                                                       \
        ::fusedsl_cpu::AtSite fs_at(fs_site);                                                                  \
        fusedsl_cpu::ShiftRepeat(#NAME, dst, src, fusedsl_cpu::ShiftOp<T>{scalarValue, LEFT, roundEn}, mask,   \
                                 repeatTime, repeatParams);                                                    \
    }                                                                                                          \
    template <typename T, bool isSetMask = true>                                                               \
    inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue,               \
                     uint64_t mask[], const uint8_t repeatTime, const UnaryRepeatParams& repeatParams,         \
                     bool roundEn = false, FUSEDSL_CPU_SITE) {                                                 \
        ::fusedsl_cpu::AtSite fs_at(fs_site);                                                                  \
        fusedsl_cpu::ShiftRepeat(#NAME, dst, src, fusedsl_cpu::ShiftOp<T>{scalarValue, LEFT, roundEn},         \
                                 static_cast<const uint64_t*>(mask), repeatTime, repeatParams);                \
    }
FUSEDSL_CPU_SHIFT(ShiftLeft, true)
FUSEDSL_CPU_SHIFT(ShiftRight, false)
#undef FUSEDSL_CPU_SHIFT

// dst[i] = firstValue + i.
template <typename T>
inline void CreateVecIndex(LocalTensor<T> dst, const T& firstValue, uint32_t count, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    const char* api = "CreateVecIndex";
    CheckApi(api, TypeName<T>());
    if (count == 0) {
        return;
    }
    uint32_t d = DstOperand(api, "dst", dst, count);
    for (uint32_t i = 0; i < count; ++i) {
        StoreAs(Bytes(dst) + i * sizeof(T), FromCompute<T>(ToCompute(firstValue) + static_cast<Compute<T>>(i)));
    }
    MarkWritten(d, static_cast<uint64_t>(count) * sizeof(T));
    CountVector(static_cast<uint64_t>(count) * sizeof(T));
}

// ---- the compare-mask register: Compare into it, GetCmpMask/SetCmpMask, Select from it -------

}  // namespace AscendC

namespace fusedsl_cpu {

// The core's CMPMASK register, reset with the rest of the core for every block.
inline std::array<uint8_t, 16> CmpRegister() {
    std::array<uint8_t, 16> reg{};
    std::memcpy(reg.data(), CurCore().cmp_mask, 16);
    return reg;
}

inline void SetCmpRegister(const uint8_t* bits) {
    std::memcpy(CurCore().cmp_mask, bits, 16);
}

}  // namespace fusedsl_cpu

namespace AscendC {

// One repeat of src0 <cmpMode> src1 into the 128-bit CMPMASK register (lanes the mask leaves
// out give 0).  Compare（结果存入寄存器）.md: 2201 and 2002, half/float.
template <typename T, bool isSetMask = true, typename M>
inline void CompareToRegister(const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode, M mask,
                              const BinaryRepeatParams& p) {
    using namespace fusedsl_cpu;
    const char* api = "Compare";
    if (Target().arch == 1001) {
        Fail("Compare (result in the CMPMASK register) is not available on %s", Target().name);
    }
    static_assert(std::is_same_v<T, half> || std::is_same_v<T, float>, "Compare into CMPMASK takes half/float");
    CheckApi(api, TypeName<T>());
    const RepOperand ops[2] = {Operand(api, "src0", src0, p.src0BlkStride, p.src0RepStride, true),
                               Operand(api, "src1", src1, p.src1BlkStride, p.src1RepStride, true)};
    Mask m = PickMask<isSetMask>(api, mask, LanesOf<T>());
    std::array<uint8_t, 16> bits{};
    uint32_t j = 0;
    Mask active = m;
    std::vector<uint32_t> lanes_on;
    for (uint32_t lane = 0; lane < LanesOf<T>(); ++lane) {
        if ((active.bits[lane / 64] >> (lane % 64)) & 1) {
            lanes_on.push_back(lane);
        }
    }
    ForEachLane(api, ops, m, LanesOf<T>(), 1, [&](uint8_t* const* q) {
        uint32_t lane = lanes_on[j++];
        if (CompareValues(ToWide(LoadAs<T>(q[0])), ToWide(LoadAs<T>(q[1])), cmpMode)) {
            bits[lane / 8] = static_cast<uint8_t>(bits[lane / 8] | (1u << (lane % 8)));
        }
    });
    SetCmpRegister(bits.data());
}

template <typename T, bool isSetMask = true>
inline void Compare(const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode, const uint64_t mask,
                    const BinaryRepeatParams& repeatParams, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    CompareToRegister<T, isSetMask>(src0, src1, cmpMode, mask, repeatParams);
}

template <typename T, bool isSetMask = true>
inline void Compare(const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode, const uint64_t mask[],
                    const BinaryRepeatParams& repeatParams, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    CompareToRegister<T, isSetMask>(src0, src1, cmpMode, mask, repeatParams);
}

// The register's 128 bits (16 bytes) into / from UB.
template <typename T>
inline void GetCmpMask(const LocalTensor<T>& dst, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    uint32_t d = CheckUb("GetCmpMask", "dst", dst.fs_addr, dst.GetLength(), 16, sizeof(T));
    std::memcpy(CurCore().ub.data() + d, CmpRegister().data(), 16);
    MarkWritten(d, 16);
}

template <typename T>
inline void SetCmpMask(const LocalTensor<T>& src, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    uint32_t s = CheckUb("SetCmpMask", "src", src.fs_addr, src.GetLength(), 16, sizeof(T));
    CheckWritten("SetCmpMask", "src", s, 16);
    SetCmpRegister(CurCore().ub.data() + s);
}

// Select without a selMask operand: mode 0 takes its bits from CMPMASK (SetCmpMask or a
// Compare into the register) and the lanes from the vector mask (SetVectorMask).
template <typename T, SELMODE selMode>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                   uint8_t repeatTime, const BinaryRepeatParams& repeatParams, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    static_assert(selMode == SELMODE::VSEL_CMPMASK_SPR, "Select without selMask reads CMPMASK: mode 0 only");
    using namespace fusedsl_cpu;
    const char* api = "Select";
    CheckApi(api, TypeName<T>());
    const RepOperand ops[3] = {Operand(api, "dst", dst, repeatParams.dstBlkStride, repeatParams.dstRepStride, false),
                               Operand(api, "src0", src0, repeatParams.src0BlkStride, repeatParams.src0RepStride, true),
                               Operand(api, "src1", src1, repeatParams.src1BlkStride, repeatParams.src1RepStride, true)};
    Mask m = PickMask<false>(api, uint64_t{0}, LanesOf<T>());
    const std::array<uint8_t, 16> bits = CmpRegister();
    uint32_t idx = 0;
    std::vector<uint32_t> lanes_on;
    for (uint32_t lane = 0; lane < LanesOf<T>(); ++lane) {
        if ((m.bits[lane / 64] >> (lane % 64)) & 1) {
            lanes_on.push_back(lane);
        }
    }
    if (m.counter != 0 || lanes_on.empty()) {
        Fail("Select (mode 0 from CMPMASK): set a normal-mode vector mask with SetVectorMask first");
    }
    ForEachLane(api, ops, m, LanesOf<T>(), repeatTime, [&](uint8_t* const* q) {
        uint32_t lane = lanes_on[idx++ % lanes_on.size()];
        bool pick0 = (bits[lane / 8] >> (lane % 8)) & 1;
        StoreAs(q[0], LoadAs<T>(pick0 ? q[1] : q[2]));
    });
}

}  // namespace AscendC

// ---- Axpy: dst += scalar * src (src/scalar type U, dst type T) ---------------------------------

namespace fusedsl_cpu {

// Axpy.md: (U, T) = (half, half), (float, float), (half, float) on every chip modelled.  The
// product and the sum are computed in float and rounded to T once.
template <typename T, typename U>
inline void CheckAxpyTypes() {
    static_assert((std::is_same_v<T, half> && std::is_same_v<U, half>) ||
                      (std::is_same_v<T, float> && std::is_same_v<U, float>) ||
                      (std::is_same_v<T, float> && std::is_same_v<U, half>),
                  "Axpy<T, U>: (dst, src) must be (half, half), (float, float) or (float, half)");
}

template <typename T, typename U>
inline T AxpyValue(T d, U s, U a) {
    return FromCompute<T>(static_cast<float>(ToCompute(d)) +
                          static_cast<float>(ToCompute(a)) * static_cast<float>(ToCompute(s)));
}

}  // namespace fusedsl_cpu

namespace AscendC {

template <typename T, typename U>
inline void Axpy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const U& scalarValue, const int32_t& count,
                 FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    CheckAxpyTypes<T, U>();
    const char* api = "Axpy";
    if (!CheckCount(api, count)) {
        return;
    }
    uint32_t d = SrcOperand(api, "dst", dst, count);   // dst is read too: dst += scalar * src
    uint32_t s = SrcOperand(api, "src", src, count);
    if (d != s) {
        CheckOverlap(api, "src", d, static_cast<uint64_t>(count) * sizeof(T), s, static_cast<uint64_t>(count) * sizeof(U));
    }
    for (int32_t i = 0; i < count; ++i) {
        T v = AxpyValue(LoadAs<T>(Bytes(dst) + i * sizeof(T)), LoadAs<U>(Bytes(src) + i * sizeof(U)), scalarValue);
        StoreAs(Bytes(dst) + i * sizeof(T), v);
    }
    MarkWritten(d, static_cast<uint64_t>(count) * sizeof(T));
    CountVector(static_cast<uint64_t>(count) * sizeof(T));
}

template <typename T, typename U, bool isSetMask = true, typename M>
inline void AxpyRepeat(const LocalTensor<T>& dst, const LocalTensor<U>& src, const U& scalarValue, M mask,
                       const uint8_t repeatTime, const UnaryRepeatParams& p) {
    using namespace fusedsl_cpu;
    CheckAxpyTypes<T, U>();
    const char* api = "Axpy";
    constexpr uint32_t lanes = 256 / (sizeof(T) > sizeof(U) ? sizeof(T) : sizeof(U));
    const RepOperand ops[3] = {Operand(api, "dst", dst, p.dstBlkStride, p.dstRepStride, false),
                               Operand(api, "src", src, p.srcBlkStride, p.srcRepStride, true),
                               Operand(api, "dst", dst, p.dstBlkStride, p.dstRepStride, true)};
    Mask m = PickMask<isSetMask>(api, mask, lanes);
    ForEachLane(api, ops, m, lanes, repeatTime, [&](uint8_t* const* q) {
        StoreAs(q[0], AxpyValue(LoadAs<T>(q[2]), LoadAs<U>(q[1]), scalarValue));
    });
}

template <typename T, typename U, bool isSetMask = true>
inline void Axpy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const U& scalarValue, uint64_t mask,
                 const uint8_t repeatTime, const UnaryRepeatParams& repeatParams, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    AxpyRepeat<T, U, isSetMask>(dst, src, scalarValue, mask, repeatTime, repeatParams);
}

template <typename T, typename U, bool isSetMask = true>
inline void Axpy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const U& scalarValue, uint64_t mask[],
                 const uint8_t repeatTime, const UnaryRepeatParams& repeatParams, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    AxpyRepeat<T, U, isSetMask>(dst, src, scalarValue, static_cast<const uint64_t*>(mask), repeatTime, repeatParams);
}

}  // namespace AscendC

// ---- Gather: dst[i] = the element at byte srcBaseAddr + srcOffset[i] of src -------------------

namespace AscendC {

template <typename T>
inline void Gather(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint32_t>& srcOffset,
                   const uint32_t srcBaseAddr, const uint32_t count, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    const char* api = "Gather";
    CheckApi(api, TypeName<T>());
    if (count == 0) {
        return;
    }
    uint32_t d = DstOperand(api, "dst", dst, count);
    uint32_t s = CheckUb(api, "src", src.fs_addr, src.GetLength(), 0, sizeof(T));
    uint32_t o = SrcOperand(api, "srcOffset", srcOffset, count);
    if (d == s) {
        Fail("Gather: dst and src are the same memory (UB offset %u); use separate tensors", d);
    }
    Core& c = CurCore();
    std::vector<uint8_t> out(static_cast<size_t>(count) * sizeof(T));
    for (uint32_t i = 0; i < count; ++i) {
        uint64_t at = static_cast<uint64_t>(srcBaseAddr) + LoadAs<uint32_t>(c.ub.data() + o + 4ull * i);
        if (at % sizeof(T) != 0) {
            Fail("Gather: srcBaseAddr + srcOffset[%u] = %llu bytes is not a multiple of sizeof(%s)", i,
                 static_cast<unsigned long long>(at), TypeName<T>());
        }
        if (s + at + sizeof(T) > c.ub_bytes) {
            Fail("Gather: srcBaseAddr + srcOffset[%u] = %llu bytes from src (UB offset %u) is past the end of UB", i,
                 static_cast<unsigned long long>(at), s);
        }
        CheckWritten(api, "src", static_cast<uint32_t>(s + at), sizeof(T));
        std::memcpy(out.data() + static_cast<size_t>(i) * sizeof(T), c.ub.data() + s + at, sizeof(T));
    }
    c.cur_api = api;
    std::memcpy(c.ub.data() + d, out.data(), out.size());
    MarkWritten(d, out.size());
    CountVector(out.size());
}

}  // namespace AscendC

// ---- Gatherb: 32-byte blocks of src at the byte offsets in `offset` (8 per repeat) ------------

namespace AscendC {

struct GatherRepeatParams {
    GatherRepeatParams() = default;
    GatherRepeatParams(const uint8_t dstBlkStrideIn, const uint8_t dstRepStrideIn)
        : dstRepStride(dstRepStrideIn), dstBlkStride(dstBlkStrideIn) {}

    uint32_t blockNumber = DEFAULT_BLK_NUM;
    uint16_t dstRepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t dstBlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src0BlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src1BlkStride = DEFAULT_BLK_STRIDE;
    uint8_t src0RepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src1RepStride = DEFAULT_REPEAT_STRIDE;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
};

template <typename T>
inline void Gatherb(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint32_t>& offset,
                    const uint8_t repeatTime, const GatherRepeatParams& repeatParams, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    const char* api = "Gatherb";
    CheckApi(api, TypeName<T>());
    if (repeatTime == 0) {
        return;
    }
    const uint64_t blk = repeatParams.dstBlkStride == 0 ? 1 : repeatParams.dstBlkStride;   // 0 acts as 1
    const uint64_t span = ((repeatTime - 1ull) * repeatParams.dstRepStride + 7 * blk + 1) * 32;
    uint32_t d = CheckUb(api, "dst", dst.fs_addr, dst.GetLength(), span, sizeof(T));
    uint32_t s = CheckUb(api, "src", src.fs_addr, src.GetLength(), 0, sizeof(T));
    uint32_t o = SrcOperand(api, "offset", offset, 8ull * repeatTime);
    if (d == s) {
        Fail("Gatherb: dst and src are the same memory (UB offset %u); use separate tensors", d);
    }
    Core& c = CurCore();
    std::vector<std::pair<uint64_t, std::array<uint8_t, 32>>> blocks;
    for (uint32_t r = 0; r < repeatTime; ++r) {
        for (uint32_t k = 0; k < 8; ++k) {
            uint64_t at = LoadAs<uint32_t>(c.ub.data() + o + 4ull * (r * 8 + k));
            if ((s + at) % 32 != 0 || s + at + 32 > c.ub_bytes) {
                Fail("Gatherb: offset[%u] = %llu bytes puts a block at UB %llu, which must be 32-byte aligned and "
                     "inside UB", r * 8 + k, static_cast<unsigned long long>(at),
                     static_cast<unsigned long long>(s + at));
            }
            CheckWritten(api, "src", static_cast<uint32_t>(s + at), 32);
            std::array<uint8_t, 32> b;
            std::memcpy(b.data(), c.ub.data() + s + at, 32);
            blocks.push_back({d + (static_cast<uint64_t>(r) * repeatParams.dstRepStride + k * blk) * 32, b});
        }
    }
    c.cur_api = api;
    for (auto& b : blocks) {
        std::memcpy(c.ub.data() + b.first, b.second.data(), 32);
        MarkWritten(static_cast<uint32_t>(b.first), 32);
    }
    St().vector_instructions += 1;
    St().vector_repeats += repeatTime;
}

}  // namespace AscendC

// fusedsl CPU implementation of the Ascend C API: cache control, GM initialisation, kernel
// assertions and tensor dumps (the utilities CANN's vector samples use).
#pragma once

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
inline void DataCacheCleanAndInvalid(const GlobalTensor<T>& dst) {
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
inline void DataCacheCleanAndInvalid(const GlobalTensor<T>& dst) {
    fusedsl_cpu::CleanCache("DataCacheCleanAndInvalid", reinterpret_cast<const uint8_t*>(dst.fs_addr),
                            entireType == CacheLine::ENTIRE_DATA_CACHE);
}

// The UB form keeps the scalar cache coherent with UB; the CPU has no such cache.
template <typename T, CacheLine entireType, DcciDst dcciDst>
inline void DataCacheCleanAndInvalid(const LocalTensor<T>& dst) {
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

// A failed kernel ASSERT stops the block with the expression and its place, as the device's
// assertion does (the launch reports it like any broken rule).
#ifndef ASSERT
#define ASSERT(expr) ::fusedsl_cpu::KernelAssert(static_cast<bool>(expr), #expr, __FILE__, __LINE__)
#endif

namespace AscendC {

// ---- InitGlobalMemory: fill `size` GM elements with a value (a DMA write) ---------------------

template <typename T>
inline void InitGlobalMemory(GlobalTensor<T>& gmWorkspaceAddr, const uint64_t size, const T value) {
    using namespace fusedsl_cpu;
    const char* api = "InitGlobalMemory";
    CurCore();
    if (size == 0) {
        return;
    }
    GmBuffer* buf = CheckGm(api, gmWorkspaceAddr, size * sizeof(T), true);
    auto p = reinterpret_cast<uint8_t*>(gmWorkspaceAddr.fs_addr);
    NoteGmWrite(api, buf, p, size * sizeof(T));
    for (uint64_t i = 0; i < size; ++i) {
        std::memcpy(p + i * sizeof(T), &value, sizeof(T));
    }
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
inline void Copy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count) {
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
                 const CopyRepeatParams& repeatParams) {
    CopyRepeatForm<T, isSetMask>(dst, src, mask, repeatTime, repeatParams);
}

template <typename T, bool isSetMask = true>
inline void Copy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[], const uint8_t repeatTime,
                 const CopyRepeatParams& repeatParams) {
    CopyRepeatForm<T, isSetMask>(dst, src, mask, repeatTime, repeatParams);
}

// ---- DumpTensor -------------------------------------------------------------------------------

struct ShapeInfo {
    uint8_t shapeDim = 0;
    uint32_t shape[8] = {};
};

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

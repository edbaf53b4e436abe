// fusedsl CPU implementation of the Ascend C API: DataCopy and DataCopyPad (ASCENDC.md §2.2).
//
// Unit conventions, as on the device: DataCopy's DataCopyParams count 32-byte blocks on both
// sides; DataCopyPad counts blockLen and the GM-side stride in bytes and the UB-side stride in
// 32-byte blocks.
#pragma once

#include "tensor.h"

namespace AscendC {

struct DataCopyParams {
    uint16_t blockCount = 1;
    uint16_t blockLen = 0;
    union {
        uint16_t srcStride = 0;
        uint16_t srcGap;
    };
    union {
        uint16_t dstStride = 0;
        uint16_t dstGap;
    };

    DataCopyParams() = default;
    DataCopyParams(uint16_t count, uint16_t len, uint16_t srcStrideIn, uint16_t dstStrideIn)
        : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn) {}
};

struct DataCopyExtParams {
    uint16_t blockCount = 1;
    uint32_t blockLen = 0;
    uint32_t srcStride = 0;
    uint32_t dstStride = 0;
    uint32_t rsv = 0;

    DataCopyExtParams() = default;
    // All five arguments, as CANN's constructor: `{1, len, 0, 0}` then means DataCopyParams only.
    DataCopyExtParams(uint16_t count, uint32_t len, uint32_t srcStrideIn, uint32_t dstStrideIn, uint32_t rsvIn)
        : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn), rsv(rsvIn) {}
};

template <typename T>
struct DataCopyPadExtParams {
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    T paddingValue = T(0);

    DataCopyPadExtParams() = default;
    DataCopyPadExtParams(bool isPadIn, uint8_t left, uint8_t right, T value)
        : isPad(isPadIn), leftPadding(left), rightPadding(right), paddingValue(value) {}
};

struct DataCopyPadParams {
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    uint64_t paddingValue = 0;

    DataCopyPadParams() = default;
    DataCopyPadParams(bool isPadIn, uint8_t left, uint8_t right, uint64_t value)
        : isPad(isPadIn), leftPadding(left), rightPadding(right), paddingValue(value) {}
};

}  // namespace AscendC

namespace fusedsl_cpu {

using AscendC::DataCopyExtParams;
using AscendC::DataCopyParams;
using AscendC::DataCopyPadExtParams;

// DataCopy to GM moves whole 32-byte blocks, so a block whose meaningful part is shorter
// (a reduction's one result, a row's last block) carries bytes nobody wrote: that is the
// idiom, not a bug.  A block with no written byte at all still is one.
inline void CheckWrittenBlocks(const char* api, const char* role, uint32_t off, uint64_t bytes) {
    Core& c = CurCore();
    for (uint64_t b = 0; b < bytes; b += 32) {
        uint64_t n = std::min<uint64_t>(32, bytes - b);
        if (std::memchr(c.written.data() + off + b, 1, n) == nullptr) {
            CheckWritten(api, role, static_cast<uint32_t>(off + b), n);
        }
    }
    c.cur_api = api;
    PipeRead(off, bytes);
}

// Rule 3: the plain DataCopy moves whole 32-byte blocks only.
// int4b_t counts 4-bit elements: 64 to a block (asc-devkit kernel_operator_data_copy_intf_impl.h: "DataCopy
// count ... should be 32B align", count % ONE_BLK_FP4_NUM for int4b_t).
template <typename T>
inline void Check32(const char* api, uint64_t count) {
    uint64_t bytes = BytesOf<T>(count);
    if constexpr (kIsB4<T>) {
        if (count % 64 != 0) {
            Fail("%s: count = %llu int4b_t elements is not a multiple of 64 (one 32-byte block holds 64 4-bit "
                 "elements); the NPU would silently copy only %llu elements — pad the length", api,
                 static_cast<unsigned long long>(count), static_cast<unsigned long long>(count / 64 * 64));
        }
        return;
    }
    if (bytes % 32 == 0) {
        return;
    }
    const char* fix = Target().has_datacopypad ? "use DataCopyPad or pad the length"
                                               : "pad the length (DataCopyPad is not available on this target)";
    Fail("%s: count*sizeof(%s) = %llu bytes is not a multiple of 32; the NPU would silently copy only %llu "
         "bytes — %s", api, TypeName<T>(), static_cast<unsigned long long>(bytes),
         static_cast<unsigned long long>(bytes / 32 * 32), fix);
}

// A strided DataCopy as (rows, row bytes, source pitch, destination pitch) in bytes.
struct Rows {
    uint64_t count;
    uint64_t len;
    uint64_t src_pitch;
    uint64_t dst_pitch;

    uint64_t SrcSpan() const { return count ? (count - 1) * src_pitch + len : 0; }
    uint64_t DstSpan() const { return count ? (count - 1) * dst_pitch + len : 0; }
};

inline Rows BlockRows(const DataCopyParams& p) {
    uint64_t len = p.blockLen * 32ull;
    return Rows{p.blockCount, len, len + p.srcStride * 32ull, len + p.dstStride * 32ull};
}

// The L1 offset of `p` when it points into this core's L1 (the cube's A1/B1 positions).
inline bool InL1(const void* p, uint64_t* at) {
    Core& c = CurCore();
    auto b = static_cast<const uint8_t*>(p);
    if (c.local.empty() || b < c.local.data() + c.local_at[kMemL1] || b >= c.local.data() + c.local_at[kMemL1 + 1]) {
        return false;
    }
    *at = static_cast<uint64_t>(b - c.local.data());
    return true;
}

// GM -> L1 (the same DataCopy on an A1/B1 tensor): plain rows, DataCopyParams in 32-byte blocks.
template <typename T>
inline void CopyGmToL1(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const Rows& r, uint64_t at) {
    const char* api = "DataCopy(GM->L1)";
    Core& c = CurCore();
    if (RT().kernel_mode == KernelMode::AIV_MODE && Target().separated) {
        Fail("%s: a vector-only kernel (AIV_MODE, __vector__) runs on %s's vector cores, which have no L1; launch it "
             "as a cube (__cube__) or mixed (__mix__) kernel", api, Target().name);
    }
    if ((at - c.local_at[kMemL1]) % 32 != 0) {
        Fail("%s: dst starts at L1 offset %llu, which is not 32-byte aligned", api,
             static_cast<unsigned long long>(at - c.local_at[kMemL1]));
    }
    if (r.DstSpan() > dst.GetLength()) {
        Fail("%s: dst needs %llu bytes but the LocalTensor has only %u", api,
             static_cast<unsigned long long>(r.DstSpan()), dst.GetLength());
    }
    if (at + r.DstSpan() > c.local_at[kMemL1 + 1]) {
        Fail("%s: dst runs past the end of L1", api);
    }
    CheckGm(api, src, r.SrcSpan(), true);
    auto s = reinterpret_cast<const uint8_t*>(src.fs_addr);
    CheckDmaRead(api, s, r.SrcSpan());
    for (uint64_t i = 0; i < r.count; ++i) {
        std::memcpy(c.local.data() + at + i * r.dst_pitch, s + i * r.src_pitch, r.len);
        std::memset(c.local_written.data() + at + i * r.dst_pitch, 1, r.len);
    }
    St().gm_bytes_read += r.count * r.len;
}

template <typename T>
inline void CopyGmToUb(const char* api, const LocalTensor<T>& dst, const GlobalTensor<T>& src, const Rows& r) {
    CheckApi("DataCopy", MoveTypeName<T>());
    if (r.count == 0 || r.len == 0) {
        return;
    }
    uint64_t l1_at = 0;
    if (InL1(dst.fs_addr, &l1_at)) {
        CopyGmToL1(dst, src, r, l1_at);
        return;
    }
    OnPipe mte2(PIPE_MTE2);
    uint32_t d = CheckUb(api, "dst", dst.fs_addr, dst.GetLength(), r.DstSpan(), sizeof(T));
    CheckGm(api, src, r.SrcSpan(), true);
    auto s = reinterpret_cast<const uint8_t*>(src.fs_addr);
    CheckDmaRead(api, s, r.SrcSpan());
    uint8_t* ub = CurCore().ub.data();
    for (uint64_t i = 0; i < r.count; ++i) {
        std::memcpy(ub + d + i * r.dst_pitch, s + i * r.src_pitch, r.len);
        MarkWritten(static_cast<uint32_t>(d + i * r.dst_pitch), r.len);
    }
    St().gm_bytes_read += r.count * r.len;
}

// UB -> GM store, or atomic add when SetAtomicAdd is on.
template <typename T>
inline void StoreGm(const char* api, uint8_t* gm, const uint8_t* ub, uint64_t bytes) {
    Core& c = CurCore();
    if (!c.atomic_add) {
        std::memcpy(gm, ub, bytes);
        return;
    }
    if (std::strcmp(c.atomic_type, TypeName<T>()) != 0) {
        Fail("%s: SetAtomicAdd<%s>() is active but this copy moves %s; the atomic type must match", api,
             c.atomic_type, TypeName<T>());
    }
    for (uint64_t i = 0; i + sizeof(T) <= bytes; i += sizeof(T)) {
        T a;
        T b;
        std::memcpy(&a, gm + i, sizeof(T));
        std::memcpy(&b, ub + i, sizeof(T));
        auto x = ToCompute(a);
        auto y = ToCompute(b);
        T r = c.atomic_op == 1 ? FromCompute<T>(x > y || y != y ? (y != y ? y : x) : y)
              : c.atomic_op == 2 ? FromCompute<T>(x < y || y != y ? (y != y ? y : x) : y)
                                 : FromCompute<T>(x + y);
        std::memcpy(gm + i, &r, sizeof(T));
    }
}

// L1 -> GM (the same DataCopy from an A1/B1 tensor): plain rows, DataCopyParams in 32-byte blocks.
template <typename T>
inline void CopyL1ToGm(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const Rows& r, uint64_t at) {
    const char* api = "DataCopy(L1->GM)";
    Core& c = CurCore();
    if (RT().kernel_mode == KernelMode::AIV_MODE && Target().separated) {
        Fail("%s: a vector-only kernel (AIV_MODE, __vector__) runs on %s's vector cores, which have no L1; launch it "
             "as a cube (__cube__) or mixed (__mix__) kernel", api, Target().name);
    }
    if ((at - c.local_at[kMemL1]) % 32 != 0) {
        Fail("%s: src starts at L1 offset %llu, which is not 32-byte aligned", api,
             static_cast<unsigned long long>(at - c.local_at[kMemL1]));
    }
    if (r.SrcSpan() > src.GetLength() || at + r.SrcSpan() > c.local_at[kMemL1 + 1]) {
        Fail("%s: src needs %llu bytes but the LocalTensor has only %u", api,
             static_cast<unsigned long long>(r.SrcSpan()), src.GetLength());
    }
    GmBuffer* buf = CheckGm(api, dst, r.DstSpan(), true);
    auto g = reinterpret_cast<uint8_t*>(dst.fs_addr);
    for (uint64_t i = 0; i < r.count; ++i) {
        const uint8_t* from = c.local.data() + at + i * r.src_pitch;
        if (std::memchr(c.local_written.data() + at + i * r.src_pitch, 0, r.len) != nullptr) {
            Fail("%s: src reads L1 bytes that were never written; fill them (DataCopy, Fill) first", api);
        }
        NoteGmWrite(api, buf, g + i * r.dst_pitch, r.len, false, c.atomic_add ? nullptr : from);
        StoreGm<T>(api, g + i * r.dst_pitch, from, r.len);
    }
    St().gm_bytes_written += r.count * r.len;
}

template <typename T>
inline void CopyUbToGm(const char* api, const GlobalTensor<T>& dst, const LocalTensor<T>& src, const Rows& r) {
    CheckApi("DataCopy", MoveTypeName<T>());
    if (r.count == 0 || r.len == 0) {
        return;
    }
    uint64_t l1_at = 0;
    if (InL1(src.fs_addr, &l1_at)) {
        CopyL1ToGm(dst, src, r, l1_at);
        return;
    }
    OnPipe mte3(PIPE_MTE3);
    uint32_t s = CheckUb(api, "src", src.fs_addr, src.GetLength(), r.SrcSpan(), sizeof(T));
    GmBuffer* buf = CheckGm(api, dst, r.DstSpan(), true);
    auto g = reinterpret_cast<uint8_t*>(dst.fs_addr);
    const uint8_t* ub = CurCore().ub.data();
    for (uint64_t i = 0; i < r.count; ++i) {
        CheckWrittenBlocks(api, "src", static_cast<uint32_t>(s + i * r.src_pitch), r.len);
    }
    for (uint64_t i = 0; i < r.count; ++i) {
        NoteGmWrite(api, buf, g + i * r.dst_pitch, r.len, false,
                    CurCore().atomic_add ? nullptr : ub + s + i * r.src_pitch);
        StoreGm<T>(api, g + i * r.dst_pitch, ub + s + i * r.src_pitch, r.len);
    }
    St().gm_bytes_written += r.count * r.len;
}

template <typename T>
inline void CopyUbToUb(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src, const Rows& r) {
    CheckApi("DataCopy", MoveTypeName<T>());
    if (r.count == 0 || r.len == 0) {
        return;
    }
    uint32_t d = CheckUb(api, "dst", dst.fs_addr, dst.GetLength(), r.DstSpan(), sizeof(T));
    uint32_t s = CheckUb(api, "src", src.fs_addr, src.GetLength(), r.SrcSpan(), sizeof(T));
    // A move inside UB carries the "never written" marks along instead of failing, like a memory
    // checker's definedness: copying a whole buffer of which only part was filled is harmless
    // (CANN's matmul_async_iterate moves a full baseM x baseN tile whose tail rows GetTensorC left
    // unwritten, then stores only the valid rows); reading the moved bytes later still fails.
    Core& c = CurCore();
    uint8_t* ub = c.ub.data();
    uint8_t* w = c.written.data();
    for (uint64_t i = 0; i < r.count; ++i) {
        const uint32_t from = static_cast<uint32_t>(s + i * r.src_pitch);
        const uint32_t to = static_cast<uint32_t>(d + i * r.dst_pitch);
        c.cur_api = api;
        PipeRead(from, r.len);
        std::memmove(ub + to, ub + from, r.len);
        PipeWrite(to, r.len);
        std::memmove(w + to, w + from, r.len);
    }
}

inline void CheckPadParams(const char* api, const DataCopyExtParams& p, size_t elem) {
    if (p.blockCount > 4095) {
        Fail("%s: blockCount = %u exceeds 4095", api, p.blockCount);
    }
    if (p.blockLen > 2097151) {
        Fail("%s: blockLen = %u bytes exceeds 2097151", api, p.blockLen);
    }
    if (p.blockLen % elem != 0) {
        Fail("%s: blockLen = %u bytes is not a multiple of the element size %zu (blockLen counts bytes)", api,
             p.blockLen, elem);
    }
}

// DataCopy L1 -> bias table (cube.h): a C2 destination on a chip with a bias table.
template <typename D, typename S>
inline void CopyL1ToBias(const AscendC::LocalTensor<D>& dst, const AscendC::LocalTensor<S>& src, uint64_t count,
                         uint64_t block_bytes, uint64_t src_gap, uint64_t dst_gap);
inline bool IsBiasTable(TPosition pos) {
    return pos == TPosition::C2 && Target().separated;
}
// DataCopy L1 -> Fixpipe Buffer (cube.h): a C2PIPE2GM destination (per-channel quantisation parameters).
template <typename T>
inline void CopyL1ToFixpipeBuffer(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                                  uint64_t count, uint64_t block_bytes, uint64_t src_pitch, uint64_t dst_pitch);

}  // namespace fusedsl_cpu

namespace AscendC {

template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const uint32_t count, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    const char* api = "DataCopy(GM->UB)";
    fusedsl_cpu::Check32<T>(api, count);
    uint64_t bytes = fusedsl_cpu::BytesOf<T>(count);
    fusedsl_cpu::CopyGmToUb(api, dst, src, fusedsl_cpu::Rows{1, bytes, bytes, bytes});
}

template <typename T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    const char* api = "DataCopy(UB->GM)";
    fusedsl_cpu::Check32<T>(api, count);
    uint64_t bytes = fusedsl_cpu::BytesOf<T>(count);
    fusedsl_cpu::CopyUbToGm(api, dst, src, fusedsl_cpu::Rows{1, bytes, bytes, bytes});
}

template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    const char* api = "DataCopy(UB->UB)";
    uint64_t bytes = fusedsl_cpu::BytesOf<T>(count);
    if (fusedsl_cpu::IsBiasTable(dst.GetPosition())) {
        // The L1 -> BiasTable page: a count not a multiple of 32 bytes is rounded down to one.
        fusedsl_cpu::CopyL1ToBias(dst, src, 1, bytes / 32 * 32, 0, 0);
        return;
    }
    if (dst.GetPosition() == TPosition::C2PIPE2GM) {   // the L1 -> Fixpipe Buffer page: rounded down likewise
        fusedsl_cpu::CopyL1ToFixpipeBuffer(dst, src, 1, bytes / 32 * 32, 0, 0);
        return;
    }
    fusedsl_cpu::Check32<T>(api, count);
    fusedsl_cpu::CopyUbToUb(api, dst, src, fusedsl_cpu::Rows{1, bytes, bytes, bytes});
}

template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& params,
                     FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::CopyGmToUb("DataCopy(GM->UB)", dst, src, fusedsl_cpu::BlockRows(params));
}

template <typename T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& params,
                     FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::CopyUbToGm("DataCopy(UB->GM)", dst, src, fusedsl_cpu::BlockRows(params));
}

template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& params,
                     FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    if (fusedsl_cpu::IsBiasTable(dst.GetPosition())) {
        // The L1 -> BiasTable page (A2/A3): blockLen and dstGap count 64 bytes, srcGap 32.
        fusedsl_cpu::CopyL1ToBias(dst, src, params.blockCount, params.blockLen * 64ull, params.srcGap * 32ull,
                                  params.dstGap * 64ull);
        return;
    }
    if (dst.GetPosition() == TPosition::C2PIPE2GM) {
        // The L1 -> Fixpipe Buffer page (A2/A3): blockLen counts 128 bytes; srcGap (32-byte blocks) and dstGap
        // (128-byte blocks) run from one block's head to the next one's.
        fusedsl_cpu::CopyL1ToFixpipeBuffer(dst, src, params.blockCount, params.blockLen * 128ull,
                                           params.srcGap * 32ull, params.dstGap * 128ull);
        return;
    }
    fusedsl_cpu::CopyUbToUb("DataCopy(UB->UB)", dst, src, fusedsl_cpu::BlockRows(params));
}

// ---- slice DataCopy (DataCopy（GM与UB切片数据搬运）): per dimension d (0 innermost) the slice takes
// runs of burst elements (burstLen 32-byte blocks along dimension 0, 1 element along the others)
// from startIndex, `stride` elements apart, through endIndex; the source's runs go, in order, to
// the destination's.  Offsets are linear over the shapeValue of each dimension.

constexpr uint32_t K_MAX_DIM = 8;

struct SliceInfo {
    uint32_t startIndex = 0;
    uint32_t endIndex = 0;
    uint32_t stride = 0;
    uint32_t burstLen = 0;
    uint32_t shapeValue = 0;
};

}  // namespace AscendC

namespace fusedsl_cpu {

// The element offsets where each run of the slice starts, and the run length in elements.
template <typename T>
inline std::vector<uint64_t> SliceRuns(const char* api, const char* role, const AscendC::SliceInfo* info, uint32_t dims,
                                       uint64_t* run) {
    if (dims == 0 || dims > AscendC::K_MAX_DIM) {
        Fail("%s: dimValue = %u; it must be in [1, 8] (the API page)", api, dims);
    }
    std::vector<uint64_t> starts{0};
    uint64_t pitch = 1;
    for (uint32_t d = 0; d < dims; ++d) {
        const AscendC::SliceInfo& s = info[d];
        uint64_t burst = d == 0 ? static_cast<uint64_t>(s.burstLen) * 32 / sizeof(T) : 1;
        if (d > 0 && s.burstLen != 1) {
            Fail("%s: %sSliceInfo[%u].burstLen = %u; beyond the first dimension it must be 1 (the API page)", api,
                 role, d, s.burstLen);
        }
        if (burst == 0 || !(s.startIndex < s.endIndex || (s.startIndex == s.endIndex && burst == 1)) ||
            s.endIndex > s.shapeValue) {
            Fail("%s: %sSliceInfo[%u] = {%u, %u, %u, %u, %u}: it needs startIndex < endIndex <= shapeValue and a "
                 "non-zero burstLen (the API page)", api, role, d, s.startIndex, s.endIndex, s.stride, s.burstLen,
                 s.shapeValue);
        }
        uint64_t span = static_cast<uint64_t>(s.endIndex) - s.startIndex + 1;
        uint64_t step = burst + s.stride;
        uint64_t n = (span + s.stride) / step;
        if (n == 0 || (n - 1) * s.stride + n * burst != span) {
            Fail("%s: %sSliceInfo[%u] = {%u, %u, %u, %u, %u}: endIndex - startIndex + 1 must be (N - 1) * stride + "
                 "N * burst for a whole number N of runs (burst = %llu elements; the API page)", api, role, d,
                 s.startIndex, s.endIndex, s.stride, s.burstLen, s.shapeValue, static_cast<unsigned long long>(burst));
        }
        std::vector<uint64_t> next;
        for (uint64_t k = 0; k < n; ++k) {
            uint64_t first = s.startIndex + k * step;
            for (uint64_t e = 0; e < (d == 0 ? 1 : burst); ++e) {
                for (uint64_t base : starts) {
                    next.push_back(base + (first + e) * pitch);
                }
            }
        }
        if (d == 0) {
            *run = burst;
        }
        starts.swap(next);
        pitch *= s.shapeValue;
    }
    return starts;
}

template <typename T>
inline void SliceMatch(const char* api, const std::vector<uint64_t>& ds, uint64_t drun, const std::vector<uint64_t>& ss,
                       uint64_t srun) {
    if (ds.size() != ss.size() || drun != srun) {
        Fail("%s: the source slice has %zu runs of %llu elements, the destination %zu runs of %llu; they must match "
             "(equal burstLen, the same number of runs)", api, ss.size(), static_cast<unsigned long long>(srun),
             ds.size(), static_cast<unsigned long long>(drun));
    }
    if (drun * sizeof(T) % 32 != 0) {
        Fail("%s: a run of %llu elements is not a whole number of 32-byte blocks", api,
             static_cast<unsigned long long>(drun));
    }
}

}  // namespace fusedsl_cpu

namespace AscendC {

template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const SliceInfo dstSliceInfo[],
                     const SliceInfo srcSliceInfo[], const uint32_t dimValue = 1, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    const char* api = "DataCopy(GM->UB, SliceInfo)";
    uint64_t drun = 0, srun = 0;
    auto ds = fusedsl_cpu::SliceRuns<T>(api, "dst", dstSliceInfo, dimValue, &drun);
    auto ss = fusedsl_cpu::SliceRuns<T>(api, "src", srcSliceInfo, dimValue, &srun);
    fusedsl_cpu::SliceMatch<T>(api, ds, drun, ss, srun);
    uint64_t bytes = drun * sizeof(T);
    for (size_t i = 0; i < ds.size(); ++i) {
        fusedsl_cpu::CopyGmToUb(api, dst[static_cast<uint32_t>(ds[i])], src[ss[i]],
                                fusedsl_cpu::Rows{1, bytes, bytes, bytes});
    }
}

template <typename T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const SliceInfo dstSliceInfo[],
                     const SliceInfo srcSliceInfo[], const uint32_t dimValue = 1, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    const char* api = "DataCopy(UB->GM, SliceInfo)";
    uint64_t drun = 0, srun = 0;
    auto ds = fusedsl_cpu::SliceRuns<T>(api, "dst", dstSliceInfo, dimValue, &drun);
    auto ss = fusedsl_cpu::SliceRuns<T>(api, "src", srcSliceInfo, dimValue, &srun);
    fusedsl_cpu::SliceMatch<T>(api, ds, drun, ss, srun);
    uint64_t bytes = drun * sizeof(T);
    for (size_t i = 0; i < ds.size(); ++i) {
        fusedsl_cpu::CopyUbToGm(api, dst[ds[i]], src[static_cast<uint32_t>(ss[i])],
                                fusedsl_cpu::Rows{1, bytes, bytes, bytes});
    }
}

// GM -> UB.  Each block lands in UB as [leftPadding | blockLen bytes | rightPadding | dummy up
// to 32 B]; the whole padded row counts as written.  Pad values follow the API page: the
// first element of the block when both paddings are 0, else paddingValue when isPad, else the
// SetPadValue value, else undefined (0xFF bytes here).
template <typename T>
inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyExtParams& params,
                        const DataCopyPadExtParams<T>& padParams, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    const char* api = "DataCopyPad(GM->UB)";
    CheckApi("DataCopyPad", MoveTypeName<T>());
    CheckPadParams(api, params, sizeof(T));
    uint64_t left = padParams.leftPadding * sizeof(T);
    uint64_t right = padParams.rightPadding * sizeof(T);
    if (left > 32 || right > 32) {
        Fail("%s: leftPadding/rightPadding take %llu/%llu bytes; each may be at most 32 bytes", api,
             static_cast<unsigned long long>(left), static_cast<unsigned long long>(right));
    }
    if (params.blockCount == 0 || params.blockLen == 0) {
        return;
    }
    uint64_t row = RoundUp(left + params.blockLen + right, 32);
    uint64_t dst_pitch = row + params.dstStride * 32ull;
    uint64_t src_pitch = params.blockLen + static_cast<uint64_t>(params.srcStride);
    uint64_t dst_span = (params.blockCount - 1) * dst_pitch + row;
    uint64_t src_span = (params.blockCount - 1) * src_pitch + params.blockLen;
    OnPipe mte2(PIPE_MTE2);
    uint32_t d = CheckUb(api, "dst", dst.fs_addr, dst.GetLength(), dst_span, sizeof(T));
    CheckGm(api, src, src_span, false);
    Core& c = CurCore();
    auto s = reinterpret_cast<const uint8_t*>(src.fs_addr);
    CheckDmaRead(api, s, src_span);
    for (uint64_t i = 0; i < params.blockCount; ++i) {
        uint8_t* out = c.ub.data() + d + i * dst_pitch;
        const uint8_t* in = s + i * src_pitch;
        T fill;
        bool defined = true;
        if (left == 0 && right == 0) {
            std::memcpy(&fill, in, sizeof(T));
        } else if (padParams.isPad) {
            fill = padParams.paddingValue;
        } else if (c.pad_value_set) {
            std::memcpy(&fill, &c.pad_value, sizeof(T));
        } else {
            defined = false;
        }
        for (uint64_t k = 0; k + sizeof(T) <= row; k += sizeof(T)) {
            if (defined) {
                std::memcpy(out + k, &fill, sizeof(T));
            } else {
                std::memset(out + k, 0xFF, sizeof(T));
            }
        }
        std::memcpy(out + left, in, params.blockLen);
        MarkWritten(static_cast<uint32_t>(d + i * dst_pitch), row);
    }
    St().gm_bytes_read += static_cast<uint64_t>(params.blockCount) * params.blockLen;
}

// UB -> GM: each block is read from a 32-byte aligned UB row and written to GM exactly.
template <typename T>
inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyExtParams& params,
                        FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    const char* api = "DataCopyPad(UB->GM)";
    CheckApi("DataCopyPad", MoveTypeName<T>());
    CheckPadParams(api, params, sizeof(T));
    if (params.blockCount == 0 || params.blockLen == 0) {
        return;
    }
    uint64_t row = RoundUp(params.blockLen, 32);
    uint64_t src_pitch = row + params.srcStride * 32ull;
    uint64_t dst_pitch = params.blockLen + static_cast<uint64_t>(params.dstStride);
    uint64_t src_span = (params.blockCount - 1) * src_pitch + params.blockLen;
    uint64_t dst_span = (params.blockCount - 1) * dst_pitch + params.blockLen;
    OnPipe mte3(PIPE_MTE3);
    uint32_t s = CheckUb(api, "src", src.fs_addr, src.GetLength(), src_span, sizeof(T));
    GmBuffer* buf = CheckGm(api, dst, dst_span, false);
    Core& c = CurCore();
    auto g = reinterpret_cast<uint8_t*>(dst.fs_addr);
    for (uint64_t i = 0; i < params.blockCount; ++i) {
        CheckWritten(api, "src", static_cast<uint32_t>(s + i * src_pitch), params.blockLen);
    }
    for (uint64_t i = 0; i < params.blockCount; ++i) {
        NoteGmWrite(api, buf, g + i * dst_pitch, params.blockLen, false,
                    c.atomic_add ? nullptr : c.ub.data() + s + i * src_pitch);
        StoreGm<T>(api, g + i * dst_pitch, c.ub.data() + s + i * src_pitch, params.blockLen);
    }
    St().gm_bytes_written += static_cast<uint64_t>(params.blockCount) * params.blockLen;
}

// Legacy overloads (DataCopyParams with blockLen in bytes, DataCopyPadParams).
template <typename T>
inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& params,
                        const DataCopyPadParams& padParams, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    T value;
    std::memset(&value, 0, sizeof(T));
    std::memcpy(&value, &padParams.paddingValue, sizeof(T) < 8 ? sizeof(T) : 8);
    DataCopyPad(dst, src, DataCopyExtParams(params.blockCount, params.blockLen, params.srcStride, params.dstStride, 0),
                DataCopyPadExtParams<T>(padParams.isPad, padParams.leftPadding, padParams.rightPadding, value));
}

template <typename T>
inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& params,
                        FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    DataCopyPad(dst, src, DataCopyExtParams(params.blockCount, params.blockLen, params.srcStride, params.dstStride, 0));
}

}  // namespace AscendC

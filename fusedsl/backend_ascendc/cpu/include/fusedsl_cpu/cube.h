// fusedsl CPU implementation of the Ascend C basic cube API (matrix compute, ISASI):
// LocalTensor(TPosition, addr, tileSize) on any memory, LocalMemAllocator<Hardware::L1/L0A/L0B/L0C>,
// DataCopy GM -> L1 with Nd2NzParams, LoadData L1 -> L0A/L0B with LoadData2DParams, Mmad into L0C
// and Fixpipe L0C -> GM with FixpipeParamsV220.
//
// Layouts (asc-devkit docs, 矩阵计算 / 数据搬运): a fractal is 16 rows of C0 = 32 B / sizeof(T)
// elements (512 B).  NZ (L1): element (r, c) of a matrix padded to H rows sits at
// (c / C0) * H * C0 + r * C0 + c % C0.  L0A ("Zz"): fractal (r / 16, c / C0) is number
// (r / 16) * K1 + c / C0 (K1 = ceil(k / C0)), row-major inside.  L0B ("Zn"): fractal (k / C0, n / 16)
// is number (k / C0) * N1 + n / 16, each holding B transposed (16 n-rows of C0 k values).  L0C
// (NZ, 16 x 16 fractals of the accumulator type): (r, c) at ((c / 16) * M1 + r / 16) * 256 +
// (r % 16) * 16 + c % 16.  Each API checks its operands' memories, 32-byte alignment, bounds,
// uninitialised reads and the chip's type combinations; cube instructions run in program order on
// the CPU, so flags between MTE2/MTE1/M/FIX change no data.
#pragma once

#include "cube_mac.h"
#include "data_copy.h"

namespace fusedsl_cpu {

// Where a local address is: its memory (-1 UB, -2 nowhere) and byte offset in it.
inline int WhichMem(const void* addr, uint32_t* off) {
    Core& c = CurCore();
    auto p = static_cast<const uint8_t*>(addr);
    if (p >= c.ub.data() && p < c.ub.data() + c.ub_bytes) {
        *off = static_cast<uint32_t>(p - c.ub.data());
        return -1;
    }
    if (p >= c.local.data() && p < c.local.data() + c.local.size()) {
        auto at = static_cast<uint32_t>(p - c.local.data());
        for (int m = kNumLocalMems - 1; m >= 0; --m) {
            if (at >= c.local_at[m]) {
                *off = at - c.local_at[m];
                return m;
            }
        }
    }
    return -2;
}

inline uint8_t* LocalAddress(const char* api, TPosition pos, uint64_t addr, uint64_t bytes) {
    int m = MemOfPosition(pos);
    uint64_t cap = m < 0 ? CurCore().ub_bytes : LocalMemBytes(m);
    if (m < 0) {
        CheckCoreHasUb(api);
    }
    if (addr % 32 != 0) {
        Fail("%s: address %llu of %s is not 32-byte aligned", api, static_cast<unsigned long long>(addr),
             PositionName(pos));
    }
    if (addr + bytes > cap) {
        Fail("%s: [%llu, %llu) runs past the %llu bytes of %s (position %s) on %s", api,
             static_cast<unsigned long long>(addr), static_cast<unsigned long long>(addr + bytes),
             static_cast<unsigned long long>(cap), LocalMemName(m), PositionName(pos), Target().name);
    }
    if (m < 0) {
        Core& c = CurCore();
        c.ub_high_water = std::max<uint64_t>(c.ub_high_water, addr + bytes);
        return c.ub.data() + addr;
    }
    return LocalMemBase(m) + addr;
}

inline uint64_t LocalOffset(const void* p) {
    uint32_t off = 0;
    if (WhichMem(p, &off) == -2) {
        Fail("GetPhyAddr: the tensor is not in this core's UB or cube buffers");
    }
    return off;
}

// A cube operand: in memory `mem`, 32-byte aligned, `need` bytes inside the tensor.  Returns
// its byte offset in Core::local.
inline uint64_t CheckLocal(const char* api, const char* role, const void* addr, uint64_t tensor_bytes,
                           uint64_t need, int mem, uint32_t align = 32) {
    if (addr == nullptr) {
        Fail("%s: %s is an empty LocalTensor", api, role);
    }
    uint32_t off = 0;
    int m = WhichMem(addr, &off);
    if (m != mem) {
        Fail("%s: %s must be a tensor in %s, but it is in %s", api, role, LocalMemName(mem),
             m == -2 ? "no on-chip memory of this core" : LocalMemName(m));
    }
    if (off % align != 0) {
        Fail("%s: %s starts at %s offset %u, which is not %u-byte aligned", api, role, LocalMemName(mem), off, align);
    }
    if (need > tensor_bytes) {
        Fail("%s: %s needs %llu bytes but the LocalTensor has only %llu (%s offset %u)", api, role,
             static_cast<unsigned long long>(need), static_cast<unsigned long long>(tensor_bytes), LocalMemName(mem),
             off);
    }
    return CurCore().local_at[mem] + off;
}

inline void CheckLocalWritten(const char* api, const char* role, uint64_t at, uint64_t bytes) {
    Core& c = CurCore();
    auto first = static_cast<const uint8_t*>(std::memchr(c.local_written.data() + at, 0, bytes));
    if (first != nullptr) {
        uint32_t off = 0;
        int m = WhichMem(c.local.data() + (first - c.local_written.data()), &off);
        Fail("%s: %s reads %s offset %u, which was never written; fill it (DataCopy, LoadData, Mmad) first", api,
             role, LocalMemName(m), off);
    }
}

// The length a cube instruction may write through a local tensor declared shorter than what it writes:
// the hardware writes the whole layout and neither the API pages nor CANN's CPU debug mode bound it by the
// LocalTensor's length (its Mmad check is position and alignment only, asc-devkit kernel_operator_mm_check.h),
// so while the writes stay inside the physical buffer they are accepted, with a warning once per launch
// (CANN's mmad_load3dv2 sizes its float L0B tensor with N rounded to 8, the 16 x 8 fractals round it to 16;
// its mmad sample sizes C for n = 40 and multiplies n = 64).
inline uint64_t WritableLength(const char* api, const void* addr, uint64_t have, uint64_t need, int mem) {
    uint32_t off = 0;
    if (need > have && WhichMem(addr, &off) == mem && off + need <= LocalMemBytes(mem)) {
        Warn("AscendCWarning",
             Format("%s writes %llu bytes from %s offset %u but dst's LocalTensor has %llu; the bytes past it are "
                    "overwritten (reported once per launch)", api, static_cast<unsigned long long>(need),
                    LocalMemName(mem), off, static_cast<unsigned long long>(have)),
             "short-l0");
        return need;
    }
    return have;
}

// The same for Mmad's operands: the cube reads the whole fractal layout m x k / k x n implies, and CANN's Mmad
// check is position and alignment only (asc-devkit kernel_operator_mm_check.h, CheckMmadAlign), so A or B
// declared shorter than that layout is read on inside the physical L0A/L0B, with a warning once per launch;
// every byte read must still have been written (CANN's load_data_l12l0 sizes its float L0B for N rounded to 8
// while the 16 x 8 fractals of the transposed Load3D v2 load reach N rounded to 16).
inline uint64_t ReadableLength(const char* api, const char* role, const void* addr, uint64_t have, uint64_t need,
                               int mem) {
    uint32_t off = 0;
    if (need > have && WhichMem(addr, &off) == mem && off + need <= LocalMemBytes(mem)) {
        Warn("AscendCWarning",
             Format("%s reads %llu bytes of %s from %s offset %u but its LocalTensor has %llu; the bytes past it are "
                    "read (reported once per launch)", api, static_cast<unsigned long long>(need), role,
                    LocalMemName(mem), off, static_cast<unsigned long long>(have)),
             "short-l0");
        return need;
    }
    return have;
}

inline void MarkLocalWritten(uint64_t at, uint64_t bytes) {
    std::memset(CurCore().local_written.data() + at, 1, bytes);
}

// Elements of a 32-byte fractal row: 64 for int4b_t (the LoadData / Mmad pages' 16 x 64 int4b_t fractal).
template <typename T>
constexpr uint32_t C0Of() {
    return kIsB4<T> ? 64 : 32 / sizeof(T);
}

// Element i (counted from `base`) of a cube operand, in the type the product is computed in; int4b_t
// elements are signed nibbles, element 2j in the low half of byte j.
// half -> float by a table of all 65536 values, filled by the cast itself (the same bits): g++ converts
// _Float16 through a libgcc call without F16C (-march is not given), 5 ns an element against 0.7, and the
// cube model unpacks every operand of every tile (an 8192^3 Matmul: 2e11 elements).
inline const float* HalfToFloatTable() {
    static const std::vector<float> table = [] {
        std::vector<float> t(65536);
        for (uint32_t b = 0; b < 65536; ++b) {
            const uint16_t bits = static_cast<uint16_t>(b);
            half h;
            std::memcpy(&h, &bits, sizeof h);
            t[b] = static_cast<float>(h);
        }
        return t;
    }();
    return table.data();
}

inline float HalfToFloat(half v) {
    uint16_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return HalfToFloatTable()[bits];
}

// `run` consecutive cube operand elements from src into dst (every `stride`-th element), in the type the
// product is computed in: the table for half (`table`), a cast for the other non-4-bit types.
template <typename Acc, typename T>
FUSEDSL_CPU_HOT inline void UnpackRun(Acc* dst, uint64_t stride, const T* src, uint64_t run, const float* table) {
    for (uint64_t e = 0; e < run; ++e) {
        if constexpr (std::is_same_v<T, half>) {
            uint16_t bits;
            std::memcpy(&bits, src + e, sizeof bits);
            dst[e * stride] = static_cast<Acc>(table[bits]);
        } else {
            dst[e * stride] = static_cast<Acc>(static_cast<Compute<T>>(src[e]));
        }
    }
}

// The NZ accumulators (16 x 16 fractals, that of row block rb and column block cb at (cb * M1 + rb) * 256)
// from the row-major m x n sums: out = bias + sum, sum (init) or out + sum, rounded to C; zero past m x n.
template <typename C, typename Acc>
FUSEDSL_CPU_HOT inline void WriteNzAccumulators(C* dst, const Acc* sums, const C* bias, bool init, uint64_t m,
                                                uint64_t n, uint64_t M1, uint64_t N1) {
    for (uint64_t cb = 0; cb < N1; ++cb) {
        for (uint64_t rb = 0; rb < M1; ++rb) {
            C* frac = dst + (cb * M1 + rb) * 256;
            for (uint64_t rr = 0; rr < 16; ++rr) {
                const uint64_t r = rb * 16 + rr;
                for (uint64_t cc = 0; cc < 16; ++cc) {
                    const uint64_t col = cb * 16 + cc;
                    const Acc acc = r < m && col < n ? sums[r * n + col] : Acc(0);
                    C& out = frac[rr * 16 + cc];
                    if (bias != nullptr) {
                        out = static_cast<C>((col < n ? bias[col] : C(0)) + static_cast<C>(acc));
                    } else {
                        out = init ? static_cast<C>(acc) : static_cast<C>(out + static_cast<C>(acc));
                    }
                }
            }
        }
    }
}

template <typename T>
inline Compute<T> CubeElem(const T* base, uint64_t i) {
    if constexpr (kIsB4<T>) {
        const int v = (reinterpret_cast<const uint8_t*>(base)[i / 2] >> (4 * (i % 2))) & 0xF;
        return v >= 8 ? v - 16 : v;
    } else if constexpr (std::is_same_v<T, half>) {
        return HalfToFloat(base[i]);
    } else {
        return static_cast<Compute<T>>(base[i]);
    }
}

// ASCENDC.md §3 / Mmad's type table: (A, B) -> L0C accumulator.
template <typename A, typename B, typename C>
inline void CheckMmadTypes(const char* api) {
    constexpr bool ok = (std::is_same_v<A, half> && std::is_same_v<B, half> && std::is_same_v<C, float>) ||
                        (std::is_same_v<A, bfloat16_t> && std::is_same_v<B, bfloat16_t> && std::is_same_v<C, float>) ||
                        (std::is_same_v<A, float> && std::is_same_v<B, float> && std::is_same_v<C, float>) ||
                        (std::is_same_v<A, int8_t> && std::is_same_v<B, int8_t> && std::is_same_v<C, int32_t>) ||
                        (kIsB4<A> && kIsB4<B> && std::is_same_v<C, int32_t>);
    if (!ok) {
        Fail("%s: A %s x B %s -> C %s is not a cube type combination (half/bfloat16_t/float -> float, int8_t -> "
             "int32_t, int4b_t -> int32_t)", api, TypeName<A>(), TypeName<B>(), TypeName<C>());
    }
    // Mmad's type table: int4b_t x int4b_t -> int32_t on Atlas A2/A3 only (asc-devkit dav_c220
    // kernel_operator_mm_impl.h MmadCal; the dav_m200 one has no int4b_t row).
    if (kIsB4<A> && Target().arch != 2201) {
        Fail("%s: int4b_t matrices are not supported on %s (the Mmad page: Atlas A2/A3)", api, Target().name);
    }
    if ((std::is_same_v<A, float> || std::is_same_v<A, bfloat16_t>) && !Target().separated) {
        Fail("%s: %s inputs to the cube are not supported on %s (half and int8_t are)", api, TypeName<A>(),
             Target().name);
    }
}

}  // namespace fusedsl_cpu

namespace AscendC {

// Nd2NzParams{ndNum, nValue, dValue, srcNdMatrixStride, srcDValue, dstNzC0Stride, dstNzNStride,
// dstNzMatrixStride}: ndNum ND matrices of nValue rows x dValue columns (rows srcDValue elements
// apart, matrices srcNdMatrixStride elements apart) into NZ: column block j of row r at
// (j * dstNzC0Stride + r * dstNzNStride) C0-element blocks, matrices dstNzMatrixStride elements apart.
struct Nd2NzParams {
    // CANN's constructors (a braced list of 4 values is then a DataCopyParams, not an Nd2NzParams).
    Nd2NzParams() {}
    Nd2NzParams(const uint16_t ndNumIn, const uint16_t nValueIn, const uint16_t dValueIn,
                const uint16_t srcNdMatrixStrideIn, const uint16_t srcDValueIn, const uint16_t dstNzC0StrideIn,
                const uint16_t dstNzNStrideIn, const uint16_t dstNzMatrixStrideIn)
        : ndNum(ndNumIn), nValue(nValueIn), dValue(dValueIn), srcNdMatrixStride(srcNdMatrixStrideIn),
          srcDValue(srcDValueIn), dstNzC0Stride(dstNzC0StrideIn), dstNzNStride(dstNzNStrideIn),
          dstNzMatrixStride(dstNzMatrixStrideIn) {}
    uint16_t ndNum = 0;
    uint16_t nValue = 0;
    uint16_t dValue = 0;
    uint16_t srcNdMatrixStride = 0;
    uint16_t srcDValue = 0;
    uint16_t dstNzC0Stride = 0;
    uint16_t dstNzNStride = 0;
    uint16_t dstNzMatrixStride = 0;
};

// LoadData2DParams{startIndex, repeatTimes, srcStride, sid, dstGap, ifTranspose, addrMode}: repeat i
// moves fractal startIndex + i * srcStride of src to fractal i * (1 + dstGap) of dst (512 B each),
// transposing each fractal when ifTranspose.
struct LoadData2DParams {
    uint16_t startIndex = 0;
    uint8_t repeatTimes = 0;
    uint16_t srcStride = 0;
    uint8_t sid = 0;
    uint16_t dstGap = 0;
    bool ifTranspose = false;
    uint8_t addrMode = 0;
};

// MmadParams: C (m x n, L0C) = A (m x k, L0A) x B (k x n, L0B), accumulated onto C unless
// cmatrixInitVal.  The two constructors are CANN's: (m, n, k, unitFlag, cmatrixSource, cmatrixInitVal)
// and (m, n, k, isBias, fmOffset, enSsparse, enWinogradA, enWinogradB), so a braced list of 6 or 8
// values means what it means there.  Of the feature-map offset, sparsity and Winograd switches only
// the defaults are modelled (Mmad refuses the rest).
struct MmadParams {
    MmadParams() {}
    MmadParams(const uint16_t mIn, const uint16_t nIn, const uint16_t kIn, const uint8_t unitFlagIn,
               const bool cmatrixSourceIn, const bool cmatrixInitValIn)
        : m(mIn), n(nIn), k(kIn), unitFlag(unitFlagIn), cmatrixSource(cmatrixSourceIn),
          cmatrixInitVal(cmatrixInitValIn) {}
    MmadParams(const uint16_t mIn, const uint16_t nIn, const uint16_t kIn, const bool isBiasIn,
               const int32_t fmOffsetIn, const bool enSsparseIn, const bool enWinogradAIn, const bool enWinogradBIn)
        : m(mIn), n(nIn), k(kIn), isBias(isBiasIn), fmOffset(fmOffsetIn), enSsparse(enSsparseIn),
          enWinogradA(enWinogradAIn), enWinogradB(enWinogradBIn) {}
    uint16_t m = 0;
    uint16_t n = 0;
    uint16_t k = 0;
    uint8_t unitFlag = 0;
    bool cmatrixSource = false;
    bool cmatrixInitVal = true;
    bool isBias = false;
    bool kDirectionAlign = false;
    int32_t fmOffset = 0;
    bool enSsparse = false;
    bool enWinogradA = false;
    bool enWinogradB = false;
};

}  // namespace AscendC

// Global like CANN's: the Fixpipe conversion of the L0C accumulators.
enum QuantMode_t : uint8_t { NoQuant = 0, F322F16, F322BF16, DEQF16, VDEQF16, QF322B8_PRE, VQF322B8_PRE, REQ8, VREQ8 };

namespace AscendC {

using ::QuantMode_t;

// FixpipeParamsV220{nSize, mSize, srcStride, dstStride, reluEn, quantPre, deqScalar, ndNum,
// srcNdStride, dstNdStride, unitFlag}: rows [0, mSize) x columns [0, nSize) of the L0C NZ matrix
// (srcStride rows per 16-column block) to ND rows dstStride elements apart, converted by quantPre
// (NoQuant float, F322F16, F322BF16), with ReLU first when reluEn.
struct FixpipeParamsV220 {
    // CANN's constructors (kernel_struct_fixpipe.h): the first five fields, the first eleven, all twelve
    FixpipeParamsV220() = default;
    FixpipeParamsV220(uint16_t nSizeIn, uint16_t mSizeIn, uint16_t srcStrideIn, uint32_t dstStrideIn, bool reluEnIn)
        : nSize(nSizeIn), mSize(mSizeIn), srcStride(srcStrideIn), dstStride(dstStrideIn), reluEn(reluEnIn) {}
    FixpipeParamsV220(uint16_t nSizeIn, uint16_t mSizeIn, uint16_t srcStrideIn, uint32_t dstStrideIn, bool reluEnIn,
                      QuantMode_t quantPreIn, int64_t deqScalarIn, uint16_t ndNumIn, uint16_t srcNdStrideIn,
                      uint16_t dstNdStrideIn, uint8_t unitFlagIn, bool isChannelSplitIn = false)
        : nSize(nSizeIn), mSize(mSizeIn), srcStride(srcStrideIn), dstStride(dstStrideIn), reluEn(reluEnIn),
          quantPre(quantPreIn), deqScalar(deqScalarIn), ndNum(ndNumIn), srcNdStride(srcNdStrideIn),
          dstNdStride(dstNdStrideIn), unitFlag(unitFlagIn), isChannelSplit(isChannelSplitIn) {}
    uint16_t nSize = 0;
    uint16_t mSize = 0;
    uint16_t srcStride = 0;
    uint32_t dstStride = 0;
    bool reluEn = false;
    QuantMode_t quantPre = QuantMode_t::NoQuant;
    int64_t deqScalar = 0;
    uint16_t ndNum = 1;
    uint16_t srcNdStride = 0;
    uint16_t dstNdStride = 0;
    uint8_t unitFlag = 0;
    bool isChannelSplit = false;   // split float C into channels (not modelled: refused when set)
};

template <typename T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const Nd2NzParams& p, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    const char* api = "DataCopy(GM->L1, Nd2NzParams)";
    CheckHasCube(api);
    if constexpr (kIsB4<T>) {
        // int4b_t moves as int8_t with the same parameters, so the column counts (dValue, srcDValue, the
        // matrix strides) are in bytes: asc-devkit dav_c220 kernel_operator_data_copy_impl.h
        // DataCopyGM2L1ND2NZImpl casts both pointers to int8_t (its load_data_l12l0 sample halves them).
        GlobalTensor<int8_t> bytes;
        bytes.fs_addr = reinterpret_cast<int8_t*>(src.fs_addr);
        bytes.fs_size = BytesOf<T>(src.fs_size);
        bytes.fs_has_size = src.fs_has_size;
        DataCopy(dst.template ReinterpretCast<int8_t>(), bytes, p);
        return;
    }
    constexpr uint32_t C0 = C0Of<T>();
    if (p.ndNum == 0 || p.nValue == 0 || p.dValue == 0) {
        return;
    }
    if (p.srcDValue < p.dValue) {
        Fail("%s: srcDValue = %u is less than dValue = %u; rows would overlap", api, p.srcDValue, p.dValue);
    }
    if (p.dstNzC0Stride < p.nValue && (p.dValue + C0 - 1) / C0 > 1 && p.dstNzNStride == 1) {
        Fail("%s: dstNzC0Stride = %u blocks is less than nValue = %u rows; column blocks would overlap", api,
             p.dstNzC0Stride, p.nValue);
    }
    uint64_t blocks = (p.dValue + C0 - 1) / C0;
    uint64_t last = static_cast<uint64_t>(p.ndNum - 1) * p.dstNzMatrixStride +
                    ((blocks - 1) * p.dstNzC0Stride + static_cast<uint64_t>(p.nValue - 1) * p.dstNzNStride + 1) * C0;
    uint64_t at = CheckLocal(api, "dst", dst.fs_addr, dst.GetLength(), last * sizeof(T), kMemL1);
    uint64_t src_elems = static_cast<uint64_t>(p.ndNum - 1) * p.srcNdMatrixStride +
                         static_cast<uint64_t>(p.nValue - 1) * p.srcDValue + p.dValue;
    CheckGm(api, src, src_elems * sizeof(T), true);
    CheckDmaRead(api, reinterpret_cast<const uint8_t*>(src.fs_addr), src_elems * sizeof(T));
    T* out = dst.fs_addr;
    for (uint32_t i = 0; i < p.ndNum; ++i) {
        for (uint32_t r = 0; r < p.nValue; ++r) {
            const T* row = src.fs_addr + static_cast<uint64_t>(i) * p.srcNdMatrixStride +
                           static_cast<uint64_t>(r) * p.srcDValue;
            for (uint32_t b = 0; b < blocks; ++b) {
                uint64_t o = static_cast<uint64_t>(i) * p.dstNzMatrixStride +
                             (static_cast<uint64_t>(b) * p.dstNzC0Stride + static_cast<uint64_t>(r) * p.dstNzNStride) * C0;
                uint32_t n = std::min<uint32_t>(C0, p.dValue - b * C0);
                std::memcpy(out + o, row + b * C0, n * sizeof(T));
                if (n < C0) {   // the pad of a partial block is zero-filled
                    std::memset(static_cast<void*>(out + o + n), 0, (C0 - n) * sizeof(T));
                }
                MarkLocalWritten(at + o * sizeof(T), C0 * sizeof(T));
            }
        }
    }
    St().gm_bytes_read += static_cast<uint64_t>(p.ndNum) * p.nValue * p.dValue * sizeof(T);
}

template <typename T>
inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2DParams& p,
                     FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    const char* api = "LoadData(L1->L0, LoadData2DParams)";
    CheckHasCube(api);
    int mem = MemOfPosition(dst.GetPosition());
    if (mem != kMemL0A && mem != kMemL0B) {
        Fail("%s: dst is a %s tensor; LoadData2D loads into A2 (L0A) or B2 (L0B)", api, PositionName(dst.GetPosition()));
    }
    if (p.ifTranspose && sizeof(T) != 2) {
        Fail("%s: ifTranspose with %s; the 2-D load transposes 16 x 16 fractals of 2-byte types only", api,
             TypeName<T>());
    }
    if (p.repeatTimes == 0) {
        return;
    }
    constexpr uint64_t F = 512;   // bytes per fractal
    uint64_t src_need = (static_cast<uint64_t>(p.startIndex) + static_cast<uint64_t>(p.repeatTimes - 1) * p.srcStride + 1) * F;
    uint64_t dst_need = (static_cast<uint64_t>(p.repeatTimes - 1) * (1 + p.dstGap) + 1) * F;
    uint64_t s = CheckLocal(api, "src", src.fs_addr, src.GetLength(), src_need, kMemL1);
    uint64_t d = CheckLocal(api, "dst", dst.fs_addr, dst.GetLength(), dst_need, mem, 512);
    // The written marks move with the data (a fractal holding ND2NZ padding nothing wrote stays unwritten
    // in L0 for Mmad to check, as CANN's batch_matmul loads such fractals and multiplies only the valid part).
    Core& c = CurCore();
    for (uint32_t i = 0; i < p.repeatTimes; ++i) {
        uint64_t sf = s + (p.startIndex + static_cast<uint64_t>(i) * p.srcStride) * F;
        uint64_t df = d + static_cast<uint64_t>(i) * (1 + p.dstGap) * F;
        for (std::vector<uint8_t>* plane : {&c.local, &c.local_written}) {
            uint8_t* base = plane->data();
            if (!p.ifTranspose) {
                std::memmove(base + df, base + sf, F);
                continue;
            }
            uint8_t tmp[F];
            for (int r = 0; r < 16; ++r) {
                for (int q = 0; q < 16; ++q) {
                    std::memcpy(tmp + (q * 16 + r) * 2, base + sf + (r * 16 + q) * 2, 2);
                }
            }
            std::memcpy(base + df, tmp, F);
        }
    }
}

}  // namespace AscendC

namespace fusedsl_cpu {

// DataCopy L1 -> BiasTable (DataCopy（L1ToBiasTable Buffer数据搬运）, Atlas A2/A3): `count` blocks of
// `block_bytes` source bytes (blockLen in 64 B), `src_gap` bytes apart after each block in L1 and
// `dst_gap` in the bias table; half becomes float on the way, int32_t and float move as they are.
// dst 64-byte aligned in the 1 KB table, src 32-byte aligned in L1.
template <typename D, typename S>
inline void CopyL1ToBias(const AscendC::LocalTensor<D>& dst, const AscendC::LocalTensor<S>& src, uint64_t count,
                         uint64_t block_bytes, uint64_t src_gap, uint64_t dst_gap) {
    const char* api = "DataCopy(L1->BiasTable)";
    CheckHasCube(api);
    constexpr bool ok = (std::is_same_v<S, half> && std::is_same_v<D, float>) ||
                        (std::is_same_v<S, float> && std::is_same_v<D, float>) ||
                        (std::is_same_v<S, int32_t> && std::is_same_v<D, int32_t>);
    if (!ok) {
        Fail("%s: %s -> %s; the bias table takes half -> float, float -> float and int32_t -> int32_t (the page's "
             "type list for Atlas A2/A3)", api, TypeName<S>(), TypeName<D>());
    }
    if (count == 0 || block_bytes == 0) {
        return;   // a NOP, per the page
    }
    if (count > 4095) {
        Fail("%s: blockCount = %llu; at most 4095", api, static_cast<unsigned long long>(count));
    }
    const uint64_t out_block = block_bytes / sizeof(S) * sizeof(D);
    const uint64_t s = CheckLocal(api, "src", src.fs_addr, src.GetLength(),
                                  (count - 1) * (block_bytes + src_gap) + block_bytes, kMemL1, 32);
    const uint64_t d = CheckLocal(api, "dst", dst.fs_addr, dst.GetLength(),
                                  (count - 1) * (out_block + dst_gap) + out_block, kMemBT, 64);
    // The "never written" marks move with the values instead of failing here, as for the other local moves:
    // CANN's mmad sample copies a 64-byte-rounded bias of which ND2NZ filled 160 bytes; Mmad passes the marks
    // on to the C columns that take them, and Fixpipe fails only if it stores one.
    Core& c = CurCore();
    for (uint64_t b = 0; b < count; ++b) {
        const uint64_t from = s + b * (block_bytes + src_gap);
        const uint64_t to = d + b * (out_block + dst_gap);
        for (uint64_t e = 0; e < block_bytes / sizeof(S); ++e) {
            S v;
            std::memcpy(&v, c.local.data() + from + e * sizeof(S), sizeof(S));
            const D out = static_cast<D>(static_cast<Compute<S>>(v));
            std::memcpy(c.local.data() + to + e * sizeof(D), &out, sizeof(D));
            const bool written = std::memchr(c.local_written.data() + from + e * sizeof(S), 0, sizeof(S)) == nullptr;
            std::memset(c.local_written.data() + to + e * sizeof(D), written ? 1 : 0, sizeof(D));
        }
    }
}

// The DataCopy（L1ToFixpipe-Buffer数据搬运） page (A2/A3): uint64_t quantisation parameters from L1 (32-byte
// aligned) to the Fixpipe Buffer (128-byte aligned), `count` blocks of `block_bytes`, the block heads
// `src_pitch` / `dst_pitch` bytes apart (a pitch of 0 reads, or overwrites, the first block again).
template <typename T>
inline void CopyL1ToFixpipeBuffer(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                                  uint64_t count, uint64_t block_bytes, uint64_t src_pitch, uint64_t dst_pitch) {
    const char* api = "DataCopy(L1->FixpipeBuffer)";
    CheckHasCube(api);
    if (!Target().separated) {
        Fail("%s is not available on %s (Atlas A2/A3 only, per its page)", api, Target().name);
    }
    if (!std::is_same_v<T, uint64_t>) {
        Fail("%s: %s; the page's type is uint64_t (the quantisation parameters)", api, TypeName<T>());
    }
    if (count == 0 || block_bytes == 0) {
        return;   // a NOP, per the page
    }
    if (count > 4095) {
        Fail("%s: blockCount = %llu; at most 4095", api, static_cast<unsigned long long>(count));
    }
    const uint64_t s = CheckLocal(api, "src", src.fs_addr, src.GetLength(), (count - 1) * src_pitch + block_bytes,
                                  kMemL1, 32);
    const uint64_t d = CheckLocal(api, "dst", dst.fs_addr, dst.GetLength(), (count - 1) * dst_pitch + block_bytes,
                                  kMemFB, 128);
    Core& c = CurCore();
    for (uint64_t b = 0; b < count; ++b) {
        std::memmove(c.local.data() + d + b * dst_pitch, c.local.data() + s + b * src_pitch, block_bytes);
        std::memmove(c.local_written.data() + d + b * dst_pitch, c.local_written.data() + s + b * src_pitch,
                     block_bytes);
    }
}

}  // namespace fusedsl_cpu

namespace AscendC {

// The bias table's converting form (half in L1 -> float bias).
template <typename D, typename S>
inline void DataCopy(const LocalTensor<D>& dst, const LocalTensor<S>& src, const DataCopyParams& params,
                     FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    if (!fusedsl_cpu::IsBiasTable(dst.GetPosition())) {
        fusedsl_cpu::Fail("DataCopy(%s -> %s) between local tensors of different types moves L1 to the bias table (C2) "
                          "only", fusedsl_cpu::TypeName<S>(), fusedsl_cpu::TypeName<D>());
    }
    fusedsl_cpu::CopyL1ToBias(dst, src, params.blockCount, params.blockLen * 64ull, params.srcGap * 32ull,
                              params.dstGap * 64ull);
}

// LoadData2dTransposeParams{startIndex, repeatTimes, srcStride, dstGap, dstFracGap, addrMode}
// (LoadDataWithTranspose page): repeat i transposes square startIndex +- i * srcStride of src (a square
// is 512 B x the fractals it spans) into dst, its first fractal (1 + dstGap) x i fractals from dst's
// start and its fractals (1 + dstFracGap) fractals apart.
struct LoadData2dTransposeParams {
    uint16_t startIndex = 0;
    uint8_t repeatTimes = 0;
    uint16_t srcStride = 0;
    uint16_t dstGap = 0;
    uint16_t dstFracGap = 0;
    uint8_t addrMode = 0;
};

}  // namespace AscendC

namespace fusedsl_cpu {

// Byte offset of element (r, c) of a LoadDataWithTranspose square of `elem`-byte values, and its
// fractal: 1-byte types stack two 16 x 32 fractals into a 32 x 32 square (rows 16 apart), 2-byte
// types are one 16 x 16 fractal, 4-byte types put two 16 x 8 fractals side by side into 16 x 16
// (the page's 分形转置; the transposed square is split into fractals the same way).
inline uint32_t SquareOffset(size_t elem, uint32_t r, uint32_t c, uint32_t* frac) {
    if (elem == 1) {
        *frac = r / 16;
        return (r % 16) * 32 + c;
    }
    if (elem == 2) {
        *frac = 0;
        return (r * 16 + c) * 2;
    }
    *frac = c / 8;
    return (r * 8 + c % 8) * 4;
}

}  // namespace fusedsl_cpu

namespace AscendC {

// LoadDataWithTranspose (L1 -> L0A/L0B, Atlas A2/A3): per repeat one square of src, transposed.  Types:
// int8_t/uint8_t, half/bfloat16_t, int32_t/uint32_t/float, and int4b_t into L0B only (the page: "b4数据类型
// 仅在目的操作数为L0B Buffer的时候支持"; four 16 x 64 fractals make its 64 x 64 square).
template <typename T>
inline void LoadDataWithTranspose(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                  const LoadData2dTransposeParams& p, FUSEDSL_CPU_SITE) {
    using namespace fusedsl_cpu;
    AtSite at_site(fs_site);
    const char* api = "LoadDataWithTranspose";
    CheckHasCube(api);
    if (Target().arch != 2201) {
        Fail("%s is not available on %s (the LoadDataWithTranspose page: Atlas A2/A3, not Atlas 训练/推理系列)", api,
             Target().name);
    }
    {
        static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4, "LoadDataWithTranspose: 1-, 2- or 4-byte types");
        const int mem = MemOfPosition(dst.GetPosition());
        if (mem != kMemL0A && mem != kMemL0B) {
            Fail("%s: dst is a %s tensor; it loads into A2 (L0A) or B2 (L0B)", api, PositionName(dst.GetPosition()));
        }
        if (kIsB4<T> && mem != kMemL0B) {
            Fail("%s: int4b_t loads into B2 (L0B) only (the LoadDataWithTranspose page: \"b4数据类型仅在目的操作数为"
                 "L0B Buffer的时候支持\"); dst is a %s tensor", api, PositionName(dst.GetPosition()));
        }
        if (p.repeatTimes == 0) {
            return;   // a NOP, per the page
        }
        constexpr uint64_t F = 512;
        constexpr bool b4 = kIsB4<T>;
        constexpr uint32_t fracs = b4 ? 4 : sizeof(T) == 2 ? 1 : 2;
        constexpr uint32_t side = b4 ? 64 : sizeof(T) == 1 ? 32 : 16;
        const uint64_t last = static_cast<uint64_t>(p.repeatTimes - 1) * p.srcStride;
        if (p.addrMode != 0 && last > p.startIndex) {
            Fail("%s: addrMode counts down %u repeats of srcStride %u from square %u, below square 0", api,
                 p.repeatTimes, p.srcStride, p.startIndex);
        }
        const uint64_t top = p.addrMode != 0 ? p.startIndex : p.startIndex + last;
        const uint64_t s = CheckLocal(api, "src", src.fs_addr, src.GetLength(), (top + 1) * fracs * F, kMemL1);
        const uint64_t frac_pitch = 1 + static_cast<uint64_t>(p.dstFracGap);
        const uint64_t rep_pitch = 1 + static_cast<uint64_t>(p.dstGap);
        const uint64_t dst_last = (p.repeatTimes - 1) * rep_pitch + (fracs - 1) * frac_pitch;
        const uint64_t d = CheckLocal(api, "dst", dst.fs_addr, dst.GetLength(), (dst_last + 1) * F, mem, 512);
        // The page: "开发者需要保证目的操作数转置后的分形没有重叠".
        std::vector<uint8_t> taken(dst_last + 1, 0);
        for (uint64_t i = 0; i < p.repeatTimes; ++i) {
            for (uint64_t j = 0; j < fracs; ++j) {
                uint8_t& t = taken[i * rep_pitch + j * frac_pitch];
                if (t) {
                    Fail("%s: dstGap = %u and dstFracGap = %u put fractal %llu of repeat %llu on a fractal an earlier "
                         "one wrote; the transposed fractals may not overlap (the page)", api, p.dstGap, p.dstFracGap,
                         static_cast<unsigned long long>(j), static_cast<unsigned long long>(i));
                }
                t = 1;
            }
        }
        // The data and its written marks move together (a padding fractal nothing wrote stays unwritten for
        // Mmad to check).
        Core& c = CurCore();
        for (uint32_t i = 0; i < p.repeatTimes; ++i) {
            const uint64_t sq = p.addrMode != 0 ? p.startIndex - static_cast<uint64_t>(i) * p.srcStride
                                                : p.startIndex + static_cast<uint64_t>(i) * p.srcStride;
            const uint64_t from = s + sq * fracs * F;
            const uint64_t to = d + i * rep_pitch * F;
            if constexpr (b4) {
                // Nibble (r, col) of the 64 x 64 square is element (r % 16) * 64 + col of fractal r / 16; a
                // destination byte counts as written when both nibbles that land in it were.
                uint8_t square[fracs * F];
                uint8_t marks[fracs * F];
                std::memcpy(square, c.local.data() + from, fracs * F);
                std::memcpy(marks, c.local_written.data() + from, fracs * F);
                uint8_t out[fracs * F] = {};
                uint8_t out_marks[fracs * F];
                std::memset(out_marks, 1, sizeof out_marks);
                for (uint32_t r = 0; r < side; ++r) {
                    for (uint32_t col = 0; col < side; ++col) {
                        const uint32_t se = (col / 16) * 1024 + (col % 16) * 64 + r;   // source (col, r) ...
                        const uint32_t de = (r / 16) * 1024 + (r % 16) * 64 + col;     // ... to (r, col)
                        const uint8_t nib = (square[se / 2] >> (4 * (se % 2))) & 0xF;
                        out[de / 2] = static_cast<uint8_t>(out[de / 2] | (nib << (4 * (de % 2))));
                        out_marks[de / 2] &= marks[se / 2];
                    }
                }
                for (uint32_t f = 0; f < fracs; ++f) {
                    std::memcpy(c.local.data() + to + f * frac_pitch * F, out + f * F, F);
                    std::memcpy(c.local_written.data() + to + f * frac_pitch * F, out_marks + f * F, F);
                }
                continue;
            }
            for (std::vector<uint8_t>* plane : {&c.local, &c.local_written}) {
                uint8_t square[fracs * F];
                std::memcpy(square, plane->data() + from, fracs * F);
                for (uint32_t r = 0; r < side; ++r) {
                    for (uint32_t col = 0; col < side; ++col) {
                        uint32_t fs = 0;
                        uint32_t fd = 0;
                        const uint32_t so = SquareOffset(sizeof(T), col, r, &fs);   // source (col, r) ...
                        const uint32_t dof = SquareOffset(sizeof(T), r, col, &fd);  // ... to (r, col)
                        std::memcpy(plane->data() + to + fd * frac_pitch * F + dof, square + fs * F + so, sizeof(T));
                    }
                }
            }
        }
    }
}

}  // namespace AscendC

namespace fusedsl_cpu {

// Mmad's C initialised from the bias table (cmatrixSource, or the bias-tensor form with a C2 bias):
// BT offset `bt` holds n values of C's type (the Mmad page: "使用BT Buffer(TPosition:C2)的数据对L0C Buffer
// 进行初始化", bias 1 x N), added to every row.  Atlas A2/A3 only (the cmatrixSource row of MmadParams).
inline uint64_t CheckBiasSource(const char* api, uint64_t bt, uint64_t n, size_t elem) {
    if (!Target().separated) {
        Fail("%s: C initialised from the bias table (cmatrixSource = true, or a C2 bias) is not available on %s "
             "(the Mmad page: Atlas A2/A3 only)", api, Target().name);
    }
    if (bt % 64 != 0) {
        Fail("%s: the bias starts at BT offset %llu, which is not 64-byte aligned (the Mmad page)", api,
             static_cast<unsigned long long>(bt));
    }
    if (bt + n * elem > LocalMemBytes(kMemBT)) {
        Fail("%s: %llu bias values at BT offset %llu run past the %u-byte bias table", api,
             static_cast<unsigned long long>(n), static_cast<unsigned long long>(bt), LocalMemBytes(kMemBT));
    }
    return CurCore().local_at[kMemBT] + bt;
}

}  // namespace fusedsl_cpu

namespace AscendC {

template <typename C, typename A, typename B>
inline void MmadWithBiasAt(const LocalTensor<C>& dst, const LocalTensor<A>& a, const LocalTensor<B>& b,
                           const MmadParams& p, const char* api, bool from_bt, uint64_t bt);

template <typename C, typename A, typename B>
inline void Mmad(const LocalTensor<C>& dst, const LocalTensor<A>& a, const LocalTensor<B>& b, const MmadParams& p,
                 FUSEDSL_CPU_SITE) {
    using namespace fusedsl_cpu;
    AtSite at_site(fs_site);
    // CANN's bias-less MmadCal (asc-devkit impl/basic_api/dav_c220/kernel_operator_mm_impl.h) clears
    // cmatrixInitVal when isBias is set and hands cmatrixSource to the mad instruction with no bias-table
    // address, so the C initialisation comes from the start of the bias table: CANN's own conv3d
    // (impl/adv_api/detail/conv/conv3d/dav_m220/conv3d_sub_api.h) relies on it with its only C2 buffer at
    // BT 0, as does its mmad sample.  fusedsl does the same; a table with nothing written where the bias
    // would be means the bias is elsewhere (or was never copied), which the device would read as garbage:
    // refused at this call.
    MmadParams q = p;
    q.cmatrixInitVal = p.cmatrixInitVal && !p.isBias;
    q.isBias = false;
    const bool from_bt = q.cmatrixSource && !q.cmatrixInitVal;
    if (from_bt && Target().separated && q.n != 0) {
        const uint64_t bytes = std::min<uint64_t>(static_cast<uint64_t>(q.n) * sizeof(C), LocalMemBytes(kMemBT));
        const uint8_t* w = CurCore().local_written.data() + CurCore().local_at[kMemBT];
        if (std::memchr(w, 1, bytes) == nullptr) {
            Fail("Mmad: cmatrixSource = true without a bias tensor initialises C from bias-table (C2) address 0, "
                 "where nothing was written (BT bytes [0, %llu) for n = %u); CANN's bias-less Mmad carries no "
                 "bias-table address — copy the bias to a C2 tensor at address 0 (DataCopy L1 -> C2), or pass the "
                 "C2 tensor as Mmad's bias argument", static_cast<unsigned long long>(bytes), q.n);
        }
    }
    MmadWithBiasAt(dst, a, b, q, "Mmad", from_bt, 0);
}

// The bias form (Mmad, "传入bias"): a C2 bias (the bias table) initialises C, whatever cmatrixSource
// says; a CO1 bias is C itself (C accumulates unless cmatrixInitVal).
template <typename C, typename A, typename B>
inline void Mmad(const LocalTensor<C>& dst, const LocalTensor<A>& a, const LocalTensor<B>& b,
                 const LocalTensor<C>& bias, const MmadParams& p, FUSEDSL_CPU_SITE) {
    using namespace fusedsl_cpu;
    AtSite at_site(fs_site);
    const char* api = "Mmad(bias)";
    if constexpr (kIsB4<A>) {
        // asc-devkit dav_c220 kernel_operator_mm_impl.h: the bias form's MmadCal type list has no int4b_t row.
        Fail("%s: the bias-tensor form of Mmad does not take int4b_t matrices (CANN's type list for it: int8_t, "
             "half, float, bfloat16_t); use MmadParams.cmatrixSource with the bias in the bias table", api);
    }
    uint32_t off = 0;
    const int m = WhichMem(bias.fs_addr, &off);
    MmadParams q = p;
    q.isBias = false;   // CANN's bias-form MmadCal reads cmatrixInitVal as it is (dav_c220 kernel_operator_mm_impl.h)
    if (m == kMemBT) {
        MmadWithBiasAt(dst, a, b, q, api, !p.cmatrixInitVal, off);
        return;
    }
    if (m == kMemL0C && bias.fs_addr == dst.fs_addr) {
        q.cmatrixSource = false;
        MmadWithBiasAt(dst, a, b, q, api, false, 0);
        return;
    }
    Fail("%s: the bias is in %s; it must be a C2 (bias table) tensor, or the CO1 tensor C itself", api,
         m == -2 ? "no on-chip memory of this core" : LocalMemName(m));
}

template <typename C, typename A, typename B>
inline void MmadRun(const LocalTensor<C>& dst, const LocalTensor<A>& a, const LocalTensor<B>& b,
                    const MmadParams& p, const char* api, bool from_bt, uint64_t bt) {
    using namespace fusedsl_cpu;
    CheckHasCube(api);
    CheckMmadTypes<A, B, C>(api);
    if (p.m == 0 || p.n == 0 || p.k == 0) {
        return;
    }
    const C* bias = nullptr;
    uint64_t bias_at = 0;
    if (from_bt) {
        bias_at = CheckBiasSource(api, bt, p.n, sizeof(C));
        bias = reinterpret_cast<const C*>(CurCore().local.data() + bias_at);
    } else if (p.cmatrixSource && !Target().separated) {
        Fail("%s: cmatrixSource = true is not available on %s (the Mmad page: Atlas A2/A3 only)", api, Target().name);
    }
    if (p.fmOffset != 0 || p.enSsparse || p.enWinogradA || p.enWinogradB) {
        Fail("%s: fmOffset, enSsparse and the Winograd switches are not modelled by fusedsl's CPU "
             "implementation (leave them at their defaults)", api);
    }
    if (p.kDirectionAlign && Target().arch != 2201) {
        Fail("%s: kDirectionAlign = true is supported on Atlas A2/A3 only, not on %s (the Mmad page)", api,
             Target().name);
    }
    if constexpr (kIsB4<A>) {
        // asc-devkit dav_c220 kernel_operator_mm_impl.h MmadCal: "MmadParams.k must be an even number when U
        // and S are int4b_t" (two 4-bit values per byte).
        if (p.k % 2 != 0) {
            Fail("%s: MmadParams.k = %u with int4b_t matrices; k must be even (two 4-bit elements per byte, "
                 "CANN's Mmad check) — pad K to an even length", api, p.k);
        }
    }
    constexpr uint32_t KA = C0Of<A>();
    // kDirectionAlign (Mmad计算关键特性说明/K方向对齐约束): float matrices in L0A/L0B have K aligned to
    // ceil(K / 16) * 16 instead of ceil(K / 8) * 8; other types are not affected.
    const uint64_t k_align = p.kDirectionAlign && std::is_same_v<A, float> ? 16 : KA;
    uint64_t M1 = (p.m + 15) / 16, N1 = (p.n + 15) / 16, K1 = (p.k + k_align - 1) / k_align * k_align / KA;
    uint64_t fa = 16 * KA;   // elements per fractal of A / B
    // GEMV (Mmad计算关键特性说明/GEMV): m = 1 turns it on by itself; A is then the 1 x K row, its K
    // values contiguous in L0A (512-byte aligned), and C the first row of the 16-row L0C blocks.
    const bool gemv = p.m == 1;
    // The operands must hold the elements the product reads: up to the last used k of the last row of A
    // and of the last column of B (a tensor sized to the valid part of its last fractals is enough).
    const uint64_t kb_last = (p.k - 1) / KA, k_last = (p.k - 1) % KA + 1;
    uint64_t a_bytes = BytesOf<A>(gemv ? p.k : (((p.m - 1) / 16) * K1 + kb_last) * fa + ((p.m - 1) % 16) * KA + k_last);
    const uint64_t b_bytes = BytesOf<B>(((kb_last * N1 + (p.n - 1) / 16) * fa) + ((p.n - 1) % 16) * KA + k_last);
    uint64_t sa = CheckLocal(api, "a", a.fs_addr, ReadableLength(api, "a", a.fs_addr, a.GetLength(), a_bytes, kMemL0A),
                             a_bytes, kMemL0A, 512);
    uint64_t sb = CheckLocal(api, "b", b.fs_addr, ReadableLength(api, "b", b.fs_addr, b.GetLength(), b_bytes, kMemL0B),
                             b_bytes, kMemL0B, 512);
    const uint64_t c_bytes = M1 * N1 * 256 * sizeof(C);
    uint64_t sc = CheckLocal(api, "dst", dst.fs_addr, WritableLength(api, dst.fs_addr, dst.GetLength(), c_bytes, kMemL0C),
                             c_bytes, kMemL0C, 512);
    // Only the elements the product uses must have been written (rows < m, columns < n, k < K); the padding
    // of partly filled fractals is never read into C.
    // (A fractal's rows, B fractal's columns, lie KA elements apart: a whole K block of consecutive rows or
    // columns is one contiguous range, checked at once; the first unwritten byte is the same either way.)
    for (uint64_t kb = 0; kb < (p.k + KA - 1) / KA; ++kb) {
        const uint64_t k_used = std::min<uint64_t>(KA, p.k - kb * KA);
        const uint64_t used = BytesOf<A>(k_used);
        for (uint64_t r = 0; r < p.m; ++r) {
            if (!gemv && k_used == KA && r % 16 == 0) {   // rows r .. r + 15 of this fractal (those below m)
                const uint64_t rows = std::min<uint64_t>(16, p.m - r);
                CheckLocalWritten(api, "a", sa + BytesOf<A>(((r / 16) * K1 + kb) * fa), BytesOf<A>(rows * KA));
                r += rows - 1;
                continue;
            }
            CheckLocalWritten(api, "a", sa + BytesOf<A>(gemv ? kb * KA : ((r / 16) * K1 + kb) * fa + (r % 16) * KA),
                              used);
        }
        for (uint64_t col = 0; col < p.n; ++col) {
            if (k_used == KA && col % 16 == 0) {
                const uint64_t cols = std::min<uint64_t>(16, p.n - col);
                CheckLocalWritten(api, "b", sb + BytesOf<B>((kb * N1 + col / 16) * fa), BytesOf<B>(cols * KA));
                col += cols - 1;
                continue;
            }
            CheckLocalWritten(api, "b", sb + BytesOf<B>((kb * N1 + col / 16) * fa + (col % 16) * KA), used);
        }
    }
    if (!p.cmatrixInitVal && bias == nullptr) {
        CheckLocalWritten(api, "dst (accumulated onto)", sc, M1 * N1 * 256 * sizeof(C));
    }
    // A (m x k) and B (k x n) unpacked from their fractals into the accumulator type, then each element's
    // K products summed in order from 0 (cube_mac.h), as the cube sums them
    using Acc = std::conditional_t<std::is_same_v<C, int32_t>, int64_t, float>;
    // kept per thread: at 128 KB a fresh vector is an mmap and page faults on every call
    static thread_local std::vector<Acc> am, bm, sums;
    am.resize(p.m * static_cast<uint64_t>(p.k));
    bm.resize(static_cast<uint64_t>(p.k) * p.n);
    sums.assign(p.m * static_cast<uint64_t>(p.n), Acc(0));
    // (each row of A and column of B holds KA consecutive K values per fractal: unpacked a run at a time)
    const float* table = std::is_same_v<A, half> || std::is_same_v<B, half> ? HalfToFloatTable() : nullptr;
    for (uint64_t r = 0; r < p.m; ++r) {
        for (uint64_t kb = 0; kb * KA < p.k; ++kb) {
            const uint64_t at = gemv ? kb * KA : ((r / 16) * K1 + kb) * fa + (r % 16) * KA;
            const uint64_t run = std::min<uint64_t>(KA, p.k - kb * KA);
            if constexpr (kIsB4<A>) {
                for (uint64_t e = 0; e < run; ++e) {
                    am[r * p.k + kb * KA + e] = static_cast<Acc>(CubeElem(a.fs_addr, at + e));
                }
            } else {
                UnpackRun(am.data() + r * p.k + kb * KA, 1, a.fs_addr + at, run, table);
            }
        }
    }
    for (uint64_t col = 0; col < p.n; ++col) {
        for (uint64_t kb = 0; kb * KA < p.k; ++kb) {
            const uint64_t at = (kb * N1 + col / 16) * fa + (col % 16) * KA;
            const uint64_t run = std::min<uint64_t>(KA, p.k - kb * KA);
            if constexpr (kIsB4<B>) {
                for (uint64_t e = 0; e < run; ++e) {
                    bm[(kb * KA + e) * p.n + col] = static_cast<Acc>(CubeElem(b.fs_addr, at + e));
                }
            } else {
                UnpackRun(bm.data() + kb * KA * p.n + col, p.n, b.fs_addr + at, run, table);
            }
        }
    }
    AccumulateRows(sums.data(), am.data(), bm.data(), p.m, p.k, p.n);
    WriteNzAccumulators(dst.fs_addr, sums.data(), bias, p.cmatrixInitVal, p.m, p.n, M1, N1);
    MarkLocalWritten(sc, M1 * N1 * 256 * sizeof(C));
    if (bias != nullptr) {
        // A bias value nothing wrote leaves its C column unwritten (see CopyL1ToBias).
        Core& core = CurCore();
        for (uint64_t col = 0; col < p.n; ++col) {
            if (std::memchr(core.local_written.data() + bias_at + col * sizeof(C), 0, sizeof(C)) == nullptr) {
                continue;
            }
            for (uint64_t r = 0; r < M1 * 16; ++r) {
                std::memset(core.local_written.data() + sc + (((col / 16) * M1 + r / 16) * 256 + (r % 16) * 16 +
                                                              col % 16) * sizeof(C), 0, sizeof(C));
            }
        }
    }
    St().vector_instructions += 1;
}

template <typename C, typename A, typename B>
inline void MmadWithBiasAt(const LocalTensor<C>& dst, const LocalTensor<A>& a, const LocalTensor<B>& b,
                           const MmadParams& p, const char* api, bool from_bt, uint64_t bt) {
    MmadRun(dst, a, b, p, api, from_bt, bt);
}

// LoadData2DParamsV2 and its LoadData are Ascend 950's (its L1 -> L0 load with m/k positions and
// steps): the struct exists so sources that keep a 950 branch compile; the load is refused on the
// chips fusedsl models.
struct LoadData2DParamsV2 {
    LoadData2DParamsV2() {}
    LoadData2DParamsV2(const uint32_t mStartPositionIn, const uint32_t kStartPositionIn, const uint16_t mStepIn,
                       const uint16_t kStepIn, const int32_t srcStrideIn, const uint16_t dstStrideIn,
                       const bool ifTransposeIn, const uint8_t sidIn)
        : mStartPosition(mStartPositionIn), kStartPosition(kStartPositionIn), mStep(mStepIn), kStep(kStepIn),
          srcStride(srcStrideIn), dstStride(dstStrideIn), ifTranspose(ifTransposeIn), sid(sidIn) {}
    uint32_t mStartPosition = 0;
    uint32_t kStartPosition = 0;
    uint16_t mStep = 0;
    uint16_t kStep = 0;
    int32_t srcStride = 0;
    uint16_t dstStride = 0;
    bool ifTranspose = false;
    uint8_t sid = 0;
};

template <typename T>
inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2DParamsV2& p,
                     FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    (void)dst;
    (void)src;
    (void)p;
    fusedsl_cpu::Fail("LoadData(LoadData2DParamsV2): an Ascend 950 load, not available on %s; use LoadData2DParams",
                      fusedsl_cpu::Target().name);
}

// Fill (矩阵搬入辅助配置接口/Fill): sets repeatTimes x blockNum blocks of an L1 (32-byte blocks) or
// L0A/L0B (512-byte blocks) tensor to initValue, repeats dstGap blocks apart.
template <typename T>
struct InitConstValueParams {
    InitConstValueParams() {}
    InitConstValueParams(const uint16_t repeatTimesIn, const uint16_t blockNumIn, const uint16_t dstGapIn,
                         const T initValueIn)
        : repeatTimes(repeatTimesIn), blockNum(blockNumIn), dstGap(dstGapIn), initValue(initValueIn) {}
    InitConstValueParams(const uint16_t repeatTimesIn, const T initValueIn)
        : repeatTimes(repeatTimesIn), initValue(initValueIn) {}
    uint16_t repeatTimes = 0;
    uint16_t blockNum = 0;
    uint16_t dstGap = 0;
    T initValue = 0;
};

template <typename T, typename U = T>
inline void Fill(const LocalTensor<T>& dst, const InitConstValueParams<U>& p, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    static_assert(std::is_same_v<T, U>, "Fill: the InitConstValueParams type must be the tensor's (the API page)");
    const char* api = "Fill(InitConstValueParams)";
    CheckHasCube(api);
    const char* types = Target().separated ? " bfloat16_t float half int16_t int32_t uint16_t uint32_t "
                        : Target().arch == 2002 ? " half int16_t uint16_t " : " half ";
    if (!HasWord(types, TypeName<T>())) {
        Fail("%s: %s is not one of the types %s supports (the API page)", api, TypeName<T>(), Target().name);
    }
    uint32_t off = 0;
    int m = WhichMem(dst.fs_addr, &off);
    if (m != kMemL1 && m != kMemL0A && m != kMemL0B) {
        Fail("%s: dst must be in L1 (A1/B1) or L0A/L0B (A2/B2), not in %s", api,
             m == -1 ? "UB" : m == -2 ? "no on-chip memory of this core" : LocalMemName(m));
    }
    if (p.repeatTimes == 0 || p.blockNum == 0) {
        return;   // a NOP, per the API page
    }
    if (p.repeatTimes > 32767 || p.blockNum > 32767 || p.dstGap > 32767) {
        Fail("%s: repeatTimes %u, blockNum %u, dstGap %u must each be at most 32767", api, p.repeatTimes, p.blockNum,
             p.dstGap);
    }
    uint64_t block = m == kMemL1 ? 32 : 512;
    uint64_t pitch = (static_cast<uint64_t>(p.blockNum) + p.dstGap) * block;
    uint64_t span = (p.repeatTimes - 1) * pitch + p.blockNum * block;
    uint64_t at = CheckLocal(api, "dst", dst.fs_addr, dst.GetLength(), span, m, 32);
    uint8_t* base = CurCore().local.data() + at;
    for (uint64_t r = 0; r < p.repeatTimes; ++r) {
        for (uint64_t e = 0; e < p.blockNum * block / sizeof(T); ++e) {
            std::memcpy(base + r * pitch + e * sizeof(T), &p.initValue, sizeof(T));
        }
        MarkLocalWritten(at + r * pitch, p.blockNum * block);
    }
}

// SetFixPipeConfig (矩阵搬出辅助配置接口): points the Fixpipe at the per-channel quantisation parameters
// in the Fixpipe Buffer that a later Fixpipe or DataCopy(L0C->GM) with a vector quant mode (VDEQF16,
// VQF322B8_PRE, VREQ8) applies, one uint64_t per output column, and with isUnitFlag clears the L0C unit
// flags (Mmad and Fixpipe run in program order here: the flags order nothing more).  The per-channel
// ReLU table (reluPre, setRelu) is not modelled: FixpipeParamsV220's reluEn is the plain ReLU.
template <typename T>
inline void SetFixPipeConfig(const LocalTensor<T>& reluPre, const LocalTensor<T>& quantPre, bool isUnitFlag = false,
                             FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    const char* api = "SetFixPipeConfig";
    CheckHasCube(api);
    if (!Target().separated) {
        Fail("SetFixPipeConfig is not available on %s (Atlas A2/A3 only, per its API page)", Target().name);
    }
    (void)reluPre;
    (void)isUnitFlag;
    uint32_t off = 0;
    if (quantPre.fs_addr != nullptr && WhichMem(quantPre.fs_addr, &off) == kMemFB) {   // a table to read
        CurCore().fixpipe_quant_table = static_cast<int64_t>(CheckLocal(api, "quantPre", quantPre.fs_addr,
                                                                        quantPre.GetLength(), 0, kMemFB, 128));
    }
}
template <typename T, bool setRelu = false>
inline void SetFixPipeConfig(const LocalTensor<T>& preData, bool isUnitFlag = false, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    if constexpr (setRelu) {
        fusedsl_cpu::Fail("SetFixPipeConfig<T, true>: a per-channel ReLU table is not modelled by fusedsl's CPU "
                          "implementation (reluEn / reluPre = 1 is the plain ReLU)");
    }
    SetFixPipeConfig(preData, preData, isUnitFlag);
}

// Fixpipe's output layout (FixpipeConfig): ND rows (CFG_ROW_MAJOR, the default) or NZ (CFG_NZ:
// columns in groups of the L0C fractal's 16 (32 for an int8 output), each group mSize rows of
// those elements, groups dstStride 32-byte blocks apart).  CFG_COLUMN_MAJOR is an Ascend 950 layout.
enum class CO2Layout : uint8_t { NZ = 0, ROW_MAJOR, COLUMN_MAJOR };
struct FixpipeConfig {
    CO2Layout format;
    bool isToUB = false;
};
constexpr FixpipeConfig CFG_NZ = {CO2Layout::NZ, false};
constexpr FixpipeConfig CFG_ROW_MAJOR = {CO2Layout::ROW_MAJOR, false};
constexpr FixpipeConfig CFG_COLUMN_MAJOR = {CO2Layout::COLUMN_MAJOR, false};

// Fixpipe L0C -> L1 (Fixpipe（L0C到L1数据搬运）): the NZ matrix into an L1 (C1/A1/B1) tensor, converted by
// quantPre like the GM form.  On Ascend910B the output is NZ whatever the config ("CFG_ROW_MAJOR ... 在L0C
// Buffer -> L1 Buffer通路下不生效"): groups of C0 columns (16, or 32 for 1-byte types), each mSize rows of
// them, dstStride 32-byte blocks apart.  The destination must be 32-byte aligned.
// Row r of column group g of an NZ result: c0 elements read from L0C (each checked written), ReLU
// when asked, converted to D; both Fixpipe forms write these rows (to L1, or to GM in NZ).
// One L0C value on its way out: ReLU, then the conversion quantPre names.  The scalar quant modes
// (随路量化, table 1 for arch 2201) multiply by M1, QUANT_PRE bits [31:0] read as a float whose
// mantissa the hardware keeps to 10 bits (bits [12:0] dropped), or by M2 = 0 for a negative value
// under ReLU; DEQF16 then rounds to half, REQ8 / QF322B8_PRE round to an integer, saturate to
// [-256, 255] and then to int8_t (sign bit 46 set) or uint8_t.
inline bool IsVectorQuant(QuantMode_t q) {
    return q == QuantMode_t::VDEQF16 || q == QuantMode_t::VREQ8 || q == QuantMode_t::VQF322B8_PRE;
}

inline bool IsQuant(QuantMode_t q) {
    return q == QuantMode_t::DEQF16 || q == QuantMode_t::REQ8 || q == QuantMode_t::QF322B8_PRE || IsVectorQuant(q);
}

// The vector quant modes (VDEQF16, VREQ8, VQF322B8_PRE) do what their scalar modes do with column n's
// parameter: the n-th uint64_t of the table SetFixPipeConfig named (the sample's reference computes
// quant_tensor[j] for output column j).
inline uint64_t FixpipeQuantParam(const FixpipeParamsV220& p, uint64_t column) {
    if (!IsVectorQuant(p.quantPre)) {
        return static_cast<uint64_t>(p.deqScalar);
    }
    uint64_t q;
    const fusedsl_cpu::Core& c = fusedsl_cpu::CurCore();
    std::memcpy(&q, c.local.data() + c.fixpipe_quant_table + column * 8, sizeof q);
    return q;
}

template <typename D, typename S>
inline D FixpipeValue(S raw, const FixpipeParamsV220& p, uint64_t quant) {
    using namespace fusedsl_cpu;
    auto v = static_cast<Compute<S>>(raw);
    if (!IsQuant(p.quantPre)) {
        if (p.reluEn && v < 0) {
            v = 0;
        }
        return FromCompute<D>(v);
    }
    const uint32_t bits = static_cast<uint32_t>(quant) & ~0x1FFFu;
    float m1 = 0;
    std::memcpy(&m1, &bits, sizeof m1);
    const float x = static_cast<float>(v) * ((p.reluEn && v < 0) ? 0.0f : m1);
    if constexpr (std::is_same_v<D, half>) {
        return static_cast<half>(std::min(65504.0f, std::max(-65504.0f, x)));
    } else if constexpr (std::is_same_v<D, int8_t> || std::is_same_v<D, uint8_t>) {
        const float q = std::min(255.0f, std::max(-256.0f, std::nearbyint(x)));
        return static_cast<D>(std::is_same_v<D, int8_t> ? std::min(127.0f, std::max(-128.0f, q))
                                                        : std::min(255.0f, std::max(0.0f, q)));
    } else {
        return static_cast<D>(x);   // not reached: CheckFixpipeConversion allows half and 8-bit outputs only
    }
}

template <typename D, typename S, uint64_t c0>
inline void FixpipeNzRow(const char* api, const LocalTensor<S>& src, uint64_t s, const FixpipeParamsV220& p,
                         uint64_t g, uint64_t r, D* row) {
    using namespace fusedsl_cpu;
    for (uint64_t e = 0; e < c0; ++e) {
        uint64_t c = g * c0 + e;
        uint64_t idx = ((c / 16) * p.srcStride + r) * 16 + c % 16;
        CheckLocalWritten(api, "src", s + idx * sizeof(S), sizeof(S));
        row[e] = FixpipeValue<D, S>(src.fs_addr[idx], p, FixpipeQuantParam(p, c));
    }
}

// The conversion and L0C stride both Fixpipe forms (L0C -> L1 and L0C -> GM) check the same way.
template <typename D, typename S>
inline void CheckFixpipeConversion(const FixpipeParamsV220& p, const char* api) {
    using namespace fusedsl_cpu;
    constexpr bool b8 = std::is_same_v<D, int8_t> || std::is_same_v<D, uint8_t>;
    const QuantMode_t m = p.quantPre;
    bool ok = (m == QuantMode_t::NoQuant && std::is_same_v<D, S>) ||
              (m == QuantMode_t::F322F16 && std::is_same_v<S, float> && std::is_same_v<D, half>) ||
              (m == QuantMode_t::F322BF16 && std::is_same_v<S, float> && std::is_same_v<D, bfloat16_t>) ||
              ((m == QuantMode_t::DEQF16 || m == QuantMode_t::VDEQF16) && std::is_same_v<S, int32_t> &&
               std::is_same_v<D, half>) ||
              ((m == QuantMode_t::REQ8 || m == QuantMode_t::VREQ8) && std::is_same_v<S, int32_t> && b8) ||
              ((m == QuantMode_t::QF322B8_PRE || m == QuantMode_t::VQF322B8_PRE) && std::is_same_v<S, float> && b8);
    if (!ok) {
        Fail("%s: quantPre %d from %s to %s; modelled: NoQuant (same type), F322F16 (float -> half), F322BF16 "
             "(float -> bfloat16_t) and the scalar / vector modes (V)DEQF16 (int32_t -> half), (V)REQ8 (int32_t -> "
             "int8_t/uint8_t), (V)QF322B8_PRE (float -> int8_t/uint8_t)", api,
             static_cast<int>(m), TypeName<S>(), TypeName<D>());
    }
    uint64_t columns = IsQuant(m) ? 1 : 0;   // the parameters to check: the scalar one, or one per column
    if (IsVectorQuant(m)) {
        const Core& core = CurCore();
        if (core.fixpipe_quant_table < 0) {
            Fail("%s: quantPre %d is a vector quant mode, but no SetFixPipeConfig named the Fixpipe Buffer table of "
                 "per-channel parameters", api, static_cast<int>(m));
        }
        columns = p.nSize;
        const uint64_t end = static_cast<uint64_t>(core.fixpipe_quant_table) + columns * 8;
        if (end > core.local_at[kMemFB] + LocalMemBytes(kMemFB)) {
            Fail("%s: the %u output columns need %llu bytes of parameters from Fixpipe Buffer offset %llu, past its "
                 "%llu bytes", api, p.nSize, static_cast<unsigned long long>(columns * 8),
                 static_cast<unsigned long long>(core.fixpipe_quant_table - core.local_at[kMemFB]),
                 static_cast<unsigned long long>(LocalMemBytes(kMemFB)));
        }
        CheckLocalWritten(api, "the quant table", static_cast<uint64_t>(core.fixpipe_quant_table), columns * 8);
    }
    for (uint64_t column = 0; column < columns; ++column) {
        const uint64_t q = FixpipeQuantParam(p, column);
        // MCB (bit 36) shifts by N, which the quant page counts from 1 ("b'0000对应表示1") while asc-devkit's
        // reference scripts shift by N itself; the offset (bits 37-45) is a 9-bit integer of unstated sign.
        if ((q >> 36) & 1) {
            Fail("%s: the quant parameter sets MCB (bit 36, shift before quantising), which fusedsl's CPU "
                 "implementation does not model", api);
        }
        const bool deq = m == QuantMode_t::DEQF16 || m == QuantMode_t::VDEQF16;
        if (!deq && ((q >> 37) & 0x1FF) != 0) {
            Fail("%s: the quant parameter has an offset (bits 37-45), which fusedsl's CPU implementation does not "
                 "model", api);
        }
        const bool sign = (q >> 46) & 1;
        if (!deq && sign != std::is_same_v<D, int8_t>) {
            Fail("%s: the quant parameter's sign bit (46) is %d but the output is %s (the quant page: 1 for int8_t, 0 "
                 "for uint8_t)", api, static_cast<int>(sign), TypeName<D>());
        }
    }
    if (p.srcStride < p.mSize || p.srcStride % 16 != 0) {
        Fail("%s: srcStride = %u; it is the L0C matrix's row count per 16-column block, a multiple of 16 and at "
             "least mSize = %u", api, p.srcStride, p.mSize);
    }
}

template <typename D, typename S, const FixpipeConfig& config = CFG_ROW_MAJOR>
inline void Fixpipe(const LocalTensor<D>& dst, const LocalTensor<S>& src, const FixpipeParamsV220& p,
                    FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    const char* api = "Fixpipe(L0C->L1)";
    CheckHasCube(api);
    if (Target().arch != 2201) {
        Fail("%s: the L0C -> L1 path with FixpipeParamsV220 is an Atlas A2/A3 one, not available on %s", api,
             Target().name);
    }
    if (config.format == CO2Layout::COLUMN_MAJOR) {
        Fail("%s: CFG_COLUMN_MAJOR (DN output) is available on Ascend 950 only (the Fixpipe page)", api);
    }
    // ndNum counts the matrices of an NZ2ND move (the Fixpipe page: "NZ2ND多个NZ非连续矩阵的个数"); this
    // NZ2NZ path moves one matrix whatever it says (CANN's batch_matmul reuses its NZ2ND parameters here).
    if (p.isChannelSplit) {
        Fail("%s: isChannelSplit is not modelled by fusedsl's CPU implementation", api);
    }
    if (p.mSize == 0 || p.nSize == 0) {
        return;
    }
    CheckFixpipeConversion<D, S>(p, api);
    constexpr uint64_t c0 = sizeof(D) == 1 ? 32 : 16;
    constexpr uint64_t row_bytes = c0 * sizeof(D);
    if (p.nSize % c0 != 0) {
        Fail("%s: nSize = %u must be a multiple of %llu (the NZ column group of %s)", api, p.nSize,
             static_cast<unsigned long long>(c0), TypeName<D>());
    }
    if (static_cast<uint64_t>(p.dstStride) * 32 < static_cast<uint64_t>(p.mSize) * row_bytes) {
        Fail("%s: dstStride = %u blocks (32 bytes) is less than the %u rows of one C0 group; groups would overlap",
             api, p.dstStride, p.mSize);
    }
    const uint64_t blocks = (p.nSize + 15) / 16;
    const uint64_t s = CheckLocal(api, "src", src.fs_addr, src.GetLength(),
                                  ((blocks - 1) * p.srcStride + p.mSize) * 16 * sizeof(S), kMemL0C);
    const uint64_t groups = p.nSize / c0;
    const uint64_t span = (groups - 1) * p.dstStride * 32 + static_cast<uint64_t>(p.mSize) * row_bytes;
    const uint64_t d = CheckLocal(api, "dst", dst.fs_addr, dst.GetLength(), span, kMemL1);
    Core& core = CurCore();
    for (uint64_t g = 0; g < groups; ++g) {
        for (uint64_t r = 0; r < p.mSize; ++r) {
            D row[c0];
            FixpipeNzRow<D, S, c0>(api, src, s, p, g, r, row);
            const uint64_t at = d + g * p.dstStride * 32 + r * row_bytes;
            std::memcpy(core.local.data() + at, row, row_bytes);
            MarkLocalWritten(at, row_bytes);
        }
    }
}

template <typename D, typename S, const FixpipeConfig& config = CFG_ROW_MAJOR>
inline void Fixpipe(const GlobalTensor<D>& dst, const LocalTensor<S>& src, const FixpipeParamsV220& p,
                    FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    const char* api = config.format == CO2Layout::NZ ? "Fixpipe(L0C->GM, CFG_NZ)" : "Fixpipe(L0C->GM)";
    CheckHasCube(api);
    if (config.format == CO2Layout::COLUMN_MAJOR) {
        Fail("%s: CFG_COLUMN_MAJOR (DN output) is available on Ascend 950 only, not on %s (the Fixpipe page)", api,
             Target().name);
    }
    const bool nz = config.format == CO2Layout::NZ;
    if (p.isChannelSplit) {
        Fail("%s: isChannelSplit = true (float C written as channels) is not modelled by fusedsl's CPU implementation",
             api);
    }
    if (p.mSize == 0 || p.nSize == 0 || p.ndNum == 0) {
        return;
    }
    CheckFixpipeConversion<D, S>(p, api);
    constexpr uint64_t c0 = sizeof(D) == 1 ? 32 : 16;
    constexpr uint64_t row_bytes = c0 * sizeof(D);
    if (nz) {
        if (p.nSize % c0 != 0) {
            Fail("%s: nSize = %u must be a multiple of %llu (the NZ column group of %s) for NZ output", api, p.nSize,
                 static_cast<unsigned long long>(c0), TypeName<D>());
        }
        if (static_cast<uint64_t>(p.dstStride) * 32 < static_cast<uint64_t>(p.mSize) * row_bytes) {
            Fail("%s: dstStride = %u blocks (32 bytes) is less than the %u rows of one C0 group; groups would "
                 "overlap", api, p.dstStride, p.mSize);
        }
    } else if (p.dstStride < p.nSize) {
        Fail("%s: dstStride = %u elements is less than nSize = %u; output rows would overlap", api, p.dstStride,
             p.nSize);
    }
    // ndNum matrices (NZ2ND): matrix i starts i * srcNdStride 16 x 16 fractals into L0C (the unit: 16 *
    // C0_Size) and i * dstNdStride elements into dst.
    // (NZ output moves one matrix: ndNum belongs to NZ2ND, see the L1 form above.)
    const uint64_t nd = nz ? 1 : p.ndNum, src_nd = static_cast<uint64_t>(p.srcNdStride) * 256, dst_nd = p.dstNdStride;
    if (nd > 1 && (src_nd == 0 || dst_nd == 0)) {
        Fail("%s: ndNum = %llu needs srcNdStride and dstNdStride of at least 1 (the Fixpipe page)", api,
             static_cast<unsigned long long>(nd));
    }
    uint64_t blocks = (p.nSize + 15) / 16;
    uint64_t need = ((nd - 1) * src_nd + (blocks - 1) * p.srcStride * 16 + p.mSize * 16) * sizeof(S);
    uint64_t s = CheckLocal(api, "src", src.fs_addr, src.GetLength(), need, kMemL0C);
    uint64_t groups = (p.nSize + c0 - 1) / c0;
    uint64_t span = nz ? ((groups - 1) * p.dstStride * 32 + static_cast<uint64_t>(p.mSize) * row_bytes)
                       : ((nd - 1) * dst_nd + static_cast<uint64_t>(p.mSize - 1) * p.dstStride + p.nSize) * sizeof(D);
    GmBuffer* buf = CheckGm(api, dst, span, true);
    if (nz) {
        for (uint64_t g = 0; g < groups; ++g) {
            for (uint64_t r = 0; r < p.mSize; ++r) {
                D row[c0];
                FixpipeNzRow<D, S, c0>(api, src, s, p, g, r, row);
                auto gp = reinterpret_cast<uint8_t*>(dst.fs_addr) + g * p.dstStride * 32 + r * row_bytes;
                NoteGmWrite(api, buf, gp, row_bytes, false, reinterpret_cast<const uint8_t*>(row));
                std::memcpy(gp, row, row_bytes);
            }
        }
        St().gm_bytes_written += static_cast<uint64_t>(p.mSize) * p.nSize * sizeof(D);
        return;
    }
    for (uint64_t i = 0; i < nd; ++i) {
        for (uint64_t r = 0; r < p.mSize; ++r) {
            std::vector<D> row(p.nSize);
            for (uint64_t c = 0; c < p.nSize; ++c) {
                uint64_t idx = i * src_nd + ((c / 16) * p.srcStride + r) * 16 + c % 16;
                CheckLocalWritten(api, "src", s + idx * sizeof(S), sizeof(S));
                row[c] = FixpipeValue<D, S>(src.fs_addr[idx], p, FixpipeQuantParam(p, c));
            }
            auto g = reinterpret_cast<uint8_t*>(dst.fs_addr + i * dst_nd + r * p.dstStride);
            NoteGmWrite(api, buf, g, p.nSize * sizeof(D), false, reinterpret_cast<const uint8_t*>(row.data()));
            std::memcpy(g, row.data(), p.nSize * sizeof(D));
        }
    }
    St().gm_bytes_written += nd * p.mSize * p.nSize * sizeof(D);
}

// ---- DataCopy L0C -> GM (DataCopy（L0C到GM数据搬运）, Atlas A2/A3): the Fixpipe move configured by
// registers — the scalar quant parameter (SetFixpipePreQuantFlag) and NZ2ND's matrix count and strides
// (SetFixpipeNz2ndFlag) — and DataCopyCO12DstParams.

struct DataCopyCO12DstParams {
    DataCopyCO12DstParams() {}
    DataCopyCO12DstParams(const uint16_t nSizeIn, const uint16_t mSizeIn, const uint32_t dstStrideIn,
                          const uint16_t srcStrideIn, const QuantMode_t quantPreIn, const uint8_t reluPreIn,
                          const bool channelSplitIn, const bool nz2ndEnIn)
        : nSize(nSizeIn), mSize(mSizeIn), dstStride(dstStrideIn), srcStride(srcStrideIn), quantPre(quantPreIn),
          reluPre(reluPreIn), channelSplit(channelSplitIn), nz2ndEn(nz2ndEnIn) {}
    uint8_t sid = 0;
    uint16_t nSize = 0;
    uint16_t mSize = 0;
    uint32_t dstStride = 0;
    uint16_t srcStride = 0;
    uint8_t unitFlag = 0;
    uint8_t clipReluPre = 0;   // Atlas 200I/500 A2 only
    uint8_t eltWiseOp = 0;     // Atlas 200I/500 A2 only
    QuantMode_t quantPre = QuantMode_t::NoQuant;
    uint8_t reluPre = 0;
    bool channelSplit = false;
    bool nz2ndEn = false;
};

inline void SetFixpipePreQuantFlag(uint64_t config, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    fusedsl_cpu::CheckHasCube("SetFixpipePreQuantFlag");
    if (fusedsl_cpu::Target().arch != 2201) {
        fusedsl_cpu::Fail("SetFixpipePreQuantFlag is not modelled on %s (fusedsl models the L0C moves of Atlas A2/A3)",
                          fusedsl_cpu::Target().name);
    }
    fusedsl_cpu::CurCore().fixpipe_quant_pre = config;
}

inline void SetFixpipeNz2ndFlag(uint16_t ndNum, uint16_t srcNdStride, uint16_t dstNdStride, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    const char* api = "SetFixpipeNz2ndFlag";
    CheckHasCube(api);
    if (Target().arch != 2201) {
        Fail("%s is not modelled on %s (fusedsl models the L0C moves of Atlas A2/A3)", api, Target().name);
    }
    if (ndNum == 0) {
        Fail("%s: ndNum = 0; it counts the ND matrices, from 1 (the SetFixpipeNz2ndFlag page)", api);
    }
    if (ndNum > 1 && (srcNdStride == 0 || srcNdStride > 512 || dstNdStride == 0)) {
        Fail("%s: with ndNum = %u, srcNdStride (%u) is 1..512 (1024-byte units) and dstNdStride (%u) at least 1 "
             "(the SetFixpipeNz2ndFlag page)", api, ndNum, srcNdStride, dstNdStride);
    }
    Core& c = CurCore();
    c.nz2nd_num = ndNum;
    c.nz2nd_src_stride = srcNdStride;
    c.nz2nd_dst_stride = dstNdStride;
}

template <typename T, typename U>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<U>& src, const DataCopyCO12DstParams& p,
                     FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    const char* api = "DataCopy(L0C->GM)";
    CheckHasCube(api);
    if (Target().arch != 2201) {
        Fail("%s is not available on %s (the DataCopy L0C -> GM page: not on Atlas 训练/推理系列)", api, Target().name);
    }
    if (p.channelSplit || p.clipReluPre != 0 || p.eltWiseOp != 0) {
        Fail("%s: channelSplit, clipReluPre and eltWiseOp are not modelled by fusedsl's CPU implementation (the last "
             "two are Atlas 200I/500 A2's)", api);
    }
    if (p.reluPre > 1) {
        Fail("%s: reluPre = %u; 0 (none) and 1 (normal ReLU) are the modes (the page)", api, p.reluPre);
    }
    if (p.nSize % 16 != 0) {
        Fail("%s: nSize = %u must be a multiple of 16 (the page)", api, p.nSize);
    }
    const Core& c = CurCore();
    FixpipeParamsV220 f;
    f.nSize = p.nSize;
    f.mSize = p.mSize;
    f.srcStride = p.srcStride;
    f.dstStride = p.dstStride;
    f.reluEn = p.reluPre == 1;
    f.quantPre = p.quantPre;
    f.deqScalar = static_cast<int64_t>(c.fixpipe_quant_pre);
    f.ndNum = c.nz2nd_num;
    f.srcNdStride = c.nz2nd_src_stride;
    f.dstNdStride = c.nz2nd_dst_stride;
    f.unitFlag = p.unitFlag;
    if (p.nz2ndEn) {
        Fixpipe<T, U, CFG_ROW_MAJOR>(dst, src, f);
    } else {
        Fixpipe<T, U, CFG_NZ>(dst, src, f);
    }
}

// ---- 4:2 structured sparsity (LoadDataWithSparse, MmadWithSparse; Atlas A2/A3, int8_t) ------------
// B is given dense: of every 4 K values of a column at most 2 are nonzero, and the dense B (K/2 x N, Zn
// fractals of 16 n x 32 k) keeps those 2 while an index matrix of 2-bit values (same Zn layout, 4 to a
// byte from the low bits up: 128-byte fractals) says where they were.  Index pair (i0, i1) of dense rows
// 2g, 2g + 1 selects A's K values 4g + i0 and 4g + max(i0, 1 + i1) (the MmadWithSparse page's selection
// table; "X/X" rows pick one value twice).

using LoadData2dParams = LoadData2DParams;

template <typename T, typename U>
inline void LoadDataWithSparse(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<U>& idx,
                               const LoadData2DParams& p, FUSEDSL_CPU_SITE) {
    using namespace fusedsl_cpu;
    AtSite at_site(fs_site);
    const char* api = "LoadDataWithSparse";
    static_assert(std::is_same_v<T, int8_t> && std::is_same_v<U, uint8_t>,
                  "LoadDataWithSparse: dst/src int8_t, idx uint8_t (the page)");
    CheckHasCube(api);
    if (Target().arch != 2201) {
        Fail("%s is not available on %s (the LoadDataWithSparse page: Atlas A2/A3)", api, Target().name);
    }
    if (MemOfPosition(dst.GetPosition()) != kMemL0B) {
        Fail("%s: dst is a %s tensor; the load goes L1 -> L0B (B2) only", api, PositionName(dst.GetPosition()));
    }
    if (p.repeatTimes == 0) {
        return;   // a NOP, per the page
    }
    // Only startIndex and repeatTimes count: the fractals move contiguously (the page).
    const uint64_t first = p.startIndex, count = p.repeatTimes;
    const uint64_t s = CheckLocal(api, "src", src.fs_addr, src.GetLength(), (first + count) * 512, kMemL1);
    const uint64_t i = CheckLocal(api, "idx", idx.fs_addr, idx.GetLength(), (first + count) * 128, kMemL1);
    const uint64_t d = CheckLocal(api, "dst", dst.fs_addr, dst.GetLength(), count * 512, kMemL0B, 512);
    Core& c = CurCore();
    const uint64_t d_off = d - c.local_at[kMemL0B];
    for (std::vector<uint8_t>* plane : {&c.local, &c.local_written}) {
        std::memmove(plane->data() + d, plane->data() + s + first * 512, count * 512);
    }
    std::memcpy(c.sparse_index.data() + d_off / 4, c.local.data() + i + first * 128, count * 128);
    std::memcpy(c.sparse_index_written.data() + d_off / 4, c.local_written.data() + i + first * 128, count * 128);
}

template <typename C, typename A, typename B>
inline void MmadWithSparse(const LocalTensor<C>& dst, const LocalTensor<A>& a, const LocalTensor<B>& b,
                           const MmadParams& p, FUSEDSL_CPU_SITE) {
    using namespace fusedsl_cpu;
    AtSite at_site(fs_site);
    const char* api = "MmadWithSparse";
    static_assert(std::is_same_v<C, int32_t> && std::is_same_v<A, int8_t> && std::is_same_v<B, int8_t>,
                  "MmadWithSparse: int8_t A and B into int32_t C (the page)");
    CheckHasCube(api);
    if (Target().arch != 2201) {
        Fail("%s is not available on %s (the MmadWithSparse page: Atlas A2/A3)", api, Target().name);
    }
    if (p.m == 0 || p.n == 0 || p.k == 0) {
        return;
    }
    if (p.k % 4 != 0) {
        Fail("%s: k = %u is not a multiple of 4; 4:2 sparsity keeps 2 of every 4 K values", api, p.k);
    }
    const uint64_t M1 = (p.m + 15) / 16, N1 = (p.n + 15) / 16, K1 = (p.k + 31) / 32, KD1 = (p.k / 2 + 31) / 32;
    const uint64_t kd = p.k / 2;
    auto a_at = [&](uint64_t r, uint64_t kk) { return ((r / 16) * K1 + kk / 32) * 512 + (r % 16) * 32 + kk % 32; };
    auto b_at = [&](uint64_t row, uint64_t col) { return ((row / 32) * N1 + col / 16) * 512 + (col % 16) * 32 + row % 32; };
    const uint64_t sa = CheckLocal(api, "a", a.fs_addr, a.GetLength(), a_at(p.m - 1, p.k - 1) + 1, kMemL0A, 512);
    const uint64_t sb = CheckLocal(api, "b", b.fs_addr, b.GetLength(), b_at(kd - 1, p.n - 1) + 1, kMemL0B, 512);
    const uint64_t c_bytes = M1 * N1 * 256 * sizeof(C);
    const uint64_t sc = CheckLocal(api, "dst", dst.fs_addr, WritableLength(api, dst.fs_addr, dst.GetLength(), c_bytes,
                                   kMemL0C), c_bytes, kMemL0C, 512);
    (void)KD1;
    Core& core = CurCore();
    const uint64_t b_off = sb - core.local_at[kMemL0B];
    auto index = [&](uint64_t row, uint64_t col) {
        const uint64_t e = b_at(row, col);   // the index element sits where its B value does, a quarter the size
        const uint64_t byte = (b_off + e) / 4;
        if (!core.sparse_index_written[byte]) {
            Fail("%s: the index of dense B row %llu, column %llu was never loaded; LoadDataWithSparse B with its "
                 "index first", api, static_cast<unsigned long long>(row), static_cast<unsigned long long>(col));
        }
        return (core.sparse_index[byte] >> (2 * ((b_off + e) % 4))) & 3;
    };
    for (uint64_t r = 0; r < p.m; ++r) {
        CheckLocalWritten(api, "a", sa + a_at(r, 0), 1);
    }
    if (!p.cmatrixInitVal) {
        CheckLocalWritten(api, "dst (accumulated onto)", sc, c_bytes);
    }
    for (uint64_t r = 0; r < M1 * 16; ++r) {
        for (uint64_t col = 0; col < N1 * 16; ++col) {
            int64_t acc = 0;
            if (r < p.m && col < p.n) {
                for (uint64_t g = 0; g < kd / 2; ++g) {
                    const uint32_t i0 = index(2 * g, col), i1 = index(2 * g + 1, col);
                    if (i0 > 2 || i1 > 2) {
                        Fail("%s: index values are 0..2; column %llu has %u, %u at dense rows %llu, %llu", api,
                             static_cast<unsigned long long>(col), i0, i1, static_cast<unsigned long long>(2 * g),
                             static_cast<unsigned long long>(2 * g + 1));
                    }
                    const uint64_t k0 = 4 * g + i0, k1 = 4 * g + std::max<uint32_t>(i0, 1 + i1);
                    for (auto [kk, row] : {std::pair<uint64_t, uint64_t>{k0, 2 * g}, {k1, 2 * g + 1}}) {
                        CheckLocalWritten(api, "a", sa + a_at(r, kk), 1);
                        CheckLocalWritten(api, "b", sb + b_at(row, col), 1);
                        acc += static_cast<int64_t>(a.fs_addr[a_at(r, kk)]) * b.fs_addr[b_at(row, col)];
                    }
                }
            }
            C& out = dst.fs_addr[((col / 16) * M1 + r / 16) * 256 + (r % 16) * 16 + col % 16];
            out = p.cmatrixInitVal ? static_cast<C>(acc) : static_cast<C>(out + static_cast<C>(acc));
        }
    }
    MarkLocalWritten(sc, c_bytes);
    St().vector_instructions += 1;
}

// ---- Atlas 推理系列 (310P) AI Core: the vector unit's moves between UB and L0C ------------------------

// BroadCastVecToMM(dst, src, blockCount, blockLen, srcGap, dstGap) (BroadCastVecToMM(ISASI), 310P AI Core
// only): per block, blockLen groups of 16 UB elements each become a 16 x 16 L0C fractal of 16 equal rows;
// blocks are srcGap 32-byte blocks apart in UB after each block and dstGap fractals apart in L0C.  A
// vector-pipe instruction; half, int32_t, float; dst 256-element aligned.
template <typename T, typename U>
inline void BroadCastVecToMM(const LocalTensor<T>& dst, const LocalTensor<U>& src, const int32_t blockCount,
                             const uint8_t blockLen, const uint8_t srcGap, const uint8_t dstGap, FUSEDSL_CPU_SITE) {
    using namespace fusedsl_cpu;
    AtSite at_site(fs_site);
    const char* api = "BroadCastVecToMM";
    if (Target().arch != 2002) {
        Fail("%s is not available on %s (the BroadCastVecToMM page: Atlas 推理系列 AI Core only)", api, Target().name);
    }
    static_assert(std::is_same_v<T, U>, "BroadCastVecToMM: src and dst have the same type");
    constexpr bool ok = std::is_same_v<T, half> || std::is_same_v<T, int32_t> || std::is_same_v<T, float>;
    if (!ok) {
        Fail("%s: %s; the types are half, int32_t and float", api, TypeName<T>());
    }
    if (blockCount < 1 || blockCount > 255 || blockLen < 1) {
        Fail("%s: blockCount = %d and blockLen = %u; blockCount is 1..255 and blockLen 1..255 (the page)", api,
             blockCount, blockLen);
    }
    OnPipe v(PIPE_V);
    const uint64_t src_block = blockLen * 16ull * sizeof(T);
    const uint64_t src_pitch = src_block + srcGap * 32ull;
    const uint64_t dst_pitch = (blockLen + static_cast<uint64_t>(dstGap)) * 256 * sizeof(T);
    const uint64_t src_need = (blockCount - 1) * src_pitch + src_block;
    const uint64_t dst_need = (blockCount - 1) * dst_pitch + blockLen * 256ull * sizeof(T);
    const uint32_t s = CheckUb(api, "src", src.fs_addr, src.GetLength(), src_need, sizeof(T));
    const uint64_t d = CheckLocal(api, "dst", dst.fs_addr, dst.GetLength(), dst_need, kMemL0C, 256 * sizeof(T));
    Core& c = CurCore();
    for (int32_t b = 0; b < blockCount; ++b) {
        CheckWritten(api, "src", static_cast<uint32_t>(s + b * src_pitch), src_block);
        for (uint32_t g = 0; g < blockLen; ++g) {
            const uint8_t* row = c.ub.data() + s + b * src_pitch + g * 16 * sizeof(T);
            const uint64_t frac = d + b * dst_pitch + g * 256ull * sizeof(T);
            for (uint32_t r = 0; r < 16; ++r) {
                std::memcpy(c.local.data() + frac + r * 16 * sizeof(T), row, 16 * sizeof(T));
            }
            MarkLocalWritten(frac, 256 * sizeof(T));
        }
    }
}

}  // namespace AscendC

// CANN's padding-mode type of DataCopyEnhancedParams (only PAD_NONE: padMode is reserved, per the page).
enum class pad_t : uint8_t { PAD_NONE = 0 };

namespace AscendC {

using ::pad_t;

enum class BlockMode : uint8_t {
    BLOCK_MODE_NORMAL = 0,
    BLOCK_MODE_MATRIX,
    BLOCK_MODE_VECTOR,
    BLOCK_MODE_SMALL_CHANNEL,
    BLOCK_MODE_DEPTHWISE,
};
enum class DeqScale : uint8_t { DEQ_NONE = 0, DEQ, VDEQ, DEQ8, VDEQ8, DEQ16, VDEQ16 };

struct DataCopyEnhancedParams {
    DataCopyEnhancedParams() {}
    DataCopyEnhancedParams(const BlockMode blockModeIn, const DeqScale deqScaleIn, const uint64_t deqValueIn,
                           const uint8_t sidStoreModeIn, const bool isReluIn, const pad_t padModeIn,
                           const uint64_t padValueIn)
        : blockMode(blockModeIn), deqScale(deqScaleIn), deqValue(deqValueIn), sidStoreMode(sidStoreModeIn),
          isRelu(isReluIn), padMode(padModeIn), padValue(padValueIn) {}
    BlockMode blockMode = BlockMode::BLOCK_MODE_NORMAL;
    DeqScale deqScale = DeqScale::DEQ_NONE;
    uint64_t deqValue = 0;
    uint8_t sidStoreMode = 0;
    bool isRelu = false;
    pad_t padMode = pad_t::PAD_NONE;
    uint64_t padValue = 0;
    uint64_t deqTensorAddr = 0;
};

// DataCopy(L0C -> UB, DataCopyEnhancedParams) (DataCopy（L0C Buffer到UB数据搬运）, 310P AI Core: CO1 -> CO2):
// in BLOCK_MODE_MATRIX, blockCount blocks of blockLen 16 x 16 fractals (the unit: one fractal of the L0C
// type, srcGap the same unit after each block), each to UB dstGap 32-byte blocks after the previous one,
// with ReLU when isRelu and float -> half on the way.  A vector-pipe move.  The quant modes (deqScale) and
// the other block modes are not modelled.
template <typename T, typename U>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const DataCopyParams& p,
                     const DataCopyEnhancedParams& e, FUSEDSL_CPU_SITE) {
    ::fusedsl_cpu::AtSite fs_at(fs_site);
    using namespace fusedsl_cpu;
    const char* api = "DataCopy(L0C->UB, DataCopyEnhancedParams)";
    if (Target().arch != 2002) {
        Fail("%s: the L0C -> UB move is Atlas 推理系列 AI Core's (the page); not available on %s", api, Target().name);
    }
    if (e.blockMode != BlockMode::BLOCK_MODE_MATRIX || e.deqScale != DeqScale::DEQ_NONE) {
        Fail("%s: blockMode %d with deqScale %d; fusedsl models BLOCK_MODE_MATRIX without quantisation (DEQ_NONE)",
             api, static_cast<int>(e.blockMode), static_cast<int>(e.deqScale));
    }
    constexpr bool ok = (std::is_same_v<T, U> && (std::is_same_v<T, half> || std::is_same_v<T, float> ||
                                                  std::is_same_v<T, int32_t>)) ||
                        (std::is_same_v<U, float> && std::is_same_v<T, half>);
    if (!ok) {
        Fail("%s: %s -> %s; without quantisation the types are half, float, int32_t (same type) and float -> half",
             api, TypeName<U>(), TypeName<T>());
    }
    if (p.blockCount == 0 || p.blockLen == 0) {
        return;
    }
    OnPipe v(PIPE_V);
    const uint64_t src_frac = 256 * sizeof(U), dst_frac = 256 * sizeof(T);
    const uint64_t src_pitch = (static_cast<uint64_t>(p.blockLen) + p.srcGap) * src_frac;
    const uint64_t dst_pitch = p.blockLen * dst_frac + p.dstGap * 32ull;
    const uint64_t s = CheckLocal(api, "src", src.fs_addr, src.GetLength(),
                                  (p.blockCount - 1) * src_pitch + p.blockLen * src_frac, kMemL0C);
    const uint32_t d = CheckUb(api, "dst", dst.fs_addr, dst.GetLength(),
                               (p.blockCount - 1) * dst_pitch + p.blockLen * dst_frac, sizeof(T));
    Core& c = CurCore();
    for (uint32_t b = 0; b < p.blockCount; ++b) {
        CheckLocalWritten(api, "src", s + b * src_pitch, p.blockLen * src_frac);
        for (uint64_t i = 0; i < p.blockLen * 256ull; ++i) {
            U raw;
            std::memcpy(&raw, c.local.data() + s + b * src_pitch + i * sizeof(U), sizeof(U));
            auto x = static_cast<Compute<U>>(raw);
            if (e.isRelu && x < 0) {
                x = 0;
            }
            const T out = FromCompute<T>(x);
            std::memcpy(c.ub.data() + d + b * dst_pitch + i * sizeof(T), &out, sizeof(T));
        }
        MarkWritten(static_cast<uint32_t>(d + b * dst_pitch), p.blockLen * dst_frac);
    }
}

}  // namespace AscendC

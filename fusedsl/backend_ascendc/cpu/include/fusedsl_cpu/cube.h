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

#include "data_copy.h"

namespace fusedsl_cpu {

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

inline uint8_t* LocalMemBase(int m) {
    Core& c = CurCore();
    return c.local.data() + c.local_at[m];
}

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

inline void MarkLocalWritten(uint64_t at, uint64_t bytes) {
    std::memset(CurCore().local_written.data() + at, 1, bytes);
}

template <typename T>
constexpr uint32_t C0Of() {
    return 32 / sizeof(T);
}

// ASCENDC.md §3 / Mmad's type table: (A, B) -> L0C accumulator.
template <typename A, typename B, typename C>
inline void CheckMmadTypes(const char* api) {
    constexpr bool ok = (std::is_same_v<A, half> && std::is_same_v<B, half> && std::is_same_v<C, float>) ||
                        (std::is_same_v<A, bfloat16_t> && std::is_same_v<B, bfloat16_t> && std::is_same_v<C, float>) ||
                        (std::is_same_v<A, float> && std::is_same_v<B, float> && std::is_same_v<C, float>) ||
                        (std::is_same_v<A, int8_t> && std::is_same_v<B, int8_t> && std::is_same_v<C, int32_t>);
    if (!ok) {
        Fail("%s: A %s x B %s -> C %s is not a cube type combination (half/bfloat16_t/float -> float, int8_t -> "
             "int32_t)", api, TypeName<A>(), TypeName<B>(), TypeName<C>());
    }
    if ((std::is_same_v<A, float> || std::is_same_v<A, bfloat16_t>) && !Target().separated) {
        Fail("%s: %s inputs to the cube are not supported on %s (half and int8_t are)", api, TypeName<A>(),
             Target().name);
    }
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

}  // namespace fusedsl_cpu

namespace AscendC {

// Nd2NzParams{ndNum, nValue, dValue, srcNdMatrixStride, srcDValue, dstNzC0Stride, dstNzNStride,
// dstNzMatrixStride}: ndNum ND matrices of nValue rows x dValue columns (rows srcDValue elements
// apart, matrices srcNdMatrixStride elements apart) into NZ: column block j of row r at
// (j * dstNzC0Stride + r * dstNzNStride) C0-element blocks, matrices dstNzMatrixStride elements apart.
struct Nd2NzParams {
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

// MmadParams{m, n, k, unitFlag, cmatrixSource, cmatrixInitVal}: C (m x n, L0C) = A (m x k, L0A) x
// B (k x n, L0B), accumulated onto C unless cmatrixInitVal.  CANN's other fields follow (isBias,
// kDirectionAlign, the feature-map offset, sparsity and Winograd switches): only their defaults are
// modelled, Mmad refuses the rest.
struct MmadParams {
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
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const Nd2NzParams& p) {
    using namespace fusedsl_cpu;
    const char* api = "DataCopy(GM->L1, Nd2NzParams)";
    CheckHasCube(api);
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
inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2DParams& p) {
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

template <typename C, typename A, typename B>
inline void Mmad(const LocalTensor<C>& dst, const LocalTensor<A>& a, const LocalTensor<B>& b, const MmadParams& p) {
    using namespace fusedsl_cpu;
    const char* api = "Mmad";
    CheckHasCube(api);
    CheckMmadTypes<A, B, C>(api);
    if (p.m == 0 || p.n == 0 || p.k == 0) {
        return;
    }
    if (p.cmatrixSource) {
        Fail("%s: cmatrixSource = true (C initialised from the bias table) is not modelled", api);
    }
    if (p.isBias || p.fmOffset != 0 || p.enSsparse || p.enWinogradA || p.enWinogradB) {
        Fail("%s: isBias, fmOffset, enSsparse and the Winograd switches are not modelled by fusedsl's CPU "
             "implementation (leave them at their defaults)", api);
    }
    if (p.kDirectionAlign && Target().arch != 2201) {
        Fail("%s: kDirectionAlign = true is supported on Atlas A2/A3 only, not on %s (the Mmad page)", api,
             Target().name);
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
    uint64_t a_bytes = gemv ? p.k * sizeof(A)
                            : ((((p.m - 1) / 16) * K1 + kb_last) * fa + ((p.m - 1) % 16) * KA + k_last) * sizeof(A);
    const uint64_t b_bytes = (((kb_last * N1 + (p.n - 1) / 16) * fa) + ((p.n - 1) % 16) * KA + k_last) * sizeof(B);
    uint64_t sa = CheckLocal(api, "a", a.fs_addr, a.GetLength(), a_bytes, kMemL0A, 512);
    uint64_t sb = CheckLocal(api, "b", b.fs_addr, b.GetLength(), b_bytes, kMemL0B, 512);
    uint64_t sc = CheckLocal(api, "dst", dst.fs_addr, dst.GetLength(), M1 * N1 * 256 * sizeof(C), kMemL0C, 512);
    // Only the elements the product uses must have been written (rows < m, columns < n, k < K); the padding
    // of partly filled fractals is never read into C.
    for (uint64_t kb = 0; kb < (p.k + KA - 1) / KA; ++kb) {
        const uint64_t used = std::min<uint64_t>(KA, p.k - kb * KA) * sizeof(A);
        for (uint64_t r = 0; r < p.m; ++r) {
            CheckLocalWritten(api, "a", sa + (gemv ? kb * KA : ((r / 16) * K1 + kb) * fa + (r % 16) * KA) * sizeof(A),
                              used);
        }
        for (uint64_t col = 0; col < p.n; ++col) {
            CheckLocalWritten(api, "b", sb + ((kb * N1 + col / 16) * fa + (col % 16) * KA) * sizeof(B), used);
        }
    }
    if (!p.cmatrixInitVal) {
        CheckLocalWritten(api, "dst (accumulated onto)", sc, M1 * N1 * 256 * sizeof(C));
    }
    using Acc = std::conditional_t<std::is_same_v<C, int32_t>, int64_t, float>;
    for (uint64_t r = 0; r < M1 * 16; ++r) {
        for (uint64_t col = 0; col < N1 * 16; ++col) {
            Acc acc = 0;
            if (r < p.m && col < p.n) {
                for (uint64_t kk = 0; kk < p.k; ++kk) {
                    A av = gemv ? a.fs_addr[kk] : a.fs_addr[((r / 16) * K1 + kk / KA) * fa + (r % 16) * KA + kk % KA];
                    B bv = b.fs_addr[((kk / KA) * N1 + col / 16) * fa + (col % 16) * KA + kk % KA];
                    acc += static_cast<Acc>(static_cast<Compute<A>>(av)) * static_cast<Acc>(static_cast<Compute<B>>(bv));
                }
            }
            C& out = dst.fs_addr[((col / 16) * M1 + r / 16) * 256 + (r % 16) * 16 + col % 16];
            out = p.cmatrixInitVal ? static_cast<C>(acc) : static_cast<C>(out + static_cast<C>(acc));
        }
    }
    MarkLocalWritten(sc, M1 * N1 * 256 * sizeof(C));
    St().vector_instructions += 1;
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
inline void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2DParamsV2& p) {
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
inline void Fill(const LocalTensor<T>& dst, const InitConstValueParams<U>& p) {
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

// SetFixPipeConfig (矩阵搬出辅助配置接口): loads the per-channel ReLU / quantisation parameters that a
// later Fixpipe or DataCopy(L0C->GM) with a vector quant mode (VDEQF16, VQF322B8_PRE ...) applies, and
// with isUnitFlag clears the L0C unit flags.  fusedsl's Fixpipe refuses the vector quant modes and runs
// Mmad and Fixpipe in program order (the unit flags order nothing more), so beyond the chip check
// there is nothing to record.
template <typename T>
inline void SetFixPipeConfig(const LocalTensor<T>& reluPre, const LocalTensor<T>& quantPre, bool isUnitFlag = false) {
    using namespace fusedsl_cpu;
    CheckHasCube("SetFixPipeConfig");
    if (!Target().separated) {
        Fail("SetFixPipeConfig is not available on %s (Atlas A2/A3 only, per its API page)", Target().name);
    }
    (void)reluPre;
    (void)quantPre;
    (void)isUnitFlag;
}
template <typename T, bool setRelu = false>
inline void SetFixPipeConfig(const LocalTensor<T>& preData, bool isUnitFlag = false) {
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
template <typename D, typename S, uint64_t c0>
inline void FixpipeNzRow(const char* api, const LocalTensor<S>& src, uint64_t s, const FixpipeParamsV220& p,
                         uint64_t g, uint64_t r, D* row) {
    using namespace fusedsl_cpu;
    for (uint64_t e = 0; e < c0; ++e) {
        uint64_t c = g * c0 + e;
        uint64_t idx = ((c / 16) * p.srcStride + r) * 16 + c % 16;
        CheckLocalWritten(api, "src", s + idx * sizeof(S), sizeof(S));
        auto v = static_cast<Compute<S>>(src.fs_addr[idx]);
        if (p.reluEn && v < 0) {
            v = 0;
        }
        row[e] = FromCompute<D>(v);
    }
}

// The conversion and L0C stride both Fixpipe forms (L0C -> L1 and L0C -> GM) check the same way.
template <typename D, typename S>
inline void CheckFixpipeConversion(const FixpipeParamsV220& p, const char* api) {
    using namespace fusedsl_cpu;
    bool ok = (p.quantPre == QuantMode_t::NoQuant && std::is_same_v<D, S>) ||
              (p.quantPre == QuantMode_t::F322F16 && std::is_same_v<S, float> && std::is_same_v<D, half>) ||
              (p.quantPre == QuantMode_t::F322BF16 && std::is_same_v<S, float> && std::is_same_v<D, bfloat16_t>);
    if (!ok) {
        Fail("%s: quantPre %d from %s to %s; modelled: NoQuant (same type), F322F16 (float -> half), F322BF16 "
             "(float -> bfloat16_t)", api, static_cast<int>(p.quantPre), TypeName<S>(), TypeName<D>());
    }
    if (p.srcStride < p.mSize || p.srcStride % 16 != 0) {
        Fail("%s: srcStride = %u; it is the L0C matrix's row count per 16-column block, a multiple of 16 and at "
             "least mSize = %u", api, p.srcStride, p.mSize);
    }
}

template <typename D, typename S, const FixpipeConfig& config = CFG_ROW_MAJOR>
inline void Fixpipe(const LocalTensor<D>& dst, const LocalTensor<S>& src, const FixpipeParamsV220& p) {
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
inline void Fixpipe(const GlobalTensor<D>& dst, const LocalTensor<S>& src, const FixpipeParamsV220& p) {
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
                auto v = static_cast<Compute<S>>(src.fs_addr[idx]);
                if (p.reluEn && v < 0) {
                    v = 0;
                }
                row[c] = FromCompute<D>(v);
            }
            auto g = reinterpret_cast<uint8_t*>(dst.fs_addr + i * dst_nd + r * p.dstStride);
            NoteGmWrite(api, buf, g, p.nSize * sizeof(D), false, reinterpret_cast<const uint8_t*>(row.data()));
            std::memcpy(g, row.data(), p.nSize * sizeof(D));
        }
    }
    St().gm_bytes_written += nd * p.mSize * p.nSize * sizeof(D);
}

}  // namespace AscendC

// Host-side Matmul tiling (CANN's matmul_tiling::MatmulApiTiling / MultiCoreMatmulTiling)
// producing a TCubeTiling that fits the target's L1/L0A/L0B/L0C, and the host form of the
// struct, optiling::TCubeTiling (set_<field>/get_<field>, GetDataSize, SaveToBuffer).
//
// The split is fusedsl's own, not CANN's search: cores split M and N to balance the largest
// block; baseM/baseN default to at most 128 x 256 (halved until one L0C buffer fits); baseK
// is the largest multiple of the 32-byte K fractal that lets L0A and L0B double-buffer; L1
// holds as many K steps of A and B (double-buffered when possible) as fit.  GetTiling
// returns 0, or -1 after printing why to stderr.
#pragma once

#include <array>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "kernel_tiling/kernel_tiling.h"
#include "register/tilingdata_base.h"  // CANN's tiling_api.h brings the tiling-data macros too
#include "tiling/platform/platform_ascendc.h"
#include "tiling/pad_tiling.h"
#include "tiling/adv_tiling.h"

namespace optiling {

// The host tiling struct as CANN's BEGIN_TILING_DATA_DEF generates it: one int32 per
// TCubeTiling field, set_/get_ accessors, serialisation in field order.
class TCubeTiling {
public:
#define FUSEDSL_ACCESSORS(name)                             \
    void set_##name(int32_t v) { fs_data.name = v; }        \
    int32_t get_##name() const { return fs_data.name; }
    FUSEDSL_CUBE_TILING_FIELDS(FUSEDSL_ACCESSORS)
#undef FUSEDSL_ACCESSORS

    size_t GetDataSize() const { return sizeof(fs_data); }
    void SaveToBuffer(void* buf, size_t capacity) const {
        std::memcpy(buf, &fs_data, std::min(capacity, sizeof(fs_data)));
    }

    AscendC::tiling::TCubeTiling fs_data;
};

}  // namespace optiling

namespace matmul_tiling {

enum class TPosition { GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC, LCM = VECCALC, SPM, SHM = SPM,
                       TSCM, MAX };
enum class CubeFormat { ND = 0, NZ, ZN, ZZ, NN, ND_ALIGN, SCALAR, VECTOR };
// ge::DataType numbering.
enum class DataType { DT_FLOAT = 0, DT_FLOAT16 = 1, DT_INT8 = 2, DT_INT32 = 3, DT_UINT8 = 4, DT_INT16 = 6,
                      DT_UINT16 = 7, DT_UINT32 = 8, DT_INT64 = 9, DT_UINT64 = 10, DT_DOUBLE = 11, DT_BOOL = 12,
                      DT_BF16 = 27, DT_UNDEFINED = 28, DT_INT4 = 29 };
enum class MatrixTraverse { NOSET = 0, FIRSTM = 1, FIRSTN = 2 };
enum class DequantType { SCALAR = 0, TENSOR = 1 };
enum class ScheduleType : int32_t { INNER_PRODUCT = 0, OUTER_PRODUCT = 1, N_BUFFER_33 = 2 };

// Hints for the host tiling (the Matmul template the kernel uses, L1 caching, the schedule and
// traversal order).  fusedsl's tiling honours the traversal order and N_BUFFER_33's limit of 3 on
// stepM/stepKa/stepKb (the NBuffer33MatmulPolicy sample's constraint); the others pick device data
// movement and change no result.
struct MatmulConfigParams {
    int32_t mmConfigType;
    bool enableL1CacheUB;
    ScheduleType scheduleType;
    MatrixTraverse traverse;
    bool enVecND2NZ;
    MatmulConfigParams(int32_t mmConfigTypeIn = 1, bool enableL1CacheUBIn = false,
                       ScheduleType scheduleTypeIn = ScheduleType::INNER_PRODUCT,
                       MatrixTraverse traverseIn = MatrixTraverse::NOSET, bool enVecND2NZIn = false)
        : mmConfigType(mmConfigTypeIn), enableL1CacheUB(enableL1CacheUBIn), scheduleType(scheduleTypeIn),
          traverse(traverseIn), enVecND2NZ(enVecND2NZIn) {}
};

namespace detail {

inline int32_t DataTypeSize(DataType t) {
    switch (t) {
        case DataType::DT_FLOAT: case DataType::DT_INT32: case DataType::DT_UINT32: return 4;
        case DataType::DT_FLOAT16: case DataType::DT_BF16: case DataType::DT_INT16: case DataType::DT_UINT16:
            return 2;
        // int4 counts a whole byte here, as CANN's own byte table does (asc-devkit
        // include/adv_api/matmul/matmul_tiling_base.h: DT_INT4 -> 1): room is over-counted, never short
        case DataType::DT_INT8: case DataType::DT_UINT8: case DataType::DT_BOOL: case DataType::DT_INT4: return 1;
        case DataType::DT_INT64: case DataType::DT_UINT64: case DataType::DT_DOUBLE: return 8;
        default: return 0;
    }
}

inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t RoundUpTo(int64_t a, int64_t b) { return CeilDiv(a, b) * b; }

struct MatrixType {
    TPosition pos = TPosition::GM;
    CubeFormat format = CubeFormat::ND;
    DataType dtype = DataType::DT_UNDEFINED;
    bool trans = false;
    bool set = false;
};

}  // namespace detail

class MatmulApiTilingBase {
public:
    explicit MatmulApiTilingBase(const platform_ascendc::PlatformAscendC& platform) : platform_(platform) {}
    MatmulApiTilingBase() : platform_(*platform_ascendc::PlatformAscendCManager::GetInstance()) {}
    virtual ~MatmulApiTilingBase() = default;

    int32_t SetAType(TPosition pos, CubeFormat format, DataType dtype, bool isTrans = false) {
        a_ = {pos, format, dtype, isTrans, true};
        return 0;
    }
    int32_t SetBType(TPosition pos, CubeFormat format, DataType dtype, bool isTrans = false) {
        b_ = {pos, format, dtype, isTrans, true};
        return 0;
    }
    int32_t SetCType(TPosition pos, CubeFormat format, DataType dtype) {
        c_ = {pos, format, dtype, false, true};
        return 0;
    }
    int32_t SetBiasType(TPosition pos, CubeFormat format, DataType dtype) {
        bias_ = {pos, format, dtype, false, true};
        return 0;
    }
    int32_t SetShape(int32_t m, int32_t n, int32_t k) {
        m_ = m;
        n_ = n;
        k_ = k;
        return m > 0 && n > 0 && k > 0 ? 0 : -1;
    }
    int32_t SetOrgShape(int32_t orgM, int32_t orgN, int32_t orgK) { return SetOrgShape(orgM, orgN, orgK, orgK); }
    int32_t SetOrgShape(int32_t orgM, int32_t orgN, int32_t orgKa, int32_t orgKb) {
        orgM_ = orgM;
        orgN_ = orgN;
        orgKa_ = orgKa;
        orgKb_ = orgKb;
        return 0;
    }
    int32_t SetFixSplit(int32_t baseM = -1, int32_t baseN = -1, int32_t baseK = -1) {
        fixM_ = baseM;
        fixN_ = baseN;
        fixK_ = baseK;
        return 0;
    }
    int32_t SetBias(bool isBias = false) {
        isBias_ = isBias;
        return 0;
    }
    int32_t EnableBias(bool isBias = false) { return SetBias(isBias); }
    // The quant/dequant mode the kernel's SetQuantScalar (SCALAR) or SetQuantVector (TENSOR) uses
    // (the SetDequantType page); the tiling itself does not change with it here.
    int32_t SetDequantType(DequantType dequantType) {
        dequantType_ = dequantType;
        return 0;
    }
    DequantType GetDequantType() const { return dequantType_; }
    // A 4:2 sparse B (SparseMatmulType): the shapes stay those of the original B here.
    int32_t SetSparse(bool isSparseIn = false) {
        isSparse_ = isSparseIn;
        return 0;
    }
    // Bytes of L1, L0C and UB the tiling may use; -1 = the whole buffer.
    int32_t SetBufferSpace(int32_t l1Size = -1, int32_t l0CSize = -1, int32_t ubSize = -1, int32_t btSize = -1) {
        l1Space_ = l1Size;
        l0cSpace_ = l0CSize;
        ubSpace_ = ubSize;
        (void)btSize;
        return 0;
    }
    void SetMatmulConfigParams(int32_t mmConfigTypeIn = 1, bool enableL1CacheUBIn = false,
                               ScheduleType scheduleTypeIn = ScheduleType::INNER_PRODUCT,
                               MatrixTraverse traverseIn = MatrixTraverse::NOSET, bool enVecND2NZIn = false) {
        SetMatmulConfigParams(
            MatmulConfigParams(mmConfigTypeIn, enableL1CacheUBIn, scheduleTypeIn, traverseIn, enVecND2NZIn));
    }
    void SetMatmulConfigParams(const MatmulConfigParams& configParams) {
        config_params_ = configParams;
        if (configParams.traverse != MatrixTraverse::NOSET) {
            SetTraverse(configParams.traverse);
        }
    }
    int32_t SetTraverse(MatrixTraverse traverse) {
        traverse_ = traverse;
        return 0;
    }
    // Batch matmul (IterateBatch): the BSNGD axes of A and B (b, s, n, g, d), of C (b, s1, n, g, s2), the
    // most matrices one IterateBatch computes, and for the NORMAL layout the batch counts and M/N/K of each
    // matrix (the SetALayout / SetBLayout / SetCLayout / SetBatchNum / SetBatchInfoForNormal pages).  They are
    // copied into the tiling's ALayoutInfo* / BLayoutInfo* / CLayoutInfo* / BatchNum fields.
    int32_t SetALayout(int32_t b, int32_t s, int32_t n, int32_t g, int32_t d) {
        aLayout_ = {b, s, n, g, d};
        return 0;
    }
    int32_t SetBLayout(int32_t b, int32_t s, int32_t n, int32_t g, int32_t d) {
        bLayout_ = {b, s, n, g, d};
        return 0;
    }
    int32_t SetCLayout(int32_t b, int32_t s1, int32_t n, int32_t g, int32_t s2) {
        cLayout_ = {b, s1, n, g, s2};
        return 0;
    }
    int32_t SetBatchNum(int32_t batchNum) {
        batchNum_ = batchNum;
        return batchNum > 0 ? 0 : -1;
    }
    int32_t SetBatchInfoForNormal(int32_t batchA, int32_t batchB, int32_t m, int32_t n, int32_t k) {
        aLayout_ = {batchA, m, 1, 1, k};
        bLayout_ = {batchB, k, 1, 1, n};
        cLayout_ = {std::max(batchA, batchB), m, 1, 1, n};
        return batchA > 0 && batchB > 0 ? 0 : -1;
    }

    int64_t GetTiling(optiling::TCubeTiling& tiling) { return GetTiling(tiling.fs_data); }
    int64_t GetTiling(AscendC::tiling::TCubeTiling& tiling) {
        AscendC::tiling::TCubeTiling t;
        std::string why = Compute(t);
        if (!why.empty()) {
            std::fprintf(stderr, "[ERROR] matmul_tiling::GetTiling (%s): %s\n", platform_.fs_target().name,
                         why.c_str());
            return -1;
        }
        tiling = t;
        return 0;
    }

protected:
    DequantType dequantType_ = DequantType::SCALAR;
    bool isSparse_ = false;

    // Cores the M x N output is split over; 1 for the single-core API.
    virtual int32_t Dim() const { return 1; }
    // A per-core block fixed by SetSingleShape (multi-core API), or -1.
    virtual int32_t FixedSingleM() const { return -1; }
    virtual int32_t FixedSingleN() const { return -1; }
    virtual bool SplitK() const { return false; }

    std::string Compute(AscendC::tiling::TCubeTiling& t) const {
        using detail::CeilDiv;
        using detail::RoundUpTo;
        if (!a_.set || !b_.set || !c_.set) {
            return "SetAType, SetBType and SetCType must all be called before GetTiling";
        }
        if (isBias_ && !bias_.set) {
            return "SetBias(true) needs SetBiasType";
        }
        // A size SetShape left unset (-1, CANN's default) is the SetOrgShape size.
        const int64_t m_ = this->m_ > 0 ? this->m_ : orgM_;
        const int64_t n_ = this->n_ > 0 ? this->n_ : orgN_;
        const int64_t k_ = this->k_ > 0 ? this->k_ : orgKa_;
        if (m_ <= 0 || n_ <= 0 || k_ <= 0) {
            return "SetShape(M, N, K) (or SetOrgShape) with positive sizes must be called before GetTiling";
        }
        const int64_t orgM = orgM_ > 0 ? orgM_ : m_, orgN = orgN_ > 0 ? orgN_ : n_;
        const int64_t orgKa = orgKa_ > 0 ? orgKa_ : k_, orgKb = orgKb_ > 0 ? orgKb_ : k_;
        if (m_ > orgM || n_ > orgN || k_ > orgKa || orgKa != orgKb) {
            return "SetShape(M, N, K) must lie inside SetOrgShape(M, N, Ka, Kb) with Ka == Kb";
        }
        const int64_t sa = detail::DataTypeSize(a_.dtype), sb = detail::DataTypeSize(b_.dtype);
        const int64_t sc = detail::DataTypeSize(c_.dtype);
        const int64_t sbias = isBias_ ? detail::DataTypeSize(bias_.dtype) : 0;
        if (sa == 0 || sb == 0 || sc == 0) {
            return "unsupported data type";
        }
        const int64_t acc = 4;                       // L0C accumulates in float / int32
        // K fractal: 32 bytes of A (64 int4 values)
        const int64_t c0k = a_.dtype == DataType::DT_INT4 ? 64 : 32 / sa;
        const ::fusedsl_cpu::TargetInfo& tgt = platform_.fs_target();
        uint64_t l1 = 0, l0c = 0, ub = 0;
        platform_.GetCoreMemSize(platform_ascendc::CoreMemType::L1, l1);
        platform_.GetCoreMemSize(platform_ascendc::CoreMemType::L0_C, l0c);
        platform_.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ub);
        if (l1Space_ >= 0) l1 = std::min<uint64_t>(l1, l1Space_);
        if (l0cSpace_ >= 0) l0c = std::min<uint64_t>(l0c, l0cSpace_);
        if (ubSpace_ >= 0) ub = std::min<uint64_t>(ub, ubSpace_);
        const int64_t l0a = tgt.l0a_bytes, l0b = tgt.l0b_bytes;

        // Core split: the (mDim, nDim) with the smallest per-core block, then the most cores
        // used, then the smaller mDim (N split), except between mirror-image blocks (m x n against
        // n x m), where the larger mDim wins.  This reproduces the splits asc-devkit's samples
        // document or rely on for CANN's tiling (not its algorithm, which fusedsl does not have):
        // 512 x 128 x 128, SetDim(2), SetFixSplit(128, 64) splits N (matmul_leakyrelu_advanced_api,
        // "按N轴分核切分2份"); 512 x 512 x 128, SetDim(2) splits M (matmul_advanced_api, "按M轴分2个核");
        // matmul_format_nd_align (128 x 7679) offsets C rows by the unaligned N, so it needs N split.
        // An even split (every block whole but the one the unaligned M or N itself cuts short) is taken over
        // a smaller uneven one unless that one has less than half its block or it would use half the cores or
        // fewer: CANN's tiling takes core counts
        // that are factors of M and N in 16-row units (asc-devkit matmul_tiling_algorithm.cpp GetDims), and
        // samples that pass no SetTail (matmul_nbuffer33, matmul_async_iterate) read past A/B on a ragged block.
        const int32_t dim = Dim();
        if (dim < 1 || dim > static_cast<int32_t>(platform_.GetCoreNum())) {
            return ::fusedsl_cpu::Format("SetDim(%d): %s has %u cores for this kernel (GetCoreNum)", dim, tgt.name,
                                         platform_.GetCoreNum());
        }
        const int64_t alignM = fixM_ > 0 ? fixM_ : 16, alignN = fixN_ > 0 ? fixN_ : 16;
        struct Split {
            int64_t cost = -1, used = 0, m = -1, n = -1, k = 0;
            // md grows: on a full tie the earlier (smaller mDim) stays unless this block mirrors it
            void Offer(int64_t cost_, int64_t used_, int64_t sm, int64_t sn, int64_t sk) {
                const bool mirror = sm == n && sn == m && sm != sn && sk == k;
                if (cost < 0 || cost_ < cost || (cost_ == cost && (used_ > used || (used_ == used && mirror)))) {
                    cost = cost_, used = used_, m = sm, n = sn, k = sk;
                }
            }
        };
        Split any, even;
        // EnableMultiCoreSplitK adds a K split (kDim cores share each M x N block, their partial sums added
        // into C with AtomicAdd by the kernel): only kDim that cut K into equal whole fractal columns, as the
        // kernel computes singleCoreK of K on every core (no K tail is passed to it).
        for (int64_t kd = 1; kd <= (SplitK() ? dim : 1); ++kd) {
            if (kd > 1 && k_ % (kd * c0k) != 0) {
                continue;
            }
            const int64_t sk = k_ / kd;
            const int64_t nUnits = CeilDiv(n_, alignN);
            for (int64_t md = 1; md <= dim / kd; ++md) {
                // nDim: as many as the cores allow, and the largest that divides N's units
                int64_t ndFactor = std::min<int64_t>(dim / kd / md, nUnits);
                while (nUnits % ndFactor != 0) {
                    --ndFactor;
                }
                for (int64_t nd : {static_cast<int64_t>(dim / kd / md), ndFactor}) {
                    int64_t sm = std::min<int64_t>(m_, RoundUpTo(CeilDiv(m_, md), alignM));
                    int64_t sn = std::min<int64_t>(n_, RoundUpTo(CeilDiv(n_, nd), alignN));
                    if (FixedSingleM() > 0) sm = std::min<int64_t>(m_, FixedSingleM());
                    if (FixedSingleN() > 0) sn = std::min<int64_t>(n_, FixedSingleN());
                    int64_t used = CeilDiv(m_, sm) * CeilDiv(n_, sn) * kd;
                    if (used > dim) {
                        continue;
                    }
                    const int64_t cost = sm * sn * sk;
                    any.Offer(cost, used, sm, sn, sk);
                    if (CeilDiv(m_, sm) * sm - m_ < alignM && CeilDiv(n_, sn) * sn - n_ < alignN) {
                        even.Offer(cost, used, sm, sn, sk);
                    }
                }
            }
        }
        const Split& best = even.cost >= 0 && even.cost <= 2 * any.cost && 2 * even.used > any.used ? even : any;
        int64_t singleM = best.m, singleN = best.n, singleK = best.k;
        // A mini shape takes one core, as CANN's tiling does (matmul_tiling_algorithm.cpp PreProcessMiniShape):
        // when the 16 x 16 blocks of C are no more than the cores, A's and B's blocks each fit L0A/L0B and C's
        // L0C, and M and N are at most 32 blocks, mDim = nDim = 1 (CANN's matmul_tscm copies all of A per core).
        {
            const int64_t m16 = CeilDiv(m_, 16), n16 = CeilDiv(n_, 16), kc = CeilDiv(k_, c0k);
            const int64_t ab_blocks = l0a / 512, c_blocks = static_cast<int64_t>(l0c) / 256 / 4;
            if (FixedSingleM() <= 0 && FixedSingleN() <= 0 && !SplitK() && m16 * n16 <= dim && m16 * kc <= ab_blocks &&
                n16 * kc <= ab_blocks && m16 * n16 <= c_blocks && m16 <= 32 && n16 <= 32) {
                singleM = m_, singleN = n_, singleK = k_;
            }
        }

        if (singleM < 0) {
            return ::fusedsl_cpu::Format("SetSingleShape(%d, %d) splits M x N = %d x %d into more than SetDim(%d) "
                                         "blocks", FixedSingleM(), FixedSingleN(), static_cast<int>(m_),
                                         static_cast<int>(n_), dim);
        }
        // Base block: one L0C buffer (two when they fit).
        int64_t baseM = fixM_ > 0 ? fixM_ : std::min<int64_t>(RoundUpTo(singleM, 16), 128);
        int64_t baseN = fixN_ > 0 ? fixN_ : std::min<int64_t>(RoundUpTo(singleN, 16), 256);
        if (baseM % 16 != 0 || baseN % 16 != 0) {
            return ::fusedsl_cpu::Format("SetFixSplit(%lld, %lld): baseM and baseN must be multiples of 16",
                                         static_cast<long long>(baseM), static_cast<long long>(baseN));
        }
        while (baseM * baseN * acc > static_cast<int64_t>(l0c)) {
            if (fixM_ > 0 && fixN_ > 0) {
                return ::fusedsl_cpu::Format("baseM x baseN = %lld x %lld needs %lld bytes of L0C, %s has %llu",
                                             static_cast<long long>(baseM), static_cast<long long>(baseN),
                                             static_cast<long long>(baseM * baseN * acc), tgt.name,
                                             static_cast<unsigned long long>(l0c));
            }
            if ((baseN >= baseM || fixM_ > 0) && fixN_ <= 0 && baseN > 16) {
                baseN /= 2;
            } else if (fixM_ <= 0 && baseM > 16) {
                baseM /= 2;
            } else {
                return "no base block fits L0C";
            }
            baseM = RoundUpTo(baseM, 16);
            baseN = RoundUpTo(baseN, 16);
        }
        const int64_t dbL0C = 2 * baseM * baseN * acc <= static_cast<int64_t>(l0c) ? 2 : 1;

        // baseK: L0A and L0B double-buffered.
        int64_t baseK = fixK_;
        if (baseK <= 0) {
            int64_t kmax = std::min(l0a / (2 * baseM * sa), l0b / (2 * baseN * sb));
            baseK = std::min<int64_t>(kmax / c0k * c0k, RoundUpTo(singleK, c0k));
        }
        if (baseK < c0k || baseK % c0k != 0) {
            return ::fusedsl_cpu::Format("baseK = %lld: it must be a positive multiple of %lld (32 bytes of A); "
                                         "baseM/baseN too large for L0A/L0B", static_cast<long long>(baseK),
                                         static_cast<long long>(c0k));
        }
        if (2 * baseM * baseK * sa > l0a || 2 * baseN * baseK * sb > l0b) {
            return ::fusedsl_cpu::Format("baseM x baseK (%lld x %lld) or baseN x baseK (%lld x %lld), double-buffered, "
                                         "exceed L0A/L0B (%lld / %lld bytes)", static_cast<long long>(baseM),
                                         static_cast<long long>(baseK), static_cast<long long>(baseN),
                                         static_cast<long long>(baseK), static_cast<long long>(l0a),
                                         static_cast<long long>(l0b));
        }

        // L1: as many K steps of A and B panels as fit, double-buffered when possible.
        const int64_t kSteps = CeilDiv(singleK, baseK);
        const int64_t biasBytes = isBias_ ? baseN * sbias : 0;
        int64_t stepK = 0, db = 0;
        for (int64_t s = kSteps; s >= 1 && stepK == 0; --s) {
            for (int64_t d = 2; d >= 1; --d) {
                int64_t need = d * s * (baseM * baseK * sa + baseN * baseK * sb) + biasBytes;
                if (need <= static_cast<int64_t>(l1)) {
                    stepK = s;
                    db = d;
                    break;
                }
            }
        }
        if (stepK == 0) {
            return ::fusedsl_cpu::Format("one baseM x baseK block of A and one baseN x baseK block of B do not fit "
                                         "the %llu bytes of L1", static_cast<unsigned long long>(l1));
        }
        const bool cInUb = c_.pos == TPosition::VECIN || c_.pos == TPosition::VECCALC || c_.pos == TPosition::VECOUT;
        if (cInUb && static_cast<uint64_t>(baseM * baseN * sc) > ub) {
            return ::fusedsl_cpu::Format("a baseM x baseN tile of C in UB needs %lld bytes, UB has %llu",
                                         static_cast<long long>(baseM * baseN * sc), static_cast<unsigned long long>(ub));
        }

        t = AscendC::tiling::TCubeTiling{};
        t.usedCoreNum = static_cast<int32_t>(CeilDiv(m_, singleM) * CeilDiv(n_, singleN) * (k_ / singleK));
        t.M = static_cast<int32_t>(orgM);
        t.N = static_cast<int32_t>(orgN);
        t.Ka = static_cast<int32_t>(orgKa);
        t.Kb = static_cast<int32_t>(orgKb);
        t.singleCoreM = static_cast<int32_t>(singleM);
        t.singleCoreN = static_cast<int32_t>(singleN);
        t.singleCoreK = static_cast<int32_t>(singleK);
        t.baseM = static_cast<int32_t>(baseM);
        t.baseN = static_cast<int32_t>(baseN);
        t.baseK = static_cast<int32_t>(baseK);
        t.stepM = 1;
        t.stepN = 1;
        if (config_params_.scheduleType == ScheduleType::N_BUFFER_33 && stepK > 3) {
            stepK = 3;
        }
        t.stepKa = static_cast<int32_t>(stepK);
        t.stepKb = static_cast<int32_t>(stepK);
        t.depthA1 = static_cast<int32_t>(db * stepK);
        t.depthB1 = static_cast<int32_t>(db * stepK);
        t.isBias = isBias_ ? 1 : 0;
        t.iterateOrder = traverse_ == MatrixTraverse::FIRSTN ? 1 : 0;
        t.shareL1Size = static_cast<int32_t>(db * stepK * (baseM * baseK * sa + baseN * baseK * sb) + biasBytes);
        t.shareL0CSize = static_cast<int32_t>(baseM * baseN * acc);
        t.shareUbSize = 0;
        t.dbL0A = 2;
        t.dbL0B = 2;
        t.dbL0C = static_cast<int32_t>(dbL0C);
        t.batchM = t.batchN = t.singleBatchM = t.singleBatchN = 1;
        if (aLayout_[0] == 0 && bLayout_[0] == 0 && cLayout_[0] == 0 && batchNum_ == 0) {
            return "";   // not a batch matmul: the batch fields keep their defaults
        }
        t.ALayoutInfoB = aLayout_[0], t.ALayoutInfoS = aLayout_[1], t.ALayoutInfoN = aLayout_[2];
        t.ALayoutInfoG = aLayout_[3], t.ALayoutInfoD = aLayout_[4];
        t.BLayoutInfoB = bLayout_[0], t.BLayoutInfoS = bLayout_[1], t.BLayoutInfoN = bLayout_[2];
        t.BLayoutInfoG = bLayout_[3], t.BLayoutInfoD = bLayout_[4];
        t.CLayoutInfoB = cLayout_[0], t.CLayoutInfoS1 = cLayout_[1], t.CLayoutInfoN = cLayout_[2];
        t.CLayoutInfoG = cLayout_[3], t.CLayoutInfoS2 = cLayout_[4];
        t.BatchNum = batchNum_;
        return "";
    }

    const platform_ascendc::PlatformAscendC& platform_;
    detail::MatrixType a_, b_, c_, bias_;
    int32_t m_ = 0, n_ = 0, k_ = 0;
    int32_t orgM_ = 0, orgN_ = 0, orgKa_ = 0, orgKb_ = 0;
    int32_t fixM_ = -1, fixN_ = -1, fixK_ = -1;
    int32_t l1Space_ = -1, l0cSpace_ = -1, ubSpace_ = -1;
    bool isBias_ = false;
    MatrixTraverse traverse_ = MatrixTraverse::NOSET;
    MatmulConfigParams config_params_;
    std::array<int32_t, 5> aLayout_{}, bLayout_{}, cLayout_{};
    int32_t batchNum_ = 0;
};

// Tiling for one core computing the whole SetShape block.
class MatmulApiTiling : public MatmulApiTilingBase {
public:
    using MatmulApiTilingBase::MatmulApiTilingBase;
};

// Tiling for a batch matmul (IterateBatch / IterateNBatch): one core's matrices, with the batch axes set by
// SetALayout / SetBLayout / SetCLayout / SetBatchNum or SetBatchInfoForNormal.
class BatchMatmulTiling : public MatmulApiTilingBase {
public:
    using MatmulApiTilingBase::MatmulApiTilingBase;
};

// Tiling for SetDim(n) cores splitting M and N (and K after EnableMultiCoreSplitK); usedCoreNum may
// come out below n.  On a
// separated chip the cores are the vector cores of a mixed kernel (two per launched block).
class MultiCoreMatmulTiling : public MatmulApiTilingBase {
public:
    using MatmulApiTilingBase::MatmulApiTilingBase;

    int32_t SetDim(int32_t dim) {
        dim_ = dim;
        return dim > 0 ? 0 : -1;
    }
    int32_t SetSingleShape(int32_t singleM = -1, int32_t singleN = -1, int32_t singleK = -1) {
        (void)singleK;
        fixSingleM_ = singleM;
        fixSingleN_ = singleN;
        return 0;
    }
    // EnableMultiCoreSplitK page: cores may also split K (C then only in GM, summed with AtomicAdd).
    void EnableMultiCoreSplitK(bool flag) { splitK_ = flag; }
    int32_t GetSingleShape(int32_t& shapeM, int32_t& shapeN, int32_t& shapeK) {
        AscendC::tiling::TCubeTiling t;
        if (!Compute(t).empty()) {
            return -1;
        }
        shapeM = t.singleCoreM;
        shapeN = t.singleCoreN;
        shapeK = t.singleCoreK;
        return 0;
    }

protected:
    int32_t Dim() const override { return dim_; }
    int32_t FixedSingleM() const override { return fixSingleM_; }
    int32_t FixedSingleN() const override { return fixSingleN_; }
    bool SplitK() const override { return splitK_; }

private:
    bool splitK_ = false;
    int32_t dim_ = 1;
    int32_t fixSingleM_ = -1, fixSingleN_ = -1;
};

}  // namespace matmul_tiling

// fusedsl CPU implementation of the Ascend C Matmul high-level API (ASCENDC.md §3.1-§3.2).
//
// The cube work runs on the vector instance that calls the API, as the API hides the AIC/AIV
// split from kernel code: each Iterate() computes one baseM x baseN tile of C (float or
// int32 accumulation, bias added, K summed in order) from A and B in GM, and GetTensorC
// rounds it to C's type into UB or GM.  What the cube would reject is checked:
//   - the chip has the API and the (A, B, Bias, C) type combination (targets.py);
//   - on separated chips (910B) the kernel runs in MIX_MODE (or AIC_MODE) and REGIST_MATMUL_OBJ
//     comes before any InitBuffer (a warning: CANN's CPU debug mode accepts it);
//   - the TCubeTiling fits L1, L0A, L0B and L0C and its base blocks are fractal-aligned;
//   - A/B/bias reads stay inside their GM buffers; GetTensorC's UB destination is a UB
//     tensor, 32-byte aligned and large enough; 310P has its SetLocalWorkspace.
// GM bytes read are counted per tile (each tile reads its A rows and B columns over K), an
// upper bound on what the cube's L1 reuse would read.  A may also be in TSCM (user-managed L1,
// NZ; tscm.h) or, on 310P, in UB (VECOUT, ND rows orgKa apart: the coupled core copies UB -> L1),
// which Iterate reads without GM traffic.
#pragma once

#include <vector>

#include "cube.h"
#include "data_copy.h"
#include "kernel_tiling/kernel_tiling.h"

#include "matmul_config.h"

namespace AscendC {

constexpr int32_t DEFAULT_C0_SIZE = 32;   // bytes per DataBlock, the unit of DataCopyParams

// The Matmul API's integer helpers kernels use for their own tiling: the quotient rounded up,
// and num1 rounded up to a multiple of num2 (num2 must be positive).
template <typename T>
inline T Ceil(T num1, T num2) {
    if (!(num2 > 0)) {
        fusedsl_cpu::Fail("Ceil(num1, num2): num2 must be positive, not %lld", static_cast<long long>(num2));
    }
    return (num1 + num2 - 1) / num2;
}
template <typename T>
inline T CeilAlign(T num1, T num2) {
    return Ceil(num1, num2) * num2;
}

// User callbacks that replace the API's own GM->L1 copies and C write-back (the MatmulCallBackFunc page).
// CopyA1 / CopyB1 are modelled: for each base block of A (row = its M block, col = its K block, useM x useK)
// and of B (row = K block, col = N block, useK x useN) the Matmul calls the function with an L1 tensor to fill
// with the block in NZ (c0-element column groups of the block's rows rounded up to 16) and reads the block
// from there, with SetUserDefInfo's and SetSelfDefineData's values; DataCopyOut is not modelled (refused at
// compile time).
using MatmulCopyInFunc = void (*)(const LocalTensor<int8_t>&, const __gm__ void*, int, int, int, int, const uint64_t,
                                  const uint64_t);
template <auto DataCopyOutFunc = nullptr, auto CopyA1Func = nullptr, auto CopyB1Func = nullptr>
struct MatmulCallBackFunc {
    static constexpr bool fs_copy_out = DataCopyOutFunc != nullptr;
    static constexpr MatmulCopyInFunc fs_copy_a1 = CopyA1Func;
    static constexpr MatmulCopyInFunc fs_copy_b1 = CopyB1Func;
};

// GetMmDstType<A>::Type: the L0C (accumulator) type of a Matmul with A of type T, for a user-managed CO1.
template <typename T>
struct GetMmDstType {
    using Type = std::conditional_t<std::is_same_v<T, int8_t> || fusedsl_cpu::kIsB4<T>, int32_t, float>;
};

// Matmul's last template argument (CANN: a template template parameter, MATMUL_POLICY): the default
// policy, or one of the policies asc-devkit's samples pick (impl matmul_policy.h): NBuffer33 (A's 3 x 3
// base blocks kept in L1: a schedule only, C unchanged; MDL config, IterateAll only) and the triangular
// ones (only the base tiles on or above / below the diagonal of the single-core block are written out,
// GetResultImpl's IsInTrianMatmul; Atlas A2/A3 only).  fs_kind tells them apart.
namespace Impl {
constexpr int32_t QUEUE_DEPTH = 1;   // the depth of a user-managed CO1 queue (CANN's matmul_co1_output)
namespace Detail {
enum class FsPolicyKind { DEFAULT, NBUFFER_33, UPPER_TRIANGULAR, LOWER_TRIANGULAR };

template <const auto& MM_CFG = CFG_NORM, typename... Rest>
struct MatmulPolicy {
    static constexpr FsPolicyKind fs_kind = FsPolicyKind::DEFAULT;
};
template <const auto& MM_CFG = CFG_NORM, typename... Rest>
struct NBuffer33MatmulPolicy {
    static constexpr FsPolicyKind fs_kind = FsPolicyKind::NBUFFER_33;
};
template <const auto& MM_CFG = CFG_NORM, typename... Rest>
struct TrianUpperMatmulPolicy {
    static constexpr FsPolicyKind fs_kind = FsPolicyKind::UPPER_TRIANGULAR;
};
template <const auto& MM_CFG = CFG_NORM, typename... Rest>
struct TrianLowerMatmulPolicy {
    static constexpr FsPolicyKind fs_kind = FsPolicyKind::LOWER_TRIANGULAR;
};
}  // namespace Detail
}  // namespace Impl

template <TPosition POSITION, CubeFormat FORMAT, typename TYPE, bool ISTRANS = false,
          LayoutMode LAYOUT = LayoutMode::NONE, bool IBSHARE = false, TPosition SRCPOS = TPosition::GM>
struct MatmulType {
    constexpr static TPosition pos = POSITION;
    constexpr static CubeFormat format = FORMAT;
    using T = TYPE;
    constexpr static bool isTrans = ISTRANS;
    constexpr static LayoutMode layout = LAYOUT;
    constexpr static bool ibShare = IBSHARE;
    constexpr static TPosition srcPos = SRCPOS;
};

// B of a 4:2 sparse Matmul (SparseMatmulType page): B given dense (2 of every 4 K values) with a 2-bit
// index matrix set by Matmul::SetSparseIndex; INDEX_POSITION is where that index lives.
template <TPosition POSITION, TPosition INDEX_POSITION, CubeFormat FORMAT, typename TYPE, bool ISTRANS = false,
          LayoutMode LAYOUT = LayoutMode::NONE, bool IBSHARE = false>
struct SparseMatmulType : public MatmulType<POSITION, FORMAT, TYPE, ISTRANS, LAYOUT, IBSHARE> {
    constexpr static TPosition indexPosition = INDEX_POSITION;
    constexpr static bool fs_sparse = true;
};

}  // namespace AscendC

namespace fusedsl_cpu {

using AscendC::MatmulConfig;

// Per-block state of the cube side, kept in the core (a parked block keeps its own).
inline CubeBlockState& CubeState() {
    Core& c = CurCore();
    if (c.cube.generation != c.generation) {
        c.cube = CubeBlockState{};
        c.cube.generation = c.generation;
        c.cube.sys_workspace = RT().launch_workspace;
    }
    return c.cube;
}

constexpr int kMaxMatmulObjects = 4;   // ASCENDC.md §3.1, REGIST_MATMUL_OBJ

constexpr bool IsUbTensorPosition(TPosition p) {
    return p == TPosition::VECIN || p == TPosition::VECOUT || p == TPosition::VECCALC;
}

// Type-independent state and checks of a Matmul object.
class MatmulBase {
public:
    MatmulBase() = default;
    MatmulBase(const MatmulBase&) = delete;
    MatmulBase& operator=(const MatmulBase&) = delete;

    // No End() is demanded: a separated chip's AIC leaves its KFC server loop on the SERVICE_QUIT message
    // the vector core's client object sends from its destructor (asc-devkit dav_c220/kfc/kfc_comm_client.h,
    // kernel_kfc.h), not on End(), whose MMFUN_END only resets the server's Matmul; the End page asks for it
    // when one core switches between Matmul objects, and CANN checks nothing (its batch samples call none).
    ~MatmulBase() = default;

    // REGIST_MATMUL_OBJ / Init: every check that needs only the tiling and the types.
    void fs_Register(const char* api, TPipeState* pipe, uint8_t* workspace, const TCubeTiling* tiling,
                     bool need_workspace, const char* ta, const char* tb, const char* tbias, const char* tc,
                     uint32_t sa, uint32_t sb, uint32_t sbias, uint32_t sc, bool c_in_ub, bool a_in_l1 = false,
                     uint32_t c0k_a = 0, bool c_in_l0c = false) {
        const TargetInfo& t = Target();
        Runtime& rt = RT();
        if (t.num_matmul == 0) {
            Fail("%s: the Matmul high-level API is not available on %s (Atlas 训练系列 has no Matmul API)", api, t.name);
        }
        if (t.separated && rt.kernel_mode == KernelMode::AIV_MODE) {
            Fail("%s: on %s a Matmul kernel runs on the cube core; launch it as a mixed kernel "
                 "(KernelMode::MIX_MODE / MIX_AIC_1_1, __mix__) or a cube-only one (KernelMode::AIC_MODE, __cube__) — the "
                 "current mode, AIV_MODE, has no cube core", api, t.name);
        }
        if (t.separated && rt.kernel_mode == KernelMode::AIC_MODE && c_in_ub) {
            Fail("%s: a cube-only (AIC_MODE) kernel on %s has no UB; C must go to GM (MatmulType<TPosition::GM, ...>)",
                 api, t.name);
        }
        if (t.separated && rt.kernel_type == KERNEL_TYPE_AIV_ONLY) {
            Fail("%s: KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY) declares a vector-only kernel, which has no "
                 "cube core; use KERNEL_TYPE_MIX_AIC_1_2", api);
        }
        // The REGIST_MATMUL_OBJ page: "in separated mode it must be called before InitBuffer".  CANN's
        // CPU debug mode does not check it and CANN's own MatmulLeakyRelu kernel-launch samples (sync and
        // async) register after their InitBuffer calls, so fusedsl warns (once per launch) and goes on;
        // the CPU model's result does not depend on the order.
        if (t.separated && pipe != nullptr && pipe->fs_buffers > 0) {
            Warn("AscendCWarning",
                 Format("%s: called after TPipe::InitBuffer (%d buffer(s) already planned); the REGIST_MATMUL_OBJ "
                        "page asks for it before any InitBuffer in separated mode — move %s above the InitBuffer "
                        "calls (reported once per launch)", api, pipe->fs_buffers, api),
                 "regist-order");
        }
        CubeBlockState& cs = CubeState();
        const bool counted = fs_registered && fs_generation == CurCore().generation;
        if (!counted) {
            if (cs.matmul_objects + 1 > kMaxMatmulObjects) {
                Fail("%s: a kernel may register at most %d Matmul objects", api, kMaxMatmulObjects);
            }
            cs.matmul_objects += 1;
        }
        if (need_workspace && t.separated) {
            if (workspace == nullptr) {
                Fail("%s: the system workspace is null; pass GetSysWorkSpacePtr() after SetSysWorkspace(workspace) "
                     "(kernel-launch projects) with a workspace of at least GetLibApiWorkSpaceSize() = %u bytes",
                     api, LibApiWorkspaceBytes());
            }
            GmBuffer* b = FindGm(workspace);
            if (b != nullptr && static_cast<uint64_t>(b->base + b->bytes - workspace) < LibApiWorkspaceBytes()) {
                Fail("%s: the system workspace has %llu bytes left in GM buffer '%s'; the Matmul API needs "
                     "GetLibApiWorkSpaceSize() = %u bytes on %s", api,
                     static_cast<unsigned long long>(b->base + b->bytes - workspace), b->name.c_str(),
                     LibApiWorkspaceBytes(), t.name);
            }
        }
        if (tiling == nullptr) {
            Fail("%s: the TCubeTiling pointer is null", api);
        }
        CheckCombination(api, ta, tb, tbias, tc);
        // Served over KFC (a mixed kernel's vector side calls it, separated chips): the top of L1 holds the
        // KFC messages.  A cube-only Matmul (ASCENDC_CUBE_ONLY on the cube core, AIC_MODE) has all of L1.
        const bool kfc = t.separated && IsMixMode(rt.kernel_mode) && !rt.on_aic;
        uint64_t bias_bytes = 0;
        const uint64_t l1_need = CheckTiling(api, *tiling, sa, sb, sbias, sc, c_in_ub, a_in_l1, c0k_a, kfc,
                                             &bias_bytes);
        cs.l1_matmul_bytes += l1_need - (counted ? fs_l1_need : 0);   // what tscm.h's L1 check adds
        fs_l1_need = l1_need;
        if (pipe == nullptr) {
            pipe = CurCore().pipe;   // Matmul::Init without a pipe plans in the kernel's TPipe (GetTPipePtr)
        }
        if (!counted && pipe != nullptr) {
            PlanLocal(api, *pipe, *tiling, l1_need - bias_bytes, bias_bytes, c_in_l0c, kfc);
        } else if (!counted) {   // no pipe to plan in: only the capacity
            fs_bias_unplaced = l1_need > t.l1_bytes - KfcL1Reserve(kfc);
            fs_l1_planned = false;
        }
        fs_tiling = *tiling;
        fs_registered = true;
        fs_generation = CurCore().generation;
        fs_single_m = tiling->singleCoreM;
        fs_single_n = tiling->singleCoreN;
        fs_single_k = tiling->singleCoreK;
        fs_org_m = tiling->M;
        fs_org_n = tiling->N;
        fs_org_ka = tiling->Ka;
        fs_org_kb = tiling->Kb;
        fs_local_ws_bytes = 0;
        fs_has_workspace = false;
        fs_bias_on = false;
        ResetIteration();
    }

    static void CheckCombination(const char* api, const char* ta, const char* tb, const char* tbias, const char* tc) {
        const TargetInfo& t = Target();
        // int4b_t x int4b_t with an int32_t bias into int32_t or half C, Atlas A2/A3 only (asc-devkit docs,
        // Matmul-Kernel侧接口/Matmul使用说明.md, table 2).
        if (!std::strcmp(ta, "int4b_t") || !std::strcmp(tb, "int4b_t")) {
            if (t.arch == 2201 && !std::strcmp(ta, "int4b_t") && !std::strcmp(tb, "int4b_t") &&
                !std::strcmp(tbias, "int32_t") && (!std::strcmp(tc, "int32_t") || !std::strcmp(tc, "half"))) {
                return;
            }
            Fail("%s: Matmul with A %s, B %s, Bias %s -> C %s is not supported on %s (int4b_t: A and B int4b_t, "
                 "Bias int32_t, C int32_t or half, on Atlas A2/A3 only — the Matmul使用说明 page, table 2)", api, ta,
                 tb, tbias, tc, t.name);
        }
        std::string known;
        for (size_t i = 0; i < t.num_matmul; ++i) {
            const MatmulTypes& m = t.matmul[i];
            if (!std::strcmp(m.a, ta) && !std::strcmp(m.b, tb) && !std::strcmp(m.bias, tbias) &&
                !std::strcmp(m.c, tc)) {
                return;
            }
            known += Format("%s(%s, %s, %s -> %s)", i ? ", " : "", m.a, m.b, m.bias, m.c);
        }
        Fail("%s: Matmul with A %s, B %s, Bias %s -> C %s is not supported on %s (supported: %s)", api, ta, tb,
             tbias, tc, t.name, known.c_str());
    }

    // The capacities a TCubeTiling implies (ASCENDC.md §3.2 L1 formula, §4.1 sizes).
    // Returns the L1 bytes of the object's own A1/B1/bias buffers (no A1 when A is in TSCM).
    // *bias_l1 (when given) gets the bias's L1 buffer bytes, 0 when the tiling has no bias.
    static uint64_t CheckTiling(const char* api, const TCubeTiling& tl, uint32_t sa, uint32_t sb, uint32_t sbias,
                                uint32_t sc, bool c_in_ub, bool a_in_l1 = false, uint32_t c0k_a = 0, bool kfc = true,
                                uint64_t* bias_l1 = nullptr) {
        const TargetInfo& t = Target();
        // int4b_t A (sa counted as a whole byte, which over-counts its L0/L1 room) has 64 K values per 32 bytes
        const int64_t c0k = c0k_a != 0 ? c0k_a : 32 / sa;
        const int64_t bm = tl.baseM, bn = tl.baseN, bk = tl.baseK;
        if (bm <= 0 || bn <= 0 || bk <= 0 || bm % 16 != 0 || bn % 16 != 0 || bk % c0k != 0) {
            Fail("%s: tiling baseM/baseN/baseK = %lld/%lld/%lld; baseM and baseN must be positive multiples of 16 "
                 "and baseK of %lld (32 bytes of A)", api, static_cast<long long>(bm), static_cast<long long>(bn),
                 static_cast<long long>(bk), static_cast<long long>(c0k));
        }
        if (tl.M <= 0 || tl.N <= 0 || tl.Ka <= 0 || tl.singleCoreM <= 0 || tl.singleCoreN <= 0 ||
            tl.singleCoreK <= 0 || tl.singleCoreM > tl.M || tl.singleCoreN > tl.N || tl.singleCoreK > tl.Ka ||
            (tl.Kb != 0 && tl.Kb != tl.Ka)) {
            Fail("%s: tiling shapes M/N/Ka/Kb = %d/%d/%d/%d, singleCoreM/N/K = %d/%d/%d; single-core sizes must be "
                 "positive and within M, N, Ka (and Ka == Kb)", api, tl.M, tl.N, tl.Ka, tl.Kb, tl.singleCoreM,
                 tl.singleCoreN, tl.singleCoreK);
        }
        const int64_t dba = std::max(tl.dbL0A, 1), dbb = std::max(tl.dbL0B, 1), dbc = std::max(tl.dbL0C, 1);
        if (dba * bm * bk * sa > t.l0a_bytes) {
            Fail("%s: tiling needs %lld bytes of L0A (%lld x baseM %lld x baseK %lld x %u B); %s has %u", api,
                 static_cast<long long>(dba * bm * bk * sa), static_cast<long long>(dba), static_cast<long long>(bm),
                 static_cast<long long>(bk), sa, t.name, t.l0a_bytes);
        }
        if (dbb * bn * bk * sb > t.l0b_bytes) {
            Fail("%s: tiling needs %lld bytes of L0B (%lld x baseN %lld x baseK %lld x %u B); %s has %u", api,
                 static_cast<long long>(dbb * bn * bk * sb), static_cast<long long>(dbb), static_cast<long long>(bn),
                 static_cast<long long>(bk), sb, t.name, t.l0b_bytes);
        }
        if (dbc * bm * bn * 4 > t.l0c_bytes) {
            Fail("%s: tiling needs %lld bytes of L0C (%lld x baseM %lld x baseN %lld x 4 B accumulators); %s has %u",
                 api, static_cast<long long>(dbc * bm * bn * 4), static_cast<long long>(dbc),
                 static_cast<long long>(bm), static_cast<long long>(bn), t.name, t.l0c_bytes);
        }
        const int64_t stepM = std::max(tl.stepM, 1), stepN = std::max(tl.stepN, 1);
        const int64_t stepKa = std::max(tl.stepKa, 1), stepKb = std::max(tl.stepKb, 1);
        if (tl.depthA1 < stepM * stepKa || tl.depthB1 < stepN * stepKb) {
            Fail("%s: tiling depthA1/depthB1 = %d/%d must hold stepM*stepKa = %lld and stepN*stepKb = %lld base "
                 "blocks", api, tl.depthA1, tl.depthB1, static_cast<long long>(stepM * stepKa),
                 static_cast<long long>(stepN * stepKb));
        }
        const int64_t l1 = t.l1_bytes - KfcL1Reserve(kfc);
        const int64_t bias = tl.isBias ? bn * sbias : 0;
        const int64_t need = (a_in_l1 ? 0 : static_cast<int64_t>(tl.depthA1) * bm * bk * sa) +
                             static_cast<int64_t>(tl.depthB1) * bn * bk * sb + bias;
        if (bias_l1 != nullptr) {
            *bias_l1 = static_cast<uint64_t>(bias);
        }
        // A1 and B1 must fit; the bias buffer, planned last, may lie past L1 as long as no bias is set
        // (PlanLocal warns, SetBias refuses): CANN's quant_group_matmul_high_performance, which never sets
        // one, fills L1 with A1 and B1 and keeps the default enableSetBias.
        if (need - (bias_l1 != nullptr ? bias : 0) > l1) {
            Fail("%s: tiling needs %lld bytes of L1 (depthA1 %d x %lld x %lld x %u B + depthB1 %d x %lld x %lld x %u B "
                 "+ bias); %s has %lld", api, static_cast<long long>(need), tl.depthA1, static_cast<long long>(bm),
                 static_cast<long long>(bk), sa, tl.depthB1, static_cast<long long>(bn), static_cast<long long>(bk),
                 sb, t.name, static_cast<long long>(l1));
        }
        if (c_in_ub && (bn * sc) % 32 != 0) {
            Fail("%s: C goes to UB in ND format, so baseN x sizeof(C) = %lld bytes must be a multiple of 32", api,
                 static_cast<long long>(bn * sc));
        }
        if (tl.iterateOrder != 0 && tl.iterateOrder != 1) {
            Fail("%s: tiling iterateOrder = %d; 0 (M first) and 1 (N first) are defined", api, tl.iterateOrder);
        }
        return static_cast<uint64_t>(need);
    }

    // The message area at the end of UB.  On Atlas A2/A3 the vector core's side of a mixed kernel's Matmul
    // (CANN's KfcCommClient) passes every call to the cube core (Init, SetOrgShape, Iterate, IterateAll, End)
    // as a 128-byte KfcMsg that it first writes into the last sizeof(KfcMsg) bytes of UB and then copies to
    // GM: asc-devkit impl/basic_api/dav_c220/kfc/kfc_comm_client.h (ubMsg = TOTAL_UB_SIZE - sizeof(KfcMsg),
    // in CPU debug mode that offset from the TPipe's UB base; PostMessage copies it out) and kfc_comm.h
    // (KfcMsg: head, ubAddr and 120 bytes).  kernel_pop_stack_buffer.h ends the UB a kernel may take there
    // on arch 2201 ("the last ... reserved for ub kfc msg send").  CANN's CPU mode has no assert for it: the
    // message silently overwrites whatever TPipe buffer covers those bytes.  fusedsl refuses a call that would
    // send a message while the TPipe plan reaches into the area.  Cube-only Matmul (ASCENDC_CUBE_ONLY, or a
    // cube kernel) sends no message.
    static constexpr uint32_t kKfcMsgBytes = 128;
    void PostMessage(const char* api) const {
#ifndef ASCENDC_CUBE_ONLY
        Runtime& rt = RT();
        if (!Target().separated || rt.on_aic || !IsMixMode(rt.kernel_mode)) {
            return;
        }
        const Core& c = CurCore();
        const uint32_t area = c.ub_bytes - kKfcMsgBytes;
        if (c.pipe != nullptr && c.pipe->fs_cursor > area) {
            Fail("%s: the TPipe plans UB up to byte %u, into the last %u bytes of UB [%u, %u) where the Matmul API "
                 "writes each message to the cube core (CANN's KfcCommClient, asc-devkit dav_c220/kfc/"
                 "kfc_comm_client.h) — this call would overwrite the buffer planned there; plan at most %u bytes "
                 "of UB (GetCoreMemSize(UB) leaves room for it)", api, c.pipe->fs_cursor, kKfcMsgBytes, area,
                 c.ub_bytes, area);
        }
#else
        (void)api;
#endif
    }

    // The object's own buffers in the cube memories of `pipe`, where CANN's Matmul plans them through the
    // same TPipe (asc-devkit impl/adv_api/detail/matmul: scheduler_base.h Init, resource/): InitShareBufStart
    // starts L1 and L0C at the pipe's plan (the first object's start, shared by every later object) and
    // L0A, L0B and the bias table at byte 0; TBufPoolL0 takes all of L0A and L0B (L0AUF_SIZE / L0BUF_SIZE),
    // CopyCubeInA/B the A1/B1 queues (depthA1 / depthB1 base blocks), CubeOutBuffer dbL0C x baseM x baseN
    // accumulators in L0C (none for a C in CO1), the bias scheduler baseN bias values in L1 and the whole
    // bias table.  InitShareBufEnd then leaves the L1 / L0C plan at the start plus the tiling's
    // shareL1Size / shareL0CSize.  A user buffer already in those bytes is reported at its InitBuffer line;
    // one planned later into the object's bytes at its own line (tensor.h, fs_InitCubeQueue).
    void PlanLocal(const char* api, TPipeState& pipe, const TCubeTiling& tl, uint64_t l1_ab, uint64_t l1_bias,
                   bool c_in_l0c, bool kfc) {
        const TargetInfo& t = Target();
        const Site site = CurrentSite();
        const bool first = pipe.fs_share_start[kMemL1] < 0;
        if (first) {
            pipe.fs_share_start[kMemL1] = pipe.fs_local_cursor[kMemL1];
            pipe.fs_share_start[kMemL0C] = pipe.fs_local_cursor[kMemL0C];
        }
        const uint64_t l1_start = static_cast<uint64_t>(pipe.fs_share_start[kMemL1]);
        const uint64_t l1_cap = LocalMemBytes(kMemL1) - pipe.fs_tscm_bytes - KfcL1Reserve(kfc);
        fs_bias_unplaced = l1_bias != 0 && l1_start + l1_ab + l1_bias > l1_cap;
        if (fs_bias_unplaced && l1_start + l1_ab <= l1_cap) {
            Warn("AscendCWarning",
                 Format("%s: the Matmul object's L1 buffers for A and B fill L1 up to byte %llu of %llu, so the "
                        "%llu-byte bias buffer the tiling asks for (isBias = 1, CANN's default enableSetBias) lies "
                        "past the end of L1; harmless while no bias is set — Matmul::SetBias will refuse (reported "
                        "once)", api, static_cast<unsigned long long>(l1_start + l1_ab),
                        static_cast<unsigned long long>(l1_cap), static_cast<unsigned long long>(l1_bias)),
                 "bias-l1");
        }
        const uint64_t l0c = c_in_l0c ? 0 : static_cast<uint64_t>(tl.dbL0C == 2 ? 2 : 1) * tl.baseM * tl.baseN * 4;
        struct Part {
            int mem;
            uint64_t start, bytes;
            std::string what;
        };
        const Part parts[] = {
            {kMemL1, l1_start, l1_ab + (fs_bias_unplaced ? 0 : l1_bias),
             Format("A1/B1 queues%s", l1_bias != 0 && !fs_bias_unplaced ? " and the bias buffer" : "")},
            {kMemL0A, 0, LocalMemBytes(kMemL0A), "all of L0A, CANN's TBuf<A2> of L0AUF_SIZE"},
            {kMemL0B, 0, LocalMemBytes(kMemL0B), "all of L0B, CANN's TBuf<B2> of L0BUF_SIZE"},
            {kMemL0C, static_cast<uint64_t>(pipe.fs_share_start[kMemL0C]), l0c,
             Format("%d x baseM x baseN accumulators", tl.dbL0C == 2 ? 2 : 1)},
            {kMemBT, 0, l1_bias != 0 && t.separated ? LocalMemBytes(kMemBT) : 0,
             "the bias table, CANN's TBuf<C2> of BIAS_TABLE_SIZE"},
        };
        for (const Part& part : parts) {
            if (part.bytes == 0) {
                continue;
            }
            const uint64_t end = part.start + part.bytes;
            const uint64_t cap = part.mem == kMemL1 ? l1_cap : LocalMemBytes(part.mem);
            if (end > cap) {
                Fail("%s: the Matmul object's own %s buffers (%s) need %s bytes [%llu, %llu) and %s has %llu%s", api,
                     LocalMemName(part.mem), part.what.c_str(), LocalMemName(part.mem),
                     static_cast<unsigned long long>(part.start), static_cast<unsigned long long>(end), t.name,
                     static_cast<unsigned long long>(cap),
                     part.start != 0 ? " (they start after the TPipe's plan of that memory: plan the Matmul before "
                                       "the kernel's own buffers there, or shrink those)"
                                     : "");
            }
            if (const TPipeState::LocalPlan* u = LocalOverlap(pipe, part.mem, part.start, end, true)) {
                FailAt(u->site, "InitBuffer: %s [%u, %u) of %s overlaps the own buffers of the Matmul object "
                       "registered later at %s, which takes %s [%llu, %llu) of it (%s) as CANN's Matmul does; on the "
                       "device both would use these bytes — a kernel with a Matmul object leaves L0A, L0B and the "
                       "bias table to it", u->what.c_str(), u->start, u->end, LocalMemName(part.mem),
                       SiteText(site).c_str(), LocalMemName(part.mem), static_cast<unsigned long long>(part.start),
                       static_cast<unsigned long long>(end), part.what.c_str());
            }
            pipe.fs_local_plans.push_back(TPipeState::LocalPlan{part.mem, static_cast<uint32_t>(part.start),
                                                                static_cast<uint32_t>(end), site, part.what, true});
            if (part.mem != kMemL1 && part.mem != kMemL0C) {
                pipe.fs_local_cursor[part.mem] = std::max<uint32_t>(pipe.fs_local_cursor[part.mem],
                                                                     static_cast<uint32_t>(end));
            }
        }
        if (first) {   // InitShareBufEnd: the plan goes on at the share start plus the tiling's share sizes
            pipe.fs_local_cursor[kMemL1] =
                static_cast<uint32_t>(l1_start + static_cast<uint64_t>(std::max(tl.shareL1Size, 0)));
            pipe.fs_local_cursor[kMemL0C] = static_cast<uint32_t>(
                pipe.fs_share_start[kMemL0C] + (c_in_l0c ? 0 : static_cast<int64_t>(std::max(tl.shareL0CSize, 0))));
        }
        fs_l1_at = static_cast<uint32_t>(l1_start);
        fs_l1_planned = true;
    }

    void RequireRegistered(const char* api) const {
        if (!fs_registered || fs_generation != CurCore().generation) {
            Fail("Matmul::%s: the Matmul object was not registered in this kernel; call REGIST_MATMUL_OBJ(&pipe, "
                 "GetSysWorkSpacePtr(), mm, &tiling) (or mm.Init(&tiling, &pipe)) first", api);
        }
    }

    void ResetIteration() {
        fs_started = false;
        fs_pending = false;
        fs_async = false;
        fs_count = 0;
        fs_tile_index = -1;
    }

    // Advances to the next base tile; false when the single-core block is done.
    bool NextTile() {
        const int64_t mIter = (fs_single_m + fs_tiling.baseM - 1) / fs_tiling.baseM;
        const int64_t nIter = (fs_single_n + fs_tiling.baseN - 1) / fs_tiling.baseN;
        // MatmulConfig.isPartialOutput: each Iterate is one baseK step of a tile, not accumulated over K;
        // a tile's K steps come one after another
        const int64_t kIter = fs_partial ? (fs_single_k + fs_tiling.baseK - 1) / fs_tiling.baseK : 1;
        fs_tile_index += 1;
        if (fs_tile_index >= mIter * nIter * kIter) {
            ResetIteration();
            return false;
        }
        const int64_t tile = fs_tile_index / kIter;
        fs_k0 = fs_partial ? fs_tile_index % kIter * fs_tiling.baseK : 0;
        fs_tk = fs_partial ? std::min<int64_t>(fs_tiling.baseK, fs_single_k - fs_k0) : fs_single_k;
        int64_t mi, ni;
        if (fs_tiling.iterateOrder == 1) {   // N first
            ni = tile % nIter;
            mi = tile / nIter;
        } else {                             // M first: the samples' count % roundM
            mi = tile % mIter;
            ni = tile / mIter;
        }
        fs_m0 = mi * fs_tiling.baseM;
        fs_n0 = ni * fs_tiling.baseN;
        fs_tm = std::min<int64_t>(fs_tiling.baseM, fs_single_m - fs_m0);
        fs_tn = std::min<int64_t>(fs_tiling.baseN, fs_single_n - fs_n0);
        return true;
    }

    TCubeTiling fs_tiling{};
    bool fs_registered = false;
    uint64_t fs_generation = 0;
    int64_t fs_single_m = 0, fs_single_n = 0, fs_single_k = 0;
    int64_t fs_org_m = 0, fs_org_n = 0, fs_org_ka = 0, fs_org_kb = 0;
    uint64_t fs_local_ws_bytes = 0;
    uint64_t fs_l1_need = 0;
    bool fs_bias_unplaced = false;   // the tiling's bias buffer lies past the end of L1 (PlanLocal)
    bool fs_l1_planned = false;      // PlanLocal placed the object's A1/B1 at fs_l1_at in its pipe's L1
    uint32_t fs_l1_at = 0;
    bool fs_has_workspace = false;
    bool fs_bias_on = false;
    bool fs_started = false;
    bool fs_pending = false;
    bool fs_async = false;   // an Iterate<false>() started the single-core block's tiles (GetTensorC<false>)
    int64_t fs_count = 0;
    int64_t fs_tile_index = -1;
    int64_t fs_m0 = 0, fs_n0 = 0, fs_tm = 0, fs_tn = 0;
    bool fs_partial = false;             // MatmulConfig.isPartialOutput
    int64_t fs_k0 = 0, fs_tk = 0;        // the K range the current Iterate sums (all of singleCoreK unless partial)
};

}  // namespace fusedsl_cpu

// Global, as in CANN (op kernels call it without a namespace): the system workspace, which is
// the launch's `workspace` argument unless the kernel set another with SetSysWorkspace.
inline GM_ADDR GetSysWorkSpacePtr() {
    return fusedsl_cpu::CubeState().sys_workspace;
}

namespace AscendC {

using ::GetSysWorkSpacePtr;

inline void SetSysWorkspace(GM_ADDR workspace) {
    fusedsl_cpu::CubeState().sys_workspace = workspace;
}

// The user's part of a workspace that starts with the high-level APIs' system workspace.
inline GM_ADDR GetUserWorkspace(GM_ADDR workspace) {
    return workspace == nullptr ? nullptr : workspace + fusedsl_cpu::LibApiWorkspaceBytes();
}

template <class A_TYPE, class B_TYPE, class C_TYPE, class BIAS_TYPE = C_TYPE, const auto& MM_CFG = CFG_NORM,
          class MM_CB = MatmulCallBackFunc<>,
          template <const auto&, typename...> class MATMUL_POLICY = Impl::Detail::MatmulPolicy>
class Matmul : public fusedsl_cpu::MatmulBase {
    static_assert(!MM_CB::fs_copy_out, "a Matmul DataCopyOut callback (MatmulCallBackFunc's first function) is not "
                                       "modelled by fusedsl's CPU implementation of the Ascend C API");
    static constexpr bool kCopyA1 = MM_CB::fs_copy_a1 != nullptr;
    static constexpr bool kCopyB1 = MM_CB::fs_copy_b1 != nullptr;
    static constexpr Impl::Detail::FsPolicyKind kPolicy = MATMUL_POLICY<MM_CFG>::fs_kind;
    static constexpr bool kNBuffer33 = kPolicy == Impl::Detail::FsPolicyKind::NBUFFER_33;
    static constexpr bool kTriangular = kPolicy == Impl::Detail::FsPolicyKind::UPPER_TRIANGULAR ||
                                        kPolicy == Impl::Detail::FsPolicyKind::LOWER_TRIANGULAR;

public:
    using SrcAT = typename A_TYPE::T;
    using SrcBT = typename B_TYPE::T;
    using DstT = typename C_TYPE::T;
    using BiasT = typename BIAS_TYPE::T;
    // The cube accumulates int8 products in int32 and every float type in float.
    using Acc = std::conditional_t<std::is_same_v<SrcAT, int8_t> || fusedsl_cpu::kIsB4<SrcAT>, int32_t, float>;

    static constexpr bool kCInUb = fusedsl_cpu::IsUbTensorPosition(C_TYPE::pos);
    static constexpr bool kCInL0C = C_TYPE::pos == TPosition::CO1;   // user-managed L0C (Iterate's second form)
    static constexpr bool kAInL1 = A_TYPE::pos == TPosition::TSCM;   // user-managed L1 (tscm.h)
    static constexpr bool kAInUb = A_TYPE::pos == TPosition::VECOUT;  // 310P: UB -> L1 on the coupled core
    static_assert(!fusedsl_cpu::kIsB4<SrcAT> || (!kAInL1 && !kAInUb),
                  "the fusedsl CPU Matmul models int4b_t A in GM (not TSCM or VECOUT)");
    // MM_CFG is a MatmulConfig (CFG_NORM, GetMDLConfig(...), a kernel's own) or a constant
    // tiling (MatmulApiStaticTiling from GetMatmulApiTiling, its config in .cfg).
    static constexpr bool kCfgIsStatic = std::is_same_v<std::decay_t<decltype(MM_CFG)>, MatmulApiStaticTiling>;
    static constexpr bool kCfgIsConfig = std::is_same_v<std::decay_t<decltype(MM_CFG)>, MatmulConfig> || kCfgIsStatic;
    static constexpr const MatmulConfig& fs_cfg() {
        if constexpr (kCfgIsStatic) {
            return MM_CFG.cfg;
        } else {
            return MM_CFG;
        }
    }

    static_assert(!kNBuffer33 || (kCfgIsConfig && fs_cfg().doMultiDataLoad),
                  "NBuffer33MatmulPolicy needs an MDL config (CFG_MDL / GetMDLConfig), as CANN's IterateAll asserts");

    // A triangular policy's tiles off its triangle (the tile's M index past its N index for the upper one,
    // short of it for the lower) are computed but not written out.
    bool fs_OffTriangle() const {
        if constexpr (!kTriangular) {
            return false;
        } else {
            const int64_t mi = fs_m0 / fs_tiling.baseM, ni = fs_n0 / fs_tiling.baseN;
            return kPolicy == Impl::Detail::FsPolicyKind::UPPER_TRIANGULAR ? mi > ni : mi < ni;
        }
    }

    // The TCubeTiling a constant tiling stands for (REGIST_MATMUL_OBJ with a null tiling).
    static TCubeTiling StaticTCubeTiling(const char* api) {
        TCubeTiling t{};
        if constexpr (kCfgIsStatic) {
            const MatmulApiStaticTiling& s = MM_CFG;
            if (s.singleCoreM <= 0 || s.baseM <= 0) {
                fusedsl_cpu::Fail("%s: the TCubeTiling pointer is null and the constant tiling has no single-core "
                                  "shape (GetMatmulApiTiling needs MatmulShapeParams with singleCoreM/N/K and "
                                  "basicM/N/K); pass the host tiling instead", api);
            }
#define FUSEDSL_STATIC_FIELD(name) t.name = s.name < 0 ? 0 : s.name;
            FUSEDSL_STATIC_FIELD(usedCoreNum) FUSEDSL_STATIC_FIELD(M) FUSEDSL_STATIC_FIELD(N)
            FUSEDSL_STATIC_FIELD(Ka) FUSEDSL_STATIC_FIELD(Kb) FUSEDSL_STATIC_FIELD(singleCoreM)
            FUSEDSL_STATIC_FIELD(singleCoreN) FUSEDSL_STATIC_FIELD(singleCoreK) FUSEDSL_STATIC_FIELD(baseM)
            FUSEDSL_STATIC_FIELD(baseN) FUSEDSL_STATIC_FIELD(baseK) FUSEDSL_STATIC_FIELD(depthA1)
            FUSEDSL_STATIC_FIELD(depthB1) FUSEDSL_STATIC_FIELD(stepM) FUSEDSL_STATIC_FIELD(stepN)
            FUSEDSL_STATIC_FIELD(isBias) FUSEDSL_STATIC_FIELD(transLength) FUSEDSL_STATIC_FIELD(iterateOrder)
            FUSEDSL_STATIC_FIELD(stepKa) FUSEDSL_STATIC_FIELD(stepKb) FUSEDSL_STATIC_FIELD(dbL0A)
            FUSEDSL_STATIC_FIELD(dbL0B) FUSEDSL_STATIC_FIELD(dbL0C) FUSEDSL_STATIC_FIELD(shareL1Size)
            FUSEDSL_STATIC_FIELD(shareL0CSize)
#undef FUSEDSL_STATIC_FIELD
        } else {
            fusedsl_cpu::Fail("%s: the TCubeTiling pointer is null", api);
        }
        return t;
    }
    TCubeTiling fs_static_tiling{};
    const char* fs_shape_setter = nullptr;

    template <class W>
    void fs_Register(TPipe* pipe, W workspace, const TCubeTiling* tiling, const char* api, bool need_workspace) {
        fs_pipe = pipe;
        if constexpr (kCopyA1 || kCopyB1) {
            static_assert(!kCfgIsConfig || !fs_cfg().doMultiDataLoad,
                          "Matmul copy callbacks are modelled for the NORM template (base blocks one at a time)");
        }
        if constexpr (kCfgIsConfig) {
            // Config fields that change what C holds and that the CPU model does not implement.
            constexpr const MatmulConfig& cfg = fs_cfg();
            if (cfg.isEnableChannelSplit &&
                (C_TYPE::format != CubeFormat::NZ || !std::is_same_v<DstT, float> || C_TYPE::pos != TPosition::GM ||
                 !fusedsl_cpu::Target().separated)) {
                fusedsl_cpu::Fail("%s: MatmulConfig.isEnableChannelSplit needs C in GM, CubeFormat::NZ and float (the "
                                  "MatmulConfig page), on Atlas A2/A3", api);
            }
            const char* unmodelled = cfg.intraBlockPartSum ? "intraBlockPartSum (two AIV results summed in L0C)"
                                     : cfg.decompMode != DecompressionMode::DECOMP_NONE ? "decompMode (B decompressed)"
                                                                                         : nullptr;
            if (cfg.isPartialOutput && !fusedsl_cpu::Target().separated) {
                fusedsl_cpu::Fail("%s: MatmulConfig.isPartialOutput is not supported on %s (the MatmulConfig page: "
                                  "Atlas A2/A3)", api, fusedsl_cpu::Target().name);
            }
            if (kTriangular && !fusedsl_cpu::Target().separated) {
                fusedsl_cpu::Fail("%s: the triangular Matmul policies (TrianUpperMatmulPolicy / TrianLowerMatmulPolicy) "
                                  "are not supported on %s (CANN's MatmulChipCap: Atlas A2/A3 only)", api,
                                  fusedsl_cpu::Target().name);
            }
            if (unmodelled != nullptr) {
                fusedsl_cpu::Fail("%s: MatmulConfig.%s is not modelled by fusedsl's CPU implementation of the Matmul "
                                  "API", api, unmodelled);
            }
        }
        static_assert((A_TYPE::pos == TPosition::GM || kAInL1 || kAInUb) && B_TYPE::pos == TPosition::GM,
                      "the fusedsl CPU Matmul models A in GM, TSCM or VECOUT and B in GM");
        static_assert(!kAInUb || A_TYPE::format == CubeFormat::ND, "the fusedsl CPU Matmul models a VECOUT A in ND");
        if constexpr (kAInUb) {
            if (fusedsl_cpu::Target().separated) {
                fusedsl_cpu::Fail("%s: A in TPosition::VECOUT on %s: the API's client copies the UB tensor through a "
                                  "GM message buffer before the cube reads it; fusedsl's CPU Matmul does not model "
                                  "that path — put A in GM (or TSCM)", api, fusedsl_cpu::Target().name);
            }
        }
        static_assert(!kAInL1 || A_TYPE::format == CubeFormat::NZ, "A in TSCM (L1) is in CubeFormat::NZ");
        if constexpr (kAInL1) {
            if (!fusedsl_cpu::Target().separated) {
                fusedsl_cpu::Fail("%s: A in TPosition::TSCM is documented for Atlas A2/A3 (ascend910b); %s's Matmul "
                                  "takes A from GM or VECOUT", api, fusedsl_cpu::Target().name);
            }
        }
        static_assert(C_TYPE::pos == TPosition::GM || kCInUb || kCInL0C,
                      "C_TYPE position must be GM, VECIN/VECOUT/VECCALC or CO1");
        static_assert(!kCInL0C || (C_TYPE::format == CubeFormat::NZ && std::is_same_v<DstT, Acc>),
                      "a C in TPosition::CO1 (user-managed L0C, the Iterate page) is CubeFormat::NZ of the "
                      "accumulator type, GetMmDstType<A>::Type (float or int32_t)");
        if constexpr (kCInL0C) {
            if (!fusedsl_cpu::Target().separated) {
                fusedsl_cpu::Fail("%s: a C in TPosition::CO1 (user-managed L0C) is not supported on %s (the Iterate "
                                  "page: 暂不支持用户自主管理CO1)", api, fusedsl_cpu::Target().name);
            }
        }
        if (tiling == nullptr && kCfgIsStatic) {
            fs_static_tiling = StaticTCubeTiling(api);
            tiling = &fs_static_tiling;
        }
        MatmulBase::fs_Register(api, pipe, reinterpret_cast<uint8_t*>(workspace), tiling, need_workspace,
                                fusedsl_cpu::TypeName<SrcAT>(), fusedsl_cpu::TypeName<SrcBT>(),
                                fusedsl_cpu::TypeName<BiasT>(), fusedsl_cpu::TypeName<DstT>(), sizeof(SrcAT),
                                sizeof(SrcBT), sizeof(BiasT), sizeof(DstT), kCInUb, kAInL1,
                                fusedsl_cpu::C0Of<SrcAT>(), kCInL0C);
        if constexpr (kCfgIsConfig) {
            fs_partial = fs_cfg().isPartialOutput;
            fs_channel_split = fs_cfg().isEnableChannelSplit;
        }
    }

    // SetSubBlockIdx page: the vector core's ID within its AI Core, for Matmul objects not set up by
    // REGIST_MATMUL_OBJ (separated chips only; it must be below the chip's vector cores per cube core).  The
    // CPU Matmul computes where it is called, so the ID selects nothing.
    void SetSubBlockIdx(uint8_t subBlockIdx) {
        const fusedsl_cpu::TargetInfo& t = fusedsl_cpu::Target();
        if (!t.separated) {
            fusedsl_cpu::Fail("Matmul::SetSubBlockIdx is available on separated chips (Atlas A2/A3) only, not on %s "
                              "(the SetSubBlockIdx page)", t.name);
        }
        if (subBlockIdx >= 2) {
            fusedsl_cpu::Fail("Matmul::SetSubBlockIdx(%u): an AI Core of %s has 2 vector cores (IDs 0 and 1)",
                              subBlockIdx, t.name);
        }
    }

    void Init(const TCubeTiling* tiling, TPipe* tpipe = nullptr, FUSEDSL_CPU_SITE) {
        fusedsl_cpu::AtSite at_site(fs_site);
        fs_Register(tpipe, static_cast<uint8_t*>(nullptr), tiling, "Matmul::Init", false);
        PostMessage("Matmul::Init");
    }

    // SetTensorA/SetTensorB(gm, true) with the MatmulType's ISTRANS false.  Their pages: for inputs other
    // than half and bfloat16_t the flag, ISTRANS and the tiling's isTrans must agree (an error here); for
    // half and bfloat16_t "若强行设置为true，精度会有异常" — a precision risk on the device, which CANN's CPU
    // debug mode runs (CANN's matmul_high_performance does it): a warning, once per launch, and the
    // transposed operand is read as such.
    template <typename T>
    void TransposeWithoutIsTrans(const char* api, char which) const {
        using namespace fusedsl_cpu;
        constexpr bool b16 = std::is_same<T, half>::value || std::is_same<T, bfloat16_t>::value;
        if (!b16) {
            Fail("Matmul::%s(gm, true): %c is transposed, so its MatmulType needs ISTRANS = true (the %s page: with "
                 "ISTRANS false, isTranspose%c may only be false)", api, which, api, which);
        }
        Warn("AscendCWarning",
             Format("Matmul::%s(gm, true) with the MatmulType's ISTRANS false: the %s page warns that the device's "
                    "precision may be abnormal (\"精度会有异常\"); set ISTRANS = true (reported once per launch)", api, api),
             "istrans");
    }

    void SetTensorA(const GlobalTensor<SrcAT>& gm, bool isTransposeA = false, FUSEDSL_CPU_SITE) {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        RequireRegistered("SetTensorA");
        if (kAInL1 || kAInUb) {
            fusedsl_cpu::Fail("Matmul::SetTensorA(GlobalTensor): A_TYPE is TPosition::%s; pass a LocalTensor",
                              fusedsl_cpu::PositionName(A_TYPE::pos));
        }
        if (isTransposeA && !A_TYPE::isTrans) {
            TransposeWithoutIsTrans<SrcAT>("SetTensorA", 'A');
        }
        fs_a = gm;
        fs_trans_a = isTransposeA;
        fs_has_a = true;
        ResetIteration();
    }

    // A already in L1 (A_TYPE TPosition::TSCM, NZ): the whole single-core A, singleCoreM rows
    // padded to 16 per C0 column block; Iterate reads it from L1 and no GM.
    void SetTensorA(const LocalTensor<SrcAT>& l1, bool isTransposeA = false, FUSEDSL_CPU_SITE) {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        using namespace fusedsl_cpu;
        const char* api = "Matmul::SetTensorA(LocalTensor)";
        RequireRegistered("SetTensorA");
        if (!kAInL1 && !kAInUb) {
            Fail("%s: A_TYPE is in %s; a LocalTensor A needs MatmulType<TPosition::TSCM, CubeFormat::NZ, ...> or "
                 "(310P) MatmulType<TPosition::VECOUT, CubeFormat::ND, ...>", api, PositionName(A_TYPE::pos));
        }
        if (isTransposeA) {
            Fail("%s: a transposed LocalTensor A is not modelled by fusedsl's CPU Matmul", api);
        }
        uint32_t off = 0;
        if (kAInUb) {   // ND rows orgKa elements apart in UB, which the cube copies into L1 itself
            CheckUb(api, "A", l1.fs_addr, static_cast<uint64_t>(l1.GetSize()) * sizeof(SrcAT), 0, sizeof(SrcAT));
        } else if (l1.fs_addr == nullptr || WhichMem(l1.fs_addr, &off) != kMemL1) {
            Fail("%s: A must be a tensor in L1 (a TSCM queue's buffer)", api);
        }
        fs_a_l1 = l1;
        fs_trans_a = false;
        fs_has_a = true;
        ResetIteration();
    }

    void SetTensorB(const GlobalTensor<SrcBT>& gm, bool isTransposeB = false, FUSEDSL_CPU_SITE) {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        RequireRegistered("SetTensorB");
        if (isTransposeB && !B_TYPE::isTrans) {
            TransposeWithoutIsTrans<SrcBT>("SetTensorB", 'B');
        }
        fs_b = gm;
        fs_trans_b = isTransposeB;
        fs_has_b = true;
        ResetIteration();
    }

    // The index of a sparse B (SetSparseIndex page): per dense B value a 2-bit position among the 4
    // original K values, 4 to a byte (from the low bits up), bytes in fractals of 16 N x 8 bytes
    // (32 dense K), the fractals K-block by K-block, each row of N blocks as long as the original N.
    void SetSparseIndex(const GlobalTensor<uint8_t>& indexGlobal, FUSEDSL_CPU_SITE) {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        RequireRegistered("SetSparseIndex");
        if constexpr (!kSparseB) {
            fusedsl_cpu::Fail("Matmul::SetSparseIndex: B is not a SparseMatmulType");
        }
        fs_sparse_index = indexGlobal;
        fs_has_sparse_index = true;
    }

    void SetBias(const GlobalTensor<BiasT>& gm, FUSEDSL_CPU_SITE) {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        RequireRegistered("SetBias");
        if (fs_tiling.isBias == 0) {
            fusedsl_cpu::Fail("Matmul::SetBias: the tiling has isBias = 0; enable the bias in the host tiling "
                              "(SetBias(true)) before setting one");
        }
        if (fs_bias_unplaced) {
            fusedsl_cpu::Fail("Matmul::SetBias: the tiling's A1/B1 buffers fill L1, so the bias buffer (baseN = %d "
                              "values) lies past its end; shrink depthA1/depthB1 (or baseK) to leave it room",
                              fs_tiling.baseN);
        }
        fs_bias = gm;
        fs_bias_on = true;
    }
    void DisableBias() { fs_bias_on = false; }
    void ClearBias() { fs_bias_on = false; }

    // The last core's smaller block (-1 keeps a size).
    void SetTail(int tailM = -1, int tailN = -1, int tailK = -1, FUSEDSL_CPU_SITE) {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        RequireRegistered("SetTail");
        if (tailM > 0) fs_single_m = tailM;
        if (tailN > 0) fs_single_n = tailN;
        if (tailK > 0) fs_single_k = tailK;
        fs_shape_setter = "SetTail";   // checked when the shapes are used (Iterate)
    }
    void SetSingleShape(int singleM, int singleN, int singleK, FUSEDSL_CPU_SITE) {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        RequireRegistered("SetSingleShape");
        fs_single_m = singleM;
        fs_single_n = singleN;
        fs_single_k = singleK;
        fs_shape_setter = "SetSingleShape";   // checked when the shapes are used (Iterate)
    }
    void SetOrgShape(int orgM, int orgN, int orgK, FUSEDSL_CPU_SITE) {
        fusedsl_cpu::AtSite at_site(fs_site);
        SetOrgShape(orgM, orgN, orgK, orgK);
    }
    void SetOrgShape(int orgM, int orgN, int orgKa, int orgKb, int orgKc = 0, FUSEDSL_CPU_SITE) {
        fusedsl_cpu::AtSite at_site(fs_site);
        RequireRegistered("SetOrgShape");
        PostMessage("Matmul::SetOrgShape");
        (void)orgKc;
        fs_org_m = orgM;
        fs_org_n = orgN;
        fs_org_ka = orgKa;
        fs_org_kb = orgKb;
        fs_shape_setter = "SetOrgShape";   // checked when the shapes are used (Iterate)
    }

    // Dequantisation of an int8_t x int8_t product into half C (SetQuantScalar / SetQuantVector pages,
    // Matmul使用说明 table 2): on the way out of L0C each int32_t value is multiplied by the scale in bits
    // [31:0] of the parameter, of which the hardware keeps the top 19 bits ("scale & 0xFFFFE000"), and
    // rounded to half — one scale for all of C, or one per column (a uint64_t vector in GM).
    void SetQuantScalar(const uint64_t quantScalar, FUSEDSL_CPU_SITE) {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        RequireRegistered("SetQuantScalar");
        RequireDequant("SetQuantScalar");
        fs_quant_scalar = quantScalar;
        fs_quant_mode = 1;
    }
    void SetQuantVector(const GlobalTensor<uint64_t>& quantTensor, FUSEDSL_CPU_SITE) {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        RequireRegistered("SetQuantVector");
        RequireDequant("SetQuantVector");
        fs_quant_vector = quantTensor;
        fs_quant_mode = 2;
    }

    // UB scratch the 310P cube needs to move C into UB (ASCENDC.md §3.1).
    void SetLocalWorkspace(const LocalTensor<uint8_t>& tmp, FUSEDSL_CPU_SITE) {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        RequireRegistered("SetLocalWorkspace");
        fusedsl_cpu::CheckUb("Matmul::SetLocalWorkspace", "the workspace", tmp.fs_addr, tmp.GetSize(), 0, 1);
        fs_local_ws_bytes = tmp.GetSize();
    }

    // GM scratch for the asynchronous (sync = false) Iterate/GetTensorC.
    template <class T>
    void SetWorkspace(const GlobalTensor<T>& ws, FUSEDSL_CPU_SITE) {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        SetWorkspace(reinterpret_cast<GM_ADDR>(ws.fs_addr), static_cast<int>(ws.GetSize() * sizeof(T)));
    }
    // SetUserDefInfo / SetSelfDefineData pages: values handed to the copy callbacks (tilingPtr, dataPtr).
    void SetUserDefInfo(const uint64_t tilingPtr) { fs_user_def_info = tilingPtr; }
    void SetSelfDefineData(const uint64_t dataPtr) { fs_self_define_data = dataPtr; }

    void SetWorkspace(GM_ADDR ws, int size, FUSEDSL_CPU_SITE) {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        RequireRegistered("SetWorkspace");
        if (ws == nullptr || size <= 0) {
            fusedsl_cpu::Fail("Matmul::SetWorkspace: a null or empty workspace");
        }
        fs_has_workspace = true;
        fs_workspace = ws;
        fs_workspace_bytes = static_cast<uint64_t>(size);
    }

    template <bool sync = true>
    bool Iterate(bool enPartialSum = false, FUSEDSL_CPU_SITE) {
        using namespace fusedsl_cpu;
        AtSite at_site(fs_site);
        RequireRegistered("Iterate");
        PostMessage("Matmul::Iterate");
        if (enPartialSum) {
            Fail("Matmul::Iterate(true): partial-sum accumulation into L0C is not modelled by the fusedsl CPU API");
        }
        if (!sync && !Target().separated) {
            Fail("Matmul::Iterate<false>: asynchronous Iterate is not supported on %s", Target().name);
        }
        if (!fs_has_a || !fs_has_b) {
            Fail("Matmul::Iterate: call SetTensorA and SetTensorB first");
        }
        if (fs_pending && sync) {
            Fail("Matmul::Iterate: the previous tile was never fetched; call GetTensorC after every Iterate");
        }
        if (fs_shape_setter != nullptr) {   // SetOrgShape may come before the SetTail that fits it
            CheckShape(fs_shape_setter);
            fs_shape_setter = nullptr;
        }
        if (kNBuffer33 && !fs_in_iterate_all) {
            Fail("Matmul::Iterate: a Matmul with NBuffer33MatmulPolicy computes C with IterateAll only (CANN's "
                 "Iterate does not support NBuffer33MatmulPolicy)");
        }
        if (kDequant && fs_quant_mode == 0) {
            Fail("Matmul::Iterate: an int8_t x int8_t product into %s C is dequantised on its way out; call "
                 "SetQuantScalar or SetQuantVector before Iterate/IterateAll (the SetQuantScalar page)",
                 TypeName<DstT>());
        }
        fs_started = true;
        if (!NextTile()) {
            return false;
        }
        ComputeTile();
        fs_pending = true;
        fs_async = !sync;
        fs_count += 1;
        return true;
    }

    // The Iterate page's user-managed CO1 form: the next baseM x baseN tile goes into the caller's L0C tensor,
    // NZ (16-column blocks of the tile's rows rounded up to 16, as Mmad leaves it), added to what is there
    // with enPartialSum; the caller moves it out itself (Fixpipe).  C_TYPE is TPosition::CO1.
    template <bool sync = true, typename T>
    bool Iterate(bool enPartialSum, const LocalTensor<T>& localCmatrix, FUSEDSL_CPU_SITE) {
        using namespace fusedsl_cpu;
        static_assert(kCInL0C && std::is_same_v<T, DstT>,
                      "Iterate(enPartialSum, LocalTensor) needs C_TYPE MatmulType<TPosition::CO1, CubeFormat::NZ, "
                      "GetMmDstType<A>::Type> and a LocalTensor of that type");
        const char* api = "Matmul::Iterate(LocalTensor CO1)";
        AtSite at_site(fs_site);
        RequireRegistered("Iterate");
        if (!fs_has_a || !fs_has_b) {
            Fail("%s: call SetTensorA and SetTensorB first", api);
        }
        if (fs_shape_setter != nullptr) {
            CheckShape(fs_shape_setter);
            fs_shape_setter = nullptr;
        }
        fs_started = true;
        if (!NextTile()) {
            return false;
        }
        ComputeTile();
        fs_count += 1;
        const int64_t rows = RoundUp(fs_tm, 16), blocks = (fs_tn + 15) / 16;
        const uint64_t need = static_cast<uint64_t>(rows * blocks * 16) * sizeof(T);
        const uint64_t at = CheckLocal(api, "localCmatrix", localCmatrix.fs_addr,
                                       static_cast<uint64_t>(localCmatrix.GetSize()) * sizeof(T), need, kMemL0C);
        if (enPartialSum) {
            CheckLocalWritten(api, "localCmatrix (accumulated onto)", at, need);
        }
        T* out = localCmatrix.fs_addr;
        for (int64_t b = 0; b < blocks; ++b) {
            for (int64_t i = 0; i < rows; ++i) {
                for (int64_t j = 0; j < 16; ++j) {
                    const int64_t col = b * 16 + j;
                    const T v = i < fs_tm && col < fs_tn ? static_cast<T>(fs_acc[i * fs_tn + col]) : T(0);
                    T& dst = out[(b * rows + i) * 16 + j];
                    dst = enPartialSum ? static_cast<T>(dst + v) : v;
                }
            }
        }
        MarkLocalWritten(at, need);
        return true;
    }

    // The Iterate and GetTensorC pages' asynchronous form: one Iterate<false>() starts the whole
    // single-core block, then each GetTensorC<false> fetches the next baseM x baseN tile in the
    // iterate order ("mm.template Iterate<false>(); for (i < singleM/baseM*singleN/baseN)
    // mm.template GetTensorC<false>(ub)").  The tiles are computed when fetched, in that order.
    void AdvanceAsync(const char* api, bool sync) {
        if (sync || fs_pending || !fs_async) {
            return;
        }
        const int64_t fetched = fs_count;
        if (!NextTile()) {
            fusedsl_cpu::Fail("%s<false>: every tile of the asynchronous Iterate was already fetched (%lld); call "
                              "GetTensorC<false> once per baseM x baseN tile of the single-core block", api,
                              static_cast<long long>(fetched));
        }
        ComputeTile();
        fs_pending = true;
        fs_async = true;
        fs_count += 1;
    }

    template <bool sync = true>
    void GetTensorC(const LocalTensor<DstT>& c, uint8_t enAtomic = 0, bool enSequentialWrite = false,
                    FUSEDSL_CPU_SITE) {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        using namespace fusedsl_cpu;
        const char* api = "Matmul::GetTensorC(LocalTensor)";
        AdvanceAsync(api, sync);
        RequirePending(api, sync);
        if (!kCInUb) {
            Fail("%s: C_TYPE is in %s; a UB destination needs MatmulType<TPosition::VECIN, ...> for C", api,
                 PositionName(C_TYPE::pos));
        }
        if (!IsUbTensorPosition(c.GetPosition())) {
            Fail("%s: the destination is a %s tensor; it must be a UB tensor (VECIN/VECOUT/VECCALC)", api,
                 PositionName(c.GetPosition()));
        }
        if (enAtomic != 0) {
            Fail("%s: enAtomic = %u; atomic accumulation applies to GM destinations only", api, enAtomic);
        }
        if (!Target().separated && fs_local_ws_bytes < static_cast<uint64_t>(fs_tiling.baseM) * fs_tiling.baseN *
                                                           sizeof(DstT)) {
            Fail("%s: on %s moving C into UB needs SetLocalWorkspace with at least baseM * baseN * sizeof(C) = %llu "
                 "bytes of UB (got %llu)", api, Target().name,
                 static_cast<unsigned long long>(fs_tiling.baseM) * fs_tiling.baseN * sizeof(DstT),
                 static_cast<unsigned long long>(fs_local_ws_bytes));
        }
        WriteTileToUb(api, c, enSequentialWrite);
        fs_pending = false;
    }

    template <bool sync = true>
    void GetTensorC(const GlobalTensor<DstT>& gm, uint8_t enAtomic = 0, bool enSequentialWrite = false,
                    FUSEDSL_CPU_SITE) {
        ::fusedsl_cpu::AtSite fs_at(fs_site);
        const char* api = "Matmul::GetTensorC(GlobalTensor)";
        AdvanceAsync(api, sync);
        RequirePending(api, sync);
        if (enAtomic > 3) {
            fusedsl_cpu::Fail("%s: enAtomic = %u; 0 none, 1 add, 2 max, 3 min", api, enAtomic);
        }
        WriteTileToGm(api, gm, enAtomic, enSequentialWrite);
        fs_pending = false;
    }

    template <bool sync = true>
    void IterateAll(const GlobalTensor<DstT>& gm, uint8_t enAtomic = 0, bool enSequentialWrite = false,
                    bool waitIterateAll = false, bool fakeMsg = false, FUSEDSL_CPU_SITE) {
        fusedsl_cpu::AtSite at_site(fs_site);
        PostMessage("Matmul::IterateAll");
        (void)waitIterateAll;
        (void)fakeMsg;
        // The IterateAll page sets no condition on C_TYPE's position for a GM destination (CANN's
        // matmul_fused_manual and matmul_ibshareAB declare C in VECIN and call IterateAll(gm)), and
        // the asynchronous form writes straight to gm: no SetWorkspace (matmul_async_iterate_all).
        const char* api = "Matmul::IterateAll(GlobalTensor)";
        if (fs_partial) {
            fusedsl_cpu::Fail("%s: IterateAll is not supported for PartialOutput (MatmulConfig.isPartialOutput: "
                              "fetch each K step with Iterate and GetTensorC)", api);
        }
        if (enAtomic > 3) {
            fusedsl_cpu::Fail("%s: enAtomic = %u; 0 none, 1 add, 2 max, 3 min", api, enAtomic);
        }
        // CANN's IterateAll (impl matmul_impl.h, v220) fetches every tile with GetTensorC(gm, enAtomic): each at
        // its place in C whatever enSequentialWrite says
        (void)enSequentialWrite;
        fs_in_iterate_all = true;
        while (Iterate<true>()) {
            WriteTileToGm(api, gm, enAtomic, false);
            fs_pending = false;
        }
        fs_in_iterate_all = false;
    }

    // The whole single-core block into UB, ND rows padded to 32 bytes.
    template <bool sync = true>
    void IterateAll(const LocalTensor<DstT>& ub, uint8_t enAtomic = 0, FUSEDSL_CPU_SITE) {
        using namespace fusedsl_cpu;
        AtSite at_site(fs_site);
        const char* api = "Matmul::IterateAll(LocalTensor)";
        PostMessage(api);
        if (fs_partial) {
            Fail("%s: IterateAll is not supported for PartialOutput (MatmulConfig.isPartialOutput: fetch each K step "
                 "with Iterate and GetTensorC)", api);
        }
        if (enAtomic != 0) {
            Fail("%s: enAtomic applies to GM destinations only", api);
        }
        if (!IsUbTensorPosition(ub.GetPosition())) {
            Fail("%s: the destination must be a UB tensor (VECIN/VECOUT/VECCALC)", api);
        }
        const int64_t ld = RoundUp(fs_single_n, 32 / sizeof(DstT));
        const uint64_t need = static_cast<uint64_t>(fs_single_m) * ld * sizeof(DstT);
        uint32_t off = CheckUb(api, "the destination", ub.fs_addr, ub.GetSize() * sizeof(DstT), need, sizeof(DstT));
        fs_in_iterate_all = true;
        while (Iterate<sync>()) {
            if (!fs_OffTriangle()) {
                StoreTile(reinterpret_cast<uint8_t*>(ub.fs_addr), off, ld, fs_m0, fs_n0);
            }
            fs_pending = false;
        }
        fs_in_iterate_all = false;
    }

    void WaitIterateAll() {}

    // IterateBatch (the IterateBatch page, mix mode, C to GM): max(batchA, batchB) matrix products, the smaller
    // batch broadcast (batch i takes A i / (batchC / batchA) and B i / (batchC / batchB)); each product is the
    // singleCoreM x singleCoreN x singleCoreK block of the tiling, C tile by tile as IterateAll writes it.
    //   NORMAL: matrices one after another (A every M x Ka elements, or matrixStrideA; B every Kb x N, or
    //           matrixStrideB; C every M x N), rows as SetOrgShape says;
    //   BSNGD:  A [B, S, N, G, D], B likewise, C [B, S1, N, G, S2]: matrix i starts i x D (C: i x S2) elements
    //           in and its rows are N x G x D (C: N x G x S2) apart (tiling ALayoutInfo* / BLayoutInfo* /
    //           CLayoutInfo*, set by the host's SetALayout / SetBLayout / SetCLayout).
    // The bias (SetBias) is one N-vector per product unless MatmulConfig.isBiasBatch is false (one for all).
    // Modelled: the synchronous form into GM, NORMAL and BSNGD; the rest is refused by name.
    template <bool sync = true, bool waitIterateBatch = false>
    void IterateBatch(const GlobalTensor<DstT>& gm, uint32_t batchA, uint32_t batchB, bool enSequentialWrite,
                      const uint32_t matrixStrideA = 0, const uint32_t matrixStrideB = 0,
                      const uint32_t matrixStrideC = 0, const bool enPartialSum = false, const uint8_t enAtomic = 0,
                      FUSEDSL_CPU_SITE) {
        using namespace fusedsl_cpu;
        AtSite at_site(fs_site);
        const char* api = "Matmul::IterateBatch";
        RequireRegistered("IterateBatch");
        PostMessage(api);
        if (!sync || enPartialSum || matrixStrideC != 0) {
            Fail("%s: the asynchronous form, enPartialSum and matrixStrideC are not modelled by fusedsl's CPU Matmul",
                 api);
        }
        RunBatches(api, gm, batchA, batchB, enSequentialWrite, matrixStrideA, matrixStrideB, enAtomic, 1);
    }

    // IterateNBatch (the IterateNBatch page): batchLoop IterateBatch calls one after another, loop j taking the
    // next batchA / batchB / max(batchA, batchB) matrices of A / B / C, C into the SetWorkspace GM (laid out as
    // the C layout says); MatmulConfig.isNBatch must be on.  The synchronous form is modelled.
    template <bool sync = true, bool waitIterateBatch = false>
    void IterateNBatch(const uint32_t batchLoop, uint32_t batchA, uint32_t batchB, bool enSequentialWrite,
                       const uint32_t matrixStrideA = 0, const uint32_t matrixStrideB = 0,
                       const uint32_t matrixStrideC = 0, FUSEDSL_CPU_SITE) {
        using namespace fusedsl_cpu;
        AtSite at_site(fs_site);
        const char* api = "Matmul::IterateNBatch";
        RequireRegistered("IterateNBatch");
        PostMessage(api);
        if (!kCfgIsConfig || !fs_cfg().isNBatch) {
            Fail("%s: MatmulConfig.isNBatch is off; set it (GetMMConfig with MatmulBatchParams{true, ...}) to compute "
                 "several batches per call (the IterateNBatch page)", api);
        }
        if (!sync || matrixStrideC != 0) {
            Fail("%s: the asynchronous form and matrixStrideC are not modelled by fusedsl's CPU Matmul", api);
        }
        if (fs_workspace == nullptr) {
            Fail("%s: call SetWorkspace first; IterateNBatch writes C into that GM (the IterateNBatch page)", api);
        }
        GlobalTensor<DstT> ws;
        ws.SetGlobalBuffer(reinterpret_cast<__gm__ DstT*>(fs_workspace), fs_workspace_bytes / sizeof(DstT));
        RunBatches(api, ws, batchA, batchB, enSequentialWrite, matrixStrideA, matrixStrideB, 0, batchLoop);
    }

private:
    template <typename G>
    void RunBatches(const char* api, const G& gm, uint32_t batchA, uint32_t batchB, bool enSequentialWrite,
                    uint32_t matrixStrideA, uint32_t matrixStrideB, uint8_t enAtomic, uint32_t loops) {
        using namespace fusedsl_cpu;
        constexpr LayoutMode lay = A_TYPE::layout;
        if constexpr (lay != B_TYPE::layout) {
            Fail("%s: A and B have different layouts; the IterateBatch page requires the same Layout for both", api);
        }
        if constexpr (lay != LayoutMode::NORMAL && lay != LayoutMode::BSNGD) {
            Fail("%s: only the NORMAL and BSNGD layouts are modelled by fusedsl's CPU Matmul (SBNGD and BNGS1S2 are "
                 "not)", api);
        }
        if constexpr (kIsB4<SrcAT>) {
            Fail("%s: BatchMatmul does not take int4b_t matrices (the IterateBatch page)", api);
        }
        if (lay == LayoutMode::BSNGD && enSequentialWrite) {
            Fail("%s: BSNGD does not support the sequential write mode (the IterateBatch page)", api);
        }
        if (batchA == 0 || batchB == 0 || std::max(batchA, batchB) % std::min(batchA, batchB) != 0) {
            Fail("%s: batchA = %u and batchB = %u; both positive, one a multiple of the other (broadcast)", api,
                 batchA, batchB);
        }
        if (!fs_has_a || !fs_has_b) {
            Fail("%s: call SetTensorA and SetTensorB first", api);
        }
        const TCubeTiling& tl = fs_tiling;
        if (lay == LayoutMode::BSNGD && (tl.ALayoutInfoD <= 0 || tl.BLayoutInfoD <= 0 || tl.CLayoutInfoS2 <= 0)) {
            Fail("%s: the tiling has no BSNGD layout (ALayoutInfoD = %d, BLayoutInfoD = %d, CLayoutInfoS2 = %d); set "
                 "it on the host with SetALayout / SetBLayout / SetCLayout", api, tl.ALayoutInfoD, tl.BLayoutInfoD,
                 tl.CLayoutInfoS2);
        }
        const uint32_t batchC = std::max(batchA, batchB);
        const GlobalTensor<SrcAT> a0 = fs_a;
        const GlobalTensor<SrcBT> b0 = fs_b;
        const GlobalTensor<BiasT> bias0 = fs_bias;
        const int64_t org[4] = {fs_org_m, fs_org_n, fs_org_ka, fs_org_kb};
        uint64_t step_a, step_b, step_c;
        if constexpr (lay == LayoutMode::BSNGD) {
            const int64_t lda = static_cast<int64_t>(tl.ALayoutInfoN) * tl.ALayoutInfoG * tl.ALayoutInfoD;
            const int64_t ldb = static_cast<int64_t>(tl.BLayoutInfoN) * tl.BLayoutInfoG * tl.BLayoutInfoD;
            fs_lda = lda;
            fs_ldb = ldb;
            fs_c_ld = static_cast<int64_t>(tl.CLayoutInfoN) * tl.CLayoutInfoG * tl.CLayoutInfoS2;
            step_a = matrixStrideA != 0 ? matrixStrideA : tl.ALayoutInfoD;
            step_b = matrixStrideB != 0 ? matrixStrideB : tl.BLayoutInfoD;
            step_c = tl.CLayoutInfoS2;
        } else {
            step_a = matrixStrideA != 0 ? matrixStrideA : static_cast<uint64_t>(org[0] * org[2]);
            step_b = matrixStrideB != 0 ? matrixStrideB : static_cast<uint64_t>(org[3] * org[1]);
            step_c = static_cast<uint64_t>(org[0] * org[1]);
        }
        const bool bias_batch = !kCfgIsConfig || fs_cfg().isBiasBatch;
        // One IterateBatch is one complete request to the cube core (CANN's client posts a single
        // MMFUN_ITERATE_BATCH_ALL and waits for it), so it leaves no iteration open.
        for (uint32_t j = 0; j < loops; ++j) {
            for (uint32_t i = 0; i < batchC; ++i) {
                const uint64_t ia = static_cast<uint64_t>(j) * batchA + i / (batchC / batchA);
                const uint64_t ib = static_cast<uint64_t>(j) * batchB + i / (batchC / batchB);
                const uint64_t ic = static_cast<uint64_t>(j) * batchC + i;
                fs_a = a0[ia * step_a];
                fs_b = b0[ib * step_b];
                if (fs_bias_on && bias_batch) {
                    fs_bias = bias0[ic * fs_single_n];
                }
                const GlobalTensor<DstT> c = gm[ic * step_c];
                while (Iterate<true>()) {
                    WriteTileToGm(api, c, enAtomic, enSequentialWrite);
                    fs_pending = false;
                }
            }
        }
        fs_a = a0;
        fs_b = b0;
        fs_bias = bias0;
        fs_lda = fs_ldb = fs_c_ld = 0;
    }

public:
    void End(FUSEDSL_CPU_SITE) {
        fusedsl_cpu::AtSite at_site(fs_site);
        RequireRegistered("End");
        PostMessage("Matmul::End");
        if (fs_pending) {
            fusedsl_cpu::Fail("Matmul::End: the last tile was computed by Iterate but never fetched with GetTensorC");
        }
        ResetIteration();
    }

private:
    void CheckShape(const char* api) const {
        if (fs_single_m <= 0 || fs_single_n <= 0 || fs_single_k <= 0 || fs_single_m > fs_org_m ||
            fs_single_n > fs_org_n || fs_single_k > fs_org_ka || fs_org_ka != fs_org_kb) {
            fusedsl_cpu::Fail("Matmul::%s: single shape %lld x %lld x %lld does not fit the original shape M %lld, N "
                              "%lld, Ka %lld, Kb %lld", api, static_cast<long long>(fs_single_m),
                              static_cast<long long>(fs_single_n), static_cast<long long>(fs_single_k),
                              static_cast<long long>(fs_org_m), static_cast<long long>(fs_org_n),
                              static_cast<long long>(fs_org_ka), static_cast<long long>(fs_org_kb));
        }
    }

    void RequirePending(const char* api, bool sync) const {
        RequireRegistered("GetTensorC");
        if (!fs_pending) {
            fusedsl_cpu::Fail("%s: no tile to fetch; call it once after each Iterate() that returned true", api);
        }
        if (!sync && !fs_has_workspace) {
            fusedsl_cpu::Fail("%s<false>: asynchronous GetTensorC needs a GM workspace; call SetWorkspace first", api);
        }
    }

    // acc = bias + A[m0:m0+tm, :K] x B[:K, n0:n0+tn], K summed in order.
    void ComputeTile() {
        using namespace fusedsl_cpu;
        const int64_t tm = fs_tm, tn = fs_tn, k = fs_single_k;
        const int64_t m0 = fs_m0, n0 = fs_n0;
        // Extent of each operand touched, from its GlobalTensor's start.
        // Row strides of A and B: the original shape's, or a batch matmul's BSNGD ones (IterateBatch).
        const int64_t a_ld = fs_lda != 0 ? fs_lda : fs_trans_a ? fs_org_m : fs_org_ka;
        const int64_t b_ld = fs_ldb != 0 ? fs_ldb : fs_trans_b ? fs_org_kb : fs_org_n;
        // Element (r, c) of A / B as stored in GM: ND rows `ld` apart, or NZ (CubeFormat::NZ: C0-column
        // groups of the original rows rounded up to 16, CANN's ND2NZ layout — the NZ weight of
        // quant_group_matmul_high_performance) from the GlobalTensor's start.
        const int64_t org_k = fs_org_kb != 0 ? fs_org_kb : fs_org_ka;
        auto a_at = [&](int64_t m, int64_t kk) -> int64_t {
            if constexpr (kANz) {
                constexpr int64_t c0a = C0Of<SrcAT>();
                return fs_trans_a ? ((m / c0a) * RoundUp(fs_org_ka, 16) + kk) * c0a + m % c0a
                                  : ((kk / c0a) * RoundUp(fs_org_m, 16) + m) * c0a + kk % c0a;
            } else {
                return fs_trans_a ? kk * a_ld + m : m * a_ld + kk;
            }
        };
        auto b_at = [&](int64_t kk, int64_t n) -> int64_t {
            if constexpr (kBNz) {
                constexpr int64_t c0b = C0Of<SrcBT>();
                return fs_trans_b ? ((kk / c0b) * RoundUp(fs_org_n, 16) + n) * c0b + kk % c0b
                                  : ((n / c0b) * RoundUp(org_k, 16) + kk) * c0b + n % c0b;
            } else {
                return fs_trans_b ? n * b_ld + kk : kk * b_ld + n;
            }
        };
        if ((kANz && fs_lda != 0) || (kBNz && fs_ldb != 0)) {
            Fail("Matmul: an NZ A or B in a batch layout (BSNGD strides) is not modelled by fusedsl's CPU API");
        }
        // the last element read is the largest offset in both layouts (the last row and column of the tile)
        const int64_t a_end = a_at(m0 + tm - 1, k - 1) + 1;
        const int64_t b_end = kSparseB ? (n0 + tn - 1) * (fs_org_kb / 2) + k / 2 : b_at(k - 1, n0 + tn - 1) + 1;
        // A in L1 (NZ): (r, c) at ((c / C0) * H + r) * C0 + c % C0, H = singleCoreM rounded up to 16
        constexpr int64_t c0 = 32 / sizeof(SrcAT);
        const int64_t h = RoundUp(fs_single_m, 16);
        if constexpr (kAInL1) {
            const uint64_t need = static_cast<uint64_t>(RoundUp(k, c0) * h) * sizeof(SrcAT);
            const uint64_t base = CheckLocal("Matmul::Iterate (A in TSCM)", "A", fs_a_l1.fs_addr,
                                             static_cast<uint64_t>(fs_a_l1.GetSize()) * sizeof(SrcAT), need, kMemL1);
            for (int64_t i = 0; i < tm; ++i) {
                for (int64_t b = 0; b * c0 < k; ++b) {
                    CheckLocalWritten("Matmul::Iterate (A in TSCM)", "A", base + ((b * h + m0 + i) * c0) * sizeof(SrcAT),
                                      std::min<int64_t>(c0, k - b * c0) * sizeof(SrcAT));
                }
            }
        } else if constexpr (kAInUb) {
            const char* api = "Matmul::Iterate (A in VECOUT)";
            const uint32_t off = CheckUb(api, "A", fs_a_l1.fs_addr, static_cast<uint64_t>(fs_a_l1.GetSize()) *
                                         sizeof(SrcAT), a_end * sizeof(SrcAT), sizeof(SrcAT));
            for (int64_t i = 0; i < tm; ++i) {
                CheckWritten(api, "A", off + static_cast<uint32_t>((m0 + i) * fs_org_ka * sizeof(SrcAT)),
                             k * sizeof(SrcAT));
            }
        } else if constexpr (!kCopyA1) {   // a CopyA1 callback reads A itself
            CheckGm("Matmul::Iterate (A)", fs_a, BytesOf<SrcAT>(a_end), true);
        }
        if constexpr (!kCopyB1) {
            CheckGm("Matmul::Iterate (B)", fs_b, BytesOf<SrcBT>(b_end), true);
        }
        if ((kCopyA1 && fs_trans_a) || (kCopyB1 && fs_trans_b)) {
            Fail("Matmul::Iterate: a copy callback with a transposed A or B is not modelled by fusedsl's CPU API");
        }
        if constexpr (kIsB4<SrcAT>) {
            // The Matmul使用说明 page: with int4b_t A and B "矩阵内轴的数据个数必须为偶数" (two values per byte).
            const int64_t inner_a = a_ld, inner_b = b_ld;
            if (inner_a % 2 != 0 || inner_b % 2 != 0 || k % 2 != 0) {
                Fail("Matmul::Iterate: int4b_t A and B need an even count along their inner (contiguous) axes and "
                     "an even singleCoreK (the Matmul使用说明 page); A's is %lld, B's %lld, K %lld",
                     static_cast<long long>(inner_a), static_cast<long long>(inner_b), static_cast<long long>(k));
            }
        }
        const SrcAT* a = kAInL1 || kAInUb ? fs_a_l1.fs_addr : fs_a.fs_addr;
        const SrcBT* b = fs_b.fs_addr;
        fs_acc.assign(tm * tn, Acc(0));
        if (fs_bias_on && fs_k0 == 0) {   // the bias starts the K sum (a partial output's first K step)
            CheckGm("Matmul::Iterate (bias)", fs_bias, (n0 + tn) * sizeof(BiasT), true);
            for (int64_t i = 0; i < tm; ++i) {
                for (int64_t j = 0; j < tn; ++j) {
                    fs_acc[i * tn + j] = static_cast<Acc>(ToCompute(fs_bias.fs_addr[n0 + j]));
                }
            }
            St().gm_bytes_read += tn * sizeof(BiasT);
        }
        // A and B converted once to the accumulator type, then acc[i, :] += A[i, kk] * B[kk, :] in an
        // optimised loop (fusedsl_cpu::AccumulateRows), K summed in order as before.
        // K values [k0, k0 + kn): all of singleCoreK, or one baseK step of a partial output
        const int64_t k0 = fs_k0, kn = fs_tk;
        if (kSparseB && fs_partial) {
            Fail("Matmul::Iterate: MatmulConfig.isPartialOutput with a sparse B is not modelled by fusedsl's CPU API");
        }
        // (kept in the object: a fresh vector of megabytes is an mmap and page faults on every tile)
        std::vector<Acc>& at = fs_at;
        std::vector<Acc>& bt = fs_bt;
        // ND A and B in GM (no NZ, L1/UB A, sparse B, callbacks or 4-bit values): unpacked by contiguous runs,
        // which write every element; the other forms start from zeros (a sparse B's tile writes its nonzeros)
        constexpr bool kPlainRuns = !kANz && !kBNz && !kAInL1 && !kAInUb && !kSparseB && !kCopyA1 && !kCopyB1 &&
                                    !kIsB4<SrcAT> && !kIsB4<SrcBT>;
        if constexpr (kPlainRuns) {
            at.resize(static_cast<size_t>(tm * kn));
            bt.resize(static_cast<size_t>(kn * tn));
        } else {
            at.assign(static_cast<size_t>(tm * kn), Acc(0));
            bt.assign(static_cast<size_t>(kn * tn), Acc(0));
        }
        if constexpr (kSparseB) {
            SparseBTile(b, bt, k, n0, tn);
        }
        if constexpr (kPlainRuns) {
            const float* table = HalfToFloatTable();
            if (fs_trans_b) {   // B^T rows: K runs
                for (int64_t j = 0; j < tn; ++j) {
                    UnpackRun(bt.data() + j, static_cast<uint64_t>(tn), b + b_at(k0, n0 + j), static_cast<uint64_t>(kn),
                              table);
                }
            } else {
                for (int64_t kk = k0; kk < k0 + kn; ++kk) {
                    UnpackRun(bt.data() + (kk - k0) * tn, 1, b + b_at(kk, n0), static_cast<uint64_t>(tn), table);
                }
            }
            if (fs_trans_a) {   // A^T rows: M runs
                for (int64_t kk = k0; kk < k0 + kn; ++kk) {
                    UnpackRun(at.data() + (kk - k0), static_cast<uint64_t>(kn), a + a_at(m0, kk),
                              static_cast<uint64_t>(tm), table);
                }
            } else {
                for (int64_t i = 0; i < tm; ++i) {
                    UnpackRun(at.data() + i * kn, 1, a + a_at(m0 + i, k0), static_cast<uint64_t>(kn), table);
                }
            }
        }
        for (int64_t kk = k0; kk < k0 + kn && !kPlainRuns; ++kk) {
            for (int64_t j = 0; j < tn && !kSparseB && !kCopyB1; ++j) {
                const int64_t bi = b_at(kk, n0 + j);
                bt[(kk - k0) * tn + j] = static_cast<Acc>(CubeElem(b, static_cast<uint64_t>(bi)));
            }
            for (int64_t i = 0; i < tm && !kCopyA1; ++i) {
                const int64_t ai = kAInL1 ? ((kk / c0) * h + m0 + i) * c0 + kk % c0 : a_at(m0 + i, kk);
                at[i * kn + kk - k0] = static_cast<Acc>(CubeElem(a, static_cast<uint64_t>(ai)));
            }
        }
        if constexpr (kCopyA1 || kCopyB1) {
            CopyInByCallback(at, bt, k0, kn);
        }
        fusedsl_cpu::AccumulateRows(fs_acc.data(), at.data(), bt.data(), tm, kn, tn);
        // (a callback's own DataCopy counts what it reads)
        St().gm_bytes_read += (kAInL1 || kAInUb || kCopyA1 ? 0 : BytesOf<SrcAT>(static_cast<uint64_t>(tm * kn))) +
                              (kCopyB1 ? 0 : BytesOf<SrcBT>(static_cast<uint64_t>(kn * tn)));
        if constexpr (kCfgIsConfig) {
            if (fs_cfg().enableRelu) {   // the fixpipe's ReLU on the way out of L0C
                for (Acc& v : fs_acc) {
                    v = v < Acc(0) ? Acc(0) : v;
                }
            }
        }
    }

    // The copy callbacks (MatmulCallBackFunc): per baseK block of the tile's K range, the user's function fills an
    // L1 block (NZ: column groups of c0 elements, rows rounded up to 16) in the object's A1 buffer, and the
    // tile's A rows / B columns are read from it (every element read must have been written).
    void CopyInByCallback(std::vector<Acc>& at, std::vector<Acc>& bt, int64_t k0, int64_t kn) {
        using namespace fusedsl_cpu;
        const char* api = "Matmul::Iterate (copy callback)";
        const int64_t tm = fs_tm, tn = fs_tn, base_k = fs_tiling.baseK;
        // the object's own A1 buffer (PlanLocal), or after the TPipe's L1 plan when it has none
        const uint32_t at_l1 = fs_l1_planned ? fs_l1_at
                               : fs_pipe != nullptr ? static_cast<uint32_t>(RoundUp(fs_pipe->fs_local_cursor[kMemL1], 32))
                                                    : 0u;
        auto block = [&](uint64_t bytes) {
            const uint64_t cap = LocalMemBytes(kMemL1) - (fs_pipe != nullptr ? fs_pipe->fs_tscm_bytes : 0);
            if (at_l1 + bytes > cap) {
                Fail("%s: the %llu-byte L1 block for the callback does not fit after the TPipe's L1 plan (%u of %llu "
                     "bytes)", api, static_cast<unsigned long long>(bytes), at_l1, static_cast<unsigned long long>(cap));
            }
            uint8_t* p = LocalMemBase(kMemL1) + at_l1;
            std::memset(p, 0xFF, bytes);
            std::memset(CurCore().local_written.data() + (p - CurCore().local.data()), 0, bytes);
            return LocalTensor<int8_t>(TPosition::A1, at_l1, static_cast<uint32_t>(bytes));
        };
        auto read = [&](const LocalTensor<int8_t>& l1, auto tag, int64_t rows, int64_t r, int64_t col) {
            using T = decltype(tag);
            constexpr int64_t c = 32 / sizeof(T);
            const uint64_t at_byte = static_cast<uint64_t>(((col / c) * RoundUp(rows, 16) + r) * c + col % c) *
                                     sizeof(T);
            CheckLocalWritten(api, "the L1 block", CurCore().local_at[kMemL1] + at_l1 + at_byte, sizeof(T));
            T v;
            std::memcpy(&v, reinterpret_cast<const uint8_t*>(l1.fs_addr) + at_byte, sizeof(T));
            return static_cast<Acc>(ToCompute(v));
        };
        for (int64_t ks = k0; ks < k0 + kn; ks += base_k) {
            const int64_t w = std::min(base_k, k0 + kn - ks);
            const int kb = static_cast<int>(ks / base_k);
            if constexpr (kCopyA1) {   // A block (mi, kb): useM x useK, rows tm
                constexpr int64_t c = 32 / sizeof(SrcAT);
                LocalTensor<int8_t> l1 = block(static_cast<uint64_t>(RoundUp(tm, 16) * RoundUp(w, c)) * sizeof(SrcAT));
                MM_CB::fs_copy_a1(l1, reinterpret_cast<const __gm__ void*>(fs_a.fs_addr),
                                  static_cast<int>(fs_m0 / fs_tiling.baseM), kb, static_cast<int>(tm),
                                  static_cast<int>(w), fs_user_def_info, fs_self_define_data);
                for (int64_t i = 0; i < tm; ++i) {
                    for (int64_t kk = 0; kk < w; ++kk) {
                        at[i * kn + ks - k0 + kk] = read(l1, SrcAT{}, tm, i, kk);
                    }
                }
            }
            if constexpr (kCopyB1) {   // B block (kb, ni): useK x useN, rows w
                constexpr int64_t c = 32 / sizeof(SrcBT);
                LocalTensor<int8_t> l1 = block(static_cast<uint64_t>(RoundUp(w, 16) * RoundUp(tn, c)) * sizeof(SrcBT));
                MM_CB::fs_copy_b1(l1, reinterpret_cast<const __gm__ void*>(fs_b.fs_addr), kb,
                                  static_cast<int>(fs_n0 / fs_tiling.baseN), static_cast<int>(w),
                                  static_cast<int>(tn), fs_user_def_info, fs_self_define_data);
                for (int64_t kk = 0; kk < w; ++kk) {
                    for (int64_t j = 0; j < tn; ++j) {
                        bt[(ks - k0 + kk) * tn + j] = read(l1, SrcBT{}, w, kk, j);
                    }
                }
            }
        }
    }

    // The K x tn B tile of a sparse B: the dense values put back at the K positions their index gives
    // (index pair (i0, i1) of dense values 2g, 2g + 1: K values 4g + i0 and 4g + max(i0, 1 + i1), the
    // MmadWithSparse page's selection table), zeros elsewhere.  B is transposed (N x K/2 dense, ND).
    void SparseBTile(const SrcBT* b, std::vector<Acc>& bt, int64_t k, int64_t n0, int64_t tn) {
        using namespace fusedsl_cpu;
        const char* api = "Matmul::Iterate (sparse B)";
        if (!fs_trans_b) {
            Fail("%s: only a transposed sparse B (N x K/2, SetTensorB(gm, true)) is modelled", api);
        }
        if (!fs_has_sparse_index) {
            Fail("%s: call SetSparseIndex before Iterate/IterateAll (the SetSparseIndex page)", api);
        }
        if (k % 4 != 0) {
            Fail("%s: K = %lld is not a multiple of 4; 4:2 sparsity keeps 2 of every 4 K values", api,
                 static_cast<long long>(k));
        }
        const int64_t n_blocks = (fs_org_n + 15) / 16;
        auto byte_at = [&](int64_t col, int64_t kd) {
            const int64_t kb = kd / 4;
            return (kb / 8) * n_blocks * 128 + (col / 16) * 128 + (col % 16) * 8 + kb % 8;
        };
        CheckGm(api, fs_sparse_index, static_cast<uint64_t>(byte_at(n0 + tn - 1, k / 2 - 1) + 1), true);
        const int64_t kd_row = fs_org_kb / 2;
        for (int64_t j = 0; j < tn; ++j) {
            const int64_t col = n0 + j;
            for (int64_t g = 0; g < k / 4; ++g) {
                uint32_t i[2];
                for (int e = 0; e < 2; ++e) {
                    const int64_t kd = 2 * g + e;
                    i[e] = (fs_sparse_index.fs_addr[byte_at(col, kd)] >> (2 * (kd % 4))) & 3u;
                }
                if (i[0] > 2 || i[1] > 2) {
                    Fail("%s: index values are 0..2; column %lld has %u, %u at dense K %lld, %lld", api,
                         static_cast<long long>(col), i[0], i[1], static_cast<long long>(2 * g),
                         static_cast<long long>(2 * g + 1));
                }
                const int64_t pos[2] = {4 * g + i[0], 4 * g + std::max<int64_t>(i[0], 1 + i[1])};
                for (int e = 0; e < 2; ++e) {
                    bt[pos[e] * tn + j] += static_cast<Acc>(ToCompute(b[col * kd_row + 2 * g + e]));
                }
            }
        }
    }

    // The pending tile into UB at element (row0, col0) of a row-major block with leading
    // dimension ld (elements); columns up to the 32-byte boundary are zero-filled.
    void StoreTile(uint8_t* base, uint32_t off, int64_t ld, int64_t row0, int64_t col0) {
        using namespace fusedsl_cpu;
        const int64_t tn_pad = RoundUp(fs_tn, 32 / sizeof(DstT));
        for (int64_t i = 0; i < fs_tm; ++i) {
            auto* row = reinterpret_cast<DstT*>(base) + (row0 + i) * ld + col0;
            for (int64_t j = 0; j < tn_pad; ++j) {
                DstT v = j < fs_tn ? FromCompute<DstT>(fs_Out(fs_acc[i * fs_tn + j], j)) : FromCompute<DstT>(0.0f);
                std::memcpy(row + j, &v, sizeof(DstT));
            }
            MarkWritten(off + static_cast<uint32_t>(((row0 + i) * ld + col0) * sizeof(DstT)),
                        static_cast<uint64_t>(std::min<int64_t>(tn_pad, ld - col0)) * sizeof(DstT));
        }
    }

    void WriteTileToUb(const char* api, const LocalTensor<DstT>& c, bool sequential) {
        using namespace fusedsl_cpu;
        if (fs_OffTriangle()) {
            return;
        }
        const uint64_t bytes_have = static_cast<uint64_t>(c.GetSize()) * sizeof(DstT);
        if (C_TYPE::format == CubeFormat::NZ) {
            // NZ: column blocks of 16, each RoundUp(tm, 16) rows of 16 elements.
            const int64_t cols = (fs_tn + 15) / 16, rows = RoundUp(fs_tm, 16);
            const uint64_t need = static_cast<uint64_t>(cols * rows * 16) * sizeof(DstT);
            uint32_t off = CheckUb(api, "the destination", c.fs_addr, bytes_have, need, sizeof(DstT));
            auto* out = reinterpret_cast<DstT*>(c.fs_addr);
            for (int64_t cb = 0; cb < cols; ++cb) {
                for (int64_t i = 0; i < rows; ++i) {
                    for (int64_t j = 0; j < 16; ++j) {
                        int64_t col = cb * 16 + j;
                        bool in = i < fs_tm && col < fs_tn;
                        DstT v = FromCompute<DstT>(in ? fs_Out(fs_acc[i * fs_tn + col], col) : fusedsl_cpu::Compute<DstT>(0));
                        std::memcpy(out + (cb * rows + i) * 16 + j, &v, sizeof(DstT));
                    }
                }
            }
            MarkWritten(off, need);
            return;
        }
        if (C_TYPE::format != CubeFormat::ND && C_TYPE::format != CubeFormat::ND_ALIGN) {
            Fail("%s: C format %d into UB is not modelled (ND, ND_ALIGN and NZ are)", api,
                 static_cast<int>(C_TYPE::format));
        }
        if (sequential) {
            // The tile alone, rows padded to 32 bytes: baseM x baseN for a full tile.
            const int64_t ld = RoundUp(fs_tn, 32 / sizeof(DstT));
            const uint64_t need = static_cast<uint64_t>(fs_tm * ld) * sizeof(DstT);
            uint32_t off = CheckUb(api, "the destination", c.fs_addr, bytes_have, need, sizeof(DstT));
            StoreTile(reinterpret_cast<uint8_t*>(c.fs_addr), off, ld, 0, 0);
            return;
        }
        // Non-sequential: the tile at its place in a singleCoreM x singleCoreN block.
        const int64_t ld = RoundUp(fs_single_n, 32 / sizeof(DstT));
        const uint64_t need = static_cast<uint64_t>((fs_m0 + fs_tm - 1) * ld + fs_n0 +
                                                    RoundUp(fs_tn, 32 / sizeof(DstT))) * sizeof(DstT);
        uint32_t off = CheckUb(api, "the destination (a whole singleCoreM x singleCoreN block, since "
                               "enSequentialWrite is false)", c.fs_addr, bytes_have, need, sizeof(DstT));
        StoreTile(reinterpret_cast<uint8_t*>(c.fs_addr), off, ld, fs_m0, fs_n0);
    }

    void WriteTileToGm(const char* api, const GlobalTensor<DstT>& gm, uint8_t atomic, bool sequential) {
        using namespace fusedsl_cpu;
        if (fs_OffTriangle()) {
            return;
        }
        // ND: sequential, the tm x tn tile alone at gm's start (the GetTensorC page: "连续写，写入[baseM, baseN]",
        // the caller places each tile; CANN's CopyOutNZ2ND takes dstOffset 0 and the tile width as stride);
        // otherwise at the tile's place in C with row stride N — for CubeFormat::ND_ALIGN, N rounded up to
        // 32 bytes (矩阵乘输出的N方向对齐: "按照N方向32字节对齐的补齐规则输出C矩阵"; the padding columns are not
        // written here).
        // NZ (CANN's CopyOutNZ2NZ): column groups of c0 (16; 8 with isEnableChannelSplit; 32 for 8-bit C), each
        // a column of rows c0 elements apart; the groups orgM * c0 apart (channel split: orgM rounded up to 16)
        // and the tile at n0 * that + m0 * c0; sequential: the tile alone, groups RoundUp(tm, 16) * c0 apart.
        int64_t c0 = fs_tn, group_stride = 0, row_stride = 0, start = 0;
        if constexpr (C_TYPE::format == CubeFormat::NZ) {
            c0 = fs_channel_split ? 8 : sizeof(DstT) == 1 ? 32 : 16;
            row_stride = c0;
            const int64_t height = fs_channel_split ? RoundUp(fs_org_m, 16) : fs_org_m;
            group_stride = sequential ? RoundUp(fs_tm, 16) * c0 : height * c0;
            start = sequential ? 0 : fs_n0 * height + fs_m0 * c0;
        } else {
            const int64_t row_n = fs_c_ld != 0 ? fs_c_ld
                                  : C_TYPE::format == CubeFormat::ND_ALIGN
                                      ? static_cast<int64_t>(RoundUp(fs_org_n, 32 / sizeof(DstT))) : fs_org_n;
            row_stride = sequential ? fs_tn : row_n;
            start = sequential ? 0 : fs_m0 * row_n + fs_n0;
        }
        const int64_t groups = (fs_tn + c0 - 1) / c0;
        const int64_t last_w = fs_tn - (groups - 1) * c0;
        GmBuffer* buf = CheckGm(api, gm, static_cast<uint64_t>(start + (groups - 1) * group_stride +
                                                               (fs_tm - 1) * row_stride + (groups == 1 ? fs_tn : last_w)) *
                                             sizeof(DstT), true);
        std::vector<DstT> out(static_cast<size_t>(std::min(c0, fs_tn)));
        for (int64_t g = 0; g < groups; ++g) {
            const int64_t w = std::min(c0, fs_tn - g * c0);
            for (int64_t i = 0; i < fs_tm; ++i) {
                DstT* row = gm.fs_addr + start + g * group_stride + i * row_stride;
                for (int64_t jj = 0; jj < w; ++jj) {
                    const int64_t j = g * c0 + jj;
                    auto v = fs_Out(fs_acc[i * fs_tn + j], j);
                    if (atomic != 0) {
                        auto old = ToCompute(row[jj]);
                        v = atomic == 1 ? static_cast<Compute<DstT>>(old + v) : atomic == 2 ? std::max(old, v)
                                                                                           : std::min(old, v);
                    }
                    out[jj] = FromCompute<DstT>(v);
                }
                if (atomic == 0) {
                    // the row's new bytes: a core writing what another already wrote there is a benign race
                    // (two AIVs sharing A and B through IBShare get the same tile: CANN's matmul_ibshareAB)
                    NoteGmWrite(api, buf, reinterpret_cast<uint8_t*>(row), w * sizeof(DstT), false,
                                reinterpret_cast<const uint8_t*>(out.data()));
                }
                std::memcpy(row, out.data(), static_cast<size_t>(w) * sizeof(DstT));
            }
        }
        St().gm_bytes_written += static_cast<uint64_t>(fs_tm * fs_tn) * sizeof(DstT);
    }

    bool fs_in_iterate_all = false;   // Iterate called by IterateAll (NBuffer33 allows no other)
    uint64_t fs_user_def_info = 0, fs_self_define_data = 0;   // for the copy callbacks
    TPipe* fs_pipe = nullptr;         // the REGIST_MATMUL_OBJ / Init pipe: where a callback's L1 block goes
    bool fs_channel_split = false;    // MatmulConfig.isEnableChannelSplit: NZ C in 16 x 8 fractals
    GM_ADDR fs_workspace = nullptr;   // SetWorkspace's GM: where IterateNBatch puts C
    uint64_t fs_workspace_bytes = 0;
    int64_t fs_lda = 0, fs_ldb = 0, fs_c_ld = 0;   // a batch matmul's BSNGD row strides (0: the org shape's)
    GlobalTensor<SrcAT> fs_a;
    LocalTensor<SrcAT> fs_a_l1;   // A in TSCM, or in UB (VECOUT, 310P)
    GlobalTensor<SrcBT> fs_b;
    GlobalTensor<BiasT> fs_bias;
    bool fs_has_a = false, fs_has_b = false;
    bool fs_trans_a = false, fs_trans_b = false;
    std::vector<Acc> fs_acc;
    std::vector<Acc> fs_at, fs_bt;   // the tile's A and B unpacked (ComputeTile)
    // A 4:2 sparse B (SparseMatmulType) and its index (SetSparseIndex).
    template <class T, class = void>
    struct IsSparse : std::false_type {};
    template <class T>
    struct IsSparse<T, std::void_t<decltype(T::fs_sparse)>> : std::true_type {};
    static constexpr bool kSparseB = IsSparse<B_TYPE>::value;
    // A / B in GM in CubeFormat::NZ (A in TSCM is NZ too, read through its own layout)
    static constexpr bool kANz = A_TYPE::format == CubeFormat::NZ && A_TYPE::pos == TPosition::GM;
    static constexpr bool kBNz = B_TYPE::format == CubeFormat::NZ && B_TYPE::pos == TPosition::GM;
    static_assert(!(kBNz && kSparseB), "the fusedsl CPU Matmul models a sparse B in ND");
    GlobalTensor<uint8_t> fs_sparse_index;
    bool fs_has_sparse_index = false;

    // Dequantisation (SetQuantScalar / SetQuantVector): 0 none set, 1 scalar, 2 vector.
    static constexpr bool kDequant = (std::is_same_v<SrcAT, int8_t> || fusedsl_cpu::kIsB4<SrcAT>) &&
                                     std::is_same_v<DstT, half>;
    int fs_quant_mode = 0;
    uint64_t fs_quant_scalar = 0;
    GlobalTensor<uint64_t> fs_quant_vector;

    void RequireDequant(const char* api) const {
        if (!kDequant) {
            fusedsl_cpu::Fail("Matmul::%s: this Matmul (A %s, C %s) does not dequantise; fusedsl models the int8_t x "
                              "int8_t -> half dequantisation", api, fusedsl_cpu::TypeName<SrcAT>(),
                              fusedsl_cpu::TypeName<DstT>());
        }
    }

    // One accumulator value of the pending tile (column j of it) in C's compute type.
    fusedsl_cpu::Compute<DstT> fs_Out(Acc a, int64_t j) {
        using namespace fusedsl_cpu;
        if constexpr (kDequant) {
            uint64_t q = fs_quant_scalar;
            if (fs_quant_mode == 2) {
                const int64_t col = fs_n0 + j;
                CheckGm("Matmul (SetQuantVector)", fs_quant_vector, static_cast<uint64_t>(col + 1) * sizeof(uint64_t),
                        true);
                q = fs_quant_vector.fs_addr[col];
            }
            const uint32_t bits = static_cast<uint32_t>(q) & 0xFFFFE000u;
            float scale = 0;
            std::memcpy(&scale, &bits, sizeof scale);
            return std::min(65504.0f, std::max(-65504.0f, static_cast<float>(a) * scale));
        } else {
            (void)j;
            return static_cast<fusedsl_cpu::Compute<DstT>>(a);
        }
    }
};

}  // namespace AscendC

namespace fusedsl_cpu {

template <class P, class W>
inline void RegistMatmulObjs(Site, P*, W) {}

// site: the kernel line of the REGIST_MATMUL_OBJ, where its checks report
template <class P, class W, class MM, class... Rest>
inline void RegistMatmulObjs(Site site, P* pipe, W workspace, MM& mm, const TCubeTiling* tiling, Rest&&... rest) {
    {
        AtSite at(site);
        mm.fs_Register(pipe, workspace, tiling, "REGIST_MATMUL_OBJ", true);
    }
    RegistMatmulObjs(site, pipe, workspace, rest...);
}

}  // namespace fusedsl_cpu

// REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm1, &tiling1[, mm2, &tiling2 ...])
// On the cube core of a mixed launch it ends the kernel (CANN's runs its KFC server there and
// returns; fusedsl computes the Matmul on the vector side) — unless the source defines
// ASCENDC_CUBE_ONLY before the headers: the Matmul object then runs on the cube core itself.
#ifdef ASCENDC_CUBE_ONLY
#define FUSEDSL_MM_AIC_SERVES false
// Such a kernel computes on its cube core (`if ASCEND_IS_AIV { return; }`), so a mixed launch of it runs
// each block's cube core as CANN's does — without it the launch would compute nothing.
namespace fusedsl_cpu {
[[maybe_unused]] inline const bool kCubeOnlyMatmulRunsCubeCores = EnableCubeCores();
}  // namespace fusedsl_cpu
#else
#define FUSEDSL_MM_AIC_SERVES true
#endif
#define REGIST_MATMUL_OBJ(tpipe, workspace, ...)                                                       \
    ((FUSEDSL_MM_AIC_SERVES && ::fusedsl_cpu::RT().on_aic ? throw ::fusedsl_cpu::KernelReturn{} : (void)0), \
     ::fusedsl_cpu::RegistMatmulObjs(::fusedsl_cpu::Site(), tpipe, workspace, __VA_ARGS__))

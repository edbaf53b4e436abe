#include <cstring>
// Everything the Matmul API tests launch through fusedsl's Python runner, in one library:
// the MatmulLeakyRelu sample kernel and its host tiling, a kernel that reports the block
// indices of a mixed launch, and small kernels that each break one Matmul rule on purpose.
// Every kernel takes (a, b, bias, c, workspace, tiling) like the sample.
#include "matmul_leakyrelu_custom.cpp"
#include "matmul_leakyrelu_custom_tiling.cpp"

using MmHalf = Matmul<MatmulType<AscendC::TPosition::GM, CubeFormat::ND, half>,
                      MatmulType<AscendC::TPosition::GM, CubeFormat::ND, half>,
                      MatmulType<AscendC::TPosition::VECIN, CubeFormat::ND, float>,
                      MatmulType<AscendC::TPosition::GM, CubeFormat::ND, float>>;

// What a mixed launch shows each vector core: c[16 * i ...] = GetBlockIdx, GetBlockNum,
// GetSubBlockIdx of instance i (as floats); 16 floats apart so no two cores share the 64-byte
// data-cache line SetValue writes through.
extern "C" __global__ __aicore__ void block_info(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR c, GM_ADDR, GM_ADDR) {
    AscendC::GlobalTensor<float> out;
    out.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(c) + 16 * AscendC::GetBlockIdx(), 3);
    out.SetValue(0, static_cast<float>(AscendC::GetBlockIdx()));
    out.SetValue(1, static_cast<float>(AscendC::GetBlockNum()));
    out.SetValue(2, static_cast<float>(AscendC::GetSubBlockIdx()));
}

// The shared start of the broken kernels: tiling copied, A/B/bias set on the registered object.
struct Broken {
    AscendC::TPipe pipe;
    TCubeTiling tiling;
    MmHalf mm;
    AscendC::GlobalTensor<half> a, b;
    AscendC::GlobalTensor<float> bias, c;

    Broken(GM_ADDR ag, GM_ADDR bg, GM_ADDR biasg, GM_ADDR cg, GM_ADDR tilingGm) {
        CopyTiling(&tiling, tilingGm);
        a.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(ag));
        b.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(bg));
        bias.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(biasg));
        c.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(cg));
    }
    void SetOperands() {
        mm.SetTensorA(a);
        mm.SetTensorB(b);
        mm.SetBias(bias);
    }
};

#define BROKEN(name) \
    extern "C" __global__ __aicore__ void name(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR ws, GM_ADDR t)

BROKEN(regist_after_init_buffer) {
    Broken k(a, b, bias, c, t);
    AscendC::TQue<AscendC::QuePosition::VECOUT, 1> q;
    k.pipe.InitBuffer(q, 1, k.tiling.baseM * k.tiling.baseN * sizeof(float));
    REGIST_MATMUL_OBJ(&k.pipe, ws, k.mm, &k.tiling);
}

BROKEN(tensor_c_too_small) {
    Broken k(a, b, bias, c, t);
    REGIST_MATMUL_OBJ(&k.pipe, ws, k.mm, &k.tiling);
    AscendC::TQue<AscendC::QuePosition::VECOUT, 1> q;
    k.pipe.InitBuffer(q, 1, k.tiling.baseM * k.tiling.baseN * sizeof(float) / 2);
    k.SetOperands();
    k.mm.Iterate();
    auto ub = q.AllocTensor<float>();
    k.mm.GetTensorC(ub, false, true);
}

BROKEN(tensor_c_misaligned) {
    Broken k(a, b, bias, c, t);
    REGIST_MATMUL_OBJ(&k.pipe, ws, k.mm, &k.tiling);
    AscendC::TQue<AscendC::QuePosition::VECOUT, 1> q;
    k.pipe.InitBuffer(q, 1, k.tiling.baseM * k.tiling.baseN * sizeof(float) + 64);
    k.SetOperands();
    k.mm.Iterate();
    auto ub = q.AllocTensor<float>();
    k.mm.GetTensorC(ub[4], false, true);
}

// Iterate / GetTensorC over the whole C on vector core 0 and no End() (CANN asks for none: its cube core
// leaves its server loop on the client object's destruction).
BROKEN(no_end) {
    Broken k(a, b, bias, c, t);
    REGIST_MATMUL_OBJ(&k.pipe, ws, k.mm, &k.tiling);
    if (AscendC::GetBlockIdx() != 0) {
        return;
    }
    k.SetOperands();
    while (k.mm.Iterate()) {
        k.mm.GetTensorC(k.c);
    }
}

BROKEN(iterate_twice) {
    Broken k(a, b, bias, c, t);
    REGIST_MATMUL_OBJ(&k.pipe, ws, k.mm, &k.tiling);
    k.SetOperands();
    k.mm.Iterate();
    k.mm.Iterate();
}

// The TPipe plans `ub` bytes of UB (TBuf), then one tile is computed and fetched to GM: with the whole
// 192 KB the Matmul call's message to the cube core (the last 128 bytes of UB) would land in the TBuf.
__aicore__ inline void PlanUbThenIterate(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR ws, GM_ADDR t,
                                         uint32_t ub) {
    Broken k(a, b, bias, c, t);
    REGIST_MATMUL_OBJ(&k.pipe, ws, k.mm, &k.tiling);
    AscendC::TBuf<AscendC::TPosition::VECCALC> all;
    k.pipe.InitBuffer(all, ub);
    k.SetOperands();
    k.mm.Iterate();   // LINE:msg_area
    k.mm.GetTensorC(k.c);
    k.mm.End();
}

BROKEN(ub_into_message_area) {
    PlanUbThenIterate(a, b, bias, c, ws, t, 192 * 1024);
}

BROKEN(ub_leaves_message_area) {
    PlanUbThenIterate(a, b, bias, c, ws, t, 192 * 1024 - 128);
}

// An A1 queue planned before the Matmul object, so that the object's own L1 buffers (A1/B1 and the bias
// buffer, planned after it) end exactly at 512 KB - 128 — the top of L1 below the KFC message area on 910B
// (asc-devkit kernel_utils_constants.h, TOTAL_L1_SIZE) — or (kOver) with A1/B1 32 bytes past it.
template <bool kOver>
__aicore__ inline void L1PlanToTheTop(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR ws, GM_ADDR t) {
    Broken k(a, b, bias, c, t);
    const TCubeTiling& tl = k.tiling;
    const uint32_t ab = tl.depthA1 * tl.baseM * tl.baseK * sizeof(half) + tl.depthB1 * tl.baseN * tl.baseK * sizeof(half);
    const uint32_t biasBytes = tl.isBias ? tl.baseN * sizeof(float) : 0;
    AscendC::TQue<AscendC::QuePosition::A1, 1> q;
    k.pipe.InitBuffer(q, 1, 512 * 1024 - 128 - ab - (kOver ? 0 : biasBytes) + (kOver ? 32 : 0));
    REGIST_MATMUL_OBJ(&k.pipe, ws, k.mm, &k.tiling);   // LINE:l1_top
    k.SetOperands();
    k.mm.Iterate();
    k.mm.GetTensorC(k.c);
    k.mm.End();
}

BROKEN(l1_to_the_top) { L1PlanToTheTop<false>(a, b, bias, c, ws, t); }
BROKEN(l1_past_the_top) { L1PlanToTheTop<true>(a, b, bias, c, ws, t); }

BROKEN(not_registered) {
    Broken k(a, b, bias, c, t);
    k.SetOperands();
}

// The asynchronous form (the Iterate and GetTensorC pages): one Iterate<false>() for the whole
// single-core block, then `fetches` GetTensorC<false> calls, each copying the next baseM x baseN
// tile (in the iterate order) to c[i * baseM * baseN ...].  A GM workspace is set first, as the
// asynchronous GetTensorC needs.
__aicore__ inline void AsyncTiles(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR ws, GM_ADDR t, int fetches) {
    Broken k(a, b, bias, c, t);
    REGIST_MATMUL_OBJ(&k.pipe, ws, k.mm, &k.tiling);
    const uint32_t tile = k.tiling.baseM * k.tiling.baseN;
    AscendC::TQue<AscendC::QuePosition::VECOUT, 1> q;
    k.pipe.InitBuffer(q, 1, tile * sizeof(float));
    AscendC::GlobalTensor<float> scratch;
    scratch.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(ws), 4 * tile);
    k.mm.SetWorkspace(scratch);
    k.SetOperands();
    k.mm.template Iterate<false>();
    for (int i = 0; i < fetches; ++i) {
        auto ub = q.AllocTensor<float>();
        k.mm.template GetTensorC<false>(ub, false, true);
        q.EnQue(ub);
        ub = q.DeQue<float>();
        AscendC::DataCopy(k.c[i * tile], ub, tile);
        q.FreeTensor(ub);
    }
    k.mm.End();
}

BROKEN(async_tiles) { AsyncTiles(a, b, bias, c, ws, t, 4); }

// SetTensorB(b, true) while B's MatmulType keeps ISTRANS false: b holds B^T (N x K); half inputs
// run (with the SetTensorB page's precision warning), C straight to GM by IterateAll.
BROKEN(trans_b_without_istrans) {
    Broken k(a, b, bias, c, t);
    REGIST_MATMUL_OBJ(&k.pipe, ws, k.mm, &k.tiling);
    k.mm.SetTensorA(k.a);
    k.mm.SetTensorB(k.b, true);
    k.mm.SetBias(k.bias);
    k.mm.IterateAll(k.c);
    k.mm.End();
}

// C in CubeFormat::ND_ALIGN: rows of N floats padded to a multiple of 8 (32 bytes) in GM.
BROKEN(nd_align_c) {
    AscendC::TPipe pipe;
    TCubeTiling tiling;
    CopyTiling(&tiling, t);
    Matmul<MatmulType<AscendC::TPosition::GM, CubeFormat::ND, half>,
           MatmulType<AscendC::TPosition::GM, CubeFormat::ND, half>,
           MatmulType<AscendC::TPosition::GM, CubeFormat::ND_ALIGN, float>,
           MatmulType<AscendC::TPosition::GM, CubeFormat::ND, float>> mm;
    REGIST_MATMUL_OBJ(&pipe, ws, mm, &tiling);
    AscendC::GlobalTensor<half> ag, bg;
    AscendC::GlobalTensor<float> biasg, cg;
    ag.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(a));
    bg.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(b));
    biasg.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(bias));
    cg.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(c));
    mm.SetTensorA(ag);
    mm.SetTensorB(bg);
    mm.SetBias(biasg);
    mm.IterateAll(cg);
    mm.End();
}

// The same with float inputs, where the page requires ISTRANS to match.
BROKEN(trans_b_float_without_istrans) {
    AscendC::TPipe pipe;
    TCubeTiling tiling;
    CopyTiling(&tiling, t);
    Matmul<MatmulType<AscendC::TPosition::GM, CubeFormat::ND, float>,
           MatmulType<AscendC::TPosition::GM, CubeFormat::ND, float>,
           MatmulType<AscendC::TPosition::GM, CubeFormat::ND, float>> mm;
    REGIST_MATMUL_OBJ(&pipe, ws, mm, &tiling);
    AscendC::GlobalTensor<float> bg;
    bg.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(b));
    mm.SetTensorB(bg, true);
}

// C declared in VECIN, the whole block written to GM by an asynchronous IterateAll (no SetWorkspace);
// launched with blockDim 1 in MIX_MODE, both vector cores write the same C (as two AIVs sharing A
// and B through IBShare do): the same values in the same bytes, a benign race.
BROKEN(iterate_all_async_c_in_ub) {
    Broken k(a, b, bias, c, t);
    REGIST_MATMUL_OBJ(&k.pipe, ws, k.mm, &k.tiling);
    k.SetOperands();
    k.mm.template IterateAll<false>(k.c);
    k.mm.WaitIterateAll();
    k.mm.End();
}
BROKEN(async_overfetch) { AsyncTiles(a, b, bias, c, ws, t, 5); }

// C = A x B^T + bias straight to GM with IterateAll (B stored N x K, the linear layer's
// x @ w.T), one core's block per vector core; cores past usedCoreNum return.
extern "C" __global__ __aicore__ void matmul_trans_b_iterate_all(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c,
                                                                 GM_ADDR ws, GM_ADDR t) {
    AscendC::TPipe pipe;
    TCubeTiling tiling;
    CopyTiling(&tiling, t);
    Matmul<MatmulType<AscendC::TPosition::GM, CubeFormat::ND, half>,
           MatmulType<AscendC::TPosition::GM, CubeFormat::ND, half, true>,
           MatmulType<AscendC::TPosition::GM, CubeFormat::ND, float>,
           MatmulType<AscendC::TPosition::GM, CubeFormat::ND, float>> mm;
    REGIST_MATMUL_OBJ(&pipe, ws, mm, &tiling);
    const int32_t mBlocks = (tiling.M + tiling.singleCoreM - 1) / tiling.singleCoreM;
    const int32_t idx = AscendC::GetBlockIdx();
    if (idx >= tiling.usedCoreNum) {
        return;
    }
    const int32_t mi = idx % mBlocks, ni = idx / mBlocks;
    AscendC::GlobalTensor<half> ag, bg;
    AscendC::GlobalTensor<float> biasg, cg;
    ag.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(a) + mi * tiling.singleCoreM * tiling.Ka);
    bg.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(b) + ni * tiling.singleCoreN * tiling.Kb);
    biasg.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(bias) + ni * tiling.singleCoreN);
    cg.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(c) + mi * tiling.singleCoreM * tiling.N + ni * tiling.singleCoreN);
    mm.SetTensorA(ag);
    mm.SetTensorB(bg, true);
    mm.SetBias(biasg);
    mm.SetTail(std::min(tiling.singleCoreM, tiling.M - mi * tiling.singleCoreM),
               std::min(tiling.singleCoreN, tiling.N - ni * tiling.singleCoreN));
    mm.IterateAll(cg);
    mm.End();
}

// The first tile of C in NZ format into UB, copied out raw: c[0 : size of the NZ tile].
extern "C" __global__ __aicore__ void matmul_nz_tile(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR ws,
                                                     GM_ADDR t) {
    AscendC::TPipe pipe;
    TCubeTiling tiling;
    CopyTiling(&tiling, t);
    Matmul<MatmulType<AscendC::TPosition::GM, CubeFormat::ND, half>,
           MatmulType<AscendC::TPosition::GM, CubeFormat::ND, half>,
           MatmulType<AscendC::TPosition::VECIN, CubeFormat::NZ, float>,
           MatmulType<AscendC::TPosition::GM, CubeFormat::ND, float>> mm;
    REGIST_MATMUL_OBJ(&pipe, ws, mm, &tiling);
    if (AscendC::GetBlockIdx() != 0) {
        return;
    }
    AscendC::TQue<AscendC::QuePosition::VECIN, 1> q;
    const uint32_t n = tiling.baseM * tiling.baseN;
    pipe.InitBuffer(q, 1, n * sizeof(float));
    AscendC::GlobalTensor<half> ag, bg;
    AscendC::GlobalTensor<float> biasg, cg;
    ag.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(a));
    bg.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(b));
    biasg.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(bias));
    cg.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(c));
    mm.SetTensorA(ag);
    mm.SetTensorB(bg);
    mm.SetBias(biasg);
    mm.Iterate();
    auto ub = q.AllocTensor<float>();
    mm.GetTensorC(ub);
    q.EnQue(ub);
    ub = q.DeQue<float>();
    AscendC::DataCopy(cg, ub, n);
    q.FreeTensor(ub);
    while (mm.Iterate()) {   // the remaining tiles, fetched to GM-less UB and dropped
        auto rest = q.AllocTensor<float>();
        mm.GetTensorC(rest);
        q.FreeTensor(rest);
    }
    mm.End();
}

// MatmulConfig built the ways kernels build it: GetMMConfig with parameter structs (here ReLU on
// C) and a modified copy of CFG_NORM.
constexpr MatmulConfig kReluCfg = [] {
    MatmulFuncParams f{};
    f.enableRelu = true;
    f.iterateOrder = IterateOrder::ORDER_N;
    return GetMMConfig<MatmulConfigMode::CONFIG_MDL>(MatmulShapeParams{64, 64, 32, 32, 32, 32}, f);
}();
constexpr MatmulConfig kPartialCfg = [] {
    auto c = CFG_NORM;
    c.isPartialOutput = true;
    return c;
}();
static_assert(kReluCfg.doMultiDataLoad && !kReluCfg.doNorm && kReluCfg.singleCoreM == 64 && kReluCfg.enableRelu);

template <const MatmulConfig& CFG>
__aicore__ inline void ReluMatmul(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR ws, GM_ADDR t) {
    if ASCEND_IS_AIV {   // a cube-only kernel: the cube core does the work
        return;
    }
    AscendC::TPipe pipe;
    TCubeTiling tiling;
    CopyTiling(&tiling, t);
    Matmul<MatmulType<AscendC::TPosition::GM, CubeFormat::ND, half>,
           MatmulType<AscendC::TPosition::GM, CubeFormat::ND, half>,
           MatmulType<AscendC::TPosition::GM, CubeFormat::ND, float>,
           MatmulType<AscendC::TPosition::GM, CubeFormat::ND, float>, CFG> mm;
    REGIST_MATMUL_OBJ(&pipe, ws, mm, &tiling);
    AscendC::GlobalTensor<half> ag, bg;
    AscendC::GlobalTensor<float> biasg, cg;
    ag.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(a));
    bg.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(b));
    biasg.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(bias));
    cg.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(c));
    mm.SetTensorA(ag);
    mm.SetTensorB(bg);
    mm.SetBias(biasg);
    mm.IterateAll(cg);   // LINE:relu_iterate_all
    mm.End();
}

extern "C" __global__ __aicore__ void matmul_cfg_relu(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR ws,
                                                      GM_ADDR t) {
    ReluMatmul<kReluCfg>(a, b, bias, c, ws, t);
}

extern "C" __global__ __aicore__ void matmul_cfg_partial(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR ws,
                                                         GM_ADDR t) {
    ReluMatmul<kPartialCfg>(a, b, bias, c, ws, t);
}

// A constant tiling (GetMatmulApiTiling of a config with the single-core and base shapes) and a
// null TCubeTiling: C = A x B + bias for the runtime shape set by SetOrgShape/SetTail, which
// may be smaller than the constant single-core shape.  The tiling buffer's word 0 is M (word 1:
// a SetTail past the original shape when nonzero).
using StaticA = MatmulType<AscendC::TPosition::GM, CubeFormat::ND, half>;
using StaticC = MatmulType<AscendC::TPosition::GM, CubeFormat::ND, float>;
constexpr MatmulConfig kStaticShapeCfg = GetMMConfig<MatmulConfigMode::CONFIG_MDL>(MatmulShapeParams{128, 64, 32, 32, 32, 32});
constexpr MatmulApiStaticTiling kStaticTiling = GetMatmulApiTiling<StaticA, StaticA, StaticC, StaticC>(kStaticShapeCfg);
static_assert(kStaticTiling.singleCoreM == 128 && kStaticTiling.baseK == 32 && kStaticTiling.stepKa == 1);

extern "C" __global__ __aicore__ void matmul_static_tiling(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR ws,
                                                           GM_ADDR t) {
    if ASCEND_IS_AIV {
        return;
    }
    int32_t words[2];
    std::memcpy(words, t, sizeof words);
    AscendC::TPipe pipe;
    Matmul<StaticA, StaticA, StaticC, StaticC, kStaticTiling> mm;
    REGIST_MATMUL_OBJ(&pipe, ws, mm, (TCubeTiling*)nullptr);
    const int32_t m = words[0];
    mm.SetOrgShape(m, 64, 32);
    mm.SetTail(words[1] != 0 ? words[1] : m, 64, 32);
    AscendC::GlobalTensor<half> ag, bg;
    AscendC::GlobalTensor<float> biasg, cg;
    ag.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(a));
    bg.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(b));
    biasg.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(bias));
    cg.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(c));
    mm.SetTensorA(ag);
    mm.SetTensorB(bg);
    mm.SetBias(biasg);
    mm.IterateAll(cg);
    mm.End();
}

// Dequantisation (SetQuantScalar / SetQuantVector): int8_t x int8_t + int32_t bias into half C, 32 x 64 x 64
// with a constant tiling.  The tiling buffer's word 0 picks the mode: 0 the scalar 0.1, 1 the per-column
// scales (uint64_t) from byte 64 of the buffer on, 2 neither (refused at Iterate).
using QuantAB = MatmulType<AscendC::TPosition::GM, CubeFormat::ND, int8_t>;
using QuantC = MatmulType<AscendC::TPosition::GM, CubeFormat::ND, half>;
using QuantBias = MatmulType<AscendC::TPosition::GM, CubeFormat::ND, int32_t>;
constexpr MatmulConfig kQuantCfg = GetMMConfig<MatmulConfigMode::CONFIG_MDL>(MatmulShapeParams{32, 64, 64, 32, 64, 64});
constexpr MatmulApiStaticTiling kQuantTiling = GetMatmulApiTiling<QuantAB, QuantAB, QuantC, QuantBias>(kQuantCfg);

extern "C" __global__ __aicore__ void matmul_dequant(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR ws,
                                                     GM_ADDR t) {
    if ASCEND_IS_AIV {
        return;
    }
    int32_t mode = 0;
    std::memcpy(&mode, t, sizeof mode);
    AscendC::TPipe pipe;
    Matmul<QuantAB, QuantAB, QuantC, QuantBias, kQuantTiling> mm;
    REGIST_MATMUL_OBJ(&pipe, ws, mm, (TCubeTiling*)nullptr);
    mm.SetOrgShape(32, 64, 64);
    AscendC::GlobalTensor<int8_t> ag, bg;
    AscendC::GlobalTensor<int32_t> biasg;
    AscendC::GlobalTensor<half> cg;
    AscendC::GlobalTensor<uint64_t> quant;
    ag.SetGlobalBuffer(reinterpret_cast<__gm__ int8_t*>(a), 32 * 64);
    bg.SetGlobalBuffer(reinterpret_cast<__gm__ int8_t*>(b), 64 * 64);
    biasg.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(bias), 64);
    cg.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(c), 32 * 64);
    quant.SetGlobalBuffer(reinterpret_cast<__gm__ uint64_t*>(t + 64), 64);
    if (mode == 0) {
        float scale = 0.1f;
        uint32_t bits = 0;
        std::memcpy(&bits, &scale, sizeof bits);
        mm.SetQuantScalar(static_cast<uint64_t>(bits) | (1ull << 46));
    } else if (mode == 1) {
        mm.SetQuantVector(quant);
    }
    mm.SetTensorA(ag);
    mm.SetTensorB(bg);
    mm.SetBias(biasg);
    mm.IterateAll(cg);
    mm.End();
}

// 4:2 sparse B (SparseMatmulType + SetSparseIndex): int8_t 32 x 64 A times B given as its dense half
// (32 x 32, transposed: N rows of K/2) and the 2-bit index (fractals of 16 N x 8 bytes), into int32_t C,
// with a constant tiling; the tiling buffer carries the index from byte 64 on (word 0 nonzero: SetSparseIndex
// is left out).
using SparseB = SparseMatmulType<AscendC::TPosition::GM, AscendC::TPosition::GM, CubeFormat::ND, int8_t, true>;
using SparseC = MatmulType<AscendC::TPosition::GM, CubeFormat::ND, int32_t>;
constexpr MatmulConfig kSparseCfg = GetMMConfig<MatmulConfigMode::CONFIG_MDL>(MatmulShapeParams{32, 32, 64, 32, 32, 64});
constexpr MatmulApiStaticTiling kSparseTiling = GetMatmulApiTiling<QuantAB, SparseB, SparseC, QuantBias>(kSparseCfg);

extern "C" __global__ __aicore__ void matmul_sparse_b(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR ws,
                                                      GM_ADDR t) {
    if ASCEND_IS_AIV {
        return;
    }
    int32_t skip_index = 0;
    std::memcpy(&skip_index, t, sizeof skip_index);
    AscendC::TPipe pipe;
    Matmul<QuantAB, SparseB, SparseC, QuantBias, kSparseTiling> mm;
    REGIST_MATMUL_OBJ(&pipe, ws, mm, (TCubeTiling*)nullptr);
    mm.SetOrgShape(32, 32, 64);
    AscendC::GlobalTensor<int8_t> ag, bg;
    AscendC::GlobalTensor<int32_t> cg;
    AscendC::GlobalTensor<uint8_t> index;
    ag.SetGlobalBuffer(reinterpret_cast<__gm__ int8_t*>(a), 32 * 64);
    bg.SetGlobalBuffer(reinterpret_cast<__gm__ int8_t*>(b), 32 * 32);
    cg.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(c), 32 * 32);
    index.SetGlobalBuffer(reinterpret_cast<__gm__ uint8_t*>(t + 64), 32 * 64 / 8);
    (void)bias;
    mm.SetTensorA(ag);
    mm.SetTensorB(bg, true);
    if (skip_index == 0) {
        mm.SetSparseIndex(index);
    }
    mm.IterateAll(cg);
    mm.End();
}

// Multi-core split K (EnableMultiCoreSplitK): the tiling gives K / singleCoreK cores to each M x N block;
// core i takes block i % (usedCoreNum / kBlocks) and K chunk i / (usedCoreNum / kBlocks), and adds its
// partial product into C with AtomicAdd.  C is "cleared" with Fill first, which on a cube core does nothing
// (CANN's Fill runs on the vector unit), so C keeps what the host put there.
extern "C" int64_t SplitKTiling(int32_t M, int32_t N, int32_t K, int32_t dim, uint8_t* buf, uint32_t capacity) {
    namespace mt = matmul_tiling;
    auto platform = platform_ascendc::PlatformAscendCManager::GetInstance("Ascend910B1");
    mt::MultiCoreMatmulTiling api(*platform);
    api.SetDim(dim);
    api.SetAType(mt::TPosition::GM, mt::CubeFormat::ND, mt::DataType::DT_FLOAT16, false);
    api.SetBType(mt::TPosition::GM, mt::CubeFormat::ND, mt::DataType::DT_FLOAT16, false);
    api.SetCType(mt::TPosition::GM, mt::CubeFormat::ND, mt::DataType::DT_FLOAT);
    api.SetOrgShape(M, N, K);
    api.SetShape(M, N, K);
    api.SetBufferSpace(-1, -1, -1);
    api.EnableMultiCoreSplitK(true);
    optiling::TCubeTiling tiling;
    if (api.GetTiling(tiling) == -1) {
        return -1;
    }
    tiling.SaveToBuffer(buf, capacity);
    return static_cast<int64_t>(tiling.GetDataSize());
}

extern "C" __global__ __aicore__ void matmul_split_k(GM_ADDR a, GM_ADDR b, GM_ADDR, GM_ADDR c, GM_ADDR ws,
                                                     GM_ADDR t) {
    AscendC::TPipe pipe;
    TCubeTiling tiling;
    CopyTiling(&tiling, t);
    Matmul<StaticA, StaticA, StaticC, StaticC> mm;
    REGIST_MATMUL_OBJ(&pipe, ws, mm, &tiling);
    AscendC::GlobalTensor<half> ag, bg;
    AscendC::GlobalTensor<float> cg;
    ag.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(a), tiling.M * tiling.Ka);
    bg.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(b), tiling.Kb * tiling.N);
    cg.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(c), tiling.M * tiling.N);
    AscendC::Fill(cg, static_cast<uint64_t>(tiling.M * tiling.N), 0.0f);
    const int32_t mBlocks = (tiling.M + tiling.singleCoreM - 1) / tiling.singleCoreM;
    const int32_t mnBlocks = tiling.usedCoreNum / (tiling.Ka / tiling.singleCoreK);
    const int32_t idx = AscendC::GetBlockIdx();
    const int32_t mi = idx % mnBlocks % mBlocks, ni = idx % mnBlocks / mBlocks, ki = idx / mnBlocks;
    mm.SetTensorA(ag[mi * tiling.singleCoreM * tiling.Ka + ki * tiling.singleCoreK]);
    mm.SetTensorB(bg[ki * tiling.singleCoreK * tiling.N + ni * tiling.singleCoreN]);
    mm.IterateAll(cg[mi * tiling.singleCoreM * tiling.N + ni * tiling.singleCoreN], 1);
}

// Matmul policies (the last template argument, CANN's MATMUL_POLICY): C = A x B + bias into GM with
// IterateAll, or (iterate) Iterate + GetTensorC, which NBuffer33MatmulPolicy refuses.
template <const auto& CFG, template <const auto&, typename...> class POLICY>
__aicore__ inline void PolicyMatmul(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR ws, GM_ADDR t, bool iterate) {
    AscendC::TPipe pipe;
    TCubeTiling tiling;
    CopyTiling(&tiling, t);
    Matmul<StaticA, StaticA, StaticC, StaticC, CFG, AscendC::MatmulCallBackFunc<nullptr, nullptr, nullptr>, POLICY> mm;
    REGIST_MATMUL_OBJ(&pipe, ws, mm, &tiling);
    AscendC::GlobalTensor<half> ag, bg;
    AscendC::GlobalTensor<float> biasg, cg;
    ag.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(a), tiling.M * tiling.Ka);
    bg.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(b), tiling.Kb * tiling.N);
    biasg.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(bias), tiling.N);
    cg.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(c), tiling.M * tiling.N);
    mm.SetTensorA(ag);
    mm.SetTensorB(bg);
    mm.SetBias(biasg);
    if (iterate) {
        while (mm.Iterate()) {   // LINE:nbuffer33_iterate
            mm.GetTensorC(cg);
        }
    } else {
        mm.IterateAll(cg);
    }
    mm.End();
}

extern "C" __global__ __aicore__ void matmul_trian_upper(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR ws,
                                                         GM_ADDR t) {
    PolicyMatmul<CFG_NORM, AscendC::Impl::Detail::TrianUpperMatmulPolicy>(a, b, bias, c, ws, t, false);
}

extern "C" __global__ __aicore__ void matmul_trian_lower(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR ws,
                                                         GM_ADDR t) {
    PolicyMatmul<CFG_NORM, AscendC::Impl::Detail::TrianLowerMatmulPolicy>(a, b, bias, c, ws, t, false);
}

extern "C" __global__ __aicore__ void matmul_nbuffer33(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR ws,
                                                       GM_ADDR t) {
    PolicyMatmul<CFG_MDL, AscendC::Impl::Detail::NBuffer33MatmulPolicy>(a, b, bias, c, ws, t, false);
}

extern "C" __global__ __aicore__ void matmul_nbuffer33_iterate(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c,
                                                               GM_ADDR ws, GM_ADDR t) {
    PolicyMatmul<CFG_MDL, AscendC::Impl::Detail::NBuffer33MatmulPolicy>(a, b, bias, c, ws, t, true);
}

// A user-managed CO1 (the Iterate page's second form): C_TYPE MatmulType<CO1, NZ, GetMmDstType<half>::Type>;
// each Iterate(enPartialSum, l0c[i * baseM * baseN]) leaves tile i in the kernel's own L0C queue buffer, NZ,
// and Fixpipe moves each tile to its place in C.  The second pass adds every tile onto the first
// (enPartialSum): C = 2 (A x B + bias).  in_l1 = 1 passes an L1 tensor instead, which is refused.
extern "C" __global__ __aicore__ void matmul_co1(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR ws, GM_ADDR t) {
    using L0cT = AscendC::GetMmDstType<half>::Type;
    static_assert(std::is_same_v<L0cT, float>, "half accumulates in float");
    AscendC::TPipe pipe;
    TCubeTiling tiling;
    CopyTiling(&tiling, t);
    Matmul<StaticA, StaticA, MatmulType<AscendC::TPosition::CO1, CubeFormat::NZ, L0cT>, StaticC> mm;
    REGIST_MATMUL_OBJ(&pipe, ws, mm, &tiling);
    AscendC::GlobalTensor<half> ag, bg;
    AscendC::GlobalTensor<float> biasg, cg;
    ag.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(a), tiling.M * tiling.Ka);
    bg.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(b), tiling.Kb * tiling.N);
    biasg.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(bias), tiling.N);
    cg.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(c), tiling.M * tiling.N);
    mm.SetTensorA(ag);
    mm.SetTensorB(bg);
    mm.SetBias(biasg);
    AscendC::TQue<AscendC::TPosition::CO1, AscendC::Impl::QUEUE_DEPTH> co1;
    pipe.InitBuffer(co1, 1, tiling.singleCoreM * tiling.singleCoreN * sizeof(L0cT));
    AscendC::LocalTensor<L0cT> l0c = co1.AllocTensor<L0cT>();
    const int32_t tile = tiling.baseM * tiling.baseN;
    if (t[sizeof(TCubeTiling)] != 0) {
        AscendC::LocalTensor<L0cT> l1(AscendC::TPosition::A1, 0, tile);
        mm.Iterate(false, l1);   // LINE:co1_in_l1
    }
    for (int pass = 0; pass < 2; ++pass) {
        int32_t i = 0;
        while (mm.Iterate(pass == 1, l0c[i * tile])) {
            ++i;
        }
    }
    co1.EnQue(l0c);
    l0c = co1.DeQue<L0cT>();
    const int32_t mIter = tiling.singleCoreM / tiling.baseM;
    for (int32_t i = 0; i < tiling.singleCoreM / tiling.baseM * (tiling.singleCoreN / tiling.baseN); ++i) {
        const int32_t m0 = i % mIter * tiling.baseM, n0 = i / mIter * tiling.baseN;
        AscendC::FixpipeParamsV220 p;
        p.nSize = tiling.baseN;
        p.mSize = tiling.baseM;
        p.srcStride = tiling.baseM;
        p.dstStride = tiling.N;
        AscendC::Fixpipe<float, L0cT, AscendC::CFG_ROW_MAJOR>(cg[m0 * tiling.N + n0], l0c[i * tile], p);
    }
    co1.FreeTensor(l0c);
    mm.End();
}

// MatmulConfig.isPartialOutput (MDL): every Iterate is one baseK step of a baseM x baseN tile, not summed over K;
// GetTensorC(gm, 0, true) writes each step's tile alone at gm, the kernel puts them one after another (CANN's
// matmul_partial_output).
constexpr MatmulConfig kPartialMdlCfg = [] {
    auto c = CFG_MDL;
    c.isPartialOutput = true;
    return c;
}();

extern "C" __global__ __aicore__ void matmul_partial(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR ws,
                                                     GM_ADDR t) {
    AscendC::TPipe pipe;
    TCubeTiling tiling;
    CopyTiling(&tiling, t);
    Matmul<StaticA, StaticA, StaticC, StaticC, kPartialMdlCfg> mm;
    REGIST_MATMUL_OBJ(&pipe, ws, mm, &tiling);
    AscendC::GlobalTensor<half> ag, bg;
    AscendC::GlobalTensor<float> biasg, cg;
    ag.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(a), tiling.M * tiling.Ka);
    bg.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(b), tiling.Kb * tiling.N);
    biasg.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(bias), tiling.N);
    cg.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(c));
    mm.SetTensorA(ag);
    mm.SetTensorB(bg);
    mm.SetBias(biasg);
    int32_t offset = 0;
    while (mm.Iterate()) {
        mm.GetTensorC(cg[offset], 0, true);   // the tile alone at cg[offset]; the kernel places each
        offset += tiling.baseM * tiling.baseN;
    }
    mm.End();
}

// C in GM as CubeFormat::NZ: column groups of 16 (8 with isEnableChannelSplit) of all M rows, orgM * c0 apart
// (CANN's matmul_channelsplit_output); split_nd: the channel split with an ND C, which is refused.
constexpr MatmulConfig kChannelSplitCfg = [] {
    auto c = CFG_NORM;
    c.isEnableChannelSplit = true;
    return c;
}();

template <const auto& CFG, CubeFormat C_FORMAT>
__aicore__ inline void NzMatmul(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR ws, GM_ADDR t) {
    AscendC::TPipe pipe;
    TCubeTiling tiling;
    CopyTiling(&tiling, t);
    Matmul<StaticA, StaticA, MatmulType<AscendC::TPosition::GM, C_FORMAT, float>, StaticC, CFG> mm;
    REGIST_MATMUL_OBJ(&pipe, ws, mm, &tiling);   // LINE:split_nd
    AscendC::GlobalTensor<half> ag, bg;
    AscendC::GlobalTensor<float> biasg, cg;
    ag.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(a), tiling.M * tiling.Ka);
    bg.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(b), tiling.Kb * tiling.N);
    biasg.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(bias), tiling.N);
    cg.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(c), tiling.M * tiling.N);
    mm.SetTensorA(ag);
    mm.SetTensorB(bg);
    mm.SetBias(biasg);
    mm.IterateAll(cg);
    mm.End();
}

extern "C" __global__ __aicore__ void matmul_nz_gm(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR ws, GM_ADDR t) {
    NzMatmul<CFG_NORM, CubeFormat::NZ>(a, b, bias, c, ws, t);
}
extern "C" __global__ __aicore__ void matmul_nz_gm_split(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR ws,
                                                         GM_ADDR t) {
    NzMatmul<kChannelSplitCfg, CubeFormat::NZ>(a, b, bias, c, ws, t);
}
extern "C" __global__ __aicore__ void matmul_split_nd(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR ws,
                                                      GM_ADDR t) {
    NzMatmul<kChannelSplitCfg, CubeFormat::ND>(a, b, bias, c, ws, t);
}

// Copy callbacks (MatmulCallBackFunc<nullptr, CopyA1, CopyB1>): the Matmul asks the kernel for each base block of
// A (row = M block, col = K block) and B (row = K block, col = N block) in L1, NZ; these fill them from GM with
// Nd2Nz, A's rows orgKa (SetUserDefInfo) apart, B's from the GM address SetSelfDefineData gives.
__aicore__ inline void CopyA1ByRows(const AscendC::LocalTensor<int8_t>& aMatrix, const __gm__ void* gm, int row, int col,
                                    int useM, int useK, const uint64_t tilingPtr, const uint64_t dataPtr) {
    (void)dataPtr;
    const int ka = static_cast<int>(tilingPtr);
    AscendC::GlobalTensor<half> src;
    src.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(const_cast<__gm__ void*>(gm)));
    const int baseM = 32, baseK = useK;   // the small tiling's baseM; col counts whole baseK blocks
    AscendC::Nd2NzParams p{1, static_cast<uint16_t>(useM), static_cast<uint16_t>(useK), 0, static_cast<uint16_t>(ka),
                           static_cast<uint16_t>((useM + 15) / 16 * 16), 1, 0};
    AscendC::DataCopy(aMatrix.ReinterpretCast<half>(), src[row * baseM * ka + col * baseK], p);
}
__aicore__ inline void CopyB1FromData(const AscendC::LocalTensor<int8_t>& bMatrix, const __gm__ void* gm, int row,
                                      int col, int useK, int useN, const uint64_t tilingPtr, const uint64_t dataPtr) {
    (void)gm;
    (void)tilingPtr;
    AscendC::GlobalTensor<half> src;
    src.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(dataPtr));
    const int n = 64, baseN = 32;   // the small problem's N and baseN
    AscendC::Nd2NzParams p{1, static_cast<uint16_t>(useK), static_cast<uint16_t>(useN), 0, static_cast<uint16_t>(n),
                           static_cast<uint16_t>((useK + 15) / 16 * 16), 1, 0};
    AscendC::DataCopy(bMatrix.ReinterpretCast<half>(), src[row * useK * n + col * baseN], p);
}

extern "C" __global__ __aicore__ void matmul_callbacks(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR ws,
                                                       GM_ADDR t) {
    AscendC::TPipe pipe;
    TCubeTiling tiling;
    CopyTiling(&tiling, t);
    Matmul<StaticA, StaticA, StaticC, StaticC, CFG_NORM,
           AscendC::MatmulCallBackFunc<nullptr, CopyA1ByRows, CopyB1FromData>> mm;
    REGIST_MATMUL_OBJ(&pipe, ws, mm, &tiling);
    AscendC::GlobalTensor<half> ag, bg;
    AscendC::GlobalTensor<float> biasg, cg;
    ag.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(a), tiling.M * tiling.Ka);
    bg.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(b), tiling.Kb * tiling.N);
    biasg.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(bias), tiling.N);
    cg.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(c), tiling.M * tiling.N);
    mm.SetUserDefInfo(tiling.Ka);
    mm.SetSelfDefineData(reinterpret_cast<uint64_t>(b));
    mm.SetTensorA(ag);
    mm.SetTensorB(bg);
    mm.SetBias(biasg);
    mm.IterateAll(cg);
    mm.End();
}

#define BROKEN_ENTRY(name, mode)                                                                         \
    extern "C" int fusedsl_launch_##name(uint32_t blockDim, uint8_t** args) {                           \
        AscendC::SetKernelMode(KernelMode::mode);                                                       \
        ICPU_SET_TILING_KEY(1);                                                                         \
        return fusedsl_cpu::Launch(name, blockDim, args[0], args[1], args[2], args[3], args[4], args[5]); \
    }
BROKEN_ENTRY(block_info, MIX_MODE)
BROKEN_ENTRY(matmul_trans_b_iterate_all, MIX_MODE)
BROKEN_ENTRY(matmul_nz_tile, MIX_MODE)
BROKEN_ENTRY(regist_after_init_buffer, MIX_MODE)
BROKEN_ENTRY(async_tiles, MIX_MODE)
BROKEN_ENTRY(iterate_all_async_c_in_ub, MIX_MODE)
BROKEN_ENTRY(trans_b_without_istrans, MIX_MODE)
BROKEN_ENTRY(nd_align_c, AIC_MODE)
BROKEN_ENTRY(trans_b_float_without_istrans, MIX_MODE)
BROKEN_ENTRY(async_overfetch, MIX_MODE)
BROKEN_ENTRY(tensor_c_too_small, MIX_MODE)
BROKEN_ENTRY(tensor_c_misaligned, MIX_MODE)
BROKEN_ENTRY(no_end, MIX_MODE)
BROKEN_ENTRY(iterate_twice, MIX_MODE)
BROKEN_ENTRY(not_registered, MIX_MODE)
BROKEN_ENTRY(ub_into_message_area, MIX_MODE)
BROKEN_ENTRY(ub_leaves_message_area, MIX_MODE)
BROKEN_ENTRY(l1_to_the_top, MIX_MODE)
BROKEN_ENTRY(l1_past_the_top, MIX_MODE)
BROKEN_ENTRY(matmul_cfg_relu, AIC_MODE)
BROKEN_ENTRY(matmul_cfg_partial, AIC_MODE)
BROKEN_ENTRY(matmul_static_tiling, AIC_MODE)
BROKEN_ENTRY(matmul_dequant, AIC_MODE)
BROKEN_ENTRY(matmul_sparse_b, AIC_MODE)
BROKEN_ENTRY(matmul_split_k, AIC_MODE)
BROKEN_ENTRY(matmul_callbacks, AIC_MODE)
BROKEN_ENTRY(matmul_nz_gm, AIC_MODE)
BROKEN_ENTRY(matmul_nz_gm_split, AIC_MODE)
BROKEN_ENTRY(matmul_split_nd, AIC_MODE)
BROKEN_ENTRY(matmul_partial, AIC_MODE)
BROKEN_ENTRY(matmul_co1, AIC_MODE)
BROKEN_ENTRY(matmul_trian_upper, AIC_MODE)
BROKEN_ENTRY(matmul_trian_lower, AIC_MODE)
BROKEN_ENTRY(matmul_nbuffer33, AIC_MODE)
BROKEN_ENTRY(matmul_nbuffer33_iterate, AIC_MODE)

// The sample kernel launched as a vector-only kernel.
extern "C" int fusedsl_launch_matmul_in_aiv_mode(uint32_t blockDim, uint8_t** args) {
    AscendC::SetKernelMode(KernelMode::AIV_MODE);
    return fusedsl_cpu::Launch(matmul_leakyrelu_custom, blockDim, args[0], args[1], args[2], args[3], args[4],
                               args[5]);
}

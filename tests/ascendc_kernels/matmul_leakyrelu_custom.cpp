// C = LeakyRelu(A x B + bias) with the Matmul high-level API, written the way CANN's
// MatmulLeakyRelu kernel-launch sample teaches: a kernel class with Init/Process, a Matmul
// object registered with REGIST_MATMUL_OBJ, each baseM x baseN tile fetched with
// GetTensorC into a VECOUT queue, LeakyRelu in place, and a strided DataCopy to C in GM.
// Unlike the sample it also handles tails (M and K of any size, N a multiple of 8): the
// last core's block goes through SetTail and each tile copies only its rows.
// TILING_KEY_IS(2) selects the 310P path, which gives the cube a UB workspace.
#include "kernel_operator.h"
#include "lib/matmul_intf.h"

using namespace matmul;

__aicore__ inline uint32_t Ceiling(uint32_t a, uint32_t b) {
    return (a + b - 1) / b;
}

// The kernel-launch samples pass the tiling as a GM buffer and copy it word by word.
__aicore__ inline void CopyTiling(TCubeTiling* tiling, GM_ADDR tilingGM) {
    uint32_t* ptr = reinterpret_cast<uint32_t*>(tiling);
    auto tiling32 = reinterpret_cast<__gm__ uint32_t*>(tilingGM);
    for (uint32_t i = 0; i < sizeof(TCubeTiling) / sizeof(uint32_t); i++, ptr++) {
        *ptr = *(tiling32 + i);
    }
}

template <typename aType, typename bType, typename cType, typename biasType>
class MatmulLeakyKernel {
public:
    __aicore__ inline MatmulLeakyKernel() {}

    __aicore__ inline void Init(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR workspace,
                                const TCubeTiling& tilingIn, float alphaIn) {
        tiling = tilingIn;
        alpha = alphaIn;
        aGlobal.SetGlobalBuffer(reinterpret_cast<__gm__ aType*>(a), tiling.M * tiling.Ka);
        bGlobal.SetGlobalBuffer(reinterpret_cast<__gm__ bType*>(b), tiling.Kb * tiling.N);
        cGlobal.SetGlobalBuffer(reinterpret_cast<__gm__ cType*>(c), tiling.M * tiling.N);
        biasGlobal.SetGlobalBuffer(reinterpret_cast<__gm__ biasType*>(bias), tiling.N);
        int32_t offsetA = 0, offsetB = 0, offsetC = 0, offsetBias = 0;
        active = CalcOffset(AscendC::GetBlockIdx(), offsetA, offsetB, offsetC, offsetBias);
        aGlobal = aGlobal[offsetA];
        bGlobal = bGlobal[offsetB];
        cGlobal = cGlobal[offsetC];
        biasGlobal = biasGlobal[offsetBias];
        AscendC::SetSysWorkspace(workspace);
    }

    __aicore__ inline void Process(AscendC::TPipe* pipe) {
        if (TILING_KEY_IS(2)) {
            // 310P: the cube moves C into UB through a UB workspace.
            pipe->InitBuffer(mmFormatUb, tiling.baseM * tiling.baseN * sizeof(cType));
            matmulObj.SetLocalWorkspace(mmFormatUb.Get<uint8_t>());
        }
        pipe->InitBuffer(reluOutQueue, 1, tiling.baseM * tiling.baseN * sizeof(cType));
        if (!active) {
            return;
        }
        matmulObj.SetTensorA(aGlobal);
        matmulObj.SetTensorB(bGlobal);
        matmulObj.SetBias(biasGlobal);
        if (tailM != tiling.singleCoreM || tailN != tiling.singleCoreN) {
            matmulObj.SetTail(tailM, tailN);
        }
        uint32_t computeRound = 0;
        while (matmulObj.template Iterate<true>()) {
            TileShape(computeRound);
            MatmulCompute();
            LeakyReluCompute();
            CopyOut();
            computeRound++;
        }
        matmulObj.End();
    }

    Matmul<MatmulType<AscendC::TPosition::GM, CubeFormat::ND, aType>,
           MatmulType<AscendC::TPosition::GM, CubeFormat::ND, bType>,
           MatmulType<AscendC::TPosition::VECIN, CubeFormat::ND, cType>,
           MatmulType<AscendC::TPosition::GM, CubeFormat::ND, biasType>>
        matmulObj;
    TCubeTiling tiling;

private:
    __aicore__ inline void MatmulCompute() {
        reluOutLocal = reluOutQueue.AllocTensor<cType>();
        matmulObj.template GetTensorC<true>(reluOutLocal, false, true);
    }

    // Only the rows the tile has: a tail tile leaves the rest of the buffer unwritten.
    __aicore__ inline void LeakyReluCompute() {
        AscendC::LeakyRelu(reluOutLocal, reluOutLocal, static_cast<cType>(alpha), curM * curN);
        reluOutQueue.EnQue(reluOutLocal);
    }

    // Tile `count` of this core's block, M-first (iterateOrder 0); a tail tile's rows are
    // curN elements apart in UB (curN * sizeof(cType) is a multiple of 32 here).
    __aicore__ inline void TileShape(uint32_t count) {
        const uint32_t roundM = Ceiling(tailM, tiling.baseM);
        const uint32_t mIdx = count % roundM, nIdx = count / roundM;
        curM = std::min<uint32_t>(tiling.baseM, tailM - mIdx * tiling.baseM);
        curN = std::min<uint32_t>(tiling.baseN, tailN - nIdx * tiling.baseN);
        startOffset = mIdx * tiling.baseM * tiling.N + nIdx * tiling.baseN;
    }

    __aicore__ inline void CopyOut() {
        reluOutQueue.DeQue<cType>();
        AscendC::DataCopyParams copyParam = {
            static_cast<uint16_t>(curM), static_cast<uint16_t>(curN * sizeof(cType) / AscendC::DEFAULT_C0_SIZE), 0,
            static_cast<uint16_t>((tiling.N - curN) * sizeof(cType) / AscendC::DEFAULT_C0_SIZE)};
        AscendC::DataCopy(cGlobal[startOffset], reluOutLocal, copyParam);
        reluOutQueue.FreeTensor(reluOutLocal);
    }

    // Core blockIdx owns block (blockIdx % mBlocks, blockIdx / mBlocks); cores past
    // usedCoreNum have nothing to do.
    __aicore__ inline bool CalcOffset(int32_t blockIdx, int32_t& offsetA, int32_t& offsetB, int32_t& offsetC,
                                      int32_t& offsetBias) {
        const uint32_t mSingleBlocks = Ceiling(tiling.M, tiling.singleCoreM);
        const uint32_t nSingleBlocks = Ceiling(tiling.N, tiling.singleCoreN);
        if (static_cast<uint32_t>(blockIdx) >= mSingleBlocks * nSingleBlocks) {
            return false;
        }
        const uint32_t mCoreIndx = blockIdx % mSingleBlocks;
        const uint32_t nCoreIndx = blockIdx / mSingleBlocks;
        offsetA = mCoreIndx * tiling.Ka * tiling.singleCoreM;
        offsetB = nCoreIndx * tiling.singleCoreN;
        offsetC = mCoreIndx * tiling.N * tiling.singleCoreM + nCoreIndx * tiling.singleCoreN;
        offsetBias = nCoreIndx * tiling.singleCoreN;
        tailM = std::min<int32_t>(tiling.singleCoreM, tiling.M - mCoreIndx * tiling.singleCoreM);
        tailN = std::min<int32_t>(tiling.singleCoreN, tiling.N - nCoreIndx * tiling.singleCoreN);
        return true;
    }

    AscendC::GlobalTensor<aType> aGlobal;
    AscendC::GlobalTensor<bType> bGlobal;
    AscendC::GlobalTensor<cType> cGlobal;
    AscendC::GlobalTensor<biasType> biasGlobal;
    AscendC::LocalTensor<cType> reluOutLocal;
    AscendC::TQue<AscendC::QuePosition::VECOUT, 1> reluOutQueue;
    AscendC::TBuf<> mmFormatUb;
    float alpha = 0.001f;
    int32_t tailM = 0;
    int32_t tailN = 0;
    uint32_t curM = 0;
    uint32_t curN = 0;
    uint32_t startOffset = 0;
    bool active = false;
};

template <typename aType, typename bType, typename cType, typename biasType>
__aicore__ inline void MatmulLeakyRun(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c, GM_ADDR workspace,
                                      GM_ADDR tilingGm) {
    AscendC::TPipe pipe;
    TCubeTiling tiling;
    CopyTiling(&tiling, tilingGm);
    MatmulLeakyKernel<aType, bType, cType, biasType> matmulLeakyKernel;
    matmulLeakyKernel.Init(a, b, bias, c, workspace, tiling, 0.1f);
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), matmulLeakyKernel.matmulObj, &matmulLeakyKernel.tiling);
    matmulLeakyKernel.Process(&pipe);
}

extern "C" __global__ __aicore__ void matmul_leakyrelu_custom(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c,
                                                              GM_ADDR workspace, GM_ADDR tiling) {
    MatmulLeakyRun<half, half, float, float>(a, b, bias, c, workspace, tiling);
}

// The all-float variant: a combination 910B supports and 310P does not.
extern "C" __global__ __aicore__ void matmul_leakyrelu_f32(GM_ADDR a, GM_ADDR b, GM_ADDR bias, GM_ADDR c,
                                                           GM_ADDR workspace, GM_ADDR tiling) {
    MatmulLeakyRun<float, float, float, float>(a, b, bias, c, workspace, tiling);
}

#ifdef ASCENDC_CPU_DEBUG
#include "tikicpulib.h"

// Entries for fusedsl's Python runner; args: a, b, bias, c, workspace, tiling.  A mixed
// kernel, with the 310P tiling key on 310P.
#define MATMUL_ENTRY(name)                                                                              \
    extern "C" int fusedsl_launch_##name(uint32_t blockDim, uint8_t** args) {                           \
        AscendC::SetKernelMode(KernelMode::MIX_MODE);                                                   \
        ICPU_SET_TILING_KEY(::fusedsl_cpu::Target().arch == 2002 ? 2 : 1);                              \
        return fusedsl_cpu::Launch(name, blockDim, args[0], args[1], args[2], args[3], args[4], args[5]); \
    }
MATMUL_ENTRY(matmul_leakyrelu_custom)
MATMUL_ENTRY(matmul_leakyrelu_f32)
#endif

// y = LeakyRelu(x, alpha) on float.  Each core owns totalLength / blockNum elements, processed
// in tiles of tileLength; a tail tile whose byte length is not a multiple of 32 moves with
// DataCopyPad (the padded lanes are computed and discarded on the way out).
#include "kernel_operator.h"
#include "leaky_relu_custom_tiling.h"

constexpr int32_t BUFFER_NUM = 2;

class KernelLeakyRelu {
public:
    __aicore__ inline KernelLeakyRelu() {}
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, const LeakyReluCustomTilingData& tiling) {
        blockLength = tiling.totalLength / AscendC::GetBlockNum();
        tileLength = tiling.tileLength;
        alpha = tiling.alpha;
        tileNum = (blockLength + tileLength - 1) / tileLength;
        xGm.SetGlobalBuffer((__gm__ float*)x + blockLength * AscendC::GetBlockIdx(), blockLength);
        yGm.SetGlobalBuffer((__gm__ float*)y + blockLength * AscendC::GetBlockIdx(), blockLength);
        pipe.InitBuffer(inQueueX, BUFFER_NUM, tileLength * sizeof(float));
        pipe.InitBuffer(outQueueY, BUFFER_NUM, tileLength * sizeof(float));
    }
    __aicore__ inline void Process() {
        for (uint32_t i = 0; i < tileNum; i++) {
            uint32_t len = i + 1 < tileNum ? tileLength : blockLength - i * tileLength;
            CopyIn(i, len);
            Compute(len);
            CopyOut(i, len);
        }
    }

private:
    __aicore__ inline static uint32_t Aligned(uint32_t len) { return (len * sizeof(float) + 31) / 32 * 32 / sizeof(float); }

    __aicore__ inline void CopyIn(uint32_t i, uint32_t len) {
        AscendC::LocalTensor<float> xLocal = inQueueX.AllocTensor<float>();
        if (len * sizeof(float) % 32 == 0) {
            AscendC::DataCopy(xLocal, xGm[i * tileLength], len);
        } else {
            AscendC::DataCopyExtParams params{1, static_cast<uint32_t>(len * sizeof(float)), 0, 0, 0};
            AscendC::DataCopyPadExtParams<float> pad{false, 0, 0, 0.0f};
            AscendC::DataCopyPad(xLocal, xGm[i * tileLength], params, pad);
        }
        inQueueX.EnQue(xLocal);
    }
    __aicore__ inline void Compute(uint32_t len) {
        AscendC::LocalTensor<float> xLocal = inQueueX.DeQue<float>();
        AscendC::LocalTensor<float> yLocal = outQueueY.AllocTensor<float>();
        AscendC::LeakyRelu(yLocal, xLocal, alpha, Aligned(len));
        outQueueY.EnQue(yLocal);
        inQueueX.FreeTensor(xLocal);
    }
    __aicore__ inline void CopyOut(uint32_t i, uint32_t len) {
        AscendC::LocalTensor<float> yLocal = outQueueY.DeQue<float>();
        if (len * sizeof(float) % 32 == 0) {
            AscendC::DataCopy(yGm[i * tileLength], yLocal, len);
        } else {
            AscendC::DataCopyExtParams params{1, static_cast<uint32_t>(len * sizeof(float)), 0, 0, 0};
            AscendC::DataCopyPad(yGm[i * tileLength], yLocal, params);
        }
        outQueueY.FreeTensor(yLocal);
    }

    AscendC::TPipe pipe;
    AscendC::TQue<AscendC::QuePosition::VECIN, BUFFER_NUM> inQueueX;
    AscendC::TQue<AscendC::QuePosition::VECOUT, BUFFER_NUM> outQueueY;
    AscendC::GlobalTensor<float> xGm;
    AscendC::GlobalTensor<float> yGm;
    uint32_t blockLength;
    uint32_t tileLength;
    uint32_t tileNum;
    float alpha;
};

extern "C" __global__ __aicore__ void leaky_relu_custom(GM_ADDR x, GM_ADDR y, LeakyReluCustomTilingData tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    KernelLeakyRelu op;
    op.Init(x, y, tiling);
    op.Process();
}

#ifdef ASCENDC_CPU_DEBUG
// Entry for fusedsl's Python runner: x, y, and the tiling struct as a third GM buffer.
extern "C" int fusedsl_launch_leaky_relu_custom(uint32_t blockDim, uint8_t** args) {
    LeakyReluCustomTilingData tiling;
    std::memcpy(&tiling, args[2], sizeof tiling);
    return fusedsl_cpu::Launch(leaky_relu_custom, blockDim, args[0], args[1], tiling);
}
#endif

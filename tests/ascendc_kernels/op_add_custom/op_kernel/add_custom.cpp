// fusedsl test op (op-project style): the AddCustom kernel, tiling read with GET_TILING_DATA,
// each block's share split into tileNum tiles, double-buffered.
#include "kernel_operator.h"

constexpr int32_t BUFFER_NUM = 2;

class KernelAdd {
public:
    __aicore__ inline KernelAdd() {}
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t totalLength, uint32_t tileNum)
    {
        blockLength = totalLength / AscendC::GetBlockNum();
        this->tileNum = tileNum;
        tileLength = blockLength / tileNum / BUFFER_NUM;
        xGm.SetGlobalBuffer((__gm__ half*)x + blockLength * AscendC::GetBlockIdx(), blockLength);
        yGm.SetGlobalBuffer((__gm__ half*)y + blockLength * AscendC::GetBlockIdx(), blockLength);
        zGm.SetGlobalBuffer((__gm__ half*)z + blockLength * AscendC::GetBlockIdx(), blockLength);
        pipe.InitBuffer(inX, BUFFER_NUM, tileLength * sizeof(half));
        pipe.InitBuffer(inY, BUFFER_NUM, tileLength * sizeof(half));
        pipe.InitBuffer(outZ, BUFFER_NUM, tileLength * sizeof(half));
    }
    __aicore__ inline void Process()
    {
        for (uint32_t i = 0; i < tileNum * BUFFER_NUM; i++) {
            AscendC::LocalTensor<half> x = inX.AllocTensor<half>();
            AscendC::LocalTensor<half> y = inY.AllocTensor<half>();
            AscendC::DataCopy(x, xGm[i * tileLength], tileLength);
            AscendC::DataCopy(y, yGm[i * tileLength], tileLength);
            inX.EnQue(x);
            inY.EnQue(y);
            x = inX.DeQue<half>();
            y = inY.DeQue<half>();
            AscendC::LocalTensor<half> z = outZ.AllocTensor<half>();
            AscendC::Add(z, x, y, tileLength);
            outZ.EnQue<half>(z);
            inX.FreeTensor(x);
            inY.FreeTensor(y);
            z = outZ.DeQue<half>();
            AscendC::DataCopy(zGm[i * tileLength], z, tileLength);
            outZ.FreeTensor(z);
        }
    }

private:
    AscendC::TPipe pipe;
    AscendC::TQue<AscendC::TPosition::VECIN, BUFFER_NUM> inX, inY;
    AscendC::TQue<AscendC::TPosition::VECOUT, BUFFER_NUM> outZ;
    AscendC::GlobalTensor<half> xGm, yGm, zGm;
    uint32_t blockLength = 0, tileNum = 0, tileLength = 0;
};

extern "C" __global__ __aicore__ void add_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR workspace, GM_ADDR tiling)
{
    (void)workspace;
    GET_TILING_DATA(tilingData, tiling);
    KernelAdd op;
    op.Init(x, y, z, tilingData.totalLength, tilingData.tileNum);
    op.Process();
}

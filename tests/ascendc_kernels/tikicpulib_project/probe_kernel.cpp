// What a tikicpulib-style build gives a kernel: each vector instance writes, 16 floats apart
// (one 64-byte GM line each), its GetBlockIdx, whether GetSysWorkSpacePtr() is set, and the
// last of 8 floats it copied from a 4-element GlobalTensor (a read past the SetGlobalBuffer
// length, inside the GmAlloc'd buffer) whose address comes from a host-built ListTensorDesc.
#include "kernel_operator.h"
#include "lib/matmul_intf.h"   // GetSysWorkSpacePtr, as the Matmul samples include it

using namespace AscendC;

extern "C" __global__ __aicore__ void probe(GM_ADDR list, GM_ADDR out) {
    ListTensorDesc desc(list);
    GlobalTensor<float> src;
    src.SetGlobalBuffer(desc.GetDataPtr<float>(0), 4);
    TPipe pipe;
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 8 * sizeof(float));
    LocalTensor<float> t = buf.Get<float>();
    DataCopy(t, src, 8);
    // no MTE2 -> S flag: the samples' NPU builds get it from bisheng's --cce-auto-sync
    float last = t.GetValue(7);
    GlobalTensor<float> dst;
    dst.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(out) + 16 * GetBlockIdx(), 3);
    dst.SetValue(0, static_cast<float>(GetBlockIdx()));
    dst.SetValue(1, GetSysWorkSpacePtr() != nullptr ? 1.0f : 0.0f);
    dst.SetValue(2, last);
}

"""A Matmul A on chip in fusedsl's CPU implementation of Ascend C.  TSCM (user-managed L1,
fusedsl_cpu/tscm.h): MatmulType<TPosition::TSCM, CubeFormat::NZ> reads A from L1, so a block
copied once with DataCopy(GM -> L1, Nd2NzParams) is counted once in the GM bytes however many
products use it; C agrees with numpy for a row count that is not a multiple of 16; 310P (whose
Matmul takes A from GM or VECOUT only) and an L1 overflow are refused.  VECOUT on 310P: A from UB
(the coupled core copies it to L1) reads no GM; on 910B, whose client sends a VECOUT A through
GM, it is refused as not modelled."""
import numpy as np
import pytest

from fusedsl.backend_ascendc import cpu_runner
from fusedsl.errors import AscendCCheckError
from fusedsl.lower.cube import TCUBE_FIELDS

pytestmark = pytest.mark.usefixtures("private_cache_dir")

M, N, K = 40, 32, 48   # 40 rows: the NZ columns are 48 rows high
SOURCE = r"""
#include "kernel_operator.h"
#include "lib/matmul_intf.h"
using MmTscm = AscendC::Matmul<AscendC::MatmulType<AscendC::TPosition::TSCM, CubeFormat::NZ, half>,
                               AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, half>,
                               AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, float>>;

// c[j] = a @ b for j = 0, 1, with a copied into L1 once; `extra` more TSCM bytes per instance.
extern "C" __global__ __aicore__ void tscm_a(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR extra, GM_ADDR ws, GM_ADDR t)
{
    AscendC::TPipe pipe;
    TCubeTiling tiling;
    const __gm__ uint32_t* words = reinterpret_cast<const __gm__ uint32_t*>(t);
    for (uint32_t i = 0; i < sizeof(tiling) / 4; ++i) reinterpret_cast<uint32_t*>(&tiling)[i] = words[i];
    MmTscm mm;
    REGIST_MATMUL_OBJ(&pipe, ws, mm, &tiling);
    if (AscendC::GetBlockIdx() != 0) {
        return;
    }
    AscendC::GlobalTensor<half> ag, bg;
    AscendC::GlobalTensor<float> cg;
    ag.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(a));
    bg.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(b));
    cg.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(c));
    AscendC::TSCM<AscendC::TPosition::GM, 1> scm;
    pipe.InitBuffer(scm, 1, (tiling.M + 15) / 16 * 16 * tiling.Ka * sizeof(half) +
                                reinterpret_cast<__gm__ uint32_t*>(extra)[0]);
    AscendC::LocalTensor<half> l1 = scm.AllocTensor<half>();
    AscendC::Nd2NzParams nd;
    nd.ndNum = 1;
    nd.nValue = tiling.M;
    nd.dValue = tiling.Ka;
    nd.srcNdMatrixStride = 0;
    nd.srcDValue = tiling.Ka;
    nd.dstNzC0Stride = (tiling.M + 15) / 16 * 16;
    nd.dstNzNStride = 1;
    nd.dstNzMatrixStride = 0;
    AscendC::DataCopy(l1, ag, nd);
    scm.EnQue(l1);
    l1 = scm.DeQue<half>();
    for (int j = 0; j < 2; ++j) {
        mm.SetTensorA(l1);
        mm.SetTensorB(bg);
        mm.IterateAll(cg[j * tiling.M * tiling.N]);
    }
    mm.End();
    scm.FreeTensor(l1);
}

using MmUb = AscendC::Matmul<AscendC::MatmulType<AscendC::TPosition::VECOUT, CubeFormat::ND, half>,
                             AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, half>,
                             AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, float>>;

// c[j] = a @ b for j = 0, 1, with a copied into UB once (rows Ka apart).
extern "C" __global__ __aicore__ void vecout_a(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR, GM_ADDR ws, GM_ADDR t)
{
    AscendC::TPipe pipe;
    TCubeTiling tiling;
    const __gm__ uint32_t* words = reinterpret_cast<const __gm__ uint32_t*>(t);
    for (uint32_t i = 0; i < sizeof(tiling) / 4; ++i) reinterpret_cast<uint32_t*>(&tiling)[i] = words[i];
    MmUb mm;
    REGIST_MATMUL_OBJ(&pipe, ws, mm, &tiling);
    if (AscendC::GetBlockIdx() != 0) {
        return;
    }
    AscendC::GlobalTensor<half> ag, bg;
    AscendC::GlobalTensor<float> cg;
    ag.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(a));
    bg.SetGlobalBuffer(reinterpret_cast<__gm__ half*>(b));
    cg.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(c));
    AscendC::TBuf<AscendC::TPosition::VECOUT> buf;
    pipe.InitBuffer(buf, tiling.M * tiling.Ka * sizeof(half));
    AscendC::LocalTensor<half> ub = buf.Get<half>();
    AscendC::DataCopy(ub, ag, tiling.M * tiling.Ka);
    AscendC::PipeBarrier<PIPE_ALL>();
    for (int j = 0; j < 2; ++j) {
        mm.SetTensorA(ub);
        mm.SetTensorB(bg);
        mm.IterateAll(cg[j * tiling.M * tiling.N]);
    }
    mm.End();
}

#include "tikicpulib.h"
extern "C" int fusedsl_launch_vecout_a(uint32_t blockDim, uint8_t** args)
{
    AscendC::SetKernelMode(KernelMode::MIX_MODE);
    return fusedsl_cpu::Launch(vecout_a, blockDim, args[0], args[1], args[2], args[3], args[4], args[5]);
}
extern "C" int fusedsl_launch_tscm_a(uint32_t blockDim, uint8_t** args)
{
    AscendC::SetKernelMode(KernelMode::MIX_MODE);
    return fusedsl_cpu::Launch(tscm_a, blockDim, args[0], args[1], args[2], args[3], args[4], args[5]);
}
"""


def _tiling():
    w = dict.fromkeys(TCUBE_FIELDS, 0)
    w.update(usedCoreNum=1, M=M, N=N, Ka=K, Kb=K, singleCoreM=M, singleCoreN=N, singleCoreK=K, baseM=48, baseN=32,
             baseK=48, depthA1=1, depthB1=1, stepM=1, stepN=1, stepKa=1, stepKb=1, dbL0A=1, dbL0B=1, dbL0C=1,
             batchM=1, batchN=1, singleBatchM=1, singleBatchN=1, BatchNum=1)
    return np.array([w[f] for f in TCUBE_FIELDS] + [0] * 8, np.int32)


def _run(target, extra=0, entry="tscm_a"):
    rng = np.random.default_rng(7)
    a = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    c = np.zeros((2, M, N), np.float32)
    ws = np.zeros(16 << 20, np.uint8)
    lib = cpu_runner.build(SOURCE, name="tscm_a")
    stats = lib.launch(entry, 1, [("a", a), ("b", b), ("c", c), ("extra", np.array([extra], np.uint32)),
                                     ("workspace", ws), ("tiling", _tiling())], target=target)
    return a, b, c, stats


def test_a_in_tscm_is_read_from_gm_once_and_agrees_with_numpy():
    a, b, c, stats = _run("ascend910b")
    want = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c, np.stack([want, want]), rtol=1e-5, atol=1e-5)
    # A once (the DataCopy into L1), B once per product (one base block each), C written twice
    assert stats.gm_bytes_read == M * K * 2 + 2 * K * N * 2
    assert stats.gm_bytes_written == 2 * M * N * 4


def test_tscm_is_refused_on_310p_and_when_l1_overflows():
    with pytest.raises(AscendCCheckError, match=r"TSCM.*ascend910b"):
        _run("ascend310p")
    # two sub-blocks' slices of 300 KB each do not fit 910B's 512 KB of L1
    with pytest.raises(AscendCCheckError, match=r"InitBuffer\(TSCM\).*2 vector sub-block.*L1"):
        _run("ascend910b", extra=300 * 1024)


def test_vecout_a_reads_no_gm_on_310p_and_is_refused_on_910b():
    a, b, c, stats = _run("ascend310p", entry="vecout_a")
    want = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c, np.stack([want, want]), rtol=1e-5, atol=1e-5)
    assert stats.gm_bytes_read == M * K * 2 + 2 * K * N * 2   # A by the kernel's DataCopy only
    with pytest.raises(AscendCCheckError, match=r"VECOUT on ascend910b.*GM message buffer"):
        _run("ascend910b", entry="vecout_a")

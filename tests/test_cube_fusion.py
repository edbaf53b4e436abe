"""Cube fusion (issue 8 item 1): matmul + elementwise epilogue is ONE "cube" kernel (FS113);
results agree with numpy on the CPU executors; Ascend C says it does not print it yet."""
import numpy as np
import pytest

import fusedsl as fs
from fusedsl.errors import ScheduleError


@fs.fused_kernel
def mm_bias_leaky(x, w, b):
    return fs.cast(fs.leaky_relu(fs.matmul(x, w) + b, 0.1), "float16")


@fs.fused_kernel
def bmm_gelu_res(x, w, r):
    return fs.gelu(fs.matmul(x, w)) + r


@fs.fused_kernel(single_kernel=True)
def mm_single(x, w, b):
    return fs.leaky_relu(fs.matmul(x, w) + b, 0.2)


def _leaky(v, a):
    return np.where(v >= 0, v, a * v)


def test_matmul_bias_leaky_relu_one_cube_kernel():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((33, 19)).astype(np.float32)
    w = rng.standard_normal((19, 45)).astype(np.float32)
    b = rng.standard_normal(45).astype(np.float32)
    c = mm_bias_leaky.compile(x, w, b)
    assert [p.kind for p in c.kernels] == ["cube"]
    assert c.kernels[0].reason_code in ("FS113", "FS100")
    got = mm_bias_leaky(x, w, b)
    ref = _leaky(x @ w + b, 0.1).astype(np.float16)
    np.testing.assert_allclose(got.astype(np.float32), ref.astype(np.float32), rtol=2e-3, atol=2e-3)
    assert "Matmul<" in c.source and "REGIST_MATMUL_OBJ" in c.source   # printed: tests/test_ascendc_cube.py


def test_batched_matmul_gelu_residual():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 17, 24)).astype(np.float32)
    w = rng.standard_normal((3, 24, 20)).astype(np.float32)
    r = rng.standard_normal((3, 17, 20)).astype(np.float32)
    c = bmm_gelu_res.compile(x, w, r)
    assert [p.kind for p in c.kernels] == ["cube"]
    from math import erf
    h = x @ w
    ref = 0.5 * h * (1 + np.vectorize(erf)(h / np.sqrt(2))) + r
    np.testing.assert_allclose(bmm_gelu_res(x, w, r), ref, rtol=1e-3, atol=1e-3)


def test_single_kernel_matmul_epilogue():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((16, 8)).astype(np.float32)
    w = rng.standard_normal((8, 30)).astype(np.float32)
    b = rng.standard_normal(30).astype(np.float32)
    # fusion makes it one kernel; single_kernel=True also asks for Ascend C, which prints it
    got = mm_single(x, w, b)
    assert [p.kind for p in mm_single.compile(x, w, b).kernels] == ["cube"]
    np.testing.assert_allclose(mm_single.compile(x, w, b).simulate(x, w, b), got, rtol=1e-4, atol=1e-4)


def test_a_row_reduction_of_the_matmul_result_is_its_epilogue():
    """`sum(x @ w, -1) * 1.5` was three kernels (the matmul, the sum, the scale): a last-axis
    reduction of the result itself joins the cube kernel as a row epilogue, with the per-row
    ops after it; logsumexp(x @ w) went from 3 kernels to 1."""
    @fs.fused_kernel(target="ascend910b")
    def f(x, w, b):
        return fs.sum(x @ w, axis=-1) * 1.5, fs.relu(x @ w + b)

    @fs.fused_kernel(target="ascend910b")
    def lse(x, w):
        return fs.logsumexp(x @ w, axis=-1)

    rng = np.random.default_rng(5)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((40, 24), (24, 36), (36,)))
    k = f.compile(x, w, b)
    assert [p.ops for p in k.kernels] == [["matmul", "sum", "mul", "add", "relu"]] and k.kernels[0].printable
    want = ((x @ w).sum(-1) * 1.5, np.maximum(x @ w + b, 0))
    for run in (k, k.simulate):
        for got, ref in zip(run(x, w, b), want):
            np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    k2 = lse.compile(x, w)
    assert [p.ops for p in k2.kernels] == [["matmul", "max", "abs", "eq", "where", "sub", "exp", "sum", "log", "add"]]
    z = x @ w
    np.testing.assert_allclose(k2(x, w), np.log(np.exp(z - z.max(-1, keepdims=True)).sum(-1)) + z.max(-1),
                               rtol=1e-5, atol=1e-5)


def test_an_epilogue_reading_the_matmuls_own_operand_runs_on_the_cpu():
    """b / (s @ b) and (a @ b) * b: the epilogue reads B, a Matmul API input that has no UB slot;
    lowering it raised KeyError inside cube_tile (found by test_frontend_fuzz). Now the kernel is
    refused for Ascend C with a located reason, and the CPU call agrees with numpy."""
    a = np.random.default_rng(3).random((4, 4)).astype(np.float16)
    b = np.random.default_rng(4).random((4, 4)).astype(np.float16)
    for target in ("ascend910b", "ascend310p"):
        k = fs.fused_kernel(lambda a, b: (a @ b) * b).compile(a, b, target=target)
        (plan,) = [p for p in k.kernels if "matmul" in p.ops]
        assert not plan.printable and "reads the matmul's own operand b" in str(plan.error)
        assert "test_cube_fusion.py" in str(plan.error)
        want = (a.astype(np.float32) @ b.astype(np.float32)) * b.astype(np.float32)
        np.testing.assert_allclose(k(a, b).astype(np.float32), want, rtol=5e-3, atol=5e-3)

"""A matmul whose epilogue reduces over the rows of its result (softmax, layer_norm, rms_norm of
x @ w + b): ONE cube kernel with whole rows of C per tile when the rows fit, printed as Ascend C
(lower/cube_tile.py) and run on the CPU implementation of the API against numpy on 910B and
310P; when they do not fit, two kernels and the boundary's reason with its figures."""
import os

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fusedsl as fs
from conftest import fuzz_settings


def _close(got, want, tol):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape
    err = np.abs(got - want).max() if got.size else 0.0
    assert err <= tol * (1 + np.abs(want).max()), err


def np_softmax(y):
    e = np.exp(y - y.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def np_layer_norm(y, g, b, eps=1e-5):
    m = y.mean(axis=-1, keepdims=True)
    v = ((y - m) ** 2).mean(axis=-1, keepdims=True)
    return (y - m) / np.sqrt(v + eps) * g + b


def np_gelu(y):
    return 0.5 * y * (1 + np.tanh(0.7978845608028654 * (y + 0.044715 * y ** 3)))


# every shape on every target/dtype once, not their product (each case is a g++ build)
@pytest.mark.parametrize("target,dtype,m,k,n", [
    ("ascend910b", np.float16, 40, 24, 72), ("ascend910b", np.float32, 33, 19, 300),
    ("ascend310p", np.float16, 1, 5, 1), ("ascend910b", np.float32, 70, 16, 17),
    ("ascend310p", np.float16, 33, 19, 300), ("ascend910b", np.float16, 1, 5, 1)])
def test_softmax_of_a_linear_layer_is_one_printed_kernel(target, dtype, m, k, n):
    @fs.fused_kernel(target=target, single_kernel=True)
    def attn_probs(x, w, b):
        return fs.softmax(x @ w + b)

    rng = np.random.default_rng(m * n)
    x = rng.standard_normal((m, k)).astype(dtype)
    w = (rng.standard_normal((k, n)) * 0.3).astype(dtype)
    b = rng.standard_normal(n).astype(dtype)
    c = attn_probs.compile(x, w, b)
    assert [p.kind for p in c.kernels] == ["cube"]
    src = c.source
    assert "WholeReduceMax" in src and "WholeReduceSum" in src and "GetTensorC<true>" in src
    assert "the row reductions run on whole rows of C" in c.kernels[0].row.plan_note
    y = (x.astype(np.float64) @ w.astype(np.float64)).astype(dtype).astype(np.float64) + b
    want = np_softmax(y.astype(dtype).astype(np.float64))
    tol = 4e-3 if dtype == np.float16 else 1e-5
    _close(c.simulate(x, w, b), want, tol)
    _close(c(x, w, b), want, tol)


@pytest.mark.parametrize("target,dtype", [("ascend910b", np.float32), ("ascend310p", np.float16)])
def test_layer_norm_gelu_residual_after_a_transposed_linear_layer(target, dtype):
    """The transformer FFN tail: gelu(layer_norm(x @ w.T + b)) + r in one kernel."""
    @fs.fused_kernel(target=target)
    def block(x, w, b, g, beta, r):
        return fs.gelu(fs.layer_norm(x @ w.T + b, g, beta)) + r

    rng = np.random.default_rng(5)
    m, k, n = 45, 37, 96
    x = rng.standard_normal((m, k)).astype(dtype)
    w = (rng.standard_normal((n, k)) * 0.2).astype(dtype)
    b, g, beta = (rng.standard_normal(n).astype(dtype) for _ in range(3))
    r = rng.standard_normal((m, n)).astype(dtype)
    c = block.compile(x, w, b, g, beta, r)
    assert [p.kind for p in c.kernels] == ["cube"]
    got = c.simulate(x, w, b, g, beta, r)
    tol = 1e-2 if dtype == np.float16 else 2e-5
    _close(got, c(x, w, b, g, beta, r), tol)
    y = x.astype(np.float64) @ w.astype(np.float64).T + b
    _close(got, np_gelu(np_layer_norm(y, g.astype(np.float64), beta.astype(np.float64))) + r, 3 * tol)
    rep = c.report()
    assert rep.gm_bytes_measured is not None and rep.gm_bytes_measured < rep.gm_bytes_unfused


@pytest.mark.parametrize("target,dtype", [("ascend910b", np.float16), ("ascend310p", np.float16)])
def test_layer_norm_of_a_linear_layer_on_3d_input_prints(target, dtype):
    """The transformer block's `ln2(x + o(a))`: nn.Linear on [B, T, D] is a batched matmul with B
    shared, so its batch matrices are consecutive rows of one [B*T, D] A: one cube kernel with the
    row epilogue over whole rows (it printed nothing before: 'a row reduction after a batched
    matmul is not printed yet'). 3 x 7 = 21 rows: a tail tile."""
    @fs.fused_kernel(target=target)
    def block(a, w, b, r, g, beta):
        return fs.layer_norm(r + (a @ w.T + b), g, beta)

    rng = np.random.default_rng(11)
    bt, t, k, n = 3, 7, 24, 40
    a = rng.standard_normal((bt, t, k)).astype(dtype)
    w = (rng.standard_normal((n, k)) * 0.2).astype(dtype)
    b, g, beta = (rng.standard_normal(n).astype(dtype) for _ in range(3))
    r = rng.standard_normal((bt, t, n)).astype(dtype)
    c = block.compile(a, w, b, r, g, beta)
    assert [p.kind for p in c.kernels] == ["cube"]
    note = c.kernels[0].row.plan_note
    assert "A's 3 batch matrices are consecutive rows of one 21-row A" in note and "whole rows of C" in note
    assert "WholeReduceSum" in c.source
    y = a.astype(np.float64) @ w.astype(np.float64).T + b
    want = np_layer_norm((r + y.astype(dtype)).astype(dtype).astype(np.float64), g.astype(np.float64),
                         beta.astype(np.float64))
    _close(c.simulate(a, w, b, r, g, beta), want, 1e-2)
    _close(c(a, w, b, r, g, beta), want, 1e-2)


@given(m=st.integers(1, 40), k=st.integers(1, 33), n=st.integers(1, 130),
       kind=st.sampled_from(["softmax", "rms_norm", "mean_sub"]), target=st.sampled_from(["ascend910b", "ascend310p"]))
@fuzz_settings(0.006)
def test_generated_row_epilogues_agree_with_numpy(m, k, n, kind, target):
    rng = np.random.default_rng(m * 1000 + n)
    x = rng.standard_normal((m, k)).astype(np.float16)
    w = (rng.standard_normal((k, n)) * 0.3).astype(np.float16)
    g = rng.standard_normal(n).astype(np.float16)
    if kind == "softmax":
        def fn(x, w, g):
            return fs.softmax(x @ w) * g
    elif kind == "rms_norm":
        def fn(x, w, g):
            return fs.rms_norm(x @ w, g)
    else:
        def fn(x, w, g):
            y = x @ w
            return y - fs.mean(y, axis=-1, keepdims=True) + g
    c = fs.fused_kernel(fn, target=target).compile(x, w, g)
    assert [p.kind for p in c.kernels] == ["cube"]
    _close(c.simulate(x, w, g), c(x, w, g), 8e-3)


def test_rows_too_long_for_ub_keep_the_row_kernel_apart_with_the_reason():
    @fs.fused_kernel(target="ascend910b")
    def f(x, w, b):
        return fs.softmax(x @ w + b)

    x = np.ones((8, 16), np.float32)
    w = np.full((16, 1600), 0.01, np.float32)
    b = np.zeros(1600, np.float32)
    c = f.compile(x, w, b)
    rows = c.report().kernels
    assert [p.kind for p in c.kernels] == ["single", "row"]
    assert all(r.reason_code == "FS104" for r in rows)
    assert "16 whole rows of 1600 of the matmul result" in rows[1].reason and "B of 157081 B" in rows[1].reason
    np.testing.assert_allclose(c.simulate(x, w, b), np.full((8, 1600), 1 / 1600), rtol=1e-5)


def test_rows_too_long_for_l0c_are_named_too():
    @fs.fused_kernel(target="ascend910b")
    def f(x, w):
        return fs.softmax(x @ w)

    x = np.ones((4, 16), np.float16)
    c = f.compile(x, np.ones((16, 3000), np.float16))
    assert [r.reason_code for r in c.report().kernels] == ["FS110", "FS110"]
    assert "need 192512 B of 131072 B" in c.report().kernels[1].reason


def test_single_kernel_softmax_after_a_long_matmul_row_says_why():
    @fs.fused_kernel(target="ascend910b", single_kernel=True)
    def f(x, w):
        return fs.softmax(x @ w)   # the line the error names

    x = np.ones((4, 16), np.float16)
    with pytest.raises(fs.FusedslError) as info:
        f.compile(x, np.ones((16, 3000), np.float16))
    msg = str(info.value)
    assert "16 whole rows of 3000" in msg and f"{os.path.basename(__file__)}:" in msg


def test_a_reduction_over_the_columns_of_a_matmul_is_not_fused_into_it():
    @fs.fused_kernel(target="ascend910b")
    def f(x, w):
        return fs.sum(fs.relu(x @ w), axis=0)

    x = np.ones((24, 16), np.float32)
    c = f.compile(x, np.ones((16, 40), np.float32))
    # the matmul prints alone; relu joins the column kernel of the sum (FS116): C is written
    # once and read once either way
    assert [(p.kernel_kind, p.printable) for p in c.kernels] == [("cube", True), ("column", True)]
    np.testing.assert_allclose(c.simulate(x, np.ones((16, 40), np.float32)), np.full(40, 384.0))


def _reference(kernel, *args):
    """The numpy reference interpreter's answer."""
    saved = fs.config.executor
    fs.config.executor = "reference"
    try:
        return kernel(*args)
    finally:
        fs.config.executor = saved


@pytest.mark.parametrize("target,dtype", [("ascend910b", np.float32), ("ascend310p", np.float16)])
def test_per_row_results_of_a_matmul_are_written_by_the_cube_kernel(target, dtype):
    """KernelBench's Matmul_Sigmoid_Sum shape: the matmul's row reductions are results of one
    value per row ([M, 1] and [M]); the cube kernel writes them (it printed nothing before: 'a
    per-row output ... is not printed yet'). M = 37: a tail tile; on 310P (no DataCopyPad) cores
    split M only on 64-byte lines of every per-row result."""
    @fs.fused_kernel(target=target, single_kernel=True)
    def f(x, w, b):
        y = fs.sigmoid(x @ w + b)
        return fs.sum(y, axis=1, keepdims=True), fs.max(y - fs.mean(y, axis=1, keepdims=True), axis=1)

    rng = np.random.default_rng(3)
    m, k, n = 37, 21, 50
    x = rng.standard_normal((m, k)).astype(dtype)
    w = (rng.standard_normal((k, n)) * 0.3).astype(dtype)
    b = rng.standard_normal(n).astype(dtype)
    c = f.compile(x, w, b)
    assert [p.kind for p in c.kernels] == ["cube"]
    assert "CopyRowsOut(gm_y0[row0], out_y0, 1u, curM, curM, curM);" in c.source
    assert "CopyRowsOut(gm_y1[row0], out_y1, 1u, curM, curM, curM);" in c.source
    y = 1 / (1 + np.exp(-(x.astype(np.float64) @ w.astype(np.float64) + b)))
    want = (y.sum(1, keepdims=True), (y - y.mean(1, keepdims=True)).max(1))
    tol = 1e-2 if dtype == np.float16 else 2e-5
    for got in (c.simulate(x, w, b), c(x, w, b), _reference(f, x, w, b)):
        assert [g.shape for g in got] == [(m, 1), (m,)]
        for g, wv in zip(got, want):
            _close(g, wv, tol * 4)
    rep = c.report()
    # the model counts M values for a per-row result and agrees with what simulate moved
    assert rep.gm_bytes_measured == rep.gm_bytes_fused


@given(m=st.integers(1, 70), k=st.integers(1, 33), n=st.integers(1, 90),
       kind=st.sampled_from(["sum", "max", "mean", "min"]), keep=st.booleans(),
       on=st.sampled_from([("ascend910b", np.float32), ("ascend910b", np.float16), ("ascend310p", np.float16)]))
@fuzz_settings(0.004)
def test_generated_per_row_results_of_a_matmul_agree(m, k, n, kind, keep, on):
    """reduce(x @ w - g, axis=-1) as one cube kernel with a per-row result: numpy, the reference
    interpreter, the LLVM call and simulate of the printed source agree (310P's Matmul API takes
    16-bit operands only)."""
    target, dtype = on
    rng = np.random.default_rng(m * 1000 + n * 10 + k)
    x = rng.standard_normal((m, k)).astype(dtype)
    w = (rng.standard_normal((k, n)) * 0.3).astype(dtype)
    g = rng.standard_normal(n).astype(dtype)
    red = {"sum": fs.sum, "max": fs.max, "mean": fs.mean, "min": fs.min}[kind]

    def fn(x, w, g):
        return red(x @ w - g, axis=-1, keepdims=keep)

    c = fs.fused_kernel(fn, target=target, single_kernel=True).compile(x, w, g)
    assert [p.kind for p in c.kernels] == ["cube"]
    y = (x.astype(np.float64) @ w.astype(np.float64)).astype(dtype).astype(np.float64) - g
    want = getattr(np, kind)(y, axis=-1, keepdims=keep)
    tol = 1e-2 if dtype == np.float16 else 2e-5
    for got in (c.simulate(x, w, g), c(x, w, g), _reference(c, x, w, g)):
        assert np.asarray(got).shape == want.shape
        _close(got, want, tol * (n if kind == "sum" else 2))

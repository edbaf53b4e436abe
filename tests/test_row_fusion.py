"""Row fusion (issue 7): a last-axis reduction fuses with its elementwise producers and the
consumers that broadcast its result back over the row (the default at opt_level 2);
results agree with numpy."""
import numpy as np
import pytest

import fusedsl as fs


@fs.fused_kernel
def softmax(x):
    m = fs.max(x, axis=-1, keepdims=True)
    e = fs.exp(x - m)
    return e / fs.sum(e, axis=-1, keepdims=True)


@fs.fused_kernel
def rms_norm_res(x, r, w):
    h = x + r
    ms = fs.mean(h * h, axis=-1, keepdims=True)
    return h * fs.rsqrt(ms + 1e-6) * w


@fs.fused_kernel
def layer_norm_gelu(x, w, b):
    mu = fs.mean(x, axis=-1, keepdims=True)
    d = x - mu
    var = fs.mean(d * d, axis=-1, keepdims=True)
    return fs.gelu(d * fs.rsqrt(var + 1e-5) * w + b)


@fs.fused_kernel
def colsum_then_scale(x):
    return x * fs.sum(x, axis=0, keepdims=True)   # not a last-axis reduction: stays separate


@fs.fused_kernel
def row_max_nokeep(x):
    return fs.max(fs.abs(x) * 2.0, axis=-1)


def np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_ln_gelu(x, w, b):
    mu = x.mean(-1, keepdims=True)
    d = x - mu
    y = d / np.sqrt((d * d).mean(-1, keepdims=True) + 1e-5) * w + b
    return 0.5 * y * (1 + np.vectorize(__import__("math").erf)(y / np.sqrt(2)))


def kinds(k):
    return [p.kind for p in k.kernels], [p.reason_code for p in k.kernels]


@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (5, 33), (2, 3, 129)])
@pytest.mark.parametrize("executor", ["reference", "llvm"])
def test_softmax_is_one_row_kernel(shape, executor, monkeypatch):
    monkeypatch.setattr(fs.config, "executor", executor)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    k = softmax.compile(x)
    assert kinds(k) == (["row"], ["FS100"])
    y = softmax(x)
    np.testing.assert_allclose(y, np_softmax(x), rtol=2e-5, atol=1e-6)


def test_rms_norm_with_residual_is_one_kernel():
    rng = np.random.default_rng(2)
    x, r = rng.standard_normal((2, 4, 65), dtype=np.float32), rng.standard_normal((2, 4, 65), dtype=np.float32)
    w = rng.standard_normal(65).astype(np.float32)
    k = rms_norm_res.compile(x, r, w)
    assert kinds(k)[0] == ["row"]
    h = x + r
    ref = h / np.sqrt((h * h).mean(-1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(rms_norm_res(x, r, w), ref, rtol=1e-4, atol=1e-5)


def test_layer_norm_gelu_is_one_kernel_f16():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 40)).astype(np.float16)
    w, b = rng.standard_normal(40).astype(np.float16), rng.standard_normal(40).astype(np.float16)
    k = layer_norm_gelu.compile(x, w, b)
    assert kinds(k)[0] == ["row"]
    ref = np_ln_gelu(x.astype(np.float32), w.astype(np.float32), b.astype(np.float32))
    np.testing.assert_allclose(layer_norm_gelu(x, w, b).astype(np.float32), ref, rtol=2e-2, atol=2e-2)


def test_non_last_axis_reduction_is_not_row_fused():
    x = np.random.default_rng(4).standard_normal((4, 8)).astype(np.float32)
    k = colsum_then_scale.compile(x)
    assert "row" not in kinds(k)[0] and len(k.kernels) >= 2
    np.testing.assert_allclose(colsum_then_scale(x), x * x.sum(0, keepdims=True), rtol=1e-5)


def test_row_reduction_without_keepdims_fuses_with_producer():
    x = np.random.default_rng(5).standard_normal((3, 9)).astype(np.float32)
    k = row_max_nokeep.compile(x)
    assert kinds(k) == (["row"], ["FS100"])
    np.testing.assert_allclose(row_max_nokeep(x), (np.abs(x) * 2).max(-1))


# ---- differential fuzz: random row kernels vs numpy -------------------------------------
from hypothesis import given, strategies as st  # noqa: E402

from conftest import fuzz_settings  # noqa: E402

_RED = {"sum": (fs.sum, np.sum), "mean": (fs.mean, np.mean), "max": (fs.max, np.max), "min": (fs.min, np.min)}


@fuzz_settings(0.04)
@given(rows=st.integers(1, 5), cols=st.integers(1, 40), red=st.sampled_from(sorted(_RED)),
       keep=st.booleans(), f16=st.booleans(), seed=st.integers(0, 2**16))
def test_row_kernels_agree_with_numpy(rows, cols, red, keep, f16, seed):
    fsr, npr = _RED[red]
    dt = np.float16 if f16 else np.float32

    def body(x, b):
        r = fsr(fs.abs(x) * 0.5 + b, axis=-1, keepdims=True)
        return (x - r) * 2.0 if keep else fsr(x * x + b, axis=-1)

    body.__name__ = f"row_{red}_{int(keep)}"
    k = fs.fused_kernel(body)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, cols)).astype(dt)
    b = rng.standard_normal(cols).astype(dt)
    compiled = k.compile(x, b)
    assert [p.kind for p in compiled.kernels] == ["row"]
    xf, bf = x.astype(np.float32), b.astype(np.float32)
    if keep:
        want = (xf - npr(np.abs(xf) * 0.5 + bf, axis=-1, keepdims=True)) * 2.0
    else:
        want = npr(xf * xf + bf, axis=-1)
    tol = 3e-2 if f16 else 1e-5
    np.testing.assert_allclose(np.asarray(k(x, b), np.float32), want, rtol=tol, atol=tol * (1 + np.abs(want).max()))


def test_row_kernel_report_counts_each_input_and_output_once():
    x = np.zeros((64, 1024), np.float32)
    rep = softmax.compile(x).report()
    assert rep.gm_bytes_fused == rep.gm_bytes_min == 2 * x.nbytes
    assert rep.gm_bytes_unfused > 3 * rep.gm_bytes_min


def test_row_fusion_is_the_default_and_can_be_disabled():
    x = np.zeros((4, 8), np.float32)
    plain = fs.fused_kernel(lambda x: fs.softmax(x, axis=-1))
    assert [p.kind for p in plain.compile(x).kernels] == ["row"]
    assert [p.kind for p in plain.compile(x, opt_level=3).kernels] == ["row"]
    split = softmax.compile(x, disable_passes=["row-fusion"])
    assert "row" not in [p.kind for p in split.kernels] and len(split.kernels) >= 3
    np.testing.assert_allclose(split(x), np_softmax(x), rtol=1e-6)


def test_the_row_kernel_prints_as_one_ascendc_kernel():
    """The fused softmax is one printed kernel (tests/test_ascendc_row.py runs it)."""
    x = np.zeros((4, 8), np.float32)
    src = softmax.compile(x, target="ascend910b").source
    assert src.count('extern "C" __global__ __aicore__ void') == 1
    assert "WholeReduceMax" in src and "WholeReduceSum" in src


def test_reduction_of_a_reduction_result_is_its_own_kernel():
    """Found by the frontend fuzz: sum(sum(x, keepdims=True)) on a row of one float16 merged both
    sums into one row kernel, whose second reduction walked the per-row result (LLVM crashed)."""
    @fs.fused_kernel
    def twice(x):
        return fs.sum(fs.sum(x, keepdims=True))

    for x in (np.array([1.096], np.float16), np.arange(6, dtype=np.float32)):
        got = twice(x)
        assert got.dtype == x.dtype and np.isclose(float(got), float(np.sum(x)), rtol=1e-3)
        assert [k.kind for k in twice.compile(x).kernels] == ["single", "single"]


@pytest.mark.parametrize("shape", [(1, 1), (3, 1), (1, 7), (5, 1)])
def test_a_recomputed_reader_of_a_row_reduction_keeps_its_input(shape):
    """Found by the frontend fuzz: t = exp(sum(exp(x), axis=1)) is read by x + t (which row
    fusion merges with the sum, recomputing t) and returned on its own (a kernel of its own that
    reads the sum); the merged row kernel did not export the sum, so main used it undefined."""
    @fs.fused_kernel
    def g(x):
        t = fs.exp(fs.sum(fs.exp(x), axis=1))
        return x + t, t

    x = (np.random.default_rng(0).standard_normal(shape) * 0.3).astype(np.float16)
    e = np.exp(x.astype(np.float32)).astype(np.float16)
    t = np.exp(e.astype(np.float32).sum(axis=1)).astype(np.float16)
    for executor in ("llvm", "reference"):
        fs.config.executor = executor
        try:
            got = g(x)
        finally:
            fs.config.executor = "llvm"
        np.testing.assert_allclose(got[1].astype(np.float32), t.astype(np.float32), rtol=2e-3)
        np.testing.assert_allclose(got[0].astype(np.float32), (x + t).astype(np.float32), rtol=2e-3, atol=2e-3)
    assert "row" in [k.kind for k in g.compile(x).kernels]


@fs.fused_kernel(target="ascend910b")
def per_row_after(x, s):
    m = fs.mean(x * 2.0, axis=-1, keepdims=True)
    return fs.sqrt(m * m + 1e-5) * s, m - 1.0


@fs.fused_kernel(target="ascend910b")
def per_row_reads_a_row_vector(x, v):
    return fs.sum(x, axis=-1) * v          # v: [R], one value per row from GM


def test_ops_on_one_value_per_row_join_the_row_kernel():
    """`sum(x, -1) * 1.5` was two kernels (FS101 "borders sum"): the per-row ops after a
    reduction now run in the row kernel, once per row, on every executor and printed."""
    rng = np.random.default_rng(3)
    x, s = rng.standard_normal((37, 45)).astype(np.float32), np.float32(3.0)
    k = per_row_after.compile(x, s)
    assert [p.ops for p in k.kernels] == [["mul", "mean", "mul", "add", "sqrt", "mul", "sub"]]
    m = (x * 2.0).mean(-1, keepdims=True)
    want = (np.sqrt(m * m + 1e-5) * s, m - 1.0)
    for run in (k, k.simulate):
        for got, ref in zip(run(x, s), want):
            np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-5)
    # a per-row tensor from GM would read like a last-axis vector in the row kernel: it stays out
    v = rng.standard_normal(37).astype(np.float32)
    k2 = per_row_reads_a_row_vector.compile(x, v)
    assert [p.ops for p in k2.kernels] == [["sum"], ["mul"]] and all(p.printable for p in k2.kernels)
    np.testing.assert_allclose(k2(x, v), x.sum(-1) * v, rtol=2e-5, atol=2e-5)


def test_a_one_row_per_row_consumer_of_one_element_tensors_runs():
    """With one row, a one-element tensor is a per-row tensor: the consumer keeps its own kernel
    (joined, the LLVM row kernel did not load it: KeyError in llvm_row)."""
    x = np.array([[2.0]], np.float32)
    y = np.array([[-3.0]], np.float32)
    got = fs.fused_kernel(lambda a, b: fs.where(fs.sum(b, axis=1) > 0.0, a[:, 0], b[:, 0]))(x, y)
    np.testing.assert_array_equal(got, np.array([-3.0], np.float32))
    got = fs.fused_kernel(lambda a, b: fs.max(fs.where(fs.reshape(a, (1, 1, 1)) > 0, fs.reshape(b, (1, 1, 1)), -1.0),
                                              axis=2) + a)(x, y)
    np.testing.assert_array_equal(got, np.array([[-1.0]], np.float32))
    # rows of one element but several rows: the same ambiguity (KeyError before), any row count
    for shape in [(4, 1), (3, 1, 1), (1, 5)]:
        x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
        t = np.array([2.0], np.float32)
        k = fs.fused_kernel(lambda a, b: fs.sum(a, axis=-1) * 1.5 + b[0]).compile(x, t)
        np.testing.assert_allclose(k(x, t), x.sum(-1) * 1.5 + 2.0, rtol=1e-6)
        assert len(k.kernels) == (1 if shape[-1] > 1 else 2)


def test_logsumexp_is_one_kernel_with_one_output():
    """logsumexp's safe max (where(|m| == inf, 0, m), shape [R, 1]) was split off by shape and
    kept as a kernel of its own for the final add; once row fusion took the add in, that kernel
    computed a value nobody read and the row kernel wrote 3 GM outputs only it read. Dead
    kernels and unread outputs are dropped: one kernel, one output, inf rows like numpy."""
    @fs.fused_kernel(target="ascend910b")
    def lse(x):
        return fs.logsumexp(x, axis=-1)

    x = np.random.default_rng(2).standard_normal((21, 50)).astype(np.float32)
    x[3, 5], x[7] = np.inf, -np.inf
    k = lse.compile(x)
    assert len(k.kernels) == 1 and len(k.kernels[0].function.results) == 1
    assert k.kernels[0].ops == ["max", "abs", "eq", "where", "sub", "exp", "sum", "log", "add"]
    m = x.max(-1, keepdims=True)
    safe = np.where(np.isinf(m), 0, m)
    with np.errstate(all="ignore"):
        want = np.log(np.exp(x - safe).sum(-1)) + safe[:, 0]
    for run in (k, k.simulate):
        np.testing.assert_allclose(run(x), want, rtol=1e-5)



def test_sibling_row_reductions_of_one_input_are_one_kernel():
    """max(x, -1) and mean(x, -1) were two row kernels, each reading x; rows of one shape that
    read a common input are one row kernel now (x read once per row), also after a matmul."""
    @fs.fused_kernel(target="ascend910b")
    def stats(x, g, b):
        return fs.max(x, axis=-1), fs.mean(x, axis=-1), fs.softmax(x, axis=-1), fs.layer_norm(x, g, b)

    rng = np.random.default_rng(4)
    x = rng.standard_normal((19, 33)).astype(np.float32)
    g, b = rng.standard_normal(33).astype(np.float32), rng.standard_normal(33).astype(np.float32)
    k = stats.compile(x, g, b)
    assert len(k.kernels) == 1 and k.kernels[0].printable
    rep = k.report()
    assert rep.gm_bytes_fused == x.nbytes + g.nbytes + b.nbytes + 2 * 19 * 4 + 2 * x.nbytes   # x read once
    mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    e = np.exp(x - x.max(-1, keepdims=True))
    want = (x.max(-1), x.mean(-1), e / e.sum(-1, keepdims=True), (x - mu) / np.sqrt(var + 1e-5) * g + b)
    for got, ref in zip(k(x, g, b), want):
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_a_reduction_of_per_row_values_keeps_its_own_row_kernel():
    """TripletMarginLoss (KernelBench level 1, 99): the per-row distances' consumers joined the
    row kernel, and then the mean over those per-row values joined as well: one kernel with
    reductions over rows of two shapes, which no printer takes. A group keeps one row shape."""
    @fs.fused_kernel(target="ascend910b")
    def triplet(a, p, n):
        dp = fs.sqrt(fs.sum((a - p + 1e-6) ** 2, axis=-1))
        dn = fs.sqrt(fs.sum((a - n + 1e-6) ** 2, axis=-1))
        return fs.mean(fs.maximum(dp - dn + 1.0, 0.0))

    rng = np.random.default_rng(6)
    a, p, n = (rng.random((12, 40)).astype(np.float32) for _ in range(3))
    k = triplet.compile(a, p, n)
    assert [q.ops[-1] for q in k.kernels] == ["maximum", "mean"] and all(q.printable for q in k.kernels)
    dp = np.sqrt(((a - p + 1e-6) ** 2).sum(-1))
    dn = np.sqrt(((a - n + 1e-6) ** 2).sum(-1))
    np.testing.assert_allclose(k(a, p, n), np.maximum(dp - dn + 1.0, 0).mean(), rtol=1e-5)

"""Row kernels (softmax, layer_norm, rms_norm, last-axis reductions) printed as Ascend C and run
on the CPU implementation of the API: results against numpy, GM traffic against the minimum,
the CANN-version spelling of the reductions, and the error for rows bigger than UB."""
import os
import re

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fusedsl as fs
from fusedsl.reference import run_module

TARGETS = ["ascend910b", "ascend910b4", "ascend310p", "ascend910"]
TOL = {"float32": 2e-5, "float16": 2e-2, "bfloat16": 5e-2}
EXAMPLES = max(3, int(os.environ.get("FUSEDSL_FUZZ_EXAMPLES", "500")) // 160)


def _np(dtype):
    return np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _layer_norm(x, g, b, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


def _rms_norm(x, g, eps=1e-6):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * g


def _close(got, want, dtype):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    assert got.shape == want.shape
    err = np.abs(got - want).max() if got.size else 0.0
    assert err <= TOL[dtype] * (1 + np.abs(want).max()), f"max abs error {err}"


def _outs(r):
    return r if isinstance(r, tuple) else (r,)


@pytest.mark.parametrize("target,dtype", [(t, d) for t in TARGETS for d in ("float32", "float16")]
                         + [("ascend910b", "bfloat16")])
def test_norms_softmax_and_reductions_agree_with_numpy(target, dtype):
    @fs.fused_kernel(target=target)
    def norms(x, g, b, r, z):
        return (fs.softmax(x, axis=-1), fs.gelu(fs.layer_norm(x, g, b)), fs.rms_norm(x, g) + r,
                fs.sum(z, axis=-1), fs.max(z, axis=-1, keepdims=True), fs.mean(z, axis=-1), fs.min(z, axis=-1))

    rng = np.random.default_rng(7)
    npdt = _np(dtype)
    x = (rng.standard_normal((9, 77)) * 3).astype(npdt)   # odd row length, rows not a tile multiple
    g = rng.standard_normal(77).astype(npdt)
    b = rng.standard_normal(77).astype(npdt)
    r = rng.standard_normal((9, 77)).astype(npdt)
    z = rng.standard_normal((2, 3, 33)).astype(npdt)
    k = norms.compile(x, g, b, r, z)
    assert all(p.row is not None for p in k.kernels if p.kind != "vector")
    got = k.simulate(x, g, b, r, z)
    ref = run_module(k.graph, [x, g, b, r, z])   # the reference interpreter (one rounding per op)
    for a, w in zip(got, ref):
        _close(a, w, dtype)
    xf, gf, bf, rf, zf = (a.astype(np.float64) for a in (x, g, b, r, z))
    _close(got[0], _softmax(xf), dtype)
    _close(got[2], _rms_norm(xf, gf) + rf, dtype)
    _close(got[3], zf.sum(-1), dtype)
    _close(got[4], zf.max(-1, keepdims=True), dtype)
    _close(got[5], zf.mean(-1), dtype)
    _close(got[6], zf.min(-1), dtype)
    for a, w in zip(got, _outs(k(x, g, b, r, z))):   # and the LLVM executor
        _close(a, w, dtype)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=st.integers(1, 12), cols=st.one_of(st.integers(1, 260), st.integers(1, 260), st.integers(30000, 60000)), op=st.sampled_from(["sum", "mean", "max", "min"]),
       keepdims=st.booleans(), dtype=st.sampled_from(["float32", "float16", "bfloat16"]),
       target=st.sampled_from(TARGETS), seed=st.integers(0, 2 ** 16))
def test_generated_row_reductions_agree_with_numpy(rows, cols, op, keepdims, dtype, target, seed):
    if dtype == "bfloat16":
        target = "ascend910b"   # the only target with bfloat16 vector APIs
    fn = {"sum": fs.sum, "mean": fs.mean, "max": fs.max, "min": fs.min}[op]

    @fs.fused_kernel(target=target)
    def red(x, y):   # the reduction, and a softmax-like use of it broadcast back over the row
        m = fn(x, axis=-1, keepdims=True)
        return fn(x, axis=-1, keepdims=keepdims), (y - m) * 0.5

    rng = np.random.default_rng(seed)
    x = rng.uniform(-4, 4, (rows, cols)).astype(_np(dtype))
    y = rng.uniform(-4, 4, (rows, cols)).astype(_np(dtype))
    k = red.compile(x, y)
    got = k.simulate(x, y)
    for a, w in zip(got, k(x, y)):   # the LLVM executor agrees too
        _close(a, w, dtype)
    xf = x.astype(np.float64)
    want = getattr(np, op)(xf, axis=-1, keepdims=keepdims)
    _close(got[0], want, dtype)
    ref = run_module(k.graph, [x, y])
    _close(got[1], ref[1], dtype)


def test_softmax_reads_x_once_and_writes_y_once():
    @fs.fused_kernel
    def sm(x):
        return fs.softmax(x, axis=-1)

    x = np.random.default_rng(0).standard_normal((300, 1000)).astype(np.float32)
    k = sm.compile(x)
    assert len(k.kernels) == 1
    _close(k.simulate(x), _softmax(x.astype(np.float64)), "float32")
    rep = k.report()
    assert rep.gm_bytes_measured == rep.gm_bytes_min == 2 * x.nbytes
    assert "plan: single-read" in str(rep)
    assert rep.kernels[0].ub_bytes <= k.target.ub_bytes


def test_layer_norm_gelu_is_within_two_percent_of_the_minimum_traffic():
    @fs.fused_kernel
    def ln(x, g, b):
        return fs.gelu(fs.layer_norm(x, g, b))

    rng = np.random.default_rng(1)
    x = rng.standard_normal((512, 768)).astype(np.float32)   # small: the core count keeps the re-read of g, b low
    g = rng.standard_normal(768).astype(np.float32)
    b = rng.standard_normal(768).astype(np.float32)
    k = ln.compile(x, g, b)
    assert len(k.kernels) == 1 and k.kernels[0].kind == "row"
    _close(k.simulate(x, g, b), run_module(k.graph, [x, g, b])[0], "float32")
    rep = k.report()
    assert rep.gm_bytes_measured <= 1.02 * rep.gm_bytes_min   # g and b are read once per core


def test_cann_version_picks_the_reduction_spelling():
    def make(version):
        @fs.fused_kernel(cann_version=version)
        def sm(x):
            return fs.softmax(x, axis=-1)
        return sm

    x = np.random.default_rng(2).standard_normal((5, 70)).astype(np.float32)
    old, new = make("8.5").compile(x), make("9.1").compile(x)
    assert "WholeReduceSum<float>" in old.source and "ReduceRepeat" not in old.source
    assert "ReduceRepeat<AscendC::ReduceType::SUM, float, float>" in new.source
    assert "WholeReduce" not in new.source
    _close(new.simulate(x), _softmax(x.astype(np.float64)), "float32")
    with pytest.raises(fs.TargetError, match="cann_version='nine' is not a CANN version"):
        make("nine").compile(x)


@pytest.mark.parametrize("target", ["ascend910b", "ascend910"])
def test_rows_bigger_than_ub_take_the_multi_pass_plan(target):
    @fs.fused_kernel(target=target)
    def big(x, g):
        return fs.softmax(x, axis=-1), fs.rms_norm(x, g), fs.mean(x, axis=-1)

    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 70001)).astype(np.float32)
    g = rng.standard_normal(70001).astype(np.float32)
    k = big.compile(x, g)
    assert all(p.row is not None and p.row.passes for p in k.kernels)
    got = k.simulate(x, g)
    xf, gf = x.astype(np.float64), g.astype(np.float64)
    _close(got[0], _softmax(xf), "float32")
    _close(got[1], _rms_norm(xf, gf), "float32")
    _close(got[2], xf.mean(-1), "float32")
    report = str(k.report())
    assert re.search(r"plan: multi-pass: a row of 70001 elements needs \d+ bytes of UB in the single-read plan, "
                     r"more than the \d+ of " + target, report)
    assert "x read 3 times" in report


def test_softmax_over_rows_bigger_than_ub_reads_x_twice():
    """The online recurrence merges the max and sum passes: x read twice, y written once."""
    @fs.fused_kernel(target="ascend310p")
    def sm(x):
        return fs.softmax(x, axis=-1)

    x = (np.random.default_rng(6).standard_normal((3, 100003)) * 4).astype(np.float32)
    k = sm.compile(x)
    assert len(k.kernels[0].row.passes) == 2 and k.kernels[0].row.passes[0].online
    got = k.simulate(x)
    want = _softmax(x.astype(np.float64))
    assert np.abs(got - want).max() <= 1e-5 * want.max()
    assert k.report().gm_bytes_measured == 3 * x.nbytes
    assert "x read 2 times" in str(k.report())


def test_layer_norm_over_rows_bigger_than_ub_reads_x_twice():
    """Mean and variance in one pass (shifted moments), then the normalise pass."""
    @fs.fused_kernel(target="ascend910")
    def ln(x, g, b):
        return fs.layer_norm(x, g, b)

    rng = np.random.default_rng(8)
    x = (rng.standard_normal((2, 90001)) * 3 + 40).astype(np.float32)   # a mean far from 0
    g = rng.standard_normal(90001).astype(np.float32)
    b = rng.standard_normal(90001).astype(np.float32)
    k = ln.compile(x, g, b)
    assert len(k.kernels[0].row.passes) == 2 and k.kernels[0].row.passes[0].moments
    _close(k.simulate(x, g, b), _layer_norm(x.astype(np.float64), g, b), "float32")
    # x twice, g and b once per row, y once, and the shift (one element) per row
    assert k.report().gm_bytes_measured == 5 * x.nbytes + 4 * x.shape[0]
    assert "x read 2 times" in str(k.report())


def test_a_symbolic_row_too_long_for_ub_is_refused_with_figures():
    @fs.fused_kernel
    def sm(x):
        return fs.softmax(x, axis=-1)

    x = np.random.default_rng(4).standard_normal((2, 100000)).astype(np.float32)
    k = sm.compile(fs.spec((2, "C"), "float32"))
    _close(k(x), _softmax(x.astype(np.float64)), "float32")   # the CPU executors run it
    with pytest.raises(fs.ScheduleError) as info:
        k.simulate(x)
    msg = str(info.value)
    assert re.search(r"one row of 100000 elements needs \d+ bytes of UB", msg)
    assert "ascend910b has 196352" in msg and "needs the row length" in msg


def test_row_kernel_source_has_no_stl_and_saves_as_a_project(tmp_path):
    from test_device_no_stl import _device_part

    @fs.fused_kernel
    def rms(x, g):
        return fs.rms_norm(x, g)

    x = np.ones((16, 48), np.float16)
    k = rms.compile(x, np.ones(48, np.float16))
    dev = _device_part(k.source)
    assert "WholeReduceSum" in dev and not re.search(r"std::|#include <algorithm>", dev)
    path = k.save(str(tmp_path / "proj"))
    kernel_cpp = open(os.path.join(path, "rms_kernel.cpp")).read()
    assert "class KernelRmsKernel" in kernel_cpp and "WholeReduceSum" in kernel_cpp


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(shape=st.lists(st.integers(1, 40), min_size=1, max_size=3), data=st.data(),
       op=st.sampled_from(["sum", "mean", "max", "min"]), keepdims=st.booleans(),
       dtype=st.sampled_from(["float32", "float16"]), target=st.sampled_from(TARGETS))
def test_reductions_over_every_axis_agree_with_numpy(shape, data, op, keepdims, dtype, target):
    """Other axes than the last: columns of an [A, K, B] view (or rows when B == 1)."""
    rank = len(shape)
    first = data.draw(st.integers(0, rank - 1), label="first")
    last = data.draw(st.integers(first, rank - 1), label="last")
    axis = None if (first, last) == (0, rank - 1) and data.draw(st.booleans(), label="none") else \
        tuple(range(first, last + 1))
    fn = {"sum": fs.sum, "mean": fs.mean, "max": fs.max, "min": fs.min}[op]
    k = fs.fused_kernel(lambda x: fn(x, axis=axis, keepdims=keepdims), target=target)
    x = np.random.default_rng(len(shape)).uniform(-3, 3, shape).astype(dtype)
    c = k.compile(x)
    assert c.kernels[0].row is not None, c.kernels[0].error
    got = c.simulate(x)
    want = getattr(np, op)(x.astype(np.float64), axis=axis, keepdims=keepdims)
    _close(got, want, dtype)
    _close(c(x), want, dtype)   # the LLVM executor too


def test_sum_over_axis_0_reads_x_once_on_several_cores_without_partials():
    x = np.random.default_rng(5).standard_normal((2048, 1024)).astype(np.float32)
    k = fs.fused_kernel(lambda x: fs.sum(x, axis=0)).compile(x)
    _close(k.simulate(x), x.astype(np.float64).sum(0), "float32")
    rep = k.report()
    assert rep.gm_bytes_measured == rep.gm_bytes_min
    assert rep.kernels[0].block_dim > 1
    assert "never K, so there are no partial results to combine" in str(rep)


def test_half_norms_compute_their_statistics_in_float32():
    """A float16 norm normalises in float32, as torch does: with the mean rounded to float16,
    x = [2.336, 2.44] came out 2 % off, and a float16 sum of squares overflows above |x| = 256.
    The reference interpreter, the LLVM call and the printed Ascend C under simulate all agree
    with the float32 normalisation rounded once to float16 (weight and bias apply in float16)."""
    @fs.fused_kernel
    def norms(x, w, b):
        return fs.layer_norm(x, w, b), fs.rms_norm(x, w), fs.group_norm(fs.reshape(x, (2, 2, 1)), 1)

    x = np.array([[2.336, 2.44], [300.0, -410.0]], np.float16)
    w = np.array([1.5, -0.5], np.float16)
    b = np.array([0.25, 1.0], np.float16)
    x32 = x.astype(np.float32)
    half = lambda a: np.float16(a)
    centered = x32 - x32.mean(-1, keepdims=True)
    unit = half(centered / np.sqrt((centered ** 2).mean(-1, keepdims=True) + np.float32(1e-5)))
    rms = half(x32 / np.sqrt((x32 ** 2).mean(-1, keepdims=True) + np.float32(1e-6)))
    grouped = x32.reshape(2, 2, 1)
    gc = grouped - grouped.mean((-1, -2), keepdims=True)
    want = [half(unit * w + b), half(rms * w),
            half(gc / np.sqrt((gc ** 2).mean((-1, -2), keepdims=True) + np.float32(1e-5)))]
    assert abs(float(unit[0, 0]) + 1.0) < 2e-3     # the cancelling row: [-1, 1]
    k = norms.compile(x, w, b)
    for got in (run_module(k.graph, [x, w, b]), k(x, w, b), k.simulate(x, w, b)):
        for g, e in zip(got, want):
            assert g.dtype == np.float16 and np.isfinite(g).all()
            np.testing.assert_allclose(np.float32(g), np.float32(e), rtol=2e-3, atol=2e-3)


def test_symbolic_rows_take_their_tiling_from_the_printed_host_code():
    """A row kernel compiled for symbolic sizes carries no tiling words: the printed host tiling
    (backend_ascendc/host_row.py) computes them at each launch, with the strides of a per-row
    parameter, and simulate checks them word for word against lower/row.compute_row_tiling."""
    @fs.fused_kernel
    def f(x, r, g):
        return fs.softmax(x * r) + g, fs.max(x, axis=-1)

    k = f.compile(fs.spec(("B", "R", "C"), "float32"), fs.spec(("B", "R", 1), "float32"),
                  fs.spec(("C",), "float32"))
    assert [p.kind for p in k.kernels] == ["row"] and "inline bool FKernelTiling(const int64_t* sizes" in k.source
    rng = np.random.default_rng(5)
    for b, r, c in [(2, 3, 17), (1, 5, 300)]:
        x, s, g = (rng.standard_normal(shape).astype(np.float32) for shape in ((b, r, c), (b, r, 1), (c,)))
        for got, want in zip(k.simulate(x, s, g), k(x, s, g)):
            _close(got, want, "float32")

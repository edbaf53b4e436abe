"""Row kernels on the LLVM backend (issue 7 item 6): softmax, layer_norm(+gelu), rms_norm
(+residual, +cast), plain sum/mean/max/min over the last axis and lone reductions over any
contiguous range of axes run natively through kernel(*arrays) -- the numpy reference is
never called -- and agree with numpy.

Tolerances (against numpy in float64 where it matters): float32 rtol 2e-5 (exp is a
~1 ulp polynomial, sums are reassociated into vector accumulators); float16 and bfloat16
round once per op like every executor: 1e-2 and 4e-2 relative to the row's scale.
"""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import fusedsl as fs
import fusedsl.compiler as compiler
from conftest import fuzz_settings
from fusedsl.backend_cpu.kernel_cpu import ScheduleCpu
from fusedsl.backend_cpu.llvm_kernel import read_prefills
from fusedsl.tile.kernel import Step

TOL = {np.float32: 2e-5, np.float16: 1e-2, fs.bfloat16.np: 4e-2}


@pytest.fixture
def native_only(monkeypatch):
    """Fail if any kernel falls back to the numpy reference interpreter."""
    def refuse(*a, **k):
        raise AssertionError("a kernel ran on the numpy reference")
    monkeypatch.setattr(compiler, "run_function", refuse)
    monkeypatch.setattr(fs.config, "executor", "llvm")


def close(got, want, dtype):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    tol = TOL[dtype]
    scale = 1.0 + np.abs(want).max(initial=0.0)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)


# ---- the kernels ---------------------------------------------------------------------------
@fs.fused_kernel
def softmax(x):
    m = fs.max(x, axis=-1, keepdims=True)
    e = fs.exp(x - m)
    return e / fs.sum(e, axis=-1, keepdims=True)


@fs.fused_kernel
def builtin_softmax(x):
    return fs.softmax(x)


@fs.fused_kernel
def layer_norm_gelu(x, w, b):
    return fs.gelu(fs.layer_norm(x, w, b))


@fs.fused_kernel
def rms_norm_res_f16(x, r, w):
    return fs.rms_norm(x + r, w).astype(fs.float16)


def np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_layer_norm_gelu(x, w, b):
    from math import erf
    mu = x.mean(-1, keepdims=True)
    d = x - mu
    y = d / np.sqrt((d * d).mean(-1, keepdims=True) + 1e-5) * w + b
    return 0.5 * y * (1 + np.vectorize(erf)(y / np.sqrt(2)))


def reference(kernel, *args):
    """The numpy reference interpreter's answer (the oracle's own gelu formula)."""
    saved = fs.config.executor
    fs.config.executor = "reference"
    try:
        return kernel(*args)
    finally:
        fs.config.executor = saved


def f64(*arrays):
    return [np.asarray(a, np.float64) for a in arrays]


SHAPES = [(1, 1), (3, 7), (5, 33), (2, 1000), (4, 1), (2, 3, 129)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, fs.bfloat16.np])
def test_softmax(shape, dtype, native_only):
    x = (np.random.default_rng(1).standard_normal(shape) * 3).astype(dtype)
    assert [p.kind for p in softmax.compile(x).kernels] == ["row"]
    close(softmax(x), np_softmax(*f64(x)), dtype)
    close(builtin_softmax(x), np_softmax(*f64(x)), dtype)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_layer_norm_gelu(shape, dtype, native_only):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape).astype(dtype)
    w, b = rng.standard_normal(shape[-1]).astype(dtype), rng.standard_normal(shape[-1]).astype(dtype)
    got = layer_norm_gelu(x, w, b)
    close(got, reference(layer_norm_gelu, x, w, b), dtype)
    # and numpy's erf gelu, up to the tanh form's own error
    np.testing.assert_allclose(np.float64(got), np_layer_norm_gelu(*f64(x, w, b)), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("shape", SHAPES)
def test_rms_norm_residual_cast(shape, native_only):
    rng = np.random.default_rng(3)
    x, r = rng.standard_normal(shape).astype(np.float32), rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(shape[-1]).astype(np.float32)
    y = rms_norm_res_f16(x, r, w)
    assert y.dtype == np.float16
    h = np.float64(x) + r
    close(y, h / np.sqrt((h * h).mean(-1, keepdims=True) + 1e-6) * w, np.float16)


_RED = {"sum": (fs.sum, np.sum), "mean": (fs.mean, np.mean), "max": (fs.max, np.max), "min": (fs.min, np.min)}


@pytest.mark.parametrize("red", sorted(_RED))
@pytest.mark.parametrize("keep", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, fs.bfloat16.np])
def test_plain_last_axis_reductions(red, keep, dtype, native_only):
    fsr, npr = _RED[red]
    k = fs.fused_kernel(lambda x: fsr(x, axis=-1, keepdims=keep))
    for shape in [(1, 1), (3, 7), (2, 33), (2, 1000), (7,)]:
        # all-negative rows: a zero pad would win the max; the identity is -inf
        x = (np.random.default_rng(4).standard_normal(shape) - 3).astype(dtype)
        got = k(x)
        want = npr(np.float64(x), axis=-1, keepdims=keep)
        assert got.shape == want.shape and got.dtype == dtype
        close(got, want, dtype)


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint8, np.bool_])
def test_integer_reductions(dtype, native_only):
    """int32 accumulators: sums wrap like numpy's (int64 sum cast to int32), max/min exact."""
    rng = np.random.default_rng(10)
    for fsr, npr in [(fs.sum, np.sum), (fs.max, np.max), (fs.min, np.min)]:
        k = fs.fused_kernel(lambda a: fsr(a, axis=-1))
        for shape in [(3, 1), (4, 37), (2, 1000)]:
            if dtype == np.bool_:
                x = rng.standard_normal(shape) > 0.3
            else:
                info = np.iinfo(dtype)
                x = rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)
            want = npr(x, axis=-1)
            want = want.astype(np.int64).astype(np.int32) if fsr is fs.sum else want
            got = k(x)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint8, np.bool_])
def test_integer_rows_on_llvm_kernel_match_numpy_and_the_interpreter(dtype, native_only):
    """Integer and bool row reductions: the CPU's row schedule folds them into int32 lanes (the row
    kind's int_reduction; the chip's refuses them), on llvm_kernel bit for bit as the tile
    interpreter runs the same kernel and words, and as numpy (sums wrap in int32); a row longer
    than the 1 MB UB's single read too (cpu_tiling.row_ub).  k(*arrays) runs them so
    (compiler._row_cpu_kernel), the lanes of each row's fold kept in registers and reduced there
    (llvm_kernel.reduce_lanes)."""
    from fusedsl.backend_cpu.cpu_tiling import row_schedule, row_tiling
    from fusedsl.backend_cpu.kernel_interp import run_kernel
    rng = np.random.default_rng(14)
    reds = [(fs.sum, np.sum), (fs.max, np.max), (fs.min, np.min)]
    for shape in [(5, 77)] + ([(2, 300000)] if dtype == np.int32 else []):   # 1.2 MB rows
        if dtype == np.bool_:
            x = rng.standard_normal(shape) > 0.3
        else:
            info = np.iinfo(dtype)
            x = rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)
        for fsr, npr in reds if shape[1] < 1000 else reds[:1]:
            k = fs.fused_kernel(lambda a: fsr(a, axis=-1, keepdims=True) * 3).compile(x)
            assert isinstance(k._row_kernel(k.kernels[0]), ScheduleCpu)
            sched = row_schedule(k.kernels[0].function, k.target)
            row = ScheduleCpu(sched, row_tiling(sched, {}, k.target))
            assert sched.passes is None
            r = npr(x, axis=-1, keepdims=True)
            r = r.astype(np.int64).astype(np.int32) if fsr is fs.sum or r.dtype == np.bool_ else r
            with np.errstate(over="ignore"):   # (a bool times a Python int: int32)
                want = r * np.array(3, r.dtype)
            assert k(x).dtype == want.dtype
            np.testing.assert_array_equal(k(x), want)
            got = np.zeros_like(want)
            row.run([x], [got])
            np.testing.assert_array_equal(got, want)
            spec = np.zeros_like(want)
            run_kernel(row.kernel.k, [x], [spec], row.words(row.tiling))
            np.testing.assert_array_equal(spec, got)
    # a compare's count: the compare, the casts and the fold run in one loop of the steps (the
    # compare's prefills -- lanes the chip's Compare reads past the count, its Select's ones -- are
    # the chip's: llvm_kernel.cpu_prefills drops them), the lanes reduced in registers
    x = rng.standard_normal((3, 1000)).astype(np.float32)
    k = fs.fused_kernel(lambda a: fs.sum(a > 0.5, axis=-1)).compile(x)
    sched = row_schedule(k.kernels[0].function, k.target)
    row = ScheduleCpu(sched, row_tiling(sched, {}, k.target))
    got = np.zeros(3, np.int32)
    row.run([x], [got])
    np.testing.assert_array_equal(got, (x > 0.5).sum(-1))
    steps = [n for st in row.kernel.k.stages for n in _nodes(st.body) if isinstance(n, Step)]
    assert any(n.prefill for n in steps) and not any(read_prefills(n) for n in steps)
    assert '"sfold' in row.kernel.ir and "llvm.vector.reduce.add.v16i32" in row.kernel.ir
    assert k.executor(k.kernels[0]) == "row"
    np.testing.assert_array_equal(k(x), (x > 0.5).sum(-1))


def _nodes(body):
    for n in body:
        yield n
        yield from _nodes(getattr(n, "body", ()))


def test_a_step_keeps_the_prefills_it_reads():
    """llvm_kernel.read_prefills: a Select reading a constant tensor the printer duplicates before
    the step keeps that Duplicate; a compare's zero lanes and ones (never read on the CPU) go."""
    from fusedsl.tile.ir import Stmt
    from fusedsl.tile.kernel import Ref
    cmp = Stmt("cmp", "m", ("a",), fs.float32, ("imm", 0.5), cmp_mode="GT", aux=("mask", "ones"))
    sel = Stmt("select", "y", ("m", "a", "c"), fs.float32)
    names = tuple((slot, Ref(t, 0)) for slot, t in
                  (("a", "x"), ("m", "t16"), ("mask", "t8"), ("ones", "k16"), ("y", "out"), ("c", "konst")))
    prefill = ((Ref("t16", 0), 0, 64), (Ref("k16", 0), 1.0, 64), (Ref("konst", 0), -2.0 ** 31, 64))
    assert read_prefills(Step("s", (cmp,), names, prefill=prefill)) == ()
    assert read_prefills(Step("s", (cmp, sel), names, prefill=prefill)) == prefill[2:]


def test_only_the_cpu_row_schedule_takes_integer_reductions():
    """The chip's reduction APIs take half / float: the row kind refuses an int32 sum for a chip
    (at the sum's line), the CPU's row target (its reductions take int32) schedules it."""
    from fusedsl.backend_cpu.cpu_tiling import row_schedule
    from fusedsl.errors import ScheduleError
    from fusedsl.lower.row import schedule_row_kernel
    from fusedsl.targets import get_target
    x = np.zeros((4, 8), np.int32)
    k = fs.fused_kernel(lambda a: fs.sum(a, axis=-1) * 2).compile(x)   # LINE-SUM
    fn, target = k.kernels[0].function, get_target("ascend910b")
    with pytest.raises(ScheduleError, match="sum over int32 rows is not printed as Ascend C yet") as err:
        schedule_row_kernel(fn, target)
    line = next(i for i, text in enumerate(open(__file__), 1) if "LINE-" + "SUM" in text)
    assert f"test_row_llvm.py:{line}" in str(err.value)
    assert row_schedule(fn, target).fold_lanes == 64


def test_integer_row_kernel(native_only):
    x = np.random.default_rng(11).integers(-1000, 1000, size=(5, 77)).astype(np.int32)
    k = fs.fused_kernel(lambda a: (a - fs.max(a, axis=-1, keepdims=True)) * 3 + fs.sum(a > 0, axis=-1, keepdims=True))
    assert [p.kind for p in k.compile(x).kernels] == ["row"]
    np.testing.assert_array_equal(k(x), (x - x.max(-1, keepdims=True)) * 3 + (x > 0).sum(-1, keepdims=True))


def test_max_min_propagate_nan(native_only):
    x = np.random.default_rng(5).standard_normal((3, 37)).astype(np.float32)
    x[1, 35] = np.nan
    for fsr, npr in [(fs.max, np.max), (fs.min, np.min), (fs.sum, np.sum)]:
        np.testing.assert_array_equal(np.isnan(fs.fused_kernel(lambda a: fsr(a, axis=-1))(x)),
                                      np.isnan(npr(x, axis=-1)))


def test_sum_of_empty_rows():
    """Rows of 0 elements: no work for a kernel (the row kind refuses them), numpy's identities."""
    empty = np.zeros((3, 0), np.float32)
    k = fs.fused_kernel(lambda a: fs.sum(a, axis=-1))
    np.testing.assert_array_equal(k(empty), np.zeros(3))
    assert k.compile(empty).executor(k.compile(empty).kernels[0]) == "reference"


def test_rows_bigger_than_ub(native_only):
    """A row of 70000 float32 (273 KB) is larger than any target's UB and than L2 here:
    the phases walk it from memory (x read twice, exp kept in scratch)."""
    x = np.random.default_rng(6).standard_normal((2, 70000)).astype(np.float32) * 4
    close(softmax(x), np_softmax(*f64(x)), np.float32)


def test_large_output_streams_including_misaligned_out(native_only):
    """32 MB+ outputs take the non-temporal path; an out= array that starts mid cache line
    exercises the per-row head peel."""
    x = np.random.default_rng(7).standard_normal((1024, 8192)).astype(np.float32)
    want = np_softmax(*f64(x))
    close(softmax(x), want, np.float32)
    buf = np.empty(x.size + 16, np.float32)
    out = buf[3:3 + x.size].reshape(x.shape)
    softmax(x, out=out)
    close(out, want, np.float32)


@pytest.mark.parametrize("axis", [0, 1, (0, 1), (1, 2), None])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_reductions_over_every_axis(axis, dtype, native_only):
    """Lone reductions over any contiguous range of axes run natively too (column walk)."""
    x = (np.random.default_rng(8).standard_normal((5, 70, 33)) * 20).astype(dtype)
    for name, (fsr, npr) in _RED.items():
        if name == "mean" and dtype == np.int32:
            continue
        for keep in (True, False):
            got = fs.fused_kernel(lambda a: fsr(a, axis=axis, keepdims=keep))(x)
            want = npr(np.float64(x) if dtype != np.int32 else x, axis=axis, keepdims=keep)
            if dtype == np.int32:
                np.testing.assert_array_equal(got, want.astype(np.int64).astype(np.int32) if name == "sum" else want)
            else:
                assert got.shape == want.shape and got.dtype == dtype
                close(got, want, dtype)


def test_non_contiguous_axes_run_natively(native_only):
    """axes (0, 2) are not one range: the split-reductions pass makes them two reductions (over
    axis 2, then axis 0), each an LLVM executor's (tests/test_split_reductions.py)."""
    x = np.random.default_rng(12).standard_normal((4, 5, 6)).astype(np.float32)
    close(fs.fused_kernel(lambda a: fs.sum(a, axis=(0, 2)))(x), np.float64(x).sum((0, 2)), np.float32)


def test_large_column_reductions(native_only):
    x = np.random.default_rng(13).standard_normal((4096, 1030)).astype(np.float32)
    close(fs.fused_kernel(lambda a: fs.max(a, axis=0))(x), x.max(0), np.float32)
    close(fs.fused_kernel(lambda a: fs.mean(a, axis=0))(x), np.float64(x).mean(0), np.float32)


def _record_launches(monkeypatch) -> list:
    """The block counts of kernel_cpu's threaded launches (two host threads assumed), as they happen."""
    import fusedsl.backend_cpu.kernel_cpu as kernel_cpu
    calls = []
    real = kernel_cpu.run_blocks
    monkeypatch.setattr(kernel_cpu, "run_blocks", lambda *a: (calls.append(a[1]), real(*a))[1])
    monkeypatch.setattr(kernel_cpu, "host_threads", lambda: 2)
    return calls


def test_row_kernel_runs_multithreaded(native_only, monkeypatch):
    """Large kernels split their rows into blocks over the host threads (the row kind's kernel
    on llvm_kernel: kernel_cpu launches its blocks)."""
    calls = _record_launches(monkeypatch)
    x = np.random.default_rng(9).standard_normal((4096, 1024)).astype(np.float32)
    close(softmax(x), np_softmax(*f64(x)), np.float32)
    assert calls and calls[0] > 1


def test_symbolic_rows_are_tiled_per_call(native_only):
    """A symbolic number of rows: the row kind's kernel on llvm_kernel, tiled for each call's sizes
    (compiler._row_tiling); a symbolic row length too, float sums with compensated folds
    (cpu_tiling.long_row_sums: a fold's lanes add an unbounded number of elements)."""
    k = softmax.compile(fs.spec(("M", 64), "float32"))
    assert isinstance(k._row_kernel(k.kernels[0]), ScheduleCpu)
    for rows in (3, 700, 1):
        x = np.random.default_rng(rows).standard_normal((rows, 64)).astype(np.float32)
        close(k(x), np_softmax(*f64(x)), np.float32)
    peak = fs.fused_kernel(lambda a: a - fs.max(a, axis=-1, keepdims=True))
    k = peak.compile(fs.spec((4, "C"), "float32"))
    assert isinstance(k._row_kernel(k.kernels[0]), ScheduleCpu)
    for cols in (5, 3000):
        x = np.random.default_rng(cols).standard_normal((4, cols)).astype(np.float32)
        np.testing.assert_array_equal(k(x), x - x.max(-1, keepdims=True))
    k = fs.fused_kernel(lambda a: fs.sum(a * a, axis=-1)).compile(fs.spec((4, "C"), "float32"))
    assert isinstance(k._row_kernel(k.kernels[0]), ScheduleCpu)
    for cols in (100, 40000):
        x = np.random.default_rng(4).standard_normal((4, cols)).astype(np.float32)
        close(k(x), (np.float64(x) ** 2).sum(-1), np.float32)
    k = softmax.compile(fs.spec((4, "C"), "float32"))   # long float sums with row outputs: compensated too
    assert isinstance(k._row_kernel(k.kernels[0]), ScheduleCpu)
    x = np.random.default_rng(4).standard_normal((4, 100)).astype(np.float32)
    close(k(x), np_softmax(*f64(x)), np.float32)


@pytest.mark.parametrize("multi_pass", [False, True])
def test_long_row_sums_are_compensated_on_llvm_kernel(multi_pass, native_only, monkeypatch):
    """Float sums over rows longer than cpu_tiling.ROW_SUM_MAX run on llvm_kernel with folds whose
    blocks of passes are added with Kahan's compensation (lower_kernel(compensated_folds=True)):
    2**18 copies of 0.1 within 1.5e-7 of float64 (a plain fold of 1024 lanes: 5e-7, 256 adds a
    lane), also when the row is walked in chunks (a UB smaller than the row: the multi-pass plan,
    the compensation carried from chunk to chunk); a sum of what steps compute compensated in the
    steps' loop; an inf stays inf (no inf - inf from the compensation), inf and -inf give NaN."""
    from fusedsl.backend_cpu import cpu_tiling
    if multi_pass:
        monkeypatch.setattr(cpu_tiling, "LONG_ROW_UB", 1 << 20)
    x = np.full((2, 2 ** 18), 0.1, np.float32)
    x[1] = np.random.default_rng(1).random(2 ** 18).astype(np.float32)
    for red, scale in ((fs.sum, 1.0), (fs.mean, 2.0 ** -18)):
        k = fs.fused_kernel(lambda a: red(a, axis=-1)).compile(x)
        row = k._row_kernel(k.kernels[0])
        assert isinstance(row, ScheduleCpu) and (row.sched.passes is not None) == multi_pass
        want = np.float64(x).sum(-1) * scale
        np.testing.assert_allclose(k(x), want, rtol=1.5e-7, atol=0)
    k = fs.fused_kernel(lambda a: fs.sum(a, axis=-1)).compile(x)
    y = x.copy()
    y[0, 5], y[1, 100000], y[1, 200000] = np.inf, np.inf, -np.inf
    np.testing.assert_array_equal(k(y), [np.inf, np.nan])
    if not multi_pass:   # the sum of squares folded in the loop of the steps computing them
        z = np.random.default_rng(2).standard_normal((2, 40000)).astype(np.float32) * 4
        k = fs.fused_kernel(lambda a: fs.sum(fs.exp(a * 0.25) * a, axis=-1)).compile(z)
        assert '"sblock' in k._row_kernel(k.kernels[0]).kernel.ir   # llvm_kernel._fold_loop's blocks
        np.testing.assert_allclose(k(z), (np.exp(np.float64(z) * 0.25) * z).sum(-1), rtol=2e-6)


def test_exp_weighs_a_launch_onto_the_threads(native_only, monkeypatch):
    """An exp costs about 16 bytes of traffic per element (kernel_cpu.TRANSCENDENTAL_WEIGHT, as the
    per-kind executors weighed it): a 4 MB softmax (8 MB moved, 24 MB of work) runs on two threads,
    a 4 MB layer_norm (8 MB, no exp) on the caller's."""
    calls = _record_launches(monkeypatch)
    x = np.random.default_rng(10).standard_normal((1024, 1024)).astype(np.float32)
    close(softmax(x), np_softmax(*f64(x)), np.float32)
    assert calls and calls[0] > 1
    calls.clear()
    m = np.float64(x).mean(-1, keepdims=True)
    want = (x - m) / np.sqrt(((np.float64(x) - m) ** 2).mean(-1, keepdims=True) + 1e-5)
    close(fs.fused_kernel(lambda a: fs.layer_norm(a))(x), want, np.float32)
    assert not calls


# ---- differential fuzz ------------------------------------------------------------------------
@fuzz_settings(0.03)
@given(rows=st.integers(1, 6), cols=st.sampled_from([1, 2, 7, 15, 16, 17, 33, 64, 100]),
       red=st.sampled_from(sorted(_RED)), red2=st.sampled_from(sorted(_RED)), keep=st.booleans(),
       dtype=st.sampled_from(["float32", "float16", "bfloat16"]), seed=st.integers(0, 2**16))
def test_fuzz_two_phase_row_kernels(rows, cols, red, red2, keep, dtype, seed):
    """x -> r1 = red(f(x)) -> r2 = red2(g(x, r1)) -> h(x, r1, r2): three phases per row."""
    (f1, n1), (f2, n2) = _RED[red], _RED[red2]
    npdt = {"float32": np.float32, "float16": np.float16, "bfloat16": fs.bfloat16.np}[dtype]

    def body(x, b):
        r1 = f1(fs.abs(x) + b, axis=-1, keepdims=True)
        d = x - r1
        r2 = f2(d * d, axis=-1, keepdims=True)
        return d * fs.rsqrt(r2 + 1.0) if keep else f2(d * d, axis=-1) * 0.5

    body.__name__ = f"fz_{red}_{red2}_{int(keep)}"
    k = fs.fused_kernel(body)
    rng = np.random.default_rng(seed)
    x, b = rng.standard_normal((rows, cols)).astype(npdt), rng.standard_normal(cols).astype(npdt)
    # the reference interpreter rounds exactly as the kernels do (once per op): compare to it
    close(k(x, b), reference(k, x, b), npdt)


def test_repeated_calls_never_alias_live_results(native_only):
    """The remembered argument block and the output pool: live results are never reused,
    and a new input (or the same array changed in place) gives new results."""
    e = lambda v: np_softmax(np.float64(v))   # noqa: E731
    x = np.random.default_rng(14).standard_normal((8, 64)).astype(np.float32)
    first = softmax(x)
    kept = [softmax(x) for _ in range(6)]
    assert all(not np.shares_memory(first, k) for k in kept)
    old = x.copy()
    x[:] = 0
    close(softmax(x), np.full(x.shape, 1 / 64), np.float32)
    close(first, e(old), np.float32)
    for k in kept:
        close(k, e(old), np.float32)


@fuzz_settings(0.03)
@given(shape=st.lists(st.integers(1, 9), min_size=1, max_size=3), red=st.sampled_from(sorted(_RED)),
       keep=st.booleans(), data=st.data())
def test_fuzz_reductions_over_axis_ranges(shape, red, keep, data):
    """Any contiguous range of axes (or all of them), against numpy."""
    rank = len(shape)
    first = data.draw(st.integers(0, rank - 1))
    last = data.draw(st.integers(first, rank - 1))
    axis = None if (first, last) == (0, rank - 1) and data.draw(st.booleans()) else tuple(range(first, last + 1))
    fsr, npr = _RED[red]
    x = np.random.default_rng(first * 7 + last).standard_normal(shape).astype(np.float32)
    got = fs.fused_kernel(lambda a: fsr(a, axis=axis, keepdims=keep))(x)
    close(got, npr(np.float64(x), axis=axis, keepdims=keep), np.float32)


def test_several_outputs_and_broadcast_parameters(native_only):
    """Row and per-row outputs of one kernel; a per-row parameter [A,B,1], a size-1 parameter
    and a parameter broadcast over a middle axis [A,1,C] (addressed by its own strides)."""
    @fs.fused_kernel
    def multi(x, rb, s, g):
        m = fs.max(x, axis=-1, keepdims=True)
        e = fs.exp(x - m + rb * s)
        return (e / fs.sum(e, axis=-1, keepdims=True), m, fs.sum(e * g, axis=-1),
                fs.mean(x, axis=-1, keepdims=True) * 2.0)

    rng = np.random.default_rng(15)
    x, rb = rng.standard_normal((3, 4, 37)).astype(np.float32), rng.standard_normal((3, 4, 1)).astype(np.float32)
    s, g = np.array([0.5], np.float32), rng.standard_normal((3, 1, 37)).astype(np.float32)
    m = x.max(-1, keepdims=True)
    e = np.exp(np.float64(x) - m + rb * s)
    want = (e / e.sum(-1, keepdims=True), m, (e * g).sum(-1), np.float64(x).mean(-1, keepdims=True) * 2)
    for got, w in zip(multi(x, rb, s, g), want):
        assert got.shape == w.shape
        close(got, w, np.float32)

"""The one LLVM lowering of the loop-level tile IR (backend_cpu/llvm_kernel.py, run by
backend_cpu/kernel_cpu.py) against its executable spec, kernel_interp.run_kernel, and numpy.

Every kind (vector, view, transpose and its gather mode, column, row with the multi-pass plan of
rows bigger than UB, cube with elementwise and row epilogues, conv, attention) is built through
fs.fused_kernel, mostly drawn by hypothesis (odd sizes, tails, size 1, broadcasts, float32 /
float16 / int32 / int8 where the kind takes them, the chips' tilings), lowered to its TileKernel and
run by both executors: the results are bit-identical, except kernels with exp / ln (mathlib's
polynomials against numpy's) and products numpy's matmul runs as gemv / dot, which agree within a
few ulps; both agree with numpy within the tolerances the kinds' own tests use."""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import fuzz_settings

import fusedsl as fs
from fusedsl.backend_cpu import kernel_cpu, llvm_kernel
from fusedsl.backend_cpu.kernel_cpu import TileKernelCpu
from fusedsl.backend_cpu.kernel_interp import run_kernel
from fusedsl.backend_cpu.llvm_kernel import LoweringError, _Lowering, lower_kernel
from fusedsl.backend_cpu.cpu_tiling import cpu_words, row_schedule, row_tiling, vector_tiling
from fusedsl.lower.kinds import kernel_ir, kernel_words
from fusedsl.lower.vector import VectorSchedule
from fusedsl.tile.kernel import Step, Vec, print_kernel
from fusedsl.tile.parse import parse_kernel
from fusedsl.tile.verify import TileVerifyError

TARGETS = ["ascend910b", "ascend310p", "ascend910"]


def _transcendental(k) -> bool:
    """Whether a kernel computes exp or ln (numpy's there, mathlib's polynomial here)."""
    def walk(body):
        for node in body:
            yield node
            for attr in ("body", "then", "orelse"):
                yield from walk(getattr(node, attr, ()))
    for st_ in k.stages:
        for node in walk(st_.body):
            if isinstance(node, Vec) and node.api == "Exp":
                return True
            if isinstance(node, Step) and any(s.op in ("exp", "ln") for s in node.stmts):
                return True
    return False


def _approximate(k) -> bool:
    """exp / ln (numpy's there, mathlib's polynomial here), or a product: numpy's matmul takes its
    gemv / dot path for a block of one row or column, where the lowering always calls sgemm."""
    return bool(k.matmuls) or _transcendental(k)


def _cpu_words(comp, plan) -> list[int]:
    """The words `k(*arrays)` runs the kernel with on the CPU (backend_cpu/cpu_tiling.py)."""
    if isinstance(plan.lowered, VectorSchedule):   # a view kernel's: cpu_tiling.view_tiling
        return kernel_words(plan.lowered, vector_tiling(plan.lowered, {}, comp.target))
    return cpu_words(plan.lowered, plan.tiling)


def _run_both(comp, args: dict):
    """The program's one kernel, from its TileKernel text, by the interpreter and by LLVM, with the
    chip's tiling words and with the CPU's; both executors' outputs, after asserting they are
    bit-identical (or, when the kernel computes exp / ln, within a few ulps of the largest output: an
    ulp of exp survives a later cancellation)."""
    (plan,) = comp.kernels
    text = print_kernel(kernel_ir(plan.lowered))
    kernel = parse_kernel(text)
    inputs = [args[p.value.name] for p in plan.function.params]
    shapes = [(tuple(int(d) for d in r.type.shape), r.type.dtype.np) for r in plan.function.results]
    chip = kernel_words(plan.lowered, plan.tiling)
    for words in [chip] + ([] if _cpu_words(comp, plan) == chip else [_cpu_words(comp, plan)]):
        spec = [np.zeros(s, d) for s, d in shapes]
        got = [np.full(s, 7, d) for s, d in shapes]   # not zeroed: the kernel writes every element
        run_kernel(kernel, inputs, spec, words)
        TileKernelCpu(kernel).run(inputs, got, words)
        for a, b in zip(spec, got):
            if _approximate(kernel) and a.dtype.kind == "f":   # integer products are exact
                eps = float(np.finfo(a.dtype).eps)
                scale = float(np.nanmax(np.abs(a.astype(np.float64)), initial=1.0))
                np.testing.assert_allclose(b.astype(np.float64), a.astype(np.float64), rtol=4 * eps,
                                           atol=4 * eps * scale)
            else:
                assert a.tobytes() == b.tobytes(), f"not bit-identical to run_kernel (words {words}):\n{text}"
    return got


def _close(got, want, dtype, tol32=2e-5, tol16=4e-3):
    want = np.asarray(want)
    if np.dtype(dtype).kind in "iu":
        np.testing.assert_array_equal(got, want.astype(got.dtype))
        return
    tol = tol32 if np.dtype(dtype) == np.float32 else tol16
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


# ---- vector kernels ---------------------------------------------------------------------------------
VECTOR = {   # name -> (function, shapes as functions of (r, c, b), numpy)
    "row": (lambda a, x: fs.relu(fs.abs(a) + x) * 2, lambda r, c, b: [(c,), (r, c)],
            lambda a, x: np.maximum(np.abs(a) + x, 0) * 2),
    "general": (lambda a, x: a * x - a, lambda r, c, b: [(r, 1, c), (r, b, c)], lambda a, x: a * x - a),
    "column": (lambda a, x: fs.maximum(a, x) + 1, lambda r, c, b: [(r, b, 1), (r, b, c)],
               lambda a, x: np.maximum(a, x) + 1),
    "one_element": (lambda a, x: a * x + x, lambda r, c, b: [(1,), (r, c)], lambda a, x: a * x + x),
    "where": (lambda a, x: fs.where(a > x, a, x * 2), lambda r, c, b: [(r, c), (r, c)],
              lambda a, x: np.where(a > x, a, x * 2)),
}


# Vector kernels against the interpreter bit for bit, on every target and dtype: test_backend_cpu.py
# (fixed row / general / column / one-element / where patterns) and test_backend_cpu_fuzz.py.


def test_runtime_scalars_exp_and_hoisted_rows():
    """A runtime scalar (a typed field into a typed member), a hoisted prologue (ops on a broadcast
    row and the scalar, once per core) and exp (mathlib's polynomial: within ulps of numpy's)."""
    x = np.linspace(-2, 2, 7 * 45, dtype=np.float32).reshape(7, 45)
    row = np.linspace(0, 1, 45, dtype=np.float32)
    comp = fs.fused_kernel(lambda x, row, s: x * fs.exp(row * s) + s).compile(x, row, fs.scalar("s"))
    (got,) = _run_both(comp, {"x": x, "row": row, "s": 0.75})
    np.testing.assert_allclose(got, x * np.exp(row * np.float32(0.75)) + np.float32(0.75), rtol=2e-6, atol=1e-6)


# ---- view kernels -----------------------------------------------------------------------------------
@fuzz_settings(scale=0.05)
@given(r=st.integers(1, 12), c=st.integers(1, 200), cut=st.data(), kind=st.sampled_from(["slice", "concat", "take",
                                                                                            "broadcast"]),
       dtype=st.sampled_from([np.float32, np.float16, np.int32]))
def test_view_kernels_match_the_interpreter_bit_for_bit(r, c, cut, kind, dtype):
    """Slices (odd offsets, one row or column), concatenations along either axis, takes with
    negative indices, and a broadcast slice added to a full operand."""
    g = np.random.default_rng(r * 1000 + c)
    x = (g.standard_normal((r, c)) * 4).astype(dtype)
    y = (g.standard_normal((r, max(1, c // 3))) * 4).astype(dtype)
    if kind == "slice":
        r0, c0 = cut.draw(st.integers(0, r - 1)), cut.draw(st.integers(0, c - 1))
        r1, c1 = cut.draw(st.integers(r0 + 1, r)), cut.draw(st.integers(c0 + 1, c))
        f, args, want = (lambda x: x[r0:r1, c0:c1] * 2), {"x": x}, x[r0:r1, c0:c1] * 2
    elif kind == "concat":
        axis = cut.draw(st.integers(0, 1))
        other = y if axis == 1 else (g.standard_normal((3, c)) * 4).astype(dtype)
        f, args = (lambda x, y: fs.concatenate([x, y], axis=axis)), {"x": x, "y": other}
        want = np.concatenate([x, other], axis=axis)
    elif kind == "take":
        idx = np.array(cut.draw(st.lists(st.integers(-r, r - 1), min_size=1, max_size=9)), np.int32)
        bias = (g.standard_normal(c) * 4).astype(dtype)
        f, args = (lambda x, i, y: fs.take(x, i, axis=0) + y), {"x": x, "i": idx, "y": bias}
        want = np.take(x, idx, axis=0) + bias
    else:
        c0 = cut.draw(st.integers(0, c - 1))
        part = x[:, c0:]
        other = (g.standard_normal((3, r, c - c0)) * 4).astype(dtype)
        f, args, want = (lambda x, y: x[:, c0:] + y), {"x": x, "y": other}, part + other
    comp = fs.fused_kernel(f).compile(*args.values())
    if len(comp.kernels) != 1 or comp.kernels[0].lowered is None:
        return   # e.g. an empty result or a slice that is the whole array: no view kernel
    assert comp.executor(comp.kernels[0]) in ("view", "vector")   # a whole-array slice is elementwise
    (got,) = _run_both(comp, args)
    _close(got, want, dtype, 1e-6, 2e-3)


WIDE_VIEWS = {   # name -> (function, argument shapes): rows wide enough for one-row tiles on the CPU's words
    "concat": (lambda x, y: fs.concatenate([x, y], axis=1), [(9, 400), (9, 70)]),
    "broadcast_row": (lambda x: fs.broadcast_to(x[2:3, 5:305], (6, 300)), [(8, 400)]),
    "overlapping_rows": (lambda x: x[:, 10:390] + x[:, :380], [(8, 400)]),
    "whole_rows": (lambda x: x[2:7] * 3, [(8, 400)]),
    "take": (lambda x, i: fs.take(x, i, axis=0) - 1, [(8, 400), None]),
}


@pytest.mark.parametrize("name", sorted(WIDE_VIEWS))
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_view_kernels_on_the_cpu_words_read_and_write_rows_in_place(name, dtype):
    """The CPU's view tiling (cpu_tiling.view_tiling: one row per tile, so every copy is one run)
    and the chip's (tiles of several rows: a broadcast row read once and copied in UB, rows that
    overlap copied one by one) give the interpreter's bits: the sources' rows read in place (a
    guarded VECIN buffer moves home before a UB copy writes it), the output rows computed in GM."""
    f, shapes = WIDE_VIEWS[name]
    g = np.random.default_rng(len(name))
    args = [np.array([3, -1, 0, 7, 3], np.int32) if s is None else (g.standard_normal(s) * 4).astype(dtype)
            for s in shapes]
    comp = fs.fused_kernel(f).compile(*args)
    (plan,) = comp.kernels
    assert comp.executor(plan) in ("view", "vector")
    cpu = _cpu_words(comp, plan)
    if plan.lowered.views is not None and name != "whole_rows":
        assert cpu != kernel_words(plan.lowered, plan.tiling)   # one row per tile
    (got,) = _run_both(comp, dict(zip(f.__code__.co_varnames, args)))
    np.testing.assert_array_equal(comp(*args), got)


# ---- transposes and stepped slices ------------------------------------------------------------------
@fuzz_settings(scale=0.05)
@given(shape=st.lists(st.integers(1, 40), min_size=2, max_size=4), data=st.data(),
       dtype=st.sampled_from([np.float32, np.float16, np.int8, np.int32]), target=st.sampled_from(TARGETS))
def test_transpose_kernels_match_the_interpreter_bit_for_bit(shape, data, dtype, target):
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    x = (np.arange(int(np.prod(shape))) % 120).reshape(shape).astype(dtype)
    comp = fs.fused_kernel(lambda v: fs.transpose(v, perm), target=target).compile(x)
    if not comp.kernels or comp.kernels[0].kernel_kind != "transpose":
        return   # the identity, or a permutation of size-1 axes only: a view, no kernel
    (got,) = _run_both(comp, {"v": x})
    np.testing.assert_array_equal(got, x.transpose(perm))


@fuzz_settings(scale=0.03)
@given(shape=st.lists(st.integers(1, 30), min_size=1, max_size=3), data=st.data())
def test_stepped_slices_match_the_interpreter_bit_for_bit(shape, data):
    idx = [slice(data.draw(st.integers(0, d - 1)), None, data.draw(st.integers(1, 3))) for d in shape]
    idx[-1] = slice(idx[-1].start, None, data.draw(st.integers(2, 4)))
    x = np.arange(int(np.prod(shape))).reshape(shape).astype(np.float32)
    comp = fs.fused_kernel(lambda v: v[tuple(idx)]).compile(x)
    if not comp.kernels or comp.kernels[0].kernel_kind != "transpose":
        return
    (got,) = _run_both(comp, {"v": x})
    np.testing.assert_array_equal(got, x[tuple(idx)])


@pytest.mark.parametrize("case", ["pick2", "pick2_tail", "pick3", "rows_copied", "rows_copied_odd"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8])
def test_transpose_kind_copies_and_picks_match_the_interpreter(case, dtype):
    """The transpose kind's other loops on llvm_kernel, GM to GM: every second element picked with
    vectors (rows long enough for whole vectors and a tail), another step element by element, and
    a permute that keeps the last axis (UB copies in chunks within UB rows, row tails moved)."""
    x = (np.arange(5 * 7 * 70) % 251 - 125).reshape(5, 7, 70).astype(dtype)
    f = {"pick2": lambda v: v[:, 1:, ::2], "pick2_tail": lambda v: v[1:, :, 3::2], "pick3": lambda v: v[:, :, 1::3],
         "rows_copied": lambda v: fs.transpose(v, (1, 0, 2)),
         "rows_copied_odd": lambda v: fs.transpose(v[:, :, 3:68], (1, 0, 2))}[case]
    want = {"pick2": x[:, 1:, ::2], "pick2_tail": x[1:, :, 3::2], "pick3": x[:, :, 1::3],
            "rows_copied": np.transpose(x, (1, 0, 2)), "rows_copied_odd": np.transpose(x[:, :, 3:68], (1, 0, 2))}[case]
    comp = fs.fused_kernel(f).compile(x)
    plan = comp.kernels[-1]
    assert plan.kernel_kind == "transpose" and comp.executor(plan) == "transpose"
    if len(comp.kernels) == 1:
        (got,) = _run_both(comp, {"v": x})
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(comp(x), want)


# ---- column kernels ---------------------------------------------------------------------------------
COLUMN = {
    "sum": (lambda x: fs.sum(x * x, 1), lambda x: (x * x).sum(1)),
    "mean": (lambda x: fs.mean(x, (0, 1)) * 2.0, lambda x: x.mean((0, 1)) * 2),
    "max": (lambda x: fs.max(x, 1) + 1.0, lambda x: x.max(1) + 1),
    "min": (lambda x: fs.min(x - 1.0, 1), lambda x: (x - 1).min(1)),
    "var": (lambda x: fs.var(x, 1), lambda x: x.var(1)),
}


@fuzz_settings(scale=0.05)
@given(name=st.sampled_from(sorted(COLUMN)), a=st.integers(1, 3), k=st.integers(1, 300), b=st.integers(1, 90),
       dtype=st.sampled_from([np.float32, np.float16]), target=st.sampled_from(["ascend910b", "ascend910"]))
def test_column_kernels_match_the_interpreter_bit_for_bit(name, a, k, b, dtype, target):
    f, ref = COLUMN[name]
    g = np.random.default_rng(a * 10000 + k * 100 + b)
    x = g.standard_normal((a, k, b)).astype(dtype)
    if name == "max" and x.size > 3:
        x.reshape(-1)[3] = np.nan   # max propagates NaN
    comp = fs.fused_kernel(f, target=target).compile(x)
    if comp.kernels[0].kernel_kind != "column" or comp.kernels[0].lowered is None:
        return
    (got,) = _run_both(comp, {"x": x})
    want = ref(x.astype(np.float32)).astype(dtype)
    _close(got, want, dtype, 2e-5, 2e-3)


def test_column_kernels_on_the_cpu_words_walk_k_in_chunks():
    """The CPU's column tiling (one tile of every column, K in chunks of ~256 KB: 5 here) against
    the interpreter on the same words, a sum and a var (two walks: resident when K fits one DMA)."""
    x = np.random.default_rng(3).standard_normal((1, 1500, 200)).astype(np.float32)
    for f, ref in ((lambda x: fs.sum(x * x, 1) + 1.0, lambda x: (x * x).sum(1) + 1),
                   (lambda x: fs.var(x, 1), lambda x: x.var(1))):
        comp = fs.fused_kernel(f).compile(x)
        (plan,) = comp.kernels
        assert plan.kernel_kind == "column"
        words = _cpu_words(comp, plan)
        assert words[3] == 200 and (words[4] == 1500 or 1500 // words[4] >= 4)   # bn = B; kt
        (got,) = _run_both(comp, {"x": x})
        _close(got, ref(x), np.float32, 2e-5)
        np.testing.assert_allclose(comp(x), ref(x), rtol=2e-5, atol=2e-5)


def test_column_host_schedule_matches_the_interpreter_and_numpy():
    """What the chip's column schedule refuses runs on the kind's host schedule
    (cpu_tiling.column_schedule): integer and bool reductions in int32 accumulators (sums wrap as
    numpy's int64 sum cast to int32; 8-bit and bool max / min narrow back), symbolic sizes and no
    rows of K (numpy's identities), its strides tiling words -- so one compiled kernel per function
    runs every shape.  The interpreter and LLVM agree bit for bit on the CPU's words, and numpy; a
    walk with elementwise ops runs strip by strip of columns (llvm_kernel.column_walk)."""
    g = np.random.default_rng(12)
    cases = [   # (function, numpy, compile spec, arrays)
        (lambda x: fs.sum(x * 3, 1) + 7, lambda x: (x * 3).sum(1, dtype=np.int64).astype(np.int32) + 7,
         fs.spec(("A", "K", "B"), "int32"),
         [g.integers(-2 ** 31, 2 ** 31, s).astype(np.int32) for s in ((2, 300, 70), (3, 1, 1), (2, 0, 5))]),
        (lambda x: (fs.max(x, 0), fs.min(x, 0), fs.sum(x, 0)), lambda x: (x.max(0), x.min(0), x.sum(0, np.int32)),
         None, [g.integers(-128, 128, (40, 33)).astype(np.int8)]),
        (lambda x: (fs.sum(x > 0.5, 0), fs.all(x > -1.5, 0)), lambda x: ((x > 0.5).sum(0, np.int32), (x > -1.5).all(0)),
         None, [g.standard_normal((50, 3, 21)).astype(np.float32)]),
        (lambda x: fs.mean(x, 0) * 2.0, lambda x: (x.sum(0, np.float64) / len(x)).astype(np.float32) * 2,
         fs.spec(("N", 5), "float32"), [g.standard_normal((9, 5)).astype(np.float32), np.ones((0, 5), np.float32)]),
    ]
    for f, ref, spec, arrays in cases:
        comp = fs.fused_kernel(f).compile(spec if spec is not None else arrays[0])
        (plan,) = comp.kernels
        for x in arrays:
            with np.errstate(invalid="ignore"):
                want = ref(x)
            want = want if isinstance(want, tuple) else (want,)
            got = comp(x)
            got = got if isinstance(got, tuple) else (got,)
            cpu = comp._row_kernel(plan)
            assert isinstance(cpu, kernel_cpu.ScheduleCpu) and cpu.sched.host and comp.executor(plan) == "column"
            sizes = dict(zip(spec.shape, x.shape)) if spec is not None else {}
            words = cpu.words(cpu.sched.tiling(sizes, cpu.sched.target))
            spec_out = [np.zeros(w.shape, w.dtype) for w in want]
            run_kernel(cpu.kernel.k, [x], spec_out, words)
            for a, b, w in zip(spec_out, got, want):
                assert a.tobytes() == b.tobytes() and b.dtype == w.dtype
                _close(b, w, b.dtype, 1e-6)
        # the walk of Steps and folds strip by strip of columns (llvm_kernel.column_walk)
        assert ("cwalk.head" in cpu.kernel.ir) == any(ph.elem_ops for ph in cpu.sched.plan.phases)


# ---- row kernels ------------------------------------------------------------------------------------
ROW = {   # name -> (function, shapes of its arguments as functions of (r, c))
    "softmax": (lambda x, y: fs.softmax(x + y), lambda r, c: [(r, c), (1, c)]),
    "layer_norm": (lambda x, y: fs.gelu(fs.layer_norm(x, y, y)), lambda r, c: [(r, c), (c,)]),
    "rms_perrow": (lambda x, y: fs.rms_norm(x) * y, lambda r, c: [(r, c), (r, 1)]),
    "sum_and_max": (lambda x, y: (fs.sum(x * y, axis=-1), x - fs.max(x, axis=-1, keepdims=True)),
                    lambda r, c: [(r, c), (r, c)]),
    "min_scalar": (lambda x, y: fs.min(x * y, axis=-1, keepdims=True) + y, lambda r, c: [(r, c), (1,)]),
    "mean_general": (lambda x, y: fs.mean(x, axis=-1, keepdims=True) * y, lambda r, c: [(2, r, c), (2, 1, c)]),
}


def _row_run(comp, args):
    (plan,) = comp.kernels
    assert plan.kernel_kind == "row"
    by_name = dict(zip(["x", "y"], args))
    got = _run_both_multi(comp, by_name)
    want = comp(*args)
    return got, (want if isinstance(want, tuple) else (want,))


def _run_both_multi(comp, by_name):
    return _run_both(comp, by_name)


@fuzz_settings(scale=0.05)
@given(name=st.sampled_from(sorted(ROW)), r=st.integers(1, 6), c=st.integers(1, 300),
       dtype=st.sampled_from(["float32", "float16"]), target=st.sampled_from(TARGETS))
def test_row_kernels_match_the_interpreter(name, r, c, dtype, target):
    """Softmax, norms and lone reductions (per-row, one-value and shared-row parameters, per-row
    outputs) on the three chips' plans (910A folds its lanes on the scalar unit)."""
    f, shapes = ROW[name]
    g = np.random.default_rng(r * 1000 + c)
    args = [(g.standard_normal(s) * 2 + 0.5).astype(dtype) for s in shapes(r, c)]
    comp = fs.fused_kernel(f, target=target).compile(*args)
    got, want = _row_run(comp, args)
    for a, b in zip(got, want):
        _close(a, b, dtype)


@pytest.mark.parametrize("name", ["softmax", "layer_norm", "rms_perrow"])
def test_rows_bigger_than_ub_match_the_interpreter(name):
    """The multi-pass plan (a 5 % UB budget makes 3000 float32 elements too many for one pass):
    the online softmax, the shifted moments of layer_norm, chunks of a row in turn."""
    f, shapes = ROW[name]
    g = np.random.default_rng(3)
    args = [(g.standard_normal(s) * 2 + 0.5).astype(np.float32) for s in shapes(3, 3000)]
    comp = fs.fused_kernel(f, single_kernel=True, ub_headroom=0.05).compile(*args)
    assert "stage Passes:" in comp.kernels[0].tile_ir
    got, want = _row_run(comp, args)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=3e-5, atol=3e-6)


@fuzz_settings(scale=0.05)
@given(name=st.sampled_from(sorted(ROW)), r=st.integers(1, 6), c=st.integers(1, 300),
       dtype=st.sampled_from(["float32", "float16"]), target=st.sampled_from(TARGETS))
def test_row_kernels_on_the_cpu_schedule_match_the_interpreter(name, r, c, dtype, target):
    """What `k(*arrays)` runs for a row kernel: the row kind's kernel scheduled for the CPU
    (cpu_tiling.row_schedule: 64-lane folds, 1 MB of UB) on its words; a fold right after the steps
    that compute its operand runs in their loop (llvm_kernel._fold_loop) with the interpreter's bits."""
    f, shapes = ROW[name]
    g = np.random.default_rng(r * 1000 + c)
    args = [(g.standard_normal(s) * 2 + 0.5).astype(dtype) for s in shapes(r, c)]
    comp = fs.fused_kernel(f, target=target).compile(*args)
    (plan,) = comp.kernels
    sched = row_schedule(plan.function, comp.target)
    kernel = parse_kernel(print_kernel(kernel_ir(sched)))
    words = row_tiling(sched, {}, comp.target).words
    by_name = dict(zip(["x", "y"], args))
    inputs = [by_name[p.value.name] for p in plan.function.params]
    shapes_out = [(tuple(int(d) for d in v.type.shape), v.type.dtype.np) for v in plan.function.results]
    spec = [np.zeros(sh, d) for sh, d in shapes_out]
    got = [np.full(sh, 7, d) for sh, d in shapes_out]
    run_kernel(kernel, inputs, spec, words)
    TileKernelCpu(kernel).run(inputs, got, words)
    for a, b in zip(spec, got):
        if _transcendental(kernel):
            eps = float(np.finfo(a.dtype).eps)
            scale = float(np.nanmax(np.abs(a.astype(np.float64)), initial=1.0))
            np.testing.assert_allclose(b.astype(np.float64), a.astype(np.float64), rtol=4 * eps, atol=4 * eps * scale)
        else:
            assert a.tobytes() == b.tobytes()
    want = comp(*args)
    for a, b in zip(got, want if isinstance(want, tuple) else (want,)):
        _close(a, b, dtype)


@pytest.mark.parametrize("name, fused", [("softmax", 2), ("layer_norm", 1), ("sum_and_max", 1), ("min_scalar", 1),
                                         ("mean_general", 0)])
def test_a_fold_after_its_steps_runs_in_their_loop(name, fused, monkeypatch, tmp_path):
    """A fold of a value the steps right before it compute (softmax's max of x + y and sum of exp,
    layer_norm's sum of squares, sums and minima of x * y) runs in their loop, its operand, read by
    the fold only, never stored; bit for bit the separate fold's result (each of the W lanes folds
    its elements in the same order).  A fold of an input (the mean of x) runs on its own."""
    f, shapes = ROW[name]
    g = np.random.default_rng(5)
    args = [(g.standard_normal(s) * 2 + 0.5).astype(np.float32) for s in shapes(5, 1000)]
    comp = fs.fused_kernel(f).compile(*args)
    (plan,) = comp.kernels
    sched = row_schedule(plan.function, comp.target)
    kernel = kernel_ir(sched)
    words = row_tiling(sched, {}, comp.target).words
    calls = []
    real = _Lowering._fold_loop
    monkeypatch.setattr(_Lowering, "_fold_loop", lambda self, *a: (calls.append(1), real(self, *a))[1])
    # lowered here, twice: not the IR an earlier test (or the first run) left in memory or on disk
    monkeypatch.setenv("FUSEDSL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(kernel_cpu, "_lowered", {})
    by_name = dict(zip(["x", "y"], args))
    inputs = [by_name[p.value.name] for p in plan.function.params]
    shapes_out = [(tuple(int(d) for d in v.type.shape), v.type.dtype.np) for v in plan.function.results]
    fused_out = [np.full(sh, 7, d) for sh, d in shapes_out]
    TileKernelCpu(kernel, use_disk_cache=False).run(inputs, fused_out, words)
    assert len(calls) == fused
    monkeypatch.setattr(_Lowering, "MAX_STEP_FOLD", 0)   # every fold on its own
    monkeypatch.setattr(kernel_cpu, "_lowered", {})
    monkeypatch.setenv("FUSEDSL_CACHE_DIR", str(tmp_path / "alone"))
    alone = [np.full(sh, 7, d) for sh, d in shapes_out]
    TileKernelCpu(kernel, use_disk_cache=False).run(inputs, alone, words)
    assert len(calls) == fused
    for a, b in zip(fused_out, alone):
        assert a.tobytes() == b.tobytes()


# ---- the runner's contract ----------------------------------------------------------------------------
TWO_HELD = """kernel @two kind vector
note "two tensors of one queue held at once: two buffers"
field n
field totalTiles
field tilesPerCore
gm x float32 in 0
gm y float32 out 0
queue q_x VECIN depth 2 float32 elems t.n
stage Tile(tile):
  alloc a = q_x
  alloc b = q_x
  copyin a <- x[tile * 2 * t.n] rows 1 ; cols t.n ; gm t.n ; ub t.n
  copyin b <- x[tile * 2 * t.n + t.n] rows 1 ; cols t.n ; gm t.n ; ub t.n
  enque q_x a
  enque q_x b
  deque c = q_x
  deque d = q_x
  vec Sub c <- d, c count t.n
  copyout y[tile * t.n] <- c rows 1 ; cols t.n ; gm t.n ; ub t.n
  free q_x c
  free q_x d
words 37 3 2"""


def test_a_queue_holding_two_tensors_uses_two_buffers():
    """The queue protocol is the interpreter's (AllocTensor takes the first free buffer, DeQue the
    first queued one): with one buffer per queue the second copy would overwrite the first."""
    k = parse_kernel(TWO_HELD)
    x = np.random.default_rng(0).standard_normal(6 * 37).astype(np.float32)
    spec, got = np.zeros(3 * 37, np.float32), np.zeros(3 * 37, np.float32)
    run_kernel(k, [x], [spec])
    TileKernelCpu(k).run([x], [got])
    pairs = x.reshape(3, 2, 37)
    np.testing.assert_array_equal(spec, (pairs[:, 1] - pairs[:, 0]).reshape(-1))
    assert spec.tobytes() == got.tobytes()


def test_what_is_not_lowered_is_a_lowering_error():
    """A DMA that would convert (GM float32 into a float16 queue: the chip's DataCopy does not) is a
    LoweringError naming the kernel, and a launch with the wrong tiling words is refused like the
    interpreter refuses it."""
    bad = parse_kernel(TWO_HELD.replace("queue q_x VECIN depth 2 float32", "queue q_x VECIN depth 2 float16"))
    with pytest.raises(LoweringError, match="kernel two: a DMA between GM float32 and UB float16"):
        lower_kernel(bad)
    k = parse_kernel(TWO_HELD)
    with pytest.raises(TileVerifyError, match="2 tiling words for a struct of 3"):
        TileKernelCpu(k).run([np.zeros(6 * 37, np.float32)], [np.zeros(3 * 37, np.float32)], [37, 3])


@pytest.mark.parametrize("name", ["row", "where"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_streaming_copy_out_matches_the_interpreter(name, dtype, monkeypatch):
    """Large outputs are written with non-temporal stores from their first 64-byte line on (the
    threshold lowered here so that a small kernel streams): computed straight into GM, the step's
    vectors after a peel up to the line; copied out, whole lines after a head.  Odd sizes leave a
    head and a tail."""
    monkeypatch.setattr(kernel_cpu, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(llvm_kernel, "STREAM_RUN_BYTES", 0)   # short runs inside lines stream too
    f, shapes, ref = VECTOR[name]
    g = np.random.default_rng(5)
    args = [(g.standard_normal(s) * 4).astype(dtype) for s in shapes(37, 1001, 1)]
    comp = fs.fused_kernel(f).compile(*args)
    (got,) = _run_both(comp, dict(zip(["a", "x"], args)))
    _close(got, ref(*args), dtype, 1e-6, 2e-3)


# ---- cube, conv and attention kernels (Matmul objects on cblas_sgemm) ------------------------------
CUBE = {   # name -> (function of a, b, numpy)
    "plain": (lambda a, b: a @ b, lambda a, b: a @ b),
    "relu_scale": (lambda a, b: fs.relu(a @ b) * 2.0, lambda a, b: np.maximum(a @ b, 0) * 2),
    "b_transposed": (lambda a, b: a @ fs.transpose(b, (1, 0)) + 1.0, lambda a, b: a @ b.T + 1),
    "softmax": (lambda a, b: fs.softmax(a @ b), lambda a, b: np.exp(a @ b - (a @ b).max(-1, keepdims=True))
                / np.exp(a @ b - (a @ b).max(-1, keepdims=True)).sum(-1, keepdims=True)),
}


@fuzz_settings(scale=0.04)
@given(name=st.sampled_from(sorted(CUBE)), m=st.integers(1, 90), k=st.integers(1, 80), n=st.integers(1, 90),
       batch=st.sampled_from([0, 3]), dtype=st.sampled_from([np.float32, np.float16]),
       target=st.sampled_from(["ascend910b", "ascend310p"]))
def test_cube_kernels_match_the_interpreter(name, m, k, n, batch, dtype, target):
    """Matmul objects: the core's block gathered as float32 and multiplied by cblas_sgemm, handed out
    base tile by base tile (GetTensorC, M-first), the elementwise or row epilogue on each tile;
    batches, a transposed B, tails of one row or column, 16-bit operands."""
    f, ref = CUBE[name]
    g = np.random.default_rng(m * 10000 + k * 100 + n)
    lead = (batch,) if batch and name in ("plain", "relu_scale") else ()
    a = g.standard_normal(lead + (m, k)).astype(dtype)
    b = g.standard_normal((n, k) if name == "b_transposed" else lead + (k, n)).astype(dtype)
    comp = fs.fused_kernel(f, target=target).compile(a, b)
    if len(comp.kernels) != 1 or comp.kernels[0].kernel_kind != "cube" or kernel_ir(comp.kernels[0].lowered) is None:
        return   # e.g. a product the chip's Matmul API does not take (no TileKernel)
    (got,) = _run_both(comp, {"a": a, "b": b})
    want = ref(a.astype(np.float32), b.astype(np.float32))
    _close(got, want, dtype, 1e-4, 2e-2)


@fuzz_settings(scale=0.02)
@given(m=st.integers(1, 70), k=st.integers(1, 300), n=st.integers(1, 70), target=st.sampled_from(["ascend910b",
                                                                                                  "ascend310p"]))
def test_int8_cube_kernels_match_the_interpreter_bit_for_bit(m, k, n, target):
    """int8 x int8 into an int32 C (the sums wrap like numpy's), then wrapped to int8 for the result."""
    g = np.random.default_rng(m * 1000 + k + n)
    a = g.integers(-128, 128, (m, k)).astype(np.int8)
    b = g.integers(-128, 128, (k, n)).astype(np.int8)
    comp = fs.fused_kernel(lambda a, b: a @ b, target=target).compile(a, b)
    if comp.kernels[0].lowered is None or kernel_ir(comp.kernels[0].lowered) is None:
        return
    k_ir = kernel_ir(comp.kernels[0].lowered)
    assert k_ir.matmuls[0].c.dtype == fs.int32
    (got,) = _run_both(comp, {"a": a, "b": b})
    np.testing.assert_array_equal(got, (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int8))


@pytest.mark.parametrize("target", ["ascend910b", "ascend310p"])
def test_int8_products_beyond_one_exact_chunk_are_exact(target):
    """K = 2500 of int8 extremes: sums up to 2500 * 2**14, past float32's exact integers, so the
    product runs as chunks of 1024 columns (each sgemm's sums exact) added in int32."""
    g = np.random.default_rng(11)
    a = np.where(g.random((20, 2500)) < 0.5, -128, 127).astype(np.int8)
    b = np.where(g.random((2500, 30)) < 0.5, -128, 127).astype(np.int8)
    r = g.integers(-128, 128, (20, 30)).astype(np.int8)
    comp = fs.fused_kernel(lambda a, b, r: a @ b + r, target=target).compile(a, b, r)
    assert kernel_ir(comp.kernels[0].lowered).matmuls[0].c.dtype == fs.int32
    (got,) = _run_both(comp, {"a": a, "b": b, "r": r})
    want = (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int8) + r
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("shape, stride, padding", [((1, 3, 8, 8), 1, 0), ((2, 5, 9, 7), 2, 1)])
def test_conv_kernels_match_the_interpreter(shape, stride, padding, dtype):
    """conv2d: the im2col panel gathered into the core's workspace slice (Gather, zeroed per core),
    then the Matmul object over it."""
    g = np.random.default_rng(1)
    x = g.standard_normal(shape).astype(dtype)
    w = g.standard_normal((4, shape[1], 3, 3)).astype(dtype)
    comp = fs.fused_kernel(lambda x, w: fs.relu(fs.conv2d(x, w, stride=stride, padding=padding))).compile(x, w)
    (plan,) = comp.kernels
    assert plan.kernel_kind == "conv"
    (got,) = _run_both(comp, {"x": x, "w": w})
    _close(got, comp(x, w), dtype, 1e-5, 4e-3)


@pytest.mark.parametrize("target", ["ascend910b", "ascend310p"])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_kernels_match_the_interpreter(target, causal):
    """Flash attention's two Matmul objects: Q in L1 as NZ (CopyNz, 910B) or in UB (310P), P through
    the core's workspace slice, the online softmax between them."""
    g = np.random.default_rng(2)
    q, k, v = (g.standard_normal((1, 2, 80, 32)).astype(np.float16) for _ in range(3))
    comp = fs.fused_kernel(lambda q, k, v: fs.attention(q, k, v, causal=causal), target=target).compile(q, k, v)
    (plan,) = comp.kernels
    assert plan.kernel_kind == "attention"
    (got,) = _run_both(comp, {"q": q, "k": k, "v": v})
    _close(got, comp(q, k, v), np.float16, 1e-5, 4e-3)


def _product_calls(wide: bool):
    """The register-tiled product and the K^T pack (tiled_product.py) compiled alone, as ctypes calls:
    product(m, n, k, a, lda, b, ldb, c, mode, scale, top, diag), pack(src, ld, rows, cols, dst),
    packed(src, ld, rows, cols, cache, slots, slot_floats, block_bytes) -> address."""
    import ctypes

    from llvmlite import ir

    from fusedsl.backend_cpu import jit, tiled_product
    from fusedsl.backend_cpu.mathlib import VectorConsts
    from fusedsl.backend_cpu.stmts import LANES
    module = ir.Module(name="tiled_product_test")
    tiled_product.product_function(module, VectorConsts(module, LANES, scalef=wide), wide)
    tiled_product.pack_function(module, wide)
    tiled_product.packed_function(module, wide)
    compiled = jit.compile_ir(str(module), tiled_product.PRODUCT, use_disk=False)
    i64, ptr = ctypes.c_int64, ctypes.c_void_p
    product = ctypes.CFUNCTYPE(None, i64, i64, i64, ptr, i64, ptr, i64, ptr, i64, ctypes.c_float, ptr,
                               i64)(compiled.address)
    pack = ctypes.CFUNCTYPE(None, ptr, i64, i64, i64, ptr)(compiled.engine.get_function_address(tiled_product.PACK))
    packed = ctypes.CFUNCTYPE(ctypes.c_uint64, ptr, i64, i64, i64, ptr, i64, i64, i64)(
        compiled.engine.get_function_address(tiled_product.PACKED))
    return compiled, product, pack, packed


def _panels(bt: np.ndarray, wide: bool) -> np.ndarray:
    """B [k, n] in the pack's layout: panels of a register tile's columns, each its k rows contiguous."""
    from fusedsl.backend_cpu.tiled_product import tile_shape
    nr = tile_shape(wide)[1]
    return np.concatenate([bt[:, j:j + nr].ravel() for j in range(0, bt.shape[1], nr)])


@pytest.mark.parametrize("wide", [True, False])
@pytest.mark.parametrize("m, n, k, lda, ldk", [(1, 1, 1, 1, 1), (7, 33, 5, 9, 6), (20, 70, 64, 64, 80),
                                                (9, 16, 130, 131, 130)])
def test_tiled_product_matches_numpy(m, n, k, lda, ldk, wide):
    """C = A @ B in register tiles of 4 x 64 (AVX-512) or 3 x 32, A rows lda apart, the last tile's
    rows past m clamped, columns past n masked, k in passes of KC rows (C's partial sums carried);
    B in rows (ld n), or B = K^T packed from K's rows (ldk apart) into panels of the tile's columns
    in 16 x 16 register tiles and element-wise edges: the same bits (one fma chain per element in k
    order).  ACCUMULATE adds to C (C's elements start the chains); ROW_MAX scales C, cuts column -
    row >= diag to -inf and leaves each row's maximum over 16 lanes.  Nothing outside C's m x n
    elements is written."""
    from fusedsl.backend_cpu.tiled_product import ACCUMULATE, PANELS, ROW_MAX
    g = np.random.default_rng(m * 100 + n + k)
    a = g.standard_normal((m, lda)).astype(np.float32)
    kmat = g.standard_normal((n, ldk)).astype(np.float32)
    packed = np.full(k * n + 5, np.nan, np.float32)
    compiled, product, pack, _ = _product_calls(wide)
    pack(kmat.ctypes.data, ldk, n, k, packed.ctypes.data)
    bt = np.ascontiguousarray(kmat[:, :k].T)
    np.testing.assert_array_equal(packed[:k * n], _panels(bt, wide))
    assert np.isnan(packed[k * n:]).all()
    want = a[:, :k].astype(np.float64) @ bt.astype(np.float64)
    top = np.full(16 * m, 7.0, np.float32)
    start = g.standard_normal(m * n).astype(np.float32)
    results = {}
    for mode, b_arg, c0 in ((0, bt, None), (PANELS, packed, None), (ACCUMULATE, bt, start),
                            (PANELS | ROW_MAX, packed, None)):
        c = np.full(m * n + 5, 7.0, np.float32)
        if c0 is not None:
            c[:m * n] = c0
        product(m, n, k, a.ctypes.data, lda, b_arg.ctypes.data, n, c.ctypes.data, mode, 0.5, top.ctypes.data, 2)
        assert (c[m * n:] == 7.0).all()
        results[mode] = c[:m * n].reshape(m, n)
    np.testing.assert_array_equal(results[0], results[PANELS])
    np.testing.assert_allclose(results[0], want, rtol=1e-5, atol=1e-5 * np.sqrt(k))
    np.testing.assert_allclose(results[ACCUMULATE], start.reshape(m, n) + want, rtol=1e-5, atol=1e-5 * np.sqrt(k))
    cut = np.subtract.outer(np.arange(m), np.arange(n)) <= -2   # column - row >= diag (2)
    np.testing.assert_array_equal(results[PANELS | ROW_MAX], np.where(cut, -np.inf, results[0] * np.float32(0.5)))
    np.testing.assert_array_equal(top.reshape(m, 16).max(1), results[PANELS | ROW_MAX].max(1))


def test_packed_blocks_are_packed_once_per_launch():
    """tiled_product.packed_function: a block of K^T is packed into its slot (address / block bytes
    mod slots) the first time, then handed out from there while its tag (address; rows, cols)
    matches -- even if K changed, which is why the kernel zeroes the tags at each launch; another
    block, or the same address with fewer rows, is packed again."""
    from fusedsl.backend_cpu.tiled_product import pack_slots
    compiled, _, pack, packed = _product_calls(True)
    g = np.random.default_rng(3)
    kmat = g.standard_normal((3 * 20, 24)).astype(np.float32)   # three blocks of 20 keys, k = 24
    floats, slots = 20 * 24, 2
    assert pack_slots(floats) == 32 and pack_slots(1 << 30) == 1
    cache = np.zeros(slots * (floats + 4), np.float32)
    tags = cache[slots * floats:].view(np.int64)

    def want(rows, first=0, src=kmat):
        out = np.zeros(rows * 24, np.float32)
        pack(src[first:].ctypes.data, 24, rows, 24, out.ctypes.data)
        return out

    def get(first, rows=20):
        at = packed(kmat[first:].ctypes.data, 24, rows, 24, cache.ctypes.data, slots, floats, 20 * 24 * 4)
        start = (at - cache.ctypes.data) // 4
        assert 0 <= start <= (slots - 1) * floats and start % floats == 0
        return cache[start:start + rows * 24]
    first = get(0).copy()
    np.testing.assert_array_equal(first, want(20))
    old = kmat.copy()
    kmat[:] += 1.0   # a changed input at the same addresses: the held blocks are handed out unchanged
    np.testing.assert_array_equal(get(0), first)
    np.testing.assert_array_equal(get(20), want(20, 20))   # the next block: its own slot, packed now
    np.testing.assert_array_equal(get(0), want(20, 0, old))
    np.testing.assert_array_equal(get(0, 13), want(13))   # fewer rows: another tag, packed again
    tags[:] = 0   # what the kernel does at each launch
    np.testing.assert_array_equal(get(0), want(20))
    np.testing.assert_array_equal(get(40), want(20, 40))   # block 2 takes block 0's slot (2 slots)
    np.testing.assert_array_equal(get(0), want(20))


def _heads(x):
    return fs.transpose(x, (0, 2, 1, 3))


ATTENTION_CPU = {   # name -> (function, shapes (q, k, v[, mask]), numpy reference via torch's sdpa)
    "plain": (lambda q, k, v: fs.attention(q, k, v), [(1, 2, 75, 64), (1, 2, 75, 64), (1, 2, 75, 64)], {}),
    "causal": (lambda q, k, v: fs.attention(q, k, v, causal=True), [(2, 2, 70, 32)] * 3, {"causal": True}),
    "bool_mask": (lambda q, k, v, m: fs.attention(q, k, v, mask=m), [(1, 2, 40, 16), (1, 2, 99, 16), (1, 2, 99, 24),
                                                                      (40, 99)], {}),
    "additive_causal": (lambda q, k, v, m: fs.attention(q, k, v, mask=m, causal=True),
                        [(1, 3, 50, 128), (1, 3, 50, 128), (1, 3, 50, 128), (1, 1, 50, 50)], {"causal": True}),
    "gqa": (lambda q, k, v: fs.attention(q, k, v), [(1, 4, 33, 64), (1, 2, 90, 64), (1, 2, 90, 64)], {}),
    # [B, S, H, D]: the heads transposes fold into the kernel (rows H * D apart)
    "bshd": (lambda q, k, v: _heads(fs.attention(_heads(q), _heads(k), _heads(v))), [(1, 57, 2, 32)] * 3,
             {"bshd": True}),
}


@pytest.mark.parametrize("name, dtype", [(name, np.float32) for name in sorted(ATTENTION_CPU)]
                         + [("causal", np.float16), ("bool_mask", np.float16)])
def test_attention_on_the_cpu_schedule_matches_torch(name, dtype, monkeypatch):
    """The attention kind's schedule with the CPU's blocks (cpu_tiling.attention_schedule: Q from GM,
    P to the P V product in UB, one base block per product), here shrunk to Q blocks of 16 rows and KV
    blocks of 32 keys so that every kernel walks several of each with tails; both products in
    register tiles (tiled_product.py) and the online softmax in two passes per row of S where the Q
    K^T product left it, P written over S (attention_softmax.py).  Within test_attention's
    tolerances of torch's sdpa, and of the tile interpreter (sgemm products) on the same kernel."""
    from fusedsl.backend_cpu import cpu_tiling
    from test_attention import TOL, torch_sdpa
    monkeypatch.setattr(cpu_tiling, "ATTENTION_Q_ROWS", 16)
    monkeypatch.setattr(cpu_tiling, "ATTENTION_CAUSAL_Q_ROWS", 16)
    monkeypatch.setattr(cpu_tiling, "ATTENTION_KV_COLS", 32)
    f, shapes, how = ATTENTION_CPU[name]
    g = np.random.default_rng(len(name))
    args = [g.standard_normal(s).astype(dtype) for s in shapes[:3]]
    if len(shapes) > 3:
        m = g.random(shapes[3])
        args.append(m > 0.3 if name == "bool_mask" else np.where(m > 0.2, 0.0, -np.inf).astype(dtype))
    comp = fs.fused_kernel(f).compile(*args)
    (plan,) = comp.kernels
    sched = cpu_tiling.attention_schedule(plan.function, comp.target)
    assert (sched.bq, sched.bk, sched.q_l1_bytes, sched.p_in_ub) == (16, 32, 0, True)
    kernel = kernel_ir(sched)
    inputs = [dict(zip("qkvm", args))[p.value.name] for p in plan.function.params]
    got = np.full(plan.function.results[0].type.shape, 7, dtype)
    cpu = TileKernelCpu(kernel)
    # the softmax in two passes per row, P written over S for P V, O += P V into O (attention_softmax);
    # without a mask, S scaled, its causal keys cut and its rows' maxima taken by the Q K^T product;
    # float16 operands widened in vector loops
    assert "sm.row" in cpu.ir and "attn.p" in cpu.ir and "attn.o" in cpu.ir
    assert ("attn.top" in cpu.ir) == (len(shapes) == 3)
    assert ("fusedsl_transpose_pack_half" in cpu.ir and "fusedsl_widen_rows" in cpu.ir) == (dtype == np.float16)
    assert "fusedsl_packed_block" in cpu.ir   # K^T packed once per launch (tiled_product.packed_function)
    # by the process's one pack (tiled_product.shared_pack, jit.share): declared, not defined, here
    assert re.search(r'^declare void @"fusedsl_transpose_pack\w*_nr\d+"', cpu.ir, re.M)
    assert not re.search(r'^define [^@]*@"fusedsl_transpose_pack', cpu.ir, re.M)
    call = cpu.bind(inputs, [got])
    call()
    # the same bound call again on a changed K (at the same address): the packed blocks of the last
    # launch are not reused
    first = got.copy()
    args[1][...] = args[1][..., ::-1]   # k, which `inputs` holds
    call()
    changed = got.copy()
    spec = np.zeros_like(got)
    run_kernel(kernel, inputs, [spec], kernel.words)
    rtol, atol = TOL[np.dtype(dtype)]

    def want():
        q, k, v = (np.swapaxes(x, 1, 2) if how.get("bshd") else x for x in args[:3])
        mask = args[3] if len(args) > 3 else None
        out = torch_sdpa(q, k, v, mask, causal=how.get("causal", False))
        return (np.swapaxes(out, 1, 2) if how.get("bshd") else out).astype(np.float64)
    for result in (changed, spec):
        np.testing.assert_allclose(result.astype(np.float64), want(), rtol=rtol, atol=atol)
    args[1][...] = args[1][..., ::-1]
    np.testing.assert_allclose(first.astype(np.float64), want(), rtol=rtol, atol=atol)


SIGNED_ZEROS = """kernel @ties kind vector
note "Max / Min / Maxs of -0.0 against 0.0: numpy's loops pick by dtype"
field n
field totalTiles
field tilesPerCore
gm x DT in 0
gm y DT in 1
gm z DT out 0
queue q_x VECIN depth 1 DT elems t.n
queue q_y VECIN depth 1 DT elems t.n
queue q_z VECOUT depth 1 DT elems 3 * t.n
stage Tile(tile):
  alloc a = q_x
  alloc b = q_y
  alloc c = q_z
  copyin a <- x[0] rows 1 ; cols t.n ; gm t.n ; ub t.n
  copyin b <- y[0] rows 1 ; cols t.n ; gm t.n ; ub t.n
  barrier
  vec Max c <- a, b count t.n
  vec Min c[t.n] <- a, b count t.n
  vec Maxs c[2 * t.n] <- a scalar #0.0 count t.n
  barrier
  copyout z[0] <- c rows 1 ; cols 3 * t.n ; gm 3 * t.n ; ub 3 * t.n
  free q_x a
  free q_y b
  free q_z c
words 37 1 1"""


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_vec_max_and_min_break_ties_as_numpy_does(dtype):
    """-0.0 against 0.0 and NaN: the interpreter's np.maximum / np.minimum, bit for bit (numpy's
    float32 loop returns the second operand on a tie, its float16 loop the first)."""
    k = parse_kernel(SIGNED_ZEROS.replace("DT", dtype))
    x = np.array([-0.0, 0.0, np.nan, 1.0, -0.0] * 8, dtype)[:37]
    y = np.array([0.0, -0.0, 1.0, np.nan, -0.0] * 8, dtype)[:37]
    spec, got = np.zeros(111, dtype), np.zeros(111, dtype)
    run_kernel(k, [x, y], [spec])
    TileKernelCpu(k).run([x, y], [got])
    assert spec.tobytes() == got.tobytes()
    np.testing.assert_array_equal(np.signbit(spec[:37]), np.signbit(np.maximum(x, y)))


SPILL = """kernel @spill kind vector
note "an output tensor computed in GM, written past the rows its CopyOut copies"
field n
field totalTiles
field tilesPerCore
gm x float32 in 0
gm z float32 out 0
queue q_x VECIN depth 2 float32 elems t.n
queue q_z VECOUT depth 2 float32 elems 2 * t.n
stage Tile(tile):
  let at = (t.totalTiles - 1 - tile) * t.n
  alloc a = q_x
  copyin a <- x[at] rows 1 ; cols t.n ; gm t.n ; ub t.n
  enque q_x a
  deque a = q_x
  alloc c = q_z
  dup c <- #5.0 count 2 * t.n
  vec Adds c <- a scalar #1.0 count t.n
  enque q_z c
  free q_x a
  deque c = q_z
  copyout z[at] <- c rows 1 ; cols t.n ; gm t.n ; ub t.n
  free q_z c
words 37 3 3"""


def test_outputs_computed_in_gm_stay_within_their_rows():
    """A VECOUT tensor whose CopyOut is contiguous is computed in the GM rows themselves (the copy
    skipped); a write past those rows (here a Duplicate of twice the rows, into the region of the
    tile before it, which the tiles write last to first) first moves the tensor to its UB buffer, so
    no other tile's output is touched."""
    k = parse_kernel(SPILL)
    assert "q_z" in _Lowering(k, frozenset()).out_aliased
    x = np.random.default_rng(0).standard_normal(3 * 37).astype(np.float32)
    spec, got = np.zeros(3 * 37, np.float32), np.full(3 * 37, 7, np.float32)
    run_kernel(k, [x], [spec])
    TileKernelCpu(k).run([x], [got])
    np.testing.assert_array_equal(spec, x + 1)
    assert spec.tobytes() == got.tobytes()
    plain = parse_kernel(SPILL.replace("dup c <- #5.0 count 2 * t.n", "dup c <- #5.0 count t.n"))
    got[:] = 7
    TileKernelCpu(plain).run([x], [got])
    assert spec.tobytes() == got.tobytes()


WHOLE_REDUCE = """kernel @folds kind row
note "WholeReduce of 64 elements per tile: numpy's order (sum), the left fold's value (max / min)"
field totalTiles
field tilesPerCore
gm x float32 in 0
gm y float32 out 0
queue q_x VECIN depth 1 float32 elems 64
queue q_y VECOUT depth 1 float32 elems 8
stage Tile(tile):
  alloc a = q_x
  alloc r = q_y
  copyin a <- x[tile * 64] rows 1 ; cols 64 ; gm 64 ; ub 64
  barrier
  vec WholeReduceSum r <- a count 64
  vec WholeReduceMax r[1] <- a count 64
  vec WholeReduceMin r[2] <- a count 64
  vec WholeReduceSum r[3] <- a count 56
  barrier
  copyout y[tile * 4] <- r rows 1 ; cols 4 ; gm 4 ; ub 4
  free q_x a
  free q_y r
words 6 6"""


def test_whole_reduce_of_a_constant_count_matches_the_interpreter_bit_for_bit():
    """A WholeReduce of 64 float32 elements runs in vector registers (sum: numpy's eight
    accumulators as lanes; max / min: the extreme value, the left fold itself when an element is NaN
    or the extreme is a zero of either sign): the interpreter's bits, NaN payloads and zero signs."""
    g = np.random.default_rng(11)
    x = g.standard_normal((6, 64)).astype(np.float32) * np.float32(1e3)
    x[1, 5] = np.float32("nan")
    x[1, 9] = np.frombuffer(np.uint32(0x7FC00123).tobytes(), np.float32)[0]   # a second NaN, other payload
    x[2] = -np.abs(x[2])
    x[2, [3, 40]] = [0.0, -0.0]            # max is a zero: the last one wins (-0.0)
    x[3] = np.where(np.arange(64) % 2, 0.0, -0.0).astype(np.float32)
    x[4, 63] = np.float32("nan")
    x[5] = np.abs(x[5]) + 1                # (a min over zeros of both signs: np.min's SIMD loop and
    x[5, [0, 7]] = [3.0, 1.0]              # the fold pick different zeros; not compared here)
    k = parse_kernel(WHOLE_REDUCE)
    spec, got = np.zeros(24, np.float32), np.full(24, 7, np.float32)
    run_kernel(k, [x.reshape(-1)], [spec])
    TileKernelCpu(k).run([x.reshape(-1)], [got])
    assert spec.tobytes() == got.tobytes()
    assert np.signbit(spec.reshape(6, 4)[2, 1]) and np.isnan(spec.reshape(6, 4)[1, 1])

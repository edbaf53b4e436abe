"""Elementwise and view kernels as loop-level tile kernels (lower/vector_tile.py): their text
round-trips, and the kernel interpreter (backend_cpu/kernel_interp.py, with its bounds and queue
checks) runs the parsed text like numpy: broadcast rows read once per core, general broadcasts
addressed through the per-dim strides, a broadcast last dim filled from one GM value, one-element
tensors and runtime scalars as members, Compare's pre-filled lanes, and view kernels' box tables
(slices, concatenations, gathers).  The printed Ascend C of the same kernels runs under simulate
in test_ascendc_e2e.py and test_views.py."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import fuzz_settings

import fusedsl as fs
from fusedsl.backend_cpu.kernel_interp import run_kernel
from fusedsl.lower.kinds import kernel_ir, kernel_words
from fusedsl.tile.kernel import print_kernel
from fusedsl.tile.parse import parse_kernel
from fusedsl.tile.verify import TileVerifyError

TARGETS = ["ascend910b", "ascend310p", "ascend910"]

# name -> (function, shapes of its tensor arguments as functions of (r, c, b))
PROGRAMS = {
    "row": (lambda a, x: fs.relu(fs.abs(a) + x) * 2, lambda r, c, b: [(c,), (r, c)]),
    "general": (lambda a, x: a * x - a, lambda r, c, b: [(r, 1, c), (r, b, c)]),
    "column": (lambda a, x: fs.maximum(a, x) + 1, lambda r, c, b: [(r, b, 1), (r, b, c)]),
    "one_element": (lambda a, x: a * x + x, lambda r, c, b: [(1,), (r, c)]),
    "where": (lambda a, x: fs.where(a > x, a, x * 2), lambda r, c, b: [(r, c), (r, c)]),
}


def _interpret(comp, args):
    """Run the compiled program's one kernel from its printed TileKernel text."""
    (plan,) = comp.kernels
    text = print_kernel(kernel_ir(plan.lowered))
    kernel = parse_kernel(text)
    assert print_kernel(kernel) == text
    want = comp(*args)
    out = np.zeros(np.shape(want), np.asarray(want).dtype)
    by_name = dict(zip(["a", "x"], args))   # the kernel may order its parameters its own way
    inputs = [by_name[p.value.name] for p in plan.function.params]
    run_kernel(kernel, inputs, [out], kernel_words(plan.lowered, plan.tiling))
    return out, want


@fuzz_settings(scale=0.06)
@given(name=st.sampled_from(sorted(PROGRAMS)), r=st.integers(1, 9), c=st.integers(1, 70), b=st.integers(1, 5),
       dtype=st.sampled_from(["float32", "float16", "int32"]), target=st.sampled_from(TARGETS))
def test_generated_elementwise_kernels_interpret_like_the_call(name, r, c, b, dtype, target):
    f, shapes = PROGRAMS[name]
    g = np.random.default_rng(r * 1000 + c * 10 + b)
    args = [(g.standard_normal(s) * 4).astype(dtype) for s in shapes(r, c, b)]
    comp = fs.fused_kernel(f, target=target).compile(*args)
    got, want = _interpret(comp, args)
    if dtype == "int32":
        np.testing.assert_array_equal(got, want)
    else:
        tol = 2e-3 if dtype == "float16" else 1e-6
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


def test_runtime_scalars_and_hoisted_rows_interpret_like_numpy():
    """A runtime scalar travels as a typed field (s<index>) into a member; ops on a broadcast row
    and the scalar alone are hoisted into the once-per-core prologue."""
    def f(x, row, s):
        return x * fs.exp(row * s) + s

    x = np.linspace(-2, 2, 7 * 45, dtype=np.float32).reshape(7, 45)
    row = np.linspace(0, 1, 45, dtype=np.float32)
    comp = fs.fused_kernel(f).compile(x, row, fs.scalar("s"))
    (plan,) = comp.kernels
    kernel = parse_kernel(print_kernel(kernel_ir(plan.lowered)))
    assert kernel.stages[0].once and kernel.stages[0].name == "Prologue"
    params = [p.value.name for p in plan.function.params]   # the kernel's own parameter order
    assert [(fl.name, fl.ctype) for fl in kernel.fields if fl.ctype != "uint32_t"] == [(f"s{params.index('s')}", "float")]
    out = np.zeros((7, 45), np.float32)
    args = {"x": x, "row": row, "s": 0.75}
    run_kernel(kernel, [args[n] for n in params], [out], kernel_words(plan.lowered, plan.tiling))
    np.testing.assert_allclose(out, x * np.exp(row * np.float32(0.75)) + np.float32(0.75), rtol=2e-6)


def _views(t, i, a, b):
    cat = fs.concatenate([a, b], 1)          # a box per input: an If chain over the sources
    return fs.relu(fs.take(t, i) + 1.0), cat[:, 3:40] * 2, a[::2, 1:]


@pytest.mark.parametrize("target", ["ascend910b", "ascend910"])
def test_view_kernels_interpret_like_numpy(target):
    g = np.random.default_rng(5)
    t = g.standard_normal((50, 32)).astype(np.float32)
    i = np.array([3, -1, 49, 0, 7, 7, -50], np.int32)
    a = g.standard_normal((9, 32)).astype(np.float32)
    b = g.standard_normal((9, 24)).astype(np.float32)
    comp = fs.fused_kernel(_views, target=target).compile(t, i, a, b)
    wants = [np.maximum(t[i] + 1, 0), np.concatenate([a, b], 1)[:, 3:40] * 2, a[::2, 1:]]
    views = [p for p in comp.kernels if kernel_ir(p.lowered) is not None and kernel_ir(p.lowered).kind == "view"]
    assert len(views) >= 2
    args = {"t": t, "i": i, "a": a, "b": b}
    for plan in views:
        kernel = parse_kernel(print_kernel(kernel_ir(plan.lowered)))
        params = [p.value.name for p in plan.function.params]
        outs = [np.zeros(tuple(v.shape), v.dtype.np) for v in plan.function.results]
        run_kernel(kernel, [args[n] for n in params], outs)   # a view kernel carries its words
        for out in outs:
            assert any(out.shape == w.shape and np.allclose(out, w, rtol=1e-6) for w in wants), params


def test_a_gathered_index_out_of_range_reads_nothing_and_gives_a_zero_row():
    """The device guard: the host executors raise first (IndexRangeError), the kernel itself
    never reads outside the table."""
    t = np.arange(20, dtype=np.float32).reshape(5, 4) + 1
    i = np.array([1, 9, -2], np.int32)
    comp = fs.fused_kernel(lambda t, i: fs.take(t, i) * 1.0).compile(t, np.array([0, 1, 2], np.int32))
    (plan,) = comp.kernels
    out = np.zeros((3, 4), np.float32)
    run_kernel(kernel_ir(plan.lowered), [t, i], [out])
    np.testing.assert_array_equal(out, np.stack([t[1], np.zeros(4, np.float32), t[-2]]))


def test_a_kernel_reading_past_its_input_is_stopped():
    """The interpreter bounds-checks the strided copies: a tiling word that walks past the GM
    tensor (here C, the row length, one too large) stops the run at that copy."""
    x = np.ones((6, 33), np.float32)
    comp = fs.fused_kernel(lambda x: x * 2).compile(x)
    (plan,) = comp.kernels
    words = kernel_words(plan.lowered, plan.tiling)
    words[1] += 1
    with pytest.raises(TileVerifyError, match=r"stage CopyIn: GM x elements"):
        run_kernel(kernel_ir(plan.lowered), [x], [np.zeros((6, 33), np.float32)], words)

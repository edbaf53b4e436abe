"""Row kernels as loop-level tile kernels (lower/row_tile.py): their text round-trips, and the
kernel interpreter (backend_cpu/kernel_interp.py, with its bounds and queue checks) runs the
parsed text like the LLVM call: softmax, norms and lone reductions, per-row / one-value /
shared-row parameters, per-row outputs, the single-read plan and the multi-pass plan (rows
bigger than UB, with the online softmax and the shifted moments), on the three targets (910A
finishes its lanes on the scalar unit).  The printed Ascend C of the same kernels runs under
simulate in test_ascendc_row.py and test_ascendc_row_broadcast.py."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import fuzz_settings, kernel_corpus

import fusedsl as fs
from fusedsl.backend_cpu.kernel_interp import run_kernel
from fusedsl.lower import column_plan, row_plan
from fusedsl.lower.kinds import kernel_ir, kernel_words
from fusedsl.lower.row_plan import _op_function, op_schedule
from fusedsl.lower.vector import schedule_vector_kernel
from fusedsl.lru import Lru
from fusedsl.targets import get_target
from fusedsl.tile.kernel import print_kernel, verify_kernel
from fusedsl.tile.parse import TileKernelParseError, parse_kernel
from fusedsl.tile.text import print_tile
from fusedsl.tile.verify import TileVerifyError

TARGETS = ["ascend910b", "ascend310p", "ascend910"]

# name -> (function, shapes of its arguments as functions of (r, c))
PROGRAMS = {
    "softmax": (lambda x, y: fs.softmax(x + y), lambda r, c: [(r, c), (1, c)]),
    "layer_norm": (lambda x, g: fs.gelu(fs.layer_norm(x, g, g)), lambda r, c: [(r, c), (c,)]),
    "rms_perrow": (lambda x, p: fs.rms_norm(x) * p, lambda r, c: [(r, c), (r, 1)]),
    "sum_and_max": (lambda x, y: (fs.sum(x * y, axis=-1), x - fs.max(x, axis=-1, keepdims=True)),
                    lambda r, c: [(r, c), (r, c)]),
    "min_scalar": (lambda x, s: fs.min(x * s, axis=-1, keepdims=True) + s, lambda r, c: [(r, c), (1,)]),
    "mean_general": (lambda x, y: fs.mean(x, axis=-1, keepdims=True) * y, lambda r, c: [(2, r, c), (2, 1, c)]),
}


def _interpret(comp, args):
    """Run the compiled program's one kernel from its printed TileKernel text."""
    (plan,) = comp.kernels
    assert plan.kind == "row"
    text = print_kernel(kernel_ir(plan.lowered))
    kernel = parse_kernel(text)
    assert print_kernel(kernel) == text
    want = comp(*args)
    wants = want if isinstance(want, tuple) else (want,)
    outs = [np.zeros(np.shape(w), np.asarray(w).dtype) for w in wants]
    by_name = dict(zip(["x", "y"], args))
    inputs = [by_name.get(p.value.name, args[1]) for p in plan.function.params]
    run_kernel(kernel, inputs, outs, kernel_words(plan.lowered, plan.tiling))
    return outs, wants, text


@fuzz_settings(scale=0.06)
@given(name=st.sampled_from(sorted(PROGRAMS)), r=st.integers(1, 6), c=st.integers(1, 150),
       dtype=st.sampled_from(["float32", "float16"]), target=st.sampled_from(TARGETS))
def test_generated_row_kernels_interpret_like_the_call(name, r, c, dtype, target):
    f, shapes = PROGRAMS[name]
    g = np.random.default_rng(r * 1000 + c)
    args = [(g.standard_normal(s) * 2 + 0.5).astype(dtype) for s in shapes(r, c)]
    comp = fs.fused_kernel(f, target=target).compile(*args)
    got, want, _ = _interpret(comp, args)
    tol = 2e-5 if dtype == "float32" else 4e-3
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.float32(a), np.float32(b), rtol=tol, atol=tol)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", ["softmax", "layer_norm", "rms_perrow"])
def test_multi_pass_rows_interpret_like_the_call(name, target):
    """Rows bigger than UB (a UB budget of 5 % makes 3000 float32 elements too many): passes over
    chunks, softmax's max and sum in one walk (online), layer_norm's two means in one (moments)."""
    f, shapes = PROGRAMS[name]
    g = np.random.default_rng(3)
    args = [(g.standard_normal(s) * 2 + 0.5).astype(np.float32) for s in shapes(3, 3000)]
    comp = fs.fused_kernel(f, target=target, single_kernel=True, ub_headroom=0.05).compile(*args)
    got, want, text = _interpret(comp, args)
    assert "stage Passes:" in text and "for c0 in 0 .. t.C step t.Cpad:" in text
    if name == "softmax":
        assert text.count("vec Exp") >= 3   # the online recurrence: rescale, per chunk, finish
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=3e-5, atol=3e-6)


def test_row_kernel_names_take_only_plain_user_names_and_bad_text_is_located():
    """A parameter's UB tensor and queue carry its name when that is plain ASCII (in_x_0: the
    report's UB plan reads it), else only its index; other names come from indices and dtypes.
    A wrong line of the text is named."""
    def plain(x):
        return fs.softmax(x)

    def accented(grüße):
        return fs.softmax(grüße)

    x = np.ones((2, 8), np.float32)
    text = print_kernel(kernel_ir(fs.fused_kernel(plain).compile(x).kernels[0].lowered))
    assert "queue q_in_x_0 VECIN" in text and "alloc in_x_0 = q_in_x_0" in text
    text = print_kernel(kernel_ir(fs.fused_kernel(accented).compile(x).kernels[0].lowered))
    assert "queue q_in_0 VECIN" in text
    assert [line for line in text.splitlines() if "grüße" in line] == [
        "gm grüße float32 in 0", "  copyin in_0 <- grüße[row0 * t.C] rows nrows ; cols t.C ; gm t.C ; ub t.Cpad"]
    bad = text.replace("val sv0 float32 = get(red, 0)", "val sv0 float99 = get(red, 0)")
    with pytest.raises(TileKernelParseError, match=r"line \d+: unknown dtype 'float99'"):
        parse_kernel(bad)


def test_a_scalar_read_before_its_reduction_is_refused_by_the_verifier():
    """verify_kernel checks that a typed scalar is set before it is read, and that GetValue reads
    a tensor the stage holds."""
    x = np.ones((2, 8), np.float32)
    k = kernel_ir(fs.fused_kernel(lambda x: fs.softmax(x)).compile(x).kernels[0].lowered)
    text = print_kernel(k)
    moved = text.replace("val sv0 float32 = get(red, 0)", "val sv0 float32 = sv9 + get(red, 0)")
    with pytest.raises(TileVerifyError, match="reads sv9, which is not set before"):
        verify_kernel(parse_kernel(moved), get_target("ascend910b"))
    unheld = text.replace("val sv0 float32 = get(red, 0)", "val sv0 float32 = get(nothing, 0)")
    with pytest.raises(TileVerifyError, match="reads tensor nothing, which is not taken from a queue before"):
        verify_kernel(parse_kernel(unheld), get_target("ascend910b"))


def test_a_missing_sync_between_the_vector_and_the_scalar_pipe_is_refused():
    """verify_kernel follows the V_S / S_V syncs: GetValue of a reduction's result needs the V_S
    sync after WholeReduce wrote it, a vector op on a per-row slot needs the S_V sync after
    SetValue wrote it (a loop's body is walked twice: its last pass reaches its first)."""
    x = np.ones((2, 8), np.float32)
    plan = fs.fused_kernel(lambda x: fs.layer_norm(x)).compile(x).kernels[0]
    text = print_kernel(kernel_ir(plan.lowered))
    target = get_target("ascend910b")
    verify_kernel(parse_kernel(text), target)
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.strip() == "sync V_S")
    with pytest.raises(TileVerifyError, match="GetValue of red after a vector op wrote it, with no V_S sync between"):
        verify_kernel(parse_kernel("\n".join(lines[:first] + lines[first + 1:]) + "\n"), target)
    put = next(i for i, line in enumerate(lines) if line.strip() == "sync S_V")
    with pytest.raises(TileVerifyError, match="a vector op reads rs_float32 after SetValue wrote it, with no S_V sync"):
        verify_kernel(parse_kernel("\n".join(lines[:put] + lines[put + 1:]) + "\n"), target)


def test_sync_check_of_deeply_nested_loops_walks_each_state_once():
    """Each level's body is its inner loop (whose first node, a barrier, clears what is pending)
    then a vector write of its own tensor, so every level ends in a new state and the inner loop
    changes it again: walking a changed loop twice was 2**depth walks.  Walks are memoised per
    (body, state), so the check stays fast -- and still finds a missing V_S sync at the bottom."""
    depth = 22

    def kernel(read: bool) -> str:
        lines = ["kernel @deep kind vector", 'note ""', "field tilesPerCore", "field totalTiles"]
        lines += [f"queue b{d} VECCALC depth 1 float32 elems 8" for d in range(depth)]
        lines += ["stage Compute(tile):"] + [f"  alloc a{d} = b{d}" for d in range(depth)]
        for d in range(depth):
            lines.append("  " * (d + 1) + f"for i{d} in 0 .. 2:")
        ind = "  " * (depth + 1)
        lines += [f"{ind}barrier"] + ([f"{ind}vec Adds a0 <- a0 scalar #1.0 count 8", f"{ind}val s float32 = get(a0, 0)"]
                                      if read else [])
        for d in reversed(range(depth)):   # after each level's inner loop: its own vector write
            lines.append("  " * (d + 1) + f"  vec Adds a{d} <- a{d} scalar #1.0 count 8")
        return "\n".join(lines) + "\n"

    target = get_target("ascend910b")
    verify_kernel(parse_kernel(kernel(False)), target)
    with pytest.raises(TileVerifyError, match="GetValue of a0 after a vector op wrote it, with no V_S sync between"):
        verify_kernel(parse_kernel(kernel(True)), target)


def test_remembered_op_programs_equal_fresh_ones(monkeypatch):
    """row_plan.op_schedule remembers each one-op program for the process (_OP_SCHEDULES): on every
    ascend910b row and column program of the kernel corpus (each at several sizes: the later sizes'
    ops take the first's programs; an op like one of another program takes that one's, moved to
    its own name and line), each program it hands out is the one scheduled afresh for that op --
    its text with locations, every field, its kernel's name and line -- and its parameters stand
    for the same kernel values."""
    corpus = kernel_corpus()
    monkeypatch.setattr(row_plan, "_OP_SCHEDULES", Lru(512))
    calls = []

    def recorded(fn, op, producer, target, varies):
        out = op_schedule(fn, op, producer, target, varies)
        calls.append(((fn, op, producer, target, varies), out))
        return out
    monkeypatch.setattr(row_plan, "op_schedule", recorded)
    monkeypatch.setattr(column_plan, "op_schedule", recorded)
    for key, fn, specs, target in corpus.configs():
        if key.split("/")[0] not in ("row", "column") or target != "ascend910b":
            continue
        try:
            fs.fused_kernel(fn, target=target).compile(*corpus._inputs(specs, seed=1))
        except fs.FusedslError:
            continue
    shared = moved = 0
    programs, slots = set(), set()
    for (fn, op, producer, target, varies), (sched, sources) in calls:
        sub, fresh_sources = _op_function(fn, op, producer, varies)
        fresh = schedule_vector_kernel(sub, target)
        assert print_tile(sched, locs=True) == print_tile(fresh, locs=True)
        assert dataclasses.replace(sched, kernel=None) == dataclasses.replace(fresh, kernel=None)
        assert (sched.kernel.name, sched.kernel.loc, sched.kernel.ops[-1].loc) == (
            fresh.kernel.name, fresh.kernel.loc, fresh.kernel.ops[-1].loc)
        assert [id(v) for v in sources] == [id(v) for v in fresh_sources]
        shared += id(sched) in programs
        moved += id(sched) not in programs and id(sched.slots) in slots   # (a moved program keeps the slots)
        programs.add(id(sched))
        slots.add(id(sched.slots))
    assert len(calls) > 300 and shared > 50 and moved > 50, (len(calls), shared, moved)

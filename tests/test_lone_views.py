"""Lone concatenate / slice / take and transpose kernels print as Ascend C.

Fusion leaves a view or a transpose a kernel of its own when no vector kernel reads it (the
composed conv_transpose / grouped conv / pooling graphs make many).  A lone view is a view
kernel whose only compute is the copy into the output (lower/kinds.py `_lone_view`); a lone
transpose is the transpose kind (lower/transpose.py: a loop-level tile kernel, tile/kernel.py,
printed by printer_kernel.py and run by backend_cpu/kernel_interp.py).  One traced
function holds every case, so each target costs one g++ build of the printed source.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import fuzz_settings

import fusedsl as fs
from fusedsl.backend_cpu.kernel_interp import run_kernel
from fusedsl.lower.kinds import kernel_ir
from fusedsl.lower.transpose import schedule_transpose_kernel
from fusedsl.tile.kernel import print_kernel
from fusedsl.tile.parse import parse_kernel

rng = np.random.default_rng(20)
A = rng.standard_normal((300, 257)).astype(np.float32)
B = rng.standard_normal((4, 64, 33, 5)).astype(np.float16)
C = rng.integers(-100, 100, (37, 3, 10)).astype(np.int8)
D = rng.standard_normal((2000, 3)).astype(np.float32)
E = rng.integers(-2**31, 2**31 - 1, (6, 5), dtype=np.int64).astype(np.int32)
IDS = np.array([3, 0, -1, 2], np.int32)
P5 = rng.standard_normal((2, 8, 20, 1, 8)).astype(np.float32)    # a 3-D pooling's padding row
Q5 = rng.standard_normal((2, 8, 20, 8, 8)).astype(np.float32)
R5 = rng.standard_normal((2, 4, 40, 5, 6)).astype(np.float16)    # a transposed conv's crop


@fs.fused_kernel
def lone(a, b, c, d, e, ids, p5, q5, r5):
    return (fs.transpose(a, (1, 0)),                 # 2-D, odd sizes, several cores
            fs.transpose(b, (0, 3, 1, 2)),           # NHWC -> NCHW, float16
            fs.transpose(c, (1, 0, 2)),              # the last axis stays: whole rows move (copy mode)
            fs.transpose(d, (1, 0)),                 # tall and narrow
            fs.transpose(e, (1, 0)),                 # int32 bits exact
            fs.concatenate([e, e[:, :2]], axis=1),   # lone concatenate
            b[:, 1:3, ::2, 2:],                      # lone slice with an outer step
            fs.take(e, ids),                         # lone gather
            fs.concatenate([p5, q5], axis=3),        # middle axis: 320 outer indices, 2 boxes
            b[:, 1:3, 1:30:2, ::3],                  # a step on the last axis (pooling taps): picked in UB
            r5[:, :, 1:, :4, :5])                    # 312 outer indices: more boxes than a view takes


ARGS = (A, B, C, D, E, IDS, P5, Q5, R5)


def _expected():
    return (A.T, B.transpose(0, 3, 1, 2), C.transpose(1, 0, 2), D.T, E.T, np.concatenate([E, E[:, :2]], 1),
            B[:, 1:3, ::2, 2:], E[IDS], np.concatenate([P5, Q5], 3), B[:, 1:3, 1:30:2, ::3],
            R5[:, :, 1:, :4, :5])


@pytest.mark.parametrize("target", ["ascend910b", "ascend310p"])
def test_lone_views_and_transposes_print_and_simulate(target):
    k = lone.compile(*[fs.spec(x.shape, x.dtype) for x in ARGS], target=target)
    kinds = [p.kernel_kind for p in k.kernels]
    assert kinds.count("transpose") == 7 and set(kinds) == {"transpose", "vector"}, kinds
    k.check_ascendc()   # every kernel prints
    assert "class KernelLone" in k.source
    for got, want in zip(k.simulate(*ARGS), _expected()):
        np.testing.assert_array_equal(got, want)
    for got, want in zip(k(*ARGS), _expected()):   # the CPU executors agree
        np.testing.assert_array_equal(got, want)


def test_transpose_modes_and_tiles():
    k = lone.compile(*[fs.spec(x.shape, x.dtype) for x in ARGS], target="ascend910b")
    scheds = [p.lowered for p in k.kernels if p.kernel_kind == "transpose"]
    assert [s.mode for s in scheds] == ["transpose", "transpose", "copy", "transpose", "transpose", "gather", "copy"]
    assert scheds[-1].in0 == 5 * 6 and scheds[-1].outer   # the crop's start, its outer axes decoded
    t = scheds[0].tiling({}, k.target)
    assert t.block_dim > 1 and t.total_tiles >= t.block_dim   # the 300 x 257 transpose uses several cores
    assert "transposed element by element" in scheds[0].plan_note
    # the contiguous trailing axes of every tensor are the box's columns: one box per input
    # (one per outer index before, 640 > the 256-box limit, so it did not print)
    cat = next(p.lowered for p in k.kernels if p.kernel_kind == "vector" and p.ops == ["concatenate"]
               and len(p.function.results[0].shape) == 5)
    assert len(cat.views.boxes) == 2 and {b.cols for b in cat.views.boxes} == {8, 64}


def test_transpose_of_too_many_separate_axes_is_located():
    @fs.fused_kernel
    def rev(x):
        return fs.transpose(x, tuple(range(9))[::-1])   # nine axes, none adjacent in the output

    k = rev.compile(fs.spec((2,) * 9, fs.float32), target="ascend910b")
    with pytest.raises(fs.ScheduleError) as exc:
        k.check_ascendc()
    assert "decodes at most 8" in str(exc.value) and "test_lone_views.py" in str(exc.value)
    x = rng.standard_normal((2,) * 9).astype(np.float32)
    np.testing.assert_array_equal(k(x), x.transpose(tuple(range(9))[::-1]))   # still runs on the CPU


def _interpret(sched, x: np.ndarray, like: np.ndarray) -> np.ndarray:
    """The kernel's tile IR, through its text, run by the kernel interpreter."""
    text = print_kernel(kernel_ir(sched))
    assert print_kernel(parse_kernel(text)) == text
    out = np.full(like.shape, 99, like.dtype)
    run_kernel(parse_kernel(text), [x], [out])
    return out


@fuzz_settings(scale=0.06)
@given(shape=st.lists(st.integers(1, 7), min_size=1, max_size=5), data=st.data(),
       dtype=st.sampled_from([np.float32, np.float16, np.int8]))
def test_transpose_tiling_covers_every_element(shape, data, dtype):
    """Any permutation, odd sizes, size 1: the kernel's loop-level tile IR, run by the kernel
    interpreter (which checks every DMA's GM and UB bounds and the queue protocol), writes each
    output element from the right input element, and its text round-trips (the printed kernel
    runs under simulate above)."""
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    x = np.arange(int(np.prod(shape))).reshape(shape).astype(dtype)

    @fs.fused_kernel
    def tr(v):
        return fs.transpose(v, perm)

    k = tr.compile(fs.spec(tuple(shape), dtype), target="ascend910b")
    if not k.kernels:   # the identity permutation: canonicalize drops it, no kernel at all
        np.testing.assert_array_equal(k(x), x.transpose(perm))
        return
    (plan,) = k.kernels
    assert plan.kernel_kind == "transpose" and plan.printable
    sched = schedule_transpose_kernel(plan.function, k.target)
    np.testing.assert_array_equal(_interpret(sched, x, x.transpose(perm)), x.transpose(perm))


@fuzz_settings(scale=0.06)
@given(shape=st.lists(st.integers(1, 9), min_size=1, max_size=4), data=st.data())
def test_stepped_slice_tiling_covers_every_element(shape, data):
    """A slice with a step on the last axis (a lone kernel of the transpose kind, gather mode):
    the printed tile loop reads the right element for every output element."""
    idx = []
    for d in shape:
        lo = data.draw(st.integers(0, d - 1))
        hi = data.draw(st.integers(lo + 1, d))
        idx.append(slice(lo, hi, data.draw(st.integers(1, 3))))
    last = idx[-1]
    idx[-1] = slice(last.start, last.stop, data.draw(st.integers(2, 4)))
    idx = tuple(idx)
    x = np.arange(int(np.prod(shape))).reshape(shape).astype(np.int32)
    k = fs.fused_kernel(lambda v: v[idx]).compile(fs.spec(tuple(shape), np.int32), target="ascend910b")
    if not k.kernels:
        return
    (plan,) = k.kernels
    if plan.kernel_kind == "vector":   # one output column: a view kernel takes it (no step matters)
        return
    assert plan.kernel_kind == "transpose" and plan.lowered.mode == "gather" and plan.printable
    np.testing.assert_array_equal(_interpret(plan.lowered, x, x[idx]), x[idx])


def test_an_empty_slice_kernel_is_a_located_refusal_not_a_crash():
    """A lone slice that reads nothing (found through a transposed conv whose padding crops its
    whole input) raised IndexError while compiling; it is a located 'does not print' now, and
    the CPU executors give numpy's empty result."""
    @fs.fused_kernel(target="ascend910b")
    def empty(x):
        return x[:, :, :, 1:1]

    x = np.ones((1, 1, 1, 1), np.float32)
    k = empty.compile(x)
    assert k(x).shape == (1, 1, 1, 0)
    (plan,) = k.kernels
    assert not plan.printable and "a view reads no element of any input" in str(plan.error)
    assert f"{__file__}:" in str(plan.error)


def _sliced(idx):
    return lambda v: v[idx]


def test_a_lone_stepped_slice_runs_natively():
    """A lone slice with a step on the last axis (the transpose kind's gather mode on the chip)
    runs on the host's strided copy, never on the numpy reference, including from a bound call."""
    x = np.arange(5 * 40, dtype=np.float32).reshape(5, 40)
    for idx in ((slice(None), slice(1, None, 3)), (slice(None, None, 2), slice(3, 39, 5))):
        k = fs.fused_kernel(_sliced(idx), target="ascend910b").compile(x)
        assert [k.executor(p) for p in k.kernels] == ["transpose"]
        for _ in range(2):   # the second call runs the bound program
            np.testing.assert_array_equal(k(x), x[idx])

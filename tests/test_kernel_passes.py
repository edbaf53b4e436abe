"""The passes every kind's whole kernel runs (tile/kernel_passes.py): double buffering of the
per-tile queues within the UB budget and the chip's queue limits, then verification; the dumps
after each; and that a double-buffered kernel computes what it did (interpreter and simulate)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import fusedsl as fs
from fusedsl.backend_cpu.kernel_interp import run_kernel
from fusedsl.lower.kinds import kernel_ir, kernel_words
from fusedsl.targets import get_target
from fusedsl.tile.kernel import parse_kernel, print_kernel, ub_plan
from fusedsl.tile.kernel_passes import double_buffer, run_kernel_passes
from fusedsl.tile.verify import TileVerifyError

T = get_target("ascend910b")

# a per-tile kernel: x in, y out, one scratch buffer, and a prologue queue
KERNEL = """kernel @k kind column
note "a test kernel"
field totalTiles
field tilesPerCore
field n
gm x float32 in 0
gm w float32 in 1
gm y float32 out 0
queue q_w VECIN depth 1 float32 elems t.n
queue q_x VECIN depth 1 float32 elems t.n
queue b_t VECCALC depth 1 float32 elems t.n
queue q_y VECOUT depth 1 float32 elems t.n
stage Prologue once:
  alloc w = q_w
  copyin w <- w[0] rows 1 ; cols t.n ; gm t.n ; ub t.n
  enque q_w w
  deque w = q_w
  free q_w w
stage CopyIn(tile):
  alloc x = q_x
  copyin x <- x[tile * t.n] rows 1 ; cols t.n ; gm t.n ; ub t.n
  enque q_x x
stage Compute:
  deque x = q_x
  alloc y = q_y
  alloc t = b_t
  vec Exp t <- x count t.n
  vec Adds y <- t scalar #1.0 count t.n
  enque q_y y
  free q_x x
stage CopyOut(tile):
  deque y = q_y
  copyout y[tile * t.n] <- y rows 1 ; cols t.n ; gm t.n ; ub t.n
  free q_y y
words 4 2 1024
"""


def _depths(k):
    return {q.name: q.depth for q in k.queues}


def test_per_tile_queues_get_a_second_buffer_inputs_first_within_the_budget():
    k = parse_kernel(KERNEL)
    one = 1024 * 4
    # room for everything: both per-tile queues double-buffered; the prologue queue and the TBuf are not
    assert _depths(double_buffer(k, T, 10 * one)) == {"q_w": 1, "q_x": 2, "b_t": 1, "q_y": 2}
    # room for one more buffer only: the input's
    assert _depths(double_buffer(k, T, 5 * one)) == {"q_w": 1, "q_x": 2, "b_t": 1, "q_y": 1}
    # no room: unchanged, the very same kernel
    assert double_buffer(k, T, 4 * one) is k
    assert sum(b * n for _, _, b, n in ub_plan(double_buffer(k, T, 5 * one))) == 5 * one


def test_queue_limit_and_symbolic_sizes_keep_one_buffer():
    k = parse_kernel(KERNEL)
    # the chip's limit of queue buffers per position (ASCENDC.md 1.3) holds: VECIN already has 2 of 2
    tight = dataclasses.replace(T, max_queue_buffers_per_position=2)
    assert _depths(double_buffer(k, tight, 10 << 20))["q_x"] == 1
    assert _depths(double_buffer(k, tight, 10 << 20))["q_y"] == 2
    # no static words: the host tiling sizes the tiles for the depths the kernel was lowered with
    assert double_buffer(dataclasses.replace(k, words=()), T, 10 << 20).queues == k.queues


def test_the_passes_snapshot_each_change_and_verify_the_result():
    k = parse_kernel(KERNEL)
    snaps = []
    out = run_kernel_passes(k, T, 10 * 4096, snaps)
    assert [name for name, _ in snaps] == ["kernel-lowered", "kernel-double-buffer"]
    assert "queue q_x VECIN depth 2" in snaps[1][1] and snaps[1][1] == print_kernel(out)
    broken = parse_kernel(KERNEL.replace("  vec Exp t <- x count t.n\n", "  vec Exp t <- z count t.n\n"))
    with pytest.raises(TileVerifyError, match="tensor z is used before it is taken from a queue"):
        run_kernel_passes(broken, T)


def test_double_buffered_kernel_interprets_like_before():
    k = parse_kernel(KERNEL)
    x, w = np.linspace(-2, 2, 4 * 1024).astype(np.float32), np.ones(1024, np.float32)
    want, got = np.zeros(4 * 1024, np.float32), np.zeros(4 * 1024, np.float32)
    run_kernel(k, [x, w], [want])
    run_kernel(double_buffer(k, T, 10 * 4096), [x, w], [got])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(want, np.exp(x) + 1, rtol=1e-6)


def test_cube_kernels_print_and_simulate_double_buffered(tmp_path, monkeypatch):
    """A matmul with an epilogue: its C tile and result queues get their second buffer (the
    UB has room), the dumps show the kernel before and after, and the printed Ascend C runs
    under simulate like the LLVM call."""
    monkeypatch.setenv("FUSEDSL_DUMP_IR", str(tmp_path))
    g = np.random.default_rng(1)
    x, w, b = (g.standard_normal(s).astype(np.float32) for s in ((40, 24), (24, 72), (72,)))
    comp = fs.fused_kernel(lambda x, w, b: fs.relu(x @ w + b), target="ascend910b").compile(x, w, b)
    (plan,) = comp.kernels
    k = kernel_ir(plan.lowered)
    assert _depths(k)["q_c"] == 2 and _depths(k)["q_y0"] == 2
    before = (tmp_path / f"tile-{plan.name}-00-kernel-lowered.tile").read_text()
    after = (tmp_path / f"tile-{plan.name}-01-kernel-double-buffer.tile").read_text()
    assert "queue q_c VECIN depth 1" in before and "queue q_c VECIN depth 2" in after
    assert after == print_kernel(k) == (tmp_path / f"tile-{plan.name}-kernel.tile").read_text()
    assert "InitBuffer(q_c, 2, " in comp.source
    outs = [np.zeros((40, 72), np.float32)]
    run_kernel(k, [x, w, b], outs, kernel_words(plan.lowered, plan.tiling))
    want = comp(x, w, b)
    np.testing.assert_array_equal(outs[0], want)
    np.testing.assert_allclose(comp.simulate(x, w, b), want, rtol=1e-5, atol=1e-5)

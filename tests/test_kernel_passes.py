"""The passes every kind's whole kernel runs (tile/kernel_passes.py): the choice among a static
kind's candidate tilings by the walked cost model, double buffering of the per-tile queues within
the UB budget and the chip's queue limits, then verification; the dumps after each; and that a
re-tiled or double-buffered kernel computes what it did (interpreter and simulate)."""
from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest

import fusedsl as fs
from fusedsl.backend_cpu.kernel_interp import run_kernel
from fusedsl.lower import kinds
from fusedsl.lower.kinds import kernel_ir, kernel_words
from fusedsl.targets import get_target
from fusedsl.tile.kernel import print_kernel, ub_plan
from fusedsl.tile.parse import parse_kernel
from fusedsl.lower.row import compute_row_tiling
from fusedsl.lower.cube import schedule_cube_kernel
from fusedsl.lower.cube_tile import cube_tile_kernel
from fusedsl.tile import kernel_cost, kernel_passes
from fusedsl.tile.kernel_cost import kernel_work, launch_work
from fusedsl.tile.kernel_passes import choose_tiling, double_buffer, run_kernel_passes
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
    (after,) = [f.read_text() for f in tmp_path.glob(f"tile-{plan.name}-0*-kernel-double-buffer.tile")]
    assert "queue q_c VECIN depth 1" in before and "queue q_c VECIN depth 2" in after
    assert after == print_kernel(k) == (tmp_path / f"tile-{plan.name}-kernel.tile").read_text()
    assert "InitBuffer(q_c, 2, " in comp.source
    outs = [np.zeros((40, 72), np.float32)]
    run_kernel(k, [x, w, b], outs, kernel_words(plan.lowered, plan.tiling))
    want = comp(x, w, b)
    np.testing.assert_array_equal(outs[0], want)
    np.testing.assert_allclose(comp.simulate(x, w, b), want, rtol=1e-5, atol=1e-5)


def test_tiling_pass_keeps_the_cheapest_candidate_that_fits():
    """Words given as candidates: one whose UB plan exceeds the budget is never taken; of the
    others the walk's cheapest; the lowering's own on a tie; the result carries no candidates."""
    k = parse_kernel(KERNEL)   # 4 tiles of 1024, two per core
    one_core = (4, 4, 1024)
    too_big = (1, 1, 4096)      # one tile of 4096: 4 x the UB of the others
    cand = dataclasses.replace(k, candidates=(one_core, too_big))
    text = print_kernel(cand)
    assert "candidate 4 4 1024\ncandidate 1 1 4096\n" in text and print_kernel(parse_kernel(text)) == text
    budget = 4 * 4 * 1024 * 2
    out = choose_tiling(cand, T, budget)
    assert out.candidates == () and out.words in ((4, 2, 1024), one_core)
    times = {w: kernel_work(k, w).time_us(T) for w in ((4, 2, 1024), one_core)}
    assert out.words == min(times, key=lambda w: (times[w], w != (4, 2, 1024)))
    assert choose_tiling(dataclasses.replace(k, candidates=(too_big,)), T, budget).words == k.words
    # with room for it, the one tile of 4096 is a candidate like the others: the walk decides
    roomy = {w: kernel_work(k, w).time_us(T) for w in ((4, 2, 1024), one_core, too_big)}
    assert choose_tiling(cand, T, 10 * 4 * 4096).words == min(roomy, key=lambda w: (roomy[w], w != (4, 2, 1024)))
    assert len(set(roomy.values())) == 3   # (distinct figures: the choice is not a tie-break)


def test_a_kernel_passed_before_takes_the_same_result_without_a_walk(monkeypatch):
    """run_kernel_passes keeps its result by the lowered kernel's text, the target and the budget:
    the same kernel again (a model's repeated layers, a notebook cell run again) gets the same
    kernel -- words, TilingChoice -- without walking its candidates; another budget is weighed
    again, and a dump (snapshots) runs every pass again to show it."""
    cand = dataclasses.replace(parse_kernel(KERNEL), candidates=((4, 4, 1024), (1, 1, 4096)))
    text = print_kernel(cand)
    first = run_kernel_passes(parse_kernel(text), T, 10 * 4 * 4096)
    walks = []
    real = kernel_cost._walk_kernel
    monkeypatch.setattr(kernel_cost, "_walk_kernel", lambda *a: walks.append(a[1]) or real(*a))
    again = run_kernel_passes(parse_kernel(text), T, 10 * 4 * 4096)
    assert walks == [] and again is first and again.choice.weighed == 3 and again.candidates == ()
    small = run_kernel_passes(parse_kernel(text), T, 4 * 4 * 1024 * 2)   # the 4096-element tile no longer fits
    assert walks and (1, 1, 4096) not in walks and small.choice.weighed == 2
    walks.clear()
    snaps = []
    dumped = run_kernel_passes(parse_kernel(text), T, 10 * 4 * 4096, snaps)
    assert walks and dumped is not first and print_kernel(dumped) == print_kernel(first)
    assert [name for name, _ in snaps][:2] == ["kernel-lowered", "kernel-tiling"]


def test_row_kernel_takes_the_walked_tiling(tmp_path, monkeypatch):
    """softmax over [1000, 48] float32 on 910B: the row kind's heuristic (16 KB per core) gives 12
    cores of one 84-row tile; its per-row vector calls make it compute-bound, and the walk picks
    tiles of 11 rows on 46 cores, two per core (19.07 -> 8.79 us modelled).  The table, the
    printed words and simulate use the chosen tiling; GM bytes are unchanged; the dumps show the
    candidates before the pass and the chosen words after."""
    monkeypatch.setenv("FUSEDSL_DUMP_IR", str(tmp_path))
    x = np.random.default_rng(3).standard_normal((1000, 48)).astype(np.float32)
    comp = fs.fused_kernel(lambda x: fs.softmax(x), target="ascend910b").compile(x)
    (plan,) = comp.kernels
    heuristic = compute_row_tiling(plan.lowered, {}, comp.target)
    assert (heuristic.block_dim, heuristic.tile_rows) == (12, 84)
    k = kernel_ir(plan.lowered)
    assert tuple(k.words) == tuple(plan.tiling.words) != tuple(heuristic.words)
    chosen, before = kernel_work(k, plan.tiling.words), kernel_work(k, heuristic.words)
    assert chosen.time_us(comp.target) < 0.6 * before.time_us(comp.target)
    assert chosen.gm_bytes == before.gm_bytes
    rep = comp.report()
    assert rep.kernels[0].block_dim == plan.tiling.block_dim > 12
    assert rep.model_time_us_fused == pytest.approx(chosen.time_us(comp.target))
    lowered = (tmp_path / f"tile-{plan.name}-00-kernel-lowered.tile").read_text()
    tiled = (tmp_path / f"tile-{plan.name}-01-kernel-tiling.tile").read_text()
    assert "\ncandidate " in lowered and "\ncandidate " not in tiled
    assert "words " + " ".join(map(str, plan.tiling.words)) in tiled
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(comp.simulate(x), e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_row_tiling_never_adds_gm_traffic():
    """layer_norm's gamma and beta are read once per core: a candidate on more cores reads them
    more often, and the pass does not trade those bytes for time (the chip's HBM is shared)."""
    rng = np.random.default_rng(4)
    for rows, cols in ((512, 768), (19, 33), (3000, 40)):
        x, g, b = (rng.standard_normal(s).astype(np.float32) for s in ((rows, cols), (cols,), (cols,)))
        comp = fs.fused_kernel(lambda x, g, b: fs.layer_norm(x, g, b), target="ascend910b").compile(x, g, b)
        (plan,) = comp.kernels
        k = kernel_ir(plan.lowered)
        heuristic = compute_row_tiling(plan.lowered, {}, comp.target)
        chosen, before = kernel_work(k, plan.tiling.words), kernel_work(k, heuristic.words)
        assert chosen.gm_bytes <= before.gm_bytes
        assert chosen.time_us(comp.target) <= before.time_us(comp.target)


def test_cube_kernel_takes_the_walked_split():
    """float16 [128, 64] @ [64, 96] + bias + leaky_relu on 910B: the cube lowering offers its
    formula's pick first, then the splits, base blocks and layouts the formula ranks best that
    move no more GM bytes (lower/cube._offered), as whole candidate kernels; the pass `tiling`
    walks each and keeps, of those moving no more GM bytes than the first, the fewest bytes within
    2 % of the fastest.  The launch, the plan line, the report's figures and its tiling line are
    the kept kernel's; offered in another order, the rule takes the faster kernel with fewer bytes,
    and refuses a faster one that moves more bytes than the lowering's own; the candidate kernels
    print and parse back."""
    g = np.random.default_rng(7)
    x, w, b = (g.standard_normal(s).astype(np.float16) for s in ((128, 64), (64, 96), (96,)))
    comp = fs.fused_kernel(lambda x, w, b: fs.leaky_relu(x @ w + b), target="ascend910b").compile(x, w, b)
    (plan,) = comp.kernels
    fresh = schedule_cube_kernel(plan.function, T, 1.0, 0.8)   # the lowering alone, before the passes
    cann = copy.copy(fresh)
    cann.tiling_fields, cann.offers = fresh.cann_tiling, ()
    lowered = cube_tile_kernel(fresh)
    kernels = (lowered, *lowered.candidates, cube_tile_kernel(cann))   # CANN's rule: not offered (more bytes)
    assert len(kernels) - 1 == len(fresh.offers) >= 5 and fresh.cann_tiling not in [t for t, _ in fresh.offers]
    text = print_kernel(lowered)
    assert text.count("\ncandidate kernel:\n") == len(kernels) - 2 and print_kernel(parse_kernel(text)) == text
    walked = [launch_work(k, T) for k in kernels]
    figures = [(wk.time_us(T), wk.gm_bytes) for wk in walked]

    def rule(order):   # the pass's rule over the kernels in this order (the first the lowering's own)
        cap = figures[order[0]][1]
        fastest = min(figures[i][0] for i in order if figures[i][1] <= cap)
        return min((i for i in order if figures[i][1] <= cap and figures[i][0] <= fastest * 1.02),
                   key=lambda i: (figures[i][1], figures[i][0], order.index(i)))
    pick = rule(list(range(len(kernels) - 1)))
    assert pick == 0 and figures[0] == min(figures)   # here the formula's pick is also the walk's fastest
    assert figures[-1][0] > 1.01 * figures[0][0] and figures[-1][1] > figures[0][1]   # CANN's rule: slower, more bytes
    chosen = fresh.offers[pick][0]
    assert plan.lowered.tiling_fields == chosen and plan.lowered.plan_note == fresh.offers[pick][1]
    assert (chosen.used_core_num, chosen.objects_per_core, figures[pick][1]) == (16, 1, 157184)
    choice = plan.lowered.tiling_choice
    assert (choice.index, choice.weighed, choice.time_us, choice.gm_bytes) == (pick, len(figures) - 1, *figures[pick])
    rep = comp.report()
    row = rep.kernels[0]
    assert row.block_dim == walked[pick].block_dim == 16 and row.model.gm_bytes == figures[pick][1]
    assert row.model_time_us == pytest.approx(figures[pick][0])
    assert (f"tiling: chosen by the walk of its tile IR from {len(figures) - 1} candidates: {figures[pick][0]:.2f} us, "
            "157184 GM bytes, the fastest\n") in str(rep)

    def offered(order):
        return dataclasses.replace(kernels[order[0]], candidates=tuple(kernels[i] for i in order[1:]))
    # CANN's rule offered first: the walk takes the faster kernel that moves fewer bytes
    order = [len(kernels) - 1, *range(len(kernels) - 1)]
    out = run_kernel_passes(offered(order), T)
    assert order[out.choice.index] == rule(order) == 0 and out.note == fresh.offers[0][1]
    assert out.choice.own_gm == figures[-1][1] and out.choice.reason == "the fastest"
    # the kernel moving the fewest bytes offered first: none moving more is taken, however fast
    low = min(range(len(kernels)), key=lambda i: figures[i][1])
    order = [low, *(i for i in range(len(kernels)) if i != low)]
    out = run_kernel_passes(offered(order), T)
    assert order[out.choice.index] == rule(order) == low and figures[low][0] > 1.1 * figures[0][0]
    assert (f"a faster one ({figures[0][0]:.2f} us) would move 157184 GM bytes, more than the lowering's own "
            f"tiling ({figures[low][1]})") in out.choice.reason


def test_a_kernel_of_another_name_takes_the_result_renamed():
    """_PASSED leaves the kernel's name out of its key: a model's repeated layers -- kernels of one
    text but for their names -- take the first one's passes under their own names, each equal to
    the passes run afresh on its own lowering (a dump's snapshots run them without the memo)."""
    def model(x, w1, w2, g, b):
        for _ in range(5):
            x = x + (fs.gelu(fs.layer_norm(x, g, b) @ w1) @ w2) * 0.5
        return x
    specs = (fs.spec((16, 32), "float32"), fs.spec((32, 64), "float32"), fs.spec((64, 32), "float32"),
             fs.spec((32,), "float32"), fs.spec((32,), "float32"))
    kernel_passes._PASSED.clear()
    kinds._LOWERED.clear()
    hits = []
    real_find = kernel_passes._PASSED.find
    kernel_passes._PASSED.find = lambda k, context: hits.append(real_find(k, context)) or hits[-1]
    try:
        comp = fs.fused_kernel(model, target="ascend910b").compile(*specs)
    finally:
        del kernel_passes._PASSED.find
    # blocks 3 and 4 take block 2's kernels (the first block's walk their candidates; the last block's
    # second kernel differs: no layer_norm after it)
    assert sum(hit is not None for hit, _ in hits) >= 3
    for p in comp.kernels:
        got = kernel_ir(p.lowered)
        assert got.name == p.name
        fresh = run_kernel_passes(kinds.KERNEL_IR[type(p.lowered)](p.lowered), comp.target,
                                  getattr(p.lowered, "ub_budget", None), snapshots=[])
        assert print_kernel(got) == print_kernel(fresh)
    args = [np.random.default_rng(i).standard_normal(s.shape).astype(np.float32) * 0.3 for i, s in enumerate(specs)]
    old, fs.config.executor = fs.config.executor, "reference"   # numpy's semantics, op by op
    try:
        want = comp(*args)
    finally:
        fs.config.executor = old
    np.testing.assert_allclose(comp.simulate(*args), want, rtol=2e-3, atol=2e-3)   # the printed kernels

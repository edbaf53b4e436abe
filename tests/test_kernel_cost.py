"""The report's figures from the tile IR (tile/kernel_cost.py, issue 19 item 5): the modelled time,
cores and pipes of every kernel are priced on the printed program's own copies, vector calls and
(kernels with Matmul objects) cube tiles, and the walk agrees with the vector kind's tiling formula
(tile/tiling_cost.py, which the printed host code evaluates too) and with the matmul tiling
search's formula (cost.matmul_split_cycles) wherever both apply."""
import dataclasses
import gc

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import fusedsl as fs
from fusedsl import cost
from fusedsl.lower.kinds import KERNEL_IR, kernel_ir, kernel_words
from fusedsl.tile.kernel import print_kernel
from fusedsl.tile.parse import parse_kernel
from fusedsl.report import _instances
from fusedsl.lower.cube import schedule_cube_kernel
from fusedsl.lower.cube_tile import cube_tile_kernel
from fusedsl.targets import get_target
from fusedsl.tile import kernel_cost, kernel_passes
from fusedsl.tile.kernel_cost import kernel_gm_bytes, kernel_work, launch_work, process_work

from conftest import fuzz_settings

TARGETS = ["ascend910b", "ascend310p", "ascend910"]


def _work(k, plan):
    return kernel_work(kernel_ir(plan.lowered), kernel_words(plan.lowered, plan.tiling))


UNARY = {"relu": fs.relu, "exp": fs.exp, "sigmoid": fs.sigmoid, "abs": fs.abs, "sqrt": fs.sqrt}


@fuzz_settings(0.05)   # 25 examples at the default scale: each compiles a kernel
@given(op=st.sampled_from(sorted(UNARY)), rows=st.integers(1, 700), cols=st.integers(1, 300),
       bcast=st.booleans(), dtype=st.sampled_from(["float32", "float16"]), target=st.sampled_from(TARGETS))
@example(op="abs", rows=536, cols=13, bcast=True, dtype="float16", target="ascend910b")   # (a CI run's find)
def test_vector_walk_equals_the_tiling_formula(op, rows, cols, bcast, dtype, target):
    """Two implementations of one model: the tiling choice's cycles (integers, what the host code
    evaluates per candidate) and the walk of the printed program (every copy and call).  The
    formula prices every tile as a full one and a broadcast row's copy to the tile's other rows as
    one Copy; the walk prices a tail tile (or a tile larger than the data) at its real size and
    the row's unaligned tail as the element moves the kernel makes.  So they are equal when the
    tiles divide the data and rows are whole 32-byte blocks, and within 25 % otherwise -- once the
    walk's element moves of an unaligned broadcast row are taken out: the formula prices the row's
    copy to the tile's other rows as one Copy, where the kernel's prologue moves the row's tail past
    its last whole 32-byte block element by element (a GetValue and a SetValue each), and those
    grow with the tile's rows (536 float16 rows of 13 broadcast: 67 rows a tile, 66 x 13 moves, the
    walk 26 % above the formula with them, 4 % below without)."""
    a = np.ones((cols,) if bcast else (rows, cols), dtype)
    b = np.ones((rows, cols), dtype)
    k = fs.fused_kernel(lambda x, y: UNARY[op](x) * 2.0 + y).compile(a, b, target=target)
    (plan,) = k.kernels
    choice = plan.tiling.choice
    work = _work(k, plan)
    assert work.block_dim == plan.tiling.block_dim
    t = plan.tiling
    whole_tiles = t.R % t.tile_rows == 0 and t.C % t.tile_cols == 0 if t.rows_mode else t.C % t.tile_cols == 0
    aligned = cols * np.dtype(dtype).itemsize % 32 == 0
    rel = 1e-4 if whole_tiles and aligned else 0.25
    block = 32 // np.dtype(dtype).itemsize
    moves = (t.tile_rows - 1) * (cols - cols // block * block) if bcast and t.rows_mode else 0
    moved_us = moves * 2 * cost.SCALAR_ACCESS_CYCLES / k.target.clock_mhz
    assert work.time_us(k.target) - moved_us == pytest.approx(choice.cycles.time_us(k.target), rel=rel)
    assert k.report().kernels[0].model_time_us == pytest.approx(work.time_us(k.target), rel=1e-12)


KINDS = {   # kind -> (program, arguments)
    "row": (lambda x, y: fs.softmax(x + y), (np.ones((40, 300), np.float32), np.ones((1, 300), np.float32))),
    "row-long": (lambda x, m: fs.softmax(x + m), (np.ones((2, 70000), np.float32), np.ones((1, 70000), np.float32))),
    "column": (lambda x: fs.sum(x, axis=0), (np.ones((512, 96), np.float16),)),
    "transpose": (lambda x: fs.transpose(x), (np.ones((300, 200), np.float32),)),
    "view": (lambda a, b: fs.relu(fs.concatenate([a, b], 1))[:, 8:40],
             (np.ones((256, 24), np.float32), np.ones((256, 40), np.float32))),
    "take": (lambda t, i, b: fs.relu(fs.take(t, i) + b),
             (np.ones((50, 32), np.float32), np.arange(7, dtype=np.int32), np.ones(32, np.float32))),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", sorted(KINDS))
def test_report_reads_the_walk_for_every_kind(case, target):
    """The table's blockDim, the model line and the data all come from the walk: they cannot
    disagree, and the GM bytes are what simulate measures (test_report_figures)."""
    fn, args = KINDS[case]
    k = fs.fused_kernel(fn).compile(*args, target=target)
    rep = k.report()
    for plan, row in zip(k.kernels, rep.kernels):
        work = _work(k, plan)
        assert work is not None and work.block_dim > 0
        assert row.model.block_dim == work.block_dim == row.block_dim
        assert row.model_time_us == work.time_us(k.target)
        assert (row.model.mte2_cycles, row.model.vec_cycles, row.model.mte3_cycles) == (work.mte2, work.vec, work.mte3)
        assert row.gm_bytes == work.gm_bytes
    assert rep.model_time_us_fused == pytest.approx(sum(r.model_time_us for r in rep.kernels))


def test_lone_kernel_is_its_own_unfused_baseline():
    """A program of one op: fused and unfused are the same kernel, priced by the same walk
    (before, the baseline of a lone transpose took the graph model: 6.36 us against 24.68)."""
    for fn, args in (KINDS["transpose"], KINDS["column"], KINDS["row"]):
        rep = fs.fused_kernel(fn).compile(*args, target="ascend910b").report()
        if len(rep.kernels) == 1 and len(rep.kernels[0].ops) == 1:
            assert rep.model_time_us_unfused == pytest.approx(rep.model_time_us_fused)


def test_transpose_prices_its_scalar_moves():
    """A transpose tile moves element by element through the scalar unit (GetValue / SetValue):
    the walk charges two scalar accesses per element on the busiest core, which the graph
    model's one Copy per tile did not see."""
    k = fs.fused_kernel(lambda x: fs.transpose(x)).compile(np.ones((300, 200), np.float32), target="ascend910b")
    (plan,) = k.kernels
    work = _work(k, plan)
    tiles_per_core = plan.tiling.words[list(kernel_ir(plan.lowered).field_offsets()).index("tilesPerCore")]
    assert tiles_per_core == 1 and work.vec == 64 * 64 * 2 * cost.SCALAR_ACCESS_CYCLES


def test_hand_priced_kernel():
    """x * 2.0 over 3,500 float32 on one core in tiles of 1,000 (words chosen here, the kernel's
    text parsed back): tiles of 1000, 1000, 1000 and 500 elements, each a load, one Muls and a
    store priced by cost.py's published coefficients; double-buffered: each tile's slowest pipe
    plus the first tile's others; heads by the 14,000-byte input."""
    k = fs.fused_kernel(lambda x: x * 2.0).compile(np.ones(3500, np.float32), target="ascend910b")
    whole = parse_kernel(print_kernel(kernel_ir(k.kernels[0].lowered)))
    fields = dict(R=1, C=3500, Cpad=3500, tileRows=1, tileCols=1000, colTiles=4, totalTiles=4, tilesPerCore=4,
                  blockDim=1, tileElems=1000, rowsMode=0, dims=3500, st0=1)
    words = [fields[f.name] for f in whole.fields]
    work = kernel_work(whole, words)
    tiles = [(cost.load_cycles(n * 4, 1), cost.api_cycles("Muls", fs.float32, n), cost.store_cycles(n * 4, 1))
             for n in (1000, 1000, 1000, 500)]
    core = sum(max(t) for t in tiles) + sum(tiles[0]) - max(tiles[0])
    head = cost.heads(1, 14000)
    assert (work.block_dim, work.gm_bytes) == (1, 28000)
    assert work.mte2 == pytest.approx(sum(t[0] for t in tiles))
    assert work.vec == pytest.approx(sum(t[1] for t in tiles))
    assert work.mte3 == pytest.approx(sum(t[2] for t in tiles))
    assert work.head == pytest.approx(head)
    assert work.cycles == pytest.approx(core + head)
    assert work.time_us(k.target) == pytest.approx((core + head) / k.target.clock_mhz + cost.LAUNCH_US)


def test_unknown_api_has_no_silent_cost():
    with pytest.raises(KeyError):
        cost.vector_call_cycles("Frobnicate", fs.float32, 128)
    assert cost.vector_call_cycles("Cast", fs.float32, 128, fs.float32) == 0.0
    assert cost.vector_call_cycles("And", fs.float16, 128) == cost.api_cycles("Add", fs.float16, 128)


MATMUL_KINDS = {   # kind -> (program, arguments): kernels with Matmul objects
    "cube": (lambda a, b, c: fs.relu(a @ b + c),
             (np.ones((200, 96), np.float16), np.ones((96, 72), np.float16), np.ones(72, np.float16))),
    "cube-batch": (lambda a, b: fs.matmul(a, b) * 0.5, (np.ones((3, 40, 64), np.float16), np.ones((3, 64, 24), np.float16))),
    "conv": (lambda x, w: fs.relu(fs.conv2d(x, w, padding=1)),
             (np.ones((2, 4, 23, 19), np.float16), np.ones((8, 4, 3, 3), np.float16))),
    "attention": (lambda q, k, v: fs.attention(q, k, v, causal=True),
                  (np.ones((1, 2, 130, 64), np.float16),) * 3),
}


def _process_work(k, plan):
    return process_work(kernel_ir(plan.lowered), k.target, plan.tiling.block_dim,
                        kernel_words(plan.lowered, plan.tiling))


CUBE_TARGETS = ["ascend910b", "ascend310p"]   # ascend910 has no Matmul API: nothing printed to walk


@pytest.mark.parametrize("target", CUBE_TARGETS)
@pytest.mark.parametrize("case", sorted(MATMUL_KINDS))
def test_report_reads_the_walk_of_matmul_kernels(case, target):
    """A kernel with Matmul objects is priced on its tile IR too (process_work): the table's
    blockDim, the model line's time and pipes (the cube's cycles and the vector work as the compute
    pipe) and its GM bytes are the walk's; the walk's own GM count, instance by instance as the chip
    starts them, equals kernel_gm_bytes' (the figure simulate measures, test_report_figures)."""
    fn, args = MATMUL_KINDS[case]
    k = fs.fused_kernel(fn).compile(*args, target=target)
    rep = k.report()
    walked = 0
    for plan, row in zip(k.kernels, rep.kernels):
        if plan.lowered is None or plan.tiling is None or kernel_ir(plan.lowered).process is None:
            continue
        walked += 1
        work = _process_work(k, plan)
        assert work is not None and work.cube > 0
        assert row.model.block_dim == work.block_dim == row.block_dim
        assert row.model_time_us == pytest.approx(work.time_us(k.target))
        assert row.model.vec_cycles == pytest.approx(work.vec + work.cube)
        assert row.gm_bytes == work.gm_bytes == kernel_gm_bytes(kernel_ir(plan.lowered),
                                                                kernel_words(plan.lowered, plan.tiling),
                                                                _instances(plan.lowered))
    assert walked >= 1


@pytest.mark.parametrize("target", CUBE_TARGETS)
@pytest.mark.parametrize("m,kk,n", [(512, 1024, 256), (1024, 1024, 1024), (64, 4096, 128)])
def test_matmul_walk_agrees_with_the_tiling_search_formula(m, kk, n, target):
    """Two implementations of one model: cost.matmul_split_cycles (the formula lower/cube.py picks
    a split and base block by) and the walk of the printed matmul.  With tiles that divide the
    data they price the same loads and cube fractals; the walk also charges what the formula
    leaves out -- C's float32 -> float16 cast, row by row in UB, and its copy out per tile --
    which puts it up to 6 % above (1024^3 on 310P: 187.1 against 177.7 us)."""
    a, b = np.ones((m, kk), np.float16), np.ones((kk, n), np.float16)
    k = fs.fused_kernel(lambda a, b: a @ b).compile(a, b, target=target)
    (plan,) = k.kernels
    work = _process_work(k, plan)
    graph = cost.function_cost(plan.function, k.target, {}, plan.tiling, plan.name, plan.row)
    assert work.mte2 == pytest.approx(graph.mte2_cycles) and work.cube == pytest.approx(graph.vec_cycles)
    assert work.vec > 0
    assert graph.time_us < work.time_us(k.target) < 1.07 * graph.time_us
    assert work.gm_bytes == graph.gm_bytes


def test_matmul_cube_cycles_are_its_fractals():
    """One core, one base tile: the cube's cycles are the 16 x 16 fractals of the tile over K at the
    chip's rate (a quarter of it for float32 operands), tails rounded up to whole fractals."""
    for dtype, rate in (("float16", 1.0), ("float32", cost.FLOAT32_CUBE_RATE)):
        a, b = np.ones((20, 40), dtype), np.ones((40, 24), dtype)
        k = fs.fused_kernel(lambda a, b: a @ b).compile(a, b, target="ascend910b")
        (plan,) = k.kernels
        work = _process_work(k, plan)
        assert plan.tiling.block_dim == 1
        assert work.cube == pytest.approx(32 * 32 * 40 / (k.target.cube_macs_per_cycle * rate))


def test_attention_walk_prices_its_per_row_vector_calls():
    """The printed flash attention does the row max, the row sum and O's rescale with one vector
    call per row and KV block (no per-row broadcast in the tile IR's calls): the walk charges them,
    so the modelled kernel is vector-bound where the flash model alone said MTE2-bound."""
    q = fs.spec((1, 8, 1024, 128), "float16")
    k = fs.fused_kernel(lambda q, k, v: fs.attention(q, k, v)).compile(q, q, q, target="ascend910b")
    (plan,) = k.kernels
    work = _process_work(k, plan)
    assert work.vec > max(work.mte2, work.cube, work.mte3)
    assert k.report().kernels[0].model.bound == "compute"


@pytest.mark.parametrize("case", ["row", "row-long"])
def test_walks_of_one_kernel_price_each_candidate_as_a_fresh_walk(case):
    """The tiling pass walks one kernel with each candidate's words, and the walks share what they
    learn: a loop pass's tallies (a row, a chunk of a long row) are taken from an earlier walk where
    what the pass reads had the same values; within a walk, a tile or a core whose tiles' variables
    (row0, nrows) give its stages the same values is taken from one walked before.  Each
    candidate's figures equal those of a walk of a fresh copy of the kernel that shares nothing
    and walks every core and tile."""
    fn, args = KINDS[case]
    (plan,) = fs.fused_kernel(fn).compile(*args, target="ascend910b").kernels
    text = print_kernel(KERNEL_IR[type(plan.lowered)](plan.lowered))   # as lowered: with its candidates
    shared = parse_kernel(text)
    assert shared.candidates
    for words in (shared.words, *shared.candidates):
        alone = parse_kernel(text)
        alone.__dict__["_tile_plan"] = None   # (no tile or core taken for another)
        alone = kernel_work(alone, words)
        together = kernel_work(shared, words)
        assert together.gm_bytes == alone.gm_bytes and together.block_dim == alone.block_dim
        for f in ("mte2", "vec", "mte3", "head", "cycles"):
            assert getattr(together, f) == pytest.approx(getattr(alone, f), rel=1e-12), f
    assert shared.__dict__["_shape_facts"][2]   # (the walks did share loop passes)


ALIKE = {   # kernels whose launch has many vector instances, most of them alike
    "colvec": (lambda a, b, c: fs.relu(a @ b + c),
               (np.ones((640, 128), np.float16), np.ones((128, 512), np.float16), np.ones(512, np.float16))),
    "batch-full": (lambda a, b, c: a @ b + c, (np.ones((3, 256, 64), np.float16), np.ones((3, 64, 384), np.float16),
                                               np.ones((3, 256, 384), np.float16))),
}


@pytest.mark.parametrize("target", CUBE_TARGETS)
@pytest.mark.parametrize("case", sorted(ALIKE))
def test_alike_instances_of_a_launch_equal_a_walk_of_each(case, target, monkeypatch):
    """The walk of a launch with Matmul objects takes an instance whose work reads the same values as
    one walked before (its block's sizes: a full block, an edge) from that one and walks only the
    addresses of the blocks it reads (for the HBM's share; an Iterate's body only for values of what
    its addresses read that no instance taken before had): its figures -- and the distinct blocks
    and reads the HBM is priced on -- equal a walk of every instance."""
    fn, args = ALIKE[case]
    (plan,) = fs.fused_kernel(fn).compile(*args, target=target).kernels
    k, words = kernel_ir(plan.lowered), kernel_words(plan.lowered, plan.tiling)
    hbm, taken = [], []
    monkeypatch.setattr(kernel_cost, "ALIKE_INSTANCES", 1)   # (a launch of a few walks each instance)
    monkeypatch.setattr(cost, "hbm_cycles", lambda t, unique, reads: hbm.append((unique, reads)) or 0.0)
    addresses = kernel_cost._Walk.addresses
    monkeypatch.setattr(kernel_cost._Walk, "addresses", lambda w, *a: taken.append(1) or addresses(w, *a))
    bd = plan.tiling.block_dim
    alike = kernel_cost._walk_process_time(k, list(words), plan.lowered.target, bd)
    k.__dict__["_process_plan"] = None   # (no instance taken for another)
    each = kernel_cost._walk_process_time(k, list(words), plan.lowered.target, bd)
    assert len(taken) >= bd // 2, (len(taken), bd)   # many instances were taken from another
    assert alike == each and hbm[0] == hbm[1]


STOPS = {   # cube kernels whose candidates' launches run one to many AI cores, some far slower than others
    "colvec": (lambda a, b, c: fs.relu(a @ b + c),
               (np.ones((640, 128), np.float16), np.ones((128, 512), np.float16), np.ones(512, np.float16))),
    "leaky": (lambda a, b, c: fs.leaky_relu(a @ b + c),
              (np.ones((128, 64), np.float16), np.ones((64, 96), np.float16), np.ones(96, np.float16))),
    "residual": (lambda a, b, c: fs.gelu(a @ b) * c,
                 (np.ones((300, 200), np.float16), np.ones((200, 130), np.float16), np.ones((300, 130), np.float16))),
    "softmax": (lambda a, b: fs.softmax(a @ b), (np.ones((96, 64), np.float16), np.ones((64, 80), np.float16))),
}


def _candidates(fn, args, target):
    """The cube lowering's own kernel with its candidate kernels (before the passes), built afresh."""
    (plan,) = fs.fused_kernel(fn).compile(*args, target=target).kernels
    return cube_tile_kernel(schedule_cube_kernel(plan.function, get_target(target), 1.0, 0.8))


@pytest.mark.parametrize("target", CUBE_TARGETS)
def test_a_process_walk_stops_only_when_it_cannot_come_under_above(target, monkeypatch):
    """The tiling pass walks a candidate with Matmul objects with `above` (the cycles past which it
    cannot be kept): the walk stops -- None -- only when the whole walk's cycles are above it, and
    otherwise gives the whole walk's figures; each kernel's stops leave the pass's choice (its words,
    its TilingChoice: every figure the report's tiling line reads) as it is with every candidate
    walked to its end."""
    stopped = weighed = 0
    for fn, args in STOPS.values():
        lowered = _candidates(fn, args, target)
        for k in (lowered, *lowered.candidates):
            whole = launch_work(dataclasses.replace(k), get_target(target))
            for f in (0.2, 0.5, 0.8, 0.95, 0.999, 1.0, 1.5):
                above = whole.cycles * f
                got = launch_work(dataclasses.replace(k), get_target(target), None, above)   # (a fresh memo)
                if got is None:
                    assert whole.cycles > above
                    stopped += 1
                else:
                    assert got == whole
        t = get_target(target)
        stops = kernel_passes.choose_tiling(_candidates(fn, args, target), t, t.ub_bytes)
        with monkeypatch.context() as m:
            m.setattr(kernel_passes, "launch_work", lambda k, target, words=None, above=None: launch_work(k, target, words))
            every = kernel_passes.choose_tiling(_candidates(fn, args, target), t, t.ub_bytes)
        assert stops.words == every.words and stops.choice == every.choice
        weighed += every.choice is not None and every.choice.weighed > 2
    assert stopped >= 10 and weighed >= 2


def test_a_process_walk_leaves_no_cycle():
    """A Process walk lets go of its last instance's env (its GM counters and `ub` refer to the
    walk): once the caller drops it, nothing of the walk is left for the collector -- a compile
    pauses the collector and collects at its end (fusedsl/gcpause.py), which would walk every walk's
    objects and the candidate kernels they hold (the tiling pass walks each)."""
    lowered = _candidates(*STOPS["colvec"], "ascend910b")
    t = get_target("ascend910b")
    gc.collect()
    gc.disable()
    try:
        before = sum(type(o) is kernel_cost._Walk for o in gc.get_objects())
        for k in (lowered, *lowered.candidates):
            assert launch_work(k, t) is not None and kernel_gm_bytes(k) is not None
        assert sum(type(o) is kernel_cost._Walk for o in gc.get_objects()) == before
    finally:
        gc.enable()


def test_candidates_of_a_layout_share_their_shape_facts():
    """kernel_cost._share_shape_facts: the candidate kernels of one layout (the same Process and
    stages objects) take one set of stage and loop facts from the first walked; each candidate's
    walk equals the walk of a fresh copy that works its facts out alone, and those facts are the
    shared ones."""
    t = get_target("ascend910b")
    shared = 0
    for fn, args in STOPS.values():
        lowered = _candidates(fn, args, "ascend910b")
        kernels = (lowered, *lowered.candidates)
        for k in kernels:
            together = launch_work(k, t)
            alone = dataclasses.replace(k)
            alone.__dict__["_shape_facts"] = ({}, {}, {})   # (its own: nothing shared)
            assert launch_work(alone, t) == together
            mine, fresh = k.__dict__["_shape_facts"], alone.__dict__["_shape_facts"]
            assert fresh[1] and all(mine[1][i] == facts for i, facts in fresh[1].items())
            assert all(mine[0][name] == sig for name, sig in fresh[0].items())
            shared += any(o is not k and o.__dict__.get("_shape_facts", (None, None))[1] is mine[1] for o in kernels)
    assert shared >= 4

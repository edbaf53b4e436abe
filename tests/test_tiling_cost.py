"""The vector kernels' tile size and blockDim are the cost model's choice (tile/tiling_cost.py).

compute_tiling costs a few candidates (the 16 KiB-per-core rule's cores, half of them, more
when no core re-reads anything; the largest tile and its halves) and keeps the cheapest; the
printed C++ host tiling does the same in integers and `simulate` checks both word for word.
"""
from __future__ import annotations

import numpy as np
import pytest

import fusedsl as fs
from fusedsl import cost
from fusedsl import dtypes as dt
from fusedsl.tile import tiling as T
from fusedsl.tile import tiling_cost as tc


@fs.fused_kernel
def abs_add_relu(a, b):
    return fs.relu(fs.abs(a) + b)


@fs.fused_kernel
def scale_sigmoid(x, y):
    return fs.sigmoid(x) * y + x


def _candidates(sched, sizes, target):
    """Every candidate tiling compute_tiling considers, in its order."""
    dims = T.resolve_dims(sched, sizes)
    R = 1
    for d in dims[:-1]:
        R *= d
    C = dims[-1]
    out_bytes = sum(o.gm_dtype.itemsize for o in sched.outputs)
    rule = max(1, min(target.vector_cores, -(-R * C * out_bytes // T.MIN_CORE_BYTES)))
    chosen = T.compute_tiling(sched, sizes, target)
    table = tc.table_for(sched)
    out = []
    for want in T.core_candidates(rule, target.vector_cores, table.per_core_reads):
        for shift in range(T.TILE_HALVINGS + 1):
            out.append(T._place(sched, target, dims, R, C, T._max_tile_elems(sched), chosen.rows_mode, want, shift,
                                chosen.strides))
    return rule, out


def _seed_model(t, C: int, R: int) -> float:
    """cost.py's vector-kernel formula, in floats, written out for relu(abs(a) + b) (a a row
    read once per core, b streamed, abs hoisted onto the tile's rows): an independent check."""
    f32 = dt.float32
    bd, n = t.block_dim, t.tile_rows * t.tile_cols
    load = cost.load_cycles(n * 4, bd)
    vec = cost.api_cycles("Add", f32, n) + cost.api_cycles("Relu", f32, n)
    store = cost.store_cycles(n * 4, bd)
    prologue = (cost.load_cycles(C * 4, bd) + (t.tile_rows - 1) * cost.api_cycles("Copy", f32, C)
                + cost.api_cycles("Abs", f32, t.tile_rows * C))
    slowest = max(load, vec, store)
    return t.tiles_per_core * slowest + (load + vec + store - slowest) + prologue + cost.heads(bd, R * C * 4)


@pytest.mark.parametrize("target", ["ascend910b", "ascend310p"])
@pytest.mark.parametrize("rows", [1, 5, 192, 700, 5000])
def test_the_choice_is_the_argmin_of_the_model(target, rows):
    k = abs_add_relu.compile(fs.spec((128,), "float32"), fs.spec(("M", 128), "float32"), target=target)
    sched = k.kernels[0].schedule
    sizes = {"M": rows}
    chosen = T.compute_tiling(sched, sizes, k.target)
    _, cands = _candidates(sched, sizes, k.target)
    floats = [_seed_model(t, 128, rows) for t in cands]
    # the integer model is cost.py's float formula to within the integer divisions' rounding
    for t, f in zip(cands, floats):
        assert tc.tiling_cycles(tc.table_for(sched), t).total / tc.FIX == pytest.approx(f, abs=0.01)
    cheapest = min(floats)
    first = next(i for i, f in enumerate(floats) if f <= cheapest + 0.01)   # ties: the earlier candidate
    assert chosen == cands[first]
    assert chosen.choice.baseline == cands[0]   # the rule's cores, the largest tile
    rule, _ = _candidates(sched, sizes, k.target)
    assert chosen.block_dim <= rule   # a row read once per core: never more cores than the rule


@pytest.mark.parametrize("target", ["ascend910b", "ascend310p", "ascend910"])
@pytest.mark.parametrize("rows", [1, 3, 64, 1000, 20000])
def test_the_choice_is_the_first_cheapest_candidate(target, rows):
    k = scale_sigmoid.compile(fs.spec(("M", 96), "float16"), fs.spec(("M", 96), "float16"), target=target)
    sched = k.kernels[0].schedule
    chosen = T.compute_tiling(sched, {"M": rows}, k.target)
    _, cands = _candidates(sched, {"M": rows}, k.target)
    totals = [tc.tiling_cycles(tc.table_for(sched), t).total for t in cands]
    assert chosen == cands[totals.index(min(totals))]
    assert chosen.choice.candidates == len(cands)


def test_one_tile_per_core_is_split_so_the_pipes_overlap():
    """Seed 192x128 f32: the 16 KiB rule gives 6 cores of 32 rows, and the largest tile takes
    all 32, so each core loads, computes and stores its one tile in turn.  The model prefers
    8 tiles of 4 rows: double buffering then overlaps the copies with the compute, and the
    per-call costs of 8 times more calls are smaller than what the overlap saves."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal(128).astype(np.float32)
    b = rng.standard_normal((192, 128)).astype(np.float32)
    k = abs_add_relu.compile(a, b, target="ascend910b")
    y = k.simulate(a, b)
    np.testing.assert_array_equal(y, np.maximum(np.abs(a) + b, 0))
    np.testing.assert_array_equal(k(a, b), y)
    t = k.kernels[0].tiling
    base = t.choice.baseline
    assert (base.block_dim, base.tile_rows, base.tiles_per_core) == (6, 32, 1)
    assert (t.block_dim, t.tile_rows, t.tiles_per_core) == (6, 4, 8)
    assert t.choice.cycles.total < t.choice.baseline_cycles.total
    rep = k.report()
    assert rep.gm_bytes_measured == 199680   # same cores, so a is read 6 times as before
    row = rep.kernels[0]
    assert row.tiling_choice["changed"] and row.model_time_us == pytest.approx(row.tiling_choice["time_us"])
    text = str(rep)
    assert "tiling: chosen by the cost model from 8 candidates" in text
    assert f"{row.tiling_choice['time_us']:.2f} us vs {row.tiling_choice['baseline_time_us']:.2f} us" in text


def test_fewer_cores_than_the_16_kib_rule_when_the_split_is_uneven():
    """310P (no DataCopyPad), relu(abs(a) + b) with b 5x1000 f32: 20000 B of output give the
    rule 2 cores.  Rows of 4000 B do not start on 64-byte lines, so a second core may only
    start at row 4 (16000 B): with 1-row tiles, a 4 + 1 split.  The model keeps one core for
    the 5 tiles: the second core would take one tile of five off the first while every
    core's share of the DMA bandwidth drops (bytes / (a + b/blockDim)) and its MTE2 head
    grows with blockDim."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal(1000).astype(np.float32)
    b = rng.standard_normal((5, 1000)).astype(np.float32)
    k = abs_add_relu.compile(fs.spec((1000,), "float32"), fs.spec(("M", 1000), "float32"), target="ascend310p")
    y = k.simulate(a, b)
    np.testing.assert_array_equal(y, np.maximum(np.abs(a) + b, 0))
    np.testing.assert_array_equal(k(a, b), y)
    sched = k.kernels[0].schedule
    rule, cands = _candidates(sched, {"M": 5}, k.target)
    t = k.kernels[0].tiling
    assert rule == 2 and (t.block_dim, t.tile_rows, t.tiles_per_core) == (1, 1, 5)
    split = [c for c in cands if c.block_dim == 2 and c.tile_rows == 1]
    assert split and split[0].tiles_per_core == 4   # the 4 + 1 split on the rule's 2 cores
    assert tc.tiling_cycles(tc.table_for(sched), split[0]).total > t.choice.cycles.total
    assert k.report().gm_bytes_measured == (1000 + 2 * 5 * 1000) * 4   # a read once, by the one core


@fs.fused_kernel
def add2(x, y):
    return x + y


def test_more_cores_than_the_16_kib_rule_when_nothing_is_read_twice():
    """x + y on 64x128 f32: 32 KiB of output give the rule 2 cores.  No input is read once
    per core (no broadcast row or scalar), so more cores add no GM traffic and the model may
    use them: per core less data moves, at a slower per-core DMA rate, for 16 cores' heads."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 128)).astype(np.float32)
    w = rng.standard_normal((64, 128)).astype(np.float32)
    k = add2.compile(x, w, target="ascend910b")
    np.testing.assert_array_equal(k.simulate(x, w), x + w)
    np.testing.assert_array_equal(k(x, w), x + w)
    t = k.kernels[0].tiling
    assert t.choice.baseline.block_dim == 2 and t.block_dim > 2
    rep = k.report()
    assert rep.gm_bytes_measured == rep.gm_bytes_min == 3 * 64 * 128 * 4


@pytest.mark.parametrize("target", ["ascend910b", "ascend310p"])
def test_printed_host_tiling_equals_python_for_symbolic_sizes(target):
    """simulate packs the Python tiling and checks it word for word against the printed C++
    host tiling (which runs the same candidate loop and integer model) before every launch."""
    k = scale_sigmoid.compile(fs.spec(("M", 96), "float32"), fs.spec(("M", 96), "float32"), target=target)
    k2 = abs_add_relu.compile(fs.spec((40,), "float32"), fs.spec(("M", 40), "float32"), target=target)
    rng = np.random.default_rng(2)
    moved = []
    for m in (1, 2, 7, 64, 333, 4100):
        x = rng.standard_normal((m, 96)).astype(np.float32)
        w = rng.standard_normal((m, 96)).astype(np.float32)
        got = k.simulate(x, w)
        np.testing.assert_allclose(got, 1 / (1 + np.exp(-x)) * w + x, rtol=2e-5, atol=2e-5)
        np.testing.assert_allclose(k(x, w), got, rtol=2e-5, atol=2e-5)
        a = rng.standard_normal(40).astype(np.float32)
        b = rng.standard_normal((m, 40)).astype(np.float32)
        np.testing.assert_array_equal(k2.simulate(a, b), np.maximum(np.abs(a) + b, 0))
        np.testing.assert_array_equal(k2(a, b), np.maximum(np.abs(a) + b, 0))
        t = k.kernels[0].tiling
        moved.append((t.block_dim, t.tile_rows, t.tile_cols) != (t.choice.baseline.block_dim,
                                                                t.choice.baseline.tile_rows, t.choice.baseline.tile_cols))
    assert any(moved)   # sizes where the model's choice is not the old rule's, checked against C++ too


def test_the_cost_table_is_kept_on_the_schedule_and_equals_a_fresh_one():
    """table_for keeps a schedule's cost table (the tiling weighs it per candidate and per new size,
    the host tiling code prints it again): the kept table is the one a fresh computation gives, for
    kernels with broadcast rows, hoisted work and several outputs."""
    progs = [(lambda a, b: fs.relu(fs.abs(a) + b), (np.ones(96, np.float32), np.ones((40, 96), np.float32))),
             (lambda a, b: (a * b - 1.0, fs.exp(a)), (np.ones((7, 33), np.float16), np.ones((7, 33), np.float16)))]
    for fn, args in progs:
        for plan in fs.fused_kernel(fn).compile(*args).kernels:
            sched = plan.lowered
            kept = tc.table_for(sched)
            assert tc.table_for(sched) is kept and kept == tc._table(sched)

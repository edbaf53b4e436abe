"""Cube tiling (fusedsl/lower/cube.py): fits every buffer of the target, clear errors."""
from types import SimpleNamespace

import numpy as np
import pytest

import fusedsl as fs
from fusedsl import cost

from fusedsl.errors import ScheduleError, TargetError
from fusedsl.lower import kinds
from fusedsl.lower.kinds import kernel_ir
from fusedsl.lower import cube as lower_cube
from fusedsl.lower import row_plan
from fusedsl.lower.cube import (WALK_CHOICES, Choices, Traffic, _structure, cube_block_dim, cube_tiling,
                                matmul_objects, schedule_cube_kernel)
from fusedsl.lower import conv as lower_conv
from fusedsl.lower.conv import CONV_CHOICES, schedule_conv_kernel
from fusedsl.tile.kernel import print_kernel
from fusedsl.tile.text import print_tile
from fusedsl.targets import get_target


@pytest.mark.parametrize("target", ["ascend910b", "ascend310p"])
@pytest.mark.parametrize("mnk", [(17, 33, 19), (1000, 777, 333), (4096, 4096, 4096), (1, 1, 1)])
def test_tiling_fits_buffers(target, mnk):
    m, n, k = mnk
    t = get_target(target)
    c = cube_tiling(target, m, n, k, bias_dtype="float32", ub_bytes_per_c_elem=8)
    assert c.base_m % 16 == 0 and c.base_n % 16 == 0 and c.base_k % 16 == 0
    assert c.l1_bytes <= t.l1_bytes and c.l0a_bytes <= t.l0a_bytes
    assert c.l0b_bytes <= t.l0b_bytes and c.l0c_bytes <= t.l0c_bytes
    assert c.ub_tile_bytes <= t.ub_bytes
    assert 1 <= c.used_core_num <= t.aic_cores
    # every output element is covered by the per-core blocks
    assert c.single_core_m * -(-m // c.single_core_m) >= m
    assert c.single_core_n * -(-n // c.single_core_n) >= n


def test_epilogue_ub_shrinks_base_block():
    small = cube_tiling("ascend910b", 512, 512, 64)
    big = cube_tiling("ascend910b", 512, 512, 64, ub_bytes_per_c_elem=64)
    assert big.base_m * big.base_n < small.base_m * small.base_n
    assert big.ub_tile_bytes <= get_target("ascend910b").ub_bytes


def test_epilogue_too_big_for_ub_names_bytes():
    with pytest.raises(ScheduleError, match=r"FS110: the epilogue .* needs \d+ bytes of UB"):
        cube_tiling("ascend910b", 64, 64, 64, ub_bytes_per_c_elem=10**6)


def test_ascend910_has_no_matmul_api():
    with pytest.raises(TargetError, match="ascend910 has no Matmul high-level API"):
        cube_tiling("ascend910", 64, 64, 64)


def _modelled(target, c, traffic):
    f = SimpleNamespace(M=c.M, N=c.N, K=c.K, single_core_m=c.single_core_m, single_core_n=c.single_core_n,
                        used_core_num=c.used_core_num, base_m=c.base_m, base_n=c.base_n,
                        objects_per_core=c.objects_per_core, a_l1_bytes=c.a_l1_bytes)
    _, _, _, cycles, head, gm = cost.matmul_split_cycles(get_target(target), f, traffic.a_item, traffic.b_item,
                                                         traffic.batch, traffic.epilogue, traffic.c_bytes,
                                                         cube_block_dim(c.used_core_num, get_target(target),
                                                                        c.objects_per_core))
    return cycles + head, gm


@pytest.mark.parametrize("target", ["ascend910b", "ascend310p"])
@pytest.mark.parametrize("mnk", [(1, 1, 1), (100, 72, 130), (256, 512, 256), (17, 1000, 33), (1024, 1024, 1024),
                                 (4096, 64, 64)])
def test_traffic_aware_split_is_never_slower_in_the_model(target, mnk):
    """The split and base block chosen with the kernel's traffic: never slower in the model than
    CANN's rule (the smallest per-core block), every buffer still fits, every Matmul object of
    the chip may be used."""
    m, n, k = mnk
    traffic = Traffic(2, 2, 1, (("colvec", 2),), m * n * 2)
    kw = dict(ub_bytes_per_c_elem=8, l1_budget=int(get_target(target).l1_bytes * 0.8))
    cann, ours = cube_tiling(target, m, n, k, **kw), cube_tiling(target, m, n, k, traffic=traffic, a_l1=True, **kw)
    t_cann, gm_cann = _modelled(target, cann, traffic)
    t_ours, gm_ours = _modelled(target, ours, traffic)
    assert t_ours <= t_cann * 1.0000001
    assert gm_ours <= gm_cann or t_ours < t_cann
    t = get_target(target)
    # on 910B an AI core's L1 holds both vector instances' objects (own buffers and TSCM slices)
    assert ours.l1_bytes * (2 if t.separated else 1) <= 0.8 * t.l1_bytes
    assert ours.l0c_bytes <= t.l0c_bytes and ours.ub_tile_bytes <= t.ub_bytes
    assert 1 <= ours.used_core_num <= matmul_objects(t)
    assert ours.single_core_m * -(-m // ours.single_core_m) >= m and ours.single_core_n * -(-n // ours.single_core_n) >= n


def test_reads_count_every_tile():
    """A is read once per tile column of the grid, B once per tile row (what simulate counts)."""
    c = SimpleNamespace(M=256, N=512, K=64, single_core_m=128, single_core_n=512, base_m=64, base_n=256)
    a, b, other = cost.matmul_reads(c, 2, 2, 1, (("colvec", 4), ("full", 2)))
    assert a == 256 * 64 * 2 * 2 and b == 64 * 512 * 2 * 4
    assert other == 4 * 512 * 4 + 256 * 512 * 2


def test_l2_bounds_hbm_reads():
    """Re-reads are served by L2 while the operands fit it; past it every read is HBM's."""
    t = get_target("ascend910b")
    assert cost.hbm_cycles(t, 10**6, 5 * 10**6) == pytest.approx(10**6 / (t.hbm_gbps * 1e3 / t.clock_mhz))
    big = t.l2_bytes + 1
    assert cost.hbm_cycles(t, big, 3 * big) == pytest.approx(3 * big / (t.hbm_gbps * 1e3 / t.clock_mhz))


def _stack_traffic(weight):
    """The traffic of a 64x256 @ 256x1024 matmul with a [N] bias; the epilogue costs `weight`
    cycles per tile row (a heavy one makes thin tiles dear: another split wins)."""
    return Traffic(4, 4, 1, (("colvec", 4),), 64 * 1024 * 4,
                   lambda bd, launch: launch.tiles_per_core * launch.tile_rows * weight)


def test_tiling_memo_reuses_a_search_only_when_every_input_matches():
    """cube_tiling's per-compile memo: an identical search (another block's matmul, its own vector
    model giving the same cycles) returns the remembered tiling; a different epilogue cost or
    any other argument runs its own search, whose result is the memo-less one."""
    t = get_target("ascend910b")
    kw = dict(ub_bytes_per_c_elem=12, l1_budget=int(t.l1_bytes * 0.8), a_l1=True)
    light = cube_tiling(t, 64, 1024, 256, traffic=_stack_traffic(0.0), **kw)
    heavy = cube_tiling(t, 64, 1024, 256, traffic=_stack_traffic(2000.0), **kw)
    assert (light.base_m, light.single_core_m) != (heavy.base_m, heavy.single_core_m)   # the test can tell them apart
    memo = {}
    first = cube_tiling(t, 64, 1024, 256, traffic=_stack_traffic(0.0), memo=memo, **kw)
    again = cube_tiling(t, 64, 1024, 256, traffic=_stack_traffic(0.0), memo=memo, **kw)   # a new, equal model
    assert first == light and again is first
    assert cube_tiling(t, 64, 1024, 256, traffic=_stack_traffic(2000.0), memo=memo, **kw) == heavy
    (entries,) = memo.values()   # one key, the two epilogue models' searches under it
    assert len(entries) == 2 and all(read for _, _, read in entries)
    fewer_cores = cube_tiling(t, 64, 1024, 256, traffic=_stack_traffic(0.0), memo=memo, cores=4, **kw)
    assert fewer_cores == cube_tiling(t, 64, 1024, 256, traffic=_stack_traffic(0.0), cores=4, **kw)
    assert fewer_cores.used_core_num <= 4 and len(memo) == 2
    other = cube_tiling("ascend310p", 64, 1024, 256, traffic=_stack_traffic(0.0), memo=memo, **kw)
    assert other == cube_tiling("ascend310p", 64, 1024, 256, traffic=_stack_traffic(0.0), **kw)
    with pytest.raises(ScheduleError, match="FS110"):   # errors are raised every time, not remembered
        cube_tiling(t, 64, 1024, 256, traffic=_stack_traffic(0.0), memo=memo, ub_bytes=64, **kw)
    assert len(memo) == 3


def test_compile_shares_tilings_between_identical_blocks():
    """Through the public API (the process's memo of the pass's choices): each block's matmuls of a
    stack get the tilings a search of their own, without a memo, picks -- the kernel pass `tiling`'s
    choice among the lowering's candidates, walked for the first block's kernels only; compiled
    again, none is walked and each gets the same tiling and choice."""
    def model(x, w1, w2, g, b):
        for _ in range(3):
            x = x + (fs.gelu(fs.layer_norm(x, g, b) @ w1) @ w2) * 0.5
        return x
    specs = (fs.spec((64, 96), "float32"), fs.spec((96, 160), "float32"), fs.spec((160, 96), "float32"),
             fs.spec((96,), "float32"), fs.spec((96,), "float32"))
    WALK_CHOICES.clear()   # (an earlier test may have compiled these kernels)
    kinds._LOWERED.clear()
    compiled = fs.fused_kernel(model, target="ascend910b").compile(*specs)
    cubes = [p for p in compiled.kernels if p.kernel_kind == "cube"]
    assert len(cubes) == 6 and all(p.printable for p in cubes)
    fresh = {}   # one search of its own per distinct kernel (the blocks repeat three)
    for p in cubes:
        own = fresh.get(_structure(p.function))
        if own is None:
            own = fresh[_structure(p.function)] = schedule_cube_kernel(p.function, compiled.target, 1.0, 0.8)
            kernel_ir(own)   # the kernel passes: `tiling` walks its candidates and the schedule adopts the kept one
        assert p.lowered.tiling_fields == own.tiling_fields and p.lowered.cann_tiling == own.cann_tiling
        assert p.lowered.tiling_choice == own.tiling_choice and len(own.offers) > 1
    assert len({p.lowered.tiling_fields for p in cubes}) >= 2
    # walked: the first block's two kernels and the last block's second (no layer_norm after it);
    # the others' choices were remembered
    assert [len(p.lowered.offers) > 1 for p in cubes] == [True, True, False, False, False, True]
    kinds._LOWERED.clear()   # (its twins would take the lowerings themselves: lowered again, the choices are remembered)
    again = [p for p in fs.fused_kernel(model, target="ascend910b").compile(*specs).kernels if p.kernel_kind == "cube"]
    assert [len(p.lowered.offers) for p in again] == [1] * 6
    assert [(p.lowered.tiling_fields, p.lowered.plan_note, p.lowered.tiling_choice) for p in again] == \
        [(p.lowered.tiling_fields, p.lowered.plan_note, p.lowered.tiling_choice) for p in cubes]
    assert [print_kernel(kernel_ir(p.lowered)) for p in again] == [print_kernel(kernel_ir(p.lowered)) for p in cubes]


def test_walk_choices_keep_the_most_recently_used():
    """The process's memo of the pass's choices is bounded: past its limit the least recently used
    entry goes."""
    memo = Choices(2)
    memo.put("a", 1), memo.put("b", 2)
    assert memo.get("a") == 1   # now the most recent
    memo.put("c", 3)
    assert (memo.get("b"), memo.get("a"), memo.get("c"), len(memo)) == (None, 1, 3, 2)


def test_a_cpu_matmul_schedule_launches_the_kept_tiling():
    """A matmul the target does not print (ascend910: no Matmul API) runs on the CPU on the cube
    kind's schedule for another chip; its launch's words are those of the kernel the pass `tiling`
    kept (the lowering's own pick differs here: two objects of 16 and 1 rows, kept one of 17): the
    kind's `tiling` runs the kernel passes first, and a fresh schedule hands out no launch before."""
    g = np.random.default_rng(5)
    x, w, b = (g.uniform(-2, 2, s).astype(np.float16) for s in ((17, 130), (130, 9), (9,)))
    comp = fs.fused_kernel(lambda x, w, b: fs.leaky_relu(x @ w + b, 0.1), target="ascend910").compile(x, w, b)
    (plan,) = comp.kernels
    sched, launch = comp._matmul_schedule(plan)
    assert sched.offers[0][0] != sched.tiling_fields and tuple(launch.words) == tuple(kernel_ir(sched).words)
    with pytest.raises(RuntimeError, match="before the kernel pass `tiling` chose"):   # (the kind's tiling above)
        schedule_cube_kernel(plan.function, sched.target).tiling({}, sched.target)
    want = x.astype(np.float32) @ w.astype(np.float32) + b.astype(np.float32)
    np.testing.assert_allclose(comp(x, w, b), np.where(want > 0, want, 0.1 * want), rtol=2e-3, atol=2e-2)


def test_a_conv_compiled_again_takes_the_core_count_chosen_before(monkeypatch):
    """A conv kernel the process scheduled before gets the core count modelled then (lower/conv.
    CONV_CHOICES): one schedule built, none modelled, the same tiling, geometry and rule figures."""
    x, w, b = np.ones((1, 8, 12, 12), np.float32), np.ones((16, 8, 3, 3), np.float32), np.ones((1, 16, 1, 1), np.float32)
    comp = fs.fused_kernel(lambda x, w, b: fs.relu(fs.conv2d(x, w, padding=1) + b), target="ascend910b").compile(x, w, b)
    (plan,) = comp.kernels
    CONV_CHOICES.clear()
    first = schedule_conv_kernel(plan.function, comp.target)
    modelled = []
    monkeypatch.setattr(lower_conv, "_modelled", lambda *a: modelled.append(a) or (0.0, 0))
    again = schedule_conv_kernel(plan.function, comp.target)
    assert modelled == [] and len(CONV_CHOICES) == 1
    assert (again.tiling_fields, again.conv, again.rule_figures, again.plan_note) == \
        (first.tiling_fields, first.conv, first.rule_figures, first.plan_note)


EPILOGUES = {   # (function, its inputs' shapes at two sizes): elementwise epilogues over a matmul or a conv
    "bias_leaky": (lambda x, w, b: fs.leaky_relu(x @ w + b, 0.1), [[(40, 24), (24, 72), (72,)], [(33, 19), (19, 30), (30,)],
                                                                   [(33, 5), (5, 1), (1,)]]),   # (b: one value)
    "gelu_cast": (lambda x, w, b: fs.gelu(x @ w + b).astype("float16"), [[(128, 64), (64, 96), (96,)],
                                                                          [(17, 130), (130, 9), (9,)]]),
    "square_residual": (lambda x, w, r: (x @ w) * (x @ w) - r, [[(40, 24), (24, 72), (40, 72)], [(64, 32), (32, 48), (64, 48)]]),
    "where": (lambda x, w, b: fs.where(x @ w > 0, x @ w, b), [[(40, 24), (24, 72), (72,)], [(64, 256), (256, 48), (48,)]]),
    "conv_relu": (lambda x, w, b: fs.relu(fs.conv2d(x, w, b)), [[(1, 3, 9, 9), (4, 3, 3, 3), (4,)],
                                                                 [(2, 8, 12, 10), (16, 8, 3, 3), (16,)]]),
}


@pytest.mark.parametrize("target", ["ascend910b", "ascend310p"])
def test_epilogue_programs_taken_from_the_memo_equal_fresh_ones(target):
    """row_plan._OP_SCHEDULES: an epilogue op's tile program taken from the process's memo (the
    same function compiled before at another size or dtype) prints as the one op_schedule makes
    afresh and stands for the same kernel values, so the lowered kernel and its Ascend C are the
    same -- over cube and conv kernels with per-column and per-element inputs, a repeated operand, a
    comparison and a cast, in float32 and float16."""
    taken = 0
    for fn, sizes in EPILOGUES.values():
        for dtype in ("float16", "float32") if target == "ascend910b" else ("float16",):
            for shapes in sizes:
                args = [np.ones(s, dtype) for s in shapes]
                kinds._LOWERED.clear()
                before = len(row_plan._OP_SCHEDULES)
                remembered = fs.fused_kernel(fn, target=target).compile(*args)
                taken += len(row_plan._OP_SCHEDULES) == before
                kinds._LOWERED.clear()
                memo = dict(row_plan._OP_SCHEDULES._entries)
                row_plan._OP_SCHEDULES.clear()
                fresh = fs.fused_kernel(fn, target=target).compile(*args)
                row_plan._OP_SCHEDULES._entries.update(memo)
                for a, b in zip(remembered.kernels, fresh.kernels):
                    programs = [(label, print_tile(p)) for label, p in kinds.tile_programs(a.lowered)]
                    assert programs == [(label, print_tile(p)) for label, p in kinds.tile_programs(b.lowered)]
                    assert print_kernel(kernel_ir(a.lowered)) == print_kernel(kernel_ir(b.lowered))
                assert remembered.source == fresh.source
    assert taken >= 4


def test_balanced_split_remembered_equals_a_fresh_one():
    """lower/cube._balanced_split (CANN's rule) is remembered per (M, N, cores, whole rows): over
    sizes from 1 to past every core count's blocks, the remembered split equals a fresh one."""
    fresh = lower_cube._balanced_split.__wrapped__
    for m in (1, 15, 16, 17, 100, 129, 1000, 4096):
        for n in (1, 9, 48, 257, 777, 4096):
            for dim in (1, 2, 20, 24, 48):
                for whole_rows in (False, True):
                    assert lower_cube._balanced_split(m, n, dim, whole_rows) == fresh(m, n, dim, whole_rows)
                    assert lower_cube._balanced_split(m, n, dim, whole_rows) == fresh(m, n, dim, whole_rows)

"""Pass `tiling`: the runtime tiling of an allocated tile program (mirrored line by line by
the printed C++ host function, which `simulate` checks word for word).

It runs when the sizes are known (each call's symbolic sizes, or once for static shapes):
tiles of whole rows (rows mode, row stride Cpad) or chunks of one row, contiguous tile ranges
per core, and on chips without DataCopyPad tiles-per-core grown until no two cores share a
64-byte GM line.  The tile size and core count are the cheapest, by the cost model
(`tiling_cost.py`, the formula and coefficients of fusedsl/cost.py), of a few candidates:
the largest tile the UB plan allows (`_max_tile_elems`: budget / bytes per element, whole
granules) and its halves, on the cores the 16 KiB-per-core rule gives, half of them, and
(when extra cores re-read nothing) more.  Ties keep the rule's largest tile.  View kernels
tile their box table (`_view_tiling`, static shapes, not by the model).
"""
from __future__ import annotations

import dataclasses

from ..errors import ScheduleError
from ..ir.ops import CONSTANT, has_trait
from ..targets import Target
from .ir import Tiling, VectorSchedule
from .tiling_cost import TilingChoice, table_for, tiling_cycles

# The 16 KiB-per-core rule: the cores of the baseline candidate, and the most cores a kernel
# that re-reads a broadcast row or scalar per core may use (tiling_cost.py's model decides below it)
MIN_CORE_BYTES = 16384
TILE_HALVINGS = 3        # candidate tiles: the largest that fits UB, and 1/2, 1/4, 1/8 of it
MAX_BLOCK_COUNT = 4095   # DataCopyPad's blockCount limit bounds the rows of one tile


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


def resolve_dims(sched: VectorSchedule, sizes: dict[str, int]) -> tuple[int, ...]:
    out = []
    for group in sched.dims:
        n = 1
        for d in group:
            size = sched.iter_shape[d]
            n *= sizes[size] if isinstance(size, str) else size
        out.append(n)
    return tuple(out)


def _max_tile_elems(sched: VectorSchedule) -> int:
    """The largest tile (elements per slot) the UB budget allows, in whole granules."""
    per_elem = sched.ub_bytes_per_elem()
    return max(0, sched.ub_budget // per_elem - sched.slack_elems) // sched.gran_elems * sched.gran_elems


def _line_aligned_tiles_per_core(sched, tpc, total_tiles, rows_mode, tile_rows, tile_cols, col_tiles, C) -> int:
    """Grow tiles per core until every core's share of every output starts on a 64-byte line
    (the printed C++ host tiling does the same): without DataCopyPad the row tails are written
    with GlobalTensor::SetValue through each core's data cache, which writes whole lines."""
    sizes = sorted({o.gm_dtype.itemsize for o in sched.outputs})
    while tpc < total_tiles:
        starts = range(tpc, total_tiles, tpc)
        offs = (s * tile_rows * C if rows_mode else (s // col_tiles) * C + (s % col_tiles) * tile_cols for s in starts)
        if not any(off * e % 64 for off in offs for e in sizes):
            break
        tpc += 1
    return tpc


MAX_ELEMS = 1 << 32   # kernel offsets and tiling fields are 32-bit (the printed host tiling checks it too)


def core_candidates(rule: int, cores: int, per_core_reads: bool) -> list[int]:
    """Core counts the cost model compares (the printed host tiling lists the same): the
    16 KiB-per-core rule's count first (ties keep it), half of it, and, when extra cores read
    nothing twice, doublings of it up to every core.  A kernel that reads a broadcast row or
    a scalar once per core never gets more cores than the rule, so that re-read stays what
    the rule allows (one row per 16 KiB of output: ~1-2 % for the seed kernel)."""
    out = [rule]
    if rule > 1:
        out.append((rule + 1) // 2)
    if per_core_reads:
        return out
    c = rule * 2
    while c < cores:
        out.append(c)
        c *= 2
    if cores > rule:
        out.append(cores)
    return out


def rows_mode(sched: VectorSchedule, tiling: Tiling) -> bool:
    """Whether a tile is whole rows (True) or a chunk of one row (False)."""
    decided = getattr(tiling, "rows_mode", None)   # compute_tiling records its choice
    if decided is not None:
        return bool(decided)
    has_inv = any(s.role == "inv" for s in sched.slots.values())
    return tiling.tile_cols == tiling.C and tiling.col_tiles == 1 and (tiling.R > 1 or has_inv)


def compute_tiling(sched: VectorSchedule, sizes: dict[str, int], target: Target) -> Tiling:
    """The runtime tiling (mirrored line by line by the printed C++ host function): the
    candidate (cores x tile) the cost model (tile/tiling_cost.py) finds cheapest."""
    if sched.views is not None:
        return _view_tiling(sched, target)
    dims = resolve_dims(sched, sizes)
    C = dims[-1]
    R = 1
    for d in dims[:-1]:
        R *= d
    out_bytes = sum(o.gm_dtype.itemsize for o in sched.outputs)
    per_elem = sched.ub_bytes_per_elem()
    max_elems = _max_tile_elems(sched)
    if max_elems < sched.gran_elems:
        ops = [op for op in sched.kernel.ops if not has_trait(op, CONSTANT)]
        raise ScheduleError(f"kernel {sched.kernel.name} ({', '.join(op.name for op in ops)}) needs "
                            f"{per_elem * sched.gran_elems} bytes of UB for its smallest tile "
                            f"({len(sched.slots)} buffers), but {target.name} has {sched.ub_budget} bytes",
                            loc=ops[-1].loc if ops else sched.kernel.loc,
                            hint="split the computation into several kernels (drop single_kernel=True)")
    total = R * C
    if R * _round_up(C, sched.block_elems) >= MAX_ELEMS:
        raise ScheduleError(f"kernel {sched.kernel.name}: {R * C} elements (sizes {dict(sizes)}) need 64-bit "
                            f"offsets; the printed Ascend C kernels use 32-bit element offsets (below {MAX_ELEMS})",
                            loc=sched.kernel.loc, hint="split the tensor into parts below 2**32 elements")
    if total == 0:   # an empty tensor: nothing to launch
        return Tiling(R, C, C, 1, C, 0, 0, 0, 0, 0, False, dims, tuple((0,) * len(dims) for _ in sched.inputs))
    hoisting = any(s.role == "inv" for s in sched.slots.values())
    rows_mode = (R > 1 or hoisting) and _round_up(C, sched.block_elems) <= max_elems
    if hoisting and not rows_mode:   # schedule_vector_kernel only hoists rows that fit a tile
        raise ScheduleError(f"kernel {sched.kernel.name}: a hoisted row of {C} elements does not fit a tile",
                            loc=sched.kernel.loc)
    strides = []
    for inp in sched.inputs:
        st, acc = [], 1
        for present, n in zip(reversed(inp.bits), reversed(dims)):
            st.append(acc if present else 0)
            if present:
                acc *= n
        strides.append(tuple(reversed(st)))
    rule = max(1, min(target.vector_cores, -(-total * out_bytes // MIN_CORE_BYTES)))
    table = table_for(sched)
    best = baseline = None
    count = 0
    for want in core_candidates(rule, target.vector_cores, table.per_core_reads):
        for shift in range(TILE_HALVINGS + 1):
            t = _place(sched, target, dims, R, C, max_elems, rows_mode, want, shift, tuple(strides))
            cycles = tiling_cycles(table, t)
            count += 1
            if baseline is None:
                baseline = (t, cycles)
            if best is None or cycles.total < best[1].total:   # strictly cheaper: ties keep the earlier
                best = (t, cycles)
    return dataclasses.replace(best[0], choice=TilingChoice(best[1], baseline[0], baseline[1], count))


def _place(sched, target, dims, R, C, max_elems, rows_mode, want, shift, strides) -> Tiling:
    """One candidate: `want` cores, the largest tile that fits halved `shift` times."""
    Cpad = _round_up(C, sched.block_elems)
    if rows_mode:
        want = min(want, R)
        rows_per_core = -(-R // want)
        tile_rows = max(1, min(max_elems // Cpad, rows_per_core, MAX_BLOCK_COUNT) >> shift)
        tile_cols, col_tiles = C, 1
        total_tiles = -(-R // tile_rows)
        tile_elems = _round_up(tile_rows * Cpad, sched.gran_elems)
    else:
        Cpad = C
        per_core = _round_up(-(-C * R // want), sched.gran_elems) if R == 1 else max_elems
        tile_cols = max(sched.gran_elems, (min(max_elems, per_core) >> shift) // sched.gran_elems * sched.gran_elems)
        tile_rows = 1
        col_tiles = -(-C // tile_cols)
        total_tiles = R * col_tiles
        tile_elems = tile_cols
    tiles_per_core = -(-total_tiles // want)
    if not target.has_datacopypad:   # SetValue tails: no two cores may share a 64-byte GM line
        tiles_per_core = _line_aligned_tiles_per_core(sched, tiles_per_core, total_tiles, rows_mode, tile_rows,
                                                      tile_cols, col_tiles, C)
    block_dim = -(-total_tiles // tiles_per_core)
    return Tiling(R, C, Cpad, tile_rows, tile_cols, col_tiles, total_tiles, tiles_per_core, block_dim,
                  tile_elems, rows_mode, dims, strides)


# words per box in Tiling.boxes: first tile, rows, cols, rows per tile, output offset and row
# stride, then per load: source, offset, row stride, column stride, indices offset and row stride
VIEW_BOX_HEAD = 6
VIEW_LOAD_WORDS = 6


def _view_tiling(sched: VectorSchedule, target: Target) -> Tiling:
    """Tiling of a view kernel (static shapes): the plan's boxes in tiles of whole rows.
    A box wider than a tile is cut into column chunks of a whole number of granules (so
    every chunk starts 32-byte aligned in UB).  Cores get contiguous ranges of tiles as in
    other kernels; without DataCopyPad (row tails written with SetValue through the data
    cache) one core runs every tile, since boxes that split rows share GM lines."""
    plan = sched.views
    max_elems = _max_tile_elems(sched)
    if max_elems < sched.gran_elems:
        raise ScheduleError(f"kernel {sched.kernel.name} needs {sched.ub_bytes_per_elem() * sched.gran_elems} "
                            f"bytes of UB for its smallest tile, but {target.name} has {sched.ub_budget} bytes",
                            loc=sched.kernel.loc, hint="split the computation into several kernels")
    S = plan.S
    C = S[-1]
    R = 1
    for d in S[:-1]:
        R *= d
    if R * _round_up(C, sched.block_elems) >= MAX_ELEMS:
        raise ScheduleError(f"kernel {sched.kernel.name}: {R * C} elements need 64-bit offsets",
                            loc=sched.kernel.loc, hint="split the tensor into parts below 2**32 elements")
    pieces = []
    for box in plan.boxes:
        if _round_up(box.cols, sched.block_elems) <= max_elems:
            pieces.append(box)
            continue
        for c0 in range(0, box.cols, max_elems):
            srcs = tuple(dataclasses.replace(s, off=s.off + c0 * s.cs) for s in box.srcs)
            pieces.append(dataclasses.replace(box, cols=min(max_elems, box.cols - c0), out_off=box.out_off + c0,
                                              srcs=srcs))
    Cpad = _round_up(max(p.cols for p in pieces), sched.block_elems)
    out_bytes = sum(o.gm_dtype.itemsize for o in sched.outputs)
    want = max(1, min(target.vector_cores, -(-R * C * out_bytes // MIN_CORE_BYTES)))
    words, first = [], 0
    tile_rows = 1
    for p in pieces:
        tr = max(1, min(max_elems // Cpad, -(-p.rows // want), MAX_BLOCK_COUNT))
        tile_rows = max(tile_rows, tr)
        row = [first, p.rows, p.cols, tr, p.out_off, p.out_rs]
        for s in p.srcs:
            row += [s.sel, s.off, s.rs, s.cs, s.ioff, s.irs]
        words.append(tuple(row))
        first += -(-p.rows // tr)
    total_tiles = first
    tiles_per_core = -(-total_tiles // want) if target.has_datacopypad else total_tiles
    block_dim = -(-total_tiles // tiles_per_core)
    tile_elems = _round_up(tile_rows * Cpad, sched.gran_elems)
    return Tiling(R, C, Cpad, tile_rows, Cpad, 1, total_tiles, tiles_per_core, block_dim, tile_elems, True,
                  (R, C) if len(sched.dims) == 2 else (C,), tuple(() for _ in sched.inputs), tuple(words))



"""The modelled time of one candidate tiling of a vector kernel, in integers.

`compute_tiling` (tile/tiling.py) evaluates a few candidate tilings with `tiling_cycles` and
keeps the cheapest.  The formula is fusedsl.cost's vector-kernel model (AutoFuse's per-API
k*n+b cycles, DMA bytes/(a + b/blockDim) + h per copy, double-buffered pipes costing the
slowest pipe per tile plus one tile of the others, pipe heads) applied to the schedule's own
statements and copies, with every coefficient taken from cost.py's tables.

It is computed in integers (units of 1/FIX cycle) because the printed C++ host tiling
evaluates the same formula (backend_ascendc/host_cost.py prints it from the same
`CostTable`) and must pick the same candidate: integer arithmetic is exact on both sides,
where doubles could round differently (a host compiler may fuse a multiply and an add).
Every intermediate stays below 2**64 for tensors below 2**32 elements (compute_tiling refuses
more), UB tiles below 2**20 bytes and at most 2**16 cores, so the C++ uint64_t never wraps.
"""
from __future__ import annotations


from .. import cost
from .ir import Stmt, Tiling, VectorSchedule
from .prims import PRIMS
from ..record import record

FIX = 10000   # the published coefficients have four decimals, so k * FIX is a whole number


def fixed(x: float) -> int:
    return round(x * FIX)


def _fixed3(coeffs) -> tuple[int, int, int]:
    return tuple(fixed(c) for c in coeffs)


# DMA (a, b, h) and pipe heads in 1/FIX cycles, from cost.py's published table
LOAD = _fixed3(cost.LOAD)
STORE = _fixed3(cost.STORE)
MTE2_HEAD_SMALL = tuple(fixed(c) for c in cost.MTE2_HEAD_SMALL)
MTE2_HEAD_NORMAL = tuple(fixed(c) for c in cost.MTE2_HEAD_NORMAL)
MTE2_HEAD_THRESHOLD = cost.MTE2_HEAD_THRESHOLD
OTHER_HEADS = fixed(cost.MTE3_HEAD) + fixed(cost.VEC_HEAD) + fixed(cost.OP_HEAD)

def stmt_coeffs(st: Stmt) -> tuple[int, int]:
    """(k, b) of one tile statement in 1/FIX cycles: k per element, b per call."""
    if st.op == "cast":
        if st.src_dtype == st.dtype:
            return 0, 0
        k, b = cost.CAST_API.get((st.src_dtype.name, st.dtype.name), cost.DEFAULT_CAST)
        return fixed(k), fixed(b)
    if st.op == "copy" and not st.dtype.is_float:
        apis = ("Max",)   # the printer copies integers with Max(x, x)
    else:
        apis = PRIMS[st.op].costs   # the primitive's record: one API or several
    pairs = [api_coeffs(api, st.dtype) for api in apis]
    return sum(k for k, _ in pairs), sum(b for _, b in pairs)


def api_coeffs(api: str, dtype) -> tuple[int, int]:
    """(k, b) of one vector API call in 1/FIX cycles, read off cost.api_cycles (k*n + b) at
    n = 0 and n = FIX, so the table and its dtype fallbacks stay cost.py's alone."""
    b = cost.api_cycles(api, dtype, 0)
    return round(cost.api_cycles(api, dtype, FIX) - b), fixed(b)


def _sum(stmts) -> tuple[int, int]:
    pairs = [stmt_coeffs(s) for s in stmts]
    return sum(k for k, _ in pairs), sum(b for _, b in pairs)


@record
class CostTable:
    """What the formula needs from a schedule; sizes come from the candidate tiling."""

    body: tuple[int, int]                  # per tile: (sum k, sum b) of the body statements, b once per segment
    hoisted: tuple[int, int]               # once per core: the hoisted statements over a tile's rows
    prefill: tuple[tuple[int, int], ...]   # once per core: Duplicate over each prefilled slot
    replicate: tuple[int, int]             # once per core and extra tile row: copying the broadcast rows in UB
    tile_loads: tuple[int, ...]            # itemsize of each `full` input: one copy per tile
    row_loads: tuple[tuple[int, bool], ...]   # `general` inputs: (itemsize, last dim present), a copy per row
    core_loads: tuple[tuple[int, bool], ...]  # `row` (C elements) / `scalar` (one) inputs, once per core
    stores: tuple[int, ...]                # itemsize of each output: one copy per tile
    tensors: tuple[tuple[int, tuple[bool, ...]], ...]   # every tensor input's itemsize and dims present
    slack: int                             # extra elements per slot (prefills cover them)

    @property
    def per_core_reads(self) -> bool:
        """Whether every extra core reads some GM bytes again (broadcast rows, scalars)."""
        return bool(self.core_loads)


def table_for(sched: VectorSchedule) -> CostTable:
    """The schedule's cost table, kept on it: the tiling weighs it per candidate and per new size
    (the CPU's too), the host tiling code prints it -- the tile program it reads is final once the
    tile passes ran (tile/pipeline.run_tile_passes drops a table made before)."""
    table = sched.__dict__.get("_cost_table")
    if table is None:
        table = sched.__dict__["_cost_table"] = _table(sched)
    return table


def _table(sched: VectorSchedule) -> CostTable:
    tensors = [i for i in sched.inputs if i.kind != "runtime_scalar"]
    rows = [i for i in tensors if i.kind == "row"]
    copy = [api_coeffs("Copy", i.gm_dtype) for i in rows]
    return CostTable(
        body=_sum(sched.body), hoisted=_sum(sched.hoisted),
        prefill=tuple(api_coeffs("Duplicate", sched.slots[n].dtype) for n in sched.prefill),
        replicate=(sum(k for k, _ in copy), sum(b for _, b in copy)),
        tile_loads=tuple(i.gm_dtype.itemsize for i in tensors if i.kind == "full"),
        row_loads=tuple((i.gm_dtype.itemsize, bool(i.bits[-1]) if i.bits else True)
                        for i in tensors if i.kind == "general"),
        core_loads=tuple((i.gm_dtype.itemsize, i.kind == "row") for i in tensors if i.kind in ("row", "scalar")),
        stores=tuple(o.gm_dtype.itemsize for o in sched.outputs),
        tensors=tuple((i.gm_dtype.itemsize, tuple(bool(b) for b in i.bits)) for i in tensors),
        slack=sched.slack_elems)


def dma(nbytes: int, block_dim: int, coeffs: tuple[int, int, int]) -> int:
    """cost.load_cycles / store_cycles in 1/FIX cycles: bytes / (a + b / blockDim) + h."""
    if nbytes == 0:
        return 0
    a, b, h = coeffs
    return nbytes * block_dim * FIX * FIX // (a * block_dim + b) + h


def largest_load(table: CostTable, dims: tuple[int, ...]) -> int:
    """Bytes of the largest tensor input (cost.heads picks the MTE2 head by it)."""
    best = 0
    for item, bits in table.tensors:
        n = item
        for present, d in zip(bits, dims):
            if present:
                n *= d
        best = max(best, n)
    return best


@record
class TilingCycles:
    """One tiling's modelled cycles (1/FIX units) per pipe; `total` is what the choice compares."""

    mte2: int       # per core: every tile's loads plus the once-per-core reads
    vec: int        # per core: every tile's statements plus the prologue's
    mte3: int       # per core: every tile's stores
    head: int
    total: int      # pipelined tiles + prologue + heads

    def time_us(self, target) -> float:
        return self.total / FIX / target.clock_mhz + cost.LAUNCH_US


def tiling_cycles(table: CostTable, t: Tiling) -> TilingCycles:
    """Modelled cycles of the busiest core under tiling t (C++: host_cost.py prints it)."""
    bd, n = t.block_dim, t.tile_rows * t.tile_cols
    segs = 1 if t.Cpad == t.tile_cols or t.tile_rows == 1 else t.tile_rows   # the kernel's Geometry()
    load = sum(dma(n * item, bd, LOAD) for item in table.tile_loads)
    load += sum(t.tile_rows * dma(t.tile_cols * item if last else item, bd, LOAD) for item, last in table.row_loads)
    vec = table.body[0] * n + table.body[1] * segs
    store = sum(dma(n * item, bd, STORE) for item in table.stores)
    # the prologue: broadcast rows and scalars read, rows copied to the tile's other rows,
    # hoisted statements over the tile's rows (one segment when rows are packed), prefills
    first_load = sum(dma(t.C * item if row else item, bd, LOAD) for item, row in table.core_loads)
    hsegs = 1 if t.Cpad == t.C else t.tile_rows
    first_vec = (table.replicate[0] * t.C + table.replicate[1]) * (t.tile_rows - 1)
    first_vec += table.hoisted[0] * t.tile_rows * t.C + table.hoisted[1] * hsegs
    first_vec += sum(k * (t.tile_elems + table.slack) + b for k, b in table.prefill)
    slowest = max(load, vec, store)
    cycles = t.tiles_per_core * slowest + (load + vec + store - slowest) + first_load + first_vec
    k, b = MTE2_HEAD_NORMAL if largest_load(table, t.dims) >= MTE2_HEAD_THRESHOLD else MTE2_HEAD_SMALL
    head = bd * k + b + OTHER_HEADS
    tiles = t.tiles_per_core
    return TilingCycles(tiles * load + first_load, tiles * vec + first_vec, tiles * store, head, cycles + head)


@record
class TilingChoice:
    """How compute_tiling chose: the chosen candidate's cycles and the baseline's (the
    largest tile on the cores the 16 KiB-per-core rule gives), for k.report()."""

    cycles: TilingCycles
    baseline: Tiling
    baseline_cycles: TilingCycles
    candidates: int

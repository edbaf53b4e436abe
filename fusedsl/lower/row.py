"""The schedule of a row kernel for the Ascend C backend (lowered to the loop-level tile IR by lower/row_tile.py).

A row kernel (FS112: softmax, layer_norm(+gelu), rms_norm(+residual), or a lone last-axis
sum/mean/max/min) computes, per row of its reductions' operand shape [*outer, C], elementwise
ops, reductions over the row and ops broadcasting their results back over the row.  When a
row fits in UB the plan is the single-read one:

    CopyIn     a tile of `tileRows` whole rows of every row-shaped input (one DMA per tile)
    Compute    row by row, every op in program order on UB row views: an elementwise op is
               the tile stmts the vector scheduler gives it (row_plan.OpStep, so casts and
               rounding are those of vector kernels); a reduction folds the row into 64
               float32 lanes with binary ops (a count that ends mid-chunk touches only its
               lanes, so the row's pad is never read) and reduces the lanes with one per-repeat
               WholeReduce (CANN >= 9.1: ReduceRepeat); float16/bfloat16 rows are cast to
               float32 first, so they accumulate in float32; the per-row result reaches later
               ops as a scalar register
    CopyOut    the tile of every row-shaped output (one DMA), and per-row results

so x is read once and y written once.  Per-row values other than inputs and outputs need one
row of UB each (not a tile): the tile size is what is left of the budget after them.

A row that does not fit (the single-read plan needs more UB than the budget at one row per
tile) gets the multi-pass plan: one pass per phase of the row plan (a reduction's result is
ready one pass after its operand), each walking the row in chunks that fit UB, recomputing
from the inputs the row values it needs (so x is read once per pass that reads it: softmax
and layer_norm 3 times, rms_norm twice); per-row values carry over between passes.  The
choice needs the row length at compile time (a symbolic one gets the single-read plan).
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

from .. import cost
from .. import dtypes as dt
from ..errors import ScheduleError
from ..ir.core import Function, Value
from ..ir.ops import CONSTANT, has_trait
from .errors import LoweringError
from .row_plan import has_row_reduction, plan_row_kernel
from .vector import MAX_BLOCK_COUNT, MIN_CORE_BYTES, compute_dtype
from ..tile.alloc import select_scratch
from ..targets import Target
from ..record import record

REDUCTIONS = ("sum", "mean", "max", "min")
FOLD_LANES = 64                      # float32 lanes of one 256-byte repeat: the fold's width
FOLD_MAX_LANES = 1024                # a static single-read row's widest fold (4 KB of UB)
FOLD = {"sum": "Add", "mean": "Add", "max": "Max", "min": "Min"}   # the vector op each reduction folds with
MAX_ELEMS = 2 ** 32


def _round_up(a: int, b: int) -> int:
    return -(-a // b) * b


@dataclass(frozen=True)
class RowParam:
    """A kernel parameter and how a row reads it."""

    index: int
    name: str                        # the IR name (the printer makes it a C++ name)
    dtype: dt.DType
    kind: str                        # "full" (tile of rows) | "lastonly" (one row per core) |
                                     # "general" (a row per row, outer dims partly broadcast) |
                                     # "perrow" (one value per row) | "scalar" | "runtime_scalar"
    present: tuple[bool, ...] = ()   # per outer dim: present (True) or broadcast


@record
class RowOutput:
    index: int
    dtype: dt.DType
    kind: str                        # "row" (a tile of rows) | "rowscalar" (one value per row)


@record(frozen=False)
class PassPlan:
    """One pass over the row in the multi-pass plan (rows bigger than UB, walked in chunks)."""

    scalar_ops: list                 # per-row ops run once before the pass, program order
    ops: list                        # row ops run on every chunk (recomputed ones included)
    reductions: list                 # reductions folded chunk by chunk
    params: list                     # indices of the row parameters read per chunk
    outputs: list                    # indices of the row outputs written in this pass
    assign: dict                     # id(value) -> (dtype, row buffer) for this pass
    counts: dict                     # dtype -> row buffers this pass needs
    online: tuple | None = None      # (max op, sum op, sub op, exp op): softmax's max and sum in one pass
    moments: tuple | None = None     # (mean op, variance mean op, sub op, square op): layer_norm's two in one

    @property
    def lanes(self) -> int:
        """64-lane float32 accumulators: one per reduction; online softmax adds a chunk max
        and a scratch block."""
        return len(self.reductions) + (2 if self.online else 0) + (1 if self.moments else 0)


@record(frozen=False)
class RowSchedule:
    fn: Function
    target: Target
    row_shape: tuple                 # [*outer, C]; dims may be symbolic
    params: list[RowParam]
    outputs: list[RowOutput]
    steps: dict                      # id(op) -> row_plan.OpStep for every elementwise op
    kinds: dict                      # id(value) -> "row" | "rowscalar" | "const" | "param"
    slack: int                       # elements read past a count (Compare) in every row buffer
    ub_budget: int
    tile_row_bytes: int              # UB bytes per element of a tile row (queues, double-buffered)
    tile_scalar_bytes: int           # UB bytes per tile row for per-row results (double-buffered)
    in_num: int                      # buffers per VECIN queue (2 = double-buffered)
    out_num: int                     # buffers per VECOUT queue
    needs_wide: bool                 # a reduction over a 16-bit row (cast to float32 first)
    row_bytes: int                   # UB bytes per element of a single row (per-row values, temps)
    fixed_bytes: int                 # UB bytes independent of C (fold lanes, per-row results)
    block_elems: int                 # row alignment in elements (32 B of the narrowest row dtype)
    out_row_bytes: int               # GM bytes a row writes per element of C (core split)
    in_row_bytes: int                # GM bytes a row reads per element of C
    shared_row_bytes: int            # GM bytes per element of C of the rows every core reads once
    plan_note: str = ""              # which plan and why (for the report)
    passes: list | None = None       # the multi-pass plan (None: single-read)
    chunk: int = 0                   # multi-pass: elements per chunk
    single_need: int = 0             # multi-pass: UB bytes the single-read plan would need
    fold_lanes: int = FOLD_LANES     # single-read, static row: float32 lanes a reduction folds the row into
    # other tilings for the kernel pass `tiling` to walk (a static row): the chip's kernels; a
    # schedule the CPU runs on its own words (backend_cpu/cpu_tiling.row_schedule) offers none
    offer_tilings: bool = True

    @property
    def symbols(self) -> list[str]:
        return sorted({d for d in self.row_shape if isinstance(d, str)})

    @property
    def inputs(self) -> list[RowParam]:   # the project writer asks each kernel for its inputs
        return self.params

    @property
    def outer_rank(self) -> int:
        return len(self.row_shape) - 1

    def tiling(self, sizes, target) -> "RowTiling":
        chosen = getattr(self, "_chosen", None)
        if chosen is not None and not self.symbols and target.name == self.target.name:
            return chosen
        return compute_row_tiling(self, sizes, target)

    def adopt_words(self, words) -> None:
        """The kernel pass `tiling` kept these words (one of `row_tiling_candidates`): the launch's
        tiling from now on (the report, simulate and the project read it)."""
        if self.symbols:
            return
        self._chosen = next(t for t in row_tiling_candidates(self, self.target) if tuple(t.words) == tuple(words))


@record
class RowTiling:
    R: int
    C: int
    Cpad: int
    tile_rows: int
    total_tiles: int
    tiles_per_core: int
    block_dim: int
    dims: tuple[int, ...]            # outer dims (at least one: 1 for a single row)
    strides: tuple[tuple[int, ...], ...]   # per "general"/"perrow" param: element stride per outer dim

    @property
    def words(self) -> list[int]:
        """The tiling struct as the printed C++ lays it out (all 32-bit)."""
        w = [self.R, self.C, self.Cpad, self.tile_rows, self.total_tiles, self.tiles_per_core, self.block_dim]
        w += list(self.dims)
        for st in self.strides:
            w += list(st)
        return w


def is_row_kernel(fn: Function) -> bool:
    """A kernel of last-axis reductions (and ops around them) that this schedule prints."""
    return has_row_reduction(fn)


def schedule_row_kernel(fn: Function, target: Target, ub_fraction: float = 1.0) -> RowSchedule:
    """The single-read row schedule of `fn`; ScheduleError (located) when it cannot be printed."""
    ops = [op for op in fn.ops if not has_trait(op, CONSTANT)]
    where = ops[-1].loc if ops else fn.loc
    try:
        plan = plan_row_kernel(fn, target)
    except LoweringError as exc:
        raise ScheduleError(f"the Ascend C backend cannot print row kernel {fn.name}: {exc}", loc=where,
                            hint="this kernel still runs on the CPU executors (kernel(*arrays))") from None
    int_reduce = target.supports("WholeReduceSum", "int32_t")   # the CPU's (cpu_tiling.row_target): int32 lanes
    for op in ops:
        if op.name in REDUCTIONS and not op.operands[0].dtype.is_float and not int_reduce:
            raise ScheduleError(f"{op.name} over {op.operands[0].dtype.name} rows is not printed as Ascend C yet "
                                "(the reduction APIs take half/float)", loc=op.loc,
                                hint="cast the operand to float32 before reducing, or run on the CPU executors")
    steps = {id(s.op): s for ph in plan.phases for s in ph.scalar_ops + ph.row_ops}
    row_shape = tuple(plan.row_shape)
    params = [_classify(i, p, row_shape) for i, p in enumerate(fn.params)]
    outputs = [RowOutput(i, v.dtype, plan.kinds[id(v)]) for i, v in enumerate(fn.results)]

    # UB: tiles of row inputs/outputs (double-buffered queues), single rows for the rest
    itemsize = {d: (1 if d == dt.bool_ else d.itemsize) for d in dt.ALL}
    limit = target.max_queue_buffers_per_position   # double-buffer a position only within its budget
    n_in = sum(1 for p in params if p.kind in ("full", "general"))
    n_out = len(outputs)
    for n, what in ((n_in, "inputs read per tile"), (n_out, "outputs")):
        if n > limit:
            raise ScheduleError(f"row kernel {fn.name} has {n} {what}; {target.name} allows {limit} queue buffers "
                                "per position", loc=where, hint="split the kernel (fewer inputs or outputs)")
    in_num = 2 if 2 * n_in <= limit else 1
    out_num = 2 if 2 * n_out <= limit else 1
    tile_row_bytes = in_num * sum(itemsize[p.dtype] for p in params if p.kind in ("full", "general"))
    tile_row_bytes += out_num * sum(itemsize[o.dtype] for o in outputs if o.kind == "row")
    row_bytes = sum(itemsize[p.dtype] for p in params if p.kind == "lastonly")
    _, row_values = allocate_row_values(fn, plan.kinds)
    pool = temp_pool(steps.values())
    row_bytes += sum(itemsize[d] * n for d, n in list(row_values.items()) + list(pool.items()))
    needs_wide = any(op.name in REDUCTIONS and op.operands[0].dtype in (dt.float16, dt.bfloat16) for op in ops)
    row_bytes += 4 if needs_wide else 0   # the float32 copy a 16-bit row is reduced from
    slack = max((s.sched.slack_elems for s in steps.values()), default=0)
    fixed = FOLD_LANES * 4 + 32 + 32 * rs_slots(fn)   # fold lanes, reduce result, one 32-B slot per row scalar
    tile_scalar_bytes = out_num * sum(itemsize[o.dtype] for o in outputs if o.kind == "rowscalar")
    fixed += out_num * sum(32 for o in outputs if o.kind == "rowscalar")   # their buffers round up to 32 B
    sizes = [itemsize[p.dtype] for p in params if p.kind in ("full", "general", "lastonly")]
    sizes += [itemsize[o.dtype] for o in outputs if o.kind == "row"]
    sizes += [itemsize[d] for d in list(row_values) + list(pool)]
    block = 32 // min(sizes or [4])   # every row buffer starts on 32 bytes
    sched = RowSchedule(
        fn=fn, target=target, row_shape=row_shape, params=params, outputs=outputs, steps=steps, kinds=plan.kinds,
        slack=slack, tile_row_bytes=tile_row_bytes,
        ub_budget=int(target.ub_bytes * ub_fraction) - select_scratch(target, [st for s in steps.values()
                                                                                for st in s.sched.stmts]),
        tile_scalar_bytes=tile_scalar_bytes, in_num=in_num, out_num=out_num, needs_wide=needs_wide,
        row_bytes=row_bytes, fixed_bytes=fixed, block_elems=block,
        out_row_bytes=sum(o.dtype.itemsize for o in outputs if o.kind == "row"),
        in_row_bytes=sum(p.dtype.itemsize for p in params if p.kind in ("full", "general")),
        shared_row_bytes=sum(p.dtype.itemsize for p in params if p.kind == "lastonly"))
    if isinstance(row_shape[-1], int) and row_need(sched, row_shape[-1], 1) > sched.ub_budget:
        sched.single_need = row_need(sched, row_shape[-1], 1)
        return _multi_pass(sched, plan, where, ops)
    sched.plan_note = ("single-read: a tile of whole rows in UB, every reduction and the ops after it on the "
                       "row while it is there (x read once, y written once)")
    if isinstance(row_shape[-1], int):
        width = fold_width(row_shape[-1], [op for op in ops if op.name in REDUCTIONS])
        grown = dataclasses.replace(sched, fold_lanes=width, fixed_bytes=sched.fixed_bytes + (width - FOLD_LANES) * 4)
        if row_need(grown, row_shape[-1], 1) <= grown.ub_budget:
            return grown
    return sched


def fold_width(C: int, reductions) -> int:
    """The float32 lanes a row of C elements is folded into before the lanes are halved to 64 and
    reduced (lower/row_tile.py).  Each vector call costs a fixed ~20 cycles besides its elements
    (cost.py's k*n + b), so 64 lanes make a row of 4096 sixty-four calls per reduction; wider
    lanes take ceil(C / L) calls plus log2(L / 64) halvings.  The width with the least modelled
    cycles over the kernel's reductions, at most FOLD_MAX_LANES (their UB is fixed bytes)."""
    return _fold_width(C, tuple(op.name for op in reductions))


@functools.lru_cache(maxsize=256)   # (a model's norms and softmaxes share their row lengths)
def _fold_width(C: int, names: tuple) -> int:
    best, best_cost = FOLD_LANES, None
    width = FOLD_LANES
    while width <= min(FOLD_MAX_LANES, _round_up(C, FOLD_LANES)):
        total = 0.0
        for name in names:
            api = FOLD[name]
            total += cost.api_cycles("Duplicate", dt.float32, width)
            # the row's calls of `width` elements, then its tail, summed in that order
            full, calls = cost.api_cycles(api, dt.float32, width), 0
            for _ in range(C // width):
                calls += full
            if C % width:
                calls += cost.api_cycles(api, dt.float32, C % width)
            total += calls
            h = width // 2
            while h >= FOLD_LANES:
                total += cost.api_cycles(api, dt.float32, h)
                h //= 2
        if best_cost is None or total < best_cost:
            best, best_cost = width, total
        width *= 2
    return best


def _multi_pass(sched: RowSchedule, plan, where, ops) -> RowSchedule:
    """Rows bigger than UB: one pass per phase of the row plan, each walking the row in chunks.
    A pass recomputes the row values it needs from the inputs (UB cannot keep a row), so x is
    read once per pass that reads it; per-row values (reductions, ops on them) carry over."""
    fn, target = sched.fn, sched.target
    if any(op.name in REDUCTIONS and not op.operands[0].dtype.is_float for op in ops):
        raise ScheduleError(f"row kernel {fn.name}: integer reductions over rows bigger than UB are not lowered "
                            "(the multi-pass plan folds float32 lanes)", loc=where,
                            hint="this kernel still runs on the CPU executors (kernel(*arrays))")
    C = sched.row_shape[-1]
    producer = {id(op.result): op for op in fn.ops}
    param_ix = {id(p.value): i for i, p in enumerate(fn.params)}
    kinds = plan.kinds
    passes = []
    for phase in plan.phases:
        own = [st.op for st in phase.row_ops]
        chosen = {id(op) for op in own}
        work = [v for op in own for v in op.operands] + [op.operands[0] for op in phase.reductions]
        while work:
            v = work.pop()
            op = producer.get(id(v))
            if op is None or id(op) in chosen or kinds.get(id(v)) != "row":
                continue
            chosen.add(id(op))
            work += list(op.operands)
        run = [op for op in fn.ops if id(op) in chosen]
        read = {param_ix[id(v)] for op in run + phase.reductions for v in op.operands if id(v) in param_ix}
        row_params = [i for i in sorted(read) if sched.params[i].kind in ("full", "general", "lastonly")]
        outs = [i for i in phase.row_outputs]
        out_ids = {id(fn.results[i]) for i in outs}
        assign, counts = allocate_row_values(fn, kinds, run, out_ids)
        # a value returned but made in another pass is recomputed into a row buffer here
        passes.append(PassPlan([st.op for st in phase.scalar_ops], run, list(phase.reductions), row_params, outs,
                               assign, counts))
    itemsize = {d: (1 if d == dt.bool_ else d.itemsize) for d in dt.ALL}
    limit = target.max_queue_buffers_per_position
    queued = sorted({i for ps in passes for i in ps.params})
    in_num = 2 if 2 * len(queued) <= limit else 1
    per_elem = in_num * sum(itemsize[sched.params[i].dtype] for i in queued)
    per_elem += sched.out_num * sum(itemsize[o.dtype] for o in sched.outputs if o.kind == "row")
    per_elem += max((sum(itemsize[d] * n for d, n in ps.counts.items()) for ps in passes), default=0)
    per_elem += sum(itemsize[d] * n for d, n in temp_pool(sched.steps.values()).items())
    per_elem += 4 if sched.needs_wide else 0
    passes = _online_softmax(passes, fn)
    lanes = max((ps.lanes for ps in passes), default=0)
    fixed = FOLD_LANES * 4 * max(1, lanes) + 32 + 32 * rs_slots(fn)
    fixed += sched.out_num * 32 * sum(1 for o in sched.outputs if o.kind == "rowscalar")
    def chunk_for(fixed_bytes: int) -> int:   # elements per chunk, a multiple of 64, what UB leaves
        return ((sched.ub_budget - fixed_bytes) // max(1, per_elem) - sched.slack) // FOLD_LANES * FOLD_LANES
    chunk = chunk_for(fixed)
    if chunk < FOLD_LANES:
        raise ScheduleError(f"row kernel {fn.name} ({', '.join(op.name for op in ops)}): even a chunk of "
                            f"{FOLD_LANES} elements needs more than the {sched.ub_budget} bytes of UB of "
                            f"{target.name} ({per_elem} B per element, {fixed} B fixed)", loc=where,
                            hint="split the kernel (fewer ops per kernel); it still runs on the CPU executors")
    # wider lanes for the chunks' folds (fold_width), when the chunk that leaves still holds them
    width = fold_width(min(chunk, C), [red for ps in passes for red in ps.reductions])
    wide_fixed = fixed + (width - FOLD_LANES) * 4 * max(1, lanes)
    wide_chunk = chunk_for(wide_fixed)
    if width > FOLD_LANES and wide_chunk >= width:
        fixed, chunk, sched.fold_lanes = wide_fixed, wide_chunk, width
    sched.passes, sched.chunk, sched.in_num = passes, min(chunk, _round_up(C, FOLD_LANES)), in_num
    sched.tile_row_bytes, sched.row_bytes, sched.fixed_bytes, sched.tile_scalar_bytes = per_elem, 0, fixed, 0
    reads = sum(1 for ps in passes if any(sched.params[i].kind in ("full", "general") for i in ps.params))
    sched.plan_note = (f"multi-pass: a row of {C} elements needs {sched.single_need} bytes of UB in the "
                       f"single-read plan, more than the {sched.ub_budget} of {target.name}; {len(passes)} passes "
                       f"over each row in chunks of {sched.chunk} (x read {reads} times, every output written "
                       "once, gamma-like rows read per row)")
    return sched


def _online_softmax(passes: list, fn: Function) -> list:
    """Merge softmax's max pass and sum pass into one (x read twice instead of three times).

    Pass k reduces m = max(a); pass k+1 only computes e = exp(a - m) and s = sum(e). One pass
    keeps per-lane running maxima M and sums S and, per chunk, rescales S by exp(M_old - M_new)
    before adding exp(a - M_new) (the "online softmax" recurrence); at the end the lanes are
    combined the same way. float32 only (the recurrence's extra roundings in half would drift
    from the reference's one rounding per op)."""
    out = []
    k = 0
    while k < len(passes):
        ps = passes[k]
        nxt = passes[k + 1] if k + 1 < len(passes) else None
        pair = _online_pair(ps, nxt) if nxt is not None else None
        moments = _moments_pair(ps, nxt, fn) if nxt is not None and pair is None else None
        if pair is None and moments is None:
            out.append(ps)
            k += 1
            continue
        ps.reductions = [(pair or moments)[0], (pair or moments)[1]]
        ps.online, ps.moments = pair, moments
        out.append(ps)
        k += 2
    return out


def _online_pair(ps, nxt):
    if len(ps.reductions) != 1 or ps.reductions[0].name != "max" or ps.outputs or ps.online:
        return None
    if len(nxt.reductions) != 1 or nxt.reductions[0].name != "sum" or nxt.outputs or nxt.scalar_ops:
        return None
    red_max, red_sum = ps.reductions[0], nxt.reductions[0]
    a = red_max.operands[0]
    extra = [op for op in nxt.ops if op not in ps.ops]
    if len(extra) != 2 or [op.name for op in extra] != ["sub", "exp"]:
        return None
    sub, exp = extra
    if (sub.operands[0] is not a or sub.operands[1] is not red_max.result or exp.operands[0] is not sub.result
            or red_sum.operands[0] is not exp.result):
        return None
    if any(v.dtype != dt.float32 for v in (a, sub.result, exp.result, red_max.result, red_sum.result)):
        return None
    if set(nxt.params) - set(ps.params):
        return None
    return red_max, red_sum, sub, exp


def _moments_pair(ps, nxt, fn):
    """layer_norm's mean pass and variance pass in one: m = mean(x), v = mean((x - m)^2) from
    per-lane sums of d = x - K and d*d, K the row's first element (a shift near the data keeps
    the difference of large numbers out: v = (S2 - S1^2 / C) / C, m = K + S1 / C). x must be a
    parameter (K is read from GM) and everything float32."""
    if len(ps.reductions) != 1 or ps.reductions[0].name != "mean" or ps.outputs or ps.ops:
        return None
    if len(nxt.reductions) != 1 or nxt.reductions[0].name != "mean" or nxt.outputs or nxt.scalar_ops:
        return None
    red_m, red_v = ps.reductions[0], nxt.reductions[0]
    a = red_m.operands[0]
    if not any(p.value is a for p in fn.params):
        return None
    extra = [op for op in nxt.ops if op not in ps.ops]
    if len(extra) != 2 or extra[0].name != "sub" or extra[1].name not in ("square", "mul"):
        return None
    sub, sq = extra
    if sub.operands[0] is not a or sub.operands[1] is not red_m.result or red_v.operands[0] is not sq.result:
        return None
    if sq.name == "mul" and not (sq.operands[0] is sub.result and sq.operands[1] is sub.result):
        return None
    if sq.name == "square" and sq.operands[0] is not sub.result:
        return None
    if any(v.dtype != dt.float32 for v in (a, sub.result, sq.result, red_m.result, red_v.result)):
        return None
    return red_m, red_v, sub, sq


def row_need(sched: RowSchedule, C: int, tile_rows: int) -> int:
    """UB bytes of the plan for rows of C elements and tiles of `tile_rows` rows."""
    cpad = _round_up(C, sched.block_elems) + sched.slack
    return (tile_rows * (sched.tile_row_bytes * cpad + sched.tile_scalar_bytes) + sched.row_bytes * cpad
            + sched.fixed_bytes)


def _classify(index: int, p, row_shape) -> RowParam:
    name = p.value.name
    if p.kind == "scalar":
        return RowParam(index, name, p.value.dtype, "runtime_scalar")
    shape = tuple(p.value.shape)
    padded = (1,) * (len(row_shape) - len(shape)) + shape
    present = tuple(d != 1 or r == 1 for d, r in zip(padded[:-1], row_shape[:-1]))
    last = padded[-1] == row_shape[-1]   # (as row_plan: such a parameter streams along the row)
    if not last:
        size = 1
        for d in shape:
            size = size * d if isinstance(d, int) else -1
        return RowParam(index, name, p.value.dtype, "scalar" if size == 1 else "perrow", present)
    if all(present) and padded == row_shape:
        return RowParam(index, name, p.value.dtype, "full", present)
    if not any(d != 1 for d in padded[:-1]):
        return RowParam(index, name, p.value.dtype, "lastonly", present)
    return RowParam(index, name, p.value.dtype, "general", present)


def allocate_row_values(fn: Function, kinds: dict, ops=None, outputs=None) -> tuple[dict, dict]:
    """One row buffer per row value that is neither an input nor an output, reused (same
    dtype) once its last reader has run; a value's buffer is taken before its operands' are
    given back, so an op never writes a buffer it is still reading.

    Returns (id(value) -> (dtype, buffer number), dtype -> buffers of that dtype)."""
    ops = fn.ops if ops is None else ops
    results = {id(v) for v in fn.results} if outputs is None else outputs
    last_use: dict[int, int] = {}
    for i, op in enumerate(ops):
        for v in op.operands:
            last_use[id(v)] = i
    assign: dict[int, tuple] = {}
    count: dict[dt.DType, int] = {}
    free: dict[dt.DType, list] = {}
    for i, op in enumerate(ops):
        for v in op.results:
            if kinds.get(id(v)) == "row" and id(v) not in results:
                pool = free.setdefault(v.dtype, [])
                if pool:
                    assign[id(v)] = (v.dtype, pool.pop(0))
                else:
                    assign[id(v)] = (v.dtype, count.get(v.dtype, 0))
                    count[v.dtype] = count.get(v.dtype, 0) + 1
        for v in dict.fromkeys(op.operands):
            if id(v) in assign and last_use.get(id(v)) == i:
                free.setdefault(v.dtype, []).append(assign[id(v)][1])
    return assign, count


def temp_pool(steps) -> dict:
    """dtype -> how many row temporaries the steps need at most at once."""
    pool: dict[dt.DType, int] = {}
    for s in steps:
        count: dict[dt.DType, int] = {}
        for name, slot in s.sched.slots.items():
            if slot.role not in ("in", "out"):
                count[slot.dtype] = count.get(slot.dtype, 0) + 1
        for d, n in count.items():
            pool[d] = max(pool.get(d, 0), n)
    return pool


def rs_slots(fn: Function) -> int:
    """32-byte UB slots for per-row values (one per op result or parameter at most)."""
    return len(fn.ops) + len(fn.params)


def resolve(sched: RowSchedule, sizes: dict[str, int]) -> tuple[int, ...]:
    return tuple(sizes[d] if isinstance(d, str) else d for d in sched.row_shape)


def compute_row_tiling(sched: RowSchedule, sizes: dict[str, int], target: Target) -> RowTiling:
    """Tiles of whole rows, contiguous tile ranges per core (mirrored by the printed host code):
    the cores by the 16 KB-per-core rule, the tiles as large as UB holds."""
    return _row_tilings(sched, sizes, target, candidates=False)[0]


def row_tiling_candidates(sched: RowSchedule, target: Target) -> list[RowTiling]:
    """compute_row_tiling's tiling of a static row kernel first, then the others the kernel pass
    `tiling` walks (tile/kernel_passes.py): each power-of-two share of the vector cores (and all
    of them), with a core's rows in one tile, in two or in four (double buffering overlaps a
    tile's copies with the previous tile's vector work only from two tiles per core).  None
    besides the first when it already runs every vector core at two tiles or more each (the
    candidates would only take cores away; walking them would cost a large kernel's compile
    ~0.2 s) or when the schedule offers none (`offer_tilings`)."""
    tilings = _row_tilings(sched, {}, target, candidates=sched.offer_tilings)
    first = tilings[0]
    if first.block_dim >= target.vector_cores and first.tiles_per_core >= 2:
        return tilings[:1]
    return tilings


def _row_tilings(sched: RowSchedule, sizes: dict[str, int], target: Target, candidates: bool) -> list[RowTiling]:
    shape = resolve(sched, sizes)
    C = shape[-1]
    dims = tuple(shape[:-1]) or (1,)
    R = 1
    for d in dims:
        R *= d
    strides = []
    for p in sched.params:
        if p.kind in ("general", "perrow"):
            # element strides: a "general" parameter's rows are C elements long, a "perrow"
            # parameter has one element per row
            st, acc = [], (C if p.kind == "general" else 1)
            for present, n in zip(reversed(p.present), reversed(shape[:-1])):
                st.append(acc if present else 0)
                if present:
                    acc *= n
            st = list(reversed(st)) or [0]
            strides.append(tuple(st))
    strides = tuple(strides)
    Cpad = _round_up(C, sched.block_elems)
    if R * (Cpad + sched.slack) >= MAX_ELEMS:
        raise ScheduleError(f"row kernel {sched.fn.name}: {R} rows of {C} elements need 64-bit offsets; the "
                            "printed kernels use 32-bit element offsets", loc=sched.fn.loc,
                            hint="split the tensor into parts below 2**32 elements")
    if C == 0 and R and any(o.kind == "rowscalar" for o in sched.outputs):
        # no element to reduce: the kernel would leave every row's result unwritten (outputs of
        # C elements per row are empty: nothing to write)
        raise ScheduleError(f"row kernel {sched.fn.name}: rows of 0 elements are not printed as Ascend C (a reduction "
                            "over an empty axis: the kernel would leave its outputs unwritten)", loc=sched.fn.loc,
                            hint="its value is the identity (sum 0, mean NaN): compute it on the host, or run on "
                            "the CPU executors (kernel(*arrays))")
    if R == 0 or C == 0:
        return [RowTiling(R, C, Cpad, 1, 0, 0, 0, dims, strides)]
    moved = R * C * max(sched.out_row_bytes, sched.in_row_bytes, 1)
    wants = [max(1, min(target.vector_cores, -(-moved // MIN_CORE_BYTES), R))]
    if candidates:
        n = target.vector_cores
        while n >= 1:
            wants.append(min(n, R))
            n //= 2
    out: list[RowTiling] = []
    seen: set = set()   # (the tilings differ only in these: R, C, dims and strides are the call's)

    def add(tile_rows: int, total_tiles: int, tiles_per_core: int, cpad: int) -> None:
        if not target.has_datacopypad:
            tiles_per_core = _line_aligned(sched, tiles_per_core, total_tiles, tile_rows, C)
        if (tile_rows, total_tiles, tiles_per_core, cpad) in seen:
            return
        seen.add((tile_rows, total_tiles, tiles_per_core, cpad))
        out.append(RowTiling(R, C, cpad, tile_rows, total_tiles, tiles_per_core, -(-total_tiles // tiles_per_core),
                             dims, strides))
    if sched.passes is not None:   # multi-pass: one row per tile, walked in chunks of Cpad
        for want in wants:
            add(1, R, -(-R // want), sched.chunk)
        return out
    cpad = Cpad + sched.slack
    left = sched.ub_budget - sched.row_bytes * cpad - sched.fixed_bytes
    fit = max(0, left) // (sched.tile_row_bytes * cpad + sched.tile_scalar_bytes)
    if fit < 1:
        raise ScheduleError(
            f"row kernel {sched.fn.name}: one row of {C} elements needs {row_need(sched, C, 1)} bytes of UB in the "
            f"single-read plan, but {target.name} has {sched.ub_budget}; the multi-pass plan for rows bigger than "
            "UB is chosen at compile time, which needs the row length then", loc=sched.fn.loc,
            hint="give the last dimension a fixed size (not a symbolic one) for rows this long")
    if sched.shared_row_bytes:   # every core reads the shared rows (gamma, beta) once: keep that <= 2 %
        wants[0] = max(1, min(wants[0], R * (sched.in_row_bytes + sched.out_row_bytes) // (50 * sched.shared_row_bytes)))
    for i, want in enumerate(wants):
        rows_per_core = -(-R // want)
        for split in ((1,) if i == 0 else (1, 2, 4)):
            tile_rows = max(1, min(fit, -(-rows_per_core // split), MAX_BLOCK_COUNT))
            total_tiles = -(-R // tile_rows)
            add(tile_rows, total_tiles, -(-total_tiles // want), Cpad)
    return out


def _line_aligned(sched: RowSchedule, tiles_per_core: int, total_tiles: int, tile_rows: int, C: int) -> int:
    """Without DataCopyPad, row tails (and per-row results) are written with SetValue through
    each core's 64-byte data cache: grow tilesPerCore until every core's share of every
    output starts on a 64-byte line, so no two cores write the same line."""
    def shared(per_core: int) -> bool:
        for s in range(per_core, total_tiles, per_core):
            row = s * tile_rows
            for o in sched.outputs:
                off = row * (C if o.kind == "row" else 1)
                if off * o.dtype.itemsize % 64:
                    return True
        return False
    while tiles_per_core < total_tiles and shared(tiles_per_core):
        tiles_per_core += 1
    return tiles_per_core


def rowscalar_dtype(v: Value) -> dt.DType:
    return compute_dtype(v.dtype)

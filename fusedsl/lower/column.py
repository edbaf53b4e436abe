"""Reductions over other axes than the last, for the Ascend C backend.

A column kernel (FS116: `sum(x * x, 0)`, batch statistics `mean`/`var` over axis 0, or a lone
`mean(x, axis=(1, 2))`) reduces a domain D viewed as [A, K, B] (A: axes before the reduced
range, K: the reduced axes, B: the axes after it) with the elementwise ops before and after
its reductions (lower/column_plan.ColumnPlan).  A lone reduction whose range ends at the last
axis (B == 1: `max(x)`, `sum(x, (1, 2))` of [A, H, W]) is the row kernel of the one-op
function [A, K] -> [A] (lower/row, lower/row_tile), both plans included.

A column kernel's tile is `bn` consecutive outputs out[a, b0 : b0+bn] (lower/column_tile.py):

    per phase   its col ops on [bn] rows, then a walk over k = 0..K-1 reading `kt` rows of
                every elem input per DMA (rows B apart in GM, bn apart in UB); per row the
                phase's elem ops run on [bn] row buffers and each reduction adds the row into
                its float32 accumulator (16-bit rows cast first); mean divides by K, the
                result is rounded once to its dtype
    CopyOut     every output row of the tile

so an elem input is read once per walk that needs it, and once in all when one DMA holds
every row of K (`resident`: var(x, 0) then reads x once).

Multi-core: cores take contiguous ranges of (a, column-chunk) tiles and never split K, so
no core produces a partial result and nothing needs combining (no atomics, no second
stage); the price is fewer busy cores when A * B is small, which `bn` (down to one 32-byte
block of outputs) partly recovers.

The host schedule (`schedule_reduce_kernel(host=True)`, backend_cpu/cpu_tiling.column_schedule: what
the CPU runs through llvm_kernel) is the same kernel, and takes what the printed one refuses: integer and
bool reductions accumulate in int32 (sums wrap as numpy's int64 sum cast to int32, 8-bit and bool
max / min narrow back exactly), outputs of any dtype, a walk over no rows of K leaves the
identities (sum 0, mean NaN), and the strides over [A, K, B] are tiling words (`sa<i>`, `sk<i>`),
so symbolic sizes take their view, strides and tiles from each launch and one compiled kernel
runs every shape of a function.
"""
from __future__ import annotations

from dataclasses import field

from ..record import record
from .. import dtypes as dt
from ..errors import ScheduleError
from ..ir.core import Function, Op, Value
from ..ir.shapes import column_param
from ..ir.ops import CONSTANT, has_trait
from .. import cost
from .vector import MIN_CORE_BYTES
from .column_plan import ColumnPlan, lone_row_reduction, plan_column_kernel, rows_function
from .errors import LoweringError
from .row import MAX_ELEMS, REDUCTIONS, RowParam, allocate_row_values, schedule_row_kernel, temp_pool
from ..targets import Target
from ..tile.alloc import select_scratch


def _round_up(a: int, b: int) -> int:
    return -(-a // b) * b


@record(frozen=False)
class ColumnSchedule:
    fn: Function
    plan: ColumnPlan
    target: Target
    A: int
    K: int
    B: int
    params: list[RowParam]   # kinds "elem" | "col" | "scalar" | "runtime_scalar" (column_plan.ColParam)
    bn: int                  # outputs per tile (a multiple of 32 elements: one 32-byte block of any dtype)
    kt: int                  # rows of K per DMA
    ub_budget: int
    plan_note: str
    resident: bool = False   # one DMA holds every row of K: later walks read the inputs from UB
    depth: int = 2           # buffers per elem input queue (1 when resident tiles need the room)
    slack: int = 0           # elements Compare may read past a row buffer
    row_counts: dict = field(default_factory=dict)    # dtype -> elem row buffers (reused by liveness)
    row_assign: dict = field(default_factory=dict)    # id(elem value) -> (dtype, buffer number)
    temps: dict = field(default_factory=dict)         # dtype -> temporaries the op stmts need at once
    host: bool = False       # the CPU's schedule (`schedule_reduce_kernel`): strides and sizes are words
    symbols: tuple = ()      # the domain's symbolic sizes (a host schedule only; A, K, B are then None)

    @property
    def inputs(self):
        return self.params

    @property
    def stride_params(self) -> list[RowParam]:
        """The elem and col parameters: the ones addressed by strides over [A, K, B]."""
        return [p for p in self.params if p.kind in ("elem", "col")]

    def accumulator(self, op: Op) -> dt.DType:
        """A reduction's accumulator dtype: float32, int32 for integer and bool operands (a host
        schedule's: sums wrap as numpy's int64 sum cast to int32, max / min narrow back exactly)."""
        return dt.float32 if op.operands[0].dtype.is_float else dt.int32

    @property
    def op(self) -> Op:
        """The first reduction (for messages: the kernel is named after it)."""
        return next(o for ph in self.plan.phases for o in ph.reductions)

    @property
    def elem_bytes(self) -> int:
        """Bytes of every elem input per element of the domain (how the cores are counted)."""
        return max(1, sum(p.dtype.itemsize for p in self.params if p.kind == "elem"))

    @property
    def walks(self) -> int:
        return sum(1 for ph in self.plan.phases if ph.walks)

    def elem_reads(self, p: RowParam) -> int:
        """How many times the kernel reads elem input p from GM: once per walk that needs it,
        once in all when one DMA holds every row of K (resident)."""
        reads = sum(1 for ph in self.plan.phases if ph.walks and
                    any(q.index == p.index for q in self.plan.elem_params(ph)))
        return min(reads, 1) if self.resident else reads

    def tiling(self, sizes, target) -> "ColumnTiling":
        return compute_column_tiling(self, target, sizes)

    def view(self, sizes=None) -> tuple[int, int, int]:
        """[A, K, B] for these sizes (a symbolic schedule's from the launch's {symbol: size})."""
        if not self.symbols:
            return self.A, self.K, self.B
        plan = self.plan
        dims = [sizes[d] if isinstance(d, str) else d for d in plan.domain]
        return _prod(dims[:plan.first]), _prod(dims[plan.first:plan.last + 1]), _prod(dims[plan.last + 1:])

    def strides(self, sizes=None) -> tuple[int, ...]:
        """A host schedule's stride words: (sa, sk) per elem / col parameter (column_param's, for
        these sizes); the printed kernels' strides are numbers in the kernel instead."""
        if not self.host:
            return ()
        plan, sizes = self.plan, sizes or {}
        domain = tuple(sizes[d] if isinstance(d, str) else d for d in plan.domain)
        words = []
        for p in self.stride_params:
            form = next(q for q in plan.params if q.index == p.index)
            shape = tuple(sizes[d] if isinstance(d, str) else d for d in form.value.shape)
            _, sa, sk, _ = column_param(shape, domain, plan.first, plan.last, form.out_layout)
            words += [sa, sk]
        return tuple(words)


@record
class ColumnTiling:
    A: int
    K: int
    B: int
    bn: int
    kt: int
    col_tiles: int            # tiles per a
    total_tiles: int
    tiles_per_core: int
    block_dim: int
    strides: tuple = ()       # a host schedule's (sa, sk) per strided parameter (ColumnSchedule.strides)

    @property
    def words(self) -> list[int]:
        return [self.A, self.K, self.B, self.bn, self.kt, self.col_tiles, self.total_tiles, self.tiles_per_core,
                self.block_dim, *self.strides]


def schedule_reduce_kernel(fn: Function, target: Target, ub_fraction: float = 1.0, host: bool = False):
    """A RowSchedule (a lone reduction with B == 1) or a ColumnSchedule; ScheduleError
    (located) when not printable.  `host`: the CPU's column schedule (backend_cpu/cpu_tiling.
    column_schedule), which also takes what the printed kernels refuse -- integer and bool
    reductions (int32 accumulators), outputs of any dtype, symbolic sizes and reductions over
    no rows (numpy's identities) -- with its strides as tiling words, and no queue limits (the
    host's arena has no queue positions)."""
    reds = [o for o in fn.ops if o.name in REDUCTIONS]
    op = reds[0] if reds else fn.ops[-1]
    found = lone_row_reduction(fn)
    if found is not None and not host:
        return _rows_of(fn, found, target, ub_fraction)
    try:
        plan = plan_column_kernel(fn, target)
    except LoweringError as exc:
        raise ScheduleError(f"{op.name} over axes {list(op.attr('axes'))} is not printed as Ascend C ({exc})",
                            loc=op.loc, hint="this kernel still runs on the CPU executors (kernel(*arrays))") from None
    symbolic = plan.A is None or plan.K is None or plan.B is None
    if not host:
        _printable(fn, plan, reds, op)
    params = [RowParam(p.index, p.value.name, p.value.dtype, p.kind) for p in plan.params]
    steps = [st for ph in plan.phases for st in ph.col_ops + ph.elem_ops]
    budget = int(target.ub_bytes * ub_fraction) - select_scratch(target, [x for st in steps for x in st.sched.stmts])
    symbols = tuple(dict.fromkeys(d for d in plan.domain if isinstance(d, str)))
    sched = ColumnSchedule(fn, plan, target, plan.A, plan.K, plan.B, params, 0, 0, budget, "", host=host,
                           symbols=symbols)
    elem_kinds = {k: ("row" if kind == "elem" else kind) for k, kind in plan.kinds.items()}
    sched.row_assign, sched.row_counts = allocate_row_values(fn, elem_kinds, outputs=set())
    sched.temps = temp_pool(steps)
    sched.slack = max([st.sched.slack_elems for st in steps] + [0])
    ops = ", ".join(dict.fromkeys(o.name for o in fn.ops if not has_trait(o, CONSTANT)))
    accumulate = " / ".join(sorted({sched.accumulator(r).name for r in reds}))   # (a chip's: float32)
    if symbolic:   # (a host schedule) every tile's size is the launch's: cpu_tiling.column_tiling
        sched.plan_note = (f"columns: [A, K, B] over {list(plan.domain)} ({ops}), accumulated in {accumulate} "
                           "over K; the tiles are the launch's")
        return sched
    A, K, B = plan.A, plan.K, plan.B
    min_item = min([p.dtype.itemsize for p in params if p.kind != "runtime_scalar"] +
                   [v.dtype.itemsize for v in fn.results])
    # column chunk: enough tiles for every core when the outputs allow it, at most 1024
    # outputs (a DMA row under 256 bytes wastes most of its bandwidth: no smaller chunks)
    bn = cost.column_tile_width(A, B, min_item, target.vector_cores)
    item_row = sum(p.dtype.itemsize for p in params if p.kind == "elem")

    def rows_that_fit(cols: int, depth: int) -> int:
        sched.bn = cols
        fixed = column_fixed_bytes(sched)
        return (sched.ub_budget - fixed) // max(1, depth * item_row * cols) if sched.ub_budget > fixed else 0

    while True:
        kt = rows_that_fit(bn, 2)
        if kt >= 1 or bn <= 32:
            break
        bn = max(32, _round_up(bn // 2, 32))
    if kt < 1:
        raise ScheduleError(f"{op.name}: a tile of {bn} columns with its {len(fn.ops)} ops needs more than the "
                            f"{sched.ub_budget} bytes of UB of the budget", loc=op.loc,
                            hint="split the computation, or run on the CPU executors")
    if sched.walks > 1 and min(kt, 4095) < K <= 4095:
        # a later walk would read the inputs from GM again: narrower tiles that hold every row
        # of K in one (single-buffered) DMA read them once (var(x, 0) at 1.0x, not 2.0x)
        cols = bn
        while cols > 32 and rows_that_fit(cols, 1) < K:
            cols = max(32, _round_up(cols // 2, 32))
        if rows_that_fit(cols, 1) >= K:
            bn, kt, sched.depth = cols, K, 1
    sched.bn = bn
    sched.kt = kt = min(K, 4095, kt)
    if host:   # a walk steps by kt rows (K = 0: no step runs)
        sched.kt = kt = max(1, kt)
    sched.resident = kt >= K and sched.walks > 1
    if not host:
        _queue_limits(sched, params, op)
    walks = (f"{sched.walks} walks over K" + (" reading the inputs once (one DMA holds K)" if sched.resident
                                               else "") if sched.walks > 1 else "one walk over K")
    sched.plan_note = (f"columns: [A, K, B] = [{A}, {K}, {B}] ({ops}), tiles of {bn} outputs accumulated in "
                       f"{accumulate} over K, {kt} rows per DMA, {walks}; cores split A and B only, never K, so "
                       "there are no partial results to combine")
    return sched


def _printable(fn: Function, plan: ColumnPlan, reds: list, op: Op) -> None:
    """The printed kernels' refusals (a host schedule takes these kernels)."""
    if plan.A is None or plan.K is None or plan.B is None:
        raise ScheduleError(f"{op.name} over axes {list(op.attr('axes'))} of a tensor with symbolic sizes "
                            f"{list(plan.domain)} is not printed as Ascend C yet", loc=op.loc,
                            hint="give the tensor fixed sizes, or run on the CPU executors")
    if plan.K == 0 and plan.A * plan.B:
        # the kernel would write nothing (no row to accumulate): GM keeps whatever it held
        raise ScheduleError(f"{op.name} over axes {list(op.attr('axes'))} of an empty axis (length 0) is not printed "
                            "as Ascend C: the kernel has no row to reduce and would leave its output unwritten",
                            loc=op.loc, hint="its value is the identity (sum 0, mean NaN): compute it on the host, "
                            "or run on the CPU executors (kernel(*arrays))")
    for r in reds:
        if not r.operands[0].dtype.is_float:
            raise ScheduleError(f"{r.name} over {r.operands[0].dtype.name} is not printed as Ascend C yet (the "
                                "reduction APIs take half/float)", loc=r.loc,
                                hint="cast to float32 first, or run on the CPU executors")
    for v in fn.results:
        if v.dtype not in COPYABLE:
            raise ScheduleError(f"a column kernel's {v.dtype.name} output is not printed as Ascend C yet",
                                loc=fn.loc, hint="this kernel still runs on the CPU executors (kernel(*arrays))")


def _queue_limits(sched: ColumnSchedule, params: list, op: Op) -> None:
    """The chip's buffer and queue limits (single-buffered input queues when that fits them)."""
    target = sched.target
    if len(column_buffers(sched)) > target.max_buffers:
        raise ScheduleError(f"{op.name}: the column kernel needs {len(column_buffers(sched))} UB buffers; "
                            f"{target.name} allows {target.max_buffers}", loc=op.loc,
                            hint="this kernel still runs on the CPU executors (kernel(*arrays))")
    queues = sum(sched.depth for p in params if p.kind == "elem") + sum(1 for p in params if p.kind == "col")
    if queues > target.max_queue_buffers_per_position and sched.depth == 2:
        # single-buffered input queues fit the chip's queue limit (ascend910 has 4 per position):
        # a tile's DMA no longer overlaps the previous tile's compute, but the kernel prints
        sched.depth = 1
        queues = sum(1 for p in params if p.kind in ("elem", "col"))
    if queues > target.max_queue_buffers_per_position:
        raise ScheduleError(f"{op.name}: the column kernel's {queues} input queue buffers exceed the "
                            f"{target.max_queue_buffers_per_position} of one position on {target.name}", loc=op.loc,
                            hint="this kernel still runs on the CPU executors (kernel(*arrays))")


def _rows_of(fn, found, target, ub_fraction):
    """A lone reduction over trailing axes: the row kernel of [A, K] -> [A]."""
    op, first, last = found
    x = op.operands[0]
    shape = tuple(x.shape)
    if not all(isinstance(d, int) for d in shape):
        raise ScheduleError(f"{op.name} over axes {list(op.attr('axes'))} of a tensor with symbolic sizes "
                            f"{list(shape)} is not printed as Ascend C yet", loc=op.loc,
                            hint="give the tensor fixed sizes, or run on the CPU executors")
    if not x.dtype.is_float:
        raise ScheduleError(f"{op.name} over {x.dtype.name} is not printed as Ascend C yet (the reduction APIs take "
                            "half/float)", loc=op.loc, hint="cast to float32 first, or run on the CPU executors")
    A = _prod(shape[:first])
    K = _prod(shape[first:last + 1])
    sched = schedule_row_kernel(rows_function(op, A, K, fn.name, fn.loc), target, ub_fraction)
    sched.plan_note = f"[A, K] = [{A}, {K}] rows reduced over their last axis; " + sched.plan_note
    return sched


COPYABLE = (dt.float32, dt.float16, dt.bfloat16, dt.int32)   # outputs copied into their queue


def column_values(sched: ColumnSchedule) -> list[Value]:
    """The per-column values that need a UB row of their own: col op results and reduction
    results of another dtype than their accumulator (float32 / int32 ones are their accumulators)."""
    plan = sched.plan
    vals = [st.op.result for ph in plan.phases for st in ph.col_ops]
    vals += [op.result for ph in plan.phases for op in ph.reductions if op.result.dtype != sched.accumulator(op)]
    return vals


def column_buffers(sched: ColumnSchedule) -> list[tuple[str, str, int, int]]:
    """(name, position, bytes, buffers) of every UB buffer of the printed column kernel."""
    plan, bn = sched.plan, sched.bn
    row = bn + sched.slack
    bufs = []
    for p in sched.params:
        if p.kind == "elem":
            bufs.append((f"q_{p.name}", "VECIN", sched.kt * bn * p.dtype.itemsize, sched.depth))
        elif p.kind == "col":
            bufs.append((f"q_{p.name}", "VECIN", bn * p.dtype.itemsize, 1))
    for i, v in enumerate(sched.fn.results):
        bufs.append((f"q_y{i}", "VECOUT", bn * v.dtype.itemsize, 2))
    reds = [op for ph in plan.phases for op in ph.reductions]
    bufs += [(f"b_acc{r}", "VECCALC", bn * 4, 1) for r in range(len(reds))]
    if any(needs_wide(op) for op in reds):
        bufs.append(("b_wide", "VECCALC", bn * 4, 1))
    for j, v in enumerate(column_values(sched)):
        bufs.append((f"b_col{j}", "VECCALC", _round_up(row * v.dtype.itemsize, 32), 1))
    for d, n in sched.row_counts.items():
        bufs += [(f"b_{d.name}_e{i}", "VECCALC", _round_up(row * d.itemsize, 32), 1) for i in range(n)]
    for d, n in sched.temps.items():
        bufs += [(f"b_{d.name}_t{i}", "VECCALC", _round_up(row * d.itemsize, 32), 1) for i in range(n)]
    return bufs


def needs_wide(op: Op) -> bool:
    """Whether a reduction needs the float32 row `wide`: a 16-bit float operand is cast into it, a
    mean's divisor K is duplicated there (integer operands are widened by the folds themselves)."""
    return op.name == "mean" or op.operands[0].dtype in (dt.float16, dt.bfloat16)


def column_fixed_bytes(sched: ColumnSchedule) -> int:
    """UB bytes of everything but the elem input queues (which take what is left), plus 1 KB
    for the CPU API's alignment and the tiling struct."""
    elem = {f"q_{p.name}" for p in sched.params if p.kind == "elem"}
    return sum(b * n for name, _, b, n in column_buffers(sched) if name not in elem) + 1024


def _prod(dims) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def compute_column_tiling(sched: ColumnSchedule, target: Target, sizes=None) -> ColumnTiling:
    """The launch's tiling (a symbolic host schedule's for these sizes: the chip's widest tile of
    outputs and every row of K at once, which cpu_tiling.column_tiling replaces)."""
    A, K, B = sched.view(sizes)
    bn, kt = sched.bn, sched.kt
    if sched.symbols:
        bn, kt = min(max(32, _round_up(B, 32)), 1024), max(1, min(K, 4095))
    if A * K * B >= MAX_ELEMS:
        raise ScheduleError(f"{sched.op.name}: {A * K * B} elements need 64-bit offsets; the printed kernels use "
                            "32-bit element offsets", loc=sched.op.loc)
    strides = sched.strides(sizes)
    col_tiles = -(-B // bn)
    total = A * col_tiles
    if total == 0 or (K == 0 and not sched.host):   # (the host's walks over no rows leave the identities)
        return ColumnTiling(A, K, B, bn, kt, col_tiles, 0, 0, 0, strides)
    moved = A * K * B * sched.elem_bytes
    want = max(1, min(target.vector_cores, -(-moved // MIN_CORE_BYTES), total))
    per_core = -(-total // want)
    if not target.has_datacopypad:   # tails written with SetValue: cores must not share a 64-byte line
        items = sorted({v.dtype.itemsize for v in sched.fn.results})
        while per_core < total and any((s // col_tiles * B + s % col_tiles * bn) * item % 64
                                       for s in range(per_core, total, per_core) for item in items):
            per_core += 1
    return ColumnTiling(A, K, B, bn, kt, col_tiles, total, per_core, -(-total // per_core), strides)

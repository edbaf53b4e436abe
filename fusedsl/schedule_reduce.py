"""A lone reduction over other axes than the last, for the Ascend C backend.

Row fusion merges only last-axis reductions; `sum(x, axis=0)`, `mean(x, axis=(1, 2))` or
`max(x)` stay kernels of their own (kind "single").  When the reduced axes are one contiguous
range the input is a free view [A, K, B] (A: axes before the range, K: the reduced axes, B:
the axes after it):

    B == 1   A rows of K elements: the row kernel of the one-op function [A, K] -> [A]
             (schedule_row, printer_row), both plans included
    B > 1    a column reduction (printer_reduce.ColumnPrinter): a tile is `bn` consecutive
             outputs out[a, b0 : b0+bn]; it keeps them in a float32 accumulator in UB and
             walks k = 0..K-1 reading `kt` rows x[a, k, b0 : b0+bn] per DMA (rows B apart
             in GM), adding each (16-bit rows cast to float32 first), so every element is
             read once; mean divides by K, the result is rounded once to its dtype.

Multi-core: cores take contiguous ranges of (a, column-chunk) tiles and never split K, so
no core produces a partial result and nothing needs combining (no atomics, no second
stage); the price is fewer busy cores when A * B is small, which `bn` (down to one 32-byte
block of outputs) partly recovers.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import dtypes as dt
from .errors import ScheduleError
from .ir.core import Function, Op, Param, TensorType, Value, freeze_attrs
from .ir.ops import CONSTANT, has_trait
from .schedule import MIN_CORE_BYTES
from .schedule_row import MAX_ELEMS, REDUCTIONS, RowParam, schedule_row_kernel
from .targets import Target


def _round_up(a: int, b: int) -> int:
    return -(-a // b) * b


def lone_reduction(fn: Function) -> tuple[Op, int, int] | None:
    """(op, first, last reduced axis) when fn is one reduction over a contiguous axis range."""
    ops = [op for op in fn.ops if not has_trait(op, CONSTANT)]
    if len(ops) != 1 or ops[0].name not in REDUCTIONS or len(fn.params) != 1:
        return None
    op = ops[0]
    axes = tuple(op.attr("axes"))
    if not axes or axes != tuple(range(axes[0], axes[-1] + 1)) or op.operands[0] is not fn.params[0].value:
        return None
    return op, axes[0], axes[-1]


@dataclass
class ColumnSchedule:
    fn: Function
    op: Op
    target: Target
    A: int
    K: int
    B: int
    params: list[RowParam]
    bn: int                  # outputs per tile (a multiple of one 32-byte block of the input dtype)
    kt: int                  # input rows per DMA
    ub_budget: int
    plan_note: str

    symbols = ()             # static sizes only

    @property
    def inputs(self):
        return self.params

    def tiling(self, sizes, target) -> "ColumnTiling":
        return compute_column_tiling(self, target)

    def ub_plan(self, tiling) -> list[tuple[str, str, int, int]]:
        x = self.op.operands[0].dtype
        out = self.op.result.dtype
        plan = [(f"q_{self.params[0].name}", "VECIN", self.kt * self.bn * x.itemsize, 2),
                ("q_y0", "VECOUT", self.bn * out.itemsize, 2),
                ("b_acc", "VECCALC", self.bn * 4, 1)]
        if x != dt.float32 or self.op.name == "mean":
            plan.append(("b_wide", "VECCALC", self.bn * 4, 1))
        return plan


@dataclass(frozen=True)
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

    @property
    def words(self) -> list[int]:
        return [self.A, self.K, self.B, self.bn, self.kt, self.col_tiles, self.total_tiles, self.tiles_per_core,
                self.block_dim]


def schedule_reduce_kernel(fn: Function, target: Target, ub_fraction: float = 1.0):
    """A RowSchedule (B == 1) or a ColumnSchedule; ScheduleError (located) when not printable."""
    found = lone_reduction(fn)
    op = found[0] if found else next((o for o in fn.ops if o.name in REDUCTIONS), fn.ops[-1])
    if found is None:
        raise ScheduleError(f"{op.name} over axes {list(op.attr('axes'))} is not printed as Ascend C (the reduced "
                            "axes must be one contiguous range of a kernel of its own)", loc=op.loc,
                            hint="this kernel still runs on the CPU executors (kernel(*arrays))")
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
    B = _prod(shape[last + 1:])
    if B == 1:   # rows: the row kernel of [A, K] -> [A]
        xv = Value(TensorType((A, K), x.dtype), x.name)
        red = Op(op.name, (xv,), (Value(TensorType((A,), op.result.dtype)),),
                 freeze_attrs({"axes": [1], "keepdims": False}), op.loc)
        rows = Function(fn.name, (Param(xv),), (red,), red.results, fn.loc)
        sched = schedule_row_kernel(rows, target, ub_fraction)
        sched.plan_note = f"[A, K] = [{A}, {K}] rows reduced over their last axis; " + sched.plan_note
        return sched
    budget = int(target.ub_bytes * ub_fraction)
    block = 32 // x.dtype.itemsize
    # column chunk: enough tiles for every core when the outputs allow it, at most 4 KB of float32
    # (a DMA row under 256 bytes wastes most of its bandwidth: no smaller chunks than that)
    least = max(block, 256 // x.dtype.itemsize)
    bn = min(_round_up(B, block), 1024)
    while bn > least and A * -(-B // bn) < target.vector_cores:
        bn = max(least, _round_up(bn // 2, block))
    wide = x.dtype != dt.float32 or op.name == "mean"   # a float32 row (16-bit input) or K per lane (mean)
    fixed = bn * 4 * (2 if wide else 1) + 2 * bn * op.result.dtype.itemsize
    kt = max(1, min(K, 4095, (budget - fixed) // (2 * bn * x.dtype.itemsize) if budget > fixed else 0))
    if fixed + 2 * kt * bn * x.dtype.itemsize > budget:
        raise ScheduleError(f"{op.name}: a tile of {bn} columns needs more than the {budget} bytes of UB", loc=op.loc)
    note = (f"columns: [A, K, B] = [{A}, {K}, {B}], tiles of {bn} outputs accumulated in float32 over K, {kt} rows "
            "per DMA; cores split A and B only, never K, so there are no partial results to combine")
    return ColumnSchedule(fn, op, target, A, K, B, [RowParam(0, fn.params[0].value.name, x.dtype, "full")],
                          bn, kt, budget, note)


def _prod(dims) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def compute_column_tiling(sched: ColumnSchedule, target: Target) -> ColumnTiling:
    A, K, B, bn = sched.A, sched.K, sched.B, sched.bn
    if A * K * B >= MAX_ELEMS:
        raise ScheduleError(f"{sched.op.name}: {A * K * B} elements need 64-bit offsets; the printed kernels use "
                            "32-bit element offsets", loc=sched.op.loc)
    col_tiles = -(-B // bn)
    total = A * col_tiles
    if total == 0 or K == 0:
        return ColumnTiling(A, K, B, bn, sched.kt, col_tiles, 0, 0, 0)
    moved = A * K * B * sched.op.operands[0].dtype.itemsize
    want = max(1, min(target.vector_cores, -(-moved // MIN_CORE_BYTES), total))
    per_core = -(-total // want)
    if not target.has_datacopypad:   # tails written with SetValue: cores must not share a 64-byte line
        item = sched.op.result.dtype.itemsize
        while per_core < total and any((s // col_tiles * B + s % col_tiles * bn) * item % 64
                                       for s in range(per_core, total, per_core)):
            per_core += 1
    return ColumnTiling(A, K, B, bn, sched.kt, col_tiles, total, per_core, -(-total // per_core))

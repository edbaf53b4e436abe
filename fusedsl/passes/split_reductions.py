"""Reductions over separated axes become one reduction per run of adjacent axes.

`sum(x, axis=(1, 3))` of a [N, C, H, W, D] tensor reduces axes that are not one contiguous
range: no kernel kind prints that (a row kernel reduces the trailing axes, a column kernel one
contiguous range before the last), and the LLVM row / column executors take one range too. The
same value is a chain of reductions, one per run of adjacent axes, the last run first, each
keeping its axes as size 1 so the next run's axis numbers hold; a reshape drops them at the end
when the op did not keep them. A mean of means (equal counts per group) and max / min of
partial max / min are the same function of the inputs; float sums add in another order (the
rounding of a reassociation, as numpy's pairwise sums differ from a serial loop).
Before: any valid IR. After: every sum / mean / max / min reduces one contiguous range of axes.
"""
from __future__ import annotations

import math

from .. import cost
from .. import dtypes as dt
from ..ir.core import Function, Module, Op, Value, freeze_attrs
from ..ir.ops import ELEMENTWISE, REGISTRY, has_trait
from .base import Pass, Rewriter

SPLIT = ("sum", "mean", "max", "min")
MIN_STAGE_ROWS = 8   # split-columns: rows of K each first-stage column reduces, at least


def runs(axes) -> list[list[int]]:
    """Sorted axes grouped into maximal runs of adjacent axes: (1, 3, 4) -> [[1], [3, 4]]."""
    out: list[list[int]] = []
    for a in sorted(axes):
        if out and a == out[-1][-1] + 1:
            out[-1].append(a)
        else:
            out.append([a])
    return out


def _parts(op: Op) -> list[list[int]]:
    """The runs of adjacent axes a reduction reduces; none for another op."""
    return runs(op.attr("axes") or ()) if op.name in SPLIT else []


class SplitReductions(Pass):
    name = "split-reductions"

    def run_on_function(self, fn: Function, module: Module) -> Function:
        if not any(len(_parts(op)) > 1 for op in fn.ops):
            return fn   # every reduction reduces one run of axes already: _split would keep every op
        return self._split(fn)

    @staticmethod
    def _split(fn: Function) -> Function:
        rw = Rewriter()
        for op in fn.ops:
            parts = _parts(op)
            if len(parts) < 2:
                rw.emit(op)
                continue
            v = rw.get(op.operands[0])
            for run in reversed(parts):   # the last run first: the earlier axes keep their numbers
                attrs = {"axes": list(run), "keepdims": True}
                (t,) = REGISTRY[op.name].infer((v.type,), attrs)
                step = Op(op.name, (v,), (Value(t),), freeze_attrs(attrs), op.loc)
                rw.ops.append(step)
                v = step.result
            if not op.attr("keepdims"):
                shape = list(op.result.shape)
                step = Op("reshape", (v,), (Value(op.result.type),), freeze_attrs({"shape": shape}), op.loc)
                rw.ops.append(step)
                v = step.result
            rw.replace(op.result, v)
        return rw.function(fn)


class SplitColumns(Pass):
    """A reduction over one axis before the last (a column kernel: [A, K, B] -> [A, B]) on too few
    tiles for the chip's cores becomes two: K split in place into (S, K/S), reduced over K/S,
    then over S.

    Why: the column kernel splits A and B over the cores, never K (lower/column.py: no partial
    results to combine), and its tiles are at least DMA_MIN_ROW_BYTES wide, so a [4096, 1024]
    float32 sum over axis 0 ran on 16 of 910B's 48 vector cores, each reading 1 MB (modelled
    114 us; tile/kernel_cost.py).  Split in S parts the first reduction has S times the tiles;
    the second reads S x A x B partials.  S is the divisor of K that leaves the busiest core the
    fewest rows over both stages, taken when that halves them at least (the second launch and
    the partials are not free), the tensor is big enough to need the cores and the reduced value
    is not an elementwise op's result (that fuses into the reduction's kernel: a reshape between
    them would make the product cross GM)
    (cost.MIN_CORE_BYTES each).  A 16-bit sum or mean reduces in float32 across both stages (one
    rounding, as the one-stage kernel accumulates in float32); max and min are exact in any order;
    float32 sums add in another order (a reassociation's rounding).

    Opt-in (`split_columns=True`): the CPU executors run the first stage's [A > 1, K/S, B] column
    sums several times slower than one [K, B] sum (a [4096, 1024] float32 sum: 0.97 -> 3.96 ms
    on the LLVM call, 2026-11-27), so the default would trade CPU time for modelled NPU time."""
    name = "split-columns"

    def __init__(self, target=None):
        self.target = target

    def run_on_function(self, fn: Function, module: Module) -> Function:
        if self.target is None:
            return fn
        rw = Rewriter()
        producer = {id(r): o for o in fn.ops for r in o.results}
        for op in fn.ops:
            # a reduction of an elementwise op's result fuses with it (FS116); the reshape would
            # stand between them, and the product would cross GM: left whole
            made = producer.get(id(op.operands[0])) if op.operands else None
            split = None if made is not None and has_trait(made, ELEMENTWISE) else self._parts(op)
            if split is None:
                rw.emit(op)
                continue
            axis, S, K = split
            x = rw.get(op.operands[0])
            wide = op.name in ("sum", "mean") and x.dtype.itemsize < 4
            # the axis split in place, so the second stage's result has the op's own shape (a
            # reshape after it would sit between the reduction and consumers fusion joins to it)
            shape = list(x.shape[:axis]) + [S, K // S] + list(x.shape[axis + 1:])
            v = _op(rw, "reshape", x, op.loc, shape=shape)
            if wide:
                v = _op(rw, "cast", v, op.loc, dtype=dt.float32.name)
            v = _op(rw, op.name, v, op.loc, axes=[axis + 1], keepdims=False)
            v = _op(rw, op.name, v, op.loc, axes=[axis], keepdims=bool(op.attr("keepdims")))
            if wide:
                v = _op(rw, "cast", v, op.loc, dtype=op.result.dtype.name)
            rw.replace(op.result, v)
        return rw.function(fn)

    def _parts(self, op: Op):
        """(axis, S, K) when `op` is a column reduction over one axis worth splitting in S, else
        None (a run of several axes: split-reductions left it one op; not split)."""
        if op.name not in SPLIT:
            return None
        x = op.operands[0]
        shape = x.shape
        axes = sorted(op.attr("axes") or ())
        if (len(axes) != 1 or not x.dtype.is_float or any(not isinstance(d, int) for d in shape)
                or axes[-1] >= len(shape) - 1):
            return None
        A, K, B = (math.prod(shape[:axes[0]]), math.prod(shape[axes[0]:axes[-1] + 1]),
                   math.prod(shape[axes[-1] + 1:]))
        cores = self.target.vector_cores
        if A * K * B * x.dtype.itemsize < 2 * cores * cost.MIN_CORE_BYTES:
            return None
        item = x.dtype.itemsize

        def per_core(a, k):   # elements the busiest core reduces in a column kernel [a, k, B] -> [a, B]
            bn = cost.column_tile_width(a, B, item, cores)
            return -(-(a * -(-B // bn)) // cores) * k * bn

        def rows(s):   # both stages
            return per_core(A * s, K // s) + (per_core(A, s) if s > 1 else 0)
        best = min((s for s in range(2, min(K // MIN_STAGE_ROWS, 4096) + 1) if K % s == 0), key=rows, default=None)
        if best is None or 2 * rows(best) > rows(1):
            return None
        return axes[0], best, K


def _op(rw: Rewriter, name: str, v: Value, loc, **attrs) -> Value:
    (t,) = REGISTRY[name].infer((v.type,), attrs)
    op = Op(name, (v,), (Value(t),), freeze_attrs(attrs), loc)
    rw.ops.append(op)
    return op.result

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

from ..ir.core import Function, Module, Op, Value, freeze_attrs
from ..ir.ops import REGISTRY
from .base import Pass, Rewriter

SPLIT = ("sum", "mean", "max", "min")


def runs(axes) -> list[list[int]]:
    """Sorted axes grouped into maximal runs of adjacent axes: (1, 3, 4) -> [[1], [3, 4]]."""
    out: list[list[int]] = []
    for a in sorted(axes):
        if out and a == out[-1][-1] + 1:
            out[-1].append(a)
        else:
            out.append([a])
    return out


class SplitReductions(Pass):
    name = "split-reductions"

    def run_on_function(self, fn: Function, module: Module) -> Function:
        rw = Rewriter()
        for op in fn.ops:
            parts = runs(op.attr("axes") or ()) if op.name in SPLIT else []
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

"""A column kernel's phases: reductions over one contiguous range of axes that ends before the
last axis (sum/mean/max/min over axis 0 of [K, B], over axes (1, 2) of [A, K1, K2, B], ...),
fused with their elementwise producers and consumers (FS116).  Read by the column schedule
and its tile kernel (lower/column, lower/column_tile), which the Ascend C printer prints and the
CPU runs through llvm_kernel (the chip's schedule, or the kind's host schedule).

Every reduction reads a value of the same shape D, the kernel's domain, viewed as [A, K, B]
(A: the axes before the reduced range, K: the reduced axes, B: the axes after it; free
reshapes of contiguous tensors).  The kernel's values come in three kinds:

    elem    one value per element of D (the producers: x * x, x - mean)
    col     one value per output element (a, b): a reduction's result, an op on such
            values (mean * 0.5, the consumers), a parameter that broadcasts over K
    const   a CONSTANT op (an immediate in the tile stmts)

This is the row plan (lower/row_plan.py) turned sideways: a "row" is one column (a, :, b)
of K elements, and both backends walk a strip of consecutive columns at once, so every
value of either kind is a vector along B there; only size-1 tensors and runtime scalars are
scalars.  Phases work as in the row plan: a reduction's result is ready one phase after its
operand, any other op runs in the phase of its latest operand; phase p first computes its
col ops, then walks k = 0..K-1 computing the elem ops its reductions need and accumulating
them.  An elem value needed by the reductions of two phases (the float32 copy of a 16-bit x
in var(x, 0)) is recomputed in each walk from the kernel inputs, never stored.

Each elementwise op is lowered to tile stmts by the vector scheduler (one op as a tiny
kernel of its own, `row_plan.op_schedule`), so arithmetic, rounding and casts are exactly
those of the vector kernels; reductions accumulate in float32 (int32 for integers).
"""
from __future__ import annotations

import math
from dataclasses import field

from ..record import record
from ..ir.core import Function, Op, Param, TensorType, Value, freeze_attrs
from ..ir.ops import CONSTANT, has_trait
from ..ir.shapes import column_param
from .errors import LoweringError
from .row_plan import REDUCTIONS, OpStep, op_schedule


@record
class ColParam:
    """A kernel parameter and how it lies over [A, K, B] (element strides, 0 = broadcast)."""

    index: int
    value: Value
    kind: str     # "elem" (varies along K and B) | "col" (along B, not K) | "scalar" (a size-1
                  # tensor) | "runtime_scalar"
    sa: int = 0   # (0 for every stride when the domain has symbolic sizes: see ColumnPlan)
    sk: int = 0
    sb: int = 0
    out_layout: bool = False   # read only by ops on reduced values without keepdims (ir/shapes.column_param)


@record(frozen=False)
class ColPhase:
    col_ops: list[OpStep] = field(default_factory=list)    # per output column, before the walk
    elem_ops: list[OpStep] = field(default_factory=list)   # per element of the walk
    reductions: list[Op] = field(default_factory=list)     # accumulated during the walk

    @property
    def walks(self) -> bool:
        return bool(self.reductions)


@record(frozen=False)
class ColumnPlan:
    fn: Function
    domain: tuple            # D, the reductions' operand shape
    first: int               # reduced axes first..last
    last: int
    A: int | None            # the [A, K, B] view (None for symbolic sizes: the CPU kernel
    K: int | None            # takes them from the arguments)
    B: int | None
    kinds: dict              # id(value) -> "elem" | "col" | "const" | "param"
    phases: list[ColPhase]
    params: list[ColParam]   # in parameter order

    def param_of(self, v: Value) -> ColParam | None:
        return next((p for p in self.params if p.value is v), None)

    def elem_params(self, phase: ColPhase) -> list[ColParam]:
        """The elem parameters a phase's walk reads, in parameter order."""
        read = {id(v) for st in phase.elem_ops for v in st.sources} | \
               {id(op.operands[0]) for op in phase.reductions}
        return [p for p in self.params if p.kind == "elem" and id(p.value) in read]


def reduced_range(op: Op) -> tuple[int, int] | None:
    """(first, last) reduced axis when a reduction's axes are one contiguous range."""
    if op.name not in REDUCTIONS:
        return None
    axes = tuple(op.attr("axes"))
    if not axes or axes != tuple(range(axes[0], axes[-1] + 1)):
        return None
    return axes[0], axes[-1]


def lone_reduction(fn: Function) -> tuple[Op, int, int] | None:
    """(op, first, last reduced axis) when fn is one reduction of its one input over a
    contiguous range of axes."""
    ops = [op for op in fn.ops if not has_trait(op, CONSTANT)]
    if len(ops) != 1 or len(fn.params) != 1 or ops[0].operands[0] is not fn.params[0].value:
        return None
    rng = reduced_range(ops[0])
    return None if rng is None else (ops[0], *rng)


def lone_row_reduction(fn: Function) -> tuple[Op, int, int] | None:
    """lone_reduction's answer when the range ends at the last axis (B == 1: sum(x), max over
    axes (1, 2) of [A, H, W]): both backends run it as the row kernel of rows_function."""
    found = lone_reduction(fn)
    return found if found is not None and found[2] == len(found[0].operands[0].shape) - 1 else None


def rows_function(op: Op, A, K, name: str, loc=None) -> Function:
    """The one-op row kernel [A, K] -> [A] of a reduction over trailing axes (A, K: sizes or
    symbols); `loc` the function's (the kernel's, where printed), else the op's."""
    x = Value(TensorType((A, K), op.operands[0].dtype), op.operands[0].name or "x")
    red = Op(op.name, (x,), (Value(TensorType((A,), op.result.dtype)),),
             freeze_attrs({"axes": [1], "keepdims": False}), op.loc)
    return Function(name, (Param(x),), (red,), red.results, op.loc if loc is None else loc)


def is_column_kernel(fn: Function) -> bool:
    """Whether the kernel's reductions are all column reductions of one domain (cheap test;
    plan_column_kernel decides the rest)."""
    reds = [op for op in fn.ops if op.name in REDUCTIONS]
    if not reds:
        return False
    shape = tuple(reds[0].operands[0].shape)
    rng = reduced_range(reds[0])
    return all(tuple(op.operands[0].shape) == shape and reduced_range(op) == rng for op in reds) and \
        rng is not None and rng[1] < len(shape) - 1


def plan_column_kernel(fn: Function, target) -> ColumnPlan:
    """The phases of a column kernel; LoweringError (saying why) when it is not one."""
    reductions = [op for op in fn.ops if op.name in REDUCTIONS]
    if not reductions:
        raise LoweringError(f"{fn.name} has no reduction")
    domain = tuple(reductions[0].operands[0].shape)
    rng = reduced_range(reductions[0])
    for op in reductions:
        if reduced_range(op) != rng or tuple(op.operands[0].shape) != domain:
            raise LoweringError(f"{op.name} over axes {list(op.attr('axes'))} of {list(op.operands[0].shape)}: "
                                "a column kernel's reductions share one domain and one range of axes")
    if rng is None or rng[1] >= len(domain) - 1:
        raise LoweringError(f"{reductions[0].name} over axes {list(reductions[0].attr('axes'))} is not a column "
                            "reduction (a contiguous range of axes before the last)")
    first, last = rng
    out = domain[:first] + domain[last + 1:]
    keep = domain[:first] + (1,) * (last - first + 1) + domain[last + 1:]
    col_shapes = {out, keep}

    kinds: dict[int, str] = {}
    phase_of: dict[int, int] = {}
    params: list[ColParam] = []
    for i, p in enumerate(fn.params):
        kinds[id(p.value)] = "param"
        phase_of[id(p.value)] = 0
        if p.kind == "scalar":
            params.append(ColParam(i, p.value, "runtime_scalar"))
            continue
        out_layout = _out_layout(fn, p.value, domain)
        form = column_param(p.value.shape, domain, first, last, out_layout)
        if form is None:
            raise LoweringError(f"input {p.value.name} of shape {list(p.value.shape)} is not addressed by one stride "
                                f"per group of axes of [A, K, B] over {list(domain)}")
        params.append(ColParam(i, p.value, *form, out_layout=out_layout))
    pkind = {id(p.value): p.kind for p in params}

    producer: dict[int, Op] = {}
    for op in fn.ops:
        if len(op.results) != 1:
            raise LoweringError(f"{op.name} has several results")
        res = op.result
        producer[id(res)] = op
        if has_trait(op, CONSTANT):
            kinds[id(res)] = "const"
            phase_of[id(res)] = 0
            continue
        phase = max((phase_of[id(v)] for v in op.operands), default=0)
        if op.name in REDUCTIONS:
            if kinds[id(op.operands[0])] == "param" and pkind[id(op.operands[0])] != "elem":
                raise LoweringError(f"{op.name} of an input that does not vary along the reduced axes")
            kinds[id(res)] = "col"
            phase_of[id(res)] = phase + 1
            continue
        shape = tuple(res.shape)
        if shape == domain:
            kinds[id(res)] = "elem"
            for v in op.operands:   # a col value broadcasts over K only in the keepdims layout
                padded = (1,) * (len(domain) - len(v.shape)) + tuple(v.shape)
                if kinds[id(v)] == "col" and padded != keep:
                    raise LoweringError(f"{op.name} broadcasts a per-column value of shape {list(v.shape)} "
                                        f"over {list(domain)} along other axes than the reduced ones")
        elif shape in col_shapes:
            kinds[id(res)] = "col"
            for v in op.operands:
                if kinds[id(v)] == "elem" or (kinds[id(v)] == "param" and pkind[id(v)] == "elem"):
                    raise LoweringError(f"{op.name} of shape {list(shape)} reads a value of every element")
        else:
            raise LoweringError(f"{op.name} result {list(shape)} is neither of the domain {list(domain)} "
                                "nor one value per output")
        phase_of[id(res)] = phase

    n_phases = 1 + max(phase_of.values())
    phases = [ColPhase() for _ in range(n_phases)]

    def elem_varies(v):
        return kinds[id(v)] != "param" or pkind[id(v)] in ("elem", "col")

    steps: dict[int, OpStep] = {}
    for op in fn.ops:
        if has_trait(op, CONSTANT) or op.name in REDUCTIONS:
            continue
        sched, sources = op_schedule(fn, op, producer, target, elem_varies)
        steps[id(op)] = OpStep(op, sched, kinds[id(op.result)], sources)
        if kinds[id(op.result)] == "col":
            phases[phase_of[id(op.result)]].col_ops.append(steps[id(op)])
    for op in reductions:
        phases[phase_of[id(op.operands[0])]].reductions.append(op)
    # each walk computes the elem ops its reductions need (recomputed when two walks need one)
    order = {id(op): i for i, op in enumerate(fn.ops)}
    for phase in phases:
        need: dict[int, Op] = {}
        stack = [op.operands[0] for op in phase.reductions]
        while stack:
            v = stack.pop()
            op = producer.get(id(v))
            if op is None or kinds[id(v)] != "elem" or id(op) in need:
                continue
            need[id(op)] = op
            stack.extend(op.operands)
        phase.elem_ops = [steps[i] for i in sorted(need, key=order.get)]

    for i, v in enumerate(fn.results):
        if kinds.get(id(v)) != "col" or id(v) in {id(p.value) for p in fn.params}:
            raise LoweringError(f"output {i} of shape {list(v.shape)} is not one value per output column "
                                "(a column kernel writes only reduced values)")
    return ColumnPlan(fn, domain, first, last, _prod(domain[:first]), _prod(domain[first:last + 1]),
                      _prod(domain[last + 1:]), kinds, phases, params)


def _out_layout(fn: Function, v: Value, domain) -> bool:
    """Whether kernel input v is read only by ops on reduced values without keepdims (it
    then broadcasts against the domain without the reduced axes)."""
    readers = [op for op in fn.ops if any(x is v for x in op.operands)]
    return bool(readers) and all(op.name not in REDUCTIONS and len(op.result.shape) < len(domain)
                                 for op in readers)


def _prod(dims) -> int | None:
    """The product of static sizes; None when one is symbolic."""
    return math.prod(dims) if all(isinstance(d, int) for d in dims) else None

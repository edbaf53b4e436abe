"""A row kernel's phases over one cached row: read by the row schedule and the cube row
epilogue (whose tile IR the CPU runs too, backend_cpu/llvm_kernel.py).

A row kernel (FS112, or a lone last-axis reduction) computes, per row of its reductions'
operand shape [*outer, C], a chain of elementwise ops, last-axis reductions and ops that
use the reductions' per-row results.  Its values come in three kinds:

    row        one value per element of the row (shape [*outer, C], or broadcast onto it)
    rowscalar  one value per row (a reduction result, or an op on such values)
    const      a CONSTANT op (an immediate in the tile stmts)

Every op gets a phase: a reduction's result is ready one phase after its operand, any
other op runs in the phase of its latest operand.  Per row, phase p first computes its
rowscalar ops once, then walks the row vector by vector computing its row ops and
accumulating the reductions whose operand it produced.  A row value read by a later phase
is kept in a per-thread scratch row (L1/L2-resident for rows up to tens of KB) instead of
being recomputed; kernel inputs are simply read again, so softmax reads x twice and its
exp once from scratch.  Rows of any length run the same way: a row bigger than the cache
costs one more read of x from memory per extra phase (the multi-pass plan), never a
different algorithm.

Each elementwise op is lowered to tile stmts by the vector scheduler (one op as a tiny
kernel of its own), so the arithmetic, rounding and casts are exactly those of the vector
kernels: 16-bit floats round once per op, reductions accumulate in float32.
"""
from __future__ import annotations

from dataclasses import field, replace

from .. import dtypes as dt
from ..errors import ScheduleError
from ..ir.core import Function, Op, Param, TensorType, Value
from ..ir.ops import CONSTANT, has_trait
from .vector import VectorSchedule, schedule_vector_kernel
from .errors import LoweringError
from ..lru import Lru
from ..record import record

REDUCTIONS = ("sum", "mean", "max", "min")


@record(frozen=False)
class OpStep:
    """One elementwise op as tile stmts: `sched.inputs[k]` is fed from `sources[index]`."""

    op: Op
    sched: VectorSchedule
    kind: str                       # "row" | "rowscalar"
    sources: list                   # the kernel value behind each parameter of sched.kernel


@record(frozen=False)
class Phase:
    scalar_ops: list[OpStep] = field(default_factory=list)   # once per row, before the walk
    row_ops: list[OpStep] = field(default_factory=list)      # per vector of the row
    reductions: list[Op] = field(default_factory=list)       # accumulated during the walk
    row_outputs: list[int] = field(default_factory=list)     # fn.results indices stored here
    scalar_outputs: list[int] = field(default_factory=list)  # rowscalar results stored per row
    keep: list[Value] = field(default_factory=list)          # row values written to scratch


@record(frozen=False)
class RowPlan:
    fn: Function
    row_shape: tuple                # [*outer, C] (dims may be symbolic)
    kinds: dict                     # id(value) -> "row" | "rowscalar" | "const" | "param"
    phases: list[Phase]
    scratch: list[Value]            # row values kept in scratch, in layout order
    params: list[Param]             # tensor and scalar parameters, in order
    param_last: dict                # id(param value) -> last axis present (streams along the row)


def is_last_axis_reduction(op: Op) -> bool:
    if op.name not in REDUCTIONS:
        return False
    rank = len(op.operands[0].type.shape)
    return rank >= 1 and tuple(op.attr("axes")) == (rank - 1,)


def has_row_reduction(fn: Function) -> bool:
    return any(is_last_axis_reduction(op) for op in fn.ops)


def plan_row_kernel(fn: Function, target) -> RowPlan:
    """The phases of a row kernel; LoweringError when it is not one this backend runs."""
    reductions = [op for op in fn.ops if op.name in REDUCTIONS]
    if not reductions:
        raise LoweringError(f"{fn.name} has no reduction")
    for op in reductions:
        if not is_last_axis_reduction(op):
            raise LoweringError(f"{op.name} over axes {op.attr('axes')} is not a last-axis reduction")
    row_shape = tuple(reductions[0].operands[0].shape)
    if any(tuple(op.operands[0].shape) != row_shape for op in reductions):
        raise LoweringError("reductions over rows of different shapes")
    outer = row_shape[:-1]
    scalar_shapes = {outer, outer + (1,)}

    kinds: dict[int, str] = {}
    phase_of: dict[int, int] = {}
    param_last: dict[int, bool] = {}
    for p in fn.params:
        kinds[id(p.value)] = "param"
        phase_of[id(p.value)] = 0
        if p.kind == "tensor":
            param_last[id(p.value)] = _param_layout(p.value.shape, row_shape)
    producer: dict[int, Op] = {}
    for op in fn.ops:
        res = op.result
        producer[id(res)] = op
        if len(op.results) != 1:
            raise LoweringError(f"{op.name} has several results")
        if has_trait(op, CONSTANT):
            kinds[id(res)] = "const"
            phase_of[id(res)] = 0
            continue
        phase = max((phase_of[id(v)] for v in op.operands), default=0)
        if op.name in REDUCTIONS:
            kinds[id(res)] = "rowscalar"
            phase_of[id(res)] = phase + 1
            continue
        shape = tuple(res.shape)
        if shape == row_shape:
            kinds[id(res)] = "row"
        elif shape in scalar_shapes:
            kinds[id(res)] = "rowscalar"
        else:
            raise LoweringError(f"{op.name} result {list(shape)} is neither a row nor one value per row")
        for v in op.operands:
            if kinds[id(v)] == "rowscalar" and kinds[id(res)] == "row" and tuple(v.shape) != outer + (1,):
                # a [*outer] value broadcasts along the row axis, not per row
                raise LoweringError(f"{op.name} broadcasts a per-row value of shape {list(v.shape)} along the row")
        phase_of[id(res)] = phase

    n_phases = 1 + max(phase_of.values())
    phases = [Phase() for _ in range(n_phases)]
    for op in fn.ops:
        if has_trait(op, CONSTANT):
            continue
        p = phase_of[id(op.result)]
        if op.name in REDUCTIONS:
            phases[phase_of[id(op.operands[0])]].reductions.append(op)
            continue
        row_op = kinds[id(op.result)] == "row"

        def varies(v, row_op=row_op):
            if not row_op:
                return True     # a per-row op: every operand is one value per row (splat)
            return kinds[id(v)] == "row" or param_last.get(id(v), False)
        sched, sources = op_schedule(fn, op, producer, target, varies)
        step = OpStep(op, sched, kinds[id(op.result)], sources)
        (phases[p].row_ops if step.kind == "row" else phases[p].scalar_ops).append(step)

    # row values read in a later phase than they are made are kept in scratch
    scratch: list[Value] = []
    for op in fn.ops:
        for v in op.operands:
            if kinds.get(id(v)) != "row" or v in scratch:
                continue
            use = phase_of[id(v)] if op.name in REDUCTIONS else phase_of[id(op.result)]
            if use > phase_of[id(v)]:
                scratch.append(v)
                phases[phase_of[id(v)]].keep.append(v)

    for i, v in enumerate(fn.results):
        kind = kinds.get(id(v))
        if kind == "row":
            phases[phase_of[id(v)]].row_outputs.append(i)
        elif kind == "rowscalar":
            if tuple(v.shape) not in scalar_shapes:
                raise LoweringError(f"output {i} of shape {list(v.shape)}")
            phases[phase_of[id(v)]].scalar_outputs.append(i)
        else:
            raise LoweringError(f"output {i} is a {kind} (returned parameter or constant)")
    params = [p for p in fn.params]
    return RowPlan(fn, row_shape, kinds, phases, scratch, params, param_last)


def _param_layout(shape, row_shape) -> bool:
    """Whether a tensor parameter streams along the row (its last axis is the row's)."""
    if len(shape) > len(row_shape):
        raise LoweringError(f"parameter of shape {list(shape)} does not broadcast to {list(row_shape)}")
    padded = (1,) * (len(row_shape) - len(shape)) + tuple(shape)
    for d, r in zip(padded, row_shape):
        if d != r and d != 1:
            raise LoweringError(f"parameter of shape {list(shape)} does not broadcast to {list(row_shape)}")
    return padded[-1] == row_shape[-1]


# The one-op programs op_schedule made in this process (the program does not depend on the kernel's
# sizes: below): an op like one scheduled before -- the same function's kernel at a new shape (a
# notebook's next input), the same op on the same kinds of operands in another function -- takes
# its program, in a row, column or cube epilogue kernel alike.  The key is everything the
# program's stmts depend on: the target (by identity: the entry holds it), the op's name,
# attributes (by repr, so 1, 1.0 and True stay apart; only plain values, whose repr is exact) and
# result dtype, and per operand which earlier operand it repeats, its dtype, whether it varies and
# its parameter kind.  The kernel's name and the op's source line name the program (its
# `kernel`, the one-op function) and locate its stmts, nothing else: an op of another name or line
# takes the program with those (_relocated).  An op reading a constant op's value (its value
# enters the program) is scheduled afresh.  The programs are shared: nothing changes a schedule
# once op_schedule returns it (the row, column and cube lowerings read them; kinds.tile_programs
# dumps them).
_OP_SCHEDULES = Lru(512)
_PLAIN = (int, float, bool, str, type(None), dt.DType)


def _plain(x) -> bool:
    return isinstance(x, _PLAIN) or (isinstance(x, tuple) and all(_plain(y) for y in x))


def op_schedule(fn: Function, op: Op, producer: dict, target, varies) -> tuple[VectorSchedule, list[Value]]:
    """One op as a kernel of its own, scheduled like any vector kernel (_op_function): its tile
    stmts, and the kernel values its parameters stand for (in parameter order); remembered
    (_OP_SCHEDULES)."""
    kinds = {id(p.value): p.kind for p in fn.params}
    first: dict = {}
    operands = []
    for i, v in enumerate(op.operands):
        src = producer.get(id(v))
        if src is not None and has_trait(src, CONSTANT):
            return _scheduled(*_op_function(fn, op, producer, varies), op, target)
        at = first.setdefault(id(v), i)
        operands.append((at, v.dtype, bool(varies(v)), kinds.get(id(v), "tensor")) if at == i else (at,))
    if not _plain(op.attrs):
        return _scheduled(*_op_function(fn, op, producer, varies), op, target)
    key = (id(target), op.name, repr(op.attrs), op.result.dtype, tuple(operands))
    hit = _OP_SCHEDULES.get(key)
    if hit is not None and hit[0] is target:
        _, sched, at = hit
        sources = [op.operands[i] for i in at]
        if sched.kernel.name == f"{fn.name}.{op.name}" and sched.kernel.loc == op.loc:
            return sched, sources
        return _relocated(sched, _op_function(fn, op, producer, varies)[0]), sources
    sched, sources = _scheduled(*_op_function(fn, op, producer, varies), op, target)
    # (_op_function's parameters: the operands in order of first appearance)
    _OP_SCHEDULES.put(key, (target, sched, tuple(first[id(v)] for v in sources)))
    return sched, sources


def _scheduled(sub: Function, sources: list, op: Op, target) -> tuple[VectorSchedule, list[Value]]:
    try:
        return schedule_vector_kernel(sub, target), sources
    except ScheduleError as exc:
        raise LoweringError(f"{op.name}: {exc}") from None


def _relocated(sched: VectorSchedule, sub: Function) -> VectorSchedule:
    """`sched`, a program of another op like `sub`'s, as sub's own: sub is its kernel and its stmts
    are at sub's source line (every stmt of a one-op program is at its op's: the builder emits them
    with it)."""
    old, new = sched.kernel.loc, sub.loc
    stmts = [replace(st, loc=new) if st.loc == old else st for st in sched.stmts]
    return replace(sched, kernel=sub, stmts=stmts)


def _op_function(fn: Function, op: Op, producer: dict, varies) -> tuple[Function, list[Value]]:
    """The one-op kernel op_schedule schedules, and the kernel values its parameters stand for.

    The tiny kernel is written over a canonical shape, so that its stmts do not depend on
    sizes (a [1,1] row is not mistaken for scalars): the result and every operand that
    varies with it have shape [2], the others (one value per row, size-1 tensors) shape [1]
    and reach the stmts as scalar variables.  `varies(v)` says which operands vary."""
    params, consts, sources, renamed = [], [], [], {}
    kernel_params = {id(p.value): p for p in fn.params}
    for v in op.operands:
        if id(v) in renamed:
            continue
        src = producer.get(id(v))
        if src is not None and has_trait(src, CONSTANT):
            consts.append(src)
            renamed[id(v)] = v
            continue
        shape = (2,) if varies(v) else (1,)
        fresh = Value(TensorType(shape, v.dtype), f"a{len(params)}")
        renamed[id(v)] = fresh
        kind = kernel_params[id(v)].kind if id(v) in kernel_params else "tensor"   # runtime scalars stay scalars
        params.append(Param(Value(TensorType((), v.dtype), fresh.name) if kind == "scalar" else fresh, kind))
        if kind == "scalar":
            renamed[id(v)] = params[-1].value
        sources.append(v)
    result = Value(TensorType((2,), op.result.dtype))
    body = Op(op.name, tuple(renamed[id(v)] for v in op.operands), (result,), op.attrs, op.loc)
    sub = Function(f"{fn.name}.{op.name}", tuple(params), tuple(consts) + (body,), (result,), op.loc)
    return sub, sources


def scratch_itemsize(v: Value) -> int:
    return 1 if v.dtype == dt.bool_ else v.dtype.itemsize

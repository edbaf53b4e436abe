"""The kernel kinds: one registry entry per kind says which fused kernels it takes and how it
schedules them. `compile_module` asks the registry; the backends keep their own tables keyed by
the kind's name (the Ascend C printer per kind, the CPU kernel per kind), so a new kind is one
entry here plus one entry per backend, never a new branch in the compiler.

Order matters: the first kind that claims a kernel schedules it. Cube kinds come before the
row kind because a matmul with a row epilogue (softmax(x @ w + b)) is a cube kernel; conv comes
before cube because conv2d is also a CUBE op; the column kind takes what is left of the
reductions (other axes than the last), and the vector kind every elementwise/view kernel.
"""
from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Any, Callable

from ..lru import Lru
from ..record import record
from ..errors import FusedslError, ScheduleError, TargetError
from ..ir.core import Function
from ..ir.key import function_key
from ..ir.ops import ATTENTION, CUBE, REDUCTION, has_trait
from .vector import VectorSchedule, compute_tiling, schedule_vector_kernel
from .attention import AttentionSchedule, schedule_attention_kernel
from .conv import ConvSchedule, schedule_conv_kernel
from .cube import CubeSchedule, schedule_cube_kernel
from .cube_group import CubeGroupSchedule, schedule_cube_group
from .column import ColumnSchedule, schedule_reduce_kernel
from .row import RowSchedule, is_row_kernel, schedule_row_kernel
from .transpose import (TransposeSchedule, lone_strided_slice, lone_transpose,
                                  schedule_transpose_kernel, transpose_tile_kernel)
from .column_tile import column_tile_kernel
from .attention_tile import attention_tile_kernel
from .conv_tile import conv_tile_kernel
from .cube_tile import cube_group_tile_kernel, cube_tile_kernel
from .row_tile import row_tile_kernel
from .vector_tile import tiling_words as vector_tiling_words
from .vector_tile import vector_tile_kernel
from ..tile.kernel import TileKernel
from ..tile.kernel_passes import run_kernel_passes, single_buffer
from ..tile.kernel import ub_plan as kernel_ub_plan
from ..targets import Target
from ..views import VIEW_OPS, check_fusible


@record
class LowerOptions:
    """What a lowering may read of the compile options."""
    ub_headroom: float = 1.0      # fraction of UB the kernel may plan with
    l1_headroom: float = 1.0      # fraction of L1 a cube kernel may plan with
    # cube_tiling's memo (lower/cube.py): searches already run in this compile. One per
    # LowerOptions, i.e. per compile (compiler.compile_module makes one), so it never outlives
    # the target and options it was filled under.  Given, the cube kinds also look the kernel pass
    # `tiling`'s choices up in the process's memo of them (lower/cube.WALK_CHOICES)
    tiling_memo: dict = field(default_factory=dict, compare=False, repr=False)


@record
class Kind:
    name: str
    # (kernel, fusion's group kind "vector" | "row" | "cube" | "single") -> does this kind take it
    claims: Callable[[Function, str], bool]
    # (kernel, target, options, snapshots) -> the kind's schedule; raises a located FusedslError
    # when this kernel cannot be printed (it still runs on the CPU executors)
    lower: Callable[[Function, Target, LowerOptions, list | None], Any]
    # the schedule records this kind's printers read; a lowering may hand a kernel to another
    # kind's schedule (a reduction over all axes of [A, K] is a row kernel of one row), and
    # the kernel then belongs to that kind
    schedules: tuple[type, ...]
    errors: tuple[type[FusedslError], ...] = (ScheduleError,)
    # (schedule, sizes, target) -> the launch's tiling once sizes are known (KernelPlan.tiling:
    # the one source of blockDim, tiles and loops for the report, the display and simulate);
    # raises ScheduleError when these sizes do not fit
    tiling: Callable[[Any, dict, Target], Any] = lambda sched, sizes, target: sched.tiling(sizes, target)
    # (schedule, tiling) -> the UB plan: (buffer, position, bytes, count) per buffer, read from
    # the kernel's tile IR (its InitBuffer calls) with the kernel's own words; a kind whose words
    # depend on the launch's sizes reads them from the tiling
    ub_plan: Callable[[Any, Any], list] = lambda sched, tiling: kernel_ub_plan(kernel_ir(sched))


def _chosen_tiling(sched, sizes: dict, target: Target):
    """A cube kind's launch: the kernel passes first (`kernel_ir`: the pass `tiling` chooses among
    the lowering's offers and the schedule adopts the kept one), then the schedule's launch of it."""
    kernel_ir(sched)
    return sched.tiling(sizes, target)


def _has_cube(fn: Function) -> bool:
    return any(has_trait(op, CUBE) for op in fn.ops)


def _lone_view(fn: Function, group: str) -> bool:
    """A slice / concatenate / take kernel of its own (fusion found no vector kernel to join it
    to): a view kernel whose only compute is the copy into the output, when views.py plans it."""
    ops = [op for op in fn.ops if op.name != "constant"]
    return (group == "single" and bool(ops) and all(op.name in VIEW_OPS for op in ops)
            and check_fusible(fn) is None)


def _cube_group(fn: Function, group: str) -> bool:
    return group == "cube" or (group == "single" and _has_cube(fn))


KINDS: list[Kind] = [
    Kind("vector", lambda fn, group: group == "vector" or _lone_view(fn, group),
         lambda fn, t, o, snaps: schedule_vector_kernel(fn, t, o.ub_headroom, snapshots=snaps),
         (VectorSchedule,), tiling=compute_tiling,
         ub_plan=lambda sched, tiling: kernel_ub_plan(kernel_ir(sched), kernel_words(sched, tiling))),
    # im2col inside the kernel, then the Matmul API (lower/conv_tile.py)
    Kind("conv", lambda fn, group: _cube_group(fn, group) and any(op.name == "conv2d" for op in fn.ops),
         lambda fn, t, o, snaps: schedule_conv_kernel(fn, t, o.ub_headroom, o.l1_headroom),
         (ConvSchedule,), (ScheduleError, TargetError)),
    # several matmuls of the same A, each with its epilogue, run in turn (lower/cube_tile.py: a kernel of parts)
    Kind("cube_group", lambda fn, group: _cube_group(fn, group) and sum(op.name == "matmul" for op in fn.ops) > 1
         and not any(op.name == "conv2d" for op in fn.ops),
         lambda fn, t, o, snaps: schedule_cube_group(fn, t, o.ub_headroom, o.l1_headroom, memo=o.tiling_memo),
         (CubeGroupSchedule,), (ScheduleError, TargetError), tiling=_chosen_tiling),   # the UB plan: the largest part's
    # a matmul with its elementwise or row epilogue (lower/cube_tile.py)
    Kind("cube", _cube_group,
         lambda fn, t, o, snaps: schedule_cube_kernel(fn, t, o.ub_headroom, o.l1_headroom, memo=o.tiling_memo),
         (CubeSchedule,), (ScheduleError, TargetError), tiling=_chosen_tiling),
    # last-axis reductions and the ops around them (lower/row_tile.py)
    Kind("row", lambda fn, group: group in ("row", "single") and is_row_kernel(fn),
         lambda fn, t, o, snaps: schedule_row_kernel(fn, t, o.ub_headroom), (RowSchedule,),
         ub_plan=lambda sched, tiling: kernel_ub_plan(kernel_ir(sched), list(tiling.words))),
    # flash attention: two Matmul objects and the online softmax between them (lower/attention_tile.py)
    Kind("attention", lambda fn, group: group == "single" and any(has_trait(op, ATTENTION) for op in fn.ops),
         lambda fn, t, o, snaps: schedule_attention_kernel(fn, t, o.ub_headroom), (AttentionSchedule,),
         (ScheduleError, TargetError)),
    # reductions over axes before the last with their producers and consumers (FS116), or a
    # lone reduction over other axes: columns or rows of an [A, K, B] view (lower/column_tile.py)
    Kind("column", lambda fn, group: group == "column" or (group == "single" and
                                                          any(has_trait(op, REDUCTION) for op in fn.ops)),
         lambda fn, t, o, snaps: schedule_reduce_kernel(fn, t, o.ub_headroom), (ColumnSchedule,)),
    # a lone transpose / permute: strided tiles in, transposed in UB, strided out; a lone slice with
    # a step on the last axis (no view kernel takes it): spans in, picked in UB (tile/kernel.py via transpose_tile_kernel)
    Kind("transpose", lambda fn, group: group == "single" and (lone_transpose(fn) is not None
                                                                or lone_strided_slice(fn) is not None),
         lambda fn, t, o, snaps: schedule_transpose_kernel(fn, t, o.ub_headroom), (TransposeSchedule,)),
]

KINDS_BY_NAME = {k.name: k for k in KINDS}


def kind_of(fn: Function, group: str) -> Kind | None:
    """The kind that schedules this fused kernel, or None (then no Ascend C printer takes it;
    it runs on the CPU executors and `check_ascendc` says why)."""
    return next((k for k in KINDS if k.claims(fn, group)), None)


def lower_kernel(fn: Function, group: str, target: Target, options: LowerOptions,
                 snapshots: list | None = None) -> tuple[Kind | None, Any, FusedslError | None]:
    """(kind, schedule, error): the schedule is None when the kind refused the kernel (error
    says why) or no kind claims it."""
    kind = kind_of(fn, group)
    if kind is None:
        return None, None, None
    key = None
    if snapshots is None:   # (a dump wants every pass run and its text)
        fkey = function_key(fn)
        if fkey is not None:
            key = (fkey, group, id(target), options.ub_headroom, options.l1_headroom)
            hit = _LOWERED.get(key)
            if hit is not None and hit[0] is target:
                return hit[1], hit[2], None
    try:
        sched = kind.lower(fn, target, options, snapshots)
        kernel_ir(sched, snapshots)   # the whole kernel after the kernel passes (which verify it)
    except kind.errors as exc:
        return kind, None, exc
    owner = next(k for k in KINDS if type(sched) in k.schedules)
    if key is not None:
        _LOWERED.put(key, (target, owner, sched))
    return owner, sched, None


# The schedules (after the kernel passes) of the fused kernels lowered in this process, by the
# kernel's content (ir/key.function_key: ops, attributes with their types, names, shapes, dtypes,
# source lines), its fusion group, the target object (kept and compared with `is`: an id alone
# could be a new target's) and the lowering options a kind reads (LowerOptions; its tiling_memo
# only saves work within a compile).  A notebook cell run again, or a function compiled for new
# arrays of the shapes it saw, traces a twin of a kernel: its lowering is the twin's.  A schedule
# is shared between the compiled kernels that lowered twins: what is learnt about it afterwards
# (its Ascend C text, its CPU kernel, its cost tables) is the same for each.  A kernel the kind
# refused is not kept (the error names this compile's lines).  256 kernels, least recently used out:
# a model of up to 256 kernels compiled again takes every one; each entry keeps its schedule and
# tile IR alive (~300 objects a kernel), which every full collection of the process walks.
_LOWERED = Lru(256)


def tile_programs(lowered) -> list[tuple[str, VectorSchedule]]:
    """The vector tile programs a kernel's schedule holds, labelled, in the order the kernel
    runs them (FUSEDSL_DUMP_IR, `plan.tile_ir`): a vector or view kernel is one program; a row
    kernel has one per elementwise op (lower/row_plan.op_schedule), a column kernel one per op
    of its phases, a cube or conv kernel one per epilogue op (a row epilogue: its row kernel's),
    a kernel of several matmuls its parts' in turn.  The transpose kind is a whole loop-level
    tile kernel instead (`kernel_ir`); the attention kind runs its softmax with its own printer
    and holds none (its schedule record says what it does)."""
    if lowered is None:
        return []
    if isinstance(lowered, VectorSchedule):
        return [("", lowered)]
    if isinstance(lowered, RowSchedule):
        steps = sorted(lowered.steps.values(), key=lambda st: _position(lowered.fn, st.op))
        return [(f"{i:02d}-{st.op.name}", st.sched) for i, st in enumerate(steps)]
    if isinstance(lowered, ColumnSchedule):
        steps = [st for ph in lowered.plan.phases for st in ph.col_ops + ph.elem_ops]
        return [(f"{i:02d}-{st.op.name}", st.sched) for i, st in enumerate(steps)]
    if isinstance(lowered, CubeGroupSchedule):
        return [(f"part{j}-{label}", prog) for j, part in enumerate(lowered.parts)
                for label, prog in tile_programs(part)]
    if isinstance(lowered, CubeSchedule):   # conv's ConvSchedule too
        if lowered.row_epilogue is not None:
            return [(f"epilogue-{label}", prog) for label, prog in tile_programs(lowered.row_epilogue)]
        ops = [op for op in lowered.epilogue if id(op) in (lowered.steps or {})]
        return [(f"epilogue-{i:02d}-{op.name}", lowered.steps[id(op)][0]) for i, op in enumerate(ops)]
    return []


# the kinds lowered to the loop-level tile IR: schedule type -> its TileKernel
KERNEL_IR = {VectorSchedule: vector_tile_kernel, TransposeSchedule: transpose_tile_kernel,
             ColumnSchedule: column_tile_kernel, RowSchedule: row_tile_kernel, CubeSchedule: cube_tile_kernel,
             ConvSchedule: conv_tile_kernel, AttentionSchedule: attention_tile_kernel,
             CubeGroupSchedule: cube_group_tile_kernel}


def kernel_ir(lowered, snapshots: list | None = None) -> TileKernel | None:
    """The whole kernel in the loop-level tile IR (tile/kernel.py `TileKernel`: what
    printer_kernel.py prints and kernel_interp.py runs) after the kernel passes
    (tile/kernel_passes.py: double buffering, verification), for every kind's schedule.  Built
    once per schedule (`snapshots` collects the text after each pass, the first time): the
    printer, the report and the dumps read the same kernel."""
    lower = KERNEL_IR.get(type(lowered))
    if lower is None:
        return None
    cached = getattr(lowered, "_passed_kernel", None)
    if cached is None:
        cached = run_kernel_passes(lower(lowered), lowered.target, getattr(lowered, "ub_budget", None), snapshots)
        # the pass `tiling` chose among the lowering's candidates: the schedule takes the kept one
        # (its words, or -- a candidate kernel of another layout -- the whole kernel)
        adopt = getattr(lowered, "adopt_kernel", None)
        if adopt is not None:
            note = adopt(cached)   # a kernel of parts: its plan line names the parts' tilings
            if note is not None and note != cached.note:
                cached = dataclasses.replace(cached, note=note)
        elif getattr(lowered, "adopt_words", None) is not None:
            lowered.adopt_words(cached.words)
        if cached.choice is not None:   # what was weighed: the report's tiling line
            object.__setattr__(lowered, "tiling_choice", cached.choice)
        object.__setattr__(lowered, "_passed_kernel", cached)
    return cached


def host_kernel_ir(lowered) -> TileKernel | None:
    """`kernel_ir`'s kernel as the host runs it (backend_cpu/kernel_cpu.py): its per-tile queues of
    one buffer where the kernel never holds two (tile/kernel_passes.single_buffer)."""
    chip = kernel_ir(lowered)
    if chip is None:
        return None
    cached = getattr(lowered, "_host_kernel", None)
    if cached is None:
        cached = single_buffer(chip)
        object.__setattr__(lowered, "_host_kernel", cached)
    return cached


def kernel_words(lowered, tiling) -> list[int]:
    """The tiling struct's uint32 words of one launch of a TileKernel kind (its `tiling` from
    Kind.tiling): an elementwise kernel's from its Tiling record, the others' record them."""
    if isinstance(lowered, VectorSchedule):
        return vector_tiling_words(lowered, tiling)
    return list(tiling.words)


def _position(fn: Function, op) -> int:
    return next(i for i, o in enumerate(fn.ops) if o is op)

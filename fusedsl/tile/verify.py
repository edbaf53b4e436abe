"""Verifier of an allocated tile program: the Ascend C rules a schedule must keep.

Checked (ASCENDC.md sections 1.3, 2.8 and 6): every name is a buffer; nothing is read before
it is written (CopyIn, the hoisted part, earlier stmts of the tile, or a per-core prefill);
a stmt's destination overlaps a source only 100 % (same bytes, same element width) and only
for ops that allow it; queue buffers per position <= the chip's limit, buffers per kernel
<= its limit; the UB plan fits the budget.  Failures raise `TileVerifyError` naming the
kernel, the buffer and the figures.
"""
from __future__ import annotations

from .. import dtypes as dt
from ..errors import ScheduleError
from .ir import TILE_APIS, Stmt, Tiling, VectorSchedule


class TileVerifyError(ScheduleError):
    """The tile program breaks an Ascend C rule (a scheduler bug, or a plan forced too far)."""


_POSITION = {"in": "VECIN", "out": "VECOUT"}


def _views(st: Stmt):
    """(dst dtype, [src dtypes]) as the API sees the operands."""
    if st.op == "cast":
        return st.dtype, [st.src_dtype] * len(st.srcs)
    if st.op == "cmp":
        return dt.float16, [st.dtype] * len(st.srcs)
    if st.op == "select" and st.cmp_mode is None:
        return st.dtype, [dt.float16] + [st.dtype] * (len(st.srcs) - 1)
    return st.dtype, [st.dtype] * len(st.srcs)


def _fail(sched, msg, hint=None):
    raise TileVerifyError(f"tile program of kernel {sched.kernel.name}: {msg}", loc=sched.kernel.loc, hint=hint)


def verify_tile(sched: VectorSchedule, target=None, tiling: Tiling | None = None) -> None:
    """Raise TileVerifyError at the first broken rule; `target` enables the limit checks.  (The
    tile passes run it after each pass: lower/vector.py's one-op programs -- four per elementwise
    op of a row, column or cube kernel -- make it a share of a first compile, so each check reads
    the stmts and slots once.)"""
    _check_names(sched)
    _check_defs(sched)
    for st in sched.stmts:
        _check_overlap(sched, st)
    if target is not None:
        _check_queues(sched, target)
        _check_budget(sched, target, tiling)


def _check_names(sched):
    slots = sched.slots
    for st in sched.stmts:
        if st.op not in TILE_APIS:
            _fail(sched, f"unknown tile op {st.op!r}")
        if st.dst not in slots:
            _fail(sched, f"{st.op} names buffer {st.dst}, which is not allocated")
        for x in st.srcs:
            if x not in slots:
                _fail(sched, f"{st.op} names buffer {x}, which is not allocated")
        for x in st.aux:
            if x not in slots:
                _fail(sched, f"{st.op} names buffer {x}, which is not allocated")


def _check_defs(sched):
    slots = sched.slots
    per_core = {i.slot for i in sched.inputs if i.slot and slots[i.slot].role == "inv"}
    per_core |= set(sched.prefill) | {n for n, s in slots.items() if s.role == "scratch"}
    hoisted, body = [], []   # (sched.hoisted / sched.body, each a pass over the stmts: split in one)
    for st in sched.stmts:
        (hoisted if st.hoisted else body).append(st)
    for st in hoisted:
        for x in st.srcs:
            if x not in per_core:
                _fail(sched, f"hoisted {st.op} reads {x} before it is written (hoisted stmts run once per core, "
                      "before any tile is copied in)")
        per_core.add(st.dst)
    ready = per_core | {i.slot for i in sched.inputs if i.slot}
    for st in body:
        for x in st.srcs:
            if x not in ready:
                _fail(sched, f"{st.op} reads {x} before it is written")
        ready.add(st.dst)
    written = {st.dst for st in body}
    for o in sched.outputs:
        if o.slot not in written:
            _fail(sched, f"output {o.name} is copied out of {o.slot}, which no stmt of the tile writes")


def _check_overlap(sched, st):
    dst_view, src_views = _views(st)
    for x, view in zip(st.srcs, src_views):
        if x != st.dst:
            continue
        if view.itemsize != dst_view.itemsize:
            _fail(sched, f"{st.op} writes {x} as {dst_view.name} (bytes [{dst_view.itemsize}*o, "
                  f"{dst_view.itemsize}*(o+n))) while reading it as {view.name} (bytes [{view.itemsize}*o, "
                  f"{view.itemsize}*(o+n))): a partial overlap; Ascend C allows a destination to overlap a "
                  "source only 100 %", hint="give the stmt its own destination buffer")
        if st.op in ("cmp", "select", "dup"):
            _fail(sched, f"{st.op} writes {x}, which it also reads: Compare/Select run out of place")
    if st.aux and (st.aux[0] == st.dst or st.aux[0] in st.srcs):   # aux[0] is the mask it writes
        _fail(sched, f"{st.op} uses {st.aux[0]} both as its mask scratch and as an operand")


def _check_queues(sched, target):
    limit = target.max_queue_buffers_per_position
    count = {"in": 0, "out": 0}   # queue buffers per role with a VECIN / VECOUT position (_POSITION)
    total = 0
    for s in sched.slots.values():
        total += s.num
        if s.role in count:
            count[s.role] += s.num
    for role, position in _POSITION.items():
        if count[role] > limit:
            names = ", ".join(f"{s.name} x{s.num}" for s in sched.slots.values() if s.role == role)
            _fail(sched, f"{count[role]} queue buffers on {position} ({names}); {target.name} allows "
                  f"{limit} per position", hint="split the kernel (fewer inputs or outputs per kernel)")
    if total > target.max_buffers:
        _fail(sched, f"{total} UB buffers; {target.name} allows at most {target.max_buffers} per kernel")


def _check_budget(sched, target, tiling):
    if tiling is None:   # sizes unknown: compute_tiling reports a smallest tile that does not fit
        return
    rows, need = [], 0
    for s in sched.slots.values():
        nbytes = -(-(tiling.tile_elems + sched.slack_elems) * s.dtype.itemsize // 32) * 32
        need += nbytes * s.num
        rows.append(f"{s.name} {nbytes} B x{s.num}")
    if need > sched.ub_budget:
        _fail(sched, f"the UB plan for tiles of {tiling.tile_elems} elements needs {need} bytes "
              f"({', '.join(rows)}), the budget on {target.name} is {sched.ub_budget} bytes")

"""Pass `reuse`: liveness and in-place buffer reuse on a lowered tile program.

Before: every temporary value has its own UB slot.  After: a dead temporary's slot is
given to a later temporary of the same dtype, and a stmt writes the slot of an operand
that dies at it when the Ascend C overlap rule allows (100 % overlap, same element width;
not Compare/Select/Duplicate); `values_per_slot` records how many values share each slot
and slots no stmt uses are dropped.
"""
from __future__ import annotations

from .ir import Stmt, VectorSchedule


def reuse_buffers(sched: VectorSchedule) -> None:
    """Give dead temporaries' slots to later temporaries of the same dtype.

    A stmt may write the slot of an operand that dies at it (100 % overlap, which the
    Ascend C rules allow), except for Cast between dtypes of different widths.
    """
    body = sched.stmts
    last_use: dict[str, int] = {}
    for i, s in enumerate(body):
        for x in s.srcs:
            last_use[x] = i
    free: dict[str, list[str]] = {}
    rename: dict[str, str] = {}
    for i, s in enumerate(body):
        srcs = tuple(rename.get(x, x) for x in s.srcs)
        dst = rename.get(s.dst, s.dst)
        slot = sched.slots.get(s.dst)
        first_write = slot is not None and s.dst not in rename and slot.role == "tmp" and not any(
            t.dst == s.dst for t in body[:i])
        in_place = None
        if first_write and _may_run_in_place(s):
            in_place = next((x for x in s.srcs if x != s.dst and last_use.get(x) == i
                             and sched.slots[rename.get(x, x)].role == "tmp"
                             and sched.slots[rename.get(x, x)].dtype == slot.dtype), None)
        if in_place is not None:
            dst = rename.get(in_place, in_place)   # 100 % overlap: the dying operand's slot
            rename[s.dst] = dst
        elif first_write:
            pool = free.get(slot.dtype.name, [])
            if pool:
                dst = pool.pop()
                rename[s.dst] = dst
        for x in dict.fromkeys(s.srcs):   # in operand order: a set's order varies per process
            xs = sched.slots.get(rename.get(x, x))
            if x == in_place:
                continue
            if xs is not None and xs.role == "tmp" and last_use.get(x) == i and x != s.dst:
                if s.op == "cast" and s.src_dtype.itemsize != s.dtype.itemsize:
                    free.setdefault(xs.dtype.name, []).insert(0, xs.name)  # usable after this stmt
                else:
                    free.setdefault(xs.dtype.name, []).append(xs.name)
        body[i] = Stmt(s.op, dst, srcs, s.dtype, s.scalar, s.src_dtype, s.round_mode, s.hoisted, s.loc,
                       s.cmp_mode, s.aux)
    sched.values_per_slot = {}
    for original in {st.dst for st in body} | set(rename):
        phys = rename.get(original, original)
        sched.values_per_slot[phys] = sched.values_per_slot.get(phys, 0) + 1
    used = {s.dst for s in body} | {x for s in body for x in s.srcs} | {x for s in body for x in s.aux} | {
        i.slot for i in sched.inputs if i.slot} | {o.slot for o in sched.outputs}
    for name in list(sched.slots):
        if name not in used:
            del sched.slots[name]


def _may_run_in_place(s: Stmt) -> bool:
    """Ascend C allows dst == src for elementwise ops (100 % overlap), not for width-changing
    Cast, and fusedsl keeps Compare/Select (which use masks) out of place."""
    if s.op in ("dup", "cmp", "select"):
        return False
    return s.op != "cast" or s.src_dtype.itemsize == s.dtype.itemsize

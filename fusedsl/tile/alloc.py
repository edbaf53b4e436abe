"""Pass `allocate`: UB allocation of a tile program after `reuse`.

Before: every slot has one buffer and no budget.  After: `ub_budget` is the target's usable
UB (times the headroom fraction, minus Select's library scratch when Compare/Select are
used); each TQue slot (VECIN/VECOUT) is double-buffered (InitBuffer num 2) when twice the
queues of its position stay within the chip's per-position limit, single otherwise; more
queues than the limit, or more buffers than the kernel limit, raise ScheduleError.
"""
from __future__ import annotations

from ..errors import ScheduleError
from ..targets import Target
from .ir import Slot, VectorSchedule


def select_scratch(target, stmts) -> int:
    """UB bytes Select's library scratch takes at the top of UB (ASCENDC.md 2.5) when the stmts
    compare or select: every kind's budget leaves them out (the CPU API checks it)."""
    return target.select_scratch_bytes if any(st.op in ("cmp", "select") for st in stmts) else 0


def allocate_ub(sched: VectorSchedule, target, ub_fraction: float) -> None:
    sched.ub_budget = int(target.ub_bytes * ub_fraction) - select_scratch(target, sched.stmts)
    _check_limits(sched, target)


def _check_limits(sched: VectorSchedule, target: Target) -> None:
    """Queue buffers per position and buffers per kernel; double buffering is dropped
    for a position whose queues would exceed the hardware's event budget."""
    limit = target.max_queue_buffers_per_position
    for role in ("in", "out"):
        names = [n for n, s in sched.slots.items() if s.role == role]
        if len(names) > limit:
            raise ScheduleError(f"kernel {sched.kernel.name} needs {len(names)} queues on one position; "
                                f"{target.name} allows {limit} queue buffers per position",
                                loc=sched.kernel.loc, hint="split the kernel (fewer inputs or outputs per kernel)")
        num = 2 if 2 * len(names) <= limit else 1
        for n in names:
            old = sched.slots[n]
            sched.slots[n] = Slot(old.name, old.dtype, old.role, num)
    if len(sched.slots) > target.max_buffers:
        raise ScheduleError(f"kernel {sched.kernel.name} needs {len(sched.slots)} UB buffers; "
                            f"at most {target.max_buffers} are allowed", loc=sched.kernel.loc)

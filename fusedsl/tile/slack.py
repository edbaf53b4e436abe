"""Pass `compare-slack`: room and values for the lanes Compare reads past its count.

Before: a tile program whose Compare/Select stmts (cmp, select) work on 256-byte repeats.
After: `slack_elems` = CMP_SLACK extra elements on every slot, and every temporary of a
compute dtype pre-filled with 0 once per core (`prefill`), so the lanes Compare reads past a
count hold a defined value; constant tensors the lowering asked for stay in `prefill`.
Runs after `reuse` (the temporaries are final) and before `allocate` (slack costs UB).
"""
from __future__ import annotations

from .. import dtypes as dt
from .ir import CMP_SLACK, VectorSchedule


def add_compare_slack(sched: VectorSchedule) -> None:
    if not any(st.op in ("cmp", "select") for st in sched.stmts):
        return
    sched.slack_elems = CMP_SLACK
    for name, slot in sched.slots.items():
        if slot.role == "tmp" and slot.dtype in (dt.float16, dt.float32, dt.int32):
            sched.prefill.setdefault(name, 0)


def set_granules(sched: VectorSchedule) -> None:
    """Row alignment (32 B) and tile granularity (256 B) in elements of the narrowest slot."""
    narrow = min(s.dtype.itemsize for s in sched.slots.values()) if sched.slots else 4
    sched.block_elems = 32 // narrow
    sched.gran_elems = 256 // narrow

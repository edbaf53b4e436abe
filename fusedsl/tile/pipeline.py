"""The tile passes, in order, with why each sits where it does (run by lower/vector.py on every
lowered vector kernel; the tile verifier runs after each).

    reuse          liveness and in-place reuse first: every later pass sees the final slots
    compare-slack  after reuse (the temporaries to pre-fill are final), before allocate
                   (the slack costs UB)
    granules       row alignment and tile granularity from the narrowest final slot
    allocate       TQue/TBuf per slot, double buffering within the queue budget, UB budget
    (tiling)       at call time, when the sizes are known: tile/tiling.py, mirrored by the
                   printed host function

With `snapshots` (a list), the tile text after lowering and after each pass is appended as
(name, text): the compiler writes them under FUSEDSL_DUMP_IR as tile-<kernel>-NN-<pass>.tile.
"""
from __future__ import annotations

from .alloc import allocate_ub
from .ir import VectorSchedule
from .reuse import reuse_buffers
from .slack import add_compare_slack, set_granules
from .text import print_tile
from .verify import verify_tile

TILE_PASSES = [
    ("reuse", lambda sched, target, fraction: reuse_buffers(sched)),
    ("compare-slack", lambda sched, target, fraction: add_compare_slack(sched)),
    ("granules", lambda sched, target, fraction: set_granules(sched)),
    ("allocate", lambda sched, target, fraction: allocate_ub(sched, target, fraction)),
]


def run_tile_passes(sched: VectorSchedule, target, ub_fraction: float, snapshots: list | None = None) -> None:
    if snapshots is not None:
        snapshots.append(("lowered", print_tile(sched, locs=True)))
    for name, run in TILE_PASSES:
        run(sched, target, ub_fraction)
        verify_tile(sched, target)
        if snapshots is not None:
            snapshots.append((name, print_tile(sched, locs=True)))
    sched.__dict__.pop("_cost_table", None)   # (tiling_cost.table_for's, of the program before the passes)

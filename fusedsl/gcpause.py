"""Python's cyclic garbage collector paused for a block of work that allocates many small objects
and frees few of them before it ends: a trace (the graph IR), a compile (graph IR, tile IR, LLVM IR
built by llvmlite), printing Ascend C."""
from __future__ import annotations

import contextlib
import gc
import sys

# A full (oldest-generation) collection at the end of a block once this many times the collector's
# own threshold of younger collections (gc.get_threshold()[2], 10 by default) have run since the
# last full one AND the process's memory grew by FULL_GROWTH since then.  CPython starts a full
# collection only from an automatic collection -- an allocation in code the collector is on for --
# once threshold[2] younger collections have run and the oldest generation grew by a quarter since
# its last full walk.  A process whose allocating is all in paused blocks (a loop that only traces
# and compiles) never gets one: each block ends with gc.collect(1), which resets the count that
# would start an automatic collection.  The cycles a block drops are freed by that gc.collect(1);
# what only a full collection frees -- cycles among objects older than the block, dropped since (an
# evicted memo entry, the caller's own) -- would pile up.  This bounds them, as CPython's rule does,
# by the heap's growth: the oldest generation's size is not visible from Python, so the growth is
# read from the interpreter's allocated memory blocks (sys.getallocatedblocks, one read), which
# piling garbage grows too.  A loop compiling the same kernels again (the heap steady: each result
# freed by reference counting) then never walks the whole heap -- each such walk costs 20-70 ms at
# benchmarks/model_scale.py's stacks and doubled a 60-kernel cube loop's repeated Ascend C text.
FULL_AFTER = 10
FULL_GROWTH = 1.25
_heap = {"blocks": None, "full": None}   # the allocated blocks after the last full collection, and
# how many full collections the collector had run then (one the caller's code ran counts too)


@contextlib.contextmanager
def gc_paused():
    """Python's cyclic garbage collector off for the block (back on after it, unless it was off).

    A compile allocates many small IR objects (ops, values, types, a module per pass) and frees
    few of them before it ends, and so does a trace; each allocation threshold set off a
    collection, and the oldest generation's walks the whole heap, whose size the block does not
    control (the caller's tensors, an imported torch model, fusedsl's process memos).
    benchmarks/model_scale.py's 286-block stack: passes, fusion and lowering 1635 -> 1273 ms of
    CPU, the fusion pass 394 -> 311 (benchmarks/RESULTS.md "Compile time by phase"); its trace,
    compiled again, 125-131 -> 67-69 ms of CPU (a full collection in every second one: "Trace
    again: the collector paused (gctrace)").  Cycles made meanwhile are collected at the end of
    the block, with the two younger generations: one walk of what the block made and still holds.
    An outermost block also ends with a full collection when the process has gone FULL_AFTER times
    the collector's own threshold of younger collections without one (why: FULL_AFTER)."""
    if not gc.isenabled():   # already off (an outer compile, or the caller's choice)
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        # What the block made and still holds sits in the youngest generation, however many: left
        # there, the next allocation anywhere (the caller's next trace) sets off a collection that
        # walks all of it, and ten of those later a collection of the middle generation walks it
        # again.  Collecting both now walks it once, and here, in the work that made it.
        gc.collect(1)
        full_due = gc.get_threshold()[2] * FULL_AFTER
        if gc.get_threshold()[0] and gc.get_count()[2] > full_due:
            _full_collection_if_grown()


def _full_collection_if_grown() -> None:
    """gc.collect() when the process's allocated blocks grew by FULL_GROWTH since the last full
    collection; the first time, a full collection sets the mark.  A full collection the caller's
    code ran since (the collector's own, a gc.collect()) is the new mark."""
    full = gc.get_stats()[2]["collections"]
    blocks = sys.getallocatedblocks()
    if _heap["full"] is not None:
        if _heap["full"] != full:
            _heap["full"], _heap["blocks"] = full, blocks
            return
        if blocks <= _heap["blocks"] * FULL_GROWTH:
            return
    gc.collect()
    _heap["full"], _heap["blocks"] = gc.get_stats()[2]["collections"], sys.getallocatedblocks()

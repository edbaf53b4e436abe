"""Python's cyclic garbage collector paused for a block of work that allocates many small objects
and frees few of them before it ends: a compile (graph IR, tile IR, LLVM IR built by llvmlite)."""
from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def gc_paused():
    """Python's cyclic garbage collector off for the block (back on after it, unless it was off).

    A compile allocates many small IR objects (ops, values, types, a module per pass) and frees
    few of them before it ends; each allocation threshold set off a collection, and the oldest
    generation's walks the whole heap, whose size the compile does not control (the caller's
    tensors, an imported torch model).  benchmarks/model_scale.py's 286-block stack: passes, fusion
    and lowering 1635 -> 1273 ms of CPU, the fusion pass 394 -> 311 (benchmarks/RESULTS.md "Compile
    time by phase").  Cycles made meanwhile are collected at the end of the block, with the two
    younger generations: one walk of what the block made and still holds."""
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

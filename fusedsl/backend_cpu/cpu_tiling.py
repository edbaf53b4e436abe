"""The CPU's own tiling words for a TileKernel (the runner's choice; the kernel reads any words).

The chip's words size tiles for its UB (192 KB on 910B) and split the work over its 20-48 cores.
The host runs the same kernel from one arena per thread, with no UB to fit, and pays per tile for
the stage code and for every DMA that is not one contiguous run (a staging copy: llvm_kernel.py
aliases only contiguous copies to GM).  So where a kind's words allow it, the CPU takes tiles
whose copies are contiguous:

- column kernels: a tile of every column (bn = B, the rows then contiguous in GM: the elem
  inputs' buffers are the GM rows themselves, no copy) and chunks of K of about CHUNK_BYTES
  (the fold loops walk a chunk once per 64 columns: it stays in L2); a resident kernel (every row
  of K in one DMA, later walks reading UB) keeps its K.  Rows wider than ROW_BYTES keep the
  chip's tiles (the accumulators would leave the caches);
- vector kernels: the vector tiling (tile/tiling.compute_tiling) for a UB of VECTOR_UB bytes and
  VECTOR_BLOCKS cores (blocks: enough for the launcher's threads to share the work): a 1 MB
  elementwise chain runs 256 tiles of 1024 elements instead of 410 of 640 (fewer blocks than the
  chip's 48 cores, enough for two threads to balance on a shared host);
- every other kind: the chip's words.
"""
from __future__ import annotations

import dataclasses

from ..lower.column import ColumnSchedule, ColumnTiling
from ..lower.kinds import kernel_words
from ..lower.vector import compute_tiling

__all__ = ["cpu_words", "vector_tiling"]

VECTOR_UB = 1 << 20
VECTOR_BLOCKS = 32

CHUNK_BYTES = 256 << 10
ROW_BYTES = 1 << 20
MAX_ROWS = 4095   # the words stay ones the chip's DMA could take (DataCopyPad's blockCount)


def cpu_words(lowered, tiling) -> list[int]:
    """The tiling words the CPU runs a kernel with (the chip's `tiling` for these sizes given)."""
    if isinstance(lowered, ColumnSchedule):
        return column_tiling(lowered, tiling).words
    return kernel_words(lowered, tiling)


def column_tiling(sched: ColumnSchedule, t: ColumnTiling) -> ColumnTiling:
    row = sum(p.dtype.itemsize for p in sched.params if p.kind == "elem")
    if t.total_tiles == 0 or sched.B * max(row, 4) > ROW_BYTES:
        return t
    bn = sched.B
    kt = t.kt if sched.resident else max(1, min(sched.K, MAX_ROWS, CHUNK_BYTES // (bn * max(row, 1))))
    return ColumnTiling(sched.A, sched.K, sched.B, bn, kt, 1, sched.A, 1, sched.A)


def vector_tiling(sched, sizes: dict, target):
    """The Tiling a vector kernel runs with on the CPU (module doc): its words are the kernel's."""
    cpu = dataclasses.replace(target, vector_cores=min(target.vector_cores, VECTOR_BLOCKS))
    return compute_tiling(dataclasses.replace(sched, ub_budget=max(sched.ub_budget, VECTOR_UB)), sizes, cpu)

"""The passes every kind's whole kernel (a `TileKernel`, tile/kernel.py) runs after its lowering,
in order, with why each sits where it does (`lower/kinds.kernel_ir` runs them once per
schedule; FUSEDSL_DUMP_IR writes the kernel's text before and after each):

    tiling         a static kind's lowering may offer other tilings for the same sizes
                   (`TileKernel.candidates`: its words, e.g. the row kind's tiles of fewer rows
                   over more cores); each whose UB plan fits the budget is walked
                   (tile/kernel_cost.kernel_work: the printed program's copies and vector calls,
                   the report's model) and the cheapest kept -- the lowering's own words on a
                   tie; none that moves more GM bytes than those.  First: the later passes and the report see the chosen words.  The
                   row kind's heuristic spreads a kernel's bytes at 16 KB per core, which suits
                   a DMA-bound kernel; a row kernel's per-row vector calls make it compute-bound,
                   and the walk prices that.
    double-buffer  a per-tile queue (TQue on VECIN / VECOUT) of one buffer makes the next tile's
                   AllocTensor wait for this tile's FreeTensor: the DMA of tile i + 1 waits for
                   the vector work of tile i (and GetTensorC for the epilogue of the C tile
                   before).  A second buffer lets the pipes overlap, which is what the cost
                   model (cost.py: "double buffering overlaps the three pipes") assumes of every
                   kernel.  The vector kind's allocate pass (tile/alloc.py) and the row kind's
                   tiling already choose their depths with the tile size; this pass gives the
                   other kinds theirs: each single-buffered per-tile queue, inputs first, gets a
                   second buffer while the UB plan stays within the budget and the queue
                   buffers per position within the chip's limit (ASCENDC.md 1.3).  Only kernels
                   whose sizes are static (the tiling's words known at compile time) are
                   changed: a symbolic kernel's host tiling sizes its tiles for the depths it
                   was lowered with.
    verify         the chip's rules on the final kernel (tile/kernel.verify_kernel)

A kernel of parts (several matmuls of one A) runs the passes on each part: the UB is reset
between parts, so each has the budget alone.
"""
from __future__ import annotations

import dataclasses

from .kernel import (Alloc, DeQue, For, If, MmIterate, TileKernel, print_kernel, ub_plan,
                     verify_kernel)
from .kernel_cost import kernel_work

_PER_TILE = ("VECIN", "VECOUT")


def _queues_used(body) -> set:
    """The queues `body` takes tensors from (AllocTensor / DeQue), nested bodies too."""
    out = set()
    for node in body:
        if isinstance(node, (Alloc, DeQue)):
            out.add(node.queue)
        elif isinstance(node, (For, MmIterate)):
            out |= _queues_used(node.body)
        elif isinstance(node, If):
            out |= _queues_used(node.then) | _queues_used(node.orelse)
    return out


def double_buffer(k: TileKernel, target, budget: int) -> TileKernel:
    if k.parts:
        return dataclasses.replace(k, parts=tuple(double_buffer(p, target, budget) for p in k.parts))
    if not k.words:
        return k
    once = set().union(*(_queues_used(st.body) for st in k.stages if st.once))
    per_tile = set().union(*(_queues_used(st.body) for st in k.stages if not st.once))
    queues = list(k.queues)
    for position in _PER_TILE:   # the input DMA first: it is what the vector work waits for most
        for i, q in enumerate(queues):
            if q.position != position or q.depth != 1 or q.name in once or q.name not in per_tile:
                continue
            trial = queues[:i] + [dataclasses.replace(q, depth=2)] + queues[i + 1:]
            if sum(q2.depth for q2 in trial if q2.position == position) > target.max_queue_buffers_per_position:
                continue
            candidate = dataclasses.replace(k, queues=trial)
            if sum(b * n for _, _, b, n in ub_plan(candidate)) <= budget:
                queues = trial
    return k if queues == list(k.queues) else dataclasses.replace(k, queues=queues)


# the tiling pass takes no candidate that moves more GM bytes than the lowering's own words (rows
# every core reads -- gamma, beta -- are read once per core: more cores, more bytes; the row kind
# keeps that re-read within 2 % of the kernel's traffic): HBM is shared with the other kernels,
# which the walk of one kernel does not see


def choose_tiling(k: TileKernel, target, budget: int) -> TileKernel:
    if not k.candidates:
        return k
    own = kernel_work(k, k.words)
    if own is None:
        return dataclasses.replace(k, candidates=())
    best, best_time = tuple(k.words), None
    for words in (tuple(k.words), *k.candidates):
        if sum(b * n for _, _, b, n in ub_plan(k, words)) > budget:
            continue
        work = kernel_work(k, words)
        if work is None or not work.block_dim or work.gm_bytes > own.gm_bytes:
            continue
        t = work.time_us(target)
        if best_time is None or t < best_time:
            best, best_time = words, t
    return dataclasses.replace(k, words=best, candidates=())


def _verify(k: TileKernel, target, budget: int) -> TileKernel:
    verify_kernel(k, target, budget)
    return k


KERNEL_PASSES = [("tiling", choose_tiling), ("double-buffer", double_buffer), ("verify", _verify)]


def run_kernel_passes(k: TileKernel, target, budget: int | None = None,
                      snapshots: list | None = None) -> TileKernel:
    """`k` after every pass of KERNEL_PASSES; with `snapshots` (a list), ("kernel-<pass>", text)
    after the lowering and after each pass that changed the kernel."""
    budget = target.ub_bytes if not budget else budget
    if snapshots is not None:
        snapshots.append(("kernel-lowered", print_kernel(k)))
    for name, run in KERNEL_PASSES:
        before = k
        k = run(k, target, budget)
        if snapshots is not None and k is not before:
            snapshots.append((f"kernel-{name}", print_kernel(k)))
    return k

"""The passes every kind's whole kernel (a `TileKernel`, tile/kernel.py) runs after its lowering,
in order, with why each sits where it does (`lower/kinds.kernel_ir` runs them once per
schedule; FUSEDSL_DUMP_IR writes the kernel's text before and after each):

    reuse          VECCALC buffers whose tensors are never live at once share one
                   (tile/kernel_reuse.py).  First: the UB it gives back is what `tiling` and
                   `double-buffer` may spend.  The lowerings size their tiles by their own
                   allocation (the row kind's allocate_row_values, the vector kind's tile
                   program reuse), so this pass takes what they leave: a cube epilogue's and a
                   column kernel's scratch rows.
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

from .kernel import (Alloc, Call, DeQue, Field, For, Free, If, Member, MmIterate, Step, TileKernel, map_steps,
                     print_kernel, ub_plan, verify_kernel)
from .kernel_cost import kernel_work
from .kernel_reuse import reuse_buffers

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


def _held(body, q: str):
    """(buffers of queue q held after `body` minus before, the most held at once counting from 0),
    or None when that is unbounded or unknown (a loop that takes more than it gives back; If
    branches that differ; a stage Call).  A buffer is held from AllocTensor to FreeTensor."""
    cur = most = 0
    for node in body:
        if isinstance(node, Alloc) and node.queue == q:
            cur += 1
            most = max(most, cur)
        elif isinstance(node, Free) and node.queue == q:
            cur -= 1
        elif isinstance(node, (For, MmIterate)):
            inner = _held(node.body, q)
            if inner is None or inner[0] != 0:
                return None
            most = max(most, cur + inner[1])
        elif isinstance(node, If):
            a, b = _held(node.then, q), _held(node.orelse, q)
            if a is None or b is None or a[0] != b[0]:
                return None
            most = max(most, cur + a[1], cur + b[1])
            cur += a[0]
        elif isinstance(node, Call):
            return None
    return cur, most


def single_buffer(k: TileKernel) -> TileKernel:
    """The kernel with every VECIN / VECOUT queue it never holds two buffers of at once given one
    buffer: the host's run of a kernel (backend_cpu/kernel_cpu.py) has no DMA to overlap with the
    vector work, and with one buffer per queue the LLVM lowering addresses each tensor directly
    instead of picking among its queue's buffers at every access (a bitonic sort's kernels: a third
    of their IR and of their compile time).  Kernels of the standard per-tile Process only (once
    stages, then each tile through the other stages in order); a cube kernel's own Process is kept."""
    if k.process is not None or k.parts:
        return k
    once = [n for st in k.stages if st.once for n in st.body]
    tile = [n for st in k.stages if not st.once for n in st.body]
    queues = []
    for q in k.queues:
        if q.depth > 1 and q.position in _PER_TILE:
            pro, per = _held(once, q.name), _held(tile, q.name)
            if pro is not None and per is not None and per[0] == 0 and max(pro[1], pro[0] + per[1]) <= 1:
                q = dataclasses.replace(q, depth=1)
        queues.append(q)
    return k if queues == list(k.queues) else dataclasses.replace(k, queues=queues)


# the stmt dtypes whose immediates `lift_immediates` turns into runtime scalars (a typed field and
# member each; the host's conversion of a number to them is numpy's astype, as the stmts' constants)
_LIFTED_DTYPES = {"float32": "float", "float16": "float", "int32": "int32_t"}


def lift_immediates(k: TileKernel) -> tuple[TileKernel, dict]:
    """The host's kernel with each tile stmt's immediate scalar (`muls(x, 0.0625)`, `cmp.GE(t, 2)`,
    `dup(True)`) read from a runtime scalar of its own -- a typed field `immN` (after the tiling
    words), the member `immN` of the stmt's dtype it initialises, bound in the step -- and
    {field: value}, the values the caller packs at each launch.  Kernels that differ only in
    their constants (a bitonic sort's or a scan's stages at other strides, a test's random scalars)
    are then one LLVM lowering and one compile.  One field per occurrence, so the kernel's text
    does not depend on which values are equal.  Not lifted: `muls` by -1 (the CPU lowering takes
    it as exact: no rounding), dtypes without a typed-field form, kernels of parts."""
    if k.parts:
        return k, {}
    taken = {f.name for f in k.fields} | {m.name for m in k.members}
    fields, members, values = [], [], {}

    def lift(step: Step) -> Step:
        stmts, scalars = [], list(step.scalars)
        for st in step.stmts:
            kind = _LIFTED_DTYPES.get(st.dtype.name)
            if st.scalar is None or st.scalar[0] != "imm" or kind is None or st.op == "cast" or st.negation:
                stmts.append(st)
                continue
            name = f"imm{len(values)}"
            while name in taken:
                name = "_" + name
            taken.add(name)
            values[name] = st.scalar[1]
            fields.append(Field(name, ctype=kind))
            members.append(Member(name, init="t." + name, dtype=st.dtype))
            scalars.append((name, name))
            stmts.append(dataclasses.replace(st, scalar=("var", name)))
        if stmts == list(step.stmts):
            return step
        return dataclasses.replace(step, stmts=tuple(stmts), scalars=tuple(scalars))

    lifted = map_steps(k, lift)
    if not values:
        return k, {}
    return dataclasses.replace(lifted, fields=list(k.fields) + fields, members=list(k.members) + members), values


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
    best, best_time, best_cycles = tuple(k.words), None, None
    for words in (tuple(k.words), *k.candidates):
        if sum(b * n for _, _, b, n in ub_plan(k, words)) > budget:
            continue
        # a candidate whose busiest core alone takes longer than the best so far cannot win: its
        # walk stops there (the cores after the first, which is the busiest, are not walked)
        work = kernel_work(k, words, best_cycles)
        if work is None or not work.block_dim or work.gm_bytes > own.gm_bytes:
            continue
        t = work.time_us(target)
        if best_time is None or t < best_time:
            best, best_time, best_cycles = words, t, work.cycles
    return dataclasses.replace(k, words=best, candidates=())


def _verify(k: TileKernel, target, budget: int) -> TileKernel:
    verify_kernel(k, target, budget)
    return k


KERNEL_PASSES = [("reuse", reuse_buffers), ("tiling", choose_tiling), ("double-buffer", double_buffer),
                 ("verify", _verify)]


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

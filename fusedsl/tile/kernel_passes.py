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
                   (`TileKernel.candidates`: words for the same kernel -- the row kind's tiles
                   of fewer rows over more cores -- or whole kernels where a candidate changes
                   the kernel's text -- the cube kind's splits x base blocks x layouts, lower/
                   cube.py _offered); each whose UB plan fits the budget is walked
                   (tile/kernel_cost.launch_work: the printed program's copies, vector calls and
                   Matmul tiles, the report's model and figures) and one kept by ONE rule for
                   every kind (TILING_SLACK below): none that moves more GM bytes than the
                   lowering's own tiling (the row kind's 16 KB-per-core heuristic, the cube
                   kind's formula pick); of the rest the fewest GM bytes within 2 % of the
                   fastest; the lowering's order on a tie.  The kernel keeps what was weighed
                   (`TileKernel.choice`, a TilingChoice: the report's "tiling:" line) and the
                   schedule adopts the kept tiling (`adopt_words` / `adopt_kernel`,
                   lower/kinds.kernel_ir).  First: the later passes and the report see the
                   chosen words.  The row kind's heuristic spreads a kernel's bytes at 16 KB per
                   core, which suits a DMA-bound kernel; a row kernel's per-row vector calls make
                   it compute-bound, and the walk prices that; a cube kernel's formula weighs
                   the A / B re-reads per tile, the walk prices them and the epilogue as
                   printed.  A kernel of parts: each part weighs its own candidates.  (A conv
                   kernel chooses its core count in its lowering: lower/conv.py says why.)
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

The passes' result is remembered per lowered kernel text (its name left out), target and budget
(`_PASSED`, tile/kernel_memo.py): a kernel that comes back in the process, under its name or another,
is not walked again.
"""
from __future__ import annotations

import dataclasses

from .. import cost

from .kernel import (Alloc, Call, DeQue, Field, For, Free, If, Member, MmIterate, Step, TileKernel, map_steps,
                     print_kernel, ub_plan, verify_kernel)
from .kernel_cost import launch_work
from .kernel_memo import KernelTextMemo
from .kernel_reuse import reuse_buffers
from ..record import record

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


# The one rule of the pass `tiling`, for every kind: no candidate that moves more GM bytes than the
# lowering's own tiling (what it would print alone: the row kind's 16 KB-per-core heuristic, the
# cube kind's pick by its formula, which may trade GM bytes for time: lower/cube.py);
# of the others, the one moving the fewest GM bytes within TILING_SLACK of the fastest in the walk,
# then the faster, then the lowering's order (its own first).  The walk does not trade more bytes
# for time than the lowering's own choice: the chip's HBM is shared with the other work on it
# (cores of other streams, the host's DMA), which the walk of one kernel does not see; within the
# slack (the model's resolution) the fewer bytes win.
TILING_SLACK = 0.02


@record
class TilingChoice:
    """What the pass `tiling` weighed and why it kept the kernel's words (the report's tiling line):
    the candidates the lowering offered (its own first) and those the walk priced (the UB plan fits,
    the walk applies), the kept one's place among the offered (0: the lowering's own), and the
    walked (modelled us, GM bytes) of the kept one, of the lowering's own, of the fastest that moves
    no more GM bytes than it and of the fastest of all."""
    offered: int
    weighed: int
    index: int
    time_us: float
    gm_bytes: int
    own_us: float
    own_gm: int
    fastest_us: float
    fastest_gm: int
    fastest_all_us: float
    fastest_all_gm: int

    @property
    def reason(self) -> str:
        """Why the kept candidate won, in the report's words."""
        why = ("the fastest" if self.time_us <= self.fastest_us else
               f"the fewest GM bytes within {TILING_SLACK * 100:g} % of the fastest ({self.fastest_us:.2f} us, "
               f"{self.fastest_gm} GM bytes)")
        if self.fastest_all_us < self.fastest_us:
            why += (f"; a faster one ({self.fastest_all_us:.2f} us) would move {self.fastest_all_gm} GM bytes, more "
                    f"than the lowering's own tiling ({self.own_gm})")
        return why


def choose_tiling(k: TileKernel, target, budget: int) -> TileKernel:
    if k.parts:   # each part is weighed alone (the UB is reset between parts; one launch runs them in turn)
        parts = tuple(choose_tiling(p, target, budget) for p in k.parts)
        return k if all(a is b for a, b in zip(parts, k.parts)) else dataclasses.replace(k, parts=parts)
    if not k.candidates:
        return k
    i, kk, words, choice = _weigh(k, target, budget)
    if i is None:
        return dataclasses.replace(k, candidates=())
    return dataclasses.replace(kk, words=words, candidates=(), choice=choice)


def _offered(k: TileKernel, i: int, target, budget: int) -> TileKernel:
    """The kernel of the i-th offered candidate (0: k's own words): k, or another lowering of the
    function after the pass `reuse`, as k had it."""
    c = k.candidates[i - 1] if i else None
    if not isinstance(c, TileKernel):
        return k
    return reuse_buffers(dataclasses.replace(c, candidates=()), target, budget)


def _weigh(k: TileKernel, target, budget: int) -> tuple:
    """(the kept candidate's place among the offered, its kernel, its words, the TilingChoice), or
    Nones when the lowering's own words are not walkable (they are kept)."""
    # (kernel, words) per candidate: this kernel's own words first, other words for it, other kernels
    offered = [(k, tuple(k.words))]
    for i, c in enumerate(k.candidates, 1):
        kk = _offered(k, i, target, budget)
        offered.append((kk, tuple(kk.words) if isinstance(c, TileKernel) else tuple(c)))
    own_work = launch_work(k, target, k.words)   # the cap, whether or not its UB plan fits this budget
    if own_work is None or not own_work.block_dim:   # the lowering's own words are not walkable: keep them
        return None, None, None, None
    own = (own_work.time_us(target), own_work.gm_bytes, 0)
    walked, weighed, fastest = [], 0, None   # (modelled us, GM bytes, index) of each walked to its end
    for i, (kk, words) in enumerate(offered):
        if sum(b * n for _, _, b, n in ub_plan(kk, words)) > budget:
            continue
        weighed += 1
        # a candidate whose busiest core alone takes longer than the slack above the fastest so far
        # cannot be kept: its walk stops there (kernel_work: the cores after the first, the busiest,
        # are not walked)
        above = None if fastest is None else (fastest * (1 + TILING_SLACK) - cost.LAUNCH_US) * target.clock_mhz
        work = own_work if i == 0 else launch_work(kk, target, words, above)
        if work is None or not work.block_dim:
            continue
        t = work.time_us(target)
        walked.append((t, work.gm_bytes, i))
        if work.gm_bytes <= own[1] and (fastest is None or t < fastest):
            fastest = t
    kept = [w for w in walked if w[1] <= own[1]]
    if not kept:
        return None, None, None, None
    best = min(kept)
    t, gm, i = min((w for w in kept if w[0] <= best[0] * (1 + TILING_SLACK)), key=lambda w: (w[1], w[0], w[2]))
    every = min(walked)
    return (i, *offered[i], TilingChoice(len(offered), weighed, i, t, gm, own[0], own[1], best[0], best[1],
                                         every[0], every[1]))


def _verify(k: TileKernel, target, budget: int) -> TileKernel:
    verify_kernel(k, target, budget)
    return k


KERNEL_PASSES = [("reuse", reuse_buffers), ("tiling", choose_tiling), ("double-buffer", double_buffer),
                 ("verify", _verify)]


# The passes' result for a kernel they ran on before in this process, by (id(target), budget) and the
# lowered kernel's text with its name left out: (target, the kernel after the passes).  The passes
# read nothing but the kernel (its text round-trips: tile/kernel.parse_kernel), the target and the
# budget -- and the kernel's name only to name it in a verifier's message -- so a kernel of another
# name takes the result, renamed: a model's repeated layers (kernels model_k1, model_k3, ... of one
# text but for the name: a 7-block stack's 15 kernels are 5 texts), a function edited above the
# kernel's line.  A kernel is printed only when an earlier one may have its text (tile/kernel_memo.py:
# most first compiles print none).  The kept kernels are shared: a TileKernel is not changed once
# built (what is learnt about it -- its walks -- is memoised in it).
_PASSED = KernelTextMemo(512)


def _offers_kernels(k: TileKernel) -> bool:
    """Whether the kernel (or a part of it) offers whole candidate kernels."""
    return any(isinstance(c, TileKernel) for c in k.candidates) or any(_offers_kernels(p) for p in k.parts)


def run_kernel_passes(k: TileKernel, target, budget: int | None = None,
                      snapshots: list | None = None) -> TileKernel:
    """`k` after every pass of KERNEL_PASSES; with `snapshots` (a list), ("kernel-<pass>", text)
    after the lowering and after each pass that changed the kernel (run again, not remembered)."""
    budget = target.ub_bytes if not budget else budget
    slot = None
    if snapshots is not None:
        snapshots.append(("kernel-lowered", print_kernel(k)))
    elif not _offers_kernels(k):   # (a cube kind remembers its choice before it lowers candidates:
        # lower/cube.WALK_CHOICES; comparing every candidate kernel's text would cost more here)
        hit, slot = _PASSED.find(k, (id(target), budget))
        if hit is not None and hit[0] is target:
            return hit[1] if hit[1].name == k.name else dataclasses.replace(hit[1], name=k.name)
    for name, run in KERNEL_PASSES:
        before = k
        k = run(k, target, budget)
        if snapshots is not None and k is not before:
            snapshots.append((f"kernel-{name}", print_kernel(k)))
    if slot is not None:
        _PASSED.put(slot, (target, k))
    return k

"""Kernel pass `reuse`: VECCALC buffers (TBuf) of a whole kernel whose tensors are never live at the
same time share one buffer -- on every kind's TileKernel, after its lowering.

Before: each lowering gives its temporaries buffers of their own, some reusing them by their own
rules (the row kind's `allocate_row_values`, the vector kind's `tile/reuse.py` on its tile
program), others not (a cube epilogue's, conv's and attention's scratch rows).  After: a buffer
whose tensor's last use comes before another's first write, with the same element type and the
same elements per buffer, is given to it (`alloc B = b_A`: a second Get of A's TBuf, the same
memory), and the buffers no tensor takes any more are dropped from the UB plan.

Liveness is by position in a stage's body (nodes numbered in order, loop bodies inline).  A tensor
is live from its first access to its last; over a whole loop when it is accessed inside and
outside the loop or its first access in the loop reads it (a value carried from one pass to the
next).  Only tensors every access of which is by the vector pipe (Vec, Dup, a Step's statements)
or a GetValue are candidates: the vector pipe runs its calls in order (with PipeBarrier<PIPE_V>
between dependent ones) and GetValue waits for its value, so a buffer given on is never written
while an earlier reader is still pending; a tensor a DMA, SetValue, UB copy or the Matmul API
touches, one declared for later assignment (Decl), a Matmul's workspace and a buffer taken in more
than one stage keep their own.  Two tensors live at one node never share: no node reads one and
writes the other in the same memory (that is the in-place rule's business, tile/reuse.py).
"""
from __future__ import annotations

import dataclasses

from ..lru import Lru
from .ir import Stmt
from .kernel import (Alloc, CopyIn, CopyNz, CopyOut, Decl, Dup, For, GatherRow, If, MmGetC, MmIterate,
                     MmSet, Move, Put, Scalar, Step, TileKernel, UbCopy, Vec, _gets)


def _step_accesses(node: Step):
    """[(tensor, 'r' | 'w'), ...] of a Step in order: its prefills, then per statement its sources
    (and scratch) read, its destination written."""
    slot = dict(node.names)
    out = [(r.tensor, "w") for r, _, _ in node.prefill]
    for st in node.stmts:
        st: Stmt
        for x in (*st.srcs, *st.aux):
            if x in slot:
                out.append((slot[x].tensor, "r"))
        if st.dst in slot:
            out.append((slot[st.dst].tensor, "w"))
    return out


def _accesses(node):
    """(ordered vector-pipe accesses [(tensor, 'r' | 'w')], tensors touched otherwise)."""
    if isinstance(node, Vec):
        return [(r.tensor, "r") for r in node.srcs] + [(node.dst.tensor, "w")], set()
    if isinstance(node, Dup):
        gets = _gets(node.value) if isinstance(node.value, tuple) else set()
        return [(t, "r") for t in sorted(gets)] + [(node.dst.tensor, "w")], set()
    if isinstance(node, Step):
        return _step_accesses(node), set()
    if isinstance(node, Scalar):
        return [(t, "r") for t in sorted(_gets(node.expr))], set()
    if isinstance(node, Put):
        return [], {node.tensor} | _gets(node.expr) | _gets(node.index)
    if isinstance(node, (Move, UbCopy)):
        return [], {node.dst, node.src}
    if isinstance(node, (CopyIn, CopyOut, CopyNz, MmGetC)):
        return [], {node.tensor}
    if isinstance(node, GatherRow):
        return [], {node.dst.tensor}
    if isinstance(node, MmSet):
        return [], {node.src}
    if isinstance(node, Decl):
        return [], {node.tensor}
    return [], set()


class _Walk:
    """Positions of every access of a stage's tensors, and the loops around them."""

    def __init__(self):
        self.pos = 0
        self.uses: dict[str, list] = {}      # tensor -> [(position, 'r' | 'w', loops around)]
        self.loops: dict[int, tuple] = {}    # loop id -> (first position, last position)
        self.other: set = set()
        self.allocs: dict[str, str] = {}     # tensor -> queue (Alloc in this stage)

    def walk(self, body, loops: tuple = ()) -> None:
        for node in body:
            if isinstance(node, (For, MmIterate)):
                lid = len(self.loops)
                start = self.pos
                self.loops[lid] = (start, start)
                self.walk(node.body, loops + (lid,))
                self.loops[lid] = (start, self.pos)
                continue
            if isinstance(node, If):
                self.walk(node.then, loops)
                self.walk(node.orelse, loops)
                continue
            if isinstance(node, Alloc):
                self.allocs[node.tensor] = node.queue
            self.pos += 1
            seq, other = _accesses(node)
            self.other |= other
            for tensor, kind in seq:
                self.uses.setdefault(tensor, []).append((self.pos, kind, loops))

    def interval(self, tensor: str) -> tuple[int, int]:
        uses = self.uses[tensor]
        lo, hi = min(p for p, _, _ in uses), max(p for p, _, _ in uses)
        changed = True
        while changed:   # a loop the value crosses: the whole loop
            changed = False
            for lid in {lid for _, _, loops in uses for lid in loops}:
                first, last = self.loops[lid]
                inside = [(p, k) for p, k, loops in uses if lid in loops]
                carried = min(inside)[1] == "r" or lo < first + 1 or hi > last
                if carried and (lo > first or hi < last):
                    lo, hi, changed = min(lo, first), max(hi, last), True
        return lo, hi


# The pass's result for a kernel of the same stages, Process, queues and Matmul objects, by identity
# (the entry holds them: no id is reused while it lives): the candidate kernels of one layout
# (lower/cube_tile.cube_tile_kernel) share them and differ only in their words and plan line,
# which the pass does not read -- it reads nothing else of a kernel.  A TileKernel and its parts
# are not changed once built.  The last 16 kernels' (the pass runs on a compile's kernels one
# after another).
_SAME = Lru(16)


def reuse_buffers(k: TileKernel, target=None, budget: int | None = None) -> TileKernel:
    if k.parts:
        return dataclasses.replace(k, parts=tuple(reuse_buffers(p, target, budget) for p in k.parts))
    key = (id(k.stages), id(k.process), id(k.queues), id(k.matmuls))
    same = _SAME.get(key)
    if same is not None and same[0] is k.stages and same[1] is k.process and same[2] is k.queues \
            and same[3] is k.matmuls:
        return k if same[4] is None else dataclasses.replace(k, stages=same[4], queues=same[5])
    out = _reuse(k)
    kept = (None, None) if out is k else (out.stages, out.queues)
    _SAME.put(key, (k.stages, k.process, k.queues, k.matmuls, *kept))
    return out


def _reuse(k: TileKernel) -> TileKernel:
    queues = {q.name: q for q in k.queues}
    workspaces = {mm.workspace for mm in k.matmuls if mm.workspace}
    taken: dict[str, int] = {}           # queue -> stages that take it
    walks = []
    for st in k.stages:
        w = _Walk()
        w.walk(st.body)
        walks.append(w)
        for q in set(w.allocs.values()):
            taken[q] = taken.get(q, 0) + 1
    if k.process is not None:
        w = _Walk()
        w.walk(k.process)
        for q in set(w.allocs.values()):
            taken[q] = taken.get(q, 0) + 2   # Process's own buffers are never given on
    rename: dict[str, str] = {}          # dropped queue -> the queue whose buffer it shares
    for w in walks:
        cands = []
        for tensor, q in w.allocs.items():
            qq = queues.get(q)
            if (qq is None or qq.position != "VECCALC" or qq.depth != 1 or q in workspaces or taken.get(q) != 1
                    or tensor in w.other or tensor not in w.uses
                    or sum(1 for x in w.allocs.values() if x == q) != 1):
                continue
            cands.append((w.interval(tensor), tensor, q))
        ends: dict[str, int] = {}        # kept queue -> the last position its tensors use
        kept: list[str] = []
        for (lo, hi), tensor, q in sorted(cands):
            qq = queues[q]
            home = next((h for h in kept if ends[h] < lo and queues[h].dtype == qq.dtype
                         and queues[h].elems == qq.elems), None)
            if home is None:
                kept.append(q)
                ends[q] = hi
            else:
                rename[q] = home
                ends[home] = hi
    if not rename:
        return k

    def body(nodes):
        out = []
        for node in nodes:
            if isinstance(node, Alloc) and node.queue in rename:
                node = Alloc(node.tensor, rename[node.queue])
            elif isinstance(node, (For, MmIterate)):
                node = dataclasses.replace(node, body=tuple(body(node.body)))
            elif isinstance(node, If):
                node = dataclasses.replace(node, then=tuple(body(node.then)), orelse=tuple(body(node.orelse)))
            out.append(node)
        return out
    stages = [dataclasses.replace(st, body=tuple(body(st.body))) for st in k.stages]
    return dataclasses.replace(k, stages=stages, queues=[q for q in k.queues if q.name not in rename])

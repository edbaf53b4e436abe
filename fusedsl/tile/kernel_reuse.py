"""Kernel pass `reuse`: VECCALC buffers (TBuf) of a whole kernel whose tensors are never live at the
same time share one buffer -- on every kind's TileKernel, after its lowering.

Before: each lowering gives its temporaries buffers of their own, some reusing them by their own
rules (the row kind's `allocate_row_values`, the vector kind's `tile/reuse.py` on its tile
program), others not (a cube epilogue's, conv's and attention's scratch rows).  After: a buffer
whose tensor's last use comes before another's first write, with the same element type and the
same elements per buffer, is given to it (`alloc B = b_A`: a second Get of A's TBuf, the same
memory), and the buffers no tensor takes any more are dropped from the UB plan.

Liveness is by position in a stage's body (nodes numbered in order, loop bodies inline); a stage
without two candidate buffers of one dtype and size is not walked (it could give nothing on).  A tensor
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
                     MmSet, Move, Put, Scalar, Step, TileKernel, UbCopy, Vec, _gets, walk_nodes)


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


def _dup_accesses(node: Dup):
    gets = _gets(node.value) if isinstance(node.value, tuple) else ()
    return [(t, "r") for t in sorted(gets)] + [(node.dst.tensor, "w")], set()


# (ordered vector-pipe accesses [(tensor, 'r' | 'w')], tensors touched otherwise) of a node, by its
# type (a node's type is its kind: records are final); a type not here touches no tensor
_ACCESSES = {
    Vec: lambda node: ([(r.tensor, "r") for r in node.srcs] + [(node.dst.tensor, "w")], set()),
    Dup: _dup_accesses,
    Step: lambda node: (_step_accesses(node), set()),
    Scalar: lambda node: ([(t, "r") for t in sorted(_gets(node.expr))], set()),
    Put: lambda node: ([], {node.tensor} | _gets(node.expr) | _gets(node.index)),
    Move: lambda node: ([], {node.dst, node.src}),
    UbCopy: lambda node: ([], {node.dst, node.src}),
    CopyIn: lambda node: ([], {node.tensor}),
    CopyOut: lambda node: ([], {node.tensor}),
    CopyNz: lambda node: ([], {node.tensor}),
    MmGetC: lambda node: ([], {node.tensor}),
    GatherRow: lambda node: ([], {node.dst.tensor}),
    MmSet: lambda node: ([], {node.src}),
    Decl: lambda node: ([], {node.tensor}),
}


class _Walk:
    """Positions of every access of a stage's tensors, and the loops around them."""

    def __init__(self):
        self.pos = 0
        self.uses: dict[str, list] = {}      # tensor -> [(position, 'r' | 'w', loops around)]
        self.loops: dict[int, tuple] = {}    # loop id -> (first position, last position)
        self.other: set = set()

    def walk(self, body, loops: tuple = ()) -> None:
        uses = self.uses
        for node in body:
            kind = type(node)
            if kind is For or kind is MmIterate:
                lid = len(self.loops)
                start = self.pos
                self.loops[lid] = (start, start)
                self.walk(node.body, loops + (lid,))
                self.loops[lid] = (start, self.pos)
                continue
            if kind is If:
                self.walk(node.then, loops)
                self.walk(node.orelse, loops)
                continue
            self.pos += 1
            rule = _ACCESSES.get(kind)
            if rule is None:   # (most nodes: loop bounds, queues, syncs touch no tensor's data)
                continue
            seq, other = rule(node)
            if other:
                self.other |= other
            for tensor, access in seq:
                at = uses.get(tensor)
                if at is None:
                    at = uses[tensor] = []
                at.append((self.pos, access, loops))

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


def _allocs(body) -> dict:
    """tensor -> queue of the Allocs of a body, nested bodies too, in order (a tensor taken again
    keeps its first place and its last queue)."""
    return {n.tensor: n.queue for n in walk_nodes(body) if type(n) is Alloc}


def _stage_allocs(k: TileKernel) -> tuple[list, dict]:
    """(each stage's _allocs, queue -> the stages that take it, Process counting twice: its own
    buffers are never given on)."""
    allocs = [_allocs(st.body) for st in k.stages]
    taken: dict[str, int] = {}
    for stage_allocs in allocs:
        for q in set(stage_allocs.values()):
            taken[q] = taken.get(q, 0) + 1
    if k.process is not None:
        for q in set(_allocs(k.process).values()):
            taken[q] = taken.get(q, 0) + 2
    return allocs, taken


def _givers(stage_allocs: dict, queues: dict, workspaces: set, taken: dict) -> list:
    """[(tensor, queue)] of a stage's tensors that may give or take a buffer as far as their
    queues tell (the stage's walk tells the rest: _stage_renames): a VECCALC buffer of one, not a
    Matmul's workspace, taken in this stage only, by this tensor only."""
    out = []
    for tensor, q in stage_allocs.items():
        qq = queues.get(q)
        if (qq is None or qq.position != "VECCALC" or qq.depth != 1 or q in workspaces or taken.get(q) != 1
                or sum(1 for x in stage_allocs.values() if x == q) != 1):
            continue
        out.append((tensor, q))
    return out


def _two_of_a_kind(givers: list, queues: dict) -> bool:
    """Whether two of the givers' buffers have the same dtype and elements: a buffer goes only to
    a tensor of its kind, so a stage without two renames nothing (_reuse does not walk it)."""
    kinds = [(queues[q].dtype, queues[q].elems) for _, q in givers]
    return len(set(kinds)) < len(kinds)


def _stage_renames(body, givers: list, queues: dict) -> dict:
    """{dropped queue: the queue whose buffer it shares} of one stage's body."""
    w = _Walk()
    w.walk(body)
    cands = [(w.interval(tensor), tensor, q) for tensor, q in givers if tensor not in w.other and tensor in w.uses]
    rename: dict[str, str] = {}
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
    return rename


def _reuse(k: TileKernel) -> TileKernel:
    queues = {q.name: q for q in k.queues}
    workspaces = {mm.workspace for mm in k.matmuls if mm.workspace}
    allocs, taken = _stage_allocs(k)
    rename: dict[str, str] = {}          # dropped queue -> the queue whose buffer it shares
    for st, stage_allocs in zip(k.stages, allocs):
        givers = _givers(stage_allocs, queues, workspaces, taken)
        if _two_of_a_kind(givers, queues):
            rename.update(_stage_renames(st.body, givers, queues))
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

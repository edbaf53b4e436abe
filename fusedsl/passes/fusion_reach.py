"""Reachability for fusion: which merges would close a cycle, answered without walking the graph.

Fusion (passes/fuse.py) merges groups of ops, and of kernels; a merge is legal only when no path
leaves the merged set and comes back into it.  The compile's work must grow with the graph, not
with its square (a model is thousands of ops in a chain of blocks, each op with few neighbours),
so the questions are answered from precomputed facts rather than by search:

- op-level reachability once, as bitsets (an int per node: its ancestors, its descendants);
- a path through a node that can never join either side of a merge (a matmul, a reduction or a
  view between two transformer blocks) blocks that pair for good.  `through_masks` marks, per
  node, what it reaches through such a node, so the pairs they block (every layer norm of a model
  reads the same weights: each pair of blocks would be a candidate) are never enumerated;
- the graph between groups keeps a topological order while groups merge (`GroupGraph`), so a
  cycle check walks only the nodes ordered between the two groups, not everything downstream.
"""
from __future__ import annotations

import heapq


def bits(mask: int):
    """Indices of the set bits, lowest first (cost per set bit, not per bit position)."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def closure_masks(order, edges) -> dict:
    """node -> bitmask of the nodes reachable backwards along `edges` (strict: not the node).
    `order` lists every node after all of its `edges[node]` (so: predecessors and a topological
    order give ancestors; successors and the reversed order give descendants)."""
    masks: dict = {}
    for n in order:
        m = 0
        for e in edges(n):
            m |= masks[e] | (1 << e)
        masks[n] = m
    return masks


def through_masks(order, edges, fixed, closure) -> dict:
    """node -> bitmask of the nodes it is joined to by a path through a node of `fixed` (one
    that no merge of the caller takes in), in the direction of `closure` (closure_masks over the
    same order and edges).  A pair with such a path between them can never merge."""
    masks: dict = {}
    for n in order:
        m = 0
        for e in edges(n):
            m |= masks[e]
            if e in fixed:
                m |= closure[e]
        masks[n] = m
    return masks


class GroupGraph:
    """The data-flow graph between groups (and the nodes outside every group), kept acyclic and in
    a topological order (`pos`) while groups merge.

    Why a group-level graph: the op-level masks miss a cycle that runs through a group merged
    earlier: a -> d1 and d2 -> b with d1, d2 in one group D makes a|b -> D -> a|b although no op
    path leads from a to b.  Why an order: a path from a to b passes only through nodes ordered
    between them, so a cycle check walks that window, not everything downstream (which made each
    check, and the pass, grow with the whole graph)."""

    def __init__(self, succ: dict, pred: dict, pos: dict):
        self.succ = succ      # node -> successor nodes
        self.pred = pred      # node -> predecessor nodes
        self.pos = pos        # node -> position in a topological order (gaps allowed)
        self.visits = 0       # nodes walked by cycle checks and reorders (compile work, reported)

    def acyclic_union(self, a, b) -> bool:
        """Merging a and b closes no cycle: no path of two or more steps joins them (a direct
        edge becomes internal).  Such a path can only run forward from the earlier of the two,
        through nodes ordered before the later one."""
        lo, hi = (a, b) if self.pos[a] < self.pos[b] else (b, a)
        return self._between(lo, hi, self.succ, lambda n: self.pos[n] < self.pos[hi]) is not None

    def merge(self, a, b) -> None:
        """b joins a (a keeps its name): b's edges become a's, and the nodes ordered between the
        two are reordered so the merged node follows everything that leads into it and precedes
        everything it leads to (Pearce and Kelly's local reordering, for a contraction)."""
        lo, hi = (a, b) if self.pos[a] < self.pos[b] else (b, a)
        ahead = self._between(lo, hi, self.succ, lambda n: self.pos[n] < self.pos[hi])
        behind = self._between(hi, lo, self.pred, lambda n: self.pos[n] > self.pos[lo])
        assert ahead is not None and behind is not None, "merge of groups joined by a path"
        # the window's slots, in order: what leads into hi first, then the merged node, then
        # what lo leads to (each keeps its relative order); one slot stays free
        slots = sorted([self.pos[lo], self.pos[hi]] + [self.pos[n] for n in ahead | behind])
        first = sorted(behind, key=self.pos.__getitem__)
        last = sorted(ahead, key=self.pos.__getitem__)
        for n, p in zip(first, slots):
            self.pos[n] = p
        self.pos[a] = slots[len(first)]
        for n, p in zip(last, slots[len(first) + 2:]):
            self.pos[n] = p
        del self.pos[b]
        for n in self.succ.pop(b, set()):
            self.pred[n].discard(b)
            if n != a:
                self.pred[n].add(a)
                self.succ.setdefault(a, set()).add(n)
        for n in self.pred.pop(b, set()):
            self.succ[n].discard(b)
            if n != a:
                self.succ[n].add(a)
                self.pred.setdefault(a, set()).add(n)

    def _between(self, start, end, step: dict, inside):
        """The nodes reached from `start` along `step` while `inside` holds, or None when `end` is
        reached in two or more steps."""
        stack = [n for n in step.get(start, ()) if n != end]
        seen: set = set()
        while stack:
            n = stack.pop()
            if n == end:
                return None
            if n in seen or not inside(n):
                continue
            seen.add(n)
            self.visits += 1
            stack.extend(step.get(n, ()))
        return seen


def topological_positions(nodes, succ: dict, key) -> dict:
    """node -> position in a topological order of `succ` (Kahn's algorithm, ready nodes taken by
    `key` for a deterministic order)."""
    indeg = {n: 0 for n in nodes}
    for n in nodes:
        for s in succ.get(n, ()):
            indeg[s] += 1
    ready = [(key(n), n) for n in nodes if indeg[n] == 0]
    heapq.heapify(ready)
    pos: dict = {}
    while ready:
        _, n = heapq.heappop(ready)
        pos[n] = len(pos)
        for s in succ.get(n, ()):
            indeg[s] -= 1
            if indeg[s] == 0:
                heapq.heappush(ready, (key(s), s))
    return pos

"""fusedsl/passes/fusion_reach.py against brute force on random DAGs: the reachability masks, the
cycle check of a merge, and the topological order kept while groups merge."""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from conftest import fuzz_settings
from fusedsl.passes.fusion_reach import GroupGraph, bits, closure_masks, through_masks, topological_positions


@st.composite
def dags(draw, max_nodes=14):
    """(n, edges): nodes 0..n-1, edges i -> j only for i < j (so 0..n-1 is a topological order)."""
    n = draw(st.integers(2, max_nodes))
    density = draw(st.sampled_from([0.1, 0.2, 0.35]))
    flags = draw(st.lists(st.floats(0, 1), min_size=n * n, max_size=n * n))
    edges = {(i, j) for i in range(n) for j in range(i + 1, n) if flags[i * n + j] < density}
    return n, edges


def _reach(n, edges, start, allowed=lambda k: True):
    """Nodes reachable from `start` (not itself) by paths whose inner nodes satisfy `allowed`."""
    succ = {i: [j for (a, j) in edges if a == i] for i in range(n)}
    seen, stack = set(), list(succ[start])
    while stack:
        k = stack.pop()
        if k in seen:
            continue
        seen.add(k)
        if allowed(k):
            stack.extend(succ[k])
    return seen


@fuzz_settings(0.1)
@given(dags(), st.sets(st.integers(0, 13)))
def test_masks_match_brute_force(dag, fixed):
    n, edges = dag
    preds = {j: [i for (i, k) in edges if k == j] for j in range(n)}
    succs = {i: [j for (k, j) in edges if k == i] for i in range(n)}
    above = closure_masks(range(n), preds.__getitem__)
    below = closure_masks(range(n - 1, -1, -1), succs.__getitem__)
    into = through_masks(range(n), preds.__getitem__, fixed, above)
    out = through_masks(range(n - 1, -1, -1), succs.__getitem__, fixed, below)
    for i in range(n):
        assert set(bits(below[i])) == _reach(n, edges, i)
        assert set(bits(above[i])) == {j for j in range(n) if i in _reach(n, edges, j)}
        # through a fixed node: i -> ... -> f -> ... -> j with f in fixed
        want_out = {j for f in _reach(n, edges, i) & fixed for j in _reach(n, edges, f)}
        assert set(bits(out[i])) == want_out
        assert set(bits(into[i])) == {j for j in range(n) if i in set(bits(out[j]))}


@fuzz_settings(0.1)
@given(dags(), st.lists(st.tuples(st.integers(0, 13), st.integers(0, 13)), max_size=12))
def test_merges_keep_a_topological_order_and_refuse_exactly_the_cycles(dag, tries):
    n, edges = dag
    succ = {i: {j for (k, j) in edges if k == i} for i in range(n)}
    pred = {j: {i for (i, k) in edges if k == j} for j in range(n)}
    graph = GroupGraph({k: set(v) for k, v in succ.items()}, {k: set(v) for k, v in pred.items()},
                       topological_positions(range(n), succ, key=lambda k: k))
    group = {i: {i} for i in range(n)}   # brute force: each live node's original nodes
    for a, b in tries:
        a, b = a % n, b % n
        if a == b or a not in group or b not in group:
            continue
        # group-level edges of the merged graph, recomputed from the original edges
        owner = {i: g for g, members in group.items() for i in members}
        gedges = {(owner[i], owner[j]) for (i, j) in edges if owner[i] != owner[j]}
        nodes = sorted(group)
        index = {g: k for k, g in enumerate(nodes)}
        iedges = {(index[x], index[y]) for (x, y) in gedges}
        # a path of two or more steps between a and b (through another node) closes a cycle
        inner = {k for k in range(len(nodes)) if k not in (index[a], index[b])}
        far = any(index[b] in _reach(len(nodes), iedges, m) for m in _reach(len(nodes), iedges, index[a]) & inner) \
            or any(index[a] in _reach(len(nodes), iedges, m) for m in _reach(len(nodes), iedges, index[b]) & inner)
        assert graph.acyclic_union(a, b) == (not far), (a, b, gedges)
        if far:
            continue
        graph.merge(a, b)
        group[a] |= group.pop(b)
        owner = {i: g for g, members in group.items() for i in members}
        for (i, j) in edges:
            if owner[i] != owner[j]:
                assert graph.pos[owner[i]] < graph.pos[owner[j]], "merged order is not topological"
                assert owner[j] in graph.succ[owner[i]] and owner[i] in graph.pred[owner[j]]
        assert set(graph.pos) == set(group)

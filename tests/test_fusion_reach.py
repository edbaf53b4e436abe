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


def _sibling_chain(nblocks):
    """Per block, exp(x * g) and tanh(x + g) read x and g: siblings that merge into one kernel of two
    outputs; g is read by every block, but the matmuls after each block keep the blocks apart."""
    import fusedsl as fs

    def chain(x, g, w1, w2):
        for _ in range(nblocks):
            x = fs.exp(x * g) @ w1 + fs.tanh(x + g) @ w2
        return x
    return fs.fused_kernel(chain)


def test_siblings_merge_within_a_block_and_work_stays_linear():
    import numpy as np
    rng = np.random.default_rng(0)
    x, g = rng.standard_normal((8, 16), np.float32) * 0.1, rng.standard_normal(16, np.float32) * 0.1
    w1, w2 = rng.standard_normal((16, 16), np.float32) * 0.1, rng.standard_normal((16, 16), np.float32) * 0.1
    kernel = _sibling_chain(3)
    want = x.astype(np.float64)
    for _ in range(3):
        want = np.exp(want * g) @ w1 + np.tanh(want + g) @ w2
    np.testing.assert_allclose(kernel(x, g, w1, w2), want, rtol=1e-4, atol=1e-5)
    plans = kernel.compile(x, g, w1, w2).kernels
    with_exp = [p.ops for p in plans if "exp" in p.ops]
    assert len(with_exp) == 3 and all(ops.count("exp") == ops.count("tanh") == 1 for ops in with_exp), with_exp
    work = []
    for n in (6, 24):
        compiled = _sibling_chain(n).compile(x, g, w1, w2)
        work.append(compiled.fuse_stats["candidates"] + compiled.fuse_stats["visits"])
    assert work[1] < 5 * work[0], work   # 4x the blocks; every pair of blocks shares g

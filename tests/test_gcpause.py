"""fusedsl.gcpause.gc_paused: the collector off for a trace and a compile, and what they made
collected once at the end (a cycle dropped is freed there; the young generations are not left full
for the caller's next allocation to walk); a full collection at a block's end once the process has
gone FULL_AFTER times the collector's threshold without one and grew by FULL_GROWTH."""
from __future__ import annotations

import gc
import sys
import weakref

import pytest

import fusedsl as fs
from fusedsl import gcpause
from fusedsl.gcpause import FULL_AFTER, FULL_GROWTH, gc_paused


class _Node:
    pass


def test_the_block_runs_without_the_collector_and_its_end_collects_what_it_made():
    assert gc.isenabled()
    gc.collect()
    events: list = []
    log = lambda phase, info: events.append((phase, info["generation"]))   # noqa: E731
    gc.callbacks.append(log)
    try:
        with gc_paused():
            assert not gc.isenabled()
            a, b = _Node(), _Node()
            a.other, b.other = b, a          # a cycle, dropped inside the block
            ref = weakref.ref(a)
            del a, b
            kept = [[i] for i in range(20000)]   # what a compile keeps: young objects, many
            assert ref() is not None and not events   # nothing collected meanwhile
    finally:
        gc.callbacks.remove(log)
    # the block's end collected the two younger generations (one walk), not the caller's next
    # allocation the youngest alone
    assert ("start", 1) in events, events
    assert gc.isenabled()
    assert ref() is None
    assert len(kept) == 20000


def test_an_inner_block_leaves_the_collector_to_the_outer_one():
    with gc_paused():
        with gc_paused():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def _blocks_until_full(limit: int) -> list:
    """Run paused blocks until limit + 1 have run; the count of younger collections before each
    block that ended with a full collection."""
    events: list = []
    log = lambda phase, info: events.append((phase, info["generation"]))   # noqa: E731
    full_at = []
    gc.callbacks.append(log)
    try:
        for _ in range(limit + 1):
            before = gc.get_count()[2]
            events.clear()
            with gc_paused():
                pass
            if ("start", 2) in events:
                full_at.append(before)
    finally:
        gc.callbacks.remove(log)
    return full_at


def test_a_full_collection_ends_a_block_once_the_process_has_gone_long_without_one_and_grew(monkeypatch):
    # a loop that only runs paused blocks: each ends with gc.collect(1), so no automatic collection
    # (the only kind that starts a full one) ever runs; the block that takes the count of younger
    # collections since the last full one past FULL_AFTER times the collector's threshold runs it --
    # the first time, and then only once the process's memory grew by FULL_GROWTH (CPython's rule:
    # the oldest generation grown by a quarter), as piling garbage would grow it
    monkeypatch.setattr(gcpause, "_heap", {"blocks": None, "full": None})
    gc.collect()
    limit = FULL_AFTER * gc.get_threshold()[2]
    assert _blocks_until_full(limit) == [limit]
    assert gc.get_count()[2] == 0
    steady = _blocks_until_full(limit)   # the heap as it was: past the count, no full collection
    assert steady == [] and gc.get_count()[2] > limit
    gc.disable()   # (the caller's allocations start no collection of their own here)
    try:
        grown = [(i, str(i)) for i in range(int(sys.getallocatedblocks() * (FULL_GROWTH - 1)) + 1000)]
    finally:
        gc.enable()
    before = gc.get_count()[2]
    assert _blocks_until_full(0) == [before]   # grown: the first block past the count runs it
    del grown
    _blocks_until_full(limit)
    gc.collect()   # the caller's own full collection: the next mark, however much it freed
    assert _blocks_until_full(limit) == []


def test_a_trace_runs_paused_and_frees_the_cycles_its_function_dropped_when_it_ends():
    seen, refs = [], []

    def f(x):
        seen.append(gc.isenabled())
        a, b = _Node(), _Node()
        a.other, b.other = b, a
        refs.append(weakref.ref(a))
        del a, b
        assert refs[0]() is not None    # not collected during the trace
        return fs.relu(x)

    graph = fs.fused_kernel(f).trace(fs.spec((4, 8)))
    assert seen == [False] and gc.isenabled()
    assert refs[0]() is None
    assert [op.name for op in graph.main.ops] == ["relu"]


def test_a_trace_that_raises_leaves_the_collector_on():
    def f(x):
        assert not gc.isenabled()
        if x > 0:   # a ControlFlowError
            return x
        return x

    with pytest.raises(fs.ControlFlowError):
        fs.fused_kernel(f).trace(fs.spec((4,)))
    assert gc.isenabled()


def test_a_trace_leaves_no_cyclic_garbage():
    # what the trace builds is freed by reference counting alone (ir.core.freeze_attrs' recursive
    # helper, nested, was a function-and-cell cycle per op with attributes: 12,000 objects of
    # garbage in a 286-block stack's trace, for the collector to find at the trace's end)
    def block(x, w, g, b):
        for _ in range(3):
            x = x + fs.gelu(fs.layer_norm(x, g, b) @ w) * 0.5
        return fs.softmax(fs.sum(x, axis=-1, keepdims=True) * x, axis=-1)

    args = (fs.spec((8, 16)), fs.spec((16, 16)), fs.spec((16,)), fs.spec((16,)))
    found: list = []
    log = lambda phase, info: phase == "stop" and found.append(info["collected"])   # noqa: E731
    gc.collect()
    gc.callbacks.append(log)
    try:
        graph = fs.fused_kernel(block).trace(*args)
    finally:
        gc.callbacks.remove(log)
    assert len(graph.main.ops) > 30
    assert found == [0], found   # the trace's end: one collection, nothing unreachable

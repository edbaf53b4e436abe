"""fusedsl.gcpause.gc_paused: the collector off for a compile, and what the compile made collected
once at its end (a cycle it dropped is freed there; the young generations are not left full for
the caller's next allocation to walk)."""
from __future__ import annotations

import gc
import weakref

from fusedsl.gcpause import gc_paused


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

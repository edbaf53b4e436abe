"""The kernel pass `reuse` (tile/kernel_reuse.py): VECCALC buffers whose tensors are never live at
once share one, on any kind's TileKernel; what a DMA / SetValue touches, a value carried around a
loop and tensors live at the same node keep their own; the kernel computes the same bits."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import fusedsl as fs
from fusedsl import dtypes as dt
from fusedsl.backend_cpu.kernel_interp import run_kernel
from fusedsl.lower.kinds import KERNEL_IR, kernel_ir
from fusedsl.tile.kernel import (Alloc, Dup, For, Put, Queue, Ref, Stage, TileKernel, Vec, print_kernel,
                                 ub_plan)
from fusedsl.tile.kernel_reuse import _givers, _stage_allocs, _stage_renames, _two_of_a_kind, reuse_buffers

from conftest import kernel_corpus


def _kernel(body, queues=("a", "b", "c")) -> TileKernel:
    qs = [Queue(f"b_{q}", "VECCALC", 1, dt.float32, 64) for q in queues]
    allocs = tuple(Alloc(q, f"b_{q}") for q in queues)
    return TileKernel("k", "vector", "", [], [], qs, [], [Stage("Compute", None, allocs + tuple(body))])


def _shared(k: TileKernel) -> dict:
    return {n.tensor: n.queue for n in k.stages[0].body if isinstance(n, Alloc)}


def test_a_dead_buffer_goes_to_a_later_tensor_of_its_type_and_size():
    body = [Dup(Ref("a"), 1.0, 64), Vec("Add", Ref("b"), (Ref("a"), Ref("a")), 64),
            Dup(Ref("c"), 2.0, 64), Vec("Add", Ref("c"), (Ref("c"), Ref("b")), 64)]
    k = reuse_buffers(_kernel(body))
    assert _shared(k) == {"a": "b_a", "b": "b_b", "c": "b_a"}   # a is dead once b is written
    assert [q.name for q in k.queues] == ["b_a", "b_b"]
    assert "alloc c = b_a" in print_kernel(k)


@pytest.mark.parametrize("case", ["set-value", "carried", "same-node", "other-size"])
def test_what_must_not_share_keeps_its_buffer(case):
    body = [Dup(Ref("a"), 1.0, 64), Vec("Add", Ref("b"), (Ref("a"), Ref("a")), 64), Dup(Ref("c"), 2.0, 64),
            Vec("Add", Ref("c"), (Ref("c"), Ref("b")), 64)]
    queues = ("a", "b", "c")
    k = _kernel(body, queues)
    if case == "set-value":      # SetValue runs on the scalar pipe: no ordering with the vector reads
        k.stages[0] = dataclasses.replace(k.stages[0], body=k.stages[0].body + (Put("c", 0, 1.0),))
    elif case == "carried":      # a read before the write in a loop: live around the whole loop
        loop = For("i", 0, 4, (Vec("Add", Ref("c"), (Ref("c"), Ref("b")), 64), Dup(Ref("a"), 1.0, 64),
                               Vec("Add", Ref("b"), (Ref("a"), Ref("a")), 64)))
        k.stages[0] = dataclasses.replace(k.stages[0], body=k.stages[0].body[:3] + (Dup(Ref("c"), 0.0, 64), loop))
    elif case == "same-node":    # a read by the node that writes the other: both live there
        k.stages[0] = dataclasses.replace(k.stages[0], body=k.stages[0].body[:3] + (
            Dup(Ref("a"), 1.0, 64), Vec("Add", Ref("c"), (Ref("a"), Ref("b")), 64)))
    else:                        # another number of elements per buffer
        k.queues[2] = dataclasses.replace(k.queues[2], elems=128)
    assert _shared(reuse_buffers(k))["c"] == "b_c"


_PROGRAMS = {
    "cube epilogue": (lambda x, w, b: fs.gelu(x @ w + b) * 0.5, [(64, 96), (96, 80), (80,)]),
    "cube row epilogue": (lambda x, w: fs.softmax(x @ w, axis=-1), [(64, 96), (96, 80)]),
    "column": (lambda x: fs.sum(x * x + 1.0, 0), [(64, 96)]),
}


@pytest.mark.parametrize("target", ["ascend910b", "ascend310p"])
@pytest.mark.parametrize("name", sorted(_PROGRAMS))
def test_reused_kernels_compute_the_same_bits_in_less_ub(name, target):
    f, shapes = _PROGRAMS[name]
    g = np.random.default_rng(5)
    arrays = [g.standard_normal(s).astype(np.float16) for s in shapes]
    comp = fs.fused_kernel(f).compile(*arrays, target=target)
    sched = comp.kernels[0].lowered
    passed = kernel_ir(sched)
    lowered = dataclasses.replace(KERNEL_IR[type(sched)](sched), words=passed.words)
    reused = reuse_buffers(lowered)
    assert len(reused.queues) < len(lowered.queues), "the pass gives at least one buffer on"
    assert sum(b * n for *_, b, n in ub_plan(reused)) < sum(b * n for *_, b, n in ub_plan(lowered))
    want = fs.fused_kernel(f)(*arrays)
    outs = []
    for k in (lowered, reused):
        out = np.zeros(want.shape, want.dtype)
        run_kernel(k, arrays, [out])
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(comp.simulate(*arrays), outs[1])


def test_a_stage_the_pass_does_not_walk_would_give_no_buffer_on():
    """_reuse walks only the stages with two candidate buffers of one dtype and size (a buffer goes
    only to a tensor of its kind): on every 6th configuration of the kernel corpus (every kind that
    lowers to the tile IR), each stage it passes by gives nothing on when walked, and the kernels
    it changes are those the walk of every stage changes."""
    corpus = kernel_corpus()
    skipped = walked = changed = 0
    for i, (kind, fn, specs, target) in enumerate(corpus.configs()):
        if i % 6:
            continue
        try:
            comp = fs.fused_kernel(fn, target=target).compile(*corpus._inputs(specs, seed=i))
        except fs.FusedslError:
            continue
        for plan in comp.kernels:
            lower = KERNEL_IR.get(type(plan.lowered))
            if lower is None:
                continue
            k = lower(plan.lowered)
            for part in k.parts or (k,):
                queues = {q.name: q for q in part.queues}
                workspaces = {mm.workspace for mm in part.matmuls if mm.workspace}
                allocs, taken = _stage_allocs(part)
                every: dict = {}
                for st, stage_allocs in zip(part.stages, allocs):
                    givers = _givers(stage_allocs, queues, workspaces, taken)
                    renames = _stage_renames(st.body, givers, queues)
                    every.update(renames)
                    if _two_of_a_kind(givers, queues):
                        walked += 1
                    else:
                        skipped += 1
                        assert renames == {}, (kind, st.name)
                out = reuse_buffers(part)
                assert [q.name for q in out.queues] == [q.name for q in part.queues if q.name not in every]
                changed += out is not part
    assert skipped > 500 and walked > 50 and changed > 5, (skipped, walked, changed)

"""Fusion's early exits against the full path they skip (passes/fuse.py).

`Fuse._any_partners`: no two groups share a key of sibling fusion's partner index, so no group
has a partner and _merge_siblings would hand back the groups as they are.  `_merge_seed`: no
kernel is a reduction or a matmul / conv2d, so _row_fuse would try no merge.  Over every program
of tools/kernel_corpus.py (each dtype, three option sets), the pass with the shortcuts
and with them forced off (the full path taken every time) gives the same module text, the same
kernels' kinds, reasons and codes, and the same work counts.
"""
from __future__ import annotations


import numpy as np

import fusedsl as fs
from fusedsl.passes import fuse as fuse_module
from fusedsl.passes.base import PassManager
from fusedsl.passes.fusion_model import fusion_options
from fusedsl.passes.pipeline import compile_passes
from fusedsl.targets import get_target

from conftest import kernel_corpus

corpus = kernel_corpus()


# kernels whose groups do share inputs (the corpus's programs return one value: few do)
SIBLINGS = [
    (lambda x: (fs.exp(x), fs.tanh(x)), [((8, 32), "float32")]),
    (lambda x, y: (fs.exp(x) + y, fs.relu(x) * y), [((8, 32), "float32"), ((32,), "float32")]),
    (lambda x: (fs.max(x, -1), fs.mean(x, -1)), [((8, 32), "float32")]),
    (lambda x: (fs.mean(x, 0), fs.var(x, 0)), [((8, 32), "float32")]),
    (lambda x, b: (fs.exp(x), fs.exp(b)), [((8, 32), "float32"), ((32,), "float32")]),
    (lambda x, w1, w2: (fs.relu(x @ w1), x @ w2), [((16, 32), "float16"), ((32, 16), "float16"), ((32, 16), "float16")]),
    (lambda x: fs.relu(x)[:, :4], [((8, 32), "float32")]),
    (lambda x, y: (fs.softmax(x), fs.exp(x) * 2, fs.layer_norm(x, y, y)), [((8, 32), "float32"), ((32,), "float32")]),
]


def _programs():
    seen = set()
    for key, fn, specs, _ in corpus.configs():
        if (key, specs[0][1]) in seen:   # each program in each dtype, at its first shapes
            continue
        seen.add((key, specs[0][1]))
        yield key, fn, specs
    for n, (fn, specs) in enumerate(SIBLINGS):
        yield f"siblings/{n}", fn, specs


def _fused(graph, target, options):
    passes = compile_passes(bool(options.get("single_kernel")), target.max_queue_buffers_per_position,
                            fusion_options(options, target))
    module = PassManager(passes).run(graph)
    fuse = passes[-1]
    return str(module), sorted((k, v.kind, v.reason, v.code) for k, v in fuse.infos.items()), fuse.stats


def test_fusion_shortcuts_decide_as_the_full_path(monkeypatch):
    target = get_target("ascend910b")
    programs, taken = 0, {"partners": 0, "seed": 0, "merges": 0}
    any_partners, merge_seed = fuse_module.Fuse._any_partners, fuse_module._merge_seed

    def counted_partners(self, shape, inputs):
        found = any_partners(self, shape, inputs)
        taken["partners"] += not found
        return found

    def counted_seed(op, rows, cube):
        found = merge_seed(op, rows, cube)
        taken["seed"] += not found
        return found

    for key, fn, specs in _programs():
        programs += 1
        try:
            graph = fs.fused_kernel(fn).trace(*[np.ones(s[0], s[1]) for s in specs])
        except fs.FusedslError:
            continue
        for options in ({}, {"single_kernel": True}, {"opt_level": 1}):
            monkeypatch.setattr(fuse_module.Fuse, "_any_partners", counted_partners)
            monkeypatch.setattr(fuse_module, "_merge_seed", counted_seed)
            try:
                fast = _fused(graph, target, options)
            except fs.FusedslError as exc:
                fast = repr(exc)
            monkeypatch.setattr(fuse_module.Fuse, "_any_partners", lambda self, shape, inputs: True)
            monkeypatch.setattr(fuse_module, "_merge_seed", lambda op, rows, cube: True)
            try:
                full = _fused(graph, target, options)
            except fs.FusedslError as exc:
                full = repr(exc)
            assert fast == full, (key, specs, options)
            if key.startswith("siblings/") and not isinstance(full, str):
                taken["merges"] += full[2]["merges"]
    # the shortcuts were taken (the test compares something)
    assert programs > 150 and taken["partners"] > 300 and taken["seed"] > 100 and taken["merges"] > 10, \
        (programs, taken)


def test_one_output_is_one_chunk_as_the_queue_chunking_makes_it(monkeypatch):
    """Fuse._chunk_by_queues returns one chunk for one output without walking its inputs: what
    _chunks (the walk) returns for it, over every single output of every group of the corpus."""
    target = get_target("ascend910b")
    calls = []
    chunk_by_queues = fuse_module.Fuse._chunk_by_queues

    def both(self, fn, roots, allowed, producer):
        fast = chunk_by_queues(self, fn, roots, allowed, producer)
        if len(roots) == 1 and self.max_queues is not None:
            calls.append(1)
            assert fast == self._chunks(fn, roots, allowed, producer) == [list(roots)]
        return fast

    monkeypatch.setattr(fuse_module.Fuse, "_chunk_by_queues", both)
    for key, fn, specs in _programs():
        try:
            graph = fs.fused_kernel(fn).trace(*[np.ones(s[0], s[1]) for s in specs])
            _fused(graph, target, {})
        except fs.FusedslError:
            continue
    assert len(calls) > 150, len(calls)

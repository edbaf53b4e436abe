"""tile/kernel_memo.KernelTextMemo (the kernel passes' memo, kernel_passes._PASSED): its answers are
those of a dict keyed by the kernel's text with its name left out, printing fewer kernels."""
from __future__ import annotations

import dataclasses

import fusedsl as fs
from fusedsl.lower.kinds import KERNEL_IR
from fusedsl.tile import kernel_memo
from fusedsl.tile.kernel import TileKernel, print_kernel
from fusedsl.tile.kernel_memo import PER_SHAPE, KernelTextMemo, _shape

from conftest import kernel_corpus


def _corpus_kernels() -> list[tuple[TileKernel, str]]:
    """(kernel, target) of the lowered tile kernels (before the kernel passes) of every 4th
    configuration of the kernel corpus, without those that offer whole kernels as candidates (the
    passes' memo skips those)."""
    corpus = kernel_corpus()
    out = []
    for i, (_, fn, specs, target) in enumerate(corpus.configs()):
        if i % 4:
            continue
        try:
            comp = fs.fused_kernel(fn, target=target).compile(*corpus._inputs(specs, seed=i))
        except fs.FusedslError:
            continue
        for plan in comp.kernels:
            lower = KERNEL_IR.get(type(plan.lowered))
            k = lower(plan.lowered) if lower is not None else None
            if k is not None and not any(isinstance(c, TileKernel) for c in k.candidates):
                out.append((k, target))
    return out


def test_the_memo_answers_as_a_dict_keyed_by_the_text(monkeypatch):
    """Each corpus kernel, a copy of it under another name and a copy with one queue one buffer
    deeper (the same figures, another text) are looked up, then filed when missed: a lookup finds
    exactly what a dict keyed by the text (name left out) holds, and no more than PER_SHAPE texts
    share figures (none is dropped); a kernel whose figures no earlier kernel had is not printed."""
    kernels = _corpus_kernels()
    lookups = []
    for k, target in kernels:
        deeper = dataclasses.replace(k, queues=[dataclasses.replace(k.queues[0], depth=k.queues[0].depth + 1)]
                                     + list(k.queues[1:])) if k.queues else k
        lookups += [(k, target), (dataclasses.replace(k, name=k.name + "_again"), target), (deeper, target)]
    texts = {id(k): print_kernel(k, name="") for k, _ in lookups}
    per_shape: dict = {}
    for k, target in lookups:
        per_shape.setdefault((target, _shape(k)), set()).add(texts[id(k)])
    assert len(kernels) > 300 and max(len(t) for t in per_shape.values()) <= PER_SHAPE

    printed = []
    monkeypatch.setattr(kernel_memo, "print_kernel",
                        lambda k, name=None: printed.append(k) or print_kernel(k, name=name))
    memo, want, filed = KernelTextMemo(4096), {}, set()
    hits = unprinted = 0
    for k, target in lookups:
        before = len(printed)
        got, slot = memo.find(k, target)
        assert got is want.get((target, texts[id(k)])), k.name
        if (target, _shape(k)) not in filed:   # nothing of its figures filed: a miss without a print
            assert len(printed) == before
            unprinted += 1
        assert memo.find(k, "another context")[0] is None
        if got is None:
            result = object()
            memo.put(slot, result)
            want[target, texts[id(k)]] = result
            filed.add((target, _shape(k)))
        hits += got is not None
    assert hits >= len(kernels)   # (every renamed copy, and kernels of one text in the corpus)
    assert unprinted > 100

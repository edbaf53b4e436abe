"""Every configuration of tools/kernel_corpus.py through the one LLVM lowering of the tile IR
(backend_cpu/llvm_kernel.py) and its spec, kernel_interp.run_kernel: a tally per kind of kernels
whose results are bit-identical, within 4 ulps of the largest output (kernels with exp / ln or a
Matmul object, see tests/test_llvm_kernel.py), different, or not lowered (the error's first line).

Programs of one kernel with a TileKernel are checked (the corpus's inputs, its seeds); the others
are counted as skipped.

    python tools/llvm_kernel_sweep.py [--only KIND] [--match TEXT] [--limit N]
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))
import fusedsl as fs  # noqa: E402
import kernel_corpus  # noqa: E402
from fusedsl.backend_cpu.kernel_cpu import TileKernelCpu  # noqa: E402
from fusedsl.backend_cpu.kernel_interp import run_kernel  # noqa: E402
from fusedsl.lower.kinds import kernel_ir, kernel_words  # noqa: E402
from fusedsl.tile.kernel import Step, Vec  # noqa: E402


def _approximate(k) -> bool:
    def walk(body):
        for node in body:
            yield node
            for attr in ("body", "then", "orelse"):
                yield from walk(getattr(node, attr, ()))
    nodes = [n for st in k.stages for n in walk(st.body)]
    return bool(k.matmuls) or any(
        (isinstance(n, Vec) and n.api == "Exp") or (isinstance(n, Step) and any(s.op in ("exp", "ln") for s in n.stmts))
        for n in nodes)


def check(key, fn, specs, target) -> tuple[str, str]:
    """(kind, outcome) of one configuration."""
    arrays = kernel_corpus._inputs(specs, seed=len(key))
    try:
        comp = fs.fused_kernel(fn, target=target).compile(*arrays)
    except fs.FusedslError:
        return key.split("/")[0], "skipped: does not compile"
    if len(comp.kernels) != 1:
        return key.split("/")[0], "skipped: several kernels"
    plan = comp.kernels[0]
    k = kernel_ir(plan.lowered) if plan.lowered is not None else None
    if k is None:
        return key.split("/")[0], "skipped: no TileKernel"
    names = fn.__code__.co_varnames[:fn.__code__.co_argcount]
    by_name = dict(zip(names, arrays))
    if any(p.value.name not in by_name for p in plan.function.params):
        return k.kind, "skipped: parameters renamed"
    inputs = [by_name[p.value.name] for p in plan.function.params]
    words = kernel_words(plan.lowered, plan.tiling)
    shapes = [(tuple(int(d) for d in r.type.shape), r.type.dtype.np) for r in plan.function.results]
    spec = [np.zeros(s, d) for s, d in shapes]
    got = [np.zeros(s, d) for s, d in shapes]
    try:
        run_kernel(k, inputs, spec, words)
    except Exception as exc:   # noqa: BLE001 - tallied
        return k.kind, f"interpreter error: {type(exc).__name__}"
    try:
        TileKernelCpu(k).run(inputs, got, words)
    except Exception as exc:   # noqa: BLE001 - tallied
        return k.kind, f"not lowered: {str(exc).splitlines()[0].split(': ', 1)[-1][:80]}"
    if all(a.tobytes() == b.tobytes() for a, b in zip(spec, got)):
        return k.kind, "bit-identical"
    if _approximate(k) and all(a.dtype.kind == "f" for a in spec):
        ok = True
        for a, b in zip(spec, got):
            eps = float(np.finfo(a.dtype).eps) if a.dtype.kind == "f" else 0.0
            scale = float(np.nanmax(np.abs(a.astype(np.float64)), initial=1.0))
            ok &= np.allclose(b.astype(np.float64), a.astype(np.float64), rtol=4 * eps, atol=4 * eps * scale,
                              equal_nan=True)
        if ok:
            return k.kind, "within 4 ulps (exp / ln / matmul)"
    return k.kind, f"DIFFERENT ({key} on {target})"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only")
    ap.add_argument("--match")
    ap.add_argument("--limit", type=int, default=0)
    a = ap.parse_args(argv)
    tally: dict = collections.defaultdict(collections.Counter)
    t0 = time.time()
    for i, (key, fn, specs, target) in enumerate(kernel_corpus.configs(a.only, a.match)):
        if a.limit and i >= a.limit:
            break
        kind, outcome = check(key, fn, specs, target)
        tally[kind][outcome] += 1
        if outcome.startswith("DIFFERENT"):
            print(outcome, flush=True)
    print(f"{sum(sum(c.values()) for c in tally.values())} configurations in {time.time() - t0:.0f} s")
    for kind, counts in tally.items():
        for outcome, n in sorted(counts.items(), key=lambda x: -x[1]):
            print(f"| {kind} | {outcome} | {n} |")


if __name__ == "__main__":
    main()

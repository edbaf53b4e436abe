"""Where a kernel's first compile goes: the CPU time of the parts that build and check its tile IR, in
one process compiling a kind's programs once each (after one elementwise kernel, so that the
compiler's imports are not counted).  Run it in two checkouts, alternating, and compare the medians.

    PYTHONPATH=$PWD python benchmarks/row_first_parts.py [row|column|vector] [--corpus-from OTHER_CHECKOUT]

row (default): row_compile_time.py's row programs ([40, 300] and [2, 70000]); column / vector: every
ascend910b configuration of the kind in tools/kernel_corpus.py.

Parts (time.process_time around the functions, summed over the programs):

- op programs: row_plan.op_schedule, each elementwise op of a row or column kernel as a one-op
  vector program (the vector scheduler, the four tile passes and their verifier);
- build: the row (and vector) lowering to the TileKernel (lower/kinds.KERNEL_IR);
- memo key: what the kernel passes' memo asks of a kernel (its text, print_kernel, before ad6b744;
  KernelTextMemo.find since);
- reuse, verify: the kernel passes `reuse` and `verify`.

One line per run: the whole first compile (the sum over the programs) and each part, in ms.
--corpus-from takes the programs from another checkout's tools/kernel_corpus.py (as
row_compile_time.py does).
"""
import functools
import os
import sys
import time

import numpy as np

_corpus = sys.argv[sys.argv.index("--corpus-from") + 1] if "--corpus-from" in sys.argv else \
    os.path.join(os.path.dirname(__file__), "..")
sys.path.insert(0, os.path.join(_corpus, "tools"))
import fusedsl as fs  # noqa: E402
import kernel_corpus  # noqa: E402
from fusedsl.lower import column_plan, kinds, row_plan  # noqa: E402
from fusedsl.tile import kernel_passes  # noqa: E402

SPENT: dict = {}


def _timed(fn, part):
    @functools.wraps(fn)
    def timed(*args, **kwargs):
        t0 = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            SPENT[part] = SPENT.get(part, 0.0) + time.process_time() - t0
    return timed


def instrument():
    if hasattr(kernel_passes._PASSED, "find"):
        kernel_passes._PASSED.find = _timed(kernel_passes._PASSED.find, "memo key")
    else:   # (before ad6b744 the key was the kernel's text)
        kernel_passes.print_kernel = _timed(kernel_passes.print_kernel, "memo key")
    kernel_passes.verify_kernel = _timed(kernel_passes.verify_kernel, "verify")
    kernel_passes.KERNEL_PASSES[:] = [(name, _timed(run, "reuse") if name == "reuse" else run)
                                      for name, run in kernel_passes.KERNEL_PASSES]
    for kind, lower in list(kinds.KERNEL_IR.items()):
        kinds.KERNEL_IR[kind] = _timed(lower, "build")
    row_plan.op_schedule = _timed(row_plan.op_schedule, "op programs")
    column_plan.op_schedule = row_plan.op_schedule   # (it imports the function by name)


def main():
    instrument()
    warm = fs.fused_kernel(lambda x: fs.relu(x) * 2, target="ascend910b")
    warm.compile(np.ones((8, 64), np.float32)).source
    SPENT.clear()
    kinds_asked = [a for a in sys.argv[1:] if a in ("row", "column", "vector")]
    kind = kinds_asked[0] if kinds_asked else "row"
    seen, total = set(), 0.0
    for key, fn, specs, target in kernel_corpus.configs(kind):
        shape = specs[0][0]
        if target != "ascend910b" or kind == "row" and shape not in ((40, 300), (2, 70000)) or \
                (key, tuple(s[:2] for s in specs)) in seen:
            continue
        seen.add((key, tuple(s[:2] for s in specs)))
        args = [np.ones(s[0], s[1]) for s in specs] if kind == "row" else kernel_corpus._inputs(specs, seed=1)
        t0 = time.process_time()
        try:
            fs.fused_kernel(fn, target="ascend910b").compile(*args)
        except fs.FusedslError:
            continue
        total += time.process_time() - t0
    parts = ", ".join(f"{part} {SPENT.get(part, 0.0) * 1e3:.2f}"
                      for part in ("op programs", "build", "memo key", "reuse", "verify"))
    print(f"{kind}, {len(seen)} programs: first compile {total * 1e3:.1f} ms; {parts} ms")


if __name__ == "__main__":
    main()

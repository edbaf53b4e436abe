"""Compile and print time of row kernels (the row kind's lowering to Ascend C): the row
programs of tools/kernel_corpus.py (softmax, norms, lone reductions, per-row / one-value /
shared-row parameters; 12 programs) at [40, 300] (single-read plan) and [2, 70000] (multi-pass)
in float32 and float16 on ascend910b, compiled and printed in one process; CPU time, median of
the last 4 of 5 rounds.  Run it at two commits and compare (the machine is shared: interleave).

    PYTHONPATH=$PWD python benchmarks/row_compile_time.py
"""
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tools"))
import fusedsl as fs  # noqa: E402
import kernel_corpus  # noqa: E402


def cases():
    seen = set()
    for key, fn, specs, target in kernel_corpus.configs("row"):
        shape = specs[0][0]
        if target != "ascend910b" or shape not in ((40, 300), (2, 70000)) or (key, shape, specs[0][1]) in seen:
            continue
        seen.add((key, shape, specs[0][1]))
        yield fn, [np.ones(s[0], s[1]) for s in specs]


def main():
    work = list(cases())
    compile_t, print_t = [], []
    for _ in range(5):
        c = p = 0.0
        for fn, args in work:
            t0 = time.process_time()
            k = fs.fused_kernel(fn, target="ascend910b").compile(*args)
            t1 = time.process_time()
            k.source
            t2 = time.process_time()
            c, p = c + t1 - t0, p + t2 - t1
        compile_t.append(c)
        print_t.append(p)
    print(f"{len(work)} row programs: compile {statistics.median(compile_t[1:]):.3f} s, "
          f"Ascend C text {statistics.median(print_t[1:]) * 1e3:.1f} ms (CPU, median of the last 4 of 5)")


if __name__ == "__main__":
    main()

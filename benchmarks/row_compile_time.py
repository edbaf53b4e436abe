"""Compile and print time of one kernel kind's programs (its lowering to Ascend C), from
tools/kernel_corpus.py on ascend910b, compiled and printed in one process; CPU time, summed over the
programs.  Run it at two commits and compare (the machine is shared: interleave; benchmarks/trees.py
reads the table).

- first compile / first Ascend C text: each program's first compile in the process (no process memo
  holds its kernel yet: what a notebook sees for every new shape) and its first `k.source`, after one
  elementwise kernel compiled and printed (so that the compiler's imports are not counted); one
  figure per process;
- compile / Ascend C text: the same programs compiled again, and their text printed (the process's
  memos hit: lowered kernels, tiling choices, kernel passes, a kernel's printed class), median of
  the last 4 of 5 rounds.

- row (default): softmax, norms, lone reductions, per-row / one-value / shared-row parameters
  (12 programs) at [40, 300] (single-read plan) and [2, 70000] (multi-pass), float32 and float16;
- cube / conv: every ascend910b configuration of the kind that compiles (one per program, shape
  and dtype).

    PYTHONPATH=$PWD python benchmarks/row_compile_time.py [row|cube|conv] [--corpus-from OTHER_CHECKOUT]

--corpus-from takes the programs from another checkout's tools/kernel_corpus.py (the corpus grows:
19faa6c's lists 24 row programs, main's 48), so that two commits compile the same programs.
"""
import os
import statistics
import sys
import time

import numpy as np

_corpus = sys.argv[sys.argv.index("--corpus-from") + 1] if "--corpus-from" in sys.argv else \
    os.path.join(os.path.dirname(__file__), "..")
sys.path.insert(0, os.path.join(_corpus, "tools"))
import fusedsl as fs  # noqa: E402
import kernel_corpus  # noqa: E402


def cases(kind: str, first: list):
    """The kind's printable programs; appends each one's first compile's and first text's CPU
    seconds to `first`."""
    seen = set()
    for key, fn, specs, target in kernel_corpus.configs(kind):
        shape = specs[0][0]
        if target != "ascend910b" or (kind == "row" and shape not in ((40, 300), (2, 70000))) or \
                (key, shape, specs[0][1]) in seen:
            continue
        seen.add((key, shape, specs[0][1]))
        args = [np.ones(s[0], s[1]) for s in specs]
        try:
            t0 = time.process_time()
            k = fs.fused_kernel(fn, target="ascend910b").compile(*args)
            t1 = time.process_time()
            k.source
            t2 = time.process_time()
        except fs.FusedslError:
            continue   # a configuration the kind does not print (its error is the corpus's business)
        first.append((t1 - t0, t2 - t1))
        yield fn, args


def main():
    kinds = [a for a in sys.argv[1:] if a in ("row", "cube", "conv")]
    kind = kinds[0] if kinds else "row"
    warm = fs.fused_kernel(lambda x: fs.relu(x) * 2, target="ascend910b")
    warm.compile(np.ones((8, 64), np.float32)).source   # the compiler's and printer's imports
    first = []
    work = list(cases(kind, first))
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
    print("| programs | first compile | first Ascend C text | compile | Ascend C text |\n|---|---|---|---|---|")
    print(f"| {len(work)} {kind} programs | {sum(f[0] for f in first):.3f} s | {sum(f[1] for f in first) * 1e3:.1f} ms | "
          f"{statistics.median(compile_t[1:]):.3f} s | {statistics.median(print_t[1:]) * 1e3:.1f} ms |")
    print("(CPU time summed over the programs; first compile and text: once per process; compile and "
          "text again: median of the last 4 of 5 rounds)")


if __name__ == "__main__":
    main()

"""A kernel's first call: the CPU time from `fs.fused_kernel(f)(*arrays)` to its result, in a fresh
process, from an empty cache (cold) and again in a second fresh process on that cache (warm), in
one or several checkouts.

    python benchmarks/first_call.py [--roots before=/path/to/old/checkout,after=.] [--rounds 2]
                                    [--programs sort,softmax,views,chain]

Programs (small arrays: their first call is all tracing, fusion, lowering and JIT compiling):

  sort       fs.sort_with_indices of a [3, 1000] float32 array (a bitonic network of ~90 kernels)
  softmax    fs.softmax of a [64, 1000] float32 array (one row kernel)
  views      relu(concatenate([a, b], 1))[:, 8:1000] * 2 of two [64, 512] float32 arrays (a view kernel)
  chain      gelu(x) * sigmoid(y) + tanh(x - y) of two [64, 1000] float32 arrays (one elementwise kernel)

Each measurement is one subprocess (the process's own CPU time, `time.process_time`, around the
call; `import fusedsl` is outside it, but fusedsl imports its compiler stack -- fusedsl.compiler,
the kinds' lowerings, the CPU backend -- at the first call, so that is inside, as a user's first call
pays it; a host with PYTHONDONTWRITEBYTECODE=1 also compiles those sources in every process); each
round runs every checkout and program in turn, so a shared machine's load falls on all of them alike.
Medians over the rounds.  The cold call runs the quick tier of the tiered compiles
(backend_cpu/jit.py); FUSEDSL_JIT_TIERS=0 in the environment measures an O3 compile instead.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

_CHILD = r"""
import json, sys, time
import numpy as np
import fusedsl as fs
name = sys.argv[1]
g = np.random.default_rng(0)
x = g.standard_normal((64, 1000)).astype(np.float32)
y = g.standard_normal((64, 1000)).astype(np.float32)
a = g.standard_normal((64, 512)).astype(np.float32)
programs = {
    "sort": (lambda v: fs.sort_with_indices(v, -1, False), (g.standard_normal((3, 1000)).astype(np.float32),)),
    "softmax": (lambda v: fs.softmax(v, axis=-1), (x,)),
    "views": (lambda p, q: fs.relu(fs.concatenate([p, q], 1))[:, 8:1000] * 2.0, (a, a)),
    "chain": (lambda p, q: fs.gelu(p) * fs.sigmoid(q) + fs.tanh(p - q), (x, y)),
}
f, args = programs[name]
t = time.process_time()
fs.fused_kernel(f)(*args)
print(json.dumps({"cpu_s": time.process_time() - t}))
"""


def _run(root: str, program: str, cache: str) -> float:
    env = dict(os.environ, PYTHONPATH=root, FUSEDSL_CACHE_DIR=cache)
    out = subprocess.run([sys.executable, "-c", _CHILD, program], env=env, cwd=root, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["cpu_s"]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--roots", default="this=.")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--programs", default="sort,softmax,views,chain")
    a = ap.parse_args(argv)
    roots = [tuple(r.split("=", 1)) for r in a.roots.split(",")]
    programs = a.programs.split(",")
    times: dict = {}
    for _ in range(a.rounds):
        for program in programs:
            for label, root in roots:
                with tempfile.TemporaryDirectory(prefix="fusedsl-first-call-") as cache:
                    cold = _run(os.path.abspath(root), program, cache)
                    warm = _run(os.path.abspath(root), program, cache)
                times.setdefault((program, label), []).append((cold, warm))
    print("| program | checkout | cold first call, CPU s | warm (second process), CPU s |")
    print("|---|---|---|---|")
    for program in programs:
        for label, _ in roots:
            runs = times[(program, label)]
            cold = statistics.median(c for c, _ in runs)
            warm = statistics.median(w for _, w in runs)
            print(f"| {program} | {label} | {cold:.3f} | {warm:.3f} |")


if __name__ == "__main__":
    main()

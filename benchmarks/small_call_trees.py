"""benchmarks/cpu.py's per-call rows (the seed relu(abs(a) + b), a[128] over b[192, 128] float32)
for several source trees of fusedsl, measured in alternation: one process per tree per round.

    python benchmarks/small_call_trees.py [--rounds 5] TREE [TREE ...]

A TREE is a checkout's root (put first on PYTHONPATH); trees from before issue 19's executors (the
per-kind CpuKernel, 19faa6c) run too.  Per process: the bound call (the backend's native call on
these arrays), kernel(*arrays, out=) and the backend's run with the same arrays, each the median of
15 repeats of 2000 calls; the table gives each tree's median over the rounds and the load average.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ONE_TREE = r'''
import json, statistics, timeit
import numpy as np
import fusedsl as fs
from fusedsl.passes.fuse import Fuse
from fusedsl.passes.pipeline import canonicalize
from fusedsl.targets import get_target
try:
    from fusedsl.lower.vector import compute_tiling, schedule_vector_kernel
    from fusedsl.backend_cpu.kernel_cpu import ScheduleCpu as Backend
    old = False
except ImportError:   # before issue 19's executors
    from fusedsl.schedule import compute_tiling, schedule_vector_kernel
    from fusedsl.backend_cpu import CpuKernel as Backend
    old = True

@fs.fused_kernel
def seed(a, b):
    return fs.relu(fs.abs(a) + b)

rng = np.random.default_rng(1)
a = rng.standard_normal(128, dtype=np.float32)
b = rng.standard_normal((192, 128), dtype=np.float32)
out = np.empty_like(b)
module = Fuse().run(canonicalize(seed.trace(a, b)))
fn = module.functions[0]
target = get_target("ascend910b")
sched = schedule_vector_kernel(fn, target)
kernel = Backend(sched, target) if old else Backend(sched)
tiling = compute_tiling(sched, {}, target)
names = [p.value.name for p in module.main.params]
ordered = [[a, b][names.index(p.value.name)] for p in fn.params]
fs.config.executor = "llvm"
cases = {"bound call": kernel.bind(ordered, [out], tiling), "kernel(*arrays, out=)": lambda: seed(a, b, out=out),
         "run (same arrays)": lambda: kernel.run(ordered, [out], tiling)}
for f in cases.values():
    f()
assert np.array_equal(out, np.maximum(np.abs(a) + b, 0))
times = {k: [] for k in cases}
for _ in range(15):
    for k, f in cases.items():
        times[k].append(timeit.timeit(f, number=2000) / 2000 * 1e6)
print(json.dumps({k: statistics.median(v) for k, v in times.items()}))
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("trees", nargs="+")
    opts = ap.parse_args()
    runs = {t: [] for t in opts.trees}
    loads = []
    for _ in range(opts.rounds):
        for tree in opts.trees:
            loads.append(os.getloadavg()[0])
            env = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
            proc = subprocess.run([sys.executable, "-c", ONE_TREE], env=env, capture_output=True, text=True,
                                  cwd=os.path.abspath(tree))
            if proc.returncode:
                sys.exit(f"{tree}: {proc.stderr.strip().splitlines()[-1]}")
            runs[tree].append(json.loads(proc.stdout))
    cases = list(runs[opts.trees[0]][0])
    print(f"load average {min(loads):.1f}-{max(loads):.1f}, {opts.rounds} rounds")
    print("| tree | " + " | ".join(cases) + " |")
    print("|---" * (len(cases) + 1) + "|")
    for tree in opts.trees:
        cells = [f"{statistics.median(r[c] for r in runs[tree]):.2f} us" for c in cases]
        print(f"| {tree} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

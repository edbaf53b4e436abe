"""Where a whole compile's CPU time goes, for model-scale graphs, in one or several checkouts.

    python benchmarks/compile_profile.py [--blocks 72,286] [--chains 40,160,640] [--repeats 3]
                                         [--roots before=/path/to/old/checkout,after=.] [--rounds 3]

Graphs: benchmarks/model_scale.py's transformer-block stack (`--blocks`) and its all-vector graph
(`--chains` independent chains over one shared row), each taken from the checkout measured.  For
each, a fresh kernel is traced and compiled (`compiler.compile_module`: the passes, fusion, every
kernel's lowering) and every printable kernel printed as Ascend C; process CPU time per phase,
median of the repeats:

  trace      the Python function traced to the graph IR
  passes     the canonicalisation passes (PassManager, each verified)
  fuse       the fusion pass alone (its candidates and visits: the work counted in k.fuse_stats)
  lower      lower_kernel for every kernel (schedules, tilings, tile IR)
  rest       the rest of compile_module (the CompiledKernel, reports' inputs)
  ascendc    the Ascend C text of every printable kernel

With several `--roots` (label=checkout), each round runs every checkout once in a fresh process,
in turn, so a shared machine's load falls on all of them alike; the medians are over all rounds.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
PHASES = ("trace", "passes", "fuse", "lower", "rest", "ascendc", "total")


def measure(root: str, blocks: list[int], chains: list[int], repeats: int) -> list[dict]:
    """Times in this process, with fusedsl and model_scale imported from `root`."""
    sys.path.insert(0, os.path.join(root, "benchmarks"))
    import model_scale   # puts `root` first on sys.path: fusedsl comes from there too
    from fusedsl import compiler
    from fusedsl.frontend.kernel import describe_arg
    from fusedsl.passes import base
    assert os.path.dirname(os.path.dirname(os.path.abspath(compiler.__file__))) == os.path.abspath(root)
    # the PassManager times each pass with perf_counter: make that process time (this process only)
    base.time = types.SimpleNamespace(perf_counter=time.process_time)
    lowering = [0.0]
    lower_kernel = compiler.lower_kernel

    def timed_lower(*args, **kwargs):
        t = time.process_time()
        try:
            return lower_kernel(*args, **kwargs)
        finally:
            lowering[0] += time.process_time() - t
    compiler.lower_kernel = timed_lower
    managers = []
    run = base.PassManager.run

    def kept_run(self, module):
        managers.append(self)
        return run(self, module)
    base.PassManager.run = kept_run
    rows = []
    for label, make, sizes in (("stack", model_scale.stack, blocks), ("vector", model_scale.vector_graph, chains)):
        for size in sizes:
            samples = []
            for _ in range(repeats + 1):   # the first compile warms caches of first use: not counted
                kernel, args = make(size)
                infos = tuple(describe_arg(n, a) for n, a in zip(kernel.signature.parameters, args))
                managers.clear()
                lowering[0] = 0.0
                t0 = time.process_time()
                graph = kernel.trace(*args)
                t1 = time.process_time()
                compiled = compiler.compile_module(graph, infos)
                t2 = time.process_time()
                model_scale.ascendc_text(compiled)
                t3 = time.process_time()
                timings = [t for m in managers for t in m.timings]
                fuse = sum(t for name, t in timings if name == "fuse")
                passes = sum(t for name, t in timings if name != "fuse")
                samples.append({"trace": t1 - t0, "passes": passes, "fuse": fuse, "lower": lowering[0],
                                "rest": (t2 - t1) - passes - fuse - lowering[0], "ascendc": t3 - t2,
                                "total": t3 - t0})
                stats = compiled.fuse_stats
                info = {"graph": label, "size": size, "ops": len(compiled.canonical.main.ops),
                        "kernels": len(compiled.kernels), "candidates": stats["candidates"],
                        "visits": stats.get("visits", 0)}
                del compiled
            rows.append({**info, "samples": samples[1:]})
    return rows


def table(results: dict[str, list[list[dict]]]) -> str:
    lines = ["| code | graph | ops | kernels | candidates | visits | " + " | ".join(f"{p} ms" for p in PHASES) + " |",
             "|---|---|---|---|---|---|" + "---|" * len(PHASES)]
    for label, runs in results.items():
        for n, row in enumerate(runs[0]):
            samples = [s for run in runs for s in run[n]["samples"]]
            med = [statistics.median(s[p] for s in samples) * 1e3 for p in PHASES]
            lines.append(f"| {label} | {row['graph']} x{row['size']} | {row['ops']} | {row['kernels']} | "
                         f"{row['candidates']} | {row['visits']} | " + " | ".join(f"{v:.0f}" for v in med) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", default="72,286")
    parser.add_argument("--chains", default="40,160,640")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--roots", default=f"this={os.path.dirname(HERE)}")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)   # a child: measure this root, print JSON
    args = parser.parse_args(argv)
    blocks = [int(b) for b in args.blocks.split(",") if b]
    chains = [int(c) for c in args.chains.split(",") if c]
    if args.one:
        print(json.dumps(measure(args.one, blocks, chains, args.repeats)))
        return 0
    roots = dict(item.split("=", 1) for item in args.roots.split(","))
    results: dict[str, list] = {label: [] for label in roots}
    for r in range(args.rounds):
        for label, root in roots.items():
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", os.path.abspath(root),
                                  "--blocks", args.blocks, "--chains", args.chains, "--repeats", str(args.repeats)],
                                 check=True, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ""})
            results[label].append(json.loads(out.stdout))
            print(f"round {r + 1}: {label} done", file=sys.stderr, flush=True)
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The report's modelled time per kernel, before and after it was read from the tile IR: for every
configuration of tools/kernel_corpus.py, each kernel's graph-model figure (cost.function_cost, a
vector kernel's figure of its tiling choice) against the figure of its tile IR
(tile/kernel_cost.kernel_work: the printed program's copies and vector calls; process_work for a
kernel with Matmul objects: its Iterates' base tiles on the cube too), by kernel kind.

    python tools/report_model_sweep.py [--only KIND] [--match TEXT]

Prints one row per kind: kernels compared, kernels with no tile-IR figure,
kernels whose figures are equal (within 1e-9 relative), and the walked / graph ratio's minimum,
median and maximum, and the configurations with the largest ratios.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import fusedsl as fs  # noqa: E402
from fusedsl import cost  # noqa: E402
from fusedsl.lower.kinds import kernel_ir, kernel_words  # noqa: E402
from fusedsl.report import _chosen  # noqa: E402
from fusedsl.tile.kernel_cost import kernel_work, process_work  # noqa: E402

from kernel_corpus import _inputs, configs  # noqa: E402


def sweep(only=None, match=None):
    rows: dict = {}
    t0 = time.time()
    for key, fn, specs, target in configs(only, match):
        try:
            k = fs.fused_kernel(fn, target=target).compile(*_inputs(specs, seed=len(key)))
        except fs.FusedslError:
            continue
        for p in k.kernels:
            if p.lowered is None or p.tiling is None:
                continue
            graph = _chosen(cost.function_cost(p.function, k.target, {}, p.tiling, p.name, p.row),
                            p.tiling, k.target)
            whole = kernel_ir(p.lowered)
            words = None if whole is None else kernel_words(p.lowered, p.tiling)
            work = None if whole is None else kernel_work(whole, words)
            if work is None and whole is not None and (whole.process is not None or whole.parts):
                work = process_work(whole, k.target, p.tiling.block_dim, words)
            r = rows.setdefault(p.kernel_kind, {"n": 0, "none": 0, "equal": 0, "ratios": []})
            r["n"] += 1
            if work is None or not work.block_dim:
                r["none"] += 1
                continue
            ratio = work.time_us(k.target) / graph.time_us
            r["equal"] += abs(ratio - 1) < 1e-9
            r["ratios"].append((ratio, f"{key} on {target}"))
    return rows, time.time() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only")
    ap.add_argument("--match")
    args = ap.parse_args(argv)
    rows, secs = sweep(args.only, args.match)
    print("| kernel kind | kernels | no tile-IR figure | equal | walked / graph: min | median | max |")
    print("|---|---|---|---|---|---|---|")
    for kind, r in sorted(rows.items()):
        ratios = sorted(x for x, _ in r["ratios"])
        stats = ("-", "-", "-") if not ratios else (f"{ratios[0]:.2f}", f"{statistics.median(ratios):.2f}",
                                                     f"{ratios[-1]:.2f}")
        print(f"| {kind} | {r['n']} | {r['none']} | {r['equal']} | " + " | ".join(stats) + " |")
    print(f"\n{secs:.0f} s. Largest ratios:")
    everything = sorted((x for r in rows.values() for x in r["ratios"]), reverse=True)
    for ratio, where in everything[:8]:
        print(f"  {ratio:.2f}  {where}")
    print("Smallest:")
    for ratio, where in everything[-5:]:
        print(f"  {ratio:.2f}  {where}")


if __name__ == "__main__":
    main()

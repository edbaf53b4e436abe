"""GM traffic (measured by simulate) and compile latency of the Ascend C path.

    python benchmarks/ascendc.py            # prints the table and rewrites the Ascend C section of RESULTS.md

Traffic: bytes each kernel moves between GM and UB, counted by the CPU implementation
of the Ascend C API while the printed kernel runs; "unfused" is one kernel per op.
Compile latency: trace -> canonicalize -> fuse -> schedule -> Ascend C text, median of
warm runs (the compile cache is cleared before each run).
"""
from __future__ import annotations

import os
import re
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import fusedsl as fs  # noqa: E402


@fs.fused_kernel
def abs_add_relu(a, b):
    return fs.relu(fs.abs(a) + b)


@fs.fused_kernel
def chain6(x, s, t):
    return fs.leaky_relu((x * s + t) * fs.sigmoid(x) - x, 0.1)


def cases():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(128).astype(np.float32)
    b = rng.standard_normal((192, 128)).astype(np.float32)
    x = rng.standard_normal(1 << 20).astype(np.float32)
    return [("seed relu(abs(a)+b) 128 / 192x128 f32", abs_add_relu, (a, b), (a, b)),
            ("6-op chain 2^20 f32", chain6, (x, fs.scalar("s"), fs.scalar("t")), (x, 1.5, 0.5))]


def compile_latency(fn, specs, runs=15) -> float:
    times = []
    for _ in range(runs + 2):
        fn._cache.clear()
        start = time.perf_counter()
        fn.compile(*specs, target="ascend910b").source
        times.append(time.perf_counter() - start)
    return statistics.median(times[2:]) * 1e3


def main() -> str:
    rows = ["| case | kernels | GM min (B) | GM unfused (B) | GM fused, measured (B) | fused / min | "
            "compile ms (median) |", "|---|---|---|---|---|---|---|"]
    for title, fn, specs, args in cases():
        k = fn.compile(*specs, target="ascend910b")
        k.simulate(*args)
        rep = k.report()
        ms = compile_latency(fn, specs)
        rows.append(f"| {title} | {len(k.kernels)} | {rep.gm_bytes_min} | {rep.gm_bytes_unfused} | "
                    f"{rep.gm_bytes_measured} | {rep.gm_bytes_measured / rep.gm_bytes_min:.4f} | {ms:.1f} |")
    table = "\n".join(rows)
    print(table)
    return table


def write_results(table: str) -> None:
    path = os.path.join(os.path.dirname(__file__), "RESULTS.md")
    text = open(path).read() if os.path.exists(path) else "# Benchmark results\n"
    section = ("## Ascend C path\n\nCommand: `python benchmarks/ascendc.py` (target ascend910b; "
               "traffic counted by the CPU Ascend C API during simulate).\n\n" + table + "\n")
    if "## Ascend C path" in text:
        text = re.sub(r"## Ascend C path\n.*?(?=\n## |\Z)", section, text, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


if __name__ == "__main__":
    write_results(main())

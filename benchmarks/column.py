"""Column kernels (issue 21 item 5, FS116): reductions over axes before the last with their
producers and consumers, at [8192, 1024] float32.

    python benchmarks/column.py        # prints the table (paste it into RESULTS.md's "Column kernels")
    python benchmarks/column.py --no-simulate [--repeat N]   # the times alone (no g++ builds)

Programs: sum(x, 0); sum(x * x, 0) * w + 1; var(x, 0); mean(x, 0) with var(x, 0) (batch
statistics); sum(dy, (0, 1)) of [16, 512, 1024] (a bias gradient).
Kernels: the default partition (one column kernel) vs opt_level=0 (one kernel per op).
GM bytes (target ascend910b): the minimum (each input read once, each output written once),
the fused kernel's model, and simulate's measurement of the printed Ascend C on a smaller
shape ([512, 96], [4, 64, 96]) where the model and the measurement are compared exactly.
Time: kernel(*arrays) on this host (LLVM), medians of repeats in one run, vs numpy eager and
vs the one-kernel-per-op partition.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import fusedsl as fs  # noqa: E402
from optimised_code import wait_for_optimised_code  # noqa: E402

rng = np.random.default_rng(0)


def programs(big: bool):
    n, c = (8192, 1024) if big else (512, 96)
    x = rng.standard_normal((n, c)).astype(np.float32)
    w = rng.standard_normal(c).astype(np.float32)
    dy = rng.standard_normal((16, 512, 1024) if big else (4, 64, 96)).astype(np.float32)
    return [
        ("sum(x, 0)", lambda x: fs.sum(x, axis=0), (x,), lambda x: x.sum(0)),
        ("sum(x*x, 0)*w+1", lambda x, w: fs.sum(x * x, axis=0) * w + 1.0, (x, w),
         lambda x, w: (x * x).sum(0) * w + 1.0),
        ("var(x, 0)", lambda x: fs.var(x, axis=0), (x,), lambda x: x.var(0)),
        ("mean+var(x, 0)", lambda x: (fs.mean(x, axis=0), fs.var(x, axis=0)), (x,), lambda x: (x.mean(0), x.var(0))),
        ("sum(dy, (0, 1))", lambda d: fs.sum(d, axis=(0, 1)), (dy,), lambda d: d.sum((0, 1))),
    ]


REPEAT = 15


def median_ms(fn):
    fn()
    wait_for_optimised_code()
    times = []
    for _ in range(REPEAT):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def main(simulate=True):
    rows = []
    small = {name: (f, args) for name, f, args, _ in programs(False)}
    for name, f, args, ref in programs(True):
        fused = fs.fused_kernel(f).compile(*args)
        split = fs.fused_kernel(f, opt_level=0).compile(*args)
        sf, sa = small[name]
        k = fs.fused_kernel(sf, target="ascend910b").compile(*sa)
        if simulate:
            k.simulate(*sa)
        rep = k.report()
        t_fused = median_ms(lambda: fused(*args))
        t_split = median_ms(lambda: split(*args))
        t_np = median_ms(lambda: ref(*args))
        rows.append((name, len(fused.kernels), len(split.kernels), rep.gm_bytes_min, rep.gm_bytes_fused,
                     rep.gm_bytes_measured, t_fused, t_split, t_np))
    print("| program | kernels (fused / per op) | GM min | GM model | GM measured | measured / min "
          "| fused ms | per-op ms | numpy ms | per-op / fused | numpy / fused |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, kf, ks, gmin, gmod, gmeas, tf, ts, tn in rows:
        meas = f"{gmeas:,} | {gmeas / gmin:.3f}" if gmeas is not None else "not simulated | n/a"
        print(f"| {name} | {kf} / {ks} | {gmin:,} | {gmod:,} | {meas} | {tf:.2f} | {ts:.2f} "
              f"| {tn:.2f} | {ts / tf:.2f}x | {tn / tf:.2f}x |")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=REPEAT, help="calls timed per median")
    ap.add_argument("--no-simulate", action="store_true", help="skip simulate's GM measurement (no g++ builds)")
    opts = ap.parse_args()
    REPEAT = opts.repeat
    main(simulate=not opts.no_simulate)

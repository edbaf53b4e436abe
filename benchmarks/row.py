"""Row kernels (issue 7): softmax and rms_norm at [8192, 1024] float32.

    python benchmarks/row.py            # prints the table and rewrites the "Row kernels" section of RESULTS.md

Kernels: opt_level=2 (default: reductions are kernels of their own) and opt_level=3 (row
fusion: one row kernel) vs one kernel per op.  GM bytes: the minimum (each input read
once, each output written once) and the unfused model (every op reads and writes GM); the
row kernel is not printed as Ascend C yet, so no simulate-measured figure exists.
Time: medians of repeats in one run, kernel(*arrays) on the default executor vs numpy eager.
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


def softmax(x):
    m = fs.max(x, axis=-1, keepdims=True)
    e = fs.exp(x - m)
    return e / fs.sum(e, axis=-1, keepdims=True)


def rms_norm(x, w):
    return x * fs.rsqrt(fs.mean(x * x, axis=-1, keepdims=True) + 1e-6) * w


def np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_rms_norm(x, w):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w


def median_ms(f, args, repeat=7) -> float:
    f(*args)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f(*args)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def main() -> str:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8192, 1024)).astype(np.float32)
    w = rng.standard_normal(1024).astype(np.float32)
    rows = ["| case | opt_level | kernels fused / unfused | GM min (B) | GM fused, model (B) | GM unfused (B) | numpy eager ms | "
            "fusedsl kernel(*arrays) ms | vs numpy |", "|---|---|---|---|---|---|---|---|---|"]
    for (title, py, ref, args), opt in [(c, o) for c in [("softmax [8192,1024] f32", softmax, np_softmax, (x,)),
                                                          ("rms_norm [8192,1024] f32", rms_norm, np_rms_norm, (x, w))]
                                        for o in (2, 3)]:
        fn = fs.fused_kernel(py, opt_level=opt)
        k = fn.compile(*args)
        rep = k.report()
        np.testing.assert_allclose(fn(*args), ref(*args), rtol=1e-4, atol=1e-5)
        t_np, t_fs = median_ms(ref, args), median_ms(fn, args)
        kinds = ", ".join(sorted({p.kind for p in k.kernels}))
        rows.append(f"| {title} | {opt} | {len(k.kernels)} ({kinds}) / {rep.model_kernels_unfused} | "
                    f"{rep.gm_bytes_min} | {rep.gm_bytes_fused} | {rep.gm_bytes_unfused} | {t_np:.1f} | {t_fs:.1f} | {t_np / t_fs:.2f}x |")
    table = "\n".join(rows)
    print(table)
    return table


def write_results(table: str) -> None:
    path = os.path.join(os.path.dirname(__file__), "RESULTS.md")
    text = open(path).read() if os.path.exists(path) else "# Benchmark results\n"
    section = ("## Row kernels\n\nCommand: `python benchmarks/row.py` (row kernels run on the numpy "
               "reference inside one call until their schedule and LLVM lowering land; medians of one run "
               "on a shared 2-core machine).\n\n" + table + "\n")
    if "## Row kernels" in text:
        text = re.sub(r"## Row kernels\n.*?(?=\n## |\Z)", section, text, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


if __name__ == "__main__":
    write_results(main())

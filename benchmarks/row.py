"""Row kernels (issue 7): softmax, layer_norm+gelu and rms_norm at [8192, 1024] float32
(and softmax, rms_norm as 8 rows of 4 MB, beyond the cache).

    python benchmarks/row.py            # prints the table and rewrites the "Row kernels" section of RESULTS.md
    python benchmarks/row.py --no-simulate --no-write [--repeat N]   # the times alone, printed only

Kernels: the default partition (row fusion: one row kernel, run natively by the LLVM
backend) vs the split partition (disable_passes=['row-fusion']) vs one kernel per op.
GM bytes: the minimum (each input read once, each output written once), the fused kernel's
traffic as measured by simulate (the printed Ascend C run on the CPU implementation of the
API, target ascend910b) and the unfused model (every op reads and writes GM); rows bigger
than UB are not printed as Ascend C yet (the single-read plan only), so they have no
measured figure.
Time: medians of repeats in one run, ratios from the same run: kernel(*arrays) vs numpy
eager vs a hand-fused numba loop (one parallel loop over rows, fastmath so that numba
vectorises its reductions; numba is a benchmark-only dependency, skipped if missing).
"""
from __future__ import annotations

import argparse
import math
import os
import re
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import fusedsl as fs  # noqa: E402
from optimised_code import wait_for_optimised_code  # noqa: E402

EPS_LN, EPS_RMS = 1e-5, 1e-6
GELU_C = 2.0 * math.sqrt(2.0 / math.pi)


def softmax(x):
    m = fs.max(x, axis=-1, keepdims=True)
    e = fs.exp(x - m)
    return e / fs.sum(e, axis=-1, keepdims=True)


def layer_norm_gelu(x, w, b):
    return fs.gelu(fs.layer_norm(x, w, b, eps=EPS_LN))


def rms_norm(x, w):
    return x * fs.rsqrt(fs.mean(x * x, axis=-1, keepdims=True) + EPS_RMS) * w


def np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_layer_norm_gelu(x, w, b):
    d = x - x.mean(-1, keepdims=True)
    y = d / np.sqrt((d * d).mean(-1, keepdims=True) + EPS_LN) * w + b
    with np.errstate(over="ignore"):   # exp(+large) = inf gives the right 0 of the negative tail
        return y / (1 + np.exp(-GELU_C * (y + 0.044715 * y * y * y)))   # tanh-form gelu as x*sigmoid(2u)


def np_rms_norm(x, w):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + EPS_RMS) * w


def numba_kernels():
    """Hand-fused loops: per row, the reductions then the epilogue, rows in parallel, into a
    preallocated output (as kernel(*arrays) reuses its pooled result buffer)."""
    try:
        import numba
    except ImportError:
        return {}
    jit = numba.njit(parallel=True, fastmath=True, cache=False)

    @jit
    def nb_softmax(x, out):
        for r in numba.prange(x.shape[0]):
            row = x[r]
            m = row[0]
            for v in row:
                m = max(m, v)
            s = np.float32(0)
            for j in range(row.shape[0]):
                e = np.exp(row[j] - m)
                out[r, j] = e
                s += e
            inv = np.float32(1) / s
            for j in range(row.shape[0]):
                out[r, j] *= inv
        return out

    @jit
    def nb_layer_norm_gelu(x, w, b, out):
        n = x.shape[1]
        for r in numba.prange(x.shape[0]):
            row = x[r]
            s = np.float32(0)
            for v in row:
                s += v
            mu = s / n
            q = np.float32(0)
            for v in row:
                q += (v - mu) * (v - mu)
            rstd = np.float32(1) / np.sqrt(q / n + np.float32(EPS_LN))
            for j in range(n):
                y = (row[j] - mu) * rstd * w[j] + b[j]
                out[r, j] = y / (np.float32(1) + np.exp(np.float32(-GELU_C) * (y + np.float32(0.044715) * y * y * y)))
        return out

    @jit
    def nb_rms_norm(x, w, out):
        n = x.shape[1]
        for r in numba.prange(x.shape[0]):
            row = x[r]
            q = np.float32(0)
            for v in row:
                q += v * v
            k = np.float32(1) / np.sqrt(q / n + np.float32(EPS_RMS))
            for j in range(n):
                out[r, j] = row[j] * k * w[j]
        return out

    return {"softmax": nb_softmax, "layer_norm+gelu": nb_layer_norm_gelu, "rms_norm": nb_rms_norm}


REPEAT = 15


def median_ms(f, args) -> float:
    f(*args)
    wait_for_optimised_code()
    times = []
    for _ in range(REPEAT):
        t = time.perf_counter()
        f(*args)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def main(simulate: bool = True) -> str:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8192, 1024)).astype(np.float32)
    w = rng.standard_normal(1024).astype(np.float32)
    b = rng.standard_normal(1024).astype(np.float32)
    nb = numba_kernels()
    # the same 8M elements as 8 rows of 4 MB: rows far beyond L2 (and any UB), walked from memory
    xl = x.reshape(8, -1)
    wl = rng.standard_normal(xl.shape[1]).astype(np.float32)
    cases = [("softmax", softmax, np_softmax, (x,)),
             ("layer_norm+gelu", layer_norm_gelu, np_layer_norm_gelu, (x, w, b)),
             ("rms_norm", rms_norm, np_rms_norm, (x, w)),
             ("softmax [8,1048576]", softmax, np_softmax, (xl,)),
             ("rms_norm [8,1048576]", rms_norm, np_rms_norm, (xl, wl))]
    rows = ["| case (f32, [8192,1024] unless given) | kernels row / split / unfused | GM min (B) | GM fused, measured (B) | "
            "fused / min | GM unfused (B) | numpy eager ms | numba hand-fused ms | fusedsl split ms | fusedsl row kernel ms | "
            "row vs numpy | row vs numba |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for title, py, ref, args in cases:
        fused = fs.fused_kernel(py)
        split = fs.fused_kernel(py, disable_passes=["row-fusion"])
        k, ks = fused.compile(*args), split.compile(*args)
        want = ref(*args)
        measured, ratio = "not printed (row > UB)", "n/a"
        if not simulate:
            measured = "not simulated"
        elif k.kernels[0].row is not None and k.kernels[0].error is None:
            np.testing.assert_allclose(k.simulate(*args), want, rtol=2e-4, atol=2e-5)
            measured = k.report().gm_bytes_measured
            ratio = f"{measured / k.report().gm_bytes_min:.4f}"
        rep = k.report()
        np.testing.assert_allclose(fused(*args), want, rtol=2e-4, atol=2e-5)
        np.testing.assert_allclose(split(*args), want, rtol=2e-4, atol=2e-5)
        t_np = median_ms(ref, args)
        t_nb = None
        nb_fn = nb.get(title.split(" ")[0])
        if nb_fn is not None:
            nb_args = args + (np.empty_like(args[0]),)
            # (a million-term float32 sum in numba's few accumulators drifts by ~2e-4)
            np.testing.assert_allclose(nb_fn(*nb_args), want, rtol=1e-3, atol=2e-5)
            t_nb = median_ms(nb_fn, nb_args)
        t_split, t_row = median_ms(split, args), median_ms(fused, args)
        nb_col = f"{t_nb:.2f}" if t_nb else "n/a"
        vs_nb = f"{t_nb / t_row:.2f}x" if t_nb else "n/a"
        rows.append(f"| {title} | {len(k.kernels)} ({k.kernels[0].kind}) / {len(ks.kernels)} / "
                    f"{rep.model_kernels_unfused} | {rep.gm_bytes_min} | {measured} | {ratio} | {rep.gm_bytes_unfused} | "
                    f"{t_np:.2f} | {nb_col} | {t_split:.2f} | {t_row:.2f} | {t_np / t_row:.2f}x | {vs_nb} |")
    table = "\n".join(rows)
    print(table)
    return table


def write_results(table: str) -> None:
    path = os.path.join(os.path.dirname(__file__), "RESULTS.md")
    text = open(path).read() if os.path.exists(path) else "# Benchmark results\n"
    section = ("## Row kernels\n\nCommand: `python benchmarks/row.py` (kernel(*arrays) on the LLVM backend, "
               "both host threads; "
               "numba `parallel=True, fastmath=True`; medians of 15 calls in one run on a shared 2-core "
               "AVX2 machine, ratios from the same run). numba's `np.exp` stays a scalar call here "
               "(no SVML), most of its softmax and gelu time; the split column is the same kernel with "
               "`disable_passes=['row-fusion']`. The [8,1048576] rows (4 MB each, beyond L2 and any UB) "
               "run the same phases from memory (x read once per phase that reads it, the exp row kept in a "
               "per-thread scratch row). GM measured: simulate of the printed Ascend C (ascend910b), one run.\n\n"
               + table + "\n")
    if "## Row kernels" in text:
        text = re.sub(r"## Row kernels\n.*?(?=\n## |\Z)", section, text, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=REPEAT, help="calls timed per median")
    ap.add_argument("--no-simulate", action="store_true", help="skip simulate's GM measurement (no g++ builds)")
    ap.add_argument("--no-write", action="store_true", help="print the table only, RESULTS.md untouched")
    opts = ap.parse_args()
    REPEAT = opts.repeat
    table = main(simulate=not opts.no_simulate)
    if not opts.no_write:
        write_results(table)

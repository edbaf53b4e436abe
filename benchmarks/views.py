"""GM traffic of views fused into CopyIn/CopyOut addressing (slice / concatenate / take).

For each case: the bytes the fused kernel moves, measured by `simulate` (the CPU Ascend C
API counts every GM byte read and written), against the minimum (the elements the result
needs, read once, and the result written once), the partition before views fused (views
as kernels of their own, `disable_passes=["views"]`: each kernel reads its inputs and writes
its outputs; a take kernel reads the indices and the gathered rows) and the fully unfused
graph (every op a kernel).  Also the LLVM executor's time vs numpy eager, medians of one run.

    python benchmarks/views.py [--target ascend910b] [--repeat 7]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import fusedsl as fs  # noqa: E402
from optimised_code import wait_for_optimised_code  # noqa: E402


@fs.fused_kernel
def concat_slice(a, b):
    return fs.relu(fs.concatenate([a, b], 1))[:, 8:40]


@fs.fused_kernel
def embed_bias_relu(table, ids, bias):
    return fs.relu(fs.take(table, ids) + bias)


def _kernel_bytes(compiled) -> int:
    """Bytes each kernel of a partition reads and writes (a take reads only gathered rows)."""
    total = 0
    for p in compiled.kernels:
        fn = p.function
        for op in fn.ops:
            if op.name == "take" and len(fn.ops) == 1:
                table, idx = op.operands
                n = int(np.prod(idx.shape))
                total += n * idx.dtype.itemsize + n * table.shape[1] * table.dtype.itemsize
                break
        else:
            total += sum(int(np.prod(q.value.shape)) * q.value.dtype.itemsize for q in fn.params)
        total += sum(int(np.prod(v.shape)) * v.dtype.itemsize for v in fn.results)
    return total


def _median_ms(fn, repeat):
    fn()
    wait_for_optimised_code()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2] * 1e3


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="ascend910b")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    R = 4096
    a = rng.standard_normal((R, 24)).astype(np.float32)
    b = rng.standard_normal((R, 40)).astype(np.float32)
    table = rng.standard_normal((50000, 64)).astype(np.float32)
    ids = rng.integers(0, 50000, 8192).astype(np.int32)
    bias = rng.standard_normal(64).astype(np.float32)
    cases = [
        (f"relu(concatenate([a,b],1))[:, 8:40], a [{R},24], b [{R},40] f32", concat_slice, (a, b),
         R * 32 * 4 * 2, lambda: np.maximum(np.concatenate([a, b], 1), 0)[:, 8:40]),
        ("relu(take(table, ids) + bias), table [50000,64], 8192 ids, f32", embed_bias_relu, (table, ids, bias),
         8192 * 4 + 8192 * 64 * 4 + 64 * 4 + 8192 * 64 * 4, lambda: np.maximum(table[ids] + bias, 0)),
    ]
    print(f"target {args.target}; GM bytes measured by simulate (CPU Ascend C API); times: medians of "
          f"{args.repeat}, this machine")
    print("| case | kernels now (before) | GM min (B) | GM now, measured (B) | now / min | GM before views "
          "fused (B) | GM unfused (B) | LLVM kernel(*arrays) | numpy eager |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, kern, xs, minimum, eager in cases:
        k = kern.compile(*xs, target=args.target)
        before = kern.compile(*xs, target=args.target, disable_passes=["views"])
        out = k.simulate(*xs)
        np.testing.assert_allclose(out, eager(), rtol=1e-6)
        np.testing.assert_allclose(kern(*xs), eager(), rtol=1e-6)
        rep = k.report()
        measured = rep.gm_bytes_measured
        t_fs = _median_ms(lambda: kern(*xs), args.repeat)
        t_np = _median_ms(eager, args.repeat)
        print(f"| {name} | {len(k.kernels)} ({len(before.kernels)}) | {minimum} | {measured} | "
              f"{measured / minimum:.4f} | {_kernel_bytes(before)} | {rep.gm_bytes_unfused} | {t_fs:.3f} ms | "
              f"{t_np:.3f} ms |")


if __name__ == "__main__":
    main()

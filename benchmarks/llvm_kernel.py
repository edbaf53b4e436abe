"""The one LLVM lowering of the tile IR (backend_cpu/llvm_kernel.py) against today's per-kind CPU
executors, kernel by kernel (issue 19).

For each representative kernel of a kind -- a concatenation (view), a column sum (column),
softmax (row), an elementwise chain (vector), a 2-D transpose (transpose), matmul + relu
(cube, [R, 1024] @ [1024, 256]) -- at inputs of 64 KB to 64 MB: the median time of `k(*arrays)` (what runs today: llvm.py / llvm_view.py /
llvm_reduce.py / llvm_row.py / transpose.py / cube.py) and of `TileKernelCpu(kernel_ir).run(...)` on the
same arrays (bound once, outputs preallocated), their ratio, and the LLVM compile time of each (a fresh
cache folder: the first call minus a steady call for today's executor, the constructor for
llvm_kernel; where a kernel's IR holds no sizes -- vector, view, row -- the larger sizes reuse the
first size's module, so only the first size's compile is cold).  The two calls are timed
interleaved, `--repeat` times each.  Both check their result against numpy once.

    python benchmarks/llvm_kernel.py [--repeat 7] [--sizes 64K,1M,16M,64M] [--cases view,column,...]
    python benchmarks/llvm_kernel.py --without-copyout --cases elementwise

`--without-copyout` also times llvm_kernel's kernel with its CopyOut DMAs removed (the outputs are
then not written: a bound on what computing the last stmt straight into GM could save).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import time

import numpy as np

os.environ.setdefault("FUSEDSL_CACHE_DIR", tempfile.mkdtemp(prefix="fusedsl-bench-"))   # cold compiles
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import fusedsl as fs  # noqa: E402
from fusedsl.backend_cpu.kernel_cpu import TileKernelCpu  # noqa: E402
from fusedsl.lower.kinds import kernel_ir, kernel_words  # noqa: E402
from fusedsl.tile.kernel import CopyOut  # noqa: E402

SIZES = {"64K": 64 << 10, "1M": 1 << 20, "16M": 16 << 20, "64M": 64 << 20}


def _rows(nbytes: int, cols: int = 1024) -> int:
    return max(1, nbytes // 4 // cols)


def _side(nbytes: int) -> int:
    return int(round((nbytes / 4) ** 0.5))


CASES = {   # name -> (kind, function, arrays for an input of n bytes, numpy)
    "view": ("view", lambda a, b: fs.concatenate([a, b], axis=1),
             lambda n, g: [g.standard_normal((_rows(n), 1024), np.float32),
                           g.standard_normal((_rows(n), 1000), np.float32)],
             lambda a, b: np.concatenate([a, b], axis=1)),
    "column": ("column", lambda x: fs.sum(x, 0),
               lambda n, g: [g.standard_normal((_rows(n), 1024), np.float32)], lambda x: x.sum(0)),
    "softmax": ("row", lambda x: fs.softmax(x),
                lambda n, g: [g.standard_normal((_rows(n), 1024), np.float32)],
                lambda x: np.exp(x - x.max(-1, keepdims=True)) / np.exp(x - x.max(-1, keepdims=True)).sum(-1,
                                                                                                        keepdims=True)),
    "elementwise": ("vector", lambda x, y: fs.relu(x * y + 1.0) * 2.0 - y,
                    lambda n, g: [g.standard_normal((_rows(n), 1024), np.float32),
                                  g.standard_normal((_rows(n), 1024), np.float32)],
                    lambda x, y: np.maximum(x * y + 1, 0) * 2 - y),
    "transpose": ("transpose", lambda x: fs.transpose(x, (1, 0)),
                  lambda n, g: [g.standard_normal((_side(n), _side(n)), np.float32)], lambda x: x.T),
    "matmul": ("cube", lambda a, b: fs.relu(a @ b),
               lambda n, g: [g.standard_normal((_rows(n), 1024), np.float32),
                             g.standard_normal((1024, 256), np.float32)], lambda a, b: np.maximum(a @ b, 0)),
}


def _medians(fns, repeat: int) -> list[float]:
    """Median seconds of each call, the calls interleaved (this host is shared: load drifts)."""
    times = [[] for _ in fns]
    for fn in fns:
        fn()
    for _ in range(repeat):
        for fn, ts in zip(fns, times):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
    return [sorted(ts)[len(ts) // 2] for ts in times]


def _without_copyout(k):
    """The kernel with its top-level CopyOut nodes removed (its outputs are not written)."""
    stages = [dataclasses.replace(st, body=tuple(n for n in st.body if not isinstance(n, CopyOut))) for st in k.stages]
    return dataclasses.replace(k, stages=stages)


def measure(name: str, nbytes: int, repeat: int, without_copyout: bool = False) -> dict:
    kind, f, make, ref = CASES[name]
    g = np.random.default_rng(0)
    args = make(nbytes, g)
    comp = fs.fused_kernel(f).compile(*args)
    (plan,) = comp.kernels
    k = kernel_ir(plan.lowered)
    assert k.kind == kind, (name, k.kind)
    want = ref(*args)
    t0 = time.perf_counter()
    first = comp(*args)
    first_s = time.perf_counter() - t0
    np.testing.assert_allclose(first, want, rtol=1e-4, atol=1e-4)

    words = kernel_words(plan.lowered, plan.tiling)
    cpu = TileKernelCpu(k)
    names = f.__code__.co_varnames[:f.__code__.co_argcount]
    inputs = [dict(zip(names, args))[p.value.name] for p in plan.function.params]
    out = np.empty(want.shape, np.float32)
    cpu.run(inputs, [out], words)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
    # bound once, as today's program binds its kernels on its first call
    calls = [lambda: comp(*args), cpu.bind(inputs, [out], words)]
    if without_copyout:
        calls.append(TileKernelCpu(_without_copyout(k)).bind(inputs, [np.empty_like(out)], words))
    today, new, *bound = _medians(calls, repeat)
    return {"case": name, "kind": kind, "executor": comp.executor(plan), "bytes": nbytes, "today": today,
            "new": new, "today_compile": max(0.0, first_s - today), "new_compile": cpu.compile_seconds,
            "without_copyout": bound[0] if bound else None}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--sizes", default=",".join(SIZES))
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--without-copyout", action="store_true")
    a = ap.parse_args(argv)
    print(f"threads: {os.environ.get('FUSEDSL_NUM_THREADS', len(os.sched_getaffinity(0)))}, repeat {a.repeat}, "
          f"cache {os.environ['FUSEDSL_CACHE_DIR']}")
    print(f"| kernel | kind (today's executor) | input | today ms | llvm_kernel ms | ratio | "
          f"compile today ms | compile llvm_kernel ms |")
    print("|---|---|---|---|---|---|---|---|")
    for name in a.cases.split(","):
        for size in a.sizes.split(","):
            r = measure(name, SIZES[size], a.repeat, a.without_copyout)
            extra = "" if r["without_copyout"] is None else f" without CopyOut {r['without_copyout'] * 1e3:.3f} ms |"
            print(f"| {name} | {r['kind']} ({r['executor']}) | {size}B | {r['today'] * 1e3:.3f} | {r['new'] * 1e3:.3f} | "
                  f"{r['new'] / r['today']:.2f} | {r['today_compile'] * 1e3:.0f} | {r['new_compile'] * 1e3:.0f} |{extra}",
                  flush=True)


if __name__ == "__main__":
    main()

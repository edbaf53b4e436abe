"""The quick tier of the tiered compiles (backend_cpu/jit.py): what a kernel's quick compile costs and
how fast its quick code runs, for one or several lists of quick passes.

    python benchmarks/quick_tier.py [--rounds 3] [--repeat 30] [--kernels views,softmax,...]
                                    [--passes "now=;old=sroa,instruction_combine,...|"]

Each kernel is compiled in a fresh process with FUSEDSL_JIT_TIERS=quick (the quick code only, never
upgraded) on a fresh cache folder; "compile" is the CPU time of `jit.quick_object` at its first call
(the LLVM passes and the code generator; the first kernel of a process pays LLVM's one-time costs
too, so each process compiles one kernel), "run" the median wall time of `k(*arrays)` over `--repeat`
calls after it.  `--passes` names pass lists (`name=pass,pass,...`, separated by `;`; an empty list:
jit.QUICK_PASSES as it is), each optionally followed by `|` and the code generator's flags
(`-flag:-flag=reset` pairs joined by `+`; nothing after `|`: none; no `|`: jit.QUICK_CODEGEN as it
is); each round runs every kernel under every list in turn (a shared host's load falls on all
alike), medians over the rounds.  The result's bytes must be the same under every list (the passes
and flags may not change a bit).
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
import hashlib, json, sys, time
import numpy as np
import fusedsl as fs
from fusedsl.backend_cpu import jit
name, passes, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])
passes, bar, flags = passes.partition("|")
if passes:
    jit.QUICK_PASSES = tuple(passes.split(","))
if bar:
    jit.QUICK_CODEGEN = tuple(tuple(f.split(":", 1)) for f in flags.split("+") if f)
spent = [0.0]
quick_object = jit.quick_object
def timed(text):
    t = time.process_time()
    try:
        return quick_object(text)
    finally:
        spent[0] += time.process_time() - t
jit.quick_object = timed
g = np.random.default_rng(0)
f32 = lambda *s: g.standard_normal(s).astype(np.float32)
f16 = lambda *s: f32(*s).astype(np.float16)
kernels = {
    "views": (lambda p, q: fs.relu(fs.concatenate([p, q], 1))[:, 8:1000] * 2.0, lambda: (f32(64, 512), f32(64, 512))),
    "views_2k": (lambda p, q: fs.relu(fs.concatenate([p, q], 1))[:, 8:1000] * 2.0, lambda: (f32(2048, 512), f32(2048, 512))),
    "concat_slice": (lambda p, q: fs.relu(fs.concatenate([p, q], 1))[:, 8:40], lambda: (f32(4096, 256), f32(4096, 256))),
    "take": (lambda t, i, b: fs.relu(fs.take(t, i) + b), lambda: (f32(1000, 256), g.integers(0, 1000, 4096).astype(np.int32), f32(256))),
    "seed": (lambda a, b: fs.relu(fs.abs(a) + b), lambda: (f32(128), f32(192, 128))),
    "chain": (lambda p, q: fs.gelu(p) * fs.sigmoid(q) + fs.tanh(p - q), lambda: (f32(256, 1024), f32(256, 1024))),
    "softmax": (lambda v: fs.softmax(v, axis=-1), lambda: (f32(256, 1024),)),
    "transpose": (lambda v: fs.transpose(v) * 2.0, lambda: (f32(1024, 1024),)),
    "axpy_f16": (lambda p, q: p * 0.5 + q, lambda: (f16(1024, 1024), f16(1024, 1024))),
    "matmul_gelu_f16": (lambda p, q: fs.gelu(fs.matmul(p, q)), lambda: (f16(256, 512), f16(512, 256))),
    "rms_norm_f16": (lambda v, w: fs.rms_norm(v, w), lambda: (f16(256, 1024), f16(1024))),
    "matmul_relu": (lambda p, q: fs.relu(fs.matmul(p, q)), lambda: (f32(512, 512), f32(512, 512))),
    "column_sum": (lambda v: fs.sum(v, axis=0), lambda: (f32(1024, 1024),)),
    "layer_norm": (lambda v, w, b: fs.layer_norm(v, w, b), lambda: (f32(256, 1024), f32(1024), f32(1024))),
    "permute": (lambda v: fs.permute(v, (0, 2, 1)) + 1.0, lambda: (f32(16, 256, 256),)),
    "attention": (lambda q, k, v: fs.attention(q, k, v), lambda: tuple(f32(1, 8, 256, 64) for _ in range(3))),
}
f, make = kernels[name]
args = make()
k = fs.fused_kernel(f)
out = k(*args)
compile_s = spent[0]
times = []
for _ in range(repeat):
    t = time.perf_counter()
    k(*args)
    times.append(time.perf_counter() - t)
print(json.dumps({"compile_s": compile_s, "run_s": sorted(times)[len(times) // 2],
                  "bytes": hashlib.sha256(np.ascontiguousarray(out).tobytes()).hexdigest()}))
"""

KERNELS = ("views,views_2k,concat_slice,take,seed,chain,softmax,transpose,axpy_f16,matmul_gelu_f16,"
           "rms_norm_f16,matmul_relu,column_sum,layer_norm,permute,attention")


def _run(kernel: str, passes: str, repeat: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="fusedsl-quick-tier-") as cache:
        env = dict(os.environ, FUSEDSL_CACHE_DIR=cache, FUSEDSL_JIT_TIERS="quick")
        out = subprocess.run([sys.executable, "-c", _CHILD, kernel, passes, str(repeat)], env=env,
                             capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--kernels", default=KERNELS)
    ap.add_argument("--passes", default="now=")
    a = ap.parse_args(argv)
    lists = [tuple(p.split("=", 1)) for p in a.passes.split(";")]
    kernels = a.kernels.split(",")
    got: dict = {}
    for _ in range(a.rounds):
        for kernel in kernels:
            for label, passes in lists:
                got.setdefault((kernel, label), []).append(_run(kernel, passes, a.repeat))
    print("| kernel | " + " | ".join(f"{label}: compile ms / run us" for label, _ in lists) + " | same bytes |")
    print("|---|" + "---|" * (len(lists) + 1))
    for kernel in kernels:
        cells = []
        for label, _ in lists:
            rs = got[(kernel, label)]
            cells.append(f"{1e3 * statistics.median(r['compile_s'] for r in rs):.1f} / "
                         f"{1e6 * statistics.median(r['run_s'] for r in rs):.1f}")
        same = len({r["bytes"] for label, _ in lists for r in got[(kernel, label)]}) == 1
        print(f"| {kernel} | " + " | ".join(cells) + f" | {'yes' if same else 'NO'} |")


if __name__ == "__main__":
    main()

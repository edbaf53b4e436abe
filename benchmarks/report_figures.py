"""The report's figures against simulate's measurement, one row per kernel kind (issue 21 item 1).

    python benchmarks/report_figures.py [--target ascend910b]

For each kind: the kernel's blockDim as the table, the plan line and the model line give it
(one source: the kernel's own tiling), the modelled GM bytes against the bytes simulate counts
on the printed Ascend C, the unfused figure against simulate of the opt_level=0 program, and
the one modelled time.
"""
from __future__ import annotations

import argparse
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import fusedsl as fs  # noqa: E402

rng = np.random.default_rng(21)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


CASES = [
    ("vector relu(abs(a)+b) 128 / 192x128", lambda a, b: fs.relu(fs.abs(a) + b), (f32(128), f32(192, 128))),
    ("view relu(concat)[:, 8:40] 256x64", lambda a, b: fs.relu(fs.concatenate([a, b], 1))[:, 8:40],
     (f32(256, 24), f32(256, 40))),
    ("row layer_norm [64,256]", lambda x, g, b: fs.layer_norm(x, g, b), (f32(64, 256), f32(256), f32(256))),
    ("row layer_norm [1024,256]", lambda x, g, b: fs.layer_norm(x, g, b), (f32(1024, 256), f32(256), f32(256))),
    ("column sum(x, 0) [512,96]", lambda x: fs.sum(x, axis=0), (f32(512, 96),)),
    ("cube gelu(x@w+b) 128x64x96", lambda x, w, b: fs.gelu(x @ w + b), (f32(128, 64), f32(64, 96), f32(96))),
    ("conv relu(conv2d+b) [2,16,17,19] K32", lambda x, w, b: fs.relu(fs.conv2d(x, w, padding=1) + b.reshape(1, -1, 1, 1)),
     (f32(2, 16, 17, 19), f32(32, 16, 3, 3), f32(32))),
]


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="ascend910b")
    args = ap.parse_args(argv)
    print("| case | kernels | blockDim: table / plan / model | GM model (B) | GM measured (B) | unfused model (B) | "
          "unfused measured, opt_level=0 (B) | modelled us fused / unfused |")
    print("|---|---|---|---|---|---|---|---|")
    for name, fn, a in CASES:
        k = fs.fused_kernel(fn).compile(*a, target=args.target)
        k.simulate(*a)
        rep = k.report()
        k0 = fs.fused_kernel(fn, opt_level=0).compile(*a, target=args.target)
        try:
            k0.simulate(*a)
            unf = k0.report().gm_bytes_measured
        except fs.FusedslError:
            unf = None
        bds = []
        for r in rep.kernels:
            m = re.search(r"blockDim (\d+)", r.plan or "")
            bds.append(f"{r.block_dim} / {m.group(1) if m else '-'} / {r.model.block_dim}")
        print(f"| {name} | {len(rep.kernels)} | {'; '.join(bds)} | {rep.gm_bytes_fused} | {rep.gm_bytes_measured} | "
              f"{rep.gm_bytes_unfused} | {unf if unf is not None else 'not printed'} | "
              f"{rep.model_time_us_fused:.2f} / {rep.model_time_us_unfused:.2f} |")


if __name__ == "__main__":
    main()

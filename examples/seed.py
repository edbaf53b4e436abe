"""The seed kernel: relu(abs(a) + b) with a row vector a[128] broadcast over b[192, 128].

The main job of fusedsl, end to end on a machine without an NPU:
  1. trace the kernel and print its IR,
  2. compile it to Ascend C for ascend910b (one fused kernel) and save a CANN project,
  3. run the printed Ascend C on fusedsl's CPU implementation of the Ascend C API
     (with its hardware checks) and compare with numpy; also the CPU executor,
  4. print the report: kernels, tiles, UB plan and GM traffic.
Exits non-zero on any mismatch.

    python examples/seed.py [output-dir]     (default: a temporary directory, removed at exit)
"""
import os
import sys
import tempfile

import numpy as np

import fusedsl as fs


@fs.fused_kernel
def abs_add_relu(a, b):
    return fs.relu(fs.abs(a) + b)


def main() -> int:
    if len(sys.argv) > 1:
        return run(sys.argv[1])
    # A fresh directory by default (fusedsl never writes into a directory it did not create, so a
    # fixed path such as /tmp/fusedsl_seed would fail once anything else lives there), removed at
    # exit so that runs leave nothing behind: pass a directory to keep the project.
    with tempfile.TemporaryDirectory(prefix="fusedsl_seed-") as tmp:
        return run(os.path.join(tmp, "abs_add_relu"))


def run(out_dir: str) -> int:
    rng = np.random.default_rng(0)
    a = rng.standard_normal(128).astype(np.float32)
    b = rng.standard_normal((192, 128)).astype(np.float32)
    want = np.maximum(np.abs(a) + b, 0)

    print(abs_add_relu.trace(a, b))

    k = abs_add_relu.compile(fs.spec((128,), "float32"), fs.spec(("M", 128), "float32"), target="ascend910b")
    path = k.save(out_dir)
    kept = "" if len(sys.argv) > 1 else " (a temporary folder, removed at exit: pass a folder to keep it)"
    print(f"Ascend C project ({len(k.kernels)} kernel) written to {path}{kept}: {', '.join(sorted(os.listdir(path)))}")

    simulated = k.simulate(a, b)
    executed = abs_add_relu(a, b)
    for name, got in (("simulated Ascend C", simulated), ("CPU executor", executed)):
        if got.shape != want.shape or not np.allclose(got, want, rtol=1e-6, atol=0):
            print(f"MISMATCH ({name}): max abs error {np.max(np.abs(got - want))}", file=sys.stderr)
            return 1
        print(f"{name}: abs_add_relu{a.shape} + {b.shape} -> {got.shape} {got.dtype} matches numpy")
    print(k.report())
    return 0


if __name__ == "__main__":
    sys.exit(main())

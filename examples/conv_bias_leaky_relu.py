"""Conv2D + BiasAdd + LeakyReLU in ten lines: the fusion Ascend operator developers write by hand.

fusedsl fuses the convolution, the bias and the activation into ONE cube kernel (reason FS100:
`single_kernel=True` asks for exactly that), so the conv result stays on chip and GM sees one
write. The kernel prints as Ascend C (im2col per core into a GM panel, the Matmul API, bias and
LeakyReLU on each C tile in UB) and runs three ways, each checked against numpy: the printed
Ascend C on fusedsl's CPU implementation of the API (`simulate`, which also measures the GM
bytes), and the CPU executor (BLAS per tap, the epilogue per block). The report compares the
measured GM traffic with the three unfused kernels. Exits non-zero on a mismatch.

    python examples/conv_bias_leaky_relu.py
"""
import sys

import numpy as np

import fusedsl as fs


@fs.fused_kernel(target="ascend910b", single_kernel=True)
def conv_bias_leaky_relu(x, w, b):
    return fs.leaky_relu(fs.conv2d(x, w, b, stride=1, padding=1), 0.1)


def numpy_reference(x, w, b, alpha=0.1):
    """im2col + matmul, then bias and leaky_relu, in float64."""
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    cols = np.stack([xp[:, :, i:i + h, j:j + wd] for i in range(r) for j in range(s)], axis=2)  # n c rs h w
    y = np.einsum("ncphw,kcp->nkhw", cols, w.reshape(k, c, r * s).astype(np.float64)) + b[None, :, None, None]
    return np.where(y >= 0, y, alpha * y)


def main() -> int:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 16, 28, 28)).astype(np.float32)
    w = (rng.standard_normal((32, 16, 3, 3)) * 0.1).astype(np.float32)
    b = rng.standard_normal(32).astype(np.float32)

    k = conv_bias_leaky_relu.compile(x, w, b)
    print(f"{len(k.kernels)} kernel: {k.kernels[0].kind} ({', '.join(k.kernels[0].ops)}), "
          f"reason {k.kernels[0].reason_code}")
    want = numpy_reference(x, w, b)
    y = conv_bias_leaky_relu(x, w, b)
    err = float(np.max(np.abs(y - want)))
    y_npu = k.simulate(x, w, b)   # the printed Ascend C, on the CPU implementation of the API
    err_npu = float(np.max(np.abs(y_npu - want)))
    if y.shape != (2, 32, 28, 28) or max(err, err_npu) > 1e-4:
        print(f"MISMATCH: max abs error {err} (CPU executor), {err_npu} (Ascend C)", file=sys.stderr)
        return 1
    print(f"CPU executor: {x.shape} * {w.shape} -> {y.shape} matches numpy (max abs error {err:.1e})")
    print(f"Ascend C on the CPU API: matches numpy (max abs error {err_npu:.1e})")
    report = k.report()
    print(report)
    # the same function as the three kernels an unfused compiler makes (opt_level=0), measured too
    unfused = fs.fused_kernel(conv_bias_leaky_relu.fn, target="ascend910b", opt_level=0).compile(x, w, b)
    unfused.simulate(x, w, b)
    split = unfused.report().gm_bytes_measured
    print(f"GM bytes measured by simulate: one kernel {report.gm_bytes_measured}, the {len(unfused.kernels)} "
          f"unfused kernels {split} ({report.gm_bytes_measured / split:.2f}x)")
    print(f"Ascend C: {len(k.source.splitlines())} lines (k.source; k.save(path) writes the CANN project)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

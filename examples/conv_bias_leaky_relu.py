"""Conv2D + BiasAdd + LeakyReLU in ten lines: the fusion Ascend operator developers write by hand.

fusedsl fuses the convolution, the bias and the activation into ONE cube kernel (reason FS113
or FS100), so the conv result stays on chip and GM sees one write; the report compares its
GM traffic with the three unfused kernels (the modelled figures: conv2d is not printed as
Ascend C yet, the matmul form of the same fusion is, see notebooks/02_conv_bias_leaky_relu).
The kernel runs on the CPU executor (BLAS per tap, the epilogue per block) and is checked
against numpy. Exits non-zero on a mismatch.

    python examples/conv_bias_leaky_relu.py
"""
import sys

import numpy as np

import fusedsl as fs


@fs.fused_kernel(target="ascend910b")
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
    y = conv_bias_leaky_relu(x, w, b)
    err = float(np.max(np.abs(y - numpy_reference(x, w, b))))
    if y.shape != (2, 32, 28, 28) or err > 1e-4:
        print(f"MISMATCH: max abs error {err}", file=sys.stderr)
        return 1
    print(f"CPU executor: {x.shape} * {w.shape} -> {y.shape} matches numpy (max abs error {err:.1e})")
    report = k.report()
    print(report)
    print(f"GM bytes, fused vs the three unfused kernels (model): {report.gm_bytes_fused} vs "
          f"{report.gm_bytes_unfused} ({report.gm_bytes_fused / report.gm_bytes_unfused:.2f}x)")
    try:
        k.source
    except fs.FusedslError as exc:   # said plainly, not hidden: the printer's status for conv2d
        print(f"Ascend C: {str(exc).splitlines()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Cube kernels on the CPU: matmul/conv2d + bias + leaky_relu, fusedsl vs numpy.

Rows per case, medians of repeats measured in one run:
  numpy            the product (BLAS matmul; conv as im2col + matmul), then the epilogue as
                   separate numpy ops (add, where) over the whole result;
  fusedsl kernel   the public path kernel(*arrays, out=): the fused cube kernel (one matmul or
                   conv2d and its epilogue): a matmul's TileKernel on llvm_kernel (one sgemm per
                   block of rows, kernel_cpu.ScheduleCpu), a conv2d's in host-product mode
                   (conv_cpu.ConvCpu);
  BLAS matmul      (matmul only) the product alone.
(The "fused executor" rows measured backend_cpu/cube.py, gone since RESULTS.md's "One LLVM lowering"
Round 5.)

Then the GM traffic of the printed Ascend C, measured by simulate on the CPU implementation of
the API (ascend910b): matmul+bias+leaky_relu and conv2d+bias+leaky_relu as one cube kernel each
vs the unfused three kernels (opt_level=0: matmul/conv2d, add, leaky_relu).

Last, the traffic-aware cube tiling (lower.cube.cube_tiling, issue 21 item 6): for
matmul + bias + leaky_relu in float16 on 910B and 310P, CANN's rule (the smallest per-core
block on SetDim(AI cores), base block halved to fit) vs the split and base block of least
modelled time: GM bytes (model; simulate measures the chosen one) and modelled time.

Usage: python benchmarks/cube.py [--repeat N] [--tiling-only | --times-only]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import fusedsl as fs
from optimised_code import wait_for_optimised_code  # noqa: E402
try:
    import fusedsl.lower.cube as lower_cube
    from fusedsl.lower.cube import modelled_split
except ImportError:   # a checkout from before issue 19's lower/ (19faa6c): --times-only still runs there
    lower_cube = modelled_split = None
from fusedsl.targets import get_target


def median_ms(fn, repeat):
    fn()
    wait_for_optimised_code()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times)) * 1e3


def numpy_conv(x, w, b, alpha, stride=1, padding=1):
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    ho, wo = (h + 2 * padding - r) // stride + 1, (wd + 2 * padding - s) // stride + 1
    cols = np.empty((n, c, r, s, ho, wo), x.dtype)
    for i in range(r):
        for j in range(s):
            cols[:, :, i, j] = xp[:, :, i:i + stride * ho:stride, j:j + stride * wo:stride]
    y = np.matmul(w.reshape(k, -1), cols.transpose(1, 2, 3, 0, 4, 5).reshape(c * r * s, -1))
    y = y.reshape(k, n, ho, wo).transpose(1, 0, 2, 3) + b[None, :, None, None]
    return np.where(y < 0, y * alpha, y)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--tiling-only", action="store_true", help="only the cube tiling table")
    ap.add_argument("--times-only", action="store_true", help="only the CPU times (no simulate, no tiling table)")
    opts = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    if opts.tiling_only:
        return tiling_table(rng)
    alpha = np.float32(0.1)
    rows = []

    # matmul + bias + leaky_relu, 1024^3 f32
    a = rng.standard_normal((1024, 1024), np.float32)
    w = rng.standard_normal((1024, 1024), np.float32)
    b = rng.standard_normal(1024, np.float32)

    @fs.fused_kernel
    def linear(a, w, b):
        return fs.leaky_relu(a @ w + b, 0.1)

    out = np.empty((1024, 1024), np.float32)
    want = np.maximum(a @ w + b, alpha * (a @ w + b))
    np.testing.assert_allclose(linear(a, w, b), want, rtol=1e-4, atol=1e-3)
    case = "matmul 1024^3 f32 + bias + leaky_relu"
    base = median_ms(lambda: (lambda y: np.where(y < 0, y * alpha, y))(a @ w + b), opts.repeat)
    rows.append((case, "numpy (BLAS matmul, then add, where)", base))
    rows.append((case, "fusedsl kernel(*arrays, out=)", median_ms(lambda: linear(a, w, b, out=out), opts.repeat)))
    rows.append((case, "BLAS matmul alone", median_ms(lambda: np.matmul(a, w, out=out), opts.repeat)))

    # conv2d 3x3 N8 C64 56x56 K64 + bias + leaky_relu
    x = rng.standard_normal((8, 64, 56, 56), np.float32)
    cw = (rng.standard_normal((64, 64, 3, 3)) * 0.05).astype(np.float32)
    cb = rng.standard_normal(64, np.float32)

    @fs.fused_kernel
    def conv(x, w, b):
        return fs.leaky_relu(fs.conv2d(x, w, b, padding=1), 0.1)

    cout = np.empty((8, 64, 56, 56), np.float32)
    cwant = numpy_conv(x, cw, cb, alpha)
    np.testing.assert_allclose(conv(x, cw, cb), cwant, rtol=1e-4, atol=1e-4)
    case = "conv2d 3x3 N8 C64 56x56 K64 + bias + leaky_relu"
    base_c = median_ms(lambda: numpy_conv(x, cw, cb, alpha), opts.repeat)
    rows.append((case, "numpy (im2col + matmul, then add, where)", base_c))
    rows.append((case, "fusedsl kernel(*arrays, out=)", median_ms(lambda: conv(x, cw, cb, out=cout), opts.repeat)))

    print("| case | variant | median | vs numpy time |")
    print("|---|---|---|---|")
    for case, variant, ms in rows:
        ref = base if case.startswith("matmul") else base_c
        print(f"| {case} | {variant} | {ms:.2f} ms | {ms / ref:.2f}x |")
    mm = {v: ms for c, v, ms in rows if c.startswith("matmul")}
    cv = {v: ms for c, v, ms in rows if c.startswith("conv")}
    print()
    # (the goals' "fused executor" figure measured backend_cpu/cube.py, gone: kernel(*arrays) is the one executor)
    mm_x, cv_x = mm['fusedsl kernel(*arrays, out=)'] / base, cv['fusedsl kernel(*arrays, out=)'] / base_c
    print(f"- matmul goal <= 0.7x numpy: kernel(*arrays) {mm_x:.2f}x ({'met' if mm_x <= 0.7 else 'NOT met'})")
    print(f"- conv goal <= 0.35x numpy: kernel(*arrays) {cv_x:.2f}x ({'met' if cv_x <= 0.35 else 'NOT met'})")
    if opts.times_only:
        return
    print()
    gm_table(rng)
    print()
    tiling_table(rng)


def gm_table(rng):
    """GM bytes of the printed kernels, measured by simulate (ascend910b)."""
    m, n, k = 512, 512, 256
    x = rng.standard_normal((m, k)).astype(np.float16)
    w = rng.standard_normal((k, n)).astype(np.float16)
    b = rng.standard_normal(n).astype(np.float16)

    def linear(x, w, b):
        return fs.leaky_relu(x @ w + b, 0.1)

    print("| case (ascend910b, simulate) | kernels | GM min (B) | GM fused, measured (B) | GM unfused, measured (B) "
          "| fused / unfused |")
    print("|---|---|---|---|---|---|")
    fused = fs.fused_kernel(linear).compile(x, w, b)
    split = fs.fused_kernel(linear).compile(x, w, b, opt_level=0)
    want = fused.simulate(x, w, b)
    np.testing.assert_allclose(split.simulate(x, w, b).astype(np.float32), want.astype(np.float32), atol=2e-2)
    rf, rs = fused.report(), split.report()
    print(f"| matmul {m}x{k} @ {k}x{n} f16 + bias + leaky_relu | {len(fused.kernels)} (unfused "
          f"{len(split.kernels)}) | {rf.gm_bytes_min} | {rf.gm_bytes_measured} | {rs.gm_bytes_measured} | "
          f"{rf.gm_bytes_measured / rs.gm_bytes_measured:.2f} |")
    # conv2d 3x3 N8 C64 56x56 K64 f16 + bias + leaky_relu (stride 1, padding 1)
    x = rng.standard_normal((8, 64, 56, 56)).astype(np.float16)
    cw = (rng.standard_normal((64, 64, 3, 3)) * 0.05).astype(np.float16)
    cb = rng.standard_normal(64).astype(np.float16)

    def conv(x, w, b):
        return fs.leaky_relu(fs.conv2d(x, w, b, padding=1), 0.1)

    cfused = fs.fused_kernel(conv).compile(x, cw, cb)
    csplit = fs.fused_kernel(conv).compile(x, cw, cb, opt_level=0)
    cwant = numpy_conv(x.astype(np.float32), cw.astype(np.float32), cb.astype(np.float32), np.float32(0.1))
    np.testing.assert_allclose(cfused.simulate(x, cw, cb).astype(np.float32), cwant, atol=3e-2, rtol=1e-2)
    np.testing.assert_allclose(csplit.simulate(x, cw, cb).astype(np.float32), cwant, atol=3e-2, rtol=1e-2)
    cf, cs = cfused.report(), csplit.report()
    sched = cfused.kernels[0].row
    panel = 2 * 8 * 64 * 9 * 56 * 56 * 2
    print(f"| conv2d 3x3 N8 C64 56x56 K64 f16 + bias + leaky_relu | {len(cfused.kernels)} (unfused "
          f"{len(csplit.kernels)}) | {cf.gm_bytes_min} | {cf.gm_bytes_measured} | {cs.gm_bytes_measured} | "
          f"{cf.gm_bytes_measured / cs.gm_bytes_measured:.2f} |")
    print()
    print("matmul: both read A's rows and B's columns once per C tile (the Matmul API's iteration; the split over "
          f"{fused.kernels[0].row.tiling_fields.used_core_num} Matmul objects is the one of least modelled time); "
          "the fused kernel writes C once, the unfused program also writes and re-reads it twice.")
    print(f"conv2d: im2col happens inside the kernel, per core and image, into a GM panel that the cube "
          f"reads back ({panel} B written + read over the 8 images, the same in both programs: "
          f"lower/conv.py says why); the {sched.used_cores} cores split the pixels, each re-reads the "
          "weights per image and the input rows its pixels share with a neighbour. Fusion saves the "
          "conv result's round trip through GM twice (bias add, leaky_relu).")


def tiling_table(rng):
    """CANN's split, the search of two objects per AI core with A from GM (the layout every
    kernel had before), and the chosen split and layout: modelled GM bytes and time (one model,
    cost.matmul_split_cycles), simulate's measurement of the chosen kernel."""
    def linear(x, w, b):
        return fs.leaky_relu(x @ w + b, 0.1)

    print("| matmul f16 + bias + leaky_relu | target | tiling | Matmul objects | per AI core | A in L1 | block | base | "
          "GM (model) | GM measured | GM / min | modelled time |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for m, n, k in ((100, 72, 130), (256, 512, 256), (512, 512, 256), (1024, 1024, 1024), (1024, 4096, 256)):
        x = rng.standard_normal((m, k)).astype(np.float16)
        w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float16)
        b = rng.standard_normal(n).astype(np.float16)
        want = x.astype(np.float32) @ w.astype(np.float32) + b.astype(np.float32)
        want = np.where(want < 0, 0.1 * want, want)
        for target in ("ascend910b", "ascend310p"):
            t = get_target(target)
            k0 = fs.fused_kernel(linear).compile(x, w, b, target=target)
            np.testing.assert_allclose(k0.simulate(x, w, b).astype(np.float32), want, atol=5e-2, rtol=2e-2)
            rep = k0.report()
            sched = k0.kernels[0].row
            ours = sched.tiling_fields
            traffic, cann = sched.traffic, sched.cann_tiling   # CANN's rule on the same buffers
            saved = lower_cube.LAYOUTS
            lower_cube.LAYOUTS = ((2, False),)
            try:
                before = fs.fused_kernel(linear).compile(x, w, b, target=target).kernels[0].row.tiling_fields
            finally:
                lower_cube.LAYOUTS = saved
            rows = (("CANN rule", cann, None), ("2 per AI core, A from GM", before, None),
                    ("chosen", ours, rep.gm_bytes_measured))
            for label, c, measured in rows:
                us, gm = modelled_split(t, m, n, k, c.single_core_m, c.single_core_n, c.used_core_num,
                                        c.base_m, c.base_n, traffic, c.objects_per_core, c.a_l1_bytes)
                if measured is not None:
                    assert measured == gm == rep.gm_bytes_fused and abs(us - rep.model_time_us_fused) < 1e-6
                per = c.objects_per_core if t.separated else 1
                print(f"| {m}x{k} @ {k}x{n} | {target} | {label} | {c.used_core_num} | {per} | "
                      f"{c.a_l1_bytes if c.a_l1_bytes else '-'} | {c.single_core_m}x{c.single_core_n} | "
                      f"{c.base_m}x{c.base_n} | {gm} | {measured if measured else '-'} | "
                      f"{gm / rep.gm_bytes_min:.2f} | {us:.2f} us |", flush=True)

    print()
    print("| conv2d 3x3 pad 1 f16 + bias + leaky_relu | target | core count | Matmul objects | pixels per core | GM "
          "(model) | GM measured | GM / min | modelled time |")
    print("|---|---|---|---|---|---|---|---|---|")
    for xs, ws in (((2, 16, 17, 19), (32, 16, 3, 3)), ((1, 64, 28, 28), (128, 64, 3, 3)),
                   ((8, 64, 56, 56), (64, 64, 3, 3))):
        x = rng.standard_normal(xs).astype(np.float16)
        cw = (rng.standard_normal(ws) * 0.05).astype(np.float16)
        cb = rng.standard_normal(ws[0]).astype(np.float16)
        want = numpy_conv(x.astype(np.float32), cw.astype(np.float32), cb.astype(np.float32), np.float32(0.1))
        for target in ("ascend910b", "ascend310p"):
            k0 = fs.fused_kernel(lambda x, w, b: fs.leaky_relu(fs.conv2d(x, w, b, padding=1), 0.1)).compile(
                x, cw, cb, target=target)
            np.testing.assert_allclose(k0.simulate(x, cw, cb).astype(np.float32), want, atol=3e-2, rtol=1e-2)
            rep, sched = k0.report(), k0.kernels[0].row
            assert rep.gm_bytes_measured == rep.gm_bytes_fused
            cores, us, gm = sched.rule_figures
            case = f"x {list(xs)} w {list(ws)}"
            print(f"| {case} | {target} | 16 KiB rule | {cores} | - | {gm} | - | {gm / rep.gm_bytes_min:.2f} | "
                  f"{us:.2f} us |")
            t = sched.tiling_fields
            print(f"| {case} | {target} | least modelled time | {t.used_core_num} | {t.single_core_n} | "
                  f"{rep.gm_bytes_fused} | {rep.gm_bytes_measured} | {rep.gm_bytes_fused / rep.gm_bytes_min:.2f} | "
                  f"{rep.model_time_us_fused:.2f} us |")


if __name__ == "__main__":
    main()

"""The one LLVM lowering of the tile IR (backend_cpu/llvm_kernel.py) against today's per-kind CPU
executors, kernel by kernel (issue 19).

For each representative kernel of a kind -- a concatenation and a slice (view), a column sum
(column), softmax and layer_norm (row), an elementwise chain (vector), a 2-D transpose and a 3-D
permute [16, n, n] perm (0, 2, 1) (transpose), matmul + relu (cube, [R, 1024] @ [1024, 256];
batched, [8, R/8, 1024] @ [8, 1024, 64]; float16), conv2d + bias + activation (conv: 3x3, 5x5 stride 2,
1x1, float16 3x3) -- at inputs of 64 KB to 64 MB: the median time of
`k(*arrays)` (what runs today: llvm_kernel for the vector, view, column, row, transpose and matmul
kinds) and of `TileKernelCpu(kernel_ir).run(...)` on the
same arrays (bound once, outputs preallocated), their ratio, and the LLVM compile time of each (a fresh
cache folder: the first call minus a steady call for today's executor, the constructor for
llvm_kernel; where a kernel's IR holds no sizes -- vector, view, row -- the larger sizes reuse the
first size's module, so only the first size's compile is cold).  The two calls are timed
interleaved, `--repeat` times each.  Both check their result against numpy once.  "ratio" is llvm_kernel
over today's call where no per-kind executor is left (the vector, view, transpose, row and column kinds'
executors, llvm.py's CpuKernel, llvm_view.py, transpose.py, llvm_row.py and llvm_reduce.py, are gone:
RESULTS.md "Round 3, views and transposes", "Round 5, rows" and "Round 5, columns" have their last
comparisons; cube.py, which ran matmuls, convs and what their kinds refuse, is gone too: "Round 5, cube.py
retired").  A column kernel runs the column kind's host schedule (backend_cpu/cpu_tiling.column_schedule),
which is its llvm_kernel here.  The "split" cases are cube kernels the cube / conv kinds refuse,
split at the product (backend_cpu/cube_split.py: the product on the host, the rest a vector / row kind's
kernel on llvm_kernel); their "llvm_kernel" is that SplitCpu, bound once.  A row kernel's
llvm_kernel is the one `k(*arrays)` runs: the row kind's kernel scheduled for the CPU
(backend_cpu/cpu_tiling.row_schedule) on that schedule's words; a conv kernel's is conv_cpu.ConvCpu (the
kernel in host-product mode, its product conv_product.py's).  The attention cases (float32 [1, 8, S, 64]
plain, causal, with a bool mask [S, S], head size 128; float16 with 16 heads): llvm_kernel runs the attention
kind scheduled for the CPU (backend_cpu/cpu_tiling.attention_schedule) on its words, what `k(*arrays)` runs
(backend_cpu/attention_cpu.py); attention.py, the executor it replaced, is gone (RESULTS.md "Round 6,
attention" has the last comparison).

    python benchmarks/llvm_kernel.py [--repeat 7] [--sizes 64K,1M,16M,64M] [--cases view,column,...]
    python benchmarks/llvm_kernel.py --without-copyout --cases elementwise

The column case is compiled with `disable_passes=["split-columns"]` (from 1040218 a column sum on
too few column tiles for the chip's cores is two kernels; this compares one kernel's executors).

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
from fusedsl import buffers  # noqa: E402
from fusedsl.backend_cpu.conv_cpu import ConvCpu  # noqa: E402
from fusedsl.backend_cpu.kernel_cpu import ScheduleCpu, TileKernelCpu, matmul_products  # noqa: E402
from fusedsl.ir.ops import conv2d_reference  # noqa: E402
from fusedsl.backend_cpu.cpu_tiling import attention_schedule, cpu_words, vector_tiling  # noqa: E402
from fusedsl.lower.kinds import kernel_ir  # noqa: E402
from fusedsl.lower.row import RowSchedule  # noqa: E402
from fusedsl.tile.kernel import CopyOut  # noqa: E402

SIZES = {"64K": 64 << 10, "1M": 1 << 20, "4M": 4 << 20, "16M": 16 << 20, "64M": 64 << 20}


def _rows(nbytes: int, cols: int = 1024) -> int:
    return max(1, nbytes // 4 // cols)


def _side(nbytes: int) -> int:
    return int(round((nbytes / 4) ** 0.5))


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _layer_norm(x):
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)


def _row_case(f, ref, cols: int = 1024):
    """A row kernel's case: f of float32 rows of `cols` elements, numpy's `ref`."""
    return ("row", f, lambda n, g: [g.standard_normal((_rows(n, cols), cols), np.float32)], ref)


def _attention(q, k, v, mask=None, causal=False):
    """numpy's attention of [1, H, L, D] operands, 1024 query rows at a time (the scores of a 64 MB
    case would take gigabytes)."""
    out = np.empty(q.shape[:-1] + (v.shape[-1],), q.dtype)
    for r0 in range(0, q.shape[-2], 1024):
        rows = slice(r0, r0 + 1024)
        s = q[..., rows, :] @ np.swapaxes(k, -1, -2) / np.float32(np.sqrt(q.shape[-1]))
        if causal:
            s = np.where(np.tri(s.shape[-2], s.shape[-1], r0, dtype=bool), s, -np.inf)
        if mask is not None:
            s = np.where(mask[rows], s, -np.inf)
        p = np.exp(s - s.max(-1, keepdims=True))
        out[..., rows, :] = (p / p.sum(-1, keepdims=True)) @ v
    return out


def _seq(n: int, heads: int, d: int, itemsize: int) -> int:
    return max(1, n // (3 * heads * d * itemsize))


def _qkv(n, g, heads, d, dtype):
    """q, k, v [1, heads, S, d] whose three arrays take n bytes."""
    s = _seq(n, heads, d, np.dtype(dtype).itemsize)
    return [g.standard_normal((1, heads, s, d)).astype(dtype) for _ in range(3)]


def _mask(n, g, heads, d, itemsize):
    s = _seq(n, heads, d, itemsize)
    return g.random((s, s)) > 0.2


def _conv(x, w, stride, padding):
    """conv2d in float32 through float64 (numpy has none): the reference's."""
    return conv2d_reference(x.astype(np.float64), w.astype(np.float64), (stride,) * 2, (padding,) * 2)


def _leaky(y):
    return np.where(y >= 0, y, 0.1 * y).astype(np.float32)


CASES = {   # name -> (kind, function, arrays for an input of n bytes, numpy)
    "view": ("view", lambda a, b: fs.concatenate([a, b], axis=1),
             lambda n, g: [g.standard_normal((_rows(n), 1024), np.float32),
                           g.standard_normal((_rows(n), 1000), np.float32)],
             lambda a, b: np.concatenate([a, b], axis=1)),
    "column": ("column", lambda x: fs.sum(x, 0),
               lambda n, g: [g.standard_normal((_rows(n), 1024), np.float32)], lambda x: x.sum(0)),
    # what the chip's column schedule refuses (the host schedule takes them too, cpu_tiling.column_schedule):
    # int32 sums over axis 0 of [R, 1024] and over axis 1 of [R, 1000, 33] (narrow columns), int8 maxima,
    # bool counts (a compare summed: bool -> int32), a float32 sum over a symbolic axis 0 ([N, 1024])
    "int_column": ("column", lambda x: fs.sum(x, 0),
                   lambda n, g: [g.integers(-2 ** 31, 2 ** 31, (_rows(n), 1024)).astype(np.int32)],
                   lambda x: x.sum(0).astype(np.int32)),
    "int_column_narrow": ("column", lambda x: fs.sum(x, 1),
                          lambda n, g: [g.integers(-2 ** 31, 2 ** 31, (_rows(n, 33000), 1000, 33)).astype(np.int32)],
                          lambda x: x.sum(1).astype(np.int32)),
    "int8_column_max": ("column", lambda x: fs.max(x, 0),
                        lambda n, g: [g.integers(-128, 128, (_rows(4 * n), 1024)).astype(np.int8)],
                        lambda x: x.max(0)),
    "count_column": ("column", lambda x: fs.sum(x > 0.5, 0),
                     lambda n, g: [g.standard_normal((_rows(n), 1024), np.float32)],
                     lambda x: (x > 0.5).sum(0).astype(np.int32)),
    "symbolic_column": ("column", lambda x: fs.sum(x, 0),
                        lambda n, g: [g.standard_normal((_rows(n), 1024), np.float32)], lambda x: x.sum(0),
                        lambda x: [fs.spec(("N", 1024), "float32")]),
    "softmax": _row_case(lambda x: fs.softmax(x), _softmax),
    "layer_norm": _row_case(lambda x: fs.layer_norm(x), _layer_norm),
    # rows of 16384: 128 fold lanes, float sums compensated (cpu_tiling.row_fold_lanes)
    "mid_softmax": _row_case(lambda x: fs.softmax(x), _softmax, 16384),
    "mid_layer_norm": _row_case(lambda x: fs.layer_norm(x), _layer_norm, 16384),
    # rows longer than cpu_tiling.ROW_SUM_MAX: float sums with compensated folds ([R, 65536])
    "long_sum": _row_case(lambda x: fs.sum(x, -1), lambda x: x.sum(-1), 65536),
    "long_softmax": _row_case(lambda x: fs.softmax(x), _softmax, 65536),
    "long_layer_norm": _row_case(lambda x: fs.layer_norm(x), _layer_norm, 65536),
    "row_sum": _row_case(lambda x: fs.sum(x, -1), lambda x: x.sum(-1)),
    # integer / bool rows (the CPU row schedule's int32 lanes): [R, 1024] int32 sums, int8 maxima,
    # bool counts (a compare's rows summed: bool -> int32)
    "int_sum": ("row", lambda x: fs.sum(x, -1),
                lambda n, g: [g.integers(-2 ** 31, 2 ** 31, (_rows(n), 1024)).astype(np.int32)],
                lambda x: x.sum(-1).astype(np.int32)),
    "int8_max": ("row", lambda x: fs.max(x, -1),
                 lambda n, g: [g.integers(-128, 128, (_rows(4 * n), 1024)).astype(np.int8)], lambda x: x.max(-1)),
    "count": ("row", lambda x: fs.sum(x > 0.5, -1),
              lambda n, g: [g.standard_normal((_rows(n), 1024), np.float32)],
              lambda x: (x > 0.5).sum(-1).astype(np.int32)),
    # lone reductions over trailing axes (the row kind's [A, K] -> [A] rows on the CPU): float32 sums
    # over (1, 2) of [R, 64, 64], int32 sums of a whole [R, 1024] array (one row of K = R * 1024)
    "lone_sum": ("row", lambda x: fs.sum(x, axis=(1, 2)),
                 lambda n, g: [g.standard_normal((_rows(n, 4096), 64, 64), np.float32)], lambda x: x.sum((1, 2))),
    "lone_int_sum": ("row", lambda x: fs.sum(x),
                     lambda n, g: [g.integers(-2 ** 31, 2 ** 31, (_rows(n), 1024)).astype(np.int32)],
                     lambda x: np.int32(x.sum(dtype=np.int64).astype(np.int32))),
    "elementwise": ("vector", lambda x, y: fs.relu(x * y + 1.0) * 2.0 - y,
                    lambda n, g: [g.standard_normal((_rows(n), 1024), np.float32),
                                  g.standard_normal((_rows(n), 1024), np.float32)],
                    lambda x, y: np.maximum(x * y + 1, 0) * 2 - y),
    "slice": ("view", lambda x: x[1:, 3:1003],
              lambda n, g: [g.standard_normal((_rows(n), 1024), np.float32)], lambda x: x[1:, 3:1003]),
    "transpose": ("transpose", lambda x: fs.transpose(x, (1, 0)),
                  lambda n, g: [g.standard_normal((_side(n), _side(n)), np.float32)], lambda x: x.T),
    "permute": ("transpose", lambda x: fs.transpose(x, (0, 2, 1)),
                lambda n, g: [g.standard_normal((16, _side(n // 16), _side(n // 16)), np.float32)],
                lambda x: x.transpose(0, 2, 1)),
    "matmul": ("cube", lambda a, b: fs.relu(a @ b),
               lambda n, g: [g.standard_normal((_rows(n), 1024), np.float32),
                             g.standard_normal((1024, 256), np.float32)], lambda a, b: np.maximum(a @ b, 0)),
    # 8 batch matrices of A and of B: [8, R/8, 1024] @ [8, 1024, 64]
    "bmm": ("cube", lambda a, b: fs.relu(a @ b),
            lambda n, g: [g.standard_normal((8, max(1, _rows(n) // 8), 1024), np.float32),
                          g.standard_normal((8, 1024, 64), np.float32)], lambda a, b: np.maximum(a @ b, 0)),
    # float16 operands and result: [R, 1024] @ [1024, 256] (R from 2-byte elements)
    "matmul_f16": ("cube", lambda a, b: fs.relu(a @ b),
                   lambda n, g: [g.standard_normal((_rows(2 * n), 1024)).astype(np.float16),
                                 g.standard_normal((1024, 256)).astype(np.float16)],
                   lambda a, b: np.maximum(a.astype(np.float32) @ b.astype(np.float32), 0).astype(np.float16)),
    # int8 operands and result (numpy wraps): [R, 1024] @ [1024, 256] (R from 1-byte elements)
    "matmul_int8": ("cube", lambda a, b: a @ b,
                    lambda n, g: [g.integers(-128, 128, (_rows(4 * n), 1024)).astype(np.int8),
                                  g.integers(-128, 128, (1024, 256)).astype(np.int8)],
                    lambda a, b: (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int8)),
    # row epilogues of a matmul: softmax / layer_norm over the rows of [R, 1024] @ [1024, 256]
    "matmul_softmax": ("cube", lambda a, b: fs.softmax(a @ b),
                       lambda n, g: [g.standard_normal((_rows(n), 1024), np.float32),
                                     g.standard_normal((1024, 256), np.float32) * np.float32(0.05)],
                       lambda a, b: _softmax(a @ b)),
    "matmul_layer_norm": ("cube", lambda a, b: fs.layer_norm(a @ b),
                          lambda n, g: [g.standard_normal((_rows(n), 1024), np.float32),
                                        g.standard_normal((1024, 256), np.float32)],
                          lambda a, b: _layer_norm(a @ b)),
    # products of one column / one row (numpy's gemv): relu of [R, 1024] @ [1024, 1] and of
    # [1, 1024] @ [1024, C] (C from B's bytes)
    "matvec": ("cube", lambda a, b: fs.relu(a @ b),
               lambda n, g: [g.standard_normal((_rows(n), 1024), np.float32),
                             g.standard_normal((1024, 1), np.float32)], lambda a, b: np.maximum(a @ b, 0)),
    "vecmat": ("cube", lambda a, b: fs.relu(a @ b),
               lambda n, g: [g.standard_normal((1, 1024), np.float32),
                             g.standard_normal((1024, _rows(n)), np.float32)], lambda a, b: np.maximum(a @ b, 0)),
    # conv2d + bias + leaky_relu, NCHW: 3x3 pad 1, 64 -> 64 channels on 56 x 56 images (N from the
    # input's bytes: 1 MB is one image), the bias a [1, K, 1, 1] input
    "conv": ("conv", lambda x, w, b: fs.leaky_relu(fs.conv2d(x, w, None, stride=1, padding=1) + b, 0.1),
             lambda n, g: [g.standard_normal((max(1, n // (64 * 56 * 56 * 4)), 64, 56, 56), np.float32),
                           (g.standard_normal((64, 64, 3, 3)) * 0.05).astype(np.float32),
                           g.standard_normal((1, 64, 1, 1), np.float32)],
             lambda x, w, b: _leaky(_conv(x, w, 1, 1) + b)),
    # 5x5 stride 2, 3 -> 16 channels on 224 x 224 images (im2col: C < K)
    "conv_s2": ("conv", lambda x, w, b: fs.leaky_relu(fs.conv2d(x, w, None, stride=2, padding=2) + b, 0.1),
                lambda n, g: [g.standard_normal((max(1, n // (3 * 224 * 224 * 4)), 3, 224, 224), np.float32),
                              (g.standard_normal((16, 3, 5, 5)) * 0.1).astype(np.float32),
                              g.standard_normal((1, 16, 1, 1), np.float32)],
                lambda x, w, b: _leaky(_conv(x, w, 2, 2) + b)),
    # pointwise 1x1, 64 -> 64 channels on 56 x 56 (one sgemm per image)
    "conv_1x1": ("conv", lambda x, w, b: fs.relu(fs.conv2d(x, w, None, stride=1, padding=0) + b),
                 lambda n, g: [g.standard_normal((max(1, n // (64 * 56 * 56 * 4)), 64, 56, 56), np.float32),
                               (g.standard_normal((64, 64, 1, 1)) * 0.1).astype(np.float32),
                               g.standard_normal((1, 64, 1, 1), np.float32)],
                 lambda x, w, b: np.maximum(_conv(x, w, 1, 0) + b, 0).astype(np.float32)),
    # float16 3x3 pad 1, 32 -> 32 channels on 56 x 56 (N from 2-byte elements)
    "conv_f16": ("conv", lambda x, w, b: fs.relu(fs.conv2d(x, w, None, stride=1, padding=1) + b),
                 lambda n, g: [g.standard_normal((max(1, n // (32 * 56 * 56 * 2)), 32, 56, 56)).astype(np.float16),
                               (g.standard_normal((32, 32, 3, 3)) * 0.05).astype(np.float16),
                               g.standard_normal((1, 32, 1, 1)).astype(np.float16)],
                 lambda x, w, b: np.maximum(_conv(x, w, 1, 1) + b.astype(np.float32), 0).astype(np.float16)),
    # cube kernels the cube / conv kinds refuse (backend_cpu/cube_split.py: the product on the host, the rest
    # a kernel of its own): int32 [R, 1024] @ [1024, 256] + relu, values in [-100, 100]
    "matmul_int32": ("split", lambda a, b: fs.relu(a @ b),
                     lambda n, g: [g.integers(-100, 101, (_rows(n), 1024)).astype(np.int32),
                                   g.integers(-100, 101, (1024, 256)).astype(np.int32)],
                     lambda a, b: np.maximum(a @ b, 0)),
    # uint8 (R from 1-byte elements) + 3, wrapping
    "matmul_uint8": ("split", lambda a, b: a @ b + np.uint8(3),
                     lambda n, g: [g.integers(0, 256, (_rows(4 * n), 1024)).astype(np.uint8),
                                   g.integers(0, 256, (1024, 256)).astype(np.uint8)],
                     lambda a, b: (a @ b + np.uint8(3)).astype(np.uint8)),
    # batch axes broadcast in part: [2, 1, R/2, 1024] @ [1, 4, 1024, 64] + relu
    "bmm_bcast": ("split", lambda a, b: fs.relu(a @ b),
                  lambda n, g: [g.standard_normal((2, 1, max(1, _rows(n) // 2), 1024), np.float32),
                                g.standard_normal((1, 4, 1024, 64), np.float32)], lambda a, b: np.maximum(a @ b, 0)),
    # a row reduction after an int8 product: row sums of [R, 1024] @ [1024, 256] (int32)
    "matmul_int8_sum": ("split", lambda a, b: fs.sum(a @ b, axis=-1),
                        lambda n, g: [g.integers(-128, 128, (_rows(4 * n), 1024)).astype(np.int8),
                                      g.integers(-128, 128, (1024, 256)).astype(np.int8)],
                        lambda a, b: (a @ b).sum(axis=-1, dtype=np.int32)),
    # a row epilogue after a batched product: softmax of [8, R/8, 1024] @ [8, 1024, 64]
    "bmm_softmax": ("split", lambda a, b: fs.softmax(a @ b),
                    lambda n, g: [g.standard_normal((8, max(1, _rows(n) // 8), 1024), np.float32),
                                  g.standard_normal((8, 1024, 64), np.float32) * np.float32(0.05)],
                    lambda a, b: _softmax(a @ b)),
    # a 16-bit product's row epilogue (numpy's rounding, exact): softmax of float16 [R, 1024] @ [1024, 256]
    "matmul_f16_softmax": ("split", lambda a, b: fs.softmax(a @ b),
                           lambda n, g: [g.standard_normal((_rows(2 * n), 1024)).astype(np.float16),
                                         (g.standard_normal((1024, 256)) * 0.05).astype(np.float16)],
                           lambda a, b: _softmax(a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)),
    # a uint8 conv2d 3x3 pad 1, 16 -> 16 channels on 56 x 56 + a per-channel uint8 bias (wrapping)
    "conv_uint8": ("split", lambda x, w, b: fs.conv2d(x, w, None, stride=1, padding=1) + b,
                   lambda n, g: [g.integers(0, 4, (max(1, n // (16 * 56 * 56)), 16, 56, 56)).astype(np.uint8),
                                 g.integers(0, 4, (16, 16, 3, 3)).astype(np.uint8),
                                 g.integers(0, 256, (16, 1, 1)).astype(np.uint8)],
                   lambda x, w, b: (_conv(x.astype(np.float64), w.astype(np.float64), 1, 1).astype(np.int64)
                                    + b).astype(np.uint8)),
    # a float32 conv2d 3x3 pad 1, 64 -> 64 on 28 x 28 scaled per image and channel ([N, K, 1, 1], N > 1:
    # the conv kind refuses it)
    "conv_scale": ("split", lambda x, w, s: fs.relu(fs.conv2d(x, w, None, stride=1, padding=1) * s),
                   lambda n, g: [g.standard_normal((max(2, n // (64 * 28 * 28 * 4)), 64, 28, 28), np.float32),
                                 (g.standard_normal((64, 64, 3, 3)) * 0.05).astype(np.float32),
                                 g.standard_normal((max(2, n // (64 * 28 * 28 * 4)), 64, 1, 1), np.float32)],
                   lambda x, w, s: np.maximum(_conv(x, w, 1, 1) * s, 0).astype(np.float32)),
    # the lone attention op: q, k, v [1, 8, S, 64] float32, S from the three inputs' bytes (S^2 work:
    # 1 / 16 / 64 MB are S = 170 / 2730 / 10922, none a multiple of the CPU's blocks)
    "attention": ("attention", lambda q, k, v: fs.attention(q, k, v), lambda n, g: _qkv(n, g, 8, 64, np.float32),
                  _attention),
    "attention_causal": ("attention", lambda q, k, v: fs.attention(q, k, v, causal=True),
                         lambda n, g: _qkv(n, g, 8, 64, np.float32), lambda q, k, v: _attention(q, k, v, causal=True)),
    # a bool mask [S, S] (not counted in the input's bytes)
    "attention_mask": ("attention", lambda q, k, v, m: fs.attention(q, k, v, mask=m),
                       lambda n, g: _qkv(n, g, 8, 64, np.float32) + [_mask(n, g, 8, 64, 4)],
                       lambda q, k, v, m: _attention(q, k, v, mask=m)),
    "attention_d128": ("attention", lambda q, k, v: fs.attention(q, k, v), lambda n, g: _qkv(n, g, 8, 128, np.float32),
                       _attention),
    # float16 with 16 heads: the float32 case's S at the same input bytes
    "attention_f16": ("attention", lambda q, k, v: fs.attention(q, k, v), lambda n, g: _qkv(n, g, 16, 64, np.float16),
                      lambda q, k, v: _attention(*(x.astype(np.float32) for x in (q, k, v))).astype(np.float16)),
}


def _medians(fns, repeat: int) -> list[float]:
    """Median seconds of each call, the calls interleaved (this host is shared: load drifts), each
    round starting at the next call (a call right after one that read the same 64 MB was
    measured 1.3-1.6x slower on the loaded host: the order is not to favour one)."""
    times = [[] for _ in fns]
    for fn in fns:
        fn()
    order = list(range(len(fns)))
    for r in range(repeat):
        for i in order[r % len(fns):] + order[:r % len(fns)]:
            t0 = time.perf_counter()
            fns[i]()
            times[i].append(time.perf_counter() - t0)
    return [sorted(ts)[len(ts) // 2] for ts in times]


def _without_copyout(k):
    """The kernel with its top-level CopyOut nodes removed (its outputs are not written)."""
    stages = [dataclasses.replace(st, body=tuple(n for n in st.body if not isinstance(n, CopyOut))) for st in k.stages]
    return dataclasses.replace(k, stages=stages)


def measure(name: str, nbytes: int, repeat: int, without_copyout: bool = False) -> dict:
    kind, f, make, ref, *specs = CASES[name]
    g = np.random.default_rng(0)
    args = make(nbytes, g)
    # one kernel per case: the split-columns pass would make a large column sum two kernels; a
    # case's specs (symbolic sizes) replace the arrays at compile time
    comp = fs.fused_kernel(f, disable_passes=["split-columns"]).compile(*(specs[0](*args) if specs else args))
    (plan,) = comp.kernels
    row = comp._row_kernel(plan) if plan.schedule is None else None
    host = isinstance(row, ScheduleCpu) and (isinstance(row.sched, RowSchedule) or getattr(row.sched, "host", False))
    if kind == "split":   # refused by the cube / conv kinds: no TileKernel of the whole kernel
        assert comp._split_kernel(plan) is not None and comp._matmul_kernel(plan) is None, name
        assert comp._conv_kernel(plan) is None, name
        k = None
    else:
        # (a row kernel: the CPU's row schedule, which also takes integer rows; a column kernel: the
        # column kind's host schedule)
        k = row.kernel.k if host else kernel_ir(plan.lowered)
        assert k.kind == kind, (name, k.kind)
    want = ref(*args)
    t0 = time.perf_counter()
    first = comp(*args)
    first_s = time.perf_counter() - t0
    _check(first, want)

    # the CPU's tiling words (backend_cpu/cpu_tiling.py; the shapes here are static); a row kernel
    # runs the row kind's kernel scheduled for the CPU (cpu_tiling.row_schedule), the one k(*arrays) runs
    row = comp._cpu.get(("row", plan.name))
    conv = comp._cpu.get(("conv", plan.name))
    if host:   # (a symbolic kernel's tiling: the first call's)
        cpu, words = row.kernel, row.words(row.tiling or comp._cpu_tiling[("row", plan.name)])
        k = cpu.k
    elif kind == "attention":   # the attention kind scheduled for the CPU (cpu_tiling.attention_schedule)
        cpu = TileKernelCpu(kernel_ir(attention_schedule(plan.function, comp.target)))
        k, words = cpu.k, list(cpu.k.words)
    elif isinstance(conv, ConvCpu):   # a conv kernel: its product conv_product.py's (host-product mode)
        cpu, words = conv, None
    elif kind == "split":   # the product on the host, the rest a vector / row kind's kernel (cube_split.SplitCpu)
        cpu, words = comp._split_kernel(plan), None
    else:
        tiling = vector_tiling(plan.lowered, {}, comp.target) if kind in ("vector", "view") else plan.tiling
        words = cpu_words(plan.lowered, tiling)
        cpu = TileKernelCpu(k, products=matmul_products(plan.lowered, k))   # numpy's gemv / dot where it makes them
    names = f.__code__.co_varnames[:f.__code__.co_argcount]
    inputs = [dict(zip(names, args))[p.value.name] for p in plan.function.params]
    out = buffers.empty(want.shape, want.dtype)   # as k(*arrays) allocates results: on a cache line
    cpu.run(inputs, [out], words)
    _check(out, want)
    # bound once, as today's program binds its kernels on its first call
    calls = [lambda: comp(*args), cpu.bind(inputs, [out], words)]
    compile_s = cpu.kernel.compile_seconds if isinstance(cpu, ConvCpu) else \
        0.0 if kind == "split" else cpu.compile_seconds
    if without_copyout:
        calls.append(TileKernelCpu(_without_copyout(k)).bind(inputs, [buffers.empty(out.shape, out.dtype)], words))
    # (no per-kind executor is left to compare with: "previous" is today's call)
    today, new, *rest = _medians(calls, repeat)
    return {"case": name, "kind": kind, "executor": comp.executor(plan), "bytes": nbytes, "today": today,
            "new": new, "previous": today, "today_compile": max(0.0, first_s - today),
            "new_compile": compile_s, "without_copyout": rest[0] if rest else None}


def _check(got, want):
    if want.dtype.kind in "iu":
        np.testing.assert_array_equal(got, want)
        return
    tol = 2e-2 if want.dtype == np.float16 else 1e-4
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=tol, atol=tol)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--sizes", default=",".join(SIZES))
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--without-copyout", action="store_true")
    a = ap.parse_args(argv)
    print(f"threads: {os.environ.get('FUSEDSL_NUM_THREADS', len(os.sched_getaffinity(0)))}, repeat {a.repeat}, "
          f"cache {os.environ['FUSEDSL_CACHE_DIR']}")
    print("| kernel | kind (today's executor) | input | k(*arrays) ms | per-kind executor ms | llvm_kernel ms | "
          "ratio | compile today ms | compile llvm_kernel ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in a.cases.split(","):
        for size in a.sizes.split(","):
            r = measure(name, SIZES[size], a.repeat, a.without_copyout)
            extra = "" if r["without_copyout"] is None else f" without CopyOut {r['without_copyout'] * 1e3:.3f} ms |"
            print(f"| {name} | {r['kind']} ({r['executor']}) | {size}B | {r['today'] * 1e3:.3f} | "
                  f"{r['previous'] * 1e3:.3f} | {r['new'] * 1e3:.3f} | {r['new'] / r['previous']:.2f} | "
                  f"{r['today_compile'] * 1e3:.0f} | {r['new_compile'] * 1e3:.0f} |{extra}", flush=True)


if __name__ == "__main__":
    main()

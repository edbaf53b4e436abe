"""The product of a conv2d on the CPU: the library routine a conv kernel's Matmul object reads C from.

A conv kernel (lower/conv.py, conv_tile.py) builds an im2col panel per core and image and
multiplies the weights by it through the Matmul API.  On the CPU the product is this module's
instead (as a float matmul's is cblas_sgemm's): `ConvProduct.bind(x, w, product)` gives a call that
writes the whole conv2d [N, K, Ho, Wo] into `product` (float32, or the exact int32 sum of integer
operands), and llvm_kernel.py's lowering of the kernel in host-product mode hands each core's
block of it to GetTensorC, the epilogue then running as the kernel's own vector code (kernel_cpu's
ConvCpu).  Which product, and why (each measured against the others on this host):

- structural zeros (an imported grouped, depthwise, dilated or transposed convolution is a plain
  conv2d of a block-diagonal, dilated or zero-inserted operand: backend_cpu/zeros.py finds them)
  are skipped: conv_sparse.py's classes of gathered windows and one sgemm per group, or
  conv_direct.py's rows computed in registers for few channels per output; a call whose compact
  operands are not finite runs the dense product (a skipped 0 * inf is NaN in the dense sum);
- a dense pointwise conv (1x1, stride 1, no padding): one sgemm per image, [K, C] @ [C, H*W],
  straight into the product;
- stride 1 with C >= K: no im2col matrix.  The padded images are flattened with their padded
  width Wp, so tap (r, s) of every output position is the contiguous slice starting at r*Wp + s;
  each tap is one sgemm on a strided view of the same buffer, accumulated with beta = 1, computing
  Wp - Wo junk columns per row that are not copied out (the CPU twin of the cube's Load3D); every
  tap of one block of columns before the next, so the block stays in L2;
- otherwise every tap's window is gathered once (im2col, copy_list: one native call) and
  multiplied once, K = R*S*C (per-tap products re-read and re-write the [K, cols] accumulator R*S
  times; the windows cost R*S copies of the [C, cols] input instead: fewer bytes when C < K);
- every sgemm of one product in ONE native call (blas.gemm_list: the Python around each call
  cost ~6 us, more than a small tap computes), on the calling thread -- or, for a large product,
  its independent runs (a block of columns' taps, a pointwise conv's image) handed out to the
  pool's threads, each one such call (blas.gemm_runs; the same sgemms in the same order);
- buffers above CONV_BUFFER_BYTES: a few images at a time (`blocks`).

float16 / bfloat16 operands are widened into the float32 buffers.  Integer operands: the exact
sum mod 2**32 -- the float32 routine above on the operands' values when every partial sum is an
integer below 2**24 (exact in any order), else int_product.conv2d.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..reference import _round, _widen
from . import conv_sparse, int_product
from .blas import gemm_acc, gemm_list, gemm_runs, sgemm_address
from .gather import copy_list

__all__ = ["ConvProduct", "INTS"]

GROUP_BYTES = 4 << 20          # `blocks`: images per sgemm so the accumulator stays in L2/L3
CONV_BUFFER_BYTES = 64 << 20   # a bound product keeps its padded images and accumulator up to this
# stride-1 convs per tap: columns per block so that the block's [C + K, cols] operands fit L2
# (measured, CPU time: 58_conv_transposed_3D 195 ms unblocked, 124 ms at 512 KB, 89 at 256 KB,
# 90 at 128 KB; torch eager 34 ms)
TAP_BLOCK_BYTES = 256 << 10
INTS = {dt.int8, dt.uint8, dt.int32}   # integer products: exact, wrapping


class ConvProduct:
    """The product of one conv2d of static shapes (module doc); `bind` per set of arrays."""

    def __init__(self, x_shape, w_shape, out_shape, stride, padding, integer: bool = False):
        self.x_shape, self.w_shape, self.out_shape = tuple(x_shape), tuple(w_shape), tuple(out_shape)
        self.stride, self.padding = tuple(stride), tuple(padding)
        self.integer = integer
        self._sparse = None   # (masks' key, conv_sparse.SparseConv or None)

    def bind(self, x, w, product, masks=None, sources=(None, None)):
        """A call writing the conv2d of `x` and `w` into `product` ([N, K, Ho, Wo], C-contiguous:
        float32, int32 for integer operands), or None when it cannot (an operand read from its
        source that the sparse product does not take).  `masks`: per operand its structural-zero
        mask or None; `sources`: per operand None or the index array saying which elements of the
        array passed for it the operand copies (`sourced`)."""
        if self.integer:
            return self._integer(x, w, product)
        masks = masks or [None, None]
        # with zeros to skip, or with few output channels for the direct kernel (a dense
        # pointwise conv is one sgemm per image: `_dense`)
        pointwise = self.w_shape[2:] == (1, 1) and self.stride == (1, 1) and self.padding == (0, 0)
        if not (pointwise and all(m is None for m in masks)) and all(a.flags.c_contiguous for a in (x, w)):
            sparse = self._sparse_fill(x, w, product, masks, sources)
            if sparse is not None:
                return sparse
        if any(s is not None for s in sources):
            return None
        return self._dense(x, w, product)

    def _integer(self, x, w, product):
        """The exact sum mod 2**32 of integer operands into int32 `product`: the dense float32
        product's routine (`_dense`, on float32 copies of the operands' values) when every partial sum is an
        integer below 2**24 -- C*R*S * max|x| * max|w|, from this call's values; every float32
        addition is exact then, in whatever order the sgemms add -- else int_product.conv2d (im2col
        in numpy, chunked exact products: 20-40x slower for a uint8 3x3 conv of 16 channels)."""
        stride, padding = self.stride, self.padding
        taps = int(np.prod(self.w_shape[1:]))
        acc = np.empty(self.out_shape, np.float32)
        native = self._dense(x, w, acc)

        def exact():
            if taps * int_product.magnitude(x) * int_product.magnitude(w) < 1 << 24:
                native()
                np.copyto(product, acc, casting="unsafe")   # integers below 2**24: exact
            else:
                product[...] = _round(int_product.conv2d(x, w, stride, padding), dt.int32)
        exact.buffers = acc
        return exact

    @property
    def sparse_plan(self):
        """The conv_sparse.SparseConv the last bound call skips zeros by, or None (dense)."""
        return None if self._sparse is None else self._sparse[1]

    def sourced(self, masks) -> bool:
        """Whether the sparse product takes these masks, so that operands may be read from the
        parameters they copy (`bind`'s sources)."""
        if not any(m is not None for m in masks) or self.integer:
            return False
        return self._plan(masks) is not None

    def _plan(self, masks):
        """The conv2d's zero structure (conv_sparse.SparseConv) when skipping its zeros saves
        enough, else None; kept per masks (a kernel's masks are static)."""
        key = tuple(None if m is None else (m.shape, m.tobytes()) for m in masks)
        if self._sparse is None or self._sparse[0] != key:
            plan = conv_sparse.SparseConv(self.x_shape, self.w_shape, self.out_shape, self.stride, self.padding, *masks)
            self._sparse = (key, plan if plan.worth else None)
        return self._sparse[1]

    def _sparse_fill(self, x, w, product, masks, sources=(None, None)):
        """The conv2d without its structurally zero products (conv_sparse.py), or None when they
        are too few to matter.  A call whose compact input or weight is not finite runs the dense
        conv instead (built then, once; operands read from their sources are materialised for it)."""
        plan = self._plan(masks)
        if plan is None or not (x.dtype == w.dtype == np.float32):
            return None
        bound = plan.bind(x, w, product, gemm_list, sources)
        if bound is None:
            return None
        steps = bound.steps
        dense = []

        def dense_fill():
            if not dense:
                x_d, w_d = bound.dense_operands()
                dense.append(self._dense(x_d, w_d, product))
            dense[0]()

        def fill():
            if plan.empty:
                product.fill(0.0)
            elif bound.gather():
                for step in steps:
                    step()
            else:
                dense_fill()
        fill.bound = bound   # its buffers (and the views the native calls read) live as long as the call
        return fill

    def _dense(self, x, w, product):
        """The dense float32 product: `_native`, or a few images at a time."""
        native = self._native(x, w, product)
        if native is not None:
            return native

        def fill():
            for sl, block in self.blocks(x, w):
                product[sl] = block
        return fill

    def _native(self, x, w, product):
        """The float32 conv2d of these arrays into `product` with every image in one set of kept
        buffers and every sgemm in ONE native call (`gemm_list`), or None (no 64-bit sgemm, buffers
        over CONV_BUFFER_BYTES).  Module doc: pointwise, per tap (stride 1, C >= K), or im2col."""
        (sh, sw), (ph, pw) = self.stride, self.padding
        n, c, h, wd = x.shape
        k, _, r, s = w.shape
        _, _, ho, wo = product.shape
        if r == s == sh == sw == 1 and ph == pw == 0 and sgemm_address() is not None \
                and x.dtype == w.dtype == product.dtype == np.float32 and x.flags.c_contiguous:
            # a pointwise conv: per image [K, C] @ [C, H*W] straight into the output (no
            # padded copy, no transposes: KernelBench 87_conv_pointwise 2x32x32x32 by 32)
            w2 = w.reshape(k, c)
            gemms = gemm_runs([(w2, x[i].reshape(c, h * wd), product[i].reshape(k, h * wd), 0.0) for i in range(n)], 1)
            if gemms is not None:
                gemms.operands = (x, w, product)
                return gemms
        hp, wp = h + 2 * ph, wd + 2 * pw
        stride1 = sh == 1 and sw == 1 and c >= k
        cols = n * hp * wp if stride1 else n * ho * wo
        floats = c * (n * hp + r) * wp + k * cols + (0 if stride1 else r * s * c * cols)
        if 4 * floats > CONV_BUFFER_BYTES or sgemm_address() is None:
            return None
        xt = x.transpose(1, 0, 2, 3)
        if stride1:
            padded = np.zeros((c, n * hp + r, wp), np.float32)   # + r spare rows for the last taps
            inner = padded[:, :n * hp].reshape(c, n, hp, wp)[:, :, ph:ph + h, pw:pw + wd]
            flat = padded.reshape(c, -1)
            taps = np.empty((r, s, k, c), np.float32)
            wt = w.transpose(2, 3, 0, 1)
            acc = np.empty((k, cols), np.float32)
            block = max(256, TAP_BLOCK_BYTES // (4 * (c + k)) // 64 * 64)
            # each block of columns takes every tap in turn: blocks are independent runs of R*S
            # sgemms, handed out to the pool's threads for a large product (blas.gemm_runs)
            gemms = gemm_runs([(taps[rr, ss], flat[:, rr * wp + ss + c0:rr * wp + ss + min(c0 + block, cols)],
                                acc[:, c0:c0 + block], 1.0 if rr or ss else 0.0)
                               for c0 in range(0, cols, block) for rr in range(r) for ss in range(s)], r * s)
            grid = acc.reshape(k, n, hp, wp)[:, :, :ho, :wo].transpose(1, 0, 2, 3)
            windows = []
        else:
            padded = np.zeros((c, n, hp, wp), np.float32)
            inner = padded[:, :, ph:ph + h, pw:pw + wd]
            im2col = np.empty((r, s, c, n, ho, wo), np.float32)
            windows = [(im2col[rr, ss], padded[:, :, rr:rr + sh * (ho - 1) + 1:sh, ss:ss + sw * (wo - 1) + 1:sw])
                       for rr in range(r) for ss in range(s)]
            taps = np.empty((k, r, s, c), np.float32)
            wt = w.transpose(0, 2, 3, 1)
            acc = np.empty((k, cols), np.float32)
            gemms = gemm_list([(taps.reshape(k, r * s * c), im2col.reshape(r * s * c, cols), acc, 0.0)])
            grid = acc.reshape(k, n, ho, wo).transpose(1, 0, 2, 3)
        if gemms is None:
            return None
        copyto = np.copyto
        # the windows in one native call (numpy's strided copy costs ~20 ns per run of a row:
        # KernelBench 50's 121 taps of 11 x 11 at stride 4 are 40 k runs of 55 floats)
        gathered = copy_list(windows) if windows else None

        def fill():
            copyto(inner, xt)   # the padding around it stays zero
            if gathered is not None:
                gathered()
            else:
                for dst, src in windows:
                    copyto(dst, src)
            copyto(taps, wt)
            gemms()
            copyto(product, grid)
        fill.buffers = (padded, taps, acc, windows)
        return fill

    def blocks(self, x, w):
        """(slice of images, float32 product block) pairs, a few images at a time, without the
        im2col matrix for stride 1 (module doc)."""
        (sh, sw), (ph, pw) = self.stride, self.padding
        n, c, h, wd = x.shape
        k, _, r, s = w.shape
        _, _, ho, wo = self.out_shape
        hp, wp = h + 2 * ph, wd + 2 * pw
        taps = np.ascontiguousarray(_widen(w).astype(np.float32).transpose(2, 3, 0, 1))   # R, S, K, C
        if not (sh == 1 and sw == 1):
            yield from self._gathered(x, taps)
            return
        # `group` padded images stacked along the rows of one buffer per channel, so each tap is
        # ONE sgemm over all of them; the Hp - Ho rows between images and the Wp - Wo columns per
        # row are junk not copied out
        group = max(1, min(n, GROUP_BYTES // (4 * k * hp * wp)))
        padded = np.zeros((c, group * hp + r, wp), np.float32)   # + r spare rows for the last taps
        flat = padded.reshape(c, -1)
        acc = np.empty((k, group * hp * wp), np.float32)
        for i0 in range(0, n, group):
            g = min(group, n - i0)
            view = padded[:, :g * hp].reshape(c, g, hp, wp)
            view[:, :, ph:ph + h, pw:pw + wd] = x[i0:i0 + g].transpose(1, 0, 2, 3)
            cols = g * hp * wp
            block = max(256, TAP_BLOCK_BYTES // (4 * (c + k)) // 64 * 64)
            products = [(taps[rr, ss], flat[:, rr * wp + ss + c0:rr * wp + ss + min(c0 + block, cols)],
                         acc[:, c0:min(c0 + block, cols)], 1.0 if rr or ss else 0.0)
                        for c0 in range(0, cols, block) for rr in range(r) for ss in range(s)]
            gemms = gemm_list(products)
            if gemms is not None:
                gemms()
            else:
                for a_, b_, c_, beta in products:
                    gemm_acc(a_, b_, c_, accumulate=beta != 0.0)
            grid = acc[:, :cols].reshape(k, g, hp, wp)
            for j in range(g):
                yield slice(i0 + j, i0 + j + 1), grid[:, j, :ho, :wo][None]

    def _gathered(self, x, taps):
        """Strided: each tap's input window (C x Ho*Wo) gathered once per image."""
        (sh, sw), (ph, pw) = self.stride, self.padding
        n, c, h, wd = x.shape
        r, s, k, _ = taps.shape
        _, _, ho, wo = self.out_shape
        padded = np.zeros((c, h + 2 * ph, wd + 2 * pw), np.float32)
        gathered = np.empty((c, ho, wo), np.float32)
        acc = np.empty((k, ho * wo), np.float32)
        for i in range(n):
            padded[:, ph:ph + h, pw:pw + wd] = x[i]
            for rr in range(r):
                for ss in range(s):
                    gathered[...] = padded[:, rr:rr + sh * ho:sh, ss:ss + sw * wo:sw]
                    gemm_acc(taps[rr, ss], gathered.reshape(c, ho * wo), acc, accumulate=rr > 0 or ss > 0)
            yield slice(i, i + 1), acc.reshape(k, ho, wo)[None]

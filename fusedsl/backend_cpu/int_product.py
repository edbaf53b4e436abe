"""Exact integer matrix products on BLAS: matmul and conv2d of int8 / uint8 / int32 operands.

numpy's integer matmul (and torch's on the CPU) is a plain loop, some hundred times slower than
sgemm.  An integer product is exact on a float BLAS when every partial sum the BLAS can form
is an integer the float holds exactly: whatever order and blocking the kernel sums in, each
partial sum is a sum of some of the products, so its magnitude is at most
K * max|a| * max|b|.  With that bound below 2**24 (float32) or 2**53 (float64) every float
addition is exact, and the float result converts to the integer exactly.  So:

- the K axis is cut into chunks short enough for float32 (int8: 1024 columns, since
  |a * b| <= 2**14; uint8: 258), each chunk one sgemm, converted to int32 and summed in int32
  (wrapping mod 2**32 -- every result dtype here is at most 32 bits wide, and the reduction
  mod 2**32 commutes with the final narrowing to int8 / uint8, which is numpy's wraparound);
- the bound is taken from the operands' actual values, not their dtype, so an int32 tensor
  holding small numbers (an index, a quantised tensor widened by an importer) takes the same
  path;
- when float32 would need chunks of fewer than 64 columns, float64 (dgemm) with its 2**53;
- int32 operands too large for that are split into 16-bit halves, a = ah * 2**16 + al with
  al in [0, 2**16): a @ b = al @ bl + 2**16 (ah @ bl + al @ bh) mod 2**32 (the ah @ bh term
  is a multiple of 2**32), two float64 products (the cross terms as one over K twice as long)
  whose terms are below 2**32, exact in chunks of 2**20 columns.

The result is the exact sum mod 2**32 as int32; the caller narrows it to the op's dtype
(reference._round: numpy's astype, wrapping).  Products run with numpy's matmul (OpenBLAS) on
the calling thread's BLAS settings (cube_split.py holds them at one thread and hands a `rows`
runner, blas.row_blocks, that spreads a big product's row blocks over the pool's threads).
"""
from __future__ import annotations

import numpy as np

_F32_EXACT = 1 << 24
_F64_EXACT = 1 << 53
_MIN_F32_CHUNK = 64   # below this many K columns per sgemm, one dgemm is faster than the chunks


def magnitude(x: np.ndarray) -> int:
    """max |x| as a Python int (0 for an empty array)."""
    if x.size == 0:
        return 0
    return max(abs(int(x.max())), abs(int(x.min())))


def _chunked(ftype, chunk: int, bf: np.ndarray):
    """The product of rows of `a` by B (already converted to `ftype`): out (int32) = a @ b mod 2**32
    from float products of at most `chunk` columns of K each, every one exact in `ftype` (the
    caller's bound)."""
    k, n = bf.shape

    def product(a: np.ndarray, out: np.ndarray) -> None:
        af = a.astype(ftype)
        if k <= chunk:
            _to_int32(np.matmul(af, bf), out)
            return
        part = np.empty((a.shape[0], n), ftype)
        tmp = np.empty((a.shape[0], n), np.int32)
        out[...] = 0
        for k0 in range(0, k, chunk):
            np.matmul(af[:, k0:k0 + chunk], bf[k0:k0 + chunk], out=part)
            _to_int32(part, tmp)
            np.add(out, tmp, out=out)   # int32 addition wraps: the sum mod 2**32
    return product


def _to_int32(prod: np.ndarray, out: np.ndarray) -> None:
    """An exact integer-valued float array into int32, mod 2**32 (float64 values may pass 2**31)."""
    if prod.dtype == np.float32 or _magnitude_fits_int32(prod):
        np.copyto(out, prod, casting="unsafe")
        return
    out[...] = prod.astype(np.int64).astype(np.int32)


def _magnitude_fits_int32(prod: np.ndarray) -> bool:
    return prod.size == 0 or (float(prod.max()) < 2.0 ** 31 and float(prod.min()) >= -2.0 ** 31)


def _halves(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(high, low) 16-bit halves of an integer array: x = high * 2**16 + low, low in [0, 2**16)."""
    x = x.astype(np.int64)
    return x >> 16, x & 0xFFFF


def matmul_2d(a: np.ndarray, b: np.ndarray, out: np.ndarray, rows=None) -> None:
    """out (int32 [M, N], any strides) = a @ b mod 2**32, exactly, for integer a [M, K], b [K, N].
    `rows(m, macs, fn)`, when given, runs fn(lo, hi) over blocks of the rows (blas.row_blocks: on the pool's
    threads for a big product); B is converted once for all of them, and the float type and
    chunks are chosen from the whole of A."""
    m, k = a.shape
    n = b.shape[1]
    bound = magnitude(a) * magnitude(b)
    if 0 in (m, k, n) or bound == 0:
        out[...] = 0
        return
    chunk32 = _F32_EXACT // bound
    chunk64 = _F64_EXACT // bound
    if chunk32 >= min(k, _MIN_F32_CHUNK):
        product = _chunked(np.float32, chunk32, b.astype(np.float32))
    elif chunk64 >= 1:
        product = _chunked(np.float64, chunk64, b.astype(np.float64))
    else:
        product = _halves_product(b)
    if rows is None:
        product(a, out)
    else:
        rows(m, m * k * n, lambda lo, hi: product(a[lo:hi], out[lo:hi]))


_HALVES_CHUNK = 1 << 20   # K columns per float64 product of halves: 2 * K * 2**31 < 2**53


def _halves_product(b: np.ndarray):
    """The product of rows of `a` by B for |a|, |b| up to 2**31: a @ b = al @ bl + 2**16 (ah @ bl +
    al @ bh) mod 2**32 (module docstring), the cross terms as ONE float64 product over K twice as
    long ([ah, al] @ [bl; bh]), each term below 2**31 in magnitude; the sums are combined in uint64,
    which wraps mod 2**64 and so keeps them mod 2**32."""
    bh, bl = _halves(b)
    k = b.shape[0]
    chunks = [(slice(k0, k0 + _HALVES_CHUNK), bl[k0:k0 + _HALVES_CHUNK].astype(np.float64),
               np.concatenate([bl[k0:k0 + _HALVES_CHUNK], bh[k0:k0 + _HALVES_CHUNK]]).astype(np.float64))
              for k0 in range(0, k, _HALVES_CHUNK)]

    def product(a: np.ndarray, out: np.ndarray) -> None:
        ah, al = _halves(a)
        low = np.zeros(out.shape, np.uint64)
        cross = np.zeros(out.shape, np.uint64)
        for ks, bl_f, cross_f in chunks:
            p0 = np.matmul(al[:, ks].astype(np.float64), bl_f)
            p1 = np.matmul(np.concatenate([ah[:, ks], al[:, ks]], axis=1).astype(np.float64), cross_f)
            low += p0.astype(np.int64).view(np.uint64)
            cross += p1.astype(np.int64).view(np.uint64)
        np.left_shift(cross, np.uint64(16), out=cross)
        low += cross
        np.copyto(out, low.astype(np.uint32).view(np.int32))
    return product


def matmul(a: np.ndarray, b: np.ndarray, transpose_a: bool = False, transpose_b: bool = False,
           rows=None) -> np.ndarray:
    """numpy's matmul of integer arrays (batch axes broadcast), the exact sum mod 2**32 as int32
    (`rows`: matmul_2d's)."""
    if transpose_a:
        a = np.swapaxes(a, -1, -2)
    if transpose_b:
        b = np.swapaxes(b, -1, -2)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    out = np.empty(batch + (a.shape[-2], b.shape[-1]), np.int32)
    a_b = np.broadcast_to(a, batch + a.shape[-2:])
    b_b = np.broadcast_to(b, batch + b.shape[-2:])
    if all(d == 1 for d in b.shape[:-2]):
        # one shared B: the batch matrices of A are consecutive rows of one product
        matmul_2d(a_b.reshape(-1, a.shape[-1]), b.reshape(b.shape[-2:]), out.reshape(-1, b.shape[-1]), rows)
        return out
    for idx in np.ndindex(*batch):
        matmul_2d(a_b[idx], b_b[idx], out[idx], rows)
    return out


_CONV_COLS_BYTES = 16 << 20   # im2col rows per product: the gathered windows stay below this


def conv2d(x: np.ndarray, w: np.ndarray, stride, padding) -> np.ndarray:
    """NCHW conv2d of integer x [N, C, H, W] and KCRS w [K, C, R, S], the exact sum mod 2**32 as
    int32 [N, K, Ho, Wo]: per group of images, the windows gathered (im2col) and one product
    W [K, C*R*S] @ cols [C*R*S, images * Ho*Wo]."""
    (sh, sw), (ph, pw) = stride, padding
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    ho, wo = (h + 2 * ph - r) // sh + 1, (wd + 2 * pw - s) // sw + 1
    out = np.empty((n, k, ho, wo), np.int32)
    padded = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    wm = w.reshape(k, c * r * s)
    group = max(1, min(n, _CONV_COLS_BYTES // max(1, x.itemsize * c * r * s * ho * wo)))
    cols = np.empty((c, r, s, group, ho, wo), x.dtype)
    acc = np.empty((k, group * ho * wo), np.int32)
    for i0 in range(0, n, group):
        g = min(group, n - i0)
        view = cols[:, :, :, :g]
        for rr in range(r):
            for ss in range(s):
                view[:, rr, ss] = padded[i0:i0 + g, :, rr:rr + sh * ho:sh, ss:ss + sw * wo:sw].transpose(1, 0, 2, 3)
        matmul_2d(wm, view.reshape(c * r * s, g * ho * wo), acc[:, :g * ho * wo])
        out[i0:i0 + g] = acc[:, :g * ho * wo].reshape(k, g, ho, wo).transpose(1, 0, 2, 3)
    return out

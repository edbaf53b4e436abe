"""conv2d over operands with structural zeros: only the products that can be nonzero.

An imported dilated, grouped or transposed convolution is a plain conv2d whose weight or
input is mostly structural zeros (backend_cpu/zeros.py says which).  From the masks:

  * taps: kernel positions (r, s) whose weight is zero for every (k, c) are skipped (dilation);
  * groups: a weight that is block-diagonal over (K, C) in G equal blocks is G products of
    K/G x C/G (groups; G = C is a depthwise convolution);
  * a lattice: the input rows that can be nonzero lie on a + q*i (a transposed convolution's
    zero-inserted input: q = its stride), likewise the columns; padding rows are outside it.

Output row oh reads padded row oh*sh + r; on the lattice only when oh*sh + r = a (mod q).
Rows oh with the same oh*sh mod q form a class (every L = q / gcd(sh, q)-th row) whose taps are
the same and whose compact input rows advance by sh / gcd(sh, q): each class of (row, column)
is one ordinary strided convolution of the compact input (the lattice rows and columns only)
with its own taps, computed as gathered windows and one product per group, its result written
to the class's strided positions of the output.

Skipping a product is exact only when the skipped factor's partner is finite (0 * inf is NaN
in the dense sum).  A plan therefore checks, per call, that the compact input and the weight
are finite (their sums: an inf or NaN makes the sum so) and otherwise runs the dense conv.
Sums run in a different order than the dense per-tap products (float rounding differs; the
result is the same real number).

The plan only lays out buffers and views; `cube` runs the copies and the products (one native
call of every sgemm, blas.gemm_list).
"""
from __future__ import annotations

import math

import numpy as np

from .conv_direct import direct_list
from .gather import copy_list

WORTH = 0.5     # a plan is used when it does at most this fraction of the dense multiply-adds
# ... and saves at least this many: a plan's fixed cost per call (the compact copy, the finite
# checks, the weights' gather, a few native calls) is ~20-30 us, and on small convs it cost more
# than the skipped products (KernelBench 74_conv_transposed_1D_dilated, 0.72 M multiply-adds
# saved: 119 -> 151 us CPU time; 83_conv_depthwise at 0.32 M: 0.30x -> 0.47x eager's time)
MIN_SAVED_MACS = 4 << 20


def _lattice(nonzero: np.ndarray) -> tuple[int, int, int] | None:
    """(first, step, count) of the rows that can be nonzero, or None when none can."""
    idx = np.flatnonzero(nonzero)
    if idx.size == 0:
        return None
    first = int(idx[0])
    step = int(np.gcd.reduce(np.diff(idx))) if idx.size > 1 else 1
    return first, step, (int(idx[-1]) - first) // step + 1


def _groups(kc: np.ndarray) -> int:
    """The most equal diagonal blocks the [K, C] nonzero pattern of the weight fits."""
    k, c = kc.shape
    for g in range(math.gcd(k, c), 1, -1):
        if k % g or c % g:
            continue
        kg, cg = k // g, c // g
        blocks = kc.reshape(g, kg, g, cg).any(axis=(1, 3))
        if not (blocks & ~np.eye(g, dtype=bool)).any():
            return g
    return 1


def _classes(out: int, stride: int, first: int, step: int, taps: int):
    """Per class of output rows: (first output row, count, output step, [(tap, first compact
    row, compact step)]) for the taps that meet the lattice."""
    g = math.gcd(stride, step)
    period, advance = step // g, stride // g
    result = []
    for o0 in range(min(period, out)):
        count = -(-(out - o0) // period)
        hits = [(r, (o0 * stride + r - first) // step, advance)
                for r in range(taps) if (o0 * stride + r - first) % step == 0]
        result.append((o0, count, period, hits))
    return result


class SparseConv:
    """The zero structure of one conv2d (from the masks and static shapes): which images can
    be nonzero, and which classes of output positions read which taps of the compact input
    (module docstring)."""

    def __init__(self, x_shape, w_shape, out_shape, stride, padding, mx, mw):
        n, c, h, wd = x_shape
        k, _, r, s = w_shape
        _, _, ho, wo = out_shape
        (sh, sw), (ph, pw) = stride, padding
        self.x_shape, self.w_shape, self.out_shape, self.padding = tuple(x_shape), tuple(w_shape), tuple(out_shape), (ph, pw)
        rows = np.zeros(h + 2 * ph, bool)
        cols = np.zeros(wd + 2 * pw, bool)
        if mx is None:
            rows[ph:ph + h] = True
            cols[pw:pw + wd] = True
            self.images = list(range(n))
        else:
            rows[ph:ph + h] = mx.any(axis=(0, 1, 3))
            cols[pw:pw + wd] = mx.any(axis=(0, 1, 2))
            self.images = [int(i) for i in np.flatnonzero(mx.any(axis=(1, 2, 3)))]   # the others are all zero
        lat_h, lat_w = _lattice(rows), _lattice(cols)
        wmask = np.ones(w_shape, bool) if mw is None else mw
        taps = wmask.any(axis=(0, 1))
        self.groups = g = _groups(wmask.any(axis=(2, 3)))
        self.dense_macs = n * k * c * r * s * ho * wo
        self.empty = lat_h is None or lat_w is None or not taps.any() or not self.images
        self.classes = []
        self.macs = 0
        if self.empty:   # the input or the weight is all zeros: so is the product
            return
        (ah, qh, nh), (aw, qw, nw) = self.lattice = lat_h, lat_w
        lo_h = hi_h = lo_w = hi_w = 0
        for oh0, ch, lh, hits_h in _classes(ho, sh, ah, qh, r):
            for ow0, cw, lw, hits_w in _classes(wo, sw, aw, qw, s):
                hits = [(rr, ih, dh, ss, iw, dw) for rr, ih, dh in hits_h for ss, iw, dw in hits_w if taps[rr, ss]]
                if hits:
                    self.classes.append((oh0, ch, lh, ow0, cw, lw, hits))
                self.macs += len(hits) * (c // g) * k * len(self.images) * ch * cw
                for _, ih, dh, _, iw, dw in hits:
                    lo_h, hi_h = max(lo_h, -ih), max(hi_h, ih + dh * (ch - 1) - (nh - 1))
                    lo_w, hi_w = max(lo_w, -iw), max(hi_w, iw + dw * (cw - 1) - (nw - 1))
        self.margins = lo_h, hi_h, lo_w, hi_w
        # few channels per output (depthwise: one): each output row straight from its input rows
        # (conv_direct.py) instead of gathered windows and a 1 x taps product per group
        kg, cg = k // g, c // g
        narrow = kg <= DIRECT_NARROW_KG or kg * cg <= DIRECT_MAX_KC   # else 1 x taps sgemms
        self.direct = narrow or (kg <= DIRECT_MAX_KG and
                                 direct_efficiency(self.classes, cg, kg, lo_w + nw + hi_w) >= DIRECT_MIN_EFFICIENCY)
        # every output position of a computed image is some class's (with a tap)
        self.covered = len(self.classes) == min(ho, _period(sh, qh)) * min(wo, _period(sw, qw))
        self._buffers = None

    @property
    def worth(self) -> bool:
        """Used instead of the dense conv: all zero, or the direct kernel (as fast as the dense
        conv with nothing to skip), or the windows and products saving enough."""
        return self.empty or (bool(self.classes) and (self.direct or (
            self.macs <= WORTH * self.dense_macs and self.dense_macs - self.macs >= MIN_SAVED_MACS)))

    def buffers(self, gemm_list):
        """The internal buffers and native calls, made once per plan and reused by every call
        (fresh buffers of this size cost more in page faults than the copies into them):
        (compact input, per class its weight buffer, images per chunk, per chunk of images
        (windows copy, products, the class products [K, images, rows, cols])), or None when
        `gemm_list` (blas.gemm_list) cannot run the products."""
        if self._buffers is None:
            n_img = len(self.images)
            _, c, _, _ = self.x_shape
            k, _, _, s = self.w_shape
            g = self.groups
            kg, cg = k // g, c // g
            (_, _, nh), (_, _, nw) = self.lattice
            lo_h, hi_h, lo_w, hi_w = self.margins
            compact = np.zeros((c, n_img, lo_h + nh + hi_h, lo_w + nw + hi_w), np.float32)
            if self.direct:   # per class its weights and its terms' offsets in the compact input
                hc, wc = compact.shape[2:]
                plane = n_img * hc * wc
                weights = []
                offsets = []
                for _, ch, _, _, cw, _, hits in self.classes:
                    weights.append((np.empty((g, kg, cg, len(hits)), np.float32),
                                    np.array([h[0] * s + h[3] for h in hits], np.intp)))
                    offsets.append(np.array([cl * plane + (ih + lo_h) * wc + iw + lo_w
                                             for cl in range(cg) for _, ih, _, _, iw, _ in hits], np.int64))
                self._buffers = (compact, weights, None, offsets)
                return self._buffers
            per_image = sum(4 * (c * len(hits) + k) * ch * cw for _, ch, _, _, cw, _, hits in self.classes)
            chunk = max(1, min(n_img, CHUNK_BYTES // max(per_image, 1)))
            weights, classes = [], []
            for _, ch, _, _, cw, _, hits in self.classes:
                t = len(hits)
                wbuf = np.empty((g, kg, cg, t), np.float32)
                weights.append((wbuf, np.array([h[0] * s + h[3] for h in hits], np.intp)))
                classes.append((wbuf, np.empty((c, t, chunk, ch, cw), np.float32),
                                np.empty((k, chunk * ch * cw), np.float32)))
            chunks = []
            for j0 in range(0, n_img, chunk):
                nb = min(chunk, n_img - j0)
                windows, products, grids = [], [], []
                for (wbuf, cols, acc), (oh0, ch, lh, ow0, cw, lw, hits) in zip(classes, self.classes):
                    t = len(hits)
                    m = nb * ch * cw
                    cols_nb = cols[:, :, :nb]
                    for j, (_, ih, dh, _, iw, dw) in enumerate(hits):
                        ih, iw = ih + lo_h, iw + lo_w
                        windows.append((cols_nb[:, j], compact[:, j0:j0 + nb, ih:ih + dh * (ch - 1) + 1:dh,
                                                               iw:iw + dw * (cw - 1) + 1:dw]))
                    flat = cols_nb.reshape(g, cg * t, m)
                    products += [(wbuf[i].reshape(kg, cg * t), flat[i], acc[i * kg:(i + 1) * kg, :m], 0.0)
                                 for i in range(g)]
                    grids.append(acc[:, :m].reshape(k, nb, ch, cw))
                gemms = gemm_list(products)
                if gemms is None:
                    return None
                chunks.append((j0, nb, copy_list(windows), gemms, grids, windows, products))
            self._buffers = (compact, weights, chunks, classes)
        return self._buffers

    def bind(self, x, w, product, gemm_list, sources=(None, None)) -> "BoundSparseConv | None":
        """The conv of these arrays (into `product`), or None (see `buffers`).  `sources`: per
        operand None, or an index array of the operand's shape: the operand is then not `x` (or
        `w`) itself but copies element `index` of that array's flat elements (-1: a zero)."""
        if not self.empty and self.buffers(gemm_list) is None:
            return None
        return BoundSparseConv(self, x, w, product, sources)


CHUNK_BYTES = 4 << 20   # gathered windows + products of one chunk of images: stays in L2/L3


def whole_rows(ch: int, cw: int, wc: int, dh: int, dw: int) -> bool:
    """Does a class of ch x cw outputs (unit steps) run its rows as one row of the compact
    width wc: when that fills clearly fewer 16-column vectors than row by row."""
    span = (ch - 1) * wc + cw
    return dh == dw == 1 and -(-span // 16) < 0.9 * ch * -(-cw // 16)


def direct_efficiency(classes, cg: int, kg: int, wc: int) -> float:
    """The direct kernel's share of useful work, weighted by the classes' multiply-adds:
    useful lanes of the (row, block) pairs it computes 4 at a time, times terms / (terms + 16)
    (each group of pairs also pays addresses, masks and stores, about 16 terms' worth), halved
    for single-channel jobs (4 accumulators do not fill the FMA pipes).  KernelBench 59 (3
    channels x 3 taps = 9 terms) and 76 (a 1-D conv of 8 output columns: 1 valid pair of 4,
    half a vector) ran 1.6-1.8x slower direct than as windows and sgemms."""
    useful = done = 0.0
    channels = (kg // 4) * 4 * 1.0 + (kg % 4) * 0.5
    for _, ch, _, _, cw, _, hits in classes:
        _, _, dh, _, _, dw = hits[0]
        blocks = -(-((ch - 1) * wc + cw) // 16) if whole_rows(ch, cw, wc, dh, dw) else ch * -(-cw // 16)
        lanes = -(-blocks // 4) * 4 * 16
        terms = cg * len(hits)
        macs = ch * cw * terms * kg
        useful += macs
        done += macs / (ch * cw / lanes * terms / (terms + 16) * channels / kg)
    return useful / done if done else 0.0
# the direct kernel (conv_direct.py) multiplies from registers, 4 output channels per input load;
# the windows and sgemms copy every window once but reach BLAS's speed on many channels.  Direct is
# used up to this many outputs per group (or terms per group * outputs).  Measured, CPU time, the
# whole conv: 80_conv_standard_2D dilated (32 -> 32, 45 taps) 1444 -> 878 us, 81_conv_transposed
# 1011 -> 902 us, 75 (grouped) 433 -> 323 us, 82 depthwise 200 -> 61 us
DIRECT_MAX_KG = 32
DIRECT_NARROW_KG = 2           # this few outputs per group (or outputs * inputs <= DIRECT_MAX_KC): always direct
DIRECT_MAX_KC = 16
DIRECT_MIN_EFFICIENCY = 0.5    # direct_efficiency below this: windows and sgemms
# the input rows one band of output rows reads (conv_direct jobs).  KernelBench level 2
# 54_Conv2d (2 x 32 x 256 x 256, 32 outputs, 3 x 3), CPU time: unbanded 88 ms, 128 KB 45 ms,
# 256 KB 43 ms, 512 KB 49 ms, 1 MB 49 ms (eager 35 ms)
BAND_BYTES = 256 << 10


def _period(stride: int, step: int) -> int:
    return step // math.gcd(stride, step)


class BoundSparseConv:
    """One conv2d over these arrays: `gather()` copies the compact input and the weights (False
    when either is not finite: the caller then runs the dense conv, a skipped 0 * inf would
    have been NaN), then `steps` are the native calls: per chunk of images the windows, the
    products and the classes' results into the output."""

    def __init__(self, plan: SparseConv, x, w, product, sources=(None, None)):
        self.plan, self.x, self.w, self.product = plan, x, w, product
        self.sources = tuple(sources)
        self._dense = None
        self.steps = []
        if plan.empty:
            return
        n, c, _, _ = plan.x_shape
        k, _, r, s = plan.w_shape
        _, _, ho, wo = plan.out_shape
        ph, pw = plan.padding
        (ah, qh, nh), (aw, qw, nw) = plan.lattice
        lo_h, _, lo_w, _ = plan.margins
        g = plan.groups
        kg, cg = k // g, c // g
        compact, self.weights, chunks, offsets = plan.buffers(None)
        self.compact = compact
        inner = compact[:, :, lo_h:lo_h + nh, lo_w:lo_w + nw]
        lattice = (slice(None), slice(None), slice(ah - ph, ah - ph + qh * (nh - 1) + 1, qh),
                   slice(aw - pw, aw - pw + qw * (nw - 1) + 1, qw))
        images = plan.images
        self._takes = []   # (source's flat elements, destination, index array): numpy per call
        if self.sources[0] is None:
            source = x[lattice]
            self._pairs = [(inner[:, j], source[i]) for j, i in enumerate(images)]
        else:   # the lattice read from the array the operand copies: strided views where they are
            where = self.sources[0][lattice]
            self._pairs = []
            for j, i in enumerate(images):
                view = affine_view(x, where[i])
                if view is not None:
                    self._pairs.append((inner[:, j], view))
                else:
                    self._takes.append((x.reshape(-1), inner[:, j], where[i]))
        self._compact = copy_list(self._pairs) if x.dtype == np.float32 else None
        # the weight's diagonal blocks [G, K/G, C/G, R*S], gathered per call
        self.diag = np.arange(g)
        if self.sources[1] is None:
            self.w6 = w.reshape(g, kg, g, cg, r, s)
        else:   # their elements' positions in the array the weight copies, per class
            at = self.sources[1].reshape(g, kg, g, cg, r, s)[self.diag, :, self.diag]
            at = at.reshape(at.shape[:3] + (-1,))
            for wbuf, taps_at in self.weights:
                self._takes.append((w.reshape(-1), wbuf, np.take(at, taps_at, axis=3)))
            self.w6 = None
        keep = []
        if chunks is None:   # direct: one job per class, image and output channel
            _, _, hc, wc = compact.shape
            flat = compact.reshape(-1)
            plane = compact.shape[1] * hc * wc
            jobs, copies = [], []
            for (wbuf, _), terms, (oh0, ch, lh, ow0, cw, lw, hits) in zip(self.weights, offsets, plan.classes):
                _, _, dh, _, _, dw = hits[0]   # one input step per class (_classes)
                # unit steps: the class's output rows as ONE row of the compact width (the
                # columns past cw are junk, copied out after), so that 16-column vectors are
                # full: 34-column rows fill 34 of 48 lanes, one 1190-column row 1190 of 1200
                span = (ch - 1) * wc + cw
                whole = whole_rows(ch, cw, wc, dh, dw)
                acc = np.empty((k, len(images), ch * wc), np.float32) if whole else None
                # bands of output rows whose input rows (all channels of a group) fit L2: every
                # output channel's job of a band runs before the next band (a 32-channel 256 x
                # 256 image is 8 MB; streamed once per 4 output channels it ran at a third of
                # the speed)
                band = max(1, BAND_BYTES // (4 * cg * wc * max(dh, 1)))
                for j, i in enumerate(images):
                    for b0 in range(0, ch, band):
                        nb = min(band, ch - b0)
                        for grp in range(g):
                            first = grp * cg * plane + j * hc * wc + b0 * dh * wc
                            kk = 0
                            while kk < kg:   # 4 output channels of the group share every input load
                                nk = 4 if kg - kk >= 4 else 1
                                k0 = grp * kg + kk
                                if whole:
                                    out = acc[k0:k0 + nk, j, None, b0 * wc:b0 * wc + (nb - 1) * wc + cw]
                                    into = (flat, first, 0, 1)
                                else:
                                    oh = oh0 + lh * b0
                                    out = product[i, k0:k0 + nk, oh:oh + lh * (nb - 1) + 1:lh, ow0:ow0 + lw * (cw - 1) + 1:lw]
                                    into = (flat, first, dh * wc, dw)
                                jobs.append((out, into, wbuf[grp, kk:kk + nk].reshape(nk, -1), terms))
                                kk += nk
                    if whole:
                        copies.append((product[i, :, oh0:oh0 + lh * (ch - 1) + 1:lh, ow0:ow0 + lw * (cw - 1) + 1:lw],
                                       acc[:, j].reshape(k, ch, wc)[:, :, :cw]))
                keep.append(acc)
            self.steps.append(direct_list(jobs))
            if copies:
                self.steps.append(copy_list(copies))
            keep.append((jobs, offsets, copies))
        for j0, nb, windows, gemms, grids, _, _ in chunks or ():
            results = []
            for grid, (oh0, ch, lh, ow0, cw, lw, _) in zip(grids, plan.classes):
                for j in range(nb):   # image by image: the output's images need not be evenly spaced
                    target = product[images[j0 + j], :, oh0:oh0 + lh * (ch - 1) + 1:lh, ow0:ow0 + lw * (cw - 1) + 1:lw]
                    results.append((target, grid[:, j]))
            keep.append(results)
            self.steps += [windows, gemms, copy_list(results)]
        self._keep = keep   # the views the copy lists read, alive with them
        # what no class writes: the images that are all zero, or everything when some output
        # positions read no tap
        skipped = sorted(set(range(n)) - set(images))
        self._zero = [] if plan.covered else [product]
        if not self._zero and skipped:
            self._zero = [product[i] for i in skipped]

    def gather(self) -> bool:
        """Copy the compact input and the weights; False when either is not finite."""
        if self._compact is not None:
            self._compact()
        else:   # 16-bit input: numpy converts
            for dst, src in self._pairs:
                np.copyto(dst, src)
        for flat, dst, at in self._takes:
            take_zeros(flat, at, dst)
        if not (math.isfinite(float(self.compact.sum())) and math.isfinite(float(np.sum(self.w, dtype=np.float32)))):
            return False
        if self.w6 is not None:
            diag = self.w6[self.diag, :, self.diag]          # [G, K/G, C/G, R, S]
            diag = diag.reshape(diag.shape[:3] + (-1,))
            for wbuf, taps_at in self.weights:
                if diag.dtype == np.float32:
                    np.take(diag, taps_at, axis=3, out=wbuf)
                else:
                    np.copyto(wbuf, np.take(diag, taps_at, axis=3))
        for z in self._zero:
            z.fill(0.0)
        return True

    def dense_operands(self):
        """(x, w) as dense arrays of the conv's operand shapes: the arrays passed, or the
        operands made from the arrays they copy (`sources`), into buffers kept for the next
        time (the dense conv binds them)."""
        if self._dense is None:
            self._dense = tuple(np.zeros(shape, np.float32) if at is not None else None
                                for shape, at in zip((self.plan.x_shape, self.plan.w_shape), self.sources))
        out = []
        for arr, at, buf in zip((self.x, self.w), self.sources, self._dense):
            if at is None:
                out.append(arr)
            else:
                take_zeros(arr.reshape(-1), at, buf)
                out.append(buf)
        return tuple(out)


def take_zeros(flat, at, out) -> None:
    """out[...] = flat[at] with 0 where at is -1 (a structural zero)."""
    np.copyto(out, np.where(at >= 0, flat[np.maximum(at, 0)], np.float32(0.0)))


def affine_view(arr, at):
    """A strided view of C-contiguous `arr` whose elements are arr.flat[at] (`at` an index
    array), or None when `at` is not affine in its coordinates (or reads a zero, -1)."""
    if at.size == 0 or (at < 0).any():
        return None
    base = int(at.flat[0])
    strides = []
    expect = np.full(at.shape, base, np.int64)
    for axis, n in enumerate(at.shape):
        step = 0
        if n > 1:
            one = [0] * at.ndim
            one[axis] = 1
            step = int(at[tuple(one)]) - base
        strides.append(step)
        shape = [1] * at.ndim
        shape[axis] = n
        expect = expect + step * np.arange(n, dtype=np.int64).reshape(shape)
    if not np.array_equal(expect, at):
        return None
    item = arr.itemsize
    return np.ndarray(at.shape, arr.dtype, buffer=arr.reshape(-1), offset=base * item,
                      strides=tuple(s * item for s in strides))

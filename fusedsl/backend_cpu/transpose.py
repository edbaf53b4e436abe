"""A lone transpose / permute, natively: cache-blocked tiles on the host threads.

A transpose is a kernel of its own (kind "single").  numpy's strided copy walks the output in
order and reads the input with a stride of a whole row per element, so every read touches a new
cache line (and, for large rows, a new page): [1024, 4096] float32 ran at a few percent of a
memory copy's bandwidth.  Here the permutation is first simplified (input axes that stay
adjacent and in order in the output are merged), then:

  - when the input's last axis stays last, every output row is a contiguous run of the input:
    numpy's copy already moves whole runs (memcpy-like), so it does the work;
  - otherwise the work is a batch of 2-D transposes: the input's last (contiguous) axis c and
    the input axis p that becomes the output's last axis.  A tile is T x T elements, T = one
    64-byte cache line of them (16 float32): its T input lines are loaded as vectors,
    transposed in registers (`network`: in-lane unpacks, then 16-byte block shuffles) and
    stored as T whole output lines, so every line is read once and written whole.  Edge tiles
    (the last along p or c, and the first along p when the tiles start early, below) run the
    same registers through masked loads and stores.  A block is BAND tiles along c (the rows'
    next lines) of one row of tiles; blocks run on the pool's threads for large arrays.  Every
    full tile prefetches (into L2) its lines of the row of tiles PF_ROWS rows ahead: the
    hardware prefetchers see T interleaved short runs, too short to follow when the rows are
    short ([64, 256, 256] perm (0, 2, 1): 2.4 -> 1.5 ms, CPU time).  Outputs of
    STREAM_MIN_BYTES and more are written with streaming (non-temporal) stores: an ordinary
    store first reads the line it writes, a third of the traffic.  Such stores must write
    whole aligned lines: fusedsl's own outputs start on a line (fusedsl/buffers.py); for a
    caller's out= array starting elsewhere the tiles along p start `off` elements early, so
    that every full tile's lines are aligned and the first tile of each row of tiles is a
    masked one.
    Left as is: an output whose rows are a multiple of 4 KB apart writes every line of a row
    of tiles into one L1 set ([2048, 512] -> [512, 2048] f32 runs at 79 ns per 16x16 tile,
    [2032, 512] at 54 ns); walking tiles along p instead, to spread the lines, measured slower
    (the reads then scatter).

The kernel moves bits (an integer type of the element's width), so every dtype is exact.
"""
from __future__ import annotations

import weakref

import numpy as np

from .. import buffers
from ..ir.core import Function
from ..lower.transpose import simplify   # the same simplification the printed kernel uses
from . import jit
from .launch import KERNEL_PROTO, host_threads, run_blocks

SYMBOL = "fusedsl_transpose"
LINE = 64                      # bytes per tile row: one cache line
# Outputs from this size on are written with streaming stores (full tiles; measured on this
# host, CPU time, [1024, 4096] float32: 0.5-0.6x of a memory copy's speed with ordinary
# stores, 0.95-1.2x streamed: an ordinary store of a line first reads it).  Smaller outputs
# stay in the cache for the kernel that reads them next.
STREAM_MIN_BYTES = 8 << 20
# Software prefetch: rows of tiles ahead, and the locality hint (2: into L2; into L1 the T
# lines of a tile, a multiple of 4 KB apart in long rows, evict each other).  Measured, CPU
# time, PF_ROWS 0 / 1 / 2: [64, 256, 256] perm (0, 2, 1) 2.07 / 1.61 / 1.47 ms (copy 1.59),
# [1024, 4096] 2.18 / 2.20 / 2.11 ms (copy 1.64), [32, 64, 512] perm (2, 0, 1) unchanged.
PF_ROWS = 2
PF_LOC = 2
BAND = 32                      # tiles along c walked before the next row of tiles (measured best of 2..256)
BAND_P = 1                     # rows of tiles per block (2-D blocks of 4x4 .. 2x16 tiles measured slower)
# Bytes moved (read + written) from which the pool's threads share the tiles.  Interleaved
# measurements on this shared 2-vCPU host ([1024, 4096] f32, 32 MB moved): one thread 2.8-3.3 ms,
# two threads 7-12 ms (the other vCPU is busy, and a transpose is bound by memory latency
# per line, which a second busy thread does not add); the vector kernels' pool threshold is 16 MB.
PARALLEL_MIN_BYTES = 64 << 20
_ARGS = 13


def tile_side(itemsize: int) -> int:
    """Elements per tile side: one 64-byte cache line of elements (16 float32, 32 float16)."""
    return LINE // itemsize


def network(itemsize: int) -> list[tuple[int, list[int], list[int]]]:
    """The in-register transpose of T rows of one 64-byte line: stages (step, lo, hi) where rows
    i and i + step (i & step == 0) become shuffle(i, i+step, lo) and shuffle(i, i+step, hi).
    First in-lane unpacks (interleaving elements, then pairs, ... within each 16-byte lane: the
    one-cycle vpunpck* forms), then two stages of 16-byte block shuffles (vshufi32x4).  A
    two-source permute per stage instead (the first version) ran ~1.5x slower per tile."""
    T, E = LINE // itemsize, 16 // itemsize
    stages, g, step = [], 1, 1
    while g < E:
        lo, hi = [], []
        for lane in range(4):
            nb = E // g
            for half, mask in ((0, lo), (1, hi)):
                for b in range(nb // 2):
                    first = lane * E + (half * nb // 2 + b) * g
                    mask += [first + e for e in range(g)] + [T + first + e for e in range(g)]
        stages.append((step, lo, hi))
        g, step = 2 * g, 2 * step
    for _ in range(2):
        def blocks(src, lanes):
            return [src + lane * E + e for lane in lanes for e in range(E)]
        stages.append((step, blocks(0, (0, 2)) + blocks(T, (0, 2)), blocks(0, (1, 3)) + blocks(T, (1, 3))))
        step *= 2
    return stages


def network_columns(itemsize: int) -> list[int]:
    """Which column of the tile each register holds after `network` (rows come out in order)."""
    T = LINE // itemsize
    rows = [[(r, c) for c in range(T)] for r in range(T)]
    for step, lo, hi in network(itemsize):
        nxt = list(rows)
        for i in range(T):
            if not i & step:
                both = rows[i] + rows[i + step]
                nxt[i], nxt[i + step] = [both[k] for k in lo], [both[k] for k in hi]
        rows = nxt
    assert all(row == [(r, row[0][1]) for r in range(T)] for row in rows)
    return [row[0][1] for row in rows]


def _network_ir(itemsize: int, p: str) -> tuple[list[str], list[int]]:
    """IR of `network` from registers %{p}.r0.{i}; (lines, column of register %{p}.r{j})."""
    T, t = LINE // itemsize, f"i{8 * itemsize}"
    vt = f"<{T} x {t}>"
    L, stage = [], 0
    for step, lo, hi in network(itemsize):
        for i in range(T):
            if i & step:
                continue
            for dst, mask in ((i, lo), (i + step, hi)):
                m = ", ".join(f"i32 {k}" for k in mask)
                L.append(f"  %{p}.r{stage + 1}.{dst} = shufflevector {vt} %{p}.r{stage}.{i}, {vt} %{p}.r{stage}.{i + step}, <{T} x i32> <{m}>")
        stage += 1
    L += [f"  %{p}.r{j} = bitcast {vt} %{p}.r{stage}.{j} to {vt}" for j in range(T)]
    return L, network_columns(itemsize)


def _ir(itemsize: int, nt: bool = False) -> str:
    """The kernel: void(i64 block_begin, i64 block_end, ptr args, ptr scratch); args (i64):
    src, dst, in_off*, out_off*, P, C, in stride of p, out stride of c, tiles along p, along c."""
    t = f"i{8 * itemsize}"
    T = tile_side(itemsize)
    L = [f"define void @{SYMBOL}(i64 %b0, i64 %b1, ptr noalias %args, ptr %scratch) nounwind {{",
         "entry:"]
    names = ["src", "dst", "inoff", "outoff", "P", "C", "sp", "oq", "tpn", "tcn", "bw", "bp", "off"]
    for i, n in enumerate(names):
        L.append(f"  %{n}.p = getelementptr i64, ptr %args, i64 {i}")
        if n in ("src", "dst", "inoff", "outoff"):
            L.append(f"  %{n} = load ptr, ptr %{n}.p, align 8")
        else:
            L.append(f"  %{n} = load i64, ptr %{n}.p, align 8")
    L += ["  %nband.a = add i64 %tcn, %bw",
          "  %nband.b = sub i64 %nband.a, 1",
          "  %nband = udiv i64 %nband.b, %bw",
          "  %npb.a = add i64 %tpn, %bp",
          "  %npb.b = sub i64 %npb.a, 1",
          "  %npb = udiv i64 %npb.b, %bp",
          "  %per = mul i64 %nband, %npb",
          "  br label %blk.head",
          "blk.head:",
          "  %blk = phi i64 [ %b0, %entry ], [ %blk.next, %blk.latch ]",
          "  %blk.done = icmp uge i64 %blk, %b1",
          "  br i1 %blk.done, label %exit, label %blk.body",
          "blk.body:",   # a block: `bp` rows of tiles (along p) by `bw` tiles along c of one 2-D slice
          "  %outer = udiv i64 %blk, %per",
          "  %r = urem i64 %blk, %per",
          "  %band = udiv i64 %r, %npb",
          "  %pb = urem i64 %r, %npb",
          "  %tcbase = mul i64 %band, %bw",
          "  %tpbase = mul i64 %pb, %bp",
          "  %ibp = getelementptr i64, ptr %inoff, i64 %outer",
          "  %ib = load i64, ptr %ibp, align 8",
          "  %obp = getelementptr i64, ptr %outoff, i64 %outer",
          "  %ob = load i64, ptr %obp, align 8",
          "  br label %tp.head",
          "tp.head:",
          "  %tpi = phi i64 [ 0, %blk.body ], [ %tpi.next, %tp.latch ]",
          "  %tp = add i64 %tpbase, %tpi",
          "  %tpi.end = icmp uge i64 %tpi, %bp",
          "  %tp.end = icmp uge i64 %tp, %tpn",
          "  %tp.done = or i1 %tpi.end, %tp.end",
          "  br i1 %tp.done, label %blk.latch, label %tc.pre",
          "tc.pre:",
          "  br label %tc.head",
          "tc.head:",
          "  %tcb = phi i64 [ 0, %tc.pre ], [ %tcb.next, %tc.latch ]",
          "  %tc = add i64 %tcbase, %tcb",
          "  %tcb.end = icmp uge i64 %tcb, %bw",
          "  %tc.end = icmp uge i64 %tc, %tcn",
          "  %tc.done = or i1 %tcb.end, %tc.end",
          "  br i1 %tc.done, label %tp.latch, label %blk.tile",
          "blk.tile:",
          # tiles along p start `off` elements early, so that full tiles' output lines are
          # whole cache lines (the first tile is then partial)
          f"  %a0m = mul i64 %tp, {T}",
          "  %a0r = sub i64 %a0m, %off",
          "  %a0neg = icmp slt i64 %a0r, 0",
          "  %a0 = select i1 %a0neg, i64 0, i64 %a0r",
          f"  %a1x = add i64 %a0r, {T}",
          "  %a1lt = icmp ult i64 %a1x, %P",
          "  %a1 = select i1 %a1lt, i64 %a1x, i64 %P",
          f"  %c0 = mul i64 %tc, {T}",
          f"  %c1x = add i64 %c0, {T}",
          "  %c1lt = icmp ult i64 %c1x, %C",
          "  %c1 = select i1 %c1lt, i64 %c1x, i64 %C",
          "  %full = and i1 %a1lt, %c1lt",
          # a tile is full unless it is the last along p or c (then a1 = P or c1 = C)
          "  %fa = sub i64 %a1, %a0",
          "  %fc = sub i64 %c1, %c0",
          f"  %fa.t = icmp eq i64 %fa, {T}",
          f"  %fc.t = icmp eq i64 %fc, {T}",
          "  %isfull = and i1 %fa.t, %fc.t",
          "  br i1 %isfull, label %f.tile, label %e.tile"]
    # full tiles: T rows of T elements (one cache line each) loaded as vectors, transposed in
    # registers (`network`) and stored as T whole lines
    vt = f"<{T} x {t}>"
    L += ["f.tile:",
          "  %f.ib0 = add i64 %ib, %c0",
          f"  %pfd = mul i64 %sp, {PF_ROWS * T}"]
    for i in range(T):
        L += [f"  %f.ar{i} = add i64 %a0, {i}",
              f"  %f.ir{i} = mul i64 %f.ar{i}, %sp",
              f"  %f.ii{i} = add i64 %f.ib0, %f.ir{i}",
              f"  %f.ip{i} = getelementptr {t}, ptr %src, i64 %f.ii{i}",
              f"  %f.r0.{i} = load {vt}, ptr %f.ip{i}, align {itemsize}"]
        if PF_ROWS:
            L += [f"  %f.pfi{i} = add i64 %f.ii{i}, %pfd",
                  f"  %f.pfp{i} = getelementptr {t}, ptr %src, i64 %f.pfi{i}",
                  f"  call void @llvm.prefetch.p0(ptr %f.pfp{i}, i32 0, i32 {PF_LOC}, i32 1)"]
    body, regs = _network_ir(itemsize, "f")
    L += body
    L.append("  %f.ob0 = add i64 %ob, %a0")
    for j, col in enumerate(regs):
        L += [f"  %f.cc{j} = add i64 %c0, {col}",
              f"  %f.or{j} = mul i64 %f.cc{j}, %oq",
              f"  %f.oi{j} = add i64 %f.ob0, %f.or{j}",
              f"  %f.op{j} = getelementptr {t}, ptr %dst, i64 %f.oi{j}",
              f"  store {vt} %f.r{j}, ptr %f.op{j}, align {64 if nt else itemsize}" + (", !nontemporal !0" if nt else "")]
    L.append("  br label %tc.latch")
    # edge tiles (the last along p or c, the first along p when the tiles start `off` early):
    # the same registers through masked loads and stores.  Row lanes outside [a0, a1) load a
    # valid row again (never stored), column lanes at or past c1 load nothing (masked).
    vi1 = f"<{T} x i1>"
    iota = "<" + ", ".join(f"i64 {i}" for i in range(T)) + ">"
    L += ["e.tile:",
          "  %e.ib0 = add i64 %ib, %c0",
          "  %e.alast = sub i64 %a1, 1",
          f"  %e.fc.v0 = insertelement <{T} x i64> poison, i64 %fc, i64 0",
          f"  %e.fc.v = shufflevector <{T} x i64> %e.fc.v0, <{T} x i64> poison, <{T} x i32> zeroinitializer",
          f"  %e.cmask = icmp ult <{T} x i64> {iota}, %e.fc.v",
          "  %e.lo = sub i64 %a0, %a0r",       # lanes [lo, hi) of a stored line are rows a0 .. a1
          "  %e.hi = sub i64 %a1, %a0r",
          f"  %e.lo.v0 = insertelement <{T} x i64> poison, i64 %e.lo, i64 0",
          f"  %e.lo.v = shufflevector <{T} x i64> %e.lo.v0, <{T} x i64> poison, <{T} x i32> zeroinitializer",
          f"  %e.hi.v0 = insertelement <{T} x i64> poison, i64 %e.hi, i64 0",
          f"  %e.hi.v = shufflevector <{T} x i64> %e.hi.v0, <{T} x i64> poison, <{T} x i32> zeroinitializer",
          f"  %e.ge = icmp uge <{T} x i64> {iota}, %e.lo.v",
          f"  %e.lt = icmp ult <{T} x i64> {iota}, %e.hi.v",
          f"  %e.amask = and {vi1} %e.ge, %e.lt"]
    for i in range(T):
        L += [f"  %e.ar{i}.x = add i64 %a0r, {i}",
              f"  %e.ar{i}.lo = icmp slt i64 %e.ar{i}.x, %a0",
              f"  %e.ar{i}.y = select i1 %e.ar{i}.lo, i64 %a0, i64 %e.ar{i}.x",
              f"  %e.ar{i}.hi = icmp sgt i64 %e.ar{i}.y, %e.alast",
              f"  %e.ar{i} = select i1 %e.ar{i}.hi, i64 %e.alast, i64 %e.ar{i}.y",
              f"  %e.ir{i} = mul i64 %e.ar{i}, %sp",
              f"  %e.ii{i} = add i64 %e.ib0, %e.ir{i}",
              f"  %e.ip{i} = getelementptr {t}, ptr %src, i64 %e.ii{i}",
              f"  %e.r0.{i} = call {vt} @llvm.masked.load.v{T}{t}.p0(ptr %e.ip{i}, i32 {itemsize}, {vi1} %e.cmask, {vt} zeroinitializer)"]
    body, regs = _network_ir(itemsize, "e")
    L += body
    L.append("  %e.ob0 = add i64 %ob, %a0r")
    for j, col in enumerate(regs):
        L += [f"  %e.in{j} = icmp ult i64 {col}, %fc",
              f"  %e.m{j} = select i1 %e.in{j}, {vi1} %e.amask, {vi1} zeroinitializer",
              f"  %e.cc{j} = add i64 %c0, {col}",
              f"  %e.or{j} = mul i64 %e.cc{j}, %oq",
              f"  %e.oi{j} = add i64 %e.ob0, %e.or{j}",
              f"  %e.op{j} = getelementptr {t}, ptr %dst, i64 %e.oi{j}",
              f"  call void @llvm.masked.store.v{T}{t}.p0({vt} %e.r{j}, ptr %e.op{j}, i32 {itemsize}, {vi1} %e.m{j})"]
    L.append("  br label %tc.latch")
    L += ["tc.latch:",
          "  %tcb.next = add i64 %tcb, 1",
          "  br label %tc.head",
          "tp.latch:",
          "  %tpi.next = add i64 %tpi, 1",
          "  br label %tp.head",
          "blk.latch:",
          "  %blk.next = add i64 %blk, 1",
          "  br label %blk.head",
          "exit:"] + (["  fence seq_cst"] if nt else []) + [
          "  ret void",
          "}"]
    L.append("declare void @llvm.prefetch.p0(ptr, i32, i32, i32)")
    L += [f"declare <{T} x {t}> @llvm.masked.load.v{T}{t}.p0(ptr, i32, <{T} x i1>, <{T} x {t}>)",
          f"declare void @llvm.masked.store.v{T}{t}.p0(<{T} x {t}>, ptr, i32, <{T} x i1>)"]
    if nt:   # (the fence at exit orders the streamed lines before the call returns)
        L.append("!0 = !{i32 1}")
    return "\n".join(L) + "\n"


_FUNCS: dict[tuple, object] = {}


def _kernel(itemsize: int, nt: bool = False):
    """The compiled kernel for one element width, with streaming (non-temporal, 64-byte
    aligned) stores of full tiles or not (compiled once per process, cached on disk)."""
    fn = _FUNCS.get((itemsize, nt))
    if fn is None:
        compiled = jit.compile_ir(_ir(itemsize, nt), SYMBOL)
        fn = _FUNCS[itemsize, nt] = (compiled, KERNEL_PROTO(compiled.address))
    return fn[1]


class TransposePlan:
    """The blocks of one transpose of a static shape: the 2-D slices' offsets and sizes."""

    def __init__(self, shape: tuple, perm: tuple, itemsize: int):
        self.shape, self.perm, self.itemsize = tuple(shape), tuple(perm), itemsize
        self.out_shape = tuple(shape[a] for a in perm)
        s, p = simplify(self.shape, self.perm)
        self.simple_shape, self.simple_perm = s, p
        n = len(s)
        # rows of contiguous runs (the last input axis stays last), or nothing to permute
        self.copy_only = n <= 1 or p[-1] == n - 1
        # only size-1 axes move: the output's bytes are the input's, in the same order
        self.is_reshape = tuple(p) == tuple(range(n))
        if self.copy_only:
            return
        in_strides = [int(np.prod(s[a + 1:])) for a in range(n)]
        out_shape = [s[a] for a in p]
        out_strides = [int(np.prod(out_shape[i + 1:])) for i in range(n)]
        out_stride_of = {p[i]: out_strides[i] for i in range(n)}     # input axis -> its output stride
        ax_p, ax_c = p[-1], n - 1          # the output's last axis, the input's last axis
        self.P, self.C = s[ax_p], s[ax_c]
        self.sp, self.oq = in_strides[ax_p], out_stride_of[ax_c]
        others = [a for a in range(n) if a not in (ax_p, ax_c)]
        grids = np.indices([s[a] for a in others]).reshape(len(others), -1) if others else np.zeros((0, 1), np.int64)
        self.in_off = np.ascontiguousarray(sum((grids[i] * in_strides[a] for i, a in enumerate(others)),
                                               np.zeros(grids.shape[1], np.int64)), np.int64)
        self.out_off = np.ascontiguousarray(sum((grids[i] * out_stride_of[a] for i, a in enumerate(others)),
                                                np.zeros(grids.shape[1], np.int64)), np.int64)
        side = tile_side(itemsize)
        self.side = side
        self.tiles_c = -(-self.C // side)
        self.band, self.band_p = BAND, BAND_P
        self.fn = _kernel(itemsize)
        out_bytes = int(np.prod(shape)) * itemsize
        # streaming stores need every full tile's output lines to be whole cache lines: the
        # output's rows along c a whole number of lines apart, every 2-D slice starting on the
        # same phase of a line (the tiles then start `off` elements early, module docstring)
        self.nt = (out_bytes >= STREAM_MIN_BYTES and (self.oq * itemsize) % LINE == 0
                   and not ((self.out_off * itemsize) % LINE).any())
        self.fn_nt = _kernel(itemsize, True) if self.nt else None
        self.args = np.zeros(_ARGS, np.int64)
        nbytes = 2 * int(np.prod(shape)) * itemsize
        self.threads = host_threads() if nbytes >= PARALLEL_MIN_BYTES else 1
        self._scratch = [0] * self.threads

    def _launch(self, x: np.ndarray, out: np.ndarray, args: np.ndarray):
        """Fill the argument block for these arrays; (kernel, blocks)."""
        fn, off = self.fn, 0
        if self.nt and out.ctypes.data % self.itemsize == 0:
            fn, off = self.fn_nt, (out.ctypes.data % LINE) // self.itemsize
        tiles_p = -(-(self.P + off) // self.side)
        args[:] = (x.ctypes.data, out.ctypes.data, self.in_off.ctypes.data, self.out_off.ctypes.data, self.P, self.C,
                   self.sp, self.oq, tiles_p, self.tiles_c, self.band, self.band_p, off)
        return fn, len(self.in_off) * -(-tiles_p // self.band_p) * -(-self.tiles_c // self.band)

    def bind(self, x: np.ndarray, out: np.ndarray):
        """A callable doing `run(x, out)` on exactly these arrays (C-contiguous), its argument
        block filled once."""
        if self.copy_only or x.size == 0:
            return lambda: self.run(x, out)
        a = np.zeros(_ARGS, np.int64)
        fn, blocks = self._launch(x, out, a)
        address, scratch = a.ctypes.data, self._scratch
        if self.threads == 1:
            def call():
                fn(0, blocks, address, 0)
        else:
            def call():
                run_blocks(fn, blocks, address, scratch)
        call.args, call.arrays = a, (x, out)   # alive as long as the call
        return call

    def run(self, x: np.ndarray, out: np.ndarray) -> None:
        """out[...] = x.transpose(perm); both C-contiguous."""
        if self.copy_only or x.size == 0:
            np.copyto(out, x.transpose(self.perm))
            return
        a = self.args
        fn, blocks = self._launch(x, out, a)
        if self.threads == 1:
            fn(0, blocks, a.ctypes.data, 0)
        else:
            run_blocks(fn, blocks, a.ctypes.data, self._scratch)


# Per kernel function (weak: a compiled kernel's functions live as long as it does).
_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class SlicePlan:
    """A lone slice that no view kernel takes (a step on the last axis: the transpose kind's
    gather mode on the chip): numpy's strided copy of the selected elements, a C loop over the
    output, into the output buffer."""

    is_reshape = False

    def __init__(self, shape: tuple, starts, stops, steps):
        self.out_shape = tuple(max(0, -(-(hi - lo) // st)) for lo, hi, st in zip(starts, stops, steps))
        self.index = tuple(slice(lo, hi, st) for lo, hi, st in zip(starts, stops, steps))

    def run(self, x: np.ndarray, out: np.ndarray) -> None:
        np.copyto(out, x[self.index])

    def bind(self, x: np.ndarray, out: np.ndarray):
        src = x[self.index]   # a view: the call copies its elements
        return lambda: np.copyto(out, src)


def _plan(fn: Function) -> TransposePlan | SlicePlan | None:
    ops = [op for op in fn.ops if op.name != "constant"]
    if len(ops) != 1 or ops[0].name not in ("transpose", "slice") or len(fn.params) != 1 or len(fn.results) != 1:
        return None
    op = ops[0]
    x = op.operands[0]
    if x is not fn.params[0].value or op.result is not fn.results[0]:
        return None
    if not all(isinstance(d, int) for d in x.shape):
        return None
    if op.name == "slice":
        return SlicePlan(tuple(x.shape), op.attr("starts"), op.attr("stops"), op.attr("steps"))
    return TransposePlan(tuple(x.shape), tuple(op.attr("perm")), x.dtype.itemsize)


class TransposeKernel:
    """A lone transpose as the compiler's single-kernel fast path calls it (like RowCpuKernel):
    run(inputs, outputs) into preallocated outputs."""

    def __init__(self, plan: TransposePlan):
        self.plan = plan

    def bound_outputs(self):
        return ()   # it keeps no reference to the arrays it ran on

    def run(self, inputs, outs) -> None:
        self.plan.run(np.ascontiguousarray(inputs[0]), outs[0])

    @property
    def is_reshape(self) -> bool:
        """Whether the output is the input's bytes in the same order (a program may read it as
        a reshape view instead of running the kernel)."""
        return self.plan.is_reshape

    def bind(self, inputs, outs):
        x = inputs[0]
        if not (type(x) is np.ndarray and x.flags.c_contiguous):
            return lambda: self.run(inputs, outs)
        return self.plan.bind(x, outs[0])


def transpose_kernel(fn: Function) -> TransposeKernel | None:
    if fn not in _CACHE:
        _CACHE[fn] = _plan(fn)
    plan = _CACHE[fn]
    return None if plan is None else TransposeKernel(plan)


def run(fn: Function, inputs, targets=None) -> tuple[np.ndarray, ...] | None:
    """A lone transpose kernel natively, or None when `fn` is something else."""
    if fn not in _CACHE:
        _CACHE[fn] = _plan(fn)
    plan = _CACHE[fn]
    if plan is None:
        return None
    x = np.ascontiguousarray(inputs[0])
    out = targets[0] if targets and targets[0] is not None else buffers.empty(plan.out_shape, x.dtype)
    plan.run(x, out)
    return (out,)

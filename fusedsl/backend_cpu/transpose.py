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
    transposed in registers (log2 T stages of two-source shuffles: vpermt2d on AVX-512) and
    stored as T whole output lines, so every line is read once and written whole (edge tiles
    go element by element).  A block is BAND tiles along c (the rows' next lines, which the
    prefetchers follow) of one row of tiles; blocks run on the pool's threads for large
    arrays.  Outputs of STREAM_MIN_BYTES and more are written with streaming (non-temporal)
    stores: an ordinary store first reads the line it writes, a third of the traffic.  Such
    stores must write whole aligned lines, and numpy's large buffers start 16 or 32 bytes into
    a line, so the tiles along p then start `off` elements early: the first tile of each row
    of tiles is partial (element by element) and every full tile's lines are aligned.
    Measured (CPU time, shared 2-vCPU host): [1024, 4096] float32 2.5-2.8 ms with ordinary
    stores (0.5-0.6x a memory copy's speed), 1.6-1.8 ms streamed (0.95-1.2x).

The kernel moves bits (an integer type of the element's width), so every dtype is exact.
"""
from __future__ import annotations

import weakref

import numpy as np

from ..ir.core import Function
from ..lower.transpose import simplify   # the same simplification the printed kernel uses
from . import jit
from .launch import KERNEL_PROTO, host_threads, run_blocks

SYMBOL = "fusedsl_transpose"
LINE = 64                      # bytes per tile row: one cache line
# Measured option, off: a software prefetch this many tiles ahead along the band changed
# nothing beyond this host's noise.
# Outputs from this size on are written with streaming stores (full tiles; measured on this
# host, CPU time, [1024, 4096] float32: 0.5-0.6x of a memory copy's speed with ordinary
# stores, 0.95-1.2x streamed: an ordinary store of a line first reads it).  Smaller outputs
# stay in the cache for the kernel that reads them next.
STREAM_MIN_BYTES = 8 << 20
PREFETCH = 0
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
          "  br i1 %isfull, label %f.tile, label %g.c.head"]
    # full tiles: V rows of V elements (one cache line each) loaded as vectors, transposed in
    # registers (log2 V butterfly stages of two-source shuffles), stored as V whole lines
    vt = f"<{T} x {t}>"
    L += ["f.tile:",
          "  %f.ib0 = add i64 %ib, %c0"]
    for i in range(T):
        L += [f"  %f.ar{i} = add i64 %a0, {i}",
              f"  %f.ir{i} = mul i64 %f.ar{i}, %sp",
              f"  %f.ii{i} = add i64 %f.ib0, %f.ir{i}",
              f"  %f.ip{i} = getelementptr {t}, ptr %src, i64 %f.ii{i}",
              f"  %r0.{i} = load {vt}, ptr %f.ip{i}, align {itemsize}"]
        if PREFETCH:   # the same row a few tiles ahead (the band walks along the rows)
            L += [f"  %f.pf{i} = getelementptr {t}, ptr %f.ip{i}, i64 {PREFETCH * T}",
                  f"  call void @llvm.prefetch.p0(ptr %f.pf{i}, i32 0, i32 3, i32 1)"]
    stage, b = 0, T // 2
    while b >= 1:
        for i in range(T):
            if i & b:
                continue
            lo = ", ".join(f"i32 {j if not j & b else T + j - b}" for j in range(T))
            hi = ", ".join(f"i32 {j + b if not j & b else T + j}" for j in range(T))
            L += [f"  %r{stage + 1}.{i} = shufflevector {vt} %r{stage}.{i}, {vt} %r{stage}.{i + b}, <{T} x i32> <{lo}>",
                  f"  %r{stage + 1}.{i + b} = shufflevector {vt} %r{stage}.{i}, {vt} %r{stage}.{i + b}, <{T} x i32> <{hi}>"]
        stage, b = stage + 1, b // 2
    L.append("  %f.ob0 = add i64 %ob, %a0")
    for j in range(T):
        L += [f"  %f.cc{j} = add i64 %c0, {j}",
              f"  %f.or{j} = mul i64 %f.cc{j}, %oq",
              f"  %f.oi{j} = add i64 %f.ob0, %f.or{j}",
              f"  %f.op{j} = getelementptr {t}, ptr %dst, i64 %f.oi{j}",
              f"  store {vt} %r{stage}.{j}, ptr %f.op{j}, align {64 if nt else itemsize}" + (", !nontemporal !0" if nt else "")]
    L.append("  br label %tc.latch")
    # edge tiles: element by element within the tile's own bounds
    for v, na, nc in (("g", "%fa", "%fc"),):
    # one loop nest per variant: f (constant trip counts T x T) and g (the tile's own bounds)
        L += [f"{v}.c.head:",
              f"  %{v}.c = phi i64 [ 0, %blk.tile ], [ %{v}.c.next, %{v}.a.exit ]",
              f"  %{v}.c.done = icmp uge i64 %{v}.c, {nc}",
              f"  br i1 %{v}.c.done, label %tc.latch, label %{v}.c.body",
              f"{v}.c.body:",
              f"  %{v}.cc = add i64 %c0, %{v}.c",
              f"  %{v}.orow = mul i64 %{v}.cc, %oq",
              f"  %{v}.obase = add i64 %ob, %{v}.orow",
              f"  %{v}.ibase = add i64 %ib, %{v}.cc",
              f"  br label %{v}.a.head",
              f"{v}.a.head:",
              f"  %{v}.a = phi i64 [ 0, %{v}.c.body ], [ %{v}.a.next, %{v}.a.body ]",
              f"  %{v}.a.done = icmp uge i64 %{v}.a, {na}",
              f"  br i1 %{v}.a.done, label %{v}.a.exit, label %{v}.a.body",
              f"{v}.a.body:",
              f"  %{v}.aa = add i64 %a0, %{v}.a",
              f"  %{v}.irow = mul i64 %{v}.aa, %sp",
              f"  %{v}.ii = add i64 %{v}.ibase, %{v}.irow",
              f"  %{v}.ip = getelementptr {t}, ptr %src, i64 %{v}.ii",
              f"  %{v}.x = load {t}, ptr %{v}.ip, align {itemsize}",
              f"  %{v}.oi = add i64 %{v}.obase, %{v}.aa",
              f"  %{v}.op = getelementptr {t}, ptr %dst, i64 %{v}.oi",
              f"  store {t} %{v}.x, ptr %{v}.op, align {itemsize}",
              f"  %{v}.a.next = add i64 %{v}.a, 1",
              f"  br label %{v}.a.head",
              f"{v}.a.exit:",
              f"  %{v}.c.next = add i64 %{v}.c, 1",
              f"  br label %{v}.c.head"]
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
    if PREFETCH:
        L.append("declare void @llvm.prefetch.p0(ptr, i32, i32, i32)")
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


def _plan(fn: Function) -> TransposePlan | None:
    ops = [op for op in fn.ops if op.name != "constant"]
    if len(ops) != 1 or ops[0].name != "transpose" or len(fn.params) != 1 or len(fn.results) != 1:
        return None
    op = ops[0]
    x = op.operands[0]
    if x is not fn.params[0].value or op.result is not fn.results[0]:
        return None
    if not all(isinstance(d, int) for d in x.shape):
        return None
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
    out = targets[0] if targets and targets[0] is not None else np.empty(plan.out_shape, x.dtype)
    plan.run(x, out)
    return (out,)

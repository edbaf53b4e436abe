"""CPU executor for the attention op: blocked online softmax (flash attention) on BLAS.

One JIT-compiled function runs work items (batch, head, Q block) on the launcher's threads
(both cores).  Per item, the KV axis is walked in blocks:

    S  = scale * Q_blk @ K_blk^T              sgemm into a [BQ x BK] scratch tile
    S += mask / -inf where masked or causal   (vectorised, <16 x float>)
    m' = max(m, rowmax(S));  P = exp(S - m'); l = l * exp(m - m') + rowsum(P)
    O  = O * exp(m - m') + P @ V_blk          the rescale in the JIT code, the product sgemm
    out = O / l                               once, after the last block (0 where l == 0)

so the S x S matrix never exists: a thread holds one [BQ x BK] tile of scores and its
[BQ x Dv] accumulator.  Causal items stop at their diagonal (blocks beyond it are skipped,
not masked).  Why BLAS and not a JIT micro-kernel: numpy's bundled OpenBLAS has packed
AVX-512 sgemm kernels (backend_cpu/cube.py says the same); the JIT code does what BLAS
cannot -- the masked row maximum, exp and the rescale -- on the tile while it is in L1/L2.

The JIT code calls cblas_sgemm through a pointer handed in with the arguments (the
address of numpy's OpenBLAS symbol), so one foreign call runs a whole range of items.
float16/bfloat16 operands are widened to float32 before the launch and the result is
rounded once to the result dtype, as the reference does; a boolean mask becomes an
additive float32 mask (0 / -inf), read through its broadcast strides.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from .. import dtypes as dt
from ..ir.core import Function, Op
from ..ir.ops import rope_reference
from ..reference import _round
from . import jit
from .cube import sgemm_address, single_threaded_blas
from .irgen import carried_loop
from .launch import KERNEL_PROTO, host_threads, pool, run_blocks
from .llvm import host_features
from .mathlib import VectorConsts, emit_exp

LANES = 16
F32 = ir.FloatType()
I1 = ir.IntType(1)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
PTR = ir.PointerType()
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
_FLOATS = {dt.float32, dt.float16, dt.bfloat16}

# Block sizes: a [BQ x BK] float32 score tile (256 KB) and the K/V blocks stay in L2 while
# the tile is rescaled and multiplied; BQ rows of Q are one sgemm's M, big enough for its
# packed kernels.  Swept on the 2-core host (BQ 64..256 x BK 256..512) at S=512/2048,
# D=64/128: 256 x 256 was best or within the noise of the best everywhere.
BLOCK_Q = 256
BLOCK_K = 256
ALIGN = 64


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


class _Shape:
    """The static sizes of one attention call, baked into its code."""

    def __init__(self, op: Op, shapes):
        q, k, v = shapes[:3]
        self.bshd = op.attr("layout", "bhsd") == "bshd"
        if self.bshd:   # [B, S, H, D]: the same sizes read with heads and rows swapped
            q, k, v = ((*x[:-3], x[-2], x[-3], x[-1]) for x in (q, k, v))
        self.batch = int(np.prod(q[:-3], dtype=np.int64)) if len(q) > 3 else 1
        self.heads = q[-3] if len(q) >= 3 else 1
        self.kv_heads = k[-3] if len(k) >= 3 else 1
        self.L, self.E = q[-2], q[-1]
        self.S, self.Dv = k[-2], v[-1]
        self.scale = float(op.attr("scale"))
        self.causal = bool(op.attr("causal"))
        self.bq = min(BLOCK_Q, max(1, self.L))
        self.bk = min(BLOCK_K, _round_up(max(1, self.S), LANES))
        self.bkp = _round_up(self.bk, LANES)          # padded score-tile row
        self.dvp = _round_up(max(1, self.Dv), LANES)   # padded accumulator row
        self.q_blocks = -(-self.L // self.bq)
        self.items = self.batch * self.heads * self.q_blocks
        self.mask_strides = None   # (batch, head, row) element strides of the f32 mask, if any
        # (batch, head, row) element strides of q, k, v and the output
        self.q_st = self._strides(self.heads, self.L, self.E)
        self.k_st = self._strides(self.kv_heads, self.S, self.E)
        self.v_st = self._strides(self.kv_heads, self.S, self.Dv)
        self.o_st = self._strides(self.heads, self.L, self.Dv)

    def _strides(self, heads, rows, width):
        if self.bshd:
            return rows * heads * width, width, heads * width
        return heads * rows * width, rows * width, width

    def key(self):
        return (self.batch, self.heads, self.kv_heads, self.L, self.E, self.S, self.Dv, self.scale,
                self.causal, self.bq, self.bk, self.mask_strides, self.bshd)

    @property
    def scratch_bytes(self) -> int:
        return (self.bq * self.bkp + self.bq * self.dvp + 2 * _round_up(self.bq, LANES)) * 4 + 4 * ALIGN


class _Builder:
    """LLVM IR of `void attention(i64 item_begin, i64 item_end, ptr args, ptr scratch)`.

    args: [q, k, v, out, mask (or 0), sgemm] as i64 addresses; every size is a constant.
    """

    def __init__(self, sh: _Shape, features):
        self.sh = sh
        self.module = ir.Module(name="attention")
        self.k = VectorConsts(self.module, LANES, scalef="avx512f" in features)
        self.vf = ir.VectorType(F32, LANES)
        self.vi = ir.VectorType(I64, LANES)
        self.vb = ir.VectorType(I1, LANES)
        self.gemm_t = ir.FunctionType(ir.VoidType(), [I32, I32, I32, I64, I64, I64, F32, PTR, I64, PTR, I64,
                                                      F32, PTR, I64])

    # ---- helpers --------------------------------------------------------------------------------------
    @staticmethod
    def c64(x):
        return ir.Constant(I64, int(x))

    @staticmethod
    def cf(x):
        return ir.Constant(F32, float(x))

    def loop(self, b, start, end, step, carried, body, tag):
        """for (i = start; i < end; i += step) carried = body(i, carried); returns carried."""
        return carried_loop(b, start, end, step, carried, body, tag)[1]

    def intrinsic(self, name, ret, args):
        return self.k.intrinsic(name, ret, args)

    def vload(self, b, ptr):
        return b.load(ptr, typ=self.vf, align=4)

    def vstore(self, b, value, ptr):
        b.store(value, ptr, align=4)

    def masked_load(self, b, ptr, mask):
        fn = self.intrinsic("llvm.masked.load.v16f32.p0", self.vf, [PTR, I32, self.vb, self.vf])
        return b.call(fn, [ptr, ir.Constant(I32, 4), mask, self.k.fc(0.0)])

    def masked_store(self, b, value, ptr, mask):
        fn = self.intrinsic("llvm.masked.store.v16f32.p0", ir.VoidType(), [self.vf, PTR, I32, self.vb])
        b.call(fn, [value, ptr, ir.Constant(I32, 4), mask])

    def lanes_below(self, b, start, limit):
        """<16 x i1>: start + lane < limit."""
        iota = ir.Constant(self.vi, [ir.Constant(I64, j) for j in range(LANES)])
        idx = b.add(self.splat(b, start, I64), iota)
        return b.icmp_signed("<", idx, self.splat(b, limit, I64)), idx

    def splat(self, b, x, typ):
        vt = ir.VectorType(typ, LANES)
        undef = ir.Constant(vt, ir.Undefined)
        one = b.insert_element(undef, x, ir.Constant(I32, 0))
        return b.shuffle_vector(one, undef, ir.Constant(ir.VectorType(I32, LANES), [0] * LANES))

    def gep(self, b, base, index):
        return b.gep(base, [index], source_etype=F32)

    def scalar_exp(self, b, x):
        return b.extract_element(emit_exp(self.k, b, self.splat(b, x, F32)), ir.Constant(I32, 0))

    # ---- the kernel -----------------------------------------------------------------------------------
    def build(self) -> str:
        sh = self.sh
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [I64, I64, PTR, PTR]), name="attention")
        lo, hi, args, scratch = fn.args
        for a in (args, scratch):
            a.add_attribute("noalias")
        b = ir.IRBuilder(fn.append_basic_block("entry"))

        def arg(i, typ=PTR):
            word = b.load(b.gep(args, [self.c64(i)], source_etype=I64), typ=I64)
            return b.inttoptr(word, typ)

        q, k, v, out, mask = (arg(i) for i in range(5))
        gemm = arg(5, self.gemm_t.as_pointer())
        tile = scratch
        acc = self.gep(b, tile, self.c64(sh.bq * sh.bkp))
        m_row = self.gep(b, acc, self.c64(sh.bq * sh.dvp))
        l_row = self.gep(b, m_row, self.c64(_round_up(sh.bq, LANES)))
        C = self.c64

        def item(it, _):
            per_batch = sh.heads * sh.q_blocks
            bi = b.sdiv(it, C(per_batch))
            rem = b.srem(it, C(per_batch))
            h = b.sdiv(rem, C(sh.q_blocks))
            r0 = b.mul(b.srem(rem, C(sh.q_blocks)), C(sh.bq))
            rows = b.select(b.icmp_signed("<", C(sh.L), b.add(r0, C(sh.bq))), b.sub(C(sh.L), r0), C(sh.bq))
            hk = b.sdiv(h, C(sh.heads // sh.kv_heads))

            def at(base, st, head, row):
                return self.gep(b, base, b.add(b.add(b.mul(bi, C(st[0])), b.mul(head, C(st[1]))), b.mul(row, C(st[2]))))
            q0 = at(q, sh.q_st, h, r0)
            k0 = at(k, sh.k_st, hk, C(0))
            v0 = at(v, sh.v_st, hk, C(0))
            o0 = at(out, sh.o_st, h, r0)

            def init(r, _):
                b.store(self.cf(float("-inf")), self.gep(b, m_row, r))
                b.store(self.cf(0.0), self.gep(b, l_row, r))
                row = self.gep(b, acc, b.mul(r, C(sh.dvp)))
                self.loop(b, C(0), C(sh.dvp), C(LANES), [],
                          lambda c, _: (self.vstore(b, self.k.fc(0.0), self.gep(b, row, c)), [])[1], "zero")
                return []
            self.loop(b, C(0), rows, C(1), [], init, "init")

            kv_end = C(sh.S)
            if sh.causal:   # top-left: query row i sees keys j <= i; later blocks are skipped
                last = b.add(r0, rows)
                kv_end = b.select(b.icmp_signed("<", last, C(sh.S)), last, C(sh.S))

            def kv_block(kb, _):
                cols = b.sub(kv_end, kb)
                cols = b.select(b.icmp_signed("<", cols, C(sh.bk)), cols, C(sh.bk))
                b.call(gemm, [ir.Constant(I32, _ROW_MAJOR), ir.Constant(I32, _NO_TRANS), ir.Constant(I32, _TRANS),
                              rows, cols, C(sh.E), self.cf(sh.scale), q0, C(sh.q_st[2]),
                              self.gep(b, k0, b.mul(kb, C(sh.k_st[2]))), C(sh.k_st[2]), self.cf(0.0), tile,
                              C(sh.bkp)])
                self.loop(b, C(0), rows, C(1), [], lambda r, _: self.softmax_row(b, r, r0, kb, cols, bi, h, tile,
                                                                                acc, m_row, l_row, mask), "row")
                b.call(gemm, [ir.Constant(I32, _ROW_MAJOR), ir.Constant(I32, _NO_TRANS), ir.Constant(I32, _NO_TRANS),
                              rows, C(sh.Dv), cols, self.cf(1.0), tile, C(sh.bkp),
                              self.gep(b, v0, b.mul(kb, C(sh.v_st[2]))), C(sh.v_st[2]), self.cf(1.0), acc,
                              C(sh.dvp)])
                return []
            self.loop(b, C(0), kv_end, C(sh.bk), [], kv_block, "kv")

            def finish(r, _):
                total = b.load(self.gep(b, l_row, r), typ=F32)
                inv = b.select(b.fcmp_ordered(">", total, self.cf(0.0)), b.fdiv(self.cf(1.0), total), self.cf(0.0))
                vinv = self.splat(b, inv, F32)
                src = self.gep(b, acc, b.mul(r, C(sh.dvp)))
                dst = self.gep(b, o0, b.mul(r, C(sh.o_st[2])))

                def chunk(c, _):
                    valid, _idx = self.lanes_below(b, c, C(sh.Dv))
                    x = b.fmul(self.vload(b, self.gep(b, src, c)), vinv)
                    self.masked_store(b, x, self.gep(b, dst, c), valid)
                    return []
                self.loop(b, C(0), C(sh.Dv), C(LANES), [], chunk, "out")
                return []
            self.loop(b, C(0), rows, C(1), [], finish, "finish")
            return []

        self.loop(b, lo, hi, C(1), [], item, "item")
        b.ret_void()
        return str(self.module)

    def softmax_row(self, b, r, r0, kb, cols, bi, h, tile, acc, m_row, l_row, mask):
        """Row r of the score tile: mask, running max, exp in place, running sum, rescale O."""
        sh, C = self.sh, self.c64
        srow = self.gep(b, tile, b.mul(r, C(sh.bkp)))
        qrow = b.add(r0, r)
        mrow = None
        if sh.mask_strides is not None:
            sb, shd, sr = sh.mask_strides
            off = b.add(b.add(b.mul(bi, C(sb)), b.mul(h, C(shd))), b.add(b.mul(qrow, C(sr)), kb))
            mrow = self.gep(b, mask, off)
        ninf = self.k.fc(float("-inf"))
        maxnum = self.intrinsic("llvm.maxnum.v16f32", self.vf, [self.vf, self.vf])

        def pass1(c, carried):
            (vmax,) = carried
            valid, idx = self.lanes_below(b, c, cols)
            if sh.causal:
                key = b.add(idx, self.splat(b, kb, I64))
                valid = b.and_(valid, b.icmp_signed("<=", key, self.splat(b, qrow, I64)))
            s = self.vload(b, self.gep(b, srow, c))
            if mrow is not None:
                inb, _ = self.lanes_below(b, c, cols)
                s = b.fadd(s, self.masked_load(b, self.gep(b, mrow, c), inb))
            s = b.select(valid, s, ninf)
            if mrow is not None or sh.causal:   # pass 2 reads the masked scores back
                self.vstore(b, s, self.gep(b, srow, c))
            return [b.call(maxnum, [vmax, s])]
        (vmax,) = self.loop(b, C(0), cols, C(LANES), [ninf], pass1, "max")
        reduce_max = self.intrinsic("llvm.vector.reduce.fmax.v16f32", F32, [self.vf])
        top = b.call(reduce_max, [vmax])
        m_old = b.load(self.gep(b, m_row, r), typ=F32)
        m_new = b.select(b.fcmp_ordered(">", top, m_old), top, m_old)
        m_use = b.select(b.fcmp_ordered("==", m_new, self.cf(float("-inf"))), self.cf(0.0), m_new)
        vm = self.splat(b, m_use, F32)

        def pass2(c, carried):
            (vsum,) = carried
            ptr = self.gep(b, srow, c)
            p = emit_exp(self.k, b, b.fsub(self.vload(b, ptr), vm))
            valid, _ = self.lanes_below(b, c, cols)   # lanes past the block's last key count 0
            p = b.select(valid, p, self.k.fc(0.0))
            self.vstore(b, p, ptr)
            return [b.fadd(vsum, p)]
        (vsum,) = self.loop(b, C(0), cols, C(LANES), [self.k.fc(0.0)], pass2, "exp")
        reduce_add = self.intrinsic("llvm.vector.reduce.fadd.v16f32", F32, [F32, self.vf])
        rowsum = b.call(reduce_add, [self.cf(0.0), vsum])
        corr = self.scalar_exp(b, b.fsub(m_old, m_use))
        l_ptr = self.gep(b, l_row, r)
        b.store(b.fadd(b.fmul(b.load(l_ptr, typ=F32), corr), rowsum), l_ptr)
        b.store(m_new, self.gep(b, m_row, r))
        vcorr = self.splat(b, corr, F32)
        orow = self.gep(b, acc, b.mul(r, C(sh.dvp)))

        def rescale(c, _):
            ptr = self.gep(b, orow, c)
            self.vstore(b, b.fmul(self.vload(b, ptr), vcorr), ptr)
            return []
        # the running max rarely moves after the first blocks: then O keeps its scale (corr == 1)
        with b.if_then(b.fcmp_unordered("!=", corr, self.cf(1.0))):
            self.loop(b, C(0), C(sh.dvp), C(LANES), [], rescale, "rescale")
        return []


class AttentionCpuKernel:
    """The attention op of a one-op kernel, compiled per shape; `run(inputs, targets)`."""

    def __init__(self, fn: Function, order: list[int]):
        self.fn = fn
        self.op = next(op for op in fn.ops if op.name == "attention")
        self.order = order   # the kernel parameter of each operand (q, k, v[, mask])
        self._compiled = {}   # shape key -> (cfunc, Compiled, scratch buffers)

    @classmethod
    def build(cls, fn: Function) -> "AttentionCpuKernel | None":
        ops = [op for op in fn.ops if op.name != "constant"]
        if len(ops) != 1 or ops[0].name != "attention" or sgemm_address() is None:
            return None
        params = [id(p.value) for p in fn.params]
        if tuple(fn.results) != tuple(ops[0].results) or ops[0].results[0].dtype not in _FLOATS:
            return None
        if any(id(v) not in params for v in ops[0].operands):
            return None
        return cls(fn, [params.index(id(v)) for v in ops[0].operands])

    def run(self, inputs, targets=None) -> tuple[np.ndarray, ...]:
        inputs = [inputs[i] for i in self.order]
        heads = [self.op.attr(f"{n}_heads") for n in "qkv"]   # bshd heads of one tensor (q, k, v side by side)
        q, k, v = (np.ascontiguousarray(x if h is None else x[..., slice(*h), :], dtype=np.float32)
                   for x, h in zip(inputs[:3], heads))
        if self.op.attr("rope", False):   # q and k rotated once, in float32, before the blocks
            q, k = (_rotated(x, inputs[-2], inputs[-1], self.op.attr("layout", "bhsd")) for x in (q, k))
            inputs = inputs[:-2]
        sh = _Shape(self.op, [x.shape for x in (q, k, v)])
        mask = None
        if len(inputs) > 3:   # the mask is over the scores [..., H, L, S] in either layout
            mask, sh.mask_strides = _additive_mask(inputs[3], q.shape[:-3] + (sh.heads,), sh)
        result = self.fn.results[0]
        out_dtype = result.dtype.np
        target = targets[0] if targets else None
        direct = target is not None and target.dtype == np.float32
        out = target if direct else np.empty(q.shape[:-1] + (sh.Dv,), np.float32)   # either layout
        if sh.items and sh.Dv:
            self._launch(sh, q, k, v, out, mask)
        if direct:
            return (out,)
        rounded = _round(out, result.dtype) if out_dtype != np.float32 else out
        if target is not None:
            np.copyto(target, rounded)
            return (target,)
        return (rounded,)

    def _launch(self, sh: _Shape, q, k, v, out, mask):
        key = sh.key()
        entry = self._compiled.get(key)
        if entry is None:
            code = _Builder(sh, host_features()).build()
            compiled = jit.compile_ir(code, "attention")
            threads = min(host_threads(), pool().workers + 1, sh.items)
            bufs = [np.empty(sh.scratch_bytes, np.uint8) for _ in range(threads)]
            entry = (KERNEL_PROTO(compiled.address), compiled, bufs)
            self._compiled[key] = entry
        cfunc, _, bufs = entry
        args = np.array([q.ctypes.data, k.ctypes.data, v.ctypes.data, out.ctypes.data,
                         0 if mask is None else mask.ctypes.data, sgemm_address()], np.int64)
        scratch = [_round_up(buf.ctypes.data, ALIGN) for buf in bufs]
        with single_threaded_blas():   # the blocks already run on every core
            if len(scratch) == 1:
                cfunc(0, sh.items, args.ctypes.data, scratch[0])
            else:
                run_blocks(cfunc, sh.items, args.ctypes.data, scratch)


def _rotated(x: np.ndarray, cos, sin, layout: str) -> np.ndarray:
    """rope of q or k: the tables are read against the [..., H, S, D] view in either layout."""
    c, s = (np.asarray(t, np.float32) for t in (cos, sin))
    if layout == "bshd":
        return np.ascontiguousarray(np.swapaxes(rope_reference(np.swapaxes(x, -3, -2), c, s), -3, -2))
    return np.ascontiguousarray(rope_reference(x, c, s))


def _additive_mask(mask: np.ndarray, batch_shape, sh: _Shape):
    """The mask as float32 to add to the scores (a bool mask: 0 where True, -inf where False),
    viewed as [batch, heads, L, S] through its broadcast strides (no copy unless the key axis
    itself broadcasts, or broadcast and real leading axes do not flatten), and its (batch,
    head, row) element strides (0 = broadcast)."""
    if mask.dtype == np.bool_:
        add = np.where(mask, np.float32(0), np.float32(-np.inf))
    else:
        add = np.asarray(mask, np.float32)
    full = np.broadcast_to(add, tuple(batch_shape) + (sh.L, sh.S))
    four = full.reshape((sh.batch, sh.heads, sh.L, sh.S))
    if four.strides[-1] != 4:
        four = np.ascontiguousarray(four)
    return four, tuple(s // 4 for s in four.strides[:3])


def run(fn: Function, inputs, targets=None) -> tuple[np.ndarray, ...] | None:
    """The kernel's results, or None when it is not a lone attention op (reference path)."""
    kernel = AttentionCpuKernel.build(fn)
    return None if kernel is None else kernel.run(inputs, targets)


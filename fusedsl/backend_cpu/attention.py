"""CPU executor for the attention op: blocked online softmax (flash attention), JIT-compiled.

One JIT function runs work items (batch, head, Q block of BQ queries) on the launcher's
threads (both cores).  The scores are kept transposed, keys down and queries across: a
<16 x float> vector holds one key's score for 16 queries, so every softmax statistic
(running max, sum, rescale factor) is a vector over queries and the softmax needs no
horizontal reduction.  Per item, Q^T (scaled) is copied once into scratch; then per KV
block of BK keys and per chunk of QC = 32 queries:

    S^T = K_blk Q^T              register tiles of MK keys x 32 queries, K broadcast from
                                 its rows, Q^T loaded as vectors; + mask / -inf (causal)
                                 in the tile's epilogue, the block's max kept in registers
    m' = max(m, max S);  P = exp(S - m') in place;  l = l * exp(m - m') + sum P
    O^T = O^T * exp(m - m') + V_blk^T P^T
                                 register tiles of MV channels x 32 queries, V broadcast
    out = O / l                  once per item, transposed back (0 where l == 0)

so the S x S matrix never exists: a chunk's [BK x 32] score tile stays in L1, the K and
V blocks in L2 while the item's chunks use them.  Causal chunks stop at their diagonal
(blocks beyond it are skipped, not masked).  Why not BLAS (the first version called
OpenBLAS's sgemm for both products): sgemm packs both operands on every call, which
cost a fifth of the kernel at these sizes (the P tile changes every block, the Q block
was packed again for every KV block); these register tiles read Q^T, K, P and V where
they are (S=2048: about 110 GFLOP/s per core against sgemm's 88-96, one thread).

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
from .irgen import carried_loop
from .launch import KERNEL_PROTO, host_threads, pool, run_blocks
from .host import host_features
from .mathlib import VectorConsts, emit_exp

LANES = 16
F32 = ir.FloatType()
I1 = ir.IntType(1)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
PTR = ir.PointerType()
_FLOATS = {dt.float32, dt.float16, dt.bfloat16}

# Block sizes.  A work item is BLOCK_Q queries (its chunks share each K/V block while it is
# in L2); a KV block is BLOCK_K keys: a chunk's score tile [BLOCK_K x 32] floats is 16 KB,
# half of L1, and the K and V blocks (BLOCK_K x D floats each) stay in L2.  QC = 32 queries
# (two vectors) per chunk; register tiles of MK keys / MV channels x 32 queries take 2 * MK
# (2 * MV) of the 32 AVX-512 registers.  Swept on the 2-core host at S=2048, D=64/128.
BLOCK_Q = 64
BLOCK_K = 128
QC = 2 * LANES
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
        self.bq = _round_up(min(BLOCK_Q, max(1, self.L)), QC)   # queries per item (chunks of QC)
        self.bk = BLOCK_K
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

    # scratch of one thread, in floats: Q^T [E][bq], O^T [dvp][bq], the score tile [bkp][QC], m, l [bq]
    # (dvp, bkp: Dv and bk rounded up to the register tiles' heights, whose last panels run past them)
    def scratch_floats(self, mk: int, mv: int) -> int:
        return (self.E + _round_up(self.Dv, mv) + 2) * self.bq + _round_up(self.bk, mk) * QC

    def scratch_bytes(self, mk: int, mv: int) -> int:
        return self.scratch_floats(mk, mv) * 4 + ALIGN


class _Builder:
    """LLVM IR of `void attention(i64 item_begin, i64 item_end, ptr args, ptr scratch)`.

    args: [q, k, v, out, mask (or 0)] as i64 addresses; every size is a constant.
    """

    def __init__(self, sh: _Shape, features):
        self.sh = sh
        self.module = ir.Module(name="attention")
        self.k = VectorConsts(self.module, LANES, scalef="avx512f" in features)
        self.vf = ir.VectorType(F32, LANES)
        self.vi = ir.VectorType(I64, LANES)
        self.vb = ir.VectorType(I1, LANES)
        # register tile heights: 2 * MK accumulators (+ 2 loaded, 2 running max) of 32 zmm registers;
        # without AVX-512 a <16 x float> is two ymm registers of 16, so the tiles are halved
        wide = "avx512f" in features
        self.mk = 8 if wide else 3
        self.mv = 8 if wide else 3

    # ---- helpers --------------------------------------------------------------------------------------
    @staticmethod
    def c64(x):
        return ir.Constant(I64, int(x))

    @staticmethod
    def cf(x):
        return ir.Constant(F32, float(x))

    def loop(self, b, start, end, step, carried, body, tag, whole_steps=False):
        """for (i = start; i < end; i += step) carried = body(i, carried); returns (i, carried)."""
        return carried_loop(b, start, end, step, carried, body, tag, whole_steps)

    def intrinsic(self, name, ret, args):
        return self.k.intrinsic(name, ret, args)

    def vload(self, b, ptr):
        return b.load(ptr, typ=self.vf, align=4)

    def vstore(self, b, value, ptr):
        b.store(value, ptr, align=4)

    def splat(self, b, x, typ=F32):
        vt = ir.VectorType(typ, LANES)
        undef = ir.Constant(vt, ir.Undefined)
        one = b.insert_element(undef, x, ir.Constant(I32, 0))
        return b.shuffle_vector(one, undef, ir.Constant(ir.VectorType(I32, LANES), [0] * LANES))

    def gep(self, b, base, index):
        return b.gep(base, [index], source_etype=F32)

    def fma(self, b, x, y, z):
        return self.k.fma(b, x, y, z)

    def vmax(self, b, x, y):
        return b.call(self.intrinsic("llvm.maxnum.v16f32", self.vf, [self.vf, self.vf]), [x, y])

    def lanes(self, b, start):
        """<16 x i64>: start + lane."""
        iota = ir.Constant(self.vi, [ir.Constant(I64, j) for j in range(LANES)])
        return b.add(self.splat(b, start, I64), iota)

    def gather(self, b, ptrs, valid):
        fn = self.intrinsic("llvm.masked.gather.v16f32.v16p0", self.vf,
                            [ir.VectorType(PTR, LANES), I32, self.vb, self.vf])
        return b.call(fn, [ptrs, ir.Constant(I32, 4), valid, self.k.fc(0.0)])

    # ---- the kernel -----------------------------------------------------------------------------------
    def build(self) -> str:
        sh, C = self.sh, self.c64
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [I64, I64, PTR, PTR]), name="attention")
        fn.attributes.add("nounwind")
        lo, hi, args, scratch = fn.args
        for a in (args, scratch):
            a.add_attribute("noalias")
        b = ir.IRBuilder(fn.append_basic_block("entry"))

        def arg(i):
            word = b.load(b.gep(args, [C(i)], source_etype=I64), typ=I64)
            return b.inttoptr(word, PTR)

        q, k, v, out, mask = (arg(i) for i in range(5))
        qt = scratch                                     # [E][bq]: scale * Q^T of the item
        dvp, bkp = _round_up(sh.Dv, self.mv), _round_up(sh.bk, self.mk)
        ot = self.gep(b, qt, C(sh.E * sh.bq))            # [dvp][bq]: the accumulator O^T
        tile = self.gep(b, ot, C(dvp * sh.bq))           # [bkp][QC]: scores, then P, of a chunk
        m_row = self.gep(b, tile, C(bkp * QC))           # [bq] running max
        l_row = self.gep(b, m_row, C(sh.bq))             # [bq] running sum
        zero, ninf = self.k.fc(0.0), self.k.fc(float("-inf"))

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
            ctx = dict(bi=bi, h=h, k0=at(k, sh.k_st, hk, C(0)), v0=at(v, sh.v_st, hk, C(0)), mask=mask)
            self.pack_q(b, at(q, sh.q_st, h, r0), rows, qt)

            def init(r, _):   # O^T, m, l of the item's bq queries (the padding lanes too)
                self.vstore(b, ninf, self.gep(b, m_row, r))
                self.vstore(b, zero, self.gep(b, l_row, r))
                self.loop(b, C(0), C(dvp), C(1), [],
                          lambda c, _: (self.vstore(b, zero, self.gep(b, ot, b.add(b.mul(c, C(sh.bq)), r))), [])[1],
                          "zero")
                return []
            self.loop(b, C(0), C(sh.bq), C(LANES), [], init, "init")

            kv_end = C(sh.S)
            if sh.causal:   # top-left: query i sees keys j <= i; blocks past the last row's are skipped
                last = b.add(r0, rows)
                kv_end = b.select(b.icmp_signed("<", last, C(sh.S)), last, C(sh.S))

            def kv_block(kb, _):
                def chunk(c0, _):
                    qa = b.add(r0, c0)   # the chunk's first query
                    end = kv_end
                    if sh.causal:
                        last = b.add(qa, C(QC))
                        end = b.select(b.icmp_signed("<", last, kv_end), last, kv_end)
                    cols = b.sub(end, kb)
                    cols = b.select(b.icmp_signed("<", cols, C(sh.bk)), cols, C(sh.bk))
                    with b.if_then(b.icmp_signed(">", cols, C(0))):
                        self.chunk(b, ctx, kb, cols, c0, qa, qt, ot, tile, m_row, l_row)
                    return []
                self.loop(b, C(0), rows, C(QC), [], chunk, "chunk")
                return []
            self.loop(b, C(0), kv_end, C(sh.bk), [], kv_block, "kv")
            self.finish(b, at(out, sh.o_st, h, r0), rows, ot, l_row)
            return []

        self.loop(b, lo, hi, C(1), [], item, "item")
        b.ret_void()
        return str(self.module)

    def strided(self, b, base, r, stride):
        """<16 x ptr>: base + (r + lane) * stride floats, the rows r.. of a column."""
        offs = b.mul(self.lanes(b, r), self.splat(b, self.c64(4 * stride), I64))
        return b.inttoptr(b.add(self.splat(b, b.ptrtoint(base, I64), I64), offs), ir.VectorType(PTR, LANES))

    def pack_q(self, b, q0, rows, qt):
        """Q^T [E][bq] = scale * Q rows of the item (padding queries 0): 16 rows of a column per
        gather, so the loops hold vector code only (scalar transposes here cost more compile time,
        in the optimiser's vectoriser, than the rest of the kernel)."""
        sh, C = self.sh, self.c64
        scale = self.k.fc(sh.scale)

        def column(d, _):
            src = self.gep(b, q0, d)

            def rows16(r, _):
                valid = b.icmp_signed("<", self.lanes(b, r), self.splat(b, rows, I64))
                x = self.gather(b, self.strided(b, src, r, sh.q_st[2]), valid)
                self.vstore(b, b.fmul(x, scale), self.gep(b, qt, b.add(b.mul(d, C(sh.bq)), r)))
                return []
            self.loop(b, C(0), C(sh.bq), C(LANES), [], rows16, "qr")
            return []
        self.loop(b, C(0), C(sh.E), C(1), [], column, "qd")

    def chunk(self, b, ctx, kb, cols, c0, qa, qt, ot, tile, m_row, l_row):
        """One KV block for the QC queries from c0 of the item: scores, online softmax, P V."""
        sh, C = self.sh, self.c64
        ninf = self.k.fc(float("-inf"))
        queries = [self.lanes(b, b.add(qa, C(LANES * t))) for t in range(2)]

        # ---- S^T = K_blk Q^T, register tiles of mk keys (then single keys) x 32 queries
        # the last panel of a block may run past its keys: those rows read the block's last key
        # (in bounds), score -inf (out of the max) and land in tile rows that nothing reads
        last_key = b.sub(cols, C(1))

        def scores(height):
            def panel(j0, carried):
                keys = [b.add(j0, C(i)) for i in range(height)]
                valid = [b.icmp_signed("<", j, cols) for j in keys]
                keys = [b.select(ok, j, last_key) for ok, j in zip(valid, keys)]
                krows = [self.gep(b, ctx["k0"], b.mul(b.add(kb, j), C(sh.k_st[2]))) for j in keys]

                def step(d, acc):
                    qv = [self.vload(b, self.gep(b, qt, b.add(b.mul(d, C(sh.bq)), b.add(c0, C(LANES * t)))))
                          for t in range(2)]
                    new = []
                    for i in range(height):
                        kv = self.splat(b, b.load(self.gep(b, krows[i], d), typ=F32))
                        new += [self.fma(b, kv, qv[t], acc[2 * i + t]) for t in range(2)]
                    return new
                _, acc = self.loop(b, C(0), C(sh.E), C(1), [self.k.fc(0.0)] * (2 * height), step, "e")
                vmax = list(carried)
                for i in range(height):
                    key = b.add(kb, keys[i])
                    for t in range(2):
                        s = self.epilogue(b, ctx, acc[2 * i + t], key, queries[t])
                        s = b.select(valid[i], s, ninf)
                        self.vstore(b, s, self.gep(b, tile, b.add(b.mul(b.add(j0, C(i)), C(QC)), C(LANES * t))))
                        vmax[t] = self.vmax(b, vmax[t], s)
                return vmax
            return panel
        _, vmax = self.loop(b, C(0), cols, C(self.mk), [ninf, ninf], scores(self.mk), "kp")

        # ---- online softmax, a vector of 16 queries at a time
        corr, m_use = [], []
        for t in range(2):
            mp = self.gep(b, m_row, b.add(c0, C(LANES * t)))
            m_old = self.vload(b, mp)
            m_new = self.vmax(b, m_old, vmax[t])
            # a query with every key so far masked keeps m = -inf and exponentiates against 0
            use = b.select(b.fcmp_ordered("==", m_new, ninf), self.k.fc(0.0), m_new)
            self.vstore(b, m_new, mp)
            corr.append(emit_exp(self.k, b, b.fsub(m_old, use)))
            m_use.append(use)
        masked = sh.causal or sh.mask_strides is not None

        def expo(jj, sums):
            new = []
            for t in range(2):
                ptr = self.gep(b, tile, b.add(b.mul(jj, C(QC)), C(LANES * t)))
                s = self.vload(b, ptr)
                p = emit_exp(self.k, b, b.fsub(s, m_use[t]))
                if masked:   # exp(-inf) is 0 exactly, whatever the polynomial's clamp gives
                    p = b.select(b.fcmp_ordered("==", s, ninf), self.k.fc(0.0), p)
                self.vstore(b, p, ptr)
                new.append(b.fadd(sums[t], p))
            return new
        _, sums = self.loop(b, C(0), cols, C(1), [self.k.fc(0.0)] * 2, expo, "exp")
        for t in range(2):
            lp = self.gep(b, l_row, b.add(c0, C(LANES * t)))
            self.vstore(b, self.fma(b, self.vload(b, lp), corr[t], sums[t]), lp)

        # ---- O^T = O^T * corr + V_blk^T P^T, register tiles of mv channels (then single ones) x 32 queries
        # the last panel may run past Dv: those channels read V's last one and go to O^T rows past
        # Dv (scratch has them) that the output never reads
        def pv(height):
            def panel(c, _):
                optr = [[self.gep(b, ot, b.add(b.mul(b.add(c, C(i)), C(sh.bq)), b.add(c0, C(LANES * t))))
                         for t in range(2)] for i in range(height)]
                init = [b.fmul(self.vload(b, optr[i][t]), corr[t]) for i in range(height) for t in range(2)]
                vbase = self.gep(b, ctx["v0"], b.mul(kb, C(sh.v_st[2])))
                chans = [b.add(c, C(i)) for i in range(height)]
                chans = [b.select(b.icmp_signed("<", ch, C(sh.Dv)), ch, C(sh.Dv - 1)) for ch in chans]

                def step(jj, acc):
                    pv_ = [self.vload(b, self.gep(b, tile, b.add(b.mul(jj, C(QC)), C(LANES * t)))) for t in range(2)]
                    vrow = self.gep(b, vbase, b.mul(jj, C(sh.v_st[2])))
                    new = []
                    for i in range(height):
                        vv = self.splat(b, b.load(self.gep(b, vrow, chans[i]), typ=F32))
                        new += [self.fma(b, vv, pv_[t], acc[2 * i + t]) for t in range(2)]
                    return new
                _, acc = self.loop(b, C(0), cols, C(1), init, step, "j")
                for i in range(height):
                    for t in range(2):
                        self.vstore(b, acc[2 * i + t], optr[i][t])
                return []
            return panel
        self.loop(b, C(0), C(sh.Dv), C(self.mv), [], pv(self.mv), "vp")

    def epilogue(self, b, ctx, s, key, queries):
        """A key's scores for 16 queries: + the mask, -inf past the causal diagonal."""
        sh, C = self.sh, self.c64
        if sh.mask_strides is not None:
            sb, shd, sr = sh.mask_strides
            base = self.gep(b, ctx["mask"], b.add(b.add(b.mul(ctx["bi"], C(sb)), b.mul(ctx["h"], C(shd))), key))
            if sr == 0:   # the same mask row for every query (key padding)
                add = self.splat(b, b.load(base, typ=F32))
            else:         # padding queries (past L) read nothing
                valid = b.icmp_signed("<", queries, self.splat(b, C(sh.L), I64))
                offs = b.mul(queries, self.splat(b, C(4 * sr), I64))
                ptrs = b.inttoptr(b.add(self.splat(b, b.ptrtoint(base, I64), I64), offs), ir.VectorType(PTR, LANES))
                add = self.gather(b, ptrs, valid)
            s = b.fadd(s, add)
        if sh.causal:
            s = b.select(b.icmp_signed("<=", self.splat(b, key, I64), queries), s, self.k.fc(float("-inf")))
        return s

    def finish(self, b, o0, rows, ot, l_row):
        """out rows = O^T columns / l (0 where l == 0: every key masked), 16 rows of a column per scatter."""
        sh, C = self.sh, self.c64
        fn = self.intrinsic("llvm.masked.scatter.v16f32.v16p0", ir.VoidType(),
                            [self.vf, ir.VectorType(PTR, LANES), I32, self.vb])

        def rows16(r, _):
            valid = b.icmp_signed("<", self.lanes(b, r), self.splat(b, rows, I64))
            total = self.vload(b, self.gep(b, l_row, r))
            inv = b.select(b.fcmp_ordered(">", total, self.k.fc(0.0)), b.fdiv(self.k.fc(1.0), total), self.k.fc(0.0))

            def column(c, _):
                x = b.fmul(self.vload(b, self.gep(b, ot, b.add(b.mul(c, C(sh.bq)), r))), inv)
                b.call(fn, [x, self.strided(b, self.gep(b, o0, c), r, sh.o_st[2]), ir.Constant(I32, 4), valid])
                return []
            self.loop(b, C(0), C(sh.Dv), C(1), [], column, "oc")
            return []
        self.loop(b, C(0), rows, C(LANES), [], rows16, "finish")


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
        if len(ops) != 1 or ops[0].name != "attention":
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
            builder = _Builder(sh, host_features())
            compiled = jit.compile_ir(builder.build(), "attention")
            threads = min(host_threads(), pool().workers + 1, sh.items)
            bufs = [np.empty(sh.scratch_bytes(builder.mk, builder.mv), np.uint8) for _ in range(threads)]
            entry = (KERNEL_PROTO(compiled.address), compiled, bufs)
            self._compiled[key] = entry
        cfunc, _, bufs = entry
        args = np.array([q.ctypes.data, k.ctypes.data, v.ctypes.data, out.ctypes.data,
                         0 if mask is None else mask.ctypes.data], np.int64)
        scratch = [_round_up(buf.ctypes.data, ALIGN) for buf in bufs]
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

"""A lone reduction over any contiguous range of axes, natively: [A, K, B] -> [A, B].

Row fusion merges only last-axis reductions; a reduction over other axes stays a kernel of
its own (kind "single").  Its input is viewed as [A, K, B] (A: the axes before the reduced
range, K: the reduced axes, B: the axes after it; all free reshapes of a contiguous array):

    B == 1   a row reduction of A rows of K elements: the row kernel (llvm_row) of a
             one-op function [A, K] -> [A], so the same vector walk and numerics
    B > 1    a column reduction: block (a, j) keeps COLS consecutive outputs
             out[a, j*COLS : (j+1)*COLS] in vector accumulators and walks k = 0..K-1 over
             x[a, k, j*COLS ...] (each step one contiguous, masked-at-the-edge load per
             vector), so every element is read once, in order within each row of x

Accumulation, identities, NaN propagation and rounding are those of llvm_row (float32 or
int32 accumulators, mean divides by K, one rounding to the result dtype).
"""
from __future__ import annotations

import math

import numpy as np
from llvmlite import ir

from .. import dtypes as dt
from ..ir.core import Function, Op, Param, TensorType, Value, freeze_attrs
from . import jit
from .launch import KERNEL_PROTO, host_threads, pool, run_blocks
from .llvm import host_features
from .llvm_row import (F32, I32, I64, LANES, PARALLEL_MIN_BYTES, PTR, VOID, RowCpuKernel, _accumulator_form,
                       _reduction_info, _RowBuilder)
from .mathlib import VectorConsts
from ..lower.row_plan import REDUCTIONS
from .stmts import LoweringError, StmtEmitter, reg_type, vec

VECTORS = 4                 # accumulators per column block: COLS = VECTORS * LANES outputs
COLS = VECTORS * LANES
SYMBOL = "fusedsl_reduce_kernel"

__all__ = ["ReduceCpuKernel", "reduced_range"]


def reduced_range(op: Op) -> tuple[int, int] | None:
    """(first, last) reduced axis when a lone reduction's axes are one contiguous range."""
    if op.name not in REDUCTIONS:
        return None
    axes = tuple(op.attr("axes"))
    if not axes or axes != tuple(range(axes[0], axes[-1] + 1)):
        return None
    return axes[0], axes[-1]


class _ColumnBuilder(_RowBuilder):
    """void kernel(i64 block_begin, i64 block_end, ptr args, ptr scratch);
    args: A, K, B, blocks per a, x address, out address."""

    def __init__(self, op: Op, name: str, features):
        self.op = op
        self.name = name
        self.module = ir.Module(name=name)
        self.k = VectorConsts(self.module, LANES, scalef="avx512f" in features)
        self.nt_md = self.module.add_metadata([ir.Constant(I32, 1)])

    def build(self) -> str:
        op = self.op
        src, res = op.operands[0].dtype, op.result.dtype
        name, ident = _reduction_info(self.k, op)
        fn = ir.Function(self.module, ir.FunctionType(VOID, [I64, I64, PTR, PTR]), self.name)
        fn.attributes.add("nounwind")
        b0, b1, args, _ = fn.args
        args.add_attribute("noalias")
        b = ir.IRBuilder(fn.append_basic_block("entry"))

        def arg(i, t=I64):
            return b.load(b.gep(args, [ir.Constant(I64, i)], source_etype=I64), typ=t, align=8)

        K, B, per_a = arg(1), arg(2), arg(3)
        x, out = arg(4, PTR), arg(5, PTR)
        iota = ir.Constant(vec(I64, LANES), [ir.Constant(I64, j) for j in range(LANES)])
        em = StmtEmitter(self.k, b, {})

        def block(blk):
            a = b.udiv(blk, per_a)
            c0 = b.mul(b.urem(blk, per_a), ir.Constant(I64, COLS))
            masks = []
            for u in range(VECTORS):
                left = b.sub(B, b.add(c0, ir.Constant(I64, u * LANES)))
                masks.append(b.icmp_signed("<", iota, em.splat_value(left)))
            base = b.add(b.mul(a, b.mul(K, B)), c0)

            def walk(full):
                def step(k, accs):
                    row = b.add(base, b.mul(k, B))
                    new = []
                    for u in range(VECTORS):
                        off = b.add(row, ir.Constant(I64, u * LANES))
                        v = em.to_reg(self._load(b, x, off, src, None if full else masks[u]), src)
                        v = _accumulator_form(b, v, src)
                        if not full:
                            v = b.select(masks[u], v, ident)
                        new.append(self._combine(b, name, accs[u], v))
                    return new
                return self._stride_loop(b, fn, ir.Constant(I64, 0), K, 1, [ident] * VECTORS, step, "k")[1]

            # a whole strip of COLS columns loads unmasked; the last strip of a row masks its edge
            whole = b.icmp_signed("<=", b.add(c0, ir.Constant(I64, COLS)), B)
            with b.if_else(whole) as (then, otherwise):
                with then:
                    full_accs = walk(True)
                    full_block = b.block
                with otherwise:
                    edge_accs = walk(False)
                    edge_block = b.block
            accs = []
            for f, e in zip(full_accs, edge_accs):
                phi = b.phi(f.type)
                phi.add_incoming(f, full_block)
                phi.add_incoming(e, edge_block)
                accs.append(phi)
            out_base = b.add(b.mul(a, B), c0)
            for u in range(VECTORS):
                v = accs[u]
                if res.is_float:
                    if op.name == "mean":
                        v = b.fdiv(v, em.splat_value(b.uitofp(K, F32)))
                    if res != dt.float32:
                        v = em.round_to(v, res)
                    v = em.to_mem(v, res)
                elif res != dt.int32:
                    v = b.trunc(v, vec(reg_type(res), LANES))
                self._store(b, v, out, b.add(out_base, ir.Constant(I64, u * LANES)), res, masks[u])

        self._for(b, fn, b0, b1, block, "block")
        b.ret_void()
        return str(self.module)


class ReduceCpuKernel:
    """A lone contiguous-axes reduction compiled for this host (module doc)."""

    def __init__(self, fn: Function, target, *, use_disk_cache: bool = True):
        ops = [op for op in fn.ops]
        if len(ops) != 1 or len(fn.params) != 1 or reduced_range(ops[0]) is None:
            raise LoweringError(f"{fn.name} is not a lone reduction over contiguous axes")
        self.op = op = ops[0]
        self.first, self.last = reduced_range(op)
        self.target = target
        self._rows: RowCpuKernel | None = None
        self._last = None   # (x, (out,), call) of the last call
        self._use_disk = use_disk_cache
        self.ir = _ColumnBuilder(op, SYMBOL, frozenset(host_features())).build()
        self._compiled = jit.compile_ir(self.ir, SYMBOL, use_disk=use_disk_cache)
        self._cfunc = KERNEL_PROTO(self._compiled.address)

    def _row_kernel(self) -> RowCpuKernel:
        """The B == 1 case: [A, K] -> [A] over the last axis, by the row kernel."""
        if self._rows is None:
            op = self.op
            x = Value(TensorType(("A", "K"), op.operands[0].dtype), "x")
            red = Op(op.name, (x,), (Value(TensorType(("A",), op.result.dtype)),),
                     freeze_attrs({"axes": [1], "keepdims": False}), op.loc)
            fn = Function(f"{op.name}_rows", (Param(x),), (red,), red.results, op.loc)
            self._rows = RowCpuKernel(fn, self.target, use_disk_cache=self._use_disk, remember_last=False)
        return self._rows

    def bound_outputs(self) -> tuple:
        """The output the remembered call keeps alive (the output pool discounts it)."""
        return () if self._last is None else self._last[1]   # the stored tuple: no extra reference

    def run(self, inputs, outputs) -> None:
        x = np.ascontiguousarray(inputs[0], dtype=self.op.operands[0].dtype.np)
        out = outputs[0]
        last = self._last
        if last is not None and x is last[0] and out is last[1][0]:
            last[2]()   # the same arrays as the last call: its argument block is still right
            return
        self._last = None
        call = self._bind(x, out)
        if call is not None:
            # remembered with the arrays it addresses (kept alive, compared by identity): a
            # loop of calls on the same arrays skips the sizes and the pointer reads (~2 us each)
            self._last = (x, (out,), call)
            call()

    def _bind(self, x, out):
        shape = x.shape
        A = math.prod(shape[:self.first])     # Python ints: np.prod costs ~5 us a call
        K = math.prod(shape[self.first:self.last + 1])
        B = math.prod(shape[self.last + 1:])
        if A * B == 0:
            return None
        if B == 1:
            rows, xr, outr = self._row_kernel(), x.reshape(A, K), out.reshape(A)
            return lambda: rows.run([xr], [outr])
        per_a = -(-B // COLS)
        blocks = A * per_a
        args = np.array([A, K, B, per_a, x.ctypes.data, out.ctypes.data], np.int64)
        address, cfunc = args.ctypes.data, self._cfunc
        threads = 1
        if blocks > 1 and x.nbytes >= PARALLEL_MIN_BYTES:
            threads = min(host_threads(), pool().workers + 1, blocks)
        if threads == 1:
            def call():
                cfunc(0, blocks, address, 0)
        else:
            scratch = [0] * threads

            def call():
                run_blocks(cfunc, blocks, address, scratch)
        call.args = args   # the argument block lives as long as the call
        return call

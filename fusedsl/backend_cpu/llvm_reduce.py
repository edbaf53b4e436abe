"""A column kernel natively: reductions over a contiguous range of axes before the last, with
their elementwise producers and consumers (lower/column_plan.ColumnPlan), [A, K, B] -> [A, B].

Block (a, j) keeps COLS consecutive output columns b = j*COLS .. j*COLS+COLS-1 in VECTORS
vectors of LANES lanes.  Per phase of the plan it computes the phase's col ops on those
vectors, then walks k = 0..K-1: each elem input is one contiguous (masked at the edge of
B) load at a*sa + k*sk + b, the phase's elem ops run on the vectors, and each reduction
folds its operand into its accumulators.  So every input element is read once per walk, in
order within each row of the input.  After the last phase the outputs are stored.

Only what the column kind does not lower comes here (compiler._column_kernel: integer
reductions and bool results, symbolic sizes); a lone reduction whose range ends at the last
axis is the row kind's kernel of [A, K] -> [A] (compiler._trailing_rows).

Accumulation in float32 (every float dtype) or int32 (integer and bool operands: sums wrap like
numpy's int64 sum cast to int32), numpy's identities and NaN propagation (max / min keep a NaN),
mean divides by K, one rounding to the result dtype; the elementwise ops are the vector kernels'
tile stmts (StmtEmitter), so fused and unfused programs agree.

args (int64 words): A, K, B, blocks per a; per tensor parameter its address and its strides
sa, sk, sb (elements, 0 = broadcast); the output addresses; the runtime scalars as float64
bit patterns.
"""
from __future__ import annotations

import math

import numpy as np
from llvmlite import ir

from .. import dtypes as dt
from ..ir.core import Function
from ..ir.shapes import column_param
from ..lower.column_plan import ColumnPlan, plan_column_kernel
from ..lower.vector import VectorSchedule, compute_dtype
from . import jit
from .host import host_features
from .irgen import carried_loop, counted_loop, kernel_function, masked_load, masked_store
from .launch import KERNEL_PROTO, host_threads, pool, run_blocks
from .mathlib import VectorConsts
from .stmts import F32, I32, LANES, StmtEmitter, mem_type, reg_type, round_scalar_to, vec

I64 = ir.IntType(64)
F64 = ir.DoubleType()
PTR = ir.PointerType()
PARALLEL_MIN_BYTES = 16 << 20   # as the vector kernels: below this a launch stays on one thread
_IDENTITY = {"sum": 0.0, "mean": 0.0, "max": float("-inf"), "min": float("inf")}

VECTORS = 4                 # accumulators per column block: COLS = VECTORS * LANES outputs
COLS = VECTORS * LANES
SYMBOL = "fusedsl_column_kernel"
HEAD = 4                    # A, K, B, blocks per a
PARAM_WORDS = 4             # address, sa, sk, sb

__all__ = ["ColumnCpuKernel"]


def constant_slots(sched: VectorSchedule) -> dict[str, object]:
    """Scratch slots a step's schedule fills with one value before any tile (Compare's constant
    operands): no stmt writes them, so they are constants."""
    return {name: value for name, value in getattr(sched, "prefill", {}).items()
            if sched.slots.get(name) is not None and sched.slots[name].role == "scratch"}


class _ColumnBuilder:
    """void kernel(i64 block_begin, i64 block_end, ptr args, ptr scratch) (module doc)."""

    def __init__(self, plan: ColumnPlan, name: str, features):
        self.plan = plan
        self.name = name
        self.module = ir.Module(name=name)
        self.k = VectorConsts(self.module, LANES, scalef="avx512f" in features)
        self.nt_md = self.module.add_metadata([ir.Constant(I32, 1)])
        self.tensors = [p for p in plan.params if p.kind != "runtime_scalar"]
        self.scalars = [p for p in plan.params if p.kind == "runtime_scalar"]

    def build(self) -> str:
        plan = self.plan
        fn, b = kernel_function(self.module, self.name)
        b0, b1, args, _ = fn.args
        self.fn, self.b = fn, b

        def arg(i, t=I64):
            return b.load(b.gep(args, [ir.Constant(I64, i)], source_etype=I64), typ=t, align=8)

        K, B, per_a = arg(1), arg(2), arg(3)
        ptrs, strides = {}, {}
        for t, p in enumerate(self.tensors):
            w = HEAD + PARAM_WORDS * t
            ptrs[id(p.value)] = arg(w, PTR)
            strides[id(p.value)] = (arg(w + 1), arg(w + 2), arg(w + 3))
        w = HEAD + PARAM_WORDS * len(self.tensors)
        outs = [arg(w + i, PTR) for i in range(len(plan.fn.results))]
        w += len(plan.fn.results)
        em0 = StmtEmitter(self.k, b, {})
        scal = {}   # id(value) -> scalar register: runtime scalars and size-1 tensors, read once
        for i, p in enumerate(self.scalars):
            raw = b.bitcast(arg(w + i), F64)
            d = p.value.dtype
            scal[id(p.value)] = b.fptrunc(raw, F32) if d.is_float else b.trunc(b.fptosi(raw, I64), reg_type(d))
        for p in self.tensors:
            if p.kind == "scalar":
                d = p.value.dtype
                v = b.load(ptrs[id(p.value)], typ=mem_type(d), align=d.itemsize)
                scal[id(p.value)] = self._scalar_reg(b, v, d)
        kf = b.uitofp(K, F32)
        iota = ir.Constant(vec(I64, LANES), [ir.Constant(I64, j) for j in range(LANES)])

        def block(blk):
            a = b.udiv(blk, per_a)
            c0 = b.mul(b.urem(blk, per_a), ir.Constant(I64, COLS))
            masks = [b.icmp_signed("<", iota, em0.splat_value(b.sub(B, b.add(c0, ir.Constant(I64, u * LANES)))))
                     for u in range(VECTORS)]
            whole = b.icmp_signed("<=", b.add(c0, ir.Constant(I64, COLS)), B)
            with b.if_else(whole) as (then, otherwise):
                with then:
                    self._columns(a, c0, None, K, B, kf, ptrs, strides, outs, scal)
                with otherwise:
                    self._columns(a, c0, masks, K, B, kf, ptrs, strides, outs, scal)

        self._for(b, fn, b0, b1, block, "block")
        b.ret_void()
        return str(self.module)

    # ---- small helpers ----------------------------------------------------------------------
    def _for(self, b, fn, start, end, body, tag):
        counted_loop(b, fn, start, end, body, tag)

    def _stride_loop(self, b, fn, start, limit, step, carried, body, tag):
        """i = start; while (i + step <= limit) { carried = body(i, carried); i += step }
        Returns (i, carried) after the loop."""
        return carried_loop(b, start, limit, step, carried, body, tag, whole_steps=True)

    def _load(self, b, ptr, offset, d, mask):
        return masked_load(self.k, b, ptr, offset, d, mask)

    def _store(self, b, value, ptr, offset, d, mask, nt=False):
        masked_store(self.k, b, value, ptr, offset, d, mask, self.nt_md if nt else None)

    def _scalar_reg(self, b, v, d):
        """A scalar loaded in d's memory form, in register form."""
        if d == dt.float16:
            return b.fpext(v, F32)
        if d == dt.bfloat16:
            return b.bitcast(b.shl(b.zext(v, I32), ir.Constant(I32, 16)), F32)
        return v

    # ---- one op as tile stmts ---------------------------------------------------------------
    def _run_step(self, b, step, operand_value):
        """The op's result register (vector) from its stmts; `operand_value(v)` gives each
        operand as ("vec", vector) or ("scalar", scalar)."""
        sched = step.sched
        var_types = {inp.var: compute_dtype(inp.gm_dtype) for inp in sched.inputs if inp.var}
        em = StmtEmitter(self.k, b, var_types)
        values, var_values = {}, {}
        for inp in sched.inputs:
            form, v = operand_value(step.sources[inp.index])
            if inp.var:
                # a row value arrives here only when the row is one element long: lane-wise
                # it is the same value
                lanes = v if form == "vec" else em.splat_value(v)
                var_values[inp.var] = em.convert(lanes, inp.gm_dtype, compute_dtype(inp.gm_dtype), None)
            else:
                values[inp.slot] = v if form == "vec" else em.splat_value(v)
        for slot, value in constant_slots(sched).items():
            d = sched.slots[slot].dtype
            values[slot] = em.splat(round_scalar_to(value, d), reg_type(d))
        for st in sched.stmts:
            scalar = em.scalar_operand(st, var_values) if st.scalar is not None and st.op != "cast" else None
            values[st.dst] = em.stmt(st, [values[s] for s in st.srcs], scalar)
        return values[sched.outputs[0].slot]

    # ---- reductions -------------------------------------------------------------------------
    def _combine(self, b, name, x, y):
        """name: sum/mean/max/min on float32 accumulators, isum/imax/imin on int32 ones."""
        if name == "isum":
            return b.add(x, y)
        if name in ("imax", "imin"):
            return b.select(b.icmp_signed(">" if name == "imax" else "<", x, y), x, y)
        if name in ("sum", "mean"):
            return b.fadd(x, y)
        op = ">=" if name == "max" else "<="
        take_x = b.or_(b.fcmp_ordered(op, x, y), b.fcmp_unordered("uno", x, x))
        return b.select(take_x, x, y)

    def _columns(self, a, c0, masks, K, B, kf, ptrs, strides, outs, scal):
        """Every phase on the COLS columns from c0 of slice a (masks: the edge of B, or None)."""
        b, plan, fn = self.b, self.plan, self.fn
        em = StmtEmitter(self.k, b, {})
        cols: dict[int, list] = {}   # id(value) -> VECTORS vectors (register form)

        def mask(u):
            return None if masks is None else masks[u]

        def col_operand(v, u):
            key = id(v)
            if key in scal:
                return ("scalar", scal[key])
            if key not in cols:   # a col parameter: one row of B values of slice a
                sa, _, _ = strides[key]
                off = b.add(b.mul(a, sa), c0)
                cols[key] = [em.to_reg(self._load(b, ptrs[key], b.add(off, ir.Constant(I64, j * LANES)), v.dtype,
                                                  mask(j)), v.dtype) for j in range(VECTORS)]
            return ("vec", cols[key][u])

        for p in plan.params:   # loaded before any loop, so every later use sees them
            if p.kind == "col":
                col_operand(p.value, 0)
        for phase in plan.phases:
            for step in phase.col_ops:
                cols[id(step.op.result)] = [self._run_step(b, step, lambda v, u=u: col_operand(v, u))
                                            for u in range(VECTORS)]
            if not phase.walks:
                continue
            reds = phase.reductions
            info = [_reduction_info(self.k, op) for op in reds]
            bases = {}
            for p in plan.elem_params(phase):
                sa, _, _ = strides[id(p.value)]
                bases[id(p.value)] = b.add(b.mul(a, sa), c0)

            def step(k, accs):
                new = list(accs)
                for u in range(VECTORS):
                    vals = {}

                    def operand(v, u=u, vals=vals):
                        key = id(v)
                        if key in vals:
                            return ("vec", vals[key])
                        if key in bases:
                            _, sk, _ = strides[key]
                            off = b.add(b.add(bases[key], b.mul(k, sk)), ir.Constant(I64, u * LANES))
                            vals[key] = em.to_reg(self._load(b, ptrs[key], off, v.dtype, mask(u)), v.dtype)
                            return ("vec", vals[key])
                        return col_operand(v, u)

                    for st in phase.elem_ops:
                        vals[id(st.op.result)] = self._run_step(b, st, operand)
                    for r, op in enumerate(reds):
                        x = _accumulator_form(b, operand(op.operands[0])[1], op.operands[0].dtype)
                        new[r * VECTORS + u] = self._combine(b, info[r][0], accs[r * VECTORS + u], x)
                return new

            start = [ident for _, ident in info for _ in range(VECTORS)]
            _, accs = self._stride_loop(b, fn, ir.Constant(I64, 0), K, 1, start, step, "k")
            for r, op in enumerate(reds):
                d = op.result.dtype
                vs = []
                for u in range(VECTORS):
                    v = accs[r * VECTORS + u]
                    if d.is_float:
                        if op.name == "mean":
                            v = b.fdiv(v, em.splat_value(kf))
                        if d != dt.float32:   # rounded once to the result dtype
                            v = em.round_to(v, d)
                    elif d != dt.int32:      # integer max/min narrow back to their dtype
                        v = b.trunc(v, vec(reg_type(d), LANES))
                    vs.append(v)
                cols[id(op.result)] = vs
        out_base = b.add(b.mul(a, B), c0)
        for i, v in enumerate(plan.fn.results):
            for u in range(VECTORS):
                val = col_operand(v, u)[1]
                self._store(b, em.to_mem(val, v.dtype), outs[i], b.add(out_base, ir.Constant(I64, u * LANES)),
                            v.dtype, mask(u))


def _reduction_info(k: VectorConsts, op) -> tuple:
    """(combine name, identity vector) of a reduction: float32 or int32 accumulators."""
    d = op.operands[0].dtype
    if d.is_float:
        return op.name, k.fc(_IDENTITY[op.name])
    info = np.iinfo(np.int8 if d == dt.int8 else np.uint8 if d in (dt.uint8, dt.bool_) else np.int32)
    ident = {"sum": 0, "max": int(info.min), "min": int(info.max)}[op.name]
    return "i" + op.name, ir.Constant(vec(I32, LANES), [ir.Constant(I32, ident)] * LANES)


def _accumulator_form(b, v, d):
    """A reduction operand (register form of dtype d) as its accumulator type."""
    if d.is_float or d == dt.int32:
        return v
    widen = b.sext if d == dt.int8 else b.zext   # uint8 and bool are unsigned
    return widen(v, vec(I32, LANES))


def _nothing() -> None:
    """The bound call of a kernel with nothing to compute."""


class ColumnCpuKernel:
    """A column kernel compiled for this host."""

    def __init__(self, fn: Function, target, *, use_disk_cache: bool = True):
        self.fn = fn
        self.target = target
        self._use_disk = use_disk_cache
        self._last = None   # (tensors, outputs, call) of the last call
        self.plan = plan_column_kernel(fn, target)
        self.ir = _ColumnBuilder(self.plan, SYMBOL, frozenset(host_features())).build()
        self._compiled = jit.compile_ir(self.ir, SYMBOL, use_disk=use_disk_cache)
        self._cfunc = KERNEL_PROTO(self._compiled.address)
        self._tensors = [p for p in self.plan.params if p.kind != "runtime_scalar"]
        self._scalars = [p for p in self.plan.params if p.kind == "runtime_scalar"]

    def bound_outputs(self) -> tuple:
        """The outputs the remembered call keeps alive (the output pool discounts them)."""
        return () if self._last is None else self._last[1]

    def run(self, inputs, outputs) -> None:
        tensors = [np.ascontiguousarray(inputs[p.index], dtype=p.value.dtype.np) for p in self._tensors]
        last = self._last
        if last is not None and not self._scalars and all(x is y for x, y in zip(tensors, last[0])) and \
                all(x is y for x, y in zip(outputs, last[1])):
            last[2]()   # the same arrays as the last call: its argument block is still right
            return
        self._last = None
        call = self._bind(inputs, tensors, outputs)
        if call is not None:
            # remembered with the arrays it addresses (kept alive, compared by identity): a
            # loop of calls on the same arrays skips the sizes and the pointer reads
            self._last = (tensors, tuple(outputs), call)
            call()

    def bind(self, inputs, outputs):
        """A callable running the kernel on exactly these arrays (a program's bound step: the
        arrays stay the same, their contents change).  Runtime scalars are read now."""
        tensors = [np.ascontiguousarray(inputs[p.index], dtype=p.value.dtype.np) for p in self._tensors]
        if any(x is not inputs[p.index] for x, p in zip(tensors, self._tensors)):
            return lambda: self.run(inputs, outputs)   # converted copies: convert on every call
        call = self._bind(inputs, tensors, outputs)
        return call if call is not None else _nothing

    def _bind(self, inputs, tensors, outputs):
        plan = self.plan
        domain = self._domain(tensors)
        A = math.prod(domain[:plan.first])     # Python ints: np.prod costs ~5 us a call
        K = math.prod(domain[plan.first:plan.last + 1])
        B = math.prod(domain[plan.last + 1:])
        if A * B == 0:
            return None
        per_a = -(-B // COLS)
        blocks = A * per_a
        words = [A, K, B, per_a]
        for p, x in zip(self._tensors, tensors):
            form = column_param(x.shape, domain, plan.first, plan.last, p.out_layout)
            words += [x.ctypes.data, *form[1:]]
        for o in outputs:
            if not (o.flags.c_contiguous and o.flags.writeable):
                raise ValueError("column kernel outputs must be writeable and C-contiguous")
            words.append(o.ctypes.data)
        args = np.array(words + [0] * len(self._scalars), np.int64)
        if self._scalars:
            as_double = args.view(np.float64)
            for i, p in enumerate(self._scalars):
                with np.errstate(all="ignore"):
                    as_double[len(words) + i] = float(np.asarray(inputs[p.index]).astype(p.value.dtype.np)
                                                      .astype(np.float64))
        address, cfunc = args.ctypes.data, self._cfunc
        nbytes = sum(x.nbytes for x in tensors)
        threads = 1
        if blocks > 1 and nbytes >= PARALLEL_MIN_BYTES:
            threads = min(host_threads(), pool().workers + 1, blocks)
        if threads == 1:
            def call():
                cfunc(0, blocks, address, 0)
            call.native = (cfunc, 0, blocks, address, 0)
        else:
            scratch = [0] * threads

            def call():
                run_blocks(cfunc, blocks, address, scratch)
        # the argument block lives as long as the call; the arrays it addresses are the
        # caller's to keep (a reference here would count against the output pool's rule)
        call.args = args
        return call

    def _domain(self, tensors) -> tuple:
        """The domain with its symbolic sizes taken from the arguments."""
        plan = self.plan
        if all(isinstance(d, int) for d in plan.domain):
            return plan.domain
        sizes = {}
        for p, x in zip(self._tensors, tensors):
            for dim, got in zip(p.value.shape, x.shape):
                if isinstance(dim, str):
                    sizes[dim] = got
        return tuple(sizes[d] if isinstance(d, str) else d for d in plan.domain)

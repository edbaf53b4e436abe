"""Lowering of a row kernel (row_plan.RowPlan) to LLVM IR text, and running it.

One exported function, the same calling convention as the vector kernels (launch.py):

    void @<kernel>(i64 block_begin, i64 block_end, ptr noalias args, ptr noalias scratch)

Block b runs rows [b*rows_per_block, min(R, (b+1)*rows_per_block)); blocks are handed to
the host threads like any kernel's.  Per row, each phase of the plan runs its per-row
ops once and then walks the row in vectors of LANES float32 registers:

    main loop   UNROLL vectors per iteration, one accumulator per vector and reduction
                (so the adds/maxes of a reduction are independent and pipeline)
    rest loop   one vector per iteration into the first accumulator
    tail        one masked vector (possibly empty): loads fill absent lanes with zero,
                stores skip them, and reductions see their identity there
                (0 for sum/mean, -inf for max, +inf for min; a zero pad would corrupt max)

then folds its accumulators (UNROLL vectors, then the lanes by halves) into one float32
per reduction.  Reductions accumulate in float32 for every float dtype (float16/bfloat16
operands are exact in float32), mean divides by the row length, and the result is rounded
once to the reduction's dtype, as the numpy reference does.  max/min propagate NaN.
Integer reductions accumulate in int32 (sums wrap like numpy's int64 sum cast to int32).

args (int64 words): R, C, rows_per_block, stream, the outer dims, then per tensor parameter its
address and one element stride per outer dim (0 where it broadcasts), the output
addresses, and the runtime scalars as float64 bit patterns.
"""
from __future__ import annotations

from operator import is_

import numpy as np
from llvmlite import ir

from .. import dtypes as dt
from ..lower.vector import compute_dtype
from . import jit
from .launch import KERNEL_PROTO, host_threads, pool, run_blocks
from .irgen import branch_values, carried_loop, counted_loop, kernel_function, masked_load, masked_store
from .host import host_features
from .llvm import constant_slots
from .mathlib import VectorConsts
from ..lower.row_plan import RowPlan, plan_row_kernel, scratch_itemsize
from .stmts import LANES, F32, I32, LoweringError, StmtEmitter, mem_type, reg_type, round_scalar_to, vec

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I64 = ir.IntType(64)
F64 = ir.DoubleType()
PTR = ir.PointerType()
VOID = ir.VoidType()

UNROLL = 4            # accumulators per reduction in the main loop
CHUNK = 1024          # elements a float sum adds into fresh accumulators before its compensated total
SCRATCH_ALIGN = 64
SYMBOL = "fusedsl_row_kernel"
ROW_BLOCK_ELEMS = 8192     # elements per block (whole rows): enough work per grab of a thread
PARALLEL_MIN_BYTES = 16 << 20   # as the vector kernels: below this a launch stays on one thread
STREAM_MIN_BYTES = 32 << 20     # as the vector kernels: larger outputs skip the cache
TRANSCENDENTAL_WEIGHT = 16      # as the vector kernels: an exp/ln costs about 16 bytes of traffic
                                # (softmax [1024,1024] f32: 1.05 ms on one thread, 0.65 ms on two)

_IDENTITY = {"sum": 0.0, "mean": 0.0, "max": float("-inf"), "min": float("inf")}

__all__ = ["RowCpuKernel", "lower_row", "LoweringError"]


class _Layout:
    def __init__(self, plan: RowPlan):
        self.n_outer = len(plan.row_shape) - 1
        self.tensors = [p for p in plan.params if p.kind == "tensor"]
        self.scalars = [p for p in plan.params if p.kind == "scalar"]
        self.n_outputs = len(plan.fn.results)

    def dim(self, j):
        return 4 + j

    def tensor_ptr(self, k):
        return 4 + self.n_outer + k * (1 + self.n_outer)

    def tensor_stride(self, k, j):
        return self.tensor_ptr(k) + 1 + j

    def output_ptr(self, k):
        return 4 + self.n_outer + len(self.tensors) * (1 + self.n_outer) + k

    def scalar(self, k):
        return self.output_ptr(self.n_outputs) + k

    @property
    def size(self):
        return self.scalar(len(self.scalars))


class _RowBuilder:
    def __init__(self, plan: RowPlan, name: str, features):
        self.plan = plan
        self.name = name
        self.module = ir.Module(name=name)
        self.k = VectorConsts(self.module, LANES, scalef="avx512f" in features)
        self.lay = _Layout(plan)
        self.nt_md = self.module.add_metadata([ir.Constant(I32, 1)])

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

    def _scalar_mem(self, b, v, d):
        if d == dt.float16:
            return b.fptrunc(v, ir.HalfType())
        if d == dt.bfloat16:
            return b.trunc(b.lshr(b.bitcast(v, I32), ir.Constant(I32, 16)), ir.IntType(16))
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

    def _fold(self, b, name, v):
        """All lanes of v combined into one float."""
        n = LANES
        while n > 1:
            half = n // 2
            lo = b.shuffle_vector(v, v, ir.Constant(vec(I32, half), [ir.Constant(I32, i) for i in range(half)]))
            hi = b.shuffle_vector(v, v, ir.Constant(vec(I32, half), [ir.Constant(I32, half + i) for i in range(half)]))
            v = self._combine(b, name, lo, hi)
            n = half
        return b.extract_element(v, ir.Constant(I32, 0))

    # ---- the kernel ---------------------------------------------------------------------------
    def build(self) -> str:
        plan, lay = self.plan, self.lay
        fn, b = kernel_function(self.module, self.name)
        b0, b1, args, scratch = fn.args
        self.fn, self.b = fn, b

        def arg(i, t=I64):
            return b.load(b.gep(args, [ir.Constant(I64, i)], source_etype=I64), typ=t, align=8)

        R, C, rpb = arg(0), arg(1), arg(2)
        self.C = C
        self.stream = b.icmp_signed("!=", arg(3), ir.Constant(I64, 0))
        dims = [arg(lay.dim(j)) for j in range(lay.n_outer)]
        tptr = [arg(lay.tensor_ptr(k), PTR) for k in range(len(lay.tensors))]
        tstride = [[arg(lay.tensor_stride(k, j)) for j in range(lay.n_outer)] for k in range(len(lay.tensors))]
        outs = [arg(lay.output_ptr(k), PTR) for k in range(lay.n_outputs)]
        scalars = {}
        for k, p in enumerate(lay.scalars):
            raw = b.bitcast(arg(lay.scalar(k)), F64)
            d = p.value.dtype
            scalars[id(p.value)] = b.fptrunc(raw, F32) if d.is_float else b.trunc(b.fptosi(raw, I64), reg_type(d))
        # scratch: one row per kept value, cache-line aligned
        self.scratch_ptr, offset = {}, ir.Constant(I64, 0)
        for v in plan.scratch:
            self.scratch_ptr[id(v)] = b.gep(scratch, [offset], source_etype=I8)
            nbytes = b.mul(C, ir.Constant(I64, scratch_itemsize(v)))
            offset = b.and_(b.add(b.add(offset, nbytes), ir.Constant(I64, SCRATCH_ALIGN - 1)),
                            ir.Constant(I64, ~(SCRATCH_ALIGN - 1)))
        cf = b.uitofp(C, F32)

        def row(r):
            # this row's index over the outer dims (row-major), for broadcasting parameters
            idx, g = [], r
            for j in range(lay.n_outer - 1, -1, -1):
                if j == 0:
                    idx.append(g)
                else:
                    idx.append(b.urem(g, dims[j]))
                    g = b.udiv(g, dims[j])
            idx = idx[::-1]
            env = {"rowptr": {}, "scalar": dict(scalars)}
            for k, p in enumerate(lay.tensors):
                off = ir.Constant(I64, 0)
                for j in range(lay.n_outer):
                    off = b.add(off, b.mul(idx[j], tstride[k][j]))
                d = p.value.dtype
                base = b.gep(tptr[k], [off], source_etype=mem_type(d))
                if plan.param_last[id(p.value)]:
                    env["rowptr"][id(p.value)] = base
                else:
                    env["scalar"][id(p.value)] = self._scalar_reg(b, b.load(base, typ=mem_type(d), align=d.itemsize), d)
            env["out_row"] = [b.gep(o, [b.mul(r, C)], source_etype=mem_type(v.dtype))
                              for o, v in zip(outs, plan.fn.results)]
            env["out_scalar"] = [b.gep(o, [r], source_etype=mem_type(v.dtype))
                                 for o, v in zip(outs, plan.fn.results)]
            for phase in plan.phases:
                self._phase(phase, env, cf)

        def block(blk):
            r0 = b.mul(blk, rpb)
            r1 = b.add(r0, rpb)
            r1 = b.select(b.icmp_signed("<", r1, R), r1, R)
            self._for(b, fn, r0, r1, row, "row")

        self._for(b, fn, b0, b1, block, "block")
        b.ret_void()
        return str(self.module)

    def _phase(self, phase, env, cf):
        b, plan = self.b, self.plan
        scal = env["scalar"]

        def scalar_operand(v):
            return ("scalar", scal[id(v)])

        for step in phase.scalar_ops:
            vecv = self._run_step(b, step, scalar_operand)
            scal[id(step.op.result)] = b.extract_element(vecv, ir.Constant(I32, 0))
        for i in phase.scalar_outputs:
            v = plan.fn.results[i]
            b.store(self._scalar_mem(b, scal[id(v)], v.dtype), env["out_scalar"][i], align=v.dtype.itemsize)
        if not (phase.row_ops or phase.reductions or phase.row_outputs or phase.keep):
            return

        def vector(offset, mask, nt):
            """Every row op of the phase on the vector at `offset`; returns the reductions'
            operands.  `nt`: outputs are written with aligned non-temporal stores."""
            vals = {}

            def operand(v):
                key = id(v)
                if key in vals:
                    return ("vec", vals[key])
                ptr = env["rowptr"].get(key)
                if ptr is None and plan.kinds[key] == "row":
                    ptr = self.scratch_ptr.get(key)
                if ptr is not None:
                    em = StmtEmitter(self.k, b, {})
                    vals[key] = em.to_reg(self._load(b, ptr, offset, v.dtype, mask), v.dtype)
                    return ("vec", vals[key])
                if key in scal:
                    return ("scalar", scal[key])
                raise LoweringError(f"value {v.name or key} is not available in this phase")

            for step in phase.row_ops:
                vals[id(step.op.result)] = self._run_step(b, step, operand)
            em = StmtEmitter(self.k, b, {})
            for v in phase.keep:
                self._store(b, em.to_mem(vals[id(v)], v.dtype), self.scratch_ptr[id(v)], offset, v.dtype, mask)
            for i in phase.row_outputs:
                v = plan.fn.results[i]
                self._store(b, em.to_mem(operand(v)[1], v.dtype), env["out_row"][i], offset, v.dtype, mask, nt)
            return [_accumulator_form(b, operand(op.operands[0])[1], op.operands[0].dtype)
                    for op in phase.reductions]

        reds = phase.reductions
        if phase.row_outputs:
            # large outputs: a masked head up to the output's line, then streaming stores
            totals = branch_values(b, self.stream, lambda: self._walk(phase, vector, True, env),
                                   lambda: self._walk(phase, vector, False, env))
        else:
            totals = self._walk(phase, vector, False, env)
        for op, total in zip(reds, totals):
            d = op.result.dtype
            if not d.is_float:   # integer sums are int32; max/min narrow back to their dtype
                scal[id(op.result)] = total if d == dt.int32 else b.trunc(total, reg_type(d))
                continue
            if op.name == "mean":
                total = b.fdiv(total, cf)
            d = op.result.dtype
            if d != dt.float32:
                em = StmtEmitter(self.k, b, {})
                total = b.extract_element(em.round_to(em.splat_value(total), d), ir.Constant(I32, 0))
            scal[id(op.result)] = total

    def _masked(self, b, vector, offset, count, nt, accs, unroll):
        """One vector of `count` (0..LANES) lanes at `offset`, folded into the first accumulators."""
        iota = ir.Constant(vec(I64, LANES), [ir.Constant(I64, j) for j in range(LANES)])
        mask = b.icmp_signed("<", iota, StmtEmitter(self.k, b, {}).splat_value(count))
        xs = vector(offset, mask, nt)
        for k, (name, ident) in enumerate(self._red_info):
            accs[k * unroll] = self._combine(b, name, accs[k * unroll], b.select(mask, xs[k], ident))

    def _walk(self, phase, vector, nt, env):
        """The row walk of a phase (module doc); returns each reduction's float32 total."""
        b, fn, C = self.b, self.fn, self.C
        reds = phase.reductions
        self._red_info = [_reduction_info(self.k, op) for op in reds]
        # several accumulators hide the add/max latency of a light walk; a heavy one (exp,
        # many ops) is bound by its arithmetic and would only spill registers
        heavy = len(phase.row_ops) > 3 or any(st.op in ("exp", "ln") for step in phase.row_ops
                                               for st in step.sched.stmts)
        unroll = UNROLL if reds and not heavy else 1
        accs = [ident for _, ident in self._red_info for _ in range(unroll)]
        start = ir.Constant(I64, 0)
        if nt:
            d = plan_dtype = self.plan.fn.results[phase.row_outputs[0]].dtype
            addr = b.ptrtoint(env["out_row"][phase.row_outputs[0]], I64)
            mis = b.and_(b.sub(ir.Constant(I64, 0), addr), ir.Constant(I64, LANES * d.itemsize - 1))
            head = b.udiv(mis, ir.Constant(I64, plan_dtype.itemsize))
            head = b.select(b.icmp_signed("<", head, C), head, C)
            self._masked(b, vector, start, head, False, accs, unroll)
            start = head

        def main_body(i, carried):
            carried = list(carried)
            for u in range(unroll):
                xs = vector(b.add(i, ir.Constant(I64, u * LANES)), None, nt)
                for k, (name, _) in enumerate(self._red_info):
                    carried[k * unroll + u] = self._combine(b, name, carried[k * unroll + u], xs[k])
            return carried

        # float sums walk the row in chunks: each chunk sums into fresh accumulators, and the
        # chunk sums are added with Kahan's compensation, so the error grows with the chunk
        # (CHUNK / (LANES * unroll) adds per lane), not with the row: 2^25 float32 0.1s summed
        # straight into 64 lanes were 0.4 % off, numpy's pairwise sum is within 1e-7
        n = len(reds)
        chunked = any(name in ("sum", "mean") for name, _ in self._red_info)
        if chunked:
            step = unroll * LANES
            chunk = max(step, CHUNK // step * step)
            idents = [ident for _, ident in self._red_info]

            def chunk_body(c, carried):
                tot, comp = list(carried[:n]), list(carried[n:])
                fresh = [ident for ident in idents for _ in range(unroll)]
                _, part = self._stride_loop(b, fn, c, b.add(c, ir.Constant(I64, chunk)), step, fresh,
                                            main_body, "chunk")
                for k, (name, _) in enumerate(self._red_info):
                    acc = part[k * unroll]
                    for u in range(1, unroll):
                        acc = self._combine(b, name, acc, part[k * unroll + u])
                    tot[k], comp[k] = self._total(b, name, tot[k], comp[k], acc)
                return tot + comp
            zeros = [self.k.fc(0.0) if name in ("sum", "mean") else ident for name, ident in self._red_info]
            start, carried = self._stride_loop(b, fn, start, C, chunk, idents + zeros, chunk_body, "chunks")
            tot, comp = list(carried[:n]), list(carried[n:])
        i, accs = self._stride_loop(b, fn, start, C, unroll * LANES, accs, main_body, "walk")
        accs = list(accs)
        if unroll > 1:
            firsts = [accs[k * unroll] for k in range(len(reds))]

            def rest_body(i, carried):
                xs = vector(i, None, nt)
                return [self._combine(b, name, a, x) for (name, _), a, x in zip(self._red_info, carried, xs)]
            i, firsts = self._stride_loop(b, fn, i, C, LANES, firsts, rest_body, "rest")
            for k in range(len(reds)):
                accs[k * unroll] = firsts[k]
        # the tail: one masked vector of C - i lanes (none when the row ended on a vector)
        self._masked(b, vector, i, b.sub(C, i), False, accs, unroll)
        totals = []
        for k, (name, _) in enumerate(self._red_info):
            acc = accs[k * unroll]
            for u in range(1, unroll):
                acc = self._combine(b, name, acc, accs[k * unroll + u])
            if chunked:
                acc, _ = self._total(b, name, tot[k], comp[k], acc)
            totals.append(self._fold(b, name, acc))
        return totals

    def _total(self, b, name, tot, comp, x):
        """(tot, comp) after adding x: Kahan's compensated sum for float sums (comp holds the
        low-order bits the last add lost, negated), a plain combine for the other reductions."""
        if name not in ("sum", "mean"):
            return self._combine(b, name, tot, x), comp
        y = b.fsub(x, comp)
        t = b.fadd(tot, y)
        return t, b.fsub(b.fsub(t, tot), y)


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


def lower_row(plan: RowPlan, name: str = SYMBOL, features=None) -> str:
    if features is None:
        features = host_features()
    return _RowBuilder(plan, name, frozenset(features)).build()


def _nothing() -> None:
    """The bound call of a kernel with nothing to compute (no rows)."""


class RowCpuKernel:
    """A row kernel compiled for this host; `run(inputs, outputs)` with concrete arrays."""

    def __init__(self, fn, target, *, use_disk_cache: bool = True, remember_last: bool = True):
        self.plan = plan_row_kernel(fn, target)
        self._remember = remember_last   # off when callers pass fresh views every call
        self.layout = _Layout(self.plan)
        self.ir = lower_row(self.plan, SYMBOL)
        self._compiled = jit.compile_ir(self.ir, SYMBOL, use_disk=use_disk_cache)
        self._cfunc = KERNEL_PROTO(self._compiled.address)
        # work per row element, as the vector kernels weigh it: bytes moved, exp/ln weighted up
        transcendental = sum(1 for phase in self.plan.phases for step in phase.row_ops
                             for st in step.sched.stmts if st.op in ("exp", "ln"))
        self._bytes_per_row_elem = sum(p.value.dtype.itemsize for p in self.layout.tensors) + \
            sum(v.dtype.itemsize for v in fn.results) + TRANSCENDENTAL_WEIGHT * transcendental
        self._shape_plans: dict[tuple, _ShapePlan] = {}
        self._last = None
        self._tensor_pos = [(plan_pos, p.value.dtype.np) for plan_pos, p in enumerate(self.plan.params)
                            if p.kind == "tensor"]
        self._scalar_pos = [(plan_pos, p.value.dtype.np) for plan_pos, p in enumerate(self.plan.params)
                            if p.kind == "scalar"]

    def run(self, inputs, outputs) -> None:
        """inputs in parameter order (runtime scalars as numbers), outputs preallocated."""
        lay = self.layout
        tensors = self._tensors(inputs)
        last = self._last
        if last is not None and not lay.scalars and len(outputs) == len(last[1]) and \
                all(map(is_, tensors, last[0])) and all(map(is_, outputs, last[1])):
            last[2]()      # the same arrays as the last call: its argument block is still right
            return
        call = self._bind(inputs, tensors, outputs)
        if call is None:
            return
        if self._remember:   # with the arrays it addresses (kept alive, compared by identity)
            self._last = (tuple(tensors), tuple(outputs), call)
        call()

    def bind(self, inputs, outputs):
        """A callable running the kernel on exactly these arrays (a program's bound step: the
        arrays stay the same, their contents change).  Runtime scalars are read now."""
        tensors = self._tensors(inputs)
        if any(x is not inputs[pos] for x, (pos, _) in zip(tensors, self._tensor_pos)):
            return lambda: self.run(inputs, outputs)   # converted copies: convert on every call
        call = self._bind(inputs, tensors, outputs)
        return call if call is not None else _nothing

    def _tensors(self, inputs) -> list:
        tensors = []
        for pos, dtype in self._tensor_pos:
            x = inputs[pos]
            if not (type(x) is np.ndarray and x.dtype == dtype and x.flags.c_contiguous):
                x = np.ascontiguousarray(x, dtype=dtype)
            tensors.append(x)
        return tensors

    def _bind(self, inputs, tensors, outputs):
        """The call on these arrays with its argument block filled, or None (no rows)."""
        lay = self.layout
        key = tuple(x.shape for x in tensors)
        sp = self._shape_plans.get(key)
        if sp is None:
            if len(self._shape_plans) >= 64:    # many symbolic sizes: forget the old ones
                self._shape_plans.clear()
            sp = self._shape_plans[key] = self._shape_plan(inputs, tensors)
        if sp.blocks == 0:
            return None
        args = sp.template.copy()
        for k, x in enumerate(tensors):
            args[lay.tensor_ptr(k)] = x.ctypes.data
        for k, o in enumerate(outputs):
            if not (o.flags.c_contiguous and o.flags.writeable):
                raise ValueError("row kernel outputs must be writeable and C-contiguous")
            args[lay.output_ptr(k)] = o.ctypes.data
        if lay.scalars:
            as_double = args.view(np.float64)
            for k, (pos, dtype) in enumerate(self._scalar_pos):
                with np.errstate(all="ignore"):
                    as_double[lay.scalar(k)] = float(np.asarray(inputs[pos]).astype(dtype).astype(np.float64))
        if sp.may_stream:
            args[3] = int(self._stream(outputs, sp.C))
        cfunc, blocks, address, scratch = self._cfunc, sp.blocks, args.ctypes.data, sp.scratch
        if len(scratch) == 1:
            def call():
                cfunc(0, blocks, address, scratch[0])
            call.native = (cfunc, 0, blocks, address, scratch[0])
        else:
            def call():
                run_blocks(cfunc, blocks, address, scratch)
        # the argument block lives as long as the call; the arrays it addresses are the
        # caller's to keep (a reference here would count against the output pool's rule)
        call.args = args
        return call

    def bound_outputs(self) -> tuple:
        """The output arrays the remembered call keeps alive (the output pool discounts them)."""
        return () if self._last is None else self._last[1]

    def _shape_plan(self, inputs, tensors) -> "_ShapePlan":
        """Everything that depends on the argument shapes only: computed once per shape."""
        plan, lay = self.plan, self.layout
        shape = _concrete_row_shape(plan, inputs)
        C = shape[-1]
        R = int(np.prod(shape[:-1], dtype=np.int64)) if len(shape) > 1 else 1
        rpb = max(1, ROW_BLOCK_ELEMS // max(C, 1))
        blocks = -(-R // rpb) if R else 0
        template = np.zeros(lay.size, np.int64)
        template[0], template[1], template[2] = R, C, rpb
        for j in range(lay.n_outer):
            template[lay.dim(j)] = shape[j]
        for k, arr in enumerate(tensors):
            padded = (1,) * (len(shape) - arr.ndim) + arr.shape
            stride, strides = 1, [0] * len(shape)
            for j in range(len(shape) - 1, -1, -1):
                strides[j] = stride if padded[j] != 1 else 0
                stride *= padded[j]
            for j in range(lay.n_outer):
                template[lay.tensor_stride(k, j)] = strides[j]
        scratch_bytes = sum(-(-C * scratch_itemsize(v) // SCRATCH_ALIGN) * SCRATCH_ALIGN for v in plan.scratch)
        threads = 1
        if blocks > 1 and R * C * self._bytes_per_row_elem >= PARALLEL_MIN_BYTES:
            threads = min(host_threads(), pool().workers + 1, blocks)
        # scratch rows are owned by the plan: its addresses stay valid while it is cached
        bufs = [np.empty(scratch_bytes + SCRATCH_ALIGN, np.uint8) for _ in range(threads)]
        scratch = [_round_up(buf.ctypes.data, SCRATCH_ALIGN) for buf in bufs]
        out_bytes = R * C * sum(v.dtype.itemsize for v in plan.fn.results)
        return _ShapePlan(template, blocks, C, scratch, out_bytes >= STREAM_MIN_BYTES, bufs)

    def _stream(self, outputs, C) -> bool:
        """Non-temporal stores: for outputs too large to stay in cache whose rows all start
        at the same offset in a cache line (the walk peels up to the line)."""
        rows = [o for o, v in zip(outputs, self.plan.fn.results) if self.plan.kinds.get(id(v)) == "row"]
        if not rows or sum(o.nbytes for o in rows) < STREAM_MIN_BYTES:
            return False
        size = rows[0].itemsize
        line = LANES * size
        return (C * size) % line == 0 and all(o.itemsize == size and (o.ctypes.data - rows[0].ctypes.data) % line == 0
                                               and o.ctypes.data % size == 0 for o in rows)


class _ShapePlan:
    __slots__ = ("template", "blocks", "C", "scratch", "may_stream", "buffers")

    def __init__(self, template, blocks, C, scratch, may_stream, buffers):
        self.template = template      # the args block without addresses and scalars
        self.blocks = blocks
        self.C = C
        self.scratch = scratch        # one aligned scratch address per thread
        self.may_stream = may_stream  # outputs large enough for non-temporal stores
        self.buffers = buffers        # the arrays behind `scratch`


def _concrete_row_shape(plan: RowPlan, inputs) -> tuple:
    """The row shape with its symbolic dims taken from the arguments."""
    sizes = {}
    for p, x in zip(plan.params, inputs):
        if p.kind != "tensor":
            continue
        for dim, got in zip(p.value.shape, np.shape(x)):
            if isinstance(dim, str):
                sizes[dim] = got
    return tuple(sizes[d] if isinstance(d, str) else d for d in plan.row_shape)


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m

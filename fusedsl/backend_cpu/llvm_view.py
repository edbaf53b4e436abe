"""View kernels on the LLVM backend: slice / concatenate / take read as addressing.

A view kernel (fusedsl/views.py) has a static box table: in each box, row r of every load
starts at a fixed address (a gather's at the row its index names) and the output row at
another.  The host turns the table into a *row table* for the call: one entry per output
row of each box,

    [n, load_0 address, ..., load_k address, output_0 address, ...]

(absolute byte addresses; a load with one value per row points at that value), after a
header holding the kernel's scalars in their compute dtype.  The compiled kernel

    void @<kernel>(i64 entry_begin, i64 entry_end, ptr table, ptr scratch)

calls the same vectorised segment function as every vector kernel (llvm.py) once per
entry, so only the elements the kernel needs are loaded: the strided loads of a slice, the
pieces of a concatenation, the gathered table rows.  Entries are independent, so they are
split over the host threads like blocks.  The relative part of the table (which parameter,
which element offset) is computed once per kernel; a call adds the array addresses, and a
gather looks its indices up (every index is checked first: out of range is an
ArgumentError naming the take's line, nothing is read).
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from ..schedule import VectorSchedule, compute_dtype
from ..views import gather_indices
from . import jit
from .launch import KERNEL_PROTO, host_threads, pool, run_blocks
from .llvm import F64, I1, I64, PTR, VOID, _KernelBuilder, _Segment, constant_slots, split_stmts
from .stmts import F32, LoweringError, mem_type, reg_type

SYMBOL = "fusedsl_view_kernel"
PARALLEL_MIN_BYTES = 16 << 20


def _body_sources(sched: VectorSchedule) -> dict:
    plan = sched.views
    loads = [inp for inp in sched.inputs if inp.kind in ("view", "gather")]
    kinds = {}
    for j, inp in enumerate(loads):
        css = {bx.srcs[j].cs for bx in plan.boxes}
        if len(css) > 1:
            raise LoweringError(f"load {j} is contiguous in some boxes and broadcast in others")
        kinds[inp.slot] = "stream" if css != {0} else "broadcast"
    kinds.update({slot: ("const", v) for slot, v in constant_slots(sched).items()})
    return kinds


class ViewCpuKernel:
    """One compiled view kernel; `run(inputs, outputs)` builds the row table and calls it."""

    def __init__(self, sched: VectorSchedule):
        hoisted, body = split_stmts(sched)
        if hoisted:
            raise LoweringError("view kernels have no hoisted part")
        self.sched = sched
        self.plan = sched.views
        self.loads = [inp for inp in sched.inputs if inp.kind in ("view", "gather")]
        self.vars = [inp for inp in sched.inputs if inp.var]
        from .llvm import host_features
        kb = _KernelBuilder(sched, SYMBOL, frozenset(host_features()))
        seg = _Segment("body", body, sched, [o.slot for o in sched.outputs], _body_sources(sched))
        self.seg = seg
        order = {inp.slot: j for j, inp in enumerate(self.loads)}
        self.param_loads = [order[src.slot] for src in seg.params]   # segment parameter -> load
        body_fn = kb.segment_function(seg)
        self._kernel(kb, body_fn)
        self.ir = str(kb.module)
        self._compiled = jit.compile_ir(self.ir, SYMBOL)
        self._cfunc = KERNEL_PROTO(self._compiled.address)
        self._relative = self._relative_table()

    # -- the exported kernel -------------------------------------------------------------------
    def _kernel(self, kb: _KernelBuilder, body_fn) -> None:
        seg = self.seg
        fn = ir.Function(kb.module, ir.FunctionType(VOID, [I64, I64, PTR, PTR]), SYMBOL)
        fn.attributes.add("nounwind")
        e0, e1, table, _ = fn.args
        table.add_attribute("noalias")
        b = ir.IRBuilder(fn.append_basic_block("entry"))

        def word(i, t=I64):
            return b.load(b.gep(table, [i], source_etype=I64), typ=t, align=8)

        var_values = {}
        for h, inp in enumerate(self.vars):
            cd = compute_dtype(inp.gm_dtype)
            raw = word(ir.Constant(I64, h))
            var_values[inp.var] = (b.fptrunc(b.bitcast(raw, F64), F32) if cd.is_float
                                   else b.trunc(raw, reg_type(cd)))
        width = ir.Constant(I64, 1 + len(self.loads) + len(self.sched.outputs))
        head = ir.Constant(I64, len(self.vars))
        n_loads = len(self.loads)

        def entry(e):
            base = b.add(head, b.mul(e, width))
            n = word(base)
            srcs = []
            for src, j in zip(seg.params, self.param_loads):
                ptr = word(b.add(base, ir.Constant(I64, 1 + j)), PTR)
                if src.kind == "broadcast":
                    d = self.loads[j].gm_dtype
                    srcs.append(kb._scalar_reg(b, b.load(ptr, typ=mem_type(d), align=d.itemsize), d))
                else:
                    srcs.append(ptr)
            sinks = [word(b.add(base, ir.Constant(I64, 1 + n_loads + k)), PTR) for k in range(len(seg.sinks))]
            b.call(body_fn, [n, ir.Constant(I1, 0)] + srcs + [var_values[v] for v in seg.vars] + sinks)

        kb._for(b, fn, e0, e1, entry, "entry")
        b.ret_void()

    # -- the row table ---------------------------------------------------------------------------
    def _relative_table(self):
        """Per load and output: (box row -> parameter selector, element offset, gather info)."""
        plan = self.plan
        rows = [np.arange(bx.rows, dtype=np.int64) for bx in plan.boxes]
        n = np.concatenate([np.full(bx.rows, bx.cols, np.int64) for bx in plan.boxes])
        loads = []
        for j in range(len(self.loads)):
            sel = np.concatenate([np.full(bx.rows, bx.srcs[j].sel, np.int64) for bx in plan.boxes])
            off = np.concatenate([bx.srcs[j].off + r * bx.srcs[j].rs for bx, r in zip(plan.boxes, rows)])
            ioff = np.concatenate([bx.srcs[j].ioff + r * bx.srcs[j].irs for bx, r in zip(plan.boxes, rows)])
            loads.append((sel, off, ioff))
        out = np.concatenate([bx.out_off + r * bx.out_rs for bx, r in zip(plan.boxes, rows)])
        return n, loads, out

    def bound_outputs(self) -> tuple:
        return ()   # nothing is remembered between calls

    def run(self, inputs, outputs, tiling=None) -> None:
        """Inputs in kernel-parameter order, outputs preallocated C-contiguous (the tiling is
        the Ascend C one; the CPU walks the plan's boxes directly)."""
        n, loads, out = self._relative
        entries = len(n)
        if entries == 0:
            return
        keep = []
        cols = [n]
        for j, (sel, off, ioff) in enumerate(loads):
            load = self.plan.loads[j]
            d = self.loads[j].gm_dtype
            arrays = [np.ascontiguousarray(inputs[p]) for p in load.sources]
            keep += arrays
            bases = np.array([a.ctypes.data for a in arrays], np.int64)
            if load.gather is not None:
                idx_param, _, D = load.gather
                rows = gather_indices(load, inputs[idx_param])[ioff]
                cols.append(bases[sel] + (rows * D + off) * d.itemsize)
            else:
                cols.append(bases[sel] + off * d.itemsize)
        for k, o in enumerate(self.sched.outputs):
            cols.append(outputs[k].ctypes.data + out * o.gm_dtype.itemsize)
        table = np.empty(len(self.vars) + entries * len(cols), np.int64)
        table[len(self.vars):] = np.stack(cols, axis=1).reshape(-1)
        as_double = table.view(np.float64)
        for h, inp in enumerate(self.vars):
            cd = compute_dtype(inp.gm_dtype)
            with np.errstate(all="ignore"):
                value = np.asarray(inputs[inp.index]).reshape(-1)[:1].astype(inp.gm_dtype.np).astype(cd.np)[0]
            if cd.is_float:
                as_double[h] = float(value)
            else:
                table[h] = int(value)
        moved = int(n.sum()) * (sum(i.gm_dtype.itemsize for i in self.loads)
                                + sum(o.gm_dtype.itemsize for o in self.sched.outputs))
        threads = 1 if moved < PARALLEL_MIN_BYTES else min(host_threads(), pool().workers + 1)
        if threads == 1:
            self._cfunc(0, entries, table.ctypes.data, 0)
        else:
            run_blocks(self._cfunc, entries, table.ctypes.data, [0] * threads)
        del keep

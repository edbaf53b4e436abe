"""View kernels on the LLVM backend: slice / concatenate / take read as addressing.

A view kernel (fusedsl/views.py) has a static box table: in each box, row r of every load
starts at a fixed element offset of one of its sources (a gather's at the row its index
names) and the output row at another.  The kernel turns it once into a *row table*, one
entry per output row of each box,

    [n, (source, element offset) per load, element offset per output]

(a load with one value per row points at that value); a call only fills a small header
(the kernel's scalars in their compute dtype, then the base address of every source and
output) and, for a gather, the looked-up row offsets.  The compiled kernel

    void @<kernel>(i64 entry_begin, i64 entry_end, ptr table, ptr header)

calls the same vectorised segment function as every vector kernel (llvm.py) once per
entry, so only the elements the kernel needs are loaded: the strided loads of a slice, the
pieces of a concatenation, the gathered table rows.  Entries are independent, so they are
split over the host threads like blocks (the header is per call, so calls from several
threads do not share mutable state).  A gather's indices are checked first: out of range is
an ArgumentError naming the take's line, and nothing is read.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from ..lower.vector import VectorSchedule, compute_dtype
from ..views import gather_indices
from . import jit
from .launch import KERNEL_PROTO, host_threads, pool, run_blocks
from .llvm import F64, I1, I64, PTR, VOID, _KernelBuilder, _Segment, constant_slots, split_stmts
from .stmts import F32, LoweringError, mem_type, reg_type

SYMBOL = "fusedsl_view_kernel"
PARALLEL_MIN_BYTES = 16 << 20
GATHER_KEEP_BYTES = 1 << 16   # a bound call compares index arrays up to this size with the last lookup's


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


def _nothing() -> None:
    """The bound call of a kernel with nothing to compute."""


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
        # header words: scalars, then each load's source base addresses, then the outputs'
        self.load_base, at = [], len(self.vars)
        for load in self.plan.loads:
            self.load_base.append(at)
            at += len(load.sources)
        self.out_base = at
        self.header_words = max(1, at + len(sched.outputs))
        self.param_loads = [order[src.slot] for src in seg.params]   # segment parameter -> load
        body_fn = kb.segment_function(seg)
        self._kernel(kb, body_fn)
        self.ir = str(kb.module)
        self._compiled = jit.compile_ir(self.ir, SYMBOL)
        self._cfunc = KERNEL_PROTO(self._compiled.address)
        self._table = self._static_table()

    # -- the exported kernel -------------------------------------------------------------------
    def _kernel(self, kb: _KernelBuilder, body_fn) -> None:
        seg = self.seg
        fn = ir.Function(kb.module, ir.FunctionType(VOID, [I64, I64, PTR, PTR]), SYMBOL)
        fn.attributes.add("nounwind")
        e0, e1, table, header = fn.args
        table.add_attribute("noalias")
        b = ir.IRBuilder(fn.append_basic_block("entry"))

        def word(p, i, t=I64):
            return b.load(b.gep(p, [i], source_etype=I64), typ=t, align=8)

        var_values = {}
        for h, inp in enumerate(self.vars):
            cd = compute_dtype(inp.gm_dtype)
            raw = word(header, ir.Constant(I64, h))
            var_values[inp.var] = (b.fptrunc(b.bitcast(raw, F64), F32) if cd.is_float
                                   else b.trunc(raw, reg_type(cd)))
        out_bases = [word(header, ir.Constant(I64, self.out_base + k), PTR) for k in range(len(self.sched.outputs))]
        n_loads = len(self.loads)
        width = ir.Constant(I64, 1 + 2 * n_loads + len(self.sched.outputs))

        def entry(e):
            base = b.mul(e, width)
            n = word(table, base)
            srcs = []
            for src, j in zip(seg.params, self.param_loads):
                sel = word(table, b.add(base, ir.Constant(I64, 1 + 2 * j)))
                off = word(table, b.add(base, ir.Constant(I64, 2 + 2 * j)))
                d = self.loads[j].gm_dtype
                origin = word(header, b.add(ir.Constant(I64, self.load_base[j]), sel), PTR)
                ptr = b.gep(origin, [off], source_etype=mem_type(d))
                if src.kind == "broadcast":
                    srcs.append(kb._scalar_reg(b, b.load(ptr, typ=mem_type(d), align=d.itemsize), d))
                else:
                    srcs.append(ptr)
            sinks = []
            for k, o in enumerate(self.sched.outputs):
                off = word(table, b.add(base, ir.Constant(I64, 1 + 2 * n_loads + k)))
                sinks.append(b.gep(out_bases[k], [off], source_etype=mem_type(o.gm_dtype)))
            b.call(body_fn, [n, ir.Constant(I1, 0)] + srcs + [var_values[v] for v in seg.vars] + sinks)

        kb._for(b, fn, e0, e1, entry, "entry")
        b.ret_void()

    # -- the row table ---------------------------------------------------------------------------
    def _static_table(self) -> np.ndarray:
        """[n, (source, element offset) per load, element offset per output] per entry: the
        same for every call (a gather's offsets are filled in per call)."""
        plan = self.plan
        rows = [np.arange(bx.rows, dtype=np.int64) for bx in plan.boxes]
        cols = [np.concatenate([np.full(bx.rows, bx.cols, np.int64) for bx in plan.boxes])]
        self._gather_cols = []
        for j in range(len(self.loads)):
            cols.append(np.concatenate([np.full(bx.rows, bx.srcs[j].sel, np.int64) for bx in plan.boxes]))
            if plan.loads[j].gather is not None:
                ioff = np.concatenate([bx.srcs[j].ioff + r * bx.srcs[j].irs for bx, r in zip(plan.boxes, rows)])
                coff = np.concatenate([np.full(bx.rows, bx.srcs[j].off, np.int64) for bx in plan.boxes])
                self._gather_cols.append((len(cols), j, ioff, coff))
                cols.append(np.zeros(len(ioff), np.int64))
            else:
                cols.append(np.concatenate([bx.srcs[j].off + r * bx.srcs[j].rs for bx, r in zip(plan.boxes, rows)]))
        for _ in self.sched.outputs:
            cols.append(np.concatenate([bx.out_off + r * bx.out_rs for bx, r in zip(plan.boxes, rows)]))
        self._moved = int(cols[0].sum()) * (sum(i.gm_dtype.itemsize for i in self.loads)
                                            + sum(o.gm_dtype.itemsize for o in self.sched.outputs))
        return np.ascontiguousarray(np.stack(cols, axis=1))

    def bound_outputs(self) -> tuple:
        return ()   # nothing is remembered between calls

    def bind(self, inputs, outputs):
        """A callable running the kernel on exactly these arrays (a program's bound step: the
        arrays stay the same, their contents change).  Scalars are read now.  A gather's
        row offsets are looked up (and checked) at the first call and again whenever its index array's
        bytes differ from the last lookup's (a constant index, a flip, is looked up once);
        index arrays over GATHER_KEEP_BYTES go through `run` on every call."""
        entries = len(self._table)
        if entries == 0:
            return _nothing
        header = self._header(inputs, outputs, keep := [])
        if any(a is not inputs[p] for a, p in zip(keep, (p for load in self.plan.loads for p in load.sources))):
            return lambda: self.run(inputs, outputs)   # converted copies: convert on every call
        cfunc, table = self._cfunc, self._table
        lookups = []
        if self._gather_cols:
            table = table.copy()
            for col, j, ioff, coff in self._gather_cols:
                load = self.plan.loads[j]
                idx = inputs[load.gather[0]]
                if not (type(idx) is np.ndarray and idx.flags.c_contiguous and idx.nbytes <= GATHER_KEEP_BYTES):
                    return lambda: self.run(inputs, outputs)
                # looked up at the first call, not now: computed indices (an earlier kernel's
                # output buffer) hold their values only once the program has run that kernel
                lookups.append([idx, None, col, load, ioff, coff])
        address, table_address = header.ctypes.data, table.ctypes.data
        if lookups:
            def look_up():
                for entry in lookups:
                    idx, seen, col, load, ioff, coff = entry
                    if idx.tobytes() != seen:   # new indices: checked before anything is read
                        table[:, col] = gather_indices(load, idx)[ioff] * load.gather[2] + coff
                        entry[1] = idx.tobytes()
        else:
            look_up = None
        if self._moved < PARALLEL_MIN_BYTES:
            def launch():
                cfunc(0, entries, table_address, address)
        else:
            threads = min(host_threads(), pool().workers + 1)

            def launch():
                run_blocks(cfunc, entries, table_address, [address] * threads)
        if look_up is None:
            call = launch
            if self._moved < PARALLEL_MIN_BYTES:
                call.native = (cfunc, 0, entries, table_address, address)
        else:
            def call():
                look_up()
                launch()
        call.header, call.table = header, table   # the argument blocks and the arrays they address live as long as the call
        call.arrays = (tuple(keep), tuple(outputs))
        return call

    def _header(self, inputs, outputs, keep: list) -> np.ndarray:
        """Scalars (in their compute dtype), then the sources' and outputs' base addresses."""
        header = np.empty(self.header_words, np.int64)
        for j, load in enumerate(self.plan.loads):
            for s, p in enumerate(load.sources):
                arr = np.ascontiguousarray(inputs[p])
                keep.append(arr)
                header[self.load_base[j] + s] = arr.ctypes.data
        for k in range(len(self.sched.outputs)):
            header[self.out_base + k] = outputs[k].ctypes.data
        as_double = header.view(np.float64)
        for h, inp in enumerate(self.vars):
            cd = compute_dtype(inp.gm_dtype)
            with np.errstate(all="ignore"):
                value = np.asarray(inputs[inp.index]).reshape(-1)[:1].astype(inp.gm_dtype.np).astype(cd.np)[0]
            if cd.is_float:
                as_double[h] = float(value)
            else:
                header[h] = int(value)
        return header

    def run(self, inputs, outputs, tiling=None) -> None:
        """Inputs in kernel-parameter order, outputs preallocated C-contiguous (the tiling is
        the Ascend C one; the CPU walks the plan's boxes directly)."""
        table = self._table
        entries = len(table)
        if entries == 0:
            return
        keep = []
        header = self._header(inputs, outputs, keep)
        if self._gather_cols:   # this call's gathered rows, checked before anything is read
            table = table.copy()
            for col, j, ioff, coff in self._gather_cols:
                load = self.plan.loads[j]
                idx_param, _, D = load.gather
                table[:, col] = gather_indices(load, inputs[idx_param])[ioff] * D + coff
        threads = 1 if self._moved < PARALLEL_MIN_BYTES else min(host_threads(), pool().workers + 1)
        if threads == 1:
            self._cfunc(0, entries, table.ctypes.data, header.ctypes.data)
        else:
            run_blocks(self._cfunc, entries, table.ctypes.data, [header.ctypes.data] * threads)
        del keep

"""Lowering of a VectorSchedule to LLVM IR text (llvmlite.ir).

One module per schedule, independent of sizes (every tiling value arrives at run
time), with one exported function

    void @<kernel>(i64 block_begin, i64 block_end, ptr noalias args, ptr noalias scratch)

that runs blocks [block_begin, block_end) of the tile loop exactly as the Ascend C kernel
does: per block the scalar inputs and the hoisted stmts, then tiles
[b*tiles_per_core, min(total_tiles, (b+1)*tiles_per_core)), in rows mode (whole rows) or
chunk mode (one piece of one row).  `args` is an int64 array laid out by `ArgLayout`
(tiling values, GM pointers, runtime scalars); `scratch` holds one row per hoisted
value the body reads.

What is not copied.  A UB slot is a staging buffer: copying a GM row into a slot and
reading it back is the same as reading GM, so `in`/`out` slots are not materialised;
and every stmt is elementwise over the same elements, so running all stmts on one
vector of elements before the next vector (instead of each stmt over the whole tile)
gives the same values.  Each slot is therefore an SSA value inside one fused loop,
written and read in stmt order (in-place reuse behaves exactly as in UB).  Only the
hoisted rows are real buffers, computed once per block.

The segment loop (`@<kernel>.seg*`: n elements, one pointer per streamed slot) is
vectorised by hand: <LANES x float> registers, an unmasked main loop and one masked
step for the tail, so LLVM never has to prove anything; pointer arguments are noalias.
When the caller asks for streaming (large outputs) and the outputs can be aligned,
a masked step peels to the output's vector alignment and the main loop uses
non-temporal stores.

Numerics (the same as stmt_eval.py, which the TileKernel interpreter runs, and the reference): float16 and bfloat16 values
live in float registers and are rounded once per stmt (skipped for stmts that cannot
change an exact half: max/min/abs/relu/copy/negation); exp and ln are the inline
polynomials of `mathlib`; max/min propagate NaN like numpy; float -> int casts convert
to int32 and wrap to narrower ints; nothing is reassociated or contracted.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from .. import dtypes as dt
from ..lower.vector import Stmt, VectorSchedule, compute_dtype
from .host import host_features
from .irgen import counted_loop, kernel_function, masked_load, masked_store
from .mathlib import VectorConsts
from .stmts import LANES, F32, I8, I32, LoweringError, StmtEmitter, mem_type, reg_type, round_scalar_to, vec

SCRATCH_ALIGN = 64    # bytes; each hoisted row starts on a cache line

I1 = ir.IntType(1)
I64 = ir.IntType(64)
F64 = ir.DoubleType()
PTR = ir.PointerType()
VOID = ir.VoidType()

__all__ = ["ArgLayout", "LoweringError", "lower", "split_stmts", "hoist_violations", "scratch_slots",
           "SCRATCH_ALIGN"]


# ---- argument block -----------------------------------------------------------------------------
FIXED_ARGS = ("R", "C", "tile_rows", "tile_cols", "col_tiles", "total_tiles", "tiles_per_core",
              "rows_mode", "stream")





@dataclass(frozen=True)
class ArgLayout:
    """Positions in the int64 `args` block.  The launcher fills it, the kernel reads it."""

    n_outer: int                        # collapsed dims before the row (len(dims) - 1)
    general: tuple[int, ...]            # sched.inputs positions of general inputs
    tensors: tuple[int, ...]            # sched.inputs positions that have a GM pointer
    scalars: tuple[int, ...]            # sched.inputs positions of runtime scalars
    n_outputs: int

    @staticmethod
    def of(sched: VectorSchedule) -> "ArgLayout":
        pos = list(enumerate(sched.inputs))
        return ArgLayout(
            n_outer=len(sched.dims) - 1,
            general=tuple(i for i, inp in pos if inp.kind == "general"),
            tensors=tuple(i for i, inp in pos if inp.kind != "runtime_scalar"),
            scalars=tuple(i for i, inp in pos if inp.kind == "runtime_scalar"),
            n_outputs=len(sched.outputs))

    def fixed(self, name: str) -> int:
        return FIXED_ARGS.index(name)

    def dim(self, j: int) -> int:
        return len(FIXED_ARGS) + j

    def stride(self, general_pos: int, j: int) -> int:
        k = self.general.index(general_pos)
        return len(FIXED_ARGS) + self.n_outer + k * self.n_outer + j

    @property
    def _ptr_base(self) -> int:
        return len(FIXED_ARGS) + self.n_outer * (1 + len(self.general))

    def input_ptr(self, pos: int) -> int:
        return self._ptr_base + self.tensors.index(pos)

    def output_ptr(self, k: int) -> int:
        return self._ptr_base + len(self.tensors) + k

    def scalar(self, pos: int) -> int:
        return self._ptr_base + len(self.tensors) + self.n_outputs + self.scalars.index(pos)

    @property
    def size(self) -> int:
        return self._ptr_base + len(self.tensors) + self.n_outputs + len(self.scalars)


# ---- the segment: a fused loop over n elements ----------------------------------------------------
@dataclass
class _Source:
    slot: str
    dtype: dt.DType
    kind: str             # "stream": a pointer; "broadcast": one value per call (a column of a
                          # general input); "const": a prefilled constant slot, baked in
    value: object = None  # the constant


class _Segment:
    """Stmts run over n elements; which slots stream in and out as pointers.

    `in_slots` maps each slot the stmts may read before writing to its source kind
    (or ("const", value)); reading any other slot first is a schedule bug.
    """

    def __init__(self, name: str, stmts: list[Stmt], sched: VectorSchedule, sinks: list[str],
                 in_slots: dict[str, object]):
        self.name = name
        self.stmts = stmts
        self.sinks = [(s, sched.slots[s].dtype) for s in sinks]
        written: set[str] = set()
        self.sources: list[_Source] = []
        seen: set[str] = set()
        vars_: list[str] = []
        for st in stmts:
            for s in st.srcs:
                if s in written or s in seen:
                    continue
                if s not in in_slots:
                    raise LoweringError(f"slot {s} is read before it is written in {name}")
                seen.add(s)
                kind = in_slots[s]
                if isinstance(kind, tuple):
                    self.sources.append(_Source(s, sched.slots[s].dtype, kind[0], kind[1]))
                else:
                    self.sources.append(_Source(s, sched.slots[s].dtype, kind))
            if st.scalar is not None and st.scalar[0] == "var" and st.scalar[1] not in vars_:
                vars_.append(st.scalar[1])
            written.add(st.dst)
        for s, _ in self.sinks:
            if s not in written:
                raise LoweringError(f"slot {s} is stored but never written in {name}")
        self.vars = vars_
        self.params = [src for src in self.sources if src.kind != "const"]


# ---- the module ---------------------------------------------------------------------------------
class _KernelBuilder:
    """Builds the module: segment functions, then the exported kernel around them."""

    def __init__(self, sched: VectorSchedule, name: str, features: frozenset[str]):
        self.sched = sched
        self.name = name
        self.module = ir.Module(name=name)
        self.k = VectorConsts(self.module, LANES, scalef="avx512f" in features)
        self.layout = ArgLayout.of(sched)
        self.var_types = {inp.var: compute_dtype(inp.gm_dtype) for inp in sched.inputs if inp.var}
        self.nt_md = self.module.add_metadata([ir.Constant(I32, 1)])

    # -- segment functions ----------------------------------------------------------------------
    def segment_function(self, seg: _Segment) -> ir.Function:
        """void seg(i64 n, i1 stream, sources..., vars..., sinks...)"""
        params = [I64, I1]
        for src in seg.params:
            params.append(reg_type(src.dtype) if src.kind == "broadcast" else PTR)
        params += [reg_type(self.var_types[v]) for v in seg.vars]
        params += [PTR] * len(seg.sinks)
        fn = ir.Function(self.module, ir.FunctionType(VOID, params), f"{self.name}.{seg.name}")
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        fn.attributes.add("noinline")
        for a, t in zip(fn.args, params):
            if t == PTR:
                a.add_attribute("noalias")
        masked = self._segment_step_function(seg, params)
        self._segment_main(seg, fn, masked)
        return fn

    def _unpack(self, seg: _Segment, args):
        n_src, n_var = len(seg.params), len(seg.vars)
        sources = args[2:2 + n_src]
        vars_ = dict(zip(seg.vars, args[2 + n_src:2 + n_src + n_var]))
        sinks = args[2 + n_src + n_var:]
        return sources, vars_, sinks

    def _emit_step(self, b: ir.IRBuilder, seg: _Segment, args, offset, mask, stream: bool):
        """One vector of the segment at element `offset` (all lanes, or those in `mask`)."""
        em = StmtEmitter(self.k, b, self.var_types)
        sources, var_args, sinks = self._unpack(seg, args)
        var_values = {name: em.splat_value(v) for name, v in var_args.items()}
        values: dict[str, ir.Value] = {}
        for src in seg.sources:
            if src.kind == "const":
                values[src.slot] = em.splat(round_scalar_to(src.value, src.dtype), reg_type(src.dtype))
        for src, arg in zip(seg.params, sources):
            if src.kind == "broadcast":
                values[src.slot] = em.splat_value(arg)
            else:
                values[src.slot] = em.to_reg(self._load(b, arg, offset, src.dtype, mask), src.dtype)
        for st in seg.stmts:
            scalar = em.scalar_operand(st, var_values) if st.scalar is not None and st.op != "cast" else None
            values[st.dst] = em.stmt(st, [values[s] for s in st.srcs], scalar)
        for (slot, d), ptr in zip(seg.sinks, sinks):
            self._store(b, em.to_mem(values[slot], d), ptr, offset, d, mask, stream)

    def _load(self, b, ptr, offset, d: dt.DType, mask):
        return masked_load(self.k, b, ptr, offset, d, mask)

    def _store(self, b, value, ptr, offset, d: dt.DType, mask, stream: bool):
        masked_store(self.k, b, value, ptr, offset, d, mask, self.nt_md if stream else None)

    def _segment_step_function(self, seg: _Segment, params) -> ir.Function:
        """void step(i64 offset, i64 count, ...): one masked vector (tails and peels)."""
        params = [I64, I64] + params[2:]
        fn = ir.Function(self.module, ir.FunctionType(VOID, params), f"{self.name}.{seg.name}.step")
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        for a, t in zip(fn.args, params):
            if t == PTR:
                a.add_attribute("noalias")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        offset, count = fn.args[0], fn.args[1]
        iota = ir.Constant(vec(I64, LANES), [ir.Constant(I64, i) for i in range(LANES)])
        cnt = b.insert_element(ir.Constant(vec(I64, LANES), ir.Undefined), count, ir.Constant(I32, 0))
        cnt = b.shuffle_vector(cnt, ir.Constant(vec(I64, LANES), ir.Undefined),
                               ir.Constant(vec(I32, LANES), [ir.Constant(I32, 0)] * LANES))
        mask = b.icmp_unsigned("<", iota, cnt)
        self._emit_step(b, seg, fn.args, offset, mask, stream=False)
        b.ret_void()
        return fn

    def _segment_main(self, seg: _Segment, fn: ir.Function, step: ir.Function):
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        n, stream = fn.args[0], fn.args[1]
        rest = list(fn.args[2:])
        lanes = ir.Constant(I64, LANES)

        def call_step(offset, count):
            b.call(step, [offset, count] + rest)

        def vector_loop(start, nt: bool, tag: str):
            """Unmasked vectors from `start` while a whole vector fits; returns the end."""
            pre = b.block
            loop = fn.append_basic_block(f"loop.{tag}")
            done = fn.append_basic_block(f"done.{tag}")
            b.cbranch(b.icmp_signed("<=", b.add(start, lanes), n), loop, done)
            b.position_at_end(loop)
            i = b.phi(I64)
            i.add_incoming(start, pre)
            self._emit_step(b, seg, fn.args, i, None, stream=nt)
            nxt = b.add(i, lanes)
            i.add_incoming(nxt, loop)
            # (LLVM's loop vectoriser leaves these loops alone: they are vector code already)
            b.cbranch(b.icmp_signed("<=", b.add(nxt, lanes), n), loop, done)
            b.position_at_end(done)
            end = b.phi(I64)
            end.add_incoming(start, pre)
            end.add_incoming(nxt, loop)
            return end

        def tail(end, tag: str):
            body = fn.append_basic_block(f"tail.{tag}")
            exit_ = fn.append_basic_block(f"exit.{tag}")
            b.cbranch(b.icmp_signed("<", end, n), body, exit_)
            b.position_at_end(body)
            call_step(end, b.sub(n, end))
            b.branch(exit_)
            b.position_at_end(exit_)
            b.ret_void()

        # every segment stores something: kernel outputs, or the hoisted rows
        streamed = fn.append_basic_block("streamed")
        plain = fn.append_basic_block("plain")
        sinks = rest[len(rest) - len(seg.sinks):]
        peel, aligned = self._peel(b, sinks, [d for _, d in seg.sinks])
        b.cbranch(b.and_(stream, aligned), streamed, plain)
        b.position_at_end(streamed)
        peel = b.select(b.icmp_signed("<", peel, n), peel, n)
        call_step(ir.Constant(I64, 0), peel)
        tail(vector_loop(peel, True, "nt"), "nt")
        b.position_at_end(plain)
        tail(vector_loop(ir.Constant(I64, 0), False, "plain"), "plain")

    def _peel(self, b, sinks, dtypes):
        """Elements before the first sink is vector-aligned, and whether all sinks then are."""
        def addr(p):
            return b.ptrtoint(p, I64)
        size0 = dtypes[0].itemsize
        a0 = addr(sinks[0])
        vbytes0 = ir.Constant(I64, size0 * LANES - 1)
        mis = b.and_(b.sub(ir.Constant(I64, 0), a0), vbytes0)
        peel = b.udiv(mis, ir.Constant(I64, size0))
        ok = b.icmp_unsigned("==", b.and_(a0, ir.Constant(I64, size0 - 1)), ir.Constant(I64, 0))
        for p, d in zip(sinks[1:], dtypes[1:]):
            a = b.add(addr(p), b.mul(peel, ir.Constant(I64, d.itemsize)))
            ok = b.and_(ok, b.icmp_unsigned("==", b.and_(a, ir.Constant(I64, d.itemsize * LANES - 1)),
                                            ir.Constant(I64, 0)))
        return peel, ok

    # -- the kernel: blocks, tiles, rows -------------------------------------------------------------
    def build(self) -> ir.Module:
        sched = self.sched
        hoisted, body = split_stmts(sched)
        by_slot = {inp.slot: inp for inp in sched.inputs if inp.slot}
        consts = {slot: ("const", value) for slot, value in constant_slots(sched).items()}
        body_in = {slot: "broadcast" if inp.kind == "general" and not inp.bits[-1] else "stream"
                   for slot, inp in by_slot.items()}
        body_in.update({st.dst: "stream" for st in hoisted})
        body_in.update(consts)
        self.body = _Segment("body", body, sched, [o.slot for o in sched.outputs], body_in)
        self.scratch_slots = scratch_slots(sched)
        self.hoist = None
        if self.scratch_slots:
            rows = {inp.slot: "stream" for inp in sched.inputs if inp.kind == "row"}
            self.hoist = _Segment("hoisted", hoisted, sched, self.scratch_slots, rows | consts)
        self.by_slot = by_slot
        # A tile is one contiguous GM range when every streamed source is a full input.
        self.flat = all(by_slot.get(s.slot) is not None and by_slot[s.slot].kind == "full"
                        for s in self.body.params)
        body_fn = self.segment_function(self.body)
        hoist_fn = self.segment_function(self.hoist) if self.hoist else None
        self._kernel(body_fn, hoist_fn)
        return self.module

    # -- helpers ------------------------------------------------------------------------------
    def _for(self, b: ir.IRBuilder, fn, start, end, body, tag: str):
        counted_loop(b, fn, start, end, body, tag)

    def _scalar_reg(self, b, v, d: dt.DType):
        """A scalar loaded in d's memory form, in register form."""
        if d == dt.float16:
            return b.fpext(v, F32)
        if d == dt.bfloat16:
            return b.bitcast(b.shl(b.zext(v, I32), ir.Constant(I32, 16)), F32)
        return v

    def _scalar_convert(self, b, v, src: dt.DType, dst: dt.DType):
        """Convert one scalar register value by running the vector cast on lane 0."""
        if src == dst:
            return v
        em = StmtEmitter(self.k, b, self.var_types)
        lanes = em.convert(em.splat_value(v), src, dst, None)
        return b.extract_element(lanes, ir.Constant(I32, 0))

    # -- the kernel -------------------------------------------------------------------------------
    def _kernel(self, body_fn, hoist_fn):
        sched, lay = self.sched, self.layout
        fn, b = kernel_function(self.module, self.name)
        b0, b1, args, scratch = fn.args

        def arg(i, t=I64):
            return b.load(b.gep(args, [ir.Constant(I64, i)], source_etype=I64), typ=t, align=8)

        R, C = arg(lay.fixed("R")), arg(lay.fixed("C"))
        tile_rows, tile_cols = arg(lay.fixed("tile_rows")), arg(lay.fixed("tile_cols"))
        col_tiles, total = arg(lay.fixed("col_tiles")), arg(lay.fixed("total_tiles"))
        per_core = arg(lay.fixed("tiles_per_core"))
        zero = ir.Constant(I64, 0)
        rows_mode = b.icmp_signed("!=", arg(lay.fixed("rows_mode")), zero)
        stream = b.icmp_signed("!=", arg(lay.fixed("stream")), zero)
        dims = [arg(lay.dim(j)) for j in range(lay.n_outer)]
        strides = {pos: [arg(lay.stride(pos, j)) for j in range(lay.n_outer)] for pos in lay.general}
        gm = {pos: arg(lay.input_ptr(pos), PTR) for pos in lay.tensors}
        outs = [arg(lay.output_ptr(k), PTR) for k in range(lay.n_outputs)]
        var_values = {}
        for pos, inp in enumerate(sched.inputs):
            cd = compute_dtype(inp.gm_dtype)
            if inp.kind == "runtime_scalar":
                # the launcher stores the value already rounded to the compute dtype
                raw = arg(lay.scalar(pos))
                var_values[inp.var] = (b.fptrunc(b.bitcast(raw, F64), F32) if cd.is_float
                                       else b.trunc(raw, reg_type(cd)))
            elif inp.kind == "scalar":
                v = b.load(gm[pos], typ=mem_type(inp.gm_dtype), align=inp.gm_dtype.itemsize)
                var_values[inp.var] = self._scalar_convert(b, self._scalar_reg(b, v, inp.gm_dtype),
                                                           inp.gm_dtype, cd)
        # scratch: one row of C elements per hoisted slot the body reads, cache-line aligned
        scratch_ptr, offset = {}, zero
        for slot in self.scratch_slots:
            scratch_ptr[slot] = b.gep(scratch, [offset], source_etype=I8)
            nbytes = b.mul(C, ir.Constant(I64, sched.slots[slot].dtype.itemsize))
            mask = ir.Constant(I64, SCRATCH_ALIGN - 1)
            offset = b.add(offset, b.and_(b.add(nbytes, mask), ir.Constant(I64, ~(SCRATCH_ALIGN - 1))))

        def seg_vars(seg):
            return [var_values[v] for v in seg.vars]

        def outer_indices(g):
            """Row g as indices over dims[:-1] (row-major)."""
            idx = []
            for j in range(lay.n_outer - 1, -1, -1):
                if j == 0:
                    idx.append(g)
                else:
                    idx.append(b.urem(g, dims[j]))
                    g = b.udiv(g, dims[j])
            return idx[::-1]

        def general_offset(pos, idx):
            off = zero
            for j, i in enumerate(idx):
                off = b.add(off, b.mul(i, strides[pos][j]))
            return off

        def call_body(n, row, col0, row_base):
            """The body over n elements of row `row` from column col0 (row_base = row*C + col0)."""
            idx = outer_indices(row) if lay.general else []
            srcs = []
            for src in self.body.params:
                inp = self.by_slot.get(src.slot)
                if inp is None:                               # hoisted row in scratch
                    d = sched.slots[src.slot].dtype
                    srcs.append(b.gep(scratch_ptr[src.slot], [col0], source_etype=mem_type(d)))
                    continue
                mt = mem_type(inp.gm_dtype)
                if inp.kind == "full":
                    srcs.append(b.gep(gm[inp_pos[src.slot]], [row_base], source_etype=mt))
                elif inp.kind == "row":
                    srcs.append(b.gep(gm[inp_pos[src.slot]], [col0], source_etype=mt))
                else:
                    pos = inp_pos[src.slot]
                    off = general_offset(pos, idx)
                    if src.kind == "broadcast":
                        p = b.gep(gm[pos], [off], source_etype=mt)
                        srcs.append(self._scalar_reg(b, b.load(p, typ=mt, align=inp.gm_dtype.itemsize),
                                                     inp.gm_dtype))
                    else:
                        srcs.append(b.gep(gm[pos], [b.add(off, col0)], source_etype=mt))
            sinks = [b.gep(outs[k], [row_base], source_etype=mem_type(o.gm_dtype))
                     for k, o in enumerate(sched.outputs)]
            b.call(body_fn, [n, stream] + srcs + seg_vars(self.body) + sinks)

        inp_pos = {inp.slot: pos for pos, inp in enumerate(sched.inputs) if inp.slot}

        def rows_tile(t):
            r0 = b.mul(t, tile_rows)
            r1 = b.add(r0, tile_rows)
            r1 = b.select(b.icmp_signed("<", r1, R), r1, R)
            if self.flat:
                call_body(b.mul(b.sub(r1, r0), C), r0, zero, b.mul(r0, C))
                return
            self._for(b, fn, r0, r1, lambda g: call_body(C, g, zero, b.mul(g, C)), "row")

        def chunk_tile(t):
            row = b.udiv(t, col_tiles)
            col0 = b.mul(b.urem(t, col_tiles), tile_cols)
            left = b.sub(C, col0)
            n = b.select(b.icmp_signed("<", tile_cols, left), tile_cols, left)
            call_body(n, row, col0, b.add(b.mul(row, C), col0))

        def tile(t):
            with b.if_else(rows_mode) as (then, otherwise):
                with then:
                    rows_tile(t)
                with otherwise:
                    chunk_tile(t)

        def block(blk):
            if hoist_fn is not None:
                row_ptrs = [gm[inp_pos[s.slot]] for s in self.hoist.params]
                b.call(hoist_fn, [C, ir.Constant(I1, 0)] + row_ptrs + seg_vars(self.hoist)
                       + [scratch_ptr[s] for s in self.scratch_slots])
            t0 = b.mul(blk, per_core)
            t1 = b.add(t0, per_core)
            t1 = b.select(b.icmp_signed("<", t1, total), t1, total)
            self._for(b, fn, t0, t1, tile, "tile")

        self._for(b, fn, b0, b1, block, "block")
        b.ret_void()


def lower(sched: VectorSchedule, name: str = "fusedsl_kernel", features=None) -> str:
    """LLVM IR text of the kernel (see module doc).

    `features`: CPU feature names the IR may use target-specific intrinsics for
    (default: the host's); the text never depends on anything else.
    """
    if features is None:
        features = host_features()
    module = _KernelBuilder(sched, name, frozenset(features)).build()
    return str(module)


def split_stmts(sched: VectorSchedule) -> tuple[list[Stmt], list[Stmt]]:
    """(once-per-block stmts, per-tile stmts), both in program order.

    A stmt marked hoisted runs once per block only if everything it reads is hoisted
    data (a row input or an earlier hoisted result); otherwise it stays in the body at
    its place in the program.  `hoist_violations` reports such stmts: the Ascend C
    kernel would read an uninitialised buffer there, so they are schedule bugs, but
    running them per tile is always correct.
    """
    ready = {inp.slot for inp in sched.inputs if inp.kind == "row"} | set(constant_slots(sched))
    hoisted, body = [], []
    for st in sched.stmts:
        if st.hoisted and all(s in ready for s in st.srcs):
            hoisted.append(st)
            ready.add(st.dst)
        else:
            body.append(st)
            ready.discard(st.dst)
    return hoisted, body


def constant_slots(sched: VectorSchedule) -> dict[str, object]:
    """Scratch slots the kernel fills with one value before any tile (Compare's constant
    operands): no stmt writes them, so they are constants."""
    return {name: value for name, value in getattr(sched, "prefill", {}).items()
            if sched.slots.get(name) is not None and sched.slots[name].role == "scratch"}


def hoist_violations(sched: VectorSchedule) -> list[Stmt]:
    """Stmts marked hoisted that read per-tile data (see split_stmts)."""
    hoisted, _ = split_stmts(sched)
    kept = {id(st) for st in hoisted}
    return [st for st in sched.stmts if st.hoisted and id(st) not in kept]


def scratch_slots(sched: VectorSchedule) -> list[str]:
    """Hoisted slots the body reads, in the order their rows are laid out in scratch."""
    hoisted, body = split_stmts(sched)
    inputs = {inp.slot for inp in sched.inputs if inp.slot}
    produced = {s.dst for s in hoisted}
    written: set[str] = set()
    found: list[str] = []
    for st in body:
        for s in st.srcs:
            if s not in written and s in produced and s not in inputs and s not in found:
                found.append(s)
        written.add(st.dst)
    return found

"""One LLVM lowering for every kernel kind: a TileKernel (tile/kernel.py) walked node by node.

The per-kind CPU lowerings (llvm.py, llvm_view.py, llvm_row.py, llvm_reduce.py, transpose.py)
each re-derive a kernel from its schedule; this module reads the loop-level tile IR that every
kind already lowers to (`lower.kinds.kernel_ir`) and the Ascend C printer prints, so the CPU runs
what the chip runs: the same stages, tiles, DMA copies and vector calls.  Its executable spec is
`kernel_interp.run_kernel`; results are bit-identical to it wherever both use IEEE arithmetic
(everything but exp / ln, which are mathlib's polynomials here and numpy's there).

One module per kernel (sizes arrive at run time), one exported function in launch.py's
convention

    void @fusedsl_tile_kernel(i64 block_begin, i64 block_end, ptr args, ptr arena)

that runs blocks (cores) [block_begin, block_end) as the interpreter does: per block the
members (Init), the `once` stages (a prologue), then the tiles [b * tilesPerCore,
min(totalTiles, (b + 1) * tilesPerCore)) through the other stages.  `args` is an int64 block:

    the tiling words | the typed fields (runtime scalars: float as a double, ints as int64) |
    a pointer per GM tensor (kernel order) | per queue its byte offset in the arena and the
    bytes of one buffer

`arena` is the thread's UB: every queue's `depth` buffers at fixed offsets (64-byte aligned).

What each node becomes:
- scalar work (Let / Var / Set, members, stage parameters, loop variables): an alloca per name
  (SROA turns them into registers), uint32 arithmetic on i32 exactly as `tile.kernel.evaluate`
  (wrapping + - *, unsigned / % and compares); typed scalars (`val`, typed members, `get`, `load`,
  casts, float literals) carry their numpy dtype and follow numpy's promotion (a Python int is
  weak), float16 / bfloat16 held in float32 registers and rounded once per operation;
- the queue protocol: a state per buffer and a buffer index per tensor name, as the interpreter
  keeps them (AllocTensor takes the first free buffer, DeQue the first queued one), so two
  tensors of one queue held at once are two buffers; VECCALC tensors are buffer 0;
- DMA (CopyIn / CopyOut rows, GatherRow, UbCopy): memcpy / memmove per row (one call when the
  rows are contiguous on both sides); Move / Put / Dup / get are element loads and stores;
- Vec: a 16-lane loop with a masked tail, with numpy's semantics (maximum / minimum pick the
  second operand on a tie, NaN propagates); WholeReduce / ReduceRepeat fold one repeat in
  numpy's pairwise order (8 accumulators, the same split as np.sum);
- Step: the tile stmts through `stmts.StmtEmitter` (the primitives' own LLVM lowering), fused
  into one 16-lane loop when every UB tensor the step writes is addressed at one offset in it
  (lanes then never meet: the values stay in registers from stmt to stmt, written back once),
  otherwise one loop per stmt.
Cube nodes (Matmul objects, CopyNz) are not lowered yet: a LoweringError says so.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from .. import dtypes as dt
from ..tile.kernel import (VIEWS, Alloc, Barrier, CopyIn, CopyOut, Decl, DeQue, Dup, EnQue, For, Free, GatherRow, If,
                           Let, Move, Put, Ref, Scalar, Set, Stage, Step, Sync, TileKernel, UbCopy, Var, Vec,
                           evaluate, member_values)
from .irgen import I1, I64, PTR, VOID, carried_loop, kernel_function, vname
from .mathlib import VectorConsts
from .stmts import F16, F32, I8, I16, I32, LANES, LoweringError, StmtEmitter, mem_type, reg_type, vec

F64 = ir.DoubleType()
SYMBOL = "fusedsl_tile_kernel"
ARENA_ALIGN = 64

__all__ = ["lower_kernel", "arena_layout", "LoweringError", "SYMBOL", "ARENA_ALIGN"]

# numpy's dtype of a typed scalar; None is the IR's uint32 (a Python int: weak in numpy's rules),
# PYFLOAT a Python float (a runtime scalar's typed field, weak too)
PYFLOAT = "pyfloat"
_F64 = np.dtype(np.float64)
_BY_NP = {d.np: d for d in dt.ALL}
_VIEW_TYPES = {"int16": (I16, 2), "uint32": (I32, 4)}


def _kind_dtype(kind) -> dt.DType | None:
    """The fusedsl dtype of a typed scalar kind (None for uint32, Python floats and float64)."""
    return _BY_NP.get(kind) if isinstance(kind, np.dtype) else None


def _reg(kind):
    """The LLVM type a scalar of this kind lives in."""
    if kind is None:
        return I32
    if kind is PYFLOAT or kind == _F64:
        return F64
    d = _kind_dtype(kind)
    if d is None:
        raise LoweringError(f"no scalar of numpy type {kind}")
    return reg_type(d)


def _promote(a, b):
    """numpy 2's result type of a binary op on these kinds (a Python int or float is weak)."""
    if a is None or a is PYFLOAT:
        a, b = b, a
    if a is None:
        return PYFLOAT if b is PYFLOAT else None
    if a is PYFLOAT:
        return PYFLOAT
    if b is None:
        return a
    if b is PYFLOAT:
        return a if a.kind == "f" or a == dt.bfloat16.np else _F64
    return np.result_type(a, b)


def arena_layout(k: TileKernel, words) -> tuple[dict[str, tuple[int, int]], int]:
    """queue -> (byte offset, bytes per buffer) in a block's arena, and the arena's bytes: every
    queue's `depth` buffers of its elements at the tiling, each on a 64-byte line."""
    env = member_values(k, words)
    out, at = {}, 0
    for q in k.queues:
        size = -(-max(1, evaluate(q.elems, env)) * q.dtype.itemsize // ARENA_ALIGN) * ARENA_ALIGN
        out[q.name] = (at, size)
        at += size * q.depth
    return out, at


def typed_fields(k: TileKernel) -> list:
    return [f for f in k.fields if f.ctype != "uint32_t"]


def lower_kernel(k: TileKernel, features=frozenset()) -> str:
    """The LLVM IR text of kernel `k` (module doc)."""
    if k.matmuls or k.process is not None:
        raise LoweringError(f"kernel {k.name}: cube kernels (Matmul objects) are not lowered to LLVM yet")
    return str(_Lowering(k, frozenset(features)).build())


# ---- name and tensor analysis ---------------------------------------------------------------------
def _walk(body):
    for node in body:
        yield node
        if isinstance(node, For):
            yield from _walk(node.body)
        elif isinstance(node, If):
            yield from _walk(node.then)
            yield from _walk(node.orelse)


class _Lowering:
    def __init__(self, k: TileKernel, features: frozenset):
        self.k = k
        self.module = ir.Module(name=k.name)
        self.kc = VectorConsts(self.module, LANES, scalef="avx512f" in features)
        self.queues = {q.name: q for q in k.queues}
        self.gms = {g.name: g for g in k.gms}
        if any(g.role == "work" for g in k.gms):
            raise LoweringError(f"kernel {k.name}: GM workspace tensors are not lowered to LLVM yet")
        self.offsets = k.field_offsets()
        self.typed = {f.name: f for f in typed_fields(k)}
        self.tensor_queue: dict[str, str] = {}
        nodes = [n for st in k.stages for n in _walk(st.body)]
        for n in nodes:
            if isinstance(n, (Alloc, DeQue, Decl)):
                if self.tensor_queue.setdefault(n.tensor, n.queue) != n.queue:
                    raise LoweringError(f"kernel {k.name}: tensor {n.tensor} is taken from two queues")
        self.types = self._infer_types(nodes)

    # -- typing ------------------------------------------------------------------------------------
    def _infer_types(self, nodes) -> dict:
        types = {}
        for m in self.k.members:
            types[m.name] = None if m.dtype is None else m.dtype.np
        for st in self.k.stages:
            if st.param:
                types[st.param] = None
        for _ in range(3):   # a name read before the node that sets it (loops, later stages)
            for n in nodes:
                if isinstance(n, (Let, Var)):
                    types[n.var] = self.etype(n.expr, types)
                elif isinstance(n, For):
                    types[n.var] = None
                elif isinstance(n, Scalar):
                    types[n.var] = n.dtype.np
        return types

    def tensor_dtype(self, name: str) -> dt.DType:
        if name not in self.tensor_queue:
            raise LoweringError(f"kernel {self.k.name}: tensor {name} is never taken from a queue")
        return self.queues[self.tensor_queue[name]].dtype

    def etype(self, e, types=None):
        types = self.types if types is None else types
        if isinstance(e, bool):
            raise LoweringError("bool is not an expression")
        if isinstance(e, int):
            return None
        if isinstance(e, float):
            return np.dtype(np.float32)
        if isinstance(e, str):
            if e.startswith("t."):
                f = self.typed.get(e[2:])
                return None if f is None or f.ctype != "float" else PYFLOAT
            return types.get(e)
        op = e[0]
        if op == "[]":
            return None
        if op == "load":
            return self.gms[e[1]].dtype.np
        if op == "get":
            return self.tensor_dtype(e[1]).np
        if op == "cast":
            return e[1].np
        if op == "neg":
            return self.etype(e[1], types)
        if op == "sel":
            return _promote(self.etype(e[2], types), self.etype(e[3], types))
        a, b = self.etype(e[1], types), self.etype(e[2], types)
        typed = isinstance(a, np.dtype) or isinstance(b, np.dtype)
        if op in ("fmax", "fmin", "min") and (typed or a is PYFLOAT or b is PYFLOAT):
            return _promote(a, b)
        if typed and op in "+-*/":
            r = _promote(a, b)
            return _F64 if op == "/" and r.kind in "iub" else r
        return None

    # -- the module ---------------------------------------------------------------------------------
    def build(self) -> ir.Module:
        k = self.k
        fn, b = kernel_function(self.module, SYMBOL)
        self.fn = fn
        self.ab = b                     # the entry block: allocas and the arguments
        b0, b1, args, arena = fn.args
        self.args, self.arena = args, arena
        self.words = {}
        for name, (w, n) in self.offsets.items():
            if n == 0:
                self.words[name] = b.trunc(self._arg(b, w), I32)
        nw = k.word_count
        self.typed_vals = {}
        for j, f in enumerate(typed_fields(k)):
            raw = self._arg(b, nw + j)
            self.typed_vals[f.name] = b.bitcast(raw, F64) if f.ctype == "float" else b.trunc(raw, I32)
        at = nw + len(self.typed)
        self.gm_ptr = {}
        for g in k.gms:
            self.gm_ptr[g.name] = b.inttoptr(self._arg(b, at), PTR)
            at += 1
        self.q_off, self.q_size = {}, {}
        for q in k.queues:
            self.q_off[q.name] = self._arg(b, at)
            self.q_size[q.name] = self._arg(b, at + 1)
            at += 2
        self.slots = {}
        for name, kind in self.types.items():
            self.slots[name] = b.alloca(_reg(kind), name=f"v.{name}")
        self.q_state = {q.name: [b.alloca(I8, name=f"q.{q.name}.{i}") for i in range(q.depth)]
                        for q in k.queues if q.depth > 1 and q.position not in ("VECCALC", "TBUF_VECOUT")}
        self.t_index = {t: b.alloca(I32, name=f"t.{t}") for t, q in self.tensor_queue.items() if q in self.q_state}
        body = fn.append_basic_block("body")
        self.b = ir.IRBuilder(body)
        self._blocks(b0, b1)
        self.b.ret_void()
        self.ab.branch(body)
        return self.module

    def _arg(self, b, i: int):
        return b.load(b.gep(self.args, [ir.Constant(I64, i)], source_etype=I64), typ=I64, align=8)

    def _blocks(self, b0, b1):
        k, b = self.k, self.b
        total = b.zext(self.words["totalTiles"], I64)
        per_core = b.zext(self.words["tilesPerCore"], I64)

        def block(blk, _):
            for m in k.members:
                if m.init is None:
                    v = ir.Constant(_reg(self.types[m.name]), 0 if m.dtype is None or not m.dtype.is_float else 0.0)
                    self.b.store(v, self.slots[m.name])
                else:
                    self.assign(m.name, self.ev(m.init))
            for states in self.q_state.values():   # every buffer free (0) at the block's start
                for slot in states:
                    self.b.store(ir.Constant(I8, 0), slot)
            for st in k.stages:
                if st.once:
                    self.body(st.body)
            t0 = self.b.mul(blk, per_core)
            t1 = self.b.add(t0, per_core)
            t1 = self.b.select(self.b.icmp_signed("<", t1, total), t1, total)

            def tile(t, _):
                for st in k.stages:
                    if st.once:
                        continue
                    if st.param:
                        self.b.store(self.b.trunc(t, I32), self.slots[st.param])
                    self.body(st.body)
                return []
            carried_loop(self.b, t0, t1, 1, [], tile, "tile")
            return []
        carried_loop(b, b0, b1, 1, [], block, "block")

    # -- scalars --------------------------------------------------------------------------------------
    def assign(self, name: str, val) -> None:
        v, kind = val
        self.b.store(self.convert(v, kind, self.types[name]), self.slots[name])

    def read(self, name: str):
        return self.b.load(self.slots[name]), self.types[name]

    def ev(self, e):
        """(LLVM value, kind) of an expression (module doc: uint32 on i32, typed as numpy)."""
        b = self.b
        if isinstance(e, int):
            return ir.Constant(I32, e & 0xFFFFFFFF), None
        if isinstance(e, float):
            return ir.Constant(F32, float(np.float32(e))), np.dtype(np.float32)
        if isinstance(e, str):
            if e.startswith("t."):
                name = e[2:]
                if name in self.typed:
                    f = self.typed[name]
                    return self.typed_vals[name], PYFLOAT if f.ctype == "float" else None
                if name not in self.words:
                    raise LoweringError(f"kernel {self.k.name}: {e} is not a tiling word")
                return self.words[name], None
            if e not in self.slots:
                raise LoweringError(f"kernel {self.k.name}: {e} is read but never set")
            return self.read(e)
        op = e[0]
        if op == "[]":
            w, n = self.offsets[e[1][2:]]
            i = b.add(ir.Constant(I64, w), b.zext(self.ev_u32(e[2]), I64))
            p = b.gep(self.args, [i], source_etype=I64)
            return b.trunc(b.load(p, typ=I64, align=8), I32), None
        if op == "load":
            g = self.gms[e[1]]
            i = ir.Constant(I64, 0) if len(e) == 2 else b.zext(self.ev_u32(e[2]), I64)
            return self.load_scalar(b.gep(self.gm_ptr[e[1]], [i], source_etype=mem_type(g.dtype)), g.dtype), g.dtype.np
        if op == "get":
            d = self.tensor_dtype(e[1])
            return self.load_scalar(self.element_ptr(e[1], b.zext(self.ev_u32(e[2]), I64), d), d), d.np
        if op == "cast":
            v, kind = self.ev(e[2])
            return self.convert(v, kind, e[1].np), e[1].np
        if op == "neg":
            v, kind = self.ev(e[1])
            if _reg(kind) in (F32, F64):
                return b.fneg(v), kind
            return b.sub(ir.Constant(v.type, 0), v), kind
        if op == "sel":
            c = self.truth(self.ev(e[1]))
            (x, kx), (y, ky) = self.ev(e[2]), self.ev(e[3])
            r = _promote(kx, ky)
            return b.select(c, self.convert(x, kx, r), self.convert(y, ky, r)), r
        (x, kx), (y, ky) = self.ev(e[1]), self.ev(e[2])
        typed = isinstance(kx, np.dtype) or isinstance(ky, np.dtype)
        if op in ("fmax", "fmin") or (op == "min" and (typed or PYFLOAT in (kx, ky))):
            r = _promote(kx, ky)
            x, y = self.convert(x, kx, r), self.convert(y, ky, r)
            cmp = {"fmax": ">", "fmin": "<", "min": ">"}[op]   # fmax: y if y > x; min: y if x > y
            pick_y = self.compare(cmp, y, x, r) if op != "min" else self.compare(">", x, y, r)
            return b.select(pick_y, y, x), r
        if typed and op in "+-*/":
            return self.typed_arith(op, x, kx, y, ky)
        if op in ("<", "<=", ">", ">=", "==", "!="):
            r = _promote(kx, ky)
            c = self.compare(op, self.convert(x, kx, r), self.convert(y, ky, r), r)
            return b.zext(c, I32), None
        if op in ("&&", "||"):
            tx, ty = self.truth((x, kx)), self.truth((y, ky))
            return b.zext(b.and_(tx, ty) if op == "&&" else b.or_(tx, ty), I32), None
        if kx is not None or ky is not None:
            raise LoweringError(f"kernel {self.k.name}: {op} of typed scalars")
        if op == "+":
            return b.add(x, y), None
        if op == "-":
            return b.sub(x, y), None
        if op == "*":
            return b.mul(x, y), None
        if op == "/":
            return b.udiv(x, y), None
        if op == "%":
            return b.urem(x, y), None
        if op == "min":
            return b.select(b.icmp_unsigned("<", y, x), y, x), None
        if op == "pad":
            return b.mul(b.udiv(b.add(x, b.sub(y, ir.Constant(I32, 1))), y), y), None
        raise LoweringError(f"kernel {self.k.name}: expression {e!r}")

    def ev_u32(self, e):
        v, kind = self.ev(e)
        return self.convert(v, kind, None) if kind is not None else v

    def ev_i64(self, e):
        return self.b.zext(self.ev_u32(e), I64)

    def truth(self, val):
        v, kind = val
        if v.type in (F32, F64):
            return self.b.fcmp_unordered("!=", v, ir.Constant(v.type, 0.0))
        return self.b.icmp_unsigned("!=", v, ir.Constant(v.type, 0))

    def compare(self, op: str, x, y, kind):
        b = self.b
        if x.type in (F32, F64):
            return b.fcmp_unordered(op, x, y) if op == "!=" else b.fcmp_ordered(op, x, y)
        signed = isinstance(kind, np.dtype) and kind.kind == "i"
        return (b.icmp_signed if signed else b.icmp_unsigned)(op, x, y)

    def typed_arith(self, op, x, kx, y, ky):
        b = self.b
        r = _promote(kx, ky)
        if op == "/" and isinstance(r, np.dtype) and r.kind in "iub":
            r = _F64
        x, y = self.convert(x, kx, r), self.convert(y, ky, r)
        if x.type in (F32, F64):
            v = {"+": b.fadd, "-": b.fsub, "*": b.fmul, "/": b.fdiv}[op](x, y)
            d = _kind_dtype(r)
            return (self.round_scalar(v, d) if d in (dt.float16, dt.bfloat16) else v), r
        v = {"+": b.add, "-": b.sub, "*": b.mul}[op](x, y)
        return v, r

    def _splat_em(self) -> StmtEmitter:
        return StmtEmitter(self.kc, self.b, {})

    def round_scalar(self, v, d: dt.DType):
        em = self._splat_em()
        return self.b.extract_element(em.round_to(em.splat_value(v), d), ir.Constant(I32, 0))

    def convert(self, v, src, dst):
        """A scalar of kind src as kind dst (numpy's astype; module doc)."""
        b = self.b
        if src is dst or (isinstance(src, np.dtype) and isinstance(dst, np.dtype) and src == dst):
            return v
        if src is PYFLOAT:
            src = _F64
        if dst is PYFLOAT:
            dst = _F64
        if src == dst:
            return v
        if dst is None:     # to the uint32 of index arithmetic
            if v.type == F64 or v.type == F32:
                return b.fptoui(v, I32)
            return b.zext(v, I32) if v.type.width < 32 else v
        if dst == _F64:
            if src is None:
                return b.uitofp(v, F64)
            if v.type == F32:
                return b.fpext(v, F64)
            unsigned = src.kind in "ub"
            return (b.uitofp if unsigned else b.sitofp)(v, F64)
        d = _kind_dtype(dst)
        if d is None:
            raise LoweringError(f"no conversion to {dst}")
        if src is None or src == _F64:
            if src is None:
                wide = b.uitofp(v, F32) if d.is_float else v
                if not d.is_float:
                    return v if d == dt.int32 else self.convert(v, np.dtype(np.int32), dst)
            else:
                if not d.is_float:
                    return self.convert(b.fptosi(v, I32), np.dtype(np.int32), dst)
                wide = b.fptrunc(v, F32)
            return wide if d == dt.float32 else self.round_scalar(wide, d)
        em = self._splat_em()
        s = _kind_dtype(src)
        return b.extract_element(em.convert(em.splat_value(v), s, d, None), ir.Constant(I32, 0))

    # -- memory ---------------------------------------------------------------------------------------
    def load_scalar(self, ptr, d: dt.DType):
        b = self.b
        v = b.load(ptr, typ=mem_type(d), align=d.itemsize)
        if d == dt.float16:
            return b.fpext(v, F32)
        if d == dt.bfloat16:
            return b.bitcast(b.shl(b.zext(v, I32), ir.Constant(I32, 16)), F32)
        return v

    def store_scalar(self, v, ptr, d: dt.DType) -> None:
        b = self.b
        if d == dt.float16:
            v = b.fptrunc(v, F16)
        elif d == dt.bfloat16:
            v = b.trunc(b.lshr(b.bitcast(v, I32), ir.Constant(I32, 16)), I16)
        b.store(v, ptr, align=d.itemsize)

    def tensor_base(self, name: str):
        """The i8 address of the buffer tensor `name` holds now."""
        b = self.b
        q = self.tensor_queue.get(name)
        if q is None:
            raise LoweringError(f"kernel {self.k.name}: tensor {name} is never taken from a queue")
        off = self.q_off[q]
        if name in self.t_index:
            off = b.add(off, b.mul(b.zext(b.load(self.t_index[name]), I64), self.q_size[q]))
        return b.gep(self.arena, [off], source_etype=I8)

    def element_ptr(self, name: str, index, d: dt.DType):
        return self.b.gep(self.tensor_base(name), [index], source_etype=mem_type(d))

    def ref_ptr(self, r: Ref, extra=None):
        """(address of a Ref's first element, its element type, its element bytes, its dtype or None)."""
        b = self.b
        d = self.tensor_dtype(r.tensor)
        off = self.ev_i64(r.offset)
        if extra is not None:
            off = b.zext(b.trunc(b.add(off, extra), I32), I64)   # uint32 like the interpreter's offset
        base = b.gep(self.tensor_base(r.tensor), [b.mul(off, ir.Constant(I64, d.itemsize))], source_etype=I8)
        if r.view is not None:
            t, size = _VIEW_TYPES[r.view]
            return base, t, size, None
        return base, mem_type(d), d.itemsize, d

    def memcpy(self, dst, src, nbytes, move=False) -> None:
        name = "llvm.memmove.p0.p0.i64" if move else "llvm.memcpy.p0.p0.i64"
        f = self.kc.intrinsic(name, VOID, [PTR, PTR, I64, I1])
        self.b.call(f, [dst, src, nbytes, ir.Constant(I1, 0)])

    # -- statements -------------------------------------------------------------------------------------
    def body(self, nodes) -> None:
        for node in nodes:
            self.node(node)

    def node(self, node) -> None:
        b = self.b
        if isinstance(node, (Let, Var)):
            self.assign(node.var, self.ev(node.expr))
        elif isinstance(node, Set):
            v, kind = self.ev(node.expr)
            if node.op == "=":
                self.assign(node.var, (v, kind))
                return
            old, okind = self.read(node.var)
            if okind is not None or kind is not None:
                raise LoweringError(f"kernel {self.k.name}: {node.op} on a typed scalar")
            new = b.add(old, v) if node.op == "+=" else b.udiv(old, v)
            b.store(new, self.slots[node.var])
        elif isinstance(node, For):
            self.for_(node)
        elif isinstance(node, If):
            c = self.truth(self.ev(node.cond))
            if node.orelse:
                with b.if_else(c) as (then, other):
                    with then:
                        self.body(node.then)
                    with other:
                        self.body(node.orelse)
            else:
                with b.if_then(c):
                    self.body(node.then)
        elif isinstance(node, (Alloc, EnQue, DeQue, Free, Decl)):
            self.queue_op(node)
        elif isinstance(node, (CopyIn, CopyOut)):
            self.copy(node)
        elif isinstance(node, GatherRow):
            self.gather_row(node)
        elif isinstance(node, UbCopy):
            dd, sd = self.tensor_dtype(node.dst), self.tensor_dtype(node.src)
            if dd != sd:
                raise LoweringError(f"kernel {self.k.name}: a UB copy from {sd} to {dd}")
            dst = self.ref_ptr(Ref(node.dst, node.dst_off))[0]
            src = self.ref_ptr(Ref(node.src, node.src_off))[0]
            self.memcpy(dst, src, b.mul(self.ev_i64(node.count), ir.Constant(I64, dd.itemsize)), move=True)
        elif isinstance(node, Move):
            dd, sd = self.tensor_dtype(node.dst), self.tensor_dtype(node.src)
            v = self.load_scalar(self.element_ptr(node.src, self.ev_i64(node.src_index), sd), sd)
            v = self.convert(v, sd.np, dd.np)
            self.store_scalar(v, self.element_ptr(node.dst, self.ev_i64(node.dst_index), dd), dd)
        elif isinstance(node, (Barrier, Sync)):
            pass
        elif isinstance(node, Scalar):
            v, kind = self.ev(node.expr)
            b.store(self.convert(v, kind, node.dtype.np), self.slots[node.var])
        elif isinstance(node, Put):
            d = self.tensor_dtype(node.tensor)
            v, kind = self.ev(node.expr)
            self.store_scalar(self.convert(v, kind, d.np), self.element_ptr(node.tensor, self.ev_i64(node.index), d), d)
        elif isinstance(node, Dup):
            self.dup(node)
        elif isinstance(node, Vec):
            self.vec_op(node)
        elif isinstance(node, Step):
            self.step(node)
        else:
            raise LoweringError(f"kernel {self.k.name}: {type(node).__name__} nodes are not lowered to LLVM yet")

    def for_(self, node: For) -> None:
        b = self.b
        start, end = b.zext(self.ev_u32(node.start), I64), b.zext(self.ev_u32(node.end), I64)
        if node.down:   # end-1 down to start
            one = ir.Constant(I64, 1)

            def down(i, _):
                b.store(b.trunc(b.sub(i, one), I32), self.slots[node.var])
                self.body(node.body)
                return []
            # i runs end .. start+1 (counting down): the loop helper counts up, so run j over
            # [0, end - start) and take i = end - j
            count = b.select(b.icmp_unsigned(">", end, start), b.sub(end, start), ir.Constant(I64, 0))
            carried_loop(b, ir.Constant(I64, 0), count, 1, [],
                         lambda j, c: down(b.sub(end, j), c), "down")
            return
        step = ir.Constant(I64, node.step) if isinstance(node.step, int) else b.zext(self.ev_u32(node.step), I64)

        def up(i, _):
            b.store(b.trunc(i, I32), self.slots[node.var])
            self.body(node.body)
            return []
        carried_loop(b, start, end, step, [], up, "for")

    def queue_op(self, node) -> None:
        b = self.b
        q = node.queue
        if q not in self.q_state:   # one buffer (a TBuf, or a queue of depth 1): nothing to track
            return
        state = self.q_state[q]
        depth = self.queues[q].depth

        def at(i):
            return state[i]

        def first(want: int, new: int):
            """The first buffer in state `want` (the interpreter's choice) becomes `new`."""
            idx = ir.Constant(I32, 0)
            found = ir.Constant(I1, 0)
            for i in range(depth - 1, -1, -1):   # the lowest index wins: chosen last
                hit = b.icmp_unsigned("==", b.load(at(i), typ=I8), ir.Constant(I8, want))
                idx = b.select(hit, ir.Constant(I32, i), idx)
                found = b.or_(found, hit)
            for i in range(depth):
                p = at(i)
                b.store(b.select(b.icmp_unsigned("==", idx, ir.Constant(I32, i)), ir.Constant(I8, new), b.load(p, typ=I8)), p)
            return idx
        FREE, ALLOC, QUEUED, DEQUEUED = 0, 1, 2, 3
        if isinstance(node, Alloc):
            b.store(first(FREE, ALLOC), self.t_index[node.tensor])
        elif isinstance(node, DeQue):
            b.store(first(QUEUED, DEQUEUED), self.t_index[node.tensor])
        elif isinstance(node, (EnQue, Free)):
            idx = b.load(self.t_index[node.tensor])
            new = QUEUED if isinstance(node, EnQue) else FREE
            for i in range(depth):
                p = at(i)
                b.store(b.select(b.icmp_unsigned("==", idx, ir.Constant(I32, i)), ir.Constant(I8, new), b.load(p, typ=I8)), p)

    def copy(self, node) -> None:
        """CopyIn / CopyOut: `rows` rows of `cols` elements, one memcpy when both sides are contiguous."""
        b = self.b
        g = self.gms[node.gm]
        d = self.tensor_dtype(node.tensor)
        if d != g.dtype:
            raise LoweringError(f"kernel {self.k.name}: a DMA between GM {g.dtype} and UB {d}")
        size = ir.Constant(I64, d.itemsize)
        rows, cols = self.ev_i64(node.rows), self.ev_i64(node.cols)
        gs, us = self.ev_i64(node.gm_stride), self.ev_i64(node.ub_stride)
        gm0 = b.gep(self.gm_ptr[node.gm], [self.ev_i64(node.offset)], source_etype=mem_type(d))
        ub0 = self.ref_ptr(Ref(node.tensor, node.ub_off))[0]
        inward = isinstance(node, CopyIn)
        one = ir.Constant(I64, 1)
        whole = b.or_(b.icmp_unsigned("==", rows, one),
                      b.and_(b.icmp_unsigned("==", gs, cols), b.icmp_unsigned("==", us, cols)))
        empty = b.or_(b.icmp_unsigned("==", rows, ir.Constant(I64, 0)), b.icmp_unsigned("==", cols, ir.Constant(I64, 0)))
        with b.if_then(b.not_(empty)):
            with b.if_else(whole) as (then, other):
                with then:
                    n = b.mul(b.mul(rows, cols), size)
                    self.memcpy(ub0 if inward else gm0, gm0 if inward else ub0, n)
                with other:
                    def row(r, _):
                        gp = b.gep(gm0, [b.mul(r, gs)], source_etype=mem_type(d))
                        up = b.gep(ub0, [b.mul(r, us)], source_etype=mem_type(d))
                        self.memcpy(up if inward else gp, gp if inward else up, b.mul(cols, size))
                        return []
                    carried_loop(b, ir.Constant(I64, 0), rows, 1, [], row, "rows")

    def gather_row(self, node: GatherRow) -> None:
        b = self.b
        idx_gm, table = self.gms[node.index], self.gms[node.table]
        d = self.tensor_dtype(node.dst.tensor)
        if d != table.dtype:
            raise LoweringError(f"kernel {self.k.name}: a gathered {table.dtype} row into UB {d}")
        pos = self.ev_i64(node.pos)
        iv = b.load(b.gep(self.gm_ptr[node.index], [pos], source_etype=mem_type(idx_gm.dtype)),
                    typ=mem_type(idx_gm.dtype), align=idx_gm.dtype.itemsize)
        kv = b.sext(iv, I64) if idx_gm.dtype.kind == "int" else b.zext(iv, I64)
        bound = ir.Constant(I64, node.bound)
        kv = b.select(b.icmp_signed("<", kv, ir.Constant(I64, 0)), b.add(kv, bound), kv)
        inside = b.and_(b.icmp_signed(">=", kv, ir.Constant(I64, 0)), b.icmp_signed("<", kv, bound))
        dst = self.ref_ptr(node.dst)[0]
        nbytes = b.mul(self.ev_i64(node.cols), ir.Constant(I64, d.itemsize))
        with b.if_else(inside) as (then, other):
            with then:
                start = b.add(b.mul(kv, ir.Constant(I64, node.row_len)), self.ev_i64(node.col))
                self.memcpy(dst, b.gep(self.gm_ptr[node.table], [start], source_etype=mem_type(d)), nbytes)
            with other:
                f = self.kc.intrinsic("llvm.memset.p0.i64", VOID, [PTR, I8, I64, I1])
                b.call(f, [dst, ir.Constant(I8, 0), nbytes, ir.Constant(I1, 0)])

    # -- vector loops ---------------------------------------------------------------------------------------
    def vloop(self, n, emit) -> None:
        """emit(offset, mask) over n elements (i64): whole vectors of LANES, then one masked tail."""
        b = self.b
        lanes = ir.Constant(I64, LANES)
        end, _ = carried_loop(b, ir.Constant(I64, 0), n, lanes, [], lambda i, c: emit(i, None) or [], "vec",
                              whole_steps=True)
        with b.if_then(b.icmp_signed("<", end, n)):
            iota = ir.Constant(vec(I64, LANES), [ir.Constant(I64, i) for i in range(LANES)])
            em = self._splat_em()
            mask = b.icmp_unsigned("<", iota, em.splat_value(b.sub(n, end)))
            emit(end, mask)

    def vload(self, ptr, t, size: int, offset, mask):
        b = self.b
        vt = vec(t, LANES)
        p = b.gep(ptr, [offset], source_etype=t)
        if mask is None:
            return b.load(p, typ=vt, align=size)
        f = self.kc.intrinsic(f"llvm.masked.load.{vname(vt)}.p0", vt, [PTR, I32, vec(I1, LANES), vt])
        return b.call(f, [p, ir.Constant(I32, size), mask, ir.Constant(vt, None)])

    def vstore(self, value, ptr, t, size: int, offset, mask) -> None:
        b = self.b
        vt = vec(t, LANES)
        p = b.gep(ptr, [offset], source_etype=t)
        if mask is None:
            b.store(value, p, align=size)
            return
        f = self.kc.intrinsic(f"llvm.masked.store.{vname(vt)}.p0", VOID, [vt, PTR, I32, vec(I1, LANES)])
        b.call(f, [value, p, ir.Constant(I32, size), mask])

    def load_ref(self, at, offset, mask):
        """LANES elements of a resolved Ref in register form, and their dtype (None: a raw view)."""
        ptr, t, size, d = at
        v = self.vload(ptr, t, size, offset, mask)
        if d is None:
            return v, None
        return self._splat_em().to_reg(v, d), d

    def store_ref(self, at, value, offset, mask) -> None:
        ptr, t, size, d = at
        if d is not None:
            value = self._splat_em().to_mem(value, d)
        self.vstore(value, ptr, t, size, offset, mask)

    def vconvert(self, v, src, dst, mode=None):
        if src is None or dst is None or src == dst:
            return v
        return self._splat_em().convert(v, src, dst, mode)

    def dup(self, node: Dup) -> None:
        at = self.ref_ptr(node.dst)
        d = at[3]
        if d is None:
            raise LoweringError(f"kernel {self.k.name}: Duplicate into a {node.dst.view} view")
        em = self._splat_em()
        if isinstance(node.value, (float, bool)):   # numpy converts the Python number itself
            with np.errstate(all="ignore"):
                x = np.asarray(node.value).astype(d.np)
            value = em.splat(float(np.float32(x)) if d.is_float else int(x), reg_type(d))
        else:
            v, kind = self.ev(node.value)
            value = em.splat_value(self.convert(v, kind, d.np))
        self.vloop(self.ev_i64(node.count), lambda off, mask: self.store_ref(at, value, off, mask))

    # -- Vec: one vector API call -------------------------------------------------------------------------
    def np_max(self, x, y, kind: str):
        """numpy's maximum / minimum: x when x > y (x < y) or x is NaN, else y (y on a tie)."""
        b = self.b
        if x.type.element in (F32,):
            keep = b.or_(b.fcmp_ordered(">" if kind == "max" else "<", x, y), b.fcmp_unordered("uno", x, x))
        else:
            keep = b.icmp_signed(">" if kind == "max" else "<", x, y)
        return b.select(keep, x, y)

    def vec_scalar(self, node: Vec, d: dt.DType):
        """Muls / Adds / Maxs / Mins: the scalar as the destination's dtype, in register form."""
        em = self._splat_em()
        s = node.scalar
        if isinstance(s, (float, bool)):
            with np.errstate(all="ignore"):
                x = np.asarray(s).astype(d.np)
            return em.splat(float(np.float32(x)) if d.is_float else int(x), reg_type(d))
        v, kind = self.ev(s)
        return em.splat_value(self.convert(v, kind, d.np))

    def vec_op(self, node: Vec) -> None:
        b = self.b
        api = node.api
        if api.startswith(("WholeReduce", "ReduceRepeat")):
            self.reduce(node)
            return
        if api == "Gather":
            self.gather(node)
            return
        n = self.ev_i64(node.count)
        dst = self.ref_ptr(node.dst)
        srcs = [self.ref_ptr(r) for r in node.srcs]
        dd = dst[3]

        def emit(off, mask):
            vals = [self.load_ref(s, off, mask) for s in srcs]
            (x, xd) = vals[0]
            if api == "Cast":
                r, rd = self.vconvert(x, xd, dd, node.mode), dd
            elif api in ("Muls", "Adds", "Maxs", "Mins"):
                s = self.vec_scalar(node, dd)
                rd = dd if xd is None else dt.to_dtype(np.result_type(xd.np, dd.np))
                x, s = self.vconvert(x, xd, rd), self.vconvert(s, dd, rd)
                if api in ("Maxs", "Mins"):
                    r = self.np_max(x, s, api[:3].lower())
                else:
                    r = self.arith("*" if api == "Muls" else "+", x, s, rd)
            elif api == "Exp":
                r, rd = self._splat_em().exp(x), xd
                if xd in (dt.float16, dt.bfloat16):
                    r = self._splat_em().round_to(r, xd)
            else:
                (y, yd) = vals[1]
                if api == "And":
                    r, rd = b.and_(x, y), xd
                else:
                    rd = xd if yd is None or xd is None else dt.to_dtype(np.result_type(xd.np, yd.np))
                    x, y = self.vconvert(x, xd, rd), self.vconvert(y, yd, rd)
                    if api in ("Max", "Min"):
                        r = self.np_max(x, y, api.lower())
                    else:
                        op = {"Add": "+", "Sub": "-", "Mul": "*", "Div": "/"}.get(api)
                        if op is None:
                            raise LoweringError(f"kernel {self.k.name}: vector API {api} is not lowered to LLVM")
                        r = self.arith(op, x, y, rd)
            self.store_ref(dst, self.vconvert(r, rd, dd), off, mask)
        self.vloop(n, emit)

    def arith(self, op: str, x, y, d: dt.DType):
        """x op y in dtype d (numpy: a 16-bit float computed in float32 and rounded once)."""
        b = self.b
        if d.is_float:
            r = {"+": b.fadd, "-": b.fsub, "*": b.fmul, "/": b.fdiv}[op](x, y)
            return r if d == dt.float32 else self._splat_em().round_to(r, d)
        if op == "/":
            raise LoweringError(f"kernel {self.k.name}: integer Div")
        return {"+": b.add, "-": b.sub, "*": b.mul}[op](x, y)

    def reduce(self, node: Vec) -> None:
        """dst[0] = sum / max / min of n elements in numpy's order (np.sum: 0 + the pairwise sum
        with 8 accumulators over blocks of at most 128; max / min: a left fold)."""
        b = self.b
        kind = node.api.removeprefix("WholeReduce").removeprefix("ReduceRepeat").lower()
        src = self.ref_ptr(node.srcs[0])
        dst = self.ref_ptr(node.dst)
        sd, dd = src[3], dst[3]
        if sd is None or dd is None or not sd.is_float:
            raise LoweringError(f"kernel {self.k.name}: {node.api} of {sd}")
        n = self.ev_i64(node.count)
        fn = self._reduce_fn(kind, sd)
        r = b.call(fn, [src[0], n])
        # np.sum of a float16 array accumulates in float32 and rounds the result once
        if sd != dt.float32:
            r = self.round_scalar(r, sd)
        self.store_scalar(self.convert(r, sd.np, dd.np), dst[0], dd)

    def _reduce_fn(self, kind: str, d: dt.DType) -> ir.Function:
        """float f(ptr p, i64 n): numpy's reduction of n elements of dtype d, in float32."""
        name = f"reduce.{kind}.{d.name}"
        existing = self.module.globals.get(name)
        if existing is not None:
            return existing
        fn = ir.Function(self.module, ir.FunctionType(F32, [PTR, I64]), name)
        fn.linkage = "internal"
        saved = self.b
        b = self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        p, n = fn.args

        def elem(i):
            return self.load_scalar(b.gep(p, [i], source_etype=mem_type(d)), d)
        zero64, one64 = ir.Constant(I64, 0), ir.Constant(I64, 1)
        if kind != "sum":
            def fold(i, acc):
                x = elem(i)
                keep = b.or_(b.fcmp_ordered(">" if kind == "max" else "<", acc[0], x),
                             b.fcmp_unordered("uno", acc[0], acc[0]))
                return [b.select(keep, acc[0], x)]
            first = elem(zero64)
            _, (acc,) = carried_loop(b, one64, n, 1, [first], fold, "fold")
            b.ret(acc)
        else:
            b.ret(b.fadd(ir.Constant(F32, 0.0), b.call(self._pairwise_fn(d), [p, n])))
        self.b = saved
        return fn

    def _pairwise_fn(self, d: dt.DType) -> ir.Function:
        """numpy's pairwise_sum: n < 8 a plain sum, n <= 128 eight accumulators, else halves."""
        name = f"pairwise.{d.name}"
        existing = self.module.globals.get(name)
        if existing is not None:
            return existing
        fn = ir.Function(self.module, ir.FunctionType(F32, [PTR, I64]), name)
        fn.linkage = "internal"
        saved = self.b
        b = self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        p, n = fn.args

        def elem(i):
            return self.load_scalar(b.gep(p, [i], source_etype=mem_type(d)), d)
        c = lambda v: ir.Constant(I64, v)   # noqa: E731
        small = fn.append_basic_block("small")
        not_small = fn.append_basic_block("not_small")
        block = fn.append_basic_block("block")
        split = fn.append_basic_block("split")
        b.cbranch(b.icmp_signed("<", n, c(8)), small, not_small)
        b.position_at_end(small)
        _, (acc,) = carried_loop(b, c(0), n, 1, [ir.Constant(F32, -0.0)],
                                 lambda i, a: [b.fadd(a[0], elem(i))], "small")
        b.ret(acc)
        b.position_at_end(not_small)
        b.cbranch(b.icmp_signed("<=", n, c(128)), block, split)
        b.position_at_end(block)
        init = [elem(c(j)) for j in range(8)]
        body_end = b.sub(n, b.srem(n, c(8)))

        def eight(i, r):
            return [b.fadd(r[j], elem(b.add(i, c(j)))) for j in range(8)]
        i, r = carried_loop(b, c(8), body_end, 8, init, eight, "eight")
        res = b.fadd(b.fadd(b.fadd(r[0], r[1]), b.fadd(r[2], r[3])), b.fadd(b.fadd(r[4], r[5]), b.fadd(r[6], r[7])))
        _, (res,) = carried_loop(b, i, n, 1, [res], lambda j, a: [b.fadd(a[0], elem(j))], "rest")
        b.ret(res)
        b.position_at_end(split)
        n2 = b.sdiv(n, c(2))
        n2 = b.sub(n2, b.srem(n2, c(8)))
        lo = b.call(fn, [p, n2])
        hi = b.call(fn, [b.gep(p, [n2], source_etype=mem_type(d)), b.sub(n, n2)])
        b.ret(b.fadd(lo, hi))
        self.b = saved
        return fn

    def gather(self, node: Vec) -> None:
        """dst[i] = src[offset[i] / element bytes] (byte offsets into the source tensor)."""
        b = self.b
        dst, src, offs = self.ref_ptr(node.dst), self.ref_ptr(node.srcs[0]), self.ref_ptr(node.srcs[1])
        ptr_t, size = dst[1], dst[2]

        def one(i, _):
            o = b.load(b.gep(offs[0], [i], source_etype=offs[1]), typ=offs[1], align=offs[2])
            o = b.zext(o, I64) if o.type.width < 64 else o
            v = b.load(b.gep(src[0], [o], source_etype=I8), typ=ptr_t, align=size)
            b.store(v, b.gep(dst[0], [i], source_etype=ptr_t), align=size)
            return []
        carried_loop(b, ir.Constant(I64, 0), self.ev_i64(node.count), 1, [], one, "gather")

    # -- Step: one graph op's tile stmts -------------------------------------------------------------------
    def step(self, node: Step) -> None:
        b = self.b
        n = self.ev_i64(node.count if node.count is not None else "n")
        o = self.ev_i64(node.offset)
        refs = dict(node.names)
        at = {}
        for slot, r in refs.items():
            at[slot] = self.ref_ptr(r, o)
        # a slot's buffer: its queue's (a tracked queue's buffer is the tensor's); two slots at the
        # same place of one buffer are one value (in-place reuse)
        buffer = {slot: (self.tensor_queue[r.tensor], r.tensor if r.tensor in self.t_index else "")
                  for slot, r in refs.items()}
        key = {slot: buffer[slot] + (repr(r.offset), r.view) for slot, r in refs.items()}
        # fused only when every buffer the step writes is addressed at one place: lanes never meet
        places: dict = {}
        for slot in refs:
            places.setdefault(buffer[slot], set()).add(key[slot])
        fused = all(len(places[buffer[st.dst]]) == 1 for st in node.stmts)
        var_types = {var: _kind_dtype(self.types[member]) for var, member in node.scalars}
        if any(v is None for v in var_types.values()):
            raise LoweringError(f"kernel {self.k.name}: a step scalar is not a typed scalar")
        var_regs = {var: self.read(member)[0] for var, member in node.scalars}

        def run(stmts, off, mask):
            em = StmtEmitter(self.kc, b, var_types)
            var_values = {v: em.splat_value(x) for v, x in var_regs.items()}
            values, dirty = {}, []
            for st in stmts:
                srcs = []
                want = self._operand_dtypes(st)
                for s, w in zip(st.srcs, want):
                    if key[s] not in values:
                        values[key[s]] = self.load_ref(at[s], off, mask)
                    v, d = values[key[s]]
                    srcs.append(self.vconvert(v, d, w))
                scalar = em.scalar_operand(st, var_values) if st.scalar is not None and st.op != "cast" else None
                r = em.stmt(st, srcs, scalar)
                rd = dt.float16 if st.op == "cmp" else st.dtype
                md = at[st.dst][3]
                values[key[st.dst]] = (self.vconvert(r, rd, md), md)
                if st.dst not in dirty:
                    dirty.append(st.dst)
            for s in dirty:
                self.store_ref(at[s], values[key[s]][0], off, mask)

        if fused:
            self.vloop(n, lambda off, mask: run(node.stmts, off, mask))
        else:
            for st in node.stmts:
                self.vloop(n, lambda off, mask, st=st: run((st,), off, mask))

    @staticmethod
    def _operand_dtypes(st) -> list:
        if st.op == "cast":
            return [st.src_dtype]
        if st.op == "select":
            return [dt.float16, st.dtype, st.dtype]
        return [st.dtype] * len(st.srcs)

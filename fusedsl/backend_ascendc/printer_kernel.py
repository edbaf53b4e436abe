"""Ascend C for a kernel in the loop-level tile IR (tile/kernel.py `TileKernel`).

One printer for every kind (each lowers to a TileKernel).  It walks the records and prints the
canonical form:

    struct <Name>TilingData     the kernel's fields, word by word
    class Kernel<Name>          Init (the tiling, the members computed from it, the GM
                                tensors, InitBuffer per queue), Process (the core's
                                contiguous tiles [first, last), each through the stages in
                                order), one private method per stage, the objects
    extern "C" <name>(...)      the usual entry (frame.KernelFrame)
    <Name>Tiling(...)           static shapes: the words fusedsl computed; an elementwise
                                kernel (sizes may be symbolic): host_vector.py's search

Each node prints as one Ascend C construct: CopyIn / CopyOut the strided row copies of the
shared helpers (CopyRowsIn / CopyRowsOut: DataCopyPad where the chip has it), UbCopy a UB->UB
DataCopy, Move a GetValue/SetValue pair, Barrier PipeBarrier<PIPE_ALL>, the queue nodes the
TQue protocol.  Expressions are uint32 arithmetic; `min` is MinU32.

A kernel with Matmul objects (cube, conv, attention) is a MIX launch: its class's Process runs
the `process` body after REGIST_MATMUL_OBJ.  A kernel of parts (several matmuls of the same A)
prints each part's class as it would be alone and one entry that copies a struct of one
TCubeTiling per part, initialises every part, registers all their Matmul objects at once
(REGIST_MATMUL_OBJ takes up to four, before any InitBuffer) and runs the parts in turn, the
TPipe reset between them (Reset) so each has the whole UB as it would alone.
"""
from __future__ import annotations

import itertools
import weakref

from .. import dtypes as dt
from ..lower.kinds import kernel_ir, kernel_words
from ..tile.kernel import (BINARY, VIEWS, Alloc, Barrier, Call, CopyIn, CopyNz, CopyOut, Decl, DeQue, Dup, EnQue, For,
                           Free, GatherRow, If, Let, MmEnd, MmGetC, MmIterate, MmSet, MmTail, Move, Put, Ref, Reset,
                           Return, Scalar, Set, Step, Sync, TileKernel, UbCopy, Var, Vec, memo_text)
from ..tile.prims import PRIMS
from . import cnames
from .emit import camel, gm_scalar_load, literal, rename_stmt
from .frame import KernelFrame
from .host_cube import cube_host_tiling, group_host_tiling, matmuls_host_tiling
from .host_row import row_host_tiling
from .host_vector import vector_host_tiling

# the host tiling of a kind whose sizes may be symbolic (its words are computed at launch);
# every other kernel carries its words and the host tiling copies them
HOST_TILING = {"vector": vector_host_tiling, "row": row_host_tiling}


def _memo_c(u: bool):
    """An expression's text as `_c(e, u)` prints it, the expression tuples' text kept
    (tile/kernel.memo_text), an int as its literal inline (a conv kernel's first print had 32 ints
    per kernel, each two calls deep)."""
    return memo_text(lambda e: _c(e, u)[0], _int_literal)


def _int_literal(e: int) -> str:
    if type(e) is not int:   # (an int subclass prints as its own format says)
        return f"{e}u" if e >= 0 else f"({e})"
    text = _INT_TEXT.get(e)
    if text is None:
        if len(_INT_TEXT) >= _INT_TEXT_MAX:
            _INT_TEXT.clear()
        text = _INT_TEXT[e] = f"{e}u" if e >= 0 else f"({e})"
    return text


# an int's literal per value (_int_literal): int -> str conversion was 2.6 % of a conv kernel's first
# print, and a kernel's ints are few and repeated (1u, 8u, 16u, its shape's sizes).  Exact ints only,
# so a key equal to a bool or an int subclass never takes another's text; emptied when full
_INT_TEXT: dict = {}
_INT_TEXT_MAX = 4096


# c_expr's text per `signed_fields` (_memo_c); a printer's `_x` is one of them (no bound method,
# no second call per expression)
_EXPR = (_memo_c(False), _memo_c(True))


# The text of KernelPrinter.kernel() (class and entry) per kernel printed: a program compiled again
# in the process prints the same TileKernel object again (the kernel passes' memo,
# tile/kernel_passes._PASSED, hands the kept kernel to every compile of it, and a TileKernel is not
# changed once built), and printing its ~40-60 nodes and ~100 expressions was most of its text's
# time (a conv kernel: 0.14 of 0.19 ms).  The key is the kernel object -- its id, and a weak
# reference to it checked with `is` at a hit (an id is reused only once its object is gone, and
# then the reference is dead and the entry dropped) -- and everything else kernel() reads: the
# printer's class (a subclass may print otherwise), the kernel's name (its class and entry), the
# tiling struct's name, whether runtime scalars follow a TCubeTiling (the entry's argument), the
# target's arch (Select mode 0 on 910A) and its kernel-type macro, and whether the entry is
# printed.  The rest -- queues, GM names, members, stages, Process, Matmul objects, the signedness
# of the fields -- is the kernel's, but for the primitives its steps' statements print by
# (tile/prims.PRIMS: a primitive registered again prints otherwise), which the entry keeps and a hit
# checks.  Not with debug (the source lines are read from the user's files).  At most
# KERNEL_TEXT_MAX entries, emptied when full.  (Weak: holding the kernels, the memo freed 256 of
# them at a time while a 573-kernel model printed -- 7 % of its text's time.  A plain dict, not a
# lru.Lru: a reference's callback runs wherever its kernel is freed, inside that lock too; each use
# here is one dict call, atomic under the GIL, and emptying needs no order of use.)
KERNEL_TEXT: dict = {}
KERNEL_TEXT_MAX = 256

# A stage's text (its body's lines) per Stage object and printing context (KernelPrinter._stage_body):
# a stage the lowering shares between kernels -- a conv kernel's BuildPanel, one object per x name,
# dtype and target (lower/conv_tile.build_panel) -- is walked twice per process, not once per kernel
# (its ~40 nodes were a fifth of the conv kernels' first prints).  The key is the object's id and
# the context's number (_stage_context: all a stage's text reads besides its nodes); the entry holds
# the Stage (its id is not reused while the entry lives; a Stage is not changed once built) and the
# primitives its steps printed by, checked at a hit as KERNEL_TEXT's.  Only a stage printed before
# is kept (_STAGE_SEEN: the ids of those printed once), so the stages of one kernel -- most of them
# -- cost a dict lookup and hold no text.  Each at most its _MAX entries, emptied when full.
_STAGE_TEXT: dict = {}
_STAGE_TEXT_MAX = 256
_STAGE_SEEN: dict = {}       # id of a Stage printed once -> None (its second print keeps its text)
_STAGE_SEEN_MAX = 4096
_CONTEXTS: dict = {}         # _stage_context's context -> (its number, its queues' dtypes)
_CONTEXTS_MAX = 256
_NUMBERS = itertools.count()


def c_expr(e, signed_fields: bool = False) -> str:
    """An expression in C++ (tiling fields are members of `tiling`), parenthesised only where
    C's precedence needs it."""
    return _EXPR[1 if signed_fields else 0](e)


def _c(e, u: bool = False) -> tuple[str, int]:
    """(text, precedence): 9 for a primary, BINARY's for an operator."""
    kind = type(e)   # the common leaves first (exact types: a bool is no expression)
    if kind is int:
        return _int_literal(e), 9
    if kind is str and not e.startswith("t."):
        return e, 9
    if kind is not tuple:
        if isinstance(e, bool):
            raise TypeError("bool is not an expression")
        if isinstance(e, int):
            return _int_literal(e), 9
        if isinstance(e, float):   # a float32 literal of a typed expression
            text = literal(e, dt.float32)
            return (f"({text})" if text.startswith("-") else text), 9
        if isinstance(e, str):
            if e.startswith("t."):   # TCubeTiling's fields are int32: the IR's arithmetic is uint32
                return (f"uint32_t(tiling.{e[2:]})" if u else "tiling." + e[2:]), 9
            return e, 9
    op = e[0]
    if op in BINARY:
        (a, pa), (b, pb) = _c(e[1], u), _c(e[2], u)
        prec = BINARY[op]
        a = f"({a})" if pa < prec else a
        b = f"({b})" if pb <= prec else b
        return f"{a} {op} {b}", prec
    if op == "[]":
        return f"{_c(e[1], u)[0]}[{_c(e[2], u)[0]}]", 9
    if op == "min":
        return f"MinU32({_c(e[1], u)[0]}, {_c(e[2], u)[0]})", 9
    if op == "get":
        return f"{e[1]}.GetValue({_c(e[2], u)[0]})", 9
    if op == "load":
        return f"gm_{cnames.param(e[1])}.GetValue({_c(e[2], u)[0] if len(e) > 2 else '0'})", 9
    if op == "cast":
        return f"static_cast<{e[1].ascendc}>({_c(e[2], u)[0]})", 9
    if op == "neg":
        a, pa = _c(e[1], u)
        return f"-{a if pa == 9 else f'({a})'}", 8
    if op == "sel":
        return f"({_c(e[1], u)[0]} ? {_c(e[2], u)[0]} : {_c(e[3], u)[0]})", 9
    if op in ("fmax", "fmin"):   # v when it is above (below) r, else r: the scalar unit's compare
        r, v = _c(e[1], u)[0], _c(e[2], u)[0]
        return f"({v} {'>' if op == 'fmax' else '<'} {r} ? {v} : {r})", 9
    if op == "pad":
        n = _c(e[2], u)[0]
        a, pa = _c(e[1], u)
        a = f"({a})" if pa < BINARY["+"] else a
        return f"({a} + {n} - 1u) / {n} * {n}", BINARY["*"]
    raise ValueError(f"not an expression: {e!r}")


def _bytes(q, u: bool = False) -> str:
    """A queue buffer's bytes: its elements times the element size (the elements' text from the
    memo, its precedence as `_c` gives it: an operator's, a negation's 8, a pad's a product's,
    else 9)."""
    e = q.elems
    text = _EXPR[1 if u else 0](e)
    op = e[0] if type(e) is tuple else None
    prec = BINARY[op] if op in BINARY else 8 if op == "neg" else BINARY["*"] if op == "pad" else 9
    return f"{text if prec >= BINARY['*'] else f'({text})'} * sizeof({q.dtype.ascendc})"


class NodePrinting:
    """Prints tile-kernel nodes as Ascend C statements: KernelPrinter's stages, and a matmul's
    row epilogue (lower/cube_tile.py).  The host class (a KernelFrame) has `queue` (queue name
    -> Queue), `gm_name` (GM tensor -> its C++ name), `scopes` (per open block: tensor -> its
    queue) and `_stmt` (a vector tile stmt's lines).

    Each node kind has its own method (`_PRINT`, keyed by the node's class: one dict lookup per
    node where a chain of isinstance tests cost up to 30), which appends its lines to the one
    list the walk fills (`_nodes`, `_body`), so no node builds and copies a list of its own."""

    signed_fields = False   # the tiling's fields are int32 (TCubeTiling): read them as uint32
    _x = staticmethod(_EXPR[0])   # an expression's text (c_expr); _EXPR[1] where signed_fields

    def _bind(self, tensor: str, queue: str) -> bool:
        """Record `tensor` as a variable of `queue`'s type; True when an enclosing block declared it."""
        for sc in self.scopes:
            if tensor in sc:
                return True
        self.scopes[-1][tensor] = queue
        return False

    def _ty(self, queue: str) -> str:
        return self.queue[queue].dtype.ascendc

    def _dtype(self, tensor: str) -> dt.DType:
        for sc in reversed(self.scopes):   # (a loop: a generator per call was 1.6 % of a first print)
            if tensor in sc:
                return self.queue[sc[tensor]].dtype
        raise KeyError(tensor)   # (verify_kernel: every tensor is bound before it is used)

    def _ref(self, r: Ref) -> str:
        text = r.tensor if r.offset == 0 else f"{r.tensor}[{self._x(r.offset)}]"
        return text if r.view is None else f"{text}.ReinterpretCast<{VIEWS[r.view][0]}>()"

    def _body(self, nodes, indent: int, out: list) -> None:
        """A nested block's nodes, in a scope of their own (tensors declared there end with it)."""
        self.scopes.append({})
        self._nodes(nodes, indent, out)
        self.scopes.pop()

    def _nodes(self, nodes, indent: int, out: list) -> None:
        """Each node of a block by its kind's method (the table looked up here, not through a call
        per node: a cube kernel prints ~40 nodes)."""
        pad, table = " " * indent, self._PRINT
        for node in nodes:
            fn = table.get(type(node))
            if fn is None:   # a subclass of a node kind
                fn = next((f for cls, f in table.items() if isinstance(node, cls)), None)
                if fn is None:
                    raise TypeError(f"not a tile kernel node: {node!r}")
            fn(self, node, pad, indent, out)

    # ---- one method per node kind: (node, pad, indent, out) -------------------------------------
    def _let(self, node, pad, indent, out):
        out.append(f"{pad}const uint32_t {node.var} = {self._x(node.expr)};")

    def _var(self, node, pad, indent, out):
        out.append(f"{pad}uint32_t {node.var} = {self._x(node.expr)};")

    def _set(self, node, pad, indent, out):
        out.append(f"{pad}{node.var} {node.op} {self._x(node.expr)};")

    def _for(self, node, pad, indent, out):
        e = self._x
        step = f"++{node.var}" if node.step == 1 else f"{node.var} += {e(node.step)}"
        out.append(f"{pad}for (uint32_t {node.var} = {e(node.end)}; {node.var}-- > {e(node.start)};) {{"
                   if node.down else
                   f"{pad}for (uint32_t {node.var} = {e(node.start)}; {node.var} < {e(node.end)}; {step}) {{")
        self._body(node.body, indent + 4, out)
        out.append(pad + "}")

    def _if(self, node, pad, indent, out):
        out.append(f"{pad}if ({self._x(node.cond)}) {{")
        self._body(node.then, indent + 4, out)
        if node.orelse:
            out.append(pad + "} else {")
            self._body(node.orelse, indent + 4, out)
        out.append(pad + "}")

    def _alloc(self, node, pad, indent, out):
        q = self.queue[node.queue]
        ty = q.dtype.ascendc
        get = f"Get<{ty}>()" if q.position in ("VECCALC", "TBUF_VECOUT") else f"AllocTensor<{ty}>()"
        decl = "" if self._bind(node.tensor, node.queue) else f"AscendC::LocalTensor<{ty}> "
        out.append(f"{pad}{decl}{node.tensor} = {node.queue}.{get};")

    def _deque(self, node, pad, indent, out):
        ty = self._ty(node.queue)
        decl = "" if self._bind(node.tensor, node.queue) else f"AscendC::LocalTensor<{ty}> "
        out.append(f"{pad}{decl}{node.tensor} = {node.queue}.DeQue<{ty}>();")

    def _decl(self, node, pad, indent, out):
        self._bind(node.tensor, node.queue)
        out.append(f"{pad}AscendC::LocalTensor<{self._ty(node.queue)}> {node.tensor};")

    def _dup(self, node, pad, indent, out):
        d = self._dtype(node.dst.tensor)
        if isinstance(node.value, tuple) and node.value[0] == "load":   # one GM value (FillRow: any width)
            _, gm, index = node.value
            out.append(f"{pad}FillRow({self._ref(node.dst)}, static_cast<{d.ascendc}>(gm_{self.gm_name[gm]}"
                       f".GetValue({self._x(index)})), {self._x(node.count)});")
            return
        value = (literal(node.value, d) if isinstance(node.value, (float, bool, int))
                 else f"static_cast<{d.ascendc}>({self._x(node.value)})")
        out.append(f"{pad}AscendC::Duplicate({self._ref(node.dst)}, {value}, {self._x(node.count)});")
        out.append(f"{pad}AscendC::PipeBarrier<PIPE_V>();")

    def _vec(self, node, pad, indent, out):
        dst, srcs, n = self._ref(node.dst), [self._ref(r) for r in node.srcs], self._x(node.count)
        if node.api == "Cast":
            call = f"AscendC::Cast({dst}, {srcs[0]}, AscendC::RoundMode::{node.mode}, {n});"
        elif node.api == "Gather":   # dst[i] = the element at byte offset srcs[1][i] of srcs[0]
            call = f"AscendC::Gather({dst}, {srcs[0]}, {srcs[1]}, 0u, {n});"
        elif node.api.startswith("WholeReduce"):   # one repeat of `n` lanes to one value
            out.append(f"{pad}AscendC::{node.api}<float>({dst}, {srcs[0]}, {n}, 1, 1, 1, 8);")
            return
        elif node.api.startswith("ReduceRepeat"):   # the CANN >= 9.1 spelling (ASCENDC.md 2.6)
            kind = node.api[len("ReduceRepeat"):].upper()
            out.append(f"{pad}AscendC::ReduceRepeat<AscendC::ReduceType::{kind}, float, float>({dst}, {srcs[0]}, "
                       f"{n}, 1, 1, 1, 8);")
            return
        elif node.scalar is not None:
            d = self._dtype(node.dst.tensor)
            value = (literal(node.scalar, d) if isinstance(node.scalar, (float, bool, int))
                     else f"static_cast<{d.ascendc}>({self._x(node.scalar)})")
            call = f"AscendC::{node.api}({dst}, {srcs[0]}, {value}, {n});"
        else:
            call = f"AscendC::{node.api}({dst}, {', '.join(srcs)}, {n});"
        out.append(pad + call)
        out.append(f"{pad}AscendC::PipeBarrier<PIPE_V>();")

    def _step(self, node, pad, indent, out):
        names = {slot: self._ref(r) for slot, r in node.names}
        scalars = dict(node.scalars)
        count = "" if node.count is None else f", n = {self._x(node.count)}"
        out.append(f"{pad}{{  // {cnames.comment(node.label)}")
        out.append(f"{pad}    const uint32_t o = {self._x(node.offset)}{count};")
        for r, value, count in node.prefill:   # lanes Compare may read past the count
            out.append(f"{pad}    AscendC::Duplicate({self._ref(r)}, {literal(value, self._dtype(r.tensor))}, "
                       f"{self._x(count)});")
            out.append(f"{pad}    AscendC::PipeBarrier<PIPE_V>();")
        stmts = node.stmts
        self.prims_read.update([st.op for st in stmts])
        if not _renames(stmts, names):   # every slot is its own tensor (elementwise kernels): as they are
            for st in stmts:
                out += self._stmt(st, indent + 4)
        else:
            for st in stmts:
                out += self._stmt(rename_stmt(st, names, scalars), indent + 4)
        out.append(pad + "}")

    def _enque(self, node, pad, indent, out):
        out.append(f"{pad}{node.queue}.EnQue({node.tensor});")

    def _free(self, node, pad, indent, out):
        out.append(f"{pad}{node.queue}.FreeTensor({node.tensor});")

    def _copy_in(self, node, pad, indent, out):
        e = self._x
        out.append(f"{pad}CopyRowsIn({self._ref(Ref(node.tensor, node.ub_off))}, gm_{self.gm_name[node.gm]}"
                   f"[{e(node.offset)}], {e(node.rows)}, {e(node.cols)}, {e(node.gm_stride)}, {e(node.ub_stride)});")

    def _gather_row(self, node, pad, indent, out):   # an index outside [-bound, bound) is not read: its row is 0
        e = self._x
        d = self._dtype(node.dst.tensor)
        dst, n = self._ref(node.dst), e(node.cols)
        out += [f"{pad}{{",
                f"{pad}    int64_t k = static_cast<int64_t>(gm_{self.gm_name[node.index]}.GetValue({e(node.pos)}));",
                f"{pad}    if (k < 0) k += {node.bound};",
                f"{pad}    if (k < 0 || k >= {node.bound}) {{",
                f"{pad}        FillRow({dst}, static_cast<{d.ascendc}>(0), {n});",
                f"{pad}    }} else {{",
                f"{pad}        CopyRowsIn({dst}, gm_{self.gm_name[node.table]}[static_cast<uint32_t>(k) * "
                f"{node.row_len}u + {e(node.col)}], 1, {n}, {n}, {n});",
                f"{pad}    }}",
                f"{pad}}}"]

    def _copy_out(self, node, pad, indent, out):
        e = self._x
        out.append(f"{pad}CopyRowsOut(gm_{self.gm_name[node.gm]}[{e(node.offset)}], "
                   f"{self._ref(Ref(node.tensor, node.ub_off))}, {e(node.rows)}, {e(node.cols)}, "
                   f"{e(node.gm_stride)}, {e(node.ub_stride)});")

    def _ub_copy(self, node, pad, indent, out):
        e = self._x
        dst = node.dst if node.dst_off == 0 else f"{node.dst}[{e(node.dst_off)}]"
        src = node.src if node.src_off == 0 else f"{node.src}[{e(node.src_off)}]"
        out.append(f"{pad}AscendC::DataCopy({dst}, {src}, {e(node.count)});")

    def _move(self, node, pad, indent, out):
        out.append(f"{pad}{node.dst}.SetValue({self._x(node.dst_index)}, "
                   f"{node.src}.GetValue({self._x(node.src_index)}));")

    def _barrier(self, node, pad, indent, out):
        why = f"   // {cnames.comment(node.why)}" if node.why else ""
        out.append(f"{pad}AscendC::PipeBarrier<PIPE_ALL>();{why}")

    def _sync(self, node, pad, indent, out):
        out.append(f"{pad}AscendC::SetFlag<AscendC::HardEvent::{node.event}>(EVENT_ID0);")
        out.append(f"{pad}AscendC::WaitFlag<AscendC::HardEvent::{node.event}>(EVENT_ID0);")

    def _scalar(self, node, pad, indent, out):
        out.append(f"{pad}const {node.dtype.ascendc} {node.var} = {self._x(node.expr)};")

    def _put(self, node, pad, indent, out):
        ty = self._dtype(node.tensor).ascendc
        out.append(f"{pad}{node.tensor}.SetValue({self._x(node.index)}, static_cast<{ty}>({self._x(node.expr)}));")

    def _call(self, node, pad, indent, out):
        out.append(f"{pad}{node.stage}({'' if node.arg is None else self._x(node.arg)});")

    def _return(self, node, pad, indent, out):
        out.append(f"{pad}return;")

    def _mm_set(self, node, pad, indent, out):
        mm = self.matmul[node.mm]
        op = mm.a if node.which == "A" else mm.b
        if node.src in self.gm:
            out.append(f"{pad}{node.mm}.SetTensor{node.which}(gm_{self.gm_name[node.src]}[{self._x(node.offset)}]"
                       f"{', true' if op.transpose else ''});")
        else:
            out.append(f"{pad}{node.mm}.SetTensor{node.which}({node.src}{', true' if op.transpose else ''});")

    def _mm_tail(self, node, pad, indent, out):
        k = "" if node.k is None else f", {self._x(node.k)}"
        out.append(f"{pad}{node.mm}.SetTail({self._x(node.m)}, {self._x(node.n)}{k});")

    def _mm_iterate(self, node, pad, indent, out):
        out.append(f"{pad}while ({node.mm}.template Iterate<true>()) {{")
        self._body(node.body, indent + 4, out)
        out.append(pad + "}")

    def _mm_get_c(self, node, pad, indent, out):   # this tile alone, or (placed) each base block at its place
        out.append(f"{pad}{node.mm}.template GetTensorC<true>({node.tensor}, false, "
                   f"{'false' if node.placed else 'true'});")

    def _mm_end(self, node, pad, indent, out):
        out.append(f"{pad}{node.mm}.End();")

    def _copy_nz(self, node, pad, indent, out):   # ND rows into NZ column blocks of 32 bytes, rows rounded to 16
        e = self._x
        out += [f"{pad}{{",
                f"{pad}    AscendC::Nd2NzParams nd;",
                f"{pad}    nd.ndNum = 1;",
                f"{pad}    nd.nValue = {e(node.rows)};",
                f"{pad}    nd.dValue = {e(node.cols)};",
                f"{pad}    nd.srcNdMatrixStride = 0;",
                f"{pad}    nd.srcDValue = {e(node.gm_stride)};",
                f"{pad}    nd.dstNzC0Stride = ({e(node.rows)} + 15) / 16 * 16;",
                f"{pad}    nd.dstNzNStride = 1;",
                f"{pad}    nd.dstNzMatrixStride = 0;",
                f"{pad}    AscendC::DataCopy({node.tensor}, gm_{self.gm_name[node.gm]}[{e(node.offset)}], nd);",
                f"{pad}}}"]

    _PRINT = {Let: _let, Var: _var, Set: _set, For: _for, If: _if, Alloc: _alloc, DeQue: _deque, Decl: _decl,
              Dup: _dup, Vec: _vec, Step: _step, EnQue: _enque, Free: _free, CopyIn: _copy_in,
              GatherRow: _gather_row, CopyOut: _copy_out, UbCopy: _ub_copy, Move: _move, Barrier: _barrier,
              Sync: _sync, Scalar: _scalar, Put: _put, Call: _call, Return: _return, MmSet: _mm_set,
              MmTail: _mm_tail, MmIterate: _mm_iterate, MmGetC: _mm_get_c, MmEnd: _mm_end, CopyNz: _copy_nz}


class KernelPrinter(NodePrinting, KernelFrame):
    def __init__(self, sched, target, name: str, debug: bool | None = None, kernel: TileKernel | None = None):
        """`kernel`: the TileKernel to print (a part of a kernel of parts), else the schedule's."""
        super().__init__(sched, target, name, debug)
        self.symbols = list(getattr(sched, "symbols", []))   # host tiling's sizes[i], when symbolic
        self.k: TileKernel = kernel_ir(sched) if kernel is None else kernel
        self.queue = {q.name: q for q in self.k.queues}
        self.gm_name = {g.name: cnames.param(g.name) if g.role == "in" else f"y{g.index}" if g.role == "out" else g.name
                        for g in self.k.gms}
        self.gm = {g.name: g for g in self.k.gms}
        self.scopes: list[dict] = []     # tensor -> its queue, per open block (the walk's scopes)
        self._ctx = False                # _stage_context's, once computed
        self.prims_read: set = set()     # the ops of the steps' statements printed (KERNEL_TEXT's check)
        self.matmul = {mm.name: mm for mm in self.k.matmuls}
        self.parts: list[str] = []
        self.group: list[KernelPrinter] = []
        if self.k.parts:   # several matmuls of one A: each part's class as alone, one MIX entry
            self.WORD, self.MIX = "i", True
            self.tiling = f"{camel(name)}CubeGroupTiling"
            self.group = [KernelPrinter(ps, target, f"{name}_p{i}", debug, part)
                          for i, (ps, part) in enumerate(zip(sched.parts, self.k.parts))]
        if self.k.matmuls:   # a cube kernel: a MIX launch reading CANN's TCubeTiling (int32 fields)
            self.WORD, self.MIX, self.signed_fields = "i", True, True
            self._x = _EXPR[1]
            self.rt = self.runtime_scalars()   # (the op project reads them: project_op.py)
            # one TCubeTiling (with the runtime scalars after it: a struct holding it as `cube`), or a
            # struct of one TCubeTiling per Matmul object (Matmul.tiling names its member)
            self.parts = [mm.tiling for mm in self.k.matmuls if mm.tiling]
            self.tiling = (f"{camel(name)}CubeTiling" if self.rt else
                           f"{camel(name)}MatmulTilings" if self.parts else self.k.tiling_struct)

    def _gm_args(self) -> list[str]:
        return [self.gm_name[g.name] for g in self.k.gms if g.role == "in"] + \
               [self.gm_name[g.name] for g in self.k.gms if g.role == "out"]

    def tiling_header(self) -> str:
        if self.group:
            fields = "".join(f"    {self.k.tiling_struct} p{i};\n" for i in range(len(self.group)))
            return (f"// {self.name} reads one {self.k.tiling_struct} per matmul (CANN's kernel_tiling/kernel_tiling.h)\n"
                    f'#include "kernel_tiling/kernel_tiling.h"\nstruct {self.tiling} {{\n{fields}}};\n')
        if self.k.tiling_struct and self.parts:
            members = "".join(f"    {self.k.tiling_struct} {p};\n" for p in self.parts)
            return (f"// {self.name} reads a {self.k.tiling_struct} per Matmul object (CANN's kernel_tiling/kernel_tiling.h)\n"
                    f'#include "kernel_tiling/kernel_tiling.h"\nstruct {self.tiling} {{\n{members}}};\n')
        if self.k.tiling_struct:
            head = (f"// {self.name} reads a {self.k.tiling_struct} (CANN's kernel_tiling/kernel_tiling.h)\n"
                    '#include "kernel_tiling/kernel_tiling.h"\n')
            if not self.rt:
                return head
            fields = "".join(f"    {f.ctype} {f.name};   // runtime scalar\n" for f in self.k.fields
                             if f.ctype != "uint32_t")
            return (head + f"// ... and its runtime scalars after the {self.k.word_count} {self.k.tiling_struct} words\n"
                    f"struct {self.tiling} {{\n    {self.k.tiling_struct} cube;\n{fields}}};\n")
        lines = [f"// Tiling data of {self.name} (a {self.k.kind} kernel).", f"struct {self.tiling} {{"]
        lines += [f"    {f.ctype} {f.name}{f'[{f.length}]' if f.length else ''};" + (
            "   // runtime scalar" if f.ctype != "uint32_t" else "") for f in self.k.fields]
        return "\n".join(lines + ["};"]) + "\n"

    def scalar_field(self, param) -> str:
        return f"s{param.index}"   # the kernel's typed fields are named by parameter index

    def scalar_member(self, param) -> str:
        return f"v{param.index}"   # ... and the members holding their values

    def tiling_words(self, tiling) -> list[int]:
        return kernel_words(self.s, tiling)   # (the typed fields s<i> follow, in parameter order)

    def host_tiling(self) -> str:
        if self.group:
            return group_host_tiling(self.t, self.name, self.tiling, self.k)
        if self.parts:
            return matmuls_host_tiling(self.s, self.t, self.name, self.tiling, self.k)
        if self.k.matmuls:
            return cube_host_tiling(self.s, self.t, self.name, self.tiling, bool(self.rt))
        if not self.k.words and self.k.kind in HOST_TILING:
            return HOST_TILING[self.k.kind](self.s, self.t, self.name, self.tiling)
        return self.static_host_tiling(self.k.words, [
            f"// Host tiling for {self.name} on {self.t.name}: static shapes, so the tiling is constants",
            f"// computed by fusedsl for {self.t.vector_cores} vector cores and a UB budget of {self.s.ub_budget} bytes."])

    def heading(self) -> list[str]:
        if self.group:
            return [f"// ---- {self.name}: {len(self.group)} matmuls of the same A from {cnames.comment(self.s.fn.loc)} ----",
                    f"// {cnames.comment(self.k.note)}"]
        return [f"// ---- {self.name}: {cnames.comment(self.k.note)}, fused from {cnames.comment(self.s.fn.loc)} ----"]

    def kernel(self, entry: bool = True) -> str:
        """The kernel class and (with `entry`) its extern "C" entry; a kernel of parts prints its
        parts' classes (each without an entry) and one entry of its own.  Printed once per kernel
        object and printer inputs (KERNEL_TEXT)."""
        if self.group:
            return "\n".join([p.kernel(entry=False) for p in self.group] + [self._group_entry()])
        if self.debug:   # the user's source lines beside the statements: read from their files each time
            return self._kernel(entry)
        key = (id(self.k), type(self), self.name, self.tiling, bool(getattr(self, "rt", ())), self.t.arch,
               self.t.kernel_type_macro, entry)
        hit = KERNEL_TEXT.get(key)
        if hit is not None and hit[0]() is self.k and all(PRIMS.get(op) is p for op, p in hit[2]):
            return hit[1]
        self.prims_read = set()
        text = self._kernel(entry)
        if len(KERNEL_TEXT) >= KERNEL_TEXT_MAX:
            KERNEL_TEXT.clear()
        ref = weakref.ref(self.k, lambda _, key=key, memo=KERNEL_TEXT: memo.pop(key, None))
        KERNEL_TEXT[key] = (ref, text, tuple([(op, PRIMS.get(op)) for op in self.prims_read]))
        return text

    def _kernel(self, entry: bool) -> str:
        if not self.k.matmuls:
            return "\n".join([self._class(), self.entry(self._gm_args() + ["t"])])   # (one copy of the text)
        late = self._from_entry()
        text = self._cube_class(late)
        if not entry:
            return text
        setup = tuple([f"op.{m.name} = static_cast<{m.dtype.ascendc}>(t.{m.init[2:]});" for m in late])
        mms = [x for mm in self.k.matmuls for x in (f"op.{mm.name}", f"&op.tiling.{mm.tiling}" if mm.tiling else "&op.tiling")]
        return "\n".join([text, self.entry(self._gm_args() + ["workspace", "t.cube" if self.rt else "t"], setup, mms)])

    def _group_entry(self) -> str:
        """Init every part (its GM tensors as RunPart hands them over, the workspace and its
        TCubeTiling), register all their Matmul objects, then run the process body: each part's
        Process in turn, a TPipe reset between them."""
        inits, objs, runs = [], [], []
        for node in self.k.process:
            if isinstance(node, Reset):
                runs.append("    pipe.Reset();   // the next part plans the whole UB again")
                continue
            i, part = node.part, self.group[node.part]
            args = [self.gm_name[g] for g in node.gms] + ["workspace", f"t.p{i}"]
            inits += [f"    {part.cls} op{i};", f"    op{i}.Init({', '.join(args)});"]
            objs += [x for mm in part.k.matmuls for x in (f"op{i}.{mm.name}", f"&op{i}.tiling")]
            runs.append(f"    op{i}.Process(&pipe);")
        return "\n".join(self.entry_open(True) + inits + [self.register_matmuls(objs)] + runs + ["}", ""])

    def _from_entry(self) -> list:
        """The typed members a cube kernel's entry sets: its runtime scalars (Init takes the
        TCubeTiling alone, which the Matmul objects read)."""
        return [m for m in self.k.members if m.dtype is not None and isinstance(m.init, str) and m.init.startswith("t.")]

    def _cube_class(self, late: list) -> str:
        """A kernel with Matmul objects: Init takes the GM tensors, the workspace and the
        TCubeTiling (`late`: the members its entry sets, _from_entry); Process (after
        REGIST_MATMUL_OBJ) plans UB and runs the process body.  (Loops
        that append rather than comprehensions: each comprehension is a function made and called,
        a kernel's first print ran ~15 of them here.)"""
        k, gm_name = self.k, self.gm_name
        ins = [g for g in k.gms if g.role == "in"] + [g for g in k.gms if g.role == "out"]
        work = [g for g in k.gms if g.role == "work"]
        params = [f"GM_ADDR {gm_name[g.name]}" for g in ins]
        params.append("GM_ADDR workspace")
        L = ['#include "lib/matmul_intf.h"', *self.class_open(params, self.tiling if self.parts else k.tiling_struct)]
        add = L.append
        for g in ins:
            add(f"        gm_{gm_name[g.name]}.SetGlobalBuffer((__gm__ {g.dtype.ascendc}*){gm_name[g.name]});")
        for g in work:
            add(f"        // this core's {g.name}: its slice of the user workspace (after the Matmul API's system part)\n"
                f"        gm_{g.name}.SetGlobalBuffer(reinterpret_cast<__gm__ {g.dtype.ascendc}*>("
                f"AscendC::GetUserWorkspace(workspace) + AscendC::GetBlockIdx() * {g.index}u{f' + {g.offset}u' if g.offset else ''}), "
                f"{(g.elems or g.index // g.dtype.itemsize)}u);")
        for m in k.members:
            if m.init is not None and m not in late:
                add(f"        {m.name} = {self._member_init(m)};")
        L += _PROCESS_OPEN
        for q in k.queues:
            add(f"        pipe->InitBuffer({q.name}, {_bytes(q, True)});" if q.position in ("VECCALC", "TBUF_VECOUT") else
                f"        pipe->InitBuffer({q.name}, {q.depth}, {_bytes(q, True)});")
        for mm in k.matmuls:
            if mm.workspace:
                add(f"        {mm.name}.SetLocalWorkspace({mm.workspace}.Get<uint8_t>());   // C passes through UB")
        used = _names(k.process)
        for n, decl in _CORE_DECLS:
            if n in used:
                add(decl)
        self.scopes = [{}]
        self._nodes(k.process, 8, L)
        L += ["    }", ""]
        for mm in k.matmuls:
            types = [_matmul_type(o) for o in (mm.a, mm.b, mm.c)]
            types.append(f"AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, {mm.c.dtype.ascendc}>")
            add(f"    AscendC::Matmul<{types[0]},")
            for x in types[1:-1]:
                add(f"                    {x},")
            add(f"                    {types[-1]}> {mm.name};")
        add(f"    {self.tiling if self.parts else k.tiling_struct} tiling;")
        words = _typed_members(k, add)
        L += ["", "private:"]
        for st in k.stages:
            add(f"    __aicore__ inline void {st.name}({f'uint32_t {st.param}' if st.param else ''})")
            add("    {")
            self._stage_body(st, L)
            L += ["    }", ""]
        for q in k.queues:
            if q.position in ("VECCALC", "TBUF_VECOUT"):   # a TBuf (on VECOUT: a Matmul's A in UB)
                add(f"    AscendC::TBuf<AscendC::TPosition::{q.position.removeprefix('TBUF_')}> {q.name};")
            elif q.position == "TSCM":   # user-managed L1, filled from GM
                add(f"    AscendC::TSCM<AscendC::TPosition::GM, {q.depth}> {q.name};")
            else:
                add(f"    AscendC::TQue<AscendC::QuePosition::{q.position}, 1> {q.name};")
        for g in ins + work:
            add(f"    AscendC::GlobalTensor<{g.dtype.ascendc}> gm_{gm_name[g.name]};")
        if words:
            add("    uint32_t " + ", ".join(words) + ";")
        L += ["};", ""]
        return "\n".join(L)

    # ---- the class ----------------------------------------------------------------------------
    def _class(self) -> str:
        k, gm_name = self.k, self.gm_name
        ins = [g for g in k.gms if g.role == "in"] + [g for g in k.gms if g.role == "out"]
        L = [f"// {self.name}: {cnames.comment(k.note)}", *self.class_open([f"GM_ADDR {gm_name[g.name]}" for g in ins])]
        add = L.append   # (loops that append, as in _cube_class)
        for g in ins:
            add(f"        gm_{gm_name[g.name]}.SetGlobalBuffer((__gm__ {g.dtype.ascendc}*){gm_name[g.name]});")
        for m in k.members:
            if m.init is not None:
                add(f"        {m.name} = {self._member_init(m)};")
        for q in k.queues:
            add(f"        pipe.InitBuffer({q.name}, {_bytes(q)});" if q.position == "VECCALC" else
                f"        pipe.InitBuffer({q.name}, {q.depth}, {_bytes(q)});")
        L += ["    }", "", "    __aicore__ inline void Process()", "    {", *self.core_tiles()]
        once = [st for st in k.stages if st.once]
        if once:   # a prologue runs only on a core with tiles
            add("        if (first >= last) return;")
            for st in once:
                add(f"        {st.name}();")
        add("        for (uint32_t tile = first; tile < last; ++tile) {")
        for st in k.stages:
            if not st.once:
                add(f"            {st.name}({'tile' if st.param else ''});")
        L += ["        }", "    }", "", "private:"]
        for st in k.stages:
            add(f"    __aicore__ inline void {st.name}({f'uint32_t {st.param}' if st.param else ''})")
            add("    {")
            self._stage_body(st, L)
            add("    }")
        L += ["", "    AscendC::TPipe pipe;"]
        for q in k.queues:
            if q.position == "VECCALC":
                add(f"    AscendC::TBuf<AscendC::TPosition::VECCALC> {q.name};")
            else:
                add(f"    AscendC::TQue<AscendC::QuePosition::{q.position}, 1> {q.name};")
        for g in ins:
            add(f"    AscendC::GlobalTensor<{g.dtype.ascendc}> gm_{gm_name[g.name]};")
        add(f"    {self.tiling} tiling;")
        words = _typed_members(k, add)
        if words:
            add("    uint32_t " + ", ".join(words) + ";")
        L += ["};", ""]
        return "\n".join(L)

    def _stage_body(self, st, out: list) -> None:
        """A stage's body, in a scope of its own: from _STAGE_TEXT when this Stage object was printed
        before in the same context (a stage the lowering shares between kernels), else walked; kept
        from its second print on (its first is most stages' only one: they belong to one kernel)."""
        ctx = self._stage_context()
        keep = False
        if ctx is not None:
            hit = _STAGE_TEXT.get((id(st), ctx))
            if hit is not None and hit[0] is st:
                for op, prim in hit[2]:   # (a primitive registered again since prints otherwise)
                    if PRIMS.get(op) is not prim:
                        break
                else:
                    out += hit[1]
                    self.prims_read.update(hit[3])
                    return
            keep = id(st) in _STAGE_SEEN
            if not keep:
                if len(_STAGE_SEEN) >= _STAGE_SEEN_MAX:
                    _STAGE_SEEN.clear()
                _STAGE_SEEN[id(st)] = None
        self.scopes = [{}]
        if not keep:
            self._nodes(st.body, 8, out)
            return
        start, outer = len(out), self.prims_read
        self.prims_read = set()   # (this stage's own, kept with its text)
        self._nodes(st.body, 8, out)
        prims, self.prims_read = self.prims_read, outer
        outer.update(prims)
        if len(_STAGE_TEXT) >= _STAGE_TEXT_MAX:
            _STAGE_TEXT.clear()
        ops = tuple(prims)
        _STAGE_TEXT[(id(st), ctx)] = (st, tuple(out[start:]), tuple([(op, PRIMS.get(op)) for op in ops]), ops)

    def _stage_context(self):
        """The number of what a stage's text reads besides its nodes (NodePrinting's methods): the
        printer's class, the fields' signedness, the target's arch (Select mode 0), each queue's
        position and dtype, the GM tensors' C++ names and the Matmul objects' transposes; numbered
        once per printer (_CONTEXTS), so a stage's key hashes two ints.  None with debug (the user's
        source lines beside the statements: read from their files each time)."""
        if self._ctx is False:
            k = self.k
            # a queue's dtype by its id (a DType compares and hashes its numpy dtype: slow), the
            # entry holding the dtypes (an id is not reused while it lives)
            context = (type(self), self.signed_fields, self.t.arch,
                       tuple([(q.name, q.position, id(q.dtype)) for q in k.queues]), tuple(self.gm_name.items()),
                       tuple([(mm.name, bool(mm.a.transpose), bool(mm.b.transpose)) for mm in k.matmuls]))
            hit = _CONTEXTS.get(context)
            if hit is None:
                if len(_CONTEXTS) >= _CONTEXTS_MAX:
                    _CONTEXTS.clear()
                # (numbers are never reused: the stage texts of an emptied context cannot match again)
                hit = _CONTEXTS[context] = (next(_NUMBERS), tuple([q.dtype for q in k.queues]))
            self._ctx = None if self.debug else hit[0]
        return self._ctx

    def _member_init(self, m) -> str:
        if m.dtype is None:
            return _EXPR[0](m.init)   # (c_expr's, without its call)
        if isinstance(m.init, tuple) and m.init[0] == "load":   # a one-element GM tensor's value
            g = self.gm[m.init[1]]
            return gm_scalar_load(f"gm_{self.gm_name[g.name]}", g.dtype, m.dtype)
        return f"static_cast<{m.dtype.ascendc}>({_EXPR[0](m.init)})"


# Process's opening lines after Init (the same in every cube kernel)
_PROCESS_OPEN = ("        AscendC::SetSysWorkspace(workspace);", "    }", "",
                 "    // After REGIST_MATMUL_OBJ: the UB plan, then the core's block tile by tile.",
                 "    __aicore__ inline void Process(AscendC::TPipe* pipe)", "    {")

# the core's names a cube kernel's Process may read (tile/kernel.CORE_NAMES), each declared when read
_CORE_DECLS = (("block", "        const uint32_t block = AscendC::GetBlockIdx();"),
               ("subblock", "        const uint32_t subblock = AscendC::GetSubBlockIdx();"),
               ("ratio", "        const uint32_t ratio = AscendC::GetTaskRatio();"))


def _matmul_type(o) -> str:
    """A Matmul operand's MatmulType<position, format, type[, transposed]>."""
    return (f"AscendC::MatmulType<AscendC::TPosition::{o.position}, CubeFormat::{o.format}, {o.dtype.ascendc}"
            f"{', true' if o.transpose else ''}>")


def _renames(stmts, names: dict) -> bool:
    """Whether rename_stmt would change any of `stmts`: False when each slot they use maps to its own
    name and none reads a scalar variable (rename_stmt's copies would equal them)."""
    for slot, name in names.items():
        if slot != name:
            return True
    used = {st.dst for st in stmts}
    for st in stmts:
        used.update(st.srcs)
        used.update(st.aux)
        if st.scalar is not None and st.scalar[0] == "var":
            return True
    return not used <= names.keys()   # (a slot without a name: rename_stmt's KeyError)


# type -> whether it has __dataclass_fields__ (a tuple of such is a body of nodes), for _names: asked
# per tuple field, where hasattr per element and a generator per tuple cost.  Keyed by the type: a
# dataclass's fields are its class's attribute (no IR record sets one on an instance); bounded by
# the classes a process has (emptied past _RECORD_TYPES_MAX all the same).
_RECORD_TYPES: dict = {}
_RECORD_TYPES_MAX = 256


def _is_body(v: tuple) -> bool:
    """Whether every element of a non-empty tuple has __dataclass_fields__ (a body of nodes)."""
    known = _RECORD_TYPES
    for x in v:
        kind = type(x)
        if kind is str or kind is tuple or kind is int:   # (an expression's elements)
            return False
        r = known.get(kind)
        if r is None:
            if len(known) >= _RECORD_TYPES_MAX:
                known.clear()
            r = known[kind] = hasattr(kind, "__dataclass_fields__")
        if not r:
            return False
    return True


def _names(nodes) -> set:
    """Every name the expressions of `nodes` read (nested bodies too).  Walked with two work lists
    (bodies of nodes, expression tuples) rather than a call per expression: a kernel's process
    body has hundreds of expression tuples.  The exact types first (a name, an expression, an
    int), subclasses as before them."""
    out: set = set()
    add = out.add
    bodies, exprs = [nodes], []
    while bodies:
        for node in bodies.pop():
            for v in vars(node).values():
                kind = type(v)
                if kind is str:
                    add(v)
                elif kind is tuple:
                    if v and type(v[0]) is not str and _is_body(v):
                        bodies.append(v)   # a body of nodes
                    else:
                        exprs.append(v)
                elif kind is int or v is None:
                    pass
                elif isinstance(v, str):
                    add(v)
                elif isinstance(v, tuple):
                    if v and all(hasattr(x, "__dataclass_fields__") for x in v):
                        bodies.append(v)
                    else:
                        exprs.append(v)
        while exprs:
            for x in exprs.pop()[1:]:
                kind = type(x)
                if kind is str:
                    add(x)
                elif kind is tuple:
                    exprs.append(x)
                elif kind is not int and isinstance(x, str):
                    add(x)
                elif kind is not int and isinstance(x, tuple):
                    exprs.append(x)
    return out


def _typed_members(k, add) -> list:
    """A kernel class's typed scalar members declared through `add`; its uint32 ones returned as
    `name = 0` declarators (the class declares them in one line, where it lays out its words)."""
    words = []
    for m in k.members:
        if m.dtype is not None:
            add(f"    {m.dtype.ascendc} {m.name};")
        else:
            words.append(f"{m.name} = 0")
    return words

"""Ascend C for a kernel in the loop-level tile IR (tile/kernel.py `TileKernel`).

One printer for every kind that lowers to a TileKernel (today: the transpose kind).  It walks
the records and prints the canonical form:

    struct <Name>TilingData     the kernel's fields, word by word
    class Kernel<Name>          Init (the tiling, the members computed from it, the GM
                                tensors, InitBuffer per queue), Process (the core's
                                contiguous tiles [first, last), each through the stages in
                                order), one private method per stage, the objects
    extern "C" <name>(...)      the usual entry (frame.KernelFrame)
    <Name>Tiling(...)           static shapes: the words fusedsl computed

Each node prints as one Ascend C construct: CopyIn / CopyOut the strided row copies of the
shared helpers (CopyRowsIn / CopyRowsOut: DataCopyPad where the chip has it), UbCopy a UB->UB
DataCopy, Move a GetValue/SetValue pair, Barrier PipeBarrier<PIPE_ALL>, the queue nodes the
TQue protocol.  Expressions are uint32 arithmetic; `min` is MinU32.
"""
from __future__ import annotations

from ..tile.kernel import (BINARY, Alloc, Barrier, CopyIn, CopyOut, DeQue, EnQue, For, Free, If, Let, Move, Set,
                           TileKernel, UbCopy, Var)
from . import cnames
from .emit import camel
from .frame import KernelFrame


def c_expr(e) -> str:
    """An expression in C++ (tiling fields are members of `tiling`), parenthesised only where
    C's precedence needs it."""
    return _c(e)[0]


def _c(e) -> tuple[str, int]:
    """(text, precedence): 9 for a primary, BINARY's for an operator."""
    if isinstance(e, int):
        return (f"{e}u" if e >= 0 else f"({e})"), 9
    if isinstance(e, str):
        return ("tiling." + e[2:] if e.startswith("t.") else e), 9
    op = e[0]
    if op in BINARY:
        (a, pa), (b, pb) = _c(e[1]), _c(e[2])
        prec = BINARY[op]
        a = f"({a})" if pa < prec else a
        b = f"({b})" if pb <= prec else b
        return f"{a} {op} {b}", prec
    if op == "[]":
        return f"{_c(e[1])[0]}[{_c(e[2])[0]}]", 9
    if op == "min":
        return f"MinU32({_c(e[1])[0]}, {_c(e[2])[0]})", 9
    if op == "pad":
        n = _c(e[2])[0]
        a, pa = _c(e[1])
        a = f"({a})" if pa < 2 else a
        return f"({a} + {n} - 1u) / {n} * {n}", 3
    raise ValueError(f"not an expression: {e!r}")


class KernelPrinter(KernelFrame):
    def __init__(self, sched, target, name: str, debug: bool | None = None):
        super().__init__(sched, target, name, debug)
        self.symbols = []
        self.k: TileKernel = sched.kernel_ir
        self.queue = {q.name: q for q in self.k.queues}
        self.gm_name = {g.name: (cnames.param(g.name) if g.role == "in" else f"y{g.index}") for g in self.k.gms}

    def _gm_args(self) -> list[str]:
        return [self.gm_name[g.name] for g in self.k.gms if g.role == "in"] + \
               [self.gm_name[g.name] for g in self.k.gms if g.role == "out"]

    def tiling_header(self) -> str:
        lines = [f"// Tiling data of {self.name} (a {self.k.kind} kernel).", f"struct {self.tiling} {{"]
        lines += [f"    uint32_t {f.name}{f'[{f.length}]' if f.length else ''};" for f in self.k.fields]
        return "\n".join(lines + ["};"]) + "\n"

    def host_tiling(self) -> str:
        words = self.k.words
        body = ", ".join(f"{w}u" for w in words)
        return "\n".join([
            f"// Host tiling for {self.name} on {self.t.name}: static shapes, so the tiling is constants",
            f"// computed by fusedsl for {self.t.vector_cores} vector cores and a UB budget of {self.s.ub_budget} bytes.",
            f"inline bool {camel(self.name)}Tiling(const int64_t* sizes, uint32_t vectorCores, uint32_t ubBudget,",
            f"                          {self.tiling}* t)",
            "{",
            "    (void)sizes; (void)vectorCores; (void)ubBudget;",
            f"    static const uint32_t kWords[{len(words)}] = {{{body}}};",
            "    uint32_t* dst = reinterpret_cast<uint32_t*>(t);",
            f"    for (uint32_t i = 0; i < {len(words)}; ++i) dst[i] = kWords[i];",
            "    return true;",
            "}"]) + "\n"

    def heading(self) -> list[str]:
        return [f"// ---- {self.name}: a {self.k.kind} kernel from {cnames.comment(self.s.fn.loc)} ----"]

    def kernel(self) -> str:
        return self._class() + "\n" + self.entry(self._gm_args() + ["t"])

    # ---- the class ----------------------------------------------------------------------------
    def _class(self) -> str:
        k = self.k
        ins = [g for g in k.gms if g.role == "in"] + [g for g in k.gms if g.role == "out"]
        L = [f"// {self.name}: {cnames.comment(k.note)}",
             *self.class_open([f"GM_ADDR {self.gm_name[g.name]}" for g in ins])]
        L += [f"        {m.name} = {(c_expr(m.init))};" for m in k.members if m.init is not None]
        L += [f"        gm_{self.gm_name[g.name]}.SetGlobalBuffer((__gm__ {g.dtype.ascendc}*){self.gm_name[g.name]});"
              for g in ins]
        L += [f"        pipe.InitBuffer({q.name}, {q.depth}, {(c_expr(q.elems))} * sizeof({q.dtype.ascendc}));"
              for q in k.queues]
        L += ["    }", "", "    __aicore__ inline void Process()", "    {", *self.core_tiles(),
              "        for (uint32_t tile = first; tile < last; ++tile) {"]
        L += [f"            {st.name}({'tile' if st.param else ''});" for st in k.stages]
        L += ["        }", "    }", "", "private:"]
        for st in k.stages:
            L += [f"    __aicore__ inline void {st.name}({f'uint32_t {st.param}' if st.param else ''})", "    {"]
            for node in st.body:
                L += self._node(node, 8)
            L.append("    }")
        L += ["", "    AscendC::TPipe pipe;"]
        for q in k.queues:
            if q.position == "VECCALC":
                L.append(f"    AscendC::TBuf<AscendC::TPosition::VECCALC> {q.name};")
            else:
                L.append(f"    AscendC::TQue<AscendC::QuePosition::{q.position}, 1> {q.name};")
        L += [f"    AscendC::GlobalTensor<{g.dtype.ascendc}> gm_{self.gm_name[g.name]};" for g in ins]
        L.append(f"    {self.tiling} tiling;")
        if k.members:
            L.append("    uint32_t " + ", ".join(f"{m.name} = 0" for m in k.members) + ";")
        return "\n".join(L + ["};", ""])

    def _ty(self, queue: str) -> str:
        return self.queue[queue].dtype.ascendc

    def _node(self, node, indent: int) -> list[str]:
        pad = " " * indent
        e = c_expr
        if isinstance(node, Let):
            return [f"{pad}const uint32_t {node.var} = {(e(node.expr))};"]
        if isinstance(node, Var):
            return [f"{pad}uint32_t {node.var} = {(e(node.expr))};"]
        if isinstance(node, Set):
            return [f"{pad}{node.var} {node.op} {(e(node.expr))};"]
        if isinstance(node, For):
            head = (f"{pad}for (uint32_t {node.var} = {(e(node.end))}; {node.var}-- > {(e(node.start))};) {{"
                    if node.down else
                    f"{pad}for (uint32_t {node.var} = {(e(node.start))}; {node.var} < {(e(node.end))}; "
                    f"++{node.var}) {{")
            return [head, *(x for n in node.body for x in self._node(n, indent + 4)), pad + "}"]
        if isinstance(node, If):
            L = [f"{pad}if ({e(node.cond)}) {{",
                 *(x for n in node.then for x in self._node(n, indent + 4))]
            if node.orelse:
                L += [pad + "} else {", *(x for n in node.orelse for x in self._node(n, indent + 4))]
            return L + [pad + "}"]
        if isinstance(node, Alloc):
            q = self.queue[node.queue]
            ty = q.dtype.ascendc
            get = f"Get<{ty}>()" if q.position == "VECCALC" else f"AllocTensor<{ty}>()"
            return [f"{pad}AscendC::LocalTensor<{ty}> {node.tensor} = {node.queue}.{get};"]
        if isinstance(node, DeQue):
            ty = self._ty(node.queue)
            return [f"{pad}AscendC::LocalTensor<{ty}> {node.tensor} = {node.queue}.DeQue<{ty}>();"]
        if isinstance(node, EnQue):
            return [f"{pad}{node.queue}.EnQue({node.tensor});"]
        if isinstance(node, Free):
            return [f"{pad}{node.queue}.FreeTensor({node.tensor});"]
        if isinstance(node, CopyIn):
            return [f"{pad}CopyRowsIn({node.tensor}, gm_{self.gm_name[node.gm]}[{(e(node.offset))}], "
                    f"{(e(node.rows))}, {(e(node.cols))}, {(e(node.gm_stride))}, "
                    f"{(e(node.ub_stride))});"]
        if isinstance(node, CopyOut):
            return [f"{pad}CopyRowsOut(gm_{self.gm_name[node.gm]}[{(e(node.offset))}], {node.tensor}, "
                    f"{(e(node.rows))}, {(e(node.cols))}, {(e(node.gm_stride))}, "
                    f"{(e(node.ub_stride))});"]
        if isinstance(node, UbCopy):
            dst = node.dst if node.dst_off == 0 else f"{node.dst}[{(e(node.dst_off))}]"
            src = node.src if node.src_off == 0 else f"{node.src}[{(e(node.src_off))}]"
            return [f"{pad}AscendC::DataCopy({dst}, {src}, {(e(node.count))});"]
        if isinstance(node, Move):
            return [f"{pad}{node.dst}.SetValue({(e(node.dst_index))}, "
                    f"{node.src}.GetValue({(e(node.src_index))}));"]
        if isinstance(node, Barrier):
            why = f"   // {cnames.comment(node.why)}" if node.why else ""
            return [f"{pad}AscendC::PipeBarrier<PIPE_ALL>();{why}"]
        raise TypeError(f"not a tile kernel node: {node!r}")

"""The loop-level tile IR interpreted with numpy: a TileKernel (tile/kernel.py) run block by
block on GM arrays, with real UB buffers per queue.

Why: it executes the IR itself, not the printed C++, so a lowering's kernel is checked against
numpy without g++ (tests, bug reports from `print_kernel` text), and it checks what the IR
promises: every DMA and element move stays inside its GM tensor and its UB buffer, and the
queue protocol holds (AllocTensor only while the queue has a free buffer, EnQue what was
allocated, DeQue what was enqueued, FreeTensor what was dequeued, nothing held at the end of a
block).  A break raises `TileVerifyError` naming the kernel, the stage and the node.

Expressions are uint32 arithmetic (tile/kernel.evaluate).  A block runs the tiles
[b * tilesPerCore, min(totalTiles, (b + 1) * tilesPerCore)) through the stages in order.

A cube kernel (one with Matmul objects) runs its Process body once per core of the TCubeTiling's
usedCoreNum (each core its own Matmul object: GetTaskRatio() 1): the Matmul multiplies the
core's block of A and B (read from GM as SetTensorA / SetTensorB say, or from an L1 tensor in
NZ) in float32 (int32 for int8) once, and hands out its base tiles M-first, one per Iterate.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..tile.kernel import (VIEWS, Alloc, Barrier, Call, CopyIn, CopyNz, CopyOut, Decl, DeQue, Dup, EnQue, For, Free,
                           GatherRow, If, Let, MmEnd, MmGetC, MmIterate, MmSet, MmTail, Move, Put, Ref, Reset, Return, RunPart, Scalar,
                           Set, Step, Sync, TileKernel, UbCopy, Var, Vec, assign, evaluate, print_kernel)
from ..tile.verify import TileVerifyError
from .blas import gemm_acc
from .stmt_eval import apply_stmt, convert


class _Return(Exception):
    """Process returned (a core with no block of C)."""


class _Block:
    def __init__(self, k: TileKernel, env: dict, gm: dict):
        self.k = k
        self.env = env
        self.gm = gm
        self.bufs = {}          # queue -> its buffers
        self.state = {}         # (queue, buffer number) -> "free" | "alloc" | "queued" | "dequeued"
        self.tensors = {}       # tensor name -> (queue, buffer number)
        self.stage = ""
        for q in k.queues:
            n = evaluate(q.elems, env)
            self.bufs[q.name] = [np.zeros(n, q.dtype.np) for _ in range(q.depth)]
            for i in range(q.depth):
                self.state[(q.name, i)] = "free"
        self.position = {q.name: q.position for q in k.queues}
        env["ub"] = self.element   # ("get", t, e) in typed expressions
        self.stages = {st.name: st for st in k.stages}
        self.mms = {mm.name: mm for mm in k.matmuls}
        self.mm_state: dict = {}   # Matmul object -> {"A": (src, offset), "B": ..., "tail": (m, n), "tile": array}
        self.nz_rows: dict = {}    # L1 tensor -> the rows its NZ copy holds

    def element(self, name: str, index: int):
        buf = self.tensor(name, name)
        if index >= buf.size:
            raise TileVerifyError(f"kernel {self.k.name}, stage {self.stage}: element {index} of UB {name} "
                                  f"leaves its {buf.size}")
        return buf[index]

    def fail(self, node, msg: str):
        raise TileVerifyError(f"kernel {self.k.name}, stage {self.stage}: {msg} ({type(node).__name__} {node})")

    def ev(self, e) -> int:
        return evaluate(e, self.env)

    def tensor(self, node, name: str) -> np.ndarray:
        if name not in self.tensors:
            self.fail(node, f"tensor {name} is not held")
        q, i = self.tensors[name]
        if self.state[(q, i)] == "queued":
            self.fail(node, f"tensor {name} is used while in queue {q}")
        return self.bufs[q][i]

    def span(self, node, r: Ref, n: int) -> np.ndarray:
        """n elements of a UB tensor from its Ref's offset (bounds-checked)."""
        buf = self.tensor(node, r.tensor)
        off = self.ev(r.offset)
        if r.view is not None:   # the bytes from the offset (in the tensor's own elements) as another type
            if off > buf.size:
                self.fail(node, f"UB {r.tensor} offset {off} leaves its {buf.size}")
            buf, off = buf[off:].view(VIEWS[r.view][1]), 0
        if off + n > buf.size:
            self.fail(node, f"UB {r.tensor} elements [{off}, {off + n}) leave its {buf.size}")
        return buf[off:off + n]

    def run(self, body) -> None:
        for node in body:
            self.node(node)

    def node(self, node) -> None:
        env = self.env
        if isinstance(node, (Let, Var)):
            env[node.var] = self.ev(node.expr)
        elif isinstance(node, Set):
            try:
                assign(env, node, self.ev(node.expr))
            except ZeroDivisionError:
                self.fail(node, "division by zero")
        elif isinstance(node, For):
            start, end, step = self.ev(node.start), self.ev(node.end), self.ev(node.step)
            for i in (range(end - 1, start - 1, -1) if node.down else range(start, end, step)):
                env[node.var] = i
                self.run(node.body)
        elif isinstance(node, If):
            self.run(node.then if self.ev(node.cond) else node.orelse)
        elif isinstance(node, Alloc):
            if self.position[node.queue] in ("VECCALC", "TBUF_VECOUT"):
                self.tensors[node.tensor] = (node.queue, 0)
                return
            free = [i for i in range(len(self.bufs[node.queue])) if self.state[(node.queue, i)] == "free"]
            if not free:
                self.fail(node, f"queue {node.queue} has no free buffer")
            self.state[(node.queue, free[0])] = "alloc"
            self.tensors[node.tensor] = (node.queue, free[0])
        elif isinstance(node, EnQue):
            q, i = self.tensors.get(node.tensor, (None, None))
            if q != node.queue or self.state[(q, i)] != "alloc":
                self.fail(node, f"{node.tensor} was not allocated from {node.queue}")
            self.state[(q, i)] = "queued"
            del self.tensors[node.tensor]
        elif isinstance(node, DeQue):
            queued = [i for i in range(len(self.bufs[node.queue])) if self.state[(node.queue, i)] == "queued"]
            if not queued:
                self.fail(node, f"queue {node.queue} holds no tensor")
            self.state[(node.queue, queued[0])] = "dequeued"
            self.tensors[node.tensor] = (node.queue, queued[0])
        elif isinstance(node, Free):
            q, i = self.tensors.get(node.tensor, (None, None))
            if q != node.queue:
                self.fail(node, f"{node.tensor} does not belong to {node.queue}")
            self.state[(q, i)] = "free"
            del self.tensors[node.tensor]
        elif isinstance(node, (CopyIn, CopyOut)):
            ub = self.tensor(node, node.tensor)
            ub = ub[self.ev(node.ub_off):]
            g = self.gm[node.gm]
            off, rows, cols = self.ev(node.offset), self.ev(node.rows), self.ev(node.cols)
            gs, us = self.ev(node.gm_stride), self.ev(node.ub_stride)
            if rows == 0 or cols == 0:
                return
            if rows > 1 and us < cols:
                self.fail(node, f"UB rows {us} apart are shorter than {cols} elements")
            last_g = off + (rows - 1) * gs + cols if rows > 1 else off + cols
            last_u = (rows - 1) * us + cols
            if last_g > g.size:
                self.fail(node, f"GM {node.gm} elements [{off}, {last_g}) leave its {g.size}")
            if last_u > ub.size:
                self.fail(node, f"UB {node.tensor} elements [0, {last_u}) leave its {ub.size}")
            for r in range(rows):
                gpos = off + r * gs
                if isinstance(node, CopyIn):
                    ub[r * us:r * us + cols] = g[gpos:gpos + cols]
                else:
                    g[gpos:gpos + cols] = ub[r * us:r * us + cols]
        elif isinstance(node, GatherRow):
            idx, table = self.gm[node.index], self.gm[node.table]
            pos, col, cols = self.ev(node.pos), self.ev(node.col), self.ev(node.cols)
            if pos >= idx.size:
                self.fail(node, f"index element {pos} leaves GM {node.index} of {idx.size}")
            dst = self.span(node, node.dst, cols)
            k = int(idx[pos])
            k += node.bound if k < 0 else 0
            if not 0 <= k < node.bound:
                dst[...] = 0
                return
            start = k * node.row_len + col
            if start + cols > table.size:
                self.fail(node, f"GM {node.table} elements [{start}, {start + cols}) leave its {table.size}")
            dst[...] = table[start:start + cols]
        elif isinstance(node, UbCopy):
            dst, src = self.tensor(node, node.dst), self.tensor(node, node.src)
            d, s, n = self.ev(node.dst_off), self.ev(node.src_off), self.ev(node.count)
            if d + n > dst.size or s + n > src.size:
                self.fail(node, f"a copy of {n} elements leaves a UB buffer")
            dst[d:d + n] = src[s:s + n]
        elif isinstance(node, Move):
            dst, src = self.tensor(node, node.dst), self.tensor(node, node.src)
            d, s = self.ev(node.dst_index), self.ev(node.src_index)
            if d >= dst.size or s >= src.size:
                self.fail(node, f"element {d} / {s} is outside the UB buffer")
            dst[d] = src[s]
        elif isinstance(node, (Barrier, Sync, MmEnd)):
            pass
        elif isinstance(node, Call):
            st = self.stages[node.stage]
            outer, self.stage = self.stage, st.name
            if st.param:
                env[st.param] = self.ev(node.arg)
            self.run(st.body)
            self.stage = outer
        elif isinstance(node, Return):
            raise _Return()
        elif isinstance(node, MmSet):
            self.mm_state.setdefault(node.mm, {})[node.which] = (node.src, self.ev(node.offset))
        elif isinstance(node, MmTail):
            self.mm_state.setdefault(node.mm, {})["tail"] = (self.ev(node.m), self.ev(node.n),
                                                             None if node.k is None else self.ev(node.k))
        elif isinstance(node, MmIterate):
            self.iterate(node)
        elif isinstance(node, MmGetC):
            state = self.mm_state.get(node.mm, {})
            tile = state.get("tile")
            if tile is None:
                self.fail(node, "GetTensorC outside an Iterate loop")
            dst = self.tensor(node, node.tensor)
            rows, cols = tile.shape
            r0, c0, width = (*state["at"], state["width"]) if node.placed else (0, 0, cols)
            ld = -(-width * dst.itemsize // 32) * 32 // dst.itemsize
            if (r0 + rows - 1) * ld + c0 + cols > dst.size:
                self.fail(node, f"a {rows} x {cols} C tile (rows {ld} apart) leaves UB {node.tensor} of {dst.size}")
            for i in range(rows):
                dst[(r0 + i) * ld + c0:(r0 + i) * ld + c0 + cols] = tile[i]
        elif isinstance(node, CopyNz):
            dst = self.tensor(node, node.tensor)
            g = self.gm[node.gm]
            off, rows, cols, gs = (self.ev(x) for x in (node.offset, node.rows, node.cols, node.gm_stride))
            if rows and off + (rows - 1) * gs + cols > g.size:
                self.fail(node, f"GM {node.gm} rows leave its {g.size} elements")
            c0 = 32 // dst.itemsize
            high = -(-rows // 16) * 16
            if -(-cols // c0) * high * c0 > dst.size:
                self.fail(node, f"{rows} x {cols} in NZ leaves L1 {node.tensor} of {dst.size}")
            for i in range(rows):
                for k0 in range(0, cols, c0):
                    w = min(c0, cols - k0)
                    at = (k0 // c0) * high * c0 + i * c0
                    dst[at:at + w] = g[off + i * gs + k0:off + i * gs + k0 + w]
            self.nz_rows[node.tensor] = rows
        elif isinstance(node, Scalar):
            with np.errstate(all="ignore"):
                env[node.var] = np.asarray(self.ev(node.expr)).astype(node.dtype.np)[()]
        elif isinstance(node, Put):
            dst = self.tensor(node, node.tensor)
            i = self.ev(node.index)
            if i >= dst.size:
                self.fail(node, f"element {i} is outside the UB buffer")
            with np.errstate(all="ignore"):
                dst[i] = np.asarray(self.ev(node.expr)).astype(dst.dtype)
        elif isinstance(node, Decl):
            self.tensors.pop(node.tensor, None)
        elif isinstance(node, Dup):
            dst = self.span(node, node.dst, self.ev(node.count))
            value = node.value if isinstance(node.value, (float, bool)) else self.ev(node.value)
            with np.errstate(all="ignore"):
                dst[...] = np.asarray(value).astype(dst.dtype)
        elif isinstance(node, Vec) and node.api == "Gather":
            n = self.ev(node.count)
            dst, src = self.span(node, node.dst, n), self.tensor(node, node.srcs[0].tensor)
            offs = self.span(node, node.srcs[1], n).astype(np.int64)
            if n and (offs % src.itemsize).any():
                self.fail(node, "a Gather offset is not a multiple of the element size")
            idx = offs // src.itemsize + self.ev(node.srcs[0].offset)
            if n and idx.max() >= src.size:
                self.fail(node, f"a Gather offset reads element {idx.max()} of UB {node.srcs[0].tensor} of {src.size}")
            dst[...] = src[idx]
        elif isinstance(node, Vec):
            n = self.ev(node.count)
            reduce = node.api.startswith(("WholeReduce", "ReduceRepeat"))
            dst = self.span(node, node.dst, 1 if reduce else n)
            srcs = [self.span(node, r, n) for r in node.srcs]
            with np.errstate(all="ignore"):
                if reduce:   # one repeat of n lanes to element 0
                    kind = node.api.removeprefix("WholeReduce").removeprefix("ReduceRepeat").lower()
                    # (an int32 sum wraps in int32, as the lanes' Adds do)
                    dtype = srcs[0].dtype if kind == "sum" and srcs[0].dtype.kind in "iu" else None
                    fold = {"sum": lambda a: np.sum(a, dtype=dtype), "max": np.max, "min": np.min}[kind]
                    dst[0] = fold(srcs[0])
                elif node.api == "Exp":
                    dst[...] = np.exp(srcs[0]).astype(dst.dtype)
                elif node.api == "Cast":
                    dst[...] = convert(srcs[0], _dtype(srcs[0]), _dtype(dst), node.mode)
                elif node.api in ("Muls", "Adds"):
                    s = np.asarray(node.scalar if isinstance(node.scalar, (float, bool)) else self.ev(node.scalar))
                    dst[...] = (srcs[0] * s.astype(dst.dtype) if node.api == "Muls"
                                else srcs[0] + s.astype(dst.dtype)).astype(dst.dtype)
                elif node.api in ("Maxs", "Mins"):
                    s = np.asarray(node.scalar if isinstance(node.scalar, (float, bool)) else self.ev(node.scalar))
                    dst[...] = (np.maximum if node.api == "Maxs" else np.minimum)(srcs[0], s.astype(dst.dtype))
                else:
                    fn = {"Add": np.add, "Max": np.maximum, "Min": np.minimum, "Div": np.divide,
                          "Sub": np.subtract, "Mul": np.multiply, "And": np.bitwise_and}[node.api]
                    dst[...] = fn(srcs[0], srcs[1]).astype(dst.dtype)
        elif isinstance(node, Step):
            for r, value, count in node.prefill:   # the printed Duplicates (lanes Compare reads past n,
                self.node(Dup(r, value, count))    # constant tensors such as the NaN Select's -2**31)
            n = env["n"] if node.count is None else self.ev(node.count)
            o = self.ev(node.offset)
            slots = {slot: Ref(r.tensor, ("+", r.offset, o)) for slot, r in node.names}
            scalars = dict(node.scalars)
            for st in node.stmts:
                srcs = [self.span(node, slots[x], n) for x in st.srcs]
                scalar = None
                if st.scalar is not None and st.op != "cast":
                    kind, value = st.scalar
                    scalar = np.asarray(env[scalars[value]] if kind == "var" else value).astype(st.dtype.np)
                self.span(node, slots[st.dst], n)[...] = apply_stmt(st, srcs, scalar, (n,))
        else:
            self.fail(node, "unknown node")

    def operand(self, node, mm, which: str, rows: int, cols: int) -> np.ndarray:
        """The core's [rows, cols] block of A or B as SetTensorA / SetTensorB gave it."""
        state = self.mm_state.get(mm.name, {})
        if which not in state:
            self.fail(node, f"Iterate before SetTensor{which}")
        src, off = state[which]
        op = mm.a if which == "A" else mm.b
        f = self.field(mm)
        if src in self.nz_rows:   # an L1 tensor in NZ (CopyNz)
            buf, high = self.tensor(node, src), -(-self.nz_rows[src] // 16) * 16
            c0 = 32 // buf.itemsize
            i, k = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
            return buf[(k // c0) * high * c0 + i * c0 + k % c0]
        g = self.gm[src] if src in self.gm else self.tensor(node, src)   # GM, or a UB tensor (ND, rows Ka apart)
        i, j = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
        if which == "A":   # [M, K] rows Ka apart, or [K, M] read transposed
            at = off + (j * f("M") + i if op.transpose else i * f("Ka") + j)
        else:              # [K, N] rows N apart, or [N, K] read transposed
            at = off + (j * f("Kb") + i if op.transpose else i * f("N") + j)
        if at.size and at.max() >= g.size:
            self.fail(node, f"the core's {which} block reads element {at.max()} of GM {src} of {g.size}")
        return g[at]

    def field(self, mm):
        """A TCubeTiling field of Matmul `mm` (its own struct member's, `<tiling>_<field>`)."""
        return lambda name: self.env[f"t.{mm.tiling}_{name}" if mm.tiling else f"t.{name}"]

    def iterate(self, node: MmIterate) -> None:
        mm = self.mms[node.mm]
        f = self.field(mm)
        state = self.mm_state.setdefault(node.mm, {})
        m, n, k = state.get("tail", (f("singleCoreM"), f("singleCoreN"), None))
        k = f("Ka") if k is None else k
        a, b = self.operand(node, mm, "A", m, k), self.operand(node, mm, "B", k, n)
        if mm.c.dtype == dt.int32:
            c = np.matmul(a.astype(np.int32), b.astype(np.int32))
        else:   # cblas_sgemm, as llvm_kernel calls it: numpy's matmul takes gemv / dot for one row or
            #     column, whose sums run in another order (exp of an epilogue amplifies that)
            c = np.empty((a.shape[0], b.shape[1]), np.float32)
            gemm_acc(np.ascontiguousarray(a, np.float32), np.ascontiguousarray(b, np.float32), c, False)
            c = c.astype(mm.c.dtype.np)
        bm, bn = f("baseM"), f("baseN")
        round_m, round_n = -(-m // bm), -(-n // bn)
        state["width"] = n
        for count in range(round_m * round_n):   # M-first (iterateOrder 0)
            mi, ni = count % round_m, count // round_m
            state["tile"] = c[mi * bm:(mi + 1) * bm, ni * bn:(ni + 1) * bn]
            state["at"] = (mi * bm, ni * bn)
            self.run(node.body)
        state["tile"] = None


def _dtype(a: np.ndarray) -> dt.DType:
    return dt.to_dtype(a.dtype)


def run_kernel(k: TileKernel, inputs: list, outputs: list[np.ndarray], words=None) -> None:
    """Run every block of `k` on flat copies of the GM arrays; the outputs are written in place.
    `inputs` are in kernel-parameter order; a runtime scalar is a number (its typed field).  A
    kernel of parts runs each part (with its own words) on the GM tensors RunPart hands over."""
    if k.parts:
        _run_parts(k, inputs, outputs)
        return
    words = list(k.words if words is None else words)
    if len(words) != k.word_count:
        raise TileVerifyError(f"kernel {k.name}: {len(words)} tiling words for a struct of {k.word_count}")
    env0 = {}
    for name, (w, n) in k.field_offsets().items():
        env0["t." + name] = words[w] if n == 0 else words[w:w + n]
    typed = [f for f in k.fields if f.ctype != "uint32_t"]   # runtime scalars: s<index>
    for f in typed:
        env0["t." + f.name] = inputs[int(f.name[1:])]
    gm = {}
    ins = [g for g in k.gms if g.role == "in"]
    outs = [g for g in k.gms if g.role == "out"]
    for g in ins:
        gm[g.name] = np.ascontiguousarray(inputs[g.index]).reshape(-1)
        env0["gm:" + g.name] = gm[g.name]
    flat_out = {}
    for g in outs:
        # what the output held (GM keeps it where the kernel writes nothing: a test pre-fills NaN)
        flat_out[g.name] = np.array(outputs[g.index], dtype=outputs[g.index].dtype).reshape(-1)
        gm[g.name] = flat_out[g.name]
    if k.process is not None:
        _run_cube(k, env0, gm)
    else:
        _run_tiles(k, env0, gm)
    for g in outs:
        outputs[g.index].reshape(-1)[:] = flat_out[g.name]


def _run_parts(k: TileKernel, inputs: list, outputs: list) -> None:
    mine = {g.name: g for g in k.gms}
    for node in k.process:
        if isinstance(node, Reset):
            continue
        if not isinstance(node, RunPart):
            raise TileVerifyError(f"kernel {k.name}: a kernel of parts runs only RunPart and Reset, not {node!r}")
        part = k.parts[node.part]
        own = [g for g in part.gms if g.role == "in"] + [g for g in part.gms if g.role == "out"]
        ins, outs = {}, {}
        for name, g in zip(node.gms, own):
            (ins if g.role == "in" else outs)[g.index] = (inputs if g.role == "in" else outputs)[mine[name].index]
        run_kernel(part, [ins.get(i) for i in range(max(ins, default=-1) + 1)],
                   [outs.get(i) for i in range(max(outs, default=-1) + 1)])


def _members(k: TileKernel, env: dict) -> None:
    for m in k.members:
        value = 0 if m.init is None else evaluate(m.init, env)
        env[m.name] = value if m.dtype is None else np.asarray(value).astype(m.dtype.np)


def _run_cube(k: TileKernel, env0: dict, gm: dict) -> None:
    for b in range(evaluate(k.cores, env0)):
        env = dict(env0, block=b, subblock=0, ratio=1)
        for g in k.gms:   # this core's slice of the workspace
            if g.role == "work":
                gm[g.name] = np.zeros(g.elems or g.index // g.dtype.itemsize, g.dtype.np)
        _members(k, env)
        blk = _Block(k, env, gm)
        blk.stage = "Process"
        try:
            blk.run(k.process)
        except _Return:
            pass
        held = [f"{q}[{i}]" for (q, i), s in blk.state.items() if s != "free"]
        if held:
            raise TileVerifyError(f"kernel {k.name}: core {b} ends holding {', '.join(held)}")


def _run_tiles(k: TileKernel, env0: dict, gm: dict) -> None:
    total, per_core = env0["t.totalTiles"], env0["t.tilesPerCore"]
    blocks = -(-total // per_core) if per_core else 0
    for b in range(blocks):
        env = dict(env0)
        _members(k, env)
        blk = _Block(k, env, gm)
        for st in k.stages:   # the prologue: once per core, before its first tile
            if st.once:
                blk.stage = st.name
                blk.run(st.body)
        for tile in range(b * per_core, min(total, (b + 1) * per_core)):
            for st in k.stages:
                if st.once:
                    continue
                blk.stage = st.name
                if st.param:
                    env[st.param] = tile
                blk.run(st.body)
        held = [f"{q}[{i}]" for (q, i), s in blk.state.items() if s != "free"]
        if held:
            raise TileVerifyError(f"kernel {k.name}: block {b} ends holding {', '.join(held)}")


__all__ = ["run_kernel", "print_kernel"]

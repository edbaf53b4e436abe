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
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..tile.kernel import (Alloc, Barrier, CopyIn, CopyOut, Decl, DeQue, Dup, EnQue, For, Free, GatherRow, If, Let,
                           Move, Put, Ref, Scalar, Set, Step, Sync, TileKernel, UbCopy, Var, Vec, evaluate,
                           print_kernel)
from ..tile.verify import TileVerifyError
from .tile_interp import _convert, apply_stmt


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
            v = self.ev(node.expr)
            if node.op == "=":
                env[node.var] = v
            elif node.op == "+=":
                env[node.var] = (env[node.var] + v) & 0xFFFFFFFF
            elif v == 0:
                self.fail(node, "division by zero")
            else:
                env[node.var] //= v
        elif isinstance(node, For):
            start, end, step = self.ev(node.start), self.ev(node.end), self.ev(node.step)
            for i in (range(end - 1, start - 1, -1) if node.down else range(start, end, step)):
                env[node.var] = i
                self.run(node.body)
        elif isinstance(node, If):
            self.run(node.then if self.ev(node.cond) else node.orelse)
        elif isinstance(node, Alloc):
            if self.position[node.queue] == "VECCALC":
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
        elif isinstance(node, (Barrier, Sync)):
            pass
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
        elif isinstance(node, Vec):
            n = self.ev(node.count)
            reduce = node.api.startswith(("WholeReduce", "ReduceRepeat"))
            dst = self.span(node, node.dst, 1 if reduce else n)
            srcs = [self.span(node, r, n) for r in node.srcs]
            with np.errstate(all="ignore"):
                if reduce:   # one repeat of n lanes to element 0
                    kind = node.api.removeprefix("WholeReduce").removeprefix("ReduceRepeat").lower()
                    dst[0] = {"sum": np.sum, "max": np.max, "min": np.min}[kind](srcs[0])
                elif node.api == "Exp":
                    dst[...] = np.exp(srcs[0]).astype(dst.dtype)
                elif node.api == "Cast":
                    dst[...] = _convert(srcs[0], _dtype(srcs[0]), _dtype(dst), node.mode)
                elif node.api in ("Muls", "Adds"):
                    s = np.asarray(node.scalar if isinstance(node.scalar, (float, bool)) else self.ev(node.scalar))
                    dst[...] = (srcs[0] * s.astype(dst.dtype) if node.api == "Muls"
                                else srcs[0] + s.astype(dst.dtype)).astype(dst.dtype)
                else:
                    fn = {"Add": np.add, "Max": np.maximum, "Min": np.minimum, "Div": np.divide,
                          "Sub": np.subtract, "Mul": np.multiply}[node.api]
                    dst[...] = fn(srcs[0], srcs[1]).astype(dst.dtype)
        elif isinstance(node, Step):
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


def _dtype(a: np.ndarray) -> dt.DType:
    return dt.to_dtype(a.dtype)


def run_kernel(k: TileKernel, inputs: list, outputs: list[np.ndarray], words=None) -> None:
    """Run every block of `k` on flat copies of the GM arrays; the outputs are written in place.
    `inputs` are in kernel-parameter order; a runtime scalar is a number (its typed field)."""
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
        flat_out[g.name] = np.zeros(outputs[g.index].size, outputs[g.index].dtype)
        gm[g.name] = flat_out[g.name]
    total, per_core = env0["t.totalTiles"], env0["t.tilesPerCore"]
    blocks = -(-total // per_core) if per_core else 0
    for b in range(blocks):
        env = dict(env0)
        for m in k.members:
            value = 0 if m.init is None else evaluate(m.init, env)
            env[m.name] = value if m.dtype is None else np.asarray(value).astype(m.dtype.np)
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
    for g in outs:
        outputs[g.index].reshape(-1)[:] = flat_out[g.name]


__all__ = ["run_kernel", "print_kernel"]

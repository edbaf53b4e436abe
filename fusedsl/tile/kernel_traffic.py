"""The GM bytes a whole kernel moves, read from its tile IR (tile/kernel.py): the report's figure for
every kind without Matmul objects, so the model and simulate's measured count read one source.

Why not the graph-level model (cost.py): it counts each kernel input and output once, but the
kernel the printer prints may read more -- a broadcast input is read again for every tile or
row that needs it, a row longer than UB is read once per pass, a scalar parameter once per core.
Those re-reads depend on the tiling, which only the tile IR knows.

The walk runs the kernel's control flow the way `backend_cpu/kernel_interp.py` runs it (every
core of the launch, its tiles, loops and branches) with no data: a DMA (CopyIn / CopyOut) counts
rows x cols elements, a gathered row its index element and its row, a GM element read by an
expression (`load`: a scalar member's init in each core's Init, a Dup's value) its element.  The
values GM or UB elements would have are taken as 0: no lowering lets them steer the control flow
or a copy's size (a gathered row's index only picks the row; an index outside the table would
have been refused before the launch).  A loop whose body copies the same amount every pass (the
sizes do not depend on the loop's variable or anything the body sets) is counted once and
multiplied, so a kernel of many rows costs a walk of its tiles, not of its rows.
"""
from __future__ import annotations

import numpy as np

from .kernel import (Call, CopyIn, CopyOut, Dup, For, GatherRow, If, Let, Put, Return, Scalar, Set, TileKernel,
                     Var, assign, evaluate)


class _Counter:
    """A GM tensor read by expressions: every element read counts its bytes; its value is 0."""

    def __init__(self, itemsize: int, total: list):
        self.itemsize = itemsize
        self.total = total

    def __getitem__(self, index):
        self.total[0] += self.itemsize
        return 0


class _Return(Exception):
    pass


def _names(e, out: set) -> set:
    if isinstance(e, str):
        out.add(e)
    elif isinstance(e, tuple):
        for x in e[1:]:
            _names(x, out)
    return out


def _shape_names(body, local: set | None = None) -> tuple[set, bool]:
    """(the names a body's control flow and copy sizes read, whether it sets a variable that lives
    on after a pass -- one the body did not declare -- or calls a stage): a local the body
    defines (let, var, val) reads what its expression reads."""
    names: set = set()
    effects = False
    defined: dict = {}
    local = set() if local is None else local
    for node in body:
        if isinstance(node, (CopyIn, CopyOut)):
            _names(node.rows, names), _names(node.cols, names)
        elif isinstance(node, GatherRow):
            _names(node.cols, names)
        elif isinstance(node, For):
            for e in (node.start, node.end, node.step):
                _names(e, names)
            inner, fx = _shape_names(node.body, local | {node.var})
            names |= inner - {node.var}
            effects |= fx
        elif isinstance(node, If):
            _names(node.cond, names)
            for b in (node.then, node.orelse):
                inner, fx = _shape_names(b, local)
                names |= inner
                effects |= fx
        elif isinstance(node, (Let, Var, Scalar)):
            defined.setdefault(node.var, set()).update(_names(node.expr, set()))
            local.add(node.var)
        elif isinstance(node, Set):
            if node.var not in local:
                effects = True
            defined.setdefault(node.var, set()).update(_names(node.expr, set()))
        elif isinstance(node, (Call, Return)):
            effects = True
    for _ in range(len(defined)):   # a local the sizes read reads what it was defined from
        grown = names.union(*(defined[v] for v in names if v in defined))
        if grown == names:
            break
        names = grown
    return names, effects


class _Walk:
    def __init__(self, k: TileKernel, env: dict, total: list):
        self.k = k
        self.env = env
        self.total = total
        self.stages = {st.name: st for st in k.stages}
        self.itemsize = {g.name: g.dtype.itemsize for g in k.gms}
        self.uniform: dict = {}   # id(For) -> whether its passes copy the same bytes

    def ev(self, e):
        return evaluate(e, self.env)

    def run(self, body) -> None:
        for node in body:
            self.node(node)

    def node(self, node) -> None:
        env = self.env
        if isinstance(node, (Let, Var)):
            env[node.var] = self.ev(node.expr)
        elif isinstance(node, Set):
            v = self.ev(node.expr)
            if v or node.op != "/=":   # (the interpreter refuses a division by zero; nothing to count)
                assign(env, node, v)
        elif isinstance(node, For):
            start, end, step = self.ev(node.start), self.ev(node.end), self.ev(node.step)
            passes = range(start, end, step) if not node.down else range(end - 1, start - 1, -1)
            if not passes:
                return
            if self._uniform(node):   # every pass copies what the first does
                env[node.var] = passes[0]
                before = self.total[0]
                self.run(node.body)
                self.total[0] += (self.total[0] - before) * (len(passes) - 1)
                return
            for i in passes:
                env[node.var] = i
                self.run(node.body)
        elif isinstance(node, If):
            self.run(node.then if self.ev(node.cond) else node.orelse)
        elif isinstance(node, (CopyIn, CopyOut)):
            rows, cols = self.ev(node.rows), self.ev(node.cols)
            self.ev(node.offset)   # (a GM element read for an address counts too)
            self.total[0] += rows * cols * self.itemsize[node.gm]
        elif isinstance(node, GatherRow):
            self.ev(node.pos)
            self.total[0] += self.itemsize[node.index] + self.ev(node.cols) * self.itemsize[node.table]
        elif isinstance(node, Call):
            st = self.stages[node.stage]
            if st.param:
                env[st.param] = self.ev(node.arg)
            self.run(st.body)
        elif isinstance(node, Return):
            raise _Return()
        elif isinstance(node, (Scalar, Put)):
            with np.errstate(all="ignore"):
                try:
                    value = self.ev(node.expr)
                    if isinstance(node, Put):
                        self.ev(node.index)
                except (ZeroDivisionError, ValueError, OverflowError):
                    value = 0
            if isinstance(node, Scalar):
                env[node.var] = value
        elif isinstance(node, Dup) and not isinstance(node.value, (float, bool)):
            self.ev(node.value)

    def _uniform(self, node: For) -> bool:
        known = self.uniform.get(id(node))
        if known is None:
            names, effects = _shape_names(node.body)
            known = self.uniform[id(node)] = not effects and node.var not in names
        return known


def kernel_gm_bytes(k: TileKernel, words=None) -> int | None:
    """Bytes the kernel reads from and writes to GM in one launch with these tiling words (None:
    its own), or None for a kernel with Matmul objects (the Matmul API's own traffic is not in
    the IR) or of parts."""
    if k.matmuls or k.parts or k.process is not None:
        return None
    if any(g.name is None for g in k.gms):   # a synthetic kernel (the report's one-op baselines) with unnamed tensors
        return None
    words = list(k.words if words is None else words)
    if len(words) != k.word_count:
        return None
    memo = k.__dict__.setdefault("_gm_bytes", {})   # a report asked again (a notebook display)
    if tuple(words) not in memo:
        memo[tuple(words)] = _walk_kernel(k, words)
    return memo[tuple(words)]


def _walk_kernel(k: TileKernel, words: list) -> int:
    env0 = {}
    for name, (w, n) in k.field_offsets().items():
        env0["t." + name] = words[w] if n == 0 else words[w:w + n]
    for f in k.fields:
        if f.ctype != "uint32_t":
            env0["t." + f.name] = 0   # a runtime scalar: its value steers nothing counted
    total = [0]
    for g in k.gms:
        env0["gm:" + g.name] = _Counter(g.dtype.itemsize, total)
    env0["ub"] = lambda tensor, index: np.float32(0)
    tiles, per_core = env0.get("t.totalTiles", 0), env0.get("t.tilesPerCore", 0)
    blocks = -(-tiles // per_core) if per_core else 0
    walk = None
    for b in range(blocks):
        env = dict(env0)
        for m in k.members:   # Init: a scalar member's GM element is read once per core
            env[m.name] = 0 if m.init is None else evaluate(m.init, env)
        walk = _Walk(k, env, total) if walk is None else walk
        walk.env = env
        try:
            for st in k.stages:
                if st.once:
                    walk.run(st.body)
            for tile in range(b * per_core, min(tiles, (b + 1) * per_core)):
                for st in k.stages:
                    if st.once:
                        continue
                    if st.param:
                        env[st.param] = tile
                    walk.run(st.body)
        except _Return:
            pass
    return total[0]

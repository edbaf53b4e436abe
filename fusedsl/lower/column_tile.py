"""The column kind as a loop-level tile kernel (tile/kernel.py): what printer_kernel.py prints
and kernel_interp.py runs for a ColumnSchedule (lower/column.py: the [A, K, B] view, `bn`
outputs per tile, `kt` rows of K per DMA).

One stage per tile, `Tile(tile)`:

    a, b0, n     the tile's slice a and its columns b0 .. b0+n of B
    col inputs   one row of n values each (CopyIn), read once per tile
    per phase    its col ops (Steps on [n] rows); when it has reductions, their float32
                 accumulators set to the identities, then k walks 0..K-1 in groups of `kt`
                 rows: one strided CopyIn per elem input (rows `sk` apart in GM, `bn` apart in
                 UB), and per row the phase's elem ops (Steps) and reduction folds (Add / Max /
                 Min; 16-bit rows cast to float32 first) in program order; mean divides by K, a
                 non-float32 result is rounded once (Cast)
    outputs      an exact copy into the output queue (Muls by 1 / Adds 0), CopyOut of n values

When one DMA group holds all of K (`resident`) later walks read the rows already in UB: the
elem tensors are declared before the first walk and freed after the last.  A host schedule's
kernel (lower/column.py) reads its strides from fields `sa<i>` / `sk<i>`, folds integer and bool
rows into int32 accumulators (the Add / Max / Min widen them) from the operand dtype's extreme,
and narrows an 8-bit or bool max / min back with one Cast.  Tensor, queue and
member names derive from parameter indices (e3, q_e3, v3), never from user strings.
"""
from __future__ import annotations

from .. import dtypes as dt
from ..tile.kernel import (Alloc, CopyIn, CopyOut, Decl, DeQue, Dup, EnQue, Field, For, Free, Gm, Let, Member,
                           Queue, Ref, Stage, Step, TileKernel, Vec, add, mul, name_temporaries, output_names)
import numpy as np

from .column import ColumnSchedule, column_values, compute_column_tiling, needs_wide
from .row import FOLD
from .vector import compute_dtype

IDENTITY = {"sum": 0.0, "mean": 0.0, "max": float("-inf"), "min": float("inf")}
FIELDS = ("A", "K", "B", "bn", "kt", "colTiles", "totalTiles", "tilesPerCore", "blockDim")


def identity(op):
    """A reduction's start value: numpy's identity in its accumulator (an integer or bool
    operand's int32 one: the operand dtype's extreme, as the row kind's int32 lanes start)."""
    d = op.operands[0].dtype
    if d.is_float:
        return IDENTITY[op.name]
    info = np.iinfo(np.uint8 if d == dt.bool_ else d.np)
    return {"sum": 0, "max": int(info.min), "min": int(info.max)}[op.name]


class _Lowering:
    def __init__(self, s: ColumnSchedule):
        self.s = s
        self.plan = s.plan
        self.elems = [p for p in s.params if p.kind == "elem"]
        self.cols = [p for p in s.params if p.kind == "col"]
        self.reds = [op for ph in s.plan.phases for op in ph.reductions]
        self.wide = any(needs_wide(op) for op in self.reds)
        self.colbuf = {id(v): f"col{j}" for j, v in enumerate(column_values(s))}
        self.form = {p.index: p for p in s.plan.params}

    # ---- values -------------------------------------------------------------------------------
    def col(self, v) -> Ref:
        """The UB row holding per-column value v."""
        p = self.plan.param_of(v)
        if p is not None:
            return Ref(f"c{p.index}")
        if id(v) in self.colbuf:
            return Ref(self.colbuf[id(v)])
        return Ref(next(f"acc{r}" for r, op in enumerate(self.reds) if op.result is v))   # a float32 result

    def elem(self, v) -> Ref:
        """Row r of elem value v: a row of an input's DMA group, or its row buffer."""
        p = self.plan.param_of(v)
        if p is not None:
            return Ref(f"e{p.index}", mul("r", "t.bn"))
        d, i = self.s.row_assign[id(v)]
        return Ref(f"{d.name}_e{i}")

    def step(self, st) -> Step:
        """One elementwise op: its tile stmts on this kernel's tensors."""
        sched = st.sched
        names: dict = {}
        scalars = []
        for inp in sched.inputs:
            src = st.sources[inp.index]
            p = self.plan.param_of(src)
            if inp.var:   # a size-1 tensor or a runtime scalar
                scalars.append((inp.var, f"v{p.index}"))
            elif inp.slot:
                kind = self.plan.kinds[id(src)] if p is None else p.kind
                names[inp.slot] = self.elem(src) if kind == "elem" else self.col(src)
        res = st.op.result
        names[sched.outputs[0].slot] = self.elem(res) if st.kind == "elem" else self.col(res)
        prefill = name_temporaries(sched, names, lambda d, i: Ref(f"{d.name}_t{i}"))
        label = f"{st.op.name} ({st.op.loc})"
        return Step(label, tuple(sched.stmts), tuple(names.items()), tuple(scalars),
                    tuple((ref, value, add("t.bn", self.s.slack)) for ref, value, _ in prefill))

    def fold(self, op) -> list:
        r = self.reds.index(op)
        x = op.operands[0]
        src = self.elem(x)
        L = []
        if x.dtype.is_float and x.dtype != dt.float32:   # 16-bit rows accumulate in float32 (integer and
            # bool ones in int32: the fold widens them, numpy's promotion)
            L.append(Vec("Cast", Ref("wide"), (src,), "n", mode="CAST_NONE"))
            src = Ref("wide")
        return L + [Vec(FOLD[op.name], Ref(f"acc{r}"), (Ref(f"acc{r}"), src), "n")]

    def finish(self, op) -> list:
        """mean's division by K and the rounding to the result dtype, after the walk."""
        r = self.reds.index(op)
        L = []
        if op.name == "mean":
            L += [Dup(Ref("wide"), "t.K", "n"), Vec("Div", Ref(f"acc{r}"), (Ref(f"acc{r}"), Ref("wide")), "n")]
        yt, acc = op.result.dtype, self.s.accumulator(op)
        if yt != acc:   # rounded once to the result dtype, as the vector scheduler casts (an integer
            # max / min narrowed back: exact)
            modes = self.s.target.cast_modes.get((acc.ascendc, yt.ascendc), frozenset())
            L.append(Vec("Cast", Ref(self.colbuf[id(op.result)]), (Ref(f"acc{r}"),), "n",
                         mode="CAST_RINT" if "CAST_RINT" in modes else "CAST_NONE"))
        return L

    def walk(self, ph, held: set, last_walk: bool) -> list:
        """One walk over K: the phase's elem ops and reduction folds, row by row."""
        L = [Dup(Ref(f"acc{self.reds.index(op)}"), identity(op), "n") for op in ph.reductions]
        need = [p for p in self.elems if any(q.index == p.index for q in self.plan.elem_params(ph))]
        resident = self.s.resident
        loads = [p for p in (self.elems if resident else need) if p.index not in held]
        frees = list(self.elems if resident else need) if (last_walk or not resident) else []
        group = [Let("rows", ("min", "t.kt", ("-", "t.K", "k0")))]
        for p in loads:
            sa, sk = self.strides(p)
            e, q = f"e{p.index}", f"q_e{p.index}"
            group += [Alloc(e, q),
                      CopyIn(e, p.name, add(mul("a", sa), mul("k0", sk), "b0"), "rows", "n", sk, "t.bn"),
                      EnQue(q, e), DeQue(e, q)]
        if resident:
            held |= {p.index for p in loads}
        steps = {id(st.op): st for st in ph.elem_ops}
        row = []
        for op in self.plan.fn.ops:
            if id(op) in steps:
                row.append(self.step(steps[id(op)]))
            elif op in ph.reductions:
                row += self.fold(op)
        group.append(For("r", 0, "rows", tuple(row)))
        group += [Free(f"q_e{p.index}", f"e{p.index}") for p in frees]
        L.append(For("k0", 0, "t.K", tuple(group), step="t.kt"))
        for op in ph.reductions:
            L += self.finish(op)
        return L

    def strides(self, p) -> tuple:
        """(sa, sk) of an elem or col parameter over [A, K, B]: numbers in a printed kernel, the
        tiling's words in a host schedule's (its sizes may be symbolic; kernels of one program
        over other shapes are then one kernel)."""
        if self.s.host:
            return f"t.sa{p.index}", f"t.sk{p.index}"
        f = self.form[p.index]
        return f.sa, f.sk

    # ---- the kernel ---------------------------------------------------------------------------
    def kernel(self) -> TileKernel:
        s, plan = self.s, self.plan
        outs = output_names(s.params, len(s.fn.results))
        fields = [Field(f) for f in FIELDS]
        if s.host:   # ColumnTiling.strides
            fields += [Field(f"{w}{p.index}") for p in s.stride_params for w in ("sa", "sk")]
        fields += [Field(f"s{p.index}", 0, "float" if p.dtype.is_float else "int32_t")
                   for p in s.params if p.kind == "runtime_scalar"]
        gms = [Gm(p.name, p.dtype, "in", p.index) for p in s.params if p.kind != "runtime_scalar"]
        gms += [Gm(outs[i], v.dtype, "out", i) for i, v in enumerate(s.fn.results)]
        row = add("t.bn", s.slack)
        queues = [Queue(f"q_e{p.index}", "VECIN", s.depth, p.dtype, mul("t.kt", "t.bn")) for p in self.elems]
        queues += [Queue(f"q_c{p.index}", "VECIN", 1, p.dtype, "t.bn") for p in self.cols]
        queues += [Queue(f"q_y{i}", "VECOUT", 2, v.dtype, "t.bn") for i, v in enumerate(s.fn.results)]
        tbufs = [(f"acc{r}", s.accumulator(op), "t.bn") for r, op in enumerate(self.reds)]
        tbufs += [("wide", dt.float32, "t.bn")] if self.wide else []
        tbufs += [(self.colbuf[id(v)], v.dtype, row) for v in column_values(s)]
        for kind, counts in (("e", s.row_counts), ("t", s.temps)):
            tbufs += [(f"{d.name}_{kind}{i}", d, row) for d, n in counts.items() for i in range(n)]
        queues += [Queue(f"b_{name}", "VECCALC", 1, d, elems) for name, d, elems in tbufs]
        members = [Member(f"v{p.index}", f"t.s{p.index}" if p.kind == "runtime_scalar" else ("load", p.name),
                          compute_dtype(p.dtype)) for p in s.params if p.kind in ("runtime_scalar", "scalar")]
        body = [Let("a", ("/", "tile", "t.colTiles")),
                Let("b0", mul(("%", "tile", "t.colTiles"), "t.bn")),
                Let("n", ("min", "t.bn", ("-", "t.B", "b0")))]
        body += [Alloc(name, f"b_{name}") for name, _, _ in tbufs]
        body += [Decl(f"e{p.index}", f"q_e{p.index}") for p in self.elems]   # held across walks when resident
        for p in self.cols:   # one row of B values of slice a, read once per tile
            c, q = f"c{p.index}", f"q_c{p.index}"
            body += [Alloc(c, q), CopyIn(c, p.name, add(mul("a", self.strides(p)[0]), "b0"), 1, "n", "n", "t.bn"),
                     EnQue(q, c), DeQue(c, q)]
        held: set = set()
        walks = [ph for ph in plan.phases if ph.walks]
        for ph in plan.phases:
            body += [self.step(st) for st in ph.col_ops]
            if ph.walks:
                body += self.walk(ph, held, ph is walks[-1])
        for i, v in enumerate(s.fn.results):
            y, q = f"y{i}", f"q_y{i}"
            # an exact copy into the queue; 910A has no int32 Adds: y = 0, then y = col + y
            if v.dtype.is_float:
                copy = [Vec("Muls", Ref(y), (self.col(v),), "n", scalar=1.0)]
            elif s.target.supports("Adds", v.dtype.ascendc) or not s.target.supports("Add", v.dtype.ascendc):
                copy = [Vec("Adds", Ref(y), (self.col(v),), "n", scalar=0)]
            else:
                copy = [Dup(Ref(y), 0, "n"), Vec("Add", Ref(y), (self.col(v), Ref(y)), "n")]
            body += [Alloc(y, q), *copy, EnQue(q, y), DeQue(y, q),
                     CopyOut(outs[i], add(mul("a", "t.B"), "b0"), y, 1, "n", "n", "n"), Free(q, y)]
        body += [Free(f"q_c{p.index}", f"c{p.index}") for p in self.cols]
        words = () if s.symbols else compute_column_tiling(s, s.target).words
        return TileKernel(s.fn.name, "column", s.plan_note, fields, gms, queues, members,
                          [Stage("Tile", "tile", tuple(body))], tuple(words))


def column_tile_kernel(sched: ColumnSchedule) -> TileKernel:
    return _Lowering(sched).kernel()

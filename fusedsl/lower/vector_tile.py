"""The vector kind as a loop-level tile kernel (tile/kernel.py): what printer_kernel.py prints
and kernel_interp.py runs for a VectorSchedule (lower/vector.py: one tile program over the
collapsed iteration dims, or a view kernel's loads through the box table of tile/tiling.py).

The tiling struct is the vector Tiling word by word (R, C, Cpad, tileRows, tileCols, colTiles,
totalTiles, tilesPerCore, blockDim, tileElems, rowsMode, then `dims`); an elementwise kernel
adds per GM input its element stride per dim (`st<i>`, 0 = broadcast), a view kernel the box
table (`nBoxes`, `box`: VIEW_BOX_HEAD + VIEW_LOAD_WORDS words per box, flat).  An elementwise
kernel's sizes may be symbolic: its words come from the host tiling at run time
(backend_ascendc/host_vector.py mirrors tile/tiling.compute_tiling), so the kernel carries no
words; a view kernel's shapes are static and it carries them.

Stages, as Process calls them:

    Prologue (once)  the tensors filled once per core: Compare's pre-filled lanes and
                     constant tensors, broadcast rows (read once, copied to every row of a
                     tile), and the hoisted stmts on them, segment by segment
    Geometry(tile)   the tile's rows and columns (rows mode: whole rows; else a chunk of one
                     row; a view kernel: the tile's box and its rows) and its segments: all
                     rows at once when UB rows are packed, else row by row
    CopyIn           per GM input its tile (one strided copy, or per row at the row's offset
                     from the strides; a broadcast last dim fills the row with one GM value);
                     per view load its rows (LoadView / GatherRow addressing below)
    Compute          the tile program (one Step per segment)
    CopyOut          each output's tile, one strided copy

A view load reads, per box, words v = box[b][VIEW_BOX_HEAD + j * VIEW_LOAD_WORDS ..]: v0 which
source (a concatenation), v1 offset, v2 row stride, v3 column stride (1, or 0: one value per
row), v4 / v5 the indices' offset and row stride for a gather.  Rows that overlap (v2 < cols)
are copied one by one, one row for every row (v2 == 0) is read once and copied in UB.

Tensor and member names never carry user strings: slots keep the scheduler's names when they
are plain ASCII (`in_x_0`), else `slot<i>`; scalars are `v<param index>`.
"""
from __future__ import annotations

import re

from ..tile.ir import Tiling, VectorSchedule
from ..tile.kernel import (Alloc, Barrier, CopyIn, CopyOut, DeQue, Dup, EnQue, Field, For, Free, GatherRow, Gm, If,
                           Let, Member, Move, Queue, Ref, Set, Stage, Step, TileKernel, UbCopy, Var, add, mul,
                           output_names)
from ..tile.tiling import VIEW_BOX_HEAD, VIEW_LOAD_WORDS, compute_tiling
from .vector import compute_dtype

FIELDS = ("R", "C", "Cpad", "tileRows", "tileCols", "colTiles", "totalTiles", "tilesPerCore", "blockDim",
          "tileElems", "rowsMode")
TILE_STATE = ("row0", "nrows", "col0", "ncols", "nSeg", "segLen", "segStride")
QUEUED = ("full", "general", "view", "gather")   # inputs that move through a VECIN queue per tile
PLAIN_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)*_?")   # a name printed as it is


def _slots(stmts) -> set[str]:
    """The UB slots tile stmts read or write."""
    return {x for st in stmts for x in (st.dst, *st.srcs, *st.aux)}


def _replicated_row(x: str, gm: str, offset, rows, cols, itemsize: int, body: str) -> list:
    """One row of `cols` elements read from GM once into row 0 of x, then copied in UB to rows
    1 .. rows-1 (UB rows t.Cpad apart): its 32-byte blocks by DataCopy (local `body`: their
    elements), the rest element by element."""
    kb = 32 // itemsize
    return [CopyIn(x, gm, offset, 1, cols, cols, "t.Cpad"), Barrier("one row read from GM"),
            Let(body, mul(("/", cols, kb), kb)),
            For("r", 1, rows, (
                If((">", body, 0), (UbCopy(x, mul("r", "t.Cpad"), x, 0, body),)),
                For("i", body, cols, (Move(x, add(mul("r", "t.Cpad"), "i"), x, "i"),)))),
            Barrier("copied to every row of a tile")]


def _chain(arms) -> tuple:
    """`if c0: b0 elif c1: b1 ... else: bn` of [(c, body)], the last arm's condition dropped: the
    arms given are the ones some tile reaches, so a tile that fails every other condition takes
    the last (an arm no tile reaches may be left out of the chain without changing any tile's)."""
    chain: tuple = arms[-1][1]
    for cond, body in reversed(arms[:-1]):
        chain = (If(cond, body, chain),)
    return chain


def _box(i) -> tuple:
    """Word i of the tile's box row (local `bx` = box * width)."""
    return ("[]", "t.box", add("bx", i))


class _Lowering:
    def __init__(self, s: VectorSchedule):
        self.s = s
        self.views = s.views is not None
        self.k = len(s.dims)
        self.params = s.params
        self.loads = [i for i in s.inputs if i.kind in ("view", "gather")]
        self.width = VIEW_BOX_HEAD + VIEW_LOAD_WORDS * len(self.loads)
        self.tensor = {name: (name if PLAIN_NAME.fullmatch(name) else f"slot{j}") for j, name in enumerate(s.slots)}
        self.gm_of = {i.index: i.name for i in self.params}
        self.elems = add("t.tileElems", s.slack_elems)
        # static shapes: the launch's tiling (its box table) is known when the kernel is lowered
        self.tiling = compute_tiling(s, {}, s.target) if self.views else None
        self.boxes = self.tiling.boxes if self.views else ()

    def queue(self, slot: str) -> str:
        role = self.s.slots[slot].role
        return ("q_" if role in ("in", "out") else "b_") + self.tensor[slot]

    def t(self, slot: str) -> str:
        return self.tensor[slot]

    def step(self, label: str, stmts, offset) -> Step:
        used = _slots(stmts)
        names = tuple((slot, Ref(self.t(slot))) for slot in self.s.slots if slot in used)
        read = {st.scalar[1] for st in stmts if st.scalar is not None and st.scalar[0] == "var"}
        scalars = tuple((i.var, f"v{i.index}") for i in self.params if i.var in read)
        return Step(label, tuple(stmts), names, scalars, (), offset)

    # ---- stages ---------------------------------------------------------------------------------
    def prologue(self) -> list:
        s = self.s
        rows = [i.slot for i in self.params if i.kind == "row"]
        used = _slots(s.hoisted) | set(s.prefill) | set(rows)
        L = [Alloc(self.t(n), self.queue(n)) for n in s.slots if n in used]
        for n, value in s.prefill.items():   # lanes Compare may read past a count
            L.append(Dup(Ref(self.t(n)), value, self.elems))
        for j, inp in enumerate(i for i in self.params if i.kind == "row"):
            L += _replicated_row(self.t(inp.slot), inp.name, 0, "t.tileRows", "t.C", inp.gm_dtype.itemsize, f"body{j}")
        if s.hoisted:
            L += [Var("segs", "t.tileRows"), Var("hn", "t.C"),
                  If(("==", "t.Cpad", "t.C"), (Set("segs", 1), Set("hn", mul("t.tileRows", "t.C")))),
                  For("seg", 0, "segs", (Let("n", "hn"), self.step("hoisted", s.hoisted, mul("seg", "t.Cpad"))))]
        return L

    def segments(self) -> list:
        """nSeg / segLen / segStride: all rows at once when UB rows are packed, else row by row."""
        return [Set("nSeg", "nrows"), Set("segLen", "ncols"), Set("segStride", "t.Cpad"),
                If(("||", ("==", "t.Cpad", "ncols"), ("==", "nrows", 1)),
                   (Set("nSeg", 1), Set("segLen", mul("nrows", "ncols")), Set("segStride", 0)))]

    def geometry(self) -> list:
        if self.views:
            W = self.width
            return [Set("box", 0),
                    For("b", 1, "t.nBoxes", (If(("<=", ("[]", "t.box", mul("b", W)), "tile"), (Set("box", "b"),)),)),
                    Let("bx", mul("box", W)),
                    Set("row0", mul(("-", "tile", _box(0)), _box(3))),
                    Set("nrows", ("min", _box(3), ("-", _box(1), "row0"))),
                    Set("col0", 0), Set("ncols", _box(2))] + self.segments()
        return [If("t.rowsMode",
                   (Set("row0", mul("tile", "t.tileRows")), Set("nrows", ("min", "t.tileRows", ("-", "t.R", "row0"))),
                    Set("col0", 0), Set("ncols", "t.C")),
                   (Set("row0", ("/", "tile", "t.colTiles")), Set("nrows", 1),
                    Set("col0", mul(("%", "tile", "t.colTiles"), "t.tileCols")),
                    Set("ncols", ("min", "t.tileCols", ("-", "t.C", "col0")))))] + self.segments()

    def copy_in(self) -> list:
        L = []
        if self.views:
            L.append(Let("bx", mul("box", self.width)))
        for inp in self.s.inputs:
            if inp.kind not in QUEUED:
                continue
            x, q = self.t(inp.slot), self.queue(inp.slot)
            L.append(Alloc(x, q))
            if inp.kind == "full":
                L.append(CopyIn(x, inp.name, add(mul("row0", "t.C"), "col0"), "nrows", "ncols", "t.C", "t.Cpad"))
            elif inp.kind == "general":
                L.append(For("r", 0, "nrows", self.general_row(inp, x)))
            else:
                L += self.load(self.loads.index(inp), inp, x)
            L.append(EnQue(q, x))
        return L

    def general_row(self, inp, x) -> tuple:
        """Row r of a broadcast input: its GM offset from the per-dim strides of the outer dims."""
        L = [Var("g", add("row0", "r")), Var("off", 0),
             For("i", 0, self.k - 1, (Set("off", mul(("%", "g", ("[]", "t.dims", "i")), ("[]", f"t.st{inp.index}", "i")),
                                          "+="),
                                      Set("g", ("[]", "t.dims", "i"), "/=")), down=True)]
        if inp.bits and not inp.bits[-1]:   # one value per row: fill the row with it
            L.append(Dup(Ref(x, mul("r", "t.Cpad")), ("load", inp.name, "off"), "ncols"))
        else:
            L.append(CopyIn(x, inp.name, add("off", "col0"), 1, "ncols", "ncols", "ncols", ub_off=mul("r", "t.Cpad")))
        return tuple(L)

    def load(self, j: int, inp, x) -> list:
        plan = self.s.views.loads[j]
        w = VIEW_BOX_HEAD + j * VIEW_LOAD_WORDS
        v = [_box(w + i) for i in range(VIEW_LOAD_WORDS)]
        if plan.gather is not None:
            idx_param, bound, row_len = plan.gather
            return [For("r", 0, "nrows", (
                GatherRow(Ref(x, mul("r", "t.Cpad")), self.gm_of[plan.sources[0]], self.gm_of[idx_param],
                          add(v[4], mul(add("row0", "r"), v[5])), bound, row_len, v[1], "ncols"),))]
        arms = self.reached_arms(w)
        return list(_chain([(("==", v[0], k), tuple(self.view_rows(j, x, self.gm_of[src], v, arms.get(k, set()))))
                            for k, src in enumerate(plan.sources) if k in arms or not arms]))

    def reached_arms(self, w: int) -> dict[int, set[str]]:
        """{source: the `view_rows` forms its boxes take} over the launch's box table for the load at
        box word w: the CopyIn holds those only (a concatenation of two row-major inputs: one
        strided copy per source, not 4 forms x 2 sources -- a third of the host's compile).  A tile
        of one row takes the strided form whatever the row stride."""
        out: dict[int, set[str]] = {}
        for row in self.boxes:
            _, rows, cols, per_tile = row[:4]
            sel, rs, cs = row[w], row[w + 2], row[w + 3]
            tiles = -(-rows // per_tile)
            counts = {per_tile if tiles > 1 else rows, rows - (tiles - 1) * per_tile}
            forms = out.setdefault(sel, set())
            if cs == 0:
                forms.add("column")
                continue
            many = any(c > 1 for c in counts)
            if any(c == 1 for c in counts) or rs >= cols:
                forms.add("strided")
            if many and rs == 0:
                forms.add("replicate")
            elif many and rs < cols:
                forms.add("per_row")
        return out

    def view_rows(self, j: int, x: str, src: str, v, reached: set[str]) -> list:
        per_row = For("r", 0, "nrows", (
            CopyIn(x, src, add(v[1], mul(add("row0", "r"), v[2])), 1, "ncols", "ncols", "t.Cpad",
                   ub_off=mul("r", "t.Cpad")),))
        replicate = _replicated_row(x, src, v[1], "nrows", "ncols", self.s.slots[self.loads[j].slot].dtype.itemsize,
                                    f"body{j}")
        strided = CopyIn(x, src, add(v[1], mul("row0", v[2])), "nrows", "ncols", v[2], "t.Cpad")
        column = For("r", 0, "nrows", (Dup(Ref(x, mul("r", "t.Cpad")), ("load", src, add(v[1], mul(add("row0", "r"), v[2]))),
                                           "ncols"),))
        many = (">", "nrows", 1)
        forms = [(("==", v[3], 0), (column,), "column"), (("&&", many, ("==", v[2], 0)), tuple(replicate), "replicate"),
                 (("&&", many, ("<", v[2], "ncols")), (per_row,), "per_row"), (None, (strided,), "strided")]
        return list(_chain([(cond, body) for cond, body, name in forms if name in reached or not reached]))

    def compute(self) -> list:
        s = self.s
        L = [DeQue(self.t(i.slot), self.queue(i.slot)) for i in s.inputs if i.kind in QUEUED]
        L += [Alloc(self.t(o.slot), self.queue(o.slot)) for o in s.outputs]
        used = _slots(s.body)
        L += [Alloc(self.t(n), self.queue(n)) for n, sl in s.slots.items()
              if sl.role in ("tmp", "inv", "scratch") and n in used]
        L.append(For("seg", 0, "nSeg", (Let("n", "segLen"), self.step("compute", s.body, mul("seg", "segStride")))))
        L += [EnQue(self.queue(o.slot), self.t(o.slot)) for o in s.outputs]
        L += [Free(self.queue(i.slot), self.t(i.slot)) for i in s.inputs if i.kind in QUEUED]
        return L

    def copy_out(self, outs) -> list:
        L = [Let("bx", mul("box", self.width))] if self.views else []
        for o in self.s.outputs:
            y, q = self.t(o.slot), self.queue(o.slot)
            if self.views:
                copy = CopyOut(outs[o.index], add(_box(4), mul("row0", _box(5))), y, "nrows", "ncols", _box(5), "t.Cpad")
            else:
                copy = CopyOut(outs[o.index], add(mul("row0", "t.C"), "col0"), y, "nrows", "ncols", "t.C", "t.Cpad")
            L += [DeQue(y, q), copy, Free(q, y)]
        return L

    # ---- the kernel ---------------------------------------------------------------------------
    def kernel(self) -> TileKernel:
        s = self.s
        fields = [Field(f) for f in FIELDS] + [Field("dims", self.k)]
        gm_in = [i for i in self.params if i.kind != "runtime_scalar"]
        words: tuple = ()
        if self.views:
            words = tuple(tiling_words(s, self.tiling))
            nb = len(self.boxes)
            fields += [Field("nBoxes"), Field("box", max(1, nb * self.width))]
        else:
            fields += [Field(f"st{i.index}", self.k) for i in gm_in]
        fields += [Field(f"s{i.index}", 0, "float" if i.gm_dtype.is_float else "int32_t")
                   for i in self.params if i.kind == "runtime_scalar"]
        outs = output_names(self.params, len(s.outputs))
        gms = [Gm(i.name, i.gm_dtype, "in", i.index) for i in gm_in]
        gms += [Gm(outs[o.index], o.gm_dtype, "out", o.index) for o in s.outputs]
        queues = []
        for name, slot in s.slots.items():
            position = {"in": "VECIN", "out": "VECOUT"}.get(slot.role, "VECCALC")
            queues.append(Queue(self.queue(name), position, slot.num if position != "VECCALC" else 1, slot.dtype,
                                self.elems))
        members = [Member(f"v{i.index}", f"t.s{i.index}" if i.kind == "runtime_scalar" else ("load", i.name),
                          compute_dtype(i.gm_dtype)) for i in self.params if i.kind in ("runtime_scalar", "scalar")]
        members += [Member(m) for m in TILE_STATE + (("box",) if self.views else ())]
        stages = [Stage("Prologue", None, tuple(self.prologue()), once=True),
                  Stage("Geometry", "tile", tuple(self.geometry())),
                  Stage("CopyIn", None, tuple(self.copy_in())),
                  Stage("Compute", None, tuple(self.compute())),
                  Stage("CopyOut", None, tuple(self.copy_out(outs)))]
        stages = [st for st in stages if st.body]
        note = "a view kernel (slice / concatenate / take loads)" if self.views else "an elementwise kernel"
        return TileKernel(s.kernel.name, "view" if self.views else "vector", note, fields, gms, queues, members,
                          stages, words)


def vector_tile_kernel(sched: VectorSchedule) -> TileKernel:
    return _Lowering(sched).kernel()


def tiling_words(sched: VectorSchedule, t: Tiling) -> list[int]:
    """The tiling struct's uint32 words for this launch, in vector_tile_kernel's field order."""
    words = [t.R, t.C, t.Cpad, t.tile_rows, t.tile_cols, t.col_tiles, t.total_tiles, t.tiles_per_core,
             t.block_dim, t.tile_elems, int(t.rows_mode)] + list(t.dims)
    if sched.views is not None:
        flat = [w for row in t.boxes for w in row]
        return words + [len(t.boxes)] + (flat or [0])
    for inp, strides in zip(sched.inputs, t.strides):
        if inp.kind not in ("runtime_scalar", "view", "gather"):
            words += list(strides)
    return words



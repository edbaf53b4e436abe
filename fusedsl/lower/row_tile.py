"""The row kind as a loop-level tile kernel (tile/kernel.py): what printer_kernel.py prints and
kernel_interp.py runs for a RowSchedule (lower/row.py: tiles of whole rows, or passes over
chunks of a row bigger than UB).

The tiling struct is the RowTiling word by word: R, C, Cpad, tileRows, totalTiles,
tilesPerCore, blockDim, `dims` (the outer dims, outermost first) and per parameter that is
read row by row through strides (a "general" row or a "perrow" value) `st<param index>`,
its element stride per outer dim (0 = broadcast); runtime scalars follow as `s<param index>`.
Static shapes carry their words; a symbolic row shape gets them from the host tiling
(backend_ascendc/host_row.py mirrors lower/row.compute_row_tiling).

Single-read plan (a row fits UB), the stages Process calls per tile:

    Prologue (once)  the rows every row shares ("lastonly": gamma, beta) read once per core
    Geometry(tile)   row0, nrows: the tile's rows
    CopyIn           a tile of whole rows per row input (one DMA; a "general" input row by row
                     at its offset from the strides)
    Compute          row by row, every op in program order on UB row views (below)
    CopyOut          the tile of every row output (one DMA), the per-row values of the others

Multi-pass plan (a row bigger than UB): Geometry, then `Passes`: per pass of the row plan a
walk over the row in chunks of Cpad elements (CopyIn, the pass's ops, its reductions' folds,
CopyOut per chunk); softmax's max and sum walk together (the online recurrence), layer_norm's
mean and variance too (the shifted moments).

How a row's ops run:

* an elementwise op is a `Step`: the tile stmts the vector scheduler gave it (row_plan.OpStep),
  its slots mapped to the row's buffers (a per-row op's to 32-byte slots, count 1);
* a reduction casts a 16-bit row to float32 (`wide`), folds it into L float32 lanes with
  Add / Max / Min in chunks of L whose last count stops at the row's end (the pad is never
  read; the lanes start at the identity), halves the lanes to 64, and reduces them with one
  WholeReduce (CANN >= 9.1: ReduceRepeat); on 910A (no float reductions) the lanes are halved
  with binary ops to 8 and finished on the scalar unit; mean divides by C there, a 16-bit result
  is rounded once.  L is 64 (one 256-byte repeat) unless a static row kernel's schedule (its
  single-read rows, or the multi-pass plan's chunks) chose wider lanes (lower/row.fold_width: the width with the fewest modelled cycles,
  up to 1024; a call's fixed cost made a 4096-element row 64 calls per reduction);
* a per-row value reaches later ops as a typed scalar (`Scalar`; GetValue after a V_S sync)
  or, for ops on per-row values, as one element of a 32-byte slot of `rs_<dtype>` (`Put`, then
  an S_V sync).

Tensor, queue and member names derive from parameter indices and dtypes; a parameter's UB
tensor and queue add its name when that is plain ASCII (`in_x_0`, `q_in_x_0`: the report's UB
plan), else nothing of it (`in_0`). GM tensors keep the parameter's name: the printer makes it a
C++ name.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..tile.kernel import (Alloc, Barrier, CopyIn, CopyOut, DeQue, Dup, EnQue, Field, For, Free, Gm, Let, Member,
                           Put, Queue, Ref, Scalar, Set, Stage, Step, Sync, TileKernel, Var, Vec, add, mul,
                           name_temporaries, output_names)
from .row import FOLD, FOLD_LANES, RowSchedule, allocate_row_values, row_tiling_candidates, temp_pool
from .column_tile import IDENTITY
from .vector import compute_dtype
from .vector_tile import PLAIN_NAME

_SCALAR_FOLD = {"Add": "+", "Max": "fmax", "Min": "fmin"}
FIELDS = ("R", "C", "Cpad", "tileRows", "totalTiles", "tilesPerCore", "blockDim")
QUEUED = ("full", "general")          # row inputs that move through a VECIN queue per tile


def cann_at_least(version: str, want: tuple[int, int]) -> bool:
    parts = [int(p) for p in str(version).split(".")[:2] if p.isdigit()]
    return tuple((parts + [0, 0])[:2]) >= want


def _at(r: Ref, off) -> Ref:
    return Ref(r.tensor, add(r.offset, off))


class _Lowering:
    def __init__(self, s: RowSchedule, count="t.C", row_len="t.Cpad", out_row=None, bound=None):
        self.s = s
        self.C = count                   # the row's elements (a matmul epilogue: curN)
        self.row_len = row_len           # elements a row buffer holds before its slack
        # output i's row r, and the parameters a matmul epilogue binds to its own buffers
        self.out_row = out_row or (lambda i, d: Ref(f"y{i}", mul("r", "t.Cpad")))
        self.bound = bound
        t = s.target
        self.k = max(1, s.outer_rank)
        self.multi = s.passes is not None
        # the lanes a reduction folds a row (a multi-pass chunk) into: the schedule's width for a
        # static row kernel (lower/row.fold_width), 64 for a matmul's row epilogue
        self.width = s.fold_lanes if bound is None else FOLD_LANES
        self.new_api = cann_at_least(t.cann_version, (9, 1))
        self.float_reduce = "float" in t.api_dtypes.get("WholeReduceSum", frozenset())
        self.values = {id(p.value): i for i, p in enumerate(s.fn.params)}
        # a parameter's UB tensor and queue: in_x_0 / q_in_x_0 when its name is plain ASCII (the
        # report's UB plan reads them), else in_0; never other user text
        self.tag = {p.index: (f"_{p.name}_{p.index}" if p.name and PLAIN_NAME.fullmatch(p.name) else f"_{p.index}")
                    for p in s.params}
        self.n_sv = 0
        self.rs: dict = {}               # dtype -> 32-byte slots of rs_<dtype> handed out
        self.scal: dict = {}             # id(value) -> the typed scalar local holding it
        self.slot: dict = {}             # id(value) -> the UB Ref holding it

    # ---- names ---------------------------------------------------------------------------------
    def new_scalar(self) -> str:
        self.n_sv += 1
        return f"sv{self.n_sv - 1}"

    @staticmethod
    def rv(d, i) -> str:
        return f"rv_{d.name}_{i}"

    @staticmethod
    def tmp(d, i) -> str:
        return f"tmp_{d.name}_{i}"

    def rs_view(self, d) -> Ref:
        k = self.rs.get(d, 0)
        self.rs[d] = k + 1
        return Ref(f"rs_{d.name}", k * (32 // max(1, d.itemsize)))

    def strided(self):
        return [p for p in self.s.params if p.kind in ("general", "perrow")]

    def row_offset(self, p, g, var: str) -> list:
        """`var` = the GM element offset of global row g of parameter p (its strides per outer
        dim, innermost first, walking g down through the dims)."""
        L = [Var(f"{var}g", g), Var(var, 0)]
        for i in range(self.k - 1, -1, -1):
            L += [Set(var, ("*", ("%", f"{var}g", ("[]", "t.dims", i)), ("[]", f"t.st{p.index}", i)), "+="),
                  Set(f"{var}g", ("[]", "t.dims", i), "/=")]
        return L

    # ---- per-row values ------------------------------------------------------------------------
    def scalar_of(self, v, L: list) -> str:
        """The typed scalar holding per-row value v (read from its UB slot when it lives there)."""
        if id(v) not in self.scal:
            var = self.new_scalar()
            r = self.slot[id(v)]
            L += [Sync("V_S"), Scalar(var, v.dtype, ("get", r.tensor, r.offset))]
            self.scal[id(v)] = var
        return self.scal[id(v)]

    def slot_of(self, v, L: list) -> Ref:
        """A UB slot holding per-row value v at element 0 (written from its scalar when needed)."""
        if id(v) not in self.slot:
            view = self.rs_view(v.dtype)
            L += [Put(view.tensor, view.offset, self.scal[id(v)]), Sync("S_V")]
            self.slot[id(v)] = view
        return self.slot[id(v)]

    def param_setup(self, L: list) -> None:
        """Where each parameter's row (or value) lives for this row."""
        s = self.s
        if self.bound is not None:   # a matmul epilogue: its buffers hold the parameters
            self.slot.update(self.bound[0])
            self.scal.update(self.bound[1])
            for p in s.params:   # a row of one element held as a scalar: the row ops read a slot
                v = s.fn.params[p.index].value
                if p.kind in ("full", "general", "lastonly") and id(v) not in self.slot and id(v) in self.scal:
                    L.append(Sync("V_S"))   # the last row's ops have read the slot
                    self.slot_of(v, L)
            return
        for p in s.params:
            v = s.fn.params[p.index].value
            if self.multi and p.kind in ("full", "general", "lastonly"):
                self.slot[id(v)] = Ref(f"in{self.tag[p.index]}")        # this chunk of the row
            elif p.kind in QUEUED:
                self.slot[id(v)] = Ref(f"in{self.tag[p.index]}", mul("r", "t.Cpad"))
            elif p.kind == "lastonly":
                self.slot[id(v)] = Ref(f"row{self.tag[p.index]}")
            elif p.kind == "scalar":
                self.scal[id(v)] = f"v{p.index}"
            elif p.kind == "runtime_scalar":
                var = self.new_scalar()
                cd = compute_dtype(p.dtype)
                L.append(Scalar(var, cd, ("cast", cd, f"t.s{p.index}")))
                self.scal[id(v)] = var
            elif p.kind == "perrow":
                var = self.new_scalar()
                cd = compute_dtype(p.dtype)
                L += self.row_offset(p, "row0" if self.multi else add("row0", "r"), f"po{p.index}")
                L.append(Scalar(var, cd, ("cast", cd, ("cast", dt.float32, ("load", p.name, f"po{p.index}")))))
                self.scal[id(v)] = var

    # ---- reductions ----------------------------------------------------------------------------
    def fold(self, kind: str, lanes: Ref, src: Ref, n) -> list:
        """Fold n float32 elements of src into the lanes (the last chunk stops at n)."""
        w = self.width
        return [For("k", 0, n, (Vec(FOLD[kind], lanes, (lanes, _at(src, "k")), ("min", w, ("-", n, "k"))),), step=w)]

    def finish(self, kind: str, lanes: Ref, L: list) -> str:
        """The lanes reduced to one float32 scalar (returned: its local's name): halved to 64,
        then one WholeReduce (910A: halved to 8 and finished on the scalar unit)."""
        h = self.width // 2
        while h >= FOLD_LANES:
            L.append(Vec(FOLD[kind], lanes, (lanes, _at(lanes, h)), h))
            h //= 2
        var = self.new_scalar()
        if self.float_reduce:
            api = ("ReduceRepeat" if self.new_api else "WholeReduce") + {"mean": "Sum"}.get(kind, kind.capitalize())
            L += [Vec(api, Ref("red"), (lanes,), FOLD_LANES), Sync("V_S"), Scalar(var, dt.float32, ("get", "red", 0)),
                  Barrier("red and the lanes are rewritten next")]
            return var
        # 910A: no float reductions; halve the lanes to one 32-byte block, finish on the scalar unit
        h = FOLD_LANES // 2
        while h >= 8:
            L.append(Vec(FOLD[kind], lanes, (lanes, _at(lanes, h)), h))
            h //= 2
        L.append(Sync("V_S"))
        prev = f"{var}_0"
        L.append(Scalar(prev, dt.float32, ("get", lanes.tensor, lanes.offset)))
        op = _SCALAR_FOLD[FOLD[kind]]
        for i in range(1, 8):
            cur = var if i == 7 else f"{var}_{i}"
            L.append(Scalar(cur, dt.float32, (op, prev, ("get", lanes.tensor, add(lanes.offset, i)))))
            prev = cur
        L.append(Barrier())
        return var

    def result(self, op, value: str, L: list) -> None:
        """A reduction's value as its result: mean divided by C, rounded once to its dtype."""
        expr = value if op.name != "mean" else ("/", value, ("cast", dt.float32, self.C))
        v = op.result
        if expr == value and v.dtype == dt.float32:
            self.scal[id(v)] = value
            return
        var = self.new_scalar()
        L.append(Scalar(var, v.dtype, expr if v.dtype == dt.float32 else ("cast", v.dtype, expr)))
        self.scal[id(v)] = var

    def int_reduction(self, op) -> list:
        """A reduction over an integer or bool row (a target whose reductions take int32: the
        CPU's): folded into int32 lanes (an 8-bit or bool row's elements widened by the Adds /
        Maxs / Mins themselves: numpy's promotion), halved to 64, one WholeReduce into `ired`; a
        sum is int32 (wrapping), max / min narrow back exactly."""
        x, v = op.operands[0], op.result
        src = self.slot[id(x)]
        L: list = []
        info = np.iinfo(np.uint8 if x.dtype == dt.bool_ else x.dtype.np)
        ident = {"sum": 0, "max": int(info.min), "min": int(info.max)}[op.name]
        L += [Dup(Ref("ilanes"), ident, self.width)] + self.fold(op.name, Ref("ilanes"), src, self.C)
        h = self.width // 2
        while h >= FOLD_LANES:
            L.append(Vec(FOLD[op.name], Ref("ilanes"), (Ref("ilanes"), Ref("ilanes", h)), h))
            h //= 2
        var = self.new_scalar()
        L += [Vec("WholeReduce" + op.name.capitalize(), Ref("ired"), (Ref("ilanes"),), FOLD_LANES), Sync("V_S"),
              Scalar(var, dt.int32, ("get", "ired", 0)), Barrier("ired and the lanes are rewritten next")]
        if v.dtype != dt.int32:
            narrow = self.new_scalar()
            L.append(Scalar(narrow, v.dtype, ("cast", v.dtype, var)))
            var = narrow
        self.scal[id(v)] = var
        return L

    def reduction(self, op) -> list:
        x = op.operands[0]
        src = self.slot[id(x)]
        if not x.dtype.is_float:
            return self.int_reduction(op)
        L = []
        if x.dtype != dt.float32:   # 16-bit rows accumulate in float32
            L.append(Vec("Cast", Ref("wide"), (src,), self.C, mode="CAST_NONE"))
            src = Ref("wide")
        L += [Dup(Ref("lanes"), IDENTITY[op.name], self.width)] + self.fold(op.name, Ref("lanes"), src, self.C)
        self.result(op, self.finish(op.name, Ref("lanes"), L), L)
        return L

    # ---- elementwise ops -------------------------------------------------------------------------
    def step(self, st, count) -> list:
        """One elementwise op: its tile stmts with slots mapped to this row's buffers."""
        sched = st.sched
        L: list = []
        names: dict = {}
        scalars = []
        for inp in sched.inputs:
            src = st.sources[inp.index]
            if inp.var:
                scalars.append((inp.var, self.scalar_of(src, L)))
            elif inp.slot:
                names[inp.slot] = self.slot_of(src, L) if st.kind == "rowscalar" else self.slot[id(src)]
        res = st.op.result
        if st.kind == "rowscalar":
            self.slot[id(res)] = self.rs_view(res.dtype)
        names[sched.outputs[0].slot] = self.slot[id(res)]
        prefill = name_temporaries(sched, names, lambda d, i: Ref(self.tmp(d, i)))
        label = f"{st.op.name} ({st.op.loc})"
        L.append(Step(label, tuple(sched.stmts), tuple(names.items()), tuple(scalars),
                      tuple((r, value, add(self.row_len, self.s.slack)) for r, value, _ in prefill), 0,
                      count if st.kind == "row" else 1))
        return L

    # ---- single-read plan ----------------------------------------------------------------------
    def row_body(self, assign) -> list:
        s = self.s
        L: list = []
        outputs = {id(v): i for i, v in enumerate(s.fn.results)}
        self.param_setup(L)
        for op in s.fn.ops:
            if op.name == "constant":
                continue
            v = op.result
            if id(v) in outputs and s.kinds[id(v)] == "row":
                self.slot[id(v)] = self.out_row(outputs[id(v)], v.dtype)
            elif id(v) in assign:
                self.slot[id(v)] = Ref(self.rv(*assign[id(v)]))
            if op.name in IDENTITY:
                L += self.reduction(op)
            else:
                L += self.step(s.steps[id(op)], self.C)
        for i, v in enumerate(s.fn.results):
            if s.kinds[id(v)] == "rowscalar":
                L.append(Put(self.out_row(i, v.dtype).tensor, "r", self.scalar_of(v, L)))
        return L

    def buffers(self, counts, pool) -> list:
        """The row buffers every stage that computes takes (TBuf Get)."""
        L = [Alloc(self.rv(d, i), f"b_{self.rv(d, i)}") for d, n in sorted(counts.items(), key=lambda x: x[0].name)
             for i in range(n)]
        L += [Alloc(self.tmp(d, i), f"b_{self.tmp(d, i)}") for d, n in sorted(pool.items(), key=lambda x: x[0].name)
              for i in range(n)]
        L += [Alloc("wide", "b_wide")] if self.s.needs_wide else []
        L += [Alloc(t, f"b_{t}") for t, _ in self.int_buffers()]
        # (red is where WholeReduce puts its value; 910A finishes the lanes on the scalar unit)
        return L + [Alloc("lanes", "b_lanes")] + ([Alloc("red", "b_red")] if self.float_reduce else [])

    def int_buffers(self) -> list:
        """(name, elements) of the int32 buffers integer reductions take (`int_reduction`)."""
        xs = [op.operands[0].dtype for op in self.s.fn.ops if op.name in FOLD and not op.operands[0].dtype.is_float]
        if not xs:
            return []
        return [("ilanes", self.width), ("ired", 8)]

    def single(self, outs):
        s = self.s
        assign, counts = allocate_row_values(s.fn, s.kinds)
        pool = temp_pool(s.steps.values())
        shared = [p for p in s.params if p.kind == "lastonly"]
        prologue = []
        for p in shared:   # read once per core
            prologue += [Alloc(f"row{self.tag[p.index]}", f"b_row{self.tag[p.index]}"),
                         CopyIn(f"row{self.tag[p.index]}", p.name, 0, 1, "t.C", "t.C", "t.Cpad"), Barrier()]
        copy_in = []
        for p in s.params:
            x, q = f"in{self.tag[p.index]}", f"q_in{self.tag[p.index]}"
            if p.kind == "full":
                copy_in += [Alloc(x, q), CopyIn(x, p.name, mul("row0", "t.C"), "nrows", "t.C", "t.C", "t.Cpad"),
                            EnQue(q, x)]
            elif p.kind == "general":
                off = f"go{p.index}"
                copy_in += [Alloc(x, q),
                            For("r", 0, "nrows", tuple(self.row_offset(p, add("row0", "r"), off) + [
                                CopyIn(x, p.name, off, 1, "t.C", "t.C", "t.C", ub_off=mul("r", "t.Cpad"))])),
                            EnQue(q, x)]
        compute = [DeQue(f"in{self.tag[p.index]}", f"q_in{self.tag[p.index]}") for p in s.params if p.kind in QUEUED]
        compute += [Alloc(f"y{i}", f"q_y{i}") for i in range(len(s.fn.results))]
        compute += [Alloc(f"row{self.tag[p.index]}", f"b_row{self.tag[p.index]}") for p in shared]
        body = self.row_body(assign)
        compute += self.rs_allocs()
        compute += self.buffers(counts, pool)
        compute.append(For("r", 0, "nrows", tuple(body)))
        compute += [EnQue(f"q_y{i}", f"y{i}") for i in range(len(s.fn.results))]
        compute += [Free(f"q_in{self.tag[p.index]}", f"in{self.tag[p.index]}") for p in s.params if p.kind in QUEUED]
        copy_out = []
        for i, o in enumerate(s.outputs):
            y, q = f"y{i}", f"q_y{i}"
            copy_out.append(DeQue(y, q))
            if o.kind == "row":
                copy_out.append(CopyOut(outs[i], mul("row0", "t.C"), y, "nrows", "t.C", "t.C", "t.Cpad"))
            else:
                copy_out.append(CopyOut(outs[i], "row0", y, 1, "nrows", "nrows", "nrows"))
            copy_out.append(Free(q, y))
        stages = [Stage("Prologue", None, tuple(prologue), once=True)] if prologue else []
        stages += [Stage("Geometry", "tile", tuple(self.geometry())), Stage("CopyIn", None, tuple(copy_in)),
                   Stage("Compute", None, tuple(compute)), Stage("CopyOut", None, tuple(copy_out))]
        queued = [p for p in s.params if p.kind in QUEUED]
        return stages, queued, counts, pool, 1

    def rs_allocs(self) -> list:
        return [Alloc(f"rs_{d.name}", f"b_rs_{d.name}") for d in sorted(self.rs, key=lambda d: d.name)]

    def geometry(self) -> list:
        return [Set("row0", mul("tile", "t.tileRows")), Set("nrows", ("min", "t.tileRows", ("-", "t.R", "row0")))]

    # ---- multi-pass plan -----------------------------------------------------------------------
    def passes(self, outs):
        s = self.s
        counts: dict = {}
        for ps in s.passes:
            for d, n in ps.counts.items():
                counts[d] = max(counts.get(d, 0), n)
        pool = temp_pool(s.steps.values())
        L: list = []
        self.param_setup(L)
        results = {id(v): i for i, v in enumerate(s.fn.results)}
        for k, ps in enumerate(s.passes):
            for op in ps.scalar_ops:
                L += self.step(s.steps[id(op)], 1)
            for op in ps.ops:   # per-row operands as scalars, before the chunk loop
                step = s.steps[id(op)]
                for inp in step.sched.inputs:
                    if inp.var:
                        self.scalar_of(step.sources[inp.index], L)
            lanes = [Ref("lanes", self.width * j) for j in range(4)]
            shift = None
            if ps.moments:   # the shift K: the row's first element
                x = ps.moments[0].operands[0]
                shift = f"shift{k}"
                gm = s.params[self.values[id(x)]].name
                L.append(Scalar(shift, dt.float32, ("cast", dt.float32, ("load", gm, mul("row0", "t.C")))))
            for j, red in enumerate(ps.reductions):
                L.append(Dup(lanes[j], IDENTITY[red.name], self.width))
            body: list = [Let("cn", ("min", "t.Cpad", ("-", "t.C", "c0")))]
            for i in ps.params:
                p = s.params[i]
                x, q = f"in{self.tag[i]}", f"q_in{self.tag[i]}"
                if p.kind == "general":
                    body += self.row_offset(p, "row0", f"go{i}")
                off = {"full": add(mul("row0", "t.C"), "c0"), "lastonly": "c0",
                       "general": add(f"go{i}", "c0")}[p.kind]
                body += [Alloc(x, q), CopyIn(x, p.name, off, 1, "cn", "cn", "cn"), EnQue(q, x), DeQue(x, q)]
            body += [Alloc(f"y{i}", f"q_y{i}") for i in ps.outputs]
            for v in list(self.slot):   # row buffers are this pass's
                if s.kinds.get(v) == "row":
                    del self.slot[v]
            own = {id(s.fn.results[i]) for i in ps.outputs}
            for op in ps.ops:
                v = op.result
                self.slot[id(v)] = Ref(f"y{results[id(v)]}") if id(v) in own else Ref(self.rv(*ps.assign[id(v)]))
                body += self.step(s.steps[id(op)], "cn")
            if ps.online:
                body += self.online_chunk(lanes, self.slot[id(ps.online[0].operands[0])])
            if ps.moments:
                body += self.moments_chunk(lanes, self.slot[id(ps.moments[0].operands[0])], shift)
            for j, red in enumerate([] if ps.online or ps.moments else ps.reductions):
                x = red.operands[0]
                src = self.slot[id(x)]
                if x.dtype != dt.float32:   # 16-bit rows accumulate in float32
                    body.append(Vec("Cast", Ref("wide"), (src,), "cn", mode="CAST_NONE"))
                    src = Ref("wide")
                body += self.fold(red.name, lanes[j], src, "cn")
            for i in ps.outputs:
                body += [EnQue(f"q_y{i}", f"y{i}"), DeQue(f"y{i}", f"q_y{i}"),
                         CopyOut(outs[i], add(mul("row0", "t.C"), "c0"), f"y{i}", 1, "cn", "cn", "cn"),
                         Free(f"q_y{i}", f"y{i}")]
            body += [Free(f"q_in{self.tag[i]}", f"in{self.tag[i]}") for i in ps.params]
            if ps.params or ps.ops or ps.reductions or ps.outputs:
                L.append(For("c0", 0, "t.C", tuple(body), step="t.Cpad"))
            if ps.online:
                L += self.online_finish(lanes, ps.online)
            if ps.moments:
                L += self.moments_finish(lanes, ps.moments, shift)
            for j, red in enumerate([] if ps.online or ps.moments else ps.reductions):
                self.result(red, self.finish(red.name, lanes[j], L), L)
        for i, v in enumerate(s.fn.results):
            if s.kinds[id(v)] == "rowscalar":
                val = self.scalar_of(v, L)
                L += [Alloc(f"y{i}", f"q_y{i}"), Put(f"y{i}", 0, val), EnQue(f"q_y{i}", f"y{i}"),
                      DeQue(f"y{i}", f"q_y{i}"), CopyOut(outs[i], "row0", f"y{i}", 1, 1, 1, 1), Free(f"q_y{i}", f"y{i}")]
        head = self.rs_allocs() + self.buffers(counts, pool)
        stages = [Stage("Geometry", "tile", tuple(self.geometry())), Stage("Passes", None, tuple(head + L))]
        queued = [s.params[i] for i in sorted({i for ps in s.passes for i in ps.params})]
        lanes_n = max([1] + [ps.lanes for ps in s.passes])
        return stages, queued, counts, pool, lanes_n

    def online_chunk(self, lanes, src: Ref) -> list:
        """Online softmax, one chunk: M (lanes 0) running maxima, S (1) running sums of
        exp(a - M), per lane; S is rescaled by exp(M_old - M_new) before the chunk is added."""
        M, S, cm, tmp = lanes
        n = self.width
        return [Dup(cm, float("-inf"), n), *self.fold("max", cm, src, "cn"),
                Vec("Max", cm, (cm, M), n),                       # the new maxima
                Vec("Sub", tmp, (M, cm), n), Vec("Exp", tmp, (tmp,), n),
                Vec("Mul", S, (S, tmp), n),                       # earlier sums rescaled to them
                Vec("Muls", M, (cm,), n, scalar=1.0),
                For("k", 0, "cn", (Let("m", ("min", n, ("-", "cn", "k"))),
                                   Vec("Sub", tmp, (_at(src, "k"), M), "m"), Vec("Exp", tmp, (tmp,), "m"),
                                   Vec("Add", S, (S, tmp), "m")), step=n)]

    def online_finish(self, lanes, online) -> list:
        red_max, red_sum = online[0], online[1]
        M, S, cm, tmp = lanes
        n = self.width
        L = [Vec("Muls", cm, (M,), n, scalar=1.0)]   # (the finish may overwrite its lanes)
        vm = self.finish("max", cm, L)
        L += [Dup(tmp, vm, n), Vec("Sub", tmp, (M, tmp), n), Vec("Exp", tmp, (tmp,), n),
              Vec("Mul", S, (S, tmp), n)]             # every lane's sum relative to the row max
        vs = self.finish("sum", S, L)
        self.scal[id(red_max.result)], self.scal[id(red_sum.result)] = vm, vs
        return L

    def moments_chunk(self, lanes, src: Ref, shift: str) -> list:
        """layer_norm's moments, one chunk: lanes 0 += d, lanes 1 += d*d, d = x - K."""
        S1, S2, tmp = lanes[:3]
        n = self.width
        return [For("k", 0, "cn", (Let("m", ("min", n, ("-", "cn", "k"))),
                                   Vec("Adds", tmp, (_at(src, "k"),), "m", scalar=("neg", shift)),
                                   Vec("Add", S1, (S1, tmp), "m"), Vec("Mul", tmp, (tmp, tmp), "m"),
                                   Vec("Add", S2, (S2, tmp), "m")), step=n)]

    def moments_finish(self, lanes, moments, shift: str) -> list:
        red_m, red_v = moments[0], moments[1]
        L: list = []
        s1 = self.finish("sum", lanes[0], L)
        s2 = self.finish("sum", lanes[1], L)
        n, vm, vv = self.new_scalar(), self.new_scalar(), self.new_scalar()
        L += [Scalar(n, dt.float32, ("cast", dt.float32, "t.C")),
              Scalar(vm, dt.float32, ("+", shift, ("/", s1, n))),
              Scalar(vv, dt.float32, ("/", ("-", s2, ("/", ("*", s1, s1), n)), n))]
        self.scal[id(red_m.result)], self.scal[id(red_v.result)] = vm, vv
        return L

    # ---- the kernel ---------------------------------------------------------------------------
    def kernel(self) -> TileKernel:
        s = self.s
        outs = output_names(s.params, len(s.fn.results))
        fields = [Field(f) for f in FIELDS] + [Field("dims", self.k)]
        fields += [Field(f"st{p.index}", self.k) for p in self.strided()]
        fields += [Field(f"s{p.index}", 0, "float" if p.dtype.is_float else "int32_t")
                   for p in s.params if p.kind == "runtime_scalar"]
        gms = [Gm(p.name, p.dtype, "in", p.index) for p in s.params if p.kind != "runtime_scalar"]
        gms += [Gm(outs[i], v.dtype, "out", i) for i, v in enumerate(s.fn.results)]
        stages, queued, counts, pool, lanes = (self.passes if self.multi else self.single)(outs)
        tile = add(mul("t.tileRows", "t.Cpad"), s.slack)
        row = add("t.Cpad", s.slack)
        queues = [Queue(f"q_in{self.tag[p.index]}", "VECIN", s.in_num, p.dtype, tile) for p in queued]
        if not self.multi:
            queues += [Queue(f"b_row{self.tag[p.index]}", "VECCALC", 1, p.dtype, row) for p in s.params if p.kind == "lastonly"]
        for i, o in enumerate(s.outputs):
            per = 32 // max(1, o.dtype.itemsize)
            queues.append(Queue(f"q_y{i}", "VECOUT", s.out_num, o.dtype,
                                tile if o.kind == "row" else ("pad", "t.tileRows", per)))
        tbufs = [(self.rv(d, i), d) for d, n in sorted(counts.items(), key=lambda x: x[0].name) for i in range(n)]
        tbufs += [(self.tmp(d, i), d) for d, n in sorted(pool.items(), key=lambda x: x[0].name) for i in range(n)]
        tbufs += [("wide", dt.float32)] if s.needs_wide else []
        queues += [Queue(f"b_{name}", "VECCALC", 1, d, row) for name, d in tbufs]
        queues += [Queue("b_lanes", "VECCALC", 1, dt.float32, self.width * max(1, lanes)),
                   Queue("b_red", "VECCALC", 1, dt.float32, 8)]
        queues += [Queue(f"b_{t}", "VECCALC", 1, dt.int32, n) for t, n in self.int_buffers()]
        queues += [Queue(f"b_rs_{d.name}", "VECCALC", 1, d, n * (32 // max(1, d.itemsize)))
                   for d, n in sorted(self.rs.items(), key=lambda x: x[0].name)]
        members = [Member("row0"), Member("nrows")]
        members += [Member(f"v{p.index}", ("load", p.name), compute_dtype(p.dtype))
                    for p in s.params if p.kind == "scalar"]
        words, others = (), ()
        if not s.symbols:   # the heuristic's words; the kernel pass `tiling` may take another
            first, *rest = row_tiling_candidates(s, s.target)
            words, others = tuple(first.words), tuple(tuple(t.words) for t in rest)
        return TileKernel(s.fn.name, "row", s.plan_note, fields, gms, queues, members, stages, words,
                          candidates=others)


def row_tile_kernel(sched: RowSchedule) -> TileKernel:
    return _Lowering(sched).kernel()


def row_epilogue_body(sched: RowSchedule, assign: dict, slots: dict, scalars: dict, count, row_len,
                      out_row) -> tuple[list, dict]:
    """Row r of a matmul's row epilogue (a row kernel whose first parameter is the matmul's
    value, lower/cube._row_epilogue) as tile-kernel nodes: the single-read plan's row body with
    the parameters bound to the cube kernel's buffers (`slots`: id(value) -> Ref, `scalars`:
    id(value) -> a scalar's name), rows of `count` elements, row buffers `row_len` long, output
    i's row `out_row(i, dtype)`, row values in `assign`'s buffers (allocate_row_values).  Also
    returns the 32-byte slots per dtype the body uses (`rs_<dtype>`, dtype -> slots)."""
    low = _Lowering(sched, count, row_len, out_row, (slots, scalars))
    return low.row_body(assign), dict(low.rs)

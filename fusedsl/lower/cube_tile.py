"""The loop-level tile IR of a cube kernel (tile/kernel.py `TileKernel`): what printer_kernel.py
prints and kernel_interp.py runs for a CubeSchedule (lower/cube.py: a 2-D matmul, batched or not,
through the Matmul high-level API, with its epilogue applied to each C tile in UB).

The kernel has one Matmul object (`mm`) and reads CANN's TCubeTiling (its fields are the
tiling's words; runtime scalars follow them).  Process, after the UB plan, is the cube
kernel's driver, in the IR (`TileKernel.process`):

    the core's block of C     block (blockIdx % mBlocks, blockIdx / mBlocks) of singleCoreM x
                              singleCoreN; a core with no block returns; with one Matmul
                              object per AI core (910B, objects_per_core 1) only the first
                              vector instance of the core works
    per batch matrix          SetTensorA / SetTensorB (A from its GM rows, or from this
                              core's A panel copied once into L1 in NZ: a TSCM queue),
                              SetTail on an edge block, then per Iterate (M-first):
                              TileShape(count) -> CopyIn -> Compute -> CopyOut
    End

CopyIn takes the tile from the cube (GetTensorC: rows padded to 32 bytes) and DMAs the
residual tiles, the [N] columns and the per-row values the epilogue reads; Compute runs the
epilogue row by row: each elementwise op's vector tile stmts (lower/vector.py, scheduled by
lower/cube.epilogue_rows), or a row epilogue's body (lower/row_tile.row_epilogue_body:
softmax / layer_norm of the rows); CopyOut one strided DMA per output.

int8 operands give int32 C; numpy wraps int8 where the chip's casts saturate, so the C row and
the int8 results of add / sub / neg / abs / mul are wrapped exactly first (the three *_wrap
helpers; lower/cube.wraps_in_half / wraps_in_float say which op needs which).
"""
from __future__ import annotations

import copy
import dataclasses
import functools

from .. import dtypes as dt
from ..tile.kernel import (Alloc, Barrier, Call, CopyIn, CopyNz, CopyOut, DeQue, Dup, EnQue, Field, For, Free, Gm, If,
                           Let, Matmul, Member, MmEnd, MmGetC, MmIterate, MmSet, MmTail, Operand, Queue, Ref, Reset,
                           Return, RunPart, Scalar, Set, Stage, Step, TileKernel, Var, Vec, add, mul, name_temporaries,
                           output_names, pad)
from .cube import TCUBE_FIELDS, CubeSchedule, wraps_in_float, wraps_in_half
from .cube_group import CubeGroupSchedule
from .row import FOLD_LANES, allocate_row_values, temp_pool
from .row_tile import row_epilogue_body
from .vector import compute_dtype
from .vector_tile import PLAIN_NAME

_TCUBE = tuple(Field(f) for f in TCUBE_FIELDS)   # the TCubeTiling struct's fields (records: shared by every kernel)


def _ld(count, dtype: dt.DType):
    """The UB row stride of a tile row of `count` elements: padded to 32 bytes."""
    return pad(count, 32 // dtype.itemsize)


@functools.lru_cache(maxsize=None)   # (built at its first use, not at import)
def _tile_shape() -> Stage:
    """The TileShape stage of every cube and conv kernel (_CubeLowering.tile_shape)."""
    return Stage("TileShape", "count", (
        Let("roundM", ("/", ("+", "tailM", ("-", "t.baseM", 1)), "t.baseM")),
        Let("mi", ("%", "count", "roundM")), Let("ni", ("/", "count", "roundM")),
        Set("curM", ("min", "t.baseM", ("-", "tailM", ("*", "mi", "t.baseM")))),
        Set("curN", ("min", "t.baseN", ("-", "tailN", ("*", "ni", "t.baseN")))),
        Set("row0", ("+", "m0", ("*", "mi", "t.baseM"))),
        Set("col0", ("+", "n0", ("*", "ni", "t.baseN")))))


class _CubeLowering:
    def __init__(self, sched: CubeSchedule):
        self.s = s = sched
        self.t = sched.target
        self.tag = {p.index: (f"_{p.name}_{p.index}" if p.name and PLAIN_NAME.fullmatch(p.name) else f"_{p.index}")
                    for p in s.params}
        self.outs = output_names(s.params, len(s.fn.results))
        self.results = {id(v): i for i, v in enumerate(s.fn.results)}
        self.pvals = [p.value for p in s.fn.params]
        self.c_dtype = getattr(s, "c_dtype", dt.float32)
        self.row = s.row_epilogue
        self.steps = s.steps or {}
        if self.row is not None:
            self.slack = self.row.slack
        else:   # elements Compare reads past a row's count (tile/slack.py): every row buffer has them
            self.slack = max([self.steps[id(op)][0].slack_elems for op in s.epilogue] + [0])
        self.rows: list = []       # (buffer, dtype): one row of baseN (+ slack) elements each
        self.full = [p for p in s.params if p.kind in ("full", "fullshared")]

    # ---- the kernel ---------------------------------------------------------------------------
    def kernel(self, compute: tuple | None = None) -> TileKernel:
        """The kernel; `compute`: (the Compute stage, its row buffers) of another tiling of the same
        schedule (the epilogue reads no tiling field but through the words: the same stage)."""
        s, t = self.s, self.s.tiling_fields
        fields = list(_TCUBE)
        fields += [Field(f"s{p.index}", 0, "float" if p.dtype.is_float else "int32_t")
                   for p in s.params if p.kind == "runtime_scalar"]
        gms = [Gm(p.name, p.dtype, "in", p.index) for p in s.params if p.kind != "runtime_scalar"]
        gms += [Gm(self.outs[i], v.dtype, "out", i) for i, v in enumerate(s.fn.results)]
        a, b = s.mm.operands
        ta, tb = bool(s.mm.attr("transpose_a", False)), bool(s.mm.attr("transpose_b", False))
        a_l1 = bool(t.a_l1_bytes)
        queues = []
        if a_l1:   # the core's A panel in L1: singleCoreM (to 16) rows of Ka (to 32 bytes), NZ
            queues.append(Queue("a_l1", "TSCM", 1, a.dtype, mul(pad("t.singleCoreM", 16), pad("t.Ka", 32 // a.dtype.itemsize))))
        queues.append(Queue("q_c", "VECIN", 1, self.c_dtype, mul("t.baseM", "t.baseN")))
        queues += [Queue(f"q_in{self.tag[p.index]}", "VECIN", 1, p.dtype, mul("t.baseM", _ld("t.baseN", p.dtype)))
                   for p in self.full]
        for i, v in enumerate(s.fn.results):
            per_row = i in s.per_row_outputs   # one value per row of the tile
            queues.append(Queue(f"q_y{i}", "VECOUT", 1, v.dtype,
                                _ld("t.baseM", v.dtype) if per_row else mul("t.baseM", _ld("t.baseN", v.dtype))))
        queues += [Queue(f"b_col{self.tag[p.index]}", "VECCALC", 1, p.dtype, "t.baseN")
                   for p in s.params if p.kind == "colvec"]
        queues += [Queue(f"b_rowv{self.tag[p.index]}", "VECCALC", 1, p.dtype, _ld("t.baseM", p.dtype))
                   for p in s.params if p.kind == "rowvec"]
        if compute is None:
            compute = self.compute_stage()
        else:
            compute, self.rows = compute[0], list(compute[1])
        self.compute = (compute, tuple(self.rows))
        queues += [Queue(f"b_{name}", "VECCALC", 1, d, add("t.baseN", self.slack)) for name, d in self.rows]
        if self.row is not None:
            queues += [Queue("b_lanes", "VECCALC", 1, dt.float32, FOLD_LANES),
                       Queue("b_red", "VECCALC", 1, dt.float32, 8)]
            queues += [Queue(f"b_rs_{d.name}", "VECCALC", 1, d, n * (32 // d.itemsize)) for d, n in self.rs_dtypes().items()]
        workspace = ""
        if not self.t.separated:   # 310P: C passes through UB on its way to the vector unit
            workspace = "b_mmws"
            queues.append(Queue("b_mmws", "VECCALC", 1, dt.float32, mul("t.baseM", "t.baseN")))
        mm = Matmul("mm", Operand("TSCM", "NZ", a.dtype) if a_l1 else Operand("GM", "ND", a.dtype, ta),
                    Operand("GM", "ND", b.dtype, tb), Operand("VECIN", "ND", self.c_dtype), workspace)
        members = [Member(n) for n in ("m0", "n0", "offA", "offB", "tailM", "tailN", "batch", "curM", "curN",
                                       "row0", "col0")]
        members += [Member(f"v{p.index}", ("load", p.name), compute_dtype(p.dtype)) for p in s.params if p.kind == "scalar"]
        members += [Member(f"v{p.index}", f"t.s{p.index}", compute_dtype(p.dtype))
                    for p in s.params if p.kind == "runtime_scalar"]
        stages = [self.tile_shape(), self.copy_in(), compute, self.copy_out()]
        process = self.process(a, b, ta, tb, a_l1)
        gms, queues, members, stages = self.extend(gms, queues, members, stages)
        # the launch's AI cores: two Matmul objects (vector instances) per AI core on 910B, or one
        per = t.objects_per_core if self.t.separated else 1
        block_dim = "t.usedCoreNum" if per == 1 else ("/", ("+", "t.usedCoreNum", per - 1), per)
        return TileKernel(s.fn.name, self.KIND, s.plan_note, fields, gms, queues, members, stages, tuple(s.words),
                          (mm,), "TCubeTiling", process, block_dim=block_dim)

    KIND = "cube"

    def extend(self, gms, queues, members, stages):
        """A kind built on this one adds its GM tensors, buffers, members and stages."""
        return gms, queues, members, stages

    # the result's rows and columns (the Matmul's M and N), its GM row stride and the elements of
    # one batch matrix in a tensor of its shape (a conv kernel addresses NCHW images instead)
    M, N, ld, batch_elems = "t.M", "t.N", "t.N", ("*", "t.M", "t.N")

    def offsets(self, ta: bool, tb: bool) -> list:
        """A's and B's offsets of the core's block (m0, n0 set)."""
        # A is [M, K] (or [K, M] read transposed), B is [K, N] (or [N, K] read transposed)
        return [Set("offA", "m0" if ta else ("*", "m0", "t.Ka")), Set("offB", ("*", "n0", "t.Kb") if tb else "n0")]

    def operands(self, a, b, a_l1: bool) -> list:
        """Inside the batch loop: give the Matmul this core's A and B."""
        s = self.s
        aname, bname = self.param_of(a).name, self.param_of(b).name
        L: list = []
        if a_l1:   # one batch matrix (lower.cube): the core's A panel once into L1, NZ
            L += [Alloc("aL1", "a_l1"), CopyNz("aL1", aname, "offA", "tailM", "t.Ka", "t.Ka"),
                  EnQue("a_l1", "aL1"), DeQue("aL1", "a_l1"), MmSet("mm", "A", "aL1")]
        else:
            L.append(MmSet("mm", "A", aname, add(("*", ("*", "batch", "t.M"), "t.Ka") if s.batch_a else 0, "offA")))
        return L + [MmSet("mm", "B", bname, add(("*", ("*", "batch", "t.Kb"), "t.N") if s.batch_b else 0, "offB"))]

    def process(self, a, b, ta: bool, tb: bool, a_l1: bool) -> tuple:
        """The core's block, then per batch matrix its operands and the Iterate loop."""
        s, t = self.s, self.s.tiling_fields
        one_per_core = self.t.separated and t.objects_per_core == 1
        L: list = [Let("cube", ("/", "block", "ratio") if one_per_core else "block"),
                   Let("mBlocks", ("/", ("+", self.M, ("-", "t.singleCoreM", 1)), "t.singleCoreM")),
                   Let("nBlocks", ("/", ("+", self.N, ("-", "t.singleCoreN", 1)), "t.singleCoreN"))]
        idle = (">=", "cube", ("*", "mBlocks", "nBlocks"))
        if one_per_core:   # one Matmul object per AI core: its first vector instance drives it
            idle = ("||", ("!=", "subblock", 0), idle)
        L += [If(idle, (Return(),)),
              Set("m0", ("*", ("%", "cube", "mBlocks"), "t.singleCoreM")),
              Set("n0", ("*", ("/", "cube", "mBlocks"), "t.singleCoreN")),
              *self.offsets(ta, tb),
              Set("tailM", ("min", "t.singleCoreM", ("-", self.M, "m0"))),
              Set("tailN", ("min", "t.singleCoreN", ("-", self.N, "n0")))]
        per_batch = self.operands(a, b, a_l1)
        per_batch += [If(("||", ("!=", "tailM", "t.singleCoreM"), ("!=", "tailN", "t.singleCoreN")),
                         (MmTail("mm", "tailM", "tailN"),)),
                      Var("count", 0),
                      MmIterate("mm", (Call("TileShape", "count"), Set("count", 1, "+="), Call("CopyIn"),
                                       Call("Compute"), Call("CopyOut")))]
        if s.batch > 1:
            L.append(For("bi", 0, s.batch, (Set("batch", "bi"), *per_batch)))
        else:
            L += per_batch
        L.append(MmEnd("mm"))
        if a_l1:
            L.append(Free("a_l1", "aL1"))
        return tuple(L)

    def param_of(self, v):
        return self.s.params[self.pvals.index(v)]

    def tile_shape(self) -> Stage:
        """Tile `count` of the block, M-first (iterateOrder 0): the same for every kernel, so one
        object (_tile_shape: the Ascend C printer keeps a shared stage's text by the object)."""
        return _tile_shape()

    def boff(self, kind: str):
        """GM offset of the current batch matrix in a tensor of the result's shape."""
        return ("*", "batch", self.batch_elems) if self.s.batch > 1 and kind == "full" else 0

    def copy_in(self) -> Stage:
        s = self.s
        L: list = [Alloc("c", "q_c"), MmGetC("mm", "c"), EnQue("q_c", "c")]
        for p in self.full:
            tg = self.tag[p.index]
            L += [Alloc(f"in{tg}", f"q_in{tg}"),
                  CopyIn(f"in{tg}", p.name, add(self.boff(p.kind), ("*", "row0", self.ld), "col0"), "curM", "curN",
                         self.ld, _ld("curN", p.dtype)),
                  EnQue(f"q_in{tg}", f"in{tg}")]
        side = [p for p in s.params if p.kind in ("colvec", "rowvec")]
        if side:
            L.append(Barrier("the last tile's epilogue has read the columns"))
        for p in side:
            tg = self.tag[p.index]
            if p.kind == "rowvec":   # one value per row of the tile
                L += [Alloc(f"rowv{tg}", f"b_rowv{tg}"), CopyIn(f"rowv{tg}", p.name, "row0", 1, "curM", "curM", "curM")]
            else:
                L += [Alloc(f"col{tg}", f"b_col{tg}"), CopyIn(f"col{tg}", p.name, "col0", 1, "curN", "curN", "curN")]
        if side:
            L.append(Barrier("the columns reach the vector unit"))
        return Stage("CopyIn", None, tuple(L))

    def copy_out(self) -> Stage:
        s = self.s
        L: list = []
        for i, v in enumerate(s.fn.results):
            L.append(DeQue(f"out_y{i}", f"q_y{i}"))
            if i in s.per_row_outputs:   # the tile's curM values (whole rows of one matrix: col0 is 0)
                L.append(CopyOut(self.outs[i], "row0", f"out_y{i}", 1, "curM", "curM", "curM"))
            else:
                L.append(CopyOut(self.outs[i], add(self.boff("full"), ("*", "row0", self.ld), "col0"), f"out_y{i}",
                                 "curM", "curN", self.ld, _ld("curN", v.dtype)))
            L.append(Free(f"q_y{i}", f"out_y{i}"))
        return Stage("CopyOut", None, tuple(L))

    # ---- Compute: the epilogue, row by row --------------------------------------------------
    def compute_stage(self) -> Stage:
        s = self.s
        L: list = [DeQue("c", "q_c")]
        L += [DeQue(f"in{self.tag[p.index]}", f"q_in{self.tag[p.index]}") for p in self.full]
        L += [Alloc(f"out_y{i}", f"q_y{i}") for i in range(len(s.fn.results))]
        for p in s.params:
            if p.kind in ("colvec", "rowvec"):
                nm = f"{'col' if p.kind == 'colvec' else 'rowv'}{self.tag[p.index]}"
                L.append(Alloc(nm, f"b_{nm}"))
        slot, scal = {}, {}
        body: list = []
        for p in s.params:   # this row's value of each rowvec: a scalar of the row's ops
            v, tg = self.pvals[p.index], self.tag[p.index]
            if p.kind in ("full", "fullshared"):
                slot[id(v)] = Ref(f"in{tg}", mul("r", _ld("curN", p.dtype)))
            elif p.kind == "colvec":
                slot[id(v)] = Ref(f"col{tg}")
            elif p.kind == "rowvec":
                ct = compute_dtype(p.dtype)
                body.append(Scalar(f"v{p.index}", ct, ("cast", ct, ("cast", dt.float32, ("get", f"rowv{tg}", "r")))))
                scal[id(v)] = f"v{p.index}"
            elif p.kind in ("scalar", "runtime_scalar"):
                scal[id(v)] = f"v{p.index}"
        mmv = s.mm.result
        c_row = Ref("c", mul("r", _ld("curN", self.c_dtype)))
        if id(mmv) in self.results:
            i = self.results[id(mmv)]
            out = Ref(f"out_y{i}", mul("r", _ld("curN", mmv.dtype)))
            body += self.cast_or_copy(out, c_row, mmv.dtype)
            slot[id(mmv)] = out
        elif mmv.dtype != dt.float32:   # the matmul's value in its own dtype (rounded once, like the reference)
            self.rows.append(("mmv", mmv.dtype))
            body += self.cast_or_copy(Ref("mmv"), c_row, mmv.dtype)
            slot[id(mmv)] = Ref("mmv")
        else:
            slot[id(mmv)] = c_row
        if self.row is not None:
            body += self.row_body(slot, scal)
        else:
            body += self.epilogue_body(slot, scal)
        if self.c_dtype == dt.int32:   # the int8 wrap's rows (cast_or_copy)
            self.rows += [("wrapm", dt.int32), ("wrapf", dt.float32), ("wraph", dt.float16)]
        if any(wraps_in_half(op, self.t) for op in s.epilogue):
            self.rows.append(("wrap8", dt.float16))
        if any(wraps_in_float(op, self.t) for op in s.epilogue):
            self.rows.append(("wrap8f", dt.float32))
        L += [Alloc(name, f"b_{name}") for name, _ in self.rows]
        L.append(For("r", 0, "curM", tuple(body)))
        L += [EnQue(f"q_y{i}", f"out_y{i}") for i in range(len(s.fn.results))]
        L.append(Free("q_c", "c"))
        L += [Free(f"q_in{self.tag[p.index]}", f"in{self.tag[p.index]}") for p in self.full]
        return Stage("Compute", None, tuple(L))

    def epilogue_body(self, slot: dict, scal: dict) -> list:
        """Row r through the elementwise epilogue: each op's vector tile stmts on its UB rows."""
        s = self.s
        assign, counts = allocate_row_values(s.fn, {id(op.result): "row" for op in s.epilogue} | {id(s.mm.result): "row"},
                                             s.epilogue, set(self.results))
        pool = temp_pool([_Sched(self.steps[id(op)][0]) for op in s.epilogue])
        self.rows += [(f"rv_{d.name}_{i}", d) for d, n in sorted(counts.items(), key=lambda x: x[0].name)
                      for i in range(n)]
        self.rows += [(f"tmp_{d.name}_{i}", d) for d, n in sorted(pool.items(), key=lambda x: x[0].name)
                      for i in range(n)]
        L: list = []
        for op in s.epilogue:
            v = op.result
            if id(v) in self.results:
                i = self.results[id(v)]
                slot[id(v)] = Ref(f"out_y{i}", mul("r", _ld("curN", v.dtype)))
            else:
                d, i = assign[id(v)]
                slot[id(v)] = Ref(f"rv_{d.name}_{i}")
            L += self.step(op, slot, scal)
        return L

    def step(self, op, slot: dict, scal: dict) -> list:
        sched, sources = self.steps[id(op)]
        names, scalars = {}, []
        for inp in sched.inputs:
            src = sources[inp.index]
            if inp.var:
                scalars.append((inp.var, scal[id(src)]))
            elif inp.slot:
                names[inp.slot] = slot[id(src)]
        names[sched.outputs[0].slot] = slot[id(op.result)]
        # Compare reads whole 256-byte repeats past the count (compare-slack): its temporaries
        # hold defined values there, constant tensors their value; the temporaries are shared
        # by every step, so each step fills its own before it runs
        prefill = tuple((Ref(buf), value, add("t.baseN", self.slack))
                        for buf, value, _ in name_temporaries(sched, names, lambda d, i: f"tmp_{d.name}_{i}"))
        names = {k: (Ref(v) if isinstance(v, str) else v) for k, v in names.items()}
        label = f"{op.name} ({op.loc})"
        stmts = list(sched.stmts)
        temp = {n for n, sl in sched.slots.items() if sl.role not in ("in", "out")}
        # an int8 result narrowed by saturating casts from an exact value: wrapped first (numpy's int8)
        at, wrap = len(stmts), []
        why = ""
        if stmts and _narrows(stmts[-1], dt.float16, temp) and wraps_in_half(op, self.t):
            at, wrap = len(stmts) - 1, _half_wrap(names[stmts[-1].srcs[0]])
            why = "wrapped to int8 like numpy (the chip's half -> int8 cast saturates)"
        elif len(stmts) > 1 and _narrows(stmts[-1], dt.float16, temp) \
                and wraps_in_float(op, self.t) and stmts[-2].op == "cast" and stmts[-2].src_dtype == dt.float32 \
                and stmts[-2].dst == stmts[-1].srcs[0] and stmts[-2].srcs[0] in temp:
            at, wrap = len(stmts) - 2, _float_wrap(names[stmts[-2].srcs[0]])
            why = "the exact product wrapped to int8 like numpy (the chip's narrowing casts round and saturate)"
        items = tuple(names.items())
        L = [Step(label, tuple(stmts[:at]), items, tuple(scalars), prefill, 0, "curN")]
        if wrap:   # the exact value wrapped to int8's range, then the (now exact) casts
            L += wrap + [Step(f"{label}: {why}", tuple(stmts[at:]), items, tuple(scalars), (), 0, "curN")]
        return L

    def cast_or_copy(self, dst: Ref, src: Ref, d: dt.DType) -> list:
        if self.c_dtype == dt.int32:   # int8 operands: the result is int8 (numpy's rule)
            return _int8_wrap(dst, src)
        if d == dt.float32:
            return [Vec("Muls", dst, (src,), "curN", scalar=1.0)]
        modes = self.t.cast_modes.get(("float", d.ascendc), frozenset())
        return [Vec("Cast", dst, (src,), "curN", mode="CAST_RINT" if "CAST_RINT" in modes else "CAST_NONE")]

    # ---- a row epilogue (softmax / layer_norm of the rows of C) ---------------------------
    def rs_dtypes(self) -> dict:
        """dtype -> 32-byte slots: at most one per value of that dtype the epilogue holds."""
        fn = self.row.fn
        count: dict = {}
        for v in [p.value for p in fn.params] + [op.result for op in fn.ops]:
            count[v.dtype] = count.get(v.dtype, 0) + 1
        return dict(sorted(count.items(), key=lambda x: x[0].name))

    def row_body(self, slot: dict, scal: dict) -> list:
        """Row r through the row kernel's body, its parameters bound to this kernel's rows: the
        matmul's value, residual tiles, [N] columns, scalars and per-row values."""
        row, s = self.row, self.s
        assign, counts = allocate_row_values(row.fn, row.kinds)
        pool = temp_pool(row.steps.values())
        self.rows += [(f"rv_{d.name}_{i}", d) for d, n in sorted(counts.items(), key=lambda x: x[0].name)
                      for i in range(n)]
        self.rows += [(f"tmp_{d.name}_{i}", d) for d, n in sorted(pool.items(), key=lambda x: x[0].name)
                      for i in range(n)]
        if row.needs_wide:
            self.rows.append(("wide", dt.float32))   # a 16-bit row as float32 for its reductions
        sub = [p.value for p in row.fn.params]
        slots, scalars = {id(sub[0]): slot[id(s.mm.result)]}, {}
        for v in sub[1:]:   # the row kernel's own parameters, bound where this kernel holds them
            if id(v) in slot:
                slots[id(v)] = slot[id(v)]
            elif id(v) in scal:
                scalars[id(v)] = scal[id(v)]
        # an output row is padded to 32 bytes of its own dtype (as CopyOut moves it), a
        # temporary holds baseN (>= N) elements
        nodes, self._rs = row_epilogue_body(row, assign, slots, scalars, "curN", "t.baseN",
                                            lambda i, d: Ref(f"out_y{i}", mul("r", _ld("curN", d))))
        rs = [Alloc(f"rs_{d.name}", f"b_rs_{d.name}") for d in self.rs_dtypes() if d in self._rs]
        head = [Alloc("lanes", "b_lanes"), Alloc("red", "b_red")]
        return head + rs + list(nodes)


class _Sched:
    """An epilogue op's tile program shaped like row_plan.OpStep (`.sched`) for temp_pool."""
    def __init__(self, sched):
        self.sched = sched


def _narrows(st, src: dt.DType, temp: set) -> bool:
    """st is the cast of a step's temporary of dtype src to its int8 result."""
    return st.op == "cast" and st.src_dtype == src and st.dtype == dt.int8 and st.srcs[0] in temp


def _int8_wrap(dst: Ref, src: Ref) -> list:
    """An int32 row of C wrapped to int8 as numpy wraps (the low byte, signed):
    ((c mod 256) + 128) mod 256 - 128, with mod 256 an And with 255 on 16-bit lanes (the chip's
    bitwise APIs take int16) -- no step can overflow -- then int32 -> float -> half -> int8,
    exact for values in [-128, 127].  The chip's own casts saturate instead."""
    c16, m16 = Ref(src.tensor, src.offset, "int16"), Ref("wrapm", 0, "int16")
    n2 = mul("curN", 2)
    return [Dup(Ref("wrapm"), 255, "curN"),
            Vec("And", c16, (c16, m16), n2),
            Vec("Adds", src, (src,), "curN", scalar=128),
            Vec("And", c16, (c16, m16), n2),
            Vec("Adds", src, (src,), "curN", scalar=-128),
            Vec("Cast", Ref("wrapf"), (src,), "curN", mode="CAST_NONE"),
            Vec("Cast", Ref("wraph"), (Ref("wrapf"),), "curN", mode="CAST_NONE"),
            Vec("Cast", dst, (Ref("wraph"),), "curN", mode="CAST_NONE")]


def _half_wrap(v: Ref) -> list:
    """The integer V in the half row `v` (|V| <= 256: an int8 add / sub / neg / abs) wrapped
    into [-128, 127] as numpy's int8 wraps: V - 256 [V >= 128] + 256 [V <= -129], the two
    indicators from Adds / Maxs / Mins (every value an integer below 2**11: exact in half)."""
    w = Ref("wrap8")
    return [Vec("Adds", w, (v,), "curN", scalar=-127.0), Vec("Maxs", w, (w,), "curN", scalar=0.0),
            Vec("Mins", w, (w,), "curN", scalar=1.0), Vec("Muls", w, (w,), "curN", scalar=-256.0),
            Vec("Add", v, (v, w), "curN"),
            Vec("Adds", w, (v,), "curN", scalar=128.0), Vec("Mins", w, (w,), "curN", scalar=0.0),
            Vec("Maxs", w, (w,), "curN", scalar=-1.0), Vec("Muls", w, (w,), "curN", scalar=-256.0),
            Vec("Add", v, (v, w), "curN")]


def _float_wrap(v: Ref) -> list:
    """The integer product P in the float row `v` (|P| <= 16384: an int8 mul, exact in float32)
    wrapped into [-128, 127] as numpy's int8 wraps: P - 256 round(P / 256) (the rounding by
    adding and subtracting 1.5 * 2**23, exact below 2**22) lies in [-128, 128], then 128 ->
    -128 as in _half_wrap.  Every step is exact in float32."""
    w = Ref("wrap8f")
    return [Vec("Muls", w, (v,), "curN", scalar=1 / 256), Vec("Adds", w, (w,), "curN", scalar=12582912.0),
            Vec("Adds", w, (w,), "curN", scalar=-12582912.0), Vec("Muls", w, (w,), "curN", scalar=-256.0),
            Vec("Add", v, (v, w), "curN"),
            Vec("Adds", w, (v,), "curN", scalar=-127.0), Vec("Maxs", w, (w,), "curN", scalar=0.0),
            Vec("Mins", w, (w,), "curN", scalar=1.0), Vec("Muls", w, (w,), "curN", scalar=-256.0),
            Vec("Add", v, (v, w), "curN")]


def cube_tile_kernel(sched: CubeSchedule) -> TileKernel:
    """The kernel of the schedule's tiling and, as candidates for the kernel pass `tiling`, the
    kernel of each other tiling it offers (`CubeSchedule.offers`): whole kernels, since a layout
    changes the kernel's text (one Matmul object per AI core idles the second vector instance; A's
    panel in L1 adds a TSCM queue and its copy) and the plan line names the split."""
    lowering = _CubeLowering(sched)
    own = lowering.kernel()
    # a kernel reads its tiling through the words but for the layout (lower/cube.LAYOUTS: A's panel
    # in L1, Matmul objects per AI core): candidates of a layout built once are that kernel with
    # their words and plan line; every layout's Compute stage is the schedule's epilogue, built once
    built = {_layout(sched.tiling_fields, sched.target): own}
    others = []
    # (a schedule that adopted another tiling already -- the pass ran -- offers nothing more)
    offers = sched.offers[1:] if sched.offers and sched.offers[0][0] == sched.tiling_fields else ()
    for tiling, note in offers:
        alt = copy.copy(sched)
        alt.tiling_fields, alt.plan_note, alt.offers = tiling, note, ()
        same = built.get(_layout(tiling, sched.target))
        if same is None:
            same = built[_layout(tiling, sched.target)] = _CubeLowering(alt).kernel(lowering.compute)
        others.append(dataclasses.replace(same, note=note, words=tuple(alt.words)))
    return dataclasses.replace(own, candidates=tuple(others)) if others else own


def _layout(tiling, target) -> tuple:
    """What of a tiling, besides its words, a cube kernel's text depends on (_CubeLowering.kernel /
    process): A's panel held in L1, and the Matmul objects per AI core on a chip with two."""
    return bool(tiling.a_l1_bytes), tiling.objects_per_core if target.separated else 1


def cube_group_tile_kernel(sched: CubeGroupSchedule) -> TileKernel:
    """A kernel of several matmuls of the same A: each part is the cube kernel it would be
    alone (cube_tile_kernel of its schedule); Process runs them in turn, a TPipe reset between
    two, handing each the group's GM tensors its Init takes (its inputs by name, its results by
    where they are among the group's).  The tiling struct is one TCubeTiling per part."""
    fn = sched.fn
    outs = output_names(sched.params, len(fn.results))
    result_index: dict = {}
    for i, v in enumerate(fn.results):
        result_index.setdefault(id(v), i)
    gms = [Gm(p.name, p.dtype, "in", p.index) for p in sched.params]
    gms += [Gm(outs[i], v.dtype, "out", i) for i, v in enumerate(fn.results)]
    parts, process = [], []
    for i, (ps, part_fn) in enumerate(zip(sched.parts, sched.part_fns)):
        part = cube_tile_kernel(ps)
        mine = [g.name for g in part.gms if g.role == "in"]   # a part's inputs keep the group's names
        mine += [outs[result_index[id(part_fn.results[g.index])]] for g in part.gms if g.role == "out"]
        process += ([Reset()] if i else []) + [RunPart(i, tuple(mine))]
        parts.append(part)
    return TileKernel(fn.name, "cube_group", sched.plan_note, [], gms, [], [], [], (), (), "TCubeTiling",
                      tuple(process), parts=tuple(parts))   # (the words are the parts')

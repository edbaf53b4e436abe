"""Ascend C for row kernels (softmax, layer_norm, rms_norm, last-axis reductions).

Reads a `lower.row.RowSchedule` and prints the same skeleton as the vector printer
(class with Init / Process / CopyIn / Compute / CopyOut, TQue VECIN/VECOUT, TBuf VECCALC,
contiguous tile ranges per core, the tiling struct copied word by word) with a Compute stage
that walks the tile row by row and, per row, runs the kernel's ops in program order:

* an elementwise op prints the tile stmts the vector scheduler gave it (row_plan.OpStep) with
  the printer's own `emit_stmt`, its UB slots renamed to the row's buffers;
* a reduction casts a 16-bit row to float32, folds it into 64 float32 lanes with Add/Max/Min
  (the last chunk's count stops at the row's end: the pad after the row is never read, so no
  identity padding is needed there; the lanes start at the identity: 0, -inf, +inf) and
  reduces the lanes with one per-repeat reduction (WholeReduceSum/Max/Min; ReduceRepeat from
  CANN 9.1, chosen by the target's `cann_version`); 910A has no float reductions, so there the
  lanes are halved with binary ops down to one 32-byte block and finished on the scalar unit;
* per-row values reach later ops as scalar registers (GetValue after a V->S flag) or, for ops
  on per-row values, as one element in a 32-byte UB slot (SetValue after an S->V flag).

Device code uses no STL; the host tiling function mirrors lower.row.compute_row_tiling.
"""
from __future__ import annotations

from .. import dtypes as dt
from ..lower.vector import MAX_BLOCK_COUNT, MIN_CORE_BYTES, compute_dtype
from ..lower.row import FOLD_LANES, RowSchedule, allocate_row_values, rs_slots, temp_pool
from . import cnames
from .emit import camel, gm_scalar_load, literal, name_temporaries, rename_stmt, scalar_ctype
from .frame import KernelFrame

_IDENTITY = {"sum": 0.0, "mean": 0.0, "max": float("-inf"), "min": float("inf")}
_BINARY = {"sum": "Add", "mean": "Add", "max": "Max", "min": "Min"}
_KIND = {"sum": "Sum", "mean": "Sum", "max": "Max", "min": "Min"}
_REDUCE_TYPE = {"sum": "SUM", "mean": "SUM", "max": "MAX", "min": "MIN"}


def cann_at_least(version: str, want: tuple[int, int]) -> bool:
    parts = [int(p) for p in str(version).split(".")[:2] if p.isdigit()]
    return tuple((parts + [0, 0])[:2]) >= want


class RowPrinter(KernelFrame):
    """Prints one row kernel: tiles of whole rows, or passes over chunks of a long row."""

    def __init__(self, sched: RowSchedule, target, name: str, debug: bool | None = None):
        super().__init__(sched, target, name, debug)
        self.symbols = sched.symbols
        self.cnames = {p.index: cnames.param(p.name) for p in sched.params}
        self.k = max(1, sched.outer_rank)
        self.new_api = cann_at_least(target.cann_version, (9, 1))
        self.float_reduce = "float" in target.api_dtypes.get("WholeReduceSum", frozenset())

    # ---- the kind's parts of the frame (frame.KernelFrame) ----------------------------------
    def _gm_args(self) -> list[str]:
        ins = [self.cnames[p.index] for p in self.s.params if p.kind != "runtime_scalar"]
        return ins + [f"y{o.index}" for o in self.s.outputs]

    def tiling_header(self) -> str:
        L = [f"// Tiling data of {self.name} (a row kernel): written by {camel(self.name)}Tiling() on the host.",
             f"struct {self.tiling} {{",
             "    uint32_t R;            // rows",
             "    uint32_t C;            // elements per row",
             "    uint32_t Cpad;         // UB row stride (32-byte multiple)",
             "    uint32_t tileRows;     // rows per tile",
             "    uint32_t totalTiles;",
             "    uint32_t tilesPerCore;",
             "    uint32_t blockDim;",
             f"    uint32_t dims[{self.k}];       // outer dims, outermost first"]
        for p in self._strided():
            L.append(f"    uint32_t stride_{self.cnames[p.index]}[{self.k}];  // element stride per outer dim (0 = broadcast)")
        for p in self.s.params:
            if p.kind == "runtime_scalar":
                L.append(f"    {scalar_ctype(p.dtype)} {self._rt(p)};   // runtime scalar {p.name}")
        L.append("};")
        return "\n".join(L) + "\n"

    def host_tiling(self) -> str:
        s, t = self.s, self.t
        dims = []
        for d in s.row_shape[:-1] or (1,):
            dims.append(f"uint64_t(sizes[{self.symbols.index(d)}])" if isinstance(d, str) else f"uint64_t({d})")
        c = s.row_shape[-1]
        c_expr = f"uint64_t(sizes[{self.symbols.index(c)}])" if isinstance(c, str) else f"uint64_t({c})"
        moved = max(s.out_row_bytes, s.in_row_bytes, 1)
        symbol_doc = ", ".join(f"sizes[{i}] = {n}" for i, n in enumerate(self.symbols)) or "none"
        L = [f"// Host tiling for {self.name} on {t.name}: symbolic sizes {symbol_doc}.",
             "// Tiles of whole rows; the UB holds tileRows rows of every row input/output (queues) and one",
             "// row of every other per-row value. Returns false when the sizes need 64-bit offsets or one",
             "// row does not fit the UB budget.",
             f"inline bool {camel(self.name)}Tiling(const int64_t* sizes, uint32_t vectorCores, uint32_t ubBudget,",
             f"                          {self.tiling}* t)",
             "{",
             "    (void)sizes;",
             f"    const uint64_t dims[{self.k}] = {{{', '.join(dims)}}};",
             f"    const uint64_t C = {c_expr};",
             "    uint64_t R = 1;",
             f"    for (int i = 0; i < {self.k}; ++i) R *= dims[i];",
             f"    const uint64_t block = {s.block_elems}, slack = {s.slack};",
             "    const uint64_t Cpad = (C + block - 1) / block * block;",
             "    if (R * (Cpad + slack) >= (uint64_t(1) << 32)) return false;  // 32-bit offsets",
             "    *t = {};",
             f"    for (int i = 0; i < {self.k}; ++i) t->dims[i] = uint32_t(dims[i]);",
             "    t->R = uint32_t(R); t->C = uint32_t(C); t->Cpad = uint32_t(Cpad); t->tileRows = 1;",
             "    if (R == 0 || C == 0) return true;  // an empty tensor: nothing to launch",
             "    const uint64_t cpad = Cpad + slack;",
             f"    const uint64_t fixed = uint64_t({s.row_bytes}) * cpad + {s.fixed_bytes};",
             f"    const uint64_t perRow = uint64_t({s.tile_row_bytes}) * cpad + {s.tile_scalar_bytes};",
             "    const uint64_t fit = ubBudget > fixed ? (ubBudget - fixed) / perRow : 0;",
             "    if (fit < 1) return false;  // one row does not fit: not printable in the single-read plan",
             f"    uint64_t want = (R * C * {moved} + {MIN_CORE_BYTES - 1}) / {MIN_CORE_BYTES};",
             "    want = std::max<uint64_t>(1, std::min<uint64_t>({uint64_t(vectorCores), want, R}));",
             *([f"    want = std::max<uint64_t>(1, std::min<uint64_t>(want, R * {s.in_row_bytes + s.out_row_bytes} / "
                f"(50 * {s.shared_row_bytes})));  // shared rows re-read per core: <= 2 %"]
               if s.shared_row_bytes else []),
             "    const uint64_t rowsPerCore = (R + want - 1) / want;",
             f"    const uint64_t tileRows = std::max<uint64_t>(1, std::min<uint64_t>({{fit, rowsPerCore, {MAX_BLOCK_COUNT}}}));",
             "    const uint64_t totalTiles = (R + tileRows - 1) / tileRows;",
             "    uint64_t tilesPerCore = (totalTiles + want - 1) / want;",
             *self._line_aligned(),
             "    t->tileRows = uint32_t(tileRows); t->totalTiles = uint32_t(totalTiles);",
             "    t->tilesPerCore = uint32_t(tilesPerCore);",
             "    t->blockDim = uint32_t((totalTiles + tilesPerCore - 1) / tilesPerCore);"]
        if s.passes is not None:   # the single-read part ends at the empty-tensor return
            L = L[:L.index("    const uint64_t cpad = Cpad + slack;")] + self._multi_host() + ["}"]
            return "\n".join(L) + "\n"
        L += self._strides()
        L += ["    return true;", "}"]
        return "\n".join(L) + "\n"

    def heading(self) -> list[str]:
        return [f"// ---- {self.name}: a row kernel fused from {cnames.comment(self.s.fn.loc)} ----",
                f"// plan: {cnames.comment(self.s.plan_note)}"]

    def kernel(self) -> str:
        return "\n".join([self._class(), self.entry(self._gm_args() + ["t"])])

    # ---- helpers ------------------------------------------------------------------------
    def _strided(self):
        return [p for p in self.s.params if p.kind in ("general", "perrow")]

    def _rt(self, p) -> str:
        return f"s_{self.cnames[p.index]}"

    def _strides(self) -> list[str]:
        L = []
        for p in self._strided():
            bits = ", ".join("true" if b else "false" for b in p.present) or "false"
            L += [f"    {{  // {self.cnames[p.index]}: {p.kind}",
                  f"        const bool present[{self.k}] = {{{bits}}};",
                  # element strides: a general parameter's rows hold C elements, a per-row one 1
                  f"        uint64_t acc = {'C' if p.kind == 'general' else '1'};",
                  f"        for (int i = {self.k - 1}; i >= 0; --i) {{",
                  f"            t->stride_{self.cnames[p.index]}[i] = present[i] ? uint32_t(acc) : 0u;",
                  "            if (present[i]) acc *= dims[i];",
                  "        }",
                  "    }"]
        return L

    def _multi_host(self) -> list[str]:
        """Rows bigger than UB: one row per tile, walked in chunks of Cpad (fixed at compile time)."""
        s = self.s
        moved = max(s.out_row_bytes, s.in_row_bytes, 1)
        return [f"    // multi-pass plan: chunks of {s.chunk} elements, one row per tile",
                f"    t->Cpad = {s.chunk};",
                f"    uint64_t want = (R * C * {moved} + {MIN_CORE_BYTES - 1}) / {MIN_CORE_BYTES};",
                "    want = std::max<uint64_t>(1, std::min<uint64_t>({uint64_t(vectorCores), want, R}));",
                "    const uint64_t tileRows = 1, totalTiles = R;  (void)tileRows;",
                "    uint64_t tilesPerCore = (R + want - 1) / want;",
                *self._line_aligned(),
                "    t->totalTiles = uint32_t(totalTiles); t->tilesPerCore = uint32_t(tilesPerCore);",
                "    t->blockDim = uint32_t((totalTiles + tilesPerCore - 1) / tilesPerCore);",
                *self._strides(),
                "    return true;"]

    def _line_aligned(self) -> list[str]:
        if self.t.has_datacopypad:
            return []
        conds = []
        for o in self.s.outputs:
            per = "C" if o.kind == "row" else "1"
            conds.append(f"s * tileRows * {per} * {o.dtype.itemsize} % 64 != 0")
        cond = " || ".join(conds) or "false"
        return ["    for (bool shared = true; shared && tilesPerCore < totalTiles;) {",
                "        shared = false;",
                "        for (uint64_t s = tilesPerCore; s < totalTiles && !shared; s += tilesPerCore)",
                f"            shared = {cond};",
                "        if (shared) ++tilesPerCore;",
                "    }"]

    # ---- the kernel class ---------------------------------------------------------------
    def _class(self) -> str:
        s = self.s
        members, init, gm_init = [], [], []
        tile = "(t.tileRows * t.Cpad + {slack}) * sizeof({ty})"
        row = "(t.Cpad + {slack}) * sizeof({ty})"
        multi = s.passes is not None
        queued = ({i for ps in s.passes for i in ps.params} if multi else
                  {p.index for p in s.params if p.kind in ("full", "general")})
        for p in s.params:
            nm, ty = self.cnames[p.index], p.dtype.ascendc
            if p.kind == "runtime_scalar":
                continue
            members.append(f"    AscendC::GlobalTensor<{ty}> gm_{nm};")
            gm_init.append(f"        gm_{nm}.SetGlobalBuffer((__gm__ {ty}*){nm});")
            if p.index in queued:
                members.append(f"    AscendC::TQue<AscendC::QuePosition::VECIN, 1> q_{nm};")
                init.append(f"        pipe.InitBuffer(q_{nm}, {s.in_num}, {tile.format(slack=s.slack, ty=ty)});")
            elif p.kind == "lastonly":
                members.append(f"    AscendC::TBuf<AscendC::TPosition::VECCALC> b_{nm};")
                members.append(f"    AscendC::LocalTensor<{ty}> row_{nm};  // read once per core")
                init.append(f"        pipe.InitBuffer(b_{nm}, {row.format(slack=s.slack, ty=ty)});")
            elif p.kind in ("scalar",):
                members.append(f"    {compute_dtype(p.dtype).ascendc} v_{nm};")
        for o in s.outputs:
            ty = o.dtype.ascendc
            members.append(f"    AscendC::GlobalTensor<{ty}> gm_y{o.index};")
            gm_init.append(f"        gm_y{o.index}.SetGlobalBuffer((__gm__ {ty}*)y{o.index});")
            members.append(f"    AscendC::TQue<AscendC::QuePosition::VECOUT, 1> q_y{o.index};")
            if o.kind == "row":
                init.append(f"        pipe.InitBuffer(q_y{o.index}, {s.out_num}, {tile.format(slack=s.slack, ty=ty)});")
            else:
                init.append(f"        pipe.InitBuffer(q_y{o.index}, {s.out_num}, "
                            f"(t.tileRows * sizeof({ty}) + 31) / 32 * 32);   // one value per row")
        if multi:   # each pass has its own row buffers: allocate the most any pass needs
            counts = {}
            for ps in s.passes:
                for d, n in ps.counts.items():
                    counts[d] = max(counts.get(d, 0), n)
            self._assign = {}
        else:
            self._assign, counts = allocate_row_values(s.fn, s.kinds)
        self._rv_counts = counts
        for d, n in sorted(counts.items(), key=lambda x: x[0].name):
            for i in range(n):
                members.append(f"    AscendC::TBuf<AscendC::TPosition::VECCALC> b_{self._rv(d, i)};")
                init.append(f"        pipe.InitBuffer(b_{self._rv(d, i)}, {row.format(slack=s.slack, ty=d.ascendc)});")
        self._pool = temp_pool(s.steps.values())
        for d, n in sorted(self._pool.items(), key=lambda x: x[0].name):
            for i in range(n):
                members.append(f"    AscendC::TBuf<AscendC::TPosition::VECCALC> b_{self._tmp(d, i)};")
                init.append(f"        pipe.InitBuffer(b_{self._tmp(d, i)}, {row.format(slack=s.slack, ty=d.ascendc)});")
        if s.needs_wide:
            members.append("    AscendC::TBuf<AscendC::TPosition::VECCALC> b_wide;   // a 16-bit row as float32")
            init.append(f"        pipe.InitBuffer(b_wide, {row.format(slack=s.slack, ty='float')});")
        members += ["    AscendC::TBuf<AscendC::TPosition::VECCALC> b_lanes;  // the fold's 64 float32 lanes",
                    "    AscendC::TBuf<AscendC::TPosition::VECCALC> b_red;    // a reduction's result",
                    "    AscendC::TBuf<AscendC::TPosition::VECCALC> b_rs;     // per-row values, 32 B each"]
        lanes = max([1] + [ps.lanes for ps in s.passes]) if multi else 1
        init += [f"        pipe.InitBuffer(b_lanes, {FOLD_LANES * 4 * lanes});   // {FOLD_LANES} per reduction",
                 "        pipe.InitBuffer(b_red, 32);",
                 f"        pipe.InitBuffer(b_rs, {32 * rs_slots(s.fn)});"]
        L = self.class_open([f"GM_ADDR {a}" for a in self._gm_args()])
        L += gm_init + init
        L += ["    }",
              "",
              "    __aicore__ inline void Process()",
              "    {",
              *self.core_tiles(),
              "        if (first >= last) return;",
              "        Prologue();",
              "        for (uint32_t tile = first; tile < last; ++tile) {",
              "            row0 = tile * tiling.tileRows;",
              "            nrows = MinU32(tiling.tileRows, tiling.R - row0);",
              *(["            Passes();   // a row bigger than UB: CopyIn/Compute/CopyOut per chunk, per pass"]
                if multi else
                ["            CopyIn();",
                 "            Compute();",
                 "            CopyOut();"]),
              "        }",
              "    }",
              "",
              "private:"]
        L += self._row_offset() + self._sync() + self._reduce_fn() + self._prologue()
        L += self._passes() if multi else self._copy_in() + self._compute() + self._copy_out()
        L += ["    AscendC::TPipe pipe;"] + members + [
            f"    {self.tiling} tiling;",
            "    uint32_t row0 = 0, nrows = 0;",
            "};", ""]
        return "\n".join(L)

    def _rv(self, d, i) -> str:
        return f"rv_{d.name}_{i}"

    def _tmp(self, d, i) -> str:
        return f"tmp_{d.name}_{i}"

    def _row_offset(self) -> list[str]:
        return ["    // GM element offset of global row g of a parameter with per-outer-dim strides st.",
                "    __aicore__ inline uint32_t RowOffset(uint32_t g, const uint32_t* st) const",
                "    {",
                "        uint32_t off = 0;",
                f"        for (int i = {self.k - 1}; i >= 0; --i) {{",
                "            off += (g % tiling.dims[i]) * st[i];",
                "            g /= tiling.dims[i];",
                "        }",
                "        return off;",
                "    }",
                ""]

    def _sync(self) -> list[str]:
        return ["    // A scalar read of a vector result, and a vector read of a scalar write, wait for the other pipe.",
                "    __aicore__ inline void VectorToScalar()",
                "    {",
                "        AscendC::SetFlag<AscendC::HardEvent::V_S>(EVENT_ID0);",
                "        AscendC::WaitFlag<AscendC::HardEvent::V_S>(EVENT_ID0);",
                "    }",
                "    __aicore__ inline void ScalarToVector()",
                "    {",
                "        AscendC::SetFlag<AscendC::HardEvent::S_V>(EVENT_ID0);",
                "        AscendC::WaitFlag<AscendC::HardEvent::S_V>(EVENT_ID0);",
                "    }",
                ""]

    def _reduce_fn(self) -> list[str]:
        """Per reduction kind used: Fold (n float32 elements into 64 lanes), Finish (lanes ->
        float) and ReduceXRow (a whole row: identity, fold, finish)."""
        kinds = sorted({op.name if op.name != "mean" else "sum" for op in self.s.fn.ops
                        if op.name in _IDENTITY})
        L = []
        for kind in kinds:
            K, bin_api = _KIND[kind], _BINARY[kind]
            L += [f"    // {kind}: fold n float32 elements into {FOLD_LANES} lanes (each chunk's count stops at the",
                  "    // row's end, so nothing past it is read); the lanes start at the identity.",
                  f"    __aicore__ inline void Fold{K}(const AscendC::LocalTensor<float>& lanes, "
                  "const AscendC::LocalTensor<float>& src, uint32_t n)",
                  "    {",
                  f"        for (uint32_t k = 0; k < n; k += {FOLD_LANES}) {{",
                  f"            AscendC::{bin_api}(lanes, lanes, src[k], MinU32({FOLD_LANES}, n - k));",
                  "            AscendC::PipeBarrier<PIPE_V>();",
                  "        }",
                  "    }",
                  f"    __aicore__ inline float Finish{K}(const AscendC::LocalTensor<float>& lanes)",
                  "    {"]
            if self.float_reduce:
                if self.new_api:   # CANN >= 9.1 spelling (ASCENDC.md 2.6)
                    call = (f"AscendC::ReduceRepeat<AscendC::ReduceType::{_REDUCE_TYPE[kind]}, float, float>"
                            f"(red, lanes, {FOLD_LANES}, 1, 1, 1, 8);")
                else:
                    call = f"AscendC::WholeReduce{K}<float>(red, lanes, {FOLD_LANES}, 1, 1, 1, 8);"
                L += ["        AscendC::LocalTensor<float> red = b_red.Get<float>();",
                      f"        {call}",
                      "        VectorToScalar();",
                      "        const float r = red.GetValue(0);",
                      "        AscendC::PipeBarrier<PIPE_ALL>();   // red and the lanes are rewritten next",
                      "        return r;",
                      "    }"]
            else:   # 910A: no float reductions; halve the lanes down to one 32-byte block
                L += [f"        for (uint32_t h = {FOLD_LANES // 2}; h >= 8; h /= 2) {{",
                      f"            AscendC::{bin_api}(lanes, lanes, lanes[h], h);",
                      "            AscendC::PipeBarrier<PIPE_V>();",
                      "        }",
                      "        VectorToScalar();",
                      "        float r = lanes.GetValue(0);",
                      "        for (uint32_t i = 1; i < 8; ++i) {",
                      "            const float v = lanes.GetValue(i);",
                      "            " + {"sum": "r = r + v;", "max": "r = v > r ? v : r;",
                                        "min": "r = v < r ? v : r;"}[kind],
                      "        }",
                      "        AscendC::PipeBarrier<PIPE_ALL>();",
                      "        return r;",
                      "    }"]
            L += [f"    __aicore__ inline float Reduce{K}Row(const AscendC::LocalTensor<float>& src, uint32_t n)",
                  "    {",
                  "        AscendC::LocalTensor<float> lanes = b_lanes.Get<float>();",
                  f"        AscendC::Duplicate(lanes, {literal(_IDENTITY[kind], dt.float32)}, {FOLD_LANES});",
                  "        AscendC::PipeBarrier<PIPE_V>();",
                  f"        Fold{K}(lanes, src, n);",
                  f"        return Finish{K}(lanes);",
                  "    }", ""]
        return L

    def _prologue(self) -> list[str]:
        L = ["    // Once per core: scalar parameters and rows every row of the tensor shares.",
             "    __aicore__ inline void Prologue()", "    {"]
        for p in self.s.params:
            nm = self.cnames[p.index]
            if p.kind == "scalar":
                L.append(f"        v_{nm} = {gm_scalar_load('gm_' + nm, p.dtype, compute_dtype(p.dtype))};")
            elif p.kind == "lastonly" and self.s.passes is None:
                L += [f"        row_{nm} = b_{nm}.Get<{p.dtype.ascendc}>();",
                      f"        CopyRowsIn(row_{nm}, gm_{nm}, 1, tiling.C, tiling.C, tiling.Cpad);",
                      "        AscendC::PipeBarrier<PIPE_ALL>();"]
        L += ["    }", ""]
        return L

    def _copy_in(self) -> list[str]:
        L = ["    __aicore__ inline void CopyIn()", "    {"]
        for p in self.s.params:
            nm, ty = self.cnames[p.index], p.dtype.ascendc
            if p.kind == "full":
                L += [f"        AscendC::LocalTensor<{ty}> in_{nm} = q_{nm}.AllocTensor<{ty}>();",
                      f"        CopyRowsIn(in_{nm}, gm_{nm}[row0 * tiling.C], nrows, tiling.C, tiling.C, tiling.Cpad);",
                      f"        q_{nm}.EnQue(in_{nm});"]
            elif p.kind == "general":
                L += [f"        AscendC::LocalTensor<{ty}> in_{nm} = q_{nm}.AllocTensor<{ty}>();",
                      "        for (uint32_t r = 0; r < nrows; ++r) {",
                      f"            const uint32_t off = RowOffset(row0 + r, tiling.stride_{nm});",
                      f"            CopyRowsIn(in_{nm}[r * tiling.Cpad], gm_{nm}[off], 1, tiling.C, tiling.C, tiling.C);",
                      "        }",
                      f"        q_{nm}.EnQue(in_{nm});"]
        L += ["    }", ""]
        return L

    def _copy_out(self) -> list[str]:
        L = ["    __aicore__ inline void CopyOut()", "    {"]
        for o in self.s.outputs:
            ty = o.dtype.ascendc
            L.append(f"        AscendC::LocalTensor<{ty}> out_y{o.index} = q_y{o.index}.DeQue<{ty}>();")
            if o.kind == "row":
                L.append(f"        CopyRowsOut(gm_y{o.index}[row0 * tiling.C], out_y{o.index}, nrows, tiling.C, "
                         "tiling.C, tiling.Cpad);")
            else:
                L.append(f"        CopyRowsOut(gm_y{o.index}[row0], out_y{o.index}, 1, nrows, nrows, nrows);")
            L.append(f"        q_y{o.index}.FreeTensor(out_y{o.index});")
        L += ["    }", ""]
        return L

    # ---- Compute: the ops of one row, in program order -----------------------------------
    def _compute(self) -> list[str]:
        s = self.s
        L = ["    __aicore__ inline void Compute()", "    {"]
        for p in s.params:
            if p.kind in ("full", "general"):
                nm, ty = self.cnames[p.index], p.dtype.ascendc
                L.append(f"        AscendC::LocalTensor<{ty}> in_{nm} = q_{nm}.DeQue<{ty}>();")
        for o in s.outputs:
            ty = o.dtype.ascendc
            L.append(f"        AscendC::LocalTensor<{ty}> out_y{o.index} = q_y{o.index}.AllocTensor<{ty}>();")
        for (d, i) in sorted(set(self._assign.values()), key=lambda x: (x[0].name, x[1])):
            L.append(f"        AscendC::LocalTensor<{d.ascendc}> {self._rv(d, i)} = b_{self._rv(d, i)}.Get<{d.ascendc}>();")
        for d, n in sorted(self._pool.items(), key=lambda x: x[0].name):
            for i in range(n):
                L.append(f"        AscendC::LocalTensor<{d.ascendc}> {self._tmp(d, i)} = "
                         f"b_{self._tmp(d, i)}.Get<{d.ascendc}>();")
        if s.needs_wide:
            L.append("        AscendC::LocalTensor<float> wide = b_wide.Get<float>();")
        L.append("        for (uint32_t r = 0; r < nrows; ++r) {")
        L += ["            " + line for line in self._row_body()]
        L.append("        }")
        for o in s.outputs:
            L.append(f"        q_y{o.index}.EnQue(out_y{o.index});")
        for p in s.params:
            if p.kind in ("full", "general"):
                nm = self.cnames[p.index]
                L.append(f"        q_{nm}.FreeTensor(in_{nm});")
        L += ["    }", ""]
        return L

    def _row_body(self) -> list[str]:
        s = self.s
        self._count = "tiling.C"
        self._scal: dict[int, str] = {}    # id(value) -> C++ scalar holding it for this row
        self._slot: dict[int, str] = {}    # id(value) -> UB row view / 32-byte slot view
        self._n_rs = 0
        self._n_sv = 0
        L: list[str] = []
        outputs = {id(v): i for i, v in enumerate(s.fn.results)}
        self._param_setup(L)
        for op in s.fn.ops:
            if op.name == "constant":
                continue
            v = op.result
            if id(v) in outputs and s.kinds[id(v)] == "row":
                self._slot[id(v)] = f"out_y{outputs[id(v)]}[r * tiling.Cpad]"
            elif id(v) in self._assign:
                self._slot[id(v)] = self._rv(*self._assign[id(v)])
            if op.name in _IDENTITY:
                L += self._reduction(op)
            else:
                L += self._step(s.steps[id(op)])
        for i, v in enumerate(s.fn.results):
            if s.kinds[id(v)] == "rowscalar":
                L.append(f"out_y{i}.SetValue(r, {self._scalar_of(v, L)});")
        return L

    def _param_setup(self, L: list[str]) -> None:
        s = self.s
        for p in s.params:   # where each parameter's row lives
            v, nm = s.fn.params[p.index].value, self.cnames[p.index]
            if s.passes is not None and p.kind in ("full", "general", "lastonly"):
                self._slot[id(v)] = f"in_{nm}"   # this chunk of the row
            elif p.kind in ("full", "general"):
                self._slot[id(v)] = f"in_{nm}[r * tiling.Cpad]"
            elif p.kind == "lastonly":
                self._slot[id(v)] = f"row_{nm}"
            elif p.kind == "scalar":
                self._scal[id(v)] = f"v_{nm}"
            elif p.kind == "runtime_scalar":
                self._scal[id(v)] = f"static_cast<{compute_dtype(p.dtype).ascendc}>(tiling.{self._rt(p)})"
            elif p.kind == "perrow":
                var = self._new_scalar()
                cd = compute_dtype(p.dtype).ascendc
                L.append(f"const {cd} {var} = static_cast<{cd}>(static_cast<float>("
                         f"gm_{nm}.GetValue(RowOffset(row0 + r, tiling.stride_{nm}))));")
                self._scal[id(v)] = var

    def _passes(self) -> list[str]:
        """The multi-pass plan: per row, one pass per phase, each walking the row in chunks of
        tiling.Cpad elements (CopyIn, the pass's ops, its reductions' folds, CopyOut per chunk)."""
        s = self.s
        self._scal, self._slot, self._n_rs, self._n_sv = {}, {}, 0, 0
        self._count = "cn"
        L: list[str] = []
        self._param_setup(L)
        for (d, n) in sorted(self._rv_counts.items(), key=lambda x: x[0].name):
            for i in range(n):
                L.append(f"AscendC::LocalTensor<{d.ascendc}> {self._rv(d, i)} = b_{self._rv(d, i)}.Get<{d.ascendc}>();")
        for d, n in sorted(self._pool.items(), key=lambda x: x[0].name):
            for i in range(n):
                L.append(f"AscendC::LocalTensor<{d.ascendc}> {self._tmp(d, i)} = b_{self._tmp(d, i)}.Get<{d.ascendc}>();")
        if s.needs_wide:
            L.append("AscendC::LocalTensor<float> wide = b_wide.Get<float>();")
        results = {id(v): i for i, v in enumerate(s.fn.results)}
        for k, ps in enumerate(s.passes):
            L.append(f"// pass {k}: {', '.join(op.name for op in ps.ops + ps.reductions) or 'per-row ops'}")
            for op in ps.scalar_ops:
                L += self._step(s.steps[id(op)])
            for op in ps.ops:   # per-row operands as scalars, before the chunk loop (its scope ends)
                step = s.steps[id(op)]
                for inp in step.sched.inputs:
                    if inp.var:
                        self._scalar_of(step.sources[inp.index], L)
            if ps.online:   # the chunk max and a scratch block of the online recurrence
                L += [f"AscendC::LocalTensor<float> lanes{k}_{j} = b_lanes.Get<float>()[{FOLD_LANES * j}];"
                      for j in (2, 3)]
            if ps.moments:   # a scratch block, and the shift K: the row's first element
                x = ps.moments[0].operands[0]
                nm = self.cnames[[p.value for p in s.fn.params].index(x)]
                L += [f"AscendC::LocalTensor<float> lanes{k}_2 = b_lanes.Get<float>()[{FOLD_LANES * 2}];",
                      f"const float shift{k} = static_cast<float>(gm_{nm}.GetValue(row0 * tiling.C));"]
            for j, red in enumerate(ps.reductions):
                kind = "sum" if red.name == "mean" else red.name
                L += [f"AscendC::LocalTensor<float> lanes{k}_{j} = b_lanes.Get<float>()[{FOLD_LANES * j}];",
                      f"AscendC::Duplicate(lanes{k}_{j}, {literal(_IDENTITY[kind], dt.float32)}, {FOLD_LANES});",
                      "AscendC::PipeBarrier<PIPE_V>();"]
            body = ["const uint32_t cn = MinU32(tiling.Cpad, tiling.C - c0);"]
            for i in ps.params:
                p = s.params[i]
                nm, ty = self.cnames[i], p.dtype.ascendc
                off = {"full": "row0 * tiling.C + c0", "lastonly": "c0",
                       "general": f"RowOffset(row0, tiling.stride_{nm}) + c0"}[p.kind]
                body += [f"AscendC::LocalTensor<{ty}> in_{nm} = q_{nm}.AllocTensor<{ty}>();",
                         f"CopyRowsIn(in_{nm}, gm_{nm}[{off}], 1, cn, cn, cn);",
                         f"q_{nm}.EnQue(in_{nm});",
                         f"in_{nm} = q_{nm}.DeQue<{ty}>();"]
            for i in ps.outputs:
                ty = s.fn.results[i].dtype.ascendc
                body.append(f"AscendC::LocalTensor<{ty}> out_y{i} = q_y{i}.AllocTensor<{ty}>();")
            for v in list(self._slot):   # row buffers are this pass's
                if s.kinds.get(v) == "row":
                    del self._slot[v]
            own = {id(s.fn.results[i]) for i in ps.outputs}
            for op in ps.ops:
                v = op.result
                self._slot[id(v)] = f"out_y{results[id(v)]}" if id(v) in own else self._rv(*ps.assign[id(v)])
                body += self._step(s.steps[id(op)])
            if ps.online:
                body += self._online_chunk(k, self._slot[id(ps.online[0].operands[0])])
            if ps.moments:
                body += self._moments_chunk(k, self._slot[id(ps.moments[0].operands[0])])
            for j, red in enumerate([] if ps.online or ps.moments else ps.reductions):
                x = red.operands[0]
                src = self._slot[id(x)]
                if x.dtype != dt.float32:   # 16-bit rows accumulate in float32
                    body += [f"AscendC::Cast(wide, {src}, AscendC::RoundMode::CAST_NONE, cn);",
                             "AscendC::PipeBarrier<PIPE_V>();"]
                    src = "wide"
                body.append(f"Fold{_KIND['sum' if red.name == 'mean' else red.name]}(lanes{k}_{j}, {src}, cn);")
            for i in ps.outputs:
                ty = s.fn.results[i].dtype.ascendc
                body += [f"q_y{i}.EnQue(out_y{i});",
                         f"out_y{i} = q_y{i}.DeQue<{ty}>();",
                         f"CopyRowsOut(gm_y{i}[row0 * tiling.C + c0], out_y{i}, 1, cn, cn, cn);",
                         f"q_y{i}.FreeTensor(out_y{i});"]
            for i in ps.params:
                body.append(f"q_{self.cnames[i]}.FreeTensor(in_{self.cnames[i]});")
            if ps.params or ps.ops or ps.reductions or ps.outputs:
                L += ["for (uint32_t c0 = 0; c0 < tiling.C; c0 += tiling.Cpad) {"] + ["    " + b for b in body] + ["}"]
            if ps.online:
                L += self._online_finish(k, ps.online)
            if ps.moments:
                L += self._moments_finish(k, ps.moments)
            for j, red in enumerate([] if ps.online or ps.moments else ps.reductions):
                v = red.result
                kind = "sum" if red.name == "mean" else red.name
                expr = f"Finish{_KIND[kind]}(lanes{k}_{j})"
                if red.name == "mean":
                    expr = f"{expr} / static_cast<float>(tiling.C)"
                var = self._new_scalar()
                ty = v.dtype.ascendc
                L.append(f"const {ty} {var} = static_cast<{ty}>({expr});")
                self._scal[id(v)] = var
        for i, v in enumerate(s.fn.results):
            if s.kinds[id(v)] == "rowscalar":
                ty = v.dtype.ascendc
                val = self._scalar_of(v, L)
                L += [f"AscendC::LocalTensor<{ty}> out_y{i} = q_y{i}.AllocTensor<{ty}>();",
                      f"out_y{i}.SetValue(0, {val});",
                      f"q_y{i}.EnQue(out_y{i});",
                      f"out_y{i} = q_y{i}.DeQue<{ty}>();",
                      f"CopyRowsOut(gm_y{i}[row0], out_y{i}, 1, 1, 1, 1);",
                      f"q_y{i}.FreeTensor(out_y{i});"]
        return (["    __aicore__ inline void Passes()", "    {", "        const uint32_t r = 0;  (void)r;"]
                + ["        " + x for x in L] + ["    }", ""])

    def _online_chunk(self, k: int, src: str) -> list[str]:
        """Online softmax, one chunk: M (lanes k_0) running maxima, S (k_1) running sums of
        exp(a - M), per lane; S is rescaled by exp(M_old - M_new) before the chunk is added."""
        M, S, cm, tmp = (f"lanes{k}_{j}" for j in range(4))
        n = FOLD_LANES
        b = "AscendC::PipeBarrier<PIPE_V>();"
        return [f"AscendC::Duplicate({cm}, -__builtin_inff(), {n}); {b}",
                f"FoldMax({cm}, {src}, cn);",
                f"AscendC::Max({cm}, {cm}, {M}, {n}); {b}   // the new maxima",
                f"AscendC::Sub({tmp}, {M}, {cm}, {n}); {b}",
                f"AscendC::Exp({tmp}, {tmp}, {n}); {b}",
                f"AscendC::Mul({S}, {S}, {tmp}, {n}); {b}   // earlier sums rescaled to them",
                f"AscendC::Muls({M}, {cm}, 1.0f, {n}); {b}",
                f"for (uint32_t k = 0; k < cn; k += {n}) {{",
                f"    const uint32_t m = MinU32({n}, cn - k);",
                f"    AscendC::Sub({tmp}, {src}[k], {M}, m); {b}",
                f"    AscendC::Exp({tmp}, {tmp}, m); {b}",
                f"    AscendC::Add({S}, {S}, {tmp}, m); {b}",
                "}"]

    def _online_finish(self, k: int, online) -> list[str]:
        red_max, red_sum = online[0], online[1]
        M, S, cm, tmp = (f"lanes{k}_{j}" for j in range(4))
        n = FOLD_LANES
        b = "AscendC::PipeBarrier<PIPE_V>();"
        vm, vs = self._new_scalar(), self._new_scalar()
        self._scal[id(red_max.result)], self._scal[id(red_sum.result)] = vm, vs
        return [f"AscendC::Muls({cm}, {M}, 1.0f, {n}); {b}   // (Finish may overwrite its lanes)",
                f"const float {vm} = FinishMax({cm});",
                f"AscendC::Duplicate({tmp}, {vm}, {n}); {b}",
                f"AscendC::Sub({tmp}, {M}, {tmp}, {n}); {b}",
                f"AscendC::Exp({tmp}, {tmp}, {n}); {b}",
                f"AscendC::Mul({S}, {S}, {tmp}, {n}); {b}   // every lane's sum relative to the row max",
                f"const float {vs} = FinishSum({S});"]

    def _moments_chunk(self, k: int, src: str) -> list[str]:
        """layer_norm's moments, one chunk: lanes k_0 += d, lanes k_1 += d*d, d = x - K."""
        S1, S2, tmp = (f"lanes{k}_{j}" for j in range(3))
        n = FOLD_LANES
        b = "AscendC::PipeBarrier<PIPE_V>();"
        return [f"for (uint32_t k = 0; k < cn; k += {n}) {{",
                f"    const uint32_t m = MinU32({n}, cn - k);",
                f"    AscendC::Adds({tmp}, {src}[k], -shift{k}, m); {b}",
                f"    AscendC::Add({S1}, {S1}, {tmp}, m); {b}",
                f"    AscendC::Mul({tmp}, {tmp}, {tmp}, m); {b}",
                f"    AscendC::Add({S2}, {S2}, {tmp}, m); {b}",
                "}"]

    def _moments_finish(self, k: int, moments) -> list[str]:
        red_m, red_v = moments[0], moments[1]
        vm, vv, s1, s2 = (self._new_scalar() for _ in range(4))
        self._scal[id(red_m.result)], self._scal[id(red_v.result)] = vm, vv
        return [f"const float {s1} = FinishSum(lanes{k}_0);",
                f"const float {s2} = FinishSum(lanes{k}_1);",
                "const float rowLen = static_cast<float>(tiling.C);",
                f"const float {vm} = shift{k} + {s1} / rowLen;",
                f"const float {vv} = ({s2} - {s1} * {s1} / rowLen) / rowLen;"]

    def _new_scalar(self) -> str:
        self._n_sv += 1
        return f"sv{self._n_sv - 1}"

    def _rs_view(self, d) -> str:
        k = self._n_rs
        self._n_rs += 1
        return f"b_rs.Get<{d.ascendc}>()[{k * 32 // max(1, d.itemsize)}]"

    def _scalar_of(self, v, L: list[str]) -> str:
        """A C++ expression of per-row value v (read from its UB slot when it lives there)."""
        if id(v) not in self._scal:
            var = self._new_scalar()
            ty = v.dtype.ascendc
            L += ["VectorToScalar();", f"const {ty} {var} = {self._slot[id(v)]}.GetValue(0);"]
            self._scal[id(v)] = var
        return self._scal[id(v)]

    def _slot_of(self, v, L: list[str]) -> str:
        """A UB view holding per-row value v at element 0 (written from its scalar when needed)."""
        if id(v) not in self._slot:
            view = self._rs_view(v.dtype)
            L += [f"{view}.SetValue(0, static_cast<{v.dtype.ascendc}>({self._scal[id(v)]}));", "ScalarToVector();"]
            self._slot[id(v)] = view
        return self._slot[id(v)]

    def _reduction(self, op) -> list[str]:
        x, v = op.operands[0], op.result
        L = [f"// {op.name} over the row ({cnames.comment(op.loc)})"]
        src = self._slot[id(x)]
        if x.dtype != dt.float32:   # 16-bit rows accumulate in float32
            L += [f"AscendC::Cast(wide, {src}, AscendC::RoundMode::CAST_NONE, tiling.C);",
                  "AscendC::PipeBarrier<PIPE_V>();"]
            src = "wide"
        kind = "sum" if op.name == "mean" else op.name
        var = self._new_scalar()
        expr = f"Reduce{_KIND[kind]}Row({src}, tiling.C)"
        if op.name == "mean":
            expr = f"{expr} / static_cast<float>(tiling.C)"
        ty = v.dtype.ascendc
        if v.dtype == dt.float32:
            L.append(f"const float {var} = {expr};")
        else:   # rounded once to the result dtype, like the reference
            L.append(f"const {ty} {var} = static_cast<{ty}>({expr});")
        self._scal[id(v)] = var
        return L

    def _step(self, step) -> list[str]:
        """One elementwise op: its tile stmts with slots renamed to this row's buffers."""
        sched = step.sched
        L: list[str] = []
        names: dict[str, str] = {}
        scalars: dict[str, str] = {}
        for inp in sched.inputs:
            src = step.sources[inp.index]
            if inp.var:
                scalars[inp.var] = self._scalar_of(src, L) if step.kind == "row" or id(src) in self._scal \
                    else self._scalar_of(src, L)
            elif inp.slot:
                names[inp.slot] = self._slot_of(src, L) if step.kind == "rowscalar" else self._slot[id(src)]
        res = step.op.result
        out_slot = sched.outputs[0].slot
        if step.kind == "rowscalar":
            self._slot[id(res)] = self._rs_view(res.dtype)
        names[out_slot] = self._slot[id(res)]
        prefill = name_temporaries(sched, names, self._tmp)
        count = self._count if step.kind == "row" else "1"
        L.append(f"{{  // {step.op.name} ({cnames.comment(step.op.loc)})")
        L.append(f"    const uint32_t o = 0, n = {count};")
        for buf, value, d in prefill:   # lanes Compare may read past the count
            L += [f"    AscendC::Duplicate({buf}, {literal(value, d)}, tiling.Cpad + {self.s.slack});",
                  "    AscendC::PipeBarrier<PIPE_V>();"]
        for st in sched.stmts:
            L += self._stmt(rename_stmt(st, names, scalars), 4)
        L.append("}")
        return L

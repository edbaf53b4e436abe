"""Ascend C printer: a VectorSchedule -> kernel source, tiling struct and host tiling code.

The kernel follows the canonical TPipe/TQue form: a class with Init / Process /
CopyIn / Compute / CopyOut, inputs in TQue<VECIN> and outputs in TQue<VECOUT>, both
double-buffered with InitBuffer(que, 2, bytes); temporaries in TBuf<VECCALC>.  Tile
ops are printed by `emit_stmt` from their primitive's call form (tile/prims.py); everything target-specific
(DataCopyPad or an aligned body plus a scalar tail, the kernel-type macro) is looked
up in the Target, never decided by op name here.  `FUSEDSL_DEBUG=1` puts the user's
source line beside every Compute statement.
"""
from __future__ import annotations

import dataclasses
import struct

from . import cnames
from ..lower.vector import MAX_BLOCK_COUNT, MIN_CORE_BYTES, VectorSchedule, compute_dtype
from ..tile.tiling import TILE_HALVINGS
from ..tile.tiling_cost import table_for
from .host_cost import cycles_function
from ..targets import Target
from ..version import __version__ as VERSION   # stamped into projects and their manifests
from .emit import camel, gm_scalar_load, literal, pack_scalar, scalar_ctype
from .frame import KernelFrame


class AscendCPrinter(KernelFrame):
    """An elementwise kernel: tiles of rows in, the tile program, tiles out (printer_view.py
    adds slice / concatenate / take addressing)."""

    def __init__(self, sched: VectorSchedule, target: Target, name: str, debug: bool | None = None):
        # parameter names become `p_<name>` in C++ (cnames.param): any Python name works
        super().__init__(dataclasses.replace(sched, inputs=[dataclasses.replace(i, name=cnames.param(i.name))
                                                            for i in sched.inputs]), target, name, debug)
        self.sched = sched   # the user's parameter names: the launch binds arrays by them
        self.k = len(sched.dims)
        self.tensor_inputs = [i for i in self.s.inputs if i.kind != "runtime_scalar"]
        self.symbols = sorted({d for d in sched.iter_shape if isinstance(d, str)})

    # ---- public -------------------------------------------------------------------------
    def tiling_header(self) -> str:
        fields = ["R", "C", "Cpad", "tileRows", "tileCols", "colTiles", "totalTiles", "tilesPerCore",
                  "blockDim", "tileElems", "rowsMode"]
        lines = [f"// Tiling data of {self.name}: written by {camel(self.name)}Tiling() on the host,",
                 "// read by the kernel.  Every field is 32 bits wide so the kernel can copy it word by word.",
                 f"struct {self.tiling} {{"]
        lines += [f"    uint32_t {f};" for f in fields]
        lines.append(f"    uint32_t dims[{self.k}];        // collapsed iteration dims, outermost first")
        for inp in self.tensor_inputs:
            lines.append(f"    uint32_t stride_{inp.name}[{self.k}];  // element stride per dim (0 = broadcast)")
        for inp in self.s.inputs:
            if inp.kind == "runtime_scalar":
                lines.append(f"    {scalar_ctype(inp.gm_dtype)} {inp.var};   // runtime scalar {inp.name} ({inp.gm_dtype})")
        lines.append("};")
        return "\n".join(lines) + "\n"

    def host_tiling(self) -> str:
        """C++ mirror of schedule.compute_tiling (a test checks both agree): the same candidate
        tilings, costed by the same integer model (host_cost.py), the cheapest kept."""
        s, t = self.s, self.t
        per_elem = s.ub_bytes_per_elem()
        out_bytes = sum(o.gm_dtype.itemsize for o in s.outputs)
        hoisting = any(x.role == "inv" for x in s.slots.values())
        dims_expr = []
        for group in s.dims:
            factors = [f"sizes[{self.symbols.index(s.iter_shape[d])}]" if isinstance(s.iter_shape[d], str)
                       else str(s.iter_shape[d]) for d in group] or ["1"]
            dims_expr.append(" * ".join(f"uint64_t({f})" for f in factors))
        symbol_doc = ", ".join(f"sizes[{i}] = {n}" for i, n in enumerate(self.symbols)) or "none"
        table = table_for(s)
        L = [*cycles_function(camel(self.name), table, self.k),
             f"// Host tiling for {self.name} on {t.name}: symbolic sizes {symbol_doc}.",
             f"// ubBudget defaults to {s.ub_budget} bytes, vectorCores to {t.vector_cores}.",
             "// Returns false (and writes nothing) when the sizes need offsets of 64 bits or more.",
             f"inline bool {camel(self.name)}Tiling(const int64_t* sizes, uint32_t vectorCores, uint32_t ubBudget,",
             f"                          {self.tiling}* t)",
             "{",
             "    (void)sizes;",
             f"    const uint64_t dims[{self.k}] = {{{', '.join(dims_expr)}}};",
             f"    const uint64_t C = dims[{self.k - 1}];",
             "    uint64_t R = 1;",
             f"    for (int i = 0; i + 1 < {self.k}; ++i) R *= dims[i];",
             f"    const uint64_t perElem = {per_elem}, gran = {s.gran_elems}, block = {s.block_elems};",
             f"    const uint64_t slack = {s.slack_elems};",
             "    const uint64_t perTile = ubBudget / perElem;",
             "    uint64_t maxElems = (perTile > slack ? perTile - slack : 0) / gran * gran;",
             f"    const uint64_t total = R * C;",
             "    if (R * ((C + block - 1) / block * block) >= (uint64_t(1) << 32)) return false;  // 32-bit offsets",
             "    if (total == 0) {  // an empty tensor: nothing to launch",
             "        *t = {};",
             "        t->R = uint32_t(R); t->C = uint32_t(C); t->Cpad = uint32_t(C); t->tileRows = 1; t->tileCols = uint32_t(C);",
             f"        for (int i = 0; i < {self.k}; ++i) t->dims[i] = uint32_t(dims[i]);",
             "        return true;",
             "    }",
             f"    const uint64_t rule = std::max<uint64_t>(1, std::min<uint64_t>(vectorCores, "
             f"(total * {out_bytes} + {MIN_CORE_BYTES - 1}) / {MIN_CORE_BYTES}));",
             "    const uint64_t Cpad0 = (C + block - 1) / block * block;",
             f"    const bool rowsMode = (R > 1 || {'true' if hoisting else 'false'}) && Cpad0 <= maxElems;",
             "    // candidate core counts: tile/tiling.py core_candidates",
             "    uint64_t cores[40];",
             "    int nCores = 0;",
             "    cores[nCores++] = rule;",
             "    if (rule > 1) cores[nCores++] = (rule + 1) / 2;",
             *([] if table.per_core_reads else [
                 "    for (uint64_t c = rule * 2; c < vectorCores; c *= 2) cores[nCores++] = c;",
                 "    if (vectorCores > rule) cores[nCores++] = vectorCores;"]),
             "    // the cheapest candidate by the cost model; ties keep the earlier (the rule's largest tile)",
             "    uint64_t best = ~uint64_t(0);",
             "    for (int k = 0; k < nCores; ++k) {",
             f"      for (uint64_t shift = 0; shift <= {TILE_HALVINGS}; ++shift) {{",
             "        uint64_t want = cores[k];",
             "        uint64_t Cpad = Cpad0;",
             "        uint64_t tileRows, tileCols, colTiles, totalTiles, tileElems;",
             "        if (rowsMode) {",
             "            want = std::min<uint64_t>(want, R);",
             "            const uint64_t rowsPerCore = (R + want - 1) / want;",
             f"            tileRows = std::max<uint64_t>(1, std::min<uint64_t>({{maxElems / Cpad, rowsPerCore, "
             f"{MAX_BLOCK_COUNT}}}) >> shift);",
             "            tileCols = C; colTiles = 1;",
             "            totalTiles = (R + tileRows - 1) / tileRows;",
             "            tileElems = (tileRows * Cpad + gran - 1) / gran * gran;",
             "        } else {",
             "            Cpad = C;",
             "            const uint64_t perCore = R == 1 ? ((C * R + want - 1) / want + gran - 1) / gran * gran : maxElems;",
             "            tileCols = std::max<uint64_t>(gran, (std::min<uint64_t>(maxElems, perCore) >> shift) / gran * gran);",
             "            tileRows = 1;",
             "            colTiles = (C + tileCols - 1) / tileCols;",
             "            totalTiles = R * colTiles;",
             "            tileElems = tileCols;",
             "        }",
             "        uint64_t tilesPerCore = (totalTiles + want - 1) / want;",
             *["    " + line for line in self._line_aligned_cores()],
             "        const uint64_t blockDim = (totalTiles + tilesPerCore - 1) / tilesPerCore;",
             f"        const uint64_t cycles = {camel(self.name)}Cycles(dims, C, Cpad, tileRows, tileCols, tilesPerCore, "
             "blockDim, tileElems);",
             "        if (cycles >= best) continue;",
             "        best = cycles;",
             "        t->R = uint32_t(R); t->C = uint32_t(C); t->Cpad = uint32_t(Cpad);",
             "        t->tileRows = uint32_t(tileRows); t->tileCols = uint32_t(tileCols); t->colTiles = uint32_t(colTiles);",
             "        t->totalTiles = uint32_t(totalTiles); t->tilesPerCore = uint32_t(tilesPerCore);",
             "        t->blockDim = uint32_t(blockDim);",
             "        t->tileElems = uint32_t(tileElems); t->rowsMode = rowsMode ? 1u : 0u;",
             "      }",
             "    }",
             f"    for (int i = 0; i < {self.k}; ++i) t->dims[i] = uint32_t(dims[i]);"]
        for inp in self.tensor_inputs:
            bits = ", ".join("true" if b else "false" for b in inp.bits) or "true"
            L += [f"    {{  // {inp.name}: {inp.kind}",
                  f"        const bool present[{self.k}] = {{{bits}}};",
                  "        uint64_t acc = 1;",
                  f"        for (int i = {self.k - 1}; i >= 0; --i) {{",
                  f"            t->stride_{inp.name}[i] = present[i] ? uint32_t(acc) : 0u;",
                  "            if (present[i]) acc *= dims[i];",
                  "        }",
                  "    }"]
        L += ["    return true;", "}"]
        return "\n".join(L) + "\n"

    def _line_aligned_cores(self) -> list[str]:
        """Without DataCopyPad the row tails are written with GlobalTensor::SetValue, which goes
        through each core's 64-byte data cache: grow tilesPerCore until every core's share of
        every output starts on a 64-byte line, so no two cores write the same line."""
        if self.t.has_datacopypad:
            return []
        sizes = sorted({o.gm_dtype.itemsize for o in self.s.outputs})
        cond = " || ".join(f"off * {e} % 64 != 0" for e in sizes) or "false"
        return ["    for (bool shared = true; shared && tilesPerCore < totalTiles;) {",
                "        shared = false;",
                "        for (uint64_t s = tilesPerCore; s < totalTiles && !shared; s += tilesPerCore) {",
                "            const uint64_t off = rowsMode ? s * tileRows * C : (s / colTiles) * C + (s % colTiles) * tileCols;",
                f"            shared = {cond};",
                "        }",
                "        if (shared) ++tilesPerCore;",
                "    }"]

    def heading(self) -> list[str]:
        return [f"// ---- {self.name}: fused from {cnames.comment(self.s.kernel.loc)} ----"]

    def launch_params(self) -> list:
        return list(self.sched.inputs)

    def pack(self, tiling, scalars) -> bytes:
        """The tiling struct as tiling_header lays it out: the fields, each tensor input's
        strides, a view kernel's box table, then the runtime scalars."""
        t = tiling
        words = [t.R, t.C, t.Cpad, t.tile_rows, t.tile_cols, t.col_tiles, t.total_tiles, t.tiles_per_core,
                 t.block_dim, t.tile_elems, int(t.rows_mode)] + list(t.dims)
        data = struct.pack(f"<{len(words)}I", *words)
        for inp, strides in zip(self.sched.inputs, t.strides):
            if inp.kind != "runtime_scalar":
                data += struct.pack(f"<{len(strides)}I", *strides)
        if t.boxes:   # view kernels: the box table (schedule._view_tiling)
            data += struct.pack("<I", len(t.boxes))
            for row in t.boxes:
                data += struct.pack(f"<{len(row)}I", *row)
        for inp in self.sched.inputs:
            if inp.kind == "runtime_scalar":
                data += pack_scalar(inp.gm_dtype, scalars[inp.name])
        return data

    def kernel(self) -> str:
        return "\n".join([self._class(), self.entry(self._gm_args() + ["t"])])

    # ---- pieces -------------------------------------------------------------------------
    def _gm_args(self) -> list[str]:
        return [i.name for i in self.tensor_inputs] + [f"y{o.index}" for o in self.s.outputs]

    def _class(self) -> str:
        s = self.s
        slots = s.slots
        members, init = [], []
        for name, slot in slots.items():
            ty = slot.dtype.ascendc
            nbytes = (f"(t.tileElems + {s.slack_elems}) * sizeof({ty})" if s.slack_elems
                      else f"t.tileElems * sizeof({ty})")
            if slot.role == "in":
                members.append(f"    AscendC::TQue<AscendC::QuePosition::VECIN, 1> q_{name};")
                init.append(f"        pipe.InitBuffer(q_{name}, {slot.num}, {nbytes});"
                            + ("   // double-buffered" if slot.num == 2 else ""))
            elif slot.role == "out":
                members.append(f"    AscendC::TQue<AscendC::QuePosition::VECOUT, 1> q_{name};")
                init.append(f"        pipe.InitBuffer(q_{name}, {slot.num}, {nbytes});"
                            + ("   // double-buffered" if slot.num == 2 else ""))
            else:
                members.append(f"    AscendC::TBuf<AscendC::TPosition::VECCALC> b_{name};")
                init.append(f"        pipe.InitBuffer(b_{name}, {nbytes});")
                if slot.role in ("inv", "scratch"):
                    members.append(f"    AscendC::LocalTensor<{ty}> {name};  // filled once per core")
        gm_init = []
        for inp in self.tensor_inputs:
            members.append(f"    AscendC::GlobalTensor<{inp.gm_dtype.ascendc}> gm_{inp.name};")
            gm_init.append(f"        gm_{inp.name}.SetGlobalBuffer((__gm__ {inp.gm_dtype.ascendc}*){inp.name});")
        for o in s.outputs:
            members.append(f"    AscendC::GlobalTensor<{o.gm_dtype.ascendc}> gm_y{o.index};")
            gm_init.append(f"        gm_y{o.index}.SetGlobalBuffer((__gm__ {o.gm_dtype.ascendc}*)y{o.index});")
        scalars = []
        for inp in s.inputs:
            if inp.kind in ("scalar", "runtime_scalar"):
                scalars.append((inp, compute_dtype(inp.gm_dtype)))
                members.append(f"    {compute_dtype(inp.gm_dtype).ascendc} {inp.var};")
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
              "            Geometry(tile);",
              "            CopyIn();",
              "            Compute();",
              "            CopyOut();",
              "        }",
              "    }",
              "",
              "private:"]
        L += self._geometry()
        L += self._prologue(scalars)
        L += self._copy_in()
        L += self._compute()
        L += self._copy_out()
        L += ["    AscendC::TPipe pipe;"] + members + [
            f"    {self.tiling} tiling;",
            f"    uint32_t row0 = 0, nrows = 0, col0 = 0, ncols = 0, nSeg = 0, segLen = 0, segStride = 0{self.extra_state};",
            "};", ""]
        return "\n".join(L)

    extra_state = ""

    def _queued(self) -> list:
        """Inputs that move through a VECIN queue per tile."""
        return [i for i in self.s.inputs if i.kind in ("full", "general", "view", "gather")]

    def _geometry(self) -> list[str]:
        return [
              "    // Which rows/columns tile `tile` covers (rows mode: whole rows; else a chunk of one row).",
              "    __aicore__ inline void Geometry(uint32_t tile)",
              "    {",
              "        if (tiling.rowsMode) {",
              "            row0 = tile * tiling.tileRows;",
              "            nrows = MinU32(tiling.tileRows, tiling.R - row0);",
              "            col0 = 0;",
              "            ncols = tiling.C;",
              "        } else {",
              "            row0 = tile / tiling.colTiles;",
              "            nrows = 1;",
              "            col0 = (tile % tiling.colTiles) * tiling.tileCols;",
              "            ncols = MinU32(tiling.tileCols, tiling.C - col0);",
              "        }",
              "        // vector ops run per segment: all rows at once when rows are packed, else row by row",
              "        const bool packed = tiling.Cpad == ncols || nrows == 1;",
              "        nSeg = packed ? 1 : nrows;",
              "        segLen = packed ? nrows * ncols : ncols;",
              "        segStride = packed ? 0 : tiling.Cpad;",
              "    }",
              "",
              "    // GM element offset of global row g of an input with per-dim strides st (outer dims only).",
              f"    __aicore__ inline uint32_t RowOffset(uint32_t g, const uint32_t* st) const",
              "    {",
              "        uint32_t off = 0;",
              f"        for (int i = {self.k - 2}; i >= 0; --i) {{",
              "            off += (g % tiling.dims[i]) * st[i];",
              "            g /= tiling.dims[i];",
              "        }",
              "        return off;",
              "    }",
              ""]

    def _prologue(self, scalars) -> list[str]:
        s = self.s
        L = ["    // Once per core: scalars, broadcast rows (replicated over a tile's rows) and the",
             "    // ops that depend only on them.",
             "    __aicore__ inline void Prologue()", "    {"]
        for inp, cd in scalars:
            if inp.kind == "runtime_scalar":
                L.append(f"        {inp.var} = static_cast<{cd.ascendc}>(tiling.{inp.var});")
            else:
                L.append(f"        {inp.var} = {gm_scalar_load('gm_' + inp.name, inp.gm_dtype, cd)};")
        for name, slot in s.slots.items():
            if slot.role in ("inv", "scratch"):
                L.append(f"        {name} = b_{name}.Get<{slot.dtype.ascendc}>();")
        for name, value in s.prefill.items():
            slot = s.slots[name]
            ref = name if slot.role in ("inv", "scratch") else f"b_{name}.Get<{slot.dtype.ascendc}>()"
            L.append(f"        AscendC::Duplicate({ref}, {literal(value, slot.dtype)}, "
                     f"tiling.tileElems + {s.slack_elems});  // lanes Compare may read past a count")
        if s.prefill:
            L.append("        AscendC::PipeBarrier<PIPE_V>();")
        for inp in s.inputs:
            if inp.kind != "row":
                continue
            ty = inp.gm_dtype.ascendc
            L += [f"        // {inp.name}: one row read from GM, copied in UB to every row of a tile",
                  f"        CopyRowsIn({inp.slot}, gm_{inp.name}, 1, tiling.C, tiling.C, tiling.Cpad);",
                  "        AscendC::PipeBarrier<PIPE_ALL>();",
                  "        {",
                  f"            constexpr uint32_t kBlock = 32 / sizeof({ty});",
                  "            const uint32_t body = tiling.C / kBlock * kBlock;",
                  "            for (uint32_t r = 1; r < tiling.tileRows; ++r) {",
                  f"                if (body > 0) AscendC::DataCopy({inp.slot}[r * tiling.Cpad], {inp.slot}, body);",
                  "                for (uint32_t i = body; i < tiling.C; ++i)",
                  f"                    {inp.slot}.SetValue(r * tiling.Cpad + i, {inp.slot}.GetValue(i));",
                  "            }",
                  "        }",
                  "        AscendC::PipeBarrier<PIPE_ALL>();"]
        hoisted = s.hoisted
        if hoisted:
            L += ["        {",
                  "            const bool packed = tiling.Cpad == tiling.C;",
                  "            const uint32_t segs = packed ? 1 : tiling.tileRows;",
                  "            const uint32_t n = packed ? tiling.tileRows * tiling.C : tiling.C;",
                  "            for (uint32_t seg = 0; seg < segs; ++seg) {",
                  "                const uint32_t o = seg * tiling.Cpad;"]
            for st in hoisted:
                L += self._stmt(st, indent=16)
            L += ["            }", "        }"]
        L += ["    }", ""]
        return L

    def _copy_in(self) -> list[str]:
        L = ["    __aicore__ inline void CopyIn()", "    {"]
        for inp in self.tensor_inputs:
            if inp.kind not in ("full", "general"):
                continue
            ty = inp.gm_dtype.ascendc
            L.append(f"        AscendC::LocalTensor<{ty}> {inp.slot} = q_{inp.slot}.AllocTensor<{ty}>();")
            if inp.kind == "full":
                L.append(f"        CopyRowsIn({inp.slot}, gm_{inp.name}[row0 * tiling.C + col0], nrows, ncols, "
                         "tiling.C, tiling.Cpad);")
            else:
                last_present = inp.bits[-1] if inp.bits else True
                L += ["        for (uint32_t r = 0; r < nrows; ++r) {",
                      f"            const uint32_t off = RowOffset(row0 + r, tiling.stride_{inp.name});"]
                if last_present:
                    L.append(f"            CopyRowsIn({inp.slot}[r * tiling.Cpad], gm_{inp.name}[off + col0], "
                             "1, ncols, ncols, ncols);")
                else:
                    L.append(f"            FillRow({inp.slot}[r * tiling.Cpad], gm_{inp.name}.GetValue(off), ncols);")
                L.append("        }")
            L.append(f"        q_{inp.slot}.EnQue({inp.slot});")
        L += ["    }", ""]
        return L

    def _compute(self) -> list[str]:
        s = self.s
        L = ["    __aicore__ inline void Compute()", "    {"]
        for inp in self._queued():
            ty = inp.gm_dtype.ascendc
            L.append(f"        AscendC::LocalTensor<{ty}> {inp.slot} = q_{inp.slot}.DeQue<{ty}>();")
        for o in s.outputs:
            ty = o.gm_dtype.ascendc
            L.append(f"        AscendC::LocalTensor<{ty}> {o.slot} = q_{o.slot}.AllocTensor<{ty}>();")
        for name, slot in s.slots.items():
            if slot.role == "tmp":
                L.append(f"        AscendC::LocalTensor<{slot.dtype.ascendc}> {name} = b_{name}.Get<{slot.dtype.ascendc}>();")
        L += ["        for (uint32_t seg = 0; seg < nSeg; ++seg) {",
              "            const uint32_t o = seg * segStride;",
              "            const uint32_t n = segLen;"]
        for st in s.body:
            L += self._stmt(st, indent=12)
        L.append("        }")
        for o in s.outputs:
            L.append(f"        q_{o.slot}.EnQue({o.slot});")
        for inp in self._queued():
            L.append(f"        q_{inp.slot}.FreeTensor({inp.slot});")
        L += ["    }", ""]
        return L

    def _copy_out(self) -> list[str]:
        L = ["    __aicore__ inline void CopyOut()", "    {"]
        for o in self.s.outputs:
            ty = o.gm_dtype.ascendc
            L += [f"        AscendC::LocalTensor<{ty}> {o.slot} = q_{o.slot}.DeQue<{ty}>();",
                  f"        CopyRowsOut(gm_y{o.index}[row0 * tiling.C + col0], {o.slot}, nrows, ncols, "
                  "tiling.C, tiling.Cpad);",
                  f"        q_{o.slot}.FreeTensor({o.slot});"]
        L += ["    }", ""]
        return L


def shared_helpers(printers: list["AscendCPrinter"]) -> str:
    """The device helpers the kernels use, printed once per file."""
    helpers = printers[0]._helpers() if printers else ""
    view = next((p for p in printers if hasattr(p, "view_helpers")), None)
    if view is not None:   # slice / concatenate / take addressing (printer_view.py)
        helpers += view.view_helpers()
    return helpers


def print_source(printers: list["AscendCPrinter"], target: Target) -> str:
    """One translation unit with every kernel; shared helpers are printed once."""
    head = [f"// Generated by fusedsl {VERSION} for {target.name} ({target.chip}, arch {target.arch}).",
            "// Do not edit: change the Python source and compile again.",
            '#include "kernel_operator.h"',
            "#include <cstdint>",
            "#ifndef __CCE_AICORE__  // host tiling only: device code uses no STL",
            "#include <algorithm>",
            "#endif",
            ""]
    helpers = shared_helpers(printers)
    return "\n".join(head + [helpers] + [p.body() for p in printers])

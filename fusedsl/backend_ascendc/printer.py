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
import math
import os
import struct

from . import cnames
from .. import dtypes as dt
from ..schedule import (MAX_BLOCK_COUNT, MIN_CORE_BYTES, Stmt, VectorSchedule)
from ..tile.prims import PRIMS
from ..tile.tiling import TILE_HALVINGS
from ..tile.tiling_cost import table_for
from .host_cost import cycles_function
from ..targets import Target
from ..version import __version__ as VERSION   # stamped into projects and their manifests


def camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.split("_") if p)


def literal(value, dtype: dt.DType) -> str:
    """A C++ expression of `value` converted to the element type."""
    t = dtype.ascendc
    if dtype.is_float:
        v = float(value)
        if math.isnan(v):
            text = '__builtin_nanf("")'
        elif math.isinf(v):
            text = "__builtin_inff()" if v > 0 else "-__builtin_inff()"
        else:
            text = repr(v) + "f" if "e" in repr(v) or "." in repr(v) else repr(v) + ".0f"
        return text if t == "float" else f"static_cast<{t}>({text})"
    return f"static_cast<{t}>({int(value)})"


def _scalar(stmt: Stmt) -> str:
    kind, value = stmt.scalar
    if kind == "imm":
        return literal(value, stmt.dtype)
    return f"static_cast<{stmt.dtype.ascendc}>({value})"


# ---- the emit table: tile op -> printed statement (o = segment offset, n = count) -------------
def _bin(api):
    return lambda s: f"AscendC::{api}({s.dst}[o], {s.srcs[0]}[o], {s.srcs[1]}[o], n);"


def _un(api):
    return lambda s: f"AscendC::{api}({s.dst}[o], {s.srcs[0]}[o], n);"


def _sc(api):
    return lambda s: f"AscendC::{api}({s.dst}[o], {s.srcs[0]}[o], {_scalar(s)}, n);"


def _bitwise(api, lanes_as):
    """Bit ops on 16-bit lanes: every operand reinterpreted, the count scaled by the widths."""
    def emit(s):
        ratio = s.dtype.itemsize // 2
        views = ", ".join(f"{x}[o].ReinterpretCast<{lanes_as}>()" for x in (s.dst, *s.srcs))
        return f"AscendC::{api}({views}, n * {ratio});" if ratio != 1 else f"AscendC::{api}({views}, n);"
    return emit


# the simple call forms; the primitive's record (tile/prims.py) names its API and form
_FORMS = {"unary": _un, "binary": _bin, "scalar": _sc}

_SPECIAL = {
    # x * 1 copies every float exactly (x + 0 would turn -0.0 into +0.0); ints use Max(x, x),
    # which every chip has for int32
    "copy": lambda s: (f"AscendC::Muls({s.dst}[o], {s.srcs[0]}[o], {literal(1, s.dtype)}, n);" if s.dtype.is_float
                       else f"AscendC::Max({s.dst}[o], {s.srcs[0]}[o], {s.srcs[0]}[o], n);"),
    "dup": lambda s: f"AscendC::Duplicate({s.dst}[o], {_scalar(s)}, n);",
    "cast": lambda s: (f"AscendC::Cast({s.dst}[o], {s.srcs[0]}[o], AscendC::RoundMode::{s.round_mode}, n);"),
    "cmp": lambda s: _emit_cmp(s),
    "select": lambda s: _emit_select(s),
}


def emit_stmt(st: Stmt) -> str:
    """One tile statement as Ascend C (o = segment offset, n = count), by its primitive's form."""
    special = _SPECIAL.get(st.op)
    if special is not None:
        return special(st)
    p = PRIMS[st.op]
    if p.form == "bitwise":
        return _bitwise(p.api, p.lanes_as)(st)
    if p.form == "round":
        return f"AscendC::Cast({st.dst}[o], {st.srcs[0]}[o], AscendC::RoundMode::{p.mode}, n);"
    return _FORMS[p.form](p.api)(st)


def _repeat_count(dtype: dt.DType) -> str:
    # Compare's count must cover whole 256-byte repeats; lanes past n hold pre-filled values
    k = 256 // dtype.itemsize
    return f"(n + {k - 1}) / {k} * {k}"


def _emit_cmp(s: Stmt) -> str:
    mask, ones = s.aux
    if s.scalar is not None:
        compare = (f"AscendC::Compares({mask}, {s.srcs[0]}[o], {_scalar(s)}, AscendC::CMPMODE::{s.cmp_mode}, "
                   f"{_repeat_count(s.dtype)});")
    else:
        other = f"{s.srcs[1]}[o]"
        compare = (f"AscendC::Compare({mask}, {s.srcs[0]}[o], {other}, AscendC::CMPMODE::{s.cmp_mode}, "
                   f"{_repeat_count(s.dtype)});")
    return (compare + " AscendC::PipeBarrier<PIPE_V>(); "
            f"AscendC::Select({s.dst}[o], {mask}, {ones}, static_cast<half>(0), "
            "AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE, n);  // 1 where true, else 0")


def _emit_select(s: Stmt) -> str:
    cond, a, b = s.srcs
    mask = s.aux[0]
    if len(s.aux) > 1:
        test = (f"AscendC::Compare({mask}, {cond}[o], {s.aux[1]}[o], AscendC::CMPMODE::NE, "
                f"{_repeat_count(dt.float16)});")
    else:
        test = (f"AscendC::Compares({mask}, {cond}[o], static_cast<half>(0), AscendC::CMPMODE::NE, "
                f"{_repeat_count(dt.float16)});")
    if s.dtype.is_float:
        views = [f"{x}[o]" for x in (s.dst, a, b)]
    else:   # Select moves bits: int32 lanes go through as float bit patterns, unchanged
        views = [f"{x}[o].ReinterpretCast<float>()" for x in (s.dst, a, b)]
    return (test + " AscendC::PipeBarrier<PIPE_V>(); "
            f"AscendC::Select({views[0]}, {mask}, {views[1]}, {views[2]}, "
            "AscendC::SELMODE::VSEL_TENSOR_TENSOR_MODE, n);")


# 910A (Atlas 训练系列) has Select mode 0 only (VSEL_CMPMASK_SPR, Select.md): src1 is a tensor
# and every repeat reuses the first 256/sizeof(T) bits of selMask.  So the printed code goes
# one repeat at a time: a level-0 Compare (its mask argument is ignored there: it compares a
# whole 256-byte repeat) writes that repeat's bits, then Select uses them.

def _emit_cmp_mode0(s: Stmt) -> str:
    mask, ones = s.aux
    k = 256 // s.dtype.itemsize     # compare lanes per repeat; the half result takes as many
    return (f"AscendC::Duplicate({s.dst}[o], static_cast<half>(0), n); AscendC::PipeBarrier<PIPE_V>(); "
            f"for (uint32_t sel_c = 0; sel_c < n; sel_c += {k}) {{ "
            f"AscendC::Compare({mask}, {s.srcs[0]}[o + sel_c], {s.srcs[1]}[o + sel_c], "
            f"AscendC::CMPMODE::{s.cmp_mode}, {k}, 1, AscendC::BinaryRepeatParams{{}}); "
            "AscendC::PipeBarrier<PIPE_V>(); "
            f"AscendC::Select({s.dst}[o + sel_c], {mask}, {ones}[sel_c], {s.dst}[o + sel_c], "
            f"AscendC::SELMODE::VSEL_CMPMASK_SPR, n - sel_c < {k} ? n - sel_c : {k}); "
            "AscendC::PipeBarrier<PIPE_V>(); }  // 1 where true, else 0")


def _emit_select_mode0(s: Stmt) -> str:
    cond, a, b = s.srcs
    mask, zeros = s.aux
    k = 256 // s.dtype.itemsize
    view = (lambda x: x) if s.dtype.is_float else (lambda x: f"{x}.ReinterpretCast<float>()")
    if s.dtype.itemsize == 2:     # half values: compare the half condition repeat by repeat
        pre, test_src, other = "", f"{cond}[o + sel_c]", f"{zeros}[o + sel_c]"
    else:                         # 4-byte values: widen the condition into dst, compare 64 at a time
        pre = (f"AscendC::Cast({view(f'{s.dst}[o]')}, {cond}[o], AscendC::RoundMode::CAST_NONE, (n + 63) / 64 * 64); "
               "AscendC::PipeBarrier<PIPE_V>(); ")
        test_src, other = view(f"{s.dst}[o + sel_c]"), f"{zeros}.ReinterpretCast<float>()"
    return (pre + f"for (uint32_t sel_c = 0; sel_c < n; sel_c += {k}) {{ "
            f"AscendC::Compare({mask}, {test_src}, {other}, AscendC::CMPMODE::NE, {k}, 1, "
            "AscendC::BinaryRepeatParams{}); AscendC::PipeBarrier<PIPE_V>(); "
            f"AscendC::Select({view(f'{s.dst}[o + sel_c]')}, {mask}, {view(f'{a}[o + sel_c]')}, "
            f"{view(f'{b}[o + sel_c]')}, AscendC::SELMODE::VSEL_CMPMASK_SPR, n - sel_c < {k} ? n - sel_c : {k}); "
            "AscendC::PipeBarrier<PIPE_V>(); }")


class AscendCPrinter:
    def __init__(self, sched: VectorSchedule, target: Target, name: str, debug: bool | None = None):
        # parameter names become `p_<name>` in C++ (cnames.param): any Python name works
        self.s = dataclasses.replace(sched, inputs=[dataclasses.replace(i, name=cnames.param(i.name))
                                                    for i in sched.inputs])
        self.t = target
        self.name = name
        self.cls = "Kernel" + camel(name)
        self.tiling = camel(name) + "TilingData"
        self.debug = os.environ.get("FUSEDSL_DEBUG") == "1" if debug is None else debug
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

    def kernel(self) -> str:
        parts = [self._class(), self._entry()]
        return "\n".join(parts)

    def body(self) -> str:
        """This kernel's part of a source file (tiling struct, kernel, host tiling, CPU hooks)."""
        return "\n".join([
            f"// ---- {self.name}: fused from {cnames.comment(self.s.kernel.loc)} ----",
            self.tiling_header(),
            self.kernel(),
            "#ifndef __CCE_AICORE__  // host side",
            self.host_tiling(),
            "#endif",
            self._cpu_hooks(),
        ])


    # ---- pieces -------------------------------------------------------------------------
    def _gm_args(self) -> list[str]:
        return [i.name for i in self.tensor_inputs] + [f"y{o.index}" for o in self.s.outputs]

    def _helpers(self) -> str:
        pad = self.t.has_datacopypad
        if pad:
            copy_in = """    if (nrows == 1 || (ncols == ubStride && gmStride == ncols)) {
        const uint32_t n = nrows * ncols;
        if (n * sizeof(T) % 32 == 0) { AscendC::DataCopy(dst, src, n); return; }
        AscendC::DataCopyExtParams p{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0};
        AscendC::DataCopyPadExtParams<T> pad{false, 0, 0, T(0)};
        AscendC::DataCopyPad(dst, src, p, pad);
        return;
    }
    // one DMA for all rows: GM rows are gmStride apart, UB rows ubStride apart (32-B blocks)
    const uint32_t rowBytes = ncols * sizeof(T);
    const uint32_t ubGap = (ubStride * sizeof(T) - (rowBytes + 31) / 32 * 32) / 32;
    AscendC::DataCopyExtParams p{static_cast<uint16_t>(nrows), rowBytes,
                                 static_cast<uint32_t>((gmStride - ncols) * sizeof(T)), ubGap, 0};
    AscendC::DataCopyPadExtParams<T> pad{false, 0, 0, T(0)};
    AscendC::DataCopyPad(dst, src, p, pad);"""
            copy_out = """    if (nrows == 1 || (ncols == ubStride && gmStride == ncols)) {
        const uint32_t n = nrows * ncols;
        if (n * sizeof(T) % 32 == 0) { AscendC::DataCopy(dst, src, n); return; }
        AscendC::DataCopyExtParams p{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0};
        AscendC::DataCopyPad(dst, src, p);
        return;
    }
    const uint32_t rowBytes = ncols * sizeof(T);
    const uint32_t ubGap = (ubStride * sizeof(T) - (rowBytes + 31) / 32 * 32) / 32;
    AscendC::DataCopyExtParams p{static_cast<uint16_t>(nrows), rowBytes, ubGap,
                                 static_cast<uint32_t>((gmStride - ncols) * sizeof(T)), 0};
    AscendC::DataCopyPad(dst, src, p);"""
        else:
            copy_in = """    // No DataCopyPad on this chip: the 32-byte-aligned body moves by DMA and the
    // remaining elements one by one, so nothing outside the tensor is read or written.
    constexpr uint32_t kBlock = 32 / sizeof(T);
    const bool contiguous = nrows == 1 || (ncols == ubStride && gmStride == ncols);
    const uint32_t rows = contiguous ? 1 : nrows;
    const uint32_t len = contiguous ? nrows * ncols : ncols;
    for (uint32_t r = 0; r < rows; ++r) {
        const uint32_t body = len / kBlock * kBlock;
        if (body > 0) AscendC::DataCopy(dst[r * ubStride], src[r * gmStride], body);
        for (uint32_t i = body; i < len; ++i) dst.SetValue(r * ubStride + i, src.GetValue(r * gmStride + i));
    }
    AscendC::PipeBarrier<PIPE_ALL>();"""
            copy_out = """    constexpr uint32_t kBlock = 32 / sizeof(T);
    const bool contiguous = nrows == 1 || (ncols == ubStride && gmStride == ncols);
    const uint32_t rows = contiguous ? 1 : nrows;
    const uint32_t len = contiguous ? nrows * ncols : ncols;
    AscendC::PipeBarrier<PIPE_ALL>();
    for (uint32_t r = 0; r < rows; ++r) {
        const uint32_t body = len / kBlock * kBlock;
        if (body > 0) AscendC::DataCopy(dst[r * gmStride], src[r * ubStride], body);
        for (uint32_t i = body; i < len; ++i) dst.SetValue(r * gmStride + i, src.GetValue(r * ubStride + i));
    }"""
        return f"""namespace {{
// Device code uses no STL (the AI Core toolchain has none): its own minimum.
__aicore__ inline uint32_t MinU32(uint32_t a, uint32_t b) {{ return a < b ? a : b; }}

// nrows rows of ncols elements: GM rows gmStride elements apart, UB rows ubStride apart.
template <typename T>
__aicore__ inline void CopyRowsIn(const AscendC::LocalTensor<T>& dst, const AscendC::GlobalTensor<T>& src,
                                  uint32_t nrows, uint32_t ncols, uint32_t gmStride, uint32_t ubStride)
{{
{copy_in}
}}

template <typename T>
__aicore__ inline void CopyRowsOut(const AscendC::GlobalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                                   uint32_t nrows, uint32_t ncols, uint32_t gmStride, uint32_t ubStride)
{{
{copy_out}
}}

// Fill ncols elements with one value (a broadcast column); types Duplicate lacks go element-wise.
template <typename T>
__aicore__ inline void FillRow(const AscendC::LocalTensor<T>& dst, T value, uint32_t ncols)
{{
    if constexpr (sizeof(T) >= 2) {{
        AscendC::Duplicate(dst, value, ncols);
    }} else {{
        for (uint32_t i = 0; i < ncols; ++i) dst.SetValue(i, value);
        AscendC::PipeBarrier<PIPE_ALL>();
    }}
}}
}}  // namespace
"""

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
                from ..schedule import compute_dtype
                scalars.append((inp, compute_dtype(inp.gm_dtype)))
                members.append(f"    {compute_dtype(inp.gm_dtype).ascendc} {inp.var};")
        args = ", ".join(f"GM_ADDR {a}" for a in self._gm_args())
        L = [f"class {self.cls} {{",
             "public:",
             f"    __aicore__ inline {self.cls}() {{}}",
             f"    __aicore__ inline void Init({args}, const {self.tiling}& t)",
             "    {",
             "        tiling = t;"]
        L += gm_init + init
        L += ["    }",
              "",
              "    __aicore__ inline void Process()",
              "    {",
              "        const uint32_t first = AscendC::GetBlockIdx() * tiling.tilesPerCore;",
              "        const uint32_t last = MinU32(tiling.totalTiles, first + tiling.tilesPerCore);",
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

    def _stmt(self, st: Stmt, indent: int) -> list[str]:
        pad = " " * indent
        if self.t.arch == 1001 and st.op in ("cmp", "select"):   # Select mode 0 only
            text = (_emit_cmp_mode0 if st.op == "cmp" else _emit_select_mode0)(st)
        else:
            text = emit_stmt(st)
        if self.debug and st.loc is not None:
            text += "  // " + cnames.comment(
                f"{os.path.basename(st.loc.file)}:{st.loc.line}: {_source_line(st.loc)}")
        return [pad + text, pad + "AscendC::PipeBarrier<PIPE_V>();"]

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

    def _entry(self) -> str:
        gm = self._gm_args()
        args = ", ".join(f"GM_ADDR {a}" for a in gm + ["workspace", "tiling"])
        macro = "    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);\n" if self.t.kernel_type_macro else ""
        return f"""extern "C" __global__ __aicore__ void {self.name}({args})
{{
{macro}    (void)workspace;
    // the tiling struct is copied word by word from GM (kernel-launch style)
    {self.tiling} t;
    const __gm__ uint32_t* words = reinterpret_cast<const __gm__ uint32_t*>(tiling);
    uint32_t* dst = reinterpret_cast<uint32_t*>(&t);
    for (uint32_t i = 0; i < sizeof(t) / sizeof(uint32_t); ++i) dst[i] = words[i];
    {self.cls} op;
    op.Init({', '.join(gm)}, t);
    op.Process();
}}
"""

    def _cpu_hooks(self) -> str:
        n = len(self._gm_args()) + 2
        args = ", ".join(f"args[{i}]" for i in range(n))
        return f"""#ifdef ASCENDC_CPU_DEBUG
// Entry points for fusedsl's CPU run of this file (not part of the NPU build).
extern "C" int fusedsl_launch_{self.name}(uint32_t blockDim, uint8_t** args)
{{
    return fusedsl_cpu::Launch({self.name}, blockDim, {args});
}}
extern "C" int fusedsl_tiling_{self.name}(const int64_t* sizes, uint32_t vectorCores, uint32_t ubBudget,
                                        {self.tiling}* t)
{{
    return {camel(self.name)}Tiling(sizes, vectorCores, ubBudget, t) ? 0 : 1;
}}
extern "C" uint32_t fusedsl_tiling_size_{self.name}() {{ return sizeof({self.tiling}); }}
#endif
"""


def name_temporaries(sched, names: dict, tmp_name) -> list[tuple[str, object, object]]:
    """Name each slot of a one-op tile program that `names` does not map yet (its temporaries
    and constant tensors) `tmp_name(dtype, i)`, the i-th of that dtype, and return the ones
    the op's stmts expect pre-filled: (name, value, dtype). How the row, column and cube
    printers place a step's temporaries in their shared per-dtype buffers."""
    used: dict = {}
    prefill = []
    for name, slot in sched.slots.items():
        if name in names:
            continue
        i = used.get(slot.dtype, 0)
        used[slot.dtype] = i + 1
        names[name] = tmp_name(slot.dtype, i)
        if name in sched.prefill:
            prefill.append((names[name], sched.prefill[name], slot.dtype))
    return prefill


def rename_stmt(st: Stmt, names: dict, scalars: dict) -> Stmt:
    """`st` with its UB slots renamed (`names`) and a scalar variable operand replaced by the
    C++ expression holding it (`scalars`): how the row and cube printers reuse the tile
    stmts the vector scheduler gives each op on buffers of their own."""
    scalar = st.scalar
    if scalar is not None and scalar[0] == "var":
        scalar = ("var", scalars[scalar[1]])
    return dataclasses.replace(st, dst=names[st.dst], srcs=tuple(names[x] for x in st.srcs),
                               aux=tuple(names[a] for a in st.aux), scalar=scalar)


def _source_line(loc) -> str:
    import linecache
    return linecache.getline(loc.file, loc.line).strip()


def shared_helpers(printers: list["AscendCPrinter"]) -> str:
    """The device helpers the kernels use, printed once per file."""
    helpers = printers[0]._helpers() if printers else ""
    view = next((p for p in printers if hasattr(p, "view_helpers")), None)
    if view is not None:   # slice / concatenate / take addressing (printer_view.py)
        helpers += view.view_helpers()
    return helpers



def scalar_ctype(dtype: dt.DType) -> str:
    """The tiling-struct field of a runtime scalar: a float scalar travels as float, an
    integer one as int32_t (a float holds integers exactly only up to 2**24)."""
    return "float" if dtype.is_float else "int32_t"


def gm_scalar_load(gm: str, src: dt.DType, dst: dt.DType) -> str:
    """The C++ expression that reads a one-element tensor `gm` (dtype src) as dst.
    Half and bfloat16 go through float (their GetValue types do not convert to every
    compute type); integers convert directly, since float holds them exactly only up
    to 2**24."""
    if src.is_float and src.itemsize < 4:
        return f"static_cast<{dst.ascendc}>(static_cast<float>({gm}.GetValue(0)))"
    return f"static_cast<{dst.ascendc}>({gm}.GetValue(0))"


def pack_scalar(dtype: dt.DType, value) -> bytes:
    """A runtime scalar's bytes in the tiling struct (scalar_ctype's layout)."""
    return struct.pack("<f", float(value)) if dtype.is_float else struct.pack("<i", int(value))


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

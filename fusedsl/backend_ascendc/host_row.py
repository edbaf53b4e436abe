"""The host tiling function of a row kernel (lower/row_tile.py) whose row shape is symbolic: C++
that computes its tiling struct from the sizes at launch.

It mirrors lower/row.compute_row_tiling line by line (`simulate` compares the two word for
word on every launch): tiles of whole rows, as many as fit the UB budget after the single
rows, contiguous tile ranges per core; the strides of the parameters read row by row
(`st<param index>`, 0 where an outer dim is broadcast).  A symbolic row always gets the
single-read plan (the multi-pass one is chosen at compile time); a static one carries its
words and never reaches this text, except through a saved project's host code, so the
multi-pass branch is printed too.
"""
from __future__ import annotations

from ..lower.row import RowSchedule
from ..lower.vector import MAX_BLOCK_COUNT, MIN_CORE_BYTES
from ..targets import Target
from .emit import camel


def _strided(s: RowSchedule):
    return [p for p in s.params if p.kind in ("general", "perrow")]


def _strides(s: RowSchedule, k: int) -> list[str]:
    L = []
    for p in _strided(s):
        bits = ", ".join("true" if b else "false" for b in p.present) or "false"
        L += [f"    {{  // parameter {p.index}: {p.kind}",
              f"        const bool present[{k}] = {{{bits}}};",
              # element strides: a general parameter's rows hold C elements, a per-row one 1
              f"        uint64_t acc = {'C' if p.kind == 'general' else '1'};",
              f"        for (int i = {k - 1}; i >= 0; --i) {{",
              f"            t->st{p.index}[i] = present[i] ? uint32_t(acc) : 0u;",
              "            if (present[i]) acc *= dims[i];",
              "        }",
              "    }"]
    return L


def _line_aligned(s: RowSchedule, t: Target) -> list[str]:
    """Without DataCopyPad, every core's share of every output starts on a 64-byte line."""
    if t.has_datacopypad:
        return []
    conds = [f"s * tileRows * {'C' if o.kind == 'row' else '1'} * {o.dtype.itemsize} % 64 != 0" for o in s.outputs]
    return ["    for (bool shared = true; shared && tilesPerCore < totalTiles;) {",
            "        shared = false;",
            "        for (uint64_t s = tilesPerCore; s < totalTiles && !shared; s += tilesPerCore)",
            f"            shared = {' || '.join(conds) or 'false'};",
            "        if (shared) ++tilesPerCore;",
            "    }"]


def row_host_tiling(s: RowSchedule, t: Target, name: str, struct: str) -> str:
    k = max(1, s.outer_rank)
    symbols = s.symbols
    dims = [f"uint64_t(sizes[{symbols.index(d)}])" if isinstance(d, str) else f"uint64_t({d})"
            for d in s.row_shape[:-1] or (1,)]
    c = s.row_shape[-1]
    c_expr = f"uint64_t(sizes[{symbols.index(c)}])" if isinstance(c, str) else f"uint64_t({c})"
    moved = max(s.out_row_bytes, s.in_row_bytes, 1)
    symbol_doc = ", ".join(f"sizes[{i}] = {n}" for i, n in enumerate(symbols)) or "none"
    L = [f"// Host tiling for {name} on {t.name}: symbolic sizes {symbol_doc}.",
         "// Tiles of whole rows; the UB holds tileRows rows of every row input/output (queues) and one",
         "// row of every other per-row value. Returns false when the sizes need 64-bit offsets or one",
         "// row does not fit the UB budget.",
         f"inline bool {camel(name)}Tiling(const int64_t* sizes, uint32_t vectorCores, uint32_t ubBudget,",
         f"                          {struct}* t)",
         "{",
         "    (void)sizes;",
         f"    const uint64_t dims[{k}] = {{{', '.join(dims)}}};",
         f"    const uint64_t C = {c_expr};",
         "    uint64_t R = 1;",
         f"    for (int i = 0; i < {k}; ++i) R *= dims[i];",
         f"    const uint64_t block = {s.block_elems}, slack = {s.slack};",
         "    const uint64_t Cpad = (C + block - 1) / block * block;",
         "    if (R * (Cpad + slack) >= (uint64_t(1) << 32)) return false;  // 32-bit offsets",
         "    *t = {};",
         f"    for (int i = 0; i < {k}; ++i) t->dims[i] = uint32_t(dims[i]);",
         "    t->R = uint32_t(R); t->C = uint32_t(C); t->Cpad = uint32_t(Cpad); t->tileRows = 1;",
         "    if (R == 0 || C == 0) return true;  // an empty tensor: nothing to launch"]
    if s.passes is not None:   # rows bigger than UB: one row per tile, walked in chunks of Cpad
        L += [f"    // multi-pass plan: chunks of {s.chunk} elements, one row per tile",
              f"    t->Cpad = {s.chunk};",
              f"    uint64_t want = (R * C * {moved} + {MIN_CORE_BYTES - 1}) / {MIN_CORE_BYTES};",
              "    want = std::max<uint64_t>(1, std::min<uint64_t>({uint64_t(vectorCores), want, R}));",
              "    const uint64_t tileRows = 1, totalTiles = R;  (void)tileRows;",
              "    uint64_t tilesPerCore = (R + want - 1) / want;",
              *_line_aligned(s, t),
              "    t->totalTiles = uint32_t(totalTiles); t->tilesPerCore = uint32_t(tilesPerCore);",
              "    t->blockDim = uint32_t((totalTiles + tilesPerCore - 1) / tilesPerCore);",
              *_strides(s, k),
              "    return true;", "}"]
        return "\n".join(L) + "\n"
    L += ["    const uint64_t cpad = Cpad + slack;",
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
          *_line_aligned(s, t),
          "    t->tileRows = uint32_t(tileRows); t->totalTiles = uint32_t(totalTiles);",
          "    t->tilesPerCore = uint32_t(tilesPerCore);",
          "    t->blockDim = uint32_t((totalTiles + tilesPerCore - 1) / tilesPerCore);",
          *_strides(s, k),
          "    return true;", "}"]
    return "\n".join(L) + "\n"

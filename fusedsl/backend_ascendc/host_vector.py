"""The host tiling function of an elementwise kernel (lower/vector_tile.py): C++ that computes its
tiling struct from the sizes at launch, since the sizes may be symbolic.

It mirrors tile/tiling.compute_tiling line by line (a test checks that both agree, and
`simulate` compares them word for word on every launch): the same candidate tilings (core
counts from tile/tiling.core_candidates, the largest tile halved up to TILE_HALVINGS times),
costed by the same integer model (host_cost.py), the cheapest kept, ties to the earlier.
"""
from __future__ import annotations

from ..lower.vector import MAX_BLOCK_COUNT, MIN_CORE_BYTES
from ..targets import Target
from ..tile.ir import VectorSchedule
from ..tile.tiling import TILE_HALVINGS
from ..tile.tiling_cost import table_for
from .emit import camel
from .host_cost import cycles_function


def vector_host_tiling(s: VectorSchedule, t: Target, name: str, struct: str) -> str:
    k = len(s.dims)
    symbols = s.symbols
    per_elem = s.ub_bytes_per_elem()
    out_bytes = sum(o.gm_dtype.itemsize for o in s.outputs)
    hoisting = any(x.role == "inv" for x in s.slots.values())
    dims_expr = []
    for group in s.dims:
        factors = [f"sizes[{symbols.index(s.iter_shape[d])}]" if isinstance(s.iter_shape[d], str)
                   else str(s.iter_shape[d]) for d in group] or ["1"]
        dims_expr.append(" * ".join(f"uint64_t({f})" for f in factors))
    symbol_doc = ", ".join(f"sizes[{i}] = {n}" for i, n in enumerate(symbols)) or "none"
    table = table_for(s)
    fn = camel(name)
    L = [*cycles_function(fn, table, k),
         f"// Host tiling for {name} on {t.name}: symbolic sizes {symbol_doc}.",
         f"// ubBudget defaults to {s.ub_budget} bytes, vectorCores to {t.vector_cores}.",
         "// Returns false (and writes nothing) when the sizes need offsets of 64 bits or more.",
         f"inline bool {fn}Tiling(const int64_t* sizes, uint32_t vectorCores, uint32_t ubBudget,",
         f"                          {struct}* t)",
         "{",
         "    (void)sizes;",
         f"    const uint64_t dims[{k}] = {{{', '.join(dims_expr)}}};",
         f"    const uint64_t C = dims[{k - 1}];",
         "    uint64_t R = 1;",
         f"    for (int i = 0; i + 1 < {k}; ++i) R *= dims[i];",
         f"    const uint64_t perElem = {per_elem}, gran = {s.gran_elems}, block = {s.block_elems};",
         f"    const uint64_t slack = {s.slack_elems};",
         "    const uint64_t perTile = ubBudget / perElem;",
         "    uint64_t maxElems = (perTile > slack ? perTile - slack : 0) / gran * gran;",
         "    const uint64_t total = R * C;",
         "    if (R * ((C + block - 1) / block * block) >= (uint64_t(1) << 32)) return false;  // 32-bit offsets",
         "    if (total == 0) {  // an empty tensor: nothing to launch",
         "        *t = {};",
         "        t->R = uint32_t(R); t->C = uint32_t(C); t->Cpad = uint32_t(C); t->tileRows = 1; t->tileCols = uint32_t(C);",
         f"        for (int i = 0; i < {k}; ++i) t->dims[i] = uint32_t(dims[i]);",
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
         *["    " + line for line in _line_aligned_cores(s, t)],
         "        const uint64_t blockDim = (totalTiles + tilesPerCore - 1) / tilesPerCore;",
         f"        const uint64_t cycles = {fn}Cycles(dims, C, Cpad, tileRows, tileCols, tilesPerCore, "
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
         f"    for (int i = 0; i < {k}; ++i) t->dims[i] = uint32_t(dims[i]);"]
    for inp in s.params:
        if inp.kind == "runtime_scalar":
            continue
        bits = ", ".join("true" if b else "false" for b in inp.bits) or "true"
        L += [f"    {{  // input {inp.index}: element strides per dim ({inp.kind}; 0 = broadcast)",
              f"        const bool present[{k}] = {{{bits}}};",
              "        uint64_t acc = 1;",
              f"        for (int i = {k - 1}; i >= 0; --i) {{",
              f"            t->st{inp.index}[i] = present[i] ? uint32_t(acc) : 0u;",
              "            if (present[i]) acc *= dims[i];",
              "        }",
              "    }"]
    L += ["    return true;", "}"]
    return "\n".join(L) + "\n"


def _line_aligned_cores(s: VectorSchedule, t: Target) -> list[str]:
    """Without DataCopyPad the row tails are written with GlobalTensor::SetValue, which goes
    through each core's 64-byte data cache: grow tilesPerCore until every core's share of
    every output starts on a 64-byte line, so no two cores write the same line."""
    if t.has_datacopypad:
        return []
    sizes = sorted({o.gm_dtype.itemsize for o in s.outputs})
    cond = " || ".join(f"off * {e} % 64 != 0" for e in sizes) or "false"
    return ["    for (bool shared = true; shared && tilesPerCore < totalTiles;) {",
            "        shared = false;",
            "        for (uint64_t s = tilesPerCore; s < totalTiles && !shared; s += tilesPerCore) {",
            "            const uint64_t off = rowsMode ? s * tileRows * C : (s / colTiles) * C + (s % colTiles) * tileCols;",
            f"            shared = {cond};",
            "        }",
            "        if (shared) ++tilesPerCore;",
            "    }"]

"""C++ of the tiling cost model: fusedsl/tile/tiling_cost.py `tiling_cycles`, printed with the
constants of the same `CostTable`, so the printed host tiling picks the candidate Python picks.

The printed function takes one candidate's sizes and returns its modelled cycles (1/FIX
units, integers only, as in Python); `simulate` checks the resulting tiling struct word for
word against the Python one.
"""
from __future__ import annotations

from ..tile import tiling_cost as tc


def _dma(nbytes: str, coeffs: tuple[int, int, int], name: str) -> str:
    a, b, h = coeffs
    return f"{name}Dma({nbytes}, bd, {a}u, {b}u, {h}u)"


def cycles_function(name: str, table: tc.CostTable, k: int) -> list[str]:
    """`inline uint64_t {name}Cycles(...)`: the modelled cycles of one candidate tiling."""
    fix = tc.FIX
    L = [f"// Modelled cycles (1/{fix} cycle) of a candidate tiling: fusedsl/tile/tiling_cost.py tiling_cycles,",
         "// in integers so that this and the Python tiling pick the same candidate.",
         f"inline uint64_t {name}Dma(uint64_t nbytes, uint64_t bd, uint64_t a, uint64_t b, uint64_t h)",
         "{",
         f"    return nbytes == 0 ? 0 : nbytes * bd * {fix * fix}u / (a * bd + b) + h;",
         "}",
         f"inline uint64_t {name}Cycles(const uint64_t* dims, uint64_t C, uint64_t Cpad, uint64_t tileRows,",
         "                         uint64_t tileCols, uint64_t tilesPerCore, uint64_t bd, uint64_t tileElems)",
         "{",
         "    const uint64_t n = tileRows * tileCols;",
         "    const uint64_t segs = (Cpad == tileCols || tileRows == 1) ? 1 : tileRows;",
         "    uint64_t load = 0, store = 0, firstLoad = 0;"]
    for item in table.tile_loads:
        L.append(f"    load += {_dma(f'n * {item}', tc.LOAD, name)};")
    for item, last in table.row_loads:
        L.append(f"    load += tileRows * {_dma(f'tileCols * {item}' if last else str(item), tc.LOAD, name)};")
    for item in table.stores:
        L.append(f"    store += {_dma(f'n * {item}', tc.STORE, name)};")
    for item, row in table.core_loads:
        L.append(f"    firstLoad += {_dma(f'C * {item}' if row else str(item), tc.LOAD, name)};")
    bk, bb = table.body
    hk, hb = table.hoisted
    rk, rb = table.replicate
    L += [f"    const uint64_t vec = {bk}u * n + {bb}u * segs;",
          "    const uint64_t hsegs = Cpad == C ? 1 : tileRows;",
          f"    uint64_t firstVec = ({rk}u * C + {rb}u) * (tileRows - 1);",
          f"    firstVec += {hk}u * tileRows * C + {hb}u * hsegs;"]
    for pk, pb in table.prefill:
        L.append(f"    firstVec += {pk}u * (tileElems + {table.slack}) + {pb}u;")
    L += ["    (void)tileElems;",
          "    const uint64_t slowest = std::max<uint64_t>({load, vec, store});",
          "    uint64_t largest = 0;"]
    for item, bits in table.tensors:
        factors = "".join(f" * dims[{i}]" for i, present in zip(range(k), bits) if present)
        L.append(f"    largest = std::max<uint64_t>(largest, uint64_t({item}){factors});")
    small_k, small_b = tc.MTE2_HEAD_SMALL
    normal_k, normal_b = tc.MTE2_HEAD_NORMAL
    L += [f"    const uint64_t head = (largest >= {tc.MTE2_HEAD_THRESHOLD} ? bd * {normal_k}u + {normal_b}u "
          f": bd * {small_k}u + {small_b}u) + {tc.OTHER_HEADS}u;",
          "    return tilesPerCore * slowest + (load + vec + store - slowest) + firstLoad + firstVec + head;",
          "}"]
    return L

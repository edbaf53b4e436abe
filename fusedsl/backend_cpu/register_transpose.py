"""The in-register transpose of a tile of T x T elements, T = one 64-byte cache line of them
(16 float32, 32 float16, 64 int8): the shuffle network llvm_kernel.py's blocked transposes run.

`network(itemsize)` lists the stages (step, lo, hi): rows i and i + step (i & step == 0) become
shufflevector(i, i + step, lo) and shufflevector(i, i + step, hi).  First in-lane unpacks
(interleaving elements, then pairs, ... within each 16-byte lane: the one-cycle vpunpck* forms),
then two stages of 16-byte block shuffles (vshufi32x4).  A two-source permute per stage instead
ran ~1.5x slower per tile.  After the network the rows come out holding columns in the order
`network_columns` gives.
"""
from __future__ import annotations

LINE = 64   # bytes per tile row: one cache line

__all__ = ["LINE", "tile_side", "network", "network_columns"]


def tile_side(itemsize: int) -> int:
    """Elements per tile side: one 64-byte cache line of elements."""
    return LINE // itemsize


def network(itemsize: int) -> list[tuple[int, list[int], list[int]]]:
    """The stages (step, lo, hi) of the transpose of T rows of one 64-byte line (module doc)."""
    T, E = LINE // itemsize, 16 // itemsize
    stages, g, step = [], 1, 1
    while g < E:
        lo, hi = [], []
        for lane in range(4):
            nb = E // g
            for half, mask in ((0, lo), (1, hi)):
                for b in range(nb // 2):
                    first = lane * E + (half * nb // 2 + b) * g
                    mask += [first + e for e in range(g)] + [T + first + e for e in range(g)]
        stages.append((step, lo, hi))
        g, step = 2 * g, 2 * step
    for _ in range(2):
        def blocks(src, lanes):
            return [src + lane * E + e for lane in lanes for e in range(E)]
        stages.append((step, blocks(0, (0, 2)) + blocks(T, (0, 2)), blocks(0, (1, 3)) + blocks(T, (1, 3))))
        step *= 2
    return stages


def network_columns(itemsize: int) -> list[int]:
    """Which column of the tile each register holds after `network` (rows come out in order)."""
    T = LINE // itemsize
    rows = [[(r, c) for c in range(T)] for r in range(T)]
    for step, lo, hi in network(itemsize):
        nxt = list(rows)
        for i in range(T):
            if not i & step:
                both = rows[i] + rows[i + step]
                nxt[i], nxt[i + step] = [both[k] for k in lo], [both[k] for k in hi]
        rows = nxt
    assert all(row == [(r, row[0][1]) for r in range(T)] for row in rows)
    return [row[0][1] for row in rows]

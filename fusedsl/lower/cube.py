"""Cube (Matmul high-level API) tiling computed by fusedsl for a target (issue 8).

A matmul kernel with a fused vector epilogue keeps one baseM x baseN tile of C in UB, so the
tiling must fit every cube buffer of the target (L1, L0A, L0B, L0C, from targets.py) AND
leave UB room for the epilogue. The rules follow the ones fusedsl's CPU implementation of
CANN's tiling API enforces (cpu/include/tiling/tiling_api.h), so the TCubeTiling printed in
a kernel is the one the host tiling API would produce: base block at most 128 x 256 halved
until one L0C buffer (f32 accumulator) fits, baseK the largest multiple of the 32-byte K
fractal that lets L0A/L0B double-buffer, then as many K steps of A/B panels in L1 as fit.
Errors name the buffer and the bytes needed vs available (reason code FS110).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from types import SimpleNamespace

import numpy as np

from .. import dtypes as dt
from ..errors import ScheduleError, TargetError
from ..ir.ops import CONSTANT, ELEMENTWISE, REDUCTION, has_trait
from ..ir.core import Function, Op, Param, Value
from .row_plan import op_schedule
from .row import RowParam, allocate_row_values, schedule_row_kernel, temp_pool
from .. import cost
from ..targets import Target, get_target
from ..tile.alloc import select_scratch
from ..tile.kernel_passes import TILING_SLACK
from ..lru import Lru
from ..record import record

_ACC = 4  # L0C accumulates in float / int32
_MAX_BASE_M = 128  # the tallest base block either tiling rule picks (shrunk, _bases)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _up(a: int, b: int) -> int:
    return _ceil(a, b) * b


@record
class CubeTiling:
    """The TCubeTiling fields fusedsl prints, plus the bytes each buffer uses."""
    M: int
    N: int
    K: int
    used_core_num: int
    single_core_m: int
    single_core_n: int
    base_m: int
    base_n: int
    base_k: int
    step_k: int
    depth_a1: int
    depth_b1: int
    is_bias: bool
    db_l0c: int
    l1_bytes: int
    l0a_bytes: int
    l0b_bytes: int
    l0c_bytes: int
    ub_tile_bytes: int
    objects_per_core: int = 1   # Matmul objects per AI core: 2 (both vector instances of a 910B core) or 1
    a_l1_bytes: int = 0         # > 0: each core's A panel (singleCoreM x K, NZ) is held in L1 (TSCM)


def _size(dtype: str) -> int:
    return np.dtype(dtype).itemsize


def cube_tiling(target: str | Target, m: int, n: int, k: int, *, a_dtype: str = "float16",
                b_dtype: str = "float16", c_dtype: str = "float32",
                bias_dtype: str | None = None, cores: int | None = None,
                ub_bytes_per_c_elem: int | None = None, l1_budget: int | None = None,
                ub_bytes: int | None = None, whole_rows: bool = False, row_bytes: int = 0,
                row_slack: int = 0, traffic: "Traffic | None" = None, a_l1: bool = False,
                layouts=None, memo: dict | None = None, offers: bool = False):
    """Tiling of an M x N x K matmul for `target`.

    `ub_bytes_per_c_elem` is the UB the epilogue needs per element of a C tile (C itself plus
    its temporaries); default: the C element only. `l1_budget` caps the L1 bytes the A/B
    panels may take (the `l1_headroom` option: 80 % of L1 by default); default: all of L1.
    `ub_bytes` is the UB left for the epilogue (a conv kernel's im2col buffers take the rest);
    default: all of UB. `whole_rows` keeps every row of C in one tile (a row reduction in the
    epilogue): cores split M only, baseN covers N and only baseM shrinks. `row_bytes` is the UB
    per column of the tile that does not grow with baseM (the epilogue's one-row buffers, each
    baseN + `row_slack` elements).

    Without `traffic` the split is CANN's tiling API's (the smallest per-core block of C, then
    the most cores) and the base block its halving rule. With `traffic` (what the kernel reads
    and writes besides A and B) the split and base block are the ones with the least modelled
    time (cost.matmul_split_cycles: A/B re-reads per tile counted, the chip's L2 and HBM
    modelled), among those within TILING_SLACK of it the one moving the fewest GM bytes, and
    never slower in the model than CANN's rule.  On 910B the search also covers the layout
    (`layouts`, default LAYOUTS): one or two Matmul objects per AI core (the core's vector
    instances; one object per core gets the core's whole MTE2 and L1), and, when `a_l1` (the
    kernel may hold A in L1: 910B, A not transposed, one batch matrix), each core's A panel
    (singleCoreM x K, NZ) in a TSCM buffer read from GM once, so A is not re-read per tile
    column. The L1 of an AI core holds every object's own buffers and TSCM slices: each object
    gets `l1_budget` / 2 on 910B (fusedsl's CPU API checks the same at simulate).

    With `offers` (and `traffic`) the result is a tuple of the tilings the kernel pass `tiling`
    walks (tile/kernel_passes.py: the walk of each candidate kernel decides): the pick above
    first (the tiling the others may not move more GM bytes than), CANN's rule where it fits, then
    the others `_offered` keeps (its note says which and why).

    `memo` (a dict the caller owns, one per compile: lower/kinds.LowerOptions.tiling_memo)
    remembers searches already run: a model repeats the same matmul with the same epilogue many times (each block of a
    transformer stack), and the traffic-aware search is most of a model's compile time.
    """
    args = (m, n, k, a_dtype, b_dtype, c_dtype, bias_dtype, cores, ub_bytes_per_c_elem, l1_budget, ub_bytes,
            whole_rows, row_bytes, row_slack, a_l1, layouts, offers)
    if memo is None:
        return _cube_tiling(target, *args, traffic)
    t = get_target(target)
    # The key is every input of the search but the epilogue's vector cycles: the target itself
    # (by identity, its entries hold it so the id stays its own), every argument, and
    # Traffic's fields. traffic.vector is a function of the kernel's epilogue ops, which has no
    # cheap complete key; the search only ever reads it at (blockDim, Launch) points fixed by the
    # rest of the key, so an entry keeps the values it read and is reused only when this
    # kernel's vector model gives the same value at every one of those points -- then the
    # search, deterministic in what it read, returns the same tiling.
    tkey = None if traffic is None else (traffic.a_item, traffic.b_item, traffic.batch, traffic.epilogue,
                                         traffic.c_bytes, traffic.vector is None)
    key = (id(t), t.name, *args, tkey)
    vector = None if traffic is None else traffic.vector
    for _, tiling, read in memo.get(key, ()):
        if all(vector(bd, launch) == v for (bd, launch), v in read.values()):
            return tiling
    read = {}   # the launch's fields (a tuple of ints hashes faster than the record) -> ((bd, launch), value)
    if vector is not None:
        def recorded(bd, launch):
            point = (bd, launch.tile_rows, launch.tile_cols, launch.tiles_per_core)
            got = read.get(point)
            if got is None:
                got = read[point] = ((bd, launch), vector(bd, launch))
            return got[1]
        traffic = replace(traffic, vector=recorded)
    tiling = _cube_tiling(t, *args, traffic)   # an error is not remembered: it is raised again next time
    memo.setdefault(key, []).append((t, tiling, read))
    return tiling


def _cube_tiling(target, m, n, k, a_dtype, b_dtype, c_dtype, bias_dtype, cores, ub_bytes_per_c_elem, l1_budget,
                 ub_bytes, whole_rows, row_bytes, row_slack, a_l1, layouts, offers, traffic):
    """cube_tiling's search itself (its doc)."""
    t = get_target(target)
    if not t.matmul_dtypes:
        raise TargetError(f"{t.name} has no Matmul high-level API (ASCENDC.md §3.1): a cube "
                          f"kernel (matmul {m}x{k} @ {k}x{n}) cannot be printed for it",
                          hint="compile for ascend910b or ascend310p")
    if min(m, n, k) < 1:
        raise ScheduleError(f"matmul sizes must be positive, got M={m} N={n} K={k}")
    sa, sb, sc = _size(a_dtype), _size(b_dtype), _size(c_dtype)
    sbias = _size(bias_dtype) if bias_dtype else 0
    per_c = ub_bytes_per_c_elem if ub_bytes_per_c_elem is not None else sc
    c0k = 32 // sa
    dim = cores if cores is not None else t.aic_cores   # CANN's rule: SetDim(the AI cores)
    ub = t.ub_bytes if ub_bytes is None else ub_bytes

    def ub_need(bm, bn):
        return bm * bn * per_c + (bn + row_slack) * row_bytes

    def fits(bm, bn):
        return bm * bn * _ACC <= t.l0c_bytes and ub_need(bm, bn) <= ub

    def shrunk(single_m, single_n):
        """The base block of CANN's rule: at most 128 x 256, the longer side halved until L0C
        holds it and the epilogue's UB tile fits."""
        base_m = min(_up(single_m, 16), 128)
        base_n = _up(single_n, 16) if whole_rows else min(_up(single_n, 16), 256)
        while not fits(base_m, base_n):
            if base_n >= base_m and base_n > 16 and not whole_rows:
                base_n //= 2
            elif base_m > 16:
                base_m //= 2
            else:
                need_l0c, need_ub = 16 * base_n * _ACC, ub_need(16, base_n)
                rows = f" (whole rows of {n})" if whole_rows else ""
                if need_l0c > t.l0c_bytes:
                    raise ScheduleError(f"FS110: a 16 x {base_n} base block{rows} needs {need_l0c} bytes of L0C, "
                                        f"{t.name} has {t.l0c_bytes}")
                raise ScheduleError(f"FS110: the epilogue of a 16 x {base_n} tile of C{rows} needs {need_ub} bytes "
                                    f"of UB, {t.name} has {ub}",
                                    hint="split the epilogue into its own kernel")
            base_m, base_n = _up(base_m, 16), _up(base_n, 16)
        return base_m, base_n

    l1 = t.l1_bytes if l1_budget is None else min(t.l1_bytes, l1_budget)

    def base_k_of(bm, bn, lim=None, tscm=0):
        """The largest K fractal multiple that double-buffers in L0A/L0B and, with `lim`, leaves
        one K step of the object's own A1 (none when A is in TSCM) and B1 in L1 beside `tscm`."""
        kmax = min(t.l0a_bytes // (2 * bm * sa), t.l0b_bytes // (2 * bn * sb))
        if lim is not None:
            kmax = min(kmax, max(0, lim - tscm - bn * sbias) // ((0 if tscm else bm * sa) + bn * sb))
        return min(kmax // c0k * c0k, _up(k, c0k))

    def panel_of(sm):   # A's NZ panel in L1: singleCoreM rows padded to 16 per 32-byte column block
        return _up(sm, 16) * _up(k, c0k) * sa

    fitters: dict = {}   # (lim, tscm) -> fits_l1: the search asks the same base blocks for many splits

    def fitter(lim, tscm):
        """fits(bm, bn): L0C, UB, and one K step of the object's own A1 (none when A is in TSCM)
        and B1 buffers within `lim` bytes of L1 beside its `tscm` bytes (each block worked out once)."""
        fits_l1 = fitters.get((lim, tscm))
        if fits_l1 is None:
            known: dict = {}

            def fits_l1(bm, bn):
                ok = known.get((bm, bn))
                if ok is None:
                    ok = known[bm, bn] = fits(bm, bn) and base_k_of(bm, bn, lim, tscm) >= c0k
                return ok
            fitters[lim, tscm] = fits_l1
        return fits_l1

    legacy = _balanced_split(m, n, dim, whole_rows)
    base_m, base_n = shrunk(legacy[0], legacy[1])
    single_m, single_n, used = legacy
    per_core, tscm = (2 if t.separated else 1), 0
    lim = l1
    others = []
    if traffic is not None:
        cands = []
        seen = set()
        for opa, in_l1 in (layouts if layouts is not None else LAYOUTS):
            if not t.separated:   # one object per AI core; A in TSCM is 910B's (ASCENDC.md 3.1)
                opa, in_l1 = 1, False
            if in_l1 and (not a_l1 or whole_rows or k > 65535):   # Nd2NzParams: 16-bit row lengths
                continue
            if (opa, in_l1) in seen:
                continue
            seen.add((opa, in_l1))
            lay_lim = l1 // 2 if t.separated else l1
            cap = cores if cores is not None else t.aic_cores * (opa if t.separated else 1)
            cands.append((opa, in_l1, lay_lim, cap))
        if cands:
            (single_m, single_n, used, base_m, base_n, per_core, tscm, lim), others = _cheapest_split(
                t, m, n, k, whole_rows, (single_m, single_n, used, base_m, base_n), cands, panel_of, fitter,
                traffic)
    def complete(sm, sn, used, bm, bn, per_core, tscm, lim, searched=True):
        return _complete(t, k, sa, sb, sbias, bias_dtype, ub_need, base_k_of, m, n, sm, sn, used, bm, bn, per_core,
                         tscm, lim, searched)
    own = complete(single_m, single_n, used, base_m, base_n, per_core, tscm, lim, traffic is not None)
    if not offers:
        return own
    out = []
    for c in others:
        try:
            tiling = complete(*c)
        except ScheduleError:   # L1 has no room for its K step (the search's fitter allowed its base block)
            continue
        if tiling not in out:   # (two layouts' L1 shares may complete to the same tiling)
            out.append(tiling)
    return tuple(out) or (own,)


def _complete(t, k, sa, sb, sbias, bias_dtype, ub_need, base_k_of, m, n, single_m, single_n, used, base_m, base_n,
              per_core, tscm, lim, searched) -> CubeTiling:
    """The whole CubeTiling of a split, base block and layout: baseK, the K steps of A / B panels
    in L1 (double-buffered where they fit) within `lim` bytes of L1, and every buffer's bytes; a
    ScheduleError (FS110) when L1 or L0 has no room for one K step.  Not `searched`: CANN's rule
    (baseK limited by L0 only)."""
    c0k = 32 // sa
    db_l0c = 2 if 2 * base_m * base_n * _ACC <= t.l0c_bytes else 1
    base_k = base_k_of(base_m, base_n, lim if searched else None, tscm)
    if base_k < c0k <= base_k_of(base_m, base_n):   # L0 has room for a K fractal, L1 does not
        need = ((0 if tscm else base_m * sa) + base_n * sb) * c0k + base_n * sbias + tscm
        raise ScheduleError(f"FS110: one K step of A and B ({need} bytes) does not fit the {lim} bytes of L1 "
                            f"allowed on {t.name} (L1 {t.l1_bytes} B; the l1_headroom option sets the share)")
    if base_k < c0k:
        raise ScheduleError(f"FS110: base block {base_m} x {base_n} leaves no K fractal in "
                            f"L0A/L0B ({t.l0a_bytes}/{t.l0b_bytes} bytes)")
    ksteps = _ceil(k, base_k)
    bias_bytes = base_n * sbias
    panel = (0 if tscm else base_m * base_k * sa) + base_n * base_k * sb
    for s in range(ksteps, 0, -1):
        found = next((d for d in (2, 1) if d * s * panel + bias_bytes + tscm <= lim), 0)
        if found:
            step_k, db = s, found
            break
    else:
        raise ScheduleError(f"FS110: one K step of A and B ({panel + bias_bytes} bytes) does not "
                            f"fit the {lim} bytes of L1 allowed on {t.name} (L1 {t.l1_bytes} B; the "
                            "l1_headroom option sets the share)")
    return CubeTiling(M=m, N=n, K=k, used_core_num=used, single_core_m=single_m,
                      single_core_n=single_n, base_m=base_m, base_n=base_n, base_k=base_k,
                      step_k=step_k, depth_a1=db * step_k, depth_b1=db * step_k,
                      is_bias=bool(bias_dtype), db_l0c=db_l0c,
                      l1_bytes=db * step_k * panel + bias_bytes + tscm,
                      l0a_bytes=2 * base_m * base_k * sa, l0b_bytes=2 * base_n * base_k * sb,
                      l0c_bytes=db_l0c * base_m * base_n * _ACC,
                      ub_tile_bytes=ub_need(base_m, base_n), objects_per_core=per_core, a_l1_bytes=tscm)


# The layouts cube_tiling weighs on 910B: (Matmul objects per AI core, A's panel held in L1).
# Non-TSCM first: of equal candidates the simpler kernel wins.
LAYOUTS = ((2, False), (1, False), (2, True), (1, True))



@record
class Traffic:
    """What a matmul kernel moves besides its A and B reads, for choosing its split: the
    operands' item sizes, batch matrices, (kind, itemsize) per epilogue input (cost.matmul_reads)
    and the bytes of C it writes."""
    a_item: int
    b_item: int
    batch: int = 1
    epilogue: tuple = ()
    c_bytes: int = 0
    vector: object = None   # (blockDim, Launch) -> the epilogue's vector cycles (cost.epilogue_cycles)


def matmul_objects(t: Target) -> int:
    """The Matmul objects a cube kernel may use: one per vector core of a mixed kernel on 910B
    (two per AI core, KERNEL_TYPE_MIX_AIC_1_2), one per AI core elsewhere (GetCoreNum)."""
    return t.aiv_cores if t.separated else t.aic_cores


@lru_cache(maxsize=1024)
def _balanced_split(m: int, n: int, dim: int, whole_rows: bool) -> tuple[int, int, int]:
    """CANN's tiling API rule (cpu/include/tiling/tiling_api.h): the (mDim, nDim) with the
    smallest per-core block, then the most cores; whole rows split M only.  Remembered (a function
    of its four arguments): a kernel's search and CANN's rule for it ask the same, and every core
    count (md) is tried for each."""
    if whole_rows:
        sm = min(m, _up(_ceil(m, dim), 16))
        return sm, n, _ceil(m, sm)
    best = None
    for md in range(1, dim + 1):
        nd = dim // md
        sm = min(m, _up(_ceil(m, md), 16))
        sn = min(n, _up(_ceil(n, nd), 16))
        used = _ceil(m, sm) * _ceil(n, sn)
        if used > dim:
            continue
        key = (sm * sn, -used)
        if best is None or key <= best[0]:
            best = (key, sm, sn, used)
    return best[1:]


@lru_cache(maxsize=1024)
def _splits(m: int, n: int, dim: int, whole_rows: bool) -> tuple:
    """Every distinct (singleCoreM, singleCoreN, cores) on at most `dim` cores, in the order of
    (mDim, nDim).  Remembered: the search asks again for each layout with the same core cap."""
    out, seen = [], set()
    for md in range(1, dim + 1):
        sm = min(m, _up(_ceil(m, md), 16))
        last = None
        for nd in ((1,) if whole_rows else range(1, dim // md + 1)):
            sn = n if whole_rows else min(n, _up(_ceil(n, nd), 16))
            if sn == last:   # (sn only falls as nd grows: the same split again)
                continue
            last = sn
            used = _ceil(m, sm) * _ceil(n, sn)
            if used <= dim and (sm, sn) not in seen:
                seen.add((sm, sn))
                out.append((sm, sn, used))
    return tuple(out)


def _bases(sm: int, sn: int, whole_rows: bool, fits):
    """Base blocks worth trying for a sm x sn core block: for each count of tile rows, the
    fewest tile columns (each tile as even as 16-element steps allow) that fit."""
    bn_max = _up(sn, 16) if whole_rows else min(_up(sn, 16), 256)
    found = 0
    for rows in range(_ceil(sm, 128), _ceil(sm, 16) + 1):
        bm = _up(_ceil(sm, rows), 16)
        if rows > 1 and bm == _up(_ceil(sm, rows - 1), 16):
            continue
        for cols in ((1,) if whole_rows else range(_ceil(sn, bn_max), _ceil(sn, 16) + 1)):
            bn = bn_max if whole_rows else _up(_ceil(sn, cols), 16)
            if fits(bm, bn):
                yield bm, bn
                found += 1
                break
        if found == 4:   # more tile rows only add B re-reads once a block fits
            return


def modelled_split(t: Target, m, n, k, sm, sn, used, bm, bn, traffic: Traffic, per_core: int | None = None,
                   a_l1_bytes: int = 0, model=None, vectors: dict | None = None) -> tuple[float, int]:
    """(modelled us, GM bytes) of a matmul kernel on one split, base block and layout: the
    report's figures for it (cost.matmul_split_cycles plus the epilogue's vector cycles); `model`:
    cost.split_model of this matmul and traffic (a search passes its own); `vectors`: the
    epilogue's vector cycles by (blockDim, baseM, baseN, tiles per core), a search's own (most
    splits share a launch with another: the Launch record is not built again)."""
    per = per_core or (2 if t.separated else 1)
    block_dim = cube_block_dim(used, t, per)
    if model is None:
        model = cost.split_model(t, m, n, k, traffic.a_item, traffic.b_item, traffic.batch, traffic.epilogue,
                                 traffic.c_bytes)
    _, _, _, cycles, head, gm = model(sm, sn, used, bm, bn, per, a_l1_bytes, block_dim)
    if traffic.vector is not None:
        point = (block_dim, bm, bn, _ceil(sm, bm) * _ceil(sn, bn))
        vector = None if vectors is None else vectors.get(point)
        if vector is None:
            vector = traffic.vector(block_dim, cost.Launch(*point))
            if vectors is not None:
                vectors[point] = vector
        cycles += vector
    return (cycles + head) / t.clock_mhz + cost.LAUNCH_US, gm


def _cheapest_split(t: Target, m, n, k, whole_rows, legacy, layouts, panel_of, fitter, traffic: Traffic):
    """(singleCoreM, singleCoreN, cores, baseM, baseN, objects per core, TSCM bytes, L1 per
    object) of least modelled time over every layout (module doc)."""
    cands = []
    model = cost.split_model(t, m, n, k, traffic.a_item, traffic.b_item, traffic.batch, traffic.epilogue,
                             traffic.c_bytes)
    blocks: dict = {}   # (sm, sn, L1 share, TSCM bytes) -> _bases: layouts of one L1 share ask again
    vectors: dict = {}  # modelled_split's epilogue cycles by launch
    for opa, in_l1, lim, cap in layouts:
        for sm, sn, used in _splits(m, n, cap, whole_rows):
            tscm = panel_of(sm) if in_l1 else 0
            if tscm and tscm >= lim:
                continue
            bases = blocks.get((sm, sn, lim, tscm))
            if bases is None:
                bases = blocks[sm, sn, lim, tscm] = tuple(_bases(sm, sn, whole_rows, fitter(lim, tscm)))
            for bm, bn in bases:
                # (one tile column reads A once either way: the A-from-GM layout, weighed first, wins the tie)
                key = modelled_split(t, m, n, k, sm, sn, used, bm, bn, traffic, opa, tscm, model, vectors)
                cands.append((key, (sm, sn, used, bm, bn, opa, tscm, lim)))
    # CANN's rule (two objects per AI core on 910B, A from GM), where it fits and its layout is weighed
    per = 2 if t.separated else 1
    lim0 = next((lim for opa, in_l1, lim, _ in layouts if not in_l1), layouts[0][2])
    rule = None
    if any(opa == per and not in_l1 for opa, in_l1, _, _ in layouts) and fitter(lim0, 0)(*legacy[3:]):
        rule = (modelled_split(t, m, n, k, *legacy, traffic, per, 0, model, vectors), (*legacy, per, 0, lim0))
        cands.append(rule)
    if not cands:
        # nothing fits: the caller's checks say which buffer (FS110)
        return (*legacy, per, 0, lim0), [(*legacy, per, 0, lim0)]
    best = min(c[0][0] for c in cands)
    limit = best * (1 + TILING_SLACK)
    if rule is not None:   # never slower in the model than CANN's rule
        limit = min(limit, rule[0][0])
    # the least traffic within the slack; then the faster; then fewer cores
    own = min((c for c in cands if c[0][0] <= limit), key=lambda c: (c[0][1], c[0][0], c[1][2]))
    # what the pass `tiling` weighs: this pick first (the tiling the others may not move more GM
    # bytes than), CANN's rule, then the others `_offered` keeps
    offered = [own[1]] + ([rule[1]] if rule is not None and rule[0][1] <= own[0][1] else []) + _offered(cands, own, best)
    return own[1], list(dict.fromkeys(offered))


# What the lowering offers the kernel pass `tiling` besides its own pick.  The walk of a candidate
# kernel (tile/kernel_cost.process_work: every vector instance's Process) costs ~1.5 ms; the
# search above prices 100 - 3,000 splits x base blocks x layouts by cost.matmul_split_cycles, the
# walk's own figures in closed form (its GM bytes are the walk's exactly, its time 1-6 % below:
# tests/test_kernel_cost.py), so it ranks them nearly as the walk does.  Offered: of the
# candidates that move no more GM bytes than the pick (the pass keeps no other), the OFFER_FASTEST
# fastest and, of those within OFFER_WINDOW of the formula's fastest, the OFFER_LEAST_GM moving the
# fewest GM bytes (the pass's rule prefers those within its slack); CANN's rule too when it moves
# no more bytes.  The window is room for the two models' differences, the largest in their
# epilogue's vector cycles: on a (17, 130) @ (130, 9) float16 matmul one Matmul object of 17 rows
# against two of 16 rows each, the formula says 10.9 % slower with a leaky_relu epilogue and 31 %
# with gelu + cast, the walk 0.2 % faster and 1.8 % slower (both 25 % fewer GM bytes).
OFFER_WINDOW = 0.35
OFFER_FASTEST = 3
OFFER_LEAST_GM = 2


def _offered(cands, own, best) -> list:
    fewer = sorted((c for c in cands if c[0][1] <= own[0][1] and c[1] != own[1]), key=lambda c: (c[0][0], c[0][1]))
    picked = fewer[:OFFER_FASTEST]
    window = [c for c in fewer if c[0][0] <= best * (1 + OFFER_WINDOW)]
    picked += [c for c in sorted(window, key=lambda c: (c[0][1], c[0][0]))[:OFFER_LEAST_GM] if c not in picked]
    out = []
    for _, c in picked:
        if c not in out:
            out.append(c)
    return out


# ---- a fused cube kernel as the Ascend C printer sees it (lower/cube_tile.py) ----

@dataclass(frozen=True)
class CubeScalar(RowParam):
    """A runtime scalar of a cube kernel. It travels in the tiling data as the float field `var`
    after the TCubeTiling words (the kernel reads it there, the kernel-launch project's main.cpp
    sets it by name)."""
    var: str = ""


# TCubeTiling's 50 int32 fields in CANN's order (cpu/include/fusedsl_cpu/cube_tiling_fields.h)
TCUBE_FIELDS = (
    "usedCoreNum M N Ka Kb singleCoreM singleCoreN singleCoreK baseM baseN baseK depthA1 depthB1 stepM stepN "
    "isBias transLength iterateOrder shareMode shareL1Size shareL0CSize shareUbSize batchM batchN singleBatchM "
    "singleBatchN stepKa stepKb depthAL1CacheUB depthBL1CacheUB dbL0A dbL0B dbL0C ALayoutInfoB ALayoutInfoS "
    "ALayoutInfoN ALayoutInfoG ALayoutInfoD BLayoutInfoB BLayoutInfoS BLayoutInfoN BLayoutInfoG BLayoutInfoD "
    "CLayoutInfoB CLayoutInfoS1 CLayoutInfoN CLayoutInfoG CLayoutInfoS2 BatchNum mxTypePara").split()


@dataclass
class CubeSchedule:
    """A 2-D matmul whose result tile goes to UB for a vector epilogue (bias, activations,
    residual adds, casts), one GM write per output tile."""

    fn: object
    target: Target
    mm: object                 # the matmul op
    epilogue: list             # ops after the matmul, in program order
    params: list               # lower.row.RowParam per kernel parameter: kinds "a", "b", "full"
                               # ([M, N]), "colvec" ([N] or [1, N]), "scalar" (one element)
    tiling_fields: CubeTiling
    ub_budget: int
    plan_note: str
    symbols = ()
    batch = 1                  # batch matrices (one batch axis); A/B batched or shared
    batch_a = False
    batch_b = False
    row_epilogue = None        # a RowSchedule of the epilogue when it has last-axis reductions
    per_row_outputs = frozenset()   # indices of results with one value per row of C ([M] / [M, 1])
    traffic = None             # what it moves besides A and B (Traffic), for the split's model
    cann_tiling = None         # the CubeTiling of CANN's rule on the same buffers
    steps = None               # id(op) -> (vector tile program, sources) per elementwise epilogue op
    c_dtype = dt.float32       # the C tile's dtype: float32, or int32 for int8 operands (then wrapped to int8)
    offers = ()                # (CubeTiling, plan line) per tiling the kernel pass `tiling` weighs, its own first
    walk_memo = None           # (WALK_CHOICES, this kernel's key): where the pass's choice is remembered
    tiling_choice = None       # what the pass `tiling` weighed (kernel_passes.TilingChoice), once it ran
    adopted = False            # the pass `tiling` ran on this schedule's kernel (adopt_kernel)

    def adopt_kernel(self, k) -> None:
        """The kernel pass `tiling` kept candidate `k.choice.index` of `offers`: the launch's tiling
        and plan line from now on (the report, simulate and the projects read them)."""
        self.adopted = True
        if k.choice is not None and self.offers:
            self.tiling_fields, self.plan_note = self.offers[k.choice.index]
        if self.walk_memo is not None:   # (no choice -- one offer, or none walkable -- is remembered too)
            memo, key = self.walk_memo
            memo.put(key, (self.tiling_fields, k.choice, self.target))
            # once: the pass runs again on a part of a kernel of parts the CPU lowers alone
            # (kernel_cpu.ScheduleCpu), on the kept tiling, with nothing left to choose
            self.walk_memo = None

    @property
    def inputs(self):
        return self.params

    @property
    def workspace_bytes(self) -> int:
        """The system workspace the Matmul API needs (GetLibApiWorkSpaceSize)."""
        return 16 * 1024 * 1024 if self.target.separated else 2 * 1024 * 1024

    @property
    def words(self) -> list[int]:
        t = self.tiling_fields
        # kept with the CubeTiling they were made of (an immutable record; adopt_kernel may replace
        # it): the compile and the host tiling's print asked again, a 50-field dict each time
        kept = self.__dict__.get("_words_of")
        if kept is not None and kept[0] is t:
            return list(kept[1])
        w = dict.fromkeys(TCUBE_FIELDS, 0)
        w.update(usedCoreNum=t.used_core_num, M=t.M, N=t.N, Ka=t.K, Kb=t.K, singleCoreM=t.single_core_m,
                 singleCoreN=t.single_core_n, singleCoreK=t.K, baseM=t.base_m, baseN=t.base_n, baseK=t.base_k,
                 depthA1=t.depth_a1, depthB1=t.depth_b1, stepM=1, stepN=1, isBias=0, iterateOrder=0,
                 stepKa=t.step_k, stepKb=t.step_k, dbL0A=2, dbL0B=2, dbL0C=t.db_l0c, batchM=1, batchN=1,
                 singleBatchM=1, singleBatchN=1, BatchNum=1)
        words = tuple(w[f] for f in TCUBE_FIELDS)
        self.__dict__["_words_of"] = (t, words)
        return list(words)

    def tiling(self, sizes, target) -> "CubeLaunch":
        """The launch of the kept tiling: with several offers, only once the kernel pass `tiling` chose
        (the kind's `tiling`, lower/kinds.py, runs the passes first); before, this would be the
        formula's pick, which the walk may not keep."""
        if len(self.offers) > 1 and not self.adopted:
            raise RuntimeError(f"the launch of cube kernel {self.fn.name} asked before the kernel pass `tiling` "
                               "chose among its offers (lower/kinds.kernel_ir)")
        t = self.tiling_fields
        tiles = _ceil(t.single_core_m, t.base_m) * _ceil(t.single_core_n, t.base_n)
        return CubeLaunch(self.words, cube_block_dim(t.used_core_num, target, t.objects_per_core), 1, t.base_m,
                          t.base_n, tiles)


def cube_block_dim(used_core_num: int, target: Target, per_core: int | None = None) -> int:
    """The blockDim a cube kernel launches with: 910B's AI cores each drive two vector cores
    (two Matmul objects, or one when `per_core` is 1: the second vector core idles), the other
    chips one."""
    per = (per_core or 2) if target.separated else 1
    return -(-used_core_num // per)


def cores_phrase(used_core_num: int, target: Target, per_core: int | None = None) -> str:
    """The plan line's words for the launch (the report's blockDim column says the same)."""
    bd = cube_block_dim(used_core_num, target, per_core)
    if target.separated:
        per = "one per AI core" if per_core == 1 else "two per AI core"
        return f"blockDim {bd} ({used_core_num} Matmul object{'s' if used_core_num != 1 else ''}, {per})"
    return f"blockDim {bd}"


@record
class CubeLaunch:
    words_: list
    block_dim: int
    total_tiles: int
    tile_rows: int = 0        # baseM (for the report)
    C: int = 0                # baseN
    tiles_per_core: int = 0   # C tiles per core

    @property
    def words(self):
        return self.words_


def schedule_cube_kernel(fn, target: Target, ub_fraction: float = 1.0, l1_headroom: float = 0.8,
                         layouts=None, memo: dict | None = None) -> CubeSchedule:
    """The printable form of a cube kernel, or a located ScheduleError/TargetError saying why not.
    `layouts` restricts the layouts cube_tiling weighs (default LAYOUTS); `memo`: cube_tiling's (a
    compile's, lower/kinds.LowerOptions.tiling_memo); with it, the kernel pass `tiling`'s choice is
    also looked up in and remembered for the process (WALK_CHOICES)."""
    ops = [op for op in fn.ops if not has_trait(op, CONSTANT)]
    mms = [op for op in ops if op.name == "matmul"]
    first = mms[0] if mms else ops[0]
    if len(mms) != 1 or any(op.name == "conv2d" for op in ops):
        raise ScheduleError(f"the Ascend C backend does not print this cube kernel yet ({first.name} in {fn.name}: "
                            "only one 2-D matmul with an elementwise epilogue is printed)", loc=first.loc,
                            hint="this kernel still runs on the CPU executors (kernel(*arrays))")
    mm = mms[0]
    a, b = mm.operands
    param_values = [p.value for p in fn.params]
    out_shape = tuple(mm.result.shape)
    batch_dims = out_shape[:-2]
    if a not in param_values or b not in param_values:
        raise ScheduleError(f"the Ascend C backend prints a matmul of two kernel inputs only ({mm.name} of "
                            f"{list(a.shape)} @ {list(b.shape)} in {fn.name})", loc=mm.loc,
                            hint="this kernel still runs on the CPU executors (kernel(*arrays))")
    # Contiguous operands let any number of batch axes flatten into one: batch matrix i of an
    # operand that has every batch axis starts at i * (its matrix size); one without batch axes
    # (or with only size-1 ones) is the same matrix for every batch. An operand that broadcasts
    # some batch axes but not others would need a stride per axis.
    def batched(v) -> bool:
        dims = tuple(v.shape[:-2])
        if dims == batch_dims:
            return bool(dims)
        if all(d == 1 for d in dims):
            return False
        raise ScheduleError(f"the Ascend C backend flattens a matmul's batch axes only when each operand has all "
                            f"of them or none ({mm.name} of {list(a.shape)} @ {list(b.shape)} in {fn.name}: "
                            f"{v.name}'s batch axes {list(dims)} broadcast against {list(batch_dims)})", loc=mm.loc,
                            hint="this kernel still runs on the CPU executors (kernel(*arrays))")
    batch_a, batch_b = batched(a), batched(b)
    ta, tb = bool(mm.attr("transpose_a", False)), bool(mm.attr("transpose_b", False))
    M, K = (a.shape[-1], a.shape[-2]) if ta else tuple(a.shape[-2:])
    N = b.shape[-2] if tb else b.shape[-1]
    batch = 1
    for d in batch_dims:
        batch = batch * d if isinstance(d, int) and isinstance(batch, int) else None
    if not all(isinstance(d, int) for d in (M, N, K)) or batch is None:
        raise ScheduleError(f"matmul with symbolic sizes is not printed as Ascend C yet ({fn.name})", loc=mm.loc)
    # Only A batched, not transposed (a linear layer on [B, T, D]): the batch matrices of A and C
    # are consecutive rows, so they are ONE matmul of batch * M rows (one Iterate loop, a row
    # epilogue over rows of C as in 2-D) -- unless an [M, N] tensor is shared by every batch.
    flat_m = batch_a and not batch_b and not ta and not any(
        tuple(p.value.shape) == (M, N) and tuple(p.value.shape) != out_shape for p in fn.params)
    if flat_m:
        M, batch, batch_a = batch * M, 1, False
    t = get_target(target)
    if not t.matmul_dtypes:
        raise TargetError(f"{t.name} has no Matmul high-level API (ASCENDC.md 3.1): the matmul at this line cannot "
                          "be printed for it", loc=mm.loc, hint="compile for ascend910b or ascend310p")
    c_dtype = check_cube_operands(t, a.dtype, b.dtype, mm, int8=True)
    epilogue = [op for op in ops if op is not mm]
    for op in epilogue:   # an operand of the matmul is a Matmul API input, not an epilogue buffer
        if any(v is a or v is b for v in op.operands):
            raise ScheduleError(f"the {op.name} after the matmul in {fn.name} reads the matmul's own operand "
                                f"{(a if any(v is a for v in op.operands) else b).name}: an epilogue reading A or B "
                                "is not printed yet", loc=op.loc,
                                hint="this kernel still runs on the CPU executors (kernel(*arrays))")
    row = _row_epilogue(fn, mm, epilogue, t, ub_fraction, flat_m) if any(has_trait(op, REDUCTION) for op in epilogue) else None
    if row is not None and c_dtype != dt.float32:
        raise ScheduleError(f"a row reduction after the int8 matmul in {fn.name} is not printed yet (its int32 C "
                            "is wrapped to int8 by the elementwise epilogue only)", loc=mm.loc,
                            hint="this kernel still runs on the CPU executors (kernel(*arrays))")
    if row is None:
        check_elementwise_epilogue(fn, mm, epilogue)
    params = []
    for i, p in enumerate(fn.params):
        v = p.value
        shape = tuple(v.shape)
        if p.kind == "scalar":
            kind = "runtime_scalar"
        elif v is a:
            kind = "a"
        elif v is b:
            kind = "b"
        elif shape == out_shape:
            kind = "full"
        elif shape == (M, N) and batch_dims:
            kind = "fullshared"   # one [M, N] tensor added to every batch
        elif shape in ((N,), (1, N)) and N > 1:
            kind = "colvec"
        elif all(d == 1 for d in shape):
            kind = "scalar"
        elif shape == (M, 1) and not batch_dims:
            kind = "rowvec"       # one value per row of C
        else:
            raise ScheduleError(f"input {v.name} of shape {list(shape)} of the epilogue in {fn.name} is not printed "
                                f"yet (an [M, N] tensor, an [N] row, an [M, 1] column or a scalar are)", loc=fn.loc,
                                hint="this kernel still runs on the CPU executors (kernel(*arrays))")
        if kind == "runtime_scalar":
            params.append(CubeScalar(i, v.name, v.dtype, kind, var=f"scalar{i}"))
            continue
        params.append(RowParam(i, v.name, v.dtype, kind))
    # results of one value per row of C (a row epilogue's reduction, [M] / [M, 1]): a baseM buffer each
    per_row = {o.index for o in row.outputs if o.kind == "rowscalar"} if row is not None else set()
    per_c = 4 + sum(p.dtype.itemsize for p in params if p.kind in ("full", "fullshared"))
    per_c += sum(max(1, v.dtype.itemsize) for i, v in enumerate(fn.results) if i not in per_row)
    per_c += 0 if t.separated else 4
    steps, row_bytes, row_slack = None, 0, 0
    if row is None:   # the epilogue's one-row buffers, counted as the printer allocates them
        varies = (lambda v: tuple(v.shape) in (out_shape, (M, N), (N,), (1, N))
                  and (N > 1 or tuple(v.shape) in (out_shape, (M, N))))
        steps, row_bytes, row_slack = epilogue_rows(fn, mm, epilogue, t, varies)
        row_bytes += sum(p.dtype.itemsize for p in params if p.kind == "colvec")
        row_bytes += WRAP_ROW_BYTES if c_dtype == dt.int32 else 0
        row_bytes += wrap_row_bytes(epilogue, t)
    # Select's library scratch at the top of UB when the epilogue compares or selects
    scratch = select_scratch(t, [x for s in row.steps.values() for x in s.sched.stmts] if row is not None
                             else [x for st in steps.values() for x in st[0].stmts])
    ub_left = None
    if row is not None:   # whole rows of C per tile; the row's own buffers come off the UB first
        ub_left = int(t.ub_bytes * ub_fraction) - scratch - row_epilogue_bytes(row, N, mm.result.dtype)
        ub_left -= sum(_up(_MAX_BASE_M * fn.results[i].dtype.itemsize, 32) for i in per_row)

    # what the kernel moves besides A and B, for the traffic-aware split (cube_tiling)
    c_bytes = batch * M * sum(v.dtype.itemsize * (1 if i in per_row else N) for i, v in enumerate(fn.results))
    seen_vec = {}   # the candidates share few (blockDim, tile) pairs: model each once
    epilogue_model = cost.epilogue_model(fn, mm, t, {}, ops, per_row=True)

    def vector(block_dim, launch):
        point = (block_dim, launch.tile_rows, launch.tile_cols, launch.tiles_per_core)
        got = seen_vec.get(point)
        if got is None:
            got = seen_vec[point] = epilogue_model(block_dim, launch)
        return got
    traffic = Traffic(a.dtype.itemsize, b.dtype.itemsize, batch,
                      tuple((p.kind, p.dtype.itemsize) for p in params if p.kind != "runtime_scalar"), c_bytes,
                      vector)

    # A's panel may be held in L1 (TSCM, cube_tile: CopyNz) on 910B for one batch matrix of a
    # non-transposed A (Nd2NzParams copies rows as they lie; the CPU API reads a TSCM A untransposed)
    a_l1 = t.separated and not ta and batch == 1 and c_dtype == dt.float32

    def tile(cores=None, traffic=traffic, offers=False):
        if row is not None:
            return cube_tiling(t, M, N, K, a_dtype=a.dtype.np.name, b_dtype=b.dtype.np.name, c_dtype="float32",
                               ub_bytes_per_c_elem=per_c, cores=cores, l1_budget=int(t.l1_bytes * l1_headroom),
                               ub_bytes=ub_left, whole_rows=True, traffic=traffic, layouts=layouts, memo=memo,
                               offers=offers)
        return cube_tiling(t, M, N, K, a_dtype=a.dtype.np.name, b_dtype=b.dtype.np.name, c_dtype=c_dtype.np.name,
                           ub_bytes_per_c_elem=per_c, cores=cores, l1_budget=int(t.l1_bytes * l1_headroom),
                           ub_bytes=int(t.ub_bytes * ub_fraction) - 1024 - scratch, row_bytes=row_bytes,
                           row_slack=row_slack, traffic=traffic, a_l1=a_l1, layouts=layouts, memo=memo, offers=offers)

    def aligned(tiling):
        if t.has_datacopypad or tiling.used_core_num == 1:
            return True
        # row tails are written with SetValue through each core's 64-byte data cache: cores may
        # split C only where every core's rows start on a GM line of every output
        items = {v.dtype.itemsize for i, v in enumerate(fn.results) if i not in per_row}
        ok = all(N * i % 64 == 0 and tiling.single_core_n * i % 64 == 0 for i in items)
        # a per-row output: each core's block of M values starts on a GM line
        return ok and all(tiling.single_core_m * fn.results[i].dtype.itemsize % 64 == 0 for i in per_row)

    def placed(tiling, traffic):
        return tiling if aligned(tiling) else tile(cores=1, traffic=traffic)

    # an identical kernel (another block's matmul of a model, or the same function compiled again
    # in this process) already chosen by the pass `tiling`: its choice again, without the search
    # and without walking the candidates (WALK_CHOICES: the choice is a function of `walk_key`)
    walk_key = None if memo is None else ("walk", id(t), t.name, _structure(fn), ub_fraction, l1_headroom,
                                          LAYOUTS if layouts is None else layouts)
    known = None if walk_key is None else WALK_CHOICES.get(walk_key)
    try:
        if known is not None:
            tiling, others = known[0], ()
        else:
            tiling, *others = tile(offers=True)
    except ScheduleError as exc:
        if row is None:
            raise
        raise ScheduleError(f"{exc.message}: the row reduction after the matmul "
                            f"in {fn.name} needs whole rows of {N} in UB", loc=mm.loc,
                            hint="this kernel still runs on the CPU executors (kernel(*arrays))") from None
    tiling = placed(tiling, traffic)
    trans = "".join(f", {x} read transposed (isTrans)" for x, on in (("A", ta), ("B", tb)) if on)

    def note_of(tiling):
        note = (f"Matmul API: {M}x{K} @ {K}x{N}{trans} on {cores_phrase(tiling.used_core_num, t, tiling.objects_per_core)}, "
                f"base {tiling.base_m}x{tiling.base_n}x{tiling.base_k}; each C tile goes to UB (GetTensorC), the epilogue "
                "runs on it there, one GM write")
        if tiling.a_l1_bytes:
            note += (f"; each core's {tiling.single_core_m}x{K} block of A is read once into L1 (TSCM, "
                     f"{tiling.a_l1_bytes} B) for all its tile columns")
        if flat_m:
            note += f"; A's {' x '.join(str(d) for d in batch_dims)} batch matrices are consecutive rows of one {M}-row A"
        if batch > 1:
            axes = f" ({' x '.join(str(d) for d in batch_dims)} flattened)" if len(batch_dims) > 1 else ""
            note += f"; {batch} batch matrices{axes}, each core walks its block of every one"
        if row is not None:
            note += (f"; the row reductions run on whole rows of C: each tile is {tiling.base_m} rows x {N}, the cores "
                     "split M only")
        return note
    sched = CubeSchedule(fn, t, mm, epilogue, params, tiling, int(t.ub_bytes * ub_fraction), note_of(tiling))
    # the tilings the kernel pass `tiling` weighs (the first the lowering's own), each with its plan line
    sched.offers = tuple((c, note_of(c)) for c in [tiling] + [c for c in others if aligned(c) and c != tiling])
    sched.walk_memo = None if walk_key is None or known is not None else (WALK_CHOICES, walk_key)
    if known is not None:
        sched.tiling_choice = known[1]
    sched.row_epilogue = row
    sched.per_row_outputs = frozenset(per_row)
    sched.traffic = traffic
    # CANN's rule on the same buffers (no traffic): what the split is compared with (benchmarks/cube.py)
    sched.cann_tiling = placed(tile(traffic=None), None)
    sched.steps = steps
    sched.c_dtype = c_dtype
    sched.batch = batch
    sched.batch_a, sched.batch_b = batch_a, batch_b
    return sched


class Choices(Lru):
    """The tilings the pass `tiling` kept (CubeSchedule.adopt_kernel), remembered for the whole
    process: key -> (CubeTiling, TilingChoice or None, Target).  A compile's identical kernels (each
    block's matmuls of a model) and a function compiled again (a notebook's re-run, a test suite,
    a script that compiles per call) take the choice without the search and the walks, which are
    most of a cube kernel's compile (the walk of one candidate kernel ~0.3 ms, 2-7 per kernel).
    The key is everything the choice is a function of (`schedule_cube_kernel`'s walk_key: the
    kernel's structure, the target, the options, the layouts weighed; the module's constants --
    TILING_SLACK, OFFER_* -- are fixed); each entry holds its target, so the key's id(target) stays
    that target's while the entry lives.  At most `limit` entries: the least recently used go
    (fusedsl/lru.py)."""


WALK_CHOICES = Choices(1024)


def _structure(fn) -> tuple:
    """`fn` with its values numbered in order of appearance and its names left out: two kernels
    with the same structure lower to the same kernel up to names (the key of the pass `tiling`'s
    choice among a compile's identical matmul kernels)."""
    ids: dict = {}

    def ref(v):
        return ids.setdefault(id(v), len(ids))

    def attrs(op):
        a = op.attrs
        return repr(sorted(a.items()) if hasattr(a, "items") else a)
    key = [("param", p.kind, p.value.dtype.name, tuple(p.value.shape), ref(p.value)) for p in fn.params]
    key += [(op.name, attrs(op), tuple(ref(v) for v in op.operands),
             tuple((r.dtype.name, tuple(r.shape), ref(r)) for r in op.results)) for op in fn.ops]
    key.append(("results", tuple(ref(v) for v in fn.results)))
    return tuple(key)


# The int8 wrap of an int32 C row (cube_tile `_int8_wrap`): an int32 mask row, a float and a
# half row, each baseN (+ compare slack) elements
WRAP_ROW_BYTES = 4 + 4 + 2
# what the wrap runs on the vector unit: And on 16-bit lanes, int32 Adds and Duplicate, and the
# casts int32 -> float -> half -> int8 (exact for values in [-128, 127])
_WRAP_APIS = (("And", "int16_t"), ("Adds", "int32_t"), ("Duplicate", "int32_t"))
_WRAP_CASTS = (("int32_t", "float"), ("float", "half"), ("half", "int8_t"))


# int8 epilogue ops whose value, computed in half by the vector schedule, is the exact integer
# (|v| <= 256 for int8 operands): the printer wraps it to int8 as numpy does
# (cube_tile._half_wrap) instead of the saturating half -> int8 cast; one half row more
HALF_WRAP_OPS = frozenset({"add", "sub", "neg", "abs"})
HALF_WRAP_ROW_BYTES = 2
_HALF_WRAP_APIS = (("Adds", "half"), ("Muls", "half"), ("Maxs", "half"), ("Mins", "half"), ("Add", "half"))


def wraps_in_half(op: Op, t: Target) -> bool:
    """Whether the printer wraps this int8 epilogue op's half value to int8 exactly (module note)."""
    return (op.name in HALF_WRAP_OPS and op.result.dtype == dt.int8 and all(v.dtype == dt.int8 for v in op.operands)
            and all(t.supports(api, ty) for api, ty in _HALF_WRAP_APIS))


# int8 mul: the vector schedule multiplies in float32 (exact: |v| <= 16384) and narrows to half,
# which rounds past 2048; the printer wraps the float32 product to int8 first
# (cube_tile._float_wrap); one float row more
FLOAT_WRAP_ROW_BYTES = 4
_FLOAT_WRAP_APIS = (("Adds", "float"), ("Muls", "float"), ("Maxs", "float"), ("Mins", "float"), ("Add", "float"))


def wraps_in_float(op: Op, t: Target) -> bool:
    """Whether the printer wraps this int8 epilogue mul's float32 product to int8 exactly."""
    return (op.name == "mul" and op.result.dtype == dt.int8 and all(v.dtype == dt.int8 for v in op.operands)
            and all(t.supports(api, ty) for api, ty in _FLOAT_WRAP_APIS))


def wrap_row_bytes(epilogue, t: Target) -> int:
    """UB bytes per tile column of the rows the printer's exact int8 wraps of epilogue ops use."""
    return (HALF_WRAP_ROW_BYTES if any(wraps_in_half(op, t) for op in epilogue) else 0) + \
        (FLOAT_WRAP_ROW_BYTES if any(wraps_in_float(op, t) for op in epilogue) else 0)


def check_cube_operands(t: Target, a: dt.DType, b: dt.DType, op: Op, int8: bool = False) -> dt.DType:
    """The C tile's dtype for these operands: float32 where the chip's Matmul API multiplies them
    into float, int32 for int8 operands when `int8` (the matmul printer wraps the int32 sums to
    numpy's int8 result) and the chip has the int8 x int8 -> int32 form and the wrap's vector
    APIs; else a located ScheduleError.  Integer operands say what the cube can do with them
    and what the user can change: their result (numpy's rule: the operands' dtype, wrapping)
    is computed exactly by kernel(*arrays) on the CPU either way."""
    if any(c[:2] == (a.ascendc, b.ascendc) and c[3] == "float" for c in t.matmul_dtypes):
        return dt.float32
    int8_cube = any(c[:2] == ("int8_t", "int8_t") and c[3] == "int32_t" for c in t.matmul_dtypes)
    if int8 and int8_cube and a == dt.int8:
        missing = [f"{api} for {ty}" for api, ty in _WRAP_APIS if not t.supports(api, ty)]
        missing += [f"Cast {x} -> {y}" for x, y in _WRAP_CASTS if "CAST_NONE" not in t.cast_modes.get((x, y), ())]
        if not missing:
            return dt.int32
        raise ScheduleError(f"the int8 {op.name} cannot be printed for {t.name}: wrapping its int32 sums to int8 "
                            f"needs {', '.join(missing)}", loc=op.loc,
                            hint="kernel(*arrays) runs it exactly on the CPU")
    if not a.is_int:
        raise ScheduleError(f"{t.name}'s Matmul API has no {a.name} x {b.name} -> float32 form",
                            loc=op.loc, hint="cast the operands to float16")
    exact = ("float16 / float32 operands when every sum stays below 2**11 / 2**24 (exact there); "
             "kernel(*arrays) runs it exactly on the CPU as it is")
    if int8_cube and a == dt.int8:
        raise ScheduleError(f"the int8 {op.name} is not printed as Ascend C yet: {t.name}'s cube sums int8 x int8 "
                            "products in int32 exactly, and fusedsl prints that (with the wrap to numpy's int8 "
                            f"result) for matmul, not for {op.name}", loc=op.loc,
                            hint=f"to print it, use {exact}")
    cube_ints = sorted({c[0].removesuffix("_t") for c in t.matmul_dtypes if c[0].startswith(("int", "uint"))})
    have = (f"its integer product is {' and '.join(f'{c} x {c}' for c in cube_ints)} into int32" if cube_ints
            else "it has no integer product")
    raise ScheduleError(f"{t.name}'s cube has no {a.name} x {b.name} form for this {op.name} ({have}); a "
                        "multiply-accumulate over K on the vector unit is not printed", loc=op.loc,
                        hint=f"to print it, use int8 operands when the values fit in [-128, 127] (x.astype(np.int8)), or {exact}")


def epilogue_rows(fn, cube_op, epilogue, target: Target, varies) -> tuple[dict, int, int]:
    """The elementwise epilogue's per-op tile programs (each op scheduled as a one-op vector
    kernel, `varies(v)`: v varies along a tile row), the UB bytes per tile column of its one-row
    buffers (values and temporaries, reused by liveness; the cube op's value in its own dtype),
    and the elements Compare reads past a row (every row buffer has them)."""
    producer = {id(op.result): op for op in fn.ops}
    steps = {id(op): op_schedule(fn, op, producer, target, varies) for op in epilogue}
    kinds = {id(op.result): "row" for op in epilogue}
    kinds[id(cube_op.result)] = "row"
    _, counts = allocate_row_values(fn, kinds, epilogue, {id(v) for v in fn.results})
    pool = temp_pool([SimpleNamespace(sched=st[0]) for st in steps.values()])
    per_col = sum(d.itemsize * n for d, n in list(counts.items()) + list(pool.items()))
    if cube_op.result.dtype != dt.float32:
        per_col += cube_op.result.dtype.itemsize
    slack = max([st[0].slack_elems for st in steps.values()] + [0])
    return steps, per_col, slack


def side_shape(shape, out_shape, per_channel) -> bool:
    """Whether `shape`, right-aligned to the cube result's, is one value per channel: per column
    of C ([N], [1, N]) for a matmul (`per_channel` -1), per output channel ([K, 1, 1]) for a conv
    (`per_channel` 1). Such values vary along a tile's rows (matmul) or are one value per tile
    row (conv); epilogue ops on them alone (batch norm's rsqrt(var + eps) * gamma) run per row."""
    if len(shape) > len(out_shape):
        return False
    s = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    axis = per_channel % len(out_shape)
    if per_channel == 1 and all(d == 1 for d in s):
        return True   # a conv with one output channel: its per-channel values are single numbers
    return out_shape[axis] > 1 and all(d == (out_shape[i] if i == axis else 1) for i, d in enumerate(s))


def check_elementwise_epilogue(fn, cube_op, epilogue, per_channel: int = -1) -> None:
    """A located ScheduleError unless every epilogue op is elementwise over the cube op's result,
    or over per-channel values only (side_shape) and not a kernel result."""
    out_shape = tuple(cube_op.result.shape)
    returned = {id(v) for v in fn.results}
    for op in epilogue:
        shape = tuple(op.result.shape)
        side = side_shape(shape, out_shape, per_channel) and id(op.result) not in returned
        if not has_trait(op, ELEMENTWISE) or (shape != out_shape and not side):
            raise ScheduleError(f"{op.name} after the {cube_op.name} in {fn.name} is not an elementwise op over its "
                                f"{list(out_shape)} result; the Ascend C backend does not print that epilogue yet",
                                loc=op.loc, hint="this kernel still runs on the CPU executors (kernel(*arrays))")


# ---- an epilogue with last-axis reductions (softmax / layer_norm of the matmul's rows) ---------

def _row_epilogue(fn, mm, epilogue, target: Target, ub_fraction: float, flat_m: bool = False):
    """The epilogue as a row kernel whose first parameter is the matmul's value: its steps,
    per-row values and reductions are what cube_tile prints on each row of a C tile.
    A ScheduleError (at the op) when a reduction is not over the last axis of C."""
    rank = len(mm.result.shape)
    for op in epilogue:
        if has_trait(op, REDUCTION) and tuple(op.attr("axes")) != (rank - 1,):
            raise ScheduleError(f"{op.name} over axes {list(op.attr('axes'))} after the matmul in {fn.name}: only "
                                "reductions over the last axis (whole rows of C) are printed with a matmul",
                                loc=op.loc, hint="this kernel still runs on the CPU executors (kernel(*arrays))")
    if len(mm.result.shape) != 2 and not flat_m:
        raise ScheduleError(f"a row reduction after a batched matmul is not printed yet ({fn.name})", loc=mm.loc,
                            hint="this kernel still runs on the CPU executors (kernel(*arrays))")
    mmv = Value(mm.result.type, "mm")
    rename = {id(mm.result): mmv}
    ops = tuple(Op(op.name, tuple(rename.get(id(v), v) for v in op.operands), op.results, op.attrs, op.loc)
                for op in fn.ops if op is not mm)
    used = {id(v) for op in ops for v in op.operands} | {id(v) for v in fn.results}
    params = (Param(mmv),) + tuple(p for p in fn.params if id(p.value) in used)
    results = tuple(rename.get(id(v), v) for v in fn.results)
    sub = Function(f"{fn.name}_rows", params, ops, results, fn.loc)
    row = schedule_row_kernel(sub, target, ub_fraction)
    if row.passes is not None:
        raise ScheduleError(f"a row of the matmul's result in {fn.name} does not fit UB with its epilogue "
                            f"({row.single_need} bytes for one row)", loc=mm.loc,
                            hint="this kernel still runs on the CPU executors (kernel(*arrays))")
    return row   # its outputs: whole rows of C ("row") or one value per row ("rowscalar", [M] / [M, 1])


def row_epilogue_bytes(row, n: int, mm_dtype) -> int:
    """UB the per-row buffers of a row epilogue take besides the tile queues: the row values,
    temporaries and the float32 copy of a 16-bit row (one row each), the fold lanes, per-row
    scalar slots, and the matmul's value rounded to its dtype."""
    pad = _up(n, 32)
    return (pad + row.slack) * row.row_bytes + row.fixed_bytes + pad * mm_dtype.itemsize + 1024

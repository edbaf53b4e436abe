"""The attention kind's online softmax on the CPU: the S block's vector stage in two passes per row.

The attention kind's tile IR (lower/attention_tile.py `softmax`) handles the S block the way the
vector unit needs it: Muls by the scale over the block, then per row the mask row added, the
causal keys set to -inf, the max folded into 64 lanes and WholeReduceMax, Adds of -m; Exp over the
block; per row the sum folded and WholeReduceSum, l and O rescaled; P copied (or cast) out of the
block.  On a CPU each of those is a pass over the block (128 x 512 float32: 256 KB, in L2), and
they cost a fifth of the kernel.  llvm_kernel lowers the same statements here (`match` finds them,
`emit` writes them), row by row, the row staying in L1 between its two passes:

    pass 1   s = S[r, j] * scale (+ mask[r, j]) (-inf past the causal diagonal), stored back,
             the row max folded in a register
             m_new = max(m_old, max s) (a bool mask's all-masked row: -inf), m_use (0 for -inf),
             corr = exp(m_old - m_use)
    pass 2   p = exp(s - m_use) into P's row (cast to P's dtype), the row sum folded in a register
             l = l * corr + sum;  O[r] *= corr

Every value is what the tile IR's statements compute (the same float32 operations and `emit_exp`),
but the sums: the row sum adds in 16 lanes, then across them, where WholeReduceSum adds 64 lanes'
partial sums (the tile IR's order is one of many: numpy's is another); the max is order-free.
What is not matched (another form of the stage, a tensor whose state llvm_kernel tracks per access)
runs statement by statement as before.
"""
from __future__ import annotations


import numpy as np
from llvmlite import ir

from .. import dtypes as dt
from ..record import record
from ..tile.kernel import (CopyIn, DeQue, Dup, EnQue, For, Free, If, Let, MmGetC, MmIterate, MmSet, MmTail, Put,
                           Ref, Scalar, Sync, Vec, walk_nodes)
from .irgen import I64, carried_loop
from .stmts import F32, I32, LANES, mem_type as _mem, vec

__all__ = ["SoftmaxBlock", "emit", "fused_top", "match", "match_accumulate", "p_in_place"]

_INF = float("inf")


@record
class SoftmaxBlock:
    """The pieces of one S block's softmax (the tile IR's expressions, evaluated where emitted)."""
    sc: str                 # the S block (GetTensorC's tensor), rows `ld` apart
    scale: float
    stat: str               # m and l of the item's rows
    m_index: object         # stat's index of row r's m (an expression of r)
    l_index: object
    o: Ref                  # O's row r (offset an expression of r), `dv` elements rescaled
    dv: object
    p: Ref                  # P's row r
    p_cast: str | None      # P's cast mode (None: float32, a copy)
    mask: CopyIn | None     # the mask row's copy (gm, offset of row r)
    mask_floor: float | None   # a bool mask's all-masked threshold (max below it: -inf)
    causal: tuple | None    # (condition, first masked key) expressions of row r
    nodes: int              # statements replaced
    diag: tuple | None      # causal: (first query, first key) expressions (keys from query + 1 on are -inf)
    from_product: bool = False   # S already scaled and its rows' maxima in lw.top_buf (`fused_top`)


def _apis(nodes) -> list[str]:
    return [n.api for n in walk_nodes(nodes) if isinstance(n, Vec)]


def _block_loop(n, api: str, tensor: str):
    """`For i over rows * ld: Vec api tensor[i] <- tensor[i]`: the block-wide Muls / Exp."""
    if not (isinstance(n, For) and len(n.body) == 1 and isinstance(n.body[0], Vec)):
        return None
    v = n.body[0]
    if v.api != api or v.dst.tensor != tensor or len(v.srcs) != 1 or v.srcs[0].tensor != tensor:
        return None
    return v


def match(lw, nodes: list, i: int) -> SoftmaxBlock | None:
    """The softmax block starting at nodes[i] (the scale's loop over S), or None."""
    if i + 8 > len(nodes) or not isinstance(nodes[i], For) or not nodes[i].body:
        return None
    first = nodes[i].body[0]
    if not isinstance(first, Vec) or first.api != "Muls" or not isinstance(first.scalar, float):
        return None
    sc = first.dst.tensor
    if not any(mm.name == "qk" for mm in lw.k.matmuls) or _block_loop(nodes[i], "Muls", sc) is None:
        return None
    rows1, sync1, exp_loop, exp_one, sync2, rows2, cast = nodes[i + 1:i + 8]
    if not (isinstance(rows1, For) and rows1.var == "r" and isinstance(sync1, Sync)
            and _block_loop(exp_loop, "Exp", sc) is not None and isinstance(exp_one, Vec) and exp_one.api == "Exp"
            and isinstance(sync2, Sync) and isinstance(rows2, For) and rows2.var == "r"
            and isinstance(cast, If) and len(cast.orelse) == 1 and isinstance(cast.orelse[0], For)):
        return None
    # pass 1's statements: [mask row], [causal], m_old, the max fold, [bool floor], m_new, m_use, Adds, Puts
    body = list(rows1.body)
    mask = next((n for n in body if isinstance(n, CopyIn)), None)
    mask_chain = []
    if mask is not None:
        md = lw.tensor_dtype(mask.tensor)
        mask_chain = {dt.bool_: ["Cast", "Cast", "Adds", "Muls", "Add"], dt.float16: ["Cast", "Add"],
                      dt.float32: ["Muls", "Add"]}.get(md)
        if mask_chain is None or mask.rows != 1:
            return None
    causal = diag = None
    conds = [n for n in body if isinstance(n, If) and any(isinstance(d, Dup) for d in walk_nodes(n.then))]
    if conds:   # If(kb + cols > pos: Let first ..., the keys from `first` set to -inf)
        lets = [n for n in conds[0].then if isinstance(n, Let) and n.var == "first"]
        if len(conds) != 1 or not lets:
            return None
        causal = (conds[0].cond, lets[0].expr)
        # If(kb + cols > pos) with pos = r0 + r + 1, first = pos - min(kb, pos): key j of row r is
        # masked when kb + j >= r0 + r + 1, i.e. j - r >= r0 + 1 - kb (the product's `diag`)
        pos = lets[0].expr[1] if lets[0].expr[0] == "-" else None
        if (isinstance(pos, tuple) and pos[0] == "+" and pos[2] == 1 and isinstance(pos[1], tuple)
                and pos[1][0] == "+" and pos[1][2] == "r" and lets[0].expr[2] == ("min", causal[0][1][1], pos)
                and causal[0] == (">", (causal[0][1][0], causal[0][1][1], "cols"), pos)):
            diag = (pos[1][1], causal[0][1][1])
    if sum(isinstance(n, If) for n in body) != 1 + len(conds):   # the max fold's If, the causal one
        return None
    scalars = {n.var: n for n in body if isinstance(n, Scalar)}
    floor = None
    if "topOrInf" in scalars:   # ('sel', ('<', raw, floor), -inf, raw)
        e = scalars["topOrInf"].expr
        if not (e[0] == "sel" and e[1][0] == "<" and e[2] == -_INF):
            return None
        floor = float(e[1][2])
    puts = [n for n in body if isinstance(n, Put)]
    want1 = mask_chain + ["Max", "Max", "Max", "WholeReduceMax", "Adds"]
    if _apis(body) != want1 or "mOld" not in scalars or len(puts) != 2 or puts[0].expr != "mNew":
        return None
    m_get = scalars["mOld"].expr   # ('get', stat, index)
    if m_get[0] != "get" or puts[0].tensor != m_get[1] or puts[0].index != m_get[2]:
        return None
    # pass 2: the sum fold, l and O
    body2 = list(rows2.body)
    l_put = [n for n in body2 if isinstance(n, Put)]
    o_muls = [n for n in body2 if isinstance(n, Vec) and n.api == "Muls"]
    if _apis(body2) != ["Add", "Add", "Add", "WholeReduceSum", "Muls"] or len(l_put) != 1 or len(o_muls) != 1 \
            or l_put[0].tensor != m_get[1]:
        return None
    # P's rows: a copy (Muls by 1) or a Cast of S's row
    pv = cast.orelse[0].body
    if len(pv) != 1 or not isinstance(pv[0], Vec) or pv[0].srcs[0].tensor != sc:
        return None
    pcopy = pv[0]
    if pcopy.api == "Cast":
        p_cast = pcopy.mode
    elif pcopy.api == "Muls" and pcopy.scalar == 1.0 and lw.tensor_dtype(pcopy.dst.tensor) == dt.float32:
        p_cast = None
    else:
        return None
    o = o_muls[0]
    # tensors whose buffers llvm_kernel tracks per access (aliased GM rows, guards) keep the statements
    tracked = lw.strided | lw.in_guarded | set(lw.out_aliased)
    if any(lw.tensor_queue.get(t) in tracked for t in (sc, pcopy.dst.tensor, o.dst.tensor, m_get[1])):
        return None
    if lw.tensor_dtype(sc) != dt.float32 or lw.tensor_dtype(o.dst.tensor) != dt.float32 \
            or lw.tensor_dtype(m_get[1]) != dt.float32:
        return None
    return SoftmaxBlock(sc, first.scalar, m_get[1], m_get[2], l_put[0].index, o.dst, o.count, pcopy.dst, p_cast,
                        mask, floor, causal, 8, diag, getattr(lw, "attn_top", False))


def _blocks(lw) -> tuple[list[SoftmaxBlock], int]:
    """The kernel's softmax blocks (`match`) and its Q K^T Iterates."""
    found, iterates = [], 0

    def scan(body):
        nonlocal iterates
        body = list(body)
        for i, n in enumerate(body):
            blk = match(lw, body, i)
            if blk is not None:
                found.append(blk)
            if isinstance(n, MmIterate) and n.mm == "qk":
                iterates += 1
            for sub in ((n.body,) if isinstance(n, (For, MmIterate)) else (n.then, n.orelse) if isinstance(n, If)
                        else ()):
                scan(sub)
    for st in lw.k.stages:
        scan(st.body)
    scan(lw.k.process or ())
    return found, iterates


def p_in_place(lw) -> bool:
    """Whether P is written over S, rows `ld` apart, and the P V product reads it there (float32,
    a 16-bit P as the float32 of its rounded values: what the product would widen it to): every
    P V Iterate's A is a matched block's P (MmSet A from P's first element, A not transposed)."""
    mm = lw.mms.get("pv")
    if mm is None or mm.a.transpose or mm.a.dtype not in (dt.float32, dt.float16, dt.bfloat16):
        return False
    found, iterates = _blocks(lw)
    ps = {b.p.tensor for b in found}
    sets = [n for n in lw.nodes if isinstance(n, MmSet) and n.mm == "pv" and n.which == "A"]
    # (a chip's plan whose P goes to a GM workspace of the same name sets A from GM: not matched)
    return bool(found) and len(found) == iterates and len(ps) == 1 and len(sets) == len(found) \
        and all(n.src in ps and n.src not in lw.gms and n.offset == 0 for n in sets)


def first_block(lw) -> SoftmaxBlock:
    return _blocks(lw)[0][0]


def fused_top(lw) -> bool:
    """Whether the Q K^T product scales S, sets its causal keys to -inf and takes its rows' maxima
    as it stores it (tiled_product mode ROW_MAX), so that the softmax's first pass goes: every S
    block's softmax matched, none with a mask (added to S after the product), Q K^T of float32
    operands or float16 ones never in NZ (widened by vector loops), K read transposed (the panel
    product)."""
    mm = lw.mms.get("qk")
    if mm is None or mm.a.transpose or not mm.b.transpose or \
            not all(d == dt.float32 or (d == dt.float16 and not lw.nz) for d in (mm.a.dtype, mm.b.dtype)):
        return False
    found, iterates = _blocks(lw)
    return bool(found) and len(found) == iterates and len({(b.scale, b.diag) for b in found}) == 1 \
        and all(b.mask is None and (b.causal is None or b.diag is not None) for b in found)


def emit(lw, blk: SoftmaxBlock) -> None:
    """The block's softmax (module doc) at the lowering's builder."""
    b, em = lw.b, lw._splat_em()
    c64 = lambda x: ir.Constant(I64, x)   # noqa: E731
    vf = vec(F32, LANES)
    zero, ninf = em.splat(0.0, F32), em.splat(-_INF, F32)
    scale = em.splat(float(np.float32(blk.scale)), F32)
    iota = ir.Constant(vec(I64, LANES), [ir.Constant(I64, j) for j in range(LANES)])
    rows, cols, ld = lw.ev_i64("rows"), lw.ev_i64("cols"), lw.ev_i64("ld")
    sc = lw.tensor_base(blk.sc)
    mask_d = lw.tensor_dtype(blk.mask.tensor) if blk.mask is not None else None
    mask_off = None
    if mask_d == dt.bool_:   # (x - 1) * 3e38 of the Cast 0 / 1, in float32 as the chain computes it
        mask_off = float(np.float32(-1.0) * np.float32(3e38))

    def lanes_below(start, n):
        return b.icmp_signed("<", b.add(em.splat_value(start), iota), em.splat_value(n))

    def row(r, _):
        b.store(b.trunc(r, I32), lw.slots["r"])
        srow = b.gep(sc, [b.mul(b.mul(r, ld), c64(4))], source_etype=ir.IntType(8))
        mrow = None
        if blk.mask is not None:
            mrow = b.gep(lw.gm_ptr[blk.mask.gm], [lw.ev_i64(blk.mask.offset)], source_etype=_mem(mask_d))
        limit = cols   # keys from `limit` on are past the causal diagonal
        if blk.causal is not None:
            cond = lw.truth(lw.ev(blk.causal[0]))
            limit = b.select(cond, lw.ev_i64(blk.causal[1]), cols)

        def scores(j, vmax, mask):
            x = lw.vload(srow, F32, 4, j, mask)
            x = b.fmul(x, scale)
            if mrow is not None:
                mv = lw.vload(mrow, _mem(mask_d), mask_d.itemsize, j, mask)
                if mask_d == dt.bool_:
                    add = b.select(b.icmp_unsigned("!=", mv, ir.Constant(mv.type, None)), zero,
                                   em.splat(mask_off, F32))
                else:
                    add = em.to_reg(mv, mask_d)
                x = b.fadd(x, add)
            if blk.causal is not None:
                x = b.select(b.icmp_signed(">=", b.add(em.splat_value(j), iota), em.splat_value(limit)), ninf, x)
            lw.vstore(x, srow, F32, 4, j, mask)
            if mask is not None:
                x = b.select(mask, x, ninf)
            return em.fmax(x, vmax)

        if blk.from_product:   # S scaled, its rows' maxima in 16 lanes each (tiled_product ROW_MAX)
            vmax = b.load(b.gep(lw.top_buf, [b.mul(r, c64(LANES))], source_etype=F32), typ=vf, align=4)
        else:
            end, (vmax,) = carried_loop(b, c64(0), cols, LANES, [ninf],
                                        lambda j, c: [scores(j, c[0], None)], "sm.max", whole_steps=True)
            tail = b.icmp_signed("<", end, cols)
            vmax = _masked_tail(b, tail, lambda: scores(end, vmax, lanes_below(end, cols)), vmax)
        top = _across(b, vmax, em.fmax)
        if blk.mask_floor is not None:
            top = b.select(b.fcmp_ordered("<", top, ir.Constant(F32, blk.mask_floor)), ir.Constant(F32, -_INF), top)
        stat = lw.tensor_base(blk.stat)
        m_ptr = b.gep(stat, [lw.ev_i64(blk.m_index)], source_etype=F32)
        l_ptr = b.gep(stat, [lw.ev_i64(blk.l_index)], source_etype=F32)
        m_old = b.load(m_ptr, typ=F32)
        m_new = b.select(b.fcmp_ordered(">", top, m_old), top, m_old)   # ('fmax', mOld, top)
        m_use = b.select(b.fcmp_ordered("==", m_new, ir.Constant(F32, -_INF)), ir.Constant(F32, 0.0), m_new)
        b.store(m_new, m_ptr)
        corr = b.extract_element(em.exp(em.splat_value(b.fsub(m_old, m_use))), ir.Constant(I32, 0))
        shift = em.splat_value(m_use)
        p_at = lw.ref_ptr(blk.p)
        in_place = getattr(lw, "attn_p", None) is not None

        def probs(j, acc, mask):
            p = em.exp(b.fsub(lw.vload(srow, F32, 4, j, mask), shift))
            stored = p if blk.p_cast is None else lw.vconvert(p, dt.float32, p_at[3], blk.p_cast)
            if in_place:   # over S, in float32 (P V reads it there: lw.attn_p)
                lw.vstore(stored, srow, F32, 4, j, mask)
            else:
                lw.store_ref(p_at, stored, j, mask)
            return b.fadd(acc, p if mask is None else b.select(mask, p, zero))

        end, (acc,) = carried_loop(b, c64(0), cols, LANES, [zero],
                                   lambda j, c: [probs(j, c[0], None)], "sm.exp", whole_steps=True)
        acc = _masked_tail(b, b.icmp_signed("<", end, cols), lambda: probs(end, acc, lanes_below(end, cols)), acc)
        total = _across(b, acc, b.fadd)
        b.store(b.fadd(b.fmul(b.load(l_ptr, typ=F32), corr), total), l_ptr)
        o_at = lw.ref_ptr(blk.o)
        factor = em.splat_value(corr)
        lw.vloop(lw.ev_i64(blk.dv),
                 lambda off, mask: lw.vstore(b.fmul(lw.vload(o_at[0], F32, 4, off, mask), factor), o_at[0], F32, 4,
                                             off, mask))
        return []

    carried_loop(b, c64(0), rows, 1, [], row, "sm.row")
    if getattr(lw, "attn_p", None) is not None:   # where P V's A is: S's buffer, rows ld apart
        b.store(sc, lw.attn_p[0])
        b.store(ld, lw.attn_p[1])


def _masked_tail(b, cond, body, value):
    """value, or body()'s when cond (the row's last, partial vector)."""
    pre = b.block
    with b.if_then(cond):
        new = body()
        inner = b.block
    phi = b.phi(value.type)
    phi.add_incoming(value, pre)
    phi.add_incoming(new, inner)
    return phi


def _across(b, v, combine):
    """combine over the lanes of v, halving: lanes i and i + n/2 first."""
    n = v.type.count
    while n > 1:
        n //= 2
        lo = b.shuffle_vector(v, v, ir.Constant(vec(I32, n), list(range(n))))
        hi = b.shuffle_vector(v, v, ir.Constant(vec(I32, n), list(range(n, 2 * n))))
        v = combine(lo, hi)
    return b.extract_element(v, ir.Constant(I32, 0))


def match_accumulate(lw, nodes: list, i: int) -> str | None:
    """O's tensor when nodes[i:i + 5] are the P V product's Iterate into a tile of C and O += that
    tile (Iterate / GetTensorC acc, EnQue, DeQue, For O += acc over rows * Dv, Free), O's rows the
    product's (Dv a multiple of 8): the product then accumulates into O itself (tiled_product
    mode ACCUMULATE; O's elements start the fma chains instead of being added to their sums)."""
    if i + 5 > len(nodes):
        return None
    it, enq, deq, loop, free = nodes[i:i + 5]
    if not (isinstance(it, MmIterate) and it.mm == "pv" and len(it.body) == 1 and isinstance(it.body[0], MmGetC)
            and not it.body[0].placed and isinstance(enq, EnQue) and isinstance(deq, DeQue) and isinstance(free, Free)):
        return None
    acc = it.body[0].tensor
    if not (isinstance(loop, For) and len(loop.body) == 1 and isinstance(loop.body[0], Vec) and loop.start == 0
            and enq.tensor == acc and deq.tensor == acc and free.tensor == acc):
        return None
    v = loop.body[0]
    o = v.dst.tensor
    if not (v.api == "Add" and v.dst.offset == "i" and len(v.srcs) == 2 and v.srcs[0] == v.dst
            and v.srcs[1] == Ref(acc, "i") and isinstance(loop.end, tuple) and loop.end[:2] == ("*", "rows")):
        return None
    tails = [n for n in lw.nodes if isinstance(n, MmTail) and n.mm == "pv"]
    mm = lw.mms["pv"]
    if not tails or any(n.m != "rows" or n.n != loop.end[2] for n in tails) or lw.tensor_dtype(o) != dt.float32 \
            or lw.tensor_queue.get(o) in (lw.strided | lw.in_guarded | set(lw.out_aliased)) \
            or mm.c.dtype != dt.float32 or mm.a.transpose or mm.b.transpose:
        return None
    return o

"""A float32 block product in register tiles, for the attention kind's Matmul objects.

llvm_kernel.py multiplies a Matmul object's block with cblas_sgemm.  The attention kind's two
products are each skinny on one side -- S = Q K^T sums over the head size (64, 128), O += P V has the
head size as N -- and sgemm packs both operands into its own panels on every call (one per KV block):
on [1, 8, 2730, 64] float32 the sgemm calls alone, one thread, took 1.3x the per-kind attention
executor's whole kernel (attention.py, whose register tiles are the same shape as these).  Here the
product reads A where it lies and B in rows (a B read transposed -- attention's K -- is first
transposed into the Matmul object's B block in 16 x 16 register tiles, once per Iterate: k x n
elements for an m x k x n product):

    for each panel of NR = 2 x 16 columns of C:
        for each tile of MR rows:          acc[MR][2] = 0
            for p in 0 .. k:               b0, b1 = B[p, panel]   (masked past n)
                                           acc[r] += splat(A[row r, p]) * (b0, b1)   (fma)
            C[rows, panel] = acc           (masked past n)

MR = 8 rows with AVX-512 (16 accumulators, two B vectors and the broadcast: 19 of the 32 zmm
registers; 12 x 32 and 6 x 64 measured no better), 3 without (each <16 x float> is two ymm
registers).  The last tile's rows past m read and write row m - 1 (the same values again) instead
of a scalar tail.  Each C element is one fused multiply-add chain in p order: the sums are not
sgemm's (the attention tests' tolerances hold; the interpreter, kernel_interp.py, keeps sgemm).
"""
from __future__ import annotations

from llvmlite import ir

from .irgen import I1, I64, PTR, VOID, carried_loop
from .mathlib import VectorConsts
from .register_transpose import network, network_columns
from .stmts import F32, I32, LANES

__all__ = ["PRODUCT", "PACK", "product_function", "pack_function"]

PRODUCT = "fusedsl_tiled_product"
PACK = "fusedsl_transpose_pack"
NR = 2 * LANES


def _c(x) -> ir.Constant:
    return ir.Constant(I64, int(x))


def _lanes_mask(b, start, limit):
    """<16 x i1>: start + lane < limit."""
    iota = ir.Constant(ir.VectorType(I64, LANES), [ir.Constant(I64, j) for j in range(LANES)])
    vt = ir.VectorType(I64, LANES)
    undef = ir.Constant(vt, ir.Undefined)
    zeros = ir.Constant(ir.VectorType(I32, LANES), [0] * LANES)

    def splat(x):
        return b.shuffle_vector(b.insert_element(undef, x, ir.Constant(I32, 0)), undef, zeros)
    return b.icmp_signed("<", b.add(splat(start), iota), splat(limit))


def product_function(module: ir.Module, kc: VectorConsts, wide: bool) -> ir.Function:
    """`void fusedsl_tiled_product(i64 m, i64 n, i64 k, ptr a, i64 lda, ptr b, i64 ldb, ptr c)`:
    C[m x n] (rows n apart) = A[m x k] (rows lda apart) @ B[k x n] (rows ldb apart), float32
    (module doc).  Defined once per module."""
    existing = module.globals.get(PRODUCT)
    if existing is not None:
        return existing
    fn = ir.Function(module, ir.FunctionType(VOID, [I64, I64, I64, PTR, I64, PTR, I64, PTR]), PRODUCT)
    fn.attributes.add("nounwind")
    m, n, k, a, lda, bp, ldb, c = fn.args
    for p in (a, bp, c):
        p.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    mr = 8 if wide else 3
    vf = kc.f
    masked_load = kc.intrinsic("llvm.masked.load.v16f32.p0", vf, [PTR, I32, ir.VectorType(I1, LANES), vf])
    masked_store = kc.intrinsic("llvm.masked.store.v16f32.p0", VOID, [vf, PTR, I32, ir.VectorType(I1, LANES)])
    zero = kc.fc(0.0)
    last = b.sub(m, _c(1))

    def splat(x):
        undef = ir.Constant(vf, ir.Undefined)
        one = b.insert_element(undef, x, ir.Constant(I32, 0))
        return b.shuffle_vector(one, undef, ir.Constant(ir.VectorType(I32, LANES), [0] * LANES))

    def panel(j0, _):
        masks = [_lanes_mask(b, b.add(j0, _c(LANES * t)), n) for t in range(2)]

        def tile(i0, _):
            rows = [b.add(i0, _c(r)) for r in range(mr)]
            rows = [b.select(b.icmp_signed("<", r, m), r, last) for r in rows]
            a_rows = [b.gep(a, [b.mul(r, lda)], source_etype=F32) for r in rows]

            def step(p, acc):
                brow = b.gep(bp, [b.add(b.mul(p, ldb), j0)], source_etype=F32)
                bv = [b.call(masked_load, [b.gep(brow, [_c(LANES * t)], source_etype=F32), ir.Constant(I32, 4),
                                           masks[t], zero]) for t in range(2)]
                new = []
                for r in range(mr):
                    x = splat(b.load(b.gep(a_rows[r], [p], source_etype=F32), typ=F32, align=4))
                    new += [kc.fma(b, x, bv[t], acc[2 * r + t]) for t in range(2)]
                return new
            _, acc = carried_loop(b, _c(0), k, 1, [zero] * (2 * mr), step, "tp.k")
            for r in range(mr):
                crow = b.gep(c, [b.add(b.mul(rows[r], n), j0)], source_etype=F32)
                for t in range(2):
                    b.call(masked_store, [acc[2 * r + t], b.gep(crow, [_c(LANES * t)], source_etype=F32),
                                          ir.Constant(I32, 4), masks[t]])
            return []
        carried_loop(b, _c(0), m, mr, [], tile, "tp.m")
        return []
    carried_loop(b, _c(0), n, NR, [], panel, "tp.n")
    b.ret_void()
    return fn


def pack_function(module: ir.Module) -> ir.Function:
    """`void fusedsl_transpose_pack(ptr src, i64 ld, i64 rows, i64 cols, ptr dst)`: dst[c * rows + r] =
    src[r * ld + c] for r < rows, c < cols (float32): B = K^T for the product, in 16 x 16 register
    tiles (register_transpose.network), the edges element by element.  Defined once per module."""
    existing = module.globals.get(PACK)
    if existing is not None:
        return existing
    fn = ir.Function(module, ir.FunctionType(VOID, [PTR, I64, I64, I64, PTR]), PACK)
    fn.attributes.add("nounwind")
    src, ld, rows, cols, dst = fn.args
    src.add_attribute("noalias")
    dst.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    T = LANES
    vt = ir.VectorType(F32, T)
    stages, order = network(4), network_columns(4)
    t64 = _c(T)
    full_r = b.mul(b.udiv(rows, t64), t64)
    full_c = b.mul(b.udiv(cols, t64), t64)

    def element(r, c):
        v = b.load(b.gep(src, [b.add(b.mul(r, ld), c)], source_etype=F32), typ=F32, align=4)
        b.store(v, b.gep(dst, [b.add(b.mul(c, rows), r)], source_etype=F32), align=4)

    def band(r0, _):
        def tile(c0, _):
            regs = [b.load(b.gep(src, [b.add(b.mul(b.add(r0, _c(i)), ld), c0)], source_etype=F32), typ=vt, align=4)
                    for i in range(T)]
            for step, lo, hi in stages:
                nxt = list(regs)
                for i in range(T):
                    if i & step:
                        continue
                    nxt[i] = b.shuffle_vector(regs[i], regs[i + step], ir.Constant(ir.VectorType(I32, T), lo))
                    nxt[i + step] = b.shuffle_vector(regs[i], regs[i + step], ir.Constant(ir.VectorType(I32, T), hi))
                regs = nxt
            for j, col in enumerate(order):
                b.store(regs[j], b.gep(dst, [b.add(b.mul(b.add(c0, _c(col)), rows), r0)], source_etype=F32), align=4)
            return []
        carried_loop(b, _c(0), full_c, T, [], tile, "pk.c")

        def edge(r, _):
            carried_loop(b, full_c, cols, 1, [], lambda c, _: element(r, c) or [], "pk.ce")
            return []
        carried_loop(b, r0, b.add(r0, t64), 1, [], edge, "pk.re")
        return []
    carried_loop(b, _c(0), full_r, T, [], band, "pk.r")

    def tail(r, _):
        carried_loop(b, _c(0), cols, 1, [], lambda c, _: element(r, c) or [], "pk.te")
        return []
    carried_loop(b, full_r, rows, 1, [], tail, "pk.tr")
    b.ret_void()
    return fn

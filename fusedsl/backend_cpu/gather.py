"""Strided 4-byte copies, many in one native call: `copy_list`.

numpy's copyto between strided 4-D views costs ~20 ns per innermost run of the copy; the
windows a convolution gathers (conv_sparse.py) have runs of a few dozen elements, so numpy
spent ~2 ms gathering 1.3 M floats (45 windows of [32, 2, 28, 16]).  Here every copy of a list
is one iteration of a JIT loop nest in one foreign call: a run with unit strides on both sides
is an llvm.memcpy, other runs an element loop.
"""
from __future__ import annotations

from llvmlite import ir

from .irgen import I64, PTR, carried_loop, kernel_function
from .launch import compiled_once, table_call

SYMBOL = "fusedsl_copy_list"
_WORDS = 14    # per copy: src, dst, A, B, C, D, then the element strides sa..sd of src, da..dd of dst
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I1 = ir.IntType(1)


def _ir() -> str:
    module = ir.Module(name="copy_list")
    fn, b = kernel_function(module, SYMBOL)
    memcpy = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, PTR, I64, I1]), "llvm.memcpy.p0.p0.i64")
    first, end, table = fn.args[0], fn.args[1], fn.args[2]
    one = ir.Constant(I64, 1)

    def job(i):
        base = b.mul(i, ir.Constant(I64, _WORDS))
        w = [b.load(b.gep(table, [b.add(base, ir.Constant(I64, j))], source_etype=I64), typ=I64) for j in range(_WORDS)]
        src, dst = b.inttoptr(w[0], PTR), b.inttoptr(w[1], PTR)
        n_a, n_b, n_c, n_d = w[2:6]
        sa, sb, sc, sd, da, db, dc, dd = w[6:14]
        unit = b.and_(b.icmp_unsigned("==", sd, one), b.icmp_unsigned("==", dd, one))
        nbytes = b.mul(n_d, ir.Constant(I64, 4))

        def loop_a(a):
            def loop_b(bb):
                def loop_c(c):
                    so = b.add(b.add(b.mul(a, sa), b.mul(bb, sb)), b.mul(c, sc))
                    do = b.add(b.add(b.mul(a, da), b.mul(bb, db)), b.mul(c, dc))
                    sp = b.gep(src, [so], source_etype=I32)
                    dp = b.gep(dst, [do], source_etype=I32)
                    with b.if_else(unit) as (then, other):
                        with then:
                            b.call(memcpy, [dp, sp, nbytes, ir.Constant(I1, 0)])
                        with other:
                            def elem(d):
                                x = b.load(b.gep(sp, [b.mul(d, sd)], source_etype=I32), typ=I32)
                                b.store(x, b.gep(dp, [b.mul(d, dd)], source_etype=I32))
                            carried_loop(b, ir.Constant(I64, 0), n_d, 1, [], lambda d, _: elem(d) or [], "d")
                carried_loop(b, ir.Constant(I64, 0), n_c, 1, [], lambda c, _: loop_c(c) or [], "c")
            carried_loop(b, ir.Constant(I64, 0), n_b, 1, [], lambda x, _: loop_b(x) or [], "b")
        carried_loop(b, ir.Constant(I64, 0), n_a, 1, [], lambda a, _: loop_a(a) or [], "a")

    carried_loop(b, first, end, 1, [], lambda i, _: job(i) or [], "job")
    b.ret_void()
    return str(module)


_function = compiled_once(lambda: _ir(), SYMBOL)


def copy_list(pairs):
    """A callable doing np.copyto(dst, src) for every (dst, src) pair in one native call: views
    of up to 4 axes of the same shape, both of a 4-byte dtype (float32 / int32), any strides
    that are whole elements.  Addresses are read now: the arrays must stay alive and in place."""
    rows = []
    for dst, src in pairs:
        if dst.shape != src.shape or dst.ndim > 4 or dst.itemsize != 4 or src.itemsize != 4 \
                or any(s % 4 for s in dst.strides + src.strides):
            raise ValueError("copy_list takes same-shaped 4-byte views of at most 4 axes")
        pad = 4 - dst.ndim
        shape = (1,) * pad + dst.shape
        ss = (0,) * pad + tuple(s // 4 for s in src.strides)
        ds = (0,) * pad + tuple(s // 4 for s in dst.strides)
        if 0 in shape:
            continue
        rows.append([src.ctypes.data, dst.ctypes.data, *shape, *ss, *ds])
    return table_call(_function(), rows)

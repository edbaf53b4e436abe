"""LLVM IR building blocks every CPU lowering shares: the kernel function of the launch
convention (launch.py), loops with carried values, masked vector loads and stores.

The one lowering of the tile IR (llvm_kernel.py, with tiled_product.py and attention_softmax.py)
builds its loops and memory accesses here.
"""
from __future__ import annotations

import re

from llvmlite import ir

from .. import dtypes as dt
from .stmts import I32, LANES, mem_type, vec

I1 = ir.IntType(1)
I64 = ir.IntType(64)
PTR = ir.PointerType()
VOID = ir.VoidType()


def vname(vt: ir.VectorType) -> str:
    """The intrinsic-name suffix of a vector type, e.g. v16f32."""
    e = vt.element
    if isinstance(e, ir.IntType):
        return f"v{vt.count}i{e.width}"
    return f"v{vt.count}" + {"float": "f32", "half": "f16", "double": "f64"}[str(e)]


def kernel_function(module: ir.Module, name: str) -> tuple[ir.Function, ir.IRBuilder]:
    """`void name(i64 block_begin, i64 block_end, ptr noalias args, ptr noalias scratch)`, the
    calling convention launch.py runs every kernel with, and a builder at its entry."""
    fn = ir.Function(module, ir.FunctionType(VOID, [I64, I64, PTR, PTR]), name)
    fn.attributes.add("nounwind")
    fn.args[2].add_attribute("noalias")
    fn.args[3].add_attribute("noalias")
    return fn, ir.IRBuilder(fn.append_basic_block("entry"))


def branch_values(b: ir.IRBuilder, cond, then, otherwise) -> list:
    """`cond ? then() : otherwise()` for lists of values (one per position, of the same types): each
    function emits its branch; the results are joined by phis at the merge."""
    with b.if_else(cond) as (yes, no):
        with yes:
            a = then()
            a_at = b.block
        with no:
            c = otherwise()
            c_at = b.block
    out = []
    for x, y in zip(a, c):
        phi = b.phi(x.type)
        phi.add_incoming(x, a_at)
        phi.add_incoming(y, c_at)
        out.append(phi)
    return out


def carried_loop(b: ir.IRBuilder, start, limit, step, carried, body, tag: str, whole_steps: bool = False):
    """`for (i = start; i < limit; i += step) carried = body(i, carried)`; with `whole_steps` the
    loop runs while a whole step fits (i + step <= limit), leaving the rest to the caller.
    `step` is an int or an i64 value.  Returns (i, carried) after the loop."""
    fn = b.function
    step = step if isinstance(step, ir.Value) else ir.Constant(I64, step)
    pre = b.block
    head = fn.append_basic_block(f"{tag}.head")
    loop = fn.append_basic_block(f"{tag}.body")
    done = fn.append_basic_block(f"{tag}.done")
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64, name=tag)
    i.add_incoming(start, pre)
    phis = []
    for c in carried:
        phi = b.phi(c.type)
        phi.add_incoming(c, pre)
        phis.append(phi)
    more = b.icmp_signed("<=", b.add(i, step), limit) if whole_steps else b.icmp_signed("<", i, limit)
    b.cbranch(more, loop, done)
    b.position_at_end(loop)
    new = body(i, list(phis))
    latch = b.block
    i.add_incoming(b.add(i, step), latch)
    for phi, c in zip(phis, new):
        phi.add_incoming(c, latch)
    b.branch(head)
    b.position_at_end(done)
    return i, phis


def masked_load(k, b: ir.IRBuilder, ptr, offset, d: dt.DType, mask):
    """LANES elements of dtype d at ptr[offset] in memory form; with a <LANES x i1> mask the
    absent lanes are not read (and hold zero)."""
    mt = mem_type(d)
    vt = vec(mt, LANES)
    p = b.gep(ptr, [offset], source_etype=mt)
    if mask is None:
        return b.load(p, typ=vt, align=d.itemsize)
    fn = k.intrinsic(f"llvm.masked.load.{vname(vt)}.p0", vt, [PTR, I32, vec(I1, LANES), vt])
    return b.call(fn, [p, ir.Constant(I32, d.itemsize), mask, ir.Constant(vt, None)])


def masked_store(k, b: ir.IRBuilder, value, ptr, offset, d: dt.DType, mask, nontemporal=None) -> None:
    """Store LANES elements at ptr[offset]; with a mask only its lanes; `nontemporal` (the
    module's metadata node) streams a whole vector past the cache."""
    mt = mem_type(d)
    vt = vec(mt, LANES)
    p = b.gep(ptr, [offset], source_etype=mt)
    if mask is None:
        inst = b.store(value, p, align=d.itemsize * LANES if nontemporal is not None else d.itemsize)
        if nontemporal is not None:
            inst.set_metadata("nontemporal", nontemporal)
        return
    fn = k.intrinsic(f"llvm.masked.store.{vname(vt)}.p0", VOID, [vt, PTR, I32, vec(I1, LANES)])
    b.call(fn, [value, p, ir.Constant(I32, d.itemsize), mask])


_HEAD = re.compile(r"^(.*)\.head(\.\d+)?$")


def no_runtime_unrolling(module: ir.Module, keep: tuple = ()) -> ir.Module:
    """Mark every `carried_loop` of the module but those tagged `keep` with
    llvm.loop.unroll.runtime.disable.  O3 unrolls a loop of unknown trip count 2-8 times with a
    remainder loop: about a quarter of a kernel's compile time and a third of its object code, for
    loops that mostly copy rows, walk tiles and keep queue state, where it saves a branch per pass.
    Loops of known trip count still unroll fully (the register transposes need that); the loops
    over elements a lowering names in `keep` (their tags) may still unroll by a runtime count."""
    node = None
    for fn in module.functions:
        for block in fn.blocks:
            term = block.terminator
            if not isinstance(term, ir.Branch) or isinstance(term, ir.ConditionalBranch):
                continue
            m = _HEAD.match(term.operands[0].name)
            if m is None or m.group(1) in keep:
                continue
            if node is None:
                hint = module.add_metadata([ir.MetaDataString(module, "llvm.loop.unroll.runtime.disable")])
                node = module.add_metadata([hint])
                node.operands = (node,) + tuple(node.operands)   # a loop ID refers to itself
            term.set_metadata("llvm.loop", node)
    return module

"""A cube kernel the cube and conv kinds refuse, on the CPU: its product on the host, the rest a kernel of its own.

The cube kind (lower/cube.py) and the conv kind (lower/conv.py) refuse some kernels on every chip:
products the cube has no form for (int32 / uint8 operands), matmul operands whose batch axes
broadcast in part, row reductions after an int8 or batched product, convs with epilogue inputs of
other shapes ([N, K, 1, 1]); and the CPU keeps a 16-bit product's row epilogue off the row kind's
float32 folds (their sums, in another order than numpy's, round to another float16 now and then).
Such a kernel is split at its product:

- the product by a host routine into a buffer of the product's dtype, kept with the bound call:
  integer operands exactly (int_product.py: sums mod 2**32, then numpy's wraparound to the op's
  dtype), float ones on sgemm (blas.matmul_rows: one sgemm's sums per row in row blocks on the pool;
  gemm_list for a small batch; numpy's matmul otherwise; a conv2d's conv_product.py routine),
  16-bit ones widened and the product rounded to the op's dtype;
- the rest of the kernel -- the ops after the product and those reading only inputs -- as a kernel
  function of its own whose first parameter is the product (`CubeSplit.rest`): the compiler lowers
  it like any fused kernel (a vector or row kind's kernel on llvm_kernel) and hands its binder to
  `SplitCpu`.

A kernel of several matmuls of one A (lower/cube_group.cube_parts) runs its parts so, in turn.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..ir.core import Function, Param
from ..ir.ops import CONSTANT, CUBE, ELEMENTWISE, REDUCTION, REGISTRY, has_trait
from ..lower.cube_group import cube_parts
from ..reference import _round, _widen
from . import casts, int_product
from .blas import gemm_list, matmul_rows, one_blas_thread, row_blocks
from .conv_product import ConvProduct
from .kernel_cpu import same_call

__all__ = ["CubeSplit", "RowBlocks", "SplitCpu", "split_kernel"]

_FLOATS = {dt.float32, dt.float16, dt.bfloat16}
_INTS = {dt.int8, dt.uint8, dt.int32}   # integer products: exact, wrapping to the op's dtype
_SMALL_BYTES = 256 * 1024   # a float32 product this small: its matrices' sgemms in one native call
_BLOCK_BYTES = 256 * 1024   # RowBlocks: float32 rows of the product per block (they stay in L2 through the ops)


class CubeSplit:
    """One cube op's kernel function split at the product (module doc)."""

    def __init__(self, fn: Function, cube, rest: Function | None):
        self.fn, self.cube, self.rest = fn, cube, rest
        y = cube.result
        self.integer = y.dtype in _INTS
        index = {id(p.value): i for i, p in enumerate(fn.params)}
        self.operands = [index[id(v)] for v in cube.operands]
        # the rest's parameters after the product: positions in fn's parameters
        self.reads = [] if rest is None else [index[id(p.value)] for p in rest.params[1:]]
        if cube.name == "conv2d":
            x, w = cube.operands
            self.conv = ConvProduct(x.shape, w.shape, y.shape, cube.attr("stride"), cube.attr("padding"), self.integer)

    @classmethod
    def build(cls, fn: Function) -> "CubeSplit | None":
        """The split of a kernel of one matmul / conv2d of static, nonzero sizes whose operands are
        kernel inputs and whose results all come after the product; else None."""
        cubes = [op for op in fn.ops if has_trait(op, CUBE)]
        if len(cubes) != 1:
            return None
        cube = cubes[0]
        y = cube.result
        ints = y.dtype in _INTS and all(v.dtype in _INTS for v in cube.operands)
        if not ints and (y.dtype not in _FLOATS or any(v.dtype not in _FLOATS for v in cube.operands)):
            return None
        if not all(isinstance(d, int) for d in y.shape) or 0 in y.shape:
            return None
        if cube.name == "matmul" and any(v.type.rank < 2 for v in cube.operands):
            return None
        params = {id(p.value) for p in fn.params}
        if any(id(v) not in params for v in cube.operands):
            return None
        derived = {id(y)}
        for op in fn.ops:
            if op is not cube and any(id(v) in derived for v in op.operands):
                derived.update(id(r) for r in op.results)
        if any(id(v) not in derived for v in fn.results):
            return None
        ops = tuple(op for op in fn.ops if op is not cube)
        outs = tuple({id(v): v for v in fn.results if v is not y}.values())   # each value once
        if not outs:
            return cls(fn, cube, None)
        read = {id(v) for op in ops for v in op.operands}
        rest_params = (Param(y),) + tuple(p for p in fn.params if id(p.value) in read)
        rest = Function(f"{fn.name}_rest", rest_params, ops, outs, fn.loc)
        return cls(fn, cube, rest)

    # -- the product -----------------------------------------------------------------------------

    def product_fill(self, a: np.ndarray, w: np.ndarray, product: np.ndarray, masks=None):
        """A call writing the product of operand arrays `a`, `w` (C-contiguous, their values'
        dtypes) into `product` (C-contiguous, the product's dtype), rounded as numpy rounds it."""
        cube, y = self.cube, self.cube.result
        if self.integer:
            return self._integer_fill(a, w, product)
        wide = product if y.dtype == dt.float32 else np.empty(y.shape, np.float32)
        if cube.name == "conv2d":
            fill = self.conv.bind(a, w, wide, masks)
        else:
            fill = self._matmul_fill(a, w, wide)
        if wide is product:
            return fill

        def rounded():
            fill()
            if not casts.narrow_into(product, wide):
                np.copyto(product, wide.astype(y.dtype.np))
        return rounded

    def _integer_fill(self, a, w, product):
        """The exact sum mod 2**32 (int_product.py), wrapped to the product's dtype (an integer cast
        wraps: numpy's rule); a 2-D matmul sums into the int32 product itself, or a kept int32
        buffer (no new array per call)."""
        cube, y = self.cube, self.cube.result
        if cube.name == "conv2d":   # conv_product.ConvProduct's exact integer product
            acc = product if y.dtype == dt.int32 else np.empty(y.shape, np.int32)
            fill = self.conv.bind(a, w, acc)

            def conv():
                fill()
                if acc is not product:
                    np.copyto(product, acc, casting="unsafe")
            return conv
        ta, tb = cube.attr("transpose_a", False), cube.attr("transpose_b", False)
        if len(y.shape) != 2:
            def batched():
                np.copyto(product, int_product.matmul(a, w, ta, tb, rows=row_blocks), casting="unsafe")
            return batched
        at = np.swapaxes(a, -1, -2) if ta else a
        wt = np.swapaxes(w, -1, -2) if tb else w
        acc = product if y.dtype == dt.int32 else np.empty(y.shape, np.int32)

        def matmul():
            int_product.matmul_2d(at, wt, acc, rows=row_blocks)
            if acc is not product:
                np.copyto(product, acc, casting="unsafe")
        return matmul

    def _matmul_fill(self, a, w, product):
        """A float matmul into float32 `product`: a big 2-D one in sgemm row blocks, a small batch
        of float32 matrices in one native call, numpy's matmul otherwise (its gemv for a row or
        column); 16-bit operands widened on each call."""
        cube, y = self.cube, self.cube.result
        if cube.attr("transpose_a", False):
            a = np.swapaxes(a, -1, -2)
        if cube.attr("transpose_b", False):
            w = np.swapaxes(w, -1, -2)
        if len(y.shape) == 2 and 4 * product.size > _SMALL_BYTES:
            return lambda: matmul_rows(casts.widen(a), casts.widen(w), product)
        if 4 * product.size <= _SMALL_BYTES and a.shape[-2] > 1 and w.shape[-1] > 1 and \
                a.dtype == w.dtype == np.float32:
            batch = tuple(y.shape[:-2])
            a_b = np.broadcast_to(a, batch + a.shape[-2:])
            w_b = np.broadcast_to(w, batch + w.shape[-2:])
            if int(np.prod(batch)) <= 4096:
                gemms = gemm_list([(a_b[i], w_b[i], product[i], 0.0) for i in np.ndindex(*batch)])
                if gemms is not None:
                    gemms.operands = (a, w, product)   # the viewed arrays live as long as the call
                    return gemms
        if a.dtype == w.dtype == np.float32:
            return lambda: np.matmul(a, w, out=product)
        return lambda: np.matmul(casts.widen(a), casts.widen(w), out=product)


_UFUNCS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "maximum": np.maximum,
           "minimum": np.minimum}


def _fast_op(op, args: list, out: np.ndarray) -> bool:
    """`op` on float32 blocks into `out` without temporaries; False when there is no such form
    with exactly the reference's semantics (NaN and -0.0 included)."""
    name = op.name
    if not op.operands or out.shape != np.broadcast_shapes(*(np.shape(a) for a in args)):
        return False
    ufunc = _UFUNCS.get(name)
    if ufunc is not None:
        with np.errstate(all="ignore"):
            ufunc(args[0], args[1], out=out)
        return True
    if name == "relu":
        np.maximum(args[0], np.float32(0), out=out)
        return True
    if name == "leaky_relu" and 0.0 <= op.attr("alpha") <= 1.0:
        # where(x >= 0, x, a*x) == max(x, a*x) for 0 <= a <= 1, NaN and -0.0 included
        np.multiply(args[0], np.float32(op.attr("alpha")), out=out)
        np.maximum(args[0], out, out=out)
        return True
    if name in ("cast", "neg"):
        np.copyto(out, args[0]) if name == "cast" else np.negative(args[0], out=out)
        return True
    return False


class RowBlocks:
    """The rest of a split 2-D product's kernel on the numpy reference, block by block of the
    product's rows: each op its numpy reference on float32 blocks, rounded to its dtype (the
    reference interpreter's rule, so a 16-bit product's row epilogue keeps numpy's bits), while a
    block of ~256 KB stays in the core's cache (the whole product at once ran 1.6-2.3x longer at
    16 / 64 MB).  `takes(rest)`: ops elementwise over the product's rows or per-row values, and
    reductions over its last axis (and constants)."""

    def __init__(self, rest: Function):
        self.rest = rest
        self.y = rest.params[0].value

    @staticmethod
    def takes(rest: Function) -> bool:
        y = rest.params[0].value
        if len(y.shape) != 2:
            return False
        m, n = y.shape
        rows = {(m,), (m, 1), (m, n)}
        for op in rest.ops:
            if has_trait(op, REDUCTION):
                if tuple(op.attr("axes")) != (1,) or tuple(op.operands[0].shape) != (m, n):
                    return False
            elif not (has_trait(op, ELEMENTWISE) and tuple(op.result.shape) in rows) and \
                    not (has_trait(op, CONSTANT) and not op.operands):
                return False
        return all(tuple(v.shape) in rows for v in rest.results)

    def bind(self, inputs, outputs):
        rest, y = self.rest, self.y
        m, n = y.shape
        step = max(1, _BLOCK_BYTES // (4 * n))
        params = [p.value for p in rest.params]
        wide = np.empty((step, n), np.float32)   # the product's block, widened
        scratch = {}   # per op: its float32 block, reused block after block and call after call
        contiguous = type(inputs[0]) is np.ndarray and inputs[0].flags.c_contiguous
        widen = casts.native("widen", y.dtype) if y.dtype in (dt.float16, dt.bfloat16) and contiguous else None

        def call():
            # the inputs besides the product, widened once per call; sliced with a block when they
            # have its rows (a 1-D one only beside per-row [M] values: against [M, N] it runs along N)
            ext = {id(v): _widen(np.asarray(x)) for v, x in zip(params[1:], inputs[1:])}
            product = inputs[0]
            for lo in range(0, m, step):
                hi = min(m, lo + step)
                block = wide[:hi - lo]
                if widen is None:
                    np.copyto(block, product[lo:hi], casting="unsafe")
                else:   # native 16-bit -> float32 into the kept block
                    widen(product[lo:hi].ctypes.data, block.ctypes.data, block.size)
                local = {id(y): block}
                for op in rest.ops:
                    per_row = len(op.result.shape) == 1
                    args = []
                    for v in op.operands:
                        if id(v) in local:
                            args.append(local[id(v)])
                            continue
                        a = ext[id(v)]
                        if (a.ndim == 2 or (per_row and a.ndim == 1)) and a.shape[0] == m and m != 1:
                            a = a[lo:hi]
                        args.append(a)
                    d = op.result.dtype
                    out = None
                    if d in _FLOATS and all(a.dtype == np.float32 for a in args if isinstance(a, np.ndarray)):
                        buf = scratch.get(id(op))
                        if buf is None:
                            buf = scratch[id(op)] = np.empty((step,) + tuple(op.result.shape[1:]), np.float32)
                        out = buf[:hi - lo] if op.result.shape else buf
                        if not _fast_op(op, args, out):
                            out = None
                    if out is None:
                        with np.errstate(all="ignore"):
                            raw = REGISTRY[op.name].ref(args, dict(op.attrs))
                        if d not in _FLOATS:   # a compare's bools, an integer: the reference's value as it is
                            local[id(op.result)] = _round(np.asarray(raw), d)
                            continue
                        out = np.asarray(raw, np.float32)
                        if any(np.may_share_memory(out, a) for a in args):
                            out = out.copy()
                    casts.round_in_place(out, d)   # float32 rounded to d natively: numpy's bits
                    local[id(op.result)] = out
                for v, o in zip(rest.results, outputs):
                    got = local[id(v)]
                    if not casts.narrow_into(o[lo:hi], got):
                        np.copyto(o[lo:hi], got, casting="unsafe")
        call.outputs = tuple(outputs)
        return call


def _nothing() -> None:
    """A rest with nothing to run."""


class SplitCpu:
    """A split kernel (`CubeSplit`, or a kernel of several matmuls' parts) with the call paths'
    interface (kernel_cpu.ScheduleCpu's): `run(inputs, outputs)`, `bind`, `bound_outputs`.
    `rests`: per part, bind(inputs, outputs) -> call of its rest kernel (None without one), the
    compiler's (a vector or row kind's kernel on llvm_kernel).  `masks`: per kernel parameter its
    structural-zero mask or None (backend_cpu/zeros.py), static for the kernel: a conv2d's product
    skips what they make zero."""

    def __init__(self, fn: Function, parts: list[tuple[Function, CubeSplit]], rests: list, masks=None):
        self.fn, self.parts, self.rests, self.masks = fn, parts, rests, masks
        # a runtime scalar's value is read when the rest is bound: such a kernel binds on every run
        self.volatile = any(p.kind == "scalar" for p in fn.params)
        self._last = None   # (inputs, call)

    def bind(self, inputs, outputs, masks=None):
        """A call running the kernel on exactly these arrays (the products into buffers kept with
        it).  `masks`: per kernel parameter its structural-zero mask or None (default: the
        kernel's own)."""
        masks = self.masks if masks is None else masks
        env = {id(p.value): a for p, a in zip(self.fn.params, inputs)}
        out_of = {}
        for v, o in zip(self.fn.results, outputs):
            out_of.setdefault(id(v), []).append(o)
        steps = []
        for (part, split), rest_bind in zip(self.parts, self.rests):
            ins = [env[id(p.value)] for p in part.params]
            y = split.cube.result
            # the product reads its operands in place: one that is not a C-contiguous array of its
            # dtype is copied into a kept buffer on every call (a copy made here would go stale)
            staged, operands = [], []
            for i in split.operands:
                x, d = ins[i], part.params[i].value.dtype.np
                if type(x) is np.ndarray and x.dtype == d and x.flags.c_contiguous:
                    operands.append(x)
                else:
                    operands.append(np.empty(np.shape(x), d))
                    staged.append((operands[-1], x))
            a, w = operands
            product = np.empty(y.shape, y.dtype.np)
            if masks is not None:   # this part's operands' masks, from the kernel's parameters'
                index = {id(p.value): i for i, p in enumerate(self.fn.params)}
                part_masks = [masks[index[id(v)]] if id(v) in index else None for v in split.cube.operands]
            else:
                part_masks = None
            fill = split.product_fill(a, w, product, part_masks)
            copies = [o for v in part.results if v is y for o in out_of[id(v)]]
            launch = _nothing
            if split.rest is not None:
                rest_outs = [out_of[id(v)][0] for v in split.rest.results]
                launch = rest_bind([product] + [ins[i] for i in split.reads], rest_outs)
                # a value returned twice: the rest writes its first output, copies fill the others
                copies_rest = [(out_of[id(v)][0], o) for v in split.rest.results for o in out_of[id(v)][1:]]
            else:
                copies_rest = []
            steps.append((staged, fill, product, copies, launch, copies_rest))
        guard = one_blas_thread()   # the products' BLAS calls on this thread (blas.py)

        def call() -> None:
            for staged, fill, product, copies, launch, copies_rest in steps:
                for buf, x in staged:
                    np.copyto(buf, x, casting="unsafe")
                with guard:
                    fill()
                for o in copies:
                    np.copyto(o, product, casting="unsafe")
                launch()
                for src, o in copies_rest:
                    np.copyto(o, src)
        call.keep = steps
        call.outputs = tuple(outputs)
        return call

    def run(self, inputs, outputs, tiling=None) -> None:
        """Run on these arrays, repeating the last bound call when they are the same ones."""
        last = self._last
        if last is None or self.volatile or not same_call(last[0], last[1], inputs, outputs, frozenset()):
            self._last = None   # its outputs are no longer held while binding
            last = self._last = (tuple(inputs), self.bind(inputs, outputs))
        last[1]()

    def bound_outputs(self) -> tuple:
        """The outputs the remembered call keeps alive, each referenced once (OutputPool.take)."""
        return () if self._last is None else self._last[1].outputs


def split_kernel(fn: Function) -> "list[tuple[Function, CubeSplit]] | None":
    """[(part, its split)] of a kernel function: the function itself when it has one cube op, its
    parts when it is several matmuls of one A (cube_group.cube_parts); None when it is neither or
    a part does not split (`CubeSplit.build`)."""
    whole = CubeSplit.build(fn)
    if whole is not None:
        return [(fn, whole)]
    parts = cube_parts(fn)
    if parts is None:
        return None
    splits = [CubeSplit.build(p) for p in parts]
    return None if any(s is None for s in splits) else list(zip(parts, splits))

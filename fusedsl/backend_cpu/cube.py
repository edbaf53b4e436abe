"""CPU executor for cube kernels: matmul / conv2d plus an elementwise epilogue.

A cube kernel is one matmul or conv2d, ops that do not depend on its result (reshaping a
bias, say), and an elementwise epilogue on its result (bias, activation chain, residual
add, cast).  The product runs on BLAS; the epilogue runs on one block of the result at a
time (a few hundred KB: rows of a matmul, one image of a conv) while that block is in the
core's cache, instead of one pass over the whole result per op.

Why BLAS per block and not an llvmlite micro-kernel: numpy's bundled OpenBLAS already
has register-blocked, packed AVX-512 sgemm kernels at ~300 GFLOP/s here; a JIT
micro-kernel would have to re-implement packing and cache blocking to match it.  What
fusion saves on a CPU is memory traffic, and that comes from the epilogue, not from the
product.  For a 2-D matmul the product is one sgemm call (splitting it would repack B
once per block), so each epilogue block is read back from L2/L3 right after; for conv
each image is its own product and the epilogue follows on it directly.

conv2d kernels run on llvm_kernel (backend_cpu/conv_cpu.py, the product conv_product.py's);
this executor runs the ones the conv kind refuses on every chip (integer operands the cube has
no form for, epilogue inputs of other shapes), with the same product (`ConvProduct`).

float16/bfloat16 inputs compute in float32; every op's result is rounded to its dtype
(the reference interpreter's rule, so all executors agree).  Kernels this module does not
handle (epilogues that are neither elementwise nor reductions over the rows of a 2-D product)
return None and run on the numpy reference.  Integer products (int8, uint8, int32) are exact:
int_product.py sums them on BLAS in chunks every float holds exactly, mod 2**32, and the
kernel rounds once to the op's dtype (numpy's wraparound) before the epilogue.  Row reductions after a 2-D
matmul (softmax, layer_norm of x @ w + b) run block by block too: a block is whole rows.
"""
from __future__ import annotations

import itertools
import weakref

import numpy as np

from .. import dtypes as dt
from ..errors import FusedslError
from ..ir.core import Function, Op, Param
from ..ir.ops import CONSTANT, CUBE, ELEMENTWISE, REDUCTION, REGISTRY, has_trait
from ..reference import _round, _widen
from ..lower.vector import compute_tiling, schedule_vector_kernel
from ..lower.cube_group import cube_parts
from . import CpuKernel, casts, int_product
from .conv_product import ConvProduct
from .blas import BLAS_LOCAL_THREADS, SGEMM, gemm_acc, gemm_list, one_blas_thread, sgemm_address
from .gather import copy_list
from .launch import host_threads, pool
from .cpu_tiling import long_row_sums, row_schedule, row_tiling
from .kernel_cpu import ScheduleCpu
from .stmts import LoweringError

_BLOCK_BYTES = 256 * 1024      # one epilogue block: stays in L2 across the whole chain
_FLOATS = {dt.float32, dt.float16, dt.bfloat16}
_INTS = {dt.int8, dt.uint8, dt.int32}   # integer products: exact, wrapping to the op's dtype


# ---- products on BLAS (backend_cpu/blas.py) -------------------------------------------------

# Products of at least this many multiply-adds run as row blocks on fusedsl's pool threads,
# each block one single-threaded sgemm.  OpenBLAS's own threads wait for each other at every
# step: when the other vCPU of this shared host is busy, a 128^3 product took 44 ms on two
# OpenBLAS threads and 0.17 ms on one (512^3: 70 vs 15 ms).  The pool hands blocks out
# dynamically, so a descheduled thread only delays the blocks it holds.
PARALLEL_MACS = 1 << 24


def _matmul_2d(a: np.ndarray, b: np.ndarray, out: np.ndarray, before=None, after=None) -> None:
    """out = a @ b for C-contiguous float32 matrices: single-threaded sgemm calls on row blocks.
    before(lo, hi) / after(lo, hi), when given, run on the block's thread just before / after
    the product of rows [lo, hi) (a 16-bit product widens its rows of `a` and rounds its rows
    of the result there: in parallel, and while the rows are in that core's cache)."""
    m, k = a.shape
    n = b.shape[1]
    if SGEMM is None or BLAS_LOCAL_THREADS is None or 0 in (m, n, k) or m == 1 or n == 1:
        # numpy runs m or n of 1 as gemv / dot (other sums than sgemm's): the same call here
        prev = BLAS_LOCAL_THREADS(1) if BLAS_LOCAL_THREADS is not None else None
        try:
            if before is not None:
                before(0, m)
            np.matmul(a, b, out=out)
            if after is not None:
                after(0, m)
        finally:
            if prev is not None:
                BLAS_LOCAL_THREADS(prev)
        return
    def block(lo, hi):
        if before is not None:
            before(lo, hi)
        gemm_acc(a[lo:hi], b, out[lo:hi], False)
        if after is not None:
            after(lo, hi)
    _row_blocks(m, m * n * k, block, one_blas_thread=True)


def _row_blocks(m: int, macs: int, fn, one_blas_thread: bool = False) -> None:
    """fn(lo, hi) over blocks of rows [0, m): for a product of at least PARALLEL_MACS multiply-adds
    two blocks per pool thread, handed out in turn (each block repacks B: few blocks when K is
    long), each thread's BLAS on that thread; else fn(0, m) here, with BLAS on one thread too when
    `one_blas_thread` (`_matmul_2d`'s sgemm calls: one thread's sums, whatever the size)."""
    threads = host_threads() if macs >= PARALLEL_MACS and m >= 32 and BLAS_LOCAL_THREADS is not None else 1
    if threads == 1 and not one_blas_thread:
        fn(0, m)
        return
    rows = -(-m // (threads * 2)) if threads > 1 else m
    # blocks start on a multiple of 64 rows: BLAS runs the rows of an [m, K] product in tiles of
    # its kernel's height (16 on AVX-512) from the first row of each call, and a tail tile may
    # add in another order, so a block boundary off that grid changed a row's float32 sums
    # (one 16-bit product element of 72x35 @ 35x35 rounded 1 ulp away from the one-call product)
    rows = -(-rows // 64) * 64 if threads > 1 else rows
    counter = itertools.count(0, rows)

    def job():
        prev = BLAS_LOCAL_THREADS(1)
        try:
            for lo in counter:   # next() is atomic under the GIL
                if lo >= m:
                    return
                fn(lo, min(lo + rows, m))
        finally:
            BLAS_LOCAL_THREADS(prev)
    if threads == 1:
        job()
    else:
        pool().run(job, [()] * threads)








def _f32(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float32)


# ---- the epilogue ------------------------------------------------------------------------

def _fast_op(op: Op, args: list, out: np.ndarray) -> bool:
    """`op` on float32 blocks into `out` without temporaries; False when there is no fast
    form with exactly the reference's semantics (NaN, -0.0 included)."""
    name = op.name
    ufunc = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "maximum": np.maximum,
             "minimum": np.minimum}.get(name)
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


def _round_to(block: np.ndarray, dtype) -> None:
    """Round float32 `block` in place to `dtype` (a no-op for float32; casts.py: native
    conversions, exactly numpy's rounding)."""
    casts.round_in_place(block, dtype)


def _row_op(op: Op, y) -> bool:
    """A row epilogue op of a 2-D product y [M, N] (softmax, layer_norm after a matmul): a
    reduction over the last axis, or an elementwise op on the per-row values ([M] or [M, 1]).
    Blocks of the product are whole rows, so they run block by block like the rest."""
    if len(y.shape) != 2:
        return False
    rows = {(y.shape[0],), (y.shape[0], 1)}
    if has_trait(op, REDUCTION):
        return tuple(op.attr("axes")) == (1,) and op.operands[0].shape == y.shape
    return has_trait(op, ELEMENTWISE) and op.result.shape in rows | {y.shape}


class CubeKernel:
    """A kernel function of one cube op and its elementwise epilogue, run blockwise."""

    integer = False   # integer operands: int_product's exact product, `_run_integer`

    @property
    def native(self) -> bool:
        """Whether `run` takes this kernel (else the caller runs the numpy reference): a float
        product whose epilogue runs in float32 blocks, or an integer product."""
        return self.floats or self.integer

    def __init__(self, fn: Function, cube: Op, prologue: list[Op], epilogue: list[Op]):
        self.fn = fn
        self.cube = cube
        self.prologue = prologue
        self.epilogue = epilogue
        self._epilogue_kernels: dict = {}   # per target: the epilogue as a vector kernel, or None
        # a conv2d's product (conv_product.py: the conv kind's kernels run it on llvm_kernel; this
        # executor only for those the kind refuses)
        self.conv = None
        if cube.name == "conv2d":
            x, w = cube.operands
            self.conv = ConvProduct(x.shape, w.shape, cube.result.shape, cube.attr("stride"), cube.attr("padding"))
        # epilogue values that are float32 results: written into the output directly
        self._direct: dict[int, int] = {}
        for i, v in enumerate(fn.results):
            if v.dtype == dt.float32 and v.shape == cube.result.shape and any(op.result is v for op in epilogue):
                self._direct.setdefault(id(v), i)

    @classmethod
    def build(cls, fn: Function) -> CubeKernel | None:
        cubes = [op for op in fn.ops if has_trait(op, CUBE)]
        if len(cubes) != 1:
            return None
        cube = cubes[0]
        y = cube.result
        integer = y.dtype in _INTS and all(v.dtype in _INTS for v in cube.operands)
        if not integer and (y.dtype not in _FLOATS or any(v.dtype not in _FLOATS for v in cube.operands)):
            return None
        if not all(isinstance(d, int) for d in y.shape) or 0 in y.shape:
            return None
        if cube.name == "matmul" and any(v.type.rank < 2 for v in cube.operands):
            return None
        derived = {id(y)}
        prologue, epilogue = [], []
        for op in fn.ops:
            if op is cube:
                continue
            if not any(id(v) in derived for v in op.operands):
                prologue.append(op)   # independent of the product: computed once, whole
                continue
            if not (has_trait(op, ELEMENTWISE) and op.result.shape == y.shape) and not _row_op(op, y):
                return None
            epilogue.append(op)
            derived.add(id(op.result))
        if any(id(v) not in derived for v in fn.results):
            return None
        if any(has_trait(op, CUBE) for op in prologue):
            return None
        kernel = cls(fn, cube, prologue, epilogue)
        kernel.integer = integer
        if integer:   # an exact integer product (int_product.py), then the epilogue op by op
            kernel.floats = False
            return kernel
        # the numpy epilogue computes in float32 blocks: other dtypes (a compare and a select
        # in an exact gelu) run only as the native epilogue kernel (`bind`)
        kernel.floats = all(op.result.dtype in _FLOATS and all(v.dtype in _FLOATS for v in op.operands)
                            for op in epilogue)
        return kernel

    # -- running ---------------------------------------------------------------------------

    def sourced_operands(self, zeros, sources) -> dict[int, np.ndarray]:
        """{kernel parameter position: index array} of the conv2d operands `bind` can read
        from the parameter they copy (zeros.copy_sources: `sources[i]`, per kernel parameter,
        None or an index array into that parameter's array) instead of from the operand: the
        product skips their zeros (conv_sparse) and reads nothing else of them, and nothing
        else in the kernel reads them.  Empty when the product would run dense."""
        cube = self.cube
        if cube.name != "conv2d" or zeros is None or sources is None:
            return {}
        index = {id(p.value): i for i, p in enumerate(self.fn.params)}
        positions = [index.get(id(v)) for v in cube.operands]
        if None in positions or any(v.dtype != dt.float32 for v in cube.operands):
            return {}
        others = [v for op in self.fn.ops if op is not cube for v in op.operands]
        if not self.conv.sourced([zeros[i] for i in positions]):
            return {}
        return {i: sources[i] for i, v in zip(positions, cube.operands)
                if sources[i] is not None and not any(o is v for o in others)}

    def bind(self, inputs, outputs, target=None, zeros=None, sources=None):
        """A callable running the kernel on exactly these arrays (a program's bound step: the
        arrays stay the same, their contents change), or None when this executor cannot run
        it (the caller then runs the reference).

        A float32 product with an elementwise epilogue: the product into a buffer kept with
        the call (a small matmul by np.matmul, whose own sgemm dispatch costs ~1.7 us where
        ours through ctypes cost ~6 and `run`'s per-call preparation ~12 more), then the
        epilogue as ONE native vector kernel compiled for `target` like any vector kernel
        (the same statements and rounding; transcendentals are the LLVM backend's, within
        the per-dtype tolerances of numpy's; each numpy epilogue op cost ~1.5 us on small
        blocks).  Otherwise `run` (a small float32 matmul with a numpy epilogue directly).
        `zeros`: per input, its structural-zero mask (backend_cpu/zeros.py) or None; a conv2d
        skips the products they make zero (conv_sparse.py).  `sources`: `sourced_operands`'s
        answer; those inputs are then the parameters the operands copy, not the operands."""
        if self.integer:
            return _guarded(self, inputs, outputs)
        native = self._bind_native(inputs, outputs, target, zeros, sources) if target is not None else None
        if native is not None or sources:
            return native
        if not self.floats:
            return None
        product16 = self._bind_16bit_product(inputs, outputs)
        if product16 is not None:
            return product16
        lean = self._bind_small_matmul(inputs, outputs)
        if lean is not None:
            return lean
        return _guarded(self, inputs, outputs)

    def _epilogue_kernel(self, target):
        """(CpuKernel, tiling, values it reads besides the product) of the elementwise
        epilogue as a vector kernel of its own, or None (row ops, a result that is the
        product itself, anything the vector scheduler or LLVM lowering refuses)."""
        if target in self._epilogue_kernels:
            return self._epilogue_kernels[target]
        self._epilogue_kernels[target] = None
        y = self.cube.result
        if not self.epilogue or y.dtype != dt.float32 or any(v is y for v in self.fn.results):
            return None
        # elementwise: a vector kernel; with reductions over the rows of a 2-D product
        # (softmax, layer_norm, a row sum after a matmul the cube kind refuses): the row kind's
        # kernel as the CPU runs it (compiler._row_cpu_kernel's), else numpy's ops per block (`run`)
        rows = not all(has_trait(op, ELEMENTWISE) or has_trait(op, CONSTANT) for op in self.epilogue)
        # the prologue's constants and its elementwise ops over the product's whole shape (a
        # tril mask from two aranges) join the kernel; its other values (the per-channel
        # scale of a folded batch norm) are computed per call on the host and read as inputs
        inside = {id(op) for op in self.prologue if has_trait(op, CONSTANT) or
                  (has_trait(op, ELEMENTWISE) and tuple(op.result.shape) == tuple(y.shape))}
        for op in reversed(self.prologue):   # a value the host computes from must be on the host too
            if id(op) not in inside:
                for v in op.operands:
                    for other in self.prologue:
                        if other.result is v and not has_trait(other, CONSTANT):
                            inside.discard(id(other))
        ops = [op for op in self.prologue if id(op) in inside] + self.epilogue
        made = {id(op.result) for op in ops}
        reads = {}
        for op in ops:
            for v in op.operands:
                if v is not y and id(v) not in made:
                    reads.setdefault(id(v), v)
        params = (Param(y),) + tuple(Param(v) for v in reads.values())
        fn = Function(f"{self.fn.name}_epilogue", params, tuple(ops), tuple(self.fn.results), self.fn.loc)
        try:
            if rows:
                if long_row_sums(fn):
                    return None
                sched = row_schedule(fn, target)
                kernel, tiling = ScheduleCpu(sched, row_tiling(sched, {}, target)), None
            else:
                sched = schedule_vector_kernel(fn, target)
                if sched.views is not None:
                    return None
                kernel = CpuKernel(sched, target)
                tiling = compute_tiling(sched, {}, target)
        except (FusedslError, LoweringError):
            return None
        self._epilogue_kernels[target] = (kernel, tiling, list(reads.values()), inside)
        return self._epilogue_kernels[target]

    def _bind_native(self, inputs, outputs, target, zeros=None, sources=None):
        """The product into a kept float32 buffer, then the native epilogue kernel (a lone
        float32 product straight into the output); None when the epilogue is not one or an
        argument is not a C-contiguous array of its parameter's dtype."""
        y = self.cube.result
        plain = (not self.epilogue and len(outputs) == 1 and self.fn.results[0] is y and y.dtype == dt.float32
                 and outputs[0].flags.c_contiguous)
        if plain:
            kernel, tiling, reads, inside = None, None, [], set()
        else:
            native = self._epilogue_kernel(target)
            if native is None:
                return None
            kernel, tiling, reads, inside = native
        env = {id(p.value): a for p, a in zip(self.fn.params, inputs)}
        if not all(type(a) is np.ndarray and a.dtype == p.value.dtype.np and a.flags.c_contiguous
                   for p, a in zip(self.fn.params, inputs)):
            return None
        sources = sources or {}
        by_value = {id(self.fn.params[i].value): idx for i, idx in sources.items()}
        operand_sources = [by_value.get(id(v)) for v in self.cube.operands]
        # the prologue's values on the host per call (the reference's op, like `run`), each
        # into a buffer kept with the call; constants once
        host = []
        for op in self.prologue:
            if id(op) in inside and not has_trait(op, CONSTANT):
                continue   # computed in the epilogue kernel
            if all(v is not None and id(v) in env for v in op.operands):
                value = _run_op(op, [env[id(v)] for v in op.operands])
                if has_trait(op, CONSTANT):
                    env[id(op.result)] = value
                else:
                    env[id(op.result)] = buf = np.empty(value.shape, value.dtype)
                    host.append((op, buf))
        if any(id(v) not in env for v in list(self.cube.operands) + reads):
            return None
        product = outputs[0] if plain else np.empty(y.shape, np.float32)
        a, w = (env[id(v)] for v in self.cube.operands)
        masks = None
        if zeros is not None:
            index = {id(p.value): i for i, p in enumerate(self.fn.params)}
            masks = [zeros[index[id(v)]] if id(v) in index else None for v in self.cube.operands]
        fill = self._product_fill(a, w, product, masks, operand_sources)
        if fill is None:
            return None
        ins = [product] + [env[id(v)] for v in reads]
        if plain:
            epilogue = _nothing
        elif tiling is None:   # a row kernel
            epilogue = kernel.bind(ins, list(outputs))
        else:
            epilogue = kernel.bind(ins, list(outputs), tiling)
        host = [(op, buf, [env[id(v)] for v in op.operands]) for op, buf in host]
        # OpenBLAS runs products up to 64^3 multiply-adds on the calling thread by itself;
        # above, the thread-local setting (two foreign calls, ~0.9 us) keeps it there (`run`)
        depth = a.shape[-2] if self.cube.attr("transpose_a", False) else a.shape[-1]
        if self.cube.name == "matmul" and depth * int(np.prod(y.shape)) <= 1 << 18 and not host:
            def call():
                fill()
                epilogue()
            return call
        guard = one_blas_thread()

        def call():
            for op, buf, args in host:
                buf[...] = _run_op(op, args)
            with guard:
                fill()
            epilogue()
        return call

    def _product_fill(self, a, w, product, masks=None, sources=(None, None)):
        """A callable writing the float32 product of these operand arrays into `product`;
        `masks`: the operands' structural zeros (or None); `sources`: per operand None or the
        index array saying which elements of the array passed for it the operand copies (then
        the sparse conv reads it there; None when it cannot)."""
        cube, y = self.cube, self.cube.result
        if cube.name == "conv2d":
            return self.conv.bind(a, w, product, masks, sources)
        if cube.attr("transpose_a", False):
            a = np.swapaxes(a, -1, -2)
        if cube.attr("transpose_b", False):
            w = np.swapaxes(w, -1, -2)
        if len(y.shape) == 2 and 4 * product.size > _BLOCK_BYTES:   # big: row blocks on the pool
            return lambda: _matmul_2d(casts.widen(a), casts.widen(w), product)
        if (4 * product.size <= _BLOCK_BYTES and a.shape[-2] > 1 and w.shape[-1] > 1
                and a.dtype == w.dtype == product.dtype == np.float32):   # sgemm reads float32 bits
            # small: every matrix of the batch one sgemm, all in one native call (~0.5 us
            # where np.matmul's dispatch costs ~1.7); m or n of 1 stays numpy's gemv
            batch = tuple(y.shape[:-2])
            a_b = np.broadcast_to(a, batch + a.shape[-2:])
            w_b = np.broadcast_to(w, batch + w.shape[-2:])
            if int(np.prod(batch)) <= 4096:
                gemms = gemm_list([(a_b[i], w_b[i], product[i], 0.0) for i in np.ndindex(*batch)])
                if gemms is not None:
                    gemms.operands = (a, w, product)   # the viewed arrays live as long as the call
                    return gemms
        return lambda: np.matmul(a, w, out=product)

    def _bind_16bit_product(self, inputs, outputs):
        """A lone 2-D float16 / bfloat16 matmul (no epilogue) as a bound call, or None.

        Per call: B widened once into a kept float32 buffer, then row blocks (`_matmul_2d`,
        on the pool's threads for large products), each widening its rows of A, running its
        sgemm and rounding its rows of the product straight into the 16-bit output (`casts`:
        round to nearest even, NaN quieted, the reference's bits).  `run` instead widened
        into new arrays (page faults on every call), made a new product buffer, and rounded
        and narrowed it block by block on the calling thread after the whole product."""
        cube, y = self.cube, self.cube.result
        if (cube.name != "matmul" or self.prologue or self.epilogue or len(outputs) != 1 or len(y.shape) != 2
                or self.fn.results[0] is not y or y.dtype not in (dt.float16, dt.bfloat16)
                or cube.attr("transpose_a", False) or cube.attr("transpose_b", False)):
            return None
        env = {id(p.value): x for p, x in zip(self.fn.params, inputs)}
        if any(id(v) not in env for v in cube.operands):
            return None
        a, w = (env[id(v)] for v in cube.operands)
        out = outputs[0]
        if not all(type(x) is np.ndarray and x.dtype == y.dtype.np and x.flags.c_contiguous and x.size
                   for x in (a, w, out)):
            return None
        (m, k), n = a.shape, w.shape[1]
        a32, w32, product = np.empty((m, k), np.float32), np.empty((k, n), np.float32), np.empty((m, n), np.float32)
        widen, narrow = casts.native("widen", y.dtype), casts.native("narrow", y.dtype)
        pa, pa32, pw, pw32 = a.ctypes.data, a32.ctypes.data, w.ctypes.data, w32.ctypes.data
        pp, po = product.ctypes.data, out.ctypes.data

        def before(lo, hi):
            widen(pa + 2 * k * lo, pa32 + 4 * k * lo, k * (hi - lo))

        def after(lo, hi):
            narrow(pp + 4 * n * lo, po + 2 * n * lo, n * (hi - lo))

        def call():
            widen(pw, pw32, k * n)   # every block reads all of B
            _matmul_2d(a32, w32, product, before, after)
        call.arrays = (a, w, out, a32, w32, product)   # alive as long as the call
        return call

    def _bind_small_matmul(self, inputs, outputs):
        """A small float32 matmul (one epilogue block) with a float32 numpy epilogue: one
        np.matmul into a kept buffer (or the output), the epilogue on it; or None."""
        cube, y = self.cube, self.cube.result
        if cube.name != "matmul" or y.dtype != dt.float32 or self.prologue:
            return None
        if 4 * int(np.prod(y.shape)) > _BLOCK_BYTES:
            return None
        if any(v.dtype != dt.float32 for op in self.epilogue for v in op.operands + op.results):
            return None
        env = {id(p.value): a for p, a in zip(self.fn.params, inputs)}
        if any(id(v) not in env for v in cube.operands):
            return None
        a, w = (env[id(v)] for v in cube.operands)
        if not all(type(x) is np.ndarray and x.dtype == np.float32 for x in (a, w)):
            return None
        if cube.attr("transpose_a", False):
            a = np.swapaxes(a, -1, -2)
        if cube.attr("transpose_b", False):
            w = np.swapaxes(w, -1, -2)
        ext = {}
        for op in self.epilogue:
            for v in op.operands:
                if id(v) in env:
                    x = env[id(v)]
                    if not (type(x) is np.ndarray and x.dtype == np.float32):
                        return None   # a widened copy would go stale: `run` widens per call
                    ext[id(v)] = x
        outs = list(outputs)
        direct = not self.epilogue and len(outs) == 1 and self.fn.results[0] is y and outs[0].flags.c_contiguous
        product = outs[0] if direct else np.empty(y.shape, np.float32)
        scratch: dict[int, np.ndarray] = {}
        rows = slice(None)
        epilogue = self._epilogue
        # OpenBLAS runs products up to 64^3 multiply-adds on the calling thread by itself;
        # above, the thread-local setting (two foreign calls, ~0.9 us) keeps it there (`run`)
        if a.shape[-1] * w.shape[-1] * int(np.prod(y.shape[:-1])) <= 1 << 18 or BLAS_LOCAL_THREADS is None:
            guard = None
        else:
            guard = one_blas_thread()
        if direct and guard is None:
            def call():
                np.matmul(a, w, out=product)
        elif guard is None:
            def call():
                np.matmul(a, w, out=product)
                epilogue(ext, rows, product, scratch, outs)
        else:
            def call():
                with guard:
                    np.matmul(a, w, out=product)
                if not direct:
                    epilogue(ext, rows, product, scratch, outs)
        return call

    def run(self, inputs, targets=None, zeros=None) -> tuple[np.ndarray, ...]:
        if self.integer:
            return self._run_integer(inputs, targets)
        env = {id(p.value): np.asarray(a, dtype=p.value.dtype.np) for p, a in zip(self.fn.params, inputs)}
        for op in self.prologue:
            env[id(op.result)] = _run_op(op, [env[id(v)] for v in op.operands])
        # epilogue operands other than the product, as float32 once (sliced per block later)
        ext = {id(v): np.asarray(_widen(env[id(v)]), np.float32)
               for op in self.epilogue for v in op.operands if id(v) in env}
        y = self.cube.result
        outs = []
        for v, t in zip(self.fn.results, targets or [None] * len(self.fn.results)):
            outs.append(t if t is not None else np.empty(v.shape, v.dtype.np))
        x, w = (env[id(v)] for v in self.cube.operands)
        blocks = None
        if self.cube.name == "conv2d" and zeros is not None and any(m is not None for m in zeros):
            index = {id(p.value): i for i, p in enumerate(self.fn.params)}
            masks = [zeros[index[id(v)]] if id(v) in index else None for v in self.cube.operands]
            # the product buffer is kept (a fresh one costs its page faults on every call)
            product = getattr(self, "_run_product", None)
            if product is None:
                product = self._run_product = np.empty(y.shape, np.float32)
            fill = self.conv.bind(x, w, product, masks) if all(a.flags.c_contiguous for a in (x, w)) else None
            if fill is not None:   # the whole product, then the epilogue on it as one block
                fill()
                blocks = [(slice(None), product)]
        if blocks is None:
            blocks = self.conv.blocks(x, w) if self.cube.name == "conv2d" else self._matmul_blocks(x, w)
        scratch: dict[int, np.ndarray] = {}
        for sl, block in blocks:
            _round_to(block, y.dtype)
            self._epilogue(ext, sl, block, scratch, outs)
        return tuple(outs)

    def _run_integer(self, inputs, targets=None) -> tuple[np.ndarray, ...]:
        """An integer product exactly (the sum mod 2**32, int_product.py), rounded once to the
        op's dtype (numpy's wraparound), then the prologue and epilogue ops with the reference's
        rule (each op's numpy reference, rounded once to its dtype): bit for bit numpy's."""
        env = {id(p.value): np.asarray(a, dtype=p.value.dtype.np) for p, a in zip(self.fn.params, inputs)}
        for op in self.prologue:
            env[id(op.result)] = _run_op(op, [env[id(v)] for v in op.operands])
        cube = self.cube
        x, w = (env[id(v)] for v in cube.operands)
        if cube.name == "conv2d":
            exact = int_product.conv2d(x, w, cube.attr("stride"), cube.attr("padding"))
        else:
            exact = int_product.matmul(x, w, cube.attr("transpose_a", False), cube.attr("transpose_b", False),
                                       rows=_row_blocks)
        env[id(cube.result)] = _round(exact, cube.result.dtype)
        for op in self.epilogue:
            env[id(op.result)] = _run_op(op, [env[id(v)] for v in op.operands])
        outs = []
        for v, t in zip(self.fn.results, targets or [None] * len(self.fn.results)):
            if t is None:
                outs.append(np.array(env[id(v)], dtype=v.dtype.np, order="C"))
            else:
                np.copyto(t, env[id(v)], casting="unsafe")
                outs.append(t)
        return tuple(outs)

    def _epilogue(self, ext, sl, block, scratch, outs) -> None:
        """The epilogue on one block (rows `sl` of axis 0 of the product)."""
        y = self.cube.result
        n0 = y.shape[0]
        local = {id(y): block}
        for op in self.epilogue:
            # the op's block: its result with the product's leading extent cut to the block's rows
            shape = (block.shape[0],) + tuple(op.result.shape[1:])
            per_row = len(op.result.shape) == 1   # a [M] row value (a reduction without keepdims)
            args = []
            for v in op.operands:
                if id(v) in local:
                    args.append(local[id(v)])
                    continue
                a = ext[id(v)]
                # an operand with the product's leading extent is sliced with the block (a 1-D
                # one only beside [M] row values: against [M, N] it runs along N); lower-rank
                # or size-1 leading axes broadcast
                if ((a.ndim == len(y.shape) or (per_row and a.ndim == 1)) and a.shape[0] == n0
                        and n0 != 1):
                    a = a[sl]
                args.append(a)
            direct = self._direct.get(id(op.result))
            if direct is not None:
                out = outs[direct][sl]   # a float32 result: computed straight into the output
            else:
                out = scratch.get(id(op))
                if out is None or out.shape != shape:
                    out = scratch[id(op)] = np.empty(shape, np.float32)
            if not _fast_op(op, args, out):
                with np.errstate(all="ignore"):
                    raw = REGISTRY[op.name].ref(args, dict(op.attrs))
                out[...] = raw
            _round_to(out, op.result.dtype)
            local[id(op.result)] = out
        for i, (v, o) in enumerate(zip(self.fn.results, outs)):
            if self._direct.get(id(v)) != i and not casts.narrow_into(o[sl], local[id(v)]):
                np.copyto(o[sl], local[id(v)], casting="unsafe")

    def _matmul_blocks(self, a, w):
        """(slice of axis 0, float32 product block) pairs.  2-D: one sgemm, then row blocks;
        batched: one product per batch matrix."""
        y = self.cube.result
        if self.cube.attr("transpose_a", False):   # (fold-transpose) read the operand transposed
            a = np.swapaxes(a, -1, -2)
        if self.cube.attr("transpose_b", False):
            w = np.swapaxes(w, -1, -2)
        a32, w32 = casts.widen(a), casts.widen(w)   # 16-bit operands converted once, natively
        if len(y.shape) == 2:
            product = np.empty(y.shape, np.float32)
            _matmul_2d(a32, w32, product)
            rows = max(1, _BLOCK_BYTES // (4 * y.shape[1]))
            for i in range(0, y.shape[0], rows):
                yield slice(i, i + rows), product[i:i + rows]
            return
        batch = y.shape[:-2]
        a_b = np.broadcast_to(a32, batch + a32.shape[-2:])
        w_b = np.broadcast_to(w32, batch + w32.shape[-2:])
        block = np.empty((1,) + tuple(y.shape[1:]), np.float32)
        for i in range(y.shape[0]):
            for idx in np.ndindex(*batch[1:]):
                np.matmul(a_b[(i, *idx)], w_b[(i, *idx)], out=block[(0, *idx)])
            yield slice(i, i + 1), block

def _run_op(op: Op, inputs) -> np.ndarray:
    raw = REGISTRY[op.name].ref([_widen(x) for x in inputs], dict(op.attrs))
    return _round(np.asarray(raw), op.result.dtype)


# Per kernel function (weak: a compiled kernel's functions live as long as it does).
_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class _Parts:
    """A kernel of several matmuls of the same A (lower.cube_group.cube_parts): each part is
    a cube kernel of its own, run in turn, as the printed kernel runs them."""

    def __init__(self, fn: Function, parts: list[Function], kernels: list[CubeKernel]):
        self.fn, self.parts, self.kernels = fn, parts, kernels

    @classmethod
    def build(cls, fn: Function) -> "_Parts | None":
        parts = cube_parts(fn)
        if parts is None:
            return None
        kernels = [CubeKernel.build(p) for p in parts]
        return None if any(k is None or not k.native for k in kernels) else cls(fn, parts, kernels)

    floats = True   # every part runs natively (`_Parts.build`): float32 blocks or an integer product
    native = True

    def bind(self, inputs, outputs, target=None):
        return _guarded(self, inputs, outputs)

    def run(self, inputs, targets=None) -> tuple[np.ndarray, ...]:
        env = {id(p.value): a for p, a in zip(self.fn.params, inputs)}
        slots: dict[int, list[int]] = {}
        for i, v in enumerate(self.fn.results):
            slots.setdefault(id(v), []).append(i)
        outs = [None] * len(self.fn.results)
        for part, kernel in zip(self.parts, self.kernels):
            t = [targets[slots[id(v)][0]] if targets else None for v in part.results]
            got = kernel.run([env[id(p.value)] for p in part.params], t)
            for v, g in zip(part.results, got):
                for i in slots[id(v)]:
                    outs[i] = g
        return tuple(outs)


def kernel_for(fn: Function) -> "CubeKernel | _Parts | None":
    """The cube executor's kernel for a kernel function (its `bind` may still decline), or
    None when it does not handle it."""
    if fn not in _CACHE:
        _CACHE[fn] = CubeKernel.build(fn) or _Parts.build(fn)
    return _CACHE[fn]




def _nothing() -> None:
    """A bound call with nothing to do."""


def _guarded(kernel, inputs, outputs):
    """kernel.run(inputs, outputs) as a bound call, its products on the calling thread."""
    guard = one_blas_thread()

    def call():
        with guard:
            kernel.run(inputs, outputs)
    return call


def run(fn: Function, inputs, targets=None, zeros=None) -> tuple[np.ndarray, ...] | None:
    """Run a cube kernel function blockwise, or None when this executor does not handle it.
    `zeros`: per input, its structural-zero mask or None (CubeKernel.bind)."""
    kernel = kernel_for(fn)
    if kernel is None or not kernel.native:
        return None
    if zeros is not None and isinstance(kernel, CubeKernel):
        def go():
            return kernel.run(inputs, targets, zeros)
    else:
        def go():
            return kernel.run(inputs, targets)
    if BLAS_LOCAL_THREADS is None:
        return go()
    # Every sgemm of this thread on this thread: OpenBLAS's own threads are worse than
    # useless here.  Measured with torch imported (every fs.from_torch user): a 256^3 sgemm
    # took 32 ms on OpenBLAS's two threads and 0.36 ms on one; a 32x32x2312 conv tap 32 ms
    # against 61 us.  Products big enough to share run as blocks on the pool (_matmul_2d).
    prev = BLAS_LOCAL_THREADS(1)
    try:
        return go()
    finally:
        BLAS_LOCAL_THREADS(prev)

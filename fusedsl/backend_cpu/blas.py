"""numpy's bundled OpenBLAS for JIT code and the CPU executors: cblas_sgemm's address, one product
list in one native call, and where OpenBLAS runs its threads.

Why our own threads and not OpenBLAS's: the launcher (launch.py) already runs a kernel's blocks
on both cores, each block one sgemm; OpenBLAS's own threads on top wait for each other at every
step and spin against ours (on this shared host a 128^3 product took 44 ms on two OpenBLAS
threads and 0.17 ms on one).  So every caller that runs products on the launcher's threads runs
them with one OpenBLAS thread per calling thread: `one_blas_thread` (a thread-local setting,
openblas_set_num_threads_local) where the library has it, else `single_threaded_blas` (the
process-wide count, restored on exit).
"""
from __future__ import annotations

import ctypes
import functools
import glob
import itertools
import os

import numpy as np

from . import jit
from .launch import KERNEL_PROTO, host_threads, kernel_args, pool

__all__ = ["SGEMM", "BLAS_LOCAL_THREADS", "THREAD_COUNT", "PARALLEL_MACS", "gemm_acc", "gemm_list", "matmul_rows",
           "numpy_product", "one_blas_thread", "row_blocks", "sgemm_address", "single_threaded_blas",
           "vector_addresses"]


def _openblas_libs():
    """numpy's bundled OpenBLAS libraries, loaded (those that load)."""
    root = os.path.join(os.path.dirname(np.__file__), "..", "numpy.libs")
    for path in sorted(glob.glob(os.path.join(root, "libscipy_openblas*.so*"))):
        try:
            yield ctypes.CDLL(path)
        except OSError:
            continue


def _load_sgemm():
    """cblas_sgemm from numpy's bundled OpenBLAS (64-bit integers) and its per-thread
    thread-count setter (openblas_set_num_threads_local), each None when missing."""
    for lib in _openblas_libs():
        for name, int_t in (("scipy_cblas_sgemm64_", ctypes.c_int64), ("scipy_cblas_sgemm", ctypes.c_int32)):
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.restype = None
                fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, int_t, int_t, int_t, ctypes.c_float,
                               ctypes.c_void_p, int_t, ctypes.c_void_p, int_t, ctypes.c_float, ctypes.c_void_p,
                               int_t]
                local = getattr(lib, "openblas_set_num_threads_local", None)
                if local is not None:
                    local.restype, local.argtypes = ctypes.c_int, [ctypes.c_int]
                return fn, local
    return None, None


SGEMM, BLAS_LOCAL_THREADS = _load_sgemm()
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112   # CBLAS's enums

_GEMM_LIST = "fusedsl_gemm_list"
_GEMM_WORDS = 14   # per product: sgemm, transa, transb, m, n, k, alpha bits, a, lda, b, ldb, beta bits, c, ldc


def _gemm_list_ir() -> str:
    """void(i64 first, i64 end, ptr table, ptr): products [first, end) of the table, each one
    cblas_sgemm (row major) through the address in its first word; alpha and beta are the
    bits of a float32 in the low half of their words."""
    names = ["fn", "ta", "tb", "m", "n", "k", "alpha", "a", "lda", "b", "ldb", "beta", "c", "ldc"]
    L = [f"define void @{_GEMM_LIST}(i64 %b0, i64 %b1, ptr noalias %t, ptr %unused) nounwind {{",
         "entry:", "  br label %head", "head:",
         "  %i = phi i64 [ %b0, %entry ], [ %next, %body ]",
         "  %done = icmp uge i64 %i, %b1",
         "  br i1 %done, label %exit, label %body",
         "body:", f"  %base = mul i64 %i, {_GEMM_WORDS}"]
    for j, name in enumerate(names):
        L += [f"  %{name}.o = add i64 %base, {j}",
              f"  %{name}.p = getelementptr i64, ptr %t, i64 %{name}.o",
              f"  %{name}.w = load i64, ptr %{name}.p, align 8"]
    for name in ("fn", "a", "b", "c"):
        L.append(f"  %{name} = inttoptr i64 %{name}.w to ptr")
    for name in ("ta", "tb"):
        L.append(f"  %{name} = trunc i64 %{name}.w to i32")
    for name in ("alpha", "beta"):
        L += [f"  %{name}.i = trunc i64 %{name}.w to i32", f"  %{name} = bitcast i32 %{name}.i to float"]
    L += ["  call void %fn(i32 101, i32 %ta, i32 %tb, i64 %m.w, i64 %n.w, i64 %k.w, float %alpha, ptr %a, "
          "i64 %lda.w, ptr %b, i64 %ldb.w, float %beta, ptr %c, i64 %ldc.w)",
          "  %next = add i64 %i, 1", "  br label %head", "exit:", "  ret void", "}"]
    return "\n".join(L) + "\n"


_GEMM_LIST_FN = []


def gemm_list(products) -> "callable | None":
    """A callable running these products in one native call: each (a, b, c, beta) of float32
    2-D views with unit inner strides, c = a @ b + beta * c; the views' addresses are read
    now (the arrays must stay alive and in place).  None without a 64-bit cblas_sgemm."""
    address = sgemm_address()
    if address is None:
        return None
    if not _GEMM_LIST_FN:
        compiled = jit.compile_ir(_gemm_list_ir(), _GEMM_LIST)
        _GEMM_LIST_FN.append((compiled, KERNEL_PROTO(compiled.address)))
    fn = _GEMM_LIST_FN[0][1]
    one = int(np.array(1.0, np.float32).view(np.uint32))
    rows = []
    for a, b, c, beta in products:
        m, k = a.shape
        n = b.shape[1]
        if not (c.strides[1] == 4 and c.shape == (m, n) and b.shape[0] == k):
            raise ValueError("gemm_list takes float32 2-D views, c with a unit inner stride")
        operands = []
        for x in (a, b):   # row major as it is, or the transpose of a row-major matrix
            if x.strides[1] == 4 and x.strides[0] >= 4 * x.shape[1]:
                operands += [_NO_TRANS, x.strides[0] // 4]
            elif x.strides[0] == 4 and x.strides[1] >= 4 * x.shape[0]:
                operands += [_TRANS, x.strides[1] // 4]
            else:
                return None
        rows.append([address, operands[0], operands[2], m, n, k, one, a.ctypes.data, operands[1],
                     b.ctypes.data, operands[3], int(np.array(beta, np.float32).view(np.uint32)),
                     c.ctypes.data, c.strides[0] // 4])
    table = np.array(rows, np.int64).reshape(-1)
    call = functools.partial(fn, *kernel_args(0, len(rows), table.ctypes.data, 0))   # (launch.kernel_args)
    call.table = table   # alive as long as the call
    return call


def gemm_runs(products, run: int) -> "callable | None":
    """gemm_list's call for products made of independent runs of `run` consecutive products (each
    run writes its own part of c -- a conv's block of columns, every tap in turn): for at least
    PARALLEL_MACS multiply-adds and two runs, the runs handed out in turn to fusedsl's pool
    threads (as row_blocks hands out row blocks), each thread's BLAS on that thread; else the one
    native call on the calling thread.  Each run is the same sgemm calls in the same order either
    way: the same sums.  None where gemm_list is."""
    call = gemm_list(products)
    if call is None:
        return None
    runs = len(products) // run if run > 0 and len(products) % run == 0 else 0
    macs = sum(a.shape[0] * a.shape[1] * b.shape[1] for a, b, _, _ in products)
    threads = min(host_threads(), runs) if macs >= PARALLEL_MACS and BLAS_LOCAL_THREADS is not None else 1
    if threads < 2:
        return call
    fn, table = _GEMM_LIST_FN[0][1], call.table
    address = ctypes.c_void_p(table.ctypes.data)

    def parallel() -> None:
        _handed_out(len(products), run, threads,
                    lambda lo, hi: fn(ctypes.c_int64(lo), ctypes.c_int64(hi), address, None))
    parallel.table = table   # alive as long as the call
    return parallel


def sgemm_address() -> int | None:
    """The address of cblas_sgemm (64-bit integer arguments), for JIT code that calls it."""
    if SGEMM is None or SGEMM.__name__ != "scipy_cblas_sgemm64_":
        return None
    return ctypes.cast(SGEMM, ctypes.c_void_p).value


def numpy_product(m: int, n: int, k: int) -> str | None:
    """The BLAS routine np.matmul multiplies float32 matrices of m x k and k x n with, when it is not
    cblas_sgemm: "dot" (cblas_sdot) for one row times one column, "vecmat" (cblas_sgemv with the
    second operand as its matrix) for one row, "matvec" (cblas_sgemv with the first) for one
    column; None for sgemm.  Each sums in another order than sgemm, so a CPU executor matching numpy
    bit for bit calls the same routine (llvm_kernel.py: its calls' layouts and strides).  A K of 1
    is one exact product per element in every routine, and K = 0 writes zeros: sgemm then."""
    if k <= 1 or (m != 1 and n != 1):
        return None
    return "dot" if m == n == 1 else "vecmat" if m == 1 else "matvec"


def _vector_symbols():
    """(cblas_sgemv, cblas_sdot) of numpy's bundled OpenBLAS (64-bit integers), or None."""
    for lib in _openblas_libs():
        gemv, dot = (getattr(lib, name, None) for name in ("scipy_cblas_sgemv64_", "scipy_cblas_sdot64_"))
        if gemv is not None and dot is not None:
            return gemv, dot
    return None


_VECTOR = _vector_symbols()


def vector_addresses() -> tuple[int, int] | None:
    """The addresses of cblas_sgemv and cblas_sdot (64-bit integer arguments), for JIT code that
    multiplies one row or one column as numpy does (`numpy_product`); None when missing."""
    if _VECTOR is None:
        return None
    return tuple(ctypes.cast(f, ctypes.c_void_p).value for f in _VECTOR)


class single_threaded_blas:
    """`with single_threaded_blas():` OpenBLAS runs each call on the calling thread.

    For callers that already run blocks on both cores (the attention kernel): OpenBLAS's
    own threads on top of ours spin against each other on small products (measured: 8.7 s
    instead of 0.37 s for attention at S=2048).  The setting is process-wide, so it is
    restored on exit."""

    def __enter__(self):
        self.previous = None
        if THREAD_COUNT is not None:
            get, set_ = THREAD_COUNT
            self.previous = get()
            if self.previous != 1:
                set_(1)
        return self

    def __exit__(self, *exc):
        if self.previous not in (None, 1):
            THREAD_COUNT[1](self.previous)
        return False


def _load_thread_control():
    """(get, set) of OpenBLAS's thread count in the library that has SGEMM, or None."""
    for lib in _openblas_libs():
        get = getattr(lib, "scipy_openblas_get_num_threads64_", None)
        set_ = getattr(lib, "scipy_openblas_set_num_threads64_", None)
        if get is not None and set_ is not None:
            get.restype, get.argtypes = ctypes.c_int, []
            set_.restype, set_.argtypes = None, [ctypes.c_int]
            return get, set_
    return None


THREAD_COUNT = _load_thread_control()   # (get, set) of the process-wide count, or None


def gemm_acc(a: np.ndarray, b: np.ndarray, c: np.ndarray, accumulate: bool) -> None:
    """c = a @ b (+ c when accumulating); float32 2-D views with unit inner stride."""
    if SGEMM is None:
        if accumulate:
            c += a @ b
        else:
            np.matmul(a, b, out=c)
        return
    m, k = a.shape
    n = b.shape[1]
    SGEMM(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, m, n, k, 1.0, a.ctypes.data, a.strides[0] // 4, b.ctypes.data,
          b.strides[0] // 4, 1.0 if accumulate else 0.0, c.ctypes.data, c.strides[0] // 4)


class one_blas_thread:
    """`with one_blas_thread():` this thread's OpenBLAS calls run on this thread only (a
    thread-local setting, restored on exit; module doc)."""

    __slots__ = ("previous",)

    def __enter__(self):
        self.previous = BLAS_LOCAL_THREADS(1) if BLAS_LOCAL_THREADS is not None else None
        return self

    def __exit__(self, *exc):
        if self.previous is not None:
            BLAS_LOCAL_THREADS(self.previous)
        return False


# ---- host products in row blocks (backend_cpu/cube_split.py's products, int_product.py's) ---------

# Products of at least this many multiply-adds run as row blocks on fusedsl's pool threads,
# each block one single-threaded sgemm.  OpenBLAS's own threads wait for each other at every
# step: when the other vCPU of this shared host is busy, a 128^3 product took 44 ms on two
# OpenBLAS threads and 0.17 ms on one (512^3: 70 vs 15 ms).  The pool hands blocks out
# dynamically, so a descheduled thread only delays the blocks it holds.
PARALLEL_MACS = 1 << 24


def matmul_rows(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """out = a @ b for C-contiguous float32 matrices: single-threaded sgemm calls on row blocks
    (`row_blocks`), every row's sums those of one sgemm call over all rows."""
    m, k = a.shape
    n = b.shape[1]
    if SGEMM is None or BLAS_LOCAL_THREADS is None or 0 in (m, n, k) or m == 1 or n == 1:
        # numpy runs m or n of 1 as gemv / dot (other sums than sgemm's): the same call here
        with one_blas_thread():
            np.matmul(a, b, out=out)
        return
    row_blocks(m, m * n * k, lambda lo, hi: gemm_acc(a[lo:hi], b, out[lo:hi], False), one_thread=True)


def row_blocks(m: int, macs: int, fn, one_thread: bool = False) -> None:
    """fn(lo, hi) over blocks of rows [0, m): for a product of at least PARALLEL_MACS multiply-adds
    two blocks per pool thread, handed out in turn (each block repacks B: few blocks when K is
    long), each thread's BLAS on that thread; else fn(0, m) here, with BLAS on one thread too when
    `one_thread` (`matmul_rows`'s sgemm calls: one thread's sums, whatever the size)."""
    threads = host_threads() if macs >= PARALLEL_MACS and m >= 32 and BLAS_LOCAL_THREADS is not None else 1
    if threads == 1 and not one_thread:
        fn(0, m)
        return
    rows = -(-m // (threads * 2)) if threads > 1 else m
    # blocks start on a multiple of 64 rows: BLAS runs the rows of an [m, K] product in tiles of
    # its kernel's height (16 on AVX-512) from the first row of each call, and a tail tile may
    # add in another order, so a block boundary off that grid changed a row's float32 sums
    # (one 16-bit product element of 72x35 @ 35x35 rounded 1 ulp away from the one-call product)
    rows = -(-rows // 64) * 64 if threads > 1 else rows
    _handed_out(m, rows, threads, fn)


def _handed_out(total: int, step: int, threads: int, fn) -> None:
    """fn(lo, hi) over [0, total) in blocks of `step`, handed out in turn to `threads` threads (the
    caller's and the pool's: a descheduled thread only delays the blocks it holds), each thread's
    BLAS on that thread."""
    counter = itertools.count(0, step)

    def job():
        prev = BLAS_LOCAL_THREADS(1)
        try:
            for lo in counter:   # next() is atomic under the GIL
                if lo >= total:
                    return
                fn(lo, min(lo + step, total))
        finally:
            BLAS_LOCAL_THREADS(prev)
    if threads == 1:
        job()
    else:
        pool().run(job, [()] * threads)

"""Result and intermediate arrays fusedsl allocates itself, starting on a cache line.

numpy's large buffers come from malloc's mmap'd chunks and start 16 bytes past a page (a
quarter of a 64-byte line in).  A kernel writing whole 64-byte vectors then writes every
line in two halves, and a transpose's streaming stores (backend_cpu/llvm_kernel.py's blocked
transposes), which must write whole aligned lines, fall back to ordinary stores for the register
tiles whose output rows start inside a line.  `empty` returns arrays whose data start on a page (so on a line; why a page: PAGE).

The array is a view of a slightly larger numpy buffer through a ctypes array, not through
another ndarray: numpy collapses a view of a view onto the first array that owns its data,
so with an ndarray in between, `result[1:]` would name the hidden buffer as its base and
not `result`, and the output pool (compiler.OutputPool), which hands a buffer out again
only when nothing but the pool refers to it, would miss that view.  With the ctypes array
as the base, views of the result keep the result itself alive, as for any np.empty array.
"""
from __future__ import annotations

import ctypes
import math

import numpy as np

ALIGN = 64                 # bytes: one cache line, one AVX-512 vector
# Results start on a page, not only on a line: a kernel loads its inputs ahead of its stores,
# and numpy's inputs lie 16 bytes past a page.  A result 64 bytes past a page (line-aligned
# only) put each store at the page offset of the next loads of an input (rms_norm's
# x * rstd * w into y: every vector load of x followed a store to y 48 bytes further in its
# page), which the core takes for a dependence until the store retires ("4K aliasing": the
# loop ran 2.6x slower, [8, 1048576] float32 4.3 -> 2.4 ms best of 60 on one thread, as
# 19faa6c, whose results were numpy's, at the inputs' page offset).
PAGE = 4096
# Below this size np.empty is used as is: the wrapper costs ~2.5 us per array, and small
# arrays are not written with streaming stores (their kernels' time is the call).
MIN_BYTES = 64 << 10


def empty(shape, dtype) -> np.ndarray:
    """np.empty(shape, dtype), C-contiguous, its data 64-byte aligned when it has at least
    MIN_BYTES (smaller ones as numpy places them)."""
    dtype = np.dtype(dtype)
    shape = tuple(shape)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < MIN_BYTES:
        return np.empty(shape, dtype)
    # ctypes keeps every array type it makes (c_char * n) for the life of the process: lengths
    # are rounded up to one of 16 steps per power of two, so that a process allocating many
    # sizes makes a few hundred types at most (the tail is never written: no resident pages)
    step = 1 << max(0, nbytes.bit_length() - 5)
    length = -(-nbytes // step) * step
    raw = np.empty(length + PAGE, np.uint8)
    start = -raw.ctypes.data % PAGE
    return np.ndarray(shape, dtype, buffer=(ctypes.c_char * length).from_buffer(raw, start))


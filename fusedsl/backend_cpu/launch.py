"""Running a compiled kernel's blocks on host threads.

The kernel function runs a range of blocks.  Blocks never share output bytes, so they
need no synchronisation, and ctypes releases the GIL for the duration of a foreign
call, so plain Python threads run blocks in parallel.  The pool's threads are created
once and wait on a queue: starting threads or going through concurrent.futures per
call would cost more than a small kernel runs.

Blocks are handed out dynamically: every thread takes the next few blocks from a
shared counter until none are left.  On a shared machine one vCPU is often slower
than the other (or descheduled for milliseconds); with a static split the launch
would wait for it, with a counter the faster thread simply runs more blocks.
"""
from __future__ import annotations

import ctypes
import functools
import itertools
import os
import queue
import threading

import numpy as np

from . import jit

GRABS_PER_THREAD = 8

# void kernel(i64 block_begin, i64 block_end, i64 *args, void *scratch)
KERNEL_PROTO = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)


def kernel_args(block_begin: int, block_end: int, args_ptr: int, scratch_ptr: int) -> tuple:
    """KERNEL_PROTO's arguments as ctypes objects of its argument types, for a call made again and
    again (a bound call): ctypes converts each Python int into a new object on every call, and
    passes an object of the argument's own type as it is (the 192 x 128 seed's bound call 2.81 ->
    2.66 us)."""
    return (ctypes.c_int64(block_begin), ctypes.c_int64(block_end), ctypes.c_void_p(args_ptr),
            ctypes.c_void_p(scratch_ptr))


def host_threads() -> int:
    """Threads a launch may use: FUSEDSL_NUM_THREADS, else the CPUs this process may run on."""
    env = os.environ.get("FUSEDSL_NUM_THREADS")
    if env and env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class BlockPool:
    """Persistent worker threads; `run` executes calls on them and on the caller's thread."""

    def __init__(self, workers: int):
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._threads = []
        for i in range(workers):
            t = threading.Thread(target=self._work, name=f"fusedsl-cpu-{i}", daemon=True)
            t.start()
            self._threads.append(t)

    @property
    def workers(self) -> int:
        return len(self._threads)

    def _work(self) -> None:
        while True:
            fn, call_args, done = self._jobs.get()
            try:
                fn(*call_args)
                done.put(None)
            except BaseException as exc:   # handed to the caller, which re-raises it
                done.put(exc)

    def run(self, fn, calls: list[tuple]) -> None:
        """fn(*calls[0]) here, the others on workers; returns when all are done."""
        done: queue.SimpleQueue = queue.SimpleQueue()
        for call_args in calls[1:]:
            self._jobs.put((fn, call_args, done))
        error = None
        try:
            fn(*calls[0])
        except BaseException as exc:
            error = exc
        for _ in calls[1:]:
            result = done.get()
            if error is None and result is not None:
                error = result
        if error is not None:
            raise error


def run_blocks(fn, block_dim: int, args_ptr: int, scratch: list[int]) -> None:
    """Blocks [0, block_dim) of kernel `fn` on len(scratch) threads (one scratch row each)."""
    threads = len(scratch)
    # blocks per grab: fewer foreign calls, yet a late thread holds up the end by one grab only
    chunk = max(1, block_dim // (threads * GRABS_PER_THREAD))
    counter = itertools.count(0, chunk)       # next() is atomic under the GIL

    def job(scratch_ptr):
        for lo in counter:
            if lo >= block_dim:
                return
            fn(lo, min(lo + chunk, block_dim), args_ptr, scratch_ptr)

    pool().run(job, [(s,) for s in scratch])


_pool: BlockPool | None = None
_pool_lock = threading.Lock()


def pool() -> BlockPool:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = BlockPool(host_threads() - 1)
        return _pool


def compiled_once(make_ir, symbol: str):
    """A getter of the process-wide native function `symbol`, compiled from make_ir() on first use
    (a helper kernel every call shares: the call lists, the direct conv, the window copies); the
    compiled module is kept beside the ctypes function so its code stays mapped."""
    kept: list = []
    lock = threading.Lock()

    def get():
        if not kept:
            with lock:
                if not kept:
                    compiled = jit.compile_ir(make_ir(), symbol)
                    kept.append((compiled, KERNEL_PROTO(compiled.address)))
        return kept[0][1]
    return get


def table_call(fn, rows: list[list[int]]):
    """A bound call of a helper kernel over a table of int64 rows (one job each, all in one
    foreign call); `call.table` keeps the table alive, `call.native` is the raw call for a call list."""
    table = np.array(rows, np.int64).reshape(-1)
    count, address = len(rows), table.ctypes.data
    call = functools.partial(fn, *kernel_args(0, count, address, 0))
    call.table = table
    call.native = (fn, 0, count, address, 0)
    return call


"""Bound native calls, many in one foreign call: `native_list`.

A program's steps (program.py) are mostly one call of a JIT kernel each, made through ctypes:
~0.5 us of argument conversion and GIL release per call plus a Python frame, more than a small
kernel computes (a depthwise convolution's weight is built by ~65 kernels of a few hundred
bytes each; a scan is one kernel per log2 step).  A bound call that is exactly one serial call
`kernel(a0, a1, a2, a3)` of the launch convention (launch.KERNEL_PROTO) says so by carrying
`native = (cfunc, a0, a1, a2, a3)`; consecutive such steps run from ONE foreign call of a JIT
loop over a table of (address, a0, a1, a2, a3) rows, in order.
"""
from __future__ import annotations

import ctypes
import functools

import numpy as np

from .launch import compiled_once, kernel_args

SYMBOL = "fusedsl_native_list"
_WORDS = 5     # per call: the kernel's address, then its four arguments


def _ir() -> str:
    """void(i64 first, i64 end, ptr table, ptr): calls [first, end) of the table, each an
    indirect call of the launch convention (written as text: an indirect call through an
    opaque pointer needs its function type, which llvmlite's builder does not take)."""
    L = [f"define void @{SYMBOL}(i64 %b0, i64 %b1, ptr noalias %t, ptr %unused) nounwind {{",
         "entry:", "  br label %head", "head:",
         "  %i = phi i64 [ %b0, %entry ], [ %next, %body ]",
         "  %done = icmp uge i64 %i, %b1",
         "  br i1 %done, label %exit, label %body",
         "body:", f"  %base = mul i64 %i, {_WORDS}"]
    for j in range(_WORDS):
        L += [f"  %o{j} = add i64 %base, {j}",
              f"  %p{j} = getelementptr i64, ptr %t, i64 %o{j}",
              f"  %w{j} = load i64, ptr %p{j}, align 8"]
    L += ["  %fn = inttoptr i64 %w0 to ptr", "  %a2 = inttoptr i64 %w3 to ptr", "  %a3 = inttoptr i64 %w4 to ptr",
          "  call void %fn(i64 %w1, i64 %w2, ptr %a2, ptr %a3)",
          "  %next = add i64 %i, 1", "  br label %head", "exit:", "  ret void", "}"]
    return "\n".join(L) + "\n"


_function = compiled_once(lambda: _ir(), SYMBOL)


def address(cfunc) -> int:
    """The entry address of a ctypes function object."""
    return ctypes.cast(cfunc, ctypes.c_void_p).value


def native_of(call):
    """(cfunc, a0, a1, a2, a3) when calling `call()` is exactly that one serial kernel call."""
    return getattr(call, "native", None)


def native_list(calls):
    """One callable running these bound calls in order; each has `native` (module docstring).
    The calls (and the argument blocks they keep alive) are kept with it."""
    rows = []
    for c in calls:
        cfunc, a0, a1, a2, a3 = c.native
        rows.append([address(cfunc), a0, a1, a2 or 0, a3 or 0])
    fn = _function()
    table = np.array(rows, np.int64).reshape(-1)
    call = functools.partial(fn, *kernel_args(0, len(rows), table.ctypes.data, 0))   # (launch.kernel_args)
    call.table, call.calls = table, list(calls)
    return call


def group(calls) -> list:
    """`calls` with every run of two or more consecutive native calls made one native_list
    call (a lone native call stays itself)."""
    out, run = [], []

    def flush():
        if len(run) >= 2:
            out.append(native_list(run))
        else:
            out.extend(run)
        run.clear()

    for c in calls:
        if native_of(c) is not None:
            run.append(c)
        else:
            flush()
            out.append(c)
    flush()
    return out

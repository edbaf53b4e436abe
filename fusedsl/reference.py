"""The numpy reference interpreter of graph IR: the semantic oracle.

Each op runs its registry `ref` on numpy arrays.  16-bit float operands are widened
to float32 first and every result is rounded to its result dtype, so all
executors share one rounding rule: once per op.
"""
from __future__ import annotations

import numpy as np

from . import dtypes as dt
from .ir.core import Function, Module
from .ir.ops import REGISTRY

_WIDEN = {dt.float16.np, dt.bfloat16.np}


def _widen(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32) if x.dtype in _WIDEN else x


def run_function(module: Module, fn: Function, args) -> tuple[np.ndarray, ...]:
    """Run `fn` on arrays/scalars given in parameter order; returns its results."""
    env: dict[int, np.ndarray] = {}
    for p, a in zip(fn.params, args):
        env[id(p.value)] = np.asarray(a, dtype=p.value.dtype.np)
    for op in fn.ops:
        inputs = [env[id(v)] for v in op.operands]
        if op.name == "call":
            outs = run_function(module, module.function(op.attr("callee")), inputs)
        else:
            raw = REGISTRY[op.name].ref([_widen(x) for x in inputs], dict(op.attrs))
            outs = raw if isinstance(raw, tuple) else (raw,)
        for v, out in zip(op.results, outs):
            env[id(v)] = _round(np.asarray(out), v.dtype)
    return tuple(env[id(v)] for v in fn.results)


def _round(x: np.ndarray, dtype: dt.DType) -> np.ndarray:
    if x.dtype == dtype.np:
        return x
    if dtype.is_int and x.dtype.kind in "iub":
        return x.astype(np.int64).astype(dtype.np)  # wrap like the hardware
    with np.errstate(all="ignore"):
        return x.astype(dtype.np)


def run_module(module: Module, args) -> tuple[np.ndarray, ...]:
    return run_function(module, module.main, args)

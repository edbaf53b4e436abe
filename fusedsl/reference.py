"""The numpy reference interpreter of graph IR: the semantic oracle.

Each op runs its registry `ref` on numpy arrays.  16-bit float operands are widened
to float32 first and every result is rounded to its result dtype, so all
executors share one rounding rule: once per op.
"""
from __future__ import annotations

import numpy as np

from . import dtypes as dt
from .errors import FusedslError
from .ir.core import Function, Module
from .ir.ops import CALL, REGISTRY, has_trait

_WIDEN = {dt.float16.np, dt.bfloat16.np}


def _widen(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32) if x.dtype in _WIDEN else x


def run_function(module: Module, fn: Function, args) -> tuple[np.ndarray, ...]:
    """Run `fn` on arrays/scalars given in parameter order; returns its results."""
    env: dict[int, np.ndarray] = {}
    symbols: dict[str, int] = {}
    for p, a in zip(fn.params, args):
        arr = np.asarray(a, dtype=p.value.dtype.np)
        if p.value.type.is_static and arr.shape != p.value.shape and arr.size == 1:
            # a 0-d argument may arrive as shape (1,) (np.ascontiguousarray promotes
            # 0-d arrays to 1-d); the parameter's type says which shape it has
            arr = arr.reshape(p.value.shape)
        for dim, size in zip(p.value.shape, arr.shape):
            if isinstance(dim, str):
                symbols[dim] = size
        env[id(p.value)] = arr
    for op in fn.ops:
        inputs = [env[id(v)] for v in op.operands]
        if has_trait(op, CALL):
            outs = run_function(module, module.function(op.attr("callee")), inputs)
        else:
            attrs = {k: _bind_symbols(v, symbols) for k, v in op.attrs}
            try:
                raw = REGISTRY[op.name].ref([_widen(x) for x in inputs], attrs)
            except FusedslError as exc:   # a check on the values (take's range): at the op's line
                if exc.loc is None:
                    raise type(exc)(exc.message, loc=op.loc, hint=exc.hint) from None
                raise
            outs = raw if isinstance(raw, tuple) else (raw,)
        for v, out in zip(op.results, outs):
            env[id(v)] = _round(np.asarray(out), v.dtype)
    # Fresh C-ordered arrays: a result may be a parameter, a view of one (reshape,
    # broadcast_to, transpose) or returned twice; callers must not alias inputs.
    return tuple(np.array(env[id(v)], order="C") for v in fn.results)


def _bind_symbols(value, symbols: dict[str, int]):
    """A list attribute with its symbolic dimensions ("M") replaced by their sizes.

    Symbolic dimensions only appear inside list attributes (reshape/broadcast_to
    shapes, slice stops); plain string attributes (dtype, callee) stay as they are.
    """
    if not isinstance(value, tuple):
        return value
    return tuple(symbols.get(v, v) if isinstance(v, str) else _bind_symbols(v, symbols) for v in value)


def _round(x: np.ndarray, dtype: dt.DType) -> np.ndarray:
    if x.dtype == dtype.np:
        return x
    if dtype.is_int and x.dtype.kind in "iub":
        return x.astype(np.int64).astype(dtype.np)  # wrap like the hardware
    with np.errstate(all="ignore"):
        return x.astype(dtype.np)


def run_module(module: Module, args) -> tuple[np.ndarray, ...]:
    return run_function(module, module.main, args)

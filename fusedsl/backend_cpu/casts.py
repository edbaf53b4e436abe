"""float16 / bfloat16 <-> float32 conversions of whole arrays, natively.

The CPU computes 16-bit products in float32 on BLAS (a matmul kernel's blocks, a split cube
kernel's product: cube_split.py): it widens the operands, rounds the product to the result dtype
and writes it out.  numpy's
float32 -> float16 cast ran at ~25 ns per element here (a scalar loop), more than the BLAS
call for a 1024^3 product's result; these loops use the vector conversions (vcvtps2ph /
vcvtph2ps with F16C, shifts and adds for bfloat16) and round exactly as the reference does:
to nearest even, a NaN stays a NaN (bfloat16: quieted, as stmts.round_to does).
"""
from __future__ import annotations

import ctypes

import numpy as np

from .. import dtypes as dt
from . import jit

LANES = 16
_PROTO = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)


def _ops(kind: str, d: str, n: int, x: str, p: str) -> tuple[list[str], str]:
    """IR lines computing `kind` ("widen", "narrow", "round") of value %{p}.x (n lanes) and the
    name of the result."""
    v = (lambda t: f"<{n} x {t}>") if n > 1 else (lambda t: t)

    def splat(c, t="i32"):
        return f"<{', '.join([f'{t} {c}'] * n)}>" if n > 1 else str(c)
    L = []
    if kind == "widen":
        if d == "float16":
            L.append(f"  %{p}.r = fpext {v('half')} {x} to {v('float')}")
        else:
            L += [f"  %{p}.z = zext {v('i16')} {x} to {v('i32')}",
                  f"  %{p}.s = shl {v('i32')} %{p}.z, {splat(16)}",
                  f"  %{p}.r = bitcast {v('i32')} %{p}.s to {v('float')}"]
        return L, f"%{p}.r"
    # narrow (to the 16-bit memory form) or round (to the dtype's precision, kept in float32)
    if d == "float16":
        L.append(f"  %{p}.h = fptrunc {v('float')} {x} to {v('half')}")
        if kind == "narrow":
            return L, f"%{p}.h"
        L.append(f"  %{p}.r = fpext {v('half')} %{p}.h to {v('float')}")
        return L, f"%{p}.r"
    L += [f"  %{p}.b = bitcast {v('float')} {x} to {v('i32')}",
          f"  %{p}.hi = lshr {v('i32')} %{p}.b, {splat(16)}",
          f"  %{p}.odd = and {v('i32')} %{p}.hi, {splat(1)}",
          f"  %{p}.a1 = add {v('i32')} %{p}.b, {splat(0x7FFF)}",
          f"  %{p}.a2 = add {v('i32')} %{p}.a1, %{p}.odd",
          f"  %{p}.q = or {v('i32')} %{p}.b, {splat(0x00400000)}",
          f"  %{p}.nan = fcmp uno {v('float')} {x}, {x}",
          f"  %{p}.sel = select {v('i1')} %{p}.nan, {v('i32')} %{p}.q, {v('i32')} %{p}.a2"]
    if kind == "narrow":
        L += [f"  %{p}.sh = lshr {v('i32')} %{p}.sel, {splat(16)}",
              f"  %{p}.r = trunc {v('i32')} %{p}.sh to {v('i16')}"]
    else:
        L += [f"  %{p}.m = and {v('i32')} %{p}.sel, {splat(-65536)}",
              f"  %{p}.r = bitcast {v('i32')} %{p}.m to {v('float')}"]
    return L, f"%{p}.r"


def _ir(kind: str, d: str) -> str:
    mem16 = "half" if d == "float16" else "i16"
    src_t, dst_t = {"widen": (mem16, "float"), "narrow": ("float", mem16), "round": ("float", "float")}[kind]
    name = f"fusedsl_{kind}_{d}"
    L = [f"define void @{name}(ptr noalias %src, ptr noalias %dst, i64 %n) nounwind {{",
         "entry:",
         f"  %nv = and i64 %n, {-LANES}",
         "  br label %v.head"]
    for tag, lanes, start, end in (("v", LANES, "0", "%nv"), ("s", 1, "%nv", "%n")):
        vt = (lambda t: f"<{lanes} x {t}>") if lanes > 1 else (lambda t: t)
        prev = "entry" if tag == "v" else "v.head"
        ops, res = _ops(kind, d, lanes, f"%{tag}.x", tag)
        L += [f"{tag}.head:",
              f"  %{tag}.i = phi i64 [ {start}, %{prev} ], [ %{tag}.next, %{tag}.body ]",
              f"  %{tag}.done = icmp uge i64 %{tag}.i, {end}",
              f"  br i1 %{tag}.done, label %{'s.head' if tag == 'v' else 'exit'}, label %{tag}.body",
              f"{tag}.body:",
              f"  %{tag}.ip = getelementptr {src_t}, ptr %src, i64 %{tag}.i",
              f"  %{tag}.x = load {vt(src_t)}, ptr %{tag}.ip, align 2",
              *ops,
              f"  %{tag}.op = getelementptr {dst_t}, ptr %dst, i64 %{tag}.i",
              f"  store {vt(dst_t)} {res}, ptr %{tag}.op, align 2",
              f"  %{tag}.next = add i64 %{tag}.i, {lanes}",
              f"  br label %{tag}.head"]
    L += ["exit:", "  ret void", "}"]
    return "\n".join(L) + "\n"


_FUNCS: dict[tuple[str, str], tuple] = {}


def _fn(kind: str, d: str):
    key = (kind, d)
    hit = _FUNCS.get(key)
    if hit is None:
        compiled = jit.compile_ir(_ir(kind, d), f"fusedsl_{kind}_{d}")
        hit = _FUNCS[key] = (compiled, _PROTO(compiled.address))
    return hit[1]


def native(kind: str, dtype):
    """The native loop fn(src_address, dst_address, n) of `kind` ("widen": 16-bit -> float32,
    "narrow": float32 -> 16-bit, rounding; "round": float32 in place) for float16 / bfloat16,
    for callers that convert parts of arrays they keep (cube's row blocks)."""
    if dtype not in (dt.float16, dt.bfloat16):
        raise ValueError(f"no native {kind} for {dtype}")
    return _fn(kind, dtype.name)


def _native(a: np.ndarray) -> bool:
    return a.flags.c_contiguous and a.size > 0


def widen(x: np.ndarray) -> np.ndarray:
    """x as a new C-contiguous float32 array (float16 / bfloat16 converted natively)."""
    d = dt.to_dtype(x.dtype) if x.dtype != np.float32 else dt.float32
    if d not in (dt.float16, dt.bfloat16) or not _native(x):
        return np.ascontiguousarray(x, dtype=np.float32)
    out = np.empty(x.shape, np.float32)
    _fn("widen", d.name)(x.ctypes.data, out.ctypes.data, x.size)
    return out


def round_in_place(block: np.ndarray, dtype) -> None:
    """Round float32 `block` in place to `dtype`'s precision (a no-op for float32)."""
    if dtype == dt.float32:
        return
    if dtype in (dt.float16, dt.bfloat16) and _native(block):
        _fn("round", dtype.name)(block.ctypes.data, block.ctypes.data, block.size)
    else:
        block[...] = block.astype(dtype.np)


def narrow_into(out: np.ndarray, block: np.ndarray) -> bool:
    """out[...] = block (float32, already exact in out's dtype) natively; False when this
    module does not handle the pair (the caller copies)."""
    if block.dtype != np.float32 or out.shape != block.shape or not (_native(out) and _native(block)):
        return False
    d = dt.to_dtype(out.dtype) if out.dtype != np.float32 else dt.float32
    if d not in (dt.float16, dt.bfloat16):
        return False
    _fn("narrow", d.name)(block.ctypes.data, out.ctypes.data, block.size)
    return True

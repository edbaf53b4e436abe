"""Cube (Matmul high-level API) tiling computed by fusedsl for a target (issue 8).

A matmul kernel with a fused vector epilogue keeps one baseM x baseN tile of C in UB, so the
tiling must fit every cube buffer of the target (L1, L0A, L0B, L0C, from targets.py) AND
leave UB room for the epilogue. The rules follow the ones fusedsl's CPU implementation of
CANN's tiling API enforces (cpu/include/tiling/tiling_api.h), so the TCubeTiling printed in
a kernel is the one the host tiling API would produce: base block at most 128 x 256 halved
until one L0C buffer (f32 accumulator) fits, baseK the largest multiple of the 32-byte K
fractal that lets L0A/L0B double-buffer, then as many K steps of A/B panels in L1 as fit.
Errors name the buffer and the bytes needed vs available (reason code FS110).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import ScheduleError, TargetError
from .targets import Target, get_target

_ACC = 4  # L0C accumulates in float / int32


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _up(a: int, b: int) -> int:
    return _ceil(a, b) * b


@dataclass(frozen=True)
class CubeTiling:
    """The TCubeTiling fields fusedsl prints, plus the bytes each buffer uses."""
    M: int
    N: int
    K: int
    used_core_num: int
    single_core_m: int
    single_core_n: int
    base_m: int
    base_n: int
    base_k: int
    step_k: int
    depth_a1: int
    depth_b1: int
    is_bias: bool
    db_l0c: int
    l1_bytes: int
    l0a_bytes: int
    l0b_bytes: int
    l0c_bytes: int
    ub_tile_bytes: int


def _size(dtype: str) -> int:
    return np.dtype(dtype).itemsize


def cube_tiling(target: str | Target, m: int, n: int, k: int, *, a_dtype: str = "float16",
                b_dtype: str = "float16", c_dtype: str = "float32",
                bias_dtype: str | None = None, cores: int | None = None,
                ub_bytes_per_c_elem: int | None = None) -> CubeTiling:
    """Tiling of an M x N x K matmul for `target`.

    `ub_bytes_per_c_elem` is the UB the epilogue needs per element of a C tile (C itself plus
    its temporaries); default: the C element only.
    """
    t = get_target(target)
    if not t.matmul_dtypes:
        raise TargetError(f"{t.name} has no Matmul high-level API (ASCENDC.md §3.1): a cube "
                          f"kernel (matmul {m}x{k} @ {k}x{n}) cannot be printed for it",
                          hint="compile for ascend910b or ascend310p")
    if min(m, n, k) < 1:
        raise ScheduleError(f"matmul sizes must be positive, got M={m} N={n} K={k}")
    sa, sb, sc = _size(a_dtype), _size(b_dtype), _size(c_dtype)
    sbias = _size(bias_dtype) if bias_dtype else 0
    per_c = ub_bytes_per_c_elem if ub_bytes_per_c_elem is not None else sc
    c0k = 32 // sa
    dim = cores if cores is not None else t.aic_cores
    best = None
    for md in range(1, dim + 1):
        nd = dim // md
        sm = min(m, _up(_ceil(m, md), 16))
        sn = min(n, _up(_ceil(n, nd), 16))
        used = _ceil(m, sm) * _ceil(n, sn)
        if used > dim:
            continue
        key = (sm * sn, -used)
        if best is None or key <= best[0]:
            best = (key, sm, sn, used)
    _, single_m, single_n, used = best
    base_m = min(_up(single_m, 16), 128)
    base_n = min(_up(single_n, 16), 256)
    ub = t.ub_bytes
    # Shrink the base block until L0C holds it and the epilogue's UB tile fits.
    while base_m * base_n * _ACC > t.l0c_bytes or base_m * base_n * per_c > ub:
        if base_n >= base_m and base_n > 16:
            base_n //= 2
        elif base_m > 16:
            base_m //= 2
        else:
            need_l0c, need_ub = 16 * 16 * _ACC, 16 * 16 * per_c
            if need_l0c > t.l0c_bytes:
                raise ScheduleError(f"FS110: a 16 x 16 base block needs {need_l0c} bytes of L0C, "
                                    f"{t.name} has {t.l0c_bytes}")
            raise ScheduleError(f"FS110: the epilogue of a 16 x 16 tile of C needs {need_ub} bytes "
                                f"of UB, {t.name} has {ub}",
                                hint="split the epilogue into its own kernel")
        base_m, base_n = _up(base_m, 16), _up(base_n, 16)
    db_l0c = 2 if 2 * base_m * base_n * _ACC <= t.l0c_bytes else 1
    kmax = min(t.l0a_bytes // (2 * base_m * sa), t.l0b_bytes // (2 * base_n * sb))
    base_k = min(kmax // c0k * c0k, _up(k, c0k))
    if base_k < c0k:
        raise ScheduleError(f"FS110: base block {base_m} x {base_n} leaves no K fractal in "
                            f"L0A/L0B ({t.l0a_bytes}/{t.l0b_bytes} bytes)")
    ksteps = _ceil(k, base_k)
    bias_bytes = base_n * sbias
    panel = base_m * base_k * sa + base_n * base_k * sb
    for s in range(ksteps, 0, -1):
        found = next((d for d in (2, 1) if d * s * panel + bias_bytes <= t.l1_bytes), 0)
        if found:
            step_k, db = s, found
            break
    else:
        raise ScheduleError(f"FS110: one K step of A and B ({panel + bias_bytes} bytes) does not "
                            f"fit the {t.l1_bytes} bytes of L1 of {t.name}")
    return CubeTiling(M=m, N=n, K=k, used_core_num=used, single_core_m=single_m,
                      single_core_n=single_n, base_m=base_m, base_n=base_n, base_k=base_k,
                      step_k=step_k, depth_a1=db * step_k, depth_b1=db * step_k,
                      is_bias=bool(bias_dtype), db_l0c=db_l0c,
                      l1_bytes=db * step_k * panel + bias_bytes,
                      l0a_bytes=2 * base_m * base_k * sa, l0b_bytes=2 * base_n * base_k * sb,
                      l0c_bytes=db_l0c * base_m * base_n * _ACC,
                      ub_tile_bytes=base_m * base_n * per_c)

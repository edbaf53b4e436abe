"""The host CPU's features as LLVM names them (avx512f, fma, ...): what the JIT compiles for, and
part of the key of every cached module (a cache shared by two hosts never hands one the other's
code)."""
from __future__ import annotations

__all__ = ["host_features"]


def host_features() -> frozenset[str]:
    """The features the host CPU has ("+avx2" -> "avx2")."""
    import llvmlite.binding as llvm   # the binding loads LLVM's shared library: only when a kernel compiles
    return frozenset(f[1:] for f in llvm.get_host_cpu_features().flatten().split(",") if f.startswith("+"))

"""From traced graph IR to a CompiledKernel: runs the pipeline and picks the executor."""
from __future__ import annotations

import os

import numpy as np

from .errors import ArgumentError, user_frame
from .ir.core import Module
from .ir.printer import print_module
from .passes.pipeline import canonicalize
from .reference import run_module


class Config:
    """Process-wide settings.  `executor` is "reference" (numpy interpreter) or "llvm"."""

    def __init__(self):
        self.executor = os.environ.get("FUSEDSL_EXECUTOR", "reference")


config = Config()


class CompiledKernel:
    """A kernel specialised for one set of argument shapes/dtypes/constants."""

    def __init__(self, graph: Module, module: Module, infos, target, options):
        self.graph = graph            # as traced
        self.module = module          # after the pipeline
        self.infos = tuple(infos)
        self.target = target
        self.options = dict(options)
        self.runtime_infos = tuple(i for i in self.infos if i.kind != "const")

    @property
    def ir(self) -> str:
        return print_module(self.module)

    @property
    def name(self) -> str:
        return self.module.main.name

    def __repr__(self) -> str:
        return f"<CompiledKernel {self.name}>"

    # ---- arguments --------------------------------------------------------------
    def bind_args(self, args) -> list[np.ndarray]:
        """Runtime arguments checked against the specialisation (symbolic dims bound)."""
        if len(args) == len(self.infos) and len(self.infos) != len(self.runtime_infos):
            args = [a for a, i in zip(args, self.infos) if i.kind != "const"]
        if len(args) != len(self.runtime_infos):
            names = ", ".join(i.name for i in self.runtime_infos)
            raise ArgumentError(f"{self.name} takes {len(self.runtime_infos)} runtime argument(s) ({names}), "
                                f"got {len(args)}", loc=user_frame())
        symbols: dict[str, int] = {}
        arrays = []
        for arg, info in zip(args, self.runtime_infos):
            arr = np.asarray(arg)
            want = info.type
            if arr.dtype != want.dtype.np:
                raise ArgumentError(f"argument {info.name!r} has dtype {arr.dtype}, the kernel was compiled "
                                    f"for {want.dtype}", loc=user_frame(),
                                    hint=f"convert with .astype(np.{want.dtype.np.name}) or compile again")
            if arr.ndim != len(want.shape):
                raise ArgumentError(f"argument {info.name!r} has shape {arr.shape}, the kernel was compiled "
                                    f"for {want.shape}", loc=user_frame())
            for got, dim in zip(arr.shape, want.shape):
                if isinstance(dim, str):
                    if symbols.setdefault(dim, got) != got:
                        raise ArgumentError(f"symbolic dimension {dim} is {symbols[dim]} in one argument and "
                                            f"{got} in {info.name!r}", loc=user_frame())
                elif dim != got:
                    raise ArgumentError(f"argument {info.name!r} has shape {arr.shape}, the kernel was "
                                        f"compiled for {want.shape}", loc=user_frame())
            arrays.append(np.ascontiguousarray(arr))
        self._symbols = symbols
        return arrays

    def check_out(self, out, results_meta):
        outs = out if isinstance(out, tuple) else (out,)
        if len(outs) != len(results_meta):
            raise ArgumentError(f"out= needs {len(results_meta)} array(s), got {len(outs)}", loc=user_frame())
        for o, (shape, dtype) in zip(outs, results_meta):
            if not isinstance(o, np.ndarray) or o.shape != shape or o.dtype != dtype:
                got = f"{o.shape} {o.dtype}" if isinstance(o, np.ndarray) else type(o).__name__
                raise ArgumentError(f"out= array must be {shape} {dtype}, got {got}", loc=user_frame())
            if not o.flags.c_contiguous or not o.flags.writeable:
                raise ArgumentError("out= arrays must be writeable and C-contiguous", loc=user_frame())
        return outs

    # ---- execution --------------------------------------------------------------
    def run(self, args, out=None):
        arrays = self.bind_args(args)
        results = run_module(self.module, arrays)
        if out is not None:
            outs = self.check_out(out, [(r.shape, r.dtype) for r in results])
            for o, r in zip(outs, results):
                np.copyto(o, r)
            results = outs
        return results[0] if len(results) == 1 else tuple(results)


def compile_module(graph: Module, infos, target=None, options=None) -> CompiledKernel:
    module = canonicalize(graph)
    return CompiledKernel(graph, module, infos, target, options or {})

"""`@fused_kernel`, argument specs, and the per-specialisation compile cache."""
from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass

import numpy as np

from .. import dtypes as dt
from ..errors import ArgumentError, FusedslError, Loc, TraceError, strip_internal_frames, user_frame
from ..ir.builder import Builder
from ..ir.core import Module, TensorType
from .api import to_dtype
from .tracing import Tensor, Trace, is_python_scalar, python_scalar


@dataclass(frozen=True)
class TensorSpec:
    """A tensor argument described by shape and dtype; str dims are symbolic ("M")."""

    shape: tuple
    dtype: dt.DType


@dataclass(frozen=True)
class ScalarSpec:
    """A runtime scalar kernel argument (`fs.scalar("alpha", "float32")`)."""

    name: str
    dtype: dt.DType


def spec(shape, dtype="float32") -> TensorSpec:
    if isinstance(shape, (int, str)):
        shape = (shape,)
    dims = []
    for d in shape:
        if isinstance(d, (int, np.integer)) and d >= 0:
            dims.append(int(d))
        elif isinstance(d, str) and d.isidentifier():
            dims.append(d)
        else:
            raise ArgumentError(f"fs.spec dimension {d!r} must be a non-negative int or a name like 'M'",
                                loc=user_frame())
    return TensorSpec(tuple(dims), to_dtype(dtype))


def scalar(name: str, dtype="float32") -> ScalarSpec:
    if not isinstance(name, str) or not name.isidentifier():
        raise ArgumentError(f"fs.scalar name {name!r} must be an identifier", loc=user_frame())
    return ScalarSpec(name, to_dtype(dtype))


def user_facing(method):
    """Re-raise fusedsl errors with fusedsl's own frames cut from the traceback."""
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except FusedslError as exc:
            raise exc.with_traceback(strip_internal_frames(exc.__traceback__)) from None
    return wrapper


@dataclass(frozen=True)
class ArgInfo:
    """How one positional parameter was specialised."""

    name: str
    kind: str                 # "tensor" | "scalar" | "const"
    type: TensorType | None   # for tensor and scalar
    value: object = None      # for const

    @property
    def key(self):
        if self.kind == "const":
            return ("const", type(self.value).__name__, self.value)
        return (self.kind, self.type.shape, self.type.dtype.name)


def describe_arg(name: str, arg) -> ArgInfo:
    if isinstance(arg, TensorSpec):
        return ArgInfo(name, "tensor", TensorType(arg.shape, arg.dtype))
    if isinstance(arg, ScalarSpec):
        return ArgInfo(arg.name, "scalar", TensorType((), arg.dtype))
    if isinstance(arg, Tensor):
        raise ArgumentError("a traced tensor was passed to a kernel call inside another kernel",
                            loc=user_frame(), hint="call the inner function directly, without its decorator")
    if is_python_scalar(arg) and not isinstance(arg, np.ndarray):
        return ArgInfo(name, "const", None, python_scalar(arg))
    if isinstance(arg, (np.ndarray, list, tuple)) or hasattr(arg, "__array_interface__"):
        arr = np.asarray(arg)
        return ArgInfo(name, "tensor", TensorType(tuple(arr.shape), to_dtype(arr.dtype)))
    raise ArgumentError(f"argument {name!r} of type {type(arg).__name__} is not an array, fs.spec, "
                        "fs.scalar or Python number", loc=user_frame())


class FusedKernel:
    """A user function compiled once per (shapes, dtypes, constants, options) and cached."""

    def __init__(self, fn, options: dict):
        if not callable(fn):
            raise ArgumentError("@fs.fused_kernel decorates a function", loc=user_frame())
        self.fn = fn
        self.options = dict(options)
        self.signature = inspect.signature(fn)
        code = fn.__code__
        self.def_loc = Loc(code.co_filename, code.co_firstlineno)
        self._cache: dict = {}
        functools.update_wrapper(self, fn)

    def __repr__(self) -> str:
        return f"<fused_kernel {self.fn.__name__} at {self.def_loc}>"

    # ---- binding and tracing ----------------------------------------------------
    def _bind(self, args, kwargs) -> list:
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as exc:
            params = ", ".join(self.signature.parameters)
            raise ArgumentError(f"{self.fn.__name__}() {exc}".replace(f"{self.fn.__name__}() missing", "missing"),
                                loc=user_frame(),
                                hint=f"{self.fn.__name__}({params}) is defined at {self.def_loc}") from None
        bound.apply_defaults()
        values = []
        for name, value in bound.arguments.items():
            kind = self.signature.parameters[name].kind
            if kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                raise ArgumentError("kernels with *args or **kwargs are not supported", loc=self.def_loc)
            values.append((name, value))
        return values

    def _infos(self, args, kwargs) -> tuple[ArgInfo, ...]:
        return tuple(describe_arg(name, value) for name, value in self._bind(args, kwargs))

    def _trace(self, infos: tuple[ArgInfo, ...]) -> Module:
        builder = Builder(self.fn.__name__, self.def_loc)
        trace = Trace(builder)
        call_args = []
        for info in infos:
            if info.kind == "const":
                call_args.append(info.value)
            else:
                call_args.append(Tensor(builder.param(info.type, info.name, info.kind), trace))
        out = self.fn(*call_args)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        if not outs:
            raise TraceError(f"{self.fn.__name__} returns nothing; a kernel must return tensors",
                             loc=self.def_loc)
        values = []
        for o in outs:
            if isinstance(o, Tensor):
                values.append(o.value)
            elif is_python_scalar(o):
                raise TraceError(f"{self.fn.__name__} returns a Python number, not a tensor",
                                 loc=self.def_loc, hint="return a tensor, e.g. fs.broadcast_to(...)")
            else:
                raise TraceError(f"{self.fn.__name__} returns a {type(o).__name__}, not a tensor",
                                 loc=self.def_loc)
        return Module((builder.finish(values),))

    # ---- public surface ---------------------------------------------------------
    @user_facing
    def trace(self, *args, **kwargs) -> Module:
        """The traced graph IR for these arguments (arrays, fs.spec, fs.scalar, numbers)."""
        return self._trace(self._infos(args, kwargs))

    @user_facing
    def compile(self, *args, target: str | None = None, **options):
        """Trace and compile for these arguments; returns a CompiledKernel."""
        return self._compiled(self._infos(args, kwargs={}), target, options)

    @user_facing
    def __call__(self, *args, out=None, **kwargs):
        infos = self._infos(args, kwargs)
        compiled = self._compiled(infos, None, {})
        runtime = [v for (_, v), info in zip(self._bind(args, kwargs), infos) if info.kind != "const"]
        return compiled.run(runtime, out=out)

    def _compiled(self, infos, target, options):
        from ..compiler import compile_module
        merged = {**self.options, **options}
        target = target or merged.pop("target", None)
        merged.pop("target", None)
        key = (tuple(i.key for i in infos), target, tuple(sorted(merged.items())))
        compiled = self._cache.get(key)
        if compiled is None:
            compiled = compile_module(self._trace(infos), infos, target=target, options=merged)
            self._cache[key] = compiled
        return compiled


def fused_kernel(fn=None, **options):
    """Decorator: `@fs.fused_kernel` or `@fs.fused_kernel(target=..., single_kernel=True, ...)`."""
    if fn is None:
        return lambda f: FusedKernel(f, options)
    return FusedKernel(fn, options)

"""`@fused_kernel`, argument specs, and the per-specialisation compile cache."""
from __future__ import annotations

import difflib
import functools
import inspect
import os
import re
from dataclasses import dataclass

import numpy as np

from .. import dtypes as dt
from ..errors import (ArgumentError, FusedslError, Loc, TraceError, strip_internal_frames, user_facing,
                      user_frame)
from ..gcpause import gc_paused
from ..ir.builder import Builder
from ..ir.core import Module, TensorType
from .api import to_dtype
from .tracing import ACTIVE, Tensor, Trace, is_python_scalar, python_scalar


@dataclass(frozen=True)
class TensorSpec:
    """A tensor argument described by shape and dtype; str dims are symbolic ("M").

    Made by `fs.spec`; pass it to `.compile(...)` instead of an example array.

    Args:
        shape: a tuple of ints and names.
        dtype: a fusedsl DType.

    Example:
        >>> import fusedsl as fs
        >>> fs.spec(("M", 128), "float16")
        TensorSpec(shape=('M', 128), dtype=fs.float16)
    """

    shape: tuple
    dtype: dt.DType


@dataclass(frozen=True)
class ScalarSpec:
    """A runtime scalar kernel argument (`fs.scalar("alpha", "float32")`).

    Args:
        name: the parameter's name in the IR and the printed code.
        dtype: a fusedsl DType.

    Example:
        >>> import fusedsl as fs
        >>> fs.scalar("alpha")
        ScalarSpec(name='alpha', dtype=fs.float32)
    """

    name: str
    dtype: dt.DType


@user_facing
def spec(shape, dtype="float32") -> TensorSpec:
    """Describe a tensor argument by shape and dtype, for `.compile(...)` without example data.

    A name in the shape ("M") is a symbolic dimension: the kernel is compiled once for every
    size, the printed Ascend C takes it at run time.

    Args:
        shape: an int, a name, or a tuple of non-negative ints and identifiers.
        dtype: a dtype name ("float32"), a fusedsl DType or a numpy dtype.

    Returns:
        A `TensorSpec`.

    Raises:
        ArgumentError: a negative or non-integer dimension, or a name that is not an identifier.
        DTypeError: a dtype fusedsl does not have.

    Example:
        >>> import fusedsl as fs
        >>> k = fs.fused_kernel(lambda a, b: a + b).compile(fs.spec(128), fs.spec(("M", 128)))
        >>> k.graph.main.params[1].value.shape
        ('M', 128)
    """
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


@user_facing
def scalar(name: str, dtype="float32") -> ScalarSpec:
    """Declare a runtime scalar kernel argument (a Python number would be baked in as a constant).

    Args:
        name: the scalar's name (an identifier).
        dtype: its dtype (default float32).

    Returns:
        A `ScalarSpec`.

    Raises:
        ArgumentError: a name that is not an identifier.
        DTypeError: a dtype fusedsl does not have.

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> k = fs.fused_kernel(lambda x, a: x * a).compile(fs.spec(4), fs.scalar("a"))
        >>> k(np.ones(4, np.float32), 3.0)
        array([3., 3., 3., 3.], dtype=float32)
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ArgumentError(f"fs.scalar name {name!r} must be an identifier", loc=user_frame())
    return ScalarSpec(name, to_dtype(dtype))


@dataclass(frozen=True)
class ArgInfo:
    """How one positional parameter was specialised."""

    name: str
    kind: str                 # "tensor" | "scalar" | "const"
    type: TensorType | None   # for tensor and scalar
    value: object = None      # for const

    @property
    def key(self):
        if self.kind == "const":   # repr: -0.0 and 0.0 are different constants
            return ("const", type(self.value).__name__, repr(self.value))
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
        try:
            arr = np.asarray(arg)
        except ValueError as exc:   # a ragged nested list
            raise ArgumentError(f"argument {name!r} is not a rectangular array: {exc}", loc=user_frame(),
                                hint="every row of a nested list needs the same length") from None
        return ArgInfo(name, "tensor", TensorType(tuple(arr.shape), to_dtype(arr.dtype)))
    raise ArgumentError(f"argument {name!r} of type {type(arg).__name__} is not an array, fs.spec, "
                        "fs.scalar or Python number", loc=user_frame())


# Every option @fs.fused_kernel(...) and .compile(...) accept (the compiler and the fusion model
# read them); anything else is a typo that would otherwise be ignored silently.
COMPILE_OPTIONS = ("target", "single_kernel", "opt_level", "disable_passes", "ub_headroom", "fuse_ub_headroom",
                   "l1_headroom", "max_kernel_ops", "max_kernel_inputs", "cann_version", "require_ascendc",
                   "split_columns")


def check_options(options: dict) -> None:
    """ArgumentError naming an unknown option and the nearest valid one."""
    for name in options:
        if name not in COMPILE_OPTIONS:
            close = difflib.get_close_matches(name, COMPILE_OPTIONS, n=1)
            guess = f"did you mean {close[0]}=? " if close else ""
            raise ArgumentError(f"unknown compile option {name}=", loc=user_frame(),
                                hint=f"{guess}the options are {', '.join(COMPILE_OPTIONS)}")


class FusedKernel:
    """A user function compiled once per (shapes, dtypes, constants, options) and cached.

    Made by `@fs.fused_kernel`. Call it on arrays (`k(a, b)`, `k(a, b, out=y)`), `compile` it
    for arrays or specs (a `CompiledKernel`), or `trace` it (the IR before fusion).

    Args:
        fn: the Python function over tensors.
        options: compile options (see `fs.fused_kernel`).

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> @fs.fused_kernel
        ... def k(a, b):
        ...     return fs.relu(a - b)
        >>> k(np.ones(3, np.float32), np.zeros(3, np.float32))
        array([1., 1., 1.], dtype=float32)
    """

    def __init__(self, fn, options: dict):
        if not callable(fn):
            raise ArgumentError("@fs.fused_kernel decorates a function", loc=user_frame())
        check_options(options)
        self.fn = fn
        self.options = dict(options)
        self.signature = inspect.signature(fn)
        # The IR (and Ascend C) name must be an ASCII identifier: a lambda's "<lambda>" or a
        # functools.partial (no __name__, no __code__) would print unparseable IR.
        raw_name = getattr(fn, "__name__", None) or type(fn).__name__
        self.name = re.sub(r"[^A-Za-z0-9_]", "_", raw_name).strip("_") or "kernel"
        if self.name[0].isdigit():
            self.name = "k" + self.name
        code = getattr(inspect.unwrap(getattr(fn, "func", fn)), "__code__", None)
        self.def_loc = Loc(code.co_filename, code.co_firstlineno) if code else user_frame()
        self._cache: dict = {}
        self._fast: dict = {}
        functools.update_wrapper(self, fn)

    def __repr__(self) -> str:
        return f"<fused_kernel {self.name} at {self.def_loc}>"

    # ---- binding and tracing ----------------------------------------------------
    def _bind(self, args, kwargs) -> list:
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as exc:
            params = ", ".join(self.signature.parameters)
            given = len(args) + len(kwargs)
            raise ArgumentError(f"{self.name}({params}) takes {len(self.signature.parameters)} argument(s), "
                                f"got {given}: {exc}",
                                loc=user_frame(),
                                hint=f"pass one array, fs.spec or number per parameter; {self.name} is "
                                     f"defined at {self.def_loc}") from None
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
        # With the collector paused, as the compile after it is: a trace allocates the graph (an op,
        # its values, types and source line per fs.* call: ~29,000 objects for model_scale.py's
        # 286-block stack) and frees few of them, so the collections its allocations set off found
        # little, and the collector's rule (a full collection after ten younger ones, once the oldest
        # generation grew by a quarter) had every second trace of that stack, compiled again, run a
        # full one walking every object the process holds (the last compile's result, the process
        # memos: 50-85 ms there, as much as the trace itself).  What the user's function drops
        # meanwhile (a cycle of its own) is freed when the trace ends (gc_paused collects the
        # younger generations there), not during it; the caller's older objects are not walked.
        with gc_paused():
            return self._trace_paused(infos)

    def _trace_paused(self, infos: tuple[ArgInfo, ...]) -> Module:
        builder = Builder(self.name, self.def_loc)
        trace = Trace(builder)
        call_args, call_kwargs = [], {}
        # infos follow the signature's order (no *args/**kwargs); keyword-only
        # parameters must be passed by keyword
        for info, param in zip(infos, self.signature.parameters.values()):
            if info.kind == "const":
                arg = info.value
            else:
                arg = Tensor(builder.param(info.type, info.name, info.kind), trace)
            if param.kind == inspect.Parameter.KEYWORD_ONLY:
                call_kwargs[param.name] = arg
            else:
                call_args.append(arg)
        token = ACTIVE.set(trace)
        try:
            out = self.fn(*call_args, **call_kwargs)
        finally:
            ACTIVE.reset(token)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        if not outs:
            raise TraceError(f"{self.name} returns nothing; a kernel must return tensors",
                             loc=self.def_loc)
        values = []
        for o in outs:
            if isinstance(o, Tensor):
                values.append(o.value)
            elif is_python_scalar(o):
                raise TraceError(f"{self.name} returns a Python number, not a tensor",
                                 loc=self.def_loc, hint="return a tensor, e.g. fs.broadcast_to(...)")
            else:
                raise TraceError(f"{self.name} returns a {type(o).__name__}, not a tensor",
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
        check_options(options)
        return self._compiled(self._infos(args, kwargs={}), target, options)

    def __call__(self, *args, out=None, **kwargs):
        # Fast path: positional arrays/numbers seen before go straight to their compiled
        # kernel's runner (the key pins every shape, dtype and baked constant). Not wrapped in
        # user_facing (a frame per call, ~0.2 us of a ~2 us call): its errors are cut here.
        try:
            if not kwargs:
                hit = self._fast.get(_fast_key(args))
                if hit is not None:
                    return hit(args, out)   # CompiledKernel.fast_runner
            return self._call(args, out, kwargs)
        except FusedslError as exc:   # what user_facing does
            raise exc.with_traceback(strip_internal_frames(exc.__traceback__)) from None

    def _call(self, args, out, kwargs):
        key = None if kwargs else _fast_key(args)
        infos = self._infos(args, kwargs)
        compiled = self._compiled(infos, None, {})
        runtime = [v for (_, v), info in zip(self._bind(args, kwargs), infos) if info.kind != "const"]
        # parameters past the positional arguments take their defaults (frozen in self.signature
        # when the kernel was made): constants baked into the kernel, so the arguments' key holds
        if key is not None and (len(infos) == len(args) or (
                len(infos) > len(args) and all(info.kind == "const" for info in infos[len(args):])
                and not any(p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
                            for p in self.signature.parameters.values()))):
            self._fast[key] = compiled.fast_runner([i for i, info in enumerate(infos) if info.kind != "const"])
        return compiled.run(runtime, out=out)

    def _compiled(self, infos, target, options):
        from ..compiler import compile_module   # lazily: `import fusedsl` takes ~165 ms, ~355 with the compiler
        merged = {**self.options, **options}
        target = target or merged.pop("target", None)
        merged.pop("target", None)
        # list-valued options (disable_passes=[...]) key the cache as tuples; the pass switch
        # FUSEDSL_DISABLE_PASSES is read at compile time, so it keys the cache too (a call that
        # hits the per-argument fast path keeps the kernel it compiled first)
        key = (tuple(i.key for i in infos), target, os.environ.get("FUSEDSL_DISABLE_PASSES", ""),
               tuple(sorted((k, tuple(v) if isinstance(v, (list, set, frozenset)) else v)
                            for k, v in merged.items())))
        compiled = self._cache.get(key)
        if compiled is None:
            compiled = compile_module(self._trace(infos), infos, target=target, options=merged)
            self._cache[key] = compiled
        return compiled


def _fast_key(args):   # raises nothing: no user_facing wrapper (it costs ~0.2 us a call)
    """A cheap cache key for positional arguments, or None when one needs the slow path."""
    key = []
    for a in args:
        t = type(a)
        if t is np.ndarray:
            key.append((a.shape, a.dtype))
        elif t is float:
            key.append((t, repr(a)))   # repr tells -0.0 from 0.0 (they compare equal)
        elif t in (int, bool):
            key.append((t, a))
        else:
            return None
    return tuple(key)


def fused_kernel(fn=None, **options):
    """Decorator: make a Python function over tensors a fused kernel.

    `@fs.fused_kernel` or `@fs.fused_kernel(target=..., single_kernel=True, ...)`. The function
    is traced (once per shapes, dtypes and Python constants), simplified, fused into as few
    kernels as pay off and compiled; it runs on the CPU executors and prints as Ascend C.

    Args:
        fn: the function (omitted when options are given: `@fs.fused_kernel(...)`).
        **options: the compile options, each also accepted by `.compile(...)`:
            `target` (the chip: "ascend910b" default, "ascend910b4", "ascend310p", "ascend910");
            `single_kernel` (True: exactly one kernel, or an error naming the op that prevents it);
            `require_ascendc` (True: raise at compile time if a kernel cannot print as Ascend C);
            `opt_level` (0 no fusion, 1 chains, 2 default, 3); `disable_passes` (pass names);
            `ub_headroom` (fraction of UB the tiles may use, default 0.8 for fusion decisions);
            `fuse_ub_headroom` (the same, for fusion decisions only); `l1_headroom` (cube kernels);
            `max_kernel_ops`, `max_kernel_inputs` (caps per kernel); `cann_version` ("9.1" prints
            CANN 9.1's API spelling); `split_columns` (True: a reduction over an axis before the
            last on too few tiles for the chip's cores in two kernels, docs/FUSION.md).

    Returns:
        A `FusedKernel` (or, with options only, a decorator making one).

    Raises:
        ArgumentError: fn is not callable, or an unknown option (the nearest valid one is named).

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> @fs.fused_kernel(target="ascend310p")
        ... def abs_add_relu(a, b):
        ...     return fs.relu(fs.abs(a) + b)
        >>> abs_add_relu(np.array([-1.0, 2.0], np.float32), np.zeros((3, 2), np.float32))[0]
        array([1., 2.], dtype=float32)
    """
    check_options(options)
    if fn is None:
        return lambda f: FusedKernel(f, options)
    return FusedKernel(fn, options)

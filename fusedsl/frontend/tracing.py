"""The tracer: `Tensor` stands for an IR value while the user's function runs.

Every op the user calls appends one IR op to the active trace with the user's
source line.  Anything that would need a tensor's *value* in Python (`if x > 0`,
`bool(x)`, `float(x)`, `np.asarray(x)`) raises a located `ControlFlowError`.
"""
from __future__ import annotations

import contextvars
import numbers

import numpy as np

from .. import dtypes as dt
from ..errors import (ArgumentError, ControlFlowError, DTypeError, ShapeError, TraceError,
                      user_frame)
from ..ir.builder import Builder
from ..ir.core import Value
from ..ir.shapes import TypeRuleError

_ERROR_KIND = {"shape": ShapeError, "dtype": DTypeError, "arg": ArgumentError}


class Trace:
    """One trace in progress: the builder plus a constant cache (one IR constant per value)."""

    def __init__(self, builder: Builder):
        self.builder = builder
        self.constants: dict[tuple, Value] = {}

    def emit(self, name: str, operands, attrs: dict | None = None) -> "Tensor":
        return self.emit_multi(name, operands, attrs)[0]

    def emit_multi(self, name: str, operands, attrs: dict | None = None) -> tuple["Tensor", ...]:
        values = [t.value for t in operands]
        try:
            results = self.builder.op(name, values, attrs, loc=user_frame())
        except TypeRuleError as exc:
            raise _ERROR_KIND[exc.kind](exc.message, loc=user_frame(), hint=exc.hint) from None
        return tuple(Tensor(v, self) for v in results)

    def constant(self, value, dtype: dt.DType) -> "Tensor":
        value = _check_fits(value, dtype)
        # repr, not the value: 0.0 == -0.0 would share one constant and x * -0.0
        # would trace as x * 0.0 (the sign of zero is observable)
        key = (type(value), repr(value), dtype.name)
        if key not in self.constants:
            self.constants[key] = self.builder.op1("constant", [], {"value": value, "dtype": dtype.name},
                                                   loc=user_frame())
        return Tensor(self.constants[key], self)


def _check_fits(value, dtype: dt.DType):
    """The Python value converted for `dtype`, or a DTypeError if it cannot be represented."""
    if dtype.is_float:
        return float(value)
    if dtype == dt.bool_:
        return bool(value)
    if isinstance(value, float) and not float(value).is_integer():
        raise DTypeError(f"the float {value!r} cannot be used as {dtype}",
                         loc=user_frame(), hint="cast the tensor to a float dtype first")
    info = np.iinfo(dtype.np)
    if not info.min <= int(value) <= info.max:
        raise DTypeError(f"the Python integer {value} does not fit in {dtype} "
                         f"(range {info.min}..{info.max})", loc=user_frame(),
                         hint=f"cast the tensor first, e.g. x.astype(fs.int32)")
    return int(value)


def is_python_scalar(x) -> bool:
    return isinstance(x, (numbers.Number, np.generic)) and not isinstance(x, complex)


def python_scalar(x):
    """A Python bool/int/float from a Python or numpy scalar."""
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, (bool, int, float)):
        return x
    return float(x)


# The fs.* ops behind Tensor's operators and methods, by name, and the numpy ufuncs a traced
# tensor accepts (np.exp(x) -> fs.exp): filled by api.py when it is imported (api builds on
# this module, not the other way round).
OPS: dict = {}
NUMPY_UFUNCS: dict = {}
# Every public fs.* op by name (api.py's @_op fills it), so that a refused numpy function's hint
# names the fs op when one exists and says so when none does.
FS_OPS: set = set()

# The numpy function running on a traced tensor (set by Tensor.__array_function__), so that
# __array__, reached from inside numpy, can name it.
_NUMPY_FUNCTION: contextvars.ContextVar = contextvars.ContextVar("fusedsl_numpy_function", default=None)

# The trace the user's function runs in (kernel tracing and eager calls set it): ops without a
# tensor operand (fs.arange, fs.linspace) append to it.
ACTIVE: contextvars.ContextVar = contextvars.ContextVar("fusedsl_active_trace", default=None)


def _numpy_hint(name: str) -> str:
    """What to write instead of numpy.<name> inside a kernel."""
    if name in FS_OPS:
        return f"use fs.{name} (it traces into the kernel)"
    return (f"fusedsl has no {name} op: compute it outside the kernel, or build it from the fs.* ops "
            "(the ops page of the documentation lists them)")


class Tensor:
    """A traced tensor.  Shapes and dtypes are known; values are not."""

    __slots__ = ("value", "trace")
    __array_priority__ = 1000  # so `np_scalar + tensor` calls our __radd__

    def __init__(self, value: Value, trace: Trace):
        self.value = value
        self.trace = trace

    # ---- metadata -------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return self.value.shape

    @property
    def dtype(self) -> dt.DType:
        return self.value.dtype

    @property
    def ndim(self) -> int:
        return len(self.value.shape)

    @property
    def size(self):
        n = 1
        for d in self.shape:
            if not isinstance(d, int):
                raise TraceError(f"size of a tensor with symbolic shape {self.shape} is not known "
                                 "while tracing", loc=user_frame())
            n *= d
        return n

    def __len__(self) -> int:
        if not self.shape:
            raise TraceError("len() of a 0-d tensor", loc=user_frame())
        if not isinstance(self.shape[0], int):
            raise TraceError(f"len() of a tensor whose first axis is symbolic ({self.shape[0]})",
                             loc=user_frame())
        return self.shape[0]

    def __repr__(self) -> str:
        return f"Tensor(shape={self.shape}, dtype={self.dtype.name})"

    # ---- value-dependent Python: refused with a located error ------------------
    def _no_value(self, what: str):
        raise ControlFlowError(
            f"{what} needs the value of a traced tensor, which is not known while tracing",
            loc=user_frame(),
            hint="use fs.where(cond, a, b) for data-dependent choices; Python `if`, `while`, "
                 "`and`/`or` and bool()/float()/int() only work on shapes and Python values")

    def __bool__(self):
        self._no_value("Python control flow (if/while/and/or/bool())")

    def __float__(self):
        self._no_value("float()")

    def __int__(self):
        self._no_value("int()")

    def __index__(self):
        self._no_value("using a tensor as an index")

    def __iter__(self):
        raise TraceError("iterating over a traced tensor is not supported", loc=user_frame(),
                         hint="index rows explicitly, e.g. x[0], or use a reduction such as fs.sum")

    def __array__(self, *args, **kwargs):
        name = _NUMPY_FUNCTION.get()
        if name is not None:   # a numpy function (np.cumsum, np.where...) wants an array
            raise TraceError(f"numpy.{name} cannot run on a traced tensor", loc=user_frame(),
                             hint=_numpy_hint(name))
        raise TraceError("a traced tensor cannot be converted to a numpy array inside a fused kernel",
                         loc=user_frame(), hint="use the fs.* ops (fs.exp, fs.sum, ...) instead of numpy's")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        fn = NUMPY_UFUNCS.get(ufunc.__name__)
        if method != "__call__" or fn is None or kwargs:
            what = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
            hint = _numpy_hint(ufunc.__name__)
            if fn is not None and kwargs:
                hint = f"call fs.{fn.__name__} without {', '.join(f'{k}=' for k in kwargs)}: " \
                       "results are returned, not written into out="
            raise TraceError(f"numpy.{what} cannot run on a traced tensor", loc=user_frame(), hint=hint)
        return fn(*inputs)

    def __array_function__(self, func, types, args, kwargs):
        # numpy functions that are not ufuncs land here.  Those numpy implements by calling the
        # array's method (np.sum -> x.sum, np.transpose -> x.transpose) keep working through
        # numpy's own implementation; any other one ends in __array__, which then names it.
        token = _NUMPY_FUNCTION.set(func.__name__)
        try:
            return func._implementation(*args, **kwargs)
        finally:
            _NUMPY_FUNCTION.reset(token)

    def __setitem__(self, index, value):
        raise TraceError("a traced tensor cannot be assigned to (x[...] = v): tensors are immutable "
                         "inside a fused kernel", loc=user_frame(),
                         hint="compute a new tensor instead, e.g. fs.where(mask, v, x) to replace "
                              "elements, or fs.concatenate to assemble parts")

    __hash__ = object.__hash__

    # ---- operators: the fs.* ops of api.py, one implementation per op -----------
    # (looked up in OPS, which api fills when it is imported, so this lower layer never
    # imports api: a traced tensor only exists once api has been loaded)
    def __add__(self, o):
        return OPS["add"](self, o)

    def __radd__(self, o):
        return OPS["add"](o, self)

    def __sub__(self, o):
        return OPS["subtract"](self, o)

    def __rsub__(self, o):
        return OPS["subtract"](o, self)

    def __mul__(self, o):
        return OPS["multiply"](self, o)

    def __rmul__(self, o):
        return OPS["multiply"](o, self)

    def __truediv__(self, o):
        return OPS["divide"](self, o)

    def __rtruediv__(self, o):
        return OPS["divide"](o, self)

    def __floordiv__(self, o):
        raise TraceError("floor division (//) is not supported", loc=user_frame(),
                         hint="call fs.floor_divide(a, b) (numpy's //, exact for integers), or use true "
                              "division (/) on float tensors")

    __rfloordiv__ = __floordiv__

    def __mod__(self, o):
        raise TraceError("the % operator is not supported", loc=user_frame(),
                         hint="call fs.remainder(a, b) (numpy's %, exact for integers) or fs.fmod(a, b)")

    __rmod__ = __mod__

    def __pow__(self, o):
        return OPS["power"](self, o)

    def __neg__(self):
        return OPS["negative"](self)

    def __pos__(self):
        return self

    def __abs__(self):
        return OPS["abs"](self)

    def __matmul__(self, o):
        return OPS["matmul"](self, o)

    def __rmatmul__(self, o):
        return OPS["matmul"](o, self)

    def __lt__(self, o):
        return OPS["less"](self, o)

    def __le__(self, o):
        return OPS["less_equal"](self, o)

    def __gt__(self, o):
        return OPS["greater"](self, o)

    def __ge__(self, o):
        return OPS["greater_equal"](self, o)

    def __eq__(self, o):
        return OPS["equal"](self, o)

    def __ne__(self, o):
        return OPS["not_equal"](self, o)

    def __getitem__(self, index):
        return OPS["getitem"](self, index)

    # ---- methods ---------------------------------------------------------------
    def astype(self, dtype):
        return OPS["cast"](self, dtype)

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return OPS["reshape"](self, shape)

    def transpose(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return OPS["transpose"](self, axes or None)

    @property
    def T(self):
        return OPS["transpose"](self)

    # numpy's ndarray signatures, so that np.sum(x) / np.max(x) (which call these
    # with dtype=/out= keywords) work on a traced tensor too
    def sum(self, axis=None, dtype=None, out=None, keepdims=False):
        return OPS["sum"](self._reduce_input(dtype, out), axis, keepdims)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False):
        return OPS["mean"](self._reduce_input(dtype, out), axis, keepdims)

    def max(self, axis=None, out=None, keepdims=False):
        return OPS["max"](self._reduce_input(None, out), axis, keepdims)

    def min(self, axis=None, out=None, keepdims=False):
        return OPS["min"](self._reduce_input(None, out), axis, keepdims)

    def _reduce_input(self, dtype, out) -> "Tensor":
        if out is not None:
            raise TraceError("out= is not supported inside a fused kernel", loc=user_frame(),
                             hint="return the result instead")
        return self if dtype is None else self.astype(dtype)


def find_trace(*args) -> Trace | None:
    for a in args:
        if isinstance(a, Tensor):
            return a.trace
        if isinstance(a, (list, tuple)):
            t = find_trace(*a)
            if t is not None:
                return t
    return None

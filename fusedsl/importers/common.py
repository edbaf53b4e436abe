"""What the torch and ONNX importers share: the imported-kernel object and graph replay.

An importer turns a model graph into a plain Python function over fusedsl tensors (one
parameter per model input, then one per weight) and wraps it in `ImportedKernel`, a
`FusedKernel` whose weights are bound: `m(*inputs)`, `m.compile(*inputs)` and `m.trace`
take only the model's own inputs, like the framework does.  Each replayed op is traced
at the model's source line (torch) or node (ONNX), so the IR and every error point there.
"""
from __future__ import annotations

import inspect
import math
import re
import sys
from operator import is_

import ml_dtypes
import numpy as np

from ..compiler import deliver
from ..errors import ArgumentError, FusedslError, Loc, strip_internal_frames, user_frame, user_facing
from ..frontend import api as fs
from ..frontend.kernel import FusedKernel, _fast_key
from ..ir.ops import CALL, has_trait
from .int_range import I32, Span, input_error


def sanitize(name: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_]", "_", name).strip("_") or "x"
    return "x" + name if name[0].isdigit() else name


def make_function(name: str, params: list[str], body):
    """A function `name(p0, p1, ...)` that calls body(list of arguments): FusedKernel binds
    arguments by the signature, so the replay gets real parameter names."""
    def fn(*args):
        return body(list(args))
    fn.__name__ = sanitize(name)
    fn.__qualname__ = fn.__name__
    unique, seen = [], set()
    for p in params:   # two model names may sanitize alike; parameter names must differ
        name, n = p, 1
        while name in seen:
            name, n = f"{p}_{n}", n + 1
        seen.add(name)
        unique.append(name)
    fn.__signature__ = inspect.Signature(
        [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in unique])
    return fn


def guard_magnitude(v):
    """max |v| of a float tensor, NaN counted as inf: the extra result of a guarded cast's input
    (int_range.RangeCheck.guard) that its check reads after the run."""
    return fs.max(fs.where(v == v, fs.abs(v), math.inf))


def as_array(x, name: str, what: str = "input"):
    """A model input (or weight: `what` names it) as a numpy array fusedsl accepts: torch tensors
    become zero-copy views; int64 (framework index type) becomes int32 after a range check
    (IntRangeError past it); float64 stays an error unless converted by the caller (silently
    halving precision would hide a mistake)."""
    if hasattr(x, "detach") and hasattr(x, "numpy"):
        x = x.detach().cpu()
        if str(x.dtype) == "torch.bfloat16":   # numpy has no bfloat16: the same bits as ml_dtypes'
            x = x.contiguous().view(dtype=_torch_int16(x)).numpy().view(ml_dtypes.bfloat16)
        else:
            x = x.numpy()
    if not isinstance(x, np.ndarray):
        return x
    if x.dtype == np.int64:
        if x.size:
            lo, hi = int(x.min()), int(x.max())
            if lo < I32[0] or hi > I32[1]:
                raise input_error(what, name, Span(lo, hi))
        return x.astype(np.int32)
    return x


def _torch_int16(x):
    """torch.int16, found through the tensor's module (common.py does not import torch)."""
    return getattr(sys.modules[type(x).__module__.split(".")[0]], "int16")


def _narrowed(arrays):
    """The numpy arrays with every int64 one as int32, or None when a value does not fit."""
    out = []
    for a in arrays:
        if type(a) is not np.ndarray:
            return None
        if a.dtype == np.int64:
            narrow = a.astype(np.int32)
            if not (narrow == a).all():
                return None
            a = narrow
        out.append(a)
    return out


class ImportedKernel(FusedKernel):
    """A FusedKernel for an imported model: the weights are bound after the user's inputs."""

    def __init__(self, fn, options: dict, input_names: list[str], weights: list[np.ndarray],
                 source: Loc | None = None, constant_args: dict | None = None):
        super().__init__(fn, options)
        self.input_names = list(input_names)
        # positions of the model's arguments that were None or a Python number when it was
        # exported: baked into the graph, so a call must pass the same value there
        self.constant_args = dict(constant_args or {})
        self.weights = list(weights)
        if source is not None:
            self.def_loc = source
        # the compiled kernel's runner per (shape, dtype) of the model's own arguments, with the
        # weight arrays it was found for (`__call__`)
        self._runners: dict = {}
        # the importer's int_range.RangeCheck: a call whose int64 values could leave int32 (where
        # fusedsl computes them) raises instead of wrapping; None when no int64 value can
        self.range_check = None

    def _with_weights(self, args):
        total = len(self.input_names) + len(self.constant_args)
        if len(args) != total:
            raise ArgumentError(f"{self.name} takes {total} input(s) "
                                f"({', '.join(self.input_names)}), got {len(args)}", loc=user_frame())
        tensors = []
        for i, a in enumerate(args):
            if i in self.constant_args:
                want = self.constant_args[i]
                if not (a is want or (want is not None and type(a) is type(want) and a == want)):
                    raise ArgumentError(f"argument {i + 1} of {self.name} was {want!r} when the model was "
                                        f"imported, got {type(a).__name__ if want is None else repr(a)}",
                                        loc=user_frame(), hint="import the model again with this argument")
                continue
            tensors.append(a)
        return [as_array(a, n) for a, n in zip(tensors, self.input_names)] + self.weights

    def __call__(self, *args, out=None):
        check = self.range_check
        if check is not None and check.guards:   # the graph also returns the guarded casts' magnitudes
            try:
                return self._guarded_call(args, out)
            except FusedslError as exc:
                raise exc.with_traceback(strip_internal_frames(exc.__traceback__)) from None
        return self._call_model(args, out)

    def _guarded_call(self, args, out):
        """A call of a graph with guarded casts (int_range.RangeCheck.guard): run, then check the
        casts' measured magnitudes, then hand out the model's own results (into `out`)."""
        spans = self.range_check(args)
        results = self._call_model(args, None, checked=True)
        return deliver(self._finish(args, results, spans), out)

    def _finish(self, model_args, results, spans=None):
        """The model's own results of a guarded graph's results, after its guard check."""
        n = len(self.range_check.guards)
        self.range_check.check_guards(model_args, results[-n:], spans)
        own = results[:-n]
        return own[0] if len(own) == 1 else own

    def _call_model(self, args, out, checked: bool = False):
        # The call fast path (as FusedKernel's): numpy arrays taken as they are (no tensor to
        # convert, no int64 to check, no baked argument) go straight on with the weights;
        # `_with_weights` and the user_facing frame cost ~1.2 us of a ~4 us small call.
        # FusedKernel.__call__ cuts fusedsl's frames from its errors itself.
        # Seen before (the arguments' shapes and dtypes, the same weight arrays): straight to
        # the compiled kernel's runner, ~0.8 us less than through FusedKernel.__call__, which
        # keys every weight too.
        check = self.range_check
        if check is not None and check.active and not checked:
            try:
                check(args)
            except FusedslError as exc:
                raise exc.with_traceback(strip_internal_frames(exc.__traceback__)) from None
        hit = self._runners.get(_fast_key(args))
        if hit is not None:
            runner, weights = hit
            if len(weights) == len(self.weights) and all(map(is_, weights, self.weights)):
                try:
                    return runner((*args, *weights), out)
                except FusedslError as exc:
                    raise exc.with_traceback(strip_internal_frames(exc.__traceback__)) from None
        if not self.constant_args and len(args) == len(self.input_names):
            for a in args:
                if type(a) is not np.ndarray:
                    break
                if a.dtype == np.int64:   # an index tensor: int32 when every value fits (as_array)
                    narrowed = _narrowed(args)
                    if narrowed is None:
                        break             # the checked call raises, naming the input
                    return FusedKernel.__call__(self, *narrowed, *self.weights, out=out)
            else:
                result = FusedKernel.__call__(self, *args, *self.weights, out=out)
                self._remember(args)
                return result
        return self._checked_call(args, out)

    def _remember(self, args) -> None:
        """Keep the runner FusedKernel's call fast path now holds for these arguments (plain
        numpy arrays, none int64: those are narrowed per call) with the weights."""
        key = _fast_key(args)
        if key is None or any(type(a) is not np.ndarray or a.dtype == np.int64 for a in args):
            return
        weights = tuple(self.weights)
        runner = self._fast.get(_fast_key((*args, *weights)))
        if runner is not None:
            self._runners[key] = (runner, weights)

    @user_facing
    def _checked_call(self, args, out):
        return super().__call__(*self._with_weights(args), out=out)

    @user_facing
    def compile(self, *args, target: str | None = None, **options):
        """The CompiledKernel for these model inputs; it takes the model's inputs and then its
        weights (`self.weights`), and its calls and `simulate` check the int64 ranges as a call
        of the model does (`_compiled_args`)."""
        compiled = super().compile(*self._with_weights(args), target=target, **options)
        compiled.prepare_args = self._compiled_args
        if self.range_check is not None and self.range_check.guards:
            compiled.finish_results = self._compiled_results
            compiled.result_notes = self._guard_notes(compiled)
        return compiled

    def _guard_notes(self, compiled) -> tuple[str, ...]:
        """What k.ir and k.source say first about a guarded graph's extra results: the graph
        (so the printed kernels) returns, after the model's results, max |x| of each guarded
        cast's float input, which calls and simulate check and then drop -- the computation is
        real and stays visible, each extra result named with the cast it guards."""
        main = compiled.module.main
        guards = self.range_check.guards
        own = len(main.results) - len(guards)
        made = {id(v): (op, i) for op in main.ops for i, v in enumerate(op.results)}
        lines = [f"@{main.name} returns {own} model result(s), then {len(guards)} range guard(s): "
                 "max |x| (NaN as inf) of the float input x of an int64 cast fusedsl computes in int32.",
                 "Calls and simulate check each guard after the run (IntRangeError at the cast's line when "
                 "it reaches 2**31) and return the model's results only; a saved project returns the "
                 "guards and does not check them."]
        for k, step in enumerate(guards):
            value = main.results[own + k]
            op, index = made.get(id(value), (None, 0))
            where = (f", output y{index} of kernel {op.attr('callee')}"
                     if op is not None and has_trait(op, CALL) else "")
            at = f" ({step.loc})" if step.loc is not None else ""
            lines.append(f"result {own + k} of @{main.name}{where}: the guard of {step.label}{at}")
        return tuple(lines)

    def _model_args(self, inputs):
        """The model's arguments of its tensor inputs: its baked constants in their positions."""
        given = iter(inputs)
        return [self.constant_args[i] if i in self.constant_args else next(given)
                for i in range(len(inputs) + len(self.constant_args))]

    def _compiled_results(self, args, results):
        """A compiled guarded graph's results (CompiledKernel.finish_results): `_finish`."""
        return self._finish(self._model_args(list(args[:len(self.input_names)])), results)

    def _compiled_args(self, args):
        """A compiled kernel's runtime arguments (the model's tensor inputs, then the weights)
        as a call of the model takes them: torch tensors as numpy, int64 inputs as int32 when
        they fit (IntRangeError naming the input otherwise), then the range check over them.
        The check bounds integer weights by the imported ones: others are refused."""
        n = len(self.input_names)
        if len(args) != n + len(self.weights):
            return args   # bind_args says what the kernel takes
        inputs = [as_array(a, name) for a, name in zip(args[:n], self.input_names)]
        for i, (w, mine) in enumerate(zip(args[n:], self.weights)):
            if w is not mine and mine.dtype.kind in "biu" and not (
                    isinstance(w, np.ndarray) and w.shape == mine.shape and np.array_equal(w, mine)):
                raise ArgumentError(f"weight {i + 1} of the compiled {self.name} differs from the imported model's "
                                    "integer weight: fusedsl's int64 range check bounds the model's values by "
                                    "the weights it imported", loc=user_frame(),
                                    hint="pass the imported weights (model.weights), or import the model again "
                                         "with the new ones")
        check = self.range_check
        if check is not None and check.active:
            check(self._model_args(inputs))
        return (*inputs, *args[n:])

    @user_facing
    def trace(self, *args):
        return super().trace(*self._with_weights(args))

    def __repr__(self) -> str:
        return f"<imported kernel {self.name}: {len(self.input_names)} input(s), {len(self.weights)} weight(s)>"

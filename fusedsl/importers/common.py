"""What the torch and ONNX importers share: the imported-kernel object and graph replay.

An importer turns a model graph into a plain Python function over fusedsl tensors (one
parameter per model input, then one per weight) and wraps it in `ImportedKernel`, a
`FusedKernel` whose weights are bound: `m(*inputs)`, `m.compile(*inputs)` and `m.trace`
take only the model's own inputs, like the framework does.  Each replayed op is traced
at the model's source line (torch) or node (ONNX), so the IR and every error point there.
"""
from __future__ import annotations

import inspect
import re

import numpy as np

from ..errors import ArgumentError, Loc, user_frame, user_facing
from ..frontend.kernel import FusedKernel


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


def as_array(x, name: str):
    """A model input as a numpy array fusedsl accepts: torch tensors become zero-copy views;
    int64 (framework index type) becomes int32 after a range check; float64 stays an error
    unless converted by the caller (silently halving precision would hide a mistake)."""
    if hasattr(x, "detach") and hasattr(x, "numpy"):
        x = x.detach().cpu()
        x = x.numpy()
    if not isinstance(x, np.ndarray):
        return x
    if x.dtype == np.int64:
        if x.size and (x.min() < np.iinfo(np.int32).min or x.max() > np.iinfo(np.int32).max):
            raise ArgumentError(f"input {name!r} has int64 values outside the int32 range",
                                loc=user_frame(), hint="fusedsl indexes with int32")
        return x.astype(np.int32)
    return x


class ImportedKernel(FusedKernel):
    """A FusedKernel for an imported model: the weights are bound after the user's inputs."""

    def __init__(self, fn, options: dict, input_names: list[str], weights: list[np.ndarray],
                 source: Loc | None = None):
        super().__init__(fn, options)
        self.input_names = list(input_names)
        self.weights = list(weights)
        if source is not None:
            self.def_loc = source

    def _with_weights(self, args):
        if len(args) != len(self.input_names):
            raise ArgumentError(f"{self.name} takes {len(self.input_names)} input(s) "
                                f"({', '.join(self.input_names)}), got {len(args)}", loc=user_frame())
        return [as_array(a, n) for a, n in zip(args, self.input_names)] + self.weights

    @user_facing
    def __call__(self, *args, out=None):
        return super().__call__(*self._with_weights(args), out=out)

    @user_facing
    def compile(self, *args, target: str | None = None, **options):
        return super().compile(*self._with_weights(args), target=target, **options)

    @user_facing
    def trace(self, *args):
        return super().trace(*self._with_weights(args))

    def __repr__(self) -> str:
        return f"<imported kernel {self.name}: {len(self.input_names)} input(s), {len(self.weights)} weight(s)>"

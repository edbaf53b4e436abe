"""The ranges of an imported model's int64 values, so that none silently wraps in int32.

fusedsl has no int64: the importers run a framework's int64 tensors (torch's and ONNX's
index and integer type) in int32.  That is exact while every int64 value fits in int32;
past it, int32 arithmetic wraps and the answer differs from the framework's with no
message.  A `RangeCheck` bounds every int64 value of the graph by interval arithmetic
from the ranges of the call's integer inputs (the weights' and constants' ranges are
known at import) and raises IntRangeError at the model line of the first int64 value
whose bound leaves int32, or at the call for an int64 input beyond int32.

The bound is sound but can be loose: x + y is bounded by max(x) + max(y) even where the
two maxima never meet, so a refused call might have fitted; an accepted one always does.
Values of the framework's other integer dtypes are clipped to their dtype (the framework
wraps there, as fusedsl does); an int16 value is checked against int16 the same way
(fusedsl computes it in int32, the framework wraps at 16 bits).  fusedsl's integer division
and remainder are exact over all of int32 (ops/composite._int32_division), so they need no
check beyond their results' bounds.

An int64 made from floats (a float -> int64 cast: `x.long()`, ONNX Cast) is bounded by its float
input's range.  Float values are tracked through the ops whose rule holds over real intervals
(`Step.floats`: add, mul, clamp, views, casts, ...; Python float operands as [floor, ceil]), from
int values, float weights and constants, and float inputs measured at the call (their [min, max]
rounded out to three significant bits, `coarse_up`, so that calls with similar data share a verdict); each float step
widens its range by its dtype's rounding (`FLOATS`) and one past the dtype's largest finite value
is unbounded (it may be inf).  A cast whose float input no rule bounds even with every float
input bounded (exp, a float matmul, ...) is guarded (`guard`, `Step.guarded`): the importer makes
the graph also return max |input| of the cast (NaN as inf) and, after the run, `check_guards`
bounds the cast's result by it (IntRangeError at the cast's line past int32, NaN and inf
included) and checks every int64 value computed from it with that bound.  Any other cast from
floats that stays unbounded (NaN or infinity in an input) is refused before the run (`Step.casts`).

The importers describe their graph as `Step`s (one per node: its op's interval rule over the
node's arguments, the node's tensors replaced by `Ref`s); `torch_range.RULES` and
`onnx_range.RULES` hold the rules per ATen op / ONNX op type, built from the span arithmetic here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import math

import numpy as np

from ..errors import IntRangeError, Loc, user_frame

I32 = (-2 ** 31, 2 ** 31 - 1)
# dtype name -> (lo, hi, checked): a checked dtype is computed by fusedsl in a wider type than
# the framework's (int64 -> int32 narrower, int16 -> int32 wider); the rest wrap alike
DTYPE_RANGES = {"int64": (*I32, True), "int16": (-2 ** 15, 2 ** 15 - 1, True), "int32": (*I32, False),
                "int8": (-128, 127, False), "uint8": (0, 255, False), "bool": (0, 1, False)}
# float dtype name -> (bits of relative widening per step, largest finite value): 2**-22 covers the
# float32 rounding of both frameworks (one each); a 16-bit float op rounds once to its dtype in
# both (fusedsl computes it in float32), so 2**-9 / 2**-6 cover float16 / bfloat16
FLOATS = {"float32": (22, 3.4028234663852886e38), "float16": (9, 65504.0),
          "bfloat16": (6, 3.3895313892515355e38), "float64": (50, 1.7976931348623157e308)}
_HUGE = 2 ** 80   # a bound past every dtype (keeps products of huge bounds small)


class Span:
    """The closed range [lo, hi] a tensor's values lie in (Python ints, no overflow).  A plain
    slotted class: a frozen dataclass's __init__ costs ~4x more, and a call with new input ranges
    builds a few per graph node."""

    __slots__ = ("lo", "hi")

    def __init__(self, lo: int, hi: int):
        self.lo, self.hi = lo, hi

    def __eq__(self, other) -> bool:
        return isinstance(other, Span) and self.lo == other.lo and self.hi == other.hi

    def __hash__(self) -> int:
        return hash((self.lo, self.hi))

    def __repr__(self) -> str:
        return f"Span({self.lo}, {self.hi})"

    def __str__(self) -> str:
        return f"{self.lo}" if self.lo == self.hi else f"[{self.lo}, {self.hi}]"


def float_span(x):
    """A Python float as the integers around it (None for NaN / inf); other values as span_of."""
    if isinstance(x, float):
        return Span(math.floor(x), math.ceil(x)) if math.isfinite(x) else None
    return span_of(x)


def _floats(value):
    """Rule arguments with their Python floats as spans (for the rules that hold over reals)."""
    if isinstance(value, float):
        return float_span(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_floats(v) for v in value)
    if isinstance(value, dict):
        return {k: _floats(v) for k, v in value.items()}
    return value


def rounded(s, dtype: str):
    """A float step's range widened by its dtype's rounding; None past the dtype's finite values."""
    s = span_of(s)
    if s is None:
        return None
    bits, top = FLOATS[dtype]
    lo, hi = s.lo - (abs(s.lo) >> bits) - 1, s.hi + (abs(s.hi) >> bits) + 1
    return Span(lo, hi) if max(-lo, hi) <= top else None


def span_of(x):
    """A rule argument as a Span: a Span, a Python or numpy integer (or bool); else None
    (a float, a float tensor, an unbounded value)."""
    if isinstance(x, Span):
        return x
    if isinstance(x, (bool, int, np.integer, np.bool_)):
        return Span(int(x), int(x))
    return None


def _cap(s: Span) -> Span:
    return Span(max(s.lo, -_HUGE), min(s.hi, _HUGE))


def add(a, b):
    a, b = span_of(a), span_of(b)
    return None if a is None or b is None else _cap(Span(a.lo + b.lo, a.hi + b.hi))


def mul(a, b):
    a, b = span_of(a), span_of(b)
    if a is None or b is None:
        return None
    p = (a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi)
    return _cap(Span(min(p), max(p)))


def neg(a):
    a = span_of(a)
    return None if a is None else Span(-a.hi, -a.lo)


def sub(a, b):
    return add(a, neg(b))


def magnitude(a) -> int | None:
    a = span_of(a)
    return None if a is None else max(abs(a.lo), abs(a.hi))


def hull(*xs):
    """The smallest range holding every argument's (None when one is unbounded)."""
    spans = [span_of(x) for x in xs]
    if not spans or any(s is None for s in spans):
        return None
    return Span(min(s.lo for s in spans), max(s.hi for s in spans))


def times(n: int, a):
    """The sum of n values of range a."""
    a = span_of(a)
    return None if a is None else _cap(Span(n * a.lo, n * a.hi)) if n > 0 else Span(0, 0)


def prefix_sums(n: int, a):
    """Every prefix sum of up to n values of range a (cumsum)."""
    a = span_of(a)
    if a is None or n <= 0:
        return a
    return _cap(Span(min(a.lo, n * a.lo), max(a.hi, n * a.hi)))


def power(a, p: int):
    """a ** p for an integer exponent p >= 0."""
    m = magnitude(a)
    if m is None or p < 0:
        return None
    if m > 1 and p * m.bit_length() > 100:
        big = _HUGE
    else:
        big = m ** p
    s = span_of(a)
    if s.lo >= 0:
        return _cap(Span(s.lo ** p if p * max(s.lo, 1).bit_length() <= 100 else _HUGE, big))
    return _cap(Span(-big, big))


def products(n: int, a):
    """A product (or every prefix product) of up to n values of range a."""
    m = magnitude(a)
    if m is None:
        return None
    if m <= 1:
        return Span(-1, 1) if span_of(a).lo < 0 else Span(0, 1) if span_of(a).lo == 0 else Span(1, 1)
    return power(Span(-m, m), max(n, 1))


def maximum(a, b):
    a, b = span_of(a), span_of(b)
    return None if a is None or b is None else Span(max(a.lo, b.lo), max(a.hi, b.hi))


def minimum(a, b):
    a, b = span_of(a), span_of(b)
    return None if a is None or b is None else Span(min(a.lo, b.lo), min(a.hi, b.hi))


def clamp(x, lo=None, hi=None):
    # an unbounded x stays unbounded even between two bounds: a float x may be NaN, which clamp
    # keeps (and whose cast to an integer differs between the frameworks and fusedsl)
    if lo is not None:
        x = maximum(x, lo)
    if hi is not None:
        x = minimum(x, hi)
    return x


def quotient(a, b):
    """a // b (floor or truncated) for integers: |a // b| <= |a| when b != 0."""
    m = magnitude(a)
    return None if m is None else Span(-m, m)


def remainder(a, b):
    """a % b, fmod: |r| < |b| (and |r| <= |a| for fmod; the looser bound holds for both)."""
    m = magnitude(b)
    return None if m is None else Span(-max(m - 1, 0), max(m - 1, 0))


def bitwise(op: str, a, b=None):
    """and / or / xor / not of two's complement values."""
    a = span_of(a)
    if op == "not":
        return None if a is None else Span(-a.hi - 1, -a.lo - 1)
    b = span_of(b)
    if a is None or b is None:
        return None
    if min(a.lo, b.lo) >= 0:
        if op == "and":
            return Span(0, min(a.hi, b.hi))
        return Span(0, (1 << max(a.hi, b.hi).bit_length()) - 1)
    bits = max(v.bit_length() for v in (a.lo, a.hi, b.lo, b.hi))
    return Span(-(1 << bits), (1 << bits) - 1)


def shift_right(a, k):
    a = span_of(a)
    return None if a is None or not isinstance(k, (int, np.integer)) else Span(a.lo >> int(k), a.hi >> int(k))


def index_range(numel: int) -> Span:
    """Positions into (or counts of) a tensor of numel elements."""
    return Span(0, max(int(numel), 0))


# ---- the check -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Ref:
    """A node's tensor inside a Step's arguments (replaced by its range when the step runs)."""

    key: str


@dataclass
class Step:
    """One graph node: `rule(*args, **kwargs)` over its arguments' ranges gives its output's
    range (a tuple for several outputs); `dtypes` is the framework's dtype name of each output
    (None for a float or non-tensor output), `label` names the op in messages."""

    key: str
    rule: Callable | None
    args: tuple
    kwargs: dict
    dtypes: tuple
    label: str
    loc: Loc | None
    outs: tuple = ()   # the names of the outputs when the graph names each (ONNX); else `key` holds them
    floats: bool = False   # the rule holds over real intervals: float results and Python floats are tracked
    casts: bool = False    # a float -> integer cast: an unbounded checked result is refused
    guarded: bool = False  # a cast bounded after the run by its input's measured magnitude (`check_guards`)
    refs: frozenset = field(default_factory=frozenset)


def _refs(value, out: set) -> None:
    if isinstance(value, Ref):
        out.add(value.key)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _refs(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _refs(v, out)


def _resolve(value, env):
    if isinstance(value, Ref):
        return env.get(value.key)
    if isinstance(value, (list, tuple)):
        return type(value)(_resolve(v, env) for v in value)
    if isinstance(value, dict):
        return {k: _resolve(v, env) for k, v in value.items()}
    return value


_NP_NAMES = {np.dtype(n): n for n in DTYPE_RANGES}
_NP_FLOATS = {np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.float64)}
_FLOAT_NAMES = {*FLOATS, "float"}


def coarse_up(v: int) -> int:
    """v >= 0 rounded up to three significant bits (at most 1/8 more): similar data gives the same
    bound, so a call reuses a cached verdict, and the bound stays within 12.5 % of the data."""
    shift = max(v.bit_length() - 3, 0)
    return -((-v) >> shift) << shift


def _outward(lo: float, hi: float, coarse: bool) -> Span | None:
    """Float bounds as the integers around them (None for NaN / inf); `coarse` rounds them out
    further, to 0 and coarse_up of their magnitudes."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    lo, hi = math.floor(lo), math.ceil(hi)
    if coarse:
        lo = 0 if lo >= 0 else -coarse_up(-lo)
        hi = 0 if hi <= 0 else coarse_up(hi)
    return Span(lo, hi)


def array_span(a, coarse: bool = False) -> Span | None:
    """The range of an integer (or bool) array or tensor argument; of a float one the integers
    around it (None when it holds NaN or inf; `coarse`: see _outward); None for anything else."""
    if type(a) is np.ndarray:   # the common case, kept cheap (str(dtype) alone costs ~2 us)
        if a.dtype not in _NP_NAMES:
            if a.dtype in _NP_FLOATS or a.dtype.name == "bfloat16":
                return _outward(float(a.min()), float(a.max()), coarse) if a.size else Span(0, 0)
            return None
        return Span(int(a.min()), int(a.max())) if a.size else Span(0, 0)
    name = str(getattr(a, "dtype", "")).removeprefix("torch.")
    if name not in DTYPE_RANGES and name not in _FLOAT_NAMES:
        return None
    if hasattr(a, "aminmax"):   # a torch tensor
        if a.numel() == 0:
            return Span(0, 0)
        lo, hi = a.aminmax()
        if name in FLOATS:
            return _outward(float(lo), float(hi), coarse)
        return Span(int(lo), int(hi))
    a = np.asarray(a)
    if a.dtype.kind == "f" or a.dtype.name == "bfloat16":
        return _outward(float(a.min()), float(a.max()), coarse) if a.size else Span(0, 0)
    return Span(int(a.min()), int(a.max())) if a.size else Span(0, 0)


def input_error(what: str, name: str, span: Span) -> IntRangeError:
    value = span.hi if span.hi > I32[1] else span.lo
    return IntRangeError(f"int64 {what} {name!r} holds {value}, outside the int32 range fusedsl computes int64 "
                         f"values in ([{I32[0]}, {I32[1]}]; fusedsl has no int64)", loc=user_frame(),
                         hint="keep integer values within int32, or pass the data as float32 "
                              "(exact for integers up to 2**24)")


class RangeCheck:
    """The int64 bounds of one imported graph (see the module docstring).

    inputs: (key, user-facing name, position among the call's arguments, dtype name) per
    graph input; fixed: key -> Span of the weights and constants; steps: the nodes in
    graph order."""

    def __init__(self, framework: str, inputs: list, fixed: dict, steps: list[Step]):
        self.framework = framework
        self.inputs = inputs
        self.fixed = fixed
        for step in steps:
            found: set = set()
            _refs((step.args, step.kwargs), found)
            step.refs = frozenset(found)
        self.steps = steps
        self.guards: list[Step] = []
        self._classify()

    def _classify(self) -> None:
        """The inputs whose ranges can decide a verdict: those a checked value that could leave
        its range (with every input at its dtype's full range) depends on; none -> no check."""
        self._seen: dict = {}
        full = {key: self._dtype_span(dtype) for key, _, _, dtype in self.inputs}
        _, risky, sources = self._propagate(full, collect=True)
        self.active = bool(risky) or bool(self.guards)   # a weight- or constant-only value past int32 has no
        # sources: always checked
        self.measured = [i for i in self.inputs if i[0] in set().union(*(sources[s.key] for s in risky))] \
            if risky else []
        if self.guards or any(s.casts for s in risky):
            # the values computed from a cast of floats are unbounded here, so which of them may
            # leave int32 is known only at the call: every integer input is measured too
            self.measured = [i for i in self.inputs if i in self.measured or i[3] in DTYPE_RANGES]

    def opaque_casts(self) -> list[Step]:
        """The casts from floats no rule bounds even with every float input bounded: the ones the
        importer guards (module docstring)."""
        env = {key: self._dtype_span(dtype) if dtype not in FLOATS else Span(-1, 1)
               for key, _, _, dtype in self.inputs}
        env = {**self.fixed, **env}
        found = []
        for step in self.steps:
            if step.casts:
                args = _resolve(step.args, env)
                if span_of(args[0] if args else None) is None:
                    found.append(step)
                    step.guarded = True   # unbounded here: the rest of the graph sees it so
            self._step(step, env)
        for step in found:
            step.guarded = False
        return found

    def guard(self, steps: list[Step]) -> None:
        """Check these casts after the run by their inputs' measured magnitudes (`check_guards`)."""
        for step in steps:
            step.guarded = True
        self.guards = list(steps)
        self._classify()

    def check_guards(self, args, magnitudes, inputs: tuple | None = None) -> None:
        """After a run: `magnitudes` holds max |float input| (NaN as inf) of each guarded cast, in
        `guards` order.  IntRangeError at a cast whose values leave int32, or at the first int64
        value the casts' bounds let leave it (with the call's input ranges: `inputs`, the spans
        the check before the run returned, else measured again); else None."""
        spans = {}
        for step, g in zip(self.guards, magnitudes):
            g = float(np.asarray(g, np.float64))
            if not g < 2.0 ** 31:   # NaN and inf too
                what = "NaN or infinity" if not math.isfinite(g) else f"a value of magnitude {g:.10g}"
                raise IntRangeError(f"the float input of {step.label} holds {what}: its cast to int64 leaves int32, "
                                    f"in which fusedsl computes int64 values ({self.framework} casts to int64)",
                                    loc=step.loc or user_frame(),
                                    hint="clamp the float values in the model before the cast (e.g. "
                                         "x.clamp(-2**31, 2**31 - 1).long())")
            m = math.ceil(g)
            spans[step.key] = Span(-coarse_up(m), coarse_up(m))
        if inputs is None:
            inputs = tuple(array_span(args[pos], coarse=True) if pos < len(args) else None
                           for _, _, pos, _ in self.measured)
        key = (inputs, tuple(spans.values()))
        if key in self._seen:
            return
        env = {k: self._dtype_span(dtype) for k, _, _, dtype in self.inputs}
        env.update({m[0]: s for m, s in zip(self.measured, inputs)})
        bad, _, _ = self._propagate(env, collect=False, guarded=spans)
        if bad is not None:
            self._raise(bad, list(inputs))
        if len(self._seen) > 1024:
            self._seen.clear()
        self._seen[key] = True

    @staticmethod
    def _dtype_span(dtype):
        r = DTYPE_RANGES.get(dtype)
        return None if r is None else Span(r[0], r[1])

    def __call__(self, args):
        """Raise IntRangeError when an int64 input, or the bound of an int64 value of the graph
        for these arguments, leaves int32; else return the measured inputs' spans (for
        `check_guards`; None when nothing is checked)."""
        if not self.active:
            return None
        spans = []
        for key, name, pos, dtype in self.measured:
            s = array_span(args[pos], coarse=True) if pos < len(args) else None
            if dtype == "int64" and s is not None and (s.lo < I32[0] or s.hi > I32[1]):
                raise input_error("input", name, s)
            spans.append(s)
        key = tuple(spans)
        if key in self._seen:
            return key
        env = {k: self._dtype_span(dtype) for k, _, _, dtype in self.inputs}
        env.update({m[0]: s for m, s in zip(self.measured, spans)})
        bad, _, _ = self._propagate(env, collect=False)
        if bad is not None:
            self._raise(bad, spans)
        if len(self._seen) > 1024:
            self._seen.clear()
        self._seen[key] = True
        return key

    def _step(self, step: Step, env: dict) -> None:
        """env[step's outputs] := their ranges (opaque_casts' walk: no checks)."""
        if step.guarded:
            got = None
        else:
            args, kwargs = _resolve(step.args, env), _resolve(step.kwargs, env)
            if step.floats:
                args, kwargs = _floats(args), _floats(kwargs)
            try:
                got = step.rule(*args, **kwargs) if step.rule else None
            except (TypeError, ValueError, IndexError, KeyError, AttributeError, ZeroDivisionError, OverflowError):
                got = None
        outs = got if isinstance(got, tuple) else (got,) * len(step.dtypes)
        kept = [rounded(s, d) if d in FLOATS and step.floats else None if d in FLOATS else span_of(s)
                for s, d in zip(outs, step.dtypes)]
        env[step.key] = tuple(kept) if len(step.dtypes) > 1 or isinstance(got, tuple) else kept[0]
        env.update(zip(step.outs, kept))

    def _propagate(self, env: dict, collect: bool, guarded: dict | None = None):
        """(the first step whose checked output leaves its range and that output's Span, the
        steps that may leave it, each key's input sources) for the given input ranges; a guarded
        cast's result is `guarded[key]` when given, else unbounded (checked after the run)."""
        env = {**self.fixed, **env}
        risky, sources = [], {}
        if collect:
            sources = {key: {key} for key, _, _, _ in self.inputs}
        first = None
        for step in self.steps:
            if step.guarded:
                got = (guarded or {}).get(step.key)
            else:
                args, kwargs = _resolve(step.args, env), _resolve(step.kwargs, env)
                if step.floats:
                    args, kwargs = _floats(args), _floats(kwargs)
                try:
                    got = step.rule(*args, **kwargs) if step.rule else None
                except (TypeError, ValueError, IndexError, KeyError, AttributeError, ZeroDivisionError, OverflowError):
                    got = None   # an argument combination the rule does not bound: unbounded
            outs = got if isinstance(got, tuple) else (got,) * len(step.dtypes)
            kept = []
            for s, dtype in zip(outs, step.dtypes):
                if dtype in FLOATS:
                    kept.append(rounded(s, dtype) if step.floats else None)
                    continue
                s = span_of(s)
                r = DTYPE_RANGES.get(dtype)
                if r is None:
                    kept.append(None)
                    continue
                lo, hi, checked = r
                if s is None and checked and step.casts and not step.guarded:   # unbounded floats: refused
                    if first is None:
                        first = (step, None, dtype)
                    if collect and step not in risky:
                        risky.append(step)
                    if not collect:
                        return first, risky, sources
                if s is not None and (s.lo < lo or s.hi > hi):
                    if checked:
                        if first is None:
                            first = (step, s, dtype)
                        if collect and step not in risky:
                            risky.append(step)
                        if not collect:
                            return first, risky, sources
                    s = Span(lo, hi) if not checked else s
                if s is None and not checked:
                    s = Span(lo, hi)   # the framework's dtype bounds it (a float -> int8 cast)
                kept.append(s)
            env[step.key] = tuple(kept) if len(step.dtypes) > 1 or isinstance(got, tuple) else kept[0]
            env.update(zip(step.outs, kept))
            if collect:
                sources[step.key] = set().union(*(sources.get(r, set()) for r in step.refs))
                sources.update((out, sources[step.key]) for out in step.outs)
        return first, risky, sources

    def _raise(self, bad, spans):
        step, s, dtype = bad
        ranges = ", ".join(f"{name!r} {sp}" for (_, name, _, _), sp in zip(self.measured, spans) if sp is not None)
        for_inputs = f" for inputs in these ranges ({ranges})" if ranges else ""
        if s is None:
            raise IntRangeError(f"the {dtype} result of {step.label} is cast from float values fusedsl cannot bound"
                                f"{for_inputs} (made by an op without a float range rule, or NaN / infinity in "
                                f"an input): it could leave int32, in which fusedsl computes {dtype} values "
                                f"({self.framework} casts to {dtype})", loc=step.loc or user_frame(),
                                hint="pass finite float values, or clamp them in the model before the cast (e.g. "
                                     "x.clamp(-2**31, 2**31 - 1).long()), or compute the integers from integer inputs")
        value = s.hi if s.hi > DTYPE_RANGES[dtype][1] else s.lo
        if dtype == "int64":
            what = (f"the int64 result of {step.label} can reach {value}{for_inputs}, beyond int32, in which fusedsl "
                    f"computes int64 values (it would wrap there; {self.framework} computes it in int64)")
            hint = ("keep the integer inputs small enough that every int64 value fits in int32, or convert "
                    "to float32 in the model before this op (exact for integers up to 2**24)")
            if step.casts:
                hint = ("keep the float values within int32 before the cast, e.g. clamp them in the model "
                        "(x.clamp(-2**31, 2**31 - 1).long())")
        else:
            what = (f"the {dtype} result of {step.label} can reach {value}{for_inputs}, beyond {dtype}: "
                    f"{self.framework} wraps it there, fusedsl computes {dtype} in int32 and would not")
            hint = "compute in int32 in the model (x.int())"
        raise IntRangeError(what, loc=step.loc or user_frame(), hint=hint)

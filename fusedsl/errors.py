"""The error tree and how an error points at the user's source.

Every mistake a user can make raises a subclass of `FusedslError`.  The message
names the user's file:line (or, for text IR, line:column with a caret), shows the
offending line and says what to do.  No fusedsl file name ever appears in a
message; `strip_internal_frames` removes fusedsl frames from a traceback so the
user sees their own code (tests check both).
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import linecache
import os
import sys
from dataclasses import dataclass

import numpy as np

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
# numpy's package directory as code objects name it (co_filename is the path imported from)
_NUMPY_DIR = os.path.dirname(np.__file__) + os.sep


@dataclass(frozen=True)
class Loc:
    """A position in the user's source: file and 1-based line (0 = unknown)."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


UNKNOWN_LOC = Loc("<unknown>", 0)


class FusedslError(Exception):
    """Base of every error fusedsl raises for a user mistake.

    `message` says what is wrong, `hint` what to do; `loc` is the user's line.  Its `str()` names
    the user's file:line, shows that line and the hint; the traceback stops at the fusedsl entry
    point the user called.

    Args:
        message: what is wrong.
        loc: the user's file and line (a `Loc`), or None.
        hint: what to do about it, or None.

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> try:
        ...     fs.add(np.ones(3, np.float32), np.ones(4, np.float32))
        ... except fs.FusedslError as exc:
        ...     print(type(exc).__name__, "at", exc.loc.file)
        ShapeError at <doctest ...>
    """

    def __init__(self, message: str, *, loc: Loc | None = None, hint: str | None = None):
        self.message = message
        self.loc = loc
        self.hint = hint
        super().__init__(self._render())

    def _render(self) -> str:
        parts = []
        if self.loc is not None and self.loc.line > 0:
            parts.append(f"{self.loc}: {self.message}")
            snippet = source_snippet(self.loc)
            if snippet:
                parts.append(snippet)
        else:
            parts.append(self.message)
        if self.hint:
            parts.append(f"  hint: {self.hint}")
        return "\n".join(parts)


class TraceError(FusedslError):
    """A mistake found while tracing the user's function (the base of the tracing errors).

    What to do: a traced tensor used where Python needs a value it does not have (`np.asarray(x)`, `x[0] = 0`).

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> def k(x):
        ...     x[0] = 0
        ...     return x
        >>> try:
        ...     fs.fused_kernel(k)(np.ones(2, np.float32))
        ... except fs.TraceError as exc:
        ...     print(exc.message.split(":")[0])
        a traced tensor cannot be assigned to (x[...] = v)
    """


class ShapeError(TraceError):
    """Shapes that do not fit together (broadcasting, matmul, reshape, an axis out of range).

    What to do: the shapes in the message, at your line.

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> try:
        ...     fs.matmul(np.ones((2, 3), np.float32), np.ones((4, 5), np.float32))
        ... except fs.ShapeError as exc:
        ...     print("ShapeError")
        ShapeError
    """


class DTypeError(TraceError):
    """A dtype the op or the target does not support (float64, int64, a bool tensor to arithmetic...).

    What to do: convert the input (`.astype(np.float32)`) or cast inside the kernel.

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> try:
        ...     fs.relu(np.ones(2, np.float64))
        ... except fs.DTypeError as exc:
        ...     print(exc.hint)
        convert with .astype(np.float32)
    """


class ControlFlowError(TraceError):
    """Python control flow (`if`, `while`, `and`, `bool()`, `float()`) that depends on a traced tensor's value.

    What to do: use `fs.where(cond, a, b)` for data-dependent choices.

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> def k(x):
        ...     return x if x.sum() > 0 else -x
        >>> try:
        ...     fs.fused_kernel(k)(np.ones(2, np.float32))
        ... except fs.ControlFlowError as exc:
        ...     print("ControlFlowError")
        ControlFlowError
    """


class ArgumentError(TraceError):
    """Wrong number or kind of arguments to a kernel or an op, or an unknown option.

    What to do: the message names the argument; the hint says what is accepted.

    Example:
        >>> import fusedsl as fs
        >>> try:
        ...     fs.fused_kernel(ub_headrom=0.5)
        ... except fs.ArgumentError as exc:
        ...     print(exc.message)
        unknown compile option ub_headrom=
    """


class IRParseError(FusedslError):
    """Malformed text IR given to `fs.parse_ir`; the message shows line:column and a caret.

    What to do: fix the text at the caret (printed IR always parses).

    Example:
        >>> import fusedsl as fs
        >>> try:
        ...     fs.parse_ir("func @f(")
        ... except fs.IRParseError:
        ...     print("IRParseError")
        IRParseError
    """


class VerifyError(FusedslError):
    """IR that breaks an invariant (SSA, types): raised by the verifier after parsing or a pass.

    What to do: in parsed IR, fix the value or type named; after a pass, it is a fusedsl bug: please report it.

    Example:
        >>> import fusedsl as fs
        >>> issubclass(fs.VerifyError, fs.FusedslError)
        True
    """


class ScheduleError(FusedslError):
    """A kernel that cannot be scheduled or printed: UB overflow, a `single_kernel=True` request fusion cannot meet, a kernel kind the Ascend C printer does not print yet.

    What to do: the message names the op and the bytes; split the kernel, lower `ub_headroom` pressure, or run on the CPU executors.

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> k = fs.fused_kernel(lambda x: fs.exp(x) * x + x, single_kernel=True, ub_headroom=0.002)
        >>> try:
        ...     k.compile(np.ones((64, 64), np.float32))
        ... except fs.ScheduleError:
        ...     print("ScheduleError")
        ScheduleError
    """


class TargetError(FusedslError):
    """An unknown target, or a feature the chip does not have (e.g. the Matmul API on ascend910).

    What to do: pick one of the targets listed in the hint, or another chip.

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> try:
        ...     fs.fused_kernel(lambda x: x + 1).compile(np.ones(2, np.float32), target="ascend999")
        ... except fs.TargetError as exc:
        ...     print(exc.message)
        unknown target 'ascend999'
    """


class AscendCCompileError(FusedslError):
    """g++ rejected Ascend C source, or is missing (the compiler's output is in the message).

    What to do: install g++ with C++17; for hand-written code, fix the line g++ names.

    Example:
        >>> import fusedsl as fs
        >>> issubclass(fs.AscendCCompileError, fs.FusedslError)
        True
    """


class AscendCCheckError(FusedslError):
    """The CPU implementation of the Ascend C API found a broken hardware rule (UB capacity, 32-byte alignment, the queue protocol, GM bounds...).

    What to do: the message names the API call, the buffer and the rule.

    Example:
        >>> import fusedsl as fs
        >>> issubclass(fs.AscendCCheckError, fs.FusedslError)
        True
    """


class IndexRangeError(ArgumentError):
    """An index outside its axis when a kernel runs: take, index_select, gather, take_along_axis,
    scatter and the other index ops check their indices before reading anything.

    What to do: the message names your op and its line (gather, scatter, ...) and the axis's
    size; keep the indices in [-size, size).

    Example:
        >>> import numpy as np, fusedsl as fs
        >>> try:
        ...     fs.index_select(np.ones((2, 3), np.float32), 1, np.array([5], np.int32))
        ... except fs.IndexRangeError as exc:
        ...     print(exc.message)
        index_select: an index along dim 1 (size 3) is out of range
    """


class IntRangeError(ArgumentError):
    """An imported model's int64 value (an input, or what an op computes) outside int32 when the
    kernel is called: fusedsl has no int64 and runs the framework's int64 tensors in int32, which
    would wrap where torch or onnxruntime compute in int64.  An int64 input past int32 is named at
    your call; a computed value at the model line of its op (its bound from the inputs' ranges).

    What to do: keep integer values small enough that every int64 value fits in int32, or
    convert to float32 in the model before the arithmetic.

    Example:
        >>> import fusedsl as fs
        >>> issubclass(fs.IntRangeError, fs.ArgumentError)
        True
    """


class UnsupportedOpError(TraceError):
    """A model graph (torch.export, ONNX) uses an op or an attribute variant fusedsl cannot import.

    What to do: the message names the op and your model's line (or the ONNX node); rewrite it with supported ops.

    Example:
        >>> import fusedsl as fs
        >>> issubclass(fs.UnsupportedOpError, fs.TraceError)
        True
    """


class ProjectError(FusedslError):
    """A project directory fusedsl cannot write without touching files it did not write (or files edited since).

    What to do: save into a new or empty directory, or pass overwrite=True for a previous save's own files.

    Example:
        >>> import fusedsl as fs
        >>> issubclass(fs.ProjectError, fs.FusedslError)
        True
    """


class CacheError(FusedslError):
    """A compile-cache entry could not be read or written (a full disk, a read-only folder).

    What to do: free space in the cache folder, or point FUSEDSL_CACHE_DIR at a writable folder
    with room.

    Example:
        >>> from fusedsl.errors import CacheError, FusedslError
        >>> issubclass(CacheError, FusedslError)
        True
    """


class CacheLimitError(FusedslError):
    """FUSEDSL_CACHE_MAX_BYTES, the on-disk caches' size limit, is not a size.

    What to do: set it to a number of bytes with an optional unit (`2GiB`, `500M`, `1073741824`;
    K/M/G/T and KiB/MiB/GiB/TiB are powers of 1024, KB/MB/GB/TB of 1000), to 0 for no limit, or
    unset it for the default 2 GiB.

    Example:
        >>> from fusedsl.errors import CacheLimitError, FusedslError
        >>> issubclass(CacheLimitError, FusedslError)
        True
    """


class JitTiersError(FusedslError):
    """FUSEDSL_JIT_TIERS, how the CPU backend compiles a kernel's first call, has an unknown value.

    What to do: unset it (the default: a quick compile for the first call, the optimised code
    swapped in when a background compile finishes), or set it to `0` (every kernel compiled
    optimised before its first call, as before tiers) or `quick` (the quick code only: for
    comparing the two).

    Example:
        >>> from fusedsl.errors import JitTiersError, FusedslError
        >>> issubclass(JitTiersError, FusedslError)
        True
    """


class FusedslWarning(UserWarning):
    """Base of every warning fusedsl issues: something that runs, but that you should look at.

    Example:
        >>> import warnings, fusedsl as fs
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("error", fs.FusedslWarning)   # every fusedsl warning an error here
    """


class AscendCWarning(FusedslWarning):
    """The CPU implementation of the Ascend C API ran something CANN's CPU debug mode also accepts, but
    which the device may not do as the CPU did.  The message starts with the kernel's file:line.

    What to do: read the message; it names the rule and the fix.

    Example:
        >>> import fusedsl as fs
        >>> issubclass(fs.AscendCWarning, fs.FusedslWarning)
        True
    """


class GmCacheLineWarning(AscendCWarning):
    """Two cores wrote different bytes of one 64-byte GM line and at least one of them wrote through
    its scalar data cache (GlobalTensor::SetValue).  The data cache writes whole lines back to GM
    (the SetValue page: written out per 64-byte cache line; cores' addresses at least a cache line
    apart, otherwise the cores' data randomly overwrite each other), so on the device the later
    write-back may restore the other core's bytes to their old values.  The CPU keeps every byte, as
    CANN's CPU debug mode does; two cores writing the same bytes stays an AscendCCheckError.

    What to do: give each core its own 64-byte aligned GM range, or write with DataCopy
    (DataCopyPad) or WriteGmByPassDCache, which do not go through the data cache.

    Example:
        >>> import fusedsl as fs
        >>> issubclass(fs.GmCacheLineWarning, fs.AscendCWarning)
        True
    """


# The warning classes a CPU Ascend C launch may name (fusedsl_cpu::Warn's kind).
ASCENDC_WARNINGS = {"AscendCWarning": AscendCWarning, "GmCacheLineWarning": GmCacheLineWarning}


class SaturationWarning(FusedslWarning):
    """`simulate` of an int8/uint8 kernel gave results that differ from numpy's: the NPU's casts to
    8-bit integers saturate where numpy (and kernel(*arrays)) wrap around.  8-bit add, sub, mul,
    neg and abs wrap like numpy on the NPU too (lower/vector.py `_wrap8`); a cast of an
    out-of-range float (or of a value a cube epilogue left out of range) saturates.

    What to do: keep the values in range, or compute in int32.

    Example:
        >>> import warnings, fusedsl as fs
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("error", fs.SaturationWarning)   # an error in this block
    """


def source_snippet(loc: Loc) -> str:
    """The user's line in rustc style, or '' when the file cannot be read."""
    text = linecache.getline(loc.file, loc.line).rstrip("\n")
    if not text:
        return ""
    gutter = str(loc.line)
    pad = " " * len(gutter)
    return f"{pad} |\n{gutter} | {text}\n{pad} |"


def caret_snippet(text: str, line: int, column: int) -> str:
    """Line `line` of `text` with a caret under 1-based `column`."""
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return ""
    src = lines[line - 1]
    return f"  {src}\n  {' ' * max(column - 1, 0)}^"


def is_internal_file(filename: str) -> bool:
    internal = _internal_files.get(filename)
    if internal is None:
        internal = os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep)
        if os.path.isabs(filename):   # a relative name's answer changes with the working directory
            _internal_files[filename] = internal
    return internal


# code object file name -> is_internal_file: user_frame walks the stack for every traced op
# (abspath per frame was 7 % of compiling a small kernel)
_internal_files: dict[str, bool] = {}


# While an importer replays a model graph, the "user's line" is the model's source line
# (from torch.export's stack traces or the ONNX node), not a frame of the importer.
_LOC_OVERRIDE: contextvars.ContextVar = contextvars.ContextVar("fusedsl_user_loc", default=None)


@contextlib.contextmanager
def at_user_location(loc: Loc | None):
    """Ops traced and errors raised inside this block are located at `loc`."""
    token = _LOC_OVERRIDE.set(loc)
    try:
        yield
    finally:
        _LOC_OVERRIDE.reset(token)


def _is_numpy_file(filename: str) -> bool:
    return filename.startswith(_NUMPY_DIR)


def user_frame(skip_internal: bool = True) -> Loc:
    """The innermost stack frame outside the fusedsl package: the user's line.

    numpy's own frames are skipped too: `np.sum(x)` or `np.cumsum(x)` on a traced tensor
    reaches fusedsl through numpy's Python code, and the line to show is the user's call."""
    override = _LOC_OVERRIDE.get()
    if override is not None:
        return override
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not (skip_internal and (is_internal_file(filename) or _is_numpy_file(filename))) \
                and not filename.startswith("<frozen"):
            return Loc(filename, frame.f_lineno)
        frame = frame.f_back
    return UNKNOWN_LOC


def strip_internal_frames(tb):
    """Drop fusedsl frames from a traceback chain (user frames keep their order)."""
    kept = []
    while tb is not None:
        if not is_internal_file(tb.tb_frame.f_code.co_filename):
            kept.append(tb)
        tb = tb.tb_next
    for first, second in zip(kept, kept[1:]):
        first.tb_next = second
    if kept:
        kept[-1].tb_next = None
        return kept[0]
    return None


def user_facing(fn):
    """Decorate a public entry point: a FusedslError leaves it with fusedsl's frames cut.

    The traceback then shows the user's frames and this one entry point, never the
    internals the error passed through (tests assert it).
    """
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except FusedslError as exc:
            raise exc.with_traceback(strip_internal_frames(exc.__traceback__)) from None
    return wrapper

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

    `message` says what is wrong, `hint` what to do; `loc` is the user's line.
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
    """A mistake found while tracing the user's function."""


class ShapeError(TraceError):
    """Shapes that do not fit together (broadcasting, matmul, reshape...)."""


class DTypeError(TraceError):
    """A dtype the op or the target does not support."""


class ControlFlowError(TraceError):
    """Python control flow that depends on a traced tensor's value."""


class ArgumentError(TraceError):
    """Wrong number or kind of arguments to a kernel or an op."""


class IRParseError(FusedslError):
    """Malformed text IR; the message shows line:column and a caret."""


class VerifyError(FusedslError):
    """IR that breaks an invariant (SSA, types).  Raised by the verifier."""


class ScheduleError(FusedslError):
    """A kernel that cannot be scheduled: UB overflow, single-kernel request..."""


class TargetError(FusedslError):
    """An unknown target or a feature the target does not have."""


class AscendCCompileError(FusedslError):
    """g++ rejected Ascend C source (the compiler's output is in the message)."""


class AscendCCheckError(FusedslError):
    """The CPU implementation of the Ascend C API found a broken hardware rule."""


class UnsupportedOpError(TraceError):
    """A model graph (torch.export, ONNX) uses an op or a variant fusedsl cannot import."""


class ProjectError(FusedslError):
    """A project directory fusedsl cannot write without touching files it did not write."""


class CacheError(FusedslError):
    """A compile-cache entry could not be read or written."""


class SaturationWarning(UserWarning):
    """`simulate` of an int8/uint8 kernel gave results that differ from numpy's: the NPU's vector
    unit computes 8-bit integers in float16/float32 and saturates where numpy (and kernel(*arrays))
    wrap around.  Keep the values in range, or compute in int32."""


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
    return os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep)


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

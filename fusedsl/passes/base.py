"""Pass base class, the PassManager, and the op-list rewriting helper passes share."""
from __future__ import annotations

import os
import tempfile
import time

from ..errors import ArgumentError, user_frame
from ..gcpause import gc_paused
from ..ir.core import Function, Module, Op, Value
from ..ir.printer import print_module
from ..ir.verifier import verify_module


class Pass:
    """A named module -> module transformation that returns valid IR."""

    name = "pass"

    def run(self, module: Module) -> Module:
        functions = tuple(self.run_on_function(fn, module) for fn in module.functions)
        if all(new is old for new, old in zip(functions, module.functions)):
            return module   # nothing rewritten: the module itself (the PassManager verified it already)
        return Module(functions)

    def run_on_function(self, fn: Function, module: Module) -> Function:
        return fn


class PassManager:
    """Runs passes in order; verifies after each, times each, and dumps IR on request.

    `FUSEDSL_DUMP_IR=<dir>` writes `NN-<pass>.ir` after every pass (and `00-input.ir`).
    """

    def __init__(self, passes, verify: bool = True, dump_dir: str | None = None):
        self.passes = list(passes)
        self.verify = verify
        self.dump_dir = dump_dir if dump_dir is not None else os.environ.get("FUSEDSL_DUMP_IR")
        self.timings: list[tuple[str, float]] = []
        self.history: list[tuple[str, object]] = []   # (pass name, module after it)

    def run(self, module: Module) -> Module:
        with gc_paused():
            return self._run(module)

    def _run(self, module: Module) -> Module:
        self._dump(0, "input", module)
        # A pass that rewrites nothing returns the module it was given (Pass.run): IR records are
        # immutable, so the module the last verification passed is still valid, and is not walked
        # again.  Most passes find nothing to do in most kernels (a softmax has no batch norm, no
        # attention, no constant to fold): this was 9 of 10 verifications of a row kernel's compile.
        verified = None
        for index, p in enumerate(self.passes, start=1):
            start = time.perf_counter()
            module = p.run(module)
            if self.verify and module is not verified:
                verify_module(module)
                verified = module
            self.timings.append((p.name, time.perf_counter() - start))
            self.history.append((p.name, module))
            self._dump(index, p.name, module)
        return module

    def _dump(self, index: int, name: str, module: Module) -> None:
        if not self.dump_dir:
            return
        try:
            os.makedirs(self.dump_dir, exist_ok=True)
            write_atomic(os.path.join(self.dump_dir, f"{index:02d}-{name}.ir"), print_module(module))
        except OSError as exc:   # e.g. FUSEDSL_DUMP_IR names an existing file
            raise ArgumentError(f"FUSEDSL_DUMP_IR={self.dump_dir!r}: cannot write the IR dumps there "
                                f"({exc.strerror or exc})", loc=user_frame(),
                                hint="point FUSEDSL_DUMP_IR at a folder (created if missing), or unset it") from None


def has_op(fn: Function, *names: str) -> bool:
    """An op of one of these names is in the function (a pass that rewrites only such ops
    returns the function itself without one)."""
    return any(op.name in names for op in fn.ops)


def write_atomic(path: str, text: str) -> None:
    """Write a file so that readers never see half of it (temp file + rename)."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=os.path.basename(path))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class Rewriter:
    """Rebuilds an op list while substituting values.

    `replace(old, new)` makes later uses of `old` read `new`; `emit(op)` appends an
    op with its operands substituted.
    """

    def __init__(self):
        self.map: dict[int, Value] = {}
        self.ops: list[Op] = []

    def get(self, v: Value) -> Value:
        return self.map.get(id(v), v)

    def replace(self, old: Value, new: Value) -> None:
        self.map[id(old)] = new

    def emit(self, op: Op) -> Op:
        if self.map:   # nothing replaced yet (most ops of most passes): the operands stand
            operands = tuple(self.get(v) for v in op.operands)
            if any(a is not b for a, b in zip(operands, op.operands)):
                op = Op(op.name, operands, op.results, op.attrs, op.loc)
        self.ops.append(op)
        return op

    def function(self, fn: Function) -> Function:
        """The rebuilt function; `fn` itself when every op was emitted unchanged (so that a pass
        that rewrote nothing returns its input: Pass.run, PassManager)."""
        results = tuple(self.get(v) for v in fn.results)
        if _same(self.ops, fn.ops) and _same(results, fn.results):
            return fn
        return Function(fn.name, fn.params, tuple(self.ops), results, fn.loc)


def _same(a, b) -> bool:
    """The same objects in the same order."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))

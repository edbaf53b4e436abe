"""What an elementwise op's recipe sees: the interface between op definitions and the scheduler.

A recipe is a function `recipe(c, dst, operands)` in the op's definition (fusedsl/ops/): it emits
the tile instructions (primitives, tile/prims.py) that compute the op into slot `dst`.  `operands`
are ("slot", name) or ("scalar", ("imm", value) | ("var", name)) pairs in the working dtype
`c.work`; `c.slot(operand)` turns a scalar into a broadcast tile.  A recipe asks `c.supports(prim)`
to choose between forms (LeakyRelu or Max/Min/Muls/Add) and makes temporaries with `c.tmp()`.

Two implementations: the scheduler's (lower/vector.py, emits Stmts into the kernel) and `DryRun`
here, which only records the primitives a recipe would use -- the scheduler asks it whether the
target has them in a dtype (else it computes in float32), and the cost model costs an op by them.
"""
from __future__ import annotations

from ..errors import ScheduleError


class Recipe:
    """The base: `work` dtype, the op, its location; subclasses implement the emitting."""

    def __init__(self, op, work, loc, hoisted):
        self.op = op
        self.work = work
        self.loc = loc
        self.hoisted = hoisted

    def attr(self, name):
        return self.op.attr(name)

    @staticmethod
    def imm(value):
        return ("imm", value)

    def fail(self, message: str, hint: str | None = None):
        raise ScheduleError(message, loc=self.loc, hint=hint)

    # implemented by the scheduler's recipe and by DryRun
    def __call__(self, prim: str, dst: str, srcs, scalar=None) -> None:
        raise NotImplementedError

    def supports(self, prim: str, dtype=None) -> bool:
        raise NotImplementedError

    def cast_supported(self, src: str, dst: str, mode: str) -> bool:
        """Whether the target's Cast converts Ascend C type src to dst with round mode `mode`."""
        raise NotImplementedError

    def tmp(self) -> str:
        raise NotImplementedError

    def dup(self, scalar) -> str:
        raise NotImplementedError

    def slot(self, operand) -> str:
        kind, x = operand
        return x if kind == "slot" else self.dup(x)


class DryRun(Recipe):
    """Records the primitives a recipe emits instead of emitting them."""

    def __init__(self, op, work, supports, cast=None):
        super().__init__(op, work, getattr(op, "loc", None), False)
        self._supports = supports
        self._cast = cast or (lambda src, dst, mode: True)
        self.used: list[str] = []
        self._n = 0

    def __call__(self, prim, dst, srcs, scalar=None):
        self.used.append(prim)

    def supports(self, prim, dtype=None):
        return self._supports(prim, dtype or self.work)

    def cast_supported(self, src, dst, mode):
        return self._cast(src, dst, mode)

    def tmp(self):
        self._n += 1
        return f"dry{self._n}"

    def dup(self, scalar):
        self.used.append("dup")
        return self.tmp()


def prims_of(opdef, op, work, operands, supports, cast=None) -> list[str]:
    """The primitives `opdef`'s recipe emits for `op` in dtype `work` (operands: their kinds)."""
    dry = DryRun(op, work, supports, cast)
    opdef.recipe(dry, "dst", operands)
    return dry.used

"""Tile instructions ("primitives"): ONE record each, read by every layer that handles them.

A primitive is one Ascend C vector API call on whole UB slots (`Stmt.op` names it).  Its record
says everything the layers need to know about it:

  api        the Ascend C API it prints as; `Target.supports(api, dtype)` (targets.py data)
             decides its per-chip, per-dtype availability
  form       the call form the printer uses: "unary" Api(dst, src, n), "binary" Api(dst, a, b, n),
             "scalar" Api(dst, src, scalar, n), or a special form the printer spells itself
             ("copy", "dup", "cast", "cmp", "select": temporaries, masks, round modes)
  cost_apis  the cost table's APIs one call costs (cost.py's per-API k*n+b); usually (api,)
  exact      the result of a 16-bit float operand needs no rounding (it is one of the operands)
  ref        numpy semantics for the tile interpreter: (operands widened to float32, scalar) -> array
  llvm_float / llvm_int
             the LLVM lowering: (StmtEmitter, operand registers, scalar register) -> register,
             for float (every float dtype lives in float32 registers) and int32 operands

Graph ops reach primitives only through their recipes (fusedsl/ops/); adding a primitive means
one record here plus, when it is new to the CPU implementation of the Ascend C API, its C++.
This module imports nothing of the backends: the lowerings call methods of the emitter they get.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..record import record


@record
class Prim:
    name: str
    api: str
    form: str
    ref: Callable | None = None
    llvm_float: Callable | None = None
    llvm_int: Callable | None = None
    cost_apis: tuple[str, ...] | None = None
    exact: bool = False
    doc: str = ""
    lanes_as: str | None = None    # bit ops: the lanes are reinterpreted as this element type (its
                                   # availability is asked for it; the count scales by the widths)
    mode: str | None = None        # form "round": the Cast round mode (float -> float, to an integer)

    @property
    def costs(self) -> tuple[str, ...]:
        return self.cost_apis if self.cost_apis is not None else (self.api,)


PRIMS: dict[str, Prim] = {}
TILE_APIS: dict[str, str] = {}     # tile op -> Ascend C API (the availability key)


def prim(name, api, form, ref=None, llvm_float=None, llvm_int=None, cost_apis=None, exact=False, doc="",
         lanes_as=None, mode=None):
    p = Prim(name, api, form, ref, llvm_float, llvm_int, cost_apis, exact, doc, lanes_as, mode)
    PRIMS[name] = p
    TILE_APIS[name] = api
    return p


def available(target, name: str, ascendc_dtype: str) -> bool:
    """Whether `target` has primitive `name` for elements of `ascendc_dtype` (targets.py data)."""
    p = PRIMS[name]
    return target.supports(p.api, p.lanes_as or ascendc_dtype)


# ---- numpy helpers (operands arrive widened to float32) -----------------------------------
def _recip(x):
    return np.ones((), x.dtype) / x


def _relu(x):
    # torch.relu: -0.0 stays -0.0 (np.maximum(-0.0, 0.0) is +0.0: the tie gives the second operand)
    return np.where(x < 0, np.zeros((), x.dtype), x)


# ---- LLVM helpers: `em` is backend_cpu.stmts.StmtEmitter ----------------------------------
def _int_max(em, x, y):
    return em.b.select(em.b.icmp_signed(">", x, y), x, y)


def _int_min(em, x, y):
    return em.b.select(em.b.icmp_signed("<", x, y), x, y)


# binary: Api(dst, a, b, n)
prim("add", "Add", "binary", lambda x, s: x[0] + x[1],
     lambda em, x, s: em.b.fadd(x[0], x[1]), lambda em, x, s: em.b.add(x[0], x[1]))
prim("sub", "Sub", "binary", lambda x, s: x[0] - x[1],
     lambda em, x, s: em.b.fsub(x[0], x[1]), lambda em, x, s: em.b.sub(x[0], x[1]))
prim("mul", "Mul", "binary", lambda x, s: x[0] * x[1],
     lambda em, x, s: em.b.fmul(x[0], x[1]), lambda em, x, s: em.b.mul(x[0], x[1]))
prim("div", "Div", "binary", lambda x, s: x[0] / x[1], lambda em, x, s: em.b.fdiv(x[0], x[1]))
prim("max", "Max", "binary", lambda x, s: np.maximum(x[0], x[1]),
     lambda em, x, s: em.fmax(x[0], x[1]), lambda em, x, s: _int_max(em, x[0], x[1]), exact=True,
     doc="numpy's float32 maximum: NaN propagates, a tie (-0.0 and +0.0) gives the second operand")
prim("min", "Min", "binary", lambda x, s: np.minimum(x[0], x[1]),
     lambda em, x, s: em.fmin(x[0], x[1]), lambda em, x, s: _int_min(em, x[0], x[1]), exact=True)

# scalar: Api(dst, src, scalar, n)
prim("adds", "Adds", "scalar", lambda x, s: x[0] + s,
     lambda em, x, s: em.b.fadd(x[0], s), lambda em, x, s: em.b.add(x[0], s))
prim("muls", "Muls", "scalar", lambda x, s: x[0] * s,
     lambda em, x, s: em.b.fmul(x[0], s), lambda em, x, s: em.b.mul(x[0], s))
prim("maxs", "Maxs", "scalar", lambda x, s: np.maximum(x[0], s),
     lambda em, x, s: em.fmax(x[0], s), lambda em, x, s: _int_max(em, x[0], s), exact=True)
prim("mins", "Mins", "scalar", lambda x, s: np.minimum(x[0], s),
     lambda em, x, s: em.fmin(x[0], s), lambda em, x, s: _int_min(em, x[0], s), exact=True)
prim("leaky_relu", "LeakyRelu", "scalar", lambda x, s: np.where(x[0] >= 0, x[0], x[0] * s),
     lambda em, x, s: em.b.select(em.b.fcmp_ordered(">=", x[0], em.k.fc(0.0)), x[0], em.b.fmul(x[0], s)),
     cost_apis=("Muls", "Max"))   # LeakyRelu is not in the published cost table

# unary: Api(dst, src, n)
prim("abs", "Abs", "unary", lambda x, s: np.abs(x[0]),
     lambda em, x, s: em.k.unary(em.b, "fabs", x[0]),
     # wraps at INT_MIN like numpy
     lambda em, x, s: em.b.select(em.b.icmp_signed("<", x[0], em.splat(0, x[0].type.element)),
                                  em.b.sub(em.splat(0, x[0].type.element), x[0]), x[0]), exact=True)
prim("exp", "Exp", "unary", lambda x, s: np.exp(x[0]), lambda em, x, s: em.exp(x[0]))
prim("ln", "Ln", "unary", lambda x, s: np.log(x[0]), lambda em, x, s: em.log(x[0]),
     cost_apis=("Exp",))          # Ln is not in the published table; costed like Exp (assumption)
prim("sqrt", "Sqrt", "unary", lambda x, s: np.sqrt(x[0]), lambda em, x, s: em.k.unary(em.b, "sqrt", x[0]))
prim("rsqrt", "Rsqrt", "unary", lambda x, s: _recip(np.sqrt(x[0])),
     lambda em, x, s: em.b.fdiv(em.k.fc(1.0), em.k.unary(em.b, "sqrt", x[0])))
prim("reciprocal", "Reciprocal", "unary", lambda x, s: _recip(x[0]),
     lambda em, x, s: em.b.fdiv(em.k.fc(1.0), x[0]))
prim("relu", "Relu", "unary", lambda x, s: _relu(x[0]),
     # torch.relu: NaN stays NaN, -0.0 stays -0.0
     lambda em, x, s: em.b.select(em.b.fcmp_ordered("<", x[0], em.k.fc(0.0)), em.k.fc(0.0), x[0]),
     lambda em, x, s: em.b.select(em.b.icmp_signed("<", x[0], em.splat(0, x[0].type.element)),
                                  em.splat(0, x[0].type.element), x[0]), exact=True)

# special forms (the printer spells each; the CPU backends handle them before the table)
prim("copy", "Muls", "copy", lambda x, s: x[0], lambda em, x, s: x[0], lambda em, x, s: x[0], exact=True,
     doc="x * 1 for floats (x + 0 would turn -0.0 into +0.0), Max(x, x) for ints")
prim("dup", "Duplicate", "dup", doc="every lane := the scalar")
prim("cast", "Cast", "cast", doc="convert with a round mode (Stmt.round_mode)")
prim("cmp", "Compare", "cmp", cost_apis=("Compare", "Select"),
     doc="dst = (a OP b) ? 1 : 0 as half; b may be the scalar (Compares)")
prim("select", "Select", "select", cost_apis=("Compare", "Select"),
     doc="dst = cond != 0 ? a : b, cond a half 0/1; with Stmt.cmp_mode set, srcs (a, b, x, y) and "
         "dst = (a OP b) ? x : y, the Compare's mask used by the Select directly")

# bitwise: And / Or / Not exist for 16-bit lanes; a 32-bit tensor is the same bits as twice as
# many int16 lanes, so the printer reinterprets it (count * 2) -- exact for any bit pattern
prim("and", "And", "bitwise", lambda x, s: np.bitwise_and(x[0], x[1]), None,
     lambda em, x, s: em.b.and_(x[0], x[1]), cost_apis=("Add",), exact=True, lanes_as="int16_t",
     doc="bitwise and (the cost table has no And: costed like Add)")
prim("or", "Or", "bitwise", lambda x, s: np.bitwise_or(x[0], x[1]), None,
     lambda em, x, s: em.b.or_(x[0], x[1]), cost_apis=("Add",), exact=True, lanes_as="int16_t")
prim("not", "Not", "bitwise", lambda x, s: np.bitwise_not(x[0]), None,
     lambda em, x, s: em.b.not_(x[0]), cost_apis=("Add",), exact=True, lanes_as="int16_t")

# float -> float Cast to an integral value (A2/A3 list float->float with the integer round modes;
# the op recipes ask Target.cast_supported before using them)
for _name, _mode, _np, _llvm in (("floor_cast", "CAST_FLOOR", np.floor, "floor"),
                                 ("ceil_cast", "CAST_CEIL", np.ceil, "ceil"),
                                 ("trunc_cast", "CAST_TRUNC", np.trunc, "trunc"),
                                 ("rint_cast", "CAST_RINT", np.rint, "rint")):
    prim(_name, "Cast", "round", (lambda f: lambda x, s: f(x[0]))(_np),
         (lambda f: lambda em, x, s: em.k.unary(em.b, f, x[0]))(_llvm), cost_apis=("Muls",), exact=True,
         mode=_mode, doc=f"Cast(float -> float, {_mode}): the integer it rounds to, as a float (costed like Muls)")

"""The loop-level tile IR: a whole kernel as data (GM walks, queues, loops, DMA, scalar work).

`tile/ir.py`'s `VectorSchedule` holds the compute of one tile; a `TileKernel` holds a whole
kernel the way the Ascend C canonical form runs it, so one printer
(`backend_ascendc/printer_kernel.py`) and one interpreter (`backend_cpu/kernel_interp.py`)
read every kind that lowers to it:

    fields     the tiling struct, word by word (a word, or an array of words)
    gms        the GM tensors (parameter or output, index, dtype)
    queues     the UB objects (TQue on VECIN / VECOUT, TBuf on VECCALC), depth, dtype and
               elements per buffer (an expression of the members)
    members    per-core values computed once in Init from the tiling (row pads, ...), and
               per-tile state the stages share (set in a stage, read in the next)
    stages     the per-tile methods, in the order Process calls them for each of the core's
               contiguous range of tiles (tiling fields `totalTiles`, `tilesPerCore`); the
               first may take the tile index
    words      the tiling struct's words when the sizes are static, and `candidates`: other
               words the lowering offers for the same sizes, or other kernels (another layout)
               for them (the kernel pass `tiling` keeps one, and `choice` says why)

A stage body is a list of nodes: `Let` (a constant local), `Var` / `Set` (a mutable local or a
member), `For` (up or down), `If`, the queue protocol (`Alloc`, `EnQue`, `DeQue`, `Free`),
DMA (`CopyIn` / `CopyOut`: `rows` rows of `cols` elements, GM rows `gm_stride` apart, UB rows
`ub_stride` apart), `UbCopy` (a UB->UB DataCopy), `Move` (one element, GetValue/SetValue),
`Barrier`, `Sync` (a SetFlag/WaitFlag pair between the vector and the scalar pipe), `Scalar`
(a typed constant local), `Put` (SetValue of a typed value) and `Step` (vector tile stmts of
tile/ir.py).

Expressions are ints, names (`tile`, a local or member, `t.X` a tiling field) or tuples:
(op, a, b) for + - * / % == != < <= > >= && ||, ("min", a, b), ("pad", e, n) (e rounded up to
a multiple of n), ("[]", "t.X", e) (a word of a tiling array), ("load", x) / ("load", x, e)
(element 0 / e of GM tensor x, in its dtype: a scalar member's init, a Dup's value).  All
other arithmetic is on uint32, except on typed scalars: a `Scalar` local (`val`), a typed
member, a float literal (`#1.5`, float32), ("get", t, e) (element e of UB tensor t, GetValue),
("load", x, e), ("cast", dtype, e) (static_cast), ("neg", e) and ("fmax" / "fmin", r, v) (v when
it is above / below r, else r: the scalar unit's compare-and-keep).  Arithmetic on a typed value
is in its dtype (float32 op float32 is float32, as in C++); the lowerings cast explicitly.

The text form (`print_kernel`; `tile/parse.py` `parse_kernel` reads it back) is deterministic and
round-trips: `print_kernel(parse_kernel(t)) == t`.
"""
from __future__ import annotations

import marshal
from dataclasses import field, replace
from typing import Union

import numpy as np

from .. import dtypes as dt
from ..record import record
from .text import format_stmt
from .verify import TileVerifyError

Expr = Union[int, str, tuple]

# binary operators and their precedence, C's order (relational binds tighter than equality)
BINARY = {"*": 6, "/": 6, "%": 6, "+": 5, "-": 5, "<": 4, "<=": 4, ">": 4, ">=": 4, "==": 3, "!=": 3,
          "&&": 2, "||": 1}


# ---- records ---------------------------------------------------------------------------------
@record
class Field:
    name: str
    length: int = 0          # 0: one word; n: an array of n words
    ctype: str = "uint32_t"  # "float" / "int32_t": a runtime scalar, after the words (packed per call)


@record
class Gm:
    name: str
    dtype: dt.DType
    role: str                # "in" (a kernel parameter) | "out" (a result) | "work" (scratch in the
                             # launch's workspace, one slice per core after the Matmul API's part)
    index: int               # parameter / result index; a work tensor: the bytes of each core's slice
    offset: int = 0          # a work tensor: where in the core's slice it starts (bytes) ...
    elems: int = 0           # ... and its elements (0: the whole slice)


@record
class Queue:
    name: str
    position: str            # VECIN | VECOUT | VECCALC
    depth: int               # InitBuffer buffer count
    dtype: dt.DType
    elems: Expr              # elements per buffer


@record
class Member:
    name: str
    init: Expr | None = None   # computed in Init from the tiling; None: per-tile state (0 at start)
    dtype: dt.DType | None = None   # None: uint32; else a scalar of this (compute) dtype, e.g. the
                                    # value of a one-element GM tensor (`load(x)`) or a runtime scalar


@record
class Ref:
    """A UB tensor at an element offset (`tensor[offset]` in Ascend C); `view` reads its bytes as
    another element type (ReinterpretCast: "int16", the only type the chip's bitwise APIs take,
    which fusedsl has no dtype of)."""
    tensor: str
    offset: Expr = 0
    view: str | None = None


# the names a cube kernel's Process body has for its core: GetBlockIdx(), GetSubBlockIdx(),
# GetTaskRatio() (vector cores per AI core)
CORE_NAMES = ("block", "subblock", "ratio")

# the element types a Ref may view its tensor's bytes as: name -> (C++ type, numpy type)
VIEWS = {"int16": ("int16_t", np.int16), "uint32": ("uint32_t", np.uint32)}


@record
class Decl:
    """A tensor variable of `queue`'s type, assigned later (held across loops)."""
    tensor: str
    queue: str


@record
class Dup:
    """Duplicate: `count` elements of dst set to `value` (a number, or an expression converted)."""
    dst: Ref
    value: object
    count: Expr


@record
class Vec:
    """One vector API call on UB tensors: Add / Max / Min / Div (dst, a, b), Muls / Adds (dst, a,
    scalar), Cast (dst, a, round mode)."""
    api: str
    dst: Ref
    srcs: tuple
    count: Expr
    scalar: object = None
    mode: str | None = None


@record
class Step:
    """One graph op's tile stmts (tile/ir.py, as the vector scheduler gives a one-op kernel) run
    on this kernel's tensors: `names` maps each slot to a Ref, `scalars` each scalar variable to a
    member; `prefill` sets lanes Compare reads past the count; the stmts' count is `n`."""
    label: str
    stmts: tuple
    names: tuple          # ((slot, Ref), ...)
    scalars: tuple = ()   # ((var, member), ...)
    prefill: tuple = ()   # ((Ref, value, count), ...)
    offset: Expr = 0      # `o`: the element offset the stmts' operands start at (a segment of a tile)
    count: Expr | None = None   # `n`, the elements the stmts run on (None: the enclosing `n`)


@record
class Let:
    var: str
    expr: Expr


@record
class Var:
    var: str
    expr: Expr


@record
class Set:
    var: str
    expr: Expr
    op: str = "="            # "=" | "+=" | "/="


@record
class For:
    var: str
    start: Expr
    end: Expr
    body: tuple
    down: bool = False       # end-1 down to start
    step: Expr = 1


@record
class If:
    cond: Expr
    then: tuple
    orelse: tuple = ()


@record
class Alloc:
    tensor: str
    queue: str


@record
class EnQue:
    queue: str
    tensor: str


@record
class DeQue:
    tensor: str
    queue: str


@record
class Free:
    queue: str
    tensor: str


@record
class CopyIn:
    tensor: str
    gm: str
    offset: Expr
    rows: Expr
    cols: Expr
    gm_stride: Expr
    ub_stride: Expr
    ub_off: Expr = 0         # where in the UB tensor the first row lands


@record
class CopyOut:
    gm: str
    offset: Expr
    tensor: str
    rows: Expr
    cols: Expr
    gm_stride: Expr
    ub_stride: Expr
    ub_off: Expr = 0         # where in the UB tensor the first row starts


@record
class GatherRow:
    """One gathered row: `cols` elements of table row idx[pos] (from column `col`; rows `row_len`
    apart) into dst; a negative index counts from the end (`bound` rows); an index outside
    [-bound, bound) is not read and its row is 0 (the host executors check the indices first
    and raise, docs/FUSION.md)."""
    dst: Ref
    table: str
    index: str
    pos: Expr
    bound: int
    row_len: int
    col: Expr
    cols: Expr


@record
class UbCopy:
    dst: str
    dst_off: Expr
    src: str
    src_off: Expr
    count: Expr


@record
class Move:
    dst: str
    dst_index: Expr
    src: str
    src_index: Expr


@record
class Barrier:
    why: str = ""


@record
class Sync:
    """The scalar pipe waits for the vector pipe (V_S: before GetValue of a vector result) or
    the vector pipe for the scalar one (S_V: after SetValue, before a vector op reads it)."""
    event: str               # "V_S" | "S_V"


@record
class Scalar:
    """A constant local of `dtype` (a typed expression: a reduction's value, a GM element)."""
    var: str
    dtype: dt.DType
    expr: Expr


@record
class Put:
    """One element of a UB tensor set to a typed value (SetValue, converted to its dtype)."""
    tensor: str
    index: Expr
    expr: Expr


@record
class Call:
    """Run a stage (a cube kernel's Process body calls its stages from the Iterate loop)."""
    stage: str
    arg: Expr | None = None


@record
class Return:
    """Leave Process (a core with no block of C)."""


@record
class Operand:
    """One of a Matmul object's types (MatmulType): where it lives, its format, element type
    and whether it is read transposed."""
    position: str            # GM | TSCM (user-managed L1) | VECIN (C into UB)
    format: str              # ND | NZ
    dtype: dt.DType
    transpose: bool = False


@record
class Matmul:
    """A Matmul high-level API object: C = A @ B of the core's block, tile by tile (Iterate),
    with the TCubeTiling words of the kernel's fields; `workspace` names the VECCALC queue
    that is its local workspace (310P: C passes through UB), or ""."""
    name: str
    a: Operand
    b: Operand
    c: Operand
    workspace: str = ""
    tiling: str = ""         # its TCubeTiling: the kernel's tiling struct (""), or that struct's member
                             # of this name (the fields `<tiling>_<field>`; attention's qk and pv)


@record
class MmSet:
    """SetTensorA / SetTensorB: operand `which` ("A" | "B") at element `offset` of GM tensor
    `src`, or an L1 tensor taken from a TSCM queue (offset 0)."""
    mm: str
    which: str
    src: str
    offset: Expr = 0


@record
class MmTail:
    """SetTail: the core's block of C is `m` x `n` (its last block in M or N), over `k` (None: Ka)."""
    mm: str
    m: Expr
    n: Expr
    k: Expr | None = None


@record
class MmIterate:
    """`while (mm.Iterate())`: the body once per base tile of the block, M-first."""
    mm: str
    body: tuple


@record
class MmGetC:
    """GetTensorC of the current tile into a UB tensor: its rows padded to 32 bytes; `placed`: each
    base block at its place in the block of C (rows padded to 32 bytes of the block's width)."""
    mm: str
    tensor: str
    placed: bool = False


@record
class MmEnd:
    mm: str


@record
class CopyNz:
    """`rows` x `cols` elements of a GM matrix (rows `gm_stride` apart) into an L1 tensor in NZ
    (Nd2NzParams): column blocks of 32 bytes, each `rows` rounded up to 16 high."""
    tensor: str
    gm: str
    offset: Expr
    rows: Expr
    cols: Expr
    gm_stride: Expr


@record
class RunPart:
    """A kernel of parts (kind cube_group): run part `part` (a TileKernel of `parts`) with the
    group's GM tensors `gms`, in the order of the part's own (its inputs, then its outputs)."""
    part: int
    gms: tuple


@record
class Reset:
    """TPipe::Reset between two parts: the next part plans the whole UB again."""


@record
class Stage:
    name: str
    param: str | None
    body: tuple
    once: bool = False       # run once per core before its first tile (a prologue), not per tile


@record(frozen=False)
class TileKernel:
    name: str
    kind: str
    note: str
    fields: list[Field]
    gms: list[Gm]
    queues: list[Queue]
    members: list[Member]
    stages: list[Stage]
    words: tuple = field(default=(), compare=False)   # the tiling's words when sizes are static
    # a cube kernel: its Matmul objects, the tiling struct it reads (CANN's TCubeTiling: the
    # fields are its words), and the Process body (after InitBuffer) that drives them and calls
    # the stages; None: Process runs the core's contiguous tiles through the stages
    matmuls: tuple = ()
    tiling_struct: str = ""
    process: tuple | None = None
    cores: Expr = "t.usedCoreNum"   # the vector instances that run Process (the interpreter runs them)
    # a kernel of several matmuls of the same A (kind cube_group): the cube kernels its Process
    # runs in turn (RunPart, Reset between them); its tiling struct holds one TCubeTiling per part
    parts: tuple = ()
    # other tilings a static kind's lowering offers for the same sizes: each a tuple of words (as
    # `words`, for this kernel), or a whole TileKernel (another lowering of the same function: a
    # layout that changes the kernel's structure, e.g. a cube kernel's Matmul objects per AI core or
    # A's panel in L1); the kernel pass `tiling` (tile/kernel_passes.py) walks each and keeps one
    candidates: tuple = field(default=(), compare=False)
    # a kernel with Matmul objects: its launch's blockDim (AI cores) as an expression of the words
    # (the walk of its Process runs that many AI cores: tile/kernel_cost.launch_work); None: the
    # kernel's blocks are its tiles' (totalTiles / tilesPerCore) or it has no candidates to weigh
    block_dim: Expr | None = None
    # what the pass `tiling` weighed and why it kept these words (kernel_passes.TilingChoice), or None
    choice: object = field(default=None, compare=False)

    def field_offsets(self) -> dict[str, tuple[int, int]]:
        """field name -> (first word, length): the struct's layout (worked out once per kernel: the
        walks and the UB plan read it per candidate's words; a TileKernel is not changed once built,
        and no reader changes the dict)."""
        out = self.__dict__.get("_field_offsets")
        if out is None:
            out, w = {}, 0
            for f in self.fields:
                if f.ctype != "uint32_t":
                    continue
                out[f.name] = (w, f.length)
                w += max(1, f.length)
            self.__dict__["_field_offsets"] = out
        return out

    @property
    def word_count(self) -> int:
        """uint32 words of the struct (the typed runtime scalars follow them)."""
        return sum(max(1, f.length) for f in self.fields if f.ctype == "uint32_t")


def pad(e: Expr, n: int) -> Expr:
    return ("pad", e, n)


def add(*xs: Expr) -> Expr:
    xs = [x for x in xs if x != 0]
    if not xs:
        return 0
    out = xs[0]
    for x in xs[1:]:
        out = ("+", out, x)
    return out


def mul(a: Expr, b: Expr) -> Expr:
    return ("*", a, b)


def output_names(params, n_out: int) -> list[str]:
    """GM names of the results: y0, y1, ... unless a parameter has that name."""
    taken = {p.name for p in params}
    out = []
    for i in range(n_out):
        name = f"y{i}"
        while name in taken:
            name += "_out"
        out.append(name)
    return out


def name_temporaries(sched, names: dict, tmp_name) -> list[tuple[str, object, object]]:
    """Name each slot of a one-op tile program that `names` does not map yet (its temporaries
    and constant tensors) `tmp_name(dtype, i)`, the i-th of that dtype, and return the ones
    the op's stmts expect pre-filled: (name, value, dtype). How the row, column and cube
    printers place a step's temporaries in their shared per-dtype buffers."""
    used: dict = {}
    prefill = []
    for name, slot in sched.slots.items():
        if name in names:
            continue
        i = used.get(slot.dtype, 0)
        used[slot.dtype] = i + 1
        names[name] = tmp_name(slot.dtype, i)
        if name in sched.prefill:
            prefill.append((names[name], sched.prefill[name], slot.dtype))
    return prefill


# ---- expressions: text and evaluation ---------------------------------------------------------
def _prec(e: Expr) -> int:
    return BINARY[e[0]] if isinstance(e, tuple) and e[0] in BINARY else 9


def memo_text(fmt, int_text=None):
    """`fmt` (an expression -> its text) keeping the text of the expression tuples it printed:
    kernels print the same few dozen expressions again and again (60 cube programs: 2,804
    expressions, 44 distinct).  The key is the tuple's marshal bytes, one C call where printing
    walks the tuple in Python, and exact where the tuple is not: 1, 1.0 and True are equal as dict
    keys but print differently, and marshal keeps their types.  Format 4 (format 2 encodes every
    string through the codec registry: 2 % of a conv kernel's first Ascend C print); its references
    to a string met twice make an equal tuple's bytes differ at most (a miss), never a different
    tuple's equal.  A tuple marshal cannot write (a cast's dtype) is printed each time; a name other
    than a tiling field (`t.X`) prints as itself in every text form, an int as `int_text` says when
    given (the Ascend C printer's literal, inline); at most TEXT_MEMO entries, emptied when full (a
    process printing many shapes)."""
    memo: dict = {}
    dumps = marshal.dumps

    def text(e) -> str:
        kind = type(e)
        if kind is str:
            if not e.startswith("t."):
                return e
        elif kind is int:
            if int_text is not None:
                return int_text(e)
        elif kind is tuple:
            try:
                key = dumps(e, 4)
            except ValueError:   # (a cast's dtype: printed each time)
                return fmt(e)
            out = memo.get(key)
            if out is None:
                if len(memo) >= TEXT_MEMO:
                    memo.clear()
                out = memo[key] = fmt(e)
            return out
        return fmt(e)
    return text


TEXT_MEMO = 4096
_FORMATS: dict = {}   # field prefix -> format_expr's memo_text for it


def format_expr(e: Expr, field_prefix: str = "t.") -> str:
    """Infix text of an expression; tiling fields get `field_prefix` (`tiling.` in C++)."""
    return expr_formatter(field_prefix)(e)


def expr_formatter(field_prefix: str = "t."):
    """format_expr for one field prefix, as a function of the expression (its memo_text): what a
    printer of many expressions looks up once."""
    text = _FORMATS.get(field_prefix)
    if text is None:
        text = _FORMATS[field_prefix] = memo_text(lambda x: _format_expr(x, field_prefix))
    return text


def _format_expr(e: Expr, field_prefix: str) -> str:
    if isinstance(e, bool):
        raise TypeError("bool is not an expression")
    if isinstance(e, int):
        return str(e)
    if isinstance(e, float):
        return "#" + repr(e)
    if isinstance(e, str):
        return field_prefix + e[2:] if e.startswith("t.") else e
    op = e[0]
    if op in BINARY:
        a, b = e[1], e[2]
        left = format_expr(a, field_prefix)
        right = format_expr(b, field_prefix)
        if _prec(a) < BINARY[op]:
            left = f"({left})"
        if _prec(b) <= BINARY[op]:
            right = f"({right})"
        return f"{left} {op} {right}"
    if op == "[]":
        return f"{format_expr(e[1], field_prefix)}[{format_expr(e[2], field_prefix)}]"
    if op in ("min", "pad", "fmax", "fmin"):
        return f"{op}({format_expr(e[1], field_prefix)}, {format_expr(e[2], field_prefix)})"
    if op == "sel":
        return f"sel({', '.join(format_expr(x, field_prefix) for x in e[1:])})"
    if op == "load":
        return f"load({e[1]})" if len(e) == 2 else f"load({e[1]}, {format_expr(e[2], field_prefix)})"
    if op == "get":
        return f"get({e[1]}, {format_expr(e[2], field_prefix)})"
    if op == "cast":
        return f"{e[1].name}({format_expr(e[2], field_prefix)})"
    if op == "neg":
        return f"neg({format_expr(e[1], field_prefix)})"
    raise ValueError(f"not an expression: {e!r}")


def assign(env: dict, node: Set, v) -> None:
    """A Set's effect on `env`, in uint32: `=`, `+=` wrapping, `/=` unsigned (ZeroDivisionError
    for 0): what the interpreter runs and the GM walk (tile/kernel_cost.py) follows."""
    if node.op == "=":
        env[node.var] = v
    elif node.op == "+=":
        env[node.var] = (env[node.var] + v) & 0xFFFFFFFF
    else:
        env[node.var] //= v


def walk_nodes(body):
    """Every node of a body, depth first: the bodies of For, If (both branches) and Iterate too."""
    for node in body:
        yield node
        if isinstance(node, (For, MmIterate)):
            yield from walk_nodes(node.body)
        elif isinstance(node, If):
            yield from walk_nodes(node.then)
            yield from walk_nodes(node.orelse)


def map_steps(k: "TileKernel", fn) -> "TileKernel":
    """k with every Step (of its stages and its Process, inside For, If and Iterate bodies)
    replaced by fn(step); k itself when fn changed none."""
    def nodes(body):
        return tuple(node(n) for n in body)

    def node(n):
        if isinstance(n, Step):
            return fn(n)
        if isinstance(n, (For, MmIterate)):
            return replace(n, body=nodes(n.body))
        if isinstance(n, If):
            return replace(n, then=nodes(n.then), orelse=nodes(n.orelse))
        return n
    stages = [replace(st, body=nodes(st.body)) for st in k.stages]
    process = nodes(k.process) if k.process is not None else None
    if stages == k.stages and process == k.process:
        return k
    return replace(k, stages=stages, process=process)


_M32 = 0xFFFFFFFF
# the binary ops on two Python ints (the walks' and the interpreter's common case), as the general
# path below computes them
_INT_BINARY = {"+": lambda a, b: (a + b) & _M32, "-": lambda a, b: (a - b) & _M32, "*": lambda a, b: (a * b) & _M32,
               "/": lambda a, b: a // b, "%": lambda a, b: a % b, "min": min, "pad": lambda a, b: -(-a // b) * b,
               "fmax": lambda a, b: b if b > a else a, "fmin": lambda a, b: b if b < a else a,
               "==": lambda a, b: int(a == b), "!=": lambda a, b: int(a != b), "<": lambda a, b: int(a < b),
               "<=": lambda a, b: int(a <= b), ">": lambda a, b: int(a > b), ">=": lambda a, b: int(a >= b),
               "&&": lambda a, b: int(bool(a) and bool(b)), "||": lambda a, b: int(bool(a) or bool(b))}


def evaluate(e: Expr, env: dict) -> int:
    """The value of an expression; `env` maps names (and `t.X` fields) to ints or word lists,
    typed scalars to numpy scalars, `ub` to a function (tensor, index) -> element."""
    kind = type(e)
    if kind is str:
        return env[e]
    if kind is tuple and len(e) == 3:
        f = _INT_BINARY.get(e[0])
        if f is not None:
            a, b = evaluate(e[1], env), evaluate(e[2], env)
            if type(a) is int and type(b) is int:
                return f(a, b)
            return _binary(e[0], a, b)
    if isinstance(e, int):
        return e
    if isinstance(e, float):
        return np.float32(e)
    if isinstance(e, str):
        return env[e]
    op = e[0]
    if op == "[]":
        return env[e[1]][evaluate(e[2], env)]
    if op == "load":   # a GM element's value (typed: a Dup's value, a scalar member's init)
        return env["gm:" + e[1]][0 if len(e) == 2 else evaluate(e[2], env)]
    if op == "get":
        return env["ub"](e[1], evaluate(e[2], env))
    if op == "cast":
        return np.asarray(evaluate(e[2], env)).astype(e[1].np)[()]
    if op == "neg":
        return -evaluate(e[1], env)
    if op == "sel":   # c ? a : b
        return evaluate(e[2], env) if evaluate(e[1], env) else evaluate(e[3], env)
    return _binary(op, evaluate(e[1], env), evaluate(e[2], env))


def _binary(op: str, a, b):
    if op == "fmax":
        return b if b > a else a
    if op == "fmin":
        return b if b < a else a
    if (isinstance(a, np.generic) or isinstance(b, np.generic)) and op in "+-*/":   # typed: the dtype's arithmetic
        with np.errstate(all="ignore"):
            return {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}[op](a, b)
    if op == "+":
        return (a + b) & 0xFFFFFFFF
    if op == "-":
        return (a - b) & 0xFFFFFFFF
    if op == "*":
        return (a * b) & 0xFFFFFFFF
    if op == "/":
        return a // b
    if op == "%":
        return a % b
    if op == "min":
        return min(a, b)
    if op == "pad":
        return -(-a // b) * b
    return int({"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b,
                "&&": bool(a) and bool(b), "||": bool(a) or bool(b)}[op])


# ---- text form -------------------------------------------------------------------------------
def _esc(s: str) -> str:
    return s.replace("\\", "\\\\").replace("\n", "\\n")


def _format_operand(o: Operand) -> str:
    return f"{o.position} {o.format} {o.dtype.name}" + (" transposed" if o.transpose else "")


def _value(v, f) -> str:
    """A Dup value or Vec scalar: a number as `#<repr>`, anything else as an expression (`f`)."""
    return "#" + repr(v) if isinstance(v, (float, bool, int)) else f(v)


def _ref(r: Ref, f) -> str:
    """A UB tensor at an offset (`f` prints the offset)."""
    text = r.tensor if r.offset == 0 else f"{r.tensor}[{f(r.offset)}]"
    return text if r.view is None else f"{text} as {r.view}"


def _copy_ub(tensor: str, off, f) -> str:
    """The UB side of a CopyIn / CopyOut: _ref(Ref(tensor, off), f) without the Ref."""
    return tensor if off == 0 else f"{tensor}[{f(off)}]"


def _vec_line(n: Vec, f) -> str:
    extra = (f" scalar {_value(n.scalar, f)}" if n.scalar is not None else "") + (f" mode {n.mode}" if n.mode else "")
    return f"vec {n.api} {_ref(n.dst, f)} <- {', '.join(_ref(r, f) for r in n.srcs)}{extra} count {f(n.count)}"


# The line of each node without a body, by its type (a node's type is its kind: records are
# final), without its indent; `f` prints an expression.  One dict lookup per node: the chain of
# isinstance tests it replaces cost up to 35 per node, the commonest (Step, Vec) last.
_LINE = {
    Let: lambda n, f: f"let {n.var} = {f(n.expr)}",
    Var: lambda n, f: f"var {n.var} = {f(n.expr)}",
    Set: lambda n, f: f"set {n.var} {n.op} {f(n.expr)}",
    Alloc: lambda n, f: f"alloc {n.tensor} = {n.queue}",
    EnQue: lambda n, f: f"enque {n.queue} {n.tensor}",
    DeQue: lambda n, f: f"deque {n.tensor} = {n.queue}",
    Free: lambda n, f: f"free {n.queue} {n.tensor}",
    CopyIn: lambda n, f: (f"copyin {_copy_ub(n.tensor, n.ub_off, f)} <- {n.gm}[{f(n.offset)}] rows {f(n.rows)} ; "
                          f"cols {f(n.cols)} ; gm {f(n.gm_stride)} ; ub {f(n.ub_stride)}"),
    CopyOut: lambda n, f: (f"copyout {n.gm}[{f(n.offset)}] <- {_copy_ub(n.tensor, n.ub_off, f)} rows {f(n.rows)} ; "
                           f"cols {f(n.cols)} ; gm {f(n.gm_stride)} ; ub {f(n.ub_stride)}"),
    GatherRow: lambda n, f: (f"gatherrow {_ref(n.dst, f)} <- {n.table}[{n.index}[{f(n.pos)}]] bound {n.bound}"
                             f" row {n.row_len} col {f(n.col)} count {f(n.cols)}"),
    UbCopy: lambda n, f: f"ubcopy {n.dst}[{f(n.dst_off)}] <- {n.src}[{f(n.src_off)}] count {f(n.count)}",
    Move: lambda n, f: f"move {n.dst}[{f(n.dst_index)}] <- {n.src}[{f(n.src_index)}]",
    Barrier: lambda n, f: "barrier" + (f" \"{_esc(n.why)}\"" if n.why else ""),
    Sync: lambda n, f: f"sync {n.event}",
    Scalar: lambda n, f: f"val {n.var} {n.dtype.name} = {f(n.expr)}",
    Put: lambda n, f: f"put {n.tensor}[{f(n.index)}] <- {f(n.expr)}",
    Decl: lambda n, f: f"decl {n.tensor} = {n.queue}",
    Call: lambda n, f: f"call {n.stage}" + ("" if n.arg is None else f"({f(n.arg)})"),
    Return: lambda n, f: "return",
    RunPart: lambda n, f: f"run part {n.part} ({', '.join(n.gms)})",
    Reset: lambda n, f: "reset",
    MmSet: lambda n, f: f"mmset {n.mm} {n.which} <- {n.src}[{f(n.offset)}]",
    MmTail: lambda n, f: f"mmtail {n.mm} {f(n.m)} ; {f(n.n)}" + ("" if n.k is None else f" ; {f(n.k)}"),
    MmGetC: lambda n, f: f"getc {n.tensor} <- {n.mm}" + (" placed" if n.placed else ""),
    MmEnd: lambda n, f: f"mmend {n.mm}",
    CopyNz: lambda n, f: (f"copynz {n.tensor} <- {n.gm}[{f(n.offset)}] rows {f(n.rows)} ; cols {f(n.cols)}"
                          f" ; gm {f(n.gm_stride)}"),
    Dup: lambda n, f: f"dup {_ref(n.dst, f)} <- {_value(n.value, f)} count {f(n.count)}",
    Vec: _vec_line,
}


def _body_lines(body, depth: int, locs: bool, f, out: list) -> None:
    """The lines of `body`'s nodes at `depth`, appended to `out` (nested bodies one deeper)."""
    ind = "  " * depth
    for node in body:
        kind = type(node)
        line = _LINE.get(kind)
        if line is not None:
            out.append(ind + line(node, f))
        elif kind is Step:
            _step_lines(node, ind, locs, f, out)
        elif kind is For:
            step = "" if node.step == 1 else f" step {f(node.step)}"
            out.append(f"{ind}for {node.var} in {f(node.start)} .. {f(node.end)}{step}{' down' if node.down else ''}:")
            _body_lines(node.body, depth + 1, locs, f, out)
        elif kind is If:
            out.append(f"{ind}if {f(node.cond)}:")
            _body_lines(node.then, depth + 1, locs, f, out)
            if node.orelse:
                out.append(f"{ind}else:")
                _body_lines(node.orelse, depth + 1, locs, f, out)
        elif kind is MmIterate:
            out.append(f"{ind}iterate {node.mm}:")
            _body_lines(node.body, depth + 1, locs, f, out)
        else:
            raise TypeError(f"not a tile kernel node: {node!r}")


def _step_lines(node: Step, ind: str, locs: bool, f, out: list) -> None:
    at = ("" if node.offset == 0 else f" at {f(node.offset)}") + (
        "" if node.count is None else f" count {f(node.count)}")
    out.append(f"{ind}step \"{_esc(node.label)}\"{at}:")
    out += [f"{ind}  map {slot} -> {_ref(r, f)}" for slot, r in node.names]
    out += [f"{ind}  scalar {var} -> {member}" for var, member in node.scalars]
    out += [f"{ind}  prefill {_ref(r, f)} <- {_value(v, f)} count {f(n)}" for r, v, n in node.prefill]
    out += [f"{ind}  do {format_stmt(st, locs=locs)}" for st in node.stmts]


def print_kernel(k: TileKernel, locs: bool = True, name: str | None = None) -> str:
    """The kernel's text (module doc); `name`: printed in place of k's own (the kernel passes'
    memo key leaves it out: `print_kernel(k, name="")` is the text of k renamed "", without the
    copy of k)."""
    f = expr_formatter()
    L = [f"kernel @{k.name if name is None else name} kind {k.kind}", f"note \"{_esc(k.note)}\""]
    L += [f"field {fl.name}" + (f"[{fl.length}]" if fl.length else "") + (
        "" if fl.ctype == "uint32_t" else f" {fl.ctype}") for fl in k.fields]
    L += [f"gm {g.name} {g.dtype.name} {g.role} {g.index}" + (f" at {g.offset} elems {g.elems}" if g.elems else "")
          for g in k.gms]
    L += [f"queue {q.name} {q.position} depth {q.depth} {q.dtype.name} elems {f(q.elems)}" for q in k.queues]
    L += [f"member {m.name}" + ("" if m.dtype is None else f" {m.dtype.name}") +
          ("" if m.init is None else f" = {f(m.init)}") for m in k.members]
    if k.tiling_struct:
        L.append(f"tiling {k.tiling_struct}")
    L += [f"matmul {mm.name} a {_format_operand(mm.a)} ; b {_format_operand(mm.b)} ; c {_format_operand(mm.c)}"
          + (f" ; workspace {mm.workspace}" if mm.workspace else "") + (f" ; tiling {mm.tiling}" if mm.tiling else "")
          for mm in k.matmuls]
    if k.cores != "t.usedCoreNum":
        L.append(f"cores {format_expr(k.cores)}")
    if k.block_dim is not None:
        L.append(f"blockdim {format_expr(k.block_dim)}")
    if k.process is not None:
        L.append("process:")
        _body_lines(k.process, 1, locs, f, L)
    for st in k.stages:
        L.append(f"stage {st.name}" + (f"({st.param})" if st.param else "") + (" once" if st.once else "") + ":")
        _body_lines(st.body, 1, locs, f, L)
    for i, part in enumerate(k.parts):   # each part's whole text, indented
        L.append(f"part {i}:")
        L += ["  " + line for line in print_kernel(part, locs).rstrip("\n").split("\n")]
    if k.words:
        L.append("words " + " ".join(map(str, k.words)))
    for c in k.candidates:
        if isinstance(c, TileKernel):   # another lowering: its whole text, indented
            L.append("candidate kernel:")
            L += ["  " + line for line in print_kernel(c, locs).rstrip("\n").split("\n")]
        else:
            L.append("candidate " + " ".join(map(str, c)))
    return "\n".join(L) + "\n"


# ---- figures and rules read from the kernel ---------------------------------------------------
def member_values(k: TileKernel, words=None) -> dict:
    """The tiling fields and the uint32 members Init computes (what queue sizes may use)."""
    words = list(k.words if words is None else words)
    env = {}
    for name, (w, n) in k.field_offsets().items():
        env["t." + name] = words[w] if n == 0 else words[w:w + n]
    for m in k.members:
        if m.dtype is None:
            env[m.name] = 0 if m.init is None else evaluate(m.init, env)
    return env


def ub_plan(k: TileKernel, words=None) -> list[tuple[str, str, int, int]]:
    """(queue, position, bytes per buffer, buffers) of every UB object: the report's UB plan,
    read from the kernel the printer prints (InitBuffer allocates whole 32-byte blocks)."""
    if k.parts:   # the parts run in turn with the UB plan reset between them: the largest part's
        return max((ub_plan(p) for p in k.parts), key=lambda plan: sum(b * n for _, _, b, n in plan))
    env = member_values(k, words)
    return [(q.name, q.position, -(-evaluate(q.elems, env) * q.dtype.itemsize // 32) * 32, q.depth)
            for q in k.queues if q.position != "TSCM"]   # a TSCM buffer is in L1


def _gets(e) -> frozenset:
    """The UB tensors a typed expression reads with GetValue.  Remembered per expression (the
    verifier and the pass `reuse` ask it of every typed expression); exact: equal expressions get
    equal tensors (only a tensor's name is a string where `get` reads)."""
    if not isinstance(e, tuple):
        return _NONE
    try:
        out = _GETS.get(e)
    except TypeError:   # (an expression holding something unhashable: worked out each time)
        return frozenset(_collect_gets(e, set()))
    if out is None:
        if len(_GETS) >= TEXT_MEMO:
            _GETS.clear()
        out = _GETS[e] = frozenset(_collect_gets(e, set()))
    return out


def _collect_gets(e, out: set) -> set:
    if isinstance(e, tuple):
        if e[0] == "get":
            out.add(e[1])
        for x in e[1:]:
            _collect_gets(x, out)
    return out


_NONE: frozenset = frozenset()
_GETS: dict = {}


# the nodes _check_syncs has no rule for (its pending writes stay as they are at them), looked up
# once where the rules' type tests would each be tried in turn
_SYNC_INERT = frozenset({Let, Var, Set, Alloc, Free, Decl, UbCopy, Call, Return, RunPart, Reset, MmSet, MmTail,
                         MmGetC, MmEnd, CopyNz})


def _check_syncs(body, fail) -> None:
    """The pipes run apart (ASCENDC.md: SetFlag / WaitFlag between pipes; a PIPE_ALL barrier
    covers every pair, and the queue protocol, EnQue / DeQue, orders a tensor's DMA with its
    compute):

    - a GetValue (a typed expression's `get`, a Move's source) of a tensor a vector op wrote needs
      a V_S sync after the write; a vector op reading a tensor SetValue wrote (Put, a Move's
      destination) an S_V sync;
    - a tensor a DMA wrote (CopyIn, a gathered row) is read by a vector op or GetValue only after
      a barrier or its queue's EnQue / DeQue; a DMA copies out (CopyOut) a tensor a vector op or
      SetValue wrote only after a barrier or its queue's EnQue / DeQue.

    Checked on the stage's nodes in order (a stage starts with nothing pending: the kernel's
    stages hand tensors over through queues), a loop's body twice (what its last pass wrote
    reaches its first), an If's branches each from the state before it, joined.  A body walked
    again from a state it was walked from before gives the same answer, so walks are memoised:
    nested loops cost a walk per distinct state, not 2**depth."""
    def scalar_reads(node, vec: set, dma: set) -> None:
        late = (_gets(node.expr) | (_gets(node.index) if isinstance(node, Put) else set())
                if isinstance(node, (Scalar, Put)) else {node.src})
        if late & vec:
            fail(f"GetValue of {sorted(late & vec)[0]} after a vector op wrote it, with no V_S sync between")
        if late & dma:
            fail(f"GetValue of {sorted(late & dma)[0]} after a DMA wrote it, with no barrier or queue between")

    def vector_reads(reads: set, sca: set, dma: set) -> None:
        early = reads & sca
        if early:
            fail(f"a vector op reads {sorted(early)[0]} after SetValue wrote it, with no S_V sync between")
        early = reads & dma
        if early:
            fail(f"a vector op reads {sorted(early)[0]} after a DMA wrote it, with no barrier or queue between")

    memo: dict = {}

    def walk(nodes, state: tuple) -> tuple:
        """The pending sets after `nodes` from `state` (new sets: the caller's are not changed)."""
        vec, sca, dma, out = state
        key = (id(nodes), frozenset(vec), frozenset(sca), frozenset(dma), frozenset(out))
        after = memo.get(key)
        if after is None:
            after = memo[key] = walk_once(nodes, set(vec), set(sca), set(dma), set(out))
        vec, sca, dma, out = after
        return set(vec), set(sca), set(dma), set(out)   # (the caller changes its own sets in place)

    def walk_once(nodes, vec: set, sca: set, dma: set, out: set) -> tuple:
        # pending: vector writes, SetValue writes, DMA-in writes, to copy out (this walk's own sets)
        for node in nodes:
            kind = type(node)   # (a node's type is its kind: records are final)
            if kind in _SYNC_INERT:
                continue
            if kind is Vec:   # the vector pipe: reads its sources, writes its destination
                if sca or dma:
                    vector_reads({r.tensor for r in node.srcs}, sca, dma)
                vec.add(node.dst.tensor)
                out.add(node.dst.tensor)
            elif kind is Step:
                if sca or dma:
                    vector_reads({r.tensor for _, r in node.names}, sca, dma)
                outs = {st.dst for st in node.stmts}
                writes = {r.tensor for slot, r in node.names if slot in outs} | {r.tensor for r, _, _ in node.prefill}
                vec |= writes
                out |= writes
            elif kind is Dup:   # (reads no tensor: its value is a number or a scalar expression)
                vec.add(node.dst.tensor)
                out.add(node.dst.tensor)
            elif kind is Barrier:
                vec.clear(), sca.clear(), dma.clear(), out.clear()
            elif kind is Sync:
                (vec if node.event == "V_S" else sca).clear()
            elif kind is EnQue or kind is DeQue:   # the queue orders the tensor's DMA and compute
                dma.discard(node.tensor)
                out.discard(node.tensor)
            elif kind is Scalar or kind is Put or kind is Move:
                scalar_reads(node, vec, dma)
                if kind is not Scalar:
                    dst = node.tensor if kind is Put else node.dst
                    sca.add(dst)
                    out.add(dst)
            elif kind is CopyIn:
                dma.add(node.tensor)
            elif kind is GatherRow:
                dma.add(node.dst.tensor)
            elif kind is CopyOut:
                if node.tensor in out:
                    fail(f"a DMA copies {node.tensor} out after a vector op or SetValue wrote it, with no barrier or "
                         "queue between")
            elif kind is For or kind is MmIterate:
                after = walk(node.body, (vec, sca, dma, out))
                if after != (vec, sca, dma, out):   # what the last pass left pending meets the first
                    after = walk(node.body, after)
                vec, sca, dma, out = after
            elif kind is If:
                a, b = walk(node.then, (vec, sca, dma, out)), walk(node.orelse, (vec, sca, dma, out))
                vec, sca, dma, out = (x | y for x, y in zip(a, b))
        return vec, sca, dma, out

    walk_once(body, set(), set(), set(), set())   # (a stage's body is walked once: no memo)


# the nodes verify_kernel's walk has no rule for (they name nothing it checks)
_VERIFY_INERT = frozenset({Sync, Barrier, Return, Reset})


def _names_read(e: tuple) -> tuple:
    """The names expression `e` reads, in order, and ("load", x) where it loads element(s) of GM
    tensor x (verify_kernel checks each where it stands).  Remembered per expression: kernels read
    the same few dozen again and again.  Exact: equal expressions read equal names (only a name is
    a string; a number of any type reads none)."""
    try:
        out = _NAMES_READ.get(e)
    except TypeError:   # (an expression holding something unhashable: worked out each time)
        return tuple(_collect_names(e, []))
    if out is None:
        if len(_NAMES_READ) >= TEXT_MEMO:
            _NAMES_READ.clear()
        out = _NAMES_READ[e] = tuple(_collect_names(e, []))
    return out


def _collect_names(e, out: list) -> list:
    if type(e) is str:
        out.append(e)
    elif type(e) is tuple:
        if e[0] == "load":
            out.append(("load", e[1]))
            for x in e[2:]:
                _collect_names(x, out)
        elif e[0] in ("cast", "get"):   # a dtype / a UB tensor (checked where it is read), not a local
            _collect_names(e[2], out)
        else:
            for x in e[1:]:
                _collect_names(x, out)
    return out


_NAMES_READ: dict = {}


def verify_kernel(k: TileKernel, target, budget: int | None = None) -> None:
    """The Ascend C rules a TileKernel keeps, checked statically (the interpreter checks the
    bounds and the queue protocol as it runs): every name a node uses is declared (queues,
    GM tensors, tensors taken from a queue before use, members and locals before they are read),
    queue buffers per position and buffers per kernel within the chip's limits (ASCENDC.md 1.3),
    the UB plan within `budget` (default: the target's UB), and the syncs between the vector and
    the scalar pipe (_check_syncs).  A break raises TileVerifyError."""
    def fail(msg):
        raise TileVerifyError(f"tile kernel {k.name}: {msg}")

    queues = {q.name: q for q in k.queues}
    gms = {g.name for g in k.gms}
    fields = {"t." + f.name for f in k.fields}
    known = fields | {m.name for m in k.members}

    def gets(e, tensors):
        for t in sorted(_gets(e) - tensors):
            fail(f"{format_expr(e)} reads tensor {t}, which is not taken from a queue before")

    def use(e, scope):
        if type(e) is str:   # (most expressions: a name, or a number below)
            if e not in scope:
                fail(f"{format_expr(e)} reads {e}, which is not set before")
            return
        if type(e) is not tuple:
            return
        for x in _names_read(e):   # (in order: the first wrong one fails)
            if type(x) is tuple:
                if x[1] not in gms:
                    fail(f"load({x[1]}) names no GM tensor")
            elif x not in scope:
                fail(f"{format_expr(e)} reads {x}, which is not set before")

    def held(tensor, tensors):
        if tensor not in tensors:
            fail(f"tensor {tensor} is used before it is taken from a queue")

    def walk(body, scope: set, tensors: set):
        # (the rules in the order of how often the lowerings' kernels have their nodes)
        for node in body:
            kind = type(node)   # (a node's type is its kind: records are final)
            if kind in _VERIFY_INERT:
                continue
            if kind in (Alloc, DeQue, Decl):
                if node.queue not in queues:
                    fail(f"{type(node).__name__.lower()} names queue {node.queue}, which is not allocated")
                tensors.add(node.tensor)
                tensors_queue[node.tensor] = node.queue
            elif kind is Vec or kind is Dup:
                held(node.dst.tensor, tensors)
                use(node.dst.offset, scope)
                if kind is Vec:
                    for r in node.srcs:
                        held(r.tensor, tensors)
                        use(r.offset, scope)
                use(node.count, scope)
                if kind is Dup and not isinstance(node.value, (float, bool)):
                    use(node.value, scope)
                if kind is Vec and node.scalar is not None and not isinstance(node.scalar, (float, bool)):
                    use(node.scalar, scope)
            elif kind is Step:
                use(node.offset, scope)
                if node.count is not None:
                    use(node.count, scope)
                for _, r in node.names:
                    held(r.tensor, tensors)
                    use(r.offset, scope)
                for _, member in node.scalars:
                    if member not in scope:
                        fail(f"step {node.label!r} reads scalar {member}, which is not a member")
            elif kind is Set:
                use(node.expr, scope)
                if node.var not in scope:
                    fail(f"set {node.var} before it is declared")
            elif kind is EnQue or kind is Free:
                if node.queue not in queues:
                    fail(f"{type(node).__name__.lower()} names queue {node.queue}, which is not allocated")
                held(node.tensor, tensors)
            elif kind is For:
                use(node.start, scope), use(node.end, scope), use(node.step, scope)
                walk(node.body, scope | {node.var}, set(tensors))
            elif kind is Scalar:
                use(node.expr, scope)
                gets(node.expr, tensors)
                scope.add(node.var)
            elif kind is CopyIn or kind is CopyOut:
                if node.gm not in gms:
                    fail(f"a copy names GM tensor {node.gm}, which the kernel does not take")
                held(node.tensor, tensors)
                for e in (node.offset, node.rows, node.cols, node.gm_stride, node.ub_stride, node.ub_off):
                    use(e, scope)
            elif kind is Let or kind is Var:
                use(node.expr, scope)
                scope.add(node.var)
            elif kind is Put:
                held(node.tensor, tensors)
                for e in (node.index, node.expr):
                    use(e, scope)
                    gets(e, tensors)
            elif kind is If:
                use(node.cond, scope)
                walk(node.then, set(scope), set(tensors))
                walk(node.orelse, set(scope), set(tensors))
            elif kind is GatherRow:
                for g in (node.table, node.index):
                    if g not in gms:
                        fail(f"a gathered row names GM tensor {g}, which the kernel does not take")
                held(node.dst.tensor, tensors)
                for e in (node.dst.offset, node.pos, node.col, node.cols):
                    use(e, scope)
            elif kind is UbCopy or kind is Move:
                held(node.dst, tensors), held(node.src, tensors)
            elif kind is Call:
                if node.stage not in stages:
                    fail(f"call of stage {node.stage}, which the kernel does not have")
                if (node.arg is None) != (stages[node.stage].param is None):
                    fail(f"call of stage {node.stage} with {'no' if node.arg is None else 'an'} argument")
                if node.arg is not None:
                    use(node.arg, scope)
            elif kind in (MmSet, MmTail, MmIterate, MmGetC, MmEnd):
                if node.mm not in mms:
                    fail(f"{type(node).__name__} names Matmul object {node.mm}, which the kernel does not have")
                if kind is MmSet:
                    if node.src in gms:
                        use(node.offset, scope)
                    elif node.src not in tensors or queues[tensors_queue.get(node.src, "")].position not in (
                            "TSCM", "TBUF_VECOUT"):
                        fail(f"SetTensor{node.which} of {node.src}: neither a GM tensor nor an L1 tensor taken "
                             "from a TSCM queue (or a UB tensor of a VECOUT TBuf)")
                elif kind is MmTail:
                    use(node.m, scope), use(node.n, scope)
                elif kind is MmIterate:
                    walk(node.body, set(scope), set(tensors))
                elif kind is MmGetC:
                    held(node.tensor, tensors)
            elif kind is RunPart:
                if not 0 <= node.part < len(k.parts):
                    fail(f"run part {node.part}: the kernel has {len(k.parts)} part(s)")
                part = k.parts[node.part]
                own = [g for g in part.gms if g.role == "in"] + [g for g in part.gms if g.role == "out"]
                if len(own) != len(node.gms):
                    fail(f"run part {node.part} hands over {len(node.gms)} GM tensor(s); the part takes {len(own)}")
                for mine, theirs in zip(node.gms, own):
                    g = gm_by_name.get(mine)
                    if g is None or g.role != theirs.role or g.dtype != theirs.dtype:
                        fail(f"run part {node.part} hands {mine} to its {theirs.role} tensor {theirs.name} "
                             f"({theirs.dtype.name}); the kernel has no such {theirs.role} GM tensor")
            elif kind is CopyNz:
                if node.gm not in gms:
                    fail(f"a copy names GM tensor {node.gm}, which the kernel does not take")
                held(node.tensor, tensors)
                for e in (node.offset, node.rows, node.cols, node.gm_stride):
                    use(e, scope)

    stages = {st.name: st for st in k.stages}
    gm_by_name = {g.name: g for g in k.gms}
    mms = {mm.name: mm for mm in k.matmuls}
    tensors_queue: dict = {}
    for mm in k.matmuls:
        if mm.workspace and (mm.workspace not in queues or queues[mm.workspace].position != "VECCALC"):
            fail(f"Matmul {mm.name}'s local workspace {mm.workspace} is not a VECCALC buffer")
    for st in k.stages:
        walk(st.body, set(known) | ({st.param} if st.param else set()), set())
        _check_syncs(st.body, fail)
    if k.process is not None:   # Process knows the core it runs on (printer_kernel declares the names)
        walk(k.process, set(known) | set(CORE_NAMES), set())
    if k.parts:   # a kernel of parts: each keeps the rules alone; the UB is reset between two runs
        runs = [n for n in k.process or () if isinstance(n, (RunPart, Reset))]
        for a, b in zip(runs, runs[1:]):
            if isinstance(a, RunPart) and isinstance(b, RunPart):
                fail(f"part {b.part} runs after part {a.part} with no TPipe reset between (their UB plans overlap)")
        for part in k.parts:
            verify_kernel(part, target, budget)
    limit = target.max_queue_buffers_per_position
    for pos in ("VECIN", "VECOUT"):
        n = sum(q.depth for q in k.queues if q.position == pos)
        if n > limit:
            fail(f"{n} queue buffers on {pos}; {target.name} allows {limit} per position")
    if len(k.queues) > target.max_buffers:
        fail(f"{len(k.queues)} UB buffers; {target.name} allows {target.max_buffers}")
    if k.words:
        used = sum(b * n for _, _, b, n in ub_plan(k))
        cap = target.ub_bytes if budget is None else budget
        if used > cap:
            fail(f"the UB plan takes {used} bytes; the budget is {cap}")

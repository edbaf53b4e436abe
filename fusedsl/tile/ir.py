"""The tile IR: the data model of a scheduled kernel (what every backend reads).

A tile program works on one tile at a time in Unified Buffer (UB) buffers ("slots"): CopyIn
moves each input's tile from GM into its slot, Compute runs `Stmt`s (tile ops, each mapping
onto one Ascend C vector API) over whole slots, CopyOut moves each output's slot to GM.
Stmts marked `hoisted` run once per core before the first tile (their operands depend only
on per-core data: a row input, runtime scalars, constants).  A slot's `role` says which
Ascend C object holds it (TQue on VECIN / VECOUT, a TBuf on VECCALC) and `num` its buffer
count (2 = double-buffered).  `Tiling` holds the runtime tile sizes.

The records are plain data; lowering (`fusedsl/lower/vector.py`), the passes over them
(`tile/passes.py`), the text form (`tile/text.py`) and the verifier (`tile/verify.py`) live
beside them.
"""
from __future__ import annotations

from dataclasses import field

from .. import dtypes as dt
from ..errors import Loc
from ..ir.core import Function
from .prims import TILE_APIS  # noqa: F401  (tile op -> Ascend C API: the primitives' records)
from ..record import record

# cmp: dst = (a OP b) ? 1 : 0 (b may be the scalar); select: dst = cond != 0 ? a : b.
# Both read up to `CMP_SLACK` lanes past the count (Compare works on 256-byte multiples), so
# kernels that use them allocate that slack and pre-fill their temporaries.
CMP_SLACK = 128


@record
class Slot:
    """A UB buffer holding one tile of one value."""

    name: str
    dtype: dt.DType
    role: str              # "in" (TQue VECIN) | "out" (TQue VECOUT) | "tmp" (TBuf VECCALC) | "inv" (hoisted TBuf)
                           # | "scratch" (TBuf: Compare's bit masks and constant tensors, filled once per core)
    num: int = 1           # InitBuffer count: 2 = double-buffered queue

    @property
    def double_buffered(self) -> bool:
        return self.num == 2


@record
class TileInput:
    index: int              # kernel parameter index
    name: str
    gm_dtype: dt.DType
    kind: str               # "full" | "row" | "scalar" | "general" | "runtime_scalar"; view kernels:
                            # "gm" (a parameter read only through loads), "view" / "gather" (a load)
    bits: tuple[bool, ...]  # per collapsed dim: present (True) or broadcast (False)
    slot: str | None        # UB slot the data lands in (gm dtype); None for scalars
    var: str | None         # scalar variable name for scalar kinds

    @property
    def dtype(self) -> dt.DType:
        return self.gm_dtype


@record
class TileOutput:
    index: int
    name: str
    gm_dtype: dt.DType
    slot: str


@record
class Stmt:
    op: str                       # a tile op (TILE_APIS key)
    dst: str
    srcs: tuple[str, ...]
    dtype: dt.DType               # element dtype of dst (and of srcs, except for cast)
    scalar: tuple | None = None   # ("imm", value) or ("var", name)
    src_dtype: dt.DType | None = None   # cast only
    round_mode: str | None = None       # cast only
    hoisted: bool = False
    loc: Loc | None = None
    cmp_mode: str | None = None         # cmp: LT LE GT GE EQ NE (dst = a OP b ? 1 : 0); select: (a OP b) ? x : y
    aux: tuple[str, ...] = ()           # printer scratch slots (bit masks, constant tensors)

    @property
    def negation(self) -> bool:
        """muls by the immediate -1: exact in every dtype (nothing to round), which the CPU lowering
        relies on -- the -1 must stay an immediate (kernel_passes.lift_immediates)."""
        return self.op == "muls" and self.scalar == ("imm", -1)


@record(frozen=False)
class VectorSchedule:
    kernel: Function
    iter_shape: tuple
    dims: tuple[tuple[int, ...], ...]     # original iteration dims merged into each collapsed dim
    inputs: list[TileInput]
    outputs: list[TileOutput]
    slots: dict[str, Slot]
    stmts: list[Stmt]
    scalars: list[tuple[str, dt.DType, tuple]] = field(default_factory=list)  # hoisted scalar vars
    slack_elems: int = 0                  # extra elements per slot (CMP_SLACK when cmp/select are used)
    values_per_slot: dict = field(default_factory=dict)   # slot -> how many tile values it holds in turn
    prefill: dict = field(default_factory=dict)   # slot -> value written once per core before use
    block_elems: int = 8                  # row alignment in elements (32 B of the narrowest dtype)
    gran_elems: int = 64                  # tile-size granularity (256 B of the narrowest dtype)
    ub_budget: int = 0
    views: object = None                  # views.ViewPlan: inputs read through slice/concatenate/take
    target: object = None                 # the Target it was scheduled for

    @property
    def fn(self) -> Function:
        return self.kernel

    @property
    def params(self) -> list[TileInput]:
        """The kernel's parameters in launch order (a view kernel's loads follow them in
        `inputs`): GM tensors, and runtime scalars that travel in the tiling struct."""
        return [i for i in self.inputs if i.kind not in ("view", "gather")]

    @property
    def symbols(self) -> list[str]:
        """The symbolic sizes, in the order the host tiling takes them (`sizes[i]`)."""
        return sorted({d for d in self.iter_shape if isinstance(d, str)})

    @property
    def body(self) -> list[Stmt]:
        return [s for s in self.stmts if not s.hoisted]

    @property
    def hoisted(self) -> list[Stmt]:
        return [s for s in self.stmts if s.hoisted]

    def ub_bytes_per_elem(self) -> int:
        return sum(s.dtype.itemsize * s.num for s in self.slots.values())


@record
class Tiling:
    """Runtime tiling, computed identically by `compute_tiling` and the printed host code."""

    R: int
    C: int
    Cpad: int
    tile_rows: int
    tile_cols: int
    col_tiles: int
    total_tiles: int
    tiles_per_core: int
    block_dim: int
    tile_elems: int                    # elements allocated per slot
    rows_mode: bool                    # tiles are whole rows (else chunks of one row)
    dims: tuple[int, ...]              # collapsed dim sizes
    strides: tuple[tuple[int, ...], ...]  # per input: element stride per collapsed dim (0 = broadcast)
    boxes: tuple[tuple[int, ...], ...] = ()  # view kernels: one row of words per box (tile/tiling.py VIEW_BOX_HEAD + VIEW_LOAD_WORDS per load)
    # vector kernels: how the cost model chose this tiling (tile/tiling_cost.py TilingChoice),
    # for k.report(); not part of the tiling the kernel reads
    choice: object = field(default=None, compare=False, repr=False)

    @property
    def loops_per_core(self) -> int:
        return self.tiles_per_core

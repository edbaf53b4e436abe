"""A conv2d kernel with its elementwise epilogue as the Ascend C printer sees it (issue 8 item 3).

conv2d (NCHW input, KCRS weights) is, per image n, the matmul

    Y[n] (K x P*Q) = W (K x C*R*S) @ col(x[n]) (C*R*S x P*Q)

so the output tile of the Matmul API is already NCHW: a row of C is one output channel's
pixels. A = the weights read as a [K, C*R*S] matrix (no copy), B = the im2col panel of x.

Where im2col happens, and why (the GM bytes, as `simulate` measures them):
- a separate im2col kernel writes the whole col(x) to GM (R*S/(stride_h*stride_w) times the
  bytes of x: 9x for a 3x3 stride-1 conv) and the cube kernel reads it back; the matrix for
  every image must exist at once (N*C*R*S*P*Q elements) and the launch is one more;
- inside the kernel, per core and image: the vector core builds only ITS block of columns
  (its pixels) of col(x[n]) in a per-core GM workspace (a gather from x rows in UB: x is read
  once per core, plus the rows a block boundary shares), then the cube reads that panel. The
  panel's bytes cross GM the same way (written once, read once), but the workspace is
  `cores x C*R*S x block` elements (reused for every image, so L2-resident on the device), no
  im2col launch exists, and the epilogue, bias and activation are applied to each C tile in UB.
So the kernel does im2col itself, per core and image, and the report says so with the panel
bytes. (The cube's own Load3D instruction builds im2col from L1 without any GM panel; it
needs the NC1HWC0 layout and the low-level cube API, which fusedsl does not print.)

The cores split the output channels (singleCoreM) and the pixels (singleCoreN) as a matmul of
K x P*Q x C*R*S would; the TCubeTiling each core's Matmul object reads describes that core's
problem: M = K, N = the panel's row length, Ka = Kb = C*R*S.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .. import cost
from .. import dtypes as dt
from ..errors import ScheduleError, TargetError
from ..ir.ops import CONSTANT, has_trait
from .cube import (TILING_SLACK, Choices, CubeSchedule, CubeScalar, _ceil, _structure, _up, check_cube_operands,
                   WRAP_ROW_BYTES, check_elementwise_epilogue, cores_phrase, cube_tiling, epilogue_rows,
                   matmul_objects, wrap_row_bytes)
from .row import RowParam
from ..targets import Target, get_target
from ..record import record


@record
class ConvGeometry:
    """Sizes of the convolution and of the im2col panel each core builds."""
    images: int
    C: int
    H: int
    W: int
    K: int
    R: int
    S: int
    sh: int
    sw: int
    ph: int
    pw: int
    P: int
    Q: int
    itemsize: int
    chunk: int        # pixels gathered by one Gather (a multiple of 32 bytes of the dtype)
    panel_n: int      # row length of the panel in the workspace (a multiple of chunk)
    rows_cap: int     # rows of x one chunk needs at most
    via_half: bool = False   # int8 x: Gather has no int8 form, so the x rows are cast to half, gathered
    #                          in half and the panel cast back (exact: every int8 is a half)

    @property
    def pix(self) -> int:
        return self.P * self.Q

    @property
    def crs(self) -> int:
        return self.C * self.R * self.S

    @property
    def x_elems(self) -> int:
        """UB elements of the x tile: the rows a chunk needs and a 32-byte block of zeros."""
        return _up(self.rows_cap * self.W, 32 // self.itemsize) + 32 // self.itemsize

    @property
    def panel_bytes(self) -> int:
        """One core's panel in the workspace, padded to 512 bytes (cores' panels never share lines)."""
        return _up(self.crs * self.panel_n * self.itemsize, 512)


def _rows_cap(chunk: int, g_q: int, sh: int, r: int, h: int) -> int:
    # `chunk` consecutive pixels touch at most (chunk - 1) // Q + 2 output rows
    return min(h, ((chunk - 1) // g_q + 1) * sh + r)


def im2col_ub_bytes(chunk: int, rows_cap: int, w: int, rs: int, itemsize: int, via_half: bool = False) -> int:
    """UB of the im2col stage: the offsets table, the panel rows (2 buffers), the x tile (2), and
    with `via_half` one half copy of each of the x tile and the panel rows."""
    blk = 32 // itemsize
    elems = _up(rows_cap * w, blk) + blk
    half = (elems + rs * chunk) * 2 if via_half else 0
    return rs * chunk * 4 + 2 * rs * chunk * itemsize + 2 * elems * itemsize + half


@dataclass
class ConvSchedule(CubeSchedule):
    """A conv2d through the Matmul API, im2col per core and image (lower/conv_tile.py)."""

    conv: ConvGeometry = None
    rule_figures = None   # (cores, modelled us, GM bytes) of the 16 KiB-per-core rule, for comparison

    @property
    def used_cores(self) -> int:
        return self.tiling_fields.used_core_num

    @property
    def workspace_bytes(self) -> int:
        """The Matmul API's system workspace, then one im2col panel per core."""
        return super().workspace_bytes + self.used_cores * self.conv.panel_bytes


def _param_kind(shape: tuple, out_shape: tuple) -> str | None:
    """How the epilogue reads a parameter, from its shape against the NCHW output's."""
    n, k, p, q = out_shape
    s4 = (1,) * (4 - len(shape)) + tuple(shape) if len(shape) <= 4 else None
    if s4 is None:
        return None
    if s4 == out_shape:
        return "full"
    if all(d == 1 for d in s4):
        return "scalar"
    if s4 == (1, k, p, q):
        return "fullshared"      # one [K, P, Q] tensor added to every image
    if s4 == (1, k, 1, 1):
        return "rowvec"          # one value per output channel: a bias
    if s4 == (1, 1, p, q):
        return "colvec"          # one value per pixel, the same for every channel
    return None


def schedule_conv_kernel(fn, target: Target, ub_fraction: float = 1.0, l1_headroom: float = 0.8) -> ConvSchedule:
    """The printable form of a conv2d kernel, or a located ScheduleError/TargetError saying why not."""
    ops = [op for op in fn.ops if not has_trait(op, CONSTANT)]
    convs = [op for op in ops if op.name == "conv2d"]
    if len(convs) != 1 or any(op.name == "matmul" for op in ops):
        raise ScheduleError(f"the Ascend C backend prints one conv2d with an elementwise epilogue per kernel "
                            f"({fn.name} has {len(convs)} conv2d)", loc=convs[0].loc,
                            hint="this kernel still runs on the CPU executors (kernel(*arrays))")
    cv = convs[0]
    x, w = cv.operands
    param_values = [p.value for p in fn.params]
    if x not in param_values or w not in param_values:
        raise ScheduleError(f"the Ascend C backend prints a conv2d of two kernel inputs only ({fn.name})", loc=cv.loc,
                            hint="this kernel still runs on the CPU executors (kernel(*arrays))")
    out_shape = tuple(cv.result.shape)
    if not all(isinstance(d, int) for d in tuple(x.shape) + tuple(w.shape)):
        raise ScheduleError(f"conv2d with symbolic sizes is not printed as Ascend C yet ({fn.name})", loc=cv.loc)
    t = get_target(target)
    if not t.matmul_dtypes:
        raise TargetError(f"{t.name} has no Matmul high-level API (ASCENDC.md 3.1): the conv2d at this line cannot "
                          "be printed for it", loc=cv.loc, hint="compile for ascend910b or ascend310p")
    c_dtype = check_cube_operands(t, x.dtype, w.dtype, cv, int8=True)
    via_half = False
    if not t.supports("Gather", x.dtype.ascendc):
        # int8: gather the rows cast to half (exact) and cast the panel back, where the chip can
        via_half = (x.dtype == dt.int8 and t.supports("Gather", "half")
                    and "CAST_NONE" in t.cast_modes.get(("int8_t", "half"), ())
                    and bool(t.cast_modes.get(("half", "int8_t"))))
        if not via_half:
            raise ScheduleError(f"{t.name} has no Gather for {x.dtype.name} (nor for half with int8 <-> half casts): "
                                "the conv's im2col cannot be printed", loc=cv.loc,
                                hint="cast the operands to float16; kernel(*arrays) runs it on the CPU as it is")
    n_img, c, h, wd = x.shape
    k, _, r, s = w.shape
    (sh, sw), (ph, pw) = cv.attr("stride"), cv.attr("padding")
    _, _, p, q = out_shape
    epilogue = [op for op in ops if op is not cv]
    check_elementwise_epilogue(fn, cv, epilogue, per_channel=1)
    params = []
    for i, prm in enumerate(fn.params):
        v = prm.value
        if prm.kind == "scalar":   # a runtime scalar: a float after the TCubeTiling words (lower/cube)
            params.append(CubeScalar(i, v.name, v.dtype, "runtime_scalar", var=f"scalar{i}"))
            continue
        kind = "a" if v is w else "b" if v is x else _param_kind(tuple(v.shape), out_shape)
        if kind is None:
            raise ScheduleError(f"input {v.name} of shape {list(v.shape)} of the epilogue in {fn.name} is not printed "
                                f"yet (tensors of the output's shape, per-channel [1, K, 1, 1] values, per-pixel "
                                f"[P, Q] values and scalars are)", loc=fn.loc,
                                hint="this kernel still runs on the CPU executors (kernel(*arrays))")
        params.append(RowParam(i, v.name, v.dtype, kind))

    isz = x.dtype.itemsize
    blk = 32 // isz
    ub = int(t.ub_bytes * ub_fraction)
    per_c = 4 + sum(prm.dtype.itemsize for prm in params if prm.kind in ("full", "fullshared"))
    per_c += sum(v.dtype.itemsize for v in fn.results) + (0 if t.separated else 4)
    pix, crs = p * q, c * r * s

    # The cores split the pixels only: a core with a block of the channels would build the same
    # panel as the cores with the other channels of its pixels (measured: 4 channel blocks made
    # the [8,64,56,56] 3x3 conv move 262 MB instead of 94 MB). Every core re-reads the weights
    # per image, so, as for vector kernels, a core is used only when it writes at least 16 KiB of
    # an image's output (16 cores on a [2,16,16,16] output moved 10x its minimum bytes). Without
    # DataCopyPad (SetValue row tails through the 64-byte data cache) every core's first pixel
    # must start a GM line of every output, else one core writes them all.
    line = 64 // isz if not t.has_datacopypad else 16
    out_bytes = k * pix * max(v.dtype.itemsize for v in fn.results)
    rule = max(1, min(t.aic_cores, _ceil(pix, 16), out_bytes // (16 * 1024)))   # Matmul objects

    # an epilogue value varies along a tile row (the pixels) when it has the output's P, Q
    # (or is a per-channel value computed in the kernel, e.g. batch norm's rsqrt(var + eps) * gamma:
    # computed along each tile row from the row's per-channel inputs)
    computed = {id(op.result) for op in epilogue}
    # Inputs vary by their kind (a per-channel input is one value per tile row); so decided, a
    # 1x1 output (P*Q == 1) works too: shapes alone cannot tell its rows from its per-channel values
    param_kind = {id(fn.params[prm.index].value): prm.kind for prm in params}
    varies = (lambda v: v is cv.result or id(v) in computed
              or param_kind.get(id(v)) in ("full", "fullshared", "colvec"))
    steps, row_bytes, row_slack = epilogue_rows(fn, cv, epilogue, t, varies)
    row_bytes += sum(prm.dtype.itemsize for prm in params if prm.kind == "colvec")
    row_bytes += WRAP_ROW_BYTES if c_dtype == dt.int32 else 0   # the int32 C rows wrapped to int8
    row_bytes += wrap_row_bytes(epilogue, t)   # the exact int8 wraps of epilogue ops

    def build(cores):
        """The schedule with the pixels split over `cores` Matmul objects."""
        single_n = min(pix, _up(_ceil(pix, cores), line))
        if not t.has_datacopypad and any(pix * v.dtype.itemsize % 64 for v in fn.results):
            single_n = pix
        used = _ceil(pix, single_n)

        def split(ub_left=None):   # the base block of one core's problem: K x single_n x C*R*S
            return cube_tiling(t, k, single_n, crs, a_dtype=w.dtype.np.name, b_dtype=x.dtype.np.name,
                               c_dtype=c_dtype.np.name, ub_bytes_per_c_elem=per_c, cores=1, ub_bytes=ub_left - 1024,
                               l1_budget=int(t.l1_bytes * l1_headroom), row_bytes=row_bytes, row_slack=row_slack)

        # the im2col stage takes at most a third of UB: the largest chunk of the core's pixels that fits
        chunk = _up(single_n, blk)
        while chunk > blk and im2col_ub_bytes(chunk, _rows_cap(chunk, q, sh, r, h), wd, r * s, isz,
                                              via_half) > ub // 3:
            chunk = _up(chunk // 2, blk)
        stage = im2col_ub_bytes(chunk, _rows_cap(chunk, q, sh, r, h), wd, r * s, isz, via_half)
        if stage > ub // 3:
            raise ScheduleError(f"FS110: the im2col stage of the conv2d needs {stage} bytes of UB for one chunk of "
                                f"{chunk} pixels ({r}x{s} taps, input rows of {wd}); {ub // 3} of {ub} are allowed",
                                loc=cv.loc, hint="this kernel still runs on the CPU executors (kernel(*arrays))")
        try:
            tiling = split(ub_left=ub - stage)
        except ScheduleError as exc:
            raise ScheduleError(f"{exc} (after the conv's im2col stage took {stage} bytes of UB)", loc=cv.loc) from None
        tiling = replace(tiling, used_core_num=used)
        panel_n = _up(tiling.single_core_n, chunk)
        geom = ConvGeometry(n_img, c, h, wd, k, r, s, sh, sw, ph, pw, p, q, isz, chunk, panel_n,
                            _rows_cap(chunk, q, sh, r, h), via_half)
        # each core's Matmul object sees its own problem: M = K, N = its panel's row length, K = C*R*S
        core_tiling = replace(tiling, N=panel_n)
        panel_total = tiling.used_core_num * geom.panel_bytes
        note = (f"conv2d as Matmul API: per image W[{k}x{crs}] @ col(x)[{crs}x{pix}] on {cores_phrase(tiling.used_core_num, t)} "
                f"(blocks of {tiling.single_core_m} channels x {tiling.single_core_n} pixels), base {tiling.base_m}x"
                f"{tiling.base_n}x{tiling.base_k}; im2col inside the kernel: each core gathers its pixels' columns "
                f"({chunk} pixels per Gather) into its own GM panel ({geom.panel_bytes} B, {panel_total} B in all; a "
                f"separate im2col kernel would move the same panel bytes for all {n_img} images at once plus a launch); "
                f"each C tile goes to UB, the epilogue runs on it there, one GM write")
        sched = ConvSchedule(fn, t, cv, epilogue, params, core_tiling, ub, note)
        sched.batch = n_img
        sched.conv = geom
        sched.steps = steps
        sched.c_dtype = c_dtype
        return sched

    # The core count: CANN-like rule above (16 KiB of output per core) or any other up to every
    # Matmul object of the chip, whichever has the least modelled time (the report's figure:
    # weights re-read per core and tile, panel bytes, epilogue); among those within
    # TILING_SLACK of it the one moving the fewest GM bytes, never slower than the rule.
    # Chosen here, not by the kernel pass `tiling`'s walk as the cube kind's split is: each count is
    # another kernel (its im2col geometry and panel), and walking a conv kernel walks its gathers
    # per chunk of pixels -- 0.02 - 0.4 s a candidate (a [8, 64, 56, 56] 3x3 conv on 310P: 1.6 s
    # for its 4 candidates, the compile 0.008 s without) -- and a trial of the walk under the pass's
    # rule kept this pick for all 12 (corpus conv shapes and [8, 64, 56, 56], stride-2 conv + bias
    # + leaky_relu in float16, 910B and 310P: benchmarks/RESULTS.md "Cube tiling by the walk").
    # The same kernel chosen before in this process (CONV_CHOICES): that count's schedule alone.
    key = (id(t), t.name, _structure(fn), ub_fraction, l1_headroom)
    known = CONV_CHOICES.get(key)
    if known is not None:
        sched = build(known[0])
        sched.rule_figures = known[1]
        return sched
    chosen = build(rule)
    best = _modelled(fn, t, chosen)
    cands = [(best, rule, chosen)]
    seen = {chosen.tiling_fields.single_core_n}
    for cores in range(1, min(matmul_objects(t), _ceil(pix, 16)) + 1):
        single = min(pix, _up(_ceil(pix, cores), line))
        if single in seen:
            continue
        seen.add(single)
        try:
            cand = build(cores)
        except ScheduleError:
            continue
        cands.append((_modelled(fn, t, cand), cores, cand))
    fastest = min(c[0][0] for c in cands)
    limit = min(fastest * (1 + TILING_SLACK), best[0])
    _, cores, sched = min((c for c in cands if c[0][0] <= limit), key=lambda c: (c[0][1], c[0][0]))
    sched.rule_figures = (chosen.tiling_fields.used_core_num,) + best   # (cores, us, GM) of the rule
    CONV_CHOICES.put(key, (cores, sched.rule_figures, t))
    return sched


# The core counts schedule_conv_kernel chose, remembered for the process (lower/cube.Choices says
# why and how): (id(target), its name, the kernel's structure, ub_fraction, l1_headroom) -> (the
# count given to `build`, the rule's figures, the target).  A conv compiled again builds one
# schedule instead of modelling every count (a third of its compile).
CONV_CHOICES = Choices(1024)


def _modelled(fn, t: Target, sched) -> tuple[float, int]:
    """(modelled us, GM bytes) of a conv schedule: the report's figures for it."""
    k = cost.function_cost(fn, t, {}, sched.tiling({}, t), fn.name, sched)
    return k.time_us, k.gm_bytes

"""Ascend C for a conv kernel's cube part, as text: printer_conv.py subclasses this printer (the
conv kind is not lowered to the loop-level tile IR yet).  A matmul kernel (the cube kind, and
the parts of a cube_group kernel) is lowered to the tile IR instead (lower/cube_tile.py) and
printed by printer_kernel.py; this printer prints the same kernel shape as text.

The shape is the one CANN's MatmulLeakyRelu kernel-launch sample teaches: the entry copies the
TCubeTiling word by word, `Init` sets the GM tensors and the system workspace, then
`REGIST_MATMUL_OBJ` runs before any `InitBuffer`; `Process` gives the cube A and B (the core's
block, `SetTail` on edge blocks) and, per `Iterate`, CopyIn (`GetTensorC` of the tile into a
VECIN queue, rows padded to 32 bytes; residual tiles and the bias columns by DMA), Compute
(the epilogue row by row: every op the tile stmts the vector scheduler gives it, as in row
kernels) and CopyOut (one strided DMA of the tile's valid rows and columns); `End` at the end.
The kernel is mixed (AIC + AIV) on 910B; 310P moves C through a UB workspace
(`SetLocalWorkspace`). Tiles are taken M-first (iterateOrder 0).

Layouts on 910B (lower.cube.cube_tiling chooses them by modelled time): with one Matmul object
per AI core only each core's first vector instance works (object GetBlockIdx() / GetTaskRatio());
with A's panel in L1 the core copies its singleCoreM x K rows of A once into a TSCM buffer (NZ,
DataCopy with Nd2NzParams; the AI core carries the copy out) and the Matmul reads A there for
every tile (`MatmulType<TPosition::TSCM, CubeFormat::NZ>`, SetTensorA of the L1 tensor).
"""
from __future__ import annotations

from .. import dtypes as dt
from ..lower.vector import compute_dtype
from ..lower.cube import TCUBE_FIELDS, CubeSchedule, wraps_in_float, wraps_in_half
from ..lower.row import allocate_row_values, temp_pool
from . import cnames
from .emit import camel, gm_scalar_load, literal, name_temporaries, rename_stmt, scalar_ctype
from .frame import KernelFrame
from .host_cube import cube_host_tiling


def _ld(expr: str, dtype: dt.DType) -> str:
    """Row stride in UB of a tile row of `expr` elements: padded to 32 bytes."""
    k = 32 // dtype.itemsize
    return f"((({expr}) + {k - 1}) / {k} * {k})"



class CubePrinter(KernelFrame):
    WORD = "i"     # TCubeTiling's fields are int32
    MIX = True
    # GM addressing of the [M, N] result and of tensors of its shape: row stride and the elements of
    # one batch matrix (the conv printer, printer_conv.py, addresses NCHW images instead)
    gm_ld = "tiling.N"
    batch_elems = "tiling.M * tiling.N"

    def __init__(self, sched: CubeSchedule, target, name: str, debug: bool | None = None):
        super().__init__(sched, target, name, debug)
        # runtime scalars follow the TCubeTiling words: a struct wrapping it carries them
        self.rt = self.runtime_scalars()
        self.tiling = f"{camel(name)}CubeTiling" if self.rt else "TCubeTiling"
        self.symbols = []
        self.cn = {p.index: cnames.param(p.name) for p in sched.params}
        mm = sched.mm
        M, N = mm.result.shape[-2:]
        self.mn = (M, N)
        # id(op) -> (the op's vector tile program, its sources): the schedule made them and budgeted
        # their UB (lower.cube.epilogue_rows); a row epilogue has its own (printer_cube_row)
        self.steps = sched.steps or {}
        self.kinds = {id(op.result): "row" for op in sched.epilogue}
        self.kinds[id(mm.result)] = "row"
        # elements Compare reads past a row's count (tile/slack.py): every row buffer has them
        self.slack = max([st.sched.slack_elems for st in self.steps_list()] + [0])

    # ---- the kind's parts of the frame (frame.KernelFrame) ----------------------------------
    def _gm_args(self) -> list[str]:
        return ([self.cn[p.index] for p in self.s.params if p.kind != "runtime_scalar"]
                + [f"y{i}" for i in range(len(self.s.fn.results))])

    def tiling_header(self) -> str:
        head = (f"// {self.name} reads a TCubeTiling (CANN's kernel_tiling/kernel_tiling.h)\n"
                '#include "kernel_tiling/kernel_tiling.h"\n')
        if not self.rt:
            return head
        fields = "".join(f"    {scalar_ctype(p.dtype)} {p.var};   // runtime scalar {p.name}\n" for p in self.rt)
        return (head + f"// ... and its runtime scalars after the {len(TCUBE_FIELDS)} TCubeTiling words\n"
                f"struct {self.tiling} {{\n    TCubeTiling cube;\n{fields}}};\n")

    def host_tiling(self) -> str:
        return cube_host_tiling(self.s, self.t, self.name, self.tiling, bool(self.rt))

    KIND_NOTE = "a cube kernel"

    def heading(self) -> list[str]:
        return [f"// ---- {self.name}: {self.KIND_NOTE} fused from {cnames.comment(self.s.fn.loc)} ----",
                f"// {cnames.comment(self.s.plan_note)}"]

    # ---- the kernel ------------------------------------------------------------------------
    def kernel(self, entry: bool = True) -> str:
        """The kernel class and (with `entry`) its extern "C" entry; printer_cube_group prints the
        classes of several parts and one entry of its own."""
        s = self.s
        a, b = s.mm.operands
        ta, tb = bool(s.mm.attr("transpose_a", False)), bool(s.mm.attr("transpose_b", False))
        M, N = self.mn
        full = [p for p in s.params if p.kind in ("full", "fullshared")]
        colvec = [p for p in s.params if p.kind == "colvec"]
        rowvec = [p for p in s.params if p.kind == "rowvec"]
        scalars = [p for p in s.params if p.kind == "scalar"]
        outs = list(enumerate(s.fn.results))
        mmv = s.mm.result
        cast_mm = mmv.dtype != dt.float32
        members = [f"    AscendC::GlobalTensor<{p.dtype.ascendc}> gm_{self.cn[p.index]};" for p in s.params
                   if p.kind != "runtime_scalar"]
        members += [f"    AscendC::GlobalTensor<{v.dtype.ascendc}> gm_y{i};" for i, v in outs]
        members += ["    AscendC::TQue<AscendC::QuePosition::VECIN, 1> q_c;   // the C tile from GetTensorC"]
        members += [f"    AscendC::TQue<AscendC::QuePosition::VECIN, 1> q_{self.cn[p.index]};" for p in full]
        members += [f"    AscendC::TQue<AscendC::QuePosition::VECOUT, 1> q_y{i};" for i, _ in outs]
        members += [f"    AscendC::TBuf<AscendC::TPosition::VECCALC> b_{self.cn[p.index]};   // the tile's columns"
                    for p in colvec]
        members += [f"    AscendC::TBuf<AscendC::TPosition::VECCALC> b_{self.cn[p.index]};   // the tile's rows"
                    for p in rowvec]
        members += [f"    {compute_dtype(p.dtype).ascendc} v_{self.cn[p.index]};" for p in scalars]
        members += self._extra_members()
        rows = self._row_buffers()
        if cast_mm:
            rows.append((mmv.dtype, "mmv"))
        if self.c_ty == "int32_t":   # the int8 wrap's rows (_wrap_int8; lower.cube.WRAP_ROW_BYTES)
            rows += [(dt.int32, "wrapm"), (dt.float32, "wrapf"), (dt.float16, "wraph")]
        if any(wraps_in_half(op, self.t) for op in self.s.epilogue):   # _wrap_half_int8's row
            rows.append((dt.float16, "wrap8"))
        if any(wraps_in_float(op, self.t) for op in self.s.epilogue):   # _wrap_float_int8's row
            rows.append((dt.float32, "wrap8f"))
        members += [f"    AscendC::TBuf<AscendC::TPosition::VECCALC> b_{nm};" for _, nm in rows]
        if not self.t.separated:
            members.append("    AscendC::TBuf<AscendC::TPosition::VECCALC> b_mmws;   // 310P: C passes through UB")
        bn = "tiling.baseN"
        init_bufs = [f"        pipe->InitBuffer(q_c, 1, tiling.baseM * tiling.baseN * sizeof({self.c_ty}));"]
        # tile rows are padded to 32 bytes: a 1-byte row of baseN (a multiple of 16) may need more
        init_bufs += [f"        pipe->InitBuffer(q_{self.cn[p.index]}, 1, tiling.baseM * {_ld('tiling.baseN', p.dtype)} * "
                      f"sizeof({p.dtype.ascendc}));" for p in full]
        init_bufs += [f"        pipe->InitBuffer(q_y{i}, 1, tiling.baseM * {_ld('tiling.baseN', v.dtype)} * "
                      f"sizeof({v.dtype.ascendc}));" for i, v in outs if i not in s.per_row_outputs]
        init_bufs += [f"        pipe->InitBuffer(q_y{i}, 1, {_ld('tiling.baseM', v.dtype)} * sizeof({v.dtype.ascendc}));"
                      "   // one value per row of the tile" for i, v in outs if i in s.per_row_outputs]
        init_bufs += [f"        pipe->InitBuffer(b_{self.cn[p.index]}, {bn} * sizeof({p.dtype.ascendc}));" for p in colvec]
        init_bufs += [f"        pipe->InitBuffer(b_{self.cn[p.index]}, {_ld('tiling.baseM', p.dtype)} * "
                      f"sizeof({p.dtype.ascendc}));" for p in rowvec]
        init_bufs += self._extra_init()
        init_bufs += [f"        pipe->InitBuffer(b_{nm}, ({bn} + {self.slack}) "
                      f"* sizeof({d.ascendc}));" for d, nm in rows]
        t = s.tiling_fields
        a_l1 = bool(t.a_l1_bytes)
        aty = a.dtype.ascendc
        if a_l1:   # the core's A panel in L1: a TSCM buffer of singleCoreM (rounded to 16) x Ka (to 32 B)
            c0 = 32 // a.dtype.itemsize
            members.append("    AscendC::TSCM<AscendC::TPosition::GM, 1> a_l1;   // user-managed L1: this core's A panel, NZ")
            members.append(f"    AscendC::LocalTensor<{aty}> aL1;")
            init_bufs.insert(0, f"        pipe->InitBuffer(a_l1, 1, (tiling.singleCoreM + 15) / 16 * 16 * "
                                f"((tiling.Ka + {c0 - 1}) / {c0} * {c0}) * sizeof({aty}));   // {t.a_l1_bytes} B")
        one_per_core = self.t.separated and t.objects_per_core == 1
        ws = []
        if not self.t.separated:
            ws = ["        pipe->InitBuffer(b_mmws, tiling.baseM * tiling.baseN * sizeof(float));",
                  "        mm.SetLocalWorkspace(b_mmws.Get<uint8_t>());"]
        gm_set = [f"        gm_{self.cn[p.index]}.SetGlobalBuffer((__gm__ {p.dtype.ascendc}*){self.cn[p.index]});"
                  for p in s.params if p.kind != "runtime_scalar"]
        gm_set += [f"        gm_y{i}.SetGlobalBuffer((__gm__ {v.dtype.ascendc}*)y{i});" for i, v in outs]
        scal_set = [f"        v_{self.cn[p.index]} = "
                    f"{gm_scalar_load('gm_' + self.cn[p.index], p.dtype, compute_dtype(p.dtype))};" for p in scalars]
        aname, bname = self.cn[s.params[[p.value for p in s.fn.params].index(a)].index], \
            self.cn[s.params[[p.value for p in s.fn.params].index(b)].index]
        L = ['#include "lib/matmul_intf.h"',
             *self.class_open([f"GM_ADDR {x}" for x in self._gm_args() + ["workspace"]], "TCubeTiling"),
             *gm_set, *scal_set,
             *(["        // one Matmul object per AI core: its first vector instance drives it, the other idles",
                "        active = AscendC::GetSubBlockIdx() == 0 && "
                "CalcOffset(AscendC::GetBlockIdx() / AscendC::GetTaskRatio());"] if one_per_core else
               ["        active = CalcOffset(AscendC::GetBlockIdx());"]),
             "        AscendC::SetSysWorkspace(workspace);",
             *self._init_lines(),
             "    }",
             "",
             "    // After REGIST_MATMUL_OBJ: the UB plan, then the core's block tile by tile.",
             "    __aicore__ inline void Process(AscendC::TPipe* pipe)",
             "    {",
             *ws, *init_bufs,
             "        if (!active) return;",
             f"        for (batch = 0; batch < {s.batch}; ++batch) {{   // this core's block of every batch matrix",
             *self._operand_lines(aname, bname, ta, tb),
             "            if (tailM != uint32_t(tiling.singleCoreM) || tailN != uint32_t(tiling.singleCoreN)) {",
             "                mm.SetTail(tailM, tailN);",
             "            }",
             "            uint32_t count = 0;",
             "            while (mm.template Iterate<true>()) {",
             "                TileShape(count++);",
             "                CopyIn();",
             "                Compute();",
             "                CopyOut();",
             "            }",
             "        }",
             "        mm.End();",
             *(["        a_l1.FreeTensor(aL1);"] if a_l1 else []),
             "    }",
             "",
             (f"    AscendC::Matmul<AscendC::MatmulType<AscendC::TPosition::TSCM, CubeFormat::NZ, {aty}>,"
              if a_l1 else
              f"    AscendC::Matmul<AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, {a.dtype.ascendc}"
              f"{', true' if ta else ''}>,"),
             f"                    AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, {b.dtype.ascendc}"
             f"{', true' if tb else ''}>,",
             f"                    AscendC::MatmulType<AscendC::TPosition::VECIN, CubeFormat::ND, {self.c_ty}>,",
             f"                    AscendC::MatmulType<AscendC::TPosition::GM, CubeFormat::ND, {self.c_ty}>> mm;",
             "    TCubeTiling tiling;",
             *[f"    {scalar_ctype(p.dtype)} {p.var};   // runtime scalar {p.name} (from the tiling data)"
               for p in self.rt],
             "",
             "private:",
             *self._calc_offset_lines(ta, tb),
             "    // Tile `count` of the block, M-first (iterateOrder 0).",
             "    __aicore__ inline void TileShape(uint32_t count)",
             "    {",
             "        const uint32_t roundM = (tailM + tiling.baseM - 1) / tiling.baseM;",
             "        const uint32_t mi = count % roundM, ni = count / roundM;",
             "        curM = MinU32(tiling.baseM, tailM - mi * tiling.baseM);",
             "        curN = MinU32(tiling.baseN, tailN - ni * tiling.baseN);",
             "        row0 = m0 + mi * tiling.baseM;",
             "        col0 = n0 + ni * tiling.baseN;",
             "    }",
             ""]
        L += self._extra_methods()
        if a_l1:
            L += self._load_a_lines(aty)
        L += self._copy_in(full, colvec + rowvec) + self._compute(full, outs, cast_mm) + self._copy_out(outs)
        L += members + ["    uint32_t m0 = 0, n0 = 0, offA = 0, offB = 0, tailM = 0, tailN = 0, batch = 0;",
                        "    uint32_t curM = 0, curN = 0, row0 = 0, col0 = 0;",
                        "    bool active = false;", "};", ""]
        if not entry:
            return "\n".join(L)
        gm = self._gm_args()
        L.append(self.entry(gm + ["workspace", "t.cube" if self.rt else "t"],
                            setup=tuple(f"op.{p.var} = t.{p.var};" for p in self.rt),
                            matmuls=["op.mm", "&op.tiling"]))
        return "\n".join(L)

    # ---- hooks a printer of another cube kernel kind overrides (printer_conv.py) --------------
    def _operand_lines(self, aname: str, bname: str, ta: bool, tb: bool) -> list[str]:
        """Inside the batch loop: give the cube this core's A and B."""
        s = self.s
        if s.tiling_fields.a_l1_bytes:   # one batch matrix (lower.cube): A's panel once into L1
            return [f"            LoadA(gm_{aname}[offA], tailM);   // once: every tile of this core reads A in L1",
                    "            mm.SetTensorA(aL1);",
                    f"            mm.SetTensorB(gm_{bname}[{'batch * tiling.Kb * tiling.N + ' if s.batch_b else ''}offB]"
                    f"{', true' if tb else ''});"]
        return [f"            mm.SetTensorA(gm_{aname}[{'batch * tiling.M * tiling.Ka + ' if s.batch_a else ''}offA]"
                f"{', true' if ta else ''});",
                f"            mm.SetTensorB(gm_{bname}[{'batch * tiling.Kb * tiling.N + ' if s.batch_b else ''}offB]"
                f"{', true' if tb else ''});"]

    def _calc_offset_lines(self, ta: bool, tb: bool) -> list[str]:
        """CalcOffset: the core's block of C (m0, n0, tailM, tailN) and its A/B offsets."""
        return [
            "    // Core blockIdx owns block (blockIdx % mBlocks, blockIdx / mBlocks) of singleCoreM x singleCoreN.",
            "    __aicore__ inline bool CalcOffset(uint32_t blockIdx)",
            "    {",
            "        const uint32_t mBlocks = (tiling.M + tiling.singleCoreM - 1) / tiling.singleCoreM;",
            "        const uint32_t nBlocks = (tiling.N + tiling.singleCoreN - 1) / tiling.singleCoreN;",
            "        if (blockIdx >= mBlocks * nBlocks) return false;",
            "        m0 = (blockIdx % mBlocks) * tiling.singleCoreM;",
            "        n0 = (blockIdx / mBlocks) * tiling.singleCoreN;",
            # A is [M, K] (or [K, M] read transposed), B is [K, N] (or [N, K] read transposed)
            f"        offA = {'m0' if ta else 'm0 * tiling.Ka'};",
            f"        offB = {'n0 * tiling.Kb' if tb else 'n0'};",
            "        tailM = MinU32(tiling.singleCoreM, tiling.M - m0);",
            "        tailN = MinU32(tiling.singleCoreN, tiling.N - n0);",
            "        return true;",
            "    }",
            ""]

    def _load_a_lines(self, ty: str) -> list[str]:
        return [
            "    // `rows` rows of A (Ka elements each, Ka apart) into the TSCM buffer in NZ: column blocks of",
            "    // 32 bytes, each (rows rounded up to 16) rows high, as the Matmul reads a TSCM A of",
            "    // singleCoreM = rows. On 910B the AI core carries the copy out (one GM read of the panel).",
            f"    __aicore__ inline void LoadA(const AscendC::GlobalTensor<{ty}>& src, uint32_t rows)",
            "    {",
            f"        aL1 = a_l1.AllocTensor<{ty}>();",
            "        AscendC::Nd2NzParams nd;",
            "        nd.ndNum = 1;",
            "        nd.nValue = rows;",
            "        nd.dValue = tiling.Ka;",
            "        nd.srcNdMatrixStride = 0;",
            "        nd.srcDValue = tiling.Ka;",
            "        nd.dstNzC0Stride = (rows + 15) / 16 * 16;",
            "        nd.dstNzNStride = 1;",
            "        nd.dstNzMatrixStride = 0;",
            "        AscendC::DataCopy(aL1, src, nd);",
            "        a_l1.EnQue(aL1);",
            f"        aL1 = a_l1.DeQue<{ty}>();",
            "    }",
            ""]

    def _row_buffers(self) -> list[tuple]:
        """(dtype, name) of the one-row UB buffers the epilogue's values and temporaries use; sets
        self._assign (value -> buffer) for _compute."""
        s = self.s
        self._assign, counts = allocate_row_values(s.fn, self.kinds, s.epilogue, {id(v) for v in s.fn.results})
        pool = temp_pool(self.steps_list())
        rows = [(d, f"rv_{d.name}_{i}") for d, n in sorted(counts.items(), key=lambda x: x[0].name) for i in range(n)]
        return rows + [(d, f"tmp_{d.name}_{i}") for d, n in sorted(pool.items(), key=lambda x: x[0].name)
                       for i in range(n)]

    def _init_lines(self) -> list[str]:
        """The end of Init (after the core's block and the system workspace are known)."""
        return []

    def _extra_members(self) -> list[str]:
        return []

    def _extra_init(self) -> list[str]:
        return []

    def _extra_methods(self) -> list[str]:
        return []

    def _boff(self, kind: str) -> str:
        """GM offset of the current batch matrix in a tensor of the result's shape."""
        return f"batch * {self.batch_elems} + " if self.s.batch > 1 and kind == "full" else ""

    def steps_list(self):
        """The epilogue's tile programs, shaped like row_plan.OpStep (`.sched`) for temp_pool."""
        from types import SimpleNamespace
        return [SimpleNamespace(sched=self.steps[id(op)][0]) for op in self.s.epilogue]

    def _copy_in(self, full, colvec) -> list[str]:
        L = ["    __aicore__ inline void CopyIn()", "    {",
             f"        AscendC::LocalTensor<{self.c_ty}> c = q_c.AllocTensor<{self.c_ty}>();",
             "        mm.template GetTensorC<true>(c, false, true);   // this tile alone, rows padded to 32 B",
             "        q_c.EnQue(c);"]
        for p in full:
            nm, ty = self.cn[p.index], p.dtype.ascendc
            L += [f"        AscendC::LocalTensor<{ty}> in_{nm} = q_{nm}.AllocTensor<{ty}>();",
                  f"        CopyRowsIn(in_{nm}, gm_{nm}[{self._boff(p.kind)}row0 * {self.gm_ld} + col0], curM, curN, {self.gm_ld}, "
                  f"{_ld('curN', p.dtype)});",
                  f"        q_{nm}.EnQue(in_{nm});"]
        if colvec:
            L.append("        AscendC::PipeBarrier<PIPE_ALL>();   // the last tile's epilogue has read the columns")
        for p in colvec:
            nm, ty = self.cn[p.index], p.dtype.ascendc
            if p.kind == "rowvec":   # one value per row of the tile
                L += [f"        AscendC::LocalTensor<{ty}> rowv_{nm} = b_{nm}.Get<{ty}>();",
                      f"        CopyRowsIn(rowv_{nm}, gm_{nm}[row0], 1, curM, curM, curM);"]
                continue
            L += [f"        AscendC::LocalTensor<{ty}> col_{nm} = b_{nm}.Get<{ty}>();",
                  f"        CopyRowsIn(col_{nm}, gm_{nm}[col0], 1, curN, curN, curN);"]
        if colvec:
            L.append("        AscendC::PipeBarrier<PIPE_ALL>();   // the columns reach the vector unit")
        L += ["    }", ""]
        return L

    def _compute(self, full, outs, cast_mm) -> list[str]:
        s = self.s
        L = ["    __aicore__ inline void Compute()", "    {",
             f"        AscendC::LocalTensor<{self.c_ty}> c = q_c.DeQue<{self.c_ty}>();"]
        for p in full:
            nm, ty = self.cn[p.index], p.dtype.ascendc
            L.append(f"        AscendC::LocalTensor<{ty}> in_{nm} = q_{nm}.DeQue<{ty}>();")
        for i, v in outs:
            ty = v.dtype.ascendc
            L.append(f"        AscendC::LocalTensor<{ty}> out_y{i} = q_y{i}.AllocTensor<{ty}>();")
        for p in s.params:
            if p.kind == "colvec":
                nm, ty = self.cn[p.index], p.dtype.ascendc
                L.append(f"        AscendC::LocalTensor<{ty}> col_{nm} = b_{nm}.Get<{ty}>();")
            elif p.kind == "rowvec":
                nm, ty = self.cn[p.index], p.dtype.ascendc
                L.append(f"        AscendC::LocalTensor<{ty}> rowv_{nm} = b_{nm}.Get<{ty}>();")
        L.append("        for (uint32_t r = 0; r < curM; ++r) {")
        for p in s.params:   # this row's value of each rowvec, a scalar of the row's ops
            if p.kind == "rowvec":
                nm, ct = self.cn[p.index], compute_dtype(p.dtype).ascendc
                L.append(f"            const {ct} v_{nm} = static_cast<{ct}>(static_cast<float>(rowv_{nm}.GetValue(r)));")
        body: list[str] = []
        slot = {}
        scal = {}
        results = {id(v): i for i, v in enumerate(s.fn.results)}
        pvals = [p.value for p in s.fn.params]
        for p in s.params:
            v, nm = pvals[p.index], self.cn[p.index]
            if p.kind in ("full", "fullshared"):
                slot[id(v)] = f"in_{nm}[r * {_ld('curN', p.dtype)}]"
            elif p.kind == "colvec":
                slot[id(v)] = f"col_{nm}"
            elif p.kind in ("scalar", "rowvec"):
                scal[id(v)] = f"v_{nm}"
            elif p.kind == "runtime_scalar":
                scal[id(v)] = f"static_cast<{compute_dtype(p.dtype).ascendc}>({p.var})"
        mmv = s.mm.result
        c_row = f"c[r * {_ld('curN', dt.float32)}]"
        if id(mmv) in results:
            out = f"out_y{results[id(mmv)]}[r * {_ld('curN', mmv.dtype)}]"
            body += self._cast_or_copy(out, c_row, mmv.dtype)
            slot[id(mmv)] = out
        elif cast_mm:   # the matmul's value in its own dtype (rounded once, like the reference)
            body += [f"AscendC::LocalTensor<{mmv.dtype.ascendc}> mmv = b_mmv.Get<{mmv.dtype.ascendc}>();"]
            body += self._cast_or_copy("mmv", c_row, mmv.dtype)
            slot[id(mmv)] = "mmv"
        else:
            slot[id(mmv)] = c_row
        body += self._epilogue_body(slot, scal)
        L += ["            " + x for x in body]
        L.append("        }")
        for i, _ in outs:
            L.append(f"        q_y{i}.EnQue(out_y{i});")
        L.append("        q_c.FreeTensor(c);")
        for p in full:
            L.append(f"        q_{self.cn[p.index]}.FreeTensor(in_{self.cn[p.index]});")
        L += ["    }", ""]
        return L

    def _epilogue_body(self, slot: dict, scal: dict) -> list[str]:
        """Row r of the tile through the epilogue: `slot` maps a value to its UB row (the matmul's
        value, inputs), `scal` to a C++ scalar; results go to their out_y rows."""
        results = {id(v): i for i, v in enumerate(self.s.fn.results)}
        body = []
        for (d, i) in sorted(set(self._assign.values()), key=lambda x: (x[0].name, x[1])):
            body.append(f"AscendC::LocalTensor<{d.ascendc}> rv_{d.name}_{i} = b_rv_{d.name}_{i}.Get<{d.ascendc}>();")
        for d, n in sorted(temp_pool(self.steps_list()).items(), key=lambda x: x[0].name):
            for i in range(n):
                body.append(f"AscendC::LocalTensor<{d.ascendc}> tmp_{d.name}_{i} = b_tmp_{d.name}_{i}.Get<{d.ascendc}>();")
        for op in self.s.epilogue:
            v = op.result
            if id(v) in results:
                slot[id(v)] = f"out_y{results[id(v)]}[r * {_ld('curN', v.dtype)}]"
            else:
                d, i = self._assign[id(v)]
                slot[id(v)] = f"rv_{d.name}_{i}"
            body += self._step(op, slot, scal)
        return body

    @property
    def c_ty(self) -> str:
        """The C tile's element type: float, or int32_t for int8 operands (lower.cube.check_cube_operands)."""
        return getattr(self.s, "c_dtype", dt.float32).ascendc

    def _wrap_int8(self, dst: str, src: str) -> list[str]:
        """An int32 row of C wrapped to int8 as numpy wraps (the low byte, signed):
        ((c mod 256) + 128) mod 256 - 128, with mod 256 an And with 255 on 16-bit lanes (the
        chip's bitwise APIs take int16) -- no step can overflow -- then int32 -> float -> half ->
        int8, exact for values in [-128, 127].  The chip's own casts saturate instead."""
        ld = _ld("curN", dt.int32)
        return ["{  // the int32 sums wrapped to int8 like numpy: ((c & 255) + 128) & 255 - 128",
                "    AscendC::LocalTensor<int32_t> wm = b_wrapm.Get<int32_t>();",
                "    AscendC::LocalTensor<float> wf = b_wrapf.Get<float>();",
                "    AscendC::LocalTensor<half> wh = b_wraph.Get<half>();",
                f"    AscendC::LocalTensor<int32_t> cr = {src.split('[')[0]}[r * {ld}];",
                "    AscendC::Duplicate(wm, static_cast<int32_t>(255), curN);",
                "    AscendC::PipeBarrier<PIPE_V>();",
                "    AscendC::And(cr.ReinterpretCast<int16_t>(), cr.ReinterpretCast<int16_t>(), "
                "wm.ReinterpretCast<int16_t>(), curN * 2);",
                "    AscendC::PipeBarrier<PIPE_V>();",
                "    AscendC::Adds(cr, cr, static_cast<int32_t>(128), curN);",
                "    AscendC::PipeBarrier<PIPE_V>();",
                "    AscendC::And(cr.ReinterpretCast<int16_t>(), cr.ReinterpretCast<int16_t>(), "
                "wm.ReinterpretCast<int16_t>(), curN * 2);",
                "    AscendC::PipeBarrier<PIPE_V>();",
                "    AscendC::Adds(cr, cr, static_cast<int32_t>(-128), curN);",
                "    AscendC::PipeBarrier<PIPE_V>();",
                "    AscendC::Cast(wf, cr, AscendC::RoundMode::CAST_NONE, curN);",
                "    AscendC::PipeBarrier<PIPE_V>();",
                "    AscendC::Cast(wh, wf, AscendC::RoundMode::CAST_NONE, curN);",
                "    AscendC::PipeBarrier<PIPE_V>();",
                f"    AscendC::Cast({dst}, wh, AscendC::RoundMode::CAST_NONE, curN);",
                "    AscendC::PipeBarrier<PIPE_V>();",
                "}"]

    def _cast_or_copy(self, dst: str, src: str, d: dt.DType) -> list[str]:
        if self.c_ty == "int32_t":   # int8 operands: the result is int8 (numpy's rule)
            return self._wrap_int8(dst, src)
        if d == dt.float32:
            return [f"AscendC::Muls({dst}, {src}, 1.0f, curN);", "AscendC::PipeBarrier<PIPE_V>();"]
        modes = self.t.cast_modes.get(("float", d.ascendc), frozenset())
        mode = "CAST_RINT" if "CAST_RINT" in modes else "CAST_NONE"
        return [f"AscendC::Cast({dst}, {src}, AscendC::RoundMode::{mode}, curN);", "AscendC::PipeBarrier<PIPE_V>();"]

    def _step(self, op, slot, scal) -> list[str]:
        sched, sources = self.steps[id(op)]
        names, scalars = {}, {}
        for inp in sched.inputs:
            src = sources[inp.index]
            if inp.var:
                scalars[inp.var] = scal[id(src)]
            elif inp.slot:
                names[inp.slot] = slot[id(src)]
        names[sched.outputs[0].slot] = slot[id(op.result)]
        L = [f"{{  // {op.name} ({cnames.comment(op.loc)})", "    const uint32_t o = 0, n = curN;"]
        # Compare reads whole 256-byte repeats past the count (compare-slack): its temporaries
        # hold defined values there, and constant tensors their value; the temporaries are
        # shared by every step, so each step fills its own before it runs
        for buf, value, d in name_temporaries(sched, names, lambda d, i: f"tmp_{d.name}_{i}"):
            L += [f"    AscendC::Duplicate({buf}, {literal(value, d)}, tiling.baseN + {self.slack});",
                  "    AscendC::PipeBarrier<PIPE_V>();"]
        stmts = [rename_stmt(st, names, scalars) for st in sched.stmts]
        # an int8 result narrowed by saturating casts from an exact value: wrapped first (numpy's int8)
        at, wrap = len(stmts), None
        if stmts and self._narrows(stmts[-1], dt.float16) and wraps_in_half(op, self.t):
            at, wrap = len(stmts) - 1, self._wrap_half_int8(stmts[-1].srcs[0])
        elif len(stmts) > 1 and self._narrows(stmts[-1], dt.float16) and wraps_in_float(op, self.t) \
                and stmts[-2].op == "cast" and stmts[-2].src_dtype == dt.float32 \
                and stmts[-2].dst == stmts[-1].srcs[0] and stmts[-2].srcs[0].startswith("tmp_"):
            at, wrap = len(stmts) - 2, self._wrap_float_int8(stmts[-2].srcs[0])
        for i, st in enumerate(stmts):
            if i == at:   # the exact value wrapped to int8's range, then the (now exact) casts
                L += ["    " + line for line in wrap]
            L += self._stmt(st, 4)
        L.append("}")
        return L

    @staticmethod
    def _narrows(st, src) -> bool:
        """st is the cast of a step's temporary of dtype src to its int8 result."""
        return st.op == "cast" and st.src_dtype == src and st.dtype == dt.int8 and st.srcs[0].startswith("tmp_")

    @staticmethod
    def _wrap_float_int8(v: str) -> list[str]:
        """The integer product P in the float row `v` (|P| <= 16384: an int8 mul, exact in float32)
        wrapped into [-128, 127] as numpy's int8 wraps: P - 256 round(P / 256) (the rounding by
        adding and subtracting 1.5 * 2**23, exact below 2**22) lies in [-128, 128], then 128 ->
        -128 as in _wrap_half_int8.  Every step is exact in float32."""
        f = lambda x: literal(x, dt.float32)  # noqa: E731
        ops = [f"AscendC::Muls(w8f, {v}, {f(1 / 256)}, n);", f"AscendC::Adds(w8f, w8f, {f(12582912.0)}, n);",
               f"AscendC::Adds(w8f, w8f, {f(-12582912.0)}, n);", f"AscendC::Muls(w8f, w8f, {f(-256)}, n);",
               f"AscendC::Add({v}, {v}, w8f, n);",
               f"AscendC::Adds(w8f, {v}, {f(-127)}, n);", f"AscendC::Maxs(w8f, w8f, {f(0)}, n);",
               f"AscendC::Mins(w8f, w8f, {f(1)}, n);", f"AscendC::Muls(w8f, w8f, {f(-256)}, n);",
               f"AscendC::Add({v}, {v}, w8f, n);"]
        return CubePrinter._vector_block(
            "the exact product wrapped to int8 like numpy (the chip's narrowing casts round and saturate)",
            "AscendC::LocalTensor<float> w8f = b_wrap8f.Get<float>();", ops)

    @staticmethod
    def _wrap_half_int8(v: str) -> list[str]:
        """The integer V in the half row `v` (|V| <= 256: an int8 add / sub / neg / abs) wrapped
        into [-128, 127] as numpy's int8 wraps: V - 256 [V >= 128] + 256 [V <= -129], the two
        indicators from Adds / Maxs / Mins (every value an integer below 2**11: exact in half)."""
        h = lambda x: literal(x, dt.float16)  # noqa: E731
        ops = [f"AscendC::Adds(w8, {v}, {h(-127)}, n);", f"AscendC::Maxs(w8, w8, {h(0)}, n);",
               f"AscendC::Mins(w8, w8, {h(1)}, n);", f"AscendC::Muls(w8, w8, {h(-256)}, n);",
               f"AscendC::Add({v}, {v}, w8, n);",
               f"AscendC::Adds(w8, {v}, {h(128)}, n);", f"AscendC::Mins(w8, w8, {h(0)}, n);",
               f"AscendC::Maxs(w8, w8, {h(-1)}, n);", f"AscendC::Muls(w8, w8, {h(-256)}, n);",
               f"AscendC::Add({v}, {v}, w8, n);"]
        return CubePrinter._vector_block("wrapped to int8 like numpy (the chip's half -> int8 cast saturates)",
                                         "AscendC::LocalTensor<half> w8 = b_wrap8.Get<half>();", ops)

    @staticmethod
    def _vector_block(why: str, buffer: str, calls: list[str]) -> list[str]:
        """A braced block: its scratch buffer, then each vector call followed by its PIPE_V barrier."""
        L = ["{  // " + why, "    " + buffer]
        for line in calls:
            L += ["    " + line, "    AscendC::PipeBarrier<PIPE_V>();"]
        return L + ["}"]

    def _copy_out(self, outs) -> list[str]:
        L = ["    __aicore__ inline void CopyOut()", "    {"]
        for i, v in outs:
            ty = v.dtype.ascendc
            L.append(f"        AscendC::LocalTensor<{ty}> out_y{i} = q_y{i}.DeQue<{ty}>();")
            if i in self.s.per_row_outputs:   # the tile's curM values (whole rows of one matrix: col0 is 0)
                L.append(f"        CopyRowsOut(gm_y{i}[row0], out_y{i}, 1, curM, curM, curM);")
            else:
                L.append(f"        CopyRowsOut(gm_y{i}[{self._boff('full')}row0 * {self.gm_ld} + col0], out_y{i}, curM, "
                         f"curN, {self.gm_ld}, {_ld('curN', v.dtype)});")
            L.append(f"        q_y{i}.FreeTensor(out_y{i});")
        L += ["    }", ""]
        return L

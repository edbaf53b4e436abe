"""Ascend C for a kernel of several matmuls that read the same A (schedule_cube_group.py).

Each part prints as the cube kernel it would be alone (printer_cube / printer_cube_row: its
class with one Matmul object and its epilogue); this printer adds one entry that copies a
tiling struct of one TCubeTiling per part, initialises every part, registers all their Matmul
objects at once (REGIST_MATMUL_OBJ takes up to four, before any InitBuffer) and runs the parts
in turn, resetting the TPipe's UB plan between them (TPipe::Reset) so each part has the whole
UB, as it would alone.
"""
from __future__ import annotations

import os
import struct

from ..schedule_cube import TCUBE_FIELDS
from ..schedule_cube_group import CubeGroupSchedule
from . import cnames
from .printer import AscendCPrinter, camel
from .printer_cube import CubePrinter, mix_cpu_hooks
from .printer_cube_row import CubeRowPrinter


class CubeGroupPrinter:
    _helpers = AscendCPrinter._helpers
    symbols = ()   # static shapes only: the host tiling takes no sizes

    def __init__(self, sched: CubeGroupSchedule, target, name: str, debug: bool | None = None):
        self.s = sched
        self.t = target
        self.name = name
        self.tiling = f"{camel(name)}CubeGroupTiling"
        self.debug = os.environ.get("FUSEDSL_DEBUG") == "1" if debug is None else debug
        self.cn = {p.index: cnames.param(p.name) for p in sched.params}
        self.parts = [(CubeRowPrinter if ps.row_epilogue is not None else CubePrinter)(ps, target, f"{name}_p{i}", debug)
                      for i, ps in enumerate(sched.parts)]

    def _gm_args(self) -> list[str]:
        return [self.cn[p.index] for p in self.s.params] + [f"y{i}" for i in range(len(self.s.fn.results))]

    def pack(self, tiling, scalars) -> bytes:
        return struct.pack(f"<{len(tiling.words)}i", *tiling.words)

    def tiling_header(self) -> str:
        fields = "".join(f"    TCubeTiling p{i};\n" for i in range(len(self.parts)))
        return (f"// {self.name} reads one TCubeTiling per matmul (CANN's kernel_tiling/kernel_tiling.h)\n"
                '#include "kernel_tiling/kernel_tiling.h"\n'
                f"struct {self.tiling} {{\n{fields}}};\n")

    def host_tiling(self) -> str:
        sets = []
        for i, ps in enumerate(self.s.parts):
            sets += [f"    out->p{i}.{f} = {w};" for f, w in zip(TCUBE_FIELDS, ps.words) if w]
        body = "\n".join(sets)
        return f"""// Host tiling for {self.name} on {self.t.name}: the TCubeTiling of each matmul fusedsl computed
// (schedule_cube.py), as each would have alone.
inline bool {camel(self.name)}Tiling(const int64_t* sizes, uint32_t vectorCores, uint32_t ubBudget, {self.tiling}* out)
{{
    (void)sizes; (void)vectorCores; (void)ubBudget;
    *out = {{}};
{body}
    return true;
}}
"""

    def body(self) -> str:
        return "\n".join([f"// ---- {self.name}: {len(self.parts)} matmuls of the same A from "
                          f"{cnames.comment(self.s.fn.loc)} ----",
                          f"// {cnames.comment(self.s.plan_note)}",
                          self.tiling_header(), self.kernel(),
                          "#ifndef __CCE_AICORE__  // host side", self.host_tiling(), "#endif",
                          mix_cpu_hooks(self.name, self.tiling, len(self._gm_args()) + 2)])

    def kernel(self) -> str:
        """Device code: the parts' classes and the entry that runs them."""
        return "\n".join([p.kernel(entry=False) for p in self.parts] + [self._entry()])

    def _entry(self) -> str:
        s = self.s
        result_index = {}
        for i, v in enumerate(s.fn.results):
            result_index.setdefault(id(v), i)
        inits, objs, runs = [], [], []
        for i, (printer, part) in enumerate(zip(self.parts, s.part_fns)):
            args = [cnames.param(p.name) for p in printer.s.params if p.kind != "runtime_scalar"]
            args += [f"y{result_index[id(v)]}" for v in part.results]
            inits += [f"    {printer.cls} op{i};", f"    op{i}.Init({', '.join(args)}, workspace, t.p{i});"]
            objs += [f"op{i}.mm", f"&op{i}.tiling"]
            runs += ([] if i == 0 else ["    pipe.Reset();   // the next part plans the whole UB again"])
            runs.append(f"    op{i}.Process(&pipe);")
        macro = "    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);\n" if self.t.kernel_type_macro else ""
        gm = self._gm_args()
        nl = "\n"
        return f"""extern "C" __global__ __aicore__ void {self.name}({', '.join(f'GM_ADDR {x}' for x in gm + ['workspace', 'tiling'])})
{{
{macro}    AscendC::TPipe pipe;
    {self.tiling} t;
    const __gm__ uint32_t* words = reinterpret_cast<const __gm__ uint32_t*>(tiling);
    uint32_t* dst = reinterpret_cast<uint32_t*>(&t);
    for (uint32_t i = 0; i < sizeof(t) / sizeof(uint32_t); ++i) dst[i] = words[i];
{nl.join(inits)}
    REGIST_MATMUL_OBJ(&pipe, AscendC::GetSysWorkSpacePtr(), {', '.join(objs)});   // before any InitBuffer
{nl.join(runs)}
}}
"""

"""Ascend C for a kernel of several matmuls that read the same A (lower/cube_group.py).

Each part prints as the cube kernel it would be alone (its loop-level tile kernel,
lower/cube_tile.py, printed by printer_kernel.py: its class with one Matmul object and its epilogue); this printer adds one entry that copies a
tiling struct of one TCubeTiling per part, initialises every part, registers all their Matmul
objects at once (REGIST_MATMUL_OBJ takes up to four, before any InitBuffer) and runs the parts
in turn, resetting the TPipe's UB plan between them (TPipe::Reset) so each part has the whole
UB, as it would alone.
"""
from __future__ import annotations

from ..lower.cube import TCUBE_FIELDS
from ..lower.cube_group import CubeGroupSchedule
from . import cnames
from .emit import camel
from .frame import KernelFrame
from .printer_kernel import KernelPrinter


class CubeGroupPrinter(KernelFrame):
    TILING_SUFFIX = "CubeGroupTiling"
    WORD = "i"     # TCubeTiling's fields are int32
    MIX = True
    symbols = ()   # static shapes only: the host tiling takes no sizes

    def __init__(self, sched: CubeGroupSchedule, target, name: str, debug: bool | None = None):
        super().__init__(sched, target, name, debug)
        self.cn = {p.index: cnames.param(p.name) for p in sched.params}
        self.parts = [KernelPrinter(ps, target, f"{name}_p{i}", debug) for i, ps in enumerate(sched.parts)]

    def _gm_args(self) -> list[str]:
        return [self.cn[p.index] for p in self.s.params] + [f"y{i}" for i in range(len(self.s.fn.results))]

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
// (lower/cube.py), as each would have alone.
inline bool {camel(self.name)}Tiling(const int64_t* sizes, uint32_t vectorCores, uint32_t ubBudget, {self.tiling}* out)
{{
    (void)sizes; (void)vectorCores; (void)ubBudget;
    *out = {{}};
{body}
    return true;
}}
"""

    def heading(self) -> list[str]:
        return [f"// ---- {self.name}: {len(self.parts)} matmuls of the same A from {cnames.comment(self.s.fn.loc)} ----",
                f"// {cnames.comment(self.s.plan_note)}"]

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
        return "\n".join(self.entry_open(True) + inits + [self.register_matmuls(objs)] + runs + ["}", ""])

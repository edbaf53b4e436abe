"""The host tiling of a cube or conv kernel (a Matmul object's TCubeTiling): the words fusedsl computed
(lower/cube.py cube_tiling), and beside them how CANN's tiling API produces a tiling of the same
shape (the kernel-launch samples' GenerateTiling), for an operator developer who moves the
kernel into a CANN op project.  Printed by printer_kernel.py for the cube, conv, attention and
cube_group kinds."""
from __future__ import annotations

from ..lower.cube import TCUBE_FIELDS
from .emit import camel

_DT = {"float16": "DT_FLOAT16", "float32": "DT_FLOAT", "bfloat16": "DT_BF16", "int8": "DT_INT8", "int32": "DT_INT32"}


def cube_host_tiling(s, target, name: str, tiling_type: str, runtime_scalars: bool) -> str:
    """`s` is the CubeSchedule (or ConvSchedule); `tiling_type` the struct the launch copies
    (TCubeTiling, or a struct holding it as `cube` and the runtime scalars after it)."""
    t = s.tiling_fields
    ta, tb = bool(s.mm.attr("transpose_a", False)), bool(s.mm.attr("transpose_b", False))
    sets = "\n".join([f"    t->{f} = {w};" for f, w in zip(TCUBE_FIELDS, s.words) if w])
    a, b = s.mm.operands
    fn = camel(name)
    head = ""
    g = getattr(s, "conv", None)
    if g is not None:   # a conv kernel: each core's Matmul multiplies the weights by its im2col panel
        head = (f"// {name}: conv2d {g.images}x{g.C}x{g.H}x{g.W} * {g.K}x{g.C}x{g.R}x{g.S}, stride {g.sh}x{g.sw}, "
                f"padding {g.ph}x{g.pw}: each core's Matmul multiplies W[{g.K}, {g.crs}] by its im2col panel "
                f"[{g.crs}, {g.panel_n}]\n")
    return head + f"""#include "tiling/tiling_api.h"
// Host tiling for {name} on {target.name}: the TCubeTiling fusedsl computed (lower/cube.py):
// base block {t.base_m} x {t.base_n} x {t.base_k} within L0C {t.l0c_bytes} B, L0A {t.l0a_bytes} B,
// L0B {t.l0b_bytes} B, L1 {t.l1_bytes} B, and the epilogue's C tile in UB.
inline bool {fn}Tiling(const int64_t* sizes, uint32_t vectorCores, uint32_t ubBudget, {tiling_type}* out)
{{
    (void)sizes; (void)vectorCores; (void)ubBudget;
    *out = {{}};{"   // the caller sets the runtime scalars" if runtime_scalars else ""}
    TCubeTiling* t = {"&out->cube" if runtime_scalars else "out"};
{sets}
    return true;
}}

// How CANN's tiling API produces a tiling of this shape (the kernel-launch samples' GenerateTiling);
// SetSingleShape gives fusedsl's core split (chosen by modelled time, lower.cube.cube_tiling)
// and SetFixSplit({t.base_m}, {t.base_n}) the base block above.
inline int64_t {fn}TilingWithCannApi(const char* socVersion, optiling::TCubeTiling& tiling)
{{
    namespace mt = matmul_tiling;
    auto platform = platform_ascendc::PlatformAscendCManager::GetInstance(socVersion);
    mt::MultiCoreMatmulTiling api(*platform);
    api.SetDim({t.used_core_num});
    api.SetAType(mt::TPosition::GM, mt::CubeFormat::ND, mt::DataType::{_DT[a.dtype.name]}, {str(ta).lower()});
    api.SetBType(mt::TPosition::GM, mt::CubeFormat::ND, mt::DataType::{_DT[b.dtype.name]}, {str(tb).lower()});
    api.SetCType(mt::TPosition::VECIN, mt::CubeFormat::ND, mt::DataType::{_DT[s.c_dtype.name]});
    api.SetOrgShape({t.M}, {t.N}, {t.K});
    api.SetShape({t.M}, {t.N}, {t.K});
    api.SetBias(false);
    api.SetSingleShape({t.single_core_m}, {t.single_core_n}, -1);
    api.SetFixSplit({t.base_m}, {t.base_n}, -1);
    api.SetBufferSpace(-1, -1, -1);
    return api.GetTiling(tiling);
}}
"""


def matmuls_host_tiling(s, target, name: str, tiling_type: str, k) -> str:
    """The host tiling of a kernel with one TCubeTiling per Matmul object (attention's qk and
    pv): the words fusedsl computed, member by member of `tiling_type`."""
    words = list(k.words)
    sets = []
    for mm in k.matmuls:
        part, words = words[:len(TCUBE_FIELDS)], words[len(TCUBE_FIELDS):]
        sets += [f"    out->{mm.tiling}.{f} = {w};" for f, w in zip(TCUBE_FIELDS, part) if w]
    body = "\n".join(sets)
    return f"""// Host tiling for {name} on {target.name}: the TCubeTiling of each Matmul object fusedsl computed.
inline bool {camel(name)}Tiling(const int64_t* sizes, uint32_t vectorCores, uint32_t ubBudget, {tiling_type}* out)
{{
    (void)sizes; (void)vectorCores; (void)ubBudget;
    *out = {{}};
{body}
    return true;
}}
"""


def group_host_tiling(target, name: str, tiling_type: str, k) -> str:
    """The host tiling of a kernel of parts (several matmuls of one A): each part's TCubeTiling
    as fusedsl computed it for the part alone (lower/cube.py), member p<i> of `tiling_type`."""
    sets = []
    for i, part in enumerate(k.parts):
        sets += [f"    out->p{i}.{f} = {w};" for f, w in zip(TCUBE_FIELDS, part.words) if w]
    body = "\n".join(sets)
    return f"""// Host tiling for {name} on {target.name}: the TCubeTiling of each matmul fusedsl computed
// (lower/cube.py), as each would have alone.
inline bool {camel(name)}Tiling(const int64_t* sizes, uint32_t vectorCores, uint32_t ubBudget, {tiling_type}* out)
{{
    (void)sizes; (void)vectorCores; (void)ubBudget;
    *out = {{}};
{body}
    return true;
}}
"""

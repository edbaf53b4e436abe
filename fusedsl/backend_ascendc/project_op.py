"""`k.save(dir, layout="op")`: the kernel in CANN's op-project form, one op per fused kernel.

    op_host/<kernel>_tiling.h   BEGIN_TILING_DATA_DEF / TILING_DATA_FIELD_DEF / REGISTER_TILING_DATA_CLASS
    op_host/<kernel>.cpp        the tiling function (gert::TilingContext), InferShape and the OpDef (OP_ADD)
    op_kernel/<kernel>.cpp      the kernel, reading its tiling with GET_TILING_DATA
    <Op>.json                   the op description msopgen takes to generate CANN's build scaffold
    cpu_test/main.cpp, run.sh   a CPU run: each op's registered tiling function (fusedsl_cpu::RunOpTiling)
                                feeds ICPU_RUN_KF; gen_data.py / verify_result.py as in the kernel layout

The kernel class is the printer's, made generic over the tiling type so that op_kernel never
names it (CANN hands the kernel its op's tiling type through GET_TILING_DATA).

A cube kernel (Matmul API: lower/cube_tile.py / conv_tile.py) follows CANN's MatmulLeakyRelu
op: its tiling data carries the TCubeTiling as a struct field
(`TILING_DATA_FIELD_DEF_STRUCT(TCubeTiling, cubeTilingData)`, then its runtime scalars), the
TilingFunc fills it from the printed host tiling (the function `simulate` checks, so the op
gets the same words), sets blockDim (CalcTschBlockDim of usedCoreNum: cube cores on 910B)
and the workspace (GetLibApiWorkSpaceSize, plus a conv kernel's im2col panels), and the entry
hands `tilingData.cubeTilingData` to the printer's kernel class, which already takes CANN's
TCubeTiling and so needs no change; the CPU run launches it in MIX mode.
"""
from __future__ import annotations

import json
import re

from ..errors import AscendCCheckError, ProjectError, user_frame
from ..ir.ops import CALL, has_trait
from ..lower.attention import AttentionSchedule
from ..lower.cube import TCUBE_FIELDS, CubeSchedule
from ..lower.cube_group import CubeGroupSchedule
from . import cnames
from .emit import camel, scalar_ctype
from .printer import VERSION, shared_helpers
from .project import common_files, host_value_lines, scalar_decl, template

_FIELD = re.compile(r"^\s+(uint32_t|int32_t|float) (\w+)(?:\[(\d+)\])?;")
_GE_TYPE = {"float32": "ge::DT_FLOAT", "float16": "ge::DT_FLOAT16", "bfloat16": "ge::DT_BF16",
            "int32": "ge::DT_INT32", "int8": "ge::DT_INT8", "uint8": "ge::DT_UINT8", "bool": "ge::DT_BOOL"}
_JSON_TYPE = {"float32": "float", "float16": "float16", "bfloat16": "bfloat16", "int32": "int32",
              "int8": "int8", "uint8": "uint8", "bool": "bool"}


def _replace_once(text: str, old: str, new: str) -> str:
    if text.count(old) != 1:
        raise AscendCCheckError(f"op project: expected one `{old}` in the printed kernel (internal error; "
                                "please report it with the IR)")
    return text.replace(old, new)


def _fields(p) -> list[tuple[str, str, int | None]]:
    """(type, name, array length or None) of the printed tiling struct, in order."""
    out = []
    for line in p.tiling_header().splitlines():
        m = _FIELD.match(line)
        if m:
            out.append((m.group(1), m.group(2), int(m.group(3)) if m.group(3) else None))
    return out


def _dtype_of(inp):
    """A runtime scalar's dtype (vector schedules' inputs call it gm_dtype, row/cube params dtype)."""
    return getattr(inp, "gm_dtype", None) or inp.dtype


def _get_attr(dtype, k: int) -> str:
    """The op attr of a runtime scalar, read as the type the op declares (Float / Int)."""
    if dtype.is_float:
        return f"*context->GetAttrs()->GetFloat({k})"
    return f"static_cast<int32_t>(*context->GetAttrs()->GetInt({k}))"


def _tensor_params(plan):
    return [(param, inp) for param, inp in zip(plan.function.params, plan.lowered.inputs)
            if inp.kind != "runtime_scalar"]


def _scalar_inputs(plan):
    return [inp for inp in plan.lowered.inputs if inp.kind == "runtime_scalar"]


def _dim_source(plan, symbol: str) -> tuple[int, int]:
    for j, (param, _) in enumerate(_tensor_params(plan)):
        for d, size in enumerate(param.value.type.shape):
            if size == symbol:
                return j, d
    raise AscendCCheckError(f"op project: symbol {symbol} is no input dimension of {plan.name} (internal error)")


def _tiling_h(p, plan) -> str:
    if _is_cube(plan):
        return _tiling_h_cube(p)
    op = camel(p.name)
    lines = [f"// Tiling data of the {op} op (fusedsl {VERSION}).", "#pragma once",
             '#include "register/tilingdata_base.h"', "", "namespace optiling {",
             f"BEGIN_TILING_DATA_DEF({p.tiling})"]
    for ctype, name, count in _fields(p):
        if count is None:
            lines.append(f"    TILING_DATA_FIELD_DEF({ctype}, {name});")
        else:
            lines.append(f"    TILING_DATA_FIELD_DEF_ARR({ctype}, {count}, {name});")
    lines += ["END_TILING_DATA_DEF;", "", f"REGISTER_TILING_DATA_CLASS({op}, {p.tiling})",
              "}  // namespace optiling", ""]
    return "\n".join(lines)


def _is_cube(plan) -> bool:
    return isinstance(plan.lowered, CubeSchedule)


def _op_host(p, plan, target) -> str:
    if _is_cube(plan):
        return _op_host_cube(p, plan, target)
    op = camel(p.name)
    plain = p.tiling + "Plain"
    struct = _replace_once(p.tiling_header(), f"struct {p.tiling} {{", f"struct {plain} {{")
    host = _replace_once(p.host_tiling(), f"{p.tiling}* t)", f"{plain}* t)")
    sizes = []
    for s in p.symbols:
        j, d = _dim_source(plan, s)
        sizes.append(f"context->GetInputShape({j})->GetStorageShape().GetDim({d})")
    copies = []
    for _, name, count in _fields(p):
        if name in {p.scalar_field(inp) for inp in _scalar_inputs(plan)}:
            continue
        copies.append(f"    tiling.set_{name}(plain.{name});")
    for k, inp in enumerate(_scalar_inputs(plan)):
        copies.append(f"    tiling.set_{p.scalar_field(inp)}({_get_attr(_dtype_of(inp), k)});  // attr {cnames.comment(inp.name)}")
    head = f"""// Host side of the {op} op (fusedsl {VERSION}, {target.name}): tiling, shape inference, op definition.
#include <algorithm>
#include <cstdint>

#include "{p.name}_tiling.h"
#include "register/op_def_registry.h"

namespace optiling {{
// The tiling as fusedsl computes it, then stored field by field into the registered class.
{struct}
{host}
static ge::graphStatus TilingFunc(gert::TilingContext* context)
{{
    const int64_t sizes[] = {{{', '.join(sizes) or '0'}}};
    {plain} plain{{}};
    // {target.vector_cores} vector cores and a {plan.lowered.ub_budget}-byte UB budget on {target.name}
    if (!{camel(p.name)}Tiling(sizes, {target.vector_cores}, {plan.lowered.ub_budget}, &plain)) {{
        return ge::GRAPH_FAILED;   // 2**32 elements or more: the kernel's offsets are 32-bit
    }}
    {p.tiling} tiling;
{chr(10).join(copies)}
    context->SetBlockDim(plain.blockDim);   // 0 for an empty tensor: nothing to launch
    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
    size_t* workspace = context->GetWorkspaceSizes(1);
    workspace[0] = 32;
    return ge::GRAPH_SUCCESS;
}}
}}  // namespace optiling
"""
    return head + _infer_and_opdef(plan, target)


def _infer_and_opdef(plan, target) -> str:
    """InferShape and the OpDef with OP_ADD: the same for every kernel kind."""
    op = camel(plan.name)
    infer = []
    for k, v in enumerate(plan.function.results):
        infer.append(f"    gert::Shape* y{k} = context->GetOutputShape({k});")
        infer.append(f"    y{k}->SetDimNum({len(v.type.shape)});")
        for d, size in enumerate(v.type.shape):
            if isinstance(size, str):
                j, dd = _dim_source(plan, size)
                infer.append(f"    y{k}->SetDim({d}, context->GetInputShape({j})->GetDim({dd}));")
            else:
                infer.append(f"    y{k}->SetDim({d}, {size});")
    # op input and attr names are C++ string literals here and identifiers in msopgen's scaffold
    opdef = []
    for param, _ in _tensor_params(plan):
        dt = param.value.type.dtype.name
        opdef.append(f'        this->Input("{cnames.ident(param.value.name)}").ParamType(REQUIRED).DataType({{{_GE_TYPE[dt]}}})'
                     ".Format({ge::FORMAT_ND});")
    for k, v in enumerate(plan.function.results):
        opdef.append(f'        this->Output("y{k}").ParamType(REQUIRED).DataType({{{_GE_TYPE[v.type.dtype.name]}}})'
                     ".Format({ge::FORMAT_ND});")
    for inp in _scalar_inputs(plan):
        opdef.append(f'        this->Attr("{cnames.ident(inp.name)}").{"Float" if _dtype_of(inp).is_float else "Int"}();')
    return f"""
namespace ge {{
static graphStatus InferShape(gert::InferShapeContext* context)
{{
{chr(10).join(infer)}
    return GRAPH_SUCCESS;
}}
}}  // namespace ge

namespace ops {{
class {op} : public OpDef {{
public:
    explicit {op}(const char* name) : OpDef(name)
    {{
{chr(10).join(opdef)}
        this->SetInferShape(ge::InferShape);
        this->AICore().SetTiling(optiling::TilingFunc);
        this->AICore().AddConfig("{target.name}");
    }}
}};
OP_ADD({op});
}}  // namespace ops
"""


def _op_kernel(p, plan) -> str:
    if _is_cube(plan):
        return _op_kernel_cube(p)
    cls = _replace_once(p._class(), f"class {p.cls} {{", f"template <typename TilingData>\nclass {p.cls} {{")
    cls = _replace_once(cls, f"const {p.tiling}& t", "const TilingData& t")
    cls = _replace_once(cls, f"    {p.tiling} tiling;", "    TilingData tiling;")
    gm = p._gm_args()
    args = ", ".join(f"GM_ADDR {a}" for a in gm + ["workspace", "tiling"])
    macro = "    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);\n" if p.t.kernel_type_macro else ""
    return f"""// Kernel of the {camel(p.name)} op (fusedsl {VERSION}, {p.t.name}): op_kernel form, tiling via GET_TILING_DATA.
#include "kernel_operator.h"

{shared_helpers([p])}
{cls}
extern "C" __global__ __aicore__ void {p.name}({args})
{{
{macro}    (void)workspace;
    GET_TILING_DATA(tilingData, tiling);
    {p.cls}<decltype(tilingData)> op;
    op.Init({', '.join(gm)}, tilingData);
    op.Process();
}}
"""


# ---- cube kernels (the Matmul API) ---------------------------------------------------------

_CUBE_FIELD = "cubeTilingData"   # CANN's MatmulLeakyRelu op names its TCubeTiling field so


def _cube_tiling_class(p) -> str:
    return camel(p.name) + "TilingData"


def _tiling_h_cube(p) -> str:
    op, cls = camel(p.name), _cube_tiling_class(p)
    fields = [f"    TILING_DATA_FIELD_DEF_STRUCT(TCubeTiling, {_CUBE_FIELD});"]
    # the scalars follow the TCubeTiling words, as in the kernel-launch project's tiling struct
    fields += [f"    TILING_DATA_FIELD_DEF({scalar_ctype(r.dtype)}, {p.scalar_field(r)});   "
               f"// runtime scalar {cnames.comment(r.name)}" for r in p.rt]
    return "\n".join([f"// Tiling data of the {op} op (fusedsl {VERSION}): the Matmul API's TCubeTiling, as in "
                      "CANN's MatmulLeakyRelu op.",
                      "#pragma once", '#include "register/tilingdata_base.h"', '#include "tiling/tiling_api.h"', "",
                      "namespace optiling {", f"BEGIN_TILING_DATA_DEF({cls})", *fields, "END_TILING_DATA_DEF;", "",
                      f"REGISTER_TILING_DATA_CLASS({op}, {cls})", "}  // namespace optiling", ""])


def _user_workspace(sched) -> int:
    """Workspace bytes the kernel uses after the Matmul API's system part (a conv kernel's
    im2col panels, one per core; 0 for a matmul)."""
    return sched.workspace_bytes - CubeSchedule.workspace_bytes.fget(sched)


def _op_host_cube(p, plan, target) -> str:
    op, cls, sched = camel(p.name), _cube_tiling_class(p), plan.lowered
    rt = p.rt
    # the kernel's shapes are static: the TCubeTiling holds them, so other shapes are refused
    checks = " &&\n           ".join(
        f"InputShapeIs(context, {j}, {{{', '.join(str(d) for d in param.value.type.shape)}}})"
        for j, (param, _) in enumerate(_tensor_params(plan)))
    copies = "\n".join(f"    tiling.{_CUBE_FIELD}.set_{f}(cube.{f});" for f in TCUBE_FIELDS)
    attrs = "\n".join(f"    tiling.set_{p.scalar_field(inp)}({_get_attr(_dtype_of(inp), k)});  // attr "
                      f"{cnames.comment(inp.name)}" for k, inp in enumerate(_scalar_inputs(plan)))
    user_ws = _user_workspace(sched)
    # one Matmul object per AI core (lower.cube layouts): each object has two vector slices, one idles
    one = target.separated and getattr(getattr(sched, "tiling_fields", None), "objects_per_core", 2) == 1
    slices = " * 2" if one else ""
    per_core_note = ("\n    // (one Matmul object per AI core: its second vector core idles, so 2 slices per object)"
                     if one else "")
    ws_note = (f"the im2col panels: {sched.used_cores} cores x {sched.conv.panel_bytes} B"
               if hasattr(sched, "conv") else "the kernel uses none of its own")
    return f"""// Host side of the {op} op (fusedsl {VERSION}, {target.name}): tiling, shape inference, op definition.
// A cube kernel (the Matmul API): the tiling data carries its TCubeTiling, as in CANN's MatmulLeakyRelu op.
#include <cstdint>
#include <initializer_list>

#include "{p.name}_tiling.h"
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"

// The tiling fusedsl computed (the same function its simulate path runs and checks word for word;
// the MultiCoreMatmulTiling calls beside it show how CANN's tiling API reaches this split).
{p.tiling_header()}
{p.host_tiling()}
namespace optiling {{
static bool InputShapeIs(gert::TilingContext* context, size_t i, std::initializer_list<int64_t> dims)
{{
    const gert::Shape& shape = context->GetInputShape(i)->GetStorageShape();
    if (shape.GetDimNum() != dims.size()) {{
        return false;
    }}
    size_t d = 0;
    for (int64_t size : dims) {{
        if (shape.GetDim(d++) != size) {{
            return false;
        }}
    }}
    return true;
}}

static ge::graphStatus TilingFunc(gert::TilingContext* context)
{{
    // fusedsl computed the TCubeTiling for these input shapes
    if (!({checks})) {{
        return ge::GRAPH_FAILED;
    }}
    ::{p.tiling} plain{{}};   // the printed host tiling's type (global scope, above)
    const int64_t sizes[] = {{0}};   // static shapes: no symbolic dimensions
    if (!{camel(p.name)}Tiling(sizes, {target.vector_cores}, {sched.ub_budget}, &plain)) {{
        return ge::GRAPH_FAILED;
    }}
    // the kernel's struct (kernel_tiling.h); in namespace optiling TCubeTiling is the host class
    const ::TCubeTiling& cube = plain{'.cube' if rt else ''};
    {cls} tiling;
{copies}
{attrs}{chr(10) if attrs else ''}    // A mixed kernel's blockDim counts (1 AIC + AIV) groups: usedCoreNum vector slices over them{per_core_note}
    auto* platform = platform_ascendc::PlatformAscendCManager::GetInstance();
    const uint32_t blockDim = platform->CalcTschBlockDim(static_cast<uint32_t>(cube.usedCoreNum){slices},
                                                         platform->GetCoreNumAic(), platform->GetCoreNumAiv());
    if (blockDim == 0) {{
        return ge::GRAPH_FAILED;
    }}
    context->SetBlockDim(blockDim);
    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
    // the Matmul API's system workspace, then the kernel's own ({ws_note})
    const size_t userWorkspaceSize = {user_ws};
    size_t* workspace = context->GetWorkspaceSizes(1);
    workspace[0] = static_cast<size_t>(platform->GetLibApiWorkSpaceSize()) + userWorkspaceSize;
    return ge::GRAPH_SUCCESS;
}}
}}  // namespace optiling
""" + _infer_and_opdef(plan, target)


def _op_kernel_cube(p) -> str:
    text = p.kernel()
    entry = f'extern "C" __global__ __aicore__ void {p.name}('
    if text.count(entry) != 1:
        raise AscendCCheckError(f"op project: expected one entry `{p.name}` in the printed cube kernel (internal "
                                "error; please report it with the IR)")
    # the printed class takes CANN's TCubeTiling; only the entry, which copies the kernel-launch
    # tiling words from GM, is replaced by one reading the op's tiling data
    cls = text[:text.index(entry)]
    gm = p._gm_args()
    args = ", ".join(f"GM_ADDR {a}" for a in gm + ["workspace", "tiling"])
    macro = "    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);\n" if p.t.kernel_type_macro else ""
    scalars = "".join(f"    op.{p.scalar_member(r)} = tilingData.{p.scalar_field(r)};\n" for r in p.rt)
    return f"""// Kernel of the {camel(p.name)} op (fusedsl {VERSION}, {p.t.name}): op_kernel form, tiling via GET_TILING_DATA.
// A cube kernel (the Matmul API, mixed AIC + AIV): its TCubeTiling is the tiling data's {_CUBE_FIELD}.
#include "kernel_operator.h"

{shared_helpers([p])}
{cls}{entry}{args})
{{
{macro}    GET_TILING_DATA(tilingData, tiling);
    AscendC::TPipe pipe;
    {p.cls} op;
    op.Init({', '.join(gm)}, workspace, tilingData.{_CUBE_FIELD});
{scalars}    REGIST_MATMUL_OBJ(&pipe, AscendC::GetSysWorkSpacePtr(), op.mm, &op.tiling);   // before any InitBuffer
    op.Process(&pipe);
}}
"""


def _op_json(p, plan) -> str:
    desc = {"op": camel(p.name),
            "language": "cpp",
            "input_desc": [{"name": cnames.ident(param.value.name), "param_type": "required", "format": ["ND"],
                            "type": [_JSON_TYPE[param.value.type.dtype.name]]} for param, _ in _tensor_params(plan)],
            "output_desc": [{"name": f"y{k}", "param_type": "required", "format": ["ND"],
                             "type": [_JSON_TYPE[v.type.dtype.name]]} for k, v in enumerate(plan.function.results)],
            "attr": [{"name": cnames.ident(inp.name), "param_type": "required",
                      "type": "float" if _dtype_of(inp).is_float else "int"} for inp in _scalar_inputs(plan)]}
    return json.dumps([desc], indent=4) + "\n"


def _cpu_main(compiled, printers, prog) -> str:
    name = compiled.name
    by_name = {p.name: p for p in printers}
    decls = []
    for p in printers:
        args = ", ".join(f"GM_ADDR {a}" for a in p._gm_args() + ["workspace", "tiling"])
        decls.append(f'extern "C" __global__ __aicore__ void {p.name}({args});')
    main = compiled.module.main
    body = ["    int32_t rc = 0;"]
    for p in main.params:
        if p.kind == "scalar":
            body.append(f"    const {scalar_decl(p.value.name, p.value.type.dtype, prog.scalars[p.value.name])};")
    body += [f"    uint8_t* {buf} = static_cast<uint8_t*>(AscendC::GmAlloc({n}));" for buf, n in prog.buffers]
    for p in main.params:
        if p.kind != "scalar":
            n = prog.nbytes(p.value)
            body.append(f'    rc |= ReadFile("./input/input_{p.value.name}.bin", {n}, {prog.where[id(p.value)]}, {n}) ? 0 : 1;')
    body += host_value_lines(prog, "MemcpyToGm")
    body.append("    if (rc != 0) {\n        return 1;\n    }")
    calls = [op for op in main.ops if has_trait(op, CALL)]
    for op, (plan, gm, scalar_args) in zip(calls, prog.launches):
        pr = by_name[plan.name]
        shapes = ", ".join("gert::Shape{" + ", ".join(str(d) for d in prog.shape(v)) + "}"
                           for v, inp in zip(op.operands, plan.lowered.inputs) if inp.kind != "runtime_scalar")
        attrs = ", ".join(src for _, src in scalar_args)
        r = f"op_{plan.name}"
        body += [f"    // {camel(pr.name)}: {', '.join(plan.ops)}",
                 f'    const fusedsl_cpu::OpTilingResult {r} = fusedsl_cpu::RunOpTiling("{camel(pr.name)}", {{{shapes}}}, {{{attrs}}});',
                 f"    uint8_t* {r}_tiling = static_cast<uint8_t*>(AscendC::GmAlloc({r}.tiling.size()));",
                 f"    std::memcpy({r}_tiling, {r}.tiling.data(), {r}.tiling.size());",
                 f"    uint8_t* {r}_workspace = static_cast<uint8_t*>(AscendC::GmAlloc({r}.workspaceBytes));",
                 # what the tiling function decided, for the reader and the tests
                 f'    std::printf("[INFO] {camel(pr.name)}: blockDim %u, %zu tiling bytes, workspace %zu bytes\\n", '
                 f"{r}.blockDim, {r}.tiling.size(), {r}.workspaceBytes);",
                 f"    if ({r}.blockDim > 0) {{",
                 f"        ICPU_SET_TILING_KEY({r}.tilingKey);"]
        run = f"        ICPU_RUN_KF({plan.name}, {r}.blockDim, {', '.join(gm + [r + '_workspace', r + '_tiling'])});"
        if _is_cube(plan):   # a mixed AIC + AIV kernel (the Matmul API); blockDim counts cube cores
            body += ["        AscendC::SetKernelMode(KernelMode::MIX_MODE);", run,
                     "        AscendC::SetKernelMode(KernelMode::AIV_MODE);   // the vector kernels of the program"]
        else:
            body.append(run)
        body += ["    }",
                 f"    AscendC::GmFree({r}_tiling);",
                 f"    AscendC::GmFree({r}_workspace);"]
    for k, (buf, v) in enumerate(zip(prog.results, main.results)):
        n = prog.nbytes(v)
        body.append(f'    rc |= WriteFile("./output/output_{k}.bin", {buf}, {n}) ? 0 : 1;')
    body += [f"    AscendC::GmFree({b});" for b, _ in prog.buffers]
    body.append("    return rc;")
    return f"""// CPU run of the {name} op project (fusedsl {VERSION}): each op's registered tiling function
// (OP_ADD in op_host) runs through fusedsl_cpu::RunOpTiling, and its kernel through ICPU_RUN_KF.
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "data_utils.h"
#include "register/op_def_registry.h"
#include "tikicpulib.h"

{chr(10).join(decls)}

// host-computed inputs (arange, linspace) into their GM buffers
static int32_t MemcpyToGm(uint8_t* dst, const void* src, size_t bytes)
{{
    std::memcpy(dst, src, bytes);
    return 0;
}}

int32_t main()
{{
    AscendC::SetKernelMode(KernelMode::AIV_MODE);
{chr(10).join(body)}
}}
"""


def op_project_files(compiled, printers, prog) -> dict[str, str]:
    t = compiled.target
    name = compiled.name
    plans = {plan.name: plan for plan in compiled.kernels}
    files = {}
    for p in printers:
        plan = plans[p.name]
        if isinstance(plan.lowered, (CubeGroupSchedule, AttentionSchedule)):   # several TCubeTilings
            what = "an attention kernel" if isinstance(plan.lowered, AttentionSchedule) else "a kernel of several matmuls"
            raise ProjectError(f"layout='op' does not write {what} ({p.name}: its tiling data holds several "
                               "TCubeTilings) yet", loc=user_frame(), hint="save it with the default kernel-launch layout")
        files[f"op_host/{p.name}_tiling.h"] = _tiling_h(p, plan)
        files[f"op_host/{p.name}.cpp"] = _op_host(p, plan, t)
        files[f"op_kernel/{p.name}.cpp"] = _op_kernel(p, plan)
        files[f"{camel(p.name)}.json"] = _op_json(p, plan)
    files["cpu_test/main.cpp"] = _cpu_main(compiled, printers, prog)
    kernels = " ".join(p.name for p in printers)
    files["run.sh"] = template("run_op.sh", name=name, soc=t.soc_version, kernels=kernels)
    files.update(common_files(compiled, prog))
    ops = ", ".join(camel(p.name) for p in printers)
    cubes = [camel(p.name) for p in printers if _is_cube(plans[p.name])]
    cube_note = (f"""- {', '.join(cubes)}: cube kernel(s) (the Matmul API, mixed AIC + AIV). As in CANN's MatmulLeakyRelu op,
  the tiling data carries the TCubeTiling (`TILING_DATA_FIELD_DEF_STRUCT(TCubeTiling, cubeTilingData)`), the
  tiling function fills it with the tiling fusedsl computed and asks for the Matmul API's system workspace
  (`GetLibApiWorkSpaceSize`, plus a conv kernel's im2col panels); the CPU run launches them in MIX mode.
""" if cubes else "")
    files["README.md"] = f"""# {name} — Ascend C op project generated by fusedsl {VERSION}

Target: {t.name} ({t.chip}).  Ops: {ops} (one per fused kernel).

- `op_host/<kernel>_tiling.h`: the tiling data (`BEGIN_TILING_DATA_DEF`, `REGISTER_TILING_DATA_CLASS`)
- `op_host/<kernel>.cpp`: the tiling function, InferShape and the op definition (`OP_ADD`)
- `op_kernel/<kernel>.cpp`: the kernel; it reads its tiling with `GET_TILING_DATA`
- `<Op>.json`: the op description for `msopgen gen -i <Op>.json -c ai_core-{t.soc_version} -lan cpp -out <dir>`,
  which creates CANN's build scaffold (CMakePresets, build.sh); put op_host/ and op_kernel/ there.
- `cpu_test/main.cpp`, `run.sh`, `scripts/`: run and verify the ops on the CPU without CANN:
  `bash run.sh -r cpu -v {t.soc_version}` (fusedsl's CPU implementation runs each op's registered tiling
  function, then its kernel, with the hardware checks; op_kernel files are compiled with
  `-include op_host/<kernel>_tiling.h`, which gives GET_TILING_DATA its type as CANN's build does).
{cube_note}"""
    return files

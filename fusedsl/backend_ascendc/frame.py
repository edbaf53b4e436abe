"""The frame every Ascend C kernel printer shares: names, the body's layout, the tiling struct's
bytes, the extern "C" entry, the CPU run's hooks, the device helpers and the printing of one
tile statement.

The printer (printer_kernel.py, for every kind: each is lowered to the loop-level tile IR, a kernel of
several matmuls with its parts) subclasses `KernelFrame` and supplies what differs between kinds: its
heading, tiling struct, host tiling and kernel class.  Every kernel is launched the same way
(the tiling struct copied word by word from GM, one op object, Init, Process); a kernel that
uses the cube (the Matmul API) passes its Matmul objects to `entry`, which makes it a MIX
launch (a TPipe before the op, REGIST_MATMUL_OBJ before any InitBuffer).
"""
from __future__ import annotations

import os
import struct

from . import cnames
from .emit import camel, emit_cmp_mode0, emit_select_mode0, emit_stmt, pack_scalar, source_line
from ..lower.vector import Stmt


def debug_flag(debug: bool | None) -> bool:
    """FUSEDSL_DEBUG=1 puts the user's source line beside every printed tile statement."""
    return os.environ.get("FUSEDSL_DEBUG") == "1" if debug is None else debug


class KernelFrame:
    TILING_SUFFIX = "TilingData"   # the tiling struct is <Name><suffix>
    WORD = "I"                     # struct code of the tiling words (TCubeTiling has signed fields)
    MIX = False                    # a cube kernel: launched in MIX mode (AIC + AIV)

    def __init__(self, sched, target, name: str, debug: bool | None = None):
        self.s = sched
        self.t = target
        self.name = name
        self.cls = "Kernel" + camel(name)
        self.tiling = camel(name) + self.TILING_SUFFIX
        self.debug = debug_flag(debug)

    # ---- what each kind prints (its printer overrides these) ------------------------------
    def heading(self) -> list[str]:
        """The comment lines that open this kernel's part of the file."""
        raise NotImplementedError

    def tiling_header(self) -> str:
        raise NotImplementedError

    def host_tiling(self) -> str:
        raise NotImplementedError

    def kernel(self) -> str:
        raise NotImplementedError

    # ---- the frame ----------------------------------------------------------------------------
    def body(self) -> str:
        """This kernel's part of a source file (tiling struct, kernel, host tiling, CPU hooks)."""
        return "\n".join(self.body_parts())

    def body_parts(self) -> list[str]:
        """The texts `body` joins by newlines (the file joins every kernel's at once: a body's
        text is not copied twice)."""
        return [*self.heading(), self.tiling_header(), self.kernel(),
                "#ifndef __CCE_AICORE__  // host side", self.host_tiling(), "#endif", self._cpu_hooks()]

    def launch_params(self) -> list:
        """The schedule's parameter records (.name, .kind) in the order the launch takes its
        arguments: the tensors become GM buffers, the runtime scalars tiling words."""
        return list(self.s.params)

    def workspace_bytes(self) -> int:
        """The GM workspace a launch hands the kernel (cube kernels: the Matmul API's and their
        message buffers; others need none, but the entry still takes one)."""
        return getattr(self.s, "workspace_bytes", 32)

    def scalar_field(self, param) -> str:
        """The tiling-struct field a runtime scalar parameter travels in (the saved projects'
        host code sets it)."""
        return param.var

    def scalar_member(self, param) -> str:
        """The kernel class's member holding a runtime scalar's value (an op project's entry
        sets it from the tiling data)."""
        return param.var

    def runtime_scalars(self) -> list:
        """The runtime scalar parameters whose values follow the tiling words."""
        return [p for p in getattr(self.s, "params", ()) if p.kind == "runtime_scalar"]

    def tiling_words(self, tiling) -> list[int]:
        """The tiling struct's words of one launch (before the runtime scalars)."""
        return list(tiling.words)

    def pack(self, tiling, scalars) -> bytes:
        """The tiling struct as this printer lays it out (simulate checks it word for word)."""
        words = self.tiling_words(tiling)
        data = struct.pack(f"<{len(words)}{self.WORD}", *words)
        return data + b"".join(pack_scalar(p.dtype, scalars[p.name]) for p in self.runtime_scalars())

    def entry(self, init_args: list[str], setup: tuple[str, ...] = (), matmuls: list[str] | None = None) -> str:
        """The extern "C" kernel: copy the tiling struct from GM, Init the op object with
        `init_args`, run `setup` lines, register the Matmul objects (`matmuls`: object and
        tiling pointer pairs; a MIX launch) and Process."""
        mix = matmuls is not None
        L = self.entry_open(mix) + [f"    {self.cls} op;", f"    op.Init({', '.join(init_args)});",
                                    *[f"    {line}" for line in setup]]
        if mix:
            L += [self.register_matmuls(matmuls), "    op.Process(&pipe);"]
        else:
            L.append("    op.Process();")
        return "\n".join(L + ["}", ""])

    def entry_open(self, mix: bool) -> list[str]:
        """The entry's signature and its copy of the tiling struct into `t`; a MIX kernel
        declares the TPipe its Matmul objects are registered with first."""
        params = ", ".join([f"GM_ADDR {a}" for a in self._gm_args() + ["workspace", "tiling"]])
        L = [f'extern "C" __global__ __aicore__ void {self.name}({params})', "{"]
        if self.t.kernel_type_macro:
            L.append(f"    KERNEL_TASK_TYPE_DEFAULT({'KERNEL_TYPE_MIX_AIC_1_2' if mix else 'KERNEL_TYPE_AIV_ONLY'});")
        return L + ["    AscendC::TPipe pipe;" if mix else "    (void)workspace;",
                    "    // the tiling struct is copied word by word from GM (kernel-launch style)",
                    f"    {self.tiling} t;",
                    "    const __gm__ uint32_t* words = reinterpret_cast<const __gm__ uint32_t*>(tiling);",
                    "    uint32_t* dst = reinterpret_cast<uint32_t*>(&t);",
                    "    for (uint32_t i = 0; i < sizeof(t) / sizeof(uint32_t); ++i) dst[i] = words[i];"]

    @staticmethod
    def register_matmuls(matmuls: list[str]) -> str:
        return (f"    REGIST_MATMUL_OBJ(&pipe, AscendC::GetSysWorkSpacePtr(), {', '.join(matmuls)});"
                "   // before any InitBuffer")

    def class_open(self, init_params: list[str], tiling_type: str | None = None) -> list[str]:
        """The kernel class up to the body of its Init (which has stored the tiling struct)."""
        return [f"class {self.cls} {{",
                "public:",
                f"    __aicore__ inline {self.cls}() {{}}",
                f"    __aicore__ inline void Init({', '.join(init_params)}, const {tiling_type or self.tiling}& t)",
                "    {",
                "        tiling = t;"]

    def static_host_tiling(self, words, about: list[str]) -> str:
        """The host tiling function of a kernel with static shapes: the words fusedsl computed,
        copied into the struct (`about`: the comment lines that say why they are constants)."""
        body = ", ".join([f"{w}u" for w in words])
        return "\n".join([
            *about,
            f"inline bool {camel(self.name)}Tiling(const int64_t* sizes, uint32_t vectorCores, uint32_t ubBudget,",
            f"                          {self.tiling}* t)",
            "{",
            "    (void)sizes; (void)vectorCores; (void)ubBudget;",
            f"    static const uint32_t kWords[{len(words)}] = {{{body}}};",
            "    uint32_t* dst = reinterpret_cast<uint32_t*>(t);",
            f"    for (uint32_t i = 0; i < {len(words)}; ++i) dst[i] = kWords[i];",
            "    return true;",
            "}"]) + "\n"

    @staticmethod
    def core_tiles() -> list[str]:
        """Process's first lines: this core's tiles [first, last) of the tiling's totalTiles."""
        return ["        const uint32_t first = AscendC::GetBlockIdx() * tiling.tilesPerCore;",
                "        const uint32_t last = MinU32(tiling.totalTiles, first + tiling.tilesPerCore);"]

    def _gm_args(self) -> list[str]:
        raise NotImplementedError

    def _cpu_hooks(self) -> str:
        """The CPU run's entry points: the launch (in MIX mode for a cube kernel) and the host
        tiling function."""
        name, tiling = self.name, self.tiling
        args = ", ".join([f"args[{i}]" for i in range(len(self._gm_args()) + 2)])
        if self.MIX:
            launch = f"""#include "tikicpulib.h"
// Entry points for fusedsl's CPU run of this file (not part of the NPU build): a mixed kernel.
extern "C" int fusedsl_launch_{name}(uint32_t blockDim, uint8_t** args)
{{
    AscendC::SetKernelMode(KernelMode::MIX_MODE);
    const int rc = fusedsl_cpu::Launch({name}, blockDim, {args});
    AscendC::SetKernelMode(KernelMode::AIV_MODE);   // the vector kernels of the same program
    return rc;
}}"""
        else:
            launch = f"""// Entry points for fusedsl's CPU run of this file (not part of the NPU build).
extern "C" int fusedsl_launch_{name}(uint32_t blockDim, uint8_t** args)
{{
    return fusedsl_cpu::Launch({name}, blockDim, {args});
}}"""
        return f"""#ifdef ASCENDC_CPU_DEBUG
{launch}
extern "C" int fusedsl_tiling_{name}(const int64_t* sizes, uint32_t vectorCores, uint32_t ubBudget,
                                        {tiling}* t)
{{
    return {camel(name)}Tiling(sizes, vectorCores, ubBudget, t) ? 0 : 1;
}}
extern "C" uint32_t fusedsl_tiling_size_{name}() {{ return sizeof({tiling}); }}
#endif
"""

    def _helpers(self) -> str:
        pad = self.t.has_datacopypad
        if pad:
            copy_in = """    if (nrows == 1 || (ncols == ubStride && gmStride == ncols)) {
        const uint32_t n = nrows * ncols;
        if (n * sizeof(T) % 32 == 0) { AscendC::DataCopy(dst, src, n); return; }
        AscendC::DataCopyExtParams p{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0};
        AscendC::DataCopyPadExtParams<T> pad{false, 0, 0, T(0)};
        AscendC::DataCopyPad(dst, src, p, pad);
        return;
    }
    // one DMA for all rows: GM rows are gmStride apart, UB rows ubStride apart (32-B blocks)
    const uint32_t rowBytes = ncols * sizeof(T);
    const uint32_t ubGap = (ubStride * sizeof(T) - (rowBytes + 31) / 32 * 32) / 32;
    AscendC::DataCopyExtParams p{static_cast<uint16_t>(nrows), rowBytes,
                                 static_cast<uint32_t>((gmStride - ncols) * sizeof(T)), ubGap, 0};
    AscendC::DataCopyPadExtParams<T> pad{false, 0, 0, T(0)};
    AscendC::DataCopyPad(dst, src, p, pad);"""
            copy_out = """    if (nrows == 1 || (ncols == ubStride && gmStride == ncols)) {
        const uint32_t n = nrows * ncols;
        if (n * sizeof(T) % 32 == 0) { AscendC::DataCopy(dst, src, n); return; }
        AscendC::DataCopyExtParams p{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0};
        AscendC::DataCopyPad(dst, src, p);
        return;
    }
    const uint32_t rowBytes = ncols * sizeof(T);
    const uint32_t ubGap = (ubStride * sizeof(T) - (rowBytes + 31) / 32 * 32) / 32;
    AscendC::DataCopyExtParams p{static_cast<uint16_t>(nrows), rowBytes, ubGap,
                                 static_cast<uint32_t>((gmStride - ncols) * sizeof(T)), 0};
    AscendC::DataCopyPad(dst, src, p);"""
        else:
            copy_in = """    // No DataCopyPad on this chip: the 32-byte-aligned body moves by DMA and the
    // remaining elements one by one, so nothing outside the tensor is read or written.
    constexpr uint32_t kBlock = 32 / sizeof(T);
    const bool contiguous = nrows == 1 || (ncols == ubStride && gmStride == ncols);
    const uint32_t rows = contiguous ? 1 : nrows;
    const uint32_t len = contiguous ? nrows * ncols : ncols;
    for (uint32_t r = 0; r < rows; ++r) {
        const uint32_t body = len / kBlock * kBlock;
        if (body > 0) AscendC::DataCopy(dst[r * ubStride], src[r * gmStride], body);
        for (uint32_t i = body; i < len; ++i) dst.SetValue(r * ubStride + i, src.GetValue(r * gmStride + i));
    }
    AscendC::PipeBarrier<PIPE_ALL>();"""
            copy_out = """    constexpr uint32_t kBlock = 32 / sizeof(T);
    const bool contiguous = nrows == 1 || (ncols == ubStride && gmStride == ncols);
    const uint32_t rows = contiguous ? 1 : nrows;
    const uint32_t len = contiguous ? nrows * ncols : ncols;
    AscendC::PipeBarrier<PIPE_ALL>();
    for (uint32_t r = 0; r < rows; ++r) {
        const uint32_t body = len / kBlock * kBlock;
        if (body > 0) AscendC::DataCopy(dst[r * gmStride], src[r * ubStride], body);
        for (uint32_t i = body; i < len; ++i) dst.SetValue(r * gmStride + i, src.GetValue(r * ubStride + i));
    }"""
        return f"""namespace {{
// Device code uses no STL (the AI Core toolchain has none): its own minimum.
__aicore__ inline uint32_t MinU32(uint32_t a, uint32_t b) {{ return a < b ? a : b; }}

// nrows rows of ncols elements: GM rows gmStride elements apart, UB rows ubStride apart.
template <typename T>
__aicore__ inline void CopyRowsIn(const AscendC::LocalTensor<T>& dst, const AscendC::GlobalTensor<T>& src,
                                  uint32_t nrows, uint32_t ncols, uint32_t gmStride, uint32_t ubStride)
{{
{copy_in}
}}

template <typename T>
__aicore__ inline void CopyRowsOut(const AscendC::GlobalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                                   uint32_t nrows, uint32_t ncols, uint32_t gmStride, uint32_t ubStride)
{{
{copy_out}
}}

// Fill ncols elements with one value (a broadcast column); types Duplicate lacks go element-wise.
template <typename T>
__aicore__ inline void FillRow(const AscendC::LocalTensor<T>& dst, T value, uint32_t ncols)
{{
    if constexpr (sizeof(T) >= 2) {{
        AscendC::Duplicate(dst, value, ncols);
    }} else {{
        for (uint32_t i = 0; i < ncols; ++i) dst.SetValue(i, value);
        AscendC::PipeBarrier<PIPE_ALL>();
    }}
}}
}}  // namespace
"""

    def _stmt(self, st: Stmt, indent: int) -> list[str]:
        pad = " " * indent
        if self.t.arch == 1001 and st.op in ("cmp", "select"):   # Select mode 0 only
            text = (emit_cmp_mode0 if st.op == "cmp" else emit_select_mode0)(st)
        else:
            text = emit_stmt(st)
        if self.debug and st.loc is not None:
            text += "  // " + cnames.comment(
                f"{os.path.basename(st.loc.file)}:{st.loc.line}: {source_line(st.loc)}")
        return [pad + text, pad + "AscendC::PipeBarrier<PIPE_V>();"]

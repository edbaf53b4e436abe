"""`fusedsl cpu-run FILE.asc`: CANN 9's single-source programs on the CPU implementation of the API.

A .asc file holds a host `main` and `__global__ __vector__` kernels launched with
`kernel<<<numBlocks, dynUbBytes, stream>>>(args)`.  g++ cannot parse the launch, so each one
becomes `::fusedsl_cpu::AscLaunch(mode, ws, kernel, numBlocks, dynUbBytes, stream)(args)` (the mode from
the kernel's __vector__/__cube__/__mix__ qualifier, ws the index of its `workspace` parameter) (see
cpu/include/cpu_debug_launch.h); a `#line` directive keeps g++'s messages on the user's own
lines, and the rewrite adds no line breaks.  The program is built with g++ against
`fusedsl include-dir` (ASCENDC_CPU_DEBUG, the target's __NPU_ARCH__) and run in the caller's
working directory, so it finds its ./input files as on the device.

`python -m fusedsl.backend_ascendc.asc cc [g++ options] --npu-arch=dav-XXXX -o OBJ -c SRC` is the
compiler driver behind fusedsl's CMake package (cpu/include/cmake/asc-config.cmake): CANN's
sample trees build with their own CMakeLists.txt once `CMAKE_PREFIX_PATH=$(fusedsl include-dir)`.
It translates SRC like cpu-run, maps the NPU architecture to its target (dav-2201 ascend910b,
dav-2002 ascend310p, dav-1001 ascend910) and drops the bisheng-only options.  Both model bisheng's
default --cce-auto-sync=on (the flags between PIPE_S and the V/MTE2/MTE3 pipes of a vector core
are the compiler's, FUSEDSL_CCE_AUTO_SYNC=1 in cpu/include/fusedsl_cpu/runtime.h); `cc` honours an
explicit --cce-auto-sync=off.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

from .. import scratch
from ..errors import ArgumentError, AscendCCompileError, FusedslError, Loc, TargetError
from ..targets import get_target
from .cpu import include_dir

# name, optional template arguments, then <<<config>>>; the config never spans a `;`
_LAUNCH = re.compile(r"(?P<name>(?:::)?[A-Za-z_][\w:]*(?:\s*<[^<>;{}()]*>)?)\s*<<<(?P<cfg>[^;]*?)>>>")
_ERROR_LINES = 40
# a kernel definition's qualifiers decide how its blocks run: __vector__ AIV, __cube__ AIC,
# __mix__(cube, vector) one cube core with its vector cores (CANN's CPU debug reads the same)
# (the qualifiers may stand before __global__ too: `__cube__ __global__ __aicore__ void k(...)`)
_KERNEL_DEF = re.compile(r"((?:__\w+__(?:\s*\([^)]*\))?\s+)*)__global__\s+((?:__\w+__(?:\s*\([^)]*\))?\s+)*)"
                         r"void\s+(\w+)\s*\(")
_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(?:if|ifdef|ifndef|elif|else|endif)\b[^\n]*\n", re.M)
# the same with the preprocessor's conditionals among the qualifiers kept (which alternative holds is
# the compiler's to decide: -D options of the build)
_QUAL_OR_DIRECTIVE = r"(?:__\w+__(?:\s*\([^)]*\))?\s+|^[ \t]*#[ \t]*(?:if|ifdef|ifndef|elif|else|endif)\b[^\n]*\n)"
_KERNEL_DEF_IF = re.compile(rf"({_QUAL_OR_DIRECTIVE}*)__global__\s+({_QUAL_OR_DIRECTIVE}*)\s*void\s+(\w+)\s*\(", re.M)
_MODES = (("__cube__", "AIC_MODE"), ("__vector__", "AIV_MODE"))
# __mix__(cube, vector): the ratio picks CANN's CPU-debug mode as cpudebug's kernel_elf_parser.h does —
# (1, 2) MIX_MODE (two vector cores per block), (1, 1) MIX_AIC_1_1 (one), (1, 0) AIC_MODE, (0, 1) AIV_MODE
_MIX = re.compile(r"__mix__\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)")
_MIX_MODES = {("1", "2"): "MIX_MODE", ("1", "1"): "MIX_AIC_1_1", ("1", "0"): "AIC_MODE", ("0", "1"): "AIV_MODE"}
_ICPU_RUN = re.compile(r"\bICPU_RUN_KF\s*\(\s*(?P<name>[A-Za-z_]\w*)\s*,")


def c_string(text: str) -> str:
    """`text` as a C string literal: quotes, backslashes and control characters escaped."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\{ord(ch):03o}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _workspace_index(source: str, open_paren: int) -> int:
    """Index of the kernel parameter named like `workspace` in the list opening at `open_paren`
    (-1 if none): its argument is the launch's system workspace (GetSysWorkSpacePtr)."""
    depth, start, params = 0, open_paren + 1, []
    for i in range(open_paren, len(source)):
        ch = source[i]
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth -= 1
            if depth == 0:
                params.append(source[start:i])
                break
        elif ch == "," and depth == 1:
            params.append(source[start:i])
            start = i + 1
    names = [(re.findall(r"[A-Za-z_]\w*", p) or [""])[-1].lower() for p in params]
    return next((k for k, n in enumerate(names) if n == "workspace"), -1)


def _has_kfc_workspace(source: str, open_paren: int) -> bool:
    """Whether the parameter list opening at `open_paren` has a `__kfc_workspace__` parameter: the
    buffer through which a mixed kernel's vector cores call its cube core (Matmul's KFC), so a
    kernel without a __vector__/__cube__/__mix__ qualifier that has one is a mixed kernel."""
    close = source.find(")", open_paren)
    return "__kfc_workspace__" in source[open_paren:close if close > 0 else len(source)]


def _qualifier_mode(quals: str, default: str) -> str | None:
    """The kernel mode the qualifiers `quals` give (`default` when they name none)."""
    mix = _MIX.search(quals)
    if mix:
        return _MIX_MODES.get(mix.groups(), "MIX_MODE")
    if "__mix__" in quals:
        return "MIX_MODE"
    return next((mode for q, mode in _MODES if q in quals), default)


def _conditional_qualifiers(quals: str) -> list[str]:
    """The lines of `quals` from the first one where the conditionals balance to the end ([] when no
    conditional chooses between qualifiers of different modes): a directive closing an earlier block
    (`#endif` before `__global__`) is not part of the choice."""
    lines = quals.splitlines()

    def depth_ok(ls):
        depth = 0
        for line in ls:
            word = re.match(r"\s*#\s*(\w+)", line)
            if word and word[1] in ("if", "ifdef", "ifndef"):
                depth += 1
            elif word and word[1] == "endif":
                depth -= 1
            elif word and word[1] in ("else", "elif") and depth == 0:
                return False
            if depth < 0:
                return False
        return depth == 0

    while lines and not depth_ok(lines):
        lines.pop(0)
    text = [line for line in lines if not _DIRECTIVE.match(line + "\n")]
    if len(text) == len(lines) or len({_qualifier_mode(t, "") for t in text if "__" in t}) < 2:
        return []
    return lines


def _mode_resolver(name: str, lines: list[str], default: str) -> str:
    """A C++ function returning the kernel mode the preprocessor's conditionals among the qualifier
    `lines` pick: each directive line kept, each alternative's qualifier line a `return`."""
    body = []
    for line in lines:
        if _DIRECTIVE.match(line + "\n"):
            body.append(line.strip())
        elif "__" in line:
            body.append(f"return ::KernelMode::{_qualifier_mode(line, default)};")
    body.append(f"return ::KernelMode::{default};")
    return f"\n::KernelMode fusedsl_cpu_mode_{name}() {{\n" + "\n".join(body) + "\n}\n"


def translate(source: str, filename: str) -> str:
    """The .asc text with every triple-chevron launch rewritten for g++ (line numbers kept)."""
    modes, workspaces = {}, {}
    # the definitions are read with the directive lines left out (for the parameters)
    bare = _DIRECTIVE.sub("", source)
    for m in _KERNEL_DEF.finditer(bare):
        default = "MIX_MODE" if _has_kfc_workspace(bare, m.end() - 1) else "AIV_MODE"
        modes[m.group(3)] = _qualifier_mode(m.group(1) + m.group(2), default)
        workspaces[m.group(3)] = _workspace_index(bare, m.end() - 1)
    # the qualifiers may be chosen by the preprocessor (`#if X __global__ __mix__(1, 1) #else __global__
    # __mix__(1, 2) #endif void k(...)`, CANN's quant_group_matmul_high_performance): then the mode is a
    # function with the same conditionals, appended after the last line, which g++ resolves with the
    # build's own -D options
    resolvers = {}
    for m in _KERNEL_DEF_IF.finditer(source):
        lines, name = _conditional_qualifiers(m.group(1) + m.group(2)), m.group(3)
        if lines and name in modes:
            resolvers[name] = _mode_resolver(name, lines, modes[name])
            modes[name] = f"fusedsl_cpu_mode_{name}()"

    # a launch through a plain local name that is no kernel definition (`constexpr auto k = pick(k1, k2);
    # k<<<...>>>`, CANN's matmul_high_performance) stands for one of the file's kernels: it takes the mode
    # and workspace parameter they all share, when they share one
    only_mode = next(iter(set(modes.values()))) if len(set(modes.values())) == 1 else "AIV_MODE"
    only_ws = next(iter(set(workspaces.values()))) if len(set(workspaces.values())) == 1 else -1

    def launch(m) -> str:
        base = re.sub(r"<.*", "", m["name"], flags=re.S).split("::")[-1].strip()
        alias = base not in modes and m["name"].strip() == base
        mode = _mode_expr(modes.get(base, only_mode if alias else "AIV_MODE"))
        ws = workspaces.get(base, only_ws if alias else -1)
        return f"::fusedsl_cpu::AscLaunch({mode}, {ws}, {m['name']}, {m['cfg'].strip()})"

    body = _LAUNCH.sub(launch, source)
    # ICPU_RUN_KF (the tikicpulib form, which the samples' ASCENDC_CPU_DEBUG branches use) runs in the
    # program's kernel mode, CANN's CPU-debug default being MIX_MODE; fusedsl's default is AIV_MODE, so
    # a program that sets no mode itself gets the mode its kernel's definition implies (__mix__ or a
    # __kfc_workspace__ parameter: mixed, __cube__: cube)
    if "SetKernelMode" not in source:
        def icpu(m) -> str:
            mode = modes.get(m["name"])
            if mode in (None, "AIV_MODE"):
                return m[0]
            return f"ICPU_RUN_KF((::AscendC::SetKernelMode({_mode_expr(mode)}), {m['name']}),"
        body = _ICPU_RUN.sub(icpu, body)
    if re.search(r"\bCrossCore(Set|Wait)Flag\b", source):
        # the program synchronises with its mixed kernels' cube cores: run them (appended after the last
        # line, so no line number moves)
        body += ("\nnamespace { [[maybe_unused]] const bool fusedsl_cpu_cube_cores = "
                 "::fusedsl_cpu::EnableCubeCores(); }\n")
    if resolvers:
        # declared ahead of the user's first line (KernelMode is an int-based scoped enum, as base.h defines it)
        ahead = "enum class KernelMode;\n" + "".join(f"::KernelMode fusedsl_cpu_mode_{n}();\n" for n in resolvers)
        return f"{ahead}#line 1 {c_string(filename)}\n{body}" + "".join(resolvers.values())
    return f"#line 1 {c_string(filename)}\n{body}"


def _mode_expr(mode: str) -> str:
    """A kernel mode as C++: an enumerator name, or the call of a preprocessor-resolved function."""
    return mode if mode.endswith(")") else f"::KernelMode::{mode}"


def build(path: str, out_dir: str, *, target: str = "ascend910b", include_dirs=(), defines=(),
          opt: str = "-O1") -> str:
    """Compile the .asc program at `path` into `out_dir`; returns the executable's path."""
    if not os.path.isfile(path):
        raise ArgumentError(f"no such file: {path}", hint="give the path of a .asc (or .cpp) source file")
    arch = get_target(target).arch
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        source = f.read()
    src = os.path.join(out_dir, "program.cpp")
    with open(src, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(translate(source, os.path.abspath(path)))
    exe = os.path.join(out_dir, "program")
    if not any(str(d).startswith("FUSEDSL_CCE_AUTO_SYNC") for d in defines):
        defines = (*defines, "FUSEDSL_CCE_AUTO_SYNC=1")   # bisheng's default for <<<>>> programs
    cmd = ["g++", "-std=c++17", opt, "-x", "c++", "-DASCENDC_CPU_DEBUG", f"-D__NPU_ARCH__={arch}",
           f"-I{os.path.dirname(os.path.abspath(path))}", *[f"-I{d}" for d in include_dirs],
           f"-I{include_dir()}", *[f"-D{d}" for d in defines], "-include", "cpu_debug_launch.h",
           src, "-x", "none", "-o", exe]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    except FileNotFoundError:
        raise AscendCCompileError("g++ was not found; fusedsl cpu-run needs g++ (C++17)") from None
    if proc.returncode != 0:
        lines = (proc.stderr + proc.stdout).splitlines()
        more = f"\n... ({len(lines) - _ERROR_LINES} more lines)" if len(lines) > _ERROR_LINES else ""
        raise AscendCCompileError(f"g++ failed to compile {path}:\n" + "\n".join(lines[:_ERROR_LINES]) + more)
    return exe


def run(path: str, args=(), *, target: str = "ascend910b", include_dirs=(), defines=(), cwd: str | None = None,
        capture: bool = False, timeout: float | None = None) -> subprocess.CompletedProcess:
    """Build and run the program; its exit status is 1 when a CPU check failed.

    `timeout` (seconds) stops a program that runs longer (subprocess.TimeoutExpired)."""
    with scratch.folder("asc") as tmp:   # removed by a later sweep if this process is killed
        exe = build(path, tmp, target=target, include_dirs=include_dirs, defines=defines)
        env = dict(os.environ)
        env.pop("FUSEDSL_TARGET", None)   # the build's __NPU_ARCH__ decides the chip
        return subprocess.run([exe, *args], cwd=cwd, env=env, capture_output=capture, text=capture,
                              errors="replace" if capture else None, timeout=timeout)


# --npu-arch values of CANN's ASC toolchain -> fusedsl targets (the __NPU_ARCH__ numbers)
_NPU_ARCHS = {"dav-2201": "ascend910b", "dav-2002": "ascend310p", "dav-1001": "ascend910"}
# architectures CANN builds for that fusedsl has no CPU target for: their chip names
_UNMODELLED_ARCHS = {"dav-3510": "Ascend 950 (Ascend 950PR/950DT, dav-3510)",
                     "dav-3002": "Ascend 310B (dav-3002)", "dav-3101": "Ascend 910_95 (dav-3101)"}
# bisheng options with no meaning for g++ (device-code generation, run modes, sanitizers)
_DROPPED_PREFIXES = ("--cce-", "--run-mode", "--gcc-toolchain", "--sanitizer", "--enable-simt",
                     "--asc-", "-dc", "--aicore-", "-mllvm")


def _kernel_line(source: str) -> int:
    """1-based line of the first kernel definition (0 if none): where a target error points."""
    m = re.search(r"__global__", source)
    return source.count("\n", 0, m.start()) + 1 if m else 0


def target_for_arch(arch: str, source_path: str, source: str) -> str:
    """The fusedsl target for a --npu-arch value; a TargetError at the kernel for the others."""
    if arch in _NPU_ARCHS:
        return _NPU_ARCHS[arch]
    loc = Loc(os.path.abspath(source_path), _kernel_line(source))
    known = ", ".join(f"{a} ({t})" for a, t in _NPU_ARCHS.items())
    if arch in _UNMODELLED_ARCHS:
        raise TargetError(f"this source is built for {_UNMODELLED_ARCHS[arch]}, a chip fusedsl's CPU "
                          f"implementation of the Ascend C API has no target for", loc=loc,
                          hint=f"build it for one of: {known} (-DCMAKE_ASC_ARCHITECTURES=...)")
    raise TargetError(f"unknown NPU architecture --npu-arch={arch}", loc=loc, hint=f"use one of: {known}")


def compile_object(argv: list[str]) -> int:
    """The `cc` driver: compile one ASC source to an object file the way bisheng would for the NPU,
    but with g++ against the CPU API.  Returns g++'s exit status (1 for a fusedsl error)."""
    arch, src, out, rest = "dav-2201", None, None, []
    auto_sync = True
    it = iter(argv)
    for a in it:
        if a.startswith("--cce-auto-sync"):
            auto_sync = a.split("=", 1)[1] != "off" if "=" in a else True
        elif a.startswith("--npu-arch="):
            arch = a.split("=", 1)[1]
        elif a in ("--npu-arch", "--cce-aicore-arch"):
            arch = next(it, arch)
        elif a == "-c":
            src = next(it, None)
        elif a == "-o":
            out = next(it, None)
        elif a.startswith(_DROPPED_PREFIXES) or a in ("-x", "asc"):
            continue
        else:
            rest.append(a)
    if src is None or out is None:
        raise ArgumentError("usage: python -m fusedsl.backend_ascendc.asc cc [options] -o OBJECT -c SOURCE")
    with open(src, encoding="utf-8", errors="surrogateescape") as f:
        source = f.read()
    target = target_for_arch(arch, src, source)
    if not any(a.startswith("-O") for a in rest):
        # no optimisation level asked for (a CMake build without CMAKE_BUILD_TYPE): -O1 as `fusedsl cpu-run`
        # builds — g++'s default -O0 runs the CPU model's per-element checks several times slower; an
        # explicit level (the Debug configuration's -O0 -g) is kept
        rest.insert(0, "-O1")
    translated = out + ".fusedsl.cpp"
    with open(translated, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(translate(source, os.path.abspath(src)))
    cmd = ["g++", "-std=c++17", "-x", "c++", "-DASCENDC_CPU_DEBUG", f"-D__NPU_ARCH__={get_target(target).arch}",
           f"-DFUSEDSL_CCE_AUTO_SYNC={int(auto_sync)}", f"-I{os.path.dirname(os.path.abspath(src))}", *rest, f"-I{include_dir()}",
           "-include", "cpu_debug_launch.h", "-c", translated, "-x", "none", "-o", out]
    try:
        return subprocess.run(cmd).returncode
    except FileNotFoundError:
        raise AscendCCompileError("g++ was not found; fusedsl's ASC compiler driver needs g++ (C++17)") from None


def _main(argv: list[str]) -> int:
    if not argv or argv[0] != "cc":
        print("usage: python -m fusedsl.backend_ascendc.asc cc [options] -o OBJECT -c SOURCE", file=sys.stderr)
        return 2
    try:
        return compile_object(argv[1:])
    except FusedslError as exc:
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))

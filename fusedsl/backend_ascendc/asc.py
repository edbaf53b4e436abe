"""`fusedsl cpu-run FILE.asc`: CANN 9's single-source programs on the CPU implementation of the API.

A .asc file holds a host `main` and `__global__ __vector__` kernels launched with
`kernel<<<numBlocks, dynUbBytes, stream>>>(args)`.  g++ cannot parse the launch, so each one
becomes `::fusedsl_cpu::AscLaunch(mode, kernel, numBlocks, dynUbBytes, stream)(args)` (the mode from
the kernel's __vector__/__cube__/__mix__ qualifier) (see
cpu/include/cpu_debug_launch.h); a `#line` directive keeps g++'s messages on the user's own
lines, and the rewrite adds no line breaks.  The program is built with g++ against
`fusedsl include-dir` (ASCENDC_CPU_DEBUG, the target's __NPU_ARCH__) and run in the caller's
working directory, so it finds its ./input files as on the device.
"""
from __future__ import annotations

import os
import re
import subprocess
import tempfile

from ..errors import ArgumentError, AscendCCompileError
from ..targets import get_target
from .cpu import include_dir

# name, optional template arguments, then <<<config>>>; the config never spans a `;`
_LAUNCH = re.compile(r"(?P<name>(?:::)?[A-Za-z_][\w:]*(?:\s*<[^<>;{}()]*>)?)\s*<<<(?P<cfg>[^;]*?)>>>")
_ERROR_LINES = 40
# a kernel definition's qualifiers decide how its blocks run: __vector__ AIV, __cube__ AIC,
# __mix__(cube, vector) one cube core with its vector cores (CANN's CPU debug reads the same)
_KERNEL_DEF = re.compile(r"__global__\s+((?:__\w+__(?:\s*\([^)]*\))?\s+)*)void\s+(\w+)\s*\(")
_MODES = (("__mix__", "MIX_MODE"), ("__cube__", "AIC_MODE"), ("__vector__", "AIV_MODE"))


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


def translate(source: str, filename: str) -> str:
    """The .asc text with every triple-chevron launch rewritten for g++ (line numbers kept)."""
    modes = {}
    for m in _KERNEL_DEF.finditer(source):
        modes[m.group(2)] = next((mode for q, mode in _MODES if q in m.group(1)), "AIV_MODE")

    def launch(m) -> str:
        base = re.sub(r"<.*", "", m["name"]).split("::")[-1].strip()
        mode = modes.get(base, "AIV_MODE")
        return f"::fusedsl_cpu::AscLaunch(::KernelMode::{mode}, {m['name']}, {m['cfg'].strip()})"

    body = _LAUNCH.sub(launch, source)
    return f"#line 1 {c_string(filename)}\n{body}"


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
    with tempfile.TemporaryDirectory(prefix="fusedsl-asc-") as tmp:
        exe = build(path, tmp, target=target, include_dirs=include_dirs, defines=defines)
        env = dict(os.environ)
        env.pop("FUSEDSL_TARGET", None)   # the build's __NPU_ARCH__ decides the chip
        return subprocess.run([exe, *args], cwd=cwd, env=env, capture_output=capture, text=capture,
                              errors="replace" if capture else None, timeout=timeout)

"""Command line: `fusedsl compile|explain|include-dir` (also `python -m fusedsl`).

    fusedsl compile kernels.py::abs_add_relu --arg a=128xfloat32 --arg b=Mx128xfloat32 \\
        --target ascend910b -o out/abs_add_relu
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys

from .errors import ArgumentError, FusedslError


def _load(ref: str):
    if "::" not in ref:
        raise ArgumentError(f"expected FILE.py::FUNCTION, got {ref!r}")
    path, func = ref.split("::", 1)
    if not os.path.exists(path):
        raise ArgumentError(f"no such file: {path}")
    spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec.loader.exec_module(module)
    kernel = getattr(module, func, None)
    if kernel is None:
        raise ArgumentError(f"{path} has no function {func!r}")
    if not hasattr(kernel, "compile"):
        from .frontend.kernel import fused_kernel
        kernel = fused_kernel(kernel)
    return kernel


def parse_arg(text: str):
    """NAME=DIMxDIMx...xDTYPE (dims may be names like M) or NAME=scalar:DTYPE."""
    from .frontend.kernel import scalar, spec
    if "=" not in text:
        raise ArgumentError(f"--arg needs NAME=SHAPExDTYPE, got {text!r}")
    name, value = text.split("=", 1)
    if value.startswith("scalar:"):
        return name, scalar(name, value.split(":", 1)[1])
    *dims, dtype = value.split("x")
    shape = tuple(int(d) if d.isdigit() else d for d in dims)
    return name, spec(shape, dtype)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="fusedsl", description="fusedsl kernel compiler")
    sub = parser.add_subparsers(dest="command", required=True)
    for cmd in ("compile", "explain"):
        p = sub.add_parser(cmd, help=f"{cmd} FILE.py::FUNCTION for the given argument specs")
        p.add_argument("function")
        p.add_argument("--arg", action="append", default=[], help="NAME=SHAPExDTYPE, e.g. b=Mx128xfloat32")
        p.add_argument("--target", default="ascend910b")
        if cmd == "compile":
            p.add_argument("-o", "--output", required=True, help="project directory to write")
    sub.add_parser("include-dir", help="print the folder of the CPU Ascend C API headers")
    args = parser.parse_args(argv)
    try:
        if args.command == "include-dir":
            from .backend_ascendc.cpu import include_dir
            print(include_dir())
            return 0
        kernel = _load(args.function)
        specs = [parse_arg(a)[1] for a in args.arg]
        compiled = kernel.compile(*specs, target=args.target)
        if args.command == "explain":
            print(compiled.ir)
            print(compiled.report())
            return 0
        compiled.check_ascendc()
        path = compiled.save(args.output)
        print(f"wrote {path} ({len(compiled.kernels)} kernel(s) for {compiled.target.name})")
        return 0
    except FusedslError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

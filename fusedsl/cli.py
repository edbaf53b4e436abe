"""Command line: `fusedsl compile|explain|simulate|fuse|include-dir|cpu-run` (also `python -m fusedsl`).

    fusedsl compile kernels.py::abs_add_relu --arg a=128xfloat32 --arg b=Mx128xfloat32 \\
        --target ascend910b -o out/abs_add_relu
    fusedsl simulate kernels.py::abs_add_relu --arg a=128xfloat32 --arg b=Mx128xfloat32 --size M=192
    fusedsl cpu-run add.asc -- ARGS...      (CANN 9 single-source program on the CPU API)
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


def _random_inputs(specs, sizes: dict[str, int], seed: int):
    """Random arrays for tensor specs (symbolic dims from --size) and values for scalars."""
    import numpy as np
    from .frontend.kernel import ScalarSpec
    rng = np.random.default_rng(seed)
    out = []
    for sp in specs:
        if isinstance(sp, ScalarSpec):
            out.append(np.asarray(rng.uniform(-1, 1), sp.dtype.np))
            continue
        missing = [d for d in sp.shape if isinstance(d, str) and d not in sizes]
        if missing:
            raise ArgumentError(f"give the size of {', '.join(missing)} with --size {missing[0]}=N")
        shape = tuple(sizes[d] if isinstance(d, str) else d for d in sp.shape)
        if sp.dtype.is_float:
            arr = rng.uniform(-2, 2, shape)
        elif sp.dtype.name == "bool":
            arr = rng.uniform(size=shape) > 0.5
        else:
            info = np.iinfo(sp.dtype.np)
            arr = rng.integers(max(info.min, -8), min(info.max, 8), shape, endpoint=True)
        out.append(np.asarray(arr).astype(sp.dtype.np))
    return out


def _simulate(kernel, specs, args) -> int:
    """Run the printed Ascend C on random inputs and compare with the numpy reference."""
    import numpy as np
    from .reference import run_module
    compiled = kernel.compile(*specs, target=args.target)
    sizes = dict(parse_size(s) for s in args.size)
    inputs = _random_inputs(specs, sizes, args.seed)
    got = compiled.simulate(*inputs)
    got = got if isinstance(got, tuple) else (got,)
    want = run_module(compiled.graph, inputs)
    worst = 0.0
    for g, w in zip(got, want):
        with np.errstate(invalid="ignore"):
            diff = np.abs(g.astype(np.float64) - w.astype(np.float64))
        worst = max(worst, float(np.nanmax(diff)) if diff.size else 0.0)
    print(compiled.report())
    print(f"max |simulated Ascend C - numpy reference| = {worst:g} over {len(got)} output(s)")
    return 0


def parse_size(text: str):
    name, _, value = text.partition("=")
    if not name.isidentifier() or not value.isdigit():
        raise ArgumentError(f"--size needs NAME=N, got {text!r}")
    return name, int(value)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="fusedsl", description="fusedsl kernel compiler")
    sub = parser.add_subparsers(dest="command", required=True)
    for cmd in ("compile", "explain", "simulate"):
        p = sub.add_parser(cmd, help=f"{cmd} FILE.py::FUNCTION for the given argument specs")
        p.add_argument("function")
        p.add_argument("--arg", action="append", default=[], help="NAME=SHAPExDTYPE, e.g. b=Mx128xfloat32")
        p.add_argument("--target", default="ascend910b")
        if cmd == "compile":
            p.add_argument("-o", "--output", required=True, help="project directory to write (new or empty)")
            p.add_argument("--layout", choices=("kernel", "op"), default="kernel",
                           help="kernel: a kernel-launch sample (run.sh -r cpu|sim|npu); op: an op project")
            p.add_argument("--size", action="append", default=[], help="NAME=N: a symbolic dimension's size in "
                                                                        "the project's main.cpp and data scripts")
            p.add_argument("--overwrite", action="store_true",
                           help="replace a previous fusedsl project there (only fusedsl's own, unedited files)")
        if cmd == "simulate":
            p.add_argument("--size", action="append", default=[], help="NAME=N for a symbolic dimension")
            p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    sub.add_parser("include-dir", help="print the folder of the CPU Ascend C API headers")
    cr = sub.add_parser("cpu-run", help="build a CANN single-source .asc program (host main + <<<>>> launches) "
                                        "against the CPU Ascend C API and run it with its checks")
    cr.add_argument("source", help="FILE.asc")
    cr.add_argument("args", nargs=argparse.REMAINDER, help="arguments of the program (after --)")
    cr.add_argument("--target", default="ascend910b", help="chip whose rules are checked (sets __NPU_ARCH__)")
    cr.add_argument("-I", dest="include", action="append", default=[], help="extra include folder")
    cr.add_argument("-D", dest="define", action="append", default=[], help="extra preprocessor definition")
    fz = sub.add_parser("fuse", help="fuse an ONNX model: fused ONNX, one CANN project per kernel, a report")
    fz.add_argument("model", help="model.onnx (opset 13+, static shapes)")
    fz.add_argument("-o", "--output", required=True, help="directory to write (new, empty, or a previous output)")
    fz.add_argument("--target", default="ascend910b")
    fz.add_argument("--opt-level", type=int, choices=range(4), default=2)
    fz.add_argument("--progress", action="store_true", help="show a progress bar even when stderr is no terminal")
    args = parser.parse_args(argv)
    try:
        if args.command == "include-dir":
            from .backend_ascendc.cpu import include_dir
            print(include_dir())
            return 0
        if args.command == "cpu-run":
            from .backend_ascendc.asc import run as run_asc
            program_args = args.args[1:] if args.args[:1] == ["--"] else args.args
            sys.stdout.flush()
            return run_asc(args.source, program_args, target=args.target, include_dirs=args.include,
                           defines=args.define).returncode
        if args.command == "fuse":
            from .importers.fuse_model import fuse_onnx
            rep = fuse_onnx(args.model, args.output, args.target, args.opt_level, args.progress or None)
            print(f"wrote {args.output}: {rep['kernels_fused']} kernel(s) (unfused {rep['kernels_unfused']}), "
                  f"modelled {rep['model_time_us_unfused']:.2f} -> {rep['model_time_us_fused']:.2f} us; "
                  f"see fusion_report.txt")
            return 0
        kernel = _load(args.function)
        specs = [parse_arg(a)[1] for a in args.arg]
        if args.command == "simulate":
            return _simulate(kernel, specs, args)
        compiled = kernel.compile(*specs, target=args.target)
        if args.command == "explain":
            print(compiled.ir)
            print(compiled.report())
            return 0
        compiled.check_ascendc()
        path = compiled.save(args.output, layout=args.layout, overwrite=args.overwrite,
                             sizes=dict(parse_size(x) for x in args.size) or None)
        print(f"wrote {path} ({len(compiled.kernels)} kernel(s) for {compiled.target.name})")
        return 0
    except FusedslError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

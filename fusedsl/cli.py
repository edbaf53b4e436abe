"""Command line: `fusedsl compile|explain|simulate|fuse|include-dir|cpu-run|cache` (also `python -m fusedsl`).

    fusedsl compile kernels.py::abs_add_relu --arg a=128xfloat32 --arg b=Mx128xfloat32 \\
        --target ascend910b -o out/abs_add_relu
    fusedsl simulate kernels.py::abs_add_relu --arg a=128xfloat32 --arg b=Mx128xfloat32 --size M=192
    fusedsl cpu-run add.asc -- ARGS...      (CANN 9 single-source program on the CPU API)
    fusedsl cache info                      (where the compile caches are, their size and limit)

Exit status: 0 success; 1 the kernel or program failed (an error in the user's code, a simulated
kernel that disagrees with the reference, a failed CPU check); 2 a usage mistake (a missing file,
a bad --arg/--size/--target, an output that cannot be written, a FUSEDSL_CACHE_MAX_BYTES that is not a
size).  `cpu-run` exits with the
program's status, 128+N when a signal N killed it (a crash) and 124 after --timeout.  A usage
mistake prints one line naming the argument and what to do, never a traceback.
"""
from __future__ import annotations

import argparse
import difflib
import importlib.util
import inspect
import os
import signal
import subprocess
import sys
import warnings

from . import cachedir, cachesize, scratch
from . import dtypes as dt
from .backend_ascendc.project_writer import MANIFEST   # a saved project's manifest: --overwrite may replace it
from .errors import CacheLimitError, FusedslError, ProjectError, SaturationWarning, TargetError
from .frontend.kernel import FusedKernel, ScalarSpec, TensorSpec, fused_kernel, scalar, spec
from .targets import TARGETS
from .version import __version__

_FUNCTION_METAVAR = "FILE.py::FUNCTION"
# int64/float64 are numpy's defaults: say which fusedsl dtype to use instead
_NARROWER = {"float64": "float32", "double": "float32", "int64": "int32", "uint64": "int32",
             "int16": "int32", "uint16": "int32", "uint32": "int32"}
# how far the printed kernel may be from the numpy reference and still agree: reductions and
# 16-bit math round in a different order on the NPU's vector unit
_TOLERANCE = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 4e-2}


class UsageError(Exception):
    """A mistake on the command line: printed as one line naming `argument`, exit status 2."""

    def __init__(self, argument: str, message: str):
        super().__init__(f"argument {argument}: {message}")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is ONE line (naming the argument and pointing at --help)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


# ---- --arg / --size ------------------------------------------------------------------------------
def _dtype(text: str, argument: str, item: str):
    if text.isdigit() or not text:
        raise UsageError(argument, f"{item} has no dtype: write SHAPExDTYPE, e.g. {item}xfloat32")
    if text in _NARROWER:
        raise UsageError(argument, f"{item}: dtype {text} is not supported; use {_NARROWER[text]} "
                                   f"(fusedsl has {dt.supported_names()})")
    try:
        return dt.to_dtype(text)
    except (KeyError, TypeError):
        names = [d.name for d in dt.ALL]
        close = difflib.get_close_matches(text, names, n=1)
        guess = f"did you mean {close[0]}? " if close else ""
        raise UsageError(argument, f"{item}: unknown dtype {text!r}; {guess}fusedsl has {dt.supported_names()}") \
            from None


def parse_arg(text: str) -> tuple[str, TensorSpec | ScalarSpec]:
    """`NAME=DIMxDIMx...xDTYPE` (dims are ints or names like M) or `NAME=scalar:DTYPE`."""
    name, sep, value = text.partition("=")
    if not sep or not name.isidentifier():
        raise UsageError("--arg", f"{text!r} is not NAME=SHAPExDTYPE; write e.g. --arg b=Mx128xfloat32 "
                                  "or --arg alpha=scalar:float32")
    if value.startswith("scalar:"):
        return name, scalar(name, _dtype(value.split(":", 1)[1], "--arg", text))
    *dims, dtype = value.split("x")
    shape = []
    for d in dims:
        if d.isdigit():
            shape.append(int(d))
        elif d.isidentifier():
            shape.append(d)
        else:
            raise UsageError("--arg", f"{text}: dimension {d!r} is neither a size nor a name like M; "
                                      "write e.g. b=Mx128xfloat32")
    return name, spec(tuple(shape), _dtype(dtype, "--arg", text))


def parse_size(text: str) -> tuple[str, int]:
    """`NAME=N`, N >= 1."""
    name, _, value = text.partition("=")
    if not name.isidentifier() or not value.isdigit() or int(value) < 1:
        raise UsageError("--size", f"{text!r} is not NAME=N; write e.g. --size M=192 (N >= 1)")
    return name, int(value)


def _sizes(texts: list[str], specs, *, required: bool) -> dict[str, int]:
    """--size values checked against the symbolic dimensions of the specs."""
    symbols = [d for sp in specs if isinstance(sp, TensorSpec) for d in sp.shape if isinstance(d, str)]
    sizes: dict[str, int] = {}
    for text in texts:
        name, value = parse_size(text)
        if name in sizes:
            raise UsageError("--size", f"{name} is given twice; give each size once")
        if name not in symbols:
            known = ", ".join(dict.fromkeys(symbols)) or "none (every --arg shape is concrete)"
            raise UsageError("--size", f"{name} is not a dimension of any --arg; the symbolic dimensions "
                                       f"are: {known}")
        sizes[name] = value
    missing = [d for d in dict.fromkeys(symbols) if d not in sizes]
    if required and missing:
        raise UsageError("--size", f"give the size of {', '.join(missing)}, e.g. --size {missing[0]}=N")
    return sizes


def _bind_args(kernel: FusedKernel, texts: list[str], ref: str) -> list:
    """The --arg specs in the function's parameter order, bound by NAME (a parameter with a
    default may be left out; it is then compiled as that constant)."""
    params = kernel.signature.parameters
    given: dict[str, object] = {}
    for text in texts:
        name, value = parse_arg(text)
        if name in given:
            raise UsageError("--arg", f"{name} is given twice; give each parameter once")
        if name not in params:
            close = difflib.get_close_matches(name, list(params), n=1)
            guess = f"did you mean {close[0]}? " if close else ""
            raise UsageError("--arg", f"{ref} has no parameter {name!r}; {guess}its parameters are "
                                      f"{', '.join(params) or 'none'}")
        given[name] = value
    out = []
    for name, param in params.items():
        if name in given:
            out.append(given[name])
        elif param.default is not inspect.Parameter.empty:
            out.append(param.default)
        else:
            missing = [n for n, p in params.items() if n not in given and p.default is inspect.Parameter.empty]
            raise UsageError("--arg", f"{ref} needs {', '.join(missing)}: add "
                                      + " ".join(f"--arg {n}=SHAPExDTYPE" for n in missing))
    return out


# ---- files --------------------------------------------------------------------------------------
def _input_file(path: str, argument: str, suffixes: tuple[str, ...], what: str) -> str:
    if not os.path.exists(path):
        raise UsageError(argument, f"no such file: {path}")
    if os.path.isdir(path):
        raise UsageError(argument, f"{path} is a directory; give {what}")
    if not path.lower().endswith(suffixes):
        raise UsageError(argument, f"{path} is not {what} ({' or '.join(suffixes)})")
    if not os.access(path, os.R_OK):
        raise UsageError(argument, f"cannot read {path}; check its permissions")
    return path


def _output_dir(path: str, *, marker: str, overwrite: bool | None, what: str, writer: str = "fusedsl") -> None:
    """An output folder that is new, empty or fusedsl's own (marker), and writable."""
    argument = "-o/--output"
    if os.path.lexists(path) and not os.path.isdir(path):
        raise UsageError(argument, f"{path} exists and is not a directory; choose a new directory")
    if os.path.isdir(path):
        if os.listdir(path):
            if not os.path.exists(os.path.join(path, marker)):
                raise UsageError(argument, f"{path} is not empty and was not written by {writer}; choose a new "
                                           "or empty directory (fusedsl never replaces files it did not write)")
            if overwrite is False:
                raise UsageError(argument, f"{path} already holds {what}; pass --overwrite to replace "
                                           "fusedsl's own files there, or choose a new directory")
        if not os.access(path, os.W_OK | os.X_OK):
            raise UsageError(argument, f"cannot write into {path}; choose a directory you can write to")
        return
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(argument, f"cannot create {path}: {parent} is not a directory you can write to; "
                                   "choose another path")


def _load(ref: str) -> FusedKernel:
    """The kernel named by FILE.py::FUNCTION (a plain function is wrapped in fs.fused_kernel)."""
    argument = _FUNCTION_METAVAR
    path, sep, func = ref.rpartition("::")
    if not sep or not path or not func:
        raise UsageError(argument, f"expected {_FUNCTION_METAVAR}, got {ref!r}; e.g. kernels.py::abs_add_relu")
    _input_file(path, argument, (".py",), "a Python file")
    module_name = os.path.splitext(os.path.basename(path))[0]
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(module_spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        module_spec.loader.exec_module(module)
    except FusedslError:
        raise   # located in the user's file already
    except Exception as exc:   # the user's module itself fails: name its line, not ours
        raise _UserCodeError(path, exc) from None
    kernel = getattr(module, func, None)
    if kernel is None:
        names = [n for n, v in vars(module).items() if callable(v) and not n.startswith("_")
                 and getattr(v, "__module__", module_name) == module_name]
        close = difflib.get_close_matches(func, names, n=1)
        guess = f"; did you mean {close[0]}?" if close else f"; it defines {', '.join(names) or 'no functions'}"
        raise UsageError(argument, f"{path} has no function {func!r}{guess}")
    if isinstance(kernel, FusedKernel):
        return kernel
    if not inspect.isfunction(kernel):
        raise UsageError(argument, f"{path}::{func} is a {type(kernel).__name__}, not a function")
    return fused_kernel(kernel)


class _UserCodeError(Exception):
    """The user's kernel file raised while it was imported: its file:line and the exception."""

    def __init__(self, path: str, exc: BaseException):
        line = getattr(exc, "lineno", None) if isinstance(exc, SyntaxError) else None
        tb = exc.__traceback__
        while tb is not None:   # the innermost frame in the user's file
            if os.path.abspath(tb.tb_frame.f_code.co_filename) == os.path.abspath(path):
                line = tb.tb_lineno
            tb = tb.tb_next
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: importing it raised {type(exc).__name__}: {exc}")


# ---- subcommands ------------------------------------------------------------------------------
def _random_inputs(specs, sizes: dict[str, int], seed: int):
    """Random arrays for tensor specs (symbolic dims from --size) and values for scalars."""
    import numpy as np
    rng = np.random.default_rng(seed)
    out = []
    for sp in specs:
        if isinstance(sp, ScalarSpec):
            out.append(np.asarray(rng.uniform(-1, 1), sp.dtype.np))
            continue
        if not isinstance(sp, TensorSpec):   # a default constant of the function
            continue
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
    """Run the printed Ascend C on random inputs and compare with the numpy reference: exit
    status 1 when they disagree."""
    import numpy as np
    from .reference import run_module
    sizes = _sizes(args.size, specs, required=True)
    compiled = kernel.compile(*specs, target=args.target)
    inputs = _random_inputs(specs, sizes, args.seed)
    with warnings.catch_warnings():   # the verdict below says it, located nowhere near a launcher
        warnings.simplefilter("ignore", SaturationWarning)
        got = compiled.simulate(*inputs)
    got = got if isinstance(got, tuple) else (got,)
    want = run_module(compiled.graph, inputs)
    print(compiled.report())
    worst, bad, total, saturating = 0.0, 0, 0, False
    for g, w in zip(got, want):
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        with np.errstate(invalid="ignore"):
            diff = np.abs(g64 - w64)
        tol = _TOLERANCE.get(str(w.dtype.name) if w.dtype.name != "bfloat16" else "bfloat16", 0.0)
        same = np.isclose(g64, w64, rtol=tol, atol=tol, equal_nan=True)
        bad += int(same.size - np.count_nonzero(same))
        total += int(same.size)
        finite = diff[np.isfinite(diff)]
        worst = max(worst, float(finite.max()) if finite.size else 0.0)
        saturating |= w.dtype in (np.int8, np.uint8) and not same.all()
    print(f"max |simulated Ascend C - numpy reference| = {worst:g} over {len(got)} output(s)")
    if bad:
        note = (" (the NPU's casts to int8/uint8 saturate where numpy wraps: keep values "
                "in range or compute in int32)") if saturating else ""
        print(f"{args.prog}: error: the simulated Ascend C disagrees with the numpy reference in {bad} of "
              f"{total} element(s){note}", file=sys.stderr)
        return 1
    print(f"agrees with the numpy reference ({total} element(s))")
    return 0


def _explain(kernel, specs, args) -> int:
    sizes = _sizes(args.size, specs, required=False)
    compiled = kernel.compile(*specs, target=args.target)
    if sizes:   # tiles and GM bytes of the report for these sizes
        with compiled._lock:
            compiled._set_sizes(sizes)
    print(compiled.ir)
    print(compiled.report())
    return 0


def _compile(kernel, specs, args) -> int:
    sizes = _sizes(args.size, specs, required=False)
    _output_dir(args.output, marker=MANIFEST, overwrite=args.overwrite, what="a fusedsl project")
    compiled = kernel.compile(*specs, target=args.target)
    compiled.check_ascendc()
    try:
        path = compiled.save(args.output, layout=args.layout, overwrite=args.overwrite, sizes=sizes or None)
    except ProjectError as exc:
        raise UsageError("-o/--output", _one_line(exc)) from None
    print(f"wrote {path} ({len(compiled.kernels)} kernel(s) for {compiled.target.name})")
    return 0


def _cpu_run(args) -> int:
    from .backend_ascendc.asc import run as run_asc
    _input_file(args.source, "FILE.asc", (".asc", ".cpp", ".cc", ".cxx"), "a C++ source file")
    for d in args.include:
        if not os.path.isdir(d):
            raise UsageError("-I", f"{d} is not a directory; give an include folder")
    for d in args.define:
        if not d.partition("=")[0].isidentifier():
            raise UsageError("-D", f"{d!r} is not NAME or NAME=VALUE")
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError("--timeout", f"{args.timeout:g} is not a positive number of seconds")
    program_args = args.args[1:] if args.args[:1] == ["--"] else args.args
    sys.stdout.flush()
    try:
        proc = run_asc(args.source, program_args, target=args.target, include_dirs=args.include,
                       defines=args.define, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        print(f"{args.prog}: error: {args.source} ran longer than --timeout {args.timeout:g} s and was stopped",
              file=sys.stderr)
        return 124
    if proc.returncode < 0:   # killed by a signal: a crash, not a failed check
        sig = -proc.returncode
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        print(f"{args.prog}: error: {args.source} crashed: killed by {name} (signal {sig}); a kernel or the "
              "host code touched memory it does not own (build with -D and printf, or run it under gdb)",
              file=sys.stderr)
        return 128 + sig
    return proc.returncode


def _fuse(args) -> int:
    from .importers.fuse_model import MARKER, fuse_onnx
    _input_file(args.model, "MODEL", (".onnx",), "an ONNX model")
    _output_dir(args.output, marker=MARKER, overwrite=None, what="a `fusedsl fuse` output", writer="`fusedsl fuse`")
    try:
        rep = fuse_onnx(args.model, args.output, args.target, args.opt_level, args.progress or None)
    except Exception as exc:   # a malformed protobuf: one line, not protobuf's traceback
        if type(exc).__module__.startswith("google.protobuf"):
            raise UsageError("MODEL", f"{args.model} is not a valid ONNX model ({type(exc).__name__}: {exc})") \
                from None
        raise
    print(f"wrote {args.output}: {rep['kernels_fused']} kernel(s) (unfused {rep['kernels_unfused']}), "
          f"modelled {rep['model_time_us_unfused']:.2f} -> {rep['model_time_us_fused']:.2f} us; "
          f"see fusion_report.txt")
    return 0


# ---- cache -----------------------------------------------------------------------------------------
_KIND_TEXT = {"llvm": "LLVM object code (CPU executor)", "ascendc": "g++-built Ascend C CPU libraries",
              "pch": "precompiled CPU API headers", "temp": "unfinished writes"}


def _cache(args) -> int:
    root = cachedir.root()
    where = "FUSEDSL_CACHE_DIR" if os.environ.get("FUSEDSL_CACHE_DIR") else "default; FUSEDSL_CACHE_DIR moves it"
    # a limit that is not a size is said before anything else, as a compile says it at its first cache use
    limit = cachesize.max_bytes() if args.action != "clear" else 0
    if args.action != "info":
        _sweep_scratch()
    if not os.path.lexists(root):
        print(f"cache folder: {root} ({where}) does not exist yet: nothing is cached")
        return 0
    problem = cachedir.problem(root)
    if problem:
        if args.action != "info":
            raise UsageError("ACTION", f"the cache folder {root} {problem}; fusedsl does not use it and removes "
                                       "nothing in it (chmod 700 it, or set FUSEDSL_CACHE_DIR to a folder of yours)")
        print(f"cache folder: {root} ({where}) {problem}: fusedsl does not use it (each process caches in a "
              "private temporary folder instead)")
        return 0
    if args.action == "clear":
        done = cachesize.clear(root)
        print(f"removed {_count(done.removed)} ({cachesize.human(done.freed)}) from {root}{_by_kind(done.removed)}")
        _print_left(done.remaining)
        return 0
    limit_text = "no limit" if limit == 0 else cachesize.human(limit)
    if args.action == "prune":
        if limit == 0:
            print(f"no limit (FUSEDSL_CACHE_MAX_BYTES=0): nothing pruned in {root}")
            return 0
        done = cachesize.prune(root, limit)
        left = done.remaining
        print(f"limit {limit_text}: removed {_count(done.removed)} ({cachesize.human(done.freed)}) least recently "
              f"used{_by_kind(done.removed)}; left: {_count(left.entries)} ({cachesize.human(left.nbytes)}) in {root}")
        _print_left(left)
        return 0
    found = cachesize.scan(root)
    source = ("from FUSEDSL_CACHE_MAX_BYTES" if os.environ.get("FUSEDSL_CACHE_MAX_BYTES", "").strip()
              else "default; FUSEDSL_CACHE_MAX_BYTES sets it")
    print(f"cache folder: {root} ({where})")
    print(f"limit: {limit_text} ({source}, 0 for no limit)")
    for kind, text in _KIND_TEXT.items():
        mine = [e for e in found.entries if e.kind == kind]
        print(f"  {kind:<8} {text:<34} {_count(mine):>13} {cachesize.human(sum(e.nbytes for e in mine)):>11}")
    share = f" ({100 * found.nbytes / limit:.0f}% of the limit)" if limit else ""
    print(f"  {'total':<43} {_count(found.entries):>13} {cachesize.human(found.nbytes):>11}{share}")
    print(f"not written by fusedsl (left alone): {len(found.others)}")
    return 0


def _sweep_scratch() -> None:
    """Remove the scratch folders killed builds left in the temp folder (scratch.py says which)."""
    gone = scratch.sweep()
    if gone:
        where = os.path.dirname(gone[0])
        print(f"removed {len(gone)} scratch folder{'s' if len(gone) != 1 else ''} of killed builds from {where}")


def _count(entries) -> str:
    return f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'}"


def _by_kind(entries) -> str:
    kinds = {}
    for e in entries:
        kinds[e.kind] = kinds.get(e.kind, 0) + 1
    return "" if not kinds else " (" + ", ".join(f"{k} {n}" for k, n in kinds.items()) + ")"


def _print_left(found) -> None:
    temps = [e for e in found.entries if e.kind == "temp"]
    if temps:
        print(f"left alone: {len(temps)} unfinished write(s) younger than an hour (a build may be running)")
    if found.others:
        shown = ", ".join(found.others[:5]) + (f", ... ({len(found.others) - 5} more)" if len(found.others) > 5 else "")
        print(f"left alone, not written by fusedsl: {shown}")


# ---- the parser ---------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of `fusedsl` (docs/cli.md is generated from it)."""
    targets = list(TARGETS)
    parser = _Parser(prog="fusedsl", description="fusedsl: compile Python kernels to Ascend C and run them "
                                                 "on the CPU")
    parser.add_argument("--version", action="version", version=f"fusedsl {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    helps = {"compile": "compile a kernel and write its CANN project (-o DIR)",
             "explain": "print a kernel's fused IR and its report (kernels, reasons, tiles, GM bytes)",
             "simulate": "run the printed Ascend C on random inputs against the numpy reference"}
    for cmd, text in helps.items():
        p = sub.add_parser(cmd, help=text, description=text)
        p.add_argument("function", metavar=_FUNCTION_METAVAR,
                       help="the kernel: a Python file and a function in it (decorated with "
                            "@fs.fused_kernel or plain)")
        p.add_argument("--arg", action="append", default=[], metavar="NAME=SPEC",
                       help="a parameter by name: NAME=SHAPExDTYPE (dims are sizes or names, e.g. "
                            "b=Mx128xfloat32) or NAME=scalar:DTYPE; one per parameter without a default")
        p.add_argument("--target", default="ascend910b", choices=targets,
                       help="the chip (default: %(default)s)")
        if cmd == "compile":
            p.add_argument("-o", "--output", required=True, metavar="DIR",
                           help="project directory to write (new or empty)")
            p.add_argument("--layout", choices=("kernel", "op"), default="kernel",
                           help="kernel: a kernel-launch sample (run.sh -r cpu|sim|npu); op: an op project")
            p.add_argument("--size", action="append", default=[], metavar="NAME=N",
                           help="a symbolic dimension's size in the project's main.cpp and data scripts")
            p.add_argument("--overwrite", action="store_true",
                           help="replace a previous fusedsl project there (only fusedsl's own, unedited files)")
        else:
            p.add_argument("--size", action="append", default=[], metavar="NAME=N",
                           help="a symbolic dimension's size" + (" (each one is needed)" if cmd == "simulate"
                                                                  else " for the report's tiles and GM bytes"))
        if cmd == "simulate":
            p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default: 0)")
    sub.add_parser("include-dir", help="print the folder of the CPU Ascend C API headers",
                   description="print the folder of the CPU Ascend C API headers (for g++ -I)")
    text = ("build a CANN single-source .asc program (host main + <<<>>> launches) against the CPU "
            "Ascend C API and run it with its checks")
    cr = sub.add_parser("cpu-run", help=text, description=text + "; its exit status is the program's "
                        "(1 when a CPU check failed, 128+N when it was killed by signal N)")
    cr.add_argument("source", metavar="FILE.asc", help="the program's source (.asc or .cpp)")
    cr.add_argument("args", nargs="*", metavar="ARGS", help="arguments of the program (after --)")
    cr.add_argument("--target", default="ascend910b", choices=targets,
                    help="chip whose rules are checked (sets __NPU_ARCH__; default: %(default)s)")
    cr.add_argument("-I", dest="include", action="append", default=[], metavar="DIR", help="extra include folder")
    cr.add_argument("-D", dest="define", action="append", default=[], metavar="NAME[=VALUE]",
                    help="extra preprocessor definition")
    cr.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                    help="stop the program after this long (exit status 124)")
    text = "fuse an ONNX model: fused ONNX, one CANN project per kernel, a report"
    fz = sub.add_parser("fuse", help=text, description=text)
    fz.add_argument("model", metavar="MODEL", help="model.onnx (opset 13+, static shapes)")
    fz.add_argument("-o", "--output", required=True, metavar="DIR",
                    help="directory to write (new, empty, or a previous output)")
    fz.add_argument("--target", default="ascend910b", choices=targets, help="the chip (default: %(default)s)")
    fz.add_argument("--opt-level", type=int, choices=range(4), default=2, help="0..3 (default: %(default)s)")
    fz.add_argument("--progress", action="store_true", help="show a progress bar even when stderr is no terminal")
    text = "inspect, clear or prune the on-disk compile caches (LLVM object code, g++-built libraries)"
    ca = sub.add_parser("cache", help=text, description=text + ". They live in FUSEDSL_CACHE_DIR (default "
                        "~/.cache/fusedsl) and are kept under FUSEDSL_CACHE_MAX_BYTES (default 2GiB, 0 = no "
                        "limit) by evicting the least recently used entries. Only files fusedsl wrote are ever "
                        "removed; symlinks are not followed.")
    ca.add_argument("action", choices=("info", "clear", "prune"), metavar="ACTION",
                    help="info: the folder, entries and bytes per cache, the limit; clear: remove every entry; "
                         "prune: if over the limit, remove the least recently used entries down to 90%% of it")
    return parser


def _one_line(exc: FusedslError) -> str:
    """A library error as one line for the command line (Python spellings become flags)."""
    text = exc.message + (f"; {exc.hint}" if exc.hint else "")
    return text.replace("overwrite=True", "--overwrite")


def _render(exc: FusedslError) -> str:
    """A library error for the terminal: located at the user's file when it is, else one line
    (an error located in the `fusedsl` launcher would point at nothing the user wrote)."""
    loc = exc.loc
    if loc is not None and loc.line > 0 and os.path.isfile(loc.file) and not _is_launcher(loc.file):
        return str(exc)
    return _one_line(exc)


def _is_launcher(path: str) -> bool:
    return os.path.abspath(path) == os.path.abspath(sys.argv[0]) or os.path.basename(path) in ("fusedsl", "runpy.py")


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.prog = f"fusedsl {args.command}"
    try:
        if args.command == "include-dir":
            from .backend_ascendc.cpu import include_dir
            print(include_dir())
            return 0
        if args.command == "cpu-run":
            return _cpu_run(args)
        if args.command == "fuse":
            return _fuse(args)
        if args.command == "cache":
            return _cache(args)
        kernel = _load(args.function)
        specs = _bind_args(kernel, args.arg, args.function)
        if args.command == "simulate":
            return _simulate(kernel, specs, args)
        if args.command == "explain":
            return _explain(kernel, specs, args)
        return _compile(kernel, specs, args)
    except UsageError as exc:
        print(f"{args.prog}: error: {exc}", file=sys.stderr)
        return 2
    except _UserCodeError as exc:
        print(f"{args.prog}: error: {exc}", file=sys.stderr)
        return 1
    except (TargetError, ProjectError, CacheLimitError) as exc:
        print(f"{args.prog}: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except FusedslError as exc:
        print(f"{args.prog}: error: {_render(exc)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

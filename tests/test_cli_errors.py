"""Every CLI subcommand's failure paths (issue 22, issue 18 items 4, 9, 10).

A usage mistake (a missing file, a wrong file type, a bad --arg/--size/--target, an output that
cannot be written or already exists) prints ONE line naming the argument and what to do, exits
with status 2 and shows no traceback.  An error in the user's kernel exits 1 and is located in
the user's file; a simulated kernel that disagrees with the reference exits 1.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from fusedsl.cli import main

KERNELS = os.path.join(os.path.dirname(__file__), "user_code", "cli_kernels.py")
REF = f"{KERNELS}::abs_add_relu"
GOOD_ARGS = ["--arg", "a=128xfloat32", "--arg", "b=Mx128xfloat32"]


def cli(capsys, *argv):
    """(exit status, stdout, stderr) of `fusedsl ARGV` run in this process."""
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:   # argparse's own errors (and --help, --version)
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def usage_error(capsys, *argv, names: str, says: str):
    """The run is a one-line usage error naming `names` and saying `says` (a substring)."""
    code, out, err = cli(capsys, *argv)
    assert code == 2, (code, out, err)
    line = err.strip()
    assert "\n" not in line, err
    assert "Traceback" not in err
    assert line.startswith(f"fusedsl {argv[0]}: error: "), line
    assert names in line and says in line, line
    return line


@pytest.fixture
def files(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not python")
    model = tmp_path / "kernels.onnx"
    model.write_bytes(b"\x08\x07garbage that is no protobuf message\xff\xff\xff")
    asc = tmp_path / "prog.py"
    asc.write_text("print('not C++')\n")
    return {"dir": tmp_path, "text": text, "onnx": model, "py": asc}


# ---- the top level ------------------------------------------------------------------------------
def test_version_and_help_show_the_function_form_and_target_choices(capsys):
    code, out, _ = cli(capsys, "--version")
    assert code == 0 and out.startswith("fusedsl ") and out.split()[1][0].isdigit()
    for cmd in ("compile", "explain", "simulate"):
        code, out, _ = cli(capsys, cmd, "--help")
        assert code == 0 and "FILE.py::FUNCTION" in out and "NAME=SPEC" in out
        assert "{ascend910b,ascend910b4,ascend310p,ascend910}" in out
    code, out, _ = cli(capsys, "cpu-run", "--help")
    assert code == 0 and "--timeout SECONDS" in out and "ascend310p" in out
    code, out, _ = cli(capsys, "fuse", "--help")
    assert code == 0 and "ascend310p" in out


def test_unknown_command_and_stray_arguments(capsys):
    code, _, err = cli(capsys, "compil")
    assert code == 2 and "invalid choice: 'compil'" in err and err.count("\n") == 1
    code, _, err = cli(capsys, "include-dir", "extra")
    assert code == 2 and err == "fusedsl: error: unrecognized arguments: extra (see fusedsl --help)\n"


# ---- compile / explain / simulate: FILE.py::FUNCTION ----------------------------------------------
@pytest.mark.parametrize("cmd", ["compile", "explain", "simulate"])
def test_function_reference_mistakes(capsys, files, cmd):
    out = ["-o", files["dir"] / "out"] if cmd == "compile" else []
    usage_error(capsys, cmd, "missing.py::f", *GOOD_ARGS, *out, names="FILE.py::FUNCTION",
                says="no such file: missing.py")
    usage_error(capsys, cmd, KERNELS, *GOOD_ARGS, *out, names="FILE.py::FUNCTION", says="expected FILE.py::FUNCTION")
    usage_error(capsys, cmd, f"{files['text']}::f", *GOOD_ARGS, *out, names="FILE.py::FUNCTION",
                says="is not a Python file")
    usage_error(capsys, cmd, f"{files['dir']}::f", *GOOD_ARGS, *out, names="FILE.py::FUNCTION",
                says="is a directory")
    usage_error(capsys, cmd, f"{KERNELS}::abs_relu", *GOOD_ARGS, *out, names="FILE.py::FUNCTION",
                says="has no function 'abs_relu'; did you mean abs_add_relu?")
    usage_error(capsys, cmd, f"{KERNELS}::fs", *GOOD_ARGS, *out, names="FILE.py::FUNCTION",
                says="is a module, not a function")


@pytest.mark.parametrize("cmd", ["compile", "explain", "simulate"])
def test_arg_mistakes_name_the_argument(capsys, tmp_path, cmd):
    out = ["-o", tmp_path / "out"] if cmd == "compile" else []
    size = ["--size", "M=4"] if cmd == "simulate" else []

    def bad(*args, says):
        usage_error(capsys, cmd, REF, *args, *out, *size, names="argument --arg", says=says)
    bad("--arg", "a=128xfloat64", "--arg", "b=Mx128xfloat32", says="dtype float64 is not supported; use float32")
    bad("--arg", "a=128", "--arg", "b=Mx128xfloat32", says="a=128 has no dtype: write SHAPExDTYPE, e.g. a=128xfloat32")
    bad("--arg", "a=128xflaot32", "--arg", "b=Mx128xfloat32", says="did you mean float32?")
    bad("--arg", "a=-3xfloat32", "--arg", "b=Mx128xfloat32", says="dimension '-3' is neither a size nor a name")
    bad("--arg", "a128xfloat32", "--arg", "b=Mx128xfloat32", says="is not NAME=SHAPExDTYPE")
    bad("--arg", "a=128xfloat32", says="needs b: add --arg b=SHAPExDTYPE")
    bad(says="needs a, b: add --arg a=SHAPExDTYPE --arg b=SHAPExDTYPE")
    bad(*GOOD_ARGS, "--arg", "c=4xfloat32", says="has no parameter 'c'; its parameters are a, b")
    bad("--arg", "x=4xfloat32", "--arg", "b=4xfloat32", says="has no parameter 'x'")
    bad("--arg", "a=4xfloat32", "--arg", "a=4xfloat32", "--arg", "b=4xfloat32", says="a is given twice")
    bad("--arg", "a=scalar:float64", "--arg", "b=4xfloat32", says="dtype float64 is not supported")


def test_args_bind_by_name_not_by_position(capsys):
    # b first: bound to b by its name (the shapes would not broadcast the other way round)
    code, out, err = cli(capsys, "explain", REF, "--arg", "b=Mx128xfloat32", "--arg", "a=128xfloat32")
    assert code == 0, err
    assert "%a: f32[128], %b: f32[M,128]" in out


@pytest.mark.parametrize("cmd", ["compile", "explain", "simulate"])
def test_size_and_target_mistakes(capsys, tmp_path, cmd):
    out = ["-o", tmp_path / "out"] if cmd == "compile" else []
    usage_error(capsys, cmd, REF, *GOOD_ARGS, *out, "--size", "M=abc", names="argument --size", says="is not NAME=N")
    usage_error(capsys, cmd, REF, *GOOD_ARGS, *out, "--size", "M=0", names="argument --size", says="is not NAME=N")
    usage_error(capsys, cmd, REF, *GOOD_ARGS, *out, "--size", "N=4", names="argument --size",
                says="N is not a dimension of any --arg; the symbolic dimensions are: M")
    usage_error(capsys, cmd, REF, *GOOD_ARGS, *out, "--size", "M=4", "--size", "M=5", names="argument --size",
                says="M is given twice")
    usage_error(capsys, cmd, REF, *GOOD_ARGS, *out, "--target", "foo", names="argument --target",
                says="invalid choice: 'foo'")
    if cmd == "simulate":
        usage_error(capsys, cmd, REF, *GOOD_ARGS, names="argument --size", says="give the size of M, e.g. --size M=N")
        usage_error(capsys, cmd, REF, *GOOD_ARGS, "--size", "M=4", "--seed", "x", names="argument --seed",
                    says="invalid int value")


def test_explain_size_gives_the_report_its_tiles(capsys):
    code, out, _ = cli(capsys, "explain", REF, *GOOD_ARGS)
    assert code == 0 and "GM bytes: minimum -" in out
    code, out, _ = cli(capsys, "explain", REF, *GOOD_ARGS, "--size", "M=300")
    assert code == 0 and "GM bytes: minimum 307712" in out   # 128*4 + 2 * 300*128*4


def test_compile_output_mistakes(capsys, tmp_path):
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    usage_error(capsys, "compile", REF, *GOOD_ARGS, "-o", a_file, names="argument -o/--output",
                says="exists and is not a directory")
    usage_error(capsys, "compile", REF, *GOOD_ARGS, "-o", a_file / "sub", names="argument -o/--output",
                says="is not a directory you can write to")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    usage_error(capsys, "compile", REF, *GOOD_ARGS, "-o", foreign, names="argument -o/--output",
                says="is not empty and was not written by fusedsl")
    assert (foreign / "notes.txt").read_text() == "keep me"
    usage_error(capsys, "compile", REF, *GOOD_ARGS, "-o", "/proc/nope", names="argument -o/--output",
                says="/proc/nope")
    usage_error(capsys, "compile", REF, *GOOD_ARGS, "--layout", "cmake", "-o", tmp_path / "p",
                names="argument --layout", says="invalid choice")
    code, _, err = cli(capsys, "compile", REF, *GOOD_ARGS, "-o", tmp_path / "proj")
    assert code == 0, err
    line = usage_error(capsys, "compile", REF, *GOOD_ARGS, "-o", tmp_path / "proj", names="argument -o/--output",
                       says="already holds a fusedsl project; pass --overwrite")
    assert "overwrite=True" not in line
    main_cpp = tmp_path / "proj" / "main.cpp"
    main_cpp.write_text(main_cpp.read_text() + "// my edit\n")
    line = usage_error(capsys, "compile", REF, *GOOD_ARGS, "-o", tmp_path / "proj", "--overwrite",
                       names="argument -o/--output", says="main.cpp (edited since fusedsl wrote it)")
    assert "--overwrite would replace" in line and "overwrite=True" not in line


# ---- errors in the user's code exit 1, located in the user's file ---------------------------------
def test_user_code_errors_are_located_in_the_users_file(capsys, tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("import fusedsl as fs\n\nraise RuntimeError('oops')\n")
    code, _, err = cli(capsys, "explain", f"{broken}::k", "--arg", "x=4xfloat32")
    assert code == 1 and f"{broken}:3: importing it raised RuntimeError: oops" in err and "Traceback" not in err
    shapes = tmp_path / "shapes.py"
    shapes.write_text("import fusedsl as fs\n\ndef k(x, y):\n    return x + y\n")
    code, _, err = cli(capsys, "explain", f"{shapes}::k", "--arg", "x=4xfloat32", "--arg", "y=5xfloat32")
    assert code == 1 and f"{shapes}:4:" in err and "Traceback" not in err
    assert "fusedsl/bin" not in err and "sys.exit(main())" not in err


def test_launcher_prints_no_traceback_and_no_launcher_location(tmp_path):
    # through the real entry point (python -m fusedsl): nothing is located in the launcher
    for argv in (["compile", REF, "--arg", "a=4xfloat64", "--arg", "b=4xfloat32", "-o", str(tmp_path / "y")],
                 ["fuse", "missing.onnx", "-o", str(tmp_path / "o")],
                 ["compile", REF, *GOOD_ARGS, "-o", "/proc/nope"]):
        r = subprocess.run([sys.executable, "-m", "fusedsl", *argv], capture_output=True, text=True, timeout=120)
        assert r.returncode == 2, r.stderr
        assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr and "sys.exit" not in r.stderr, r.stderr


# ---- simulate's verdict -------------------------------------------------------------------------
def test_simulate_exits_1_when_the_printed_kernel_disagrees(capsys, tmp_path):
    # a float -> int8 cast out of range: the NPU's Cast saturates where numpy wraps
    k = tmp_path / "int8_kernels.py"
    k.write_text("import fusedsl as fs\n\ndef wraps(a, b):\n    return fs.relu((a.astype('float32') * b * 1000.0).astype('int8'))\n")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # the verdict says it; no warning located in the launcher
        code, out, err = cli(capsys, "simulate", f"{k}::wraps", "--arg", "a=2048xint8", "--arg", "b=2048xint8")
    assert code == 1, (out, err)
    assert "disagrees with the numpy reference in" in err and "saturate" in err and "Traceback" not in err


def test_simulate_a_300_character_kernel_name(capsys, tmp_path):
    name = "k" * 300
    k = tmp_path / "long_name.py"
    k.write_text(f"import fusedsl as fs\n\ndef {name}(x):\n    return fs.relu(x)\n")
    code, out, err = cli(capsys, "simulate", f"{k}::{name}", "--arg", "x=64xfloat32")
    assert code == 0, err
    assert "agrees with the numpy reference (64 element(s))" in out


# ---- cpu-run -------------------------------------------------------------------------------------
def test_cpu_run_usage_mistakes(capsys, files, tmp_path):
    usage_error(capsys, "cpu-run", "missing.asc", names="argument FILE.asc", says="no such file: missing.asc")
    usage_error(capsys, "cpu-run", files["dir"], names="argument FILE.asc", says="is a directory")
    usage_error(capsys, "cpu-run", files["py"], names="argument FILE.asc", says="is not a C++ source file")
    asc = tmp_path / "x.asc"
    asc.write_text("int main() { return 0; }\n")
    usage_error(capsys, "cpu-run", asc, "--target", "foo", names="argument --target", says="invalid choice: 'foo'")
    usage_error(capsys, "cpu-run", asc, "-I", tmp_path / "nope", names="argument -I", says="is not a directory")
    usage_error(capsys, "cpu-run", asc, "-D", "1X=2", names="argument -D", says="is not NAME or NAME=VALUE")
    usage_error(capsys, "cpu-run", asc, "--timeout", "-1", names="argument --timeout", says="not a positive number")
    usage_error(capsys, "cpu-run", asc, "--timeout", "soon", names="argument --timeout", says="invalid float value")


def test_cpu_run_reports_a_crash_a_timeout_and_non_utf8_compiler_output(capsys, tmp_path):
    crash = tmp_path / "crash.asc"
    crash.write_text("#include <csignal>\nint main() { std::raise(SIGSEGV); return 0; }\n")
    code, _, err = cli(capsys, "cpu-run", crash)
    assert code == 128 + 11 and "crashed: killed by SIGSEGV (signal 11)" in err, err
    slow = tmp_path / "slow.asc"
    slow.write_text("#include <unistd.h>\nint main() { sleep(30); return 0; }\n")
    code, _, err = cli(capsys, "cpu-run", slow, "--timeout", "0.5")
    assert code == 124 and "ran longer than --timeout 0.5 s and was stopped" in err, err
    latin1 = tmp_path / "latin1.asc"
    latin1.write_bytes(b'#error "caf\xe9 \xff"\nint main() { return 0; }\n')
    code, _, err = cli(capsys, "cpu-run", latin1)
    assert code == 1 and "g++ failed to compile" in err and "caf" in err and "Traceback" not in err


# ---- fuse ----------------------------------------------------------------------------------------
def test_fuse_usage_mistakes(capsys, files, tmp_path):
    pytest.importorskip("onnx")
    usage_error(capsys, "fuse", "missing.onnx", "-o", tmp_path / "o", names="argument MODEL",
                says="no such file: missing.onnx")
    usage_error(capsys, "fuse", KERNELS, "-o", tmp_path / "o", names="argument MODEL", says="is not an ONNX model")
    usage_error(capsys, "fuse", files["dir"], "-o", tmp_path / "o", names="argument MODEL", says="is a directory")
    line = usage_error(capsys, "fuse", files["onnx"], "-o", tmp_path / "o", names="MODEL", says="kernels.onnx")
    assert "valid ONNX model" in line or "ONNX" in line
    usage_error(capsys, "fuse", files["onnx"], "-o", files["text"], names="argument -o/--output",
                says="exists and is not a directory")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("keep")
    usage_error(capsys, "fuse", files["onnx"], "-o", foreign, names="argument -o/--output",
                says="was not written by `fusedsl fuse`")
    usage_error(capsys, "fuse", files["onnx"], "-o", tmp_path / "o", "--target", "foo", names="argument --target",
                says="invalid choice")
    usage_error(capsys, "fuse", files["onnx"], "-o", tmp_path / "o", "--opt-level", "7", names="argument --opt-level",
                says="invalid choice")


def test_cache_usage_mistakes(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("FUSEDSL_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir(mode=0o700)
    usage_error(capsys, "cache", names="ACTION", says="the following arguments are required")
    usage_error(capsys, "cache", "purge", names="argument ACTION", says="invalid choice: 'purge'")
    monkeypatch.setenv("FUSEDSL_CACHE_MAX_BYTES", "2 gigs")
    for action in ("info", "prune"):
        line = usage_error(capsys, "cache", action, names="FUSEDSL_CACHE_MAX_BYTES='2 gigs'", says="is not a size")
        assert line.endswith("e.g. 2GiB, 500M, 1.5G, 1073741824; to 0 for no limit; or unset it for the default 2GiB")
    assert cli(capsys, "cache", "clear")[0] == 0          # clearing needs no limit
    monkeypatch.delenv("FUSEDSL_CACHE_MAX_BYTES")
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    monkeypatch.setenv("FUSEDSL_CACHE_DIR", str(shared))
    for action in ("clear", "prune"):
        line = usage_error(capsys, "cache", action, names="argument ACTION", says=f"the cache folder {shared} is "
                           "writable by group or others (mode 777); fusedsl does not use it and removes nothing in it")
        assert line.endswith("(chmod 700 it, or set FUSEDSL_CACHE_DIR to a folder of yours)")
    code, out, err = cli(capsys, "cache", "info")
    assert code == 0 and err == "" and out == (f"cache folder: {shared} (FUSEDSL_CACHE_DIR) is writable by group or "
                                               "others (mode 777): fusedsl does not use it (each process caches in a "
                                               "private temporary folder instead)\n")


def test_every_subcommand_is_covered_here():
    # a new subcommand needs its failure paths in this file
    import argparse
    from fusedsl.cli import build_parser
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert set(sub.choices) == {"compile", "explain", "simulate", "include-dir", "cpu-run", "fuse", "cache"}
    text = textwrap.dedent(open(__file__, encoding="utf-8").read())
    for name in sub.choices:
        assert f'"{name}"' in text, name

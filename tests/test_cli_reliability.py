"""Raw exceptions that used to escape instead of a FusedslError (issue 18 item 9, the parts
around the command line and its builds): FUSEDSL_DUMP_IR naming a file, a linker that removes its
output, a full cache disk, g++ output that is not UTF-8."""
from __future__ import annotations

import errno
import os
import subprocess

import numpy as np
import pytest

import fusedsl as fs
from fusedsl.backend_ascendc import cpu_runner


def _line_of(mark: str) -> int:
    with open(__file__, encoding="utf-8") as f:
        return next(i for i, text in enumerate(f, 1) if f"# LINE-MARK {mark}" in text)


def test_dump_ir_naming_an_existing_file_is_an_argument_error(tmp_path, monkeypatch):
    target = tmp_path / "dump.txt"
    target.write_text("mine")
    monkeypatch.setenv("FUSEDSL_DUMP_IR", str(target))
    k = fs.fused_kernel(lambda x: fs.relu(x) + 1)
    with pytest.raises(fs.ArgumentError) as info:
        k(np.ones(4, np.float32))   # LINE-MARK dump
    msg = str(info.value)
    assert msg.startswith(f"{__file__}:{_line_of('dump')}: FUSEDSL_DUMP_IR={str(target)!r}: cannot write"), msg
    assert "point FUSEDSL_DUMP_IR at a folder" in msg
    assert target.read_text() == "mine"
    # a folder works (and is created)
    monkeypatch.setenv("FUSEDSL_DUMP_IR", str(tmp_path / "dumps"))
    fs.fused_kernel(lambda x: fs.relu(x) + 2)(np.ones(4, np.float32))
    assert "00-input.ir" in os.listdir(tmp_path / "dumps")


def _fake_gxx(returncode, stderr, remove_output):
    def run(cmd, **kwargs):
        out = cmd[cmd.index("-o") + 1]
        if remove_output and os.path.exists(out):
            os.unlink(out)   # what ld does when it fails
        return subprocess.CompletedProcess(cmd, returncode, "", stderr)
    return run


def test_a_linker_failure_shows_the_linker_message(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSEDSL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cpu_runner.subprocess, "run",
                        _fake_gxx(1, "/usr/bin/ld: final link failed: No space left on device\n", True))
    with pytest.raises(fs.AscendCCompileError, match="final link failed: No space left on device"):
        cpu_runner._compile("int x;", ["-shared"], str(tmp_path / "k.so"), "kernel")


def test_a_full_cache_disk_says_so(tmp_path, monkeypatch):
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp_path))
    monkeypatch.setattr(cpu_runner.tempfile, "mkstemp", full)
    with pytest.raises(fs.FusedslError) as info:
        cpu_runner._compile("int x;", ["-shared"], str(tmp_path / "k.so"), "kernel")
    assert "No space left on device" in str(info.value) and "FUSEDSL_CACHE_DIR" in str(info.value)


def test_a_300_character_kernel_name_builds(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSEDSL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cpu_runner.subprocess, "run", _fake_gxx(1, "error: nothing\n", False))
    # the name only names temp files: no OSError (File name too long), the compiler's message instead
    with pytest.raises(fs.AscendCCompileError, match=r"g\+\+ failed to compile k{64}\.cpp:"):
        cpu_runner._compile("int x;", ["-shared"], str(tmp_path / "k.so"), "k" * 300)


def test_non_utf8_compiler_output_is_shown_not_a_decode_error(tmp_path, monkeypatch):
    def run(cmd, **kwargs):
        assert kwargs.get("errors") == "replace"   # what keeps text=True from raising UnicodeDecodeError
        raw = b"error: caf\xe9 \xff\n"
        return subprocess.CompletedProcess(cmd, 1, "", raw.decode("utf-8", errors=kwargs["errors"]))
    monkeypatch.setattr(cpu_runner.subprocess, "run", run)
    with pytest.raises(fs.AscendCCompileError, match="caf"):
        cpu_runner._compile("int x;", ["-shared"], str(tmp_path / "k.so"), "kernel")

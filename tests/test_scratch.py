"""Scratch folders of builds (fusedsl/scratch.py): one a killed build left behind is removed by a
later build or `fusedsl cache prune`, and nothing the sweep cannot prove to be a dead process's
folder of fusedsl's is touched."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from fusedsl import scratch
from fusedsl.backend_ascendc import cpu_runner
from fusedsl.cli import main
from fusedsl.errors import AscendCCompileError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OLD = time.time() - scratch.STALE_S - 60   # a record this old is past the wait

KILLED_BUILD = r'''
import sys
from fusedsl.backend_ascendc import cpu_runner
cpu_runner.build("int main() { return 0; }\n", name="killed")
'''


@pytest.fixture
def tmp(tmp_path, monkeypatch):
    """A temp folder of the test's own (the system one may hold other runs' folders)."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.setattr(scratch, "_last_sweep", None)
    return str(folder)


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def scratch_folder(tmp: str, pid: int, *, record: str | None = "ok", age: float = OLD, name: str = "") -> str:
    """A folder laid out as scratch.folder makes one (with `record` = "ok" its own record)."""
    path = os.path.join(tmp, name or f"fusedsl-build-{pid}-abcd{pid % 10000:04d}")
    os.mkdir(path, 0o700)
    with open(os.path.join(path, "kernel.cpp"), "w") as f:
        f.write("int x;\n")
    if record is not None:
        text = f"fusedsl scratch {pid} {scratch._start_time(pid)}\n" if record == "ok" else record
        rec = os.path.join(path, scratch.RECORD)
        with open(rec, "w") as f:
            f.write(text)
        os.utime(rec, (age, age))
    return path


def test_a_killed_build_leaves_its_folder_and_a_later_build_removes_it(tmp, tmp_path, private_cache_dir):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "g++").write_text("#!/bin/sh\nsleep 60\n")   # a long build, killed while it runs
    (bin_dir / "g++").chmod(0o755)
    env = {**os.environ, "TMPDIR": tmp, "PYTHONPATH": ROOT, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    proc = subprocess.Popen([sys.executable, "-c", KILLED_BUILD], env=env, start_new_session=True)
    deadline = time.time() + 60
    while not any(n.startswith(f"fusedsl-build-{proc.pid}-") for n in os.listdir(tmp)):
        assert proc.poll() is None and time.time() < deadline, "the build never made its folder"
        time.sleep(0.05)
    time.sleep(0.3)   # the source written, g++ started
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    [left] = os.listdir(tmp)
    folder = os.path.join(tmp, left)
    assert sorted(os.listdir(folder)) == [scratch.RECORD, "killed.cpp"]
    assert scratch.sweep() == []          # younger than STALE_S: it could be a build still running
    os.utime(os.path.join(folder, scratch.RECORD), (OLD, OLD))
    with pytest.raises(AscendCCompileError, match="g\\+\\+ failed to compile broken.cpp:\nbroken.cpp:1:"):
        cpu_runner.build("int x = ;\n", name="broken")   # a later build sweeps first
    assert os.listdir(tmp) == []


def test_the_sweep_removes_only_stale_folders_it_can_prove_are_a_dead_process_s(tmp, tmp_path):
    gone = dead_pid()
    me = os.getpid()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not fusedsl's")
    stale = scratch_folder(tmp, gone)
    reused = scratch_folder(tmp, me, record=f"fusedsl scratch {me} 1\n", name=f"fusedsl-pch-{me}-reused00")
    with_link = scratch_folder(tmp, gone, name=f"fusedsl-asc-{gone}-withlink")
    os.symlink(outside / "keep.txt", os.path.join(with_link, "program"))
    kept = {
        "young": scratch_folder(tmp, gone, age=time.time(), name=f"fusedsl-build-{gone}-young000"),
        "running": scratch_folder(tmp, me),
        "no record": scratch_folder(tmp, gone, record=None, name=f"fusedsl-build-{gone}-norecord"),
        "other pid": scratch_folder(tmp, gone, record=f"fusedsl scratch {me} -\n", name=f"fusedsl-build-{gone}-otherpid"),
        "bad record": scratch_folder(tmp, gone, record="hello\n", name=f"fusedsl-build-{gone}-badrecor"),
        "old name": scratch_folder(tmp, gone, name="fusedsl-build-abcdefgh"),
        "other prefix": scratch_folder(tmp, gone, name=f"fusedsl-bench-{gone}-abcdefgh"),
        "sub-folder": scratch_folder(tmp, gone, name=f"fusedsl-build-{gone}-subfoldr"),
    }
    os.mkdir(os.path.join(kept["sub-folder"], "inner"))
    target = scratch_folder(str(outside), gone)
    link = os.path.join(tmp, f"fusedsl-build-{gone}-symlink0")
    os.symlink(target, link)
    contents = {name: sorted(os.listdir(p)) for name, p in kept.items()}
    assert sorted(scratch.sweep()) == sorted([stale, reused, with_link])
    assert {name: sorted(os.listdir(p)) for name, p in kept.items()} == contents
    assert os.path.islink(link) and sorted(os.listdir(target)) == [scratch.RECORD, "kernel.cpp"]
    assert (outside / "keep.txt").read_text() == "not fusedsl's"


def test_a_scratch_folder_records_its_process_and_goes_when_done(tmp):
    with scratch.folder("build") as path:
        name = os.path.basename(path)
        assert name.startswith(f"fusedsl-build-{os.getpid()}-") and scratch._NAME.fullmatch(name)
        with open(os.path.join(path, scratch.RECORD)) as f:
            assert f.read().split() == ["fusedsl", "scratch", str(os.getpid()), scratch._start_time(os.getpid())]
        os.utime(os.path.join(path, scratch.RECORD), (OLD, OLD))
        assert scratch.sweep() == []   # its process runs
    assert os.listdir(tmp) == []


def test_cache_prune_and_clear_sweep_the_temp_folder(tmp, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FUSEDSL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("FUSEDSL_CACHE_MAX_BYTES", "1M")
    for action in ("prune", "clear"):
        scratch_folder(tmp, dead_pid())
        assert main(["cache", action]) == 0
        assert capsys.readouterr().out.splitlines()[0] == f"removed 1 scratch folder of killed builds from {tmp}"
        assert os.listdir(tmp) == []

"""fusedsl's scratch folders in the system temp folder, and the removal of those a killed process left.

A g++ build of the Ascend C CPU mode writes its source into a scratch folder (so does the
precompiled header's build and `fusedsl cpu-run`'s program); a process killed during the build
never removes it.  Each scratch folder therefore says whose it is:

    <tempdir>/fusedsl-<kind>-<pid>-<8 random>/.fusedsl-scratch = "fusedsl scratch <pid> <start>"

made by mkdtemp (0700, ours), the record written first; <start> is the process's start time
(field 22 of /proc/<pid>/stat, "-" without /proc), so a pid used again by a later process is
told apart.  A folder is stale when it is ours (a real folder, not a symlink, owned by this
user), named so, holds that record naming the pid of its name, the record is older than
STALE_S, and that process has ended.  A stale folder holding only files (regular files and
symlinks, which are unlinked, never followed) is removed; anything else -- a folder without the
record (an older fusedsl's, or not fusedsl's), a sub-folder inside, another name -- is left alone.

A process sweeps the temp folder when it makes its first scratch folder and then at most once
per STALE_S; `fusedsl cache prune` and `clear` sweep too.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
import time
from typing import Iterator

KINDS = ("build", "pch", "asc")
RECORD = ".fusedsl-scratch"
STALE_S = 600            # no build of ours runs this long; a younger folder may be another's build
_NAME = re.compile(r"fusedsl-(?:build|pch|asc)-([0-9]+)-[a-z0-9_]{8}")
_last_sweep: float | None = None   # time.monotonic() of this process's last sweep


@contextlib.contextmanager
def folder(kind: str) -> Iterator[str]:
    """A fresh scratch folder of this process, removed on the way out (a later sweep removes it
    if this process is killed first)."""
    assert kind in KINDS, kind
    _maybe_sweep()
    pid = os.getpid()
    path = tempfile.mkdtemp(prefix=f"fusedsl-{kind}-{pid}-")
    try:
        with open(os.path.join(path, RECORD), "w", encoding="ascii") as f:
            f.write(f"fusedsl scratch {pid} {_start_time(pid)}\n")
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def sweep(tempdir: str | None = None) -> list[str]:
    """Remove the stale scratch folders of `tempdir` (default: the system temp folder); their paths."""
    tempdir = tempdir or tempfile.gettempdir()
    removed = []
    try:
        names = os.listdir(tempdir)
    except OSError:
        return removed
    for name in names:
        m = _NAME.fullmatch(name)
        if m is None:
            continue
        path = os.path.join(tempdir, name)
        if _stale(path, int(m.group(1))) and _remove(path):
            removed.append(path)
    return removed


def _maybe_sweep() -> None:
    global _last_sweep
    now = time.monotonic()
    if _last_sweep is not None and now - _last_sweep < STALE_S:
        return
    _last_sweep = now
    sweep()


def _stale(path: str, pid: int) -> bool:
    try:
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode) or (hasattr(os, "geteuid") and st.st_uid != os.geteuid()):
            return False
        record = os.path.join(path, RECORD)
        rst = os.lstat(record)
        if not stat.S_ISREG(rst.st_mode) or time.time() - rst.st_mtime < STALE_S:
            return False
        with open(record, encoding="ascii") as f:
            words = f.read(200).split()
    except (OSError, UnicodeDecodeError):
        return False
    if len(words) != 4 or words[:2] != ["fusedsl", "scratch"] or words[2] != str(pid):
        return False
    return not _running(pid, words[3])


def _running(pid: int, start: str) -> bool:
    """Whether the process `pid` that started at `start` still runs (when unsure: yes)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:   # another user's process has the pid: compare start times below
        pass
    now = _start_time(pid)
    return start == "-" or now == "-" or now == start


def _start_time(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            text = f.read()
    except OSError:
        return "-"
    fields = text[text.rfind(")") + 2:].split()   # the command name may hold spaces and parentheses
    return fields[19] if len(fields) > 19 and fields[19].isdigit() else "-"


def _remove(path: str) -> bool:
    """Unlink the folder's files (the record last) and the folder; nothing when it holds a folder."""
    try:
        names = os.listdir(path)
        kinds = [os.lstat(os.path.join(path, n)).st_mode for n in names]
    except OSError:
        return False
    if not all(stat.S_ISREG(mode) or stat.S_ISLNK(mode) for mode in kinds):
        return False
    try:
        for name in sorted(names, key=lambda n: n == RECORD):
            os.unlink(os.path.join(path, name))
        os.rmdir(path)
    except OSError:
        return False
    return True

"""The on-disk caches' directories: private to this user, or not used at all.

Both caches hold code this process will run (g++-built libraries of the Ascend C CPU mode,
LLVM object code), so a directory another local user can write is a way to make us run their
code.  Every cache directory fusedsl creates is mode 0700 whatever the umask; an existing one
that is a symlink to someone else's directory, owned by another user, or writable by group
or others is refused with a warning, and this process uses a private temporary cache
instead (so is a directory that cannot be created at all), removed when the process exits.  Each cached file is still
checksummed by the cache that wrote it: this module only decides where the files live.
"""
from __future__ import annotations

import atexit
import os
import shutil
import stat
import tempfile
import threading
import warnings

from . import cachesize


class CacheDirWarning(UserWarning):
    """The configured cache directory is unsafe or unusable; a private temp cache is used."""


_fallback: str | None = None
_lock = threading.Lock()
_warned: set = set()


def root() -> str:
    return os.environ.get("FUSEDSL_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "fusedsl")


def problem(path: str) -> str | None:
    """Why `path` may not hold cached code (None: a directory of ours that only we can write)."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return f"cannot be used ({exc.strerror})"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        return f"is owned by another user (uid {st.st_uid})"
    if st.st_mode & 0o022:
        return f"is writable by group or others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def make_private(path: str) -> None:
    """Create `path` (and missing parents) as 0700 directories, whatever the umask."""
    missing = []
    p = os.path.abspath(path)
    while not os.path.exists(p):
        missing.append(p)
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            continue
        os.chmod(d, 0o700)   # the umask may have removed nothing, but never trust it to add


def private_dir(kind: str) -> str:
    """`<root>/<kind>` ready for cached code, or `<private temp dir>/<kind>` (with a warning
    naming the problem) when the configured one is unsafe or unusable.  A FUSEDSL_CACHE_MAX_BYTES
    that is not a size raises CacheLimitError here, at the first cache use and at the user's line,
    before any compile (the write that enforces the limit comes after a build; a warm cache writes
    nothing at all)."""
    cachesize.max_bytes()
    base = root()
    path = os.path.join(base, kind)
    reason = None
    for d in (base, path):   # the root first: nothing is created inside a root we refuse
        try:
            make_private(d)
        except OSError as exc:
            reason = (d, f"cannot be created ({exc.strerror})")
            break
        r = problem(d)
        if r:
            reason = (d, r)
            break
    if reason is None:
        return path
    return _use_fallback(kind, *reason)


def _remove_at_exit(path: str, owner: int) -> None:
    """Remove this process's fallback cache, but not from a forked child that exits normally (the
    parent still uses the folder)."""
    if os.getpid() == owner:
        shutil.rmtree(path, ignore_errors=True)


def _use_fallback(kind: str, bad: str, reason: str) -> str:
    global _fallback
    with _lock:
        if _fallback is None or problem(_fallback):
            _fallback = tempfile.mkdtemp(prefix="fusedsl-cache-")   # 0700, ours
            # only this process uses it (the next one makes its own): gone at exit, with any precompiled
            # header (80 MB) built there, instead of a folder per process left in the temp folder
            atexit.register(_remove_at_exit, _fallback, os.getpid())
        if (bad, reason) not in _warned:
            _warned.add((bad, reason))
            unsafe = "owned by" in reason or "writable" in reason
            why = "; not using it, since another user could plant code there" if unsafe else ""
            fix = "chmod 700 (and chown) it" if unsafe else "fix it"
            warnings.warn(f"fusedsl: cache directory {bad} {reason}{why}.  This process uses the private "
                          f"cache {_fallback}.  Fix: {fix}, or set FUSEDSL_CACHE_DIR to a directory of yours.",
                          CacheDirWarning, stacklevel=3)
        path = os.path.join(_fallback, kind)
        make_private(path)
        return path

"""Build Ascend C source with g++ against fusedsl's CPU API and launch its kernels on numpy arrays.

The source must define, for each kernel entry NAME it wants to launch,
    extern "C" int fusedsl_launch_NAME(uint32_t blockDim, uint8_t** args)
(the printer emits it under #ifdef ASCENDC_CPU_DEBUG).  Builds are cached by content:
    $FUSEDSL_CACHE_DIR (or ~/.cache/fusedsl) / ascendc / <sha256>.so
where the hash covers the source, the compiler flags and every header of the CPU API, so
editing the headers invalidates old builds (the API's include folder counts by its contents, not
its path: another checkout with the same headers reuses the builds).  The directory is private
(fusedsl.cachedir: 0700, ours, else a private temp cache), and each library is verified before
it is loaded: its sha256, recorded at build time in `<sha256>.so.sum`, must match, and it must
be ours and not group/world-writable.  A library that fails (truncated, bit-flipped, planted) is never
loaded — loading it could SIGBUS/SIGSEGV or run foreign code — but rebuilt.  A library
verified and loaded once is kept for the process (ctypes/dlopen hand out one handle per
path, so a path is never loaded twice with different contents).  A use (a build hit, and every launch
of a loaded library, at most once a minute) marks the library used and a
build is counted against the caches' size limit (fusedsl.cachesize evicts the least recently used
entries past FUSEDSL_CACHE_MAX_BYTES); a library evicted by another process between this one's
check and its load is built again.
"""
from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import re
import stat
import subprocess
import tempfile
import threading
import warnings
from dataclasses import dataclass
from typing import Sequence

try:
    import fcntl
except ImportError:   # not on Windows: builds of one library are not serialised there
    fcntl = None

import numpy as np

from fusedsl import cachedir, cachesize, scratch
from fusedsl.backend_ascendc.cpu import include_dir
from fusedsl.errors import (ASCENDC_WARNINGS, ArgumentError, AscendCCheckError, AscendCCompileError, AscendCWarning,
                            CacheError)
from fusedsl.targets import DEFAULT_TARGET, get_target

_ERROR_LINES = 40

_STAT_KEYS = ("gm_bytes_read", "gm_bytes_written", "vector_instructions", "vector_repeats",
              "scalar_gm_accesses", "ub_high_water")


@dataclass(frozen=True)
class LaunchStats:
    """What one launch did, summed over its blocks (ub_high_water: the largest block's UB plan)."""

    gm_bytes_read: int
    gm_bytes_written: int
    vector_instructions: int
    vector_repeats: int
    scalar_gm_accesses: int
    ub_high_water: int


def cache_dir() -> str:
    return cachedir.private_dir("ascendc")


_header_digest: str | None = None


def _headers_digest() -> str:
    """Hash of every file under the include dir, computed once per process."""
    global _header_digest
    if _header_digest is None:
        h = hashlib.sha256()
        root = include_dir()
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for fn in sorted(filenames):
                path = os.path.join(dirpath, fn)
                h.update(os.path.relpath(path, root).encode())
                with open(path, "rb") as f:
                    h.update(f.read())
        _header_digest = h.hexdigest()
    return _header_digest


# -O0 (CANN's CPU debug mode builds unoptimised too): a kernel file compiles 2.4x faster with the
# precompiled header below (1.06 s vs 2.59 s of CPU at -O2 for a vector kernel), and simulate
# is a correctness run on test-sized data, where build time dominates. FUSEDSL_CPU_OPT=-O2
# trades build time for faster simulation of large tensors.
def _opt_flag() -> str:
    flag = os.environ.get("FUSEDSL_CPU_OPT", "-O0")
    return flag if flag in ("-O0", "-O1", "-O2", "-O3", "-Og") else "-O0"


def compile_flags(target: str, extra_flags: Sequence[str] = ()) -> list[str]:
    arch = get_target(target).arch
    return ["-std=c++17", _opt_flag(), "-Wall", "-Werror", "-shared", "-fPIC",
            # Each library keeps its own copy of the CPU API's state, even when several are
            # loaded into one process (g++ would otherwise merge inline functions' statics).
            "-fno-gnu-unique",
            "-DASCENDC_CPU_DEBUG", f"-D__NPU_ARCH__={arch}", f"-I{include_dir()}", *extra_flags]


class CpuLibrary:
    """A compiled kernel library; `launch` runs one of its fusedsl_launch_<entry> functions."""

    def __init__(self, path: str, lib: ctypes.CDLL, target: str):
        self.path = path
        self.target = target
        self._lib = lib
        self._entries: dict[str, ctypes._CFuncPtr] = {}
        self._current_target: str | None = None
        lib.fusedsl_cpu_set_target.argtypes = [ctypes.c_char_p]
        lib.fusedsl_cpu_set_target.restype = ctypes.c_int
        lib.fusedsl_cpu_set_library_mode.argtypes = [ctypes.c_int]
        lib.fusedsl_cpu_register_gm.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_char_p]
        lib.fusedsl_cpu_clear_gm.argtypes = []
        lib.fusedsl_cpu_stat.argtypes = [ctypes.c_char_p]
        lib.fusedsl_cpu_stat.restype = ctypes.c_uint64
        lib.fusedsl_cpu_last_error.restype = ctypes.c_char_p
        lib.fusedsl_cpu_warnings.restype = ctypes.c_char_p
        lib.fusedsl_cpu_set_library_mode(1)
        self._register = lib.fusedsl_cpu_register_gm
        self._stat = lib.fusedsl_cpu_stat
        self._stat_keys = [k.encode() for k in _STAT_KEYS]
        # The library's CPU-API state (target, GM registry, counters) is process-global.
        self._lock = threading.Lock()

    def _entry(self, entry: str):
        fn = self._entries.get(entry)
        if fn is None:
            try:
                fn = getattr(self._lib, f"fusedsl_launch_{entry}")
            except AttributeError:
                raise ArgumentError(f"no kernel entry fusedsl_launch_{entry} in {self.path}",
                                    hint="the source must define extern \"C\" int fusedsl_launch_<entry>"
                                         "(uint32_t blockDim, uint8_t** args)") from None
            fn.argtypes = [ctypes.c_uint32, ctypes.POINTER(ctypes.c_void_p)]
            fn.restype = ctypes.c_int
            self._entries[entry] = fn
        return fn

    def set_target(self, target: str) -> None:
        if target != self._current_target:
            get_target(target)  # unknown names raise TargetError here
            if self._lib.fusedsl_cpu_set_target(target.encode()) != 0:
                raise AscendCCheckError(self.last_error())
            self._current_target = target

    def last_error(self) -> str:
        return (self._lib.fusedsl_cpu_last_error() or b"").decode(errors="replace")

    def launch(self, entry: str, block_dim: int, buffers: Sequence[tuple[str, np.ndarray]], *,
               target: str | None = None) -> LaunchStats:
        """Run fusedsl_launch_<entry> on `block_dim` blocks with the arrays as GM buffers.

        The arrays are passed in order as uint8_t* and are registered under their names, so
        out-of-bounds and cross-core overlap errors name them.  Outputs are written in place.
        """
        fn = self._entry(entry)
        cachesize.mark_used(self.path)   # in use: a prune (of any process) keeps it
        with self._lock:
            return self._launch_locked(fn, block_dim, buffers, target or self.target)

    def _launch_locked(self, fn, block_dim, buffers, target) -> LaunchStats:
        self.set_target(target)
        self._lib.fusedsl_cpu_clear_gm()
        ptrs = (ctypes.c_void_p * max(len(buffers), 1))()
        for i, (name, arr) in enumerate(buffers):
            if not isinstance(arr, np.ndarray) or not arr.flags.c_contiguous:
                raise ArgumentError(f"GM buffer {name!r} must be a C-contiguous numpy array",
                                    hint="pass np.ascontiguousarray(x) (and read outputs from that array)")
            addr = arr.ctypes.data
            ptrs[i] = addr
            self._register(addr, arr.nbytes, name.encode())
        rc = fn(block_dim, ptrs)
        if rc != 0:
            raise AscendCCheckError(self.last_error())
        self._issue_warnings()
        return LaunchStats(*(self._stat(k) for k in self._stat_keys))

    def _issue_warnings(self) -> None:
        """The launch's warnings (fusedsl_cpu::Warn), each as the errors.ASCENDC_WARNINGS class it names."""
        for line in (self._lib.fusedsl_cpu_warnings() or b"").decode(errors="replace").splitlines():
            kind, _, text = line.partition("\t")
            warnings.warn(text, ASCENDC_WARNINGS.get(kind, AscendCWarning), stacklevel=4)


def _compile(source: str, flags: list[str], out_path: str, name: str) -> None:
    out_dir = os.path.dirname(out_path)
    name = name[:64]   # only names temp files: a 300-character kernel name would exceed NAME_MAX
    try:
        _compile_into(source, flags, out_path, out_dir, name)
    except OSError as exc:   # a full or read-only disk: say so, not a FileNotFoundError of a temp file
        raise CacheError(f"could not build {name}.cpp: {exc.strerror or exc} ({exc.filename or out_dir})",
                         hint="free space there, or point FUSEDSL_CACHE_DIR at a writable folder "
                              "with room") from None


def _pch_dir(flags: list[str]) -> str | None:
    """A folder holding kernel_operator.h.gch built with exactly these flags (cached beside the
    libraries, checked like them), or None when it cannot be built. g++ looks for the .gch in
    each include folder before the header, so `-I<folder>` ahead of the CPU API's include
    folder makes every source whose first include is kernel_operator.h skip parsing the API
    (a third of a kernel's build); any other source, or a mismatch of flags, reads the header."""
    key = hashlib.sha256("\0".join([*_key_flags(flags), _headers_digest(), "pch"]).encode()).hexdigest()
    folder = os.path.join(cache_dir(), "pch", key[:40])
    gch = os.path.join(folder, "kernel_operator.h.gch")
    seen = _stat_key(gch)
    if seen is not None and _pch_ok.get(gch) == seen:   # checked in this process already (78 MB to hash)
        cachesize.mark_used(gch)
        return folder
    if verified(gch):
        if not _pch_forward(folder):
            return None
        cachesize.touch(gch)   # the atime: _stat_key (and other processes' checks) keep the mtime
        _pch_ok[gch] = _stat_key(gch)
        return folder
    try:
        cachedir.make_private(folder)   # pch/ and its folder 0700 whatever the umask
        fd, tmp = tempfile.mkstemp(prefix=".kernel_operator-", suffix=".gch", dir=folder)
        os.close(fd)
        with scratch.folder("pch") as work:
            # compiled from a header that includes the API's (a header compiled as the main
            # file warns about its own #pragma once)
            wrapper = os.path.join(work, "api.h")
            with open(wrapper, "w", encoding="ascii") as f:
                f.write('#include "kernel_operator.h"\n')
            proc = subprocess.run(["g++", *[f for f in flags if f != "-shared"], "-x", "c++-header", "-o", tmp,
                                   wrapper], capture_output=True, text=True, errors="replace")
        if proc.returncode != 0:
            _unlink_quietly(tmp)
            return None
        os.chmod(tmp, 0o600)
        fd, tmp_sum = tempfile.mkstemp(prefix=".kernel_operator-", suffix=".sum", dir=folder)
        with os.fdopen(fd, "w") as f:
            f.write(_file_digest(tmp) + "\n")
        os.replace(tmp, gch)
        os.replace(tmp_sum, gch + ".sum")
    except OSError:   # a read-only or full cache: build without it
        return None
    cachesize.wrote(cache_dir(), gch, _size(gch) + _size(gch + ".sum"))
    if not verified(gch) or not _pch_forward(folder):
        return None
    _pch_ok[gch] = _stat_key(gch)
    return folder


# g++ takes a .gch only for a source's first include; a later #include "kernel_operator.h" (the
# Matmul API's matmul_intf.h has one) searches the PCH folder first too, and there g++ wants a
# header beside the .gch or stops ("No such file or directory"). This one hands the include on
# to the API's own header, whose #pragma once makes it a no-op after the PCH.
_PCH_FORWARD = '#include_next "kernel_operator.h"\n'


def _pch_forward(folder: str) -> bool:
    """Whether the PCH folder holds the forwarding kernel_operator.h (written when missing or
    different); False when it cannot be written (then no PCH is used)."""
    path = os.path.join(folder, "kernel_operator.h")
    try:
        with open(path, encoding="ascii") as f:
            if f.read() == _PCH_FORWARD:
                return True
    except (OSError, UnicodeDecodeError):
        pass
    try:
        fd, tmp = tempfile.mkstemp(prefix=".kernel_operator-", suffix=".h", dir=folder)   # 0600
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(_PCH_FORWARD)
        os.replace(tmp, path)
    except OSError:
        return False
    return True


_pch_ok: dict[str, tuple] = {}   # verified .gch path -> its (inode, size, mtime) when checked


def _stat_key(path: str) -> tuple | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_uid, st.st_mode)


def _compile_into(source: str, flags: list[str], out_path: str, out_dir: str, name: str) -> None:
    if '#include "kernel_operator.h"' in source:
        pch = _pch_dir(flags)
        if pch is not None:
            flags = [f"-I{pch}", *flags]
    # a scratch folder that a later build removes if this process is killed during g++; the source
    # is compiled by its bare name from there, so messages (g++'s and the CPU checks' file:line)
    # name `<name>.cpp`, not a temporary path that is gone after the build
    with scratch.folder("build") as tmp:
        src_name = f"{name}.cpp" if not name.startswith("-") else f"_{name}.cpp"   # never a g++ option
        with open(os.path.join(tmp, src_name), "w", encoding="utf-8") as f:
            f.write(source)
        fd, tmp_so = tempfile.mkstemp(prefix=f".{name}-", suffix=".so", dir=out_dir)
        os.close(fd)
        try:
            proc = subprocess.run(["g++", *flags, "-o", tmp_so, src_name], capture_output=True,
                                  text=True, errors="replace", cwd=tmp)
        except FileNotFoundError:
            _unlink_quietly(tmp_so)
            raise AscendCCompileError("g++ was not found; the Ascend C CPU mode needs g++ (C++17)") from None
        if proc.returncode != 0:
            _unlink_quietly(tmp_so)   # the linker may have removed it already
            lines = (proc.stderr + proc.stdout).splitlines()
            shown = "\n".join(lines[:_ERROR_LINES])
            more = f"\n... ({len(lines) - _ERROR_LINES} more lines)" if len(lines) > _ERROR_LINES else ""
            raise AscendCCompileError(f"g++ failed to compile {name}.cpp:\n{shown}{more}")
        os.chmod(tmp_so, 0o700)            # the linker's mode follows the umask
        digest = _file_digest(tmp_so)
        fd, tmp_sum = tempfile.mkstemp(prefix=f".{name}-", suffix=".sum", dir=out_dir)
        with os.fdopen(fd, "w") as f:
            f.write(digest + "\n")
        os.replace(tmp_so, out_path)
        os.replace(tmp_sum, out_path + ".sum")
    cachesize.wrote(out_dir, out_path, _size(out_path) + _size(out_path + ".sum"))


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


@contextlib.contextmanager
def _build_lock(path: str):
    """An exclusive lock across processes for building the library at `path` (flock; where there
    is none, no lock).  The locks are 64 files in `<cache>/locks/` picked by the library's key, so
    they stay few whatever the cache holds (two libraries sharing a lock only build in turn)."""
    if fcntl is None:
        yield
        return
    folder = os.path.join(os.path.dirname(path), "locks")
    cachedir.make_private(folder)
    stripe = int(hashlib.sha256(os.path.basename(path).encode()).hexdigest()[:8], 16) % 64
    fd = os.open(os.path.join(folder, f"build-{stripe:02d}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)   # releases the lock


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _file_digest(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verified(path: str) -> bool:
    """Whether the library at `path` is the one fusedsl built: ours, not writable by others,
    and matching the checksum recorded at build time."""
    try:
        st = os.stat(path)
        with open(path + ".sum", encoding="ascii") as f:
            recorded = f.read().strip()
    except (OSError, ValueError):
        return False
    if not stat.S_ISREG(st.st_mode) or st.st_mode & 0o022 or (
            hasattr(os, "geteuid") and st.st_uid != os.geteuid()):
        return False
    return _file_digest(path) == recorded


_loaded: dict[str, CpuLibrary] = {}
_loaded_lock = threading.Lock()


def _key_flags(flags: Sequence[str]) -> list[str]:
    """The flags as a cache key sees them: the CPU API's include folder by name, not by path.

    Its files are in the key already (_headers_digest), so two checkouts or virtual environments
    with the same headers (a CI job on a fresh clone, a second venv) share their builds; the
    path itself would only make every new location rebuild everything."""
    here = f"-I{include_dir()}"
    return ["-I<fusedsl include-dir>" if f == here else f for f in flags]


# A string or character literal, a // comment or a /* */ comment: what the key's scan of a source
# tells apart (a // inside a string is no comment).
_LEXEME = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/', re.S)
# What the scan does not follow: raw strings, digit separators (1'000), a backslash-newline
# splice on a line with a quote or a comment, an #include <...> naming // or /*.  A source with
# any of them is keyed as written.
_UNSCANNED = re.compile(r'(?<![A-Za-z0-9_])(?:u8|[uUL])?R"|[0-9A-Fa-f]\'[0-9A-Fa-f]'
                        r'|^[^\n]*(?:["\']|/[/*])[^\n]*\\\n|^\s*#\s*include\s*<[^>\n]*/[/*]', re.M)


def _key_source(source: str) -> str:
    """The source as its cache key sees it: comments dropped, line breaks kept (so __LINE__ and
    every token stay the same), or the source itself when it uses what the scan does not follow.

    The printed kernels name the user's file by its absolute path in comments ("fused from
    /home/.../model.py:12"); the same kernel from another checkout or folder (a CI job on a fresh
    clone) is the same library and finds it in the cache."""
    if _UNSCANNED.search(source):
        return source
    def blank(m: re.Match) -> str:
        text = m.group(0)
        if text.startswith("//"):
            return ""
        if text.startswith("/*"):
            return " " + "\n" * text.count("\n")
        return text
    return "code only\0" + _LEXEME.sub(blank, source)


def cache_path(source: str, *, target: str = DEFAULT_TARGET, extra_flags: Sequence[str] = ()) -> str:
    """Where `build` keeps the library for this source, target and flags."""
    flags = _key_flags(compile_flags(target, extra_flags))
    key = hashlib.sha256("\0".join([_key_source(source), *flags, _headers_digest()]).encode()).hexdigest()
    return os.path.join(cache_dir(), f"{key}.so")


def build(source: str, *, target: str = DEFAULT_TARGET, name: str = "kernel",
          extra_flags: Sequence[str] = ()) -> CpuLibrary:
    """Compile `source` (cached by content) and load it."""
    flags = compile_flags(target, extra_flags)
    path = cache_path(source, target=target, extra_flags=extra_flags)
    with _loaded_lock:
        lib = _loaded.get(path)
        if lib is not None:
            cachesize.mark_used(path)
            return lib
        # twice: another process may evict (or `fusedsl cache clear` remove) the library between
        # this one's check and its load; the second round builds it again
        for last in (False, True):
            cachesize.touch(path)   # used now: a pruner that scanned before this skips it
            if not verified(path):
                # missing, truncated, bit-flipped or planted: build it again (os.replace swaps the
                # file, never writing into one a process may have mapped).  One process at a time
                # per library: two that build the same key (two checkouts, xdist workers) replace
                # the .so and its .sum in turn, and one would check the other's .so against its own
                # .sum (g++'s builds of one source are not always byte-equal)
                with _build_lock(path):
                    if not verified(path):   # (built by another process while this one waited)
                        _compile(source, flags, path, name)
                        if not verified(path):
                            if not last:
                                continue
                            raise AscendCCompileError(f"the library just built at {path} does not match its "
                                                      "checksum (is another process writing the cache?)")
            try:
                lib = CpuLibrary(path, ctypes.CDLL(path), target)
                break
            except (OSError, AttributeError) as exc:
                if not last and not os.path.exists(path):
                    continue
                raise AscendCCompileError(f"cannot load the library built for {name}: {exc}") from None
        _loaded[path] = lib
        return lib

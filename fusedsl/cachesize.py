"""The on-disk caches' size: a bound kept by least-recently-used eviction, and what `fusedsl cache` shows.

`cachedir.py` decides where the caches live; this module knows what an entry of each looks like
and keeps their total under FUSEDSL_CACHE_MAX_BYTES (default 2 GiB; 0 = no limit).

Entries (everything else under the cache folder is left alone; a symlink to a file is never followed,
a symlink to a folder in the place of a cache folder -- llvm, llvm/<2 hex>, ascendc, ascendc/pch,
pch/<40 hex> -- is followed when the folder is ours and not writable by others, as the writers
write through it: what they put there counts against the limit and is pruned, wherever it lies):
  llvm/<2 hex>/<64 hex>.o                  LLVM object code (or a kernel's compressed LLVM IR) starting with
                                           LLVM_MAGIC (backend_cpu/jit.py)
  ascendc/<64 hex>.so + .so.sum            a g++-built library and its recorded sha256 (cpu_runner.py);
                                           a .so.sum left without its library is an entry too
  ascendc/pch/<40 hex>/kernel_operator.h{,.gch,.gch.sum}   a precompiled CPU API header
  .tmp-*.o, .<name>-*.so/.sum, .kernel_operator-*   temporary files of a write that never finished
                                           (removed only when older than TEMP_AGE_S: younger ones
                                           may be a build in progress)

Recency is the newest of a file's atime and mtime; a cache hit sets the atime (`touch`), not the
mtime, because cpu_runner keys its check of the precompiled header on the mtime.  Code a process
loaded once and keeps using (a notebook calling a kernel for hours) is marked again by its uses,
at most once a minute per file (`mark_used`), or pruning would take it for unused.

Cheap enforcement: every write adds its size to a shared estimate (`<root>/usage`, updated under
an flock: a few syscalls); only when the estimate passes the limit, or is a day old, does the
writer scan the folder and evict the least recently used entries down to LOW_WATER of the limit
(so the next scan is a tenth of the limit of writes away).  The entry just written is never
evicted.  Several processes may fill one cache: a removal is an unlink (a reader that opened or
loaded the file keeps it), an entry touched since the scan is skipped, one process prunes at a
time (an flock on the root folder; a writer that finds the estimate lowered after waiting for it
scans nothing), and a reader that loses an entry between its check and its load builds it again
(cpu_runner.build).
"""
from __future__ import annotations

import math
import os
import re
import stat
import time
from dataclasses import field

from .record import record
from .errors import CacheLimitError, user_frame

try:   # POSIX; elsewhere the estimate is updated without a lock (it is only an estimate)
    import fcntl
except ImportError:   # pragma: no cover
    fcntl = None

DEFAULT_MAX_BYTES = 2 << 30
LOW_WATER = 0.9          # a prune goes down to this fraction of the limit
TEMP_AGE_S = 3600        # an unfinished write older than this is a leftover of a killed process
RESCAN_S = 86400         # an estimate older than this is measured again
LLVM_MAGIC = b"FSDLLVM1"   # the first bytes of every object file jit.py writes
KINDS = ("llvm", "ascendc")   # the cache folders under the root
USAGE = "usage"            # the shared estimate, beside the cache folders
_USAGE_HEADER = "fusedsl-cache-usage 1"
_ELF_MAGIC = b"\x7fELF"
_HEX64 = re.compile(r"[0-9a-f]{64}")
_LLVM_NAME = re.compile(r"([0-9a-f]{2})[0-9a-f]{62}\.o")
_LLVM_TEMP = re.compile(r"\.tmp-[a-z0-9_]+\.o")
_SO_NAME = re.compile(r"[0-9a-f]{64}\.so")
_SO_TEMP = re.compile(r"\.[^/]{1,64}-[a-z0-9_]{8}\.(so|sum)")   # mkstemp's 8 characters
_PCH_DIR = re.compile(r"[0-9a-f]{40}")
_PCH_FILES = ("kernel_operator.h.gch.sum", "kernel_operator.h.gch", "kernel_operator.h")   # removal order
_PCH_TEMP = re.compile(r"\.kernel_operator-[a-z0-9_]+\.(gch|sum|h)")
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40,
          "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
          "kb": 10 ** 3, "mb": 10 ** 6, "gb": 10 ** 9, "tb": 10 ** 12, "b": 1}
_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([a-zA-Z]*)\s*")


@record
class Entry:
    """One cache entry: its files in removal order (the one a reader checks first goes first, so an
    interrupted removal leaves a recognisable rest), the folder to remove after them, its size and
    its last use (ns: the newest of its files' atimes and mtimes)."""

    kind: str                  # "llvm", "ascendc", "pch" or "temp"
    files: tuple[str, ...]
    folder: str | None
    nbytes: int
    stamp: int


@record(frozen=False)
class Scan:
    """A cache root's entries and what lies there that fusedsl did not write (left alone)."""

    root: str
    entries: list[Entry] = field(default_factory=list)
    others: list[str] = field(default_factory=list)

    @property
    def nbytes(self) -> int:
        return sum(e.nbytes for e in self.entries)


# ---- the limit ---------------------------------------------------------------------------------
ACCEPTED_SIZES = ("a number of bytes (a decimal point allowed), optionally followed by K, M, G, T or KiB, MiB, "
                  "GiB, TiB (powers of 1024) or KB, MB, GB, TB (powers of 1000), case ignored: e.g. 2GiB, 500M, "
                  "1.5G, 1073741824")


def parse_size(text: str) -> int:
    """Bytes from '2147483648', '2GiB', '2G' (binary), '2GB' (decimal), '500M', '0' (no limit)."""
    m = _SIZE.fullmatch(text)
    unit = m.group(2).lower() if m else None
    if m is None or unit not in _UNITS:
        raise CacheLimitError(f"FUSEDSL_CACHE_MAX_BYTES={text!r} is not a size", loc=user_frame(),
                              hint=f"set it to {ACCEPTED_SIZES}; to 0 for no limit; or unset it for the "
                                   "default 2GiB")
    return math.ceil(float(m.group(1)) * _UNITS[unit])   # 0.5 is a byte, not "no limit"


def max_bytes() -> int:
    """The limit in bytes (0: no limit), from FUSEDSL_CACHE_MAX_BYTES or the default (checked at
    every cache use by cachedir.private_dir)."""
    text = os.environ.get("FUSEDSL_CACHE_MAX_BYTES", "")
    return DEFAULT_MAX_BYTES if not text.strip() else parse_size(text)


def human(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


# ---- use -------------------------------------------------------------------------------------------
def touch(path: str) -> None:
    """Mark a cache file used now (its atime; the mtime stays, see the module docstring)."""
    try:
        st = os.stat(path)
        os.utime(path, ns=(time.time_ns(), st.st_mtime_ns))
    except OSError:
        pass


USE_MARK_S = 60          # a file in use is marked used again at most this often per process
_marked: dict[str, float] = {}   # path -> time.monotonic() of this process's last mark


def mark_used(path: str) -> None:
    """`touch` at most once per USE_MARK_S per file and process: cheap enough for every call of a
    kernel whose code a long-running process (a notebook) loaded from the cache once, so that
    pruning sees it as recently used (a clock read and a dict lookup; the touch is two syscalls)."""
    now = time.monotonic()
    last = _marked.get(path)
    if last is not None and now - last < USE_MARK_S:
        return
    _marked[path] = now
    touch(path)


def wrote(kind_dir: str, path: str, nbytes: int) -> None:
    """Count an entry just written into `kind_dir` (a cache folder under the root); prune the
    root's caches when the estimate passes the limit.  The entry at `path` is never evicted."""
    limit = max_bytes()
    root = os.path.dirname(kind_dir)
    estimate = _add_usage(root, nbytes)   # counted without a limit too: one may be set later
    if limit == 0 or estimate is not None and estimate <= limit:
        return
    with _RootLock(root):
        estimate = _fresh_usage(root)
        if estimate is not None and estimate <= limit:
            return   # another process pruned while this one waited for the lock
        _prune_locked(root, limit, keep=(path,), target=None)


def _stamp(st: os.stat_result) -> int:
    return max(st.st_atime_ns, st.st_mtime_ns)


# ---- the shared estimate ---------------------------------------------------------------------------
def _add_usage(root: str, delta: int, *, measured: int | None = None, seen: int | None = None) -> int | None:
    """Add `delta` to the root's estimate under a lock, or set it to `measured` plus what was added
    since the estimate read `seen` (other processes' writes during a scan).  Returns the new
    estimate; None when there is none yet, it is stale, or the file is unusable."""
    try:
        fd = os.open(os.path.join(root, USAGE), os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError:
        return None
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        raw = os.read(fd, 200)
        text = raw.decode("ascii", "replace").split()
        valid = len(text) == 4 and " ".join(text[:2]) == _USAGE_HEADER and text[2].isdigit() and text[3].isdigit()
        now = int(time.time())
        if measured is not None:
            meanwhile = int(text[2]) - seen if valid and seen is not None else 0
            value, since = measured + max(meanwhile, 0) + delta, now
        elif valid:
            value, since = int(text[2]) + delta, int(text[3])
        else:
            return None
        # a record of fixed width written in place: truncating a file costs ~150 us on ext4
        record = f"{_USAGE_HEADER} {max(value, 0):>20} {since:>12}\n".encode()
        os.pwrite(fd, record, 0)
        if len(raw) != len(record):
            os.ftruncate(fd, len(record))
        return None if now - since > RESCAN_S else value
    except OSError:
        return None
    finally:
        os.close(fd)   # releases the lock


def _read_usage(root: str) -> tuple[int, int] | None:
    """The root's estimate and when it was last measured (unix seconds), or None."""
    try:
        with open(os.path.join(root, USAGE), encoding="ascii", errors="replace") as f:
            text = f.read(200).split()
    except OSError:
        return None
    if len(text) != 4 or " ".join(text[:2]) != _USAGE_HEADER or not (text[2].isdigit() and text[3].isdigit()):
        return None
    return int(text[2]), int(text[3])


def _fresh_usage(root: str) -> int | None:
    usage = _read_usage(root)
    return None if usage is None or time.time() - usage[1] > RESCAN_S else usage[0]


# ---- what is ours ------------------------------------------------------------------------------
def scan(root: str) -> Scan:
    """Every entry of the caches under `root` and every other name there (symlinks to folders
    followed where the writers follow them, see _cache_folder; symlinks to files never)."""
    out = Scan(root)
    seen = _Seen(root)
    for name in _listdir(root):
        path = os.path.join(root, name)
        if name in KINDS and _cache_folder(path, seen):
            (_scan_llvm if name == "llvm" else _scan_ascendc)(path, out, seen)
        elif not (name == USAGE and _is_file(path)):
            out.others.append(path)
    return out


class _Seen:
    """The folders a scan has entered, by device and inode: a folder reached twice (two links to
    it, or a link back up the tree) is counted once and entered once."""

    def __init__(self, root: str):
        self.ids: set = set()
        try:
            st = os.stat(root)
            self.ids.add((st.st_dev, st.st_ino))
        except OSError:
            pass

    def first(self, st: os.stat_result) -> bool:
        key = (st.st_dev, st.st_ino)
        if key in self.ids:
            return False
        self.ids.add(key)
        return True


def _cache_folder(path: str, seen: _Seen) -> bool:
    """Whether `path` is a folder to scan as part of the cache: a real folder, or a symlink to a
    folder that passes the test the writers' folders pass (cachedir.problem: ours, not writable by
    group or others), reached for the first time.  The writers (jit.write_cached, cpu_runner) write
    through such links, so what they put there counts against the limit and is pruned with the rest;
    a link the writers would refuse, a link to a file, or a second way to one folder is left alone."""
    try:
        lst = os.lstat(path)
        st = os.stat(path) if stat.S_ISLNK(lst.st_mode) else lst
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        return False
    if stat.S_ISLNK(lst.st_mode) and (st.st_mode & 0o022 or (hasattr(os, "geteuid") and st.st_uid != os.geteuid())):
        return False
    return seen.first(st)


def _scan_llvm(folder: str, out: Scan, seen: _Seen) -> None:
    for sub in _listdir(folder):
        subdir = os.path.join(folder, sub)
        if not (re.fullmatch(r"[0-9a-f]{2}", sub) and _cache_folder(subdir, seen)):
            out.others.append(subdir)
            continue
        for name in _listdir(subdir):
            path = os.path.join(subdir, name)
            st = _lstat_file(path)
            m = _LLVM_NAME.fullmatch(name)
            if st is not None and m and m.group(1) == sub:
                out.entries.append(Entry("llvm", (path,), None, st.st_size, _stamp(st)))
            elif st is not None and _LLVM_TEMP.fullmatch(name):
                out.entries.append(Entry("temp", (path,), None, st.st_size, _stamp(st)))
            else:
                out.others.append(path)


def _scan_ascendc(folder: str, out: Scan, seen: _Seen) -> None:
    names = set(_listdir(folder))
    for name in sorted(names):
        path = os.path.join(folder, name)
        if name == "pch" and _cache_folder(path, seen):
            _scan_pch(path, out, seen)
            continue
        st = _lstat_file(path)
        sum_st = _lstat_file(path + ".sum") if st is not None and _SO_NAME.fullmatch(name) else None
        if sum_st is not None:
            out.entries.append(Entry("ascendc", (path, path + ".sum"), None, st.st_size + sum_st.st_size,
                                     max(_stamp(st), _stamp(sum_st))))
        elif st is not None and name.endswith(".so.sum") and _SO_NAME.fullmatch(name[:-4]):
            if _lstat_file(path[:-4]) is not None:
                continue                  # part of its library's entry
            if name[:-4] in names:
                out.others.append(path)   # beside something that is not our library
            else:                         # its library was removed: the checksum alone is ours too
                out.entries.append(Entry("ascendc", (path,), None, st.st_size, _stamp(st)))
        elif st is not None and _SO_TEMP.fullmatch(name):
            out.entries.append(Entry("temp", (path,), None, st.st_size, _stamp(st)))
        else:
            out.others.append(path)


def _scan_pch(folder: str, out: Scan, seen: _Seen) -> None:
    for sub in _listdir(folder):
        subdir = os.path.join(folder, sub)
        if not (_PCH_DIR.fullmatch(sub) and _cache_folder(subdir, seen)):
            out.others.append(subdir)
            continue
        files, nbytes, stamp, foreign = [], 0, 0, False
        for name in _listdir(subdir):
            path = os.path.join(subdir, name)
            st = _lstat_file(path)
            if st is not None and _PCH_TEMP.fullmatch(name):
                out.entries.append(Entry("temp", (path,), None, st.st_size, _stamp(st)))
            elif st is not None and name in _PCH_FILES:
                files.append(path)
                nbytes += st.st_size
                stamp = max(stamp, _stamp(st))
            else:
                out.others.append(path)
                foreign = True
        if files:
            files.sort(key=lambda p: _PCH_FILES.index(os.path.basename(p)))
            out.entries.append(Entry("pch", tuple(files), None if foreign else subdir, nbytes, stamp))


def _listdir(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _is_file(path: str) -> bool:
    return _lstat_file(path) is not None


def _lstat_file(path: str) -> os.stat_result | None:
    """The file's stat when it is a regular file (not a symlink), else None."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st if stat.S_ISREG(st.st_mode) else None


def _written_by_us(entry: Entry) -> bool:
    """The entry's contents are in the format its cache writes (checked just before removal)."""
    first = entry.files[0]
    if entry.kind == "llvm":
        return _head(first, len(LLVM_MAGIC)) == LLVM_MAGIC
    if entry.kind == "ascendc":
        checksum = entry.files[-1]
        return _HEX64.fullmatch(_head(checksum, 200).decode("ascii", "replace").strip()) is not None and (
            len(entry.files) == 1 or _head(first, 4) == _ELF_MAGIC)
    if entry.kind == "pch":
        sums = [p for p in entry.files if p.endswith(".sum")]
        return all(_HEX64.fullmatch(_head(p, 200).decode("ascii", "replace").strip()) for p in sums)
    return True   # a temporary file: recognised by its name in its folder


def _head(path: str, n: int) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return b""
    try:
        return os.read(fd, n)
    except OSError:
        return b""
    finally:
        os.close(fd)


# ---- removal -------------------------------------------------------------------------------------
def _remove(entry: Entry) -> str:
    """Remove the entry's files if they are still ours and unused since the scan: "removed",
    "in use" (used or rewritten since, or not removable) or "foreign" (named like an entry, but
    not in its cache's format: never removed)."""
    stamps = [_stamp(st) for st in map(_lstat_file, entry.files) if st is not None]
    if max(stamps, default=0) > entry.stamp:
        return "in use"
    if not _written_by_us(entry):
        return "foreign"
    for path in entry.files:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        except OSError:
            return "in use"
    if entry.folder is not None:
        try:
            os.rmdir(entry.folder)   # fails when a process is writing a new header there: fine
        except OSError:
            pass
    return "removed"


@record(frozen=False)
class Pruned:
    """What a prune or a clear did."""

    removed: list[Entry]
    remaining: Scan

    @property
    def freed(self) -> int:
        return sum(e.nbytes for e in self.removed)


def prune(root: str, limit: int, *, keep=(), target: int | None = None) -> Pruned:
    """When the entries under `root` pass `limit` bytes, remove the least recently used down to
    `target` (default LOW_WATER of the limit), never one holding a file in `keep`.  Temporary
    files older than TEMP_AGE_S go too.  Waits while another process prunes the same root."""
    with _RootLock(root):
        return _prune_locked(root, limit, keep=keep, target=target)


def _prune_locked(root: str, limit: int, *, keep, target: int | None) -> Pruned:
    before = _read_usage(root)
    found = scan(root)
    target = int(limit * LOW_WATER) if target is None else target
    keep = {os.path.abspath(p) for p in keep}
    old_temp = time.time_ns() - TEMP_AGE_S * 10 ** 9
    total = found.nbytes
    over = total > limit
    removed, foreign = [], []
    for entry in sorted(found.entries, key=lambda e: e.stamp):
        stale_temp = entry.kind == "temp" and entry.stamp < old_temp
        evict = over and total > target and entry.kind != "temp"
        if not (stale_temp or evict) or keep.intersection(map(os.path.abspath, entry.files)):
            continue
        outcome = _remove(entry)
        if outcome != "in use":
            (removed if outcome == "removed" else foreign).append(entry)
            total -= entry.nbytes
    _settle(found, removed, foreign)
    # what other processes wrote while this one scanned was added to the estimate: keep it
    _add_usage(root, 0, measured=found.nbytes, seen=before[0] if before is not None else None)
    return Pruned(removed, found)


def _settle(found: Scan, removed: list[Entry], foreign: list[Entry]) -> None:
    """`found` after the removals: what was removed is gone, what was not ours joins the others."""
    gone = {id(e) for e in removed + foreign}
    found.entries = [e for e in found.entries if id(e) not in gone]
    found.others.extend(p for e in foreign for p in e.files)


def clear(root: str) -> Pruned:
    """Remove every entry under `root` (whatever its age; temporary files only when stale)."""
    with _RootLock(root):
        found = scan(root)
        old_temp = time.time_ns() - TEMP_AGE_S * 10 ** 9
        outcomes = [(e, _remove(e)) for e in found.entries if e.kind != "temp" or e.stamp < old_temp]
        removed = [e for e, outcome in outcomes if outcome == "removed"]
        _settle(found, removed, [e for e, outcome in outcomes if outcome == "foreign"])
        _add_usage(root, 0, measured=found.nbytes)
        return Pruned(removed, found)


class _RootLock:
    """One pruner per cache root at a time: an flock on the root folder itself (no lock file to
    leave behind).  Without a root, or a file system without locks, it guards nothing: removal
    stays safe, two pruners may only remove a little more than needed."""

    def __init__(self, root: str):
        self.root, self.fd = root, None

    def __enter__(self) -> None:
        if fcntl is None:
            return
        try:
            self.fd = os.open(self.root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except OSError:
            pass

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            os.close(self.fd)

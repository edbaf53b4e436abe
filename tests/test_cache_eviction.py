"""The on-disk caches stay under FUSEDSL_CACHE_MAX_BYTES by least-recently-used eviction, remove
only fusedsl's own files, survive several processes, and `fusedsl cache` shows and clears them.

Entries are written in each cache's own format (jit.write_cached for LLVM object code; a library
and its recorded sha256, and a precompiled-header folder, laid out as cpu_runner writes them) or
built for real where the point is a kernel that still runs after its entry went away.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import fusedsl as fs
from fusedsl import cachedir, cachesize
from fusedsl.backend_ascendc import cpu_runner
from fusedsl.backend_cpu import jit
from fusedsl.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "fusedsl-cache"
    monkeypatch.setenv("FUSEDSL_CACHE_DIR", str(root))
    monkeypatch.setenv("FUSEDSL_CACHE_MAX_BYTES", "0")   # each test sets its own limit
    return str(root)


def _key(seed) -> str:
    return hashlib.sha256(str(seed).encode()).hexdigest()


def llvm_entry(seed, nbytes: int = 1000) -> str:
    jit.write_cached(_key(seed), bytes(nbytes))
    return jit._path(_key(seed))


def library_entry(root: str, seed, nbytes: int = 4000) -> str:
    """A library and its .so.sum as cpu_runner lays them out (an ELF header, the sha256 recorded)."""
    folder = os.path.join(root, "ascendc")
    cachedir.make_private(folder)
    path = os.path.join(folder, _key(f"so{seed}") + ".so")
    data = b"\x7fELF" + bytes(nbytes - 4)
    with open(path, "wb") as f:
        f.write(data)
    with open(path + ".sum", "w", encoding="ascii") as f:
        f.write(hashlib.sha256(data).hexdigest() + "\n")
    return path


def pch_entry(root: str, seed, nbytes: int = 8000) -> str:
    folder = os.path.join(root, "ascendc", "pch", _key(f"pch{seed}")[:40])
    cachedir.make_private(folder)
    gch = os.path.join(folder, "kernel_operator.h.gch")
    with open(gch, "wb") as f:
        f.write(bytes(nbytes))
    with open(gch + ".sum", "w", encoding="ascii") as f:
        f.write(hashlib.sha256(bytes(nbytes)).hexdigest() + "\n")
    with open(os.path.join(folder, "kernel_operator.h"), "w", encoding="ascii") as f:
        f.write('#include_next "kernel_operator.h"\n')
    return gch


def used(path: str, seconds_ago: float) -> None:
    """Set a cache file's last use (atime and mtime) `seconds_ago`, and its companions'."""
    t = time.time_ns() - int(seconds_ago * 1e9)
    for p in (path, path + ".sum"):
        if os.path.exists(p):
            os.utime(p, ns=(t, t))


def primary(entry) -> str:
    """The file a test wrote the entry by (the object, the library, the precompiled header)."""
    return next(p for p in entry.files if p.endswith((".o", ".so", ".gch")))


def entry_sizes(root: str) -> dict[str, int]:
    return {primary(e): e.nbytes for e in cachesize.scan(root).entries}


# ---- the limit ------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, value", [("2147483648", 2 << 30), ("2GiB", 2 << 30), ("2G", 2 << 30),
                                         ("2GB", 2 * 10 ** 9), ("500M", 500 << 20), ("1.5 gib", 3 << 29),
                                         ("64k", 64 << 10), ("0", 0), ("0.5", 1), ("", cachesize.DEFAULT_MAX_BYTES)])
def test_the_limit_is_read_from_the_environment(text, value, monkeypatch):
    monkeypatch.setenv("FUSEDSL_CACHE_MAX_BYTES", text)
    assert cachesize.max_bytes() == value


@pytest.mark.parametrize("text", ["lots", "-1", "2 parsecs", "1e9", "0x100"])
def test_a_limit_that_is_not_a_size_names_the_variable_the_line_and_the_fix(text, cache, monkeypatch):
    monkeypatch.setenv("FUSEDSL_CACHE_MAX_BYTES", text)
    x = np.ones(16, np.float32)
    with pytest.raises(fs.FusedslError) as info:
        fs.fused_kernel(lambda x: x * 7.25 + 3)(x)   # LINE-MARK limit
    msg = str(info.value)
    line = next(i for i, t in enumerate(open(__file__, encoding="utf-8"), 1) if "# LINE-MARK limit" in t)
    assert type(info.value).__name__ == "CacheLimitError"
    assert msg.startswith(f"{__file__}:{line}: FUSEDSL_CACHE_MAX_BYTES={text!r} is not a size"), msg
    assert HINT in msg
    assert "cachesize.py" not in msg and "jit.py" not in msg


HINT = ("set it to a number of bytes (a decimal point allowed), optionally followed by K, M, G, T or KiB, MiB, GiB, "
        "TiB (powers of 1024) or KB, MB, GB, TB (powers of 1000), case ignored: e.g. 2GiB, 500M, 1.5G, 1073741824; "
        "to 0 for no limit; or unset it for the default 2GiB")


def _limit_error(info, marker: str, text: str) -> None:
    msg = str(info.value)
    line = next(i for i, t in enumerate(open(__file__, encoding="utf-8"), 1) if f"# LINE-MARK {marker}" in t)
    assert type(info.value).__name__ == "CacheLimitError"
    assert msg.startswith(f"{__file__}:{line}: FUSEDSL_CACHE_MAX_BYTES={text!r} is not a size"), msg
    assert HINT in msg


def test_a_bad_limit_stops_a_kernel_whose_code_is_cached_already(cache, monkeypatch):
    """A warm cache writes nothing, so a limit checked only when a write enforces it was never
    reported; it is checked at the first cache use now."""
    x = np.ones(16, np.float32)
    kernel = lambda x: x * 5.5 - 2   # noqa: E731
    np.testing.assert_array_equal(fs.fused_kernel(kernel)(x), x * 5.5 - 2)   # fills the cache
    jit._memory.clear()   # a new process: the code comes from the disk cache
    monkeypatch.setenv("FUSEDSL_CACHE_MAX_BYTES", "2 gigs")
    with pytest.raises(fs.FusedslError) as info:
        fs.fused_kernel(kernel)(x)   # LINE-MARK warm
    _limit_error(info, "warm", "2 gigs")


def test_a_bad_limit_stops_a_cpu_build_before_g_plus_plus_runs(cache, monkeypatch):
    runs = []
    monkeypatch.setattr(cpu_runner.subprocess, "run", lambda *a, **k: runs.append(a))
    monkeypatch.setenv("FUSEDSL_CACHE_MAX_BYTES", "-1")
    with pytest.raises(fs.FusedslError) as info:
        cpu_runner.build('#include "kernel_operator.h"\n', name="never_built")   # LINE-MARK build
    _limit_error(info, "build", "-1")
    assert runs == [] and not os.path.exists(os.path.join(cache, "ascendc"))


# ---- eviction ---------------------------------------------------------------------------------------
def test_eviction_removes_the_least_recently_used_entries_of_every_cache_first(cache):
    entries = [llvm_entry(i) for i in range(4)] + [library_entry(cache, i) for i in range(3)] + [pch_entry(cache, 0)]
    for age, path in zip(range(800, 0, -100), entries):   # entries[0] the oldest
        used(path, age)
    sizes = entry_sizes(cache)
    jit.read_cached(_key(0))                 # a disk hit on the oldest object: used now
    cachesize.touch(entries[4])              # what a build() hit does
    limit = sum(sizes.values()) - sizes[entries[1]] - sizes[entries[2]] - sizes[entries[3]] - sizes[entries[5]]
    done = cachesize.prune(cache, limit, target=limit)
    # least recently used first: 1, 2, 3 (objects), 5 (a library); 0 and 4 were used since, 6, 7 are newer
    assert [primary(e) for e in done.removed] == [entries[1], entries[2], entries[3], entries[5]]
    assert {e.kind for e in done.removed} == {"llvm", "ascendc"}
    assert not os.path.exists(entries[5]) and not os.path.exists(entries[5] + ".sum")
    assert sorted(entry_sizes(cache)) == sorted([entries[0], entries[4], entries[6], entries[7]])
    assert cachesize.scan(cache).nbytes <= limit
    # one more to go: the oldest left is the library built before the header
    done = cachesize.prune(cache, cachesize.scan(cache).nbytes - 1, target=0, keep=[entries[4]])
    assert entries[4] not in [primary(e) for e in done.removed]
    assert os.listdir(os.path.join(cache, "ascendc", "pch")) == []   # the header's folder is gone too


def test_the_limit_holds_after_many_writes_and_the_newest_entry_stays(cache, monkeypatch):
    limit = 48 << 10
    monkeypatch.setenv("FUSEDSL_CACHE_MAX_BYTES", str(limit))
    scans = []
    real_scan = cachesize.scan
    monkeypatch.setattr(cachesize, "scan", lambda root: scans.append(root) or real_scan(root))
    for i in range(300):
        path = llvm_entry(i, 900 + 37 * (i % 5))
        assert os.path.exists(path)                     # never the entry just written
        assert real_scan(cache).nbytes <= limit, i
    assert real_scan(cache).nbytes >= limit * 0.8         # kept full, not emptied
    # the estimate decides: a scan only every ~4.8 KiB written (a tenth of the limit), not per write
    assert 5 <= len(scans) <= 300 // 3, len(scans)
    for e in real_scan(cache).entries:
        assert jit.read_cached(os.path.basename(e.files[0])[:-2]) is not None   # every survivor intact


def test_an_entry_bigger_than_the_limit_is_kept_until_the_next_write(cache, monkeypatch):
    monkeypatch.setenv("FUSEDSL_CACHE_MAX_BYTES", "1000")
    first = llvm_entry("a", 3000)
    assert os.path.exists(first)
    second = llvm_entry("b", 3000)
    assert os.path.exists(second) and not os.path.exists(first)


def test_a_write_below_the_limit_does_not_scan(cache, monkeypatch):
    monkeypatch.setenv("FUSEDSL_CACHE_MAX_BYTES", "1M")
    llvm_entry(0)                  # no estimate yet: measured once
    monkeypatch.setattr(cachesize, "scan", lambda root: pytest.fail("scanned below the limit"))
    for i in range(1, 50):
        llvm_entry(i)
    with open(os.path.join(cache, "usage"), encoding="ascii") as f:
        assert int(f.read().split()[2]) == 50 * (1000 + 40)


def test_a_day_old_estimate_is_measured_again(cache, monkeypatch):
    monkeypatch.setenv("FUSEDSL_CACHE_MAX_BYTES", "1M")
    llvm_entry(0)
    with open(os.path.join(cache, "usage"), "w", encoding="ascii") as f:   # another tool wrote meanwhile
        f.write(f"fusedsl-cache-usage 1 5 {int(time.time()) - 2 * 86400}\n")
    llvm_entry(1)
    with open(os.path.join(cache, "usage"), encoding="ascii") as f:
        assert int(f.read().split()[2]) == 2 * 1040


def test_unfinished_writes_go_only_when_stale(cache):
    obj = llvm_entry(0)
    young = os.path.join(os.path.dirname(obj), ".tmp-abcd1234.o")
    old = os.path.join(cache, "ascendc", ".relu_kernel-x1y2z3w4.so")
    cachedir.make_private(os.path.dirname(old))
    for p in (young, old):
        with open(p, "wb") as f:
            f.write(b"half a file")
    used(old, 2 * 3600)
    done = cachesize.clear(cache)
    assert sorted(e.kind for e in done.removed) == ["llvm", "temp"]
    assert os.path.exists(young) and not os.path.exists(old)


# ---- only fusedsl's files --------------------------------------------------------------------------
def test_clear_and_prune_remove_only_what_fusedsl_wrote(cache):
    mine = [llvm_entry(0), library_entry(cache, 0), pch_entry(cache, 0)]
    hexname = _key("foreign")
    foreign = {
        os.path.join(cache, "notes.txt"): b"my notes",
        os.path.join(cache, "llvm", "README"): b"x",
        # named like an object file, but not in jit.py's format
        os.path.join(cache, "llvm", hexname[:2], hexname + ".o"): b"ELF? no, mine",
        # a library without its recorded checksum, one whose .sum is not a checksum, one not ELF
        os.path.join(cache, "ascendc", _key(1) + ".so"): b"\x7fELF lonely",
        os.path.join(cache, "ascendc", _key(2) + ".so"): b"\x7fELF",
        os.path.join(cache, "ascendc", _key(2) + ".so.sum"): b"not a checksum\n",
        os.path.join(cache, "ascendc", _key(3) + ".so"): b"#!/bin/sh\n",
        os.path.join(cache, "ascendc", _key(3) + ".so.sum"): (hashlib.sha256(b"#!/bin/sh\n").hexdigest() + "\n").encode(),
        os.path.join(cache, "ascendc", "build.log"): b"log",
        os.path.join(cache, "ascendc", "pch", "mine", "kernel_operator.h.gch"): b"user",
    }
    for path, data in foreign.items():
        cachedir.make_private(os.path.dirname(path))
        with open(path, "wb") as f:
            f.write(data)
    for path in [*mine, *foreign]:
        used(path, 3600)
    # a file of the user's beside a precompiled header: the header goes, the folder and the file stay
    extra = os.path.join(os.path.dirname(mine[2]), "my-flags.txt")
    with open(extra, "w") as f:
        f.write("-O3")
    assert cachesize.prune(cache, 1, target=0).removed
    assert cachesize.clear(cache).remaining.entries == []
    for path, data in foreign.items():
        with open(path, "rb") as f:
            assert f.read() == data, path
    assert os.path.exists(extra)
    assert not any(os.path.exists(p) for p in mine)


def test_a_cache_folder_moved_behind_a_symlink_stays_under_the_limit(cache, tmp_path, monkeypatch):
    """The writers write through a symlinked cache folder (here llvm/ moved to another disk), so
    the prune follows it: before, those objects were invisible to the scan and grew without bound."""
    moved = str(tmp_path / "other-disk" / "llvm")
    cachedir.make_private(moved)
    cachedir.make_private(cache)
    os.symlink(moved, os.path.join(cache, "llvm"))
    monkeypatch.setenv("FUSEDSL_CACHE_MAX_BYTES", "20000")
    for i in range(60):                        # 60 objects of 1,040 bytes: three times the limit
        llvm_entry(i)
    on_disk = [os.path.join(d, f) for d, _, files in os.walk(moved) for f in files]
    assert 10 <= len(on_disk) <= 20, len(on_disk)
    assert sum(map(os.path.getsize, on_disk)) <= 20000 + 1040
    assert cachesize.scan(cache).nbytes == sum(map(os.path.getsize, on_disk))


def test_symlinks_to_folders_are_followed_where_writers_go_and_to_files_never(cache, tmp_path):
    outside = tmp_path / "outside"
    elsewhere = str(outside / "cache")     # valid entries of another cache folder
    os.makedirs(elsewhere)
    obj = os.path.join(elsewhere, "llvm", "ab", "ab" + "0" * 62 + ".o")
    cachedir.make_private(os.path.dirname(obj))
    with open(obj, "wb") as f:
        f.write(jit.MAGIC + bytes(100))
    lib = library_entry(elsewhere, 7)
    gch = pch_entry(elsewhere, 7)
    shared = str(outside / "shared")      # a folder others may write: the writers refuse it, so does the scan
    os.makedirs(os.path.join(shared, "cd"))
    shared_obj = os.path.join(shared, "cd", "cd" + "1" * 62 + ".o")
    with open(shared_obj, "wb") as f:
        f.write(jit.MAGIC + bytes(100))
    os.chmod(os.path.join(shared, "cd"), 0o777)
    llvm_entry(0)
    mine = library_entry(cache, 0)
    followed = {os.path.join(cache, "llvm", "ab"): os.path.dirname(obj),          # a folder of objects
                os.path.join(cache, "ascendc", "pch"): os.path.dirname(os.path.dirname(gch))}
    left = {os.path.join(cache, "ascendc", os.path.basename(lib)): lib,          # a library and its sum
            os.path.join(cache, "ascendc", os.path.basename(lib) + ".sum"): lib + ".sum",
            os.path.join(cache, "llvm", "cd"): os.path.join(shared, "cd"),       # writable by others
            os.path.join(cache, "llvm", "ef"): os.path.join(cache, "llvm")}      # a way back up: entered once
    for link, target in {**followed, **left}.items():
        os.symlink(target, link)
    found = cachesize.scan(cache)
    assert sorted(left) == sorted(p for p in found.others if os.path.islink(p))
    assert sorted(primary(e) for e in found.entries) == sorted(
        [jit._path(_key(0)), mine, os.path.join(cache, "llvm", "ab", os.path.basename(obj)),
         os.path.join(cache, "ascendc", "pch", os.path.basename(os.path.dirname(gch)), "kernel_operator.h.gch")])
    for path in (obj, lib, gch):
        used(path, 7200)
    done = cachesize.prune(cache, 1, target=0)
    assert {e.kind for e in done.removed} == {"llvm", "ascendc", "pch"}
    assert not os.path.exists(obj) and not os.path.exists(gch) and not os.path.exists(mine)
    assert all(os.path.exists(p) for p in (lib, lib + ".sum", shared_obj))   # behind links to files / an unsafe folder
    assert all(os.path.islink(link) for link in {**followed, **left})
    assert cachesize.clear(cache).remaining.entries == []


# ---- several processes ----------------------------------------------------------------------------
WRITER = r'''
import json, sys
import numpy as np
import fusedsl as fs
base = float(sys.argv[1])
x = np.linspace(-3, 3, 1000, dtype=np.float32)
bad = []
for i in range(40):
    c = (base + i % 30) / 32   # 30 kernels of its own, 10 repeats (hits, or builds again if evicted)
    k = fs.fused_kernel(lambda x: fs.exp(x * c) + x * x)
    want = np.exp(x * np.float32(c)) + x * x
    got = k(x)
    if not np.allclose(got, want, rtol=1e-5, atol=1e-5, equal_nan=True):
        bad.append(c)
print(json.dumps({"bad": bad}))
'''


def run_writers(cache: str, env: dict, script: str, bases) -> list[dict]:
    env = {**os.environ, **env, "FUSEDSL_CACHE_DIR": cache, "PYTHONPATH": ROOT}
    procs = [subprocess.Popen([sys.executable, "-c", script, str(b)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for b in bases]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def test_two_processes_filling_a_small_cache_neither_crash_nor_corrupt_it(cache):
    limit = 48 << 10    # a dozen objects: both processes evict each other's entries all the time
    for _ in range(2):  # the second round reads what the first left (hits on entries being evicted)
        results = run_writers(cache, {"FUSEDSL_CACHE_MAX_BYTES": str(limit)}, WRITER, (1.0, 1.5))
        assert results == [{"bad": []}, {"bad": []}]
    found = cachesize.scan(cache)
    assert found.others == [] and all(e.kind == "llvm" for e in found.entries)
    for e in found.entries:   # every entry left is whole
        assert jit.read_cached(os.path.basename(e.files[0])[:-2]) is not None
    # the last prune of each writer left the cache under the limit but for the entry it had just
    # written (slack: one each); a process has two writers: its caller's thread and the thread that
    # writes the optimised objects of its tiered compiles (backend_cpu/jit.py _Upgrades)
    biggest = max(e.nbytes for e in found.entries)
    assert found.nbytes <= limit + 2 * 2 * biggest, (found.nbytes, limit)


LIBRARY_WRITER = r'''
import json, os, sys
import numpy as np
import fusedsl as fs
from fusedsl.backend_ascendc import cpu_runner
base = float(sys.argv[1])
def session_pch(flags, own=cpu_runner._pch_dir):   # the header from the test session's cache, not this one
    mine = os.environ["FUSEDSL_CACHE_DIR"]
    os.environ["FUSEDSL_CACHE_DIR"] = os.environ["SESSION_CACHE"]
    try:
        return own(flags)
    finally:
        os.environ["FUSEDSL_CACHE_DIR"] = mine
cpu_runner._pch_dir = session_pch
x = np.linspace(-2, 2, 512, dtype=np.float32).reshape(8, 64)
bad = []
for rnd in range(2):
    for i in range(3):
        c = base + i
        k = fs.fused_kernel(lambda x: fs.relu(x) * c - 0.5).compile(fs.spec((8, 64), "float32"), target="ascend910b")
        if not np.array_equal(k.simulate(x), np.maximum(x, 0) * np.float32(c) - np.float32(0.5)):
            bad.append(c)
print(json.dumps({"bad": bad}))
'''


def test_two_processes_building_libraries_into_a_cache_of_two_neither_crash_nor_corrupt_it(private_cache_dir):
    """Each library is about 1 MB: under a 2 MB limit every build evicts one, often the other
    process's, sometimes between its check and its load."""
    cache = os.environ["FUSEDSL_CACHE_DIR"]
    # the module cache's ascendc/pch is a link to the session's precompiled header (conftest), which
    # the prune follows: an 80 MB entry that a 2 MB limit would evict at every build.  The writers use
    # it from the session's cache instead, so this cache holds libraries only.
    pch_link = os.path.join(cache, "ascendc", "pch")
    session = os.path.dirname(os.path.dirname(os.readlink(pch_link)))
    os.unlink(pch_link)
    try:
        results = run_writers(cache, {"FUSEDSL_CACHE_MAX_BYTES": "2M", "SESSION_CACHE": session},
                              LIBRARY_WRITER, (2.0, 3.0))   # two kernels in common
        found = cachesize.scan(cache)
    finally:
        os.symlink(os.path.join(session, "ascendc", "pch"), pch_link)
    assert results == [{"bad": []}, {"bad": []}]
    libraries = [e for e in found.entries if e.kind == "ascendc"]
    assert 1 <= len(libraries) <= 3 and found.nbytes <= (2 << 20) + max(e.nbytes for e in libraries)
    assert all(cpu_runner.verified(e.files[0]) for e in libraries)


def test_a_library_evicted_between_the_check_and_the_load_is_built_again(private_cache_dir, monkeypatch):
    k = fs.fused_kernel(lambda x: fs.abs(x) * 3.5 - 1).compile(fs.spec((8, 64), "float32"), target="ascend910b")
    path = cpu_runner.cache_path(k.source, target="ascend910b")
    assert not os.path.exists(path)
    checks = []
    real = cpu_runner.verified

    def verified_then_evicted(p):   # what another process's prune does right after our check
        ok = real(p)
        if ok and p == path and not checks:
            checks.append(p)
            os.unlink(p)
            os.unlink(p + ".sum")
        return ok

    monkeypatch.setattr(cpu_runner, "verified", verified_then_evicted)
    x = np.linspace(-2, 2, 512, dtype=np.float32).reshape(8, 64)
    np.testing.assert_array_equal(k.simulate(x), np.abs(x) * np.float32(3.5) - 1)
    assert checks == [path] and cpu_runner.verified(path)


def test_a_library_a_process_keeps_using_is_marked_used_and_outlives_older_entries(private_cache_dir, monkeypatch):
    """A notebook loads a library once and launches it on every call: those launches mark it used
    (at most once a minute), or an LRU prune takes it for the oldest entry."""
    cache = os.environ["FUSEDSL_CACHE_DIR"]
    k = fs.fused_kernel(lambda x: fs.abs(x) * 1.25 + 3).compile(fs.spec((8, 64), "float32"), target="ascend910b")
    x = np.linspace(-2, 2, 512, dtype=np.float32).reshape(8, 64)
    want = np.abs(x) * np.float32(1.25) + 3
    np.testing.assert_array_equal(k.simulate(x), want)   # built and loaded: later calls reuse the handle
    path = cpu_runner.cache_path(k.source, target="ascend910b")
    other = library_entry(cache, "older")
    used(path, 7200)                       # the disk last saw the library two hours ago
    used(other, 3600)                      # and another library one hour ago
    np.testing.assert_array_equal(k.simulate(x), want)
    assert time.time_ns() - _last_use(path) > 7000 * 10 ** 9   # marked less than a minute ago: not again
    monkeypatch.setattr(cachesize, "_marked", {})              # a minute later
    np.testing.assert_array_equal(k.simulate(x), want)
    assert time.time_ns() - _last_use(path) < 60 * 10 ** 9
    sizes = entry_sizes(cache)
    for entry in sizes:   # the rest (the precompiled header, shared between runs: its last use can
        if entry not in (path, other):   # be hours old on a reused machine) used just now
            used(entry, 0)
    total = cachesize.scan(cache).nbytes
    done = cachesize.prune(cache, total - 1, target=total - sizes[other])
    assert [primary(e) for e in done.removed] == [other]
    assert cpu_runner.verified(path)


def test_llvm_code_a_process_keeps_compiling_from_memory_is_marked_used(cache, monkeypatch):
    """jit.compile_ir answered from memory (a notebook re-binding a kernel it compiled before)
    marks the object file used (at most once a minute), so an LRU prune does not take it for old."""
    ir = ('define i32 @fusedsl_mark_used_probe(i32 %x) {\n  %y = add i32 %x, 7\n  ret i32 %y\n}\n')
    first = jit.compile_ir(ir, "fusedsl_mark_used_probe")
    path = jit._path(first.key)
    assert os.path.exists(path)
    os.utime(path, ns=(time.time_ns() - 7200 * 10 ** 9,) * 2)   # last used two hours ago
    monkeypatch.setattr(cachesize, "_marked", {})
    assert jit.compile_ir(ir, "fusedsl_mark_used_probe") is first   # from memory
    assert time.time_ns() - _last_use(path) < 60 * 10 ** 9


def _last_use(path: str) -> int:
    st = os.stat(path)
    return max(st.st_atime_ns, st.st_mtime_ns)


def test_a_run_after_its_entries_were_cleared_builds_them_again(private_cache_dir, tmp_path_factory):
    cache = os.environ["FUSEDSL_CACHE_DIR"]
    # `fusedsl cache clear` below must only ever see the module's private cache, never the user's
    assert os.path.commonpath([cache, str(tmp_path_factory.getbasetemp())]) == str(tmp_path_factory.getbasetemp())
    script = r'''
import json, sys
import numpy as np
import fusedsl as fs
from fusedsl.backend_ascendc import cpu_runner
from fusedsl.backend_cpu import jit
k = fs.fused_kernel(lambda x: fs.relu(x) * 2.5 + 0.25).compile(fs.spec((8, 64), "float32"), target="ascend910b")
x = np.linspace(-2, 2, 512, dtype=np.float32).reshape(8, 64)
want = np.maximum(x, 0) * np.float32(2.5) + np.float32(0.25)
path = cpu_runner.cache_path(k.source, target="ascend910b")
before = __import__("os").path.exists(path)
ok = bool(np.array_equal(k.simulate(x), want)) and bool(np.allclose(k(x), want))
print(json.dumps({"ok": ok, "library_was_cached": before,
                  "llvm_from_disk": sorted({c.from_disk for c in jit._memory.values()})}))
'''
    first = run_writers(cache, {}, script, [0])[0]
    assert first == {"ok": True, "library_was_cached": False, "llvm_from_disk": [False]}
    assert run_writers(cache, {}, script, [0])[0] == {"ok": True, "library_was_cached": True,
                                                       "llvm_from_disk": [True]}
    # the clear follows ascendc/pch, the session's shared header (conftest): keep that one out of it
    pch_link = os.path.join(cache, "ascendc", "pch")
    shared_pch = os.readlink(pch_link)
    os.unlink(pch_link)
    assert main(["cache", "clear"]) == 0
    assert cachesize.scan(cache).entries == []
    os.symlink(shared_pch, pch_link)
    assert run_writers(cache, {}, script, [0])[0] == first


# ---- fusedsl cache ------------------------------------------------------------------------------------
def test_cache_info_clear_and_prune_say_what_they_see_and_do(cache, capsys, monkeypatch):
    assert main(["cache", "info"]) == 0
    assert capsys.readouterr().out == f"cache folder: {cache} (FUSEDSL_CACHE_DIR) does not exist yet: nothing is cached\n"
    monkeypatch.setenv("FUSEDSL_CACHE_MAX_BYTES", "abc")   # said even before there is a cache
    for action in ("info", "prune"):
        assert main(["cache", action]) == 2
        err = capsys.readouterr().err
        assert err == f"fusedsl cache: error: FUSEDSL_CACHE_MAX_BYTES='abc' is not a size; {HINT}\n", err
    monkeypatch.setenv("FUSEDSL_CACHE_MAX_BYTES", "0")
    objs = [llvm_entry(i, 2000) for i in range(3)]
    lib = library_entry(cache, 0, 5000)
    for age, p in zip((40, 30, 20, 10), [*objs, lib]):
        used(p, age)
    with open(os.path.join(cache, "notes.txt"), "w") as f:
        f.write("mine")
    monkeypatch.setenv("FUSEDSL_CACHE_MAX_BYTES", "8KiB")
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"cache folder: {cache} (FUSEDSL_CACHE_DIR)"
    assert out[1] == "limit: 8.0 KiB (from FUSEDSL_CACHE_MAX_BYTES, 0 for no limit)"
    assert out[2].split() == ["llvm", "LLVM", "object", "code", "(CPU", "executor)", "3", "entries", "6.0", "KiB"]
    assert out[3].split()[-4:] == ["1", "entry", "4.9", "KiB"]      # a library and its checksum
    assert out[4].split()[-4:] == out[5].split()[-4:] == ["0", "entries", "0", "B"]
    assert out[6].split() == ["total", "4", "entries", "10.9", "KiB", "(137%", "of", "the", "limit)"]
    assert out[7] == "not written by fusedsl (left alone): 1"
    # prune: the least recently used down to 90% of the limit (7,372 bytes): two objects go
    assert main(["cache", "prune"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [f"limit 8.0 KiB: removed 2 entries (4.0 KiB) least recently used (llvm 2); left: 2 entries "
                   f"(6.9 KiB) in {cache}",
                   f"left alone, not written by fusedsl: {os.path.join(cache, 'notes.txt')}"]
    assert [os.path.exists(p) for p in [*objs, lib]] == [False, False, True, True]
    assert main(["cache", "clear"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [f"removed 2 entries (6.9 KiB) from {cache} (ascendc 1, llvm 1)",
                   f"left alone, not written by fusedsl: {os.path.join(cache, 'notes.txt')}"]
    assert sorted(os.listdir(cache)) == ["ascendc", "llvm", "notes.txt", "usage"]
    assert cachesize.scan(cache).entries == []
    monkeypatch.setenv("FUSEDSL_CACHE_MAX_BYTES", "")
    assert main(["cache", "info"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == "limit: 2.0 GiB (default; FUSEDSL_CACHE_MAX_BYTES sets it, 0 for no limit)"

"""The on-disk caches run no untrusted code and survive damage (issue 10 items 3 and 4).

Each scenario runs in a subprocess under umask 000 (a fresh interpreter: no library already
loaded, exactly what a later process sees): cache directories are created 0700, a library
planted or truncated in the cache is never loaded but rebuilt, and a group/world-writable
cache directory is refused with a warning in favour of a private temporary cache.
"""
from __future__ import annotations

import json
import shutil
import os
import runpy
import stat
import subprocess
import sys

import numpy as np
import pytest

import fusedsl as fs
from fusedsl import cachedir
from fusedsl.backend_ascendc import cpu_runner

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = r'''
import json, os, sys, warnings
os.umask(0)
import numpy as np
import fusedsl as fs
from fusedsl.backend_ascendc import cpu_runner
relu = fs.fused_kernel(lambda x: fs.relu(x)).compile(fs.spec((8, 64), "float32"), target="ascend910b")
absk = fs.fused_kernel(lambda x: fs.abs(x)).compile(fs.spec((8, 64), "float32"), target="ascend910b")
x = np.linspace(-2, 2, 512, dtype=np.float32).reshape(8, 64)
out = {}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for what in sys.argv[1].split(","):
        k = relu if what == "relu" else absk
        want = np.maximum(x, 0) if what == "relu" else np.abs(x)
        out[what] = {"ok_sim": bool(np.array_equal(k.simulate(x), want)),
                     "ok_call": bool(np.array_equal(k(x), want)),
                     "path": cpu_runner.cache_path(k.source, target="ascend910b")}
out["warnings"] = [str(w.message) for w in caught]
print(json.dumps(out))
'''


def run(cache: str, kernels: str) -> dict:
    env = {**os.environ, "FUSEDSL_CACHE_DIR": cache, "PYTHONPATH": ROOT}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, kernels], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, f"rc {proc.returncode} (negative: killed by a signal)\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def modes(root: str) -> dict:
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            found[os.path.relpath(path, root)] = stat.S_IMODE(os.lstat(path).st_mode)
    return found


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    cache = str(tmp_path_factory.mktemp("cache") / "fusedsl")   # created by fusedsl, umask 000
    first = run(cache, "relu,abs")
    return cache, first


def test_cache_dirs_and_files_are_private_under_umask_000(built):
    cache, first = built
    assert first["relu"]["ok_sim"] and first["abs"]["ok_sim"] and first["relu"]["ok_call"]
    assert first["warnings"] == []
    found = modes(cache)
    assert any(p.startswith("ascendc") for p in found) and any(p.startswith("llvm") for p in found)
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o700
    assert not {p: oct(m) for p, m in found.items() if m & 0o022}, found     # nothing others can write
    dirs = {p: oct(m) for p, m in found.items() if os.path.isdir(os.path.join(cache, p))}
    assert set(dirs.values()) == {"0o700"}, dirs


def test_the_printed_kernels_build_against_one_checked_precompiled_api_header(built, monkeypatch):
    """The two builds made one kernel_operator.h.gch (private, with its checksum), and g++
    reads it instead of parsing the API for a printed kernel (-H marks a used PCH with '!'),
    also for a cube kernel, whose Matmul header includes kernel_operator.h again (the PCH
    folder's forwarding header takes that include)."""
    cache, _ = built
    folders = os.listdir(os.path.join(cache, "ascendc", "pch"))
    assert len(folders) == 1, folders
    gch = os.path.join(cache, "ascendc", "pch", folders[0], "kernel_operator.h.gch")
    assert os.path.getsize(gch) > 1 << 20 and stat.S_IMODE(os.stat(gch).st_mode) == 0o600
    assert cpu_runner.verified(gch)
    monkeypatch.setenv("FUSEDSL_CACHE_DIR", cache)
    flags = cpu_runner.compile_flags("ascend910b")
    assert cpu_runner._pch_dir(flags) == os.path.dirname(gch)      # found, not built again
    src = os.path.join(str(built[0]), "probe.cpp")
    vector = fs.fused_kernel(lambda x: fs.relu(x)).compile(fs.spec((8, 64), "float32"), target="ascend910b").source
    cube = fs.fused_kernel(lambda a, w: fs.relu(a @ w)).compile(
        fs.spec((16, 32), "float16"), fs.spec((32, 16), "float16"), target="ascend910b").source
    assert '#include "lib/matmul_intf.h"' in cube
    for source in (vector, cube):
        try:
            with open(src, "w", encoding="utf-8") as f:
                f.write(source)
            proc = subprocess.run(["g++", f"-I{os.path.dirname(gch)}", *flags, "-fsyntax-only", "-H", src],
                                  capture_output=True, text=True, timeout=300)
        finally:
            os.unlink(src)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert f"! {gch}" in proc.stderr, proc.stderr[:2000]


def test_planted_then_truncated_library_is_never_loaded(built):
    cache, first = built
    relu_so, abs_so = first["relu"]["path"], first["abs"]["path"]
    # another user's code under relu's name (a valid library: it would compute abs)
    with open(abs_so, "rb") as f:
        planted = f.read()
    with open(relu_so, "wb") as f:
        f.write(planted)
    again = run(cache, "relu")
    assert again["relu"]["ok_sim"], "the planted library was loaded"
    # truncated: loading it would SIGBUS this and every later process
    size = os.path.getsize(relu_so)
    with open(relu_so, "r+b") as f:
        f.truncate(size // 3)
    third = run(cache, "relu")
    assert third["relu"]["ok_sim"]
    assert os.path.getsize(relu_so) == size            # rebuilt
    # one flipped byte in the middle
    with open(relu_so, "r+b") as f:
        f.seek(size // 2)
        b = f.read(1)
        f.seek(size // 2)
        f.write(bytes([b[0] ^ 0xFF]))
    assert not cpu_runner.verified(relu_so)


def test_world_writable_cache_dir_is_refused(tmp_path):
    bad = tmp_path / "shared"
    bad.mkdir()
    os.chmod(bad, 0o777)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "FUSEDSL_CACHE_DIR": str(bad), "PYTHONPATH": ROOT, "TMPDIR": str(tmp)}
    code = ("import os, warnings; os.umask(0); import numpy as np, fusedsl as fs\n"
            "from fusedsl import cachedir\n"
            "warnings.simplefilter('always')\n"
            "x = np.linspace(-1, 1, 64, dtype=np.float32)\n"
            "assert np.array_equal(fs.fused_kernel(lambda x: x * 3 + 1)(x), x * 3 + 1)\n"
            "assert os.listdir(os.path.join(cachedir._fallback, 'llvm'))   # the code was cached there\n"
            "print(cachedir._fallback)\n")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "CacheDirWarning" in proc.stderr and "is writable by group or others (mode 777)" in proc.stderr
    assert "uses the private cache" in proc.stderr
    assert os.listdir(bad) == []          # nothing written (or read) there
    fallback = proc.stdout.split()[-1]
    assert fallback.startswith(str(tmp)) and not os.path.exists(fallback)   # removed at exit
    assert os.listdir(tmp) == []
    # a forked child that exits normally leaves its parent's fallback cache alone
    code = ("import os, sys, warnings; warnings.simplefilter('ignore')\n"
            "from fusedsl import cachedir\n"
            "path = cachedir.private_dir('llvm')\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    sys.exit(0)\n"
            "os.waitpid(pid, 0)\n"
            "assert os.path.isdir(path), 'the child removed it'\n")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert os.listdir(tmp) == []


def test_unusable_cache_dir_falls_back(tmp_path, monkeypatch):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    monkeypatch.setenv("FUSEDSL_CACHE_DIR", str(not_a_dir))
    with pytest.warns(cachedir.CacheDirWarning, match="is not a directory.*uses the private cache"):
        path = cachedir.private_dir("ascendc")
    assert cachedir.problem(path) is None and not path.startswith(str(not_a_dir))
    # another user's directory
    monkeypatch.setenv("FUSEDSL_CACHE_DIR", "/")
    if os.stat("/").st_uid != os.geteuid():
        with pytest.warns(cachedir.CacheDirWarning, match="owned by another user"):
            cachedir.private_dir("llvm")


def test_the_cache_key_names_the_api_headers_by_content_not_by_path(tmp_path, monkeypatch):
    """A fresh clone or a second venv (the CPU API at another path) finds the builds of the same
    source and headers; a header that differs is another key."""
    source = "// any source\n"
    here = cpu_runner.cache_path(source, target="ascend910b")
    copy = tmp_path / "include"
    shutil.copytree(cpu_runner.include_dir(), copy)
    monkeypatch.setattr(cpu_runner, "include_dir", lambda: str(copy))
    monkeypatch.setattr(cpu_runner, "_header_digest", None)
    assert f"-I{copy}" in cpu_runner.compile_flags("ascend910b")   # g++ reads the copy
    assert cpu_runner.cache_path(source, target="ascend910b") == here
    (copy / "kernel_operator.h").write_text((copy / "kernel_operator.h").read_text() + "\n// edited\n")
    monkeypatch.setattr(cpu_runner, "_header_digest", None)
    assert cpu_runner.cache_path(source, target="ascend910b") != here


def test_sources_that_differ_only_in_comments_share_a_build(tmp_path):
    """The printed kernels name the user's file (an absolute path) in comments: the same kernel
    traced from another folder is the same library. Code, string literals and line numbers
    (__LINE__) still make another key, and a source the key's scan does not follow (a raw string)
    is keyed as written."""
    kernels = {}
    for folder in ("one", "two"):
        path = tmp_path / folder / "model.py"
        path.parent.mkdir()
        path.write_text("import fusedsl as fs\n\n@fs.fused_kernel\ndef f(a, b):\n    return fs.relu(fs.abs(a) + b)\n")
        f = runpy.run_path(str(path))["f"]
        kernels[folder] = f.compile(fs.spec((4, 64), "float16"), fs.spec((4, 64), "float16"), target="ascend910b")
    one, two = kernels["one"].source, kernels["two"].source
    assert one != two and str(tmp_path / "one" / "model.py") in one
    assert cpu_runner.cache_path(one) == cpu_runner.cache_path(two)
    x = np.linspace(-2, 2, 256, dtype=np.float16).reshape(4, 64)
    np.testing.assert_array_equal(kernels["two"].simulate(x, x), np.maximum(np.abs(x) + x, 0))

    code = 'int f() { return 1; }  // one\n/* a\n   block */ const char* s = "a // b /* c */";\n'
    key = cpu_runner.cache_path
    assert key(code) == key(code.replace("// one", "// two").replace("a\n   block", "b\n   other"))
    assert key(code) != key(code.replace("return 1", "return 2"))
    assert key(code) != key(code.replace('"a // b', '"a // x'))               # in a string: not a comment
    assert key(code) != key(code.replace("/* a\n   block */", "/* a block */"))   # __LINE__ moves
    raw = code + 'const char* r = R"(x)";\n'
    assert key(raw) != key(raw.replace("// one", "// two"))


RACE = r'''
import sys, time
import fusedsl as fs
from fusedsl.backend_ascendc import cpu_runner
# g++ does not build byte-equal libraries every time (random seeds of generated names): a tag only
# this process compiles in, which the cache key does not see, makes each build differ for sure
keyed = cpu_runner._key_flags
cpu_runner._key_flags = lambda flags: [f for f in keyed(flags) if not f.startswith("-DRACE_TAG")]
source = fs.fused_kernel(lambda x: fs.relu(x)).compile(fs.spec((8, 64), "float32"), target="ascend910b").source
source += 'extern "C" { __attribute__((used)) const char* race_tag = RACE_TAG; }\n'
# a slow file system: the moment between a library's rename and its checksum's grows to a second
import os
rename = os.replace
def slow_replace(src, dst):
    rename(src, dst)
    if dst.endswith(".so"):
        time.sleep(1.0)
os.replace = slow_replace
start = float(sys.argv[2])
while time.time() < start:   # every process starts its build at the same moment
    time.sleep(0.001)
cpu_runner.build(source, target="ascend910b", name="race", extra_flags=[f'-DRACE_TAG="{sys.argv[1]}"'])
'''


def test_processes_building_one_library_at_once_all_load_it(tmp_path):
    """Two g++ builds of one source are not always byte-equal (random seeds of generated names):
    processes building the same library at once (xdist workers, two checkouts sharing the cache)
    replaced the .so and its .sum in turn, and one checked the other's .so against its own .sum
    ("does not match its checksum").  Builds of one library are serialised by a lock file, and a
    process that waited loads the library the first one built."""
    import time
    env = {**os.environ, "FUSEDSL_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": ROOT}
    start = str(time.time() + 5.0)
    procs = [subprocess.Popen([sys.executable, "-c", RACE, f"process {i}", start], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(3)]
    results = [p.communicate(timeout=300) + (p.returncode,) for p in procs]
    for out, err, rc in results:
        assert rc == 0, err[-2000:]
    libs = [p for p in (tmp_path / "cache" / "ascendc").glob("*.so")]
    assert len(libs) == 1 and cpu_runner.verified(str(libs[0]))

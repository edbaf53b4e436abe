"""LLVM IR text -> native function address, with an in-memory and an on-disk cache.

Pipeline: parse_assembly -> verify -> O3 for the host CPU (name and features, so AVX-512
and F16C are used) -> object code -> MCJIT.  Object code is what is cached: loading it
skips the optimiser and the code generator, which are nearly all of the compile time.

Disk cache: `$FUSEDSL_CACHE_DIR/llvm/` (default `~/.cache/fusedsl/llvm/`), one file per key, where
the key hashes the IR text, the fusedsl version, the backend's ABI version, the llvmlite
version and the host CPU name and features.  A file is `MAGIC + sha256(payload) +
payload`, written to a temporary name and renamed into place (atomic on POSIX), so a
reader never sees half a file; a file whose checksum does not match is deleted and the
code is rebuilt.  Any OS error on the cache is ignored: the cache only saves time.  A hit marks
the file used and a write is counted against the caches' size limit (fusedsl.cachesize: least
recently used entries are evicted past FUSEDSL_CACHE_MAX_BYTES).  The same files keep the IR a
TileKernel lowers to (`lowered_ir`, compressed, keyed by the kernel's text and fusedsl's sources):
a second process skips the lowering too.
"""
from __future__ import annotations

import hashlib
import os
import re
import tempfile
import threading
import zlib
from dataclasses import dataclass

import llvmlite
import llvmlite.binding as llvm

from .. import cachesize
from ..version import __version__

ABI_VERSION = "1"     # bump when the args layout or the calling convention changes
MAGIC = cachesize.LLVM_MAGIC   # cachesize recognises the files it may evict by it
_DIGEST = 32


def _fusedsl_version() -> str:
    return __version__


@dataclass
class Compiled:
    """A loaded kernel: keep this object alive while the address is used."""

    engine: object
    address: int
    key: str
    from_disk: bool


class _Host:
    """Target machines for this CPU (name and features, so AVX-512 and F16C are used)."""

    _lock = threading.Lock()
    _tm = None

    @classmethod
    def target_machine(cls):
        """The process-wide machine used to optimise and emit code (never given to an engine)."""
        with cls._lock:
            if cls._tm is None:
                cls._tm = cls.new_target_machine()
            return cls._tm

    @staticmethod
    def new_target_machine():
        # An MCJIT engine takes ownership of its target machine and deletes it with
        # itself, so every engine needs a machine of its own.
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_default_triple()
        return target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                            features=llvm.get_host_cpu_features().flatten(),
                                            opt=3, jit=True)

    @staticmethod
    def fingerprint() -> str:
        return f"{llvm.get_host_cpu_name()};{llvm.get_host_cpu_features().flatten()}"


def cache_dir() -> str:
    """Private to this user (fusedsl.cachedir: 0700, ours, else a private temp cache)."""
    from .. import cachedir
    return cachedir.private_dir("llvm")


def _key(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def cache_key(ir_text: str) -> str:
    return _key(ir_text, _fusedsl_version(), ABI_VERSION, llvmlite.__version__, _Host.fingerprint())


_SOURCES = None


def source_fingerprint() -> str:
    """sha256 over fusedsl's own Python sources (computed once per process): what a cached text
    derived by fusedsl's code (`lowered_ir`) is keyed by besides its input -- the version number
    does not change with every edit of a lowering."""
    global _SOURCES
    if _SOURCES is None:
        h = hashlib.sha256()
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        for folder, _, files in sorted(os.walk(root)):
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    h.update(os.path.relpath(path, root).encode() + b"\0")
                    with open(path, "rb") as f:
                        h.update(f.read())
        _SOURCES = h.hexdigest()
    return _SOURCES


def lowered_ir(description: str, lower) -> str:
    """The LLVM IR `lower()` gives for a kernel `description` (its full text and options), from the
    disk cache when this fusedsl source, llvmlite and host lowered it before: a large kernel's
    lowering (Python building and printing up to 500 KB of IR) costs as much as its compile.  Kept
    as one cache entry like object code (`llvm/<2 hex>/<64 hex>.o`: MAGIC, checksum, the IR
    zlib-compressed), under a key of its own kind ("ir" first in the hash)."""
    key = _key("ir", description, source_fingerprint(), llvmlite.__version__, _Host.fingerprint())
    blob = read_cached(key)
    if blob is not None:
        try:
            return zlib.decompress(blob).decode()
        except (zlib.error, UnicodeDecodeError):   # a valid checksum over foreign bytes: lower again
            pass
    ir_text = lower()
    write_cached(key, zlib.compress(ir_text.encode(), 1))
    return ir_text


def verify_ir(ir_text: str):
    """Parse and verify; returns the llvmlite module (raises RuntimeError when invalid)."""
    mod = llvm.parse_assembly(ir_text)
    mod.verify()
    return mod


def _optimised(ir_text: str):
    """The verified module after the O3 pipeline for the host CPU, and the machine used."""
    tm = _Host.target_machine()
    mod = verify_ir(ir_text)
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=3))
    pb.getModulePassManager().run(mod, pb)
    return mod, tm


def optimise_to_object(ir_text: str) -> bytes:
    mod, tm = _optimised(ir_text)
    return tm.emit_object(mod)


def assembly(ir_text: str) -> str:
    """The optimised machine code as text (for inspecting what a kernel compiles to)."""
    mod, tm = _optimised(ir_text)
    return tm.emit_assembly(mod)


# ---- disk cache ------------------------------------------------------------------------------------
def _path(key: str) -> str:
    return os.path.join(cache_dir(), key[:2], key + ".o")


def read_cached(key: str) -> bytes | None:
    """The cached object code, or None (missing, unreadable or corrupted: then deleted)."""
    path = _path(key)
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except OSError:
        return None
    head = len(MAGIC) + _DIGEST
    payload = blob[head:]
    if len(blob) <= head or blob[:len(MAGIC)] != MAGIC or hashlib.sha256(payload).digest() != blob[len(MAGIC):head]:
        try:
            os.unlink(path)
        except OSError:
            pass
        return None
    cachesize.touch(path)
    return payload


def write_cached(key: str, payload: bytes) -> None:
    path = _path(key)
    blob = MAGIC + hashlib.sha256(payload).digest() + payload
    try:
        from .. import cachedir
        cachedir.make_private(os.path.dirname(path))
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-", suffix=".o")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        return
    cachesize.wrote(os.path.dirname(os.path.dirname(path)), path, len(blob))


# ---- loading ------------------------------------------------------------------------------------------
_memory: dict[str, Compiled] = {}
_memory_lock = threading.Lock()


def _load(obj: bytes, symbol: str):
    tm = _Host.new_target_machine()
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), tm)
    engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    address = engine.get_function_address(symbol)
    if not address:
        raise RuntimeError(f"symbol {symbol} not found in the compiled kernel")
    return engine, address


# ---- helper functions shared by name ------------------------------------------------------------------
_shared: dict[str, object] = {}      # symbol -> make_ir() of the module defining it
_provided: dict[str, Compiled] = {}  # symbol -> its module, loaded (kept: its code stays mapped)
_shared_lock = threading.Lock()


def share(symbol: str, make_ir) -> None:
    """Declare a helper function that modules call by name without defining it (`declare` in their
    IR): it is compiled from make_ir() once per process, before the first module that declares it
    is loaded, and its address handed to the JIT's linker (llvm.add_symbol).  A large helper every
    kernel of a kind calls (attention's K^T pack: 0.41 of the 0.57 s O3 and the code generator took
    for a whole attention kernel) then costs its compile once, not once per kernel."""
    _shared[symbol] = make_ir


def _provide_shared(ir_text: str) -> None:
    """Load the shared helpers (`share`) that ir_text declares and that are not loaded yet."""
    pending = [s for s in _shared if s not in _provided and s in ir_text
               and re.search(rf'^declare [^@\n]*@"?{re.escape(s)}"?\(', ir_text, re.M)]
    if not pending:
        return
    with _shared_lock:
        for symbol in pending:
            if symbol not in _provided:
                compiled = compile_ir(_shared[symbol](), symbol)
                llvm.add_symbol(symbol, compiled.address)
                _provided[symbol] = compiled


def compile_ir(ir_text: str, symbol: str, use_disk: bool = True) -> Compiled:
    """The address of `symbol` in the compiled module (cached in memory and on disk); the shared
    helpers it declares (`share`) are loaded first."""
    _provide_shared(ir_text)
    key = cache_key(ir_text)
    with _memory_lock:
        hit = _memory.get(key)
        if hit is not None:
            if use_disk:   # in use: pruning evicts the least recently used first
                cachesize.mark_used(_path(key))
            return hit
        obj = read_cached(key) if use_disk else None
        from_disk = obj is not None
        if obj is not None:
            try:
                engine, address = _load(obj, symbol)
            except RuntimeError:     # a valid checksum over bad code: rebuild
                obj = None
        if obj is None:
            from_disk = False
            obj = optimise_to_object(ir_text)
            engine, address = _load(obj, symbol)
            if use_disk:
                write_cached(key, obj)
        compiled = Compiled(engine, address, key, from_disk)
        _memory[key] = compiled
        return compiled

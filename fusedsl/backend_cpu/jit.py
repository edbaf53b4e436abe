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

import atexit
import collections
import ctypes
import hashlib
import os
import re
import tempfile
import threading
import time
import zlib

import llvmlite
import llvmlite.binding as llvm

from .. import cachedir, cachesize
from ..errors import JitTiersError, user_frame
from ..gcpause import gc_paused
from ..version import __version__
from ..record import record

ABI_VERSION = "1"     # bump when the args layout or the calling convention changes
MAGIC = cachesize.LLVM_MAGIC   # cachesize recognises the files it may evict by it
_DIGEST = 32


def _fusedsl_version() -> str:
    return __version__


@record(frozen=False)
class Compiled:
    """A loaded kernel: keep this object alive while the address is used.  A tiered compile's
    (`compile_tiered`) address is its quick entry until `upgraded` holds the optimised code's
    engine; `slot` is the address of the pointer the entry calls through once that is set."""

    engine: object
    address: int
    key: str
    from_disk: bool
    slot: int = 0
    upgraded: object = None


class _Host:
    """Target machines for this CPU (name and features, so AVX-512 and F16C are used)."""

    _lock = threading.Lock()
    _tm = None
    _cpu = None   # (name, features): asked of LLVM once per process (0.2 ms a time, 3-4 times a compile)

    @classmethod
    def target_machine(cls):
        """The process-wide machine used to optimise and emit code (never given to an engine)."""
        with cls._lock:
            if cls._tm is None:
                cls._tm = cls.new_target_machine()
            return cls._tm

    @classmethod
    def cpu(cls) -> tuple[str, str]:
        """The host CPU's name and LLVM feature string (the CPU does not change under a process)."""
        cpu = cls._cpu
        if cpu is None:
            cpu = cls._cpu = (llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten())
        return cpu

    @classmethod
    def new_target_machine(cls):
        # An MCJIT engine takes ownership of its target machine and deletes it with
        # itself, so every engine needs a machine of its own.
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_default_triple()
        name, features = cls.cpu()
        return target.create_target_machine(cpu=name, features=features, opt=3, jit=True)

    @classmethod
    def fingerprint(cls) -> str:
        name, features = cls.cpu()
        return f"{name};{features}"


def cache_dir() -> str:
    """Private to this user (fusedsl.cachedir: 0700, ours, else a private temp cache)."""
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
    """A digest of fusedsl's own Python sources (computed once per process): what a cached text
    derived by fusedsl's code (`lowered_ir`) is keyed by besides its input -- the version number
    does not change with every edit of a lowering."""
    global _SOURCES
    if _SOURCES is None:
        _SOURCES = sources_digest(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return _SOURCES


def sources_digest(root: str) -> str:
    """sha256 over each .py file under `root`: its path, size and modification time in ns -- what
    Python's own bytecode cache trusts to tell an edited source (an edit, a checkout, an install
    writes the file again); reading every source instead cost ~5 ms of a first call.  The entries
    are listed in any order and sorted once (a sort per folder and os.path.relpath per file were
    half of its 1.3 ms at every process's first lowering)."""
    parts = []
    stack = [""]
    while stack:
        rel = stack.pop()
        with os.scandir(os.path.join(root, rel)) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    if e.name != "__pycache__":
                        stack.append(f"{rel}{e.name}/")
                elif e.name.endswith(".py"):
                    st = e.stat()
                    parts.append(f"{rel}{e.name}\0{st.st_size}\0{st.st_mtime_ns}")
    parts.sort()
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


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
    with gc_paused():   # llvmlite's IR objects: collections were a third of a softmax's lowering
        ir_text = lower()
    write_cached(key, zlib.compress(ir_text.encode(), 1))
    return ir_text


def verify_ir(ir_text: str, context=None):
    """Parse and verify; returns the llvmlite module (raises RuntimeError when invalid)."""
    mod = llvm.parse_assembly(ir_text, context=context)
    mod.verify()
    return mod


def _module_for(tm, ir_text: str, context=None):
    """The verified module, for `tm`'s triple and data layout."""
    mod = verify_ir(ir_text, context)
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    return mod


def _optimised(ir_text: str, tm=None, context=None):
    """The verified module after the O3 pipeline for the host CPU, and the machine used (the
    process-wide one unless `tm` is given: a thread compiling beside the caller's has its own
    machine and LLVM context)."""
    tm = tm or _Host.target_machine()
    mod = _module_for(tm, ir_text, context)
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=3))
    pb.getModulePassManager().run(mod, pb)
    return mod, tm


def optimise_to_object(ir_text: str) -> bytes:
    mod, tm = _optimised(ir_text)
    return _emit(tm, mod)


# The code generator's options are LLVM's process-wide command-line flags (llvmlite's set_option).
# The quick tier sets QUICK_CODEGEN's flags for the length of its code generation only ((set, reset)
# pairs), and every code generation here runs under _CODEGEN, so the optimised tier's never sees
# them.  -disable-lsr: the code generator's loop strength reduction was 20 % of a quick compile's code
# generation (a view kernel 3.7 of 18 ms, softmax 4 of 26); the quick code of 18 kernels of every
# kind ran as fast without it (benchmarks/quick_tier.py; RESULTS "View kernel first call").  Another
# LLVM user of this process (numba) generating code in that window would do without it too (its
# speed, not its results), and a -disable-lsr set through llvmlite by the user is reset to false.
QUICK_CODEGEN = (("-disable-lsr", "-disable-lsr=false"),)
_CODEGEN = threading.Lock()


def _emit(tm, mod, flags=(), text: bool = False):
    """`tm`'s object code (or assembly text) for `mod`, under _CODEGEN, with LLVM's `flags` ((set,
    reset) pairs) set for its length only."""
    with _CODEGEN:
        resets = []
        try:
            for on, off in flags:
                llvm.set_option("fusedsl", on)
                resets.append(off)
            return tm.emit_assembly(mod) if text else tm.emit_object(mod)
        finally:
            for off in resets:
                llvm.set_option("fusedsl", off)


# The quick tier's passes: registers for the kernels' stack slots (sroa), folding, CFG cleanup and
# constant propagation.  The lowering (llvm_kernel.py) writes its loops vector by vector, so O3's
# vectorizers, inliner and loop pipeline mostly confirm what is there, at 60 % of the compile (a 6-op
# chain: 0.040 of 0.063 s; the code generator takes the rest); the quick code runs the small kernels
# as fast (benchmarks/RESULTS.md "Tiered compiles"), a 16-bit product's widening loops up to 1.4x
# slower until the optimised code replaces it.  NewGVN, a second instcombine and DSE after these
# (the list until 2026-11-27) cost 10-16 % of a quick compile -- a first call's view kernel 4 of
# its 34 ms -- and no kernel's quick code measured faster for them; sccp stays (without it a float16
# rms_norm's quick code ran 1.08x slower) (RESULTS "View kernel first call (viewcall, 2026-11-27 late)").
QUICK_PASSES = ("sroa", "instruction_combine", "simplify_cfg", "sccp")


def quick_object(ir_text: str) -> bytes:
    """Object code of the quick tier (QUICK_PASSES, then the code generator as for O3 but with
    QUICK_CODEGEN's flags)."""
    tm = _Host.target_machine()
    mod = _module_for(tm, ir_text)
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=2))
    mpm = llvm.create_new_module_pass_manager()   # helpers the kernel does not call (a softmax's
    mpm.add_global_dead_code_eliminate_pass()     # unused reduce.sum): 10 % of its quick compile
    mpm.run(mod, pb)
    fpm = llvm.create_new_function_pass_manager()
    for name in QUICK_PASSES:
        getattr(fpm, f"add_{name}_pass")()
    for fn in mod.functions:
        if not fn.is_declaration:
            fpm.run(fn, pb)
    return _emit(tm, mod, QUICK_CODEGEN)


def assembly(ir_text: str) -> str:
    """The optimised machine code as text (for inspecting what a kernel compiles to)."""
    mod, tm = _optimised(ir_text)
    return _emit(tm, mod, text=True)


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


def write_cached(key: str, payload: bytes, path: str | None = None) -> None:
    """Write the entry of `key` (at `path`: an entry the caller placed earlier -- an upgrade thread's
    object goes where its kernel's cache was when it was compiled, not where FUSEDSL_CACHE_DIR points
    by the time it is done)."""
    path = path or _path(key)
    blob = MAGIC + hashlib.sha256(payload).digest() + payload
    try:
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


def _load(obj: bytes, symbol: str, context=None):
    tm = _Host.new_target_machine()
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly("", context=context), tm)
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
        return _cached_locked(key, symbol, use_disk) or _compile_locked(ir_text, symbol, key, use_disk)


def _load_cached(key: str, symbol: str):
    """(engine, address) of `symbol` in the disk cache's object under `key`, or None (not there, or
    a valid checksum over code that does not load: compiled again)."""
    obj = read_cached(key)
    if obj is None:
        return None
    try:
        return _load(obj, symbol)
    except RuntimeError:
        return None


def _cached_locked(key: str, symbol: str, use_disk: bool) -> Compiled | None:
    """The optimised code of `key` from memory or the disk cache, or None (the caller holds
    _memory_lock)."""
    hit = _memory.get(key)
    if hit is not None:
        if use_disk:   # in use: pruning evicts the least recently used first
            cachesize.mark_used(_path(key))
        return hit
    loaded = _load_cached(key, symbol) if use_disk else None
    if loaded is None:
        return None
    compiled = _memory[key] = Compiled(*loaded, key, True)
    return compiled


def _compile_locked(ir_text: str, symbol: str, key: str, use_disk: bool) -> Compiled:
    """Optimise, load and cache `ir_text` (the caller holds _memory_lock)."""
    obj = optimise_to_object(ir_text)
    engine, address = _load(obj, symbol)
    if use_disk:
        write_cached(key, obj)
    compiled = _memory[key] = Compiled(engine, address, key, False)
    return compiled


# ---- tiered compiles ----------------------------------------------------------------------------------
# A kernel's first call on a cold cache waits for its compile, and O3 plus the code generator are
# nearly all of that first call (a softmax: 0.10 of 0.15 s).  So a kernel compiles twice: a quick
# tier (QUICK_PASSES: a fifth of O3's optimisation time) that its first call runs, and O3 on a
# background thread, swapped in when ready.  The quick module's entry, `<symbol>.tiered`, calls
# through a pointer (`<symbol>.slot`) once it is set, else the quick code: every holder of the
# entry's address -- a bound call, a call list, the block pool -- runs the optimised code from the
# next launch on, with no Python on the way.  Both tiers compute the same bits (no fast-math: the
# optimisers may not reassociate), so which one ran is only a matter of time.
#
# llvmlite runs every LLVM call under one process-wide lock, so an optimised compile on the thread
# would hold up the caller's next quick compile for one of its LLVM calls (tens of ms): the thread
# starts a job only after UPGRADE_QUIET seconds without a quick compile (a program's kernels are
# compiled one after another at its first call; a test suite compiles all the time and upgrades
# little).  Queued upgrades are dropped at exit (the running one is finished).  The disk cache keeps
# both objects: a process loads the optimised one when it is there, else the quick one (and queues
# the upgrade again), so a short script run twice compiles nothing the second time either way.
#
# FUSEDSL_JIT_TIERS: unset / 1 (tiers), 0 (O3 before the first call, as before tiers), quick (the
# quick tier only, never upgraded: for comparing the two).
_TIER_MODES = {"": "tiers", "1": "tiers", "on": "tiers", "0": "off", "off": "off", "quick": "quick"}
UPGRADE_QUIET = 0.2


def tier_mode() -> str:
    value = os.environ.get("FUSEDSL_JIT_TIERS", "")
    mode = _TIER_MODES.get(value.strip().lower())
    if mode is None:
        raise JitTiersError(f"FUSEDSL_JIT_TIERS={value!r} is not a tier setting", loc=user_frame(),
                            hint="unset it (tiered compiles: quick code first, the optimised code swapped in), "
                                 "or set 0 (optimised before the first call) or quick (the quick code only)")
    return mode


def _entry_ir(ir_text: str, symbol: str) -> str | None:
    """The quick module's entry and slot for `symbol` (a void function), or None when its
    definition is not one this wrapper can forward (then the kernel compiles untiered)."""
    m = re.search(rf'^define void @"?{re.escape(symbol)}"?\(([^)]*)\)', ir_text, re.M)
    if m is None:
        return None
    types = [p.split()[0] for p in m.group(1).split(",") if p.strip()]
    params = ", ".join(f"{t} %a{i}" for i, t in enumerate(types))
    sig = ", ".join(types)
    return (f'\n@"{symbol}.slot" = global ptr null, align 8\n'
            f'define void @"{symbol}.tiered"({params}) {{\n'
            f'entry:\n  %f = load atomic ptr, ptr @"{symbol}.slot" monotonic, align 8\n'
            f'  %up = icmp ne ptr %f, null\n  br i1 %up, label %upgraded, label %own\n'
            f'upgraded:\n  call void ({sig}) %f({params})\n  ret void\n'
            f'own:\n  call void @"{symbol}"({params})\n  ret void\n}}\n')


class _Upgrades:
    """One background thread compiling the optimised tier of tiered kernels, oldest first, after a
    quiet spell (UPGRADE_QUIET), at a lower scheduling priority than the caller's threads (Linux:
    the thread's own nice value), in an LLVM context and with target machines of its own (LLVM's
    are not shared between threads; the context lives as long as the code compiled in it)."""

    def __init__(self):
        self._jobs: collections.deque = collections.deque()
        self._cv = threading.Condition()
        self._thread: threading.Thread | None = None
        self._busy = False
        self._stopping = False
        self._forking = False
        self._last_quick = 0.0
        self._context = None
        self._tm = None

    def quick_compiled(self) -> None:
        with self._cv:
            self._last_quick = time.monotonic()

    def submit(self, job) -> None:
        with self._cv:
            if self._stopping:
                return
            self._jobs.append(job)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="fusedsl-jit-upgrades", daemon=True)
                self._thread.start()
            self._cv.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        """True when no upgrade is queued or running (after waiting at most `timeout` seconds)."""
        with self._cv:
            return self._cv.wait_for(lambda: not self._jobs and not self._busy, timeout)

    def stop(self) -> None:
        """Drop the queued upgrades and wait for the running one (at exit: LLVM must not be torn
        down under a compile; the dropped kernels keep their quick code, the cache its entries)."""
        with self._cv:
            self._stopping = True
            self._jobs.clear()
            thread = self._thread
            self._cv.notify_all()
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def before_fork(self) -> None:
        """Let the running upgrade finish and start no other until the fork is done: a child
        forked while the thread is inside LLVM would inherit llvmlite's lock held by a thread it
        does not have, and hang at its first compile."""
        with self._cv:
            self._forking = True
            self._cv.wait_for(lambda: not self._busy)

    def after_fork_in_parent(self) -> None:
        with self._cv:
            self._forking = False
            self._cv.notify_all()

    def after_fork(self) -> None:
        """In a forked child: no upgrade thread (the parent's did not fork with it); the parent's
        queued upgrades restart here (the child may call those kernels)."""
        jobs = list(self._jobs)
        self.__init__()
        for job in jobs:
            self.submit(job)

    def _next(self):
        """The next job once the caller has been quiet for UPGRADE_QUIET seconds, or None (the
        thread ends; the next submit starts another)."""
        with self._cv:
            while True:
                if not self._jobs or self._stopping:
                    self._thread = None
                    self._cv.notify_all()
                    return None
                rest = self._last_quick + UPGRADE_QUIET - time.monotonic()
                if self._forking:
                    self._cv.wait()
                elif rest <= 0:
                    self._busy = True
                    return self._jobs.popleft()
                else:
                    self._cv.wait(rest)

    def _run(self) -> None:
        try:   # Linux schedules threads one by one: lower this one below the caller's
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
        except (AttributeError, OSError):
            pass
        while True:
            job = self._next()
            if job is None:
                return
            # every LLVM call of this thread while it is busy: a fork waits for those (before_fork);
            # the context and the machine outlive the thread (disposing them as it ends would call
            # LLVM outside `busy`)
            try:
                if self._context is None:
                    self._context = llvm.create_context()
                    self._tm = _Host.new_target_machine()
                _upgrade(job, self._tm, self._context)
            except Exception:   # the quick code stays: correct, slower at worst
                pass
            finally:
                with self._cv:
                    self._busy = False
                    self._cv.notify_all()


def _upgrade(job, tm, context) -> None:
    compiled, ir_text, symbol, where = job
    mod, _ = _optimised(ir_text, tm, context)
    obj = _emit(tm, mod)
    engine, address = _load(obj, symbol, context)
    compiled.upgraded = engine   # kept alive with the quick code that calls it
    ctypes.c_void_p.from_address(compiled.slot).value = address
    if where is not None:   # (after the swap: a cache that cannot take it does not hold the code back)
        write_cached(compiled.key, obj, where)


_upgrades = _Upgrades()
atexit.register(_upgrades.stop)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_upgrades.before_fork, after_in_parent=_upgrades.after_fork_in_parent,
                        after_in_child=_upgrades.after_fork)


def wait_for_upgrades(timeout: float | None = None) -> bool:
    """Wait until every queued optimised compile has been swapped in (benchmarks, tests)."""
    return _upgrades.wait(timeout)


def _quick_key(quick_text: str) -> str:
    return cache_key("quick\0" + ",".join(QUICK_PASSES) + "\0" + repr(QUICK_CODEGEN) + "\0" + quick_text)


def compile_tiered(ir_text: str, symbol: str, use_disk: bool = True) -> Compiled:
    """`compile_ir` for a kernel's entry: the optimised code when the memory or disk cache holds
    it; else the quick tier (from the disk cache, or compiled now), with the optimised compile
    queued to replace it (the comment above).  FUSEDSL_JIT_TIERS=0 compiles the optimised code now
    instead; `quick` never upgrades."""
    mode = tier_mode()
    if mode == "off":
        return compile_ir(ir_text, symbol, use_disk)
    _provide_shared(ir_text)
    key = cache_key(ir_text)
    mkey = key if mode == "tiers" else "quick:" + key   # `quick`: never the optimised code
    with _memory_lock:
        hit = _memory.get(mkey) if mode == "quick" else _cached_locked(key, symbol, use_disk)
        if hit is not None:
            return hit
        entry = _entry_ir(ir_text, symbol)
        if entry is None:
            return _compile_locked(ir_text, symbol, key, use_disk)
        quick = ir_text + entry
        qkey = _quick_key(quick)
        loaded = _load_cached(qkey, symbol + ".tiered") if use_disk else None
        from_disk = loaded is not None
        if loaded is None:
            obj = quick_object(quick)
            loaded = _load(obj, symbol + ".tiered")
            if use_disk:
                write_cached(qkey, obj)
            _upgrades.quick_compiled()
        engine, address = loaded
        slot = engine.get_global_value_address(symbol + ".slot")
        compiled = _memory[mkey] = Compiled(engine, address, key, from_disk, slot)
    if mode == "tiers":
        _upgrades.submit((compiled, ir_text, symbol, _path(key) if use_disk else None))
    return compiled

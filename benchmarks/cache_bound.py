"""What the compile caches' size bound costs (fusedsl.cachesize): per compile, per hit, per prune.

    python benchmarks/cache_bound.py [--objects 20000] [--libraries 500]

In a temporary FUSEDSL_CACHE_DIR filled with `--objects` LLVM objects (2-5 KB, as the CPU executor
writes them) and `--libraries` library entries (900 KB each, a .so and its .so.sum, written in
cpu_runner's layout), measures in one run, as medians:
  - the bound check a compile pays after writing its entry (`cachesize.wrote` below the limit: the
    shared estimate updated under its lock), against the LLVM compile of a small kernel;
  - the mark a disk hit pays (`cachesize.touch`);
  - a prune (the scan of the whole folder and the removal down to 90% of the limit), which runs
    only when the estimate passes the limit: about every tenth of the limit written.
"""
import argparse
import hashlib
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _median_us(fn, n: int) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t)
    return statistics.median(times) / 1e3


def _fill(root: str, objects: int, libraries: int) -> None:
    from fusedsl.backend_cpu import jit
    for i in range(objects):
        jit.write_cached(hashlib.sha256(b"o%d" % i).hexdigest(), os.urandom(2000 + i % 3000))
    folder = os.path.join(root, "ascendc")
    os.makedirs(folder, mode=0o700, exist_ok=True)
    for i in range(libraries):
        path = os.path.join(folder, hashlib.sha256(b"s%d" % i).hexdigest() + ".so")
        data = b"\x7fELF" + os.urandom(900_000)
        with open(path, "wb") as f:
            f.write(data)
        with open(path + ".sum", "w") as f:
            f.write(hashlib.sha256(data).hexdigest() + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--objects", type=int, default=20000)
    ap.add_argument("--libraries", type=int, default=500)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="fusedsl-cache-bench-") as tmp:
        root = os.path.join(tmp, "cache")
        os.environ["FUSEDSL_CACHE_DIR"] = root
        os.environ["FUSEDSL_CACHE_MAX_BYTES"] = "0"
        from fusedsl import cachesize
        from fusedsl.backend_cpu import jit
        _fill(root, args.objects, args.libraries)
        found = cachesize.scan(root)
        print(f"cache: {len(found.entries)} entries, {cachesize.human(found.nbytes)} "
              f"({args.objects} objects, {args.libraries} libraries)")

        os.environ["FUSEDSL_CACHE_MAX_BYTES"] = str(found.nbytes * 4)   # below the limit: no scan
        cachesize.prune(root, found.nbytes * 4)                           # the estimate now exists
        kind_dir = os.path.join(root, "llvm")
        some = found.entries[0].files[0]
        check = _median_us(lambda: cachesize.wrote(kind_dir, some, 3000), 3000)
        touch = _median_us(lambda: cachesize.touch(some), 3000)

        ir = jit_ir()
        compile_us = []
        for i in range(15):
            text = ir.replace("0x3FF0000000000000", repr(1.0 + i / 64))
            t = time.perf_counter_ns()
            jit.compile_ir(text, "k", use_disk=False)
            compile_us.append((time.perf_counter_ns() - t) / 1e3)
        compile_med = statistics.median(compile_us)

        scans = []
        for _ in range(5):
            t = time.perf_counter_ns()
            cachesize.scan(root)
            scans.append((time.perf_counter_ns() - t) / 1e6)
        limit = int(found.nbytes * 0.8)
        t = time.perf_counter_ns()
        done = cachesize.prune(root, limit)
        prune_ms = (time.perf_counter_ns() - t) / 1e6

    print(f"bound check per compile (cachesize.wrote below the limit): {check:.1f} us median")
    print(f"mark on a disk hit (cachesize.touch): {touch:.1f} us median")
    print(f"LLVM compile of a small kernel (O3 + object code): {compile_med / 1e3:.1f} ms median; "
          f"the check is {100 * check / compile_med:.3f} % of it")
    print(f"scan of the folder: {statistics.median(scans):.1f} ms median")
    print(f"prune to 90% of a limit at 80% of the folder: {prune_ms:.1f} ms, removed {len(done.removed)} "
          f"entries ({cachesize.human(done.freed)})")


def jit_ir() -> str:
    """A small vector function as LLVM IR (x * c + 1 over n floats): the compile a write follows."""
    return """
define void @k(ptr noalias %x, ptr noalias %y, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
  %px = getelementptr float, ptr %x, i64 %i
  %v = load float, ptr %px
  %m = fmul float %v, 0x3FF0000000000000
  %a = fadd float %m, 1.0
  %py = getelementptr float, ptr %y, i64 %i
  store float %a, ptr %py
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
"""


if __name__ == "__main__":
    main()

"""`wait_for_optimised_code()`: the benchmark scripts call it after a kernel's warm-up call, before
timing it.

A kernel's first call runs the quick tier of the tiered compiles, and O3 is compiled on a background
thread and swapped in (fusedsl/backend_cpu/jit.py, compile_tiered): waiting for it makes the timed
calls run the optimised code, as `fs.benchmark` does.  A checkout from before the tiers (a `--roots`
or benchmarks/trees.py run of an older commit) has no `wait_for_upgrades`: its first call compiled
O3 already, and there is nothing to wait for.
"""
from fusedsl.backend_cpu import jit


def wait_for_optimised_code() -> None:
    wait = getattr(jit, "wait_for_upgrades", None)
    if wait is not None:
        wait(60)

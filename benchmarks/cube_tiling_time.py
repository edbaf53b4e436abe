"""Compile CPU time of the model-scale stack and the part of it spent in cube tiling, for this
checkout against another one (e.g. `git archive <commit> | tar -x -C /tmp/before`).

    python benchmarks/cube_tiling_time.py --before /tmp/before [--sizes 18 72 144] [--repeats 5]

The stack is benchmarks/model_scale.py's x + (gelu(layer_norm(x) @ w1) @ w2) * 0.5 per block
(ascend910b, float32, 64x256, h=1024). Each measurement is a fresh process (nothing cached
between compiles of the same code), the two checkouts alternate (a shared, loaded machine:
both see the same load), and the table gives medians of CPU seconds (time.process_time) of
compiler.compile_module and of the calls to lower.cube.cube_tiling inside it.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def measure(tree: str, blocks: int) -> tuple[float, float, int]:
    """(compile CPU s, cube_tiling CPU s, kernels) of stack(blocks) with fusedsl from `tree`."""
    sys.path.insert(0, tree)
    try:
        import fusedsl.lower.cube as cube
    except ImportError:   # before issue 19's lower/ package (19faa6c): the same search in schedule_cube
        import fusedsl.schedule_cube as cube
    from fusedsl.compiler import compile_module
    from fusedsl.frontend.kernel import describe_arg
    sys.path.insert(1, HERE)
    from model_scale import stack
    spent = [0.0]
    search = cube.cube_tiling

    def timed(*args, **kw):   # schedule_cube_kernel calls it through the module's global
        t0 = time.process_time()
        try:
            return search(*args, **kw)
        finally:
            spent[0] += time.process_time() - t0
    cube.cube_tiling = timed
    kernel, specs = stack(blocks)
    graph = kernel.trace(*specs)
    infos = tuple(describe_arg(n, a) for n, a in zip(kernel.signature.parameters, specs))
    t0 = time.process_time()
    compiled = compile_module(graph, infos)
    return time.process_time() - t0, spent[0], len(compiled.kernels)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", help="another checkout's root (its fusedsl/ is measured as 'before')")
    ap.add_argument("--sizes", type=int, nargs="+", default=[18, 72, 144])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--one", nargs=2, metavar=("TREE", "BLOCKS"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(*measure(args.one[0], int(args.one[1])))
        return 0
    trees = [("after", os.path.join(HERE, ".."))] + ([("before", args.before)] if args.before else [])
    runs = {}
    for _ in range(args.repeats):
        for n in args.sizes:
            for label, tree in trees:
                out = subprocess.run([sys.executable, __file__, "--one", tree, str(n)], check=True,
                                     capture_output=True, text=True).stdout.split()
                runs.setdefault((label, n), []).append((float(out[0]), float(out[1]), int(out[2])))
    print("| blocks | kernels | code | compile CPU s | cube_tiling CPU s |")
    print("|---|---|---|---|---|")
    for n in args.sizes:
        for label, _ in trees:
            rs = runs[label, n]
            print(f"| {n} | {rs[0][2]} | {label} | {statistics.median(r[0] for r in rs):.3f} | "
                  f"{statistics.median(r[1] for r in rs):.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

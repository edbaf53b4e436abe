"""Model-scale benchmark: compile cost and the fused-vs-unfused model for whole blocks.

    python benchmarks/model_scale.py           # print the tables
    python benchmarks/model_scale.py --write   # ... and put them in benchmarks/RESULTS.md
    python benchmarks/model_scale.py --cpu     # the compile table in CPU time (a loaded host)

Tables (one run; medians of repeats; a shared 2-core machine, so compare within a table):
1. compile time against graph size: the stack x + (gelu(layer_norm(x) @ w1) @ w2) * 0.5
   (14 ops per block) and an all-vector graph (chains of elementwise ops over several
   inputs and outputs) at about 100 / 1000 / 4000 ops.  Phases: trace, compile (passes,
   fusion, schedules, tiling), and the Ascend C text of every printable kernel: medians of the
   repeats that compile the graph again in the process (the process memos hit: lowered kernels,
   kernel passes, cube choices), and the first compile's and first text's on their own.
2. the three model blocks of the importer tests (transformer, recommender, ResNet, from
   ONNX) and the 80-block stack: ops, kernels, GM bytes and the MODELLED NPU time
   (fusedsl/cost.py) unfused vs fused.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

import fusedsl as fs  # noqa: E402


def stack(nblocks, d=256, h=1024, m=64):
    def model(x, w1, w2, g, b):
        for _ in range(nblocks):
            x = x + (fs.gelu(fs.layer_norm(x, g, b) @ w1) @ w2) * 0.5
        return x
    args = (fs.spec((m, d), "float32"), fs.spec((d, h), "float32"), fs.spec((h, d), "float32"),
            fs.spec((d,), "float32"), fs.spec((d,), "float32"))
    return fs.fused_kernel(model), args


def vector_graph(nchains, width=4096):
    """nchains independent 8-op chains, each over its own input and a shared row, with its own output."""
    names = [f"x{i}" for i in range(nchains)]

    def body(*xs):
        row = xs[-1]
        outs = []
        for x in xs[:-1]:
            y = fs.relu(x * 1.5 + row)
            y = fs.sigmoid(y) * x - fs.exp(y * -0.5)
            outs.append(fs.maximum(y, 0.25))
        return tuple(outs)
    ns = {"body": body}
    exec(f"def vector_graph({', '.join(names)}, row): return body({', '.join(names)}, row)", ns)
    args = tuple(fs.spec((64, width), "float32") for _ in names) + (fs.spec((width,), "float32"),)
    return fs.fused_kernel(ns["vector_graph"]), args


def ascendc_text(compiled) -> int:
    """Print every kernel the Ascend C backend prints; returns how many."""
    from fusedsl.backend_ascendc import printer
    printable = [p for p in compiled.kernels if p.printable is not None and p.error is None]
    if printable and hasattr(printer, "print_plans"):   # what CompiledKernel.source runs
        printer.print_plans(printable, compiled.target)
    elif printable:   # (an older checkout: benchmarks/trees.py runs this copy there too)
        from fusedsl.backend_ascendc.printers import printer_for_plan
        printer.print_source([printer_for_plan(p, compiled.target) for p in printable], compiled.target)
    return len(printable)


# the clock of the compile table: wall time, or with --cpu this process's CPU time (a loaded host
# stretches wall time by what other processes run; CPU time counts only this one's work)
CLOCK = time.perf_counter


def time_compile(make, size, repeats):
    rows = []
    for _ in range(repeats):
        kernel, args = make(size)
        t0 = CLOCK()
        graph = kernel.trace(*args)
        t1 = CLOCK()
        from fusedsl.compiler import compile_module
        from fusedsl.frontend.kernel import describe_arg
        infos = tuple(describe_arg(n, a) for n, a in zip(kernel.signature.parameters, args))
        compiled = compile_module(graph, infos)
        t2 = CLOCK()
        printed = ascendc_text(compiled)
        t3 = CLOCK()
        rows.append((t1 - t0, t2 - t1, t3 - t2, t3 - t0))
    ops = len(compiled.canonical.main.ops)
    # the repeats after the first compile a graph the process compiled before (what a notebook
    # cell run again does): their medians; the first's compile and text on their own
    med = [statistics.median(r[i] for r in rows[1:] or rows) * 1e3 for i in range(4)]
    return ops, len(compiled.kernels), printed, med, [x * 1e3 for x in rows[0]]


def warm_up():
    """What a process's first compile imports and sets up, outside the table (a graph of the kinds
    the table compiles, none of whose kernels is one of theirs)."""
    def block(x, w, g, b):
        return fs.softmax(fs.relu(fs.layer_norm(x, g, b) @ w) - 1.0, axis=-1) + x
    args = (fs.spec((48, 80), "float32"), fs.spec((80, 80), "float32"), fs.spec((80,), "float32"),
            fs.spec((80,), "float32"))
    compiled = fs.fused_kernel(block).compile(*args)
    ascendc_text(compiled)


def compile_table():
    lines = ["| graph | ops | kernels | printed | trace ms | compile ms | Ascend C ms | total ms | ms per op "
             "| first compile ms | first Ascend C ms |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    cases = [("stack", stack, [7, 72, 286]), ("vector", vector_graph, [10, 100, 400])]
    warm_up()
    for label, make, sizes in cases:
        for size in sizes:
            ops, kernels, printed, med, first = time_compile(make, size, 6 if size < 200 else 4)
            lines.append(f"| {label} x{size} | {ops} | {kernels} | {printed} | {med[0]:.0f} | {med[1]:.0f} | "
                         f"{med[2]:.0f} | {med[3]:.0f} | {med[3] / ops:.3f} | {first[1]:.0f} | {first[2]:.0f} |")
    return "\n".join(lines)


def model_table():
    from onnx_models import MODELS
    lines = ["| model | graph ops | kernels unfused -> fused | GM bytes unfused -> fused | "
             "modelled us unfused -> fused | speedup (model) |", "|---|---|---|---|---|---|"]

    def row(label, compiled):
        rep = compiled.report()
        fused = [k.model for k in rep.kernels]
        from fusedsl.cost import unfused_cost
        unf = unfused_cost(compiled.canonical.main, compiled.target)
        gm_u, gm_f = sum(c.gm_bytes for c in unf), sum(c.gm_bytes for c in fused)
        ops = sum(1 for op in compiled.canonical.main.ops if op.name != "constant")
        lines.append(f"| {label} | {ops} | {len(unf)} -> {len(rep.kernels)} | {gm_u} -> {gm_f} | "
                     f"{rep.model_time_us_unfused:.1f} -> {rep.model_time_us_fused:.1f} | "
                     f"{rep.model_time_us_unfused / rep.model_time_us_fused:.2f}x |")

    for name, make in MODELS.items():
        model, feeds = make()
        kernel = fs.from_onnx(model)
        row(f"{name} block (ONNX)", kernel.compile(*feeds.values()))
    k, args = stack(80)
    row("80-block stack (64x256, h=1024)", k.compile(*args))

    @fs.fused_kernel
    def seed(a, b):
        return fs.relu(fs.abs(a) + b)
    row("seed relu(abs(a[128]) + b[192,128])", seed.compile(np.zeros(128, np.float32),
                                                          np.zeros((192, 128), np.float32)))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--cpu", action="store_true", help="time the compile table in this process's CPU time "
                        "(time.process_time) instead of wall time: for a loaded host (not with --write)")
    args = parser.parse_args()
    if args.cpu and args.write:
        parser.error("--cpu measures another quantity than the table in RESULTS.md: not with --write")
    if args.cpu:
        global CLOCK
        CLOCK = time.process_time
    t1 = compile_table()
    t2 = model_table()
    text = ("## Model scale\n\n"
            "Command: `python benchmarks/model_scale.py --write` (medians of 5 runs, 3 for the largest; "
            "2 shared cores).\n\n"
            "Compile time against graph size (trace; compile = canonicalize + fuse + schedules + tiling; "
            "Ascend C = the text of every printable kernel; `printed` counts them: every kernel of both graphs "
            "prints, the stack's matmuls with their epilogues and the next block's layer_norm included). "
            "Before the linear-time fusion pass the 80-block "
            "stack (1122 ops) took 8.9 s to compile and 8 blocks 35 ms (26x faster growth than the op "
            "count):\n\n" + t1 + "\n\n"
            "Model blocks: unfused = every op its own kernel; times are MODELLED NPU time "
            "(fusedsl/cost.py, AutoFuse's published coefficients, ascend910b), not measurements:\n\n" + t2 + "\n")
    print(text)
    if args.write:
        path = os.path.join(HERE, "RESULTS.md")
        old = open(path, encoding="utf-8").read()
        if "## Model scale" in old:
            old = re.sub(r"## Model scale\n.*?(?=\n## |\Z)", text.rstrip() + "\n", old, flags=re.S)
        else:
            old = old.rstrip() + "\n\n" + text
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.write(old)
        os.replace(path + ".tmp", path)


if __name__ == "__main__":
    main()

"""KernelBench levels 1 and 2 through `fs.from_torch`: import, print, simulate, CPU call, time.

    KERNELBENCH_DIR=/path/to/KernelBench-checkout python benchmarks/kernelbench.py [--write]
        [--levels 1,2] [--only NAME_SUBSTRING] [--simulate all|none|N] [--timeout S] [--clock wall|cpu]

KernelBench (github.com/ScalingIntelligence/KernelBench) is not part of fusedsl and this
script fetches nothing: KERNELBENCH_DIR names a checkout (the directory that holds
`KernelBench/level1/*.py`).  Each program defines a PyTorch `Model`, `get_inputs()` and
`get_init_inputs()`; the script executes the program's own source, builds the model with
`torch.manual_seed(0)`, and runs, per program:

  imported   fs.from_torch(model, *inputs) succeeds (the column says which op stops it)
  printed    compile(target="ascend910b") and every kernel's Ascend C source is printed
  simulate   the printed kernels run with g++ on the CPU Ascend C API (k.simulate) and agree
             with eager torch; run on every N-th printed program (--simulate N), g++ is slow
  cpu        kernel(*inputs) (the LLVM executors) agrees with eager torch
  time       median of kernel(*inputs) / median of eager model(*inputs), same run (wall time, or
             with --clock cpu the process's CPU time per call)
  compile    median of kernel(*inputs) / median of torch.compile(model)(*inputs) (inductor on the
             CPU, compiled by a first call that is not timed; on every N-th program with
             --vs-compile N, all or none: inductor's compile costs seconds to a minute per program)

The summary prints the geomean of time / eager over every CPU-correct program and over the
issue's scope (no 3-D convolution, plain or transposed), and per family (`family()`).

Scaling rule (the suite's sizes are for a GPU: up to GBs of inputs).  Before executing a
program, every module-level assignment of an integer literal (or an arithmetic expression of
integer literals, e.g. `1024 * 2`) whose name contains "batch" becomes min(value, 2), and
every other such integer above CAP becomes CAP, as does every integer above CAP in a tuple
literal (a shape); CAP = 32 (powers of two stay divisible by the small group/head counts).
Values computed from these names (tuples, products in get_init_inputs) follow.  If eager
torch fails on the scaled program (a shape constraint the cap broke), CAP 64 and then 128
are tried, then the same with the batch capped like the other sizes.  "agree" is |got - want| <= 1e-3 + 1e-3 * |want|
after casting to float64 (bool/int results: equal).

`--write` replaces the "KernelBench" section of benchmarks/RESULTS.md (other sections stay).
"""
from __future__ import annotations

import argparse
import ast
import collections
import json
import math
import os
import re
import signal
import statistics
import sys
import time
import traceback
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import fusedsl as fs  # noqa: E402

import torch  # noqa: E402

CAPS = (32, 64, 128)
TARGET = "ascend910b"
SECTION = "## KernelBench (levels 1 and 2 through fs.from_torch)"


# ---- loading and scaling ---------------------------------------------------------------------
def _int_value(node):
    """The value of an integer literal expression (`1024`, `16384 * 2`, `2 ** 10`), else None."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Add, ast.Sub, ast.Pow, ast.FloorDiv)):
        a, b = _int_value(node.left), _int_value(node.right)
        if a is None or b is None:
            return None
        if isinstance(node.op, ast.Pow) and b > 64:
            return None
        return {ast.Mult: a * b, ast.Add: a + b, ast.Sub: a - b, ast.Pow: a ** b if isinstance(node.op, ast.Pow) else 0,
                ast.FloorDiv: a // b if b else 0}[type(node.op)]
    return None


def scaled_source(src: str, path: str, cap: int, batch_cap: int):
    """The program's module AST with its big integer globals scaled (see the module docstring),
    and the list of `name: old->new` changes."""
    tree = ast.parse(src, path)
    changes = []
    for stmt in tree.body:
        if not isinstance(stmt, ast.Assign):
            continue
        names = [t.id for t in stmt.targets if isinstance(t, ast.Name)]
        if not names:
            continue
        limit = batch_cap if any("batch" in n.lower() for n in names) else cap
        if isinstance(stmt.value, ast.Tuple):   # a shape literal: (32768,) or (4096, 4096)
            elts = []
            for e in stmt.value.elts:
                v = _int_value(e)
                elts.append(ast.copy_location(ast.Constant(min(v, cap)), e) if v is not None and v > cap else e)
            old = ast.unparse(stmt.value)
            stmt.value.elts = elts
            if ast.unparse(stmt.value) != old:
                changes.append(f"{'='.join(names)}: {old}->{ast.unparse(stmt.value)}")
            continue
        value = _int_value(stmt.value)
        if value is None:
            continue
        new = min(value, limit)
        if new != value:
            stmt.value = ast.copy_location(ast.Constant(new), stmt.value)
            changes.append(f"{'='.join(names)}: {value}->{new}")
    return compile(tree, path, "exec"), changes


def load_case(path: str):
    """(model, inputs, want, scaling notes) for one program, scaled until eager torch runs it."""
    src = open(path, encoding="utf-8").read()
    last = None
    # batch 2 first; a program whose batch must equal another size (HingeLoss: [B, B] * [B])
    # then gets batch = cap as well
    for cap, batch_cap in [(c, 2) for c in CAPS] + [(c, c) for c in CAPS]:
        code, changes = scaled_source(src, path, cap, batch_cap)
        ns = {"__name__": "kernelbench_case", "__file__": path}
        exec(code, ns)
        torch.manual_seed(0)
        try:
            model = ns["Model"](*ns["get_init_inputs"]())
            model.eval()
            torch.manual_seed(1)
            inputs = list(ns["get_inputs"]())
            with torch.no_grad():
                want = model(*inputs)
            return model, inputs, want, changes
        except Exception as exc:   # a constraint the cap broke: try a larger cap
            last = exc
    raise RuntimeError(f"eager torch fails on every scaling: {type(last).__name__}: {last}")


# ---- one program -----------------------------------------------------------------------------
class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout()


def _np(x):
    """A tensor as numpy; a Python number or None stays what it is (the model's own argument)."""
    if isinstance(x, torch.Tensor):
        x = x.detach()
        if x.dtype == torch.bfloat16:
            x = x.float()
        return x.numpy()
    return x


def agree(got, want) -> bool:
    gots = got if isinstance(got, tuple) else (got,)
    wants = want if isinstance(want, (tuple, list)) else (want,)
    if len(gots) != len(wants):
        return False
    for g, w in zip(gots, wants):
        g, w = np.asarray(g), np.asarray(_np(w))
        if g.shape != w.shape and g.size != w.size:
            return False
        g, w = g.reshape(w.shape), w
        if w.dtype.kind in "biu":
            if not np.array_equal(g.astype(np.int64), w.astype(np.int64)):
                return False
            continue
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        same_nan = np.isnan(g64) == np.isnan(w64)
        ok = np.abs(g64 - w64) <= 1e-3 + 1e-3 * np.abs(w64)
        if not (same_nan.all() and (ok | np.isnan(w64)).all()):
            return False
    return True


CLOCK = "wall"   # --clock: "wall" (perf_counter, one call per sample) or "cpu" (below)


def median_time(fn, repeats=5) -> float:
    if CLOCK == "cpu":
        return median_cpu_time(fn, repeats)
    t0 = time.perf_counter()
    fn()
    if time.perf_counter() - t0 > 1.0:   # a slow call: one more timed run is enough
        repeats = 1
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def median_cpu_time(fn, repeats=5) -> float:
    """The process's CPU time per call (every thread's, time.process_time), median of `repeats`
    samples of enough calls to last ~2 ms of CPU time.  On a shared host wall time counts the
    time other jobs hold the cores (one program's wall ratio moved 3x between runs); CPU time
    counts the work, and a pool thread's work too."""
    t0 = time.process_time()
    fn()
    first = time.process_time() - t0
    if first > 1.0:
        repeats = 1
    number = max(1, min(10000, int(2e-3 / max(first, 1e-7))))
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        for _ in range(number):
            fn()
        times.append((time.process_time() - t0) / number)
    return statistics.median(times)


_OP = re.compile(r"(aten\.[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)?)")


def blocker(exc: BaseException) -> str:
    """A short name for what stopped a program: the ATen op, else the error's kind."""
    msg = getattr(exc, "message", None) or str(exc)
    m = _OP.search(msg)
    if m:
        op = m.group(1).removesuffix(".default")
        rest = msg[m.end():].split("\n")[0]
        # "aten.convolution.default: transposed ..." says which variant; "... is not supported" says no more
        why = rest.lstrip(".default").lstrip(": ").split(";")[0] if rest.startswith((".default:", ":")) else ""
        return f"{op}: {why[:60]}" if why else op
    first = msg.strip().splitlines()[0] if msg.strip() else ""
    return f"{type(exc).__name__}: {first[:70]}"


def run_case(path: str, simulate, timeout: float, vs_compile=lambda: False) -> dict:
    """One program's row; `simulate()` is asked once the program printed, `vs_compile()` once
    it was timed against eager torch (sampling)."""
    row = {"name": os.path.splitext(os.path.basename(path))[0], "imported": False, "printed": None,
           "kernels": None, "simulate": None, "cpu": None, "ratio": None, "ratio_compile": None,
           "blocker": "", "scaled": ""}
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(int(timeout))
    stage = "load"
    try:
        model, inputs, want, changes = load_case(path)
        row["scaled"] = ", ".join(changes)
        stage = "import"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kernel = fs.from_torch(model, *inputs)
        row["imported"] = True
        stage = "cpu"
        got = kernel(*inputs)
        row["cpu"] = agree(got, want)
        stage = "print"
        compiled = kernel.compile(*inputs, target=TARGET)
        plans = compiled.kernels
        ok = [p for p in plans if p.error is None and p.printable is not None]
        row["kernels"] = f"{len(ok)}/{len(plans)}"
        try:
            source = compiled.source   # every kernel printed
            row["printed"] = bool(source)
        except fs.FusedslError as exc:
            row["printed"] = False
            row["blocker"] = "print: " + (exc.message.splitlines()[0][:80])
        if row["printed"] and simulate():
            stage = "simulate"
            args = [_np(x) for x in kernel._with_weights(inputs)]
            row["simulate"] = agree(compiled.simulate(*args), want)
        stage = "time"   # last: a slow CPU kernel runs out of time here, after the other verdicts
        np_inputs = [_np(x) for x in inputs]
        with torch.no_grad():
            t_eager = median_time(lambda: model(*inputs))
        t_fs = median_time(lambda: kernel(*np_inputs))
        row["ratio"] = t_fs / t_eager if t_eager > 0 else None
        if row["cpu"] and vs_compile():
            stage = "torch.compile"   # after every other verdict: inductor may run out of time
            torch._dynamo.reset()     # no program's guards or cache limits carry over
            fast = torch.compile(model)
            with torch.no_grad():
                fast(*inputs)         # the compile, not timed
                t_compile = median_time(lambda: fast(*inputs))
            row["ratio_compile"] = t_fs / t_compile if t_compile > 0 else None
    except Timeout:
        row["blocker"] = row["blocker"] or f"timeout in {stage} ({timeout:.0f} s)"
    except Exception as exc:   # noqa: BLE001 (a benchmark reports every failure and goes on)
        text = blocker(exc)
        if stage == "import":
            row["blocker"] = text
        elif not row["blocker"]:
            row["blocker"] = f"{stage}: {text}"
        if os.environ.get("KERNELBENCH_TRACE"):
            traceback.print_exc()
    finally:
        signal.alarm(0)
    return row


# ---- the table -------------------------------------------------------------------------------
def _mark(v):
    return "-" if v is None else ("yes" if v else "no")


def is_conv3d(name: str) -> bool:
    return "conv" in name.lower() and "3d" in name.lower()


def family(name: str) -> str:
    """The program's family by its file name (the RESULTS.md tables group by it)."""
    n = name.lower()
    if is_conv3d(name):
        return "3-D conv (plain / transposed)"
    if "depthwise" in n:
        return "depthwise conv"
    if "conv_transposed" in n or "convtranspose2d" in n:
        return "transposed conv (1-D / 2-D)"
    if "conv" in n:
        return "conv (1-D / 2-D)"
    if "cumsum" in n or "cumprod" in n:
        return "scan"
    if any(k in n for k in ("matmul", "matrix_multiplication", "matrix_vector", "gemm", "bmm")) \
            and "scalar" not in n:
        return "matmul / gemm"
    if any(k in n for k in ("norm", "pool", "reduction", "loss", "softmax", "argm", "attention")):
        return "norm / pool / reduction / loss / softmax / attention"
    return "elementwise / other"


def geomean(xs) -> float:
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def timed(rows: list[dict], key: str = "ratio") -> list[float]:
    """The time ratios of the programs whose CPU call is correct (the geomean's set)."""
    return [r[key] for r in rows if r.get(key) and r["cpu"]]


def summarize(level: str, rows: list[dict]) -> list[str]:
    n = len(rows)
    in_scope = [r for r in rows if not is_conv3d(r["name"])]
    imp = sum(r["imported"] for r in rows)
    imp_scope = sum(r["imported"] for r in in_scope)
    printed = sum(bool(r["printed"]) for r in rows)
    sim_run = [r for r in rows if r["simulate"] is not None]
    cpu_ok = sum(bool(r["cpu"]) for r in rows)
    ratios, ratios_scope = timed(rows), timed(in_scope)
    geo, geo_scope = geomean(ratios), geomean(ratios_scope)
    missing = collections.Counter(r["blocker"] for r in rows if not r["imported"] and r["blocker"])
    lines = [f"**{level}**: {n} programs; imported {imp}/{n} ({100 * imp / max(n, 1):.0f} %), "
             f"{imp_scope}/{len(in_scope)} ({100 * imp_scope / max(len(in_scope), 1):.0f} %) without 3-D convolutions; "
             f"all kernels printed {printed}; simulate correct {sum(bool(r['simulate']) for r in sim_run)}/"
             f"{len(sim_run)} run; CPU call correct {cpu_ok}; geomean time vs eager torch {geo:.3g}x "
             f"(over {len(ratios)} correct programs; < 1 is faster), {geo_scope:.3g}x in scope "
             f"(over {len(ratios_scope)} without 3-D convolutions)" + (
                 f"; geomean time vs torch.compile {geomean(timed(rows, 'ratio_compile')):.3g}x over the "
                 f"{len(timed(rows, 'ratio_compile'))} programs timed against it, "
                 f"{geomean(timed(in_scope, 'ratio_compile')):.3g}x in scope" if timed(rows, "ratio_compile") else ""),
             "",
             "Geomean time vs eager per family: " + ", ".join(
                 f"{fam} {geomean(timed(fam_rows)):.3g}x ({len(timed(fam_rows))})"
                 for fam, fam_rows in sorted(_by_family(rows).items())), "",
             "Top reasons a program does not import: " +
             ", ".join(f"`{k}` {v}" for k, v in missing.most_common(15)), ""]
    return lines


def _by_family(rows: list[dict]) -> dict[str, list[dict]]:
    out = collections.defaultdict(list)
    for r in rows:
        out[family(r["name"])].append(r)
    return out


def table(rows: list[dict]) -> list[str]:
    out = ["| program | imported | kernels printed | simulate | CPU correct | time / eager | time / torch.compile "
           "| stops at / note |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.3g}"
        vs_compile = "-" if r.get("ratio_compile") is None else f"{r['ratio_compile']:.3g}"
        printed = "-" if r["printed"] is None else (("all " if r["printed"] else "not all ") + (r["kernels"] or ""))
        note = r["blocker"].replace("|", "/")
        out.append(f"| {r['name']} | {_mark(r['imported'])} | {printed} | {_mark(r['simulate'])} | "
                   f"{_mark(r['cpu'])} | {ratio} | {vs_compile} | {note} |")
    return out


def write_section(lines: list[str]) -> None:
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "RESULTS.md")
    text = open(path, encoding="utf-8").read()
    body = "\n".join([SECTION, ""] + lines).rstrip() + "\n"
    start = text.find(SECTION)
    if start < 0:
        text = text.rstrip() + "\n\n" + body
    else:
        end = text.find("\n## ", start + len(SECTION))
        text = text[:start] + body + (text[end:] if end >= 0 else "")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", default="1,2")
    ap.add_argument("--only", default=None, help="run the programs whose file name contains this")
    ap.add_argument("--simulate", default="4", help="all, none, or N: simulate every N-th printed program")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per program")
    ap.add_argument("--write", action="store_true", help="rewrite the KernelBench section of RESULTS.md")
    ap.add_argument("--before", default=None, help="a line of earlier figures to keep in the section")
    ap.add_argument("--json", default=None, help="also write the rows (per level) to this JSON file")
    ap.add_argument("--vs-compile", default="none",
                    help="all, none, or N: time every N-th CPU-correct program against torch.compile too")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="time per call: wall (one call per sample) or the process's CPU time (median_cpu_time)")
    args = ap.parse_args(argv)
    global CLOCK
    CLOCK = args.clock
    root = os.environ.get("KERNELBENCH_DIR")
    if not root:
        print("set KERNELBENCH_DIR to a KernelBench checkout (this script fetches nothing)", file=sys.stderr)
        return 2
    torch.set_num_threads(1)   # with 2 threads on this loaded 2-core host a 32x32 matmul took 69 ms (OpenMP spinning)
    every = {"all": 1, "none": 0}.get(args.simulate)
    every = int(args.simulate) if every is None else every
    every_compile = {"all": 1, "none": 0}.get(args.vs_compile)
    every_compile = int(args.vs_compile) if every_compile is None else every_compile
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [f"Command: `KERNELBENCH_DIR=<checkout> python benchmarks/kernelbench.py --write --simulate "
             f"{args.simulate} --vs-compile {args.vs_compile} --clock {args.clock}` (run {started}; KernelBench levels {args.levels}; shapes scaled as the "
             "script's docstring says; target ascend910b for printing and simulate; times are medians of 5 "
             "calls on a shared 2-core machine; eager torch with torch.set_num_threads(1): with 2 threads its OpenMP barriers made a 32x32 matmul take 69 ms on this loaded host).", ""]
    if args.before:
        lines += [args.before, ""]
    all_tables, all_rows = [], {}
    for level in args.levels.split(","):
        folder = os.path.join(root, "KernelBench", f"level{level}")
        files = sorted((f for f in os.listdir(folder) if f.endswith(".py")),
                       key=lambda f: int(f.split("_")[0]) if f.split("_")[0].isdigit() else 0)
        if args.only:
            files = [f for f in files if args.only in f]
        rows, printed_seen, timed_seen = [], [0], [0]

        def sample():
            printed_seen[0] += 1   # the 1st, (N+1)-th, ... printed program is simulated
            return bool(every) and (printed_seen[0] - 1) % every == 0

        def sample_compile():
            timed_seen[0] += 1     # the 1st, (N+1)-th, ... timed program is timed against torch.compile
            return bool(every_compile) and (timed_seen[0] - 1) % every_compile == 0

        for f in files:
            t0 = time.perf_counter()
            row = run_case(os.path.join(folder, f), simulate=sample, timeout=args.timeout,
                           vs_compile=sample_compile)
            rows.append(row)
            ratio = "" if row["ratio"] is None else f"{row['ratio']:.3g}x"
            if row["ratio_compile"] is not None:
                ratio += f" ({row['ratio_compile']:.3g}x vs torch.compile)"
            print(f"level{level} {row['name']:<60} imported={_mark(row['imported'])} printed={_mark(row['printed'])} "
                  f"sim={_mark(row['simulate'])} cpu={_mark(row['cpu'])} {ratio} "
                  f"{row['blocker']} ({time.perf_counter() - t0:.1f} s)", flush=True)
        all_rows[level] = rows
        summary = summarize(f"Level {level}", rows)
        print("\n".join(summary), flush=True)
        lines += summary
        all_tables += [f"### Level {level}", ""] + table(rows) + [""]
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(all_rows, f, indent=1)
    if args.write:
        write_section(lines + all_tables)
    return 0


if __name__ == "__main__":
    sys.exit(main())

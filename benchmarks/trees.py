"""Any benchmark script on several fusedsl checkouts, interleaved, its tables compared cell by cell.

    python benchmarks/trees.py --trees before=/path/to/old/checkout,after=. [--rounds 3] [--cold]
                               [--script-from after] [--logs DIR] SCRIPT [ARGS ...]

SCRIPT is a benchmarks/ file name (`row.py`).  Each round runs it once per checkout, each run a
fresh process under `nice -n 5` with that checkout first on PYTHONPATH and as the working directory;
the checkouts alternate (their order reversed every other round), so a shared machine's load falls
on all of them alike.  Each checkout runs its own copy of the script (<checkout>/benchmarks/SCRIPT,
its options as they were then); `--script-from LABEL` runs that checkout's copy in every checkout
instead (for a script the older checkout lacks, or when the newer one's options are needed), and
`--script PATH` runs that file (a copy with options neither checkout's has; SCRIPT still names the logs).
A copy from elsewhere runs as <checkout>/benchmarks/_trees_SCRIPT (removed after the run): the
scripts put their own checkout first on sys.path, so it must sit in the checkout it measures.
Each checkout has its own FUSEDSL_CACHE_DIR, kept across rounds (the scripts' own warm-ups find
their kernels compiled), or a new empty one per run with `--cold`.  `--bytecode` compiles each
checkout's .pyc first: with PYTHONDONTWRITEBYTECODE set (as on the shared host), every process
compiles the source of every module it imports, and fusedsl imports its compiler inside the first
call, so a first-call figure would count that too.  The 1-minute load average is
read before every run.

Every markdown table the script prints is parsed: a row's key is its table's header and its
leading cells up to the first numeric one; each numeric cell (a number with an optional unit:
ns, µs, us, ms, s are turned into seconds; GB/s, x, % are kept) is collected per checkout and
round.  The output is one table per printed table: for each row and numeric column, each
checkout's median over the rounds, the ratio of the last checkout's median to the first's
(for a time, > 1 means the last checkout is slower; for GB/s or a speed-up, < 1 does) and the
ratio of their smallest figures over the rounds ("best / best": the runs least disturbed by the
machine's other tenants; a multi-threaded kernel's time doubles when another process holds a core).  Rows or
columns that only one checkout prints are listed as such.  Every run's full output is kept in
`--logs` (default a new temporary folder, printed) for the lines that are not tables (goals).
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
HELPERS = ("optimised_code.py",)   # modules the scripts import from benchmarks/ (run()'s copy for older checkouts)

# A cell is numeric when it starts with a number and an optional unit, and what follows is not a
# word character (so "8192x8192 f32" and "64x256" are labels, "1.4x" and "12.3 ms (1.1..1.4)" are not).
NUMBER = re.compile(r"^\s*\**([-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?)\s*(ns|µs|us|ms|s|GB/s|x|%)?\**(?![\w/.])")
SECONDS = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}
# "2.14 / 2.17 us" (best / median): two figures of one unit, collected as two columns.
PAIR = re.compile(r"^\s*([-+]?\d[\d,]*(?:\.\d+)?)\s*/\s*([-+]?\d[\d,]*(?:\.\d+)?)\s*(ns|µs|us|ms|s|GB/s|x|%)?\s*$")


def parse_cell(text):
    """[(suffix, value, unit)] of a numeric cell -- times in seconds, unit 's' -- or None for a label."""
    m = PAIR.match(text)
    if m:
        return [(f" [{i}]", *one(m.group(i), m.group(3))) for i in (1, 2)]
    m = NUMBER.match(text)
    if not m:
        return None
    return [("", *one(m.group(1), m.group(2)))]


def one(number, unit):
    value, unit = float(number.replace(",", "")), unit or ""
    if unit in SECONDS:
        return value * SECONDS[unit], "s"
    return value, unit


def tables(stdout, key_cells=1):
    """{(table header, row key, column): (value, unit)} of every markdown table in a script's output
    (a table without a header line -- its second line not |---| -- gets columns "col 1", ...)."""
    blocks, block = [], []
    for line in stdout.splitlines() + [""]:
        line = line.strip()
        if line.startswith("|"):
            block.append([c.strip() for c in line.strip("|").split("|")])
        elif block:
            blocks.append(block)
            block = []
    cells = {}
    for block in blocks:
        ruled = len(block) > 1 and all(set(c) <= set("-: ") for c in block[1])
        header = tuple(block[0]) if ruled else tuple(f"col {i + 1}" for i in range(len(block[0])))
        seen = {}
        for row in block[2:] if ruled else block:
            parsed = [parse_cell(c) for c in row]
            first = next((i for i, p in enumerate(parsed) if p is not None and i >= key_cells), len(row))
            key = " / ".join(row[:first])
            n = seen.get(key, 0)
            seen[key] = n + 1
            if n:
                key += f" (#{n + 1})"
            for i in range(first, len(row)):
                for suffix, value, unit in parsed[i] or ():
                    col = (header[i] if i < len(header) else f"col {i + 1}") + suffix
                    cells[(header, key, col)] = (value, unit)
    return cells


def load():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def fmt(value, unit):
    if unit == "s":
        for scale, name in ((1, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
            if abs(value) >= scale or scale == 1e-9:
                return f"{value / scale:.3g} {name}"
    return f"{value:.4g}{(' ' + unit) if unit == 'GB/s' else unit}"


def run(a, lbl, root, where, caches, loads, failed, r, log):
    """One run of the script in one checkout; its stdout (also written to `log`)."""
    script = a.script_path or os.path.join(where[a.script_from] if a.script_from else root, "benchmarks", a.script)
    own = os.path.join(root, "benchmarks", a.script)
    if os.path.abspath(script) != own:
        # The scripts put their own checkout (or its benchmarks/, tools/) first on sys.path: a foreign
        # copy runs from inside the measured checkout, so that what it imports is that checkout's.
        copy = os.path.join(root, "benchmarks", "_trees_" + a.script)
        shutil.copyfile(script, copy)
        script = copy
    # the helper modules the scripts import beside them, for a checkout from before they existed
    helpers = []
    for name in HELPERS:
        there = os.path.join(root, "benchmarks", name)
        if not os.path.exists(there):
            shutil.copyfile(os.path.join(HERE, name), there)
            helpers.append(there)
    env = dict(os.environ, PYTHONPATH=root,
               FUSEDSL_CACHE_DIR=tempfile.mkdtemp(prefix=f"trees-cold-{lbl}-") if a.cold else caches[lbl])
    loads.append(load())
    t0 = time.time()
    try:
        p = subprocess.run(["nice", "-n", "5", sys.executable, script, *a.args], cwd=root, env=env,
                           capture_output=True, text=True, timeout=a.timeout)
    finally:
        if os.path.basename(script).startswith("_trees_"):
            os.remove(script)
        for there in helpers:
            os.remove(there)
    with open(log, "w") as f:
        f.write(f"# {script} {' '.join(a.args)} in {root}: exit {p.returncode}, {time.time() - t0:.0f} s, "
                f"load {loads[-1]:.2f}\n{p.stdout}\n# stderr\n{p.stderr}")
    print(f"round {r + 1} {lbl}: exit {p.returncode}, {time.time() - t0:.0f} s, load {loads[-1]:.2f} ({log})",
          file=sys.stderr, flush=True)
    if p.returncode:
        failed.append(f"{lbl} round {r + 1}: exit {p.returncode}: {p.stderr.strip().splitlines()[-1:]}")
    return p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trees", required=True, help="label=checkout,label=checkout (first: the baseline)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cold", action="store_true", help="a new empty FUSEDSL_CACHE_DIR per run")
    ap.add_argument("--script-from", default=None, help="run this checkout's copy of SCRIPT in every checkout")
    ap.add_argument("--script", dest="script_path", default=None,
                    help="run this file in every checkout (a copy with options the older copy lacks)")
    ap.add_argument("--logs", default=None)
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--alias", action="append", default=[], metavar="OLD=NEW",
                    help="replace OLD by NEW in every run's output before parsing (a row renamed since)")
    ap.add_argument("--from-logs", action="store_true",
                    help="run nothing: tabulate the runs already in --logs (after a change to the parsing)")
    ap.add_argument("--columns", default=None, metavar="REGEX", help="tabulate only the columns matching this")
    ap.add_argument("--rows", default=None, metavar="REGEX", help="tabulate only the rows matching this")
    ap.add_argument("--bytecode", action="store_true",
                    help="compile each checkout's Python bytecode first (python -m compileall): a host with "
                         "PYTHONDONTWRITEBYTECODE set compiles every imported module's source in every process")
    ap.add_argument("--key-cells", type=int, default=1,
                    help="leading cells always in a row's key, numeric or not (e.g. 2 for | label | blocks | ...)")
    ap.add_argument("script")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    trees = [(lbl, os.path.abspath(path)) for lbl, path in (t.split("=", 1) for t in a.trees.split(","))]
    logs = a.logs or tempfile.mkdtemp(prefix="trees-")
    os.makedirs(logs, exist_ok=True)
    caches = {lbl: tempfile.mkdtemp(prefix=f"trees-cache-{lbl}-") for lbl, _ in trees}
    where = dict(trees)
    runs = {lbl: [] for lbl, _ in trees}
    loads, failed = [], []
    if a.bytecode and not a.from_logs:
        for _, root in trees:
            subprocess.run([sys.executable, "-m", "compileall", "-q", *(os.path.join(root, d) for d in
                            ("fusedsl", "benchmarks", "tools") if os.path.isdir(os.path.join(root, d)))],
                           check=True, capture_output=True)
    for r in range(a.rounds):
        for lbl, root in (trees if r % 2 == 0 else trees[::-1]):
            log = os.path.join(logs, f"{os.path.splitext(a.script)[0]}.{lbl}.{r}.log")
            if a.from_logs:
                with open(log) as f:
                    text = f.read()
                first = text.splitlines()[0]
                loads.append(float(re.search(r"load ([\d.]+)", first).group(1)))
                out = text.split("\n", 1)[1].rsplit("\n# stderr\n", 1)[0]
                if " exit 0," not in first:
                    failed.append(f"{lbl} round {r + 1}: {first}")
            else:
                out = run(a, lbl, root, where, caches, loads, failed, r, log)
            for old, new in (x.split("=", 1) for x in a.alias):
                out = out.replace(old, new)
            runs[lbl].append(tables(out, a.key_cells))
    labels = [lbl for lbl, _ in trees]
    print(f"`python benchmarks/trees.py --trees {a.trees} --rounds {a.rounds}{' --cold' if a.cold else ''}"
          f"{' --script-from ' + a.script_from if a.script_from else ''}"
          f"{' --script ' + a.script_path if a.script_path else ''} {a.script} {' '.join(a.args)}`".rstrip()
          + f": load {min(loads):.2f}-{max(loads):.2f} (median {statistics.median(loads):.2f}); logs {logs}")
    for f in failed:
        print(f"- FAILED: {f}")
    keys = []
    for lbl in labels:
        for got in runs[lbl]:
            for k in got:
                if k not in keys:
                    keys.append(k)
    by_table = {}
    keys = [k for k in keys if (not a.columns or re.search(a.columns, k[2]))
            and (not a.rows or re.search(a.rows, k[1]))]
    for k in keys:
        by_table.setdefault(k[0], []).append(k)
    for header, ks in by_table.items():
        print(f"\nTable: | {' | '.join(header)} |\n")
        print("| row | column | " + " | ".join(labels) + f" | {labels[-1]} / {labels[0]} | best / best |")
        print("|---|---|" + "---|" * (len(labels) + 2))
        for k in ks:
            med, low = {}, {}
            for lbl in labels:
                vals = [got[k] for got in runs[lbl] if k in got]
                if vals:
                    med[lbl] = (statistics.median(v for v, _ in vals), vals[0][1])
                    low[lbl] = min(v for v, _ in vals)
            cells = [fmt(*med[lbl]) if lbl in med else "-" for lbl in labels]
            first, last = med.get(labels[0]), med.get(labels[-1])
            ratio = f"{last[0] / first[0]:.2f}" if first and last and first[0] else ""
            best = f"{low[labels[-1]] / low[labels[0]]:.2f}" if ratio and low[labels[0]] else ""
            print(f"| {k[1]} | {k[2]} | " + " | ".join(cells) + f" | {ratio} | {best} |")


if __name__ == "__main__":
    main()

"""Before/after equivalence of the fusion pass: record the kernel partition of many graphs, compare.

A change to how fusion *searches* (fusedsl/passes/fuse.py: candidate pairs, cycle checks, worklists)
must not change what it *decides*.  `record` compiles a broad set of graphs and, for every graph
the fusion pass sees (its input: the canonical module), runs the pass under a matrix of options and
keeps what it decided: each kernel's ops (indices into the canonical function), kind, reason and
outputs, the reason codes and texts of the report, the kept-merge count and a hash of the fused
module.  `compare` lists every (graph, options) whose record differs and exits 1 if any does.

    python tools/fusion_equivalence.py record before.json [--sources all|examples,stacks,...]
            [--fuzz N] [--kernelbench DIR] [--pytest tests/test_x.py ...]
    python tools/fusion_equivalence.py compare before.json after.json

Sources (each reaches fusion through its ordinary compile path; lowering is skipped where the
script drives the compile itself):
  examples     every kernel the scripts under examples/ compile (run as __main__, with g++)
  notebooks    the code cells of notebooks/*.ipynb, run in one namespace per notebook
  stacks       the transformer-block stack of tests/test_cost_fusion.py (1-18 blocks) and the
               all-vector graph of benchmarks/model_scale.py
  corpus       every program of tools/kernel_corpus.py (by kind, each on its first target)
  models       the ONNX blocks of tests/onnx_models.py
  kernelbench  KernelBench levels 1 and 2 through fs.from_torch (KERNELBENCH_DIR or --kernelbench)
  chains       graphs of 4-70 elementwise chains over a few shared inputs (--chains N, --seed S): many
               sibling groups of one shape, where partner order and the caps decide the kernels
  fuzz         graphs drawn by the hypothesis strategies of tests/test_frontend_fuzz.py (up to 8,
               16 and 48 ops) and tests/test_backend_cpu_fuzz.py (derandomized, and string
               hashing fixed: the same graphs on every run)
  pytest       the test files given with --pytest, run in this process (the torch-import tests'
               models, and whatever else they compile)

Graphs are keyed by their canonical IR without source locations, so a graph compiled by several
sources is recorded once, and a test file's line numbers do not matter.  The candidate count is
kept (it is what a search change changes) but is not compared.
"""
from __future__ import annotations

import argparse
import contextlib
import glob
import hashlib
import io
import json
import os
import re
import runpy
import sys
import tempfile
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import fusedsl as fs  # noqa: E402
from fusedsl.errors import FusedslError  # noqa: E402
from fusedsl.ir.printer import print_module  # noqa: E402
from fusedsl.passes.base import PassManager  # noqa: E402
from fusedsl.passes.fuse import Fuse  # noqa: E402
from fusedsl.passes.fusion_model import fusion_options  # noqa: E402
from fusedsl.passes.pipeline import compile_passes  # noqa: E402
from fusedsl.targets import get_target  # noqa: E402

# (name, target, compile options): the fusion decisions each graph is recorded under. Together
# they reach every refusal code of the vector grouping (FS102-FS109), the horizontal (sibling)
# merges, row, column and cube fusion, views, and single_kernel's errors.
VARIANTS = [
    ("default", "ascend910b", {}),
    ("310p", "ascend310p", {}),
    ("910", "ascend910", {}),
    ("opt1", "ascend910b", {"opt_level": 1}),
    ("opt0", "ascend910b", {"opt_level": 0}),
    ("no-horizontal", "ascend910b", {"disable_passes": ["horizontal"]}),
    ("no-rows", "ascend910b", {"disable_passes": ["row-fusion"]}),
    ("no-views", "ascend910b", {"disable_passes": ["views"]}),
    ("ub5%", "ascend910b", {"ub_headroom": 0.05}),
    ("ops3", "ascend910b", {"max_kernel_ops": 3}),
    ("inputs2", "ascend910b", {"max_kernel_inputs": 2}),
    ("single", "ascend910b", {"single_kernel": True}),
]

_LOC = re.compile(r' loc\([^)]*\)')


class Recorder:
    """Wraps Fuse.run: every module fusion sees is decided under VARIANTS, once per graph."""

    def __init__(self):
        self.records: dict[str, dict] = {}     # graph key -> {"labels", "ops", "variants"}
        self.label = "?"
        self._inside = False
        self._run = Fuse.run
        self._build = Fuse._build

    def install(self):
        recorder = self

        def run(fuse, module):
            if not recorder._inside:
                recorder._inside = True
                try:
                    recorder.observe(module, fuse.notes)
                finally:
                    recorder._inside = False
            return recorder._run(fuse, module)

        def build(fuse, module, fn, kernels):
            fuse.recorded_partition = [[list(k[0]), k[1], k[2], list(k[3])] for k in kernels]
            return recorder._build(fuse, module, fn, kernels)
        Fuse.run = run
        Fuse._build = build

    def uninstall(self):
        Fuse.run = self._run
        Fuse._build = self._build

    def observe(self, module, notes):
        text = _LOC.sub("", print_module(module))
        key = hashlib.sha256(text.encode()).hexdigest()[:20]
        rec = self.records.get(key)
        if rec is not None:
            if self.label not in rec["labels"]:
                rec["labels"].append(self.label)
            return
        rec = {"labels": [self.label], "ops": len(module.main.ops), "variants": {}}
        self.records[key] = rec
        for name, target, options in VARIANTS:
            rec["variants"][name] = decide(module, notes, target, options)


def decide(module, notes, target, options) -> dict:
    tgt = get_target(target)
    fuse = Fuse(bool(options.get("single_kernel")), tgt.max_queue_buffers_per_position,
                fusion_options(options, tgt), dict(notes))
    fuse.recorded_partition = None
    try:
        out = Fuse.run(fuse, module)   # the installed wrapper skips recording while inside
    except FusedslError as exc:
        return {"error": f"{type(exc).__name__}: {exc.message}", "kernels": fuse.recorded_partition}
    except Exception as exc:   # noqa: BLE001 (a crash is a decision too: recorded, compared)
        return {"error": f"crash: {type(exc).__name__}: {exc}", "kernels": fuse.recorded_partition}
    infos = [[i.name, i.kind, i.code, i.reason] for i in fuse.infos.values()]
    return {"kernels": fuse.recorded_partition, "infos": infos, "merges": fuse.stats["merges"],
            "candidates": fuse.stats["candidates"],
            "module": hashlib.sha256(_LOC.sub("", print_module(out)).encode()).hexdigest()[:20]}


def canonical_and_fuse(graph, target="ascend910b"):
    """The compile pipeline up to and including fusion (no lowering): what compile_module runs first."""
    tgt = get_target(target)
    PassManager(compile_passes(False, tgt.max_queue_buffers_per_position, fusion_options({}, tgt))).run(graph)


# ---- sources ------------------------------------------------------------------------------
def src_examples(rec, args):
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "*.py"))):
        rec.label = f"examples/{os.path.basename(path)}"
        with tempfile.TemporaryDirectory() as tmp:
            argv = sys.argv
            sys.argv = [path, os.path.join(tmp, "out")]
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    runpy.run_path(path, run_name="__main__")
            except SystemExit:
                pass
            except Exception:   # noqa: BLE001 (a source that fails is reported, the rest go on)
                print(f"  {rec.label}: {traceback.format_exc(limit=1).splitlines()[-1]}")
            finally:
                sys.argv = argv


def src_notebooks(rec, args):
    for path in sorted(glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb"))):
        rec.label = f"notebooks/{os.path.basename(path)}"
        cells = json.load(open(path, encoding="utf-8"))["cells"]
        ns = {"__name__": "__main__"}
        with tempfile.TemporaryDirectory() as tmp:
            cwd = os.getcwd()
            os.chdir(tmp)
            try:
                for cell in cells:
                    if cell["cell_type"] != "code":
                        continue
                    src = "".join(cell["source"])
                    if src.lstrip().startswith(("%", "!")):
                        continue   # cell magics (%%writefile) and shell lines: not Python
                    src = "\n".join(line for line in src.splitlines() if not line.lstrip().startswith(("%", "!")))
                    try:
                        with contextlib.redirect_stdout(io.StringIO()):
                            exec(compile(src, path, "exec"), ns)
                    except Exception:   # noqa: BLE001
                        print(f"  {rec.label}: a cell failed: {traceback.format_exc(limit=1).splitlines()[-1]}")
            finally:
                os.chdir(cwd)


def src_stacks(rec, args):
    import model_scale
    for n in (1, 2, 3, 5, 8, 18):
        rec.label = f"stack/{n}"
        kernel, specs = model_scale.stack(n)
        canonical_and_fuse(kernel.trace(*specs))
    for n in (1, 3, 12):
        rec.label = f"vector_graph/{n}"
        kernel, specs = model_scale.vector_graph(n, width=256)
        canonical_and_fuse(kernel.trace(*specs))


def src_chains(rec, args):
    """Graphs of many elementwise chains over a few shared inputs (rows, columns, whole tensors), some
    reading an earlier chain: many groups of one shape that are each other's sibling partners, where
    the order partners are tried in and the caps decide the kernels. Drawn from a seeded generator."""
    import random
    rng = random.Random(args.seed)
    unary = [fs.exp, fs.relu, fs.tanh, fs.abs, fs.sigmoid]
    for n in range(args.chains):
        rec.label = f"chains/{n}"
        rows, cols = rng.choice([(8, 64), (64, 4096), (16, 1024), (256, 8192)])
        shared = [rng.choice([(rows, cols), (cols,), (rows, 1)]) for _ in range(rng.randint(1, 6))]
        plan = []
        for _ in range(rng.randint(4, 70)):
            reads = rng.sample(range(len(shared)), rng.randint(1, min(3, len(shared))))
            steps = [(rng.random(), rng.randrange(len(unary)), rng.random()) for _ in range(rng.randint(1, 12))]
            plan.append((reads, rng.random() < 0.7, steps, rng.random() < 0.15))
        own = sum(1 for p in plan if p[1])

        def body(*xs, plan=plan, nshared=len(shared)):
            pool, owned, outs = xs[:nshared], list(xs[nshared:]), []
            for reads, has_own, steps, link in plan:
                v = owned.pop(0) if has_own else pool[reads[0]] * 1.0
                for r in reads:
                    v = v + pool[r]
                if link and outs:
                    v = v * outs[int(steps[0][2] * len(outs))]
                for kind, u, c in steps:
                    v = unary[u](v) if kind < 0.6 else v * pool[int(c * nshared)] if kind < 0.8 else v + (c + 0.25)
                outs.append(v)
            return tuple(outs)
        names = ", ".join([f"s{i}" for i in range(len(shared))] + [f"x{i}" for i in range(own)])
        ns = {"body": body}
        exec(f"def chains({names}): return body({names})", ns)
        specs = [fs.spec(shape, "float32") for shape in shared] + [fs.spec((rows, cols), "float32")] * own
        try:
            canonical_and_fuse(fs.fused_kernel(ns["chains"]).trace(*specs))
        except FusedslError:
            pass
        except Exception as exc:   # noqa: BLE001 (the default compile crashed: recorded, the source goes on)
            print(f"  chains/{n}: {type(exc).__name__}: {exc}")


def src_corpus(rec, args):
    import kernel_corpus
    n = 0
    seen = set()
    for cfg in kernel_corpus.configs():
        name, fn, arg_specs, target = cfg[:4]
        sig = (name, repr(arg_specs))
        if sig in seen:
            continue   # the corpus repeats a program per target; fusion is recorded under VARIANTS
        seen.add(sig)
        rec.label = f"corpus/{name}"
        try:
            kernel = fs.fused_kernel(fn)
            canonical_and_fuse(kernel.trace(*[fs.spec(s, d) for s, d in arg_specs]))
            n += 1
        except Exception:   # noqa: BLE001
            pass
    print(f"  corpus: {n} programs")


def src_models(rec, args):
    import onnx_models
    for name in ("transformer", "recommender", "resnet"):
        rec.label = f"onnx/{name}"
        try:
            model, feeds = getattr(onnx_models, name)()
            kernel = fs.from_onnx(model)
            canonical_and_fuse(kernel.trace(*feeds.values()))
        except Exception:   # noqa: BLE001
            print(f"  {rec.label}: {traceback.format_exc(limit=1).splitlines()[-1]}")


def src_kernelbench(rec, args):
    import warnings
    import kernelbench
    base = args.kernelbench or os.environ.get("KERNELBENCH_DIR")
    if not base:
        print("  kernelbench: no KERNELBENCH_DIR, skipped")
        return
    ok = 0
    paths = sorted(glob.glob(os.path.join(base, "KernelBench", "level1", "*.py"))) + \
        sorted(glob.glob(os.path.join(base, "KernelBench", "level2", "*.py")))
    for path in paths:
        rec.label = "kernelbench/" + "/".join(path.split(os.sep)[-2:])
        try:
            model, inputs, _, _ = kernelbench.load_case(path)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                kernel = fs.from_torch(model, *inputs)
                canonical_and_fuse(kernel.trace(*inputs))
            ok += 1
        except Exception:   # noqa: BLE001 (programs that do not import are not fusion's graphs)
            pass
    print(f"  kernelbench: {ok}/{len(paths)} programs reached fusion")


def src_fuzz(rec, args):
    from hypothesis import HealthCheck, given, settings
    import test_backend_cpu_fuzz
    import test_frontend_fuzz
    strategies = [("frontend_fuzz", test_frontend_fuzz.graphs(), lambda g: g.kernel().trace(*g.inputs)),
                  ("frontend_fuzz16", test_frontend_fuzz.graphs(max_steps=16), lambda g: g.kernel().trace(*g.inputs)),
                  ("frontend_fuzz48", test_frontend_fuzz.graphs(max_steps=48), lambda g: g.kernel().trace(*g.inputs)),
                  ("backend_cpu_fuzz", test_backend_cpu_fuzz.graphs(), _cpu_fuzz_graph)]
    for label, strategy, trace in strategies:
        rec.label = f"fuzz/{label}"

        @settings(max_examples=args.fuzz, derandomize=True, database=None, deadline=None,
                  suppress_health_check=list(HealthCheck))
        @given(strategy)
        def draw(g):
            try:
                canonical_and_fuse(trace(g))
            except FusedslError:
                pass   # a graph the frontend refuses never reaches fusion
        draw()


def _cpu_fuzz_graph(g):
    import numpy as np
    import test_backend_cpu_fuzz as m
    specs, _, _ = m._specs_and_args(g, np.random.default_rng(0))
    return m.kernel_of(g).trace(*specs)


def src_pytest(rec, args):
    import pytest
    for path in args.pytest:
        rec.label = f"pytest/{os.path.basename(path)}"
        with contextlib.redirect_stdout(io.StringIO()):
            pytest.main([path, "-q", "-n", "0", "-p", "no:cacheprovider", "-x", "--hypothesis-seed=0"])


SOURCES = {"examples": src_examples, "notebooks": src_notebooks, "stacks": src_stacks, "corpus": src_corpus,
           "models": src_models, "kernelbench": src_kernelbench, "fuzz": src_fuzz, "chains": src_chains,
           "pytest": src_pytest}


def record(args) -> int:
    if os.environ.get("PYTHONHASHSEED") != "0":
        # the fuzz strategies iterate sets of names: with string hashing randomised per process
        # they draw other graphs on each run, and a graph recorded once cannot be compared
        os.execve(sys.executable, [sys.executable] + sys.argv, {**os.environ, "PYTHONHASHSEED": "0"})
    rec = Recorder()
    rec.install()
    names = list(SOURCES) if args.sources == "all" else args.sources.split(",")
    for name in names:
        t0 = time.perf_counter()
        before = len(rec.records)
        SOURCES[name](rec, args)
        print(f"{name}: {len(rec.records) - before} new graphs ({time.perf_counter() - t0:.0f} s)")
    rec.uninstall()
    with open(args.out, "w") as f:
        json.dump(rec.records, f, sort_keys=True)
    total = sum(len(r["variants"]) for r in rec.records.values())
    print(f"{len(rec.records)} graphs x {len(VARIANTS)} option sets = {total} fusion decisions -> {args.out}")
    return 0


COMPARED = ("kernels", "infos", "merges", "module", "error")


def compare(args) -> int:
    a = json.load(open(args.before))
    b = json.load(open(args.after))
    diffs, compared = [], 0
    for key in sorted(a.keys() & b.keys()):
        for variant, ra in a[key]["variants"].items():
            rb = b[key]["variants"].get(variant)
            if rb is None:
                continue
            compared += 1
            fields = [f for f in COMPARED if ra.get(f) != rb.get(f)]
            if fields:
                diffs.append((key, variant, fields, a[key]["labels"][:3]))
    cand_a = sum(r.get("candidates", 0) for k in a.keys() & b.keys() for r in a[k]["variants"].values())
    cand_b = sum(r.get("candidates", 0) for k in a.keys() & b.keys() for r in b[k]["variants"].values())
    print(f"graphs: {len(a)} before, {len(b)} after, {len(a.keys() & b.keys())} in both; "
          f"{compared} fusion decisions compared, {len(diffs)} differ")
    print(f"candidate merges considered over the common decisions: {cand_a} before, {cand_b} after")
    only = (a.keys() ^ b.keys())
    if only:
        print(f"{len(a.keys() - b.keys())} graphs only before, {len(b.keys() - a.keys())} only after "
              "(a source that is not deterministic)")
    for key, variant, fields, labels in diffs[:50]:
        print(f"  {key} [{variant}] differs in {', '.join(fields)}: {', '.join(labels)}")
    return 1 if diffs else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("out")
    r.add_argument("--sources", default="all")
    r.add_argument("--fuzz", type=int, default=300, help="examples drawn per fuzz strategy")
    r.add_argument("--kernelbench", default=None)
    r.add_argument("--chains", type=int, default=100, help="graphs the chains source draws")
    r.add_argument("--seed", type=int, default=0, help="the chains source's seed")
    r.add_argument("--pytest", nargs="*", default=[])
    c = sub.add_parser("compare")
    c.add_argument("before")
    c.add_argument("after")
    args = parser.parse_args(argv)
    return record(args) if args.cmd == "record" else compare(args)


if __name__ == "__main__":
    sys.exit(main())

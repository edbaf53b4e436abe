"""The fusion pass's work and time against graph size: the transformer-block stack at 18/72/288 blocks.

    python benchmarks/fusion_scale.py [--blocks 18,72,288] [--repeats 3] [--label after] [--write]

For each size, the stack x + (gelu(layer_norm(x) @ w1) @ w2) * 0.5 of tests/test_cost_fusion.py is
traced and canonicalised once; then the fusion pass alone (passes/fuse.py `Fuse`, on ascend910b
with the default options) runs `--repeats` times on the canonical module.  Columns:

  candidates  merges fusion tried (vector grouping, sibling merges, row/column/cube merges): what
              the pass's work grows with, counted (tests/test_cost_fusion.py asserts its growth)
  visits      nodes its cycle checks walked (0 when no check needed to walk)
  wall / cpu  median wall and process CPU time of one fusion pass (a shared 2-core machine:
              compare within a table)

Run it with PYTHONPATH at another checkout to measure that one (the "before" rows of RESULTS.md
came from the commit before the change, exported with `git archive`).  `--write` replaces the
"Fusion pass scaling" section of benchmarks/RESULTS.md, keeping rows of other labels.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from fusedsl.passes.fuse import Fuse  # noqa: E402
from fusedsl.passes.fusion_model import fusion_options  # noqa: E402
from fusedsl.passes.pipeline import canonicalize  # noqa: E402
from fusedsl.targets import get_target  # noqa: E402
from model_scale import stack  # noqa: E402  (the stack of tests/test_cost_fusion.py, at model_scale's default sizes)

SECTION = "## Fusion pass scaling (transformer-block stack)"




def measure(nblocks: int, repeats: int) -> dict:
    kernel, args = stack(nblocks)
    module = canonicalize(kernel.trace(*args))
    target = get_target("ascend910b")
    walls, cpus = [], []
    for _ in range(repeats):
        fuse = Fuse(False, target.max_queue_buffers_per_position, fusion_options({}, target))
        w0, c0 = time.perf_counter(), time.process_time()
        fuse.run(module)
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return {"blocks": nblocks, "ops": len(module.main.ops), "kernels": len(fuse.infos),
            "candidates": fuse.stats["candidates"], "merges": fuse.stats["merges"],
            "visits": fuse.stats.get("visits"), "wall": statistics.median(walls), "cpu": statistics.median(cpus)}


def rows_text(label: str, rows: list[dict]) -> list[str]:
    out = []
    for r in rows:
        visits = "-" if r["visits"] is None else str(r["visits"])
        out.append(f"| {label} | {r['blocks']} | {r['ops']} | {r['kernels']} | {r['candidates']} | {visits} | "
                   f"{r['merges']} | {r['wall'] * 1000:.0f} | {r['cpu'] * 1000:.0f} |")
    return out


HEADER = ["| code | blocks | ops | kernels | candidates | visits | merges kept | fusion wall ms | fusion CPU ms |",
          "|---|---|---|---|---|---|---|---|---|"]


def write_section(label: str, rows: list[dict], command: str) -> None:
    path = os.path.join(HERE, "RESULTS.md")
    text = open(path, encoding="utf-8").read()
    start = text.find(SECTION)
    kept, notes = [], []
    if start >= 0:
        end = text.find("\n## ", start + len(SECTION))
        old = text[start:end if end >= 0 else len(text)]
        kept = [line for line in old.splitlines() if line.startswith("| ") and not line.startswith("| code")
                and not line.startswith(f"| {label} |")]
        notes = old.split("\n<!-- notes -->\n", 1)[1].rstrip().splitlines() if "<!-- notes -->" in old else []
    else:
        end = -1
    body = [SECTION, "", f"Command: `{command}` (median of the repeats; 2 shared cores: compare within the table).",
            "", *HEADER, *sorted(kept + rows_text(label, rows), key=lambda s: (s.split("|")[1], int(s.split("|")[2]))),
            "", "<!-- notes -->", *notes]
    body_text = "\n".join(body).rstrip() + "\n"
    if start < 0:
        text = text.rstrip() + "\n\n" + body_text
    else:
        text = text[:start] + body_text + (text[end:] if end >= 0 else "")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", default="18,72,288")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--label", default="this checkout")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    rows = []
    for n in (int(b) for b in args.blocks.split(",")):
        rows.append(measure(n, args.repeats))
        print("\n".join(rows_text(args.label, rows[-1:])), flush=True)
    if args.write:
        write_section(args.label, rows, "python benchmarks/fusion_scale.py --label <code> --write")
    return 0


if __name__ == "__main__":
    sys.exit(main())

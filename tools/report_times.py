"""The report's modelled time and GM bytes of every configuration of tools/kernel_corpus.py, recorded
with one checkout and compared with another's: what a change to the cost model, a lowering or a
kernel pass did to the figures users read.  Only the public API is used, so the recording runs on
any checkout (PYTHONPATH selects the fusedsl it measures).

    PYTHONPATH=<checkout> python tools/report_times.py record OUT.json [--only KIND] [--match TEXT]
    python tools/report_times.py compare BEFORE.json AFTER.json

`compare` prints, per kernel kind, the configurations compared, how many got faster / slower
(modelled fused time, 0.1 % either way), the after / before ratio's minimum, median and maximum,
GM bytes up or down, and the largest changes.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fusedsl as fs  # noqa: E402

from kernel_corpus import _inputs, configs  # noqa: E402


def record(path: str, only=None, match=None) -> None:
    out, t0 = {}, time.time()
    for kind, fn, specs, target in configs(only, match):
        key = f"{kind}|{target}|" + ";".join(f"{s[0]}:{s[1]}" for s in specs)
        try:
            rep = fs.fused_kernel(fn, target=target).compile(*_inputs(specs, seed=len(key))).report()
        except fs.FusedslError:
            continue
        if rep.model_time_us_fused is None:
            continue
        out[key] = {"us": rep.model_time_us_fused, "gm": rep.gm_bytes_fused,
                    "block_dims": [r.block_dim for r in rep.kernels]}
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, indent=0, sort_keys=True)
    os.replace(tmp, path)
    print(f"{len(out)} configurations with a modelled time, {time.time() - t0:.0f} s")


def compare(before_path: str, after_path: str) -> None:
    before, after = json.load(open(before_path)), json.load(open(after_path))
    rows: dict = {}
    for key in sorted(before.keys() & after.keys()):
        b, a = before[key], after[key]
        r = rows.setdefault(key.split("/")[0], {"n": 0, "faster": 0, "slower": 0, "gm_up": 0, "gm_down": 0,
                                                 "ratios": []})
        ratio = a["us"] / b["us"]
        r["n"] += 1
        r["faster"] += ratio < 0.999
        r["slower"] += ratio > 1.001
        r["gm_up"] += a["gm"] > b["gm"]
        r["gm_down"] += a["gm"] < b["gm"]
        r["ratios"].append((ratio, key, b["us"], a["us"], b["block_dims"], a["block_dims"]))
    print("| kernel kind | configurations | faster | slower | after / before: min | median | max | GM up | GM down |")
    print("|---|---|---|---|---|---|---|---|---|")
    for kind, r in sorted(rows.items()):
        x = sorted(q[0] for q in r["ratios"])
        print(f"| {kind} | {r['n']} | {r['faster']} | {r['slower']} | {x[0]:.2f} | {statistics.median(x):.2f} | "
              f"{x[-1]:.2f} | {r['gm_up']} | {r['gm_down']} |")
    every = sorted(q for r in rows.values() for q in r["ratios"])
    print("\nLargest gains:")
    for ratio, key, b, a, bd, ad in every[:6]:
        print(f"  {ratio:.2f}  {key}: {b:.2f} -> {a:.2f} us, blockDim {bd} -> {ad}")
    print("Largest losses:")
    for ratio, key, b, a, bd, ad in every[-4:]:
        print(f"  {ratio:.2f}  {key}: {b:.2f} -> {a:.2f} us, blockDim {bd} -> {ad}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("path")
    r.add_argument("--only")
    r.add_argument("--match")
    c = sub.add_parser("compare")
    c.add_argument("before")
    c.add_argument("after")
    args = ap.parse_args(argv)
    if args.cmd == "record":
        record(args.path, args.only, args.match)
    else:
        compare(args.before, args.after)


if __name__ == "__main__":
    main()

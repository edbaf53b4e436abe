"""Build and run CANN's Ascend C samples on fusedsl's CPU implementation of the Ascend C API.

Each sample of asc-devkit's examples/01_simd_cpp_api is built the way its README says: its own
CMakeLists.txt configured with the README's -D options plus -DCMAKE_ASC_RUN_MODE=cpu, `make`,
then the README's own steps (scripts/gen_data.py, ./demo, scripts/verify_result.py ...) in the
build folder.  fusedsl stands in for the CANN toolkit through one environment variable:

    export CMAKE_PREFIX_PATH=$(fusedsl include-dir)

(this script sets it for the fusedsl it imports, and puts its own Python first on PATH so the
samples' `python3` scripts and fusedsl's compiler driver run with it).  Nothing is fetched:
point ASC_DEVKIT_DIR at a checkout (or `git archive` export) of mirror-cann/asc-devkit.

    ASC_DEVKIT_DIR=/tmp/asc-devkit python benchmarks/samples.py [-k SUBSTRING] [--jobs 2]
        [--all-scenarios] [--json results.json]

A sample passes when every step exits 0 and no step prints a failure ("test failed", "[ERROR]",
"fail"); its first error is the first compiler error, the first [ERROR] line of a run or the
last line a failing step printed.  Samples built for dav-3510 (Ascend 950) are counted apart:
fusedsl has no target for them and they must stop with one TargetError naming the chip.

`--classic` measures CANN's classic kernel-launch samples instead (Ascend/samples,
operator/ascendc/**: each folder with a run.sh, a main.cpp and cmake/cpu_lib.cmake), given
by CANN_SAMPLES_DIR: each runs as its README says, `bash run.sh -r cpu -v <SOC>` (--soc,
default Ascend910B1), with the same one environment variable; it passes when run.sh exits 0,
its verify script printed "test pass" (or, for samples without a verify step, nothing failed)
and no line reports a failure.

    CANN_SAMPLES_DIR=/tmp/samples python benchmarks/samples.py --classic [--soc Ascend310P3]
"""
from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from fusedsl.backend_ascendc.cpu import include_dir  # noqa: E402

SUITE = os.path.join("examples", "01_simd_cpp_api")
# wrappers of CANN tools (profiler, sanitizer, simulator) around ./demo: the program is run alone
_TOOL_PREFIX = re.compile(r"^(msopprof(\s+simulator)?(\s+--\S+)*|mssanitizer(\s+--\S+)*)\s+")
_STEP = re.compile(r"^(python3?|\./|bash|sh)\b")
_FAIL = re.compile(r"test failed|\[ERROR\]|\bfail(ed|ure)?\b|error ratio.*exceed|Segmentation fault", re.I)
_DEFAULT_ARCH = re.compile(r'CMAKE_ASC_ARCHITECTURES\s+"([^"]*)"')


def find_samples(devkit: str) -> list[str]:
    """Sample folders: those with a CMakeLists.txt and no ancestor that has one."""
    base = os.path.join(devkit, SUITE)
    found = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames.sort()
        if "CMakeLists.txt" in filenames:
            found.append(os.path.relpath(dirpath, base))
            dirnames[:] = []
    return found


def readme_commands(path: str) -> list[str]:
    """The shell lines of the README's build-and-run section, comments dropped."""
    readme = os.path.join(path, "README.md")
    if not os.path.exists(readme):
        return []
    text = open(readme, encoding="utf-8").read()
    i = text.find("编译运行")
    if i < 0:
        i = 0
    cmds = []
    for block in re.findall(r"```[a-z]*[ \t]*\n(.*?)```", text[i:], re.S):
        for line in block.splitlines():
            line = re.sub(r"\s#.*$", "", line).strip()
            if line and not line.startswith("#"):
                cmds.append(line)
    return cmds


def scenario_values(path: str) -> list[str]:
    """SCENARIO_NUM values listed in the README's option table (`0`（默认）、`1` ..., or a range: `1`~`8`,
    `0`-`8`, 1-14)."""
    text = open(os.path.join(path, "README.md"), encoding="utf-8").read()
    m = re.search(r"\|\s*`SCENARIO_NUM`\s*\|([^|\n]*)\|", text)
    if m is None:
        return []
    cell = m.group(1)
    r = re.search(r"`?(\d+)`?\s*[~-]\s*`?(\d+)`?", cell)
    if r is not None and int(r.group(1)) < int(r.group(2)):
        return [str(v) for v in range(int(r.group(1)), int(r.group(2)) + 1)]
    return re.findall(r"`(\w+)`", cell)


def plan(path: str) -> dict:
    """What the README says to do: variables, the cmake options (cpu mode) and the run steps."""
    cmds = readme_commands(path)
    variables: dict[str, str] = {}
    cmake = None
    groups: list[list[str]] = []   # the run steps after each cmake line, up to the next one
    builds = 0   # cmake lines seen
    for line in cmds:
        for part in [p.strip() for p in re.split(r";|&&", line) if p.strip()]:
            # `NAME=value`, `export NAME=value`, or several assignments on one line (`A=1 B=2`)
            assigns = re.findall(r"(?:export\s+)?([A-Z_][A-Z0-9_]*)=(\S*)", part)
            if assigns and builds == 0 and re.fullmatch(r"(?:(?:export\s+)?[A-Z_][A-Z0-9_]*=\S*\s*)+", part):
                for name, value in assigns:
                    variables.setdefault(name, value)
                continue
            if part.startswith("cmake"):
                if cmake is None or ("CMAKE_ASC_RUN_MODE=cpu" in part and "CMAKE_ASC_RUN_MODE=cpu" not in cmake):
                    cmake = part
                builds += 1
                groups.append([])
                continue
            if builds == 0 or part.startswith(("make", "mkdir", "cd ", "source", "pip", "gdb", "rm ")):
                continue
            part = _TOOL_PREFIX.sub("", part)
            if _STEP.match(part):
                groups[-1].append(part)
    # the steps after the first build; when a README shows a lone cmake line first (how to pick
    # a case) and the full sequence later, the first build followed by run steps
    steps = next((g for g in groups if g), [])
    options = []
    if cmake:
        options = [o for o in cmake.split()[1:] if o not in ("..", ".") and not o.startswith("-DCMAKE_ASC_RUN_MODE")]
    with open(os.path.join(path, "CMakeLists.txt"), encoding="utf-8") as f:
        m = _DEFAULT_ARCH.search(f.read())
    arch = next((o.split("=", 1)[1] for o in options if o.startswith("-DCMAKE_ASC_ARCHITECTURES=")),
                m.group(1) if m else "dav-2201")
    arch = re.sub(r"\$\{?(\w+)\}?", lambda m: variables.get(m.group(1), m.group(0)), arch or "")
    return {"variables": variables, "cmake": options, "steps": steps, "arch": arch}


def _first_error(text: str) -> str:
    for line in text.splitlines():
        if re.search(r"\berror\b", line) and "Error 1" not in line and "Error 2" not in line:
            line = re.sub(r"^\S*/", "", line.strip())
            return line[:300]
    for line in text.splitlines():
        if _FAIL.search(line):
            return line.strip()[:300]
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[-1].strip()[:300] if lines else "(no output)"


def _normalise(err: str) -> str:
    """The first error without file names, line numbers and quoted spellings that vary."""
    err = re.sub(r"^[\w./+-]+:\d+(:\d+)?:\s*", "", err)
    err = re.sub(r"\s+", " ", err)
    return err[:160]


def run_sample(devkit: str, rel: str, timeout: float, scenario: str | None = None) -> dict:
    src = os.path.join(devkit, SUITE, rel)
    p = plan(src)
    result = {"sample": rel, "arch": p["arch"], "scenario": scenario, "status": "pass", "error": "", "seconds": 0.0}
    t0 = time.time()
    env = dict(os.environ)
    env["CMAKE_PREFIX_PATH"] = include_dir()
    env["FUSEDSL_PYTHON"] = sys.executable
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env.pop("ASCEND_HOME_PATH", None)
    variables = dict(p["variables"])
    if scenario is not None:
        variables["SCENARIO_NUM"] = scenario
    env.update(variables)
    with tempfile.TemporaryDirectory(prefix="fusedsl-sample-") as tmp:
        work = os.path.join(tmp, os.path.basename(rel))
        shutil.copytree(src, work, symlinks=True)
        build = os.path.join(work, "build")
        os.makedirs(build, exist_ok=True)
        cmake = [re.sub(r"\$\{?(\w+)\}?", lambda m: variables.get(m.group(1), m.group(0)), o) for o in p["cmake"]]
        stages = [("config", ["cmake", "-DCMAKE_ASC_RUN_MODE=cpu", *cmake, ".."]), ("build", ["make", "-j2"])]
        stages += [("run", ["bash", "-c", s]) for s in p["steps"]]
        if not p["steps"]:
            stages.append(("run", ["bash", "-c", "./demo"]))
        for stage, cmd in stages:
            try:
                proc = subprocess.run(cmd, cwd=build, env=env, capture_output=True, text=True,
                                      errors="replace", timeout=timeout)
            except subprocess.TimeoutExpired:
                result.update(status="timeout", error=f"{stage}: no result after {timeout:.0f} s ({' '.join(cmd)[-80:]})")
                break
            out = proc.stdout + proc.stderr
            if proc.returncode != 0 or (stage == "run" and _FAIL.search(out)):
                status = {"config": "config_fail", "build": "build_fail"}.get(stage, "run_fail")
                result.update(status=status, error=_first_error(out), step=" ".join(cmd)[-120:])
                break
    result["seconds"] = round(time.time() - t0, 1)
    return result


CLASSIC_SUITE = os.path.join("operator", "ascendc")


def find_classic(root: str) -> list[str]:
    """Kernel-launch samples: folders with run.sh, main.cpp and cmake/cpu_lib.cmake (CPU mode)."""
    base = os.path.join(root, CLASSIC_SUITE)
    found = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames.sort()
        if {"run.sh", "main.cpp"} <= set(filenames) and os.path.exists(os.path.join(dirpath, "cmake", "cpu_lib.cmake")):
            found.append(os.path.relpath(dirpath, base))
    return found


def run_classic(root: str, rel: str, timeout: float, soc: str) -> dict:
    src = os.path.join(root, CLASSIC_SUITE, rel)
    result = {"sample": rel, "arch": soc, "scenario": None, "status": "pass", "error": "", "seconds": 0.0}
    t0 = time.time()
    env = dict(os.environ)
    env["CMAKE_PREFIX_PATH"] = include_dir()
    env["FUSEDSL_PYTHON"] = sys.executable
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    for name in ("ASCEND_HOME_PATH", "ASCEND_INSTALL_PATH"):
        env.pop(name, None)
    with tempfile.TemporaryDirectory(prefix="fusedsl-classic-") as tmp:
        work = os.path.join(tmp, os.path.basename(rel))
        shutil.copytree(src, work, symlinks=True)
        try:
            proc = subprocess.run(["bash", "run.sh", "-r", "cpu", "-v", soc], cwd=work, env=env, capture_output=True,
                                  text=True, errors="replace", timeout=timeout)
        except subprocess.TimeoutExpired:
            result.update(status="timeout", error=f"no result after {timeout:.0f} s")
        else:
            out = proc.stdout + proc.stderr
            verified = "test pass" in out.lower() or not re.search(r"verify|compare", open(os.path.join(work, "run.sh")).read())
            if proc.returncode != 0 or _FAIL.search(out) or not verified:
                built = os.path.isdir(os.path.join(work, "out")) or "Built target" in out
                result.update(status="run_fail" if built else "build_fail", error=_first_error(out))
    result["seconds"] = round(time.time() - t0, 1)
    return result


def main_classic(args) -> int:
    root = os.environ.get("CANN_SAMPLES_DIR")
    if not root or not os.path.isdir(os.path.join(root, CLASSIC_SUITE)):
        print("set CANN_SAMPLES_DIR to a checkout of Ascend/samples (with operator/ascendc)", file=sys.stderr)
        return 2
    samples = [s for s in find_classic(root) if args.k in s]
    results = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for r in pool.map(lambda s: run_classic(root, s, args.timeout, args.soc), samples):
            results.append(r)
            print(f"{r['status']:12} {r['sample']}  {r['error'][:200]}", flush=True)
    print(f"\nclassic kernel-launch samples ({args.soc}): {sum(r['status'] == 'pass' for r in results)} of "
          f"{len(results)} pass")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-k", default="", help="only samples whose path contains this")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds per step")
    ap.add_argument("--all-scenarios", action="store_true", help="run every SCENARIO_NUM the README lists")
    ap.add_argument("--json", help="write the per-sample results here")
    ap.add_argument("--classic", action="store_true",
                    help="CANN's classic kernel-launch samples under $CANN_SAMPLES_DIR/operator/ascendc")
    ap.add_argument("--soc", default="Ascend910B1", help="SOC_VERSION for --classic (run.sh -v)")
    args = ap.parse_args(argv)
    if args.classic:
        return main_classic(args)
    devkit = os.environ.get("ASC_DEVKIT_DIR")
    if not devkit or not os.path.isdir(os.path.join(devkit, SUITE)):
        print("set ASC_DEVKIT_DIR to a checkout of mirror-cann/asc-devkit (with examples/01_simd_cpp_api)",
              file=sys.stderr)
        return 2
    samples = [s for s in find_samples(devkit) if args.k in s]
    jobs = []
    for s in samples:
        values = scenario_values(os.path.join(devkit, SUITE, s)) if args.all_scenarios else []
        jobs += [(s, v) for v in values] or [(s, None)]
    results = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futs = [pool.submit(run_sample, devkit, s, args.timeout, v) for s, v in jobs]
        for fut in futs:
            r = fut.result()
            results.append(r)
            tag = f" [SCENARIO_NUM={r['scenario']}]" if r["scenario"] is not None else ""
            print(f"{r['status']:12} {r['arch']:9} {r['sample']}{tag}  {r['error'][:200]}", flush=True)
    report(results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


def report(results: list[dict]) -> None:
    by_sample: dict[str, list[dict]] = collections.defaultdict(list)
    for r in results:
        by_sample[r["sample"]].append(r)
    groups = {"910B/310P": [], "950 (dav-3510)": []}
    for s, rs in by_sample.items():
        groups["950 (dav-3510)" if rs[0]["arch"] == "dav-3510" else "910B/310P"].append(rs)
    for name, rows in groups.items():
        ok = sum(all(r["status"] == "pass" for r in rs) for rs in rows)
        print(f"\n{name}: {ok} of {len(rows)} samples pass")
        folders = collections.defaultdict(lambda: [0, 0])
        for rs in rows:
            parts = rs[0]["sample"].split(os.sep)
            for key in (parts[0], os.sep.join(parts[:2])):
                folders[key][1] += 1
                folders[key][0] += all(r["status"] == "pass" for r in rs)
        for key in sorted(folders):
            print(f"  {key:60} {folders[key][0]:3} / {folders[key][1]}")
        statuses = collections.Counter(r["status"] for rs in rows for r in rs)
        print("  statuses:", dict(statuses))
        errors = collections.Counter(_normalise(r["error"]) for rs in rows for r in rs if r["status"] != "pass")
        print("  most frequent first errors:")
        for err, n in errors.most_common(25):
            print(f"    {n:3}  {err}")
    runs = [r for r in results if r["scenario"] is not None]
    if runs:
        print(f"\nscenario runs: {sum(r['status'] == 'pass' for r in runs)} of {len(runs)} pass")


if __name__ == "__main__":
    sys.exit(main())

"""MkDocs hook: the pages generated from the code at build time, so that they cannot go stale.

- ops.md            from the op registry (fusedsl.ir.ops.REGISTRY): each op, its kind and which
                    targets print it as Ascend C (probed: a small kernel per op, dtype and target)
- cli.md            from the argparse parser (fusedsl.cli.build_parser)
- troubleshooting.md every error class of fusedsl (with its docstring's advice) and every fusion
                    reason code (fusedsl.passes.fusion_model.REASONS) with what to change
- changelog.md      CHANGELOG.md at the repository root

The page texts come from functions that tests/test_docs_site.py calls too.  Run as a script it
prints one page: `python docs/hooks/pages.py ops`.
"""
from __future__ import annotations

import inspect
import io
import os
import re
import sys
from contextlib import redirect_stdout

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:   # build from a checkout without installing (CI installs it anyway)
    sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

import fusedsl as fs  # noqa: E402

TARGETS = ("ascend910b", "ascend910b4", "ascend310p", "ascend910")
PROBE_DTYPES = ("float32", "float16", "bfloat16", "int32")


# ---- ops -----------------------------------------------------------------------------------------
# IR op name -> the fs.* function when the names differ (numpy's names in the API, short ones in IR)
_PUBLIC = {"neg": "negative", "sub": "subtract", "mul": "multiply", "div": "divide", "lt": "less",
           "le": "less_equal", "gt": "greater", "ge": "greater_equal", "eq": "equal", "ne": "not_equal",
           "slice": None, "constant": None, "call": None}


def _public_name(op: str) -> str | None:
    name = _PUBLIC.get(op, op)
    return name if name is not None and callable(getattr(fs, name, None)) else None


def _probe(op: str, opdef):
    """A small kernel exercising `op` (a function of arrays of one dtype), or None when the op
    has no obvious probe.  Built from the op's traits, so ops added to the registry are probed
    too."""
    traits = opdef.traits
    name = _public_name(op)
    f = getattr(fs, name) if name else None
    x = lambda dt: np.full((16, 64), 0.5, dt)   # noqa: E731
    if op == "slice":
        return lambda dt: (lambda a: fs.relu(a[:, 8:40]), [x(dt)])
    if f is None:
        return None
    if op == "leaky_relu":
        return lambda dt: (lambda a: f(a, 0.1), [x(dt)])
    if op == "cast":
        return lambda dt: (lambda a: f(a, "float32" if dt != "float32" else "float16"), [x(dt)])
    if op == "where":
        return lambda dt: (lambda a, b: f(a > b, a, b), [x(dt), x(dt)])
    if op in ("reshape",):
        return lambda dt: (lambda a: fs.relu(f(a, (64, 16))), [x(dt)])
    if op == "broadcast_to":
        return lambda dt: (lambda a, b: f(a, (16, 64)) + b, [np.full((64,), 0.5, dt), x(dt)])
    if op == "transpose":
        return lambda dt: (lambda a: fs.relu(f(a)), [x(dt)])
    if op == "concatenate":
        return lambda dt: (lambda a, b: fs.relu(f([a, b], axis=1)), [x(dt), x(dt)])
    if op == "take":
        return lambda dt: (lambda t, i: fs.relu(f(t, i)), [x(dt), np.arange(8, dtype=np.int32)])
    if op == "matmul":
        return lambda dt: (lambda a, b: f(a, b), [x(dt), np.full((64, 32), 0.5, dt)])
    if op == "conv2d":
        return lambda dt: (lambda a, w: f(a, w), [np.full((1, 16, 8, 8), 0.5, dt), np.full((16, 16, 3, 3), 0.5, dt)])
    if op == "attention":
        return lambda dt: (lambda q, k, v: f(q, k, v), [np.full((1, 2, 16, 32), 0.5, dt)] * 3)
    if "reduction" in traits:
        return lambda dt: (lambda a: f(a, axis=-1), [x(dt)])
    if "unary" in traits:
        return lambda dt: (lambda a: f(a), [x(dt)])
    if "binary" in traits:
        return lambda dt: (lambda a, b: f(a, b), [x(dt), x(dt)])
    return None


def _prints(probe, dtype: str, target: str) -> bool:
    try:
        fn, arrays = probe(np.dtype(fs.bfloat16.np) if dtype == "bfloat16" else dtype)
        k = fs.fused_kernel(fn).compile(*arrays, target=target)
        return bool(k.source)   # printed, not only scheduled
    except fs.FusedslError:
        return False


def ops_page() -> str:
    from fusedsl.ir.ops import REGISTRY
    lines = ["# Ops", "",
             "Generated from the op registry (`fusedsl.ir.ops.REGISTRY`) when the site is built. Each op "
             "is probed: a small kernel of that op on [16, 64] inputs is compiled for every target and "
             "dtype, and a dtype is listed when the kernel prints as Ascend C there (every op also runs "
             "on the CPU executors, whatever the target). The reference of each `fs.*` function is on the "
             "[API page](api.md).", "",
             "| IR op | `fs.*` | kind | attributes | " + " | ".join(TARGETS) + " |",
             "|---|---|---|---|" + "---|" * len(TARGETS)]
    for op, opdef in sorted(REGISTRY.items()):
        if op in ("constant", "call"):
            continue
        name = _public_name(op)
        kind = ", ".join(sorted(t for t in opdef.traits if t not in ("unary", "binary")))
        attrs = ", ".join(opdef.attr_names) or "-"
        probe = _probe(op, opdef)
        cells = []
        for target in TARGETS:
            if probe is None:
                cells.append("not probed")
                continue
            ok = [d for d in PROBE_DTYPES if _prints(probe, d, target)]
            cells.append(" ".join(ok) if ok else "no")
        fs_name = f"`fs.{name}`" if name else ("`x[...]`" if op == "slice" else "-")
        lines.append(f"| `{op}` | {fs_name} | {kind or '-'} | {attrs} | " + " | ".join(cells) + " |")
    lines += ["", "\"no\": the op does not print on that target in the probed dtypes (the compile error "
              "says why; see [Troubleshooting](troubleshooting.md)).", ""]
    return "\n".join(lines)


# ---- README: what prints as Ascend C, by kernel kind and target ------------------------------------
def _kinds():
    f = lambda *shape: (lambda dt: np.full(shape, 0.5, dt))   # noqa: E731
    ids = np.array([3, 0, 5, 1], np.int32)
    return [
        ("elementwise + broadcast", "`relu(abs(a) + b)`", lambda a, b: fs.relu(fs.abs(a) + b), [f(64), f(32, 64)]),
        ("views", "`relu(concatenate([a, b], 1))[:, 8:40]`",
         lambda a, b: fs.relu(fs.concatenate([a, b], 1))[:, 8:40], [f(16, 32), f(16, 32)]),
        ("gather", "`relu(take(table, ids) + bias)`", lambda t, i, b: fs.relu(fs.take(t, i) + b),
         [f(8, 64), lambda dt: ids, f(64)]),
        ("transpose", "`transpose(x, (0, 2, 1))`", lambda x: fs.transpose(x, (0, 2, 1)), [f(4, 16, 24)]),
        ("row reduction", "`softmax(x)`, `layer_norm(x)`", lambda x: fs.softmax(x), [f(32, 64)]),
        ("column reduction", "`sum(x * x, axis=0) * w`, `var(x, 0)`",
         lambda x, w: fs.sum(x * x, axis=0) * w + fs.var(x, axis=0), [f(32, 64), f(64)]),
        ("cube + epilogue", "`leaky_relu(x @ w + b)`", lambda x, w, b: fs.leaky_relu(x @ w + b),
         [f(32, 64), f(64, 32), f(32)]),
        ("conv2d + epilogue", "`leaky_relu(conv2d(x, w) + b)`",
         lambda x, w, b: fs.leaky_relu(fs.conv2d(x, w) + fs.reshape(b, (1, 16, 1, 1))),
         [f(1, 16, 8, 8), f(16, 16, 3, 3), f(16)]),
        ("cube + row reduction", "`softmax(x @ w + b)`", lambda x, w, b: fs.softmax(x @ w + b),
         [f(32, 64), f(64, 32), f(32)]),
        ("attention", "`attention(q, k, v)`", lambda q, k, v: fs.attention(q, k, v), [f(1, 2, 16, 32)] * 3),
    ]


def readme_table() -> str:
    """Markdown table: kernel kinds x targets, the dtypes (of float32, float16) each prints in."""
    lines = ["| kernel kind | example | " + " | ".join(TARGETS) + " |", "|---|---|" + "---|" * len(TARGETS)]
    for kind, example, fn, makers in _kinds():
        if any(getattr(fs, n, None) is None for n in re.findall(r"(\w+)\(", example) if n not in ("x", "w")):
            continue   # an op this version does not have
        cells = []
        for target in TARGETS:
            ok = [d for d in ("float32", "float16") if _prints(lambda dt: (fn, [m(dt) for m in makers]), d, target)]
            cells.append(" ".join(ok) if ok else "no")
        lines.append(f"| {kind} | {example} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


README_START = "<!-- ascendc-table: generated by `python docs/hooks/pages.py readme` -->"
README_END = "<!-- /ascendc-table -->"


def readme_with_table(readme: str) -> str:
    head, rest = readme.split(README_START, 1)
    _, tail = rest.split(README_END, 1)
    return f"{head}{README_START}\n{readme_table()}\n{README_END}{tail}"


# ---- CLI -----------------------------------------------------------------------------------------
def cli_page() -> str:
    import argparse
    from fusedsl.cli import __doc__ as cli_doc, build_parser
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"   # argparse wraps to the terminal: a fixed width for the page
    try:
        parser = build_parser()
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        lines = ["# Command line", "",
                 "Generated from the argparse parser (`fusedsl.cli.build_parser`) when the site is built. "
                 "`fusedsl` is installed with the package; `python -m fusedsl` is the same.", ""]
        exit_text = cli_doc.split("Exit status:", 1)[1].strip() if "Exit status:" in cli_doc else ""
        if exit_text:
            lines += ["**Exit status:** " + " ".join(exit_text.split()), ""]
        lines += ["```text", parser.format_help().rstrip(), "```", ""]
        for name, p in sub.choices.items():
            lines += [f"## fusedsl {name}", "", "```text", p.format_help().rstrip(), "```", ""]
        return "\n".join(lines)
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old


# ---- troubleshooting -----------------------------------------------------------------------------
# What to change for each fusion reason code (REASONS): a code without advice fails the docs test.
REASON_ADVICE = {
    "FS100": "Nothing: the whole function is one kernel.",
    "FS101": "The op kind runs as its own kernel (e.g. a transpose that is not a matmul operand, a "
             "reduction over a non-last axis feeding elementwise ops). Restructure so the op feeds a "
             "kernel that can absorb it, or accept the boundary.",
    "FS102": "The two kernels share no tensor, so merging saves no GM traffic. Nothing to change.",
    "FS103": "The outputs have different iteration shapes. Compute the smaller result in its own kernel, "
             "or broadcast it explicitly if it really is elementwise.",
    "FS104": "The merged kernel's smallest tile does not fit UB. Raise `ub_headroom` (e.g. 0.9), use a "
             "16-bit dtype, or split the computation; for a row reduction after a matmul, shorter rows fit.",
    "FS105": "More GM inputs/outputs than the chip has queue buffers. Concatenate or stack small inputs, "
             "or let the kernel split (`max_kernel_inputs`).",
    "FS106": "Merging would create a cycle through an op outside the kernel. Reorder the computation so "
             "the outside op does not sit between the two.",
    "FS107": "A cap was reached. Raise `max_kernel_ops` / `max_kernel_inputs` if the kernel should grow.",
    "FS108": "The cost model says merging costs more (smaller tiles) than it saves. Raise `opt_level` to 3 "
             "to be more aggressive, or leave it: this is the model's judgement.",
    "FS109": "Fusion is off: `opt_level=0` or `disable_passes=[...]` / FUSEDSL_DISABLE_PASSES.",
    "FS110": "The cube buffers (L1, L0A/B/C) cannot hold the tiles. Raise `l1_headroom`, use a 16-bit "
             "dtype, or shorten the rows after the matmul.",
    "FS111": "A value needed by several kernels is stored once. Nothing to change (recomputing it costs more).",
    "FS112": "A row kernel (a last-axis reduction with its producers and consumers). Nothing to change; "
             "`disable_passes=['row-fusion']` splits it.",
    "FS113": "A cube kernel (matmul/conv2d with its epilogue). Nothing to change.",
    "FS114": "A view that cannot be DMA addressing (e.g. a step on the last axis `x[:, ::2]`). Slice "
             "with steps on outer axes only, or accept the copy kernel.",
    "FS115": "Attention-shaped but not fusable into one attention op (the reason names the difference: "
             "scores returned, a finite fill, a tensor scale...). Match torch's SDPA form, or call "
             "`fs.attention` directly.",
    "FS116": "A column kernel (a reduction over axes before the last, with its producers and consumers). "
             "Nothing to change; `disable_passes=['row-fusion']` splits it. An input broadcast within the "
             "kept axes (w of [C] over [N, H, C] reduced on axis 0) keeps the kernels apart (each still "
             "prints); reducing a [N, H*C] view instead makes it one kernel when w is [H*C].",
}


# What to do, for error classes whose docstring does not say it (a "What to do:" paragraph)
ERROR_ADVICE = {
    "FusedslError": "Catch it to handle any fusedsl mistake; its subclasses below say what to change, "
                    "and every message has a hint.",
    "FusedslWarning": "Filter on it to treat every fusedsl warning alike (`warnings.simplefilter(\"error\", "
                      "fs.FusedslWarning)` makes each one an error); its subclasses below say what to change.",
    "CacheDirWarning": "Point FUSEDSL_CACHE_DIR at a directory you own that others cannot write "
                       "(fusedsl creates it 0700), or leave it unset (~/.cache/fusedsl).",
}


def _error_classes():
    out = []
    for name in sorted(dir(fs)):
        obj = getattr(fs, name)
        if isinstance(obj, type) and issubclass(obj, (fs.FusedslError, Warning)):
            out.append((name, obj))
    from fusedsl.cachedir import CacheDirWarning
    out.append(("CacheDirWarning", CacheDirWarning))
    from fusedsl.errors import CacheError, CacheLimitError, JitTiersError
    out.append(("CacheError", CacheError))
    out.append(("CacheLimitError", CacheLimitError))
    out.append(("JitTiersError", JitTiersError))
    return sorted({n: c for n, c in out}.items())


def troubleshooting_page() -> str:
    from fusedsl.passes.fusion_model import REASONS
    lines = ["# Troubleshooting", "",
             "Generated from the code when the site is built: every error class fusedsl raises (each one "
             "names your file and line, shows the line and gives a hint) and every reason code a kernel "
             "boundary can carry, with what to change.", "",
             "## Errors", ""]
    for name, cls in _error_classes():
        doc = inspect.getdoc(cls) or ""
        text = doc.split("\nExample:")[0].strip()
        if "What to do" not in text:
            text += "\n\nWhat to do: " + ERROR_ADVICE.get(name, "**no advice written yet**")
        bases = ", ".join(b.__name__ for b in cls.__bases__)
        lines += [f"### {name}", "", f"*a {bases}*", "", text, ""]
    lines += ["## Kernel boundaries: reason codes", "",
              "Every kernel row of `k.report()` has `.reason_code` and `.reason` (see "
              "[FUSION.md](FUSION.md) for the benefit model).", "",
              "| code | meaning | what to change |", "|---|---|---|"]
    for code, title in REASONS.items():
        lines.append(f"| {code} | {title} | {REASON_ADVICE.get(code, '**no advice written yet**')} |")
    lines += ["", "## Not printed as Ascend C", "",
              "A kernel the Ascend C printer cannot print still runs on the CPU executors; "
              "`k.source`, `k.save` and `k.simulate` raise the reason (a `ScheduleError` or `TargetError` "
              "naming the op and your line), and `k.report()` shows it in the kernel's row. The usual "
              "ones and what to change:", "",
              "| reason | what to change |", "|---|---|",
              "| a symbolic size in a matmul or conv2d | compile with concrete sizes (arrays or `fs.spec((128, 64))`) |",
              "| ascend910 has no Matmul high-level API | target ascend910b or ascend310p for cube kernels |",
              "| ascend310p's Matmul API has no float32 form | use float16 operands on ascend310p |",
              "| an int32 / uint8 matmul / conv2d (the cube has no form for them; int8 prints) | int8 operands "
              "when the values fit in [-128, 127], float16 / float32 operands where the sums stay exact (below "
              "2**11 / 2**24), or accept a CPU-only kernel (exact there) |",
              "| a reduction over non-contiguous axes or of integers | reduce over the last axis, or cast to float32 |",
              "| a row bigger than UB (`plan` says so) | nothing: the multi-pass plan handles it, or use a 16-bit dtype |",
              "| a transpose other than a matmul operand's last two axes | transpose on the host, or accept a CPU-only kernel |",
              "", "## The compile caches", "",
              "LLVM object code and the g++-built libraries of `simulate` are cached in `FUSEDSL_CACHE_DIR` "
              "(default `~/.cache/fusedsl`), kept under `FUSEDSL_CACHE_MAX_BYTES` (default 2GiB) by evicting "
              "the least recently used entries; `fusedsl cache info` shows where, how much and the limit. A "
              "cache sub-folder you replace by a symlink to a folder of yours elsewhere (`llvm/` on another "
              "disk) is part of the cache: counted, pruned and cleared there; symlinks to files, and to "
              "folders others may write, are left alone.", "",
              "| symptom | what to do |", "|---|---|",
              "| `CacheLimitError: FUSEDSL_CACHE_MAX_BYTES=... is not a size` at your kernel's first call (or "
              "from `fusedsl cache info`) | set a number of bytes with an optional unit (`2GiB`, `500M`, `1.5G`, "
              "`2GB` = 2*10**9), `0` for no limit, or unset it; it is checked at every cache use, before the "
              "compile |",
              "| the cache takes too much disk | lower `FUSEDSL_CACHE_MAX_BYTES` (e.g. `500M`; the next compile "
              "prunes, or run `fusedsl cache prune`), or `fusedsl cache clear` |",
              "| kernels compile again in every new process, or `simulate` runs g++ each time | the limit is "
              "smaller than what you use: `fusedsl cache info` shows the total; raise `FUSEDSL_CACHE_MAX_BYTES` "
              "(each target's precompiled API header is about 80 MB, a library about 1 MB, an LLVM object a "
              "few KB) |",
              "| `fusedsl cache clear` left files | they were not written by fusedsl (it lists them) or are a "
              "build younger than an hour in progress: remove them yourself if you know them |",
              "| `CacheLimitError` | `FUSEDSL_CACHE_MAX_BYTES` is not a size: `2GiB`, `500M`, `1073741824`, or 0 "
              "for no limit |",
              "| `CacheError` (no space left) | free space or move the cache (`FUSEDSL_CACHE_DIR`); a smaller "
              "`FUSEDSL_CACHE_MAX_BYTES` keeps it from filling the disk again |",
              "| `CacheDirWarning` | the folder is shared or not yours: fusedsl uses a private temporary cache "
              "for the process (and `fusedsl cache` touches nothing there) |",
              "", "The CLI's exit statuses and messages are on the [command line page](cli.md).", ""]
    return "\n".join(lines)


def changelog_page() -> str:
    with open(os.path.join(ROOT, "CHANGELOG.md"), encoding="utf-8") as f:
        return f.read()


PAGES = {"ops.md": ops_page, "cli.md": cli_page, "troubleshooting.md": troubleshooting_page,
         "changelog.md": changelog_page}


# ---- the API page covers every public name ---------------------------------------------------------
def undocumented_public_names(api_markdown: str) -> list[str]:
    """Public names of fusedsl that docs/api.md neither renders (`::: module.name`) nor mentions
    as `fs.name` (the aliases and dtypes)."""
    import re
    rendered = set(re.findall(r"^::: [\w.]*?\.(\w+)$", api_markdown, flags=re.M))
    mentioned = set(re.findall(r"`fs\.(\w+)`", api_markdown))
    missing = []
    for name in sorted(n for n in dir(fs) if not n.startswith("_")):
        obj = getattr(fs, name)
        if inspect.ismodule(obj):
            continue
        owner = obj if (isinstance(obj, type) or callable(obj)) else type(obj)
        if name not in rendered and name not in mentioned and owner.__name__ not in rendered:
            missing.append(name)
    return missing


def _object_path(name: str, obj) -> str | None:
    """`module.attribute` under which mkdocstrings finds `obj` (the module that defines it, under
    the attribute holding it there), or None."""
    owner = obj if (isinstance(obj, type) or callable(obj)) else type(obj)
    module = sys.modules.get(getattr(owner, "__module__", "") or "")
    if module is None or not module.__name__.startswith("fusedsl"):
        return None
    if getattr(module, name, None) is owner:
        return f"{module.__name__}.{name}"
    attr = next((k for k, v in vars(module).items() if v is owner and not k.startswith("_")), None)
    return f"{module.__name__}.{attr}" if attr else None


def api_markdown(markdown: str) -> str:
    """docs/api.md plus a section rendering every public name it does not place itself (ops added
    since the page was written); a name that cannot be rendered is left for the strict check."""
    extra = []
    for name in undocumented_public_names(markdown):
        path = _object_path(name, getattr(fs, name))
        if path is not None:
            extra.append(f"::: {path}")
    if not extra:
        return markdown
    return markdown + "\n\n## More ops\n\nThe other public names, in alphabetical order.\n\n" + "\n\n".join(extra) + "\n"


# ---- the MkDocs hook -----------------------------------------------------------------------------
def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri == "api.md":
        import logging
        markdown = api_markdown(markdown)
        for name in undocumented_public_names(markdown):   # a warning fails `mkdocs build --strict`
            logging.getLogger("mkdocs.plugins.fusedsl").warning(f"api.md does not document fs.{name}")
    return markdown


def on_files(files, config):
    from mkdocs.structure.files import File
    for name, make in PAGES.items():
        files.append(File.generated(config, name, content=make()))
    return files


if __name__ == "__main__":
    page = sys.argv[1] if len(sys.argv) > 1 else "ops"
    if page == "readme":   # rewrite README.md's generated table in place
        path = os.path.join(ROOT, "README.md")
        with open(path, encoding="utf-8") as f:
            text = readme_with_table(f.read())
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        sys.exit(0)
    buf = io.StringIO()
    with redirect_stdout(buf):
        text = PAGES[f"{page}.md"]()
    print(text)

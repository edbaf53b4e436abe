"""Rich notebook displays of a compiled kernel, its report and a kernel plan.

Self-contained HTML and inline SVG: no network, no JavaScript, so a notebook committed with
its outputs reads the same on a code host.  Every user string (kernel names, reasons, IR,
source) goes through `html.escape`.  Syntax highlighting uses pygments when it is installed
(the `notebook` extra), with inline styles; without it the code is plain <pre>.
"""
from __future__ import annotations

from html import escape

from .cost import launch_of

# One scoped stylesheet: class names start with "fsd-" so they cannot clash with the page.
_STYLE = """<style>
.fsd { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; font-size: 13px; }
.fsd table { border-collapse: collapse; margin: 4px 0 8px 0; }
.fsd th, .fsd td { border: 1px solid #bbb; padding: 2px 8px; text-align: left; vertical-align: top; }
.fsd th { background: rgba(127,127,127,0.15); }
.fsd td.num { text-align: right; font-variant-numeric: tabular-nums; }
.fsd code, .fsd pre { font-family: Menlo, Consolas, 'DejaVu Sans Mono', monospace; font-size: 12px; }
.fsd pre { margin: 4px 0; padding: 6px; background: rgba(127,127,127,0.08); overflow-x: auto; }
.fsd summary { cursor: pointer; font-weight: 600; margin: 4px 0; }
.fsd .fsd-note { color: #777; }
</style>"""

_BAR_COLORS = {"min": "#4c9f70", "fused": "#3b7dd8", "unfused": "#d8643b", "measured": "#8e5bd8",
               "VECIN": "#3b7dd8", "VECOUT": "#4c9f70", "VECCALC": "#d8a03b"}


def _fmt(x, unit: str = "") -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:,.2f}{unit}"
    return f"{x:,}{unit}"


def _num(x, unit: str = "") -> str:
    return f'<td class="num">{escape(_fmt(x, unit))}</td>'


def _table(header: list[str], rows: list[list[str]]) -> str:
    """`rows` hold ready cells (<td>...); header strings are escaped here."""
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _td(text) -> str:
    return f"<td>{escape(str(text))}</td>"


def bars_svg(rows: list[tuple[str, int, str]], limit: int | None = None, limit_label: str = "",
             unit: str = "B") -> str:
    """Horizontal bars (label, value, color) on one scale; `limit` draws a budget line."""
    width, label_w, value_w, row_h = 620, 200, 110, 20
    span = width - label_w - value_w
    top = max([v for _, v, _ in rows] + [limit or 0]) or 1
    height = row_h * len(rows) + (16 if limit else 4)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'role="img" font-size="12" font-family="sans-serif">']
    for i, (label, value, color) in enumerate(rows):
        y = i * row_h + 2
        label = label if len(label) <= 28 else label[:27] + "\u2026"   # fits label_w at 12 px
        w = max(1.0, span * value / top)
        parts.append(f'<text x="0" y="{y + 13}" fill="currentColor">{escape(label)}</text>')
        parts.append(f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{row_h - 6}" fill="{color}">'
                     f'<title>{escape(label)}: {value:,} {unit}</title></rect>')
        parts.append(f'<text x="{label_w + w + 4:.1f}" y="{y + 13}" fill="currentColor">{value:,} {unit}</text>')
    if limit:
        x = label_w + span * limit / top
        bottom = row_h * len(rows) + 2
        parts.append(f'<line x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{bottom}" stroke="#c00" '
                     f'stroke-dasharray="4 2"/>')
        parts.append(f'<text x="{min(x, width - 140):.1f}" y="{bottom + 12}" fill="#c00">'
                     f'{escape(limit_label)} {limit:,} {unit}</text>')
    parts.append("</svg>")
    return "".join(parts)


def code_html(text: str, language: str) -> str:
    """<pre> of `text`, highlighted when pygments is installed."""
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import get_lexer_by_name
    except ImportError:
        return f"<pre>{escape(text)}</pre>"
    formatter = HtmlFormatter(noclasses=True, nobackground=True, style="default")
    return highlight(text, get_lexer_by_name(language), formatter)   # pygments escapes the text


def details(summary: str, body: str, open_: bool = False) -> str:
    return f"<details{' open' if open_ else ''}><summary>{escape(summary)}</summary>{body}</details>"


# ---- kernel plan ------------------------------------------------------------------------------
def ub_plan_svg(ub_plan: list[dict], budget: int | None) -> str:
    rows = [(f"{r['buffer']} {r['position']} x{r['num']}", r["bytes"] * r["num"],
             _BAR_COLORS.get(r["position"], "#888")) for r in ub_plan]
    if not rows:
        return '<p class="fsd-note">no UB plan (sizes unknown until the first call, or the kernel does not print)</p>'
    rows.append(("total", sum(v for _, v, _ in rows), "#666"))
    return bars_svg(rows, budget, "UB budget")


def _plan_rows(plan) -> list[dict]:
    return [{"buffer": n, "position": pos, "bytes": b, "num": num} for n, pos, b, num in plan.ub_plan]


def plan_html(plan) -> str:
    t = launch_of(plan.tiling)   # every kind's launch, as the report's table reads it
    code = getattr(plan, "reason_code", None)
    cells = [_td(plan.kind), _td(", ".join(plan.ops)), _td(code or ""), _td(plan.reason),
             _num(t.block_dim if t else None),
             _td(f"{t.tile_rows}x{t.tile_cols}" if t else "-"), _num(plan.ub_bytes)]
    table = _table(["kind", "ops", "reason code", "why a kernel", "blockDim", "tile", "UB bytes"], [cells])
    budget = getattr(plan, "ub_budget", None)
    return (f'<div class="fsd">{_STYLE}<b>kernel {escape(plan.name)}</b>{table}'
            f'{ub_plan_svg(_plan_rows(plan), budget)}</div>')


# ---- report -----------------------------------------------------------------------------------
def _kernels_table(rep) -> str:
    rows = []
    for k in rep.kernels:
        tile = "-" if k.tile_rows is None else f"{k.tile_rows}x{k.tile_cols}"
        rows.append([_td(k.name), _td(", ".join(k.ops)), _td(k.reason_code or ""), _td(k.reason),
                     _num(k.block_dim), _td(tile), _num(k.loops_per_core), _num(k.ub_bytes),
                     _num(getattr(k, "gm_bytes", None)), _num(k.model_time_us, " us")])
    return _table(["kernel", "ops", "reason code", "why a kernel", "blockDim", "tile", "loops/core",
                   "UB bytes", "GM bytes (model)", "model time"], rows)


def _gm_rows(rep) -> list[tuple[str, int, str]]:
    rows = [("minimum", rep.gm_bytes_min, _BAR_COLORS["min"]),
            ("fused (model)", getattr(rep, "gm_bytes_fused", None), _BAR_COLORS["fused"]),
            ("measured", rep.gm_bytes_measured, _BAR_COLORS["measured"]),
            ("unfused", rep.gm_bytes_unfused, _BAR_COLORS["unfused"])]
    return [(label, value, color) for label, value, color in rows if value is not None]


def _time_html(rep) -> str:
    fused = getattr(rep, "model_time_us_fused", None)
    unfused = getattr(rep, "model_time_us_unfused", None)
    if fused is None or unfused is None:
        return ""
    bars = bars_svg([("fused", round(fused, 2), _BAR_COLORS["fused"]),
                     ("unfused", round(unfused, 2), _BAR_COLORS["unfused"])], unit="us")
    ratio = unfused / max(fused, 1e-9)
    return (f"<p><b>Modelled NPU time</b> (a model, not a measurement): fused {fused:.2f} us, "
            f"unfused {unfused:.2f} us ({ratio:.2f}x)</p>{bars}")


def report_body(rep) -> str:
    parts = [f"<p><b>fusedsl report</b>: {escape(rep.name)} on {escape(rep.target)}, "
             f"{len(rep.kernels)} kernel(s)</p>", _kernels_table(rep)]
    budget = getattr(rep, "ub_budget", None)
    plans = []
    for k in rep.kernels:
        if k.ub_plan:
            plans.append(f"<p>UB plan of <code>{escape(k.name)}</code>: {_fmt(k.ub_bytes)} of "
                         f"{_fmt(budget)} bytes</p>" + ub_plan_svg(k.ub_plan, budget))
    without = [k.name for k in rep.kernels if not k.ub_plan]
    if without:   # kernels not printed as Ascend C (cube kernels for now) have no UB plan
        plans.append(f'<p class="fsd-note">no UB plan: {escape(", ".join(without))}</p>')
    if len(rep.kernels) <= 2:
        parts += plans
    else:         # many kernels: keep the display short
        parts.append(details(f"UB plans ({len(rep.kernels) - len(without)} kernel(s))", "".join(plans)))
    gm = _gm_rows(rep)
    if gm:
        parts.append("<p><b>GM traffic</b> (bytes between global memory and the chip)</p>")
        parts.append(bars_svg(gm))
    parts.append(_time_html(rep))
    return "".join(parts)


def report_html(rep) -> str:
    return f'<div class="fsd">{_STYLE}{report_body(rep)}</div>'


def report_markdown(rep) -> str:
    lines = [f"**fusedsl report**: `{rep.name}` on {rep.target}, {len(rep.kernels)} kernel(s)", "",
             "| kernel | ops | reason code | why a kernel | blockDim | tile | UB bytes | GM bytes (model) | model time |",
             "|---|---|---|---|---:|---|---:|---:|---:|"]

    def cell(x) -> str:   # markdown tables break on | and newlines
        return escape(str(x)).replace("|", "\\|").replace("\n", " ")
    for k in rep.kernels:
        lines.append(f"| {cell(k.name)} | {cell(', '.join(k.ops))} | {cell(k.reason_code or '')} | "
                     f"{cell(k.reason)} | {_fmt(k.block_dim)} | {_fmt(k.tile_rows)}x{_fmt(k.tile_cols)} | "
                     f"{_fmt(k.ub_bytes)} | {_fmt(getattr(k, 'gm_bytes', None))} | {_fmt(k.model_time_us, ' us')} |")
    lines += ["", f"GM bytes: minimum {_fmt(rep.gm_bytes_min)}, fused {_fmt(getattr(rep, 'gm_bytes_fused', None))}, "
                  f"unfused {_fmt(rep.gm_bytes_unfused)}, measured {_fmt(rep.gm_bytes_measured)}"]
    return "\n".join(lines)


# ---- compiled kernel --------------------------------------------------------------------------
def compiled_html(k) -> str:
    from .errors import FusedslError
    args = ", ".join(f"{i.name}: {i.type.dtype.name}[{', '.join(map(str, i.type.shape))}]"
                     if i.type is not None else f"{i.name}={i.value!r}" for i in k.infos)
    parts = [f'<div class="fsd">{_STYLE}<p><b>CompiledKernel</b> <code>{escape(k.name)}({escape(args)})</code> '
             f"for {escape(k.target.name)}: {len(k.kernels)} kernel(s)</p>", report_body(k.report())]
    parts.append(details("IR", code_html(k.ir, "text")))
    try:
        source = k.source
    except FusedslError as exc:   # e.g. a kernel kind the Ascend C printer does not print yet
        parts.append(details("Ascend C", f"<pre class=\"fsd-note\">{escape(str(exc))}</pre>"))
    else:
        parts.append(details(f"Ascend C ({source.count(chr(10)) + 1} lines)", code_html(source, "cpp")))
    parts.append("</div>")
    return "".join(parts)

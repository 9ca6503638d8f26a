"""The size report as one self-contained HTML page: no script, no network, no fonts to fetch.

What a person sees: the verdict line; each board region as a fill bar split by component, with a
line where its budget lies; a treemap of flash and one of RAM (region, then component, then the
largest symbols, laid out slice-and-dice in inline SVG, each box with a ``<title>`` tooltip); and
when comparing, the cause and delta tables. Same document in, same bytes out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from armgen.firmware.size.markdown import verdict
from armgen.firmware.size.plot import COMPONENT_COLOURS
from armgen.firmware.size.rules import COMPONENT_LABELS

_OTHER = "#999999"
_TM_W, _TM_H = 900, 360
#: Symbols drawn per component box of a treemap (the rest is one "other symbols" box).
_SYMBOLS_PER_BOX = 12

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:960px}
h1{font-size:20px} h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse;margin:8px 0} td,th{border:1px solid #ccc;padding:3px 8px}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap} th{text-align:left}
.verdict{padding:6px 10px;border-left:6px solid #2a2} .verdict.fail{border-color:#c00;background:#fee}
.bar{position:relative;height:22px;background:#f2f2f2;border:1px solid #bbb;width:900px;display:flex}
.bar span{display:block;height:100%}
.budget{position:absolute;top:-4px;bottom:-4px;width:2px;background:#c00}
.region{margin:10px 0} .verdict{font-size:16px;font-weight:bold}
.legend span{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:middle}
"""


def _colour(component: str) -> str:
    return COMPONENT_COLOURS.get(component, _OTHER)


def _b(n: int, signed: bool = False) -> str:
    return f"{n:+,} B" if signed else f"{n:,} B"


#: Columns whose cells are text (left-aligned, may wrap); the others are bytes.
_TEXT = {"cause", "detail", "component", "region", "symbol", "old value", "new value"}


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cls = ["" if h in _TEXT else "n" for h in header]
    th = "".join(f'<th class="{c}">{escape(h)}</th>' for c, h in zip(cls, header, strict=True))
    body = "".join(
        "<tr>" + "".join(f'<td class="{c}">{escape(str(x))}</td>' for c, x in zip(cls, r, strict=True)) + "</tr>"
        for r in rows)
    return f"<table><tr>{th}</tr>{body}</table>"


def _region_bars(doc: Mapping[str, Any]) -> str:
    report, budgets = doc["report"], doc["budgets"]
    out = []
    for r in report["regions"]:
        usable = max(r["usable"], 1)
        segs = "".join(
            f'<span style="width:{100 * n / usable:.3f}%;background:{_colour(c)}" '
            f'title="{escape(c)}: {n:,} B"></span>' for c, n in sorted(r["components"].items()) if n > 0)
        limit = budgets["regions"].get(r["name"])
        line = (f'<div class="budget" style="left:{min(100.0, 100 * limit / usable):.3f}%" '
                f'title="budget {limit:,} B"></div>') if limit is not None else ""
        out.append(f'<div class="region" data-region="{escape(r["name"])}"><b>{escape(r["name"])}</b> '
                   f'({escape(r["kind"])}): {r["used"]:,} of {r["usable"]:,} B '
                   f'({100 * r["used"] / usable:.1f} %)<div class="bar">{segs}{line}</div></div>')
    used = sorted({c for r in report["regions"] for c, n in r["components"].items() if n > 0})
    legend = "".join(f'<span style="background:{_colour(c)}"></span>{escape(COMPONENT_LABELS.get(c, c))}'
                     for c in used)
    return "".join(out) + f'<p class="legend">{legend}</p>'


def _slice(items: list[tuple[str, int, Any]], x: float, y: float, w: float, h: float, vertical: bool
           ) -> list[tuple[str, int, Any, float, float, float, float]]:
    """Slice-and-dice layout: boxes of area proportional to bytes along one axis."""
    total = sum(n for _, n, _ in items) or 1
    out, pos = [], 0.0
    for name, n, payload in items:
        frac = n / total
        if vertical:
            out.append((name, n, payload, x, y + pos * h, w, frac * h))
        else:
            out.append((name, n, payload, x + pos * w, y, frac * w, h))
        pos += frac
    return out


def _treemap(report: Mapping[str, Any], memory: str) -> str:
    """SVG treemap of one memory (flash or RAM): region -> component -> largest symbols."""
    volatile = memory == "ram"
    regions: list[Mapping[str, Any]] = [r for r in report["regions"] if r["volatile"] == volatile and r["used"] > 0]
    if not report["regions_known"]:  # no board: one box for the total, components from the report
        totals = {k: v[memory] for k, v in report["components"].items()}
        regions = [{"name": None, "used": report[memory], "components": totals}] if report[memory] else []
    by_comp_region: dict[tuple[str | None, str], list[tuple[str, int]]] = {}
    for name, s in report.get("symbols", {}).items():
        by_comp_region.setdefault((s["region"], s["component"]), []).append((name, s["size"]))
    boxes = []
    for rname, rbytes, r, rx, ry, rw, rh in _slice([(r["name"], r["used"], r) for r in regions],
                                                   0, 0, _TM_W, _TM_H, False):
        comps = [(c, n, None) for c, n in sorted(r["components"].items(), key=lambda t: -t[1]) if n > 0]
        rname = rname or ""
        boxes.append(f'<g data-region="{escape(rname)}"><rect x="{rx:.1f}" y="{ry:.1f}" width="{rw:.1f}" '
                     f'height="{rh:.1f}" fill="none" stroke="#000" stroke-width="2"><title>{escape(rname)}: '
                     f'{rbytes:,} B</title></rect>')
        for cname, cbytes, _, cx, cy, cw, ch in _slice(comps, rx, ry + 16, rw, rh - 16, True):
            syms = sorted(by_comp_region.get((rname or None, cname), []),
                          key=lambda t: (-t[1], t[0]))[:_SYMBOLS_PER_BOX]
            rest = cbytes - sum(n for _, n in syms)
            items = [(s, n, None) for s, n in syms] + ([("other", rest, None)] if rest > 0 else [])
            for sname, sbytes, _, sx, sy, sw, sh in _slice(items, cx, cy, cw, ch, False):
                boxes.append(f'<rect x="{sx:.1f}" y="{sy:.1f}" width="{sw:.1f}" height="{sh:.1f}" '
                             f'fill="{_colour(cname)}" stroke="#fff" stroke-width="0.5"><title>{escape(rname)} / '
                             f'{escape(cname)} / {escape(sname)}: {sbytes:,} B</title></rect>')
            if ch >= 12 and cw >= 60:
                boxes.append(f'<text x="{cx + 3:.1f}" y="{cy + 11:.1f}" font-size="10">{escape(cname)} '
                             f'{cbytes:,} B</text>')
        boxes.append(f'<text x="{rx + 3:.1f}" y="{ry + 12:.1f}" font-size="12" font-weight="bold">'
                     f'{escape(rname or memory)} {rbytes:,} B</text></g>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{_TM_W}" height="{_TM_H}" '
            f'viewBox="0 0 {_TM_W} {_TM_H}" role="img" aria-label="{memory} treemap">{"".join(boxes)}</svg>')


def _compare(cmp: Mapping[str, Any]) -> str:
    u = cmp["unexplained"]
    causes = [(c["name"], _b(c["flash"], True), _b(c["ram"], True), c["detail"]) for c in cmp["causes"]]
    causes += [("unexplained", _b(u["flash"], True), _b(u["ram"], True), u["detail"]),
               ("total", _b(cmp["flash"]["delta"], True), _b(cmp["ram"]["delta"], True), "")]
    out = [f"<h2>Causes (against {escape(cmp['base'])})</h2>", _table(("cause", "flash", "RAM", "detail"), causes)]
    comps = [(k, _b(v["new"]), _b(v["delta"], True), _b(cmp["components"]["ram"][k]["new"]),
              _b(cmp["components"]["ram"][k]["delta"], True)) for k, v in cmp["components"]["flash"].items()]
    if comps:
        out += ["<h2>Component deltas</h2>", _table(("component", "flash", "Δ flash", "RAM", "Δ RAM"), comps)]
    regions = [(k, _b(v["old"]), _b(v["new"]), _b(v["delta"], True)) for k, v in cmp["regions"].items()]
    out += ["<h2>Region deltas</h2>", _table(("region", "old", "new", "Δ"), regions)]
    syms = [(s["name"], _b(s["old"]), _b(s["new"]), _b(s["delta"], True)) for s in cmp["symbols"]]
    if syms:
        out += [f"<h2>Symbol deltas (top {cmp['top']})</h2>", _table(("symbol", "old", "new", "Δ"), syms)]
    if cmp["config"]:
        rows = [(c["symbol"], c["old"] or "(unset)", c["new"] or "(unset)") for c in cmp["config"]]
        out += ["<h2>Kconfig changes</h2>", _table(("symbol", "old value", "new value"), rows)]
    return "".join(out)


def render_html(doc: Mapping[str, Any]) -> str:
    """The HTML page of an ``armgen size --json`` document."""
    report = doc["report"]
    name = (report.get("project") or {}).get("name") or report["elf"]
    v = verdict(doc).replace("**", "").removeprefix("✅ ").removeprefix("❌ ")
    failed = "fail" if doc["violations"] else "ok"
    comps = [(f"{COMPONENT_LABELS.get(k, k)} ({k})", _b(c["flash"]), _b(c["ram"]))
             for k, c in report["components"].items()]
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>armgen size: {escape(str(name))}</title><style>{_CSS}</style></head><body>",
        f"<h1>{escape(str(name))} on {escape(str(report['board'] or 'no board'))}</h1>",
        f'<p class="verdict {failed}">{escape(v)}</p>',
        f"<p>flash {report['flash']:,} B, RAM {report['ram']:,} B "
        f"(components from {escape(report['attribution'])})</p>",
        "<h2>Regions</h2>", _region_bars(doc),
        "<h2>Flash by region, component and symbol</h2>", _treemap(report, "flash"),
        "<h2>RAM by region, component and symbol</h2>", _treemap(report, "ram"),
    ]
    if doc.get("compare") is not None:
        parts.append(_compare(doc["compare"]))
    parts += ["<h2>Components</h2>", _table(("component", "flash", "RAM"), comps), "</body></html>"]
    return "\n".join(parts) + "\n"

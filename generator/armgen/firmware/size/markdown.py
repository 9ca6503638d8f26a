"""The size report as GitHub-flavoured Markdown, for a pull-request comment or a CI job summary.

Verdict line first (within budget / over by N B in region R / grew by N B over the baseline), then
the causes of the delta (when comparing), then the components; the long tables (sections, symbols,
regions, Kconfig changes) sit in ``<details>`` blocks. Input is the document of ``armgen size --json``;
output is deterministic text, kept under :data:`MAX_CHARS` (GitHub's comment limit is 65,536).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from armgen.firmware.size.rules import COMPONENT_LABELS

#: Longest Markdown written (characters); longer tables are cut with a line saying so.
MAX_CHARS = 60_000
_MAX_ROWS = 200


def _b(n: int, signed: bool = False) -> str:
    return f"{n:+,} B" if signed else f"{n:,} B"


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


#: Columns whose cells are text (left-aligned); the others are bytes (right-aligned).
_TEXT_COLUMNS = {"cause", "detail", "component", "region", "kind", "section", "role", "symbol", "old value",
                 "new value"}


def _table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    rows = list(rows)
    rule = "|" + "|".join("---" if h in _TEXT_COLUMNS or i == 0 else "---:" for i, h in enumerate(header)) + "|"
    out = ["| " + " | ".join(header) + " |", rule]
    out += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows[:_MAX_ROWS]]
    if len(rows) > _MAX_ROWS:
        out.append(f"\n({len(rows) - _MAX_ROWS} more rows in the JSON report)")
    return out


def _what(v: Mapping[str, Any]) -> str:
    return str(v["kind"]) if v["kind"] in ("flash", "ram") else f"{v['kind']} {v['name']}"


def verdict(doc: Mapping[str, Any]) -> str:
    """The one-line verdict: over budget (each overrun), grew over the baseline, or within budget."""
    violations = doc["violations"]
    budget = [v for v in violations if v["kind"] not in ("growth", "placement")]
    placed = [v for v in violations if v["kind"] == "placement"]
    growth = [v for v in violations if v["kind"] == "growth"]
    parts = []
    if budget:
        parts.append("over budget: " + ", ".join(f"over by {_b(v['over'])} in {_what(v)}" for v in budget))
    if placed:
        parts.append(f"{len(placed)} misplaced section(s)")
    if growth:
        parts.append("grew over the baseline: " + ", ".join(
            f"{v['name']} grew by {_b(v['used'])} (allowed {_b(v['limit'])})" for v in growth))
    if parts:
        return "❌ **" + "; ".join(parts) + "**"
    cmp = doc.get("compare")
    tail = ""
    if cmp is not None:
        tail = (f", flash {_b(cmp['flash']['delta'], True)}, RAM {_b(cmp['ram']['delta'], True)} "
                f"against {cmp['base']}")
    g = doc.get("growth")
    if g and g.get("skipped"):
        tail += f" (growth check skipped: {g['skipped']})"
    return f"✅ **within budget**{tail}"


def _causes(cmp: Mapping[str, Any]) -> list[str]:
    rows = [(c["name"], _b(c["flash"], True), _b(c["ram"], True), c["detail"]) for c in cmp["causes"]]
    u = cmp["unexplained"]
    rows.append(("unexplained", _b(u["flash"], True), _b(u["ram"], True), u["detail"]))
    rows.append(("**total**", f"**{_b(cmp['flash']['delta'], True)}**", f"**{_b(cmp['ram']['delta'], True)}**", ""))
    out = ["### Causes", "", *_table(("cause", "flash", "RAM", "detail"), rows)]
    if cmp["config"]:
        changes = [(c["symbol"], c["old"] if c["old"] is not None else "(unset)",
                    c["new"] if c["new"] is not None else "(unset)") for c in cmp["config"]]
        out += ["", f"<details><summary>Kconfig changes ({len(changes)}; no bytes of their own)</summary>", "",
                *_table(("symbol", "old value", "new value"), changes), "", "</details>"]
    return out


def _components(doc: Mapping[str, Any]) -> list[str]:
    report, cmp = doc["report"], doc.get("compare")
    comps = report["components"]
    if cmp is None or not cmp["components"]["flash"]:
        plain = [(f"{COMPONENT_LABELS.get(k, k)} (`{k}`)", _b(v["flash"]), _b(v["ram"])) for k, v in comps.items()]
        return ["### Components", "", *_table(("component", "flash", "RAM"), plain)]
    cf, cr = cmp["components"]["flash"], cmp["components"]["ram"]
    rows: list[tuple[str, ...]] = []
    for k in [k for k in COMPONENT_LABELS if k in cf] + sorted(set(cf) - set(COMPONENT_LABELS)):
        rows.append((f"{COMPONENT_LABELS.get(k, k)} (`{k}`)", _b(cf[k]["new"]), _b(cf[k]["delta"], True),
                     _b(cr[k]["new"]), _b(cr[k]["delta"], True)))
    return ["### Components", "", *_table(("component", "flash", "Δ flash", "RAM", "Δ RAM"), rows)]


def _details(title: str, header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    if not rows:
        return []
    return ["", f"<details><summary>{title}</summary>", "", *_table(header, rows), "", "</details>"]


def render_markdown(doc: Mapping[str, Any]) -> str:
    """Markdown of an ``armgen size --json`` document (``report``, ``violations``, optional ``compare``)."""
    report, cmp = doc["report"], doc.get("compare")
    name = (report.get("project") or {}).get("name") or report["elf"]
    lines = [verdict(doc), "", f"**{name}** on {report['board'] or 'no board'}: flash {_b(report['flash'])}, "
             f"RAM {_b(report['ram'])}"]
    lines += [f"- {v['message']}" for v in doc["violations"]]
    g = doc.get("growth")
    if g and g.get("skipped"):
        lines.append(f"- growth check skipped: {g['skipped']}")
    if cmp is not None:
        lines += ["", *_causes(cmp)]
    lines += ["", *_components(doc)]
    regions = [(r["name"], r["kind"], _b(r["used"]), _b(r["usable"]), f"{100 * r['used'] / r['usable']:.1f} %"
                if r["usable"] else "-") for r in report["regions"]]
    lines += _details("Regions", ("region", "kind", "used", "usable", "fill"), regions)
    if cmp is not None:
        rd = [(k, _b(v["old"]), _b(v["new"]), _b(v["delta"], True)) for k, v in cmp["regions"].items()]
        lines += _details("Region deltas", ("region", "old", "new", "Δ"), rd)
        sd = [(f"`{k}`", _b(v["old"]), _b(v["new"]), _b(v["delta"], True))
              for k, v in cmp["sections"].items() if v["delta"]]
        lines += _details("Section deltas", ("section", "old", "new", "Δ"), sd)
        sy = [(f"`{s['name']}`", _b(s["old"]), _b(s["new"]), _b(s["delta"], True)) for s in cmp["symbols"]]
        lines += _details(f"Symbol deltas (top {cmp['top']})", ("symbol", "old", "new", "Δ"), sy)
    else:
        secs = [(f"`{s['name']}`", s["role"], _b(s["size"])) for s in report["sections"]]
        lines += _details("Sections", ("section", "role", "size"), secs)
    lines += [f"- note: {n}" for n in (cmp or {}).get("notes", [])]
    text = "\n".join(lines) + "\n"
    if len(text) > MAX_CHARS:
        text = text[: MAX_CHARS - 80].rsplit("\n", 1)[0] + "\n\n(cut at 60,000 characters; see the JSON report)\n"
    return text

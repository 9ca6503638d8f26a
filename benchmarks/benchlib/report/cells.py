"""Cells and tables of results.md, and reading one measured entry of results.json."""

from __future__ import annotations

from typing import Any

SAMPLES = ("kws", "vww", "ic", "ad")
#: short machine name -> its title in the tables (the order of every table)
MACHINES = {"an547": "qemu_mps3_an547 (Cortex-M55)", "an386": "qemu_mps2_an386 (Cortex-M4)"}
KIB = 1024
FIT_ORDER = {"an547": ["qemu_mps3_an547", "corstone_300", "alif_e8_he"], "an386": ["qemu_mps2_an386", "stm32f4_disco"]}


def n(v: Any) -> str:
    """A figure as a cell: thousands separated, floats to 2 places, "–" for none."""
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:,.2f}"
    return f"{v:,}"


def ratio(a: Any, b: Any) -> str:
    """a / b to 2 places, "–" when either is missing or 0."""
    return f"{a / b:.2f}" if a and b else "–"


def table(head: list[str], rows: list[list[Any]], align: str | None = None) -> str:
    """A Markdown table; ``align``: one letter per column, ``l`` or ``r`` (default: first left, rest right)."""
    align = align or ("l" + "r" * (len(head) - 1))
    sep = ["---:" if c == "r" else "---" for c in align]
    out = ["| " + " | ".join(head) + " |", "| " + " | ".join(sep) + " |"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def comp(e: dict[str, Any], *keys: str) -> int:
    """Flash bytes of these components of an entry."""
    return sum(e.get("components", {}).get(k, {}).get("flash", 0) for k in keys)


def measured(res: dict[str, Any], part: str, m: str, s: str) -> dict[str, Any] | None:
    """The entry of ``part`` (armgen, tflm) for sample ``s`` on machine ``m``; None when missing or failed."""
    e = res.get(part, {}).get(m, {}).get(s)
    return None if (e is None or "error" in e) else e



def armgen_value(a: dict[str, Any], key: str) -> Any:
    """armgen's figure for ``key``; instructions are the product image's (``instructions_product``: input
    written in place before the timed call, as TFLM's runner does), else ``armgen run``'s variant."""
    if key == "instructions":
        return a.get("instructions_product") or a.get("instructions")
    return a.get(key)

"""The baseline ratchet: ``[budgets.growth]`` limits how much an image may grow over its committed baseline.

A growth table (in ``armgen.toml``'s ``[budgets]`` or a ``--budget`` file) takes::

    [budgets.growth]
    flash = "1 KiB"              # bytes, or a size string of armgen's size grammar
    ram = "2 %"                  # percent of the baseline's figure
    regions.SRAM = "512 B"       # a board region's used bytes
    components.model = "5 %"     # a component's flash + RAM bytes

:func:`check_growth` compares a report with the baseline's (both report dicts) and returns a
:class:`~armgen.firmware.size.budgets.Violation` (kind ``growth``) for each limit exceeded.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from armgen.boards import parse_size_or_percent
from armgen.errors import SizeError
from armgen.firmware.size.rules import COMPONENT_LABELS

if TYPE_CHECKING:  # pragma: no cover - typing only
    from armgen.boards import Board

_GROWTH_KEYS = ("flash", "ram", "regions", "components")


@dataclass(frozen=True)
class GrowthLimit:
    """How much one figure may grow: ``bytes``, or ``percent`` of the baseline's figure (one is None)."""

    bytes: int | None = None
    percent: Fraction | None = None

    def allowed(self, base: int) -> int:
        """Bytes of growth allowed over a baseline figure of ``base`` bytes (percent rounds down)."""
        if self.bytes is not None:
            return self.bytes
        return math.floor((self.percent or Fraction(0)) * base / 100)

    def text(self) -> str:
        """``"1,024 B"`` or ``"5 %"``."""
        return f"{self.bytes:,} B" if self.bytes is not None else f"{float(self.percent or 0):g} %"


def _limit(value: object, key: str, source: str) -> GrowthLimit:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise SizeError(f"{source}: growth budget '{key}' must be bytes or a string like \"1 KiB\" or \"5 %\", "
                        f"not {value!r}")
    try:
        n, pct = parse_size_or_percent(value)
    except ValueError as exc:
        raise SizeError(f"{source}: growth budget '{key}' is {exc}") from None
    return GrowthLimit(n, pct)


def parse_growth_table(
    table: object, source: str, board: Board | None, base: Mapping[str, GrowthLimit] | None = None
) -> dict[str, GrowthLimit]:
    """``{key: GrowthLimit}`` (keys ``flash``, ``ram``, ``regions.<name>``, ``components.<name>``) of a
    ``[budgets.growth]`` table, over ``base``.

    Raises:
        SizeError: not a table, an unknown key, region or component, a bad size or unit, a region
            limit without a board.
    """
    if not isinstance(table, Mapping):
        raise SizeError(f"{source}: 'budgets.growth' must be a table")
    out = dict(base or {})
    for key, value in table.items():
        full = f"budgets.growth.{key}"
        if key not in _GROWTH_KEYS:
            raise SizeError(f"{source}: unknown key '{full}' (known: {', '.join(_GROWTH_KEYS)})")
        if key in ("flash", "ram"):
            out[key] = _limit(value, full, source)
            continue
        if not isinstance(value, Mapping):
            raise SizeError(f"{source}: '{full}' must be a table")
        for name, sub in value.items():
            sub_key = f"{full}.{name}"
            if key == "regions":
                if board is None:
                    raise SizeError(f"{source}: '{sub_key}' needs a board to know region {name}",
                                    hint="pass --board NAME")
                if name not in {r.name for r in board.regions}:
                    known = ", ".join(r.name for r in board.regions)
                    raise SizeError(f"{source}: unknown key '{sub_key}': board {board.name} has no region "
                                    f"{name} (regions: {known})")
            elif name not in COMPONENT_LABELS:
                raise SizeError(f"{source}: unknown key '{sub_key}' (components: {', '.join(COMPONENT_LABELS)})")
            out[f"{key}.{name}"] = _limit(sub, sub_key, source)
    return out


def growth_figures(report: Mapping[str, Any]) -> dict[str, int]:
    """The figures a growth limit can name, from a report dict: ``flash``, ``ram``, ``regions.<name>``
    (used bytes), ``components.<name>`` (flash + RAM bytes)."""
    out = {"flash": report["flash"], "ram": report["ram"]}
    out |= {f"regions.{r['name']}": r["used"] for r in report["regions"]}
    out |= {f"components.{k}": v["flash"] + v["ram"] for k, v in report["components"].items()}
    return out


def growth_dict(growth: Mapping[str, GrowthLimit]) -> dict[str, dict[str, Any]]:
    """JSON-ready ``{key: {"bytes": n | None, "percent": p | None}}``."""
    return {k: {"bytes": v.bytes, "percent": float(v.percent) if v.percent is not None else None}
            for k, v in sorted(growth.items())}

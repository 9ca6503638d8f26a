"""Budgets: the size grammar for limits, :class:`SizeBudgets` from the board, ``armgen.toml``'s
``[budgets]`` and a ``--budget`` file (:func:`resolve_budgets`), and :func:`check_budgets`."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from armgen.boards import parse_size as parse_board_size
from armgen.errors import SizeError
from armgen.firmware.size.growth import GrowthLimit, growth_figures, parse_growth_table
from armgen.firmware.size.records import ElfSizeReport
from armgen.firmware.size.rules import COMPONENT_LABELS

if TYPE_CHECKING:  # pragma: no cover - typing only
    from armgen.boards import Board

def parse_size(value: object, key: str, source: str) -> int:
    """Parse a budget size, an int (bytes) or a string ``"<number> <unit>"``, with armgen's one size
    grammar (:func:`armgen.boards.parse_size`: ``B``, ``KiB``, ``MiB``, ``GiB``, ``kB``, ``MB``).

    Raises:
        SizeError: negative, fractional, boolean or unparseable values, and units in bits (``"40 kb"``),
            naming ``key`` and ``source``.
    """
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise SizeError(f"{source}: budget '{key}' must be bytes (int) or a string like \"512 KiB\", not {value!r}")
    try:
        return parse_board_size(value)
    except ValueError as exc:
        raise SizeError(f"{source}: budget '{key}' is {exc}") from None


@dataclass(frozen=True)
class ComponentBudget:
    """Ceilings for one component in bytes: ``total`` (flash + RAM), ``flash``, ``ram`` (None: unset)."""

    total: int | None = None
    flash: int | None = None
    ram: int | None = None


@dataclass(frozen=True)
class SizeBudgets:
    """Resolved size limits in bytes (None / absent: not checked).

    Attributes:
        flash, ram: totals (:attr:`ElfSizeReport.flash` / ``ram``).
        regions: ``{region name: bytes}`` for a region's ``used``.
        components: ``{component key: ComponentBudget}``.
        sources: ``{key: file or "board <name>"}`` saying where each limit came from.
        growth: ``[budgets.growth]``, ``{flash | ram | regions.<name> | components.<name>: GrowthLimit}``:
            how much each figure may grow over the baseline (:func:`check_growth`); sources keys
            ``growth.<key>``.
    """

    flash: int | None = None
    ram: int | None = None
    regions: Mapping[str, int] = field(default_factory=dict)
    components: Mapping[str, ComponentBudget] = field(default_factory=dict)
    sources: Mapping[str, str] = field(default_factory=dict)
    growth: Mapping[str, GrowthLimit] = field(default_factory=dict)


@dataclass(frozen=True)
class Violation:
    """One budget overrun or misplaced section.

    Attributes:
        kind: ``"flash"``, ``"ram"``, ``"region"``, ``"component"`` or ``"placement"``.
        name: what overran (``"flash"``, a region or component name, a section name).
        used, limit: bytes (0 for placements). over: ``used - limit`` in bytes.
        message: one line for users.
    """

    kind: Literal["flash", "ram", "region", "component", "placement", "growth"]
    name: str
    used: int
    limit: int
    over: int
    message: str


_BUDGET_KEYS = ("flash", "ram", "regions", "components", "growth")


def budgets_from_board(board: Board) -> SizeBudgets:
    """Default budgets of a board: ``Budgets.flash``/``ram`` and each region's usable size (bytes)."""
    src = f"board {board.name}"
    regions = {r.name: r.usable for r in board.regions}
    sources = {"flash": src, "ram": src} | {f"regions.{r}": src for r in regions}
    return SizeBudgets(board.budgets.flash, board.budgets.ram, regions, {}, sources)


def parse_budget_table(
    table: Mapping[str, Any], source: str, board: Board | None = None, base: SizeBudgets | None = None
) -> SizeBudgets:
    """Apply a ``[budgets]`` TOML table on top of ``base``.

    Args:
        table: the contents of ``[budgets]`` (keys flash, ram, regions, components).
        source: file name used in messages.
        board: known regions for checking ``regions`` keys (None: region budgets are an error).
        base: budgets to override key by key (None: empty).

    Raises:
        SizeError: unknown key, bad or negative size, unknown region, a region budget larger than the
            region's usable size, or a region budget without a board.
    """
    base = base or SizeBudgets()
    flash, ram = base.flash, base.ram
    regions = dict(base.regions)
    components = dict(base.components)
    sources = dict(base.sources)
    for key in table:
        if key not in _BUDGET_KEYS:
            raise SizeError(f"{source}: unknown key 'budgets.{key}' (known: {', '.join(_BUDGET_KEYS)})")
    if "flash" in table:
        flash = parse_size(table["flash"], "budgets.flash", source)
        sources["flash"] = source
    if "ram" in table:
        ram = parse_size(table["ram"], "budgets.ram", source)
        sources["ram"] = source
    reg = table.get("regions", {})
    if not isinstance(reg, Mapping):
        raise SizeError(f"{source}: 'budgets.regions' must be a table")
    for name, value in reg.items():
        key = f"budgets.regions.{name}"
        if board is None:
            raise SizeError(f"{source}: '{key}' needs a board to know region {name}", hint="pass --board NAME")
        try:
            region = board.region(name)
        except KeyError:
            known = ", ".join(r.name for r in board.regions)
            raise SizeError(
                f"{source}: unknown key '{key}': board {board.name} has no region {name} (regions: {known})"
            ) from None
        n = parse_size(value, key, source)
        if n > region.usable:
            raise SizeError(
                f"{source}: '{key}' = {n} B is larger than region {name} "
                f"({region.usable} B usable of {region.size} B)"
            )
        regions[name] = n
        sources[f"regions.{name}"] = source
    comp = table.get("components", {})
    if not isinstance(comp, Mapping):
        raise SizeError(f"{source}: 'budgets.components' must be a table")
    for name, value in comp.items():
        key = f"budgets.components.{name}"
        if name not in COMPONENT_LABELS:
            raise SizeError(f"{source}: unknown key '{key}' (components: {', '.join(COMPONENT_LABELS)})")
        if isinstance(value, Mapping):
            for sub in value:
                if sub not in ("total", "flash", "ram"):
                    raise SizeError(f"{source}: unknown key '{key}.{sub}' (known: total, flash, ram)")
            cb = ComponentBudget(
                *(parse_size(value[k], f"{key}.{k}", source) if k in value else None for k in ("total", "flash", "ram"))
            )
        else:
            cb = ComponentBudget(total=parse_size(value, key, source))
        components[name] = cb
        sources[f"components.{name}"] = source
    growth = dict(base.growth)
    if "growth" in table:
        mine = parse_growth_table(table["growth"], source, board)
        growth |= mine
        sources |= {f"growth.{k}": source for k in mine}
    return SizeBudgets(flash, ram, regions, components, sources, growth)


def load_budget_file(path: str | Path, board: Board | None = None, base: SizeBudgets | None = None) -> SizeBudgets:
    """Read a budget TOML file (a ``[budgets]`` table, as in ``armgen.toml``) on top of ``base``.

    Raises:
        SizeError: missing/unreadable file, invalid TOML, no ``[budgets]`` table, other top-level keys,
            or any error of :func:`parse_budget_table`.
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise SizeError(f"budget file {path}: no such file") from None
    except OSError as exc:
        raise SizeError(f"cannot read budget file {path}: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SizeError(f"{path}: not valid TOML ({exc})") from None
    extra = sorted(k for k in data if k != "budgets")
    if extra:
        raise SizeError(f"{path}: unknown key '{extra[0]}' (a budget file holds only a [budgets] table)")
    if "budgets" not in data or not isinstance(data["budgets"], Mapping):
        raise SizeError(f"{path}: no [budgets] table")
    return parse_budget_table(data["budgets"], str(path), board, base)


def resolve_budgets(
    board: Board | None,
    project_budgets: Mapping[str, Any] | None = None,
    project_source: str = "armgen.toml",
    budget_file: str | Path | None = None,
) -> SizeBudgets:
    """Budgets in order of precedence: board defaults < project ``[budgets]`` < ``budget_file``.

    Raises:
        SizeError: see :func:`parse_budget_table` and :func:`load_budget_file`.
    """
    b = budgets_from_board(board) if board is not None else SizeBudgets()
    if project_budgets is not None:
        b = parse_budget_table(project_budgets, project_source, board, b)
    if budget_file is not None:
        b = load_budget_file(budget_file, board, b)
    return b


def check_budgets(report: ElfSizeReport, budgets: SizeBudgets) -> list[Violation]:
    """Compare a report with budgets; also turns each misplaced section into a violation.

    Component ceilings: ``total`` limits flash + RAM bytes of the component (``.data`` counts in both,
    as in the totals); ``flash``/``ram`` limit one side.

    Returns:
        Violations in a fixed order (placement, flash, ram, regions, components); empty when within budget.
    """
    out: list[Violation] = []
    for m in report.misplaced:
        out.append(Violation("placement", m.section, 0, 0, 0, m.message))

    def over(kind: Any, name: str, label: str, used: int, limit: int | None, src_key: str) -> None:
        if limit is not None and used > limit:
            src = budgets.sources.get(src_key, "budget")
            out.append(
                Violation(kind, name, used, limit, used - limit,
                          f"{label} over budget by {used - limit} B ({used} B used, {limit} B allowed by {src})")
            )

    over("flash", "flash", "flash", report.flash, budgets.flash, "flash")
    over("ram", "ram", "RAM", report.ram, budgets.ram, "ram")
    for name in sorted(budgets.regions):
        try:
            used = report.region(name).used
        except KeyError:
            continue
        over("region", name, f"region {name}", used, budgets.regions[name], f"regions.{name}")
    for name in sorted(budgets.components):
        c = report.component(name)
        cb = budgets.components[name]
        key = f"components.{name}"
        over("component", name, f"component {name}", c.flash + c.ram, cb.total, key)
        over("component", name, f"component {name} (flash)", c.flash, cb.flash, key)
        over("component", name, f"component {name} (RAM)", c.ram, cb.ram, key)
    return out


def check_growth(base: Mapping[str, Any], report: Mapping[str, Any], budgets: SizeBudgets) -> list[Violation]:
    """Growth of ``report`` over the baseline report ``base`` (both report dicts) against
    ``budgets.growth``, one :class:`Violation` (kind ``growth``) per limit exceeded, in key order.

    ``used`` is the growth in bytes, ``limit`` the growth allowed (a percent limit of the baseline's
    figure, rounded down). A figure the baseline lacks (a new component) grew from 0.
    """
    old, new = growth_figures(base), growth_figures(report)
    out: list[Violation] = []
    for key in sorted(budgets.growth):
        if key not in new and key not in old:
            continue
        limit = budgets.growth[key]
        grew = new.get(key, 0) - old.get(key, 0)
        allowed = limit.allowed(old.get(key, 0))
        if grew > allowed:
            src = budgets.sources.get(f"growth.{key}", "budget")
            label = key.replace("regions.", "region ").replace("components.", "component ")
            out.append(Violation(
                "growth", key, grew, allowed, grew - allowed,
                f"{label} grew by {grew:,} B over the baseline ({old.get(key, 0):,} -> {new.get(key, 0):,} B), "
                f"more than the {limit.text()}{f' ({allowed:,} B)' if limit.bytes is None else ''} allowed by "
                f"{src} budgets.growth.{key}",
            ))
    return out

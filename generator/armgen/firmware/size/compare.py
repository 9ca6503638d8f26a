"""Deltas between two size reports (old -> new) and their causes, in bytes.

Both sides are report dicts (:meth:`ElfSizeReport.to_dict`, or the ``report`` of a saved
``armgen size --json``), so an ELF, a project and a saved report compare alike. Deltas are given per
total, region, component, section and symbol (the top N by size of the change); the causes come from
what armgen generated for both images (:mod:`armgen.firmware.size.causes`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from armgen.errors import SizeError
from armgen.firmware.size.causes import Cause, ConfigChange, config_changes, find_causes
from armgen.firmware.size.records import ElfSizeReport

#: Symbols listed in a comparison by default (largest ``|delta|`` first).
DEFAULT_TOP_SYMBOLS = 10


@dataclass(frozen=True)
class Delta:
    """Old and new bytes of one item; ``delta = new - old``."""

    name: str
    old: int
    new: int

    @property
    def delta(self) -> int:
        """``new - old`` in bytes."""
        return self.new - self.old


@dataclass(frozen=True)
class SizeComparison:
    """Differences between two reports (old -> new), bytes.

    Attributes:
        flash, ram: total deltas. sections: per section (size). components_flash / components_ram:
        per component. regions: per region ``used``. Items present in one report only count as 0 in
        the other; every item of either report is listed, sorted by name.
        symbols: the ``top`` symbols with the largest ``|delta|`` (ties by name), changed ones only.
        causes: what armgen generated differently, each with its flash and RAM bytes, in the fixed
        precedence of :func:`armgen.firmware.size.causes.find_causes`; ``unexplained`` is the rest, so
        ``sum(causes) + unexplained == flash.delta`` (and the same for RAM).
        config: Zephyr Kconfig symbols whose values differ (no bytes of their own).
        base: what the old side is, for people (``baseline size-baseline.json``, ``project ../main``);
            the old ELF's path when not given.
        notes: sentences about what was not compared. Components are compared only when both reports
        found them the same way (``attribution``: map, DWARF or symbols); otherwise both component
        tuples are empty and a note says why, instead of deltas between two different methods
        (issue 27: an old ELF without its map showed every component as 0 and its bytes as
        "unattributed", so "app +12,279 B").
    """

    old_elf: str
    new_elf: str
    flash: Delta
    ram: Delta
    sections: tuple[Delta, ...]
    components_flash: tuple[Delta, ...]
    components_ram: tuple[Delta, ...]
    regions: tuple[Delta, ...]
    notes: tuple[str, ...] = ()
    symbols: tuple[Delta, ...] = ()
    causes: tuple[Cause, ...] = ()
    unexplained: Cause | None = None
    config: tuple[ConfigChange, ...] = ()
    top: int = DEFAULT_TOP_SYMBOLS
    base: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""

        def d(x: Delta) -> dict[str, int]:
            return {"old": x.old, "new": x.new, "delta": x.delta}

        unexplained = self.unexplained or Cause("unexplained", "unexplained", 0, 0)
        return {
            "base": self.base or self.old_elf,
            "old_elf": self.old_elf,
            "new_elf": self.new_elf,
            "flash": d(self.flash),
            "ram": d(self.ram),
            "sections": {x.name: d(x) for x in self.sections},
            "components": {
                "flash": {x.name: d(x) for x in self.components_flash},
                "ram": {x.name: d(x) for x in self.components_ram},
            },
            "regions": {x.name: d(x) for x in self.regions},
            "symbols": [{"name": x.name, **d(x)} for x in self.symbols],
            "top": self.top,
            "causes": [c.to_dict() for c in self.causes],
            "unexplained": unexplained.to_dict(),
            "config": [c.to_dict() for c in self.config],
            "notes": list(self.notes),
        }


def _deltas(old: Mapping[str, int], new: Mapping[str, int]) -> tuple[Delta, ...]:
    return tuple(Delta(k, old.get(k, 0), new.get(k, 0)) for k in sorted(set(old) | set(new)))


def identity(report: Mapping[str, Any]) -> dict[str, str | None]:
    """Board, RTOS and Zephyr release of a report dict (the project's when known, else the sizing board)."""
    project = report.get("project") or {}
    rtos = project.get("rtos") or ("zephyr" if str(report.get("elf", "")).endswith("zephyr.elf") else "baremetal")
    return {"board": report.get("board") or project.get("board"), "RTOS": rtos, "release": project.get("release")}


def check_same_target(old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
    """Refuse comparing images of different boards, RTOSes or Zephyr releases.

    Raises:
        SizeError: one line naming each difference (``board qemu_mps2_an386 vs qemu_mps3_an547``).
    """
    a, b = identity(old), identity(new)
    diff = [f"{k} {a[k] or 'unknown'} vs {b[k] or 'unknown'}" for k in a if a[k] != b[k]]
    if diff:
        raise SizeError(f"cannot compare {old.get('elf')} with {new.get('elf')}: {', '.join(diff)}",
                        hint="pass --allow-different-board to compare them anyway")


def compare_dicts(old: Mapping[str, Any], new: Mapping[str, Any], top: int = DEFAULT_TOP_SYMBOLS,
                  base: str = "") -> SizeComparison:
    """Deltas and causes between two report dicts (``new - old``, bytes).

    Components are compared only when both reports share their ``attribution`` (see
    :class:`SizeComparison`); sections, regions, symbols and totals always are. The caller checks
    the target first (:func:`check_same_target`).
    """

    def sec_sizes(r: Mapping[str, Any]) -> dict[str, int]:
        out: dict[str, int] = {}
        for s in r["sections"]:
            out[s["name"]] = out.get(s["name"], 0) + s["size"]
        return out

    notes: list[str] = []
    comparable = old["attribution"] == new["attribution"]
    if not comparable:

        def how(r: Mapping[str, Any]) -> str:
            why = " (no linker map beside it)" if r["attribution"] != "map" and r["map"] is None else ""
            return f"{r['elf']} by {r['attribution']}{why}"

        notes.append(
            f"components not compared: they were found in different ways, {how(old)}, {how(new)}; "
            "give both images' linker maps (--map, --compare-map) to compare components"
        )
    old_c = old["components"] if comparable else {}
    new_c = new["components"] if comparable else {}
    sizes_old = {k: v["size"] for k, v in old.get("symbols", {}).items()}
    sizes_new = {k: v["size"] for k, v in new.get("symbols", {}).items()}
    symbols = [d for d in _deltas(sizes_old, sizes_new) if d.delta]
    symbols.sort(key=lambda d: (-abs(d.delta), d.name))
    flash = Delta("flash", old["flash"], new["flash"])
    ram = Delta("ram", old["ram"], new["ram"])
    causes, unexplained, cause_notes = find_causes(old, new, comparable, flash.delta, ram.delta)
    return SizeComparison(
        old_elf=old["elf"],
        new_elf=new["elf"],
        flash=flash,
        ram=ram,
        sections=_deltas(sec_sizes(old), sec_sizes(new)),
        components_flash=_deltas({k: v["flash"] for k, v in old_c.items()}, {k: v["flash"] for k, v in new_c.items()}),
        components_ram=_deltas({k: v["ram"] for k, v in old_c.items()}, {k: v["ram"] for k, v in new_c.items()}),
        regions=_deltas({r["name"]: r["used"] for r in old["regions"]}, {r["name"]: r["used"] for r in new["regions"]}),
        notes=tuple(notes + cause_notes),
        symbols=tuple(symbols[:top]),
        causes=causes,
        unexplained=unexplained,
        config=config_changes(old, new),
        top=top,
        base=base,
    )


def compare_reports(old: ElfSizeReport, new: ElfSizeReport, top: int = DEFAULT_TOP_SYMBOLS) -> SizeComparison:
    """:func:`compare_dicts` of two :class:`ElfSizeReport` objects (no target check)."""
    return compare_dicts(old.to_dict(), new.to_dict(), top)

"""Deltas between two size reports (old -> new): totals, sections, components and regions, bytes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from armgen.firmware.size.records import ElfSizeReport


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

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""

        def d(x: Delta) -> dict[str, int]:
            return {"old": x.old, "new": x.new, "delta": x.delta}

        return {
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
            "notes": list(self.notes),
        }


def _deltas(old: Mapping[str, int], new: Mapping[str, int]) -> tuple[Delta, ...]:
    return tuple(Delta(k, old.get(k, 0), new.get(k, 0)) for k in sorted(set(old) | set(new)))


def compare_reports(old: ElfSizeReport, new: ElfSizeReport) -> SizeComparison:
    """Per-section, per-component and per-region deltas between two reports (``new - old``, bytes).

    Components are compared only when both reports share their ``attribution`` (see
    :class:`SizeComparison`); sections, regions and totals always are.
    """

    def sec_sizes(r: ElfSizeReport) -> dict[str, int]:
        out: dict[str, int] = {}
        for s in r.sections:
            out[s.name] = out.get(s.name, 0) + s.size
        return out

    notes: list[str] = []
    comparable = old.attribution == new.attribution
    if not comparable:

        def how(r: ElfSizeReport) -> str:
            why = " (no linker map beside it)" if r.attribution != "map" and r.map is None else ""
            return f"{r.elf} by {r.attribution}{why}"

        notes.append(
            f"components not compared: they were found in different ways, {how(old)}, {how(new)}; "
            "give both images' linker maps (--map, --compare-map) to compare components"
        )
    old_components = old.components if comparable else ()
    new_components = new.components if comparable else ()
    return SizeComparison(
        old_elf=old.elf,
        new_elf=new.elf,
        flash=Delta("flash", old.flash, new.flash),
        ram=Delta("ram", old.ram, new.ram),
        sections=_deltas(sec_sizes(old), sec_sizes(new)),
        components_flash=_deltas({c.name: c.flash for c in old_components}, {c.name: c.flash for c in new_components}),
        components_ram=_deltas({c.name: c.ram for c in old_components}, {c.name: c.ram for c in new_components}),
        regions=_deltas({r.name: r.used for r in old.regions}, {r.name: r.used for r in new.regions}),
        notes=tuple(notes),
    )

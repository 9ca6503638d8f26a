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
    """

    old_elf: str
    new_elf: str
    flash: Delta
    ram: Delta
    sections: tuple[Delta, ...]
    components_flash: tuple[Delta, ...]
    components_ram: tuple[Delta, ...]
    regions: tuple[Delta, ...]

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
        }


def _deltas(old: Mapping[str, int], new: Mapping[str, int]) -> tuple[Delta, ...]:
    return tuple(Delta(k, old.get(k, 0), new.get(k, 0)) for k in sorted(set(old) | set(new)))


def compare_reports(old: ElfSizeReport, new: ElfSizeReport) -> SizeComparison:
    """Per-section, per-component and per-region deltas between two reports (``new - old``, bytes)."""

    def sec_sizes(r: ElfSizeReport) -> dict[str, int]:
        out: dict[str, int] = {}
        for s in r.sections:
            out[s.name] = out.get(s.name, 0) + s.size
        return out

    return SizeComparison(
        old_elf=old.elf,
        new_elf=new.elf,
        flash=Delta("flash", old.flash, new.flash),
        ram=Delta("ram", old.ram, new.ram),
        sections=_deltas(sec_sizes(old), sec_sizes(new)),
        components_flash=_deltas({c.name: c.flash for c in old.components}, {c.name: c.flash for c in new.components}),
        components_ram=_deltas({c.name: c.ram for c in old.components}, {c.name: c.ram for c in new.components}),
        regions=_deltas({r.name: r.used for r in old.regions}, {r.name: r.used for r in new.regions}),
    )

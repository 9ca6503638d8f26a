"""The size report's records (all sizes in bytes): sections, placements, regions, components, pools,
stacks and misplaced sections, gathered in :class:`ElfSizeReport` (JSON through :meth:`ElfSizeReport.to_dict`,
described by ``size_report.schema.json``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

#: Version of the JSON layout written by :meth:`ElfSizeReport.to_dict`; ``size_report.schema.json`` describes
#: it (``report.schema_version``'s ``const``): change both together.
SCHEMA_VERSION = 2

Memory = Literal["flash", "ram"]
Role = Literal["code", "rodata", "model", "data", "pools", "stack", "fill"]
Attribution = Literal["map", "dwarf", "symbols"]


@dataclass(frozen=True)
class Placement:
    """Where one section's bytes sit.

    Attributes:
        section: ELF section name.
        what: ``"run"`` (memory the section occupies at its VMA) or ``"image"`` (its initial values at
            its LMA, copied to the VMA at boot).
        address: start address (VMA for run, LMA for image). size: bytes.
        memory: ``"flash"`` or ``"ram"``: which total it counts in.
        region: name of the board region holding it, or None (no board, or in no region).
    """

    section: str
    what: Literal["run", "image"]
    address: int
    size: int
    memory: Memory
    region: str | None


@dataclass(frozen=True)
class SectionSize:
    """One allocated ELF section.

    Attributes:
        name, type (``PROGBITS``, ``NOBITS``, ``ARM_EXIDX``, ...), flags (``"AX"``, ``"WA"``, ``"A"``).
        vma, lma: run and load addresses. size: bytes.
        role: what the section is: code, rodata, model, data, pools or stack (stack and heap).
        components: ``(component, bytes)`` pairs, sorted by component; they sum to ``size``.
        placements: run placement, plus the image placement when LMA differs from VMA.
    """

    name: str
    type: str
    flags: str
    vma: int
    lma: int
    size: int
    role: Role
    components: tuple[tuple[str, int], ...]
    placements: tuple[Placement, ...]

    @property
    def flash(self) -> int:
        """Bytes of this section counted as flash use."""
        return sum(p.size for p in self.placements if p.memory == "flash")

    @property
    def ram(self) -> int:
        """Bytes of this section counted as RAM use."""
        return sum(p.size for p in self.placements if p.memory == "ram")


@dataclass(frozen=True)
class RegionUse:
    """Fill of one board memory region.

    Attributes:
        name, kind, base, size, reserved: as in :class:`armgen.boards.MemoryRegion` (bytes).
        usable: ``size - reserved``. volatile: RAM kind. used: bytes placed in the region.
        components: ``(component, bytes)`` sorted by component, summing to ``used``.
        sections: names of the sections with a placement here (``".data (image)"`` for LMA copies).
    """

    name: str
    kind: str
    base: int
    size: int
    reserved: int
    usable: int
    volatile: bool
    used: int
    components: tuple[tuple[str, int], ...]
    sections: tuple[str, ...]

    @property
    def percent(self) -> float:
        """``used`` as a percentage of ``usable`` (0 for an empty region)."""
        return 100.0 * self.used / self.usable if self.usable > 0 else 0.0


@dataclass(frozen=True)
class ComponentSize:
    """Bytes of one component. flash/ram: as counted in the totals (``.data`` counts in both)."""

    name: str
    flash: int
    ram: int


@dataclass(frozen=True)
class PoolSize:
    """One ``armgen_pool_<name>`` array: name (without prefix), bytes, address, section, region."""

    name: str
    size: int
    address: int
    section: str
    region: str | None


@dataclass(frozen=True)
class StackSize:
    """One stack or heap the firmware reserves.

    Attributes:
        name: what it is: ``"main"``, ``"ISR"``, ``"idle"`` ... for stacks (:data:`ZEPHYR_STACKS`; a bare-metal
            ``.stack`` section is ``"main"``), ``"kernel heap"``, ``"libc malloc arena"``, ``"heap"``.
        kind: ``"stack"`` or ``"heap"``. symbol: the ELF symbol (Zephyr) or section name (``.stack``).
        size: bytes. address: start. section: ELF section holding it. region: board region or None.
    """

    name: str
    kind: Literal["stack", "heap"]
    symbol: str
    size: int
    address: int
    section: str
    region: str | None


@dataclass(frozen=True)
class Misplacement:
    """A section placement outside every region, in a reserved area, or in a region of the wrong kind."""

    section: str
    what: Literal["run", "image"]
    address: int
    size: int
    region: str | None
    reason: str

    @property
    def message(self) -> str:
        """One line for users."""
        label = self.section if self.what == "run" else f"{self.section} (load image)"
        return f"section {label} at 0x{self.address:08x} ({self.size} B) {self.reason}"


@dataclass(frozen=True)
class ElfSizeReport:
    """What an ELF uses, per section, region and component (all sizes in bytes).

    Attributes:
        elf: path of the ELF. map: path of the map file used, or None.
        board: board name or None. regions_known: False when no board was given (fallback classes).
        attribution: ``"map"``, ``"dwarf"`` or ``"symbols"``: how components were found.
        flash, ram: totals. sections: allocated sections by address.
        regions: board regions by base (empty without a board).
        components: every component with flash or RAM use, in :data:`COMPONENT_LABELS` order.
        pools: ``armgen_pool_*`` arrays. stack, heap: bytes of all stacks / heaps in ``stacks``.
        misplaced: placements outside regions or in the wrong kind of region, and pools outside the
            region ``armgen.toml`` names for them.
        notes: sentences about fallbacks (no board, no map, stale map).
        stacks: every stack and heap found (bare metal: the ``.stack``/``.heap`` sections; Zephyr: the
            kernel stacks and heaps of :data:`ZEPHYR_STACKS` / :data:`ZEPHYR_HEAPS`), by address.
        symbols: ``(name, bytes, component, region)`` of every sized function and data object in an
            allocated section, by name (symbols of one name, e.g. statics of several files, add up;
            aliases count once).
        project: what armgen generated for this image (:func:`armgen.firmware.size.project_facts`):
            operators, kernel count, model bytes, pools, stack, board, RTOS, release, Kconfig; None
            for an ELF outside a project.
    """

    elf: str
    map: str | None
    board: str | None
    regions_known: bool
    attribution: Attribution
    flash: int
    ram: int
    sections: tuple[SectionSize, ...]
    regions: tuple[RegionUse, ...]
    components: tuple[ComponentSize, ...]
    pools: tuple[PoolSize, ...]
    stack: int
    heap: int
    misplaced: tuple[Misplacement, ...]
    notes: tuple[str, ...] = ()
    stacks: tuple[StackSize, ...] = ()
    symbols: tuple[tuple[str, int, str, str | None], ...] = ()
    project: dict[str, Any] | None = None

    def component(self, name: str) -> ComponentSize:
        """The component called ``name`` (zero-sized when absent)."""
        for c in self.components:
            if c.name == name:
                return c
        return ComponentSize(name, 0, 0)

    def section(self, name: str) -> SectionSize:
        """The section called ``name``.

        Raises:
            KeyError: no allocated section of that name.
        """
        for s in self.sections:
            if s.name == name:
                return s
        raise KeyError(name)

    def region(self, name: str) -> RegionUse:
        """The region called ``name``.

        Raises:
            KeyError: no such region.
        """
        for r in self.regions:
            if r.name == name:
                return r
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (dump with ``sort_keys=True`` for deterministic output)."""
        return {
            "schema_version": SCHEMA_VERSION,
            "elf": self.elf,
            "map": self.map,
            "board": self.board,
            "regions_known": self.regions_known,
            "attribution": self.attribution,
            "flash": self.flash,
            "ram": self.ram,
            "stack": self.stack,
            "heap": self.heap,
            "sections": [
                {
                    "name": s.name,
                    "type": s.type,
                    "flags": s.flags,
                    "vma": s.vma,
                    "lma": s.lma,
                    "size": s.size,
                    "role": s.role,
                    "flash": s.flash,
                    "ram": s.ram,
                    "components": dict(s.components),
                    "placements": [
                        {k: v for k, v in asdict(p).items() if k != "section"} for p in s.placements
                    ],
                }
                for s in self.sections
            ],
            "regions": [
                {
                    "name": r.name,
                    "kind": r.kind,
                    "base": r.base,
                    "size": r.size,
                    "reserved": r.reserved,
                    "usable": r.usable,
                    "volatile": r.volatile,
                    "used": r.used,
                    "components": dict(r.components),
                    "sections": list(r.sections),
                }
                for r in self.regions
            ],
            "components": {c.name: {"flash": c.flash, "ram": c.ram} for c in self.components},
            "pools": [asdict(p) for p in self.pools],
            "stacks": [asdict(x) for x in self.stacks],
            "misplaced": [asdict(m) for m in self.misplaced],
            "notes": list(self.notes),
            "symbols": {n: {"size": b, "component": c, "region": r} for n, b, c, r in self.symbols},
            "project": self.project,
        }

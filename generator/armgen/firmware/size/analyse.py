"""The size stage's entry point: :func:`size_elf` (ELF + linker map + board -> :class:`ElfSizeReport`)."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from armgen.errors import SizeError
from armgen.firmware.size.attribution import (
    _alignment_fill,
    _check_record_pools,
    _component_totals,
    _map_mismatch,
    _pool_sections,
    _region_uses,
    _size_section,
    _stacks,
    _Where,
)
from armgen.firmware.size.elf import _Elf, _open_elf
from armgen.firmware.size.linker_map import LinkerMap, parse_map
from armgen.firmware.size.records import Attribution, ElfSizeReport, Misplacement, PoolSize, SectionSize
from armgen.firmware.size.rules import COMPONENT_RULES, UNATTRIBUTED, ComponentRule, classify

if TYPE_CHECKING:  # pragma: no cover - typing only
    from armgen.boards import Board, MemoryRegion

def size_elf(
    elf_path: str | Path, board: Board | None = None, map_path: str | Path | None = None,
    rules: tuple[ComponentRule, ...] = COMPONENT_RULES, *, pools: Iterable[Mapping[str, Any]] | None = None,
    project: dict[str, Any] | None = None,
) -> ElfSizeReport:
    """Size an Arm ELF: per section, per board region and per component.

    Args:
        elf_path: the firmware ELF (32-bit Arm, with section headers).
        board: memory map to assign sections to; None: regions unknown, classes by section flags.
        map_path: GNU ld map of the same link (``-Wl,-Map=``) for attribution; None: DWARF compile
            units when the ELF has ``.debug_aranges``, else symbols (model, pools, stack/heap only).
        rules: ordered attribution rules (default :data:`COMPONENT_RULES`).
        pools: the project's ``[[pools]]`` tables from ``armgen.toml`` (keys name, bytes, region,
            section). With a board, a pool (``armgen_pool_<name>``) outside its ``region``, or in a
            region whose uses lack ``pools``, is misplaced; a pool missing from the ELF, or of other
            bytes or input section than recorded, is a note. None: not checked.
        project: what armgen generated for the image (:func:`armgen.firmware.size.project_facts`),
            carried in the report for comparisons; None outside a project.

    Zephyr images: the writable sections of Zephyr's ROM group (:data:`ZEPHYR_ROM_SECTIONS`) count as
    read-only data; the kernel stacks and heaps (:data:`ZEPHYR_STACKS`, :data:`ZEPHYR_HEAPS`) are
    ``stack_heap`` and listed in ``stacks``.

    Returns:
        An :class:`ElfSizeReport`; all sizes in bytes, components summing exactly to the totals.

    Raises:
        SizeError: the ELF is missing, not an ELF, not 32-bit Arm, has no section headers; the map
            file is missing, unreadable or not a GNU ld map.
    """
    elf_path = Path(elf_path)
    elf = _open_elf(elf_path)
    notes: list[str] = []
    lmap, attribution = _load_map(elf, Path(map_path) if map_path is not None else None, notes)
    pool_syms = [s for s in elf.symbols if s.name.startswith("armgen_pool_") and s.type == "STT_OBJECT"]
    regions: tuple[MemoryRegion, ...] = tuple(sorted(board.regions, key=lambda r: r.base)) if board else ()
    if board is None:
        notes.append("no board: regions unknown; writable and NOBITS sections count as RAM, the rest as flash")

    objects: dict[int, str] = {}  # start address -> largest data object there (for map attribution)
    for sym in sorted(elf.symbols, key=lambda x: (-x.size, x.name)):
        if sym.type == "STT_OBJECT" and sym.size > 0:
            objects.setdefault(sym.address, sym.name)
    where = _Where(elf, regions)
    misplaced: list[Misplacement] = []
    pool_sections = _pool_sections(elf, pool_syms)
    sections = [
        _size_section(sec, elf, lmap, rules, objects, attribution, where, pool_sections, misplaced)
        for sec in elf.sections
    ]
    sections += _alignment_fill(sections, {s.name: s.align for s in elf.sections})
    pool_list = sorted(
        (
            PoolSize(s.name.removeprefix("armgen_pool_"), s.size, s.address, where.holder_of(s.address),
                     where.region_of(s.address, s.size))
            for s in pool_syms
        ),
        key=lambda p: (p.address, p.name),
    )  # fmt: skip
    if pools is not None:
        _check_record_pools(pools, pool_list, regions, lmap, misplaced, notes)
    stacks = _stacks(sections, elf, where)
    return ElfSizeReport(
        elf=str(elf_path),
        map=str(map_path) if lmap is not None and map_path is not None else None,
        board=board.name if board else None,
        regions_known=board is not None,
        attribution=attribution,
        flash=sum(s.flash for s in sections),
        ram=sum(s.ram for s in sections),
        sections=tuple(sections),
        regions=_region_uses(regions, sections),
        components=_component_totals(sections),
        pools=tuple(pool_list),
        stack=sum(x.size for x in stacks if x.kind == "stack"),
        heap=sum(x.size for x in stacks if x.kind == "heap"),
        misplaced=tuple(misplaced),
        notes=tuple(notes),
        stacks=stacks,
        symbols=_symbol_sizes(elf, sections, where, lmap, rules),
        project=project,
    )


def _symbol_sizes(
    elf: _Elf, sections: list[SectionSize], where: _Where, lmap: LinkerMap | None, rules: tuple[ComponentRule, ...]
) -> tuple[tuple[str, int, str, str | None], ...]:
    """``(name, bytes, component, region)`` of the sized functions and objects in allocated sections, by
    name: aliases (same address and size) count once, symbols sharing a name (statics of several files)
    add up and take the component and region of the largest. The component is that of the map's input
    section holding the symbol, else of a section holding one component, else ``unattributed``."""
    spans = {s.name: s for s in sections}
    raw = list(elf.sections)
    alloc = {s.name for s in raw}
    inputs = sorted(((i.address, i.address + i.size, n, i) for n, i in enumerate(lmap.inputs)
                     if i.size > 0 and i.output_section in alloc), key=lambda t: (t[0], t[2])) if lmap else []
    starts = [a for a, _, _, _ in inputs]
    seen: set[tuple[str, int, int]] = set()
    out: dict[str, list[Any]] = {}
    for sym in elf.symbols:
        if sym.size <= 0 or (sym.name, sym.address, sym.size) in seen:
            continue
        sec = next((x for x in raw if x.vma <= sym.address < x.vma + x.size), None)
        if sec is None:
            continue
        seen.add((sym.name, sym.address, sym.size))
        comp = UNATTRIBUTED
        k = bisect.bisect_right(starts, sym.address) - 1
        if k >= 0 and inputs[k][0] <= sym.address < inputs[k][1]:
            inp = inputs[k][3]
            comp = classify(output_section=inp.output_section, input_section=inp.input_section, archive=inp.archive,
                            obj=None if inp.archive else inp.obj, rules=rules)
        elif len(spans[sec.name].components) == 1:
            comp = spans[sec.name].components[0][0]
        row = out.setdefault(sym.name, [0, comp, where.region_of(sym.address, sym.size), 0])
        row[0] += sym.size
        if sym.size > row[3]:
            row[1:4] = [comp, where.region_of(sym.address, sym.size), sym.size]
    return tuple((name, n, comp, region) for name, (n, comp, region, _) in sorted(out.items()))


def _load_map(elf: _Elf, map_path: Path | None, notes: list[str]) -> tuple[LinkerMap | None, Attribution]:
    """The linker map of this link (None when absent or stale) and the attribution it allows.

    Raises:
        SizeError: the map cannot be read or is not a GNU ld map.
    """
    lmap: LinkerMap | None = None
    if map_path is not None:
        try:
            text = map_path.read_text(errors="replace")
        except OSError as exc:
            raise SizeError(f"cannot read map file {map_path}: {exc.strerror}") from None
        try:
            lmap = parse_map(text)
        except SizeError as exc:
            raise SizeError(f"{map_path}: {exc.message}") from None
        why = _map_mismatch(elf, lmap)
        if why:
            notes.append(f"map file {map_path} does not belong to this ELF ({why}); attribution by symbols")
            lmap = None
    if lmap is not None:
        return lmap, "map"
    if elf.cu_paths:
        if map_path is None:
            notes.append(
                "no linker map: components from DWARF compile units (code only) and armgen_* symbol names"
            )
        return None, "dwarf"
    if map_path is None:
        notes.append("no linker map and no DWARF: components from symbol names only")
    return None, "symbols"

"""Sizing one section at a time: its role, its bytes per component (from the linker map, or symbols
and DWARF compile units), its placements and what is wrong with them; then alignment fill, region
uses, component totals, stacks and heaps, and the check of ``armgen.toml``'s pools against the ELF.
:func:`armgen.firmware.size.analyse.size_elf` puts these together."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from armgen.firmware.size.elf import _SHF_ALLOC, _SHF_EXECINSTR, _SHF_WRITE, _Elf, _RawSection, _Symbol
from armgen.firmware.size.linker_map import LinkerMap
from armgen.firmware.size.records import (
    Attribution,
    ComponentSize,
    Memory,
    Misplacement,
    Placement,
    PoolSize,
    RegionUse,
    Role,
    SectionSize,
    StackSize,
)
from armgen.firmware.size.rules import (
    COMPONENT_LABELS,
    UNATTRIBUTED,
    ZEPHYR_HEAPS,
    ZEPHYR_ROM_SECTIONS,
    ZEPHYR_STACKS,
    ComponentRule,
    classify,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    from armgen.boards import MemoryRegion

def _zephyr_rom_read_only(sec: _RawSection, elf: _Elf) -> bool:
    """A writable section that is read-only data in Zephyr's ROM (see :data:`ZEPHYR_ROM_SECTIONS`), or
    Zephyr 4.x's last-section identifier (:func:`_zephyr_last_section_id`)."""
    start = elf.linker_symbols.get("__rom_region_start")
    end = elf.linker_symbols.get("__rom_region_end")
    if start is None or end is None or sec.nobits or not sec.flags & _SHF_WRITE:
        return False
    if _zephyr_last_section_id(sec, start, elf.linker_symbols.get("_flash_used")):
        return True
    if _zephyr_local_isr_table(sec, elf.linker_symbols.get("_sw_isr_table")):
        return True
    return start <= sec.vma and sec.vma + sec.size <= end and re.fullmatch(ZEPHYR_ROM_SECTIONS, sec.name) is not None


def _zephyr_local_isr_table(sec: _RawSection, sw_isr_table: int | None) -> bool:
    """Zephyr's ``rodata`` when it ends with the software ISR table that the linker builds.

    With ``CONFIG_ISR_TABLES_LOCAL_DECLARATION`` (which ``CONFIG_LTO`` needs), each ``IRQ_CONNECT`` defines
    its table entry where it is called, a non-const ``struct _isr_table_entry`` in a named section
    (``_Z_ISR_TABLE_ENTRY``, include/zephyr/sw_isr_table.h, Zephyr 3.7.1 and 4.1), so the compiler marks it
    writable; the generated ``isr_tables_swi.ld``, included at the end of the Cortex-M linker.ld's
    ``rodata``, collects them after the symbol ``_sw_isr_table``. Only ``CONFIG_DYNAMIC_INTERRUPTS`` writes
    the table, and Zephyr then places it in RAM ("will move some interrupt-related data structures to RAM
    instead of ROM", arch/Kconfig), so a table in ``rodata`` counts as read-only flash. Recognised only as
    that: named ``rodata``, with ``_sw_isr_table`` inside it.
    """
    if sec.name != "rodata" or sw_isr_table is None:
        return False
    return sec.vma <= sw_isr_table <= sec.vma + sec.size


def _zephyr_last_section_id(sec: _RawSection, rom_start: int, flash_used: int | None) -> bool:
    """Zephyr 4.x's ``.last_section``: one 4-byte word, the last thing of the ROM image, never written.

    ``CONFIG_LINKER_LAST_SECTION_ID`` (default y on Arm; Kconfig.zephyr) puts a non-const
    ``uint32_t`` holding ``CONFIG_LINKER_LAST_SECTION_ID_PATTERN`` (0xE015E015) into ``.last_section``
    (lib/utils/last_section_id.c), so the compiler marks it writable; the Cortex-M linker.ld links it last
    into ROM, after the initialised-data image, so that ``_flash_used = LOADADDR(.last_section) +
    SIZEOF(.last_section) - __rom_region_start`` is the image's true end even when the location counter
    was only aligned (zephyr 4.1.99 snapshot 9a57e98e, and 4.4's Kconfig.zephyr / linker.ld). It is an
    end marker read by tools, not data: it counts as read-only flash. Recognised only as exactly that
    word: named ``.last_section``, at most 4 bytes, ending where ``_flash_used`` says the image ends.
    """
    if sec.name != ".last_section" or sec.size > 4 or flash_used is None:
        return False
    return sec.lma + sec.size == rom_start + flash_used


def _role(sec: _RawSection, pool_sections: set[str], rom_read_only: bool = False) -> Role:
    name = sec.name
    if name == ".armgen_model" or name.startswith(".armgen_model."):
        return "model"
    if name.startswith(".armgen_pool") or name in pool_sections:
        return "pools"
    if name in (".stack", ".heap"):
        return "stack"
    if sec.flags & _SHF_EXECINSTR:
        return "code"
    if (sec.flags & _SHF_WRITE and not rom_read_only) or sec.nobits:
        return "data"
    return "rodata"


def _flags(flags: int) -> str:
    return ("W" if flags & _SHF_WRITE else "") + ("A" if flags & _SHF_ALLOC else "") + (
        "X" if flags & _SHF_EXECINSTR else ""
    )


def _find_region(regions: tuple[MemoryRegion, ...], address: int, size: int) -> MemoryRegion | None:
    for r in regions:
        if r.base <= address < r.base + r.size:
            return r
    return None


def _attribute_map(
    sec: _RawSection, lmap: LinkerMap, rules: tuple[ComponentRule, ...], objects: Mapping[int, str] | None = None
) -> dict[str, int]:
    """Bytes of ``sec`` per component from the map's input-section lines, by address range.

    GNU ld merges SHF_MERGE|SHF_STRINGS sections (``.rodata.str1.*``): every merged input line keeps
    its own size but several start at the same address, so the lines overlap and their sizes add up
    to more than the output section. Each byte goes to the first line that claims it (bloaty's
    first-claimant rule). Lines are ordered by address; at one address a line whose printed size
    grew past its ``size before relaxing`` (a merged section whose strings all went into another
    one's; ld prints a neighbour's size for it) comes last, then map order. A line claims at most
    its size before merging. ``objects`` (``{address: name}`` of the ELF's data objects) gives the
    rules the symbol an input section starts with (Zephyr's stacks sit in ``.noinit."<file>".<n>``).
    Pieces are clipped to the section, so the result never exceeds ``sec.size``; the caller books
    the uncovered rest as unattributed.
    """
    end_of_sec = sec.vma + sec.size
    pieces = [
        (inp.address, i, inp)
        for i, inp in enumerate(lmap.inputs)
        if inp.output_section == sec.name and inp.size > 0
        and inp.address < end_of_sec and inp.address + inp.size > sec.vma
    ]
    pieces.sort(key=lambda t: (t[0], t[2].size > (t[2].size_before or t[2].size), t[1]))
    out: dict[str, int] = {}
    covered_to = sec.vma
    for _, _, inp in pieces:
        own = inp.size if inp.size_before is None else min(inp.size, inp.size_before)
        begin = max(inp.address, covered_to)
        end = min(inp.address + own, end_of_sec)
        if end <= begin:
            continue  # bytes already credited to an earlier (merged) line
        covered_to = end
        comp = classify(
            output_section=sec.name,
            input_section=inp.input_section,
            archive=inp.archive,
            obj=None if inp.archive else inp.obj,
            symbol=objects.get(inp.address) if objects and inp.obj else None,
            rules=rules,
        )
        out[comp] = out.get(comp, 0) + (end - begin)
    return out


def _attribute_symbols(
    sec: _RawSection, elf: _Elf, rules: tuple[ComponentRule, ...], use_dwarf: bool
) -> dict[str, int]:
    out: dict[str, int] = {}
    section_comp = classify(output_section=sec.name, rules=[r for r in rules if r.output_section])
    if section_comp != UNATTRIBUTED:
        return {section_comp: sec.size}
    cu = elf.cu_paths or []
    starts = [c[0] for c in cu]
    covered_to = sec.vma
    for sym in elf.symbols:
        if sym.size == 0 or not (sec.vma <= sym.address < sec.vma + sec.size):
            continue
        begin = max(sym.address, covered_to)
        end = min(sym.address + sym.size, sec.vma + sec.size)
        if end <= begin:
            continue  # alias of bytes already counted
        covered_to = end
        comp = classify(symbol=sym.name, rules=[r for r in rules if r.symbol])
        if comp == UNATTRIBUTED and use_dwarf and cu:
            i = bisect.bisect_right(starts, sym.address) - 1
            if i >= 0 and cu[i][0] <= sym.address < cu[i][1]:
                comp = classify(source=cu[i][2], rules=[r for r in rules if r.source])
        out[comp] = out.get(comp, 0) + (end - begin)
    return out


def _map_mismatch(elf: _Elf, lmap: LinkerMap) -> str | None:
    for sec in elf.sections:
        got = lmap.outputs.get(sec.name)
        if got is None:
            return f"section {sec.name} is not in the map"
        if got != (sec.vma, sec.size):
            return (
                f"section {sec.name} is 0x{got[1]:x} B at 0x{got[0]:08x} in the map "
                f"but 0x{sec.size:x} B at 0x{sec.vma:08x} in the ELF"
            )
    return None


def _pool_sections(elf: _Elf, pool_syms: list[_Symbol]) -> set[str]:
    """Output sections that hold only armgen pools (not Zephyr's or the C runtime's bss/noinit)."""
    pool_sections: set[str] = set()
    for sym in pool_syms:
        for sec in elf.sections:
            if sec.vma <= sym.address < sec.vma + sec.size and all(
                p.address >= sec.vma and p.address + p.size <= sec.vma + sec.size for p in pool_syms
            ) and sec.name not in (".bss", ".data", ".noinit", "bss", "datas", "noinit"):  # Zephyr: no dot
                pool_sections.add(sec.name)
    return pool_sections


@dataclass(frozen=True)
class _Where:
    """Which section and board region an address lies in."""

    elf: _Elf
    regions: tuple[MemoryRegion, ...]

    def holder_of(self, address: int) -> str:
        sec = next((x for x in self.elf.sections if x.vma <= address < x.vma + max(x.size, 1)), None)
        return sec.name if sec else ""

    def region_of(self, address: int, size: int) -> str | None:
        region = _find_region(self.regions, address, size) if self.regions else None
        return region.name if region else None


def _size_section(
    sec: _RawSection,
    elf: _Elf,
    lmap: LinkerMap | None,
    rules: tuple[ComponentRule, ...],
    objects: dict[int, str],
    attribution: Attribution,
    where: _Where,
    pool_sections: set[str],
    misplaced: list[Misplacement],
) -> SectionSize:
    """One section: its role, components (gaps as ``unattributed``) and placements (run address, and
    the load image when LMA differs); placement problems go to ``misplaced``."""
    regions = where.regions
    has_nv = any(not r.volatile for r in regions)
    rom_read_only = _zephyr_rom_read_only(sec, elf)
    role = _role(sec, pool_sections, rom_read_only)
    if lmap is not None:
        comps = _attribute_map(sec, lmap, rules, objects)
    else:
        comps = _attribute_symbols(sec, elf, rules, use_dwarf=attribution == "dwarf")
    rest = sec.size - sum(comps.values())  # >= 0: both attributions clip overlaps
    if rest > 0:
        comps[UNATTRIBUTED] = comps.get(UNATTRIBUTED, 0) + rest
    writable = (bool(sec.flags & _SHF_WRITE) and not rom_read_only) or sec.nobits
    wanted: list[tuple[Literal["run", "image"], int]] = [("run", sec.vma)]
    if not sec.nobits and sec.lma != sec.vma:
        wanted.append(("image", sec.lma))
    placements: list[Placement] = []
    for what, addr in wanted:
        fallback: Memory = "flash" if what == "image" or not writable else "ram"
        region = _find_region(regions, addr, sec.size) if regions else None
        memory: Memory = fallback if region is None else ("ram" if region.volatile else "flash")
        placements.append(Placement(sec.name, what, addr, sec.size, memory, region.name if region else None))
        if not regions:
            continue
        reason = _placement_problem(region, what, addr, sec.size, role, writable, has_nv)
        if reason:
            misplaced.append(Misplacement(sec.name, what, addr, sec.size, region.name if region else None, reason))
    return SectionSize(
        name=sec.name,
        type=sec.type,
        flags=_flags(sec.flags),
        vma=sec.vma,
        lma=sec.lma,
        size=sec.size,
        role=role,
        components=tuple(sorted((k, v) for k, v in comps.items() if v)),
        placements=tuple(placements),
    )


def _alignment_fill(sections: list[SectionSize], align: Mapping[str, int]) -> list[SectionSize]:
    """The padding the linker leaves before a section to align it, as sections of their own.

    Placements of one memory class and region (the flash image and RAM separately) are walked by
    address; a gap before a placement that is smaller than that section's alignment (``sh_addralign``)
    is alignment fill: the bytes are taken, nothing else can use them. It is counted in the totals as
    :data:`UNATTRIBUTED` (role ``fill``), so the parts add up to the occupied span. Larger gaps are
    free space the linker script leaves on purpose (a region's own start, an ``ALIGN`` of a later
    block) and are not counted.
    """
    groups: dict[tuple[str, str | None], list[Placement]] = {}
    for s in sections:
        for p in s.placements:
            groups.setdefault((p.memory, p.region), []).append(p)
    fill: list[SectionSize] = []
    for placements in groups.values():
        placements.sort(key=lambda p: (p.address, p.size))
        end: int | None = None
        for p in placements:
            gap = p.address - end if end is not None else 0
            if end is not None and 0 < gap < align.get(p.section, 1):
                name = f"(fill before {p.section})"
                fill.append(SectionSize(
                    name=name, type="FILL", flags="", vma=end, lma=end, size=gap, role="fill",
                    components=((UNATTRIBUTED, gap),),
                    placements=(Placement(name, p.what, end, gap, p.memory, p.region),),
                ))
            end = p.address + p.size if end is None else max(end, p.address + p.size)
    return fill


def _region_uses(regions: tuple[MemoryRegion, ...], sections: list[SectionSize]) -> tuple[RegionUse, ...]:
    """Bytes, components and sections placed in each board region."""
    out: list[RegionUse] = []
    for r in regions:
        comp: dict[str, int] = {}
        names: list[str] = []
        used = 0
        for s in sections:
            for p in s.placements:
                if p.region != r.name:
                    continue
                used += p.size
                names.append(s.name if p.what == "run" else f"{s.name} (image)")
                for k, v in s.components:
                    comp[k] = comp.get(k, 0) + v
        out.append(
            RegionUse(
                name=r.name,
                kind=r.kind,
                base=r.base,
                size=r.size,
                reserved=r.reserved,
                usable=r.usable,
                volatile=r.volatile,
                used=used,
                components=tuple(sorted(comp.items())),
                sections=tuple(names),
            )
        )
    return tuple(out)


def _component_totals(sections: list[SectionSize]) -> tuple[ComponentSize, ...]:
    """Flash and RAM per component over every placement, in :data:`COMPONENT_LABELS` order."""
    totals: dict[str, list[int]] = {}
    for s in sections:
        for p in s.placements:
            for k, v in s.components:
                t = totals.setdefault(k, [0, 0])
                t[0 if p.memory == "flash" else 1] += v
    order = list(COMPONENT_LABELS)
    return tuple(
        ComponentSize(k, v[0], v[1])
        for k, v in sorted(totals.items(), key=lambda kv: (order.index(kv[0]) if kv[0] in order else len(order), kv[0]))
    )


def _stacks(sections: list[SectionSize], elf: _Elf, where: _Where) -> tuple[StackSize, ...]:
    """The bare-metal ``.stack``/``.heap`` sections and Zephyr's kernel stacks and heaps, by address."""
    stacks: list[StackSize] = []
    for s in sections:
        if s.name in (".stack", ".heap"):
            kind: Literal["stack", "heap"] = "stack" if s.name == ".stack" else "heap"
            stacks.append(StackSize("main" if kind == "stack" else "heap", kind, s.name, s.size, s.vma, s.name,
                                    s.placements[0].region))  # fmt: skip
    seen: set[str] = set()
    for sym in elf.symbols:
        label = ZEPHYR_STACKS.get(sym.name) or ZEPHYR_HEAPS.get(sym.name)
        if label is None or sym.type != "STT_OBJECT" or sym.size == 0 or sym.name in seen:
            continue
        seen.add(sym.name)
        kind = "stack" if sym.name in ZEPHYR_STACKS else "heap"
        stacks.append(StackSize(label, kind, sym.name, sym.size, sym.address, where.holder_of(sym.address),
                                where.region_of(sym.address, sym.size)))  # fmt: skip
    stacks.sort(key=lambda x: (x.address, x.name))
    return tuple(stacks)


def _check_record_pools(
    record: Iterable[Mapping[str, Any]],
    found: list[PoolSize],
    regions: tuple[MemoryRegion, ...],
    lmap: LinkerMap | None,
    misplaced: list[Misplacement],
    notes: list[str],
) -> None:
    """Compare ``armgen.toml``'s ``[[pools]]`` with the pools of the ELF (see :func:`size_elf`)."""
    by_name = {p.name: p for p in found}
    for entry in record:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            continue
        name = entry["name"]
        p = by_name.get(name)
        if p is None:
            notes.append(f"pool {name} of armgen.toml is not in the ELF (no armgen_pool_{name} symbol): not checked")
            continue
        want_bytes = entry.get("bytes")
        if isinstance(want_bytes, int) and want_bytes != p.size:
            notes.append(f"pool {name} is {p.size} B in the ELF but armgen.toml reserves {want_bytes} B (stale build?)")
        want_section = entry.get("section")
        if lmap is not None and isinstance(want_section, str):
            got = next((i.input_section for i in lmap.inputs if i.address == p.address and i.size > 0 and i.obj), None)
            if got is not None and got != want_section:
                notes.append(f"pool {name} is in input section {got}, armgen.toml says {want_section}")
        if not regions:
            continue
        want_region = entry.get("region")
        region = next((r for r in regions if r.name == p.region), None)
        if isinstance(want_region, str) and p.region != want_region:
            reason = f"holds pool {name}, which armgen.toml places in {want_region}"
        elif region is not None and region.uses and "pools" not in region.uses:
            reason = f"holds pool {name} but {region.name} takes only {', '.join(sorted(region.uses))}"
        else:
            continue
        misplaced.append(Misplacement(p.section, "run", p.address, p.size, p.region, reason))


_ROLE_USE = {"code": "code", "rodata": "rodata", "model": "model", "data": "data", "pools": "pools", "stack": "stack"}


def _placement_problem(
    region: MemoryRegion | None,
    what: str,
    address: int,
    size: int,
    role: Role,
    writable: bool,
    has_nv: bool,
) -> str | None:
    """Why a placement is wrong, or None. See :func:`size_elf` for the rules."""
    if region is None:
        return "is in no memory region of the board"
    end = region.base + region.size
    if address + size > end:
        return f"runs past the end of {region.name} (0x{end:08x}) by {address + size - end} B"
    if address < region.base + region.reserved:
        return f"overlaps the reserved first {region.reserved} B of {region.name}"
    if what == "run" and writable and not region.volatile:
        return f"is writable but {region.name} is non-volatile {region.kind}"
    if what == "image":
        if region.volatile and has_nv:
            return f"is the initial image but {region.name} is volatile {region.kind} (lost at reset)"
        if region.uses and region.volatile and not region.uses & {"code", "rodata", "model"}:
            return f"is the initial image but {region.name} takes only {', '.join(sorted(region.uses))}"
        return None
    use = _ROLE_USE[role]
    if not region.uses:
        return f"is in {region.name}, which the board lists for the memory map only (no uses)"
    if use not in region.uses:
        return f"holds {use} but {region.name} takes only {', '.join(sorted(region.uses))}"
    return None

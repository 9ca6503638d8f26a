"""Flash and RAM per component of an image: armgen.firmware.size, plus a workaround for overlapping map lines;
and which libc members a link pulled in."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from armgen.firmware.size import ComponentRule


def component_sizes(elf: Path, board_name: str, map_path: Path,
                    rules: tuple[ComponentRule, ...] | None = None) -> dict[str, Any]:
    """Flash/RAM per component from armgen.firmware.size.size_elf with the linker map.

    Workaround (reported to the lead): armgen.firmware.size gives a whole section to ``unattributed`` when two
    map lines overlap, which GNU ld's merged string sections (``.rodata.str1.4`` of two objects
    at one address) do in armgen's own firmware maps. For such sections the bytes are attributed
    here from the same map with the same rules, overlapping bytes counted once (first line wins).
    """
    from armgen.boards import load_board
    from armgen.firmware.size import COMPONENT_RULES, UNATTRIBUTED, ComponentRule, classify, parse_map, size_elf

    if rules is None:
        # armgen's build now compiles only the cortex_m/portable kernel sources a program needs into its
        # own archives (libarmgen_cortex_m_kernels.a, libarmgen_portable_kernels.a), which
        # armgen.firmware.size's rules do not name yet (they land in other_libraries); reported to the lead.
        rules = (
            ComponentRule("cortex_m_kernels", archive=r"libarmgen_cortex_m_kernels\.a"),
            ComponentRule("portable_kernels", archive=r"libarmgen_portable_kernels\.a"),
            *COMPONENT_RULES,
        )
    rep = size_elf(elf, load_board(board_name), map_path, rules=rules)
    totals = {c.name: {"flash": c.flash, "ram": c.ram} for c in rep.components}
    fixed = []
    lmap = None
    for sec in rep.sections:
        comps = dict(sec.components)
        if sec.size == 0 or comps.get(UNATTRIBUTED, 0) != sec.size or sec.size < 256:
            continue
        lmap = lmap or parse_map(map_path.read_text(errors="replace"))
        ins = sorted((i for i in lmap.inputs if i.output_section == sec.name and i.size), key=lambda i: i.address)
        if not ins:
            continue
        out: dict[str, int] = {}
        covered = sec.vma
        for i in ins:
            b, e = max(i.address, covered), min(i.address + i.size, sec.vma + sec.size)
            if e <= b:
                continue
            covered = e
            c = classify(output_section=sec.name, input_section=i.input_section, archive=i.archive,
                         obj=None if i.archive else i.obj, rules=rules)
            out[c] = out.get(c, 0) + (e - b)
        rest = sec.size - sum(out.values())
        if rest > 0:
            out[UNATTRIBUTED] = out.get(UNATTRIBUTED, 0) + rest
        for pl in sec.placements:
            totals[UNATTRIBUTED][pl.memory] -= sec.size
            for c, n in out.items():
                totals.setdefault(c, {"flash": 0, "ram": 0})[pl.memory] += n
        fixed.append(sec.name)
    totals = {k: v for k, v in totals.items() if v["flash"] or v["ram"]}
    return {
        "flash": rep.flash,
        "ram": rep.ram,
        "components": totals,
        "pools": {p.name: p.size for p in rep.pools},
        "stack": rep.stack,
        "heap": rep.heap,
        "sections": {x.name: x.size for x in rep.sections},
        "reattributed_sections": fixed,
    }


def libc_members(map_path: Path) -> list[str]:
    """Which newlib/libgcc members the link pulled in and who asked ("member <- object (symbol)"), from
    the map's "Archive member included to satisfy reference by file (symbol)" block."""
    out: list[str] = []
    lines = map_path.read_text(errors="replace").splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Discarded input sections") or line.startswith("Memory Configuration"):
            break
        m = re.match(r"^\S*/(lib(?:c|c_nano|m|g|g_nano|stdc\+\+_nano|supc\+\+_nano)\.a)\((.*?)\)$", line)
        if m and i + 1 < len(lines):
            by = re.match(r"^\s+(\S+)\s+\((.*)\)$", lines[i + 1])
            if by:
                out.append(f"{m.group(1)}({m.group(2)}) <- {Path(by.group(1)).name} ({by.group(2)})")
    return out


#: how the components of results.json were measured (recorded as ``commands.components``)
COMPONENTS_HOW = ("benchmarks/bench.py component_sizes({elf}, {board}, {map}): armgen.firmware.size.size_elf "
                  "with the linker map, plus rules for armgen's own kernel archives and overlap-safe re-attribution")

KERNEL_COMPONENTS = ("kernel_registration", "portable_kernels", "quantized_kernels", "cortex_m_kernels", "cmsis_nn")


def kernel_flash(comps: dict[str, Any]) -> int:
    """Flash bytes of the kernel components (registration, portable, quantized, cortex_m kernels, CMSIS-NN)."""
    return sum(comps.get(k, {}).get("flash", 0) for k in KERNEL_COMPONENTS)


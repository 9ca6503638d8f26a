"""The ELF reader (pyelftools): allocated sections with their load addresses, symbols, the linker
symbols sizing reads, and DWARF compile-unit address ranges."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from armgen.errors import SizeError

_SHF_WRITE = 0x1
_SHF_ALLOC = 0x2
_SHF_EXECINSTR = 0x4
_SHF_TLS = 0x400


@dataclass(frozen=True)
class _RawSection:
    name: str
    type: str
    flags: int
    vma: int
    lma: int
    size: int
    nobits: bool
    align: int = 1


@dataclass(frozen=True)
class _Symbol:
    name: str
    address: int
    size: int
    type: str


@dataclass
class _Elf:
    sections: list[_RawSection]
    symbols: list[_Symbol]
    cu_paths: list[tuple[int, int, str]] | None  # (start, end, path) address ranges by CU
    linker_symbols: dict[str, int] = field(default_factory=dict)  # _LINKER_SYMBOLS -> value


#: Untyped symbols the linker script defines that sizing reads: Zephyr's ROM group bounds and its
#: image size ``_flash_used`` (include/zephyr/arch/arm/cortex_m/scripts/linker.ld), and the software
#: ISR table's start when the linker builds it (``CONFIG_ISR_TABLES_LOCAL_DECLARATION``: the generated
#: isr_tables_swi.ld).
_LINKER_SYMBOLS = ("__rom_region_start", "__rom_region_end", "_flash_used", "_sw_isr_table")


def _open_elf(path: Path) -> _Elf:
    """Read the allocated sections, symbols and (when present) DWARF CU ranges of an Arm ELF.

    Raises:
        SizeError: missing file, not an ELF, not a 32-bit Arm ELF, or no section headers.
    """
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise SizeError(f"{path}: no such file", hint="build the firmware first (armgen build)") from None
    except IsADirectoryError:
        raise SizeError(f"{path} is a directory without armgen.toml, not an ELF file") from None
    except OSError as exc:
        raise SizeError(f"cannot read {path}: {exc.strerror}") from None
    if data[:4] != b"\x7fELF":
        raise SizeError(f"{path} is not an ELF file (no ELF magic bytes)")
    import io

    try:
        elf = ELFFile(io.BytesIO(data))
        machine = elf["e_machine"]
        if machine != "EM_ARM" or elf.elfclass != 32:
            raise SizeError(
                f"{path} is an ELF for {machine.removeprefix('EM_')} ({elf.elfclass}-bit), not 32-bit Arm",
                hint="pass the firmware ELF built with arm-none-eabi-gcc",
            )
        if elf["e_shnum"] == 0 or elf["e_shoff"] == 0:
            raise SizeError(
                f"{path} has no section headers (stripped with --strip-section-headers or similar)",
                hint="size the unstripped ELF the build wrote",
            )
        sections = _elf_sections(elf)
        symbols, linker_symbols = _elf_symbols(elf)
        cu_paths = _dwarf_cu_ranges(elf) if elf.has_dwarf_info() else None
    except ELFError as exc:
        raise SizeError(f"{path} is not a valid ELF file: {exc}") from None
    sections.sort(key=lambda s: (s.vma, s.name))
    symbols.sort(key=lambda s: (s.address, s.name))
    return _Elf(sections, symbols, cu_paths, linker_symbols)


def _elf_sections(elf: Any) -> list[_RawSection]:
    """The allocated sections with size (not .tbss), each with its load address from the PT_LOAD
    segment that holds its file bytes (LMA = VMA for NOBITS)."""
    segments = [
        (s["p_vaddr"], s["p_paddr"], s["p_memsz"], s["p_offset"], s["p_filesz"])
        for s in elf.iter_segments()
        if s["p_type"] == "PT_LOAD"
    ]
    sections: list[_RawSection] = []
    for sec in elf.iter_sections():
        flags = sec["sh_flags"]
        size = sec["sh_size"]
        if not flags & _SHF_ALLOC or size == 0:
            continue
        nobits = sec["sh_type"] == "SHT_NOBITS"
        if nobits and flags & _SHF_TLS:
            continue  # .tbss takes no memory of its own
        vma = sec["sh_addr"]
        lma = vma
        if not nobits:
            off = sec["sh_offset"]
            for p_vaddr, p_paddr, p_memsz, p_offset, p_filesz in segments:
                if p_vaddr <= vma and vma + size <= p_vaddr + p_memsz and p_offset <= off < p_offset + max(
                    p_filesz, 1
                ):
                    lma = p_paddr + (vma - p_vaddr)
                    break
        sections.append(
            _RawSection(
                name=sec.name,
                type=str(sec["sh_type"]).removeprefix("SHT_"),
                flags=flags,
                vma=vma,
                lma=lma,
                size=size,
                nobits=nobits,
                align=max(1, int(sec["sh_addralign"])),
            )
        )
    return sections


def _elf_symbols(elf: Any) -> tuple[list[_Symbol], dict[str, int]]:
    """Functions and objects of ``.symtab`` (Thumb bit cleared), and the linker symbols armgen reads."""
    symbols: list[_Symbol] = []
    linker_symbols: dict[str, int] = {}
    symtab = elf.get_section_by_name(".symtab")
    if symtab is not None and hasattr(symtab, "iter_symbols"):
        for sym in symtab.iter_symbols():
            stype = sym["st_info"]["type"]
            if stype in ("STT_FUNC", "STT_OBJECT") and sym.name:
                addr = sym["st_value"] & ~1 if stype == "STT_FUNC" else sym["st_value"]
                symbols.append(_Symbol(sym.name, addr, sym["st_size"], stype))
            elif stype == "STT_NOTYPE" and sym.name in _LINKER_SYMBOLS:
                linker_symbols[sym.name] = sym["st_value"]
    return symbols, linker_symbols


def _dwarf_cu_ranges(elf: Any) -> list[tuple[int, int, str]] | None:
    """Address ranges of each DWARF compile unit, from ``.debug_aranges`` (None when absent)."""
    try:
        dwarf = elf.get_dwarf_info()
        aranges = dwarf.get_aranges()
        if aranges is None:
            return None
        names: dict[int, str] = {}
        out: list[tuple[int, int, str]] = []
        for entry in aranges.entries:
            off = entry.info_offset
            if off not in names:
                cu = dwarf.get_CU_at(off)
                die = cu.get_top_DIE()
                name = die.attributes.get("DW_AT_name")
                comp_dir = die.attributes.get("DW_AT_comp_dir")
                p = name.value.decode(errors="replace") if name else ""
                if comp_dir and not p.startswith("/"):
                    p = comp_dir.value.decode(errors="replace") + "/" + p
                names[off] = p
            if entry.length:
                out.append((entry.begin_addr, entry.begin_addr + entry.length, names[off]))
        out.sort()
        return out
    except Exception:  # noqa: BLE001 - broken debug info only loses the DWARF fallback
        return None

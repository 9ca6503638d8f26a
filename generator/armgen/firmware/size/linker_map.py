"""The GNU ld map file (``-Wl,-Map=``): output sections and the input sections placed in them."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from armgen.errors import SizeError


@dataclass(frozen=True)
class MapInput:
    """One input-section line of a GNU ld map: where it went and which file it came from.

    Attributes:
        output_section: ELF section it was placed in. input_section: e.g. ``.text.main``, ``*fill*``.
        address (VMA), size: bytes. archive: archive file name or None. obj: object file name (the
        member for archives) or None for linker-made bytes (fill, stubs). size_before: the
        ``(size before relaxing)`` figure ld prints under lines whose size it changed (merged
        SHF_MERGE string sections), else None.
    """

    output_section: str
    input_section: str
    address: int
    size: int
    archive: str | None
    obj: str | None
    size_before: int | None = None


@dataclass(frozen=True)
class LinkerMap:
    """Parsed GNU ld map: output sections ``{name: (vma, size)}`` and their input sections."""

    outputs: dict[str, tuple[int, int]]
    inputs: tuple[MapInput, ...]


_HEX = r"0x([0-9a-fA-F]+)"
_OUT_FULL = re.compile(rf"^(\S+)\s+{_HEX}\s+{_HEX}(?:\s+load address {_HEX})?\s*$")
_OUT_NAME = re.compile(r"^([^\s*(][^\s(]*)\s*$")
_IN_FULL = re.compile(rf"^ (\S+)\s+{_HEX}\s+{_HEX}(?:\s+(.*?))?\s*$")
_IN_NAME = re.compile(r"^ ([^\s*(]\S*|\*fill\*)\s*$")
_ADDR_SIZE = re.compile(rf"^\s+{_HEX}\s+{_HEX}(?:\s+load address {_HEX})?(?:\s+(.*?))?\s*$")
_BEFORE_RELAXING = re.compile(rf"^\s+{_HEX} \(size before relaxing\)\s*$")
_MEMBER = re.compile(r"^(.*?)\((.*)\)$")
_KEYWORDS = {"LOAD", "OUTPUT", "START", "END", "INPUT", "GROUP", "OUTPUT_FORMAT", "OUTPUT_ARCH"}


def _split_file(text: str | None) -> tuple[str | None, str | None]:
    if not text or text == "linker stubs":
        return None, None
    m = _MEMBER.match(text)
    if m and m.group(1):
        return Path(m.group(1)).name, Path(m.group(2)).name
    return None, Path(text).name


def parse_map(text: str) -> LinkerMap:
    """Parse the ``Linker script and memory map`` part of a GNU ld ``-Map`` file.

    Args:
        text: the map file's text.

    Returns:
        Output sections with VMA and size, and every input-section line (including ``*fill*``)
        with its address, size and archive/object file names.

    Raises:
        SizeError: the text has no ``Linker script and memory map`` heading (not a GNU ld map).
    """
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.startswith("Linker script and memory map"))
    except StopIteration:
        raise SizeError("not a GNU ld map file (no 'Linker script and memory map' heading)") from None
    outputs: dict[str, tuple[int, int]] = {}
    inputs: list[MapInput] = []
    current: str | None = None
    pending_out: str | None = None
    pending_in: str | None = None
    for line in lines[start + 1 :]:
        if not line.strip():
            pending_in = None
            continue
        if pending_out is not None:
            m = _ADDR_SIZE.match(line)
            if m:
                outputs.setdefault(pending_out, (int(m.group(1), 16), int(m.group(2), 16)))
                current = pending_out
                pending_out = None
                continue
            pending_out = None
        if pending_in is not None:
            m = _ADDR_SIZE.match(line)
            pending_name, pending_in = pending_in, None
            if m and current is not None:
                archive, obj = _split_file(m.group(4))
                inputs.append(
                    MapInput(current, pending_name, int(m.group(1), 16), int(m.group(2), 16), archive, obj)
                )
                continue
        m = _BEFORE_RELAXING.match(line)
        if m:
            if inputs and current is not None:
                inputs[-1] = replace(inputs[-1], size_before=int(m.group(1), 16))
            continue
        if not line.startswith(" "):
            word = line.split()[0]
            if word in _KEYWORDS or "(" in word:
                current = None
                continue
            m = _OUT_FULL.match(line)
            if m:
                current = m.group(1)
                outputs.setdefault(current, (int(m.group(2), 16), int(m.group(3), 16)))
                continue
            m = _OUT_NAME.match(line)
            if m:
                pending_out = m.group(1)
                current = None
            continue
        if current is None:
            continue
        m = _IN_FULL.match(line)
        if m and not m.group(1).startswith("0x"):
            archive, obj = _split_file(m.group(4))
            inputs.append(MapInput(current, m.group(1), int(m.group(2), 16), int(m.group(3), 16), archive, obj))
            continue
        m = _IN_NAME.match(line)
        if m:
            pending_in = m.group(1)
    return LinkerMap(outputs, tuple(inputs))


def find_map(elf_path: str | Path) -> Path | None:
    """The map file next to an ELF: ``<stem>.map`` or ``<name>.map`` (None when neither exists)."""
    p = Path(elf_path)
    for cand in (p.with_suffix(".map"), p.with_name(p.name + ".map")):
        if cand.is_file():
            return cand
    return None

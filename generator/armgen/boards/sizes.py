"""armgen's one size grammar (``"512 KiB"``: board files, budgets) and the region speed order."""

from __future__ import annotations

import re
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from armgen.errors import BoardError

if TYPE_CHECKING:
    from armgen.boards.model import MemoryRegion

#: Speed order used to place pools: earlier is faster (first region that fits wins).
SPEED_ORDER: tuple[str, ...] = ("dtcm", "itcm", "sram", "ddr", "mram", "flash")
_SIZE_UNITS = {"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "kb": 1000, "mb": 1000**2}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")


def speed_rank(region: MemoryRegion) -> tuple[int, int]:
    """Sort key of a region by speed: its kind's place in :data:`SPEED_ORDER` (unknown kinds last),
    then its base address. ``sorted(regions, key=speed_rank)[0]`` is the fastest."""
    kind = SPEED_ORDER.index(region.kind) if region.kind in SPEED_ORDER else len(SPEED_ORDER)
    return kind, region.base


def _bits_message(number: str, unit: str, value: int | str) -> str:
    """Why ``value`` (a unit ending in a lower-case ``b``, e.g. ``"40 kb"``) is refused, and what to write:
    the byte units of the same prefix that give a whole number of bytes, then plain bytes."""
    prefix = unit[:-1].lower()  # "", "k", "ki", "m", "mi", "gi"
    options = [f"'{number} B'"]
    if prefix:
        decimal = {"k": "kB", "m": "MB"}.get(prefix[0])  # no GB in the grammar
        binary = prefix[0].upper() + "iB"
        options = []
        for spelling in ((binary, decimal) if prefix.endswith("i") else (decimal, binary)):
            if spelling is None:
                continue
            n = Fraction(number) * _SIZE_UNITS[spelling.lower()]
            if n.denominator == 1:  # a spelling the grammar takes for this number
                options.append(f"'{number} {spelling}' ({int(n):,} B)")
    return f"in bits: {value!r} (a lower-case b means bits); write {', '.join(options)} or plain bytes"


def parse_size(value: int | str) -> int:
    """Return bytes for an int or a string such as ``"512 KiB"``, ``"5.5 MiB"``, ``"64 kB"``, ``"100"``:
    armgen's one size grammar (board files, budgets). Units: ``B``, ``KiB`` (1024), ``MiB``, ``GiB``,
    ``kB`` (1000), ``MB``, the prefix in either case (``KB`` = ``kB``); decimals only where the result is
    a whole number of bytes. The ``B`` must be upper-case: a lower-case ``b`` means bits (``"40 kb"`` is
    40 kilobits), so such a unit is refused rather than read as bytes.

    Raises:
        ValueError: a boolean, a negative size, an unknown unit, a unit in bits or a fraction of a byte;
            the message says which ("negative ...", "not a size: ...", "in bits: ... write ...",
            "not a whole number of bytes: ...").
    """
    if isinstance(value, bool):
        raise ValueError(f"not a size: {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"negative ({value})")
        return value
    text = str(value)
    if text.strip().startswith("-"):
        raise ValueError(f"negative ({value!r})")
    m = _SIZE_RE.match(text)
    unit = m.group(2).lower() if m else ""
    if not m or unit not in _SIZE_UNITS:
        raise ValueError(f"not a size: {value!r} (use bytes, B, KiB, MiB, GiB, KB or MB)")
    if m.group(2).endswith("b"):
        raise ValueError(_bits_message(m.group(1), m.group(2), value))
    n = Fraction(m.group(1)) * _SIZE_UNITS[unit]
    if n.denominator != 1:
        raise ValueError(f"not a whole number of bytes: {value!r}")
    return int(n)


_PERCENT_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")


def parse_size_or_percent(value: int | str) -> tuple[int | None, Fraction | None]:
    """``(bytes, None)`` for a size of :func:`parse_size`, ``(None, percent)`` for ``"5 %"`` / ``"2.5%"``:
    the size grammar with percent, for limits relative to a baseline (``[budgets.growth]``).

    Raises:
        ValueError: as :func:`parse_size`; the message lists ``%`` among the units.
    """
    if isinstance(value, str):
        m = _PERCENT_RE.match(value)
        if m:
            return None, Fraction(m.group(1))
        if value.strip().startswith("-"):
            raise ValueError(f"negative ({value!r})")
    try:
        return parse_size(value), None
    except ValueError as exc:
        if "not a size" in str(exc):
            raise ValueError(f"not a size: {value!r} (use bytes, B, KiB, MiB, GiB, KB, MB or %)") from None
        raise


def size_field(value: Any, source: str, where: str) -> int:
    """:func:`parse_size` of a board-file field ``where`` of file ``source``.

    Raises:
        BoardError: naming the file and the field, with :func:`parse_size`'s reason.
    """
    try:
        return parse_size(value)
    except ValueError as exc:
        raise BoardError(f"{source}: {where}: {exc}") from None



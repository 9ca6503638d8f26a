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


def parse_size(value: int | str) -> int:
    """Return bytes for an int or a string such as ``"512 KiB"``, ``"5.5 MiB"``, ``"64 KB"``, ``"100"``:
    armgen's one size grammar (board files, budgets). Units, case-insensitive: ``B``, ``KiB`` (1024),
    ``MiB``, ``GiB``, ``KB`` (1000), ``MB``; decimals only where the result is a whole number of bytes.

    Raises:
        ValueError: a boolean, a negative size, an unknown unit or a fraction of a byte; the message
            says which ("negative ...", "not a size: ...", "not a whole number of bytes: ...").
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



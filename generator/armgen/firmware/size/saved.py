"""Saved size reports: the JSON of ``armgen size --json`` (a baseline, a base branch's report) read back.

A saved document is only trusted after it matches the schema of this armgen
(:func:`armgen.firmware.size.validate_report`): a report of another ``schema_version`` is refused in
one line (an older one lacks what a comparison needs; a newer one is not understood).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from armgen.errors import SizeError
from armgen.firmware.size.records import SCHEMA_VERSION
from armgen.firmware.size.schema import validate_report

#: The file ``armgen size --write-baseline`` writes in a project (committed with it).
BASELINE_FILE = "size-baseline.json"


def is_elf(path: Path) -> bool:
    """True when ``path`` starts with the ELF magic (a file that cannot be read is not an ELF)."""
    try:
        with path.open("rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def load_saved_report(path: str | Path) -> dict[str, Any]:
    """The ``report`` of a saved ``armgen size --json`` document at ``path``.

    Raises:
        SizeError: missing or unreadable file, not JSON, not a size report, a ``schema_version`` other
            than :data:`SCHEMA_VERSION`, or any schema mismatch (one line naming the field).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SizeError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SizeError(f"cannot read size report {path}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SizeError(f"{path}: not a size report (invalid JSON at line {exc.lineno}: {exc.msg})") from None
    report = doc.get("report") if isinstance(doc, dict) else None
    version = report.get("schema_version") if isinstance(report, dict) else None
    if not isinstance(version, int) or isinstance(version, bool):
        raise SizeError(f"{path}: not a size report (no report.schema_version; write one with armgen size --json)")
    if version > SCHEMA_VERSION:
        raise SizeError(f"{path}: size report schema_version {version} is newer than this armgen reads "
                        f"({SCHEMA_VERSION})", hint="upgrade armgen, or write the report again with this one")
    if version < SCHEMA_VERSION:
        raise SizeError(f"{path}: size report schema_version {version} lacks what a comparison needs "
                        f"(this armgen writes {SCHEMA_VERSION})",
                        hint="write it again: armgen size --write-baseline (or --json) on that build")
    validate_report(doc, str(path))
    return dict(doc["report"])

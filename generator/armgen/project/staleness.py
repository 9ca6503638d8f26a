"""Whether a project is stale: its model source, its weights or armgen itself changed since the project
was written. ``armgen build`` and ``armgen run`` say so in one line and point at ``armgen update``
(which takes the change in, :mod:`armgen.project.update`); they still build and run what the project
holds. The record keeps the SHA-256 of the model source file and of the weights file (``[model]
source_sha256`` / ``weights_sha256``, schema 2); a record without them is compared by armgen version only.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from armgen.project.record import ProjectRecord


def file_sha256(path: str | None) -> str | None:
    """SHA-256 (hex) of the file at ``path``, None when ``path`` is None, not a file or unreadable."""
    if not path:
        return None
    p = Path(path).expanduser()
    try:
        return hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else None
    except OSError:
        return None


def stale_reasons(record: ProjectRecord, armgen_version: str) -> list[str]:
    """What changed since the project was written: "model source X changed", "weights Y changed" (or
    "... is gone"), "armgen A -> B". Empty when nothing did.

    Args:
        record: the project's record. armgen_version: the running armgen's version (``armgen.__version__``).
    """
    out = []
    model = record.model
    if model is not None:
        for what, path, sha in (("model source", model.source, model.source_sha256),
                                ("weights", model.weights, model.weights_sha256)):
            if not sha or not path:
                continue
            now = file_sha256(str(record.resolve(path)))
            if now is None:
                out.append(f"the {what} {path} is gone")
            elif now != sha:
                out.append(f"the {what} {path} changed")
    if record.armgen_version and record.armgen_version != armgen_version:
        out.append(f"armgen {record.armgen_version} wrote it, this is armgen {armgen_version}")
    return out


def stale_line(record: ProjectRecord, armgen_version: str) -> str | None:
    """The one line ``build``/``run`` print for a stale project (None when it is not)."""
    reasons = stale_reasons(record, armgen_version)
    if not reasons:
        return None
    return (f"note: {'; '.join(reasons)} since {record.root.name} was written: it still holds the old program; "
            f"`armgen update {record.root}` takes the change in")


__all__ = ["file_sha256", "stale_line", "stale_reasons"]

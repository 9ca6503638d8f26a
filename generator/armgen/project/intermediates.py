"""The program's intermediates: what ``armgen run`` needs beside the ``.pte`` but a team does not commit.

``armgen new`` writes the exported and lowered programs (``model/*.pt2``) and the delegates' TOSA graphs
(``model/*.tosa``) beside the program; the project's ``.gitignore`` leaves them out of git (on a kws
project they are most of ``model/``). A fresh clone lacks them: :func:`restore_intermediates` compiles
the model again from the record (source, weights, calibration) and takes the missing files only if the
rebuilt ``.pte`` has the committed SHA-256; otherwise it refuses, naming both digests.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Callable
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from armgen.errors import ProjectError
from armgen.project.record import ProjectRecord

#: Files of ``model/`` git leaves out (the project's .gitignore says the same).
IGNORED = ("*.pt2", "*.tosa")


def is_intermediate(name: str) -> bool:
    """Whether a file of ``model/`` (by name) is an intermediate (:data:`IGNORED`)."""
    return any(fnmatchcase(name, pattern) for pattern in IGNORED)


def _sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def is_intermediate_path(rel: str) -> bool:
    """Whether a project file (relative POSIX path) is an intermediate: ``model/`` or a stand-in's ``model/``.
    Intermediates have no digest in the record and ``armgen update`` replaces them without a plan line."""
    parts = rel.split("/")
    return len(parts) >= 2 and parts[-2] == "model" and is_intermediate(parts[-1])


def missing_intermediates(record: ProjectRecord, report: Any) -> list[str]:
    """The names of ``report.files`` (roles -> names beside the report) that are intermediates and absent."""
    folder = record.model_path("report").parent
    return sorted(n for n in report.files.values() if is_intermediate(n) and not (folder / n).is_file())


def restore_intermediates(record: ProjectRecord, report: Any, say: Callable[[str], None]) -> list[str]:
    """Rebuild the missing intermediates (:func:`missing_intermediates`) from the record; returns their names.

    Raises:
        ProjectError: the record's model source is a ``.pte`` or gone, the compile fails, or the rebuilt
            ``.pte`` differs from the committed one (both SHA-256 named; nothing is written then).
    """
    missing = missing_intermediates(record, report)
    if not missing or record.model is None:
        return []
    model = record.model
    source = model.source
    folder = record.model_path("report").parent
    if source.startswith("sample:"):
        source = source.removeprefix("sample:")
    else:
        resolved = record.resolve(source)
        if source.lower().endswith(".pte") or not resolved.exists():
            raise ProjectError(f"{folder}: {', '.join(missing)} missing and cannot be rebuilt from {source}",
                               hint="run `armgen update --model FILE` with the model source")
        if model.source_sha256 and _sha256_of(resolved) != model.source_sha256:  # no compile to find out
            raise ProjectError(f"{folder}: {', '.join(missing)} missing, and the model source {source} changed since "
                               "the program was made: they cannot be rebuilt as committed",
                               hint="`armgen update` takes the changed model in")
        source = str(resolved)
    from armgen.model.compile import compile_model

    weights = str(record.resolve(model.weights)) if model.weights and record.resolve(model.weights).is_file() else None
    calibration = str(record.resolve(model.calibration)) if model.calibration else None
    say(f"rebuilding {', '.join(missing)} from {model.source} (git leaves them out) ...")
    kwargs: dict[str, Any] = {}
    if record.backend == "ethos-u":
        from armgen.boards import load_board

        board = load_board(str(record.board_spec))
        npu = board.npu
        if npu is not None:
            kwargs = {"cpu": board.cpu.et_target, "system_config": npu.vela_system_config,
                      "memory_mode": npu.vela_memory_mode, "vela_config_file": npu.vela_config_file}
    with tempfile.TemporaryDirectory(prefix="armgen-rebuild-") as tmp:
        result = compile_model(source, record.target, out_dir=Path(tmp), weights=weights, calibration=calibration,
                               name=str(record.name), **{k: v for k, v in kwargs.items() if v is not None})
        digest = hashlib.sha256(Path(result.pte_path).read_bytes()).hexdigest()
        if digest != model.sha256:
            raise ProjectError(
                f"the rebuilt program differs from the committed {record.model_path('pte').name} "
                f"(sha256 {digest[:12]} vs {model.sha256[:12]}): its intermediates cannot be rebuilt",
                hint="the model source, its weights or the toolchain changed: `armgen update` takes the new program")
        for name in missing:
            shutil.copy2(Path(result.pte_path).parent / name, folder / name)
    return missing


__all__ = ["IGNORED", "is_intermediate", "is_intermediate_path", "missing_intermediates", "restore_intermediates"]

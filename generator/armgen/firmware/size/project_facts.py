"""What armgen generated for an image, read back from its project for size comparisons.

A size delta has causes armgen knows because it wrote them: the operators the build registers
(``model/selected_operators.yaml``, written with ExecuTorch's ``codegen.tools.gen_oplist``), the
program (``model/<name>.pte`` and its ``.report.json`` with ``constant_data_size``), the pools and the
stack of ``armgen.toml``, and for Zephyr the ``.config`` Kconfig wrote. :func:`project_facts` gathers
them into the JSON-ready dict :attr:`ElfSizeReport.project` carries, so a saved report compares as well
as a project directory does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from armgen.project.record import ProjectRecord

#: Where Zephyr's build writes the resolved Kconfig of an image (``build/zephyr/.config``).
ZEPHYR_CONFIG = Path("build") / "zephyr" / ".config"


def project_facts(project: ProjectRecord) -> dict[str, Any]:
    """The facts of ``project`` a size comparison needs (JSON-ready; sizes in bytes).

    Keys: ``name``, ``board``, ``rtos`` (``baremetal`` when the record names none), ``release`` (the
    Zephyr release, None for bare metal), ``backend``; ``operators``: the selected operators
    (``cortex_m::softmax.out``), sorted; ``kernels``: how many kernels the build registers (entries of
    ``et_kernel_metadata``, one per operator and dtype variant); ``model``: ``{"bytes", "constant_bytes",
    "sha256"}`` of the ``.pte`` (None when the file is absent; ``constant_bytes`` from the program report,
    None without one); ``pools``: ``{name: bytes}`` of ``[[pools]]``; ``stack``: ``[memory] stack``
    (bytes, or ``"auto"``); ``kconfig``: ``{CONFIG_NAME: value}`` of a Zephyr build's ``.config`` (None
    for bare metal or before the build). Missing or unreadable files give None or empty values: a
    hand-written record is still sized.
    """
    root = project.root
    ops, kernels = _operators(root / "model" / "selected_operators.yaml")
    pte = project.model_path("pte")
    model: dict[str, Any] | None = None
    if pte.is_file():
        model = {"bytes": pte.stat().st_size, "constant_bytes": _constant_bytes(project.model_path("report")),
                 "sha256": project.model.sha256 if project.model is not None else None}
    rtos = project.rtos or "baremetal"
    return {
        "name": project.name,
        "board": project.board,
        "rtos": rtos,
        "release": project.zephyr_release if rtos == "zephyr" else None,
        "backend": project.backend,
        "operators": ops,
        "kernels": kernels,
        "model": model,
        "pools": {p.name: p.bytes for p in project.pools},
        "stack": project.memory.get("stack"),
        "kconfig": read_kconfig(root / ZEPHYR_CONFIG) if rtos == "zephyr" else None,
    }


def _operators(path: Path) -> tuple[list[str], int | None]:
    """(sorted operator names, registered kernel count) of a ``selected_operators.yaml``; ([], None) when absent."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        return [], None
    if not isinstance(data, dict):
        return [], None
    ops = data.get("operators") or {}
    meta = data.get("et_kernel_metadata") or {}
    kernels = sum(len(v) if isinstance(v, list) else 1 for v in meta.values()) if isinstance(meta, dict) else None
    return sorted(str(k) for k in ops) if isinstance(ops, dict) else [], kernels


def _constant_bytes(report: Path) -> int | None:
    """``constant_data_size`` (bytes) of a program report (``armgen.model.program_report``), None if unknown."""
    try:
        value = json.loads(report.read_text()).get("constant_data_size")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def read_kconfig(path: Path) -> dict[str, str] | None:
    """``{CONFIG_NAME: value}`` of a Kconfig ``.config`` (``# CONFIG_X is not set`` reads as ``"n"``);
    None when the file is absent. Values keep their quotes (``"\\"zephyr\\""``), as Kconfig writes them."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return None
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("# CONFIG_") and line.endswith(" is not set"):
            out[line[2:-len(" is not set")]] = "n"
        elif line.startswith("CONFIG_") and "=" in line:
            key, _, value = line.partition("=")
            out[key] = value
    return dict(sorted(out.items()))

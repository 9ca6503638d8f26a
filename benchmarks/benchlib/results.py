"""``results.json``: read, written without machine paths, merged from partial runs; a run's meta record."""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from .paths import REPO, without_machine_paths, workspace_dir


def load_results(path: Path, fresh: bool = False) -> dict[str, Any]:
    """The results recorded so far in ``path`` (a subset run merges into them); empty when ``fresh``
    (``--clean``: every figure is from this run) or when there is no file yet."""
    return json.loads(path.read_text()) if path.exists() and not fresh else {}


def save_results(path: Path, results: dict[str, Any]) -> None:
    """Write ``results`` (sorted keys, one-space indent) with every recorded path (commands, project folders,
    the workspace) without this machine's prefixes."""
    path.write_text(without_machine_paths(json.dumps(results, indent=1, sort_keys=True)) + "\n")


def merge_results(results: dict[str, Any], files: list[Path]) -> None:
    """Merge the results.json ``files`` of partial runs into ``results`` (later files win, down to the sample
    level); their meta records are kept as ``meta.runs``, the last one on top."""

    def deep(dst: dict[str, Any], src: dict[str, Any], depth: int) -> None:
        for k, v in src.items():
            if isinstance(v, dict) and isinstance(dst.get(k), dict) and depth < 2:
                deep(dst[k], v, depth + 1)
            else:
                dst[k] = v

    runs = list(results.get("meta", {}).get("runs", []))
    for f in files:
        part = json.loads(Path(f).read_text())
        meta = part.pop("meta", {})
        runs += meta.get("runs", [meta] if meta else [])
        deep(results, part, 0)
    results["meta"] = {**(runs[-1] if runs else {}), "runs": runs,
                       "command": "; ".join(dict.fromkeys(r.get("command", "?") for r in runs))}


def run_meta(args: list[str], jobs: int) -> dict[str, Any]:
    """The meta record of a run: when, the command line, the host (cores, load) and the tool versions."""
    return {
        "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": "benchmarks/run " + " ".join(args),
        "host": {"machine": platform.machine(), "cpus": os.cpu_count(), "jobs": jobs,
                 "load_average_at_start": os.getloadavg()[0]},
        "tools": tool_versions(),
    }


def write_side_result(path: Path, res: dict[str, Any]) -> int:
    """Write a side script's JSON (sorted keys, like results.json) and say where; the script's exit status."""
    path.write_text(json.dumps(res, indent=2, sort_keys=True) + "\n")
    print(f"wrote {path}")
    return 0


def first_line(cmd: list[str]) -> str | None:
    """The first line a tool prints for ``cmd`` (``--version``), None when it is missing or silent."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True)
        return (p.stdout or p.stderr).strip().splitlines()[0]
    except (OSError, IndexError):
        return None


def git_head(path: Path) -> str | None:
    """The commit checked out at ``path``, None when it is no git checkout."""
    try:
        p = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True)
        return p.stdout.strip() or None
    except OSError:
        return None


def tool_versions() -> dict[str, Any]:
    """The tools, Python packages and workspace sources a run used (versions and commits)."""
    ws = workspace_dir()
    v: dict[str, Any] = {
        "arm-none-eabi-gcc": first_line(["arm-none-eabi-gcc", "--version"]),
        "qemu-system-arm": first_line(["qemu-system-arm", "--version"]),
        "cmake": first_line(["cmake", "--version"]),
        "ninja": first_line(["ninja", "--version"]),
        "python": platform.python_version(),
        "armgen_commit": git_head(REPO),
    }
    for mod in ("armgen", "executorch", "torch", "ethos-u-vela", "tflite", "ai-edge-litert"):
        try:
            from importlib.metadata import version

            v[mod] = version(mod)
        except Exception:  # noqa: BLE001
            v[mod] = None
    v["workspace"] = str(ws)
    v["workspace_commits"] = {
        name: git_head(ws / rel)
        for name, rel in (
            ("executorch", "modules/lib/executorch"),
            ("cmsis-nn", "modules/lib/cmsis-nn"),
            ("tflite-micro", "modules/lib/tflite-micro"),
            ("flatbuffers (TFLM)", "modules/lib/flatbuffers-tflm"),
            ("gemmlowp", "modules/lib/gemmlowp"),
            ("ruy", "modules/lib/ruy"),
        )
    }
    return v

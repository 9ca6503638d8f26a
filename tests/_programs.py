"""Shared test helpers for spec/new/build: real compiled programs (cached per test session) and
workspace detection. Not a test module (leading underscore)."""

from __future__ import annotations

import atexit
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from armgen.model.program_report import ProgramReport

_CACHE = Path(tempfile.mkdtemp(prefix="armgen-test-programs-"))
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)  # the session's programs go with the session


@functools.cache
def compiled(sample: str, target: str) -> tuple[ProgramReport, Path, Path]:
    """Compile a built-in sample for ``target`` with armgen's compile stage, once per session.

    Returns:
        (report, pte path, report path).
    """
    from armgen.model.compile import compile_model

    out = _CACHE / f"{sample}-{target}"
    kwargs = {}
    if target.startswith("ethos-u"):
        from armgen.boards import load_board

        npu = load_board("corstone_320").npu
        kwargs = {"cpu": "cortex-m85", "system_config": npu.vela_system_config, "memory_mode": npu.vela_memory_mode}
    result = compile_model(sample, target, out_dir=out, name=sample, **kwargs)
    return result.report, result.pte_path, result.report_path


def workspace_missing() -> str | None:
    """Why no workspace usable for firmware builds exists (None when one does)."""
    try:
        from armgen.firmware.build import resolve_workspace

        resolve_workspace()
    except Exception as exc:  # noqa: BLE001 - any failure means: no usable workspace
        return getattr(exc, "message", str(exc))
    return None


def armgen(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run the real `armgen` CLI (the installed entry point) and capture its output."""
    exe = Path(sys.executable).with_name("armgen")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "armgen.cli"]
    return subprocess.run(
        cmd + list(args), cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=1800
    )


def tree(root: Path) -> dict[str, bytes]:
    """All files under ``root`` (relative POSIX path -> bytes), ``build/`` excluded."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "build" not in p.relative_to(root).parts[:1]
    }


_CONFIG_LINE = re.compile(r"^CONFIG_([A-Za-z0-9_]+)=(.*)$")


def config_lines(text: str) -> dict[str, str]:
    """A prj.conf / board .conf as ``{symbol without CONFIG_: value}``; any other line fails the test."""
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = _CONFIG_LINE.match(line)
        assert m, f"not a Kconfig assignment: {line!r}"
        out[m.group(1)] = m.group(2)
    return out


def cleanup() -> None:  # pragma: no cover - best effort
    shutil.rmtree(_CACHE, ignore_errors=True)

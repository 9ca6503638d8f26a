"""Running the tools a benchmark measures: timed, with the command line recorded without machine paths."""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from pathlib import Path

from .paths import without_machine_paths


def log(msg: str) -> None:
    """One progress line on stderr, with the time of day."""
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def cmdline(cmd: list[str]) -> str:
    """A command line as recorded: machine paths (the model folder, the cache, the venv) as placeholders."""
    return without_machine_paths(" ".join(shlex.quote(str(c)) for c in cmd))


class CommandFailed(RuntimeError):
    """A measured command exited non-zero; keeps its argv, exit status and output."""

    def __init__(self, cmd: list[str], rc: int, out: str, err: str):
        super().__init__(f"command failed ({rc}): {cmdline(cmd)}\n{out[-3000:]}\n{err[-3000:]}")
        self.cmd, self.rc, self.out, self.err = cmd, rc, out, err


def run(cmd: list[str], cwd: Path | None = None, env: dict[str, str] | None = None, check: bool = True,
        timeout: float | None = None) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run a command, return (completed process, wall seconds).

    Raises:
        CommandFailed: ``check`` and the command exited non-zero.
        subprocess.TimeoutExpired: it ran longer than ``timeout`` seconds.
    """
    t0 = time.monotonic()
    p = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    dt = time.monotonic() - t0
    if check and p.returncode != 0:
        raise CommandFailed(cmd, p.returncode, p.stdout, p.stderr)
    return p, dt

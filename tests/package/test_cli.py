"""The command line as a whole (armgen.cli.group): exit statuses a CI gate can tell apart, output
that survives a pipe.

Interruption is a real SIGINT to the real `armgen` process while it waits inside a command (a download
from a 127.0.0.1 socket that accepts and never answers), as a terminal's Ctrl-C would send it.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import click
from click.testing import CliRunner

from _programs import ANSI
from armgen.cli import main
from armgen.cli.group import EXIT_INTERRUPTED


def _armgen_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("armgen")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "armgen.cli"]


def test_ctrl_c_is_its_own_status_in_one_line(tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(120)
        env = {**os.environ, "ARMGEN_OFFLINE": "0", "ARMGEN_CACHE_DIR": str(tmp_path / "cache"),
               "ARMGEN_WEIGHTS_URL": f"http://127.0.0.1:{listener.getsockname()[1]}"}
        env.pop("ARMGEN_MLPERF_DIR", None)
        proc = subprocess.Popen([*_armgen_cmd(), "weights", "fetch", "kws"], env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            conn, _ = listener.accept()  # armgen is inside `weights fetch`, waiting for the answer
            with conn:
                proc.send_signal(signal.SIGINT)
                out, err = proc.communicate(timeout=120)
        finally:
            proc.kill()
    err = ANSI.sub("", err)
    assert proc.returncode == EXIT_INTERRUPTED == 130, (proc.returncode, err)
    assert err.strip().splitlines() == ["armgen: interrupted"], err
    assert out == ""


def test_abort_is_interrupted_not_over_budget() -> None:
    """click's Abort (its name for a Ctrl-C outside a command's body) is 130 too, not 1 ("over budget")."""

    @main.command("test-abort-probe", hidden=True)
    def probe() -> None:
        raise click.Abort()

    try:
        r = CliRunner().invoke(main, ["test-abort-probe"])
    finally:
        main.commands.pop("test-abort-probe")
    assert r.exit_code == 130, (r.exit_code, r.output)
    assert ANSI.sub("", r.stderr).strip() == "armgen: interrupted"


def test_help_lists_the_exit_statuses() -> None:
    r = CliRunner().invoke(main, ["--help"])
    assert r.exit_code == 0
    text = " ".join(r.stdout.split())
    assert "Exit status: 0 success; 1 over budget" in text and "2 any other error; 130 interrupted" in text

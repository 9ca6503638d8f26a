"""The command line as a whole (armgen.cli.group, armgen.cli._console): exit statuses a CI gate can tell
apart, output that survives a pipe.

Interruption is a real SIGINT to the real `armgen` process while it waits inside a command (a download
from a 127.0.0.1 socket that accepts and never answers), as a terminal's Ctrl-C would send it. Output is
read from the real process through a pipe, and through a pseudo-terminal 80 columns wide.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import signal
import socket
import struct
import subprocess
import sys
import termios
from pathlib import Path

import click
from click.testing import CliRunner

from _programs import ANSI, sigint_default
from armgen.cli import main
from armgen.cli.group import EXIT_INTERRUPTED
from armgen.workspace import default_release, zephyr_releases


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
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=sigint_default)
        try:
            conn, _ = listener.accept()
            with conn:
                conn.settimeout(120)
                request = conn.recv(4096)  # armgen sent its GET: it is inside `weights fetch`, waiting for the answer
                assert request.startswith(b"GET "), request
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


def _on_a_terminal(*args: str) -> str:
    """`armgen ARGS`'s output (stdout and stderr) on an 80-column pseudo-terminal."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen([*_armgen_cmd(), *args], stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    try:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the process closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        proc.wait(timeout=120)
    finally:
        os.close(master)
        proc.kill()
    return ANSI.sub("", b"".join(chunks).decode().replace("\r\n", "\n"))


def test_piped_output_keeps_paths_on_one_line(tmp_path: Path) -> None:
    """A CI log (a pipe) gets each path whole; a terminal keeps rich's wrapping at its width."""
    root = tmp_path / ("a-workspace-folder-with-a-name-long-enough-that-its-path-is-over-eighty-columns-" * 2)
    (root / ".west").mkdir(parents=True)
    (root / ".west" / "config").write_text("[manifest]\npath = modules\n")  # a workspace with nothing fetched
    assert len(str(root)) > 160
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    r = subprocess.run([*_armgen_cmd(), "workspace", "status", str(root)], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 1, r.stderr  # incomplete
    out = ANSI.sub("", r.stdout).splitlines()
    assert f"armgen workspace {root}" in out, r.stdout  # the table's title, whole
    assert any("│ modules/lib/executorch/third-party/flatbuffers " in line for line in out), r.stdout
    assert f"armgen workspace init {root} --mirror" in r.stderr.splitlines()[-1], r.stderr

    term = _on_a_terminal("workspace", "status", str(root))
    table = [line for line in term.splitlines() if line[:1] in "┏┃┡│└"]
    assert len(table) > 10 and all(len(line) <= 80 for line in table), term  # rich's table at 80 columns
    assert "armgen workspace" in term and f"armgen workspace {root}" not in term, term  # its title wrapped


def _commands(group: click.Group, path: str = "armgen"):
    """Every (command path, command) of the CLI, groups included."""
    for name, cmd in group.commands.items():
        yield f"{path} {name}", cmd
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, f"{path} {name}")


def test_zephyr_release_help_lists_exactly_the_accepted_releases() -> None:
    """`--zephyr-release 4.1` was accepted (modules/zephyr/releases.yaml has it) while the help said "4.4 or 3.7"."""
    names = [name for name, _ in zephyr_releases()]
    assert "4.1" in names and len(names) >= 3
    helps = {path: opt.help or "" for path, cmd in _commands(main) for opt in cmd.params
             if isinstance(opt, click.Option) and "--zephyr-release" in opt.opts}
    assert set(helps) == {"armgen new", "armgen workspace init", "armgen update"}
    for path, text in helps.items():
        assert sorted(re.findall(r"\b\d+\.\d+\b", text)) == sorted(names), (path, text)
        # update's default is the project record's release
        assert (f"{default_release()} (default)" in text) == (path != "armgen update"), (path, text)
    workspace_help = main.commands["workspace"].help or ""
    env_suffixes = re.search(r"\(R = ([\d_, ]+)\)", workspace_help)  # $ARMGEN_WORKSPACE_ZEPHYR_<R>
    assert env_suffixes and env_suffixes.group(1).split(", ") == [n.replace(".", "_") for n in names], workspace_help

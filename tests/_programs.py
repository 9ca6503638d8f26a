"""Shared test helpers: real compiled programs (the committed fixtures of tests/data/programs, and one
compile cache per test session for what must still compile, projects made from model files included), the CLI
in a process of its own (:func:`armgen`) or in this one (:func:`armgen_here`, where a compile costs 2.5 s
instead of 12 s), project trees. Not a test module (leading underscore); skip conditions live in
tests/_needs.py."""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import functools
import hashlib
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from armgen.model.program_report import ProgramReport

T = TypeVar("T")

#: Where the session's compiled programs live. Under pytest-xdist the controller names one folder for all
#: workers (conftest.py sets ``$ARMGEN_TEST_PROGRAMS`` and removes it at the end), so a program is compiled
#: once per run, not once per worker; alone, a folder of this process's own.
SHARED_CACHE_ENV = "ARMGEN_TEST_PROGRAMS"
if os.environ.get(SHARED_CACHE_ENV):
    _CACHE = Path(os.environ[SHARED_CACHE_ENV])
else:
    _CACHE = Path(tempfile.mkdtemp(prefix="armgen-test-programs-"))
    atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)  # the session's programs go with the session


#: The committed program fixtures (tests/data/programs, made by its make.py): key -> (sample, target, board).
#: ``board`` names the board whose NPU settings (Vela system config, memory mode, config file) and CPU an
#: Ethos-U program is compiled with; None compiles with armgen's defaults for the target.
FIXTURES_DIR = Path(__file__).resolve().parent / "data" / "programs"
FIXTURE_PROGRAMS: dict[str, tuple[str, str, str | None]] = {
    "kws-cortex-m55": ("kws", "cortex-m55", None),
    "kws-ethos-u85-256": ("kws", "ethos-u85-256", "corstone_320"),
    "kws-alif_e8": ("kws", "ethos-u55-256", "alif_e8"),
    "kws-corstone_300": ("kws", "ethos-u55-128", "corstone_300"),
    "kws-cortex-m7": ("kws", "cortex-m7", None),
}
#: The compile outputs a fixture keeps (by report role, plus the program and its report). The .pt2 files are
#: left out (hundreds of KB each): project, render and size tests do not read them; render copies what exists.
FIXTURE_ROLES = ("pte", "report", "reference", "float_reference", "vela_summary")


@contextlib.contextmanager
def _untrained_weights():
    """No trained weights reachable: no ``$ARMGEN_MLPERF_DIR``, an empty weights cache, no download. The
    fixtures are made so (the samples' fixed-seed weights), wherever make.py or the check runs."""
    saved = {k: os.environ.get(k) for k in ("ARMGEN_MLPERF_DIR", "ARMGEN_CACHE_DIR", "ARMGEN_OFFLINE")}
    with tempfile.TemporaryDirectory(prefix="armgen-no-weights-") as empty:
        os.environ.pop("ARMGEN_MLPERF_DIR", None)
        os.environ.update(ARMGEN_CACHE_DIR=empty, ARMGEN_OFFLINE="1")
        try:
            yield
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def compile_fixture(key: str, out_dir: Path):
    """Program fixture ``key`` compiled afresh into ``out_dir`` (untrained weights): what make.py commits."""
    sample, target, board = FIXTURE_PROGRAMS[key]
    with _untrained_weights():
        return compile_for(sample, target, board, out_dir)


def compile_for(sample: str, target: str, board: str | None, out_dir: Path):
    """armgen's compile stage (torch.export, PT2E, ExecuTorch lowering, Vela) for ``target``, with the NPU
    settings and CPU of ``board`` when given. The one recipe of the session cache and the fixtures."""
    from armgen.model.compile import compile_model

    kwargs = {}
    if board is not None:
        from armgen.boards import load_board

        b = load_board(board)
        assert b.npu is not None and b.npu.vela_accelerator == target, (board, target)
        kwargs = {"cpu": b.cpu.et_target, "system_config": b.npu.vela_system_config,
                  "memory_mode": b.npu.vela_memory_mode, "vela_config_file": b.npu.vela_config_file}
    return compile_model(sample, target, out_dir=out_dir, name=sample, **kwargs)


def _once(key: str, make: Callable[[Path], T]) -> T:
    """``make(folder)`` once per test session for ``key``: every test file, and every xdist worker, shares the
    result (the first to ask makes it in ``folder`` under a lock and pickles what it returns; the others wait
    and load it)."""
    out = _CACHE / key
    done = out.with_suffix(".result.pickle")
    with open(out.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.is_file():
            return pickle.loads(done.read_bytes())
        result = make(out)
        done.write_bytes(pickle.dumps(result))
        return result


@functools.cache
def compile_result(sample: str, target: str, board: str | None = None):
    """:func:`compile_for` once per test session (:func:`_once`: shared by every file and xdist worker)."""
    return _once(f"{sample}-{target}-{board or 'default'}", lambda out: compile_for(sample, target, board, out))


def _key(model: Path) -> str:
    """A cache key for a model file: its stem and the start of its content's SHA-256."""
    return f"{model.stem}-{hashlib.sha256(model.read_bytes()).hexdigest()[:12]}"


@functools.cache
def compiled_file(model: Path, target: str = "cortex-m55") -> tuple[Path, Path]:
    """A model file (``tests/models/*.py``) compiled for ``target`` once per test session by armgen's compile
    stage in this process (:func:`_once`), as `armgen compile MODEL --target TARGET` writes it.

    Returns:
        (the .pte, its report beside it): what `armgen new/update --model X.pte` take.
    """
    from armgen.model.compile import compile_model

    def make(out: Path) -> tuple[Path, Path]:
        result = compile_model(str(model), target, out_dir=out, name=model.stem)
        return result.pte_path, result.report_path

    return _once(f"file-{_key(model)}-{target}", make)


@functools.cache
def made_project(model: Path, board: str, name: str) -> Path:
    """`armgen new NAME --model <folder>/model.py --board BOARD` (the CLI in this process, :func:`armgen_here`)
    once per test session, ``model.py`` a copy of ``model``: returns the folder holding ``model.py`` and the
    project ``NAME/``, whose record names its source ``../model.py``. Shared: copy the folder
    (``shutil.copytree``) before changing anything in it."""

    def make(out: Path) -> Path:
        out.mkdir(parents=True)
        shutil.copy(model, out / "model.py")
        ok(armgen_here("new", name, "--model", str(out / "model.py"), "--board", board, "--out", str(out)),
           "armgen new")
        return out

    return _once(f"project-{_key(model)}-{board}-{name}", make)


def compiled(sample: str, target: str) -> tuple[ProgramReport, Path, Path]:
    """A built-in sample compiled for ``target`` once per session (Ethos-U: for corstone_320's NPU).

    Returns:
        (report, pte path, report path).
    """
    result = compile_result(sample, target, "corstone_320" if target.startswith("ethos-u") else None)
    return result.report, result.pte_path, result.report_path


def fixture_files(key: str) -> dict[str, Path]:
    """The committed files of program fixture ``key`` by role (only those that exist)."""
    folder = FIXTURES_DIR / key
    report = ProgramReport.from_dict(json.loads((folder / f"{key.split('-')[0]}.report.json").read_text()))
    names = {"pte": report.pte_file, "report": f"{report.name}.report.json", **report.files}
    return {role: folder / names[role] for role in FIXTURE_ROLES if role in names and (folder / names[role]).is_file()}


@functools.cache
def program(key: str) -> tuple[ProgramReport, Path, Path]:
    """Program fixture ``key`` (FIXTURE_PROGRAMS), compiled by tests/data/programs/make.py: no export.

    Returns:
        (report, pte path, report path), as :func:`compiled` does.
    """
    files = fixture_files(key)
    report = ProgramReport.from_dict(json.loads(files["report"].read_text()))
    return report, files["pte"], files["report"]


def workspace_missing() -> str | None:
    """Why no workspace usable for firmware builds exists (None when one does): tests/_needs.py's reason.
    Tests say ``@pytest.mark.needs_workspace`` instead of calling this."""
    from _needs import workspace_missing as missing

    return missing()


#: Rich's colour codes, removed before a test reads the CLI's output.
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def ok(result: subprocess.CompletedProcess, what: str) -> str:
    """The command's output (colour codes removed); fails the test with its tail unless it exited 0."""
    out = ANSI.sub("", result.stdout + result.stderr)
    assert result.returncode == 0, f"{what} failed ({result.returncode}):\n{out[-3000:]}"
    return out


def one_error_line(result: subprocess.CompletedProcess) -> str:
    """The `armgen: error:` line of a failed command (exit 2, no traceback)."""
    err = ANSI.sub("", result.stderr)
    assert result.returncode == 2 and "Traceback" not in err, err[-2000:]
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("armgen: error:")]
    assert len(lines) == 1, err
    return lines[0]


def armgen(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run the real `armgen` CLI (the installed entry point) and capture its output."""
    exe = Path(sys.executable).with_name("armgen")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "armgen.cli"]
    return subprocess.run(
        cmd + list(args), cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=1800
    )


def armgen_here(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run the real `armgen` CLI (``armgen.cli.main``, the entry point :func:`armgen` starts) in this process
    through click's CliRunner: the same exit status and the same stdout and stderr text.

    A new interpreter imports torch and ExecuTorch and warms them up before its first compile (about 8 s of CPU
    on the 2-core Xeon; ExecuTorch reads its edge-dialect YAML in pure Python); once this process has done that,
    a small model compiles in about 2.5 s. Use :func:`armgen` where a process of its own matters (a signal sent
    to it, a compile compared across processes).
    """
    from click.testing import CliRunner

    from armgen.cli import main

    with contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext():
        r = CliRunner().invoke(main, list(args), prog_name="armgen", catch_exceptions=False)
    return subprocess.CompletedProcess(["armgen", *args], r.exit_code, r.stdout, r.stderr)


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


def sigint_default() -> None:
    """``preexec_fn`` of a child a test sends Ctrl-C to: SIGINT as a terminal gives it. A test run started in the
    background by a non-interactive shell (``pytest ... &``, nohup) ignores SIGINT, children inherit that, and Python
    keeps an ignored SIGINT ignored: the signal would never arrive (the Ctrl-C tests failed so, and only so)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def sww_marvin_recording(folder: Path) -> tuple[Path, Path, tuple[str, ...]]:
    """For a streaming test: espeak-ng's "marvin" at 0.75 s in 2.5 s of quiet, ``folder/long.wav`` (16 kHz int16);
    returns (the reference ``str_ww_ref_model.tflite``, the recording, the ``--calibration`` arguments of
    ``armgen new`` when ``sww_cal.npz`` is beside the model). Skips the calling test, saying why, without the
    model or espeak-ng."""
    import numpy as np
    import pytest
    from scipy.io import wavfile

    from armgen.model.frontend import read_wav
    from armgen.model.model_source import mlperf_dir

    where = mlperf_dir()
    weights = where / "str_ww_ref_model.tflite" if where is not None else None
    if weights is None or not weights.is_file():
        pytest.skip(f"no str_ww_ref_model.tflite in ARMGEN_MLPERF_DIR ({where}): `armgen weights fetch sww`")
    exe = shutil.which("espeak-ng")
    if exe is None:
        pytest.skip("espeak-ng not installed (Debian package espeak-ng)")
    subprocess.run([exe, "-w", str(folder / "marvin.wav"), "marvin"], check=True, capture_output=True, timeout=60)
    rec = np.zeros(40000, dtype=np.int16)
    pcm = read_wav(folder / "marvin.wav", 16000)[:28000]
    rec[12000 : 12000 + pcm.size] = pcm
    wavfile.write(folder / "long.wav", 16000, rec)
    calibration = weights.parent / "sww_cal.npz"
    return weights, folder / "long.wav", (("--calibration", str(calibration)) if calibration.is_file() else ())

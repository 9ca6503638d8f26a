"""armgen as a package: the wheel carries its data (boards, templates, modules, samples) and works
installed non-editable outside the checkout; the editable install finds the same data in the checkout.

The wheel is installed with ``pip install --no-deps`` into a fresh venv that sees this interpreter's
site-packages through a ``.pth`` file (torch, ExecuTorch ... are not installed again). Only
site-packages is shared, never the checkout: the commands run from a temporary directory.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

import armgen.paths as paths

REPO = Path(__file__).resolve().parents[2]
DATA = ("boards", "templates", "modules", "samples")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # From a copy of the files git tracks: setuptools reuses the checkout's (git-ignored) build/lib, where the
    # templates an older checkout had (e.g. src/app/ before it became yours) would ride along into the wheel.
    source = tmp_path_factory.mktemp("wheel-source")
    tracked = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], check=True, capture_output=True).stdout
    for rel in filter(None, tracked.decode().split("\0")):
        if (REPO / rel).is_file():
            (source / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, source / rel)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(source)],
                   check=True, capture_output=True, text=True, timeout=600)
    (whl,) = out.glob("armgen-*.whl")
    return whl


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """bin/ of a fresh venv with the wheel installed (non-editable)."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    purelib = Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                  check=True, capture_output=True, text=True).stdout.strip())
    (purelib / "armgen-test-deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", str(wheel)],
                   check=True, capture_output=True, text=True, timeout=600)
    return venv / "bin"


def _run(bindir: Path, *args: str, cwd: Path, timeout: float = 1800) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([str(bindir / "armgen"), *args], cwd=cwd, capture_output=True, text=True, env=env,
                          timeout=timeout)


@pytest.mark.slow
def test_wheel_holds_every_data_file(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder in DATA:
        files = [p for p in (REPO / folder).rglob("*") if p.is_file() and "__pycache__" not in p.parts]
        missing = [p.relative_to(REPO).as_posix() for p in files
                   if f"armgen/data/{folder}/{p.relative_to(REPO / folder).as_posix()}" not in names]
        assert not missing, f"not in the wheel: {missing}"
    assert "armgen/firmware/size/size_report.schema.json" in names  # package data of armgen.firmware.size


def test_editable_install_finds_the_checkouts_folders():
    for folder in DATA:
        assert paths.data_dir(folder) == REPO / folder


@pytest.mark.slow
def test_installed_wheel_runs_outside_the_checkout(installed, tmp_path):
    where = subprocess.run([str(installed / "python"), "-c", "import armgen.paths as p; print(p.BOARDS_DIR)"],
                           cwd=tmp_path, capture_output=True, text=True, check=True).stdout.strip()
    assert not Path(where).is_relative_to(REPO) and Path(where, "qemu_mps3_an547.yaml").is_file()
    r = _run(installed, "boards", cwd=tmp_path)
    assert r.returncode == 0 and "qemu_mps3_an547" in r.stdout
    r = _run(installed, "new", "kws", "--board", "qemu_mps3_an547", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (tmp_path / "kws" / "armgen.toml").is_file() and (tmp_path / "kws" / "CMakeLists.txt").is_file()


@pytest.mark.workspace
@pytest.mark.needs_workspace
@pytest.mark.slow
def test_installed_wheel_builds_and_runs(installed, tmp_path):
    r = _run(installed, "new", "kws", "--board", "qemu_mps3_an547", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    r = _run(installed, "build", "kws", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    r = _run(installed, "run", "kws", cwd=tmp_path)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    assert "PASS: max difference 0 (0 LSB" in r.stdout
    shutil.rmtree(tmp_path / "kws" / "build", ignore_errors=True)

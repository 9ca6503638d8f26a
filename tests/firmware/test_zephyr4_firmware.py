"""Zephyr 4.x firmware for real: `armgen new/build/size/run` against a workspace holding a Zephyr 4.x tree.

Which tree: the workspace of release 4.1 (``armgen workspace init --zephyr --zephyr-release 4.1``, found
per release: ``$ARMGEN_WORKSPACE_ZEPHYR_4_1``, ``$ARMGEN_WORKSPACE``, ``~/.local/share/armgen/workspace-zephyr-4.1``).
On this site that is not Zephyr v4.1.0 but a snapshot of upstream main of 2025-06-18 (VERSION 4.1.99,
kartben/zephyr-no-history 9a57e98e, mirrored with stand-ins by the site's ``site-mirrors`` tool), with
its own cmsis_6 pin (Zephyr's fork, 6dd50439), hal_ethos_u at armgen's pin (03567073, not the snapshot's
50ddffca) and hal_stm32 at the site mirror's commit of 4.4's pin (610e32fb minus 38 blobs; its hash is made by ``site-mirrors``). Where it
differs from v4.1.0 (tests/data/zephyr_facts.yaml ``releases.v4.1.0``, checked by test_zephyr_facts.py):

* it builds Cortex-M with cmsis_6; v4.1.0 builds it with ``cmsis`` (CMSIS 5.9.0; CMSIS_6 became required in
  4.2), and the snapshot's cmsis_6 and hal_stm32 pins were committed after v4.1.0;
* it has ``mps4/corstone320/fvp``; v4.1.0 does not (the mps4 board is new in 4.2.0), so the corstone_320
  project is written with ``ARMGEN_ZEPHYR_TREE_OF_ANOTHER_RELEASE=1`` after `armgen new` refused it without;
* the other boards built here (``mps3/corstone300/an547``, ``mps3/corstone300/fvp``, ``stm32f4_disco``,
  ``nucleo_h743zi``) have the same target names in v4.1.0 as far as established (corstone300/fvp: not
  established); the Ethos-U Kconfig is v4.1.0's spelling (``ARM_ETHOS_U``, no ``ETHOS_U_DCACHE``).

The test of 4.4 output builds a Zephyr 4.4 application against this tree through the explicit override
``ARMGEN_ZEPHYR_TREE_OF_ANOTHER_RELEASE=1`` and checks that the build says "built against a tree of another
release".

Without such a workspace every build test here skips with the reason. Build directories are shared as in
``test_zephyr_firmware.py``: the an547 directory is built clean once (kws), then ``armgen new --force``
puts ad and the 4.4 kws into it and west rebuilds what changed. The STM32 MLP tests (Cortex-M4
stm32f4_disco, Cortex-M7 nucleo_h743zi) each build in their own directory: another board and CPU share
no object, and west rebuilds from scratch for another board anyway.
"""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from pathlib import Path

import pytest

from _programs import armgen
from armgen.workspace import OTHER_RELEASE_ENV, Workspace, find_zephyr_workspace, zephyr_tree_version

ANSI = re.compile(r"\x1b\[[0-9;]*m")
MODELS = Path(__file__).parents[1] / "models"
RELEASE = "4.1"


needs_zephyr4 = pytest.mark.needs_zephyr(release=RELEASE)
WS = find_zephyr_workspace(RELEASE)  # where the needs_zephyr marker found it (tests/_needs.py)


def _ok(result, what: str) -> str:
    out = ANSI.sub("", result.stdout + result.stderr)
    assert result.returncode == 0, f"{what} failed ({result.returncode}):\n{out[-3000:]}"
    return out


def _one_error_line(result) -> str:
    """The `armgen: error:` line of a failed command (exit 2, no traceback)."""
    err = ANSI.sub("", result.stderr)
    assert result.returncode == 2 and "Traceback" not in err, err[-2000:]
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("armgen: error:")]
    assert len(lines) == 1, err
    return lines[0]


def _new(out: Path, model: str, board: str, name: str, release: str = RELEASE,
         env: dict[str, str] | None = None) -> Path:
    _ok(armgen("new", name, "--model", model, "--board", board, "--rtos", "zephyr", "--zephyr-release", release,
               "--out", str(out), "--force", env=env), f"armgen new {model} {board}")
    return out / name


def _size(project: Path, env: dict[str, str] | None = None) -> dict:
    """`armgen size --json` exits 0 on the product image; parts add up; returns the report."""
    r = armgen("size", str(project), "--json", env=env)
    _ok(r, "armgen size")
    data = json.loads(r.stdout)
    assert data["within_budget"] and not data["violations"]
    report = data["report"]
    assert report["elf"].endswith("build/zephyr/zephyr.elf")
    comps = report["components"]
    assert sum(c["flash"] for c in comps.values()) == report["flash"]
    assert sum(c["ram"] for c in comps.values()) == report["ram"]
    record = tomllib.loads((project / "armgen.toml").read_text())
    assert comps["pools"]["ram"] == sum(p["bytes"] for p in record["pools"])
    return report


def _run(project: Path, env: dict[str, str] | None = None) -> dict:
    """`armgen run --json` twice: the Zephyr image ran, 0 LSB, the instruction count repeats exactly."""
    reports = []
    for _ in range(2):
        r = armgen("run", str(project), "--json", env=env)
        _ok(r, "armgen run")
        reports.append(json.loads(r.stdout))
    first, second = reports
    assert first["firmware"] == "zephyr" and first["zephyr_board"] == "mps3/corstone300/an547"
    assert first["passed"] and first["max_lsb_diff"] == 0 and first["alternate_checked"]
    assert len(set(first["ticks_per_run"])) == 1 and first["instructions"] > 0
    assert second["instructions"] == first["instructions"]
    return first


@pytest.fixture(scope="module")
def an547(tmp_path_factory) -> Path:
    """The shared an547 project directory (one west build directory for kws, ad and 4.4's kws)."""
    return tmp_path_factory.mktemp("zephyr4-an547")


@pytest.mark.workspace
@needs_zephyr4
def test_an547_kws_builds_sizes_and_runs_bit_exact(an547):
    project = _new(an547, "kws", "qemu_mps3_an547", "zapp")
    out = _ok(armgen("build", str(project)), "armgen build")
    assert f"the workspace's Zephyr tree is {zephyr_tree_version(Workspace(WS))}" in out  # which tree: said
    config = (project / "build" / "zephyr" / ".config").read_text()
    # Break 1: CMSIS_6 is a Zephyr module (Zephyr's fork), so Kconfig's HAS_CMSIS_CORE is met.
    for line in ("CONFIG_ZEPHYR_CMSIS_6_MODULE=y", "CONFIG_HAS_CMSIS_CORE=y", "CONFIG_PICOLIBC=y",
                 "CONFIG_SPEED_OPTIMIZATIONS=y"):
        assert line in config, line
    report = _size(project)
    # Break 2: Zephyr 4.x's .last_section word (writable, in ROM) is the image's end marker, not data.
    sections = {s["name"]: s for s in report["sections"]}
    assert "CONFIG_LINKER_LAST_SECTION_ID=y" in config and sections[".last_section"]["role"] == "rodata"
    _run(project)


@pytest.mark.workspace
@needs_zephyr4
def test_an547_ad_rebuilds_incrementally_and_runs_bit_exact(an547):
    if not (an547 / "zapp" / "build" / "zephyr" / "zephyr.elf").is_file():
        pytest.skip("needs the kws build of test_an547_kws_builds_sizes_and_runs_bit_exact")
    project = _new(an547, "ad", "qemu_mps3_an547", "zapp")
    _ok(armgen("build", str(project)), "armgen build ad")
    _size(project)
    _run(project)


@pytest.mark.workspace
@needs_zephyr4
def test_zephyr44_output_against_the_41_tree_only_when_asked(an547):
    """A 4.4 application on the 4.1 tree: refused in one line without the override; with it, built and
    run, and the build says "built against a tree of another release"."""
    if not (an547 / "zapp" / "build" / "zephyr" / "zephyr.elf").is_file():
        pytest.skip("needs the kws build of test_an547_kws_builds_sizes_and_runs_bit_exact")
    project = _new(an547, "kws", "qemu_mps3_an547", "zapp", release="4.4")
    env = {"ARMGEN_WORKSPACE_ZEPHYR_4_4": str(WS)}
    line = _one_error_line(armgen("build", str(project), env=env))
    assert line == f"armgen: error: the workspace {WS} has Zephyr 4.1, the project is for Zephyr 4.4"
    env[OTHER_RELEASE_ENV] = "1"
    out = _ok(armgen("build", str(project), env=env), "armgen build 4.4 on the 4.1 tree")
    assert "built against a tree of another release: the project is for Zephyr 4.4" in out
    _size(project, env)
    _run(project, env)


def _npu_symbols(elf: Path) -> tuple[set[str], set[str]]:
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection

    with elf.open("rb") as fh:
        symtab = ELFFile(fh).get_section_by_name(".symtab")
        assert isinstance(symtab, SymbolTableSection)  # a linked image has one (for mypy)
        names = {s.name for s in symtab.iter_symbols()}
    return {n for n in names if "EthosUBackend" in n}, {n for n in names if n.startswith("ethosu_")}


@pytest.mark.workspace
@needs_zephyr4
@pytest.mark.parametrize("board", ["corstone_300", "corstone_320"])
def test_corstone_kws_links_with_delegate_and_driver(tmp_path, board):
    """Ethos-U55-128 (Corstone-300) and Ethos-U85-256 (Corstone-320, Cortex-M85 on Debian's GCC 12)
    kws: configure without fetching (break 3), compile, link, size exit 0, delegate and driver linked.

    Zephyr v4.1.0 has no mps4/corstone320/fvp (the mps4 board is new in 4.2.0): `armgen new` refuses it
    for 4.1 in one line, and writes it for the 4.1.99 snapshot only with the explicit override."""
    env = None
    if board == "corstone_320":
        line = _one_error_line(armgen("new", "npu", "--model", "kws", "--board", board, "--rtos", "zephyr",
                                      "--zephyr-release", RELEASE, "--out", str(tmp_path)))
        assert line.startswith("armgen: error: board 'corstone_320' is not in Zephyr v4.1.0: the mps4 board"), line
        env = {OTHER_RELEASE_ENV: "1"}
    project = _new(tmp_path, "kws", board, "npu", env=env)
    out = _ok(armgen("build", str(project)), f"armgen build {board}")
    build = project / "build"
    config = (build / "zephyr" / ".config").read_text()
    assert "CONFIG_ARM_ETHOS_U=y" in config
    cache = (build / "CMakeCache.txt").read_text()
    assert "FETCH_ETHOS_U_CONTENT:BOOL=OFF" in cache and "Fetching Ethos-U content" not in out
    assert (build / "ethos-u-sdk" / "core_software" / "core_driver" / "include" / "ethosu_driver.h").is_file()
    if board == "corstone_320":  # break 4: Zephyr asks for -mcpu=cortex-m85, armgen's wrapper compiles M55
        assert "CONFIG_CPU_CORTEX_M85=y" in config
        assert (project / ".armgen-toolchain" / "bin" / "arm-none-eabi-gcc").is_file()
    report = _size(project)  # break 5 for corstone_320: the vector table in ITCM is where the board says
    delegate, driver = _npu_symbols(build / "zephyr" / "zephyr.elf")
    assert delegate and len(driver) > 10, (delegate, sorted(driver))
    assert report["components"]["ethos_u_delegate"]["flash"] > 0 and report["components"]["ethos_u_driver"]["flash"] > 0


@pytest.mark.workspace
@needs_zephyr4
def test_stm32f4_disco_mlp_links(tmp_path):
    project = _new(tmp_path, str(MODELS / "mlp.py"), "stm32f4_disco", "mlp")
    _ok(armgen("build", str(project)), "armgen build stm32f4_disco")
    config = (project / "build" / "zephyr" / ".config").read_text()
    assert "CONFIG_SOC_STM32F407XG=y" in config and "CONFIG_HAS_STM32CUBE=y" in config
    _size(project)


@pytest.mark.workspace
@needs_zephyr4
def test_nucleo_h743zi_mlp_links(tmp_path):
    """Cortex-M7 (STM32H743) MLP links and sizes; the overlay disables the Ethernet MAC the board enables,
    so Zephyr reserves no 16 KiB Ethernet DMA section (eth_stm32) in SRAM3, a region armgen leaves unused."""
    project = _new(tmp_path, str(MODELS / "mlp.py"), "nucleo_h743zi", "mlp")
    _ok(armgen("build", str(project)), "armgen build nucleo_h743zi")
    config = (project / "build" / "zephyr" / ".config").read_text()
    for line in ("CONFIG_SOC_STM32H743XX=y", "CONFIG_CPU_CORTEX_M7=y", "CONFIG_HAS_STM32CUBE=y", "CONFIG_DCACHE=y"):
        assert line in config, line
    report = _size(project)
    assert "eth_stm32" not in {s["name"] for s in report["sections"]}


# ---- bad input -----------------------------------------------------------------------------------
def test_board_missing_in_41_is_one_line(tmp_path):
    r = armgen("new", "kws", "--board", "alif_e8", "--rtos", "zephyr", "--zephyr-release", "4.1", "--out",
               str(tmp_path))
    assert _one_error_line(r) == ("armgen: error: board 'alif_e8_hp' is not in Zephyr 4.1 "
                                  "(Zephyr releases that have it: 4.4)")
    assert not (tmp_path / "kws").exists()


@pytest.mark.workspace
@needs_zephyr4
def test_configure_that_would_fetch_the_ethos_u_sdk_stops_in_one_line(tmp_path):
    """A workspace whose hal_ethos_u lacks the driver: configure stops before ExecuTorch could clone the
    Ethos-U SDK (exit 2, one line), nothing fetched."""
    ws = tmp_path / "ws"
    for rel in (".west", ".armgen", "armgen-manifest", "zephyr", "modules/lib", "modules/hal/cmsis_6"):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).symlink_to(WS / rel)
    (ws / "modules" / "hal" / "ethos_u").mkdir()  # present, but no driver in it
    project = _new(tmp_path, "kws", "corstone_300", "npu")
    line = _one_error_line(armgen("build", str(project), "--workspace", str(ws)))
    assert "configure failed" in line and "rather than let ExecuTorch fetch the Ethos-U SDK" in line, line
    assert not (project / "build" / "ethos-u-sdk" / "core_platform" / ".git").exists()
    shutil.rmtree(ws)

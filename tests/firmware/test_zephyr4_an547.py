"""Zephyr 4.x on QEMU for real: kws and ad on ``qemu_mps3_an547`` (`armgen new/build/size/run`), and the 4.4
output built against the 4.1 tree only through the explicit override. Which tree and where it differs from
v4.1.0: tests/_zephyr4.py.

The test of 4.4 output builds a Zephyr 4.4 application against this tree through the explicit override
``ARMGEN_ZEPHYR_TREE_OF_ANOTHER_RELEASE=1`` and checks that the build says "built against a tree of another
release".

Without such a workspace every build test here skips with the reason. Build directories are shared as in
``test_zephyr_firmware.py``: the an547 directory is built clean once (kws), then ``armgen new --force``
puts ad and the 4.4 kws into it and west rebuilds what changed. The other 4.x boards (Corstone, STM32) are in
test_zephyr4_boards.py, a file of their own so that the two test workers share the Zephyr 4.x work.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _programs import armgen, ok, one_error_line
from _zephyr4 import WS, needs_zephyr4, new, program_pte, size
from armgen.workspace import OTHER_RELEASE_ENV, Workspace, zephyr_tree_version


def _run(project: Path, env: dict[str, str] | None = None) -> dict:
    """`armgen run --json` (two QEMU runs of the same input, its default ``--repeat 2``): the Zephyr image ran,
    0 LSB, the instruction count repeats exactly from one QEMU run to the next."""
    r = armgen("run", str(project), "--json", env=env)
    ok(r, "armgen run")
    report = json.loads(r.stdout)
    assert report["firmware"] == "zephyr" and report["zephyr_board"] == "mps3/corstone300/an547"
    assert report["passed"] and report["max_lsb_diff"] == 0 and report["alternate_checked"]
    ticks = report["ticks_per_run"]
    assert len(ticks) == 2 and len(set(ticks)) == 1 and report["instructions"] > 0
    return report


@pytest.fixture(scope="module")
def an547(tmp_path_factory) -> Path:
    """The shared an547 project directory (one west build directory for kws, ad and 4.4's kws)."""
    return tmp_path_factory.mktemp("zephyr4-an547")


@pytest.mark.workspace
@needs_zephyr4
def test_an547_kws_builds_sizes_and_runs_bit_exact(an547):
    project = new(an547, program_pte("kws", "cortex-m55"), "qemu_mps3_an547", "zapp")
    out = ok(armgen("build", str(project)), "armgen build")
    assert f"the workspace's Zephyr tree is {zephyr_tree_version(Workspace(WS))}" in out  # which tree: said
    config = (project / "build" / "zephyr" / ".config").read_text()
    # Break 1: CMSIS_6 is a Zephyr module (Zephyr's fork), so Kconfig's HAS_CMSIS_CORE is met.
    for line in ("CONFIG_ZEPHYR_CMSIS_6_MODULE=y", "CONFIG_HAS_CMSIS_CORE=y", "CONFIG_PICOLIBC=y",
                 "CONFIG_SPEED_OPTIMIZATIONS=y"):
        assert line in config, line
    report = size(project)
    # Break 2: Zephyr 4.x's .last_section word (writable, in ROM) is the image's end marker, not data.
    sections = {s["name"]: s for s in report["sections"]}
    assert "CONFIG_LINKER_LAST_SECTION_ID=y" in config and sections[".last_section"]["role"] == "rodata"
    _run(project)


@pytest.mark.workspace
@needs_zephyr4
def test_an547_ad_rebuilds_incrementally_and_runs_bit_exact(an547):
    if not (an547 / "zapp" / "build" / "zephyr" / "zephyr.elf").is_file():
        pytest.skip("needs the kws build of test_an547_kws_builds_sizes_and_runs_bit_exact")
    project = new(an547, program_pte("ad", "cortex-m55"), "qemu_mps3_an547", "zapp")
    ok(armgen("build", str(project)), "armgen build ad")
    size(project)
    _run(project)


@pytest.mark.workspace
@needs_zephyr4
def test_zephyr44_output_against_the_41_tree_only_when_asked(an547):
    """A 4.4 application on the 4.1 tree: refused in one line without the override; with it, built and
    run, and the build says "built against a tree of another release"."""
    if not (an547 / "zapp" / "build" / "zephyr" / "zephyr.elf").is_file():
        pytest.skip("needs the kws build of test_an547_kws_builds_sizes_and_runs_bit_exact")
    project = new(an547, program_pte("kws", "cortex-m55"), "qemu_mps3_an547", "zapp", release="4.4")
    env = {"ARMGEN_WORKSPACE_ZEPHYR_4_4": str(WS)}
    line = one_error_line(armgen("build", str(project), env=env))
    assert line == f"armgen: error: the workspace {WS} has Zephyr 4.1, the project is for Zephyr 4.4"
    env[OTHER_RELEASE_ENV] = "1"
    out = ok(armgen("build", str(project), env=env), "armgen build 4.4 on the 4.1 tree")
    assert "built against a tree of another release: the project is for Zephyr 4.4" in out
    size(project, env)
    _run(project, env)


# ---- bad input -----------------------------------------------------------------------------------
def test_board_missing_in_41_is_one_line(tmp_path):
    r = armgen("new", "kws", "--board", "alif_e8", "--rtos", "zephyr", "--zephyr-release", "4.1", "--out",
               str(tmp_path))
    assert one_error_line(r) == ("armgen: error: board 'alif_e8_hp' is not in Zephyr 4.1 "
                                 "(Zephyr releases that have it: 4.4)")
    assert not (tmp_path / "kws").exists()

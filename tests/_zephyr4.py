"""Shared by the Zephyr 4.x firmware tests (tests/firmware/test_zephyr4_an547.py, test_zephyr4_boards.py): which
tree they build against, and the CLI steps with their checks. Not a test module (leading underscore).

Which tree: the workspace of release 4.1 (``armgen workspace init --zephyr --zephyr-release 4.1``, found
per release: ``$ARMGEN_WORKSPACE_ZEPHYR_4_1``, ``$ARMGEN_WORKSPACE``, ``~/.local/share/armgen/workspace-zephyr-4.1``).
On this site that is not Zephyr v4.1.0 but a snapshot of upstream main of 2025-06-18 (VERSION 4.1.99,
kartben/zephyr-no-history 9a57e98e, mirrored with stand-ins by the site's ``site-mirrors`` tool), with
its own cmsis_6 pin (Zephyr's fork, 6dd50439), hal_ethos_u at armgen's pin (03567073, not the snapshot's
50ddffca) and hal_stm32 at the site mirror's commit of 4.4's pin (610e32fb minus 38 blobs; its hash is made by
``site-mirrors``). Where it differs from v4.1.0 (tests/data/zephyr_facts.yaml ``releases.v4.1.0``, checked by
test_zephyr_facts.py):

* it builds Cortex-M with cmsis_6; v4.1.0 builds it with ``cmsis`` (CMSIS 5.9.0; CMSIS_6 became required in
  4.2), and the snapshot's cmsis_6 and hal_stm32 pins were committed after v4.1.0;
* it has ``mps4/corstone320/fvp``; v4.1.0 does not (the mps4 board is new in 4.2.0), so the corstone_320
  project is written with ``ARMGEN_ZEPHYR_TREE_OF_ANOTHER_RELEASE=1`` after `armgen new` refused it without;
* the other boards built here (``mps3/corstone300/an547``, ``mps3/corstone300/fvp``, ``stm32f4_disco``,
  ``nucleo_h743zi``) have the same target names in v4.1.0 as far as established (corstone300/fvp: not
  established); the Ethos-U Kconfig is v4.1.0's spelling (``ARM_ETHOS_U``, no ``ETHOS_U_DCACHE``).

The programs: the session's compile cache (tests/_programs.py, the same compile stage as ``armgen new kws``,
with the same trained weights) compiles each (sample, target) once per test run, and ``armgen new --model
<cached .pte>`` writes the project from it; the Zephyr 3.7 tests (test_zephyr_firmware.py) and the bare-metal
ones run ``armgen new kws`` end to end.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from _programs import armgen, compile_result, ok
from armgen.workspace import find_zephyr_workspace

MODELS = Path(__file__).parent / "models"
RELEASE = "4.1"

needs_zephyr4 = pytest.mark.needs_zephyr(release=RELEASE)
WS = find_zephyr_workspace(RELEASE)  # where the needs_zephyr marker found it (tests/_needs.py)


def program_pte(sample: str, target: str, board: str | None = None) -> str:
    """The ``.pte`` of a built-in sample compiled for ``target`` (Ethos-U: with ``board``'s NPU settings), once
    per test run; its report sits beside it, as ``armgen new --model x.pte`` wants."""
    return str(compile_result(sample, target, board).pte_path)


def new(out: Path, model: str, board: str, name: str, release: str = RELEASE,
        env: dict[str, str] | None = None) -> Path:
    """`armgen new NAME --model MODEL --board BOARD --rtos zephyr --zephyr-release RELEASE --force` into ``out``."""
    ok(armgen("new", name, "--model", model, "--board", board, "--rtos", "zephyr", "--zephyr-release", release,
              "--out", str(out), "--force", env=env), f"armgen new {model} {board}")
    return out / name


def size(project: Path, env: dict[str, str] | None = None) -> dict:
    """`armgen size --json` exits 0 on the product image; parts add up; returns the report."""
    r = armgen("size", str(project), "--json", env=env)
    ok(r, "armgen size")
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

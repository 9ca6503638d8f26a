"""Zephyr 4.x on the real boards for real: Corstone-300 (Ethos-U55-128) and Corstone-320 (Ethos-U85-256) kws,
the STM32F4 (Cortex-M4) and STM32H7 (Cortex-M7) MLP: `armgen new/build/size` against the 4.1 tree (which tree
and where it differs from v4.1.0: tests/_zephyr4.py), and a configure that would fetch stopping in one line.

Each board builds in its own directory: another board and CPU share no object with the an547 builds of
test_zephyr4_an547.py, and west rebuilds from scratch for another board anyway (ccache still serves the
objects another board compiled identically).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from _programs import armgen, ok, one_error_line
from _zephyr4 import MODELS, RELEASE, WS, needs_zephyr4, new, program_pte, size
from armgen.workspace import OTHER_RELEASE_ENV

#: The Ethos-U target of each Corstone board's NPU (boards/*.yaml npu.vela_accelerator).
NPU_TARGET = {"corstone_300": "ethos-u55-128", "corstone_320": "ethos-u85-256"}


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
        line = one_error_line(armgen("new", "npu", "--model", "kws", "--board", board, "--rtos", "zephyr",
                                     "--zephyr-release", RELEASE, "--out", str(tmp_path)))
        assert line.startswith("armgen: error: board 'corstone_320' is not in Zephyr v4.1.0: the mps4 board"), line
        env = {OTHER_RELEASE_ENV: "1"}
    project = new(tmp_path, program_pte("kws", NPU_TARGET[board], board), board, "npu", env=env)
    out = ok(armgen("build", str(project)), f"armgen build {board}")
    build = project / "build"
    config = (build / "zephyr" / ".config").read_text()
    assert "CONFIG_ARM_ETHOS_U=y" in config
    cache = (build / "CMakeCache.txt").read_text()
    assert "FETCH_ETHOS_U_CONTENT:BOOL=OFF" in cache and "Fetching Ethos-U content" not in out
    assert (build / "ethos-u-sdk" / "core_software" / "core_driver" / "include" / "ethosu_driver.h").is_file()
    if board == "corstone_320":  # break 4: Zephyr asks for -mcpu=cortex-m85, armgen's wrapper compiles M55
        assert "CONFIG_CPU_CORTEX_M85=y" in config
        assert (project / ".armgen-toolchain" / "bin" / "arm-none-eabi-gcc").is_file()
    report = size(project)  # break 5 for corstone_320: the vector table in ITCM is where the board says
    delegate, driver = _npu_symbols(build / "zephyr" / "zephyr.elf")
    assert delegate and len(driver) > 10, (delegate, sorted(driver))
    assert report["components"]["ethos_u_delegate"]["flash"] > 0 and report["components"]["ethos_u_driver"]["flash"] > 0


@pytest.mark.workspace
@needs_zephyr4
def test_stm32f4_disco_mlp_links(tmp_path):
    project = new(tmp_path, str(MODELS / "mlp.py"), "stm32f4_disco", "mlp")
    ok(armgen("build", str(project)), "armgen build stm32f4_disco")
    config = (project / "build" / "zephyr" / ".config").read_text()
    assert "CONFIG_SOC_STM32F407XG=y" in config and "CONFIG_HAS_STM32CUBE=y" in config
    size(project)


@pytest.mark.workspace
@needs_zephyr4
def test_nucleo_h743zi_mlp_links(tmp_path):
    """Cortex-M7 (STM32H743) MLP links and sizes; the overlay disables the Ethernet MAC the board enables,
    so Zephyr reserves no 16 KiB Ethernet DMA section (eth_stm32) in SRAM3, a region armgen leaves unused."""
    project = new(tmp_path, str(MODELS / "mlp.py"), "nucleo_h743zi", "mlp")
    ok(armgen("build", str(project)), "armgen build nucleo_h743zi")
    config = (project / "build" / "zephyr" / ".config").read_text()
    for line in ("CONFIG_SOC_STM32H743XX=y", "CONFIG_CPU_CORTEX_M7=y", "CONFIG_HAS_STM32CUBE=y", "CONFIG_DCACHE=y"):
        assert line in config, line
    report = size(project)
    assert "eth_stm32" not in {s["name"] for s in report["sections"]}


# ---- bad input -----------------------------------------------------------------------------------
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
    project = new(tmp_path, program_pte("kws", NPU_TARGET["corstone_300"], "corstone_300"), "corstone_300", "npu")
    line = one_error_line(armgen("build", str(project), "--workspace", str(ws)))
    assert "configure failed" in line and "rather than let ExecuTorch fetch the Ethos-U SDK" in line, line
    assert not (project / "build" / "ethos-u-sdk" / "core_platform" / ".git").exists()
    shutil.rmtree(ws)

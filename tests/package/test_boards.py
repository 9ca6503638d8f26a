"""Boards as data: every built-in board loads, key facts match the reference, bad input fails cleanly.

Facts checked here come from shared/reference/boards.md (Zephyr DTS, ExecuTorch board files, QEMU
memory maps tested with `info mtree -f`). Vela and ExecuTorch are the installed ones, not mocks.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from _narrow import present
from armgen.boards import (
    Board,
    board_aliases,
    board_from_data,
    list_boards,
    load_board,
    parse_size,
)
from armgen.cli import main
from armgen.errors import BoardError
from armgen.paths import BOARDS_DIR

KiB = 1024
MiB = 1024 * 1024

EXPECTED_BOARDS = {
    "alif_e8_he",
    "alif_e8_hp",
    "corstone_320",
    "corstone_300",
    "stm32f4_disco",
    "nucleo_f767zi",
    "nucleo_h743zi",
    "qemu_mps3_an547",
    "qemu_mps2_an386",
    "qemu_mps2_an500",
    "qemu_mps2_an385",
    "qemu_netduinoplus2",
}


def run_cli(*args: str):
    """Run `armgen ARGS` in-process; returns click's Result (exit_code, stdout, stderr)."""
    return CliRunner().invoke(main, list(args))


def copy_board(tmp_path: Path, name: str, new_name: str = "my_board") -> Path:
    """Copy a built-in board file into tmp_path, as a user would, and return the copy's path."""
    dst = tmp_path / f"{new_name}.yaml"
    shutil.copyfile(BOARDS_DIR / f"{name}.yaml", dst)
    return dst


def edit(path: Path, old: str, new: str) -> None:
    """Replace one exact piece of text in a board file (fails loudly when it is not there once)."""
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times in {path}"
    path.write_text(text.replace(old, new))


# ----------------------------------------------------------------------------- all boards


def test_builtin_boards_are_the_shipped_set():
    assert set(list_boards()) == EXPECTED_BOARDS
    assert board_aliases() == {"alif_e8": "alif_e8_hp"}


@pytest.mark.parametrize("name", sorted(EXPECTED_BOARDS))
def test_every_board_loads_and_is_consistent(name):
    b = load_board(name)
    assert isinstance(b, Board) and b.name == name
    assert b.source.endswith(f"{name}.yaml")
    # regions sorted by base, no overlap, reserved within size
    assert list(b.regions) == sorted(b.regions, key=lambda r: r.base)
    for a, c in zip(b.regions, b.regions[1:], strict=False):
        assert a.base + a.size <= c.base
    assert all(0 <= r.reserved <= r.size for r in b.regions)
    # budgets are stated in the file with their reason, within what the regions offer, and exclude
    # external memory (a budget that counts a DDR window cannot be exceeded)
    flash = sum(r.usable for r in b.regions if not r.volatile and r.uses & {"code", "rodata", "model"})
    ram = sum(r.usable for r in b.regions if r.volatile and r.uses & {"data", "pools", "stack"})
    assert 0 < b.budgets.flash <= flash and 0 < b.budgets.ram <= ram
    assert b.budgets.reason
    on_chip = sum(r.usable for r in b.regions if r.volatile and r.kind != "ddr" and r.uses & {"data", "pools", "stack"})
    assert b.budgets.ram <= on_chip, (b.budgets.ram, on_chip)
    # every board has a QEMU stand-in that is itself a QEMU board
    assert b.emulator is not None
    stand_in = load_board(present(b.emulator).board)
    assert stand_in.emulator is not None and present(stand_in.emulator).board == stand_in.name
    assert (present(b.emulator).qemu_machine, present(b.emulator).qemu_cpu) == (
        present(stand_in.emulator).qemu_machine,
        present(stand_in.emulator).qemu_cpu,
    )
    # QEMU boards print through semihosting (netduinoplus2: its STM32 USART, exit by semihosting),
    # real boards through a UART
    if name.startswith("qemu_"):
        assert present(b.emulator).board == name and b.baremetal.exit == "semihosting"
        assert b.baremetal.console == ("uart" if name == "qemu_netduinoplus2" else "semihosting")
    else:
        assert present(b.emulator).board != name and b.baremetal.console == "uart"
        assert b.baremetal.uart_base is not None
    # the vector table sits in a code region
    assert any("code" in r.uses and r.base <= b.baremetal.vector_table < r.base + r.size for r in b.regions)


@pytest.mark.parametrize("name", sorted(EXPECTED_BOARDS))
def test_executorch_accepts_the_target_string(name):
    from executorch.backends.cortex_m.target_config import CortexMTargetConfig

    b = load_board(name)
    cfg = CortexMTargetConfig.from_target_string(b.cpu.et_target)
    assert cfg.target_string == b.cpu.et_target
    expected_backend = {"none": "DSP" if b.cpu.dsp else "SCALAR", "int": "MVE", "float": "MVE"}[b.cpu.mve]
    assert cfg.backend.name == expected_backend


@pytest.mark.parametrize("name", sorted(n for n in EXPECTED_BOARDS if load_board(n).npu))
def test_vela_builds_architecture_features_for_each_npu_board(name, capsys):
    from ethosu.vela.architecture_features import CONFIG_FILES_PATH, ArchitectureFeatures

    npu = present(load_board(name).npu)
    arch = ArchitectureFeatures(
        vela_config_files=[npu.vela_config_file or f"{CONFIG_FILES_PATH}/Arm/vela.ini"],
        accelerator_config=npu.vela_accelerator,
        system_config=npu.vela_system_config,
        memory_mode=npu.vela_memory_mode,
        max_blockdep=ArchitectureFeatures.MAX_BLOCKDEP,
        verbose_config=False,
        arena_cache_size=None,
    )
    assert arch.accelerator_config.value == npu.vela_accelerator
    assert arch.core_clock > 1  # the system config section was really read
    assert npu.vela_accelerator == f"{npu.type}-{npu.macs}"


def _gcc_flag_sets():
    seen: dict[tuple[str, str | None, str], str] = {}
    for n in sorted(EXPECTED_BOARDS):
        c = load_board(n).cpu
        seen.setdefault((c.gcc_mcpu, c.gcc_mfpu, c.gcc_float_abi), n)
    return sorted(seen.items())


@pytest.mark.needs_gcc
@pytest.mark.parametrize("flags,name", _gcc_flag_sets(), ids=lambda v: v if isinstance(v, str) else None)
def test_arm_none_eabi_gcc_accepts_the_board_flags(flags, name, tmp_path):
    gcc = present(shutil.which("arm-none-eabi-gcc"))
    mcpu, mfpu, abi = flags
    src = tmp_path / "t.c"
    src.write_text("float f(float a, float b) { return a * b + 1.0f; }\n")
    cmd = [gcc, f"-mcpu={mcpu}", f"-mfloat-abi={abi}", "-mthumb", "-O2", "-c", str(src), "-o", str(tmp_path / "t.o")]
    if mfpu:
        cmd.insert(2, f"-mfpu={mfpu}")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.needs_qemu
def test_qemu_knows_every_machine_and_cpu():
    qemu = present(shutil.which("qemu-system-arm"))
    machines = subprocess.run([qemu, "-machine", "help"], capture_output=True, text=True, check=True).stdout
    cpus = subprocess.run([qemu, "-cpu", "help"], capture_output=True, text=True, check=True).stdout
    for n in sorted(EXPECTED_BOARDS):
        e = present(load_board(n).emulator)
        assert f"\n{e.qemu_machine} " in machines, e.qemu_machine
        assert e.qemu_cpu in cpus.split(), e.qemu_cpu


# ----------------------------------------------------------------------------- key facts


def test_alif_e8_facts():
    he, hp = load_board("alif_e8_he"), load_board("alif_e8_hp")
    assert load_board("alif_e8") == hp  # alias
    dtcm = he.region("DTCM")
    assert (dtcm.base, dtcm.size, dtcm.kind, dtcm.npu_address) == (0x20000000, 256 * KiB, "dtcm", 0x58800000)
    dtcm = hp.region("DTCM")
    assert (dtcm.base, dtcm.size, dtcm.npu_address) == (0x20000000, 1 * MiB, 0x50800000)
    for b in (he, hp):
        mram = b.region("MRAM")
        assert (mram.base, mram.size, mram.reserved, mram.kind) == (0x80000000, 5632 * KiB, 0x8000, "mram")
        assert mram.npu_address == 0x80000000 and {"code", "model"} <= mram.uses
        assert b.budgets.flash == 5632 * KiB - 0x8000
        assert b.region("SRAM0").npu_address == 0x02000000 and b.region("SRAM1").base == 0x02400000
        assert present(b.zephyr).flash_load_offset == 0x8000 and present(b.zephyr).releases == ("4.4",)
        assert b.baremetal.vector_table == 0x80008000
        assert present(b.emulator).board == "qemu_mps3_an547"
    assert he.cpu.clock_hz == 160_000_000 and hp.cpu.clock_hz == 400_000_000
    assert present(he.npu).vela_accelerator == "ethos-u55-128" and present(hp.npu).vela_accelerator == "ethos-u55-256"
    assert present(hp.zephyr).target("4.4") == "ensemble_e8_dk/ae822fa0e5597ls0/rtss_hp"
    with pytest.raises(BoardError, match=r"Zephyr 3.7 has no target for this board \(releases that have it: 4.4\)"):
        present(hp.zephyr).target("3.7")
    assert present(hp.zephyr).vendor_target == "alif_e8_dk/ae822fa0e5597xx0/rtss_hp"
    assert present(he.zephyr).console == "uart2" and present(hp.zephyr).console == "uart4"


def test_corstone_facts():
    c300 = load_board("corstone_300")
    assert c300.region("DTCM").npu_address is None  # the NPU cannot reach DTCM
    assert c300.region("ISRAM").npu_address == 0x31000000 and "pools" in c300.region("ISRAM").uses
    assert present(c300.npu).vela_accelerator == "ethos-u55-128"
    c320 = load_board("corstone_320")
    assert c320.cpu.et_target == "cortex-m85" and c320.cpu.gcc_mcpu == "cortex-m55"
    assert present(c320.npu).vela_accelerator == "ethos-u85-256"
    assert present(c320.emulator).board == "qemu_mps3_an547" and present(c320.emulator).qemu_cpu == "cortex-m55"
    assert "Cortex-M55" in present(present(c320.emulator).note)
    assert dict(present(c320.zephyr).targets) == {"4.4": "mps4/corstone320/fvp", "4.1": "mps4/corstone320/fvp"}
    # Zephyr 4.x's mps4 relocates the vector table into ITCM (ROMSTART_RELOCATION_ROM); bare metal keeps it in BROM
    assert c320.region("ITCM").uses == frozenset({"code"}) and c320.baremetal.vector_table == 0x11000000


def test_zephyr_targets_per_release():
    """3.7 names the an547 board mps3/an547, 4.4 mps3/corstone300/an547 (zephyr v3.7.1 and v4.4.0
    boards/arm/mps3); mps2/an386 and an500 are not in 3.7.1 (its boards/arm/mps2 has an385, an521)."""
    an547 = load_board("qemu_mps3_an547")
    assert dict(present(an547.zephyr).targets) == {"3.7": "mps3/an547", "4.1": "mps3/corstone300/an547",
                                          "4.4": "mps3/corstone300/an547"}
    assert present(load_board("qemu_mps2_an386").zephyr).releases == ("4.1", "4.4")
    for name in ("stm32f4_disco", "nucleo_f767zi", "nucleo_h743zi"):
        assert present(load_board(name).zephyr).releases == ("3.7", "4.1", "4.4")


def test_qemu_memory_maps_are_the_tested_layouts():
    an547 = load_board("qemu_mps3_an547")
    got = [(r.name, r.base, r.size) for r in an547.regions]
    assert got == [
        ("ITCM", 0x10000000, 512 * KiB),
        ("DTCM", 0x30000000, 512 * KiB),
        ("ISRAM", 0x31000000, 4 * MiB),
        ("DDR", 0x70000000, 256 * MiB),
    ]
    assert an547.baremetal.vector_table == 0x10000000
    assert present(an547.emulator).qemu_machine == "mps3-an547" and present(an547.emulator).qemu_cpu == "cortex-m55"
    assert an547.budgets.flash == 512 * KiB  # the ITCM code RAM counts as flash
    for name in ("qemu_mps2_an385", "qemu_mps2_an386"):
        b = load_board(name)
        assert [(r.name, r.kind, r.base, r.size) for r in b.regions] == [
            ("CODE", "flash", 0x0, 4 * MiB),
            ("DATA", "sram", 0x20000000, 4 * MiB),
        ]
        assert (b.budgets.flash, b.budgets.ram) == (4 * MiB, 4 * MiB)
    an500 = load_board("qemu_mps2_an500")
    assert [(r.name, r.base, r.size) for r in an500.regions] == [
        ("CODE", 0x0, 4 * MiB),
        ("DATA", 0x20000000, 4 * MiB),
        ("PSRAM", 0x60000000, 16 * MiB),
    ]


def test_cpu_flags():
    def flags(n):
        c = load_board(n).cpu
        return (c.gcc_mcpu, c.gcc_mfpu, c.gcc_float_abi, c.et_target)

    assert flags("qemu_mps3_an547") == ("cortex-m55", None, "hard", "cortex-m55")
    assert flags("stm32f4_disco") == ("cortex-m4", "fpv4-sp-d16", "hard", "cortex-m4")
    assert flags("nucleo_h743zi") == ("cortex-m7", "fpv5-d16", "hard", "cortex-m7")
    assert flags("nucleo_f767zi") == ("cortex-m7", "fpv5-d16", "hard", "cortex-m7")
    assert flags("qemu_mps2_an385") == ("cortex-m3", None, "soft", "cortex-m3")
    stm = load_board("stm32f4_disco")
    assert present(stm.zephyr).hal_modules == ("hal_stm32",)
    assert (stm.budgets.flash, stm.budgets.ram) == (1 * MiB, 192 * KiB)
    an547 = load_board("qemu_mps3_an547")  # DTCM + ISRAM; its 256 MiB DDR window is not a budget
    assert an547.budgets.ram == 4608 * KiB and "DDR" in an547.budgets.reason
    assert present(stm.emulator).board == "qemu_mps2_an386"
    assert present(load_board("nucleo_h743zi").emulator).board == "qemu_mps2_an500"


def test_parse_size():
    assert parse_size("512 KiB") == 512 * KiB
    assert parse_size("5.5 MiB") == 5632 * KiB
    assert parse_size(0x8000) == 0x8000
    with pytest.raises(ValueError):
        parse_size("0.3 B")


def test_board_from_data_reads_a_yaml_string():
    data = yaml.safe_load((BOARDS_DIR / "qemu_mps2_an385.yaml").read_text())
    b = board_from_data(data, name="inline")
    assert b.name == "inline" and present(b.emulator).board == "inline"


# ----------------------------------------------------------------------------- CLI


def test_cli_lists_boards_as_table_and_json():
    res = run_cli("boards")
    assert res.exit_code == 0, res.output
    for name in EXPECTED_BOARDS:
        assert name in res.stdout
    assert "alias alif_e8" in res.stdout
    res = run_cli("boards", "--json")
    assert res.exit_code == 0
    rows = json.loads(res.stdout)
    assert {r["name"] for r in rows} == EXPECTED_BOARDS
    he = next(r for r in rows if r["name"] == "alif_e8_he")
    assert he["npu"] == "ethos-u55-128" and he["flash_bytes"] == 5632 * KiB - 0x8000


def test_cli_show_prints_the_memory_map():
    res = run_cli("boards", "show", "alif_e8")
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "alif_e8_hp" in out and "memory map" in out
    for text in ("MRAM", "0x80000000", "0x50800000", "5.5 MiB", "32 KiB", "ensemble_e8_dk/ae822fa0e5597ls0/rtss_hp"):
        assert text in out, text
    res = run_cli("boards", "show", "corstone_300")
    assert "not reachable" in res.stdout
    res = run_cli("boards", "show", "qemu_mps3_an547", "--json")
    data = json.loads(res.stdout)
    assert data["regions"][0] == {
        "name": "ITCM", "kind": "flash", "base": 0x10000000, "size": 512 * KiB, "reserved": 0,
        "npu_address": None, "uses": ["code", "model", "rodata"], "note": data["regions"][0]["note"],
        "usable": 512 * KiB, "volatile": False,
    }


def test_user_board_copied_and_edited_is_accepted_by_path(tmp_path):
    path = copy_board(tmp_path, "stm32f4_disco", "my_f4")
    edit(path, "description: ST STM32F4DISCOVERY", "description: my custom F4 board")
    edit(path, "    size: 1 MiB\n", "    size: 512 KiB\n")
    edit(path, "  flash: 1 MiB\n", "  flash: 512 KiB\n")
    edit(path, "  clock_hz: 168000000", "  clock_hz: 100000000")
    res = run_cli("boards", "show", str(path), "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["name"] == "my_f4" and data["description"].startswith("my custom F4 board")
    assert data["budgets"]["flash"] == 512 * KiB and data["cpu"]["clock_hz"] == 100_000_000
    assert data["emulator"]["board"] == "qemu_mps2_an386"
    res = run_cli("boards", "show", str(path))
    assert res.exit_code == 0 and "my_f4" in res.stdout and "512 KiB" in res.stdout
    assert load_board(path).budgets.flash == 512 * KiB


def test_user_board_may_bring_its_own_vela_ini(tmp_path):
    from ethosu.vela.architecture_features import CONFIG_FILES_PATH

    ini = (Path(CONFIG_FILES_PATH) / "Arm" / "vela.ini").read_text()
    ini += "\n[System_Config.My_Sys]\ncore_clock=400e6\naxi0_port=Sram\naxi1_port=OffChipFlash\n"
    ini += "Sram_clock_scale=1.0\nOffChipFlash_clock_scale=0.5\n"
    (tmp_path / "my.ini").write_text(ini)
    path = copy_board(tmp_path, "alif_e8_hp", "my_e8")
    edit(path, "vela_system_config: Ethos_U55_High_End_Embedded", "vela_system_config: My_Sys")
    edit(path, "vela_config_file: null", "vela_config_file: my.ini")
    b = load_board(path)
    assert present(b.npu).vela_config_file == str((tmp_path / "my.ini").resolve())
    assert present(b.npu).vela_system_config == "My_Sys"


# ----------------------------------------------------------------------------- bad input


def assert_cli_error(args, *fragments):
    res = run_cli(*args)
    assert res.exit_code == 2, (res.exit_code, res.output)
    assert "Traceback" not in res.output
    err = res.stderr
    assert err.startswith("armgen: error: "), err
    for f in fragments:
        assert f in err, f"{f!r} not in {err!r}"
    return err


def test_unknown_board_suggests_closest_names():
    err = assert_cli_error(["boards", "show", "alif_e9"], "unknown board 'alif_e9'", "did you mean", "alif_e8")
    assert "hint:" in err
    assert_cli_error(["boards", "show", "nucleo_h743"], "did you mean nucleo_h743zi")
    with pytest.raises(BoardError, match="unknown board 'qemu_an547'"):
        load_board("qemu_an547")


def test_missing_board_file():
    assert_cli_error(["boards", "show", "/nonexistent/dir/board.yaml"], "board file not found", "/nonexistent/dir/board.yaml")


def test_missing_field_names_field_and_file(tmp_path):
    path = copy_board(tmp_path, "qemu_mps2_an386")
    edit(path, "  clock_hz: 25000000     # MPS2 sysclk 25 MHz (QEMU mps2.c)\n", "")
    assert_cli_error(["boards", "show", str(path)], str(path), "cpu: missing field 'clock_hz'")


def test_mistyped_field_name_suggests_the_right_one(tmp_path):
    path = copy_board(tmp_path, "qemu_mps2_an386")
    edit(path, "  clock_hz: 25000000", "  clok_hz: 25000000")
    err = assert_cli_error(["boards", "show", str(path)], str(path), "unknown field 'clok_hz'", "did you mean 'clock_hz'")
    assert "missing field 'clock_hz'" in err  # reported as a further problem in the hint


def test_mistyped_field_value(tmp_path):
    path = copy_board(tmp_path, "qemu_mps2_an386")
    edit(path, "  clock_hz: 25000000", "  clock_hz: fast")
    assert_cli_error(["boards", "show", str(path)], str(path), "cpu.clock_hz: expected integer, got str 'fast'")
    path = copy_board(tmp_path, "qemu_mps2_an386", "b2")
    edit(path, "  fpu: single", "  fpu: singel")
    assert_cli_error(["boards", "show", str(path)], "cpu.fpu: 'singel' is not one of: none, single, double", "did you mean 'single'")
    path = copy_board(tmp_path, "qemu_mps2_an386", "b3")
    edit(path, "    size: 4 MiB\n    uses: [data", "    size: 4 MB\n    uses: [data")
    assert_cli_error(["boards", "show", str(path)], "regions[1](DATA).size: '4 MB' is not valid", "KiB")


def test_wrong_schema_version(tmp_path):
    path = copy_board(tmp_path, "qemu_mps2_an386")
    edit(path, "schema_version: 2", "schema_version: 3")
    assert_cli_error(["boards", "show", str(path)], "reads schema_version 1 or 2, the file has 3")


# ----------------------------------------------------------------------------- devicetree facts


def test_devicetree_facts_come_from_the_board_file():
    from armgen.boards import DtRegion
    from armgen.project.zephyr import dts_facts

    c300 = load_board("corstone_300")
    facts = present(present(c300.zephyr).devicetree_facts("mps3/corstone300/fvp"))
    assert (facts.flash, facts.sram, facts.has_npu_node) == ("ITCM", "DTCM", True)
    assert facts.regions["ISRAM"] == DtRegion("isram", "ISRAM") and "DDR" not in facts.regions
    assert facts.source.startswith("zephyr boards/arm/mps3/mps3_corstone300_fvp.dts")
    assert dts_facts(c300, "mps3/corstone300/fvp") == facts
    an547 = load_board("qemu_mps3_an547")  # one entry per target: 3.7 and 4.4 name it differently
    assert present(present(an547.zephyr).devicetree_facts("mps3/an547")).has_npu_node is False
    assert present(present(an547.zephyr).devicetree_facts("mps3/corstone300/an547")).has_npu_node is True
    assert present(present(load_board("nucleo_h743zi").zephyr).devicetree_facts("nucleo_h743zi")).regions["FLASH"].memory_region is None
    hash(c300)  # the facts' region dict does not make a Board unhashable


def test_schema_1_board_file_still_reads_and_gets_the_naming_rule():
    from armgen.project.zephyr import dts_facts

    data = yaml.safe_load((BOARDS_DIR / "corstone_300.yaml").read_text())
    data["schema_version"] = 1
    del data["zephyr"]["devicetree"]
    old = board_from_data(data, name="old_c300")
    assert present(old.zephyr).devicetree == () and present(old.zephyr).devicetree_facts("mps3/corstone300/fvp") is None
    facts = dts_facts(old, "mps3/corstone300/fvp")
    assert facts.source.startswith("assumed (no devicetree facts for mps3/corstone300/fvp in armgen)")
    assert facts.regions["ISRAM"].label == "isram" and facts.regions["DDR"].memory_region == "DDR"
    assert (facts.flash, facts.sram, facts.has_npu_node) == ("ITCM", "DTCM", False)
    assert present(load_board("qemu_mps2_an385").zephyr).devicetree == ()  # schema 2 without facts: the rule too


def test_devicetree_facts_need_schema_2(tmp_path):
    path = copy_board(tmp_path, "corstone_300")
    edit(path, "schema_version: 2", "schema_version: 1")
    assert_cli_error(["boards", "show", str(path)], "zephyr.devicetree needs schema_version 2 (the file has 1)")


def test_devicetree_facts_name_the_boards_targets_and_regions(tmp_path):
    path = copy_board(tmp_path, "corstone_300")
    edit(path, "    mps3/corstone300/fvp:\n", "    mps3/corstone300/fvq:\n")
    assert_cli_error(["boards", "show", str(path)], "zephyr.devicetree.mps3/corstone300/fvq: 'mps3/corstone300/fvq' "
                     "is not one of the board's Zephyr targets (mps3/corstone300/fvp)")
    path = copy_board(tmp_path, "corstone_300", "b2")
    edit(path, "        ISRAM: {label: isram", "        ISRAM1: {label: isram")
    assert_cli_error(["boards", "show", str(path)], "zephyr.devicetree.mps3/corstone300/fvp.regions: ISRAM1 is not "
                     "a region of the board")
    path = copy_board(tmp_path, "corstone_300", "b3")
    edit(path, "      has_npu_node: true ", "      has_npu_node: yes please ")
    assert_cli_error(["boards", "show", str(path)], "zephyr.devicetree.mps3/corstone300/fvp.has_npu_node: expected boolean")


def test_invalid_yaml_names_the_line(tmp_path):
    path = copy_board(tmp_path, "qemu_mps2_an386")
    edit(path, "  dsp: true", "  dsp: [true")
    assert_cli_error(["boards", "show", str(path)], str(path), "invalid YAML", "line")


def test_overlapping_regions(tmp_path):
    path = copy_board(tmp_path, "qemu_mps2_an386")
    edit(path, "    base: 0x20000000", "    base: 0x00200000")
    assert_cli_error(["boards", "show", str(path)], "regions CODE [0x00000000, 0x00400000) and DATA [0x00200000, 0x00600000) overlap")


def test_reserved_larger_than_region(tmp_path):
    path = copy_board(tmp_path, "alif_e8_he")
    edit(path, "reserved: 0x8000 ", "reserved: 6 MiB ")
    assert_cli_error(["boards", "show", str(path)], "region MRAM: reserved (0x600000) is larger than size (0x580000)")


def test_budget_larger_than_its_regions(tmp_path):
    path = copy_board(tmp_path, "stm32f4_disco")
    edit(path, "  flash: 1 MiB\n", "  flash: 2 MiB\n")
    assert_cli_error(
        ["boards", "show", str(path)],
        "budgets.flash (2097152 bytes) is larger than the flash regions offer (1048576 bytes)",
    )
    path = copy_board(tmp_path, "stm32f4_disco", "b2")
    edit(path, "  ram: 192 KiB\n", "  ram: 200 KiB\n")
    assert_cli_error(["boards", "show", str(path)], "budgets.ram (204800 bytes) is larger than the RAM regions offer (196608 bytes)")
    path = copy_board(tmp_path, "stm32f4_disco", "b3")
    edit(path, "  flash: 1 MiB\n", "  flash: 768 KiB\n")
    assert load_board(path).budgets.flash == 768 * KiB  # a smaller budget is fine
    path = copy_board(tmp_path, "qemu_mps3_an547", "b4")  # a user's file without budgets: derived, DDR left out
    text = path.read_text()
    path.write_text(text[: text.index("budgets:")])
    derived = load_board(path).budgets
    assert (derived.flash, derived.ram) == (512 * KiB, 4608 * KiB) and "ddr" in derived.reason


def test_unknown_vela_accelerator(tmp_path):
    path = copy_board(tmp_path, "alif_e8_hp")
    edit(path, "vela_accelerator: ethos-u55-256", "vela_accelerator: ethos-u55-512")
    err = assert_cli_error(["boards", "show", str(path)], "npu.vela_accelerator 'ethos-u55-512' is not a Vela accelerator config")
    assert "ethos-u55-256" in err  # the hint lists what Vela knows


def test_unknown_vela_system_config(tmp_path):
    path = copy_board(tmp_path, "alif_e8_hp")
    edit(path, "vela_system_config: Ethos_U55_High_End_Embedded", "vela_system_config: RTSS_HP_SRAM_MRAM")
    assert_cli_error(
        ["boards", "show", str(path)],
        "Vela rejects ethos-u55-256 / system config 'RTSS_HP_SRAM_MRAM'",
        "System_Config.RTSS_HP_SRAM_MRAM not found",
        "Ethos_U55_High_End_Embedded",  # the hint lists the configs the .ini has
    )
    path = copy_board(tmp_path, "corstone_320", "b2")
    edit(path, "vela_memory_mode: Sram_Only", "vela_memory_mode: Sram_Onyl")
    assert_cli_error(["boards", "show", str(path)], "memory mode 'Sram_Onyl'", "Memory_Mode.Sram_Onyl not found")


def test_npu_type_must_match_accelerator(tmp_path):
    path = copy_board(tmp_path, "alif_e8_hp")
    edit(path, "  macs: 256", "  macs: 128")
    assert_cli_error(["boards", "show", str(path)], "does not match npu.type/npu.macs (ethos-u55-128)")


def test_unknown_executorch_target(tmp_path):
    path = copy_board(tmp_path, "qemu_mps2_an386")
    edit(path, "  et_target: cortex-m4 ", "  et_target: cortex-m5 ")
    assert_cli_error(["boards", "show", str(path)], "cpu.et_target: Unsupported Cortex-M target string: 'cortex-m5'")


def test_m85_gcc_flag_is_refused_with_advice(tmp_path):
    path = copy_board(tmp_path, "corstone_320")
    edit(path, "  gcc_mcpu: cortex-m55 ", "  gcc_mcpu: cortex-m85 ")
    assert_cli_error(["boards", "show", str(path)], "cpu.gcc_mcpu 'cortex-m85'", "compile M85 as cortex-m55")


def test_unknown_emulator_board(tmp_path):
    path = copy_board(tmp_path, "stm32f4_disco")
    edit(path, "  board: qemu_mps2_an386", "  board: qemu_mps2_an368")
    assert_cli_error(["boards", "show", str(path)], "emulator.board 'qemu_mps2_an368' is not a built-in board", "qemu_mps2_an386")


@pytest.mark.parametrize("args,fragment,where", [
    (["boards", "show"], "Missing argument 'BOARD'", "armgen boards show --help"),
    (["boards", "--frobnicate"], "No such option '--frobnicate'", "armgen boards --help"),
    (["no-such-command"], "No such command 'no-such-command'", "armgen --help"),
    (["new", "kws", "--board", "qemu_mps3_an547", "--stack-size", "big"], "'big' is neither bytes nor 'auto'", "armgen new --help"),
])  # fmt: skip
def test_usage_errors_are_one_error_line_and_a_hint(args, fragment, where):
    err = assert_cli_error(args, fragment)
    assert err.strip().splitlines() == [err.strip().splitlines()[0], f"hint: see `{where}`"]
    assert "Usage:" not in err


def test_cmsis_nn_optimization_follows_helium():
    from armgen.project.spec import cmsis_nn_optimization

    assert cmsis_nn_optimization(load_board("qemu_mps3_an547")) == "-Ofast"  # Cortex-M55, MVE
    assert cmsis_nn_optimization(load_board("alif_e8")) == "-Ofast"
    assert cmsis_nn_optimization(load_board("qemu_mps2_an386")) == "-O2"  # Cortex-M4, DSP only
    assert cmsis_nn_optimization(load_board("stm32f4_disco")) == "-O2"


def test_stm32_usart_consoles_come_from_board_data():
    """Each STM32 board names its USART layout, clocks, TX pin and the reset clock the baud comes from."""
    want = {
        # board: (kind, base, clock, enable bits, (gpio, pin, af))
        "stm32f4_disco": ("stm32_usart_v1", 0x40004400, 16_000_000, ((0x40023830, 0), (0x40023840, 17)),
                          (0x40020000, 2, 7)),
        "nucleo_f767zi": ("stm32_usart_v2", 0x40004800, 16_000_000, ((0x40023830, 3), (0x40023840, 18)),
                          (0x40020C00, 8, 7)),
        "nucleo_h743zi": ("stm32_usart_v2", 0x40004800, 64_000_000, ((0x580244E0, 3), (0x580244E8, 18)),
                          (0x58020C00, 8, 7)),
        "qemu_netduinoplus2": ("stm32_usart_v1", 0x40011000, 16_000_000, ((0x40023830, 0), (0x40023844, 4)),
                               (0x40020000, 9, 7)),
    }
    for name, (kind, base, clock, enable, pin) in want.items():
        bm = load_board(name).baremetal
        u = present(bm.uart_setup)
        assert (bm.console, bm.uart_kind, bm.uart_base) == ("uart", kind, base), name
        assert (u.clock_hz, u.baud, u.enable, (u.tx_gpio, u.tx_pin, u.tx_af)) == (clock, 115200, enable, pin), name
        assert u.divisor == round(clock / 115200)
    assert load_board("qemu_netduinoplus2").baremetal.exit == "semihosting"
    assert load_board("stm32f4_disco").baremetal.exit == "loop"


def test_stm32_uart_kind_needs_its_setup():
    data = yaml.safe_load((BOARDS_DIR / "stm32f4_disco.yaml").read_text())
    del data["baremetal"]["uart_setup"]
    with pytest.raises(BoardError, match="stm32_usart_v1 needs baremetal.uart_setup"):
        board_from_data(data, name="x", source="x.yaml")


# ---- flash_and_watch: how to put the image on the board and which console to watch ---------------
_SOURCE_WORDS = ("zephyr", "executorch", "alifsemi", "openocd", "armgen", "qemu", "board file")


def _flash_parts(board: Board):
    fw = present(board.flash_and_watch)
    parts = [("baremetal", fw.baremetal_flash, fw.baremetal_console)]
    if fw.zephyr_flash is not None:
        parts.append(("zephyr", fw.zephyr_flash, present(fw.zephyr_console)))
    return parts


@pytest.mark.parametrize("name", sorted(EXPECTED_BOARDS))
def test_every_board_says_how_to_flash_and_watch_with_a_source_for_each_fact(name):
    board = load_board(name)
    fw = board.flash_and_watch
    assert fw is not None, f"{name}: no flash_and_watch section"
    assert (fw.zephyr_flash is None) == (fw.zephyr_console is None) == (board.zephyr is None)
    for flavour, flash, console in _flash_parts(board):
        for what, fact in (("flash", flash), ("console", console)):
            assert any(w in fact.source.lower() for w in _SOURCE_WORDS), f"{name} {flavour}.{what}: {fact.source!r}"
        assert flash.tool and flash.commands and all(c.strip() for c in flash.commands)
        assert console.uart and (console.baud is None or console.baud in (9600, 57600, 115200))
        if flavour == "zephyr":  # a default runner for each Zephyr release the board has, from its board.cmake
            assert {rel for rel, _ in flash.runners} == set(present(board.zephyr).releases)
            assert "board.cmake" in flash.source
    # the bare-metal console's baud is the one armgen's own USART driver programs
    setup = board.baremetal.uart_setup
    if setup is not None:
        assert fw.baremetal_console.baud == setup.baud
    if board.baremetal.console == "semihosting":
        assert fw.baremetal_console.uart.startswith("semihosting") and fw.baremetal_console.baud is None


def test_flash_and_watch_facts_per_board():
    """The facts as read from the sources (board.cmake, DTS, docs), spot-checked per kind of board."""
    names = ("stm32f4_disco", "nucleo_h743zi", "alif_e8_hp", "alif_e8_he")
    f4, h7, hp, he = (present(load_board(n).flash_and_watch) for n in names)
    assert dict(present(f4.zephyr_flash).runners) == {"3.7": "openocd", "4.1": "stm32cubeprogrammer", "4.4": "stm32cubeprogrammer"}
    assert (present(f4.zephyr_console).uart, present(f4.zephyr_console).baud) == ("USART2", 115200) and "PA2" in present(present(f4.zephyr_console).where)
    assert "board/stm32f4discovery.cfg" in f4.baremetal_flash.commands[0]
    assert (h7.baremetal_console.uart, h7.baremetal_console.baud) == ("USART3", 115200)
    assert "virtual COM port" in present(h7.baremetal_console.where)
    assert dict(present(hp.zephyr_flash).runners) == {"4.4": "jlink"}
    assert (present(hp.zephyr_console).uart, present(he.zephyr_console).uart) == ("UART4", "UART2")
    assert '"M55_HP"' in present(hp.baremetal_flash.note) and '"M55_HE"' in present(he.baremetal_flash.note)
    for board in (load_board("alif_e8_hp"), load_board("alif_e8_he")):  # SETOOLS writes the image where it is linked
        assert f'"mramAddress": "0x{board.baremetal.vector_table:08X}"' in present(present(board.flash_and_watch).baremetal_flash.note)
    c300, c320 = load_board("corstone_300"), load_board("corstone_320")
    assert present(c300.flash_and_watch).baremetal_flash.commands[0].startswith("FVP_Corstone_SSE-300_Ethos-U55 ")
    assert f"-C ethosu.num_macs={present(c300.npu).macs} " in present(c300.flash_and_watch).baremetal_flash.commands[0]
    assert present(c320.flash_and_watch).baremetal_flash.commands[0].startswith("FVP_Corstone_SSE-320 ")
    u85_macs = f"-C mps4_board.subsystem.ethosu.num_macs={present(c320.npu).macs} "
    assert u85_macs in present(c320.flash_and_watch).baremetal_flash.commands[0]
    assert "-C mps3_board.uart0.out_file=-" in present(present(c300.flash_and_watch).baremetal_console.where)
    assert "-C mps4_board.uart0.out_file=-" in present(present(c320.flash_and_watch).baremetal_console.where)
    assert dict(present(present(c300.flash_and_watch).zephyr_flash).runners) == {"4.1": "armfvp", "4.4": "armfvp"}


@pytest.mark.parametrize("name", sorted(n for n in EXPECTED_BOARDS if n.startswith("qemu_")))
def test_qemu_boards_command_line_is_the_one_armgen_run_uses(name):
    """The README's qemu-system-arm line is the run stage's own argv (less -icount, which only fixes timing)."""
    import shlex

    from armgen.firmware.qemu import qemu_command

    board = load_board(name)
    (cmd,) = present(board.flash_and_watch).baremetal_flash.commands
    argv = qemu_command(Path("ELF"), present(board.emulator))
    i = argv.index("-icount")
    del argv[i:i + 2]
    argv[-1] = "{elf}"
    assert shlex.split(cmd) == argv


def test_flash_and_watch_bad_input(tmp_path):
    path = copy_board(tmp_path, "stm32f4_disco")
    edit(path, "program {elf} verify", "program {hex} verify")
    assert_cli_error(["boards", "show", str(path)], "flash_and_watch.baremetal.flash.commands: "
                     "'openocd -f board/stm32f4discovery.cfg -c \"program {hex} verify reset exit\"' names ['hex']")
    path = copy_board(tmp_path, "stm32f4_disco", "b2")
    edit(path, 'runners: {"3.7": openocd, "4.1": stm32cubeprogrammer, "4.4": stm32cubeprogrammer}',
         'runners: {"4.4": stm32cubeprogrammer}')
    releases = ", ".join(present(load_board("stm32f4_disco").zephyr).releases)
    assert_cli_error(["boards", "show", str(path)], "flash_and_watch.zephyr.flash.runners: give the runner for each "
                     f"of the board's Zephyr releases ({releases}), not 4.4")
    path = copy_board(tmp_path, "stm32f4_disco", "b3")
    edit(path, "      baud: 115200\n      where: PA2 (TX) / PA3", "      where: PA2 (TX) / PA3")
    assert_cli_error(["boards", "show", str(path)], "flash_and_watch.zephyr.console: missing field 'baud'")


def test_cli_show_prints_flash_and_watch():
    out = run_cli("boards", "show", "stm32f4_disco").stdout
    assert ("  flash      zephyr: west flash (runner 3.7 openocd, 4.1 stm32cubeprogrammer, 4.4 stm32cubeprogrammer); "
            "bare metal: OpenOCD (ST-LINK/V2)") in out
    assert "  watch      zephyr: USART2, 115200 baud; bare metal: USART2, 115200 baud" in out
    out = run_cli("boards", "show", "corstone_300").stdout
    assert "  watch      zephyr: uart0, no line rate; bare metal: UART0 (CMSDK UART at 0x59303000), no line rate" in out

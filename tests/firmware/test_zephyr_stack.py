"""`[memory] stack = "auto"` on Zephyr without firmware: the armgen-stacks.conf fragment written and read back,
the run image's `ARMGEN stack isr|idle` lines, the record, and which boards `--stack-size auto` takes.

The measuring itself (a real west build, QEMU runs, the resize) is tested in
tests/firmware/test_zephyr_firmware.py::test_stack_auto_sizes_main_isr_and_idle_and_runs_bit_exact.
"""

from __future__ import annotations

import json

import pytest

from armgen.boards import load_board
from armgen.errors import BuildError, ProjectError
from armgen.firmware.console_protocol import StackUse, parse_firmware_output
from armgen.firmware.zephyr_stack import (
    FRAGMENT,
    KCONFIG,
    QEMU_NOTE,
    StackFigure,
    ZephyrStackSizing,
    fragment_text,
    parse_fragment,
    read_fragment,
    write_fragment,
)
from armgen.project.options import check_stack_auto


def test_fragment_round_trips_in_a_fixed_order():
    sizes = {"idle": 80, "main": 2056, "isr": 160}
    text = fragment_text(sizes, {"main": 1640, "isr": 128, "idle": 64})
    assert text == fragment_text(dict(reversed(sizes.items())), {"idle": 64, "isr": 128, "main": 1640})  # same text
    assignments = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert assignments == ["CONFIG_MAIN_STACK_SIZE=2056", "CONFIG_ISR_STACK_SIZE=160", "CONFIG_IDLE_STACK_SIZE=80"]
    assert "# main: high-water 1640 B x 1.25, rounded up to 8 B\n" in text
    assert parse_fragment(text) == sizes


def test_fragment_names_the_allowance_for_your_main():
    text = fragment_text({"main": 2056 + 512}, {"main": 1640})
    assert "# main: high-water 1640 B x 1.25, rounded up to 8 B + 512 B for your main's frames\n" in text


def test_empty_fragment_sets_nothing():
    text = fragment_text({})
    assert text.startswith("# Stack sizes measured by `armgen build`")
    assert parse_fragment(text) == {} and "CONFIG_" not in text


@pytest.mark.parametrize("sizes, message", [({"main": 1000 + 4}, "not a positive multiple of 8"),
                                            ({"main": 0}, "not a positive multiple of 8"),
                                            ({"heap": 64}, "no Kconfig symbol for the heap stack")])
def test_fragment_refuses_what_is_not_a_stack_size(sizes, message):
    with pytest.raises(ValueError, match=message):
        fragment_text(sizes)


@pytest.mark.parametrize("line, message", [("CONFIG_ASSERT=y", "not a stack size armgen writes"),
                                           ("CONFIG_MAIN_STACK_SIZE=0x800", "not a stack size armgen writes"),
                                           ("CONFIG_HEAP_MEM_POOL_SIZE=1024", "not a stack size armgen writes")])
def test_parse_refuses_other_lines_naming_the_line(line, message):
    with pytest.raises(BuildError, match=rf"{FRAGMENT}:2: {message}"):
        parse_fragment(f"# ok\n{line}\n")


def test_parse_refuses_a_symbol_set_twice():
    with pytest.raises(BuildError, match=r":3: CONFIG_ISR_STACK_SIZE is set twice"):
        parse_fragment("CONFIG_ISR_STACK_SIZE=160\n\nCONFIG_ISR_STACK_SIZE=168\n")


def test_write_keeps_the_file_when_its_text_is_the_same(tmp_path):
    assert read_fragment(tmp_path) == {}
    path = write_fragment(tmp_path, {"main": 2056, "isr": 160, "idle": 80})
    assert path == tmp_path / FRAGMENT and read_fragment(tmp_path) == {"main": 2056, "isr": 160, "idle": 80}
    before = path.stat().st_mtime_ns
    path.chmod(0o444)  # a rewrite would fail: the same text is not written again (Kconfig re-runs on a new mtime)
    try:
        write_fragment(tmp_path, {"idle": 80, "isr": 160, "main": 2056})
    finally:
        path.chmod(0o644)
    assert path.stat().st_mtime_ns == before
    write_fragment(tmp_path, {"main": 2064})
    assert read_fragment(tmp_path) == {"main": 2064}


def test_run_image_reports_isr_and_idle_stacks():
    log = parse_firmware_output("ARMGEN stack isr reserved=2048 used=128\nARMGEN stack idle reserved=320 used=64\n"
                                "ARMGEN stack reserved=8192 used=1640\nARMGEN done\n")
    assert log.stack == StackUse(8192, 1640)
    assert log.kernel_stacks == {"isr": StackUse(2048, 128), "idle": StackUse(320, 64)}
    assert not log.malformed
    # a product image prints only the main stack's line
    assert parse_firmware_output("ARMGEN stack reserved=8192 used=1640\n").kernel_stacks == {}
    assert parse_firmware_output("ARMGEN stack heap reserved=1 used=1\n").malformed


def test_record_has_every_stack_and_the_qemu_caveat(tmp_path):
    stacks = {"main": StackFigure(2568, 1640, 8192, KCONFIG["main"], user_frames=512),
              "isr": StackFigure(160, 128, 2048, KCONFIG["isr"]), "idle": StackFigure(80, 64, 320, KCONFIG["idle"])}
    sizing = ZephyrStackSizing(stacks=stacks, machine="mps3-an547", image="build/run-input/zephyr/zephyr.elf",
                               fragment=FRAGMENT, zephyr_release="3.7", resized=True, seconds=58.46)
    data = json.loads(sizing.write(tmp_path).read_text())
    assert (data["reserved"], data["high_water"], data["user_frames"], data["machine"]) == (2568, 1640, 512, "mps3-an547")
    assert data["stacks"]["isr"] == {"reserved": 160, "high_water": 128, "measured_with": 2048,
                                     "kconfig": "CONFIG_ISR_STACK_SIZE", "user_frames": 0}
    assert data["qemu_note"] == QEMU_NOTE and "ISR stack" in QEMU_NOTE
    assert data["seconds"] == 58.5 and data["rtos"] == "zephyr" and data["method"] == "measured"
    line = sizing.describe()
    assert "main 2,568 B (high-water 1,640 B + 512 B for your main's frames)" in line
    assert "isr 160 B (high-water 128 B)" in line and "idle 80 B" in line and "armgen-stacks.conf" in line


def test_stack_auto_takes_zephyr_on_a_qemu_board_and_refuses_the_rest():
    check_stack_auto(load_board("qemu_mps3_an547"), "zephyr", "3.7")
    check_stack_auto(load_board("qemu_mps3_an547"), "zephyr", "4.1")
    check_stack_auto(load_board("qemu_mps3_an547"), "baremetal")
    # the QEMU machine of stm32f4_disco (mps2-an386) is not in Zephyr 3.7
    with pytest.raises(ProjectError, match=r"the QEMU machine of board 'stm32f4_disco' \(qemu_mps2_an386\) has no "
                                           r"target in Zephyr 3.7, .*releases that have it: 4.1, 4.4"):
        check_stack_auto(load_board("stm32f4_disco"), "zephyr", "3.7")
    with pytest.raises(ProjectError, match=r"'stm32f4_disco' does not run on QEMU itself; sizing its Zephyr stacks "
                                           r"from its stand-in qemu_mps2_an386 is not supported yet"):
        check_stack_auto(load_board("stm32f4_disco"), "zephyr", "4.1")
    with pytest.raises(ProjectError, match=r"board 'alif_e8_hp' does not run on QEMU, so its image cannot be measured"):
        check_stack_auto(load_board("alif_e8"), "baremetal")


def test_build_refuses_stack_auto_on_a_zephyr_board_that_is_not_a_qemu_machine(tmp_path):
    """A record edited by hand to stack = "auto" on a real board: one line, exit 2, before any build."""
    from _programs import armgen

    project = tmp_path / "p"
    project.mkdir()
    (project / "armgen.toml").write_text(
        'name = "p"\nboard = "stm32f4_disco"\nrtos = "zephyr"\nbackend = "cortex-m"\nelf = "build/zephyr/zephyr.elf"\n'
        'map = "build/zephyr/zephyr.map"\nzephyr_release = "4.1"\nzephyr_target = "stm32f4_disco"\n'
        '[memory]\nstack = "auto"\n')
    r = armgen("build", str(project))
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr.count("armgen: error:") == 1 and "Traceback" not in r.stderr
    assert "stack = \"auto\" needs the image to run on QEMU, and board 'stm32f4_disco' does not" in r.stderr
    assert sorted(p.name for p in project.iterdir()) == ["armgen.toml"]  # no build/, no fragment

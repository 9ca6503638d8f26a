"""`main.cpp` belongs to the product (issue 42), bare metal on mps3-an547: a main with no armgen lines that
never returns (it waits for a sensor) builds, with `--stack-size auto` too, and `armgen run` still checks
the model at 0 LSB, because it runs armgen's own harness image, never the user's main. The generated example
main still runs as it did (its product image, on QEMU). The Zephyr 3.7 case is in
tests/firmware/test_zephyr_firmware.py (its shared west build)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _programs import armgen, ok
from armgen.boards import load_board
from armgen.firmware.console_protocol import parse_firmware_output
from armgen.firmware.qemu import run_qemu

MODELS = Path(__file__).resolve().parents[1] / "models"

#: A product's own main: no armgen header, no ARMGEN lines, never returns (a sensor that never answers on QEMU).
SENSOR_LOOP_MAIN = """\
/* Our product: read the sensor for ever. */
#include <stdint.h>

extern "C" int sensor_ready(void);  // src/app/sensor.c

int main(void) {
  for (;;) {
    if (sensor_ready() == 0x5e) {
      break;  // never on QEMU: the register reads 0 ('o' + 0 = 0x6f)
    }
  }
  return 0;
}
"""
SENSOR_C = """\
#include <stdint.h>
/* "our sensor driver": a register that reads 0 on QEMU (the marker is read, so the linker keeps it) */
static volatile uint32_t sensor_status;
static const char our_product_marker[] = "our product's sensor driver";
int sensor_ready(void) { return (int)(sensor_status & 0xffu) + our_product_marker[sensor_status & 7u]; }
"""


@pytest.mark.slow
@pytest.mark.workspace
@pytest.mark.needs_workspace
@pytest.mark.needs_qemu
def test_a_main_with_no_armgen_lines_builds_with_auto_stack_and_run_stays_0_lsb(tmp_path):
    ok(armgen("new", "mlp", "--model", str(MODELS / "mlp.py"), "--board", "qemu_mps3_an547", "--stack-size", "auto",
              "--out", str(tmp_path)), "armgen new")
    project = tmp_path / "mlp"
    record = (project / "armgen.toml").read_text()
    assert '[run]\non = "qemu"\nimage = "."' in record  # the run plan `new` made

    # The generated example main still runs as today: its product image prints the run and `ARMGEN done`.
    ok(armgen("build", str(project)), "armgen build (example main)")
    emulator = load_board("qemu_mps3_an547").emulator
    assert emulator is not None
    log = parse_firmware_output(run_qemu(project / "build" / "mlp.elf", emulator, timeout=30).console)
    assert log.done and not log.errors and log.outputs and log.input_source == "pattern", log
    sizing = json.loads((project / "build" / "stack.json").read_text())
    assert sizing["image"] == "mlp-run.elf" and sizing["user_frames"] == 512, sizing
    assert sizing["reserved"] >= sizing["high_water"] * 1.25 + 512

    # The team's main: no armgen lines, never returns; their driver in src/app/.
    (project / "src" / "main.cpp").write_text(SENSOR_LOOP_MAIN)
    (project / "src" / "app").mkdir(exist_ok=True)
    (project / "src" / "app" / "sensor.c").write_text(SENSOR_C)
    out = ok(armgen("build", str(project)), "armgen build (the team's main, stack auto)")
    assert "measured on QEMU mps3-an547 (mlp-run.elf)" in out and "for your main's frames" in out, out
    product = (project / "build" / "mlp.elf").read_bytes()
    assert b"our product's sensor driver" in product and b"ARMGEN input" not in product

    r = armgen("run", str(project), "--json")
    ok(r, "armgen run (the team's main)")
    report = json.loads(r.stdout)
    assert report["passed"] and report["max_lsb_diff"] == 0, report
    assert "not your main.cpp" in report["checks"]
    assert report["stack"]["reserved"] == json.loads((project / "build" / "stack.json").read_text())["reserved"]
    harness = (project / "build" / "mlp-run.elf").read_bytes()
    assert b"our product's sensor driver" not in harness and b"ARMGEN input" in harness

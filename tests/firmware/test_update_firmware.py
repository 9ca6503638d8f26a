"""`armgen update` in firmware (issue 41), bare metal: the team's edits (a line in main, their own
src/app/mine.c, called from it) survive a retrained model and then a model with a new operator, are
built into the product image, and `armgen run` (its own image) stays 0 LSB each time. Then issue 42: their
main becomes a sensor loop with no armgen lines that never returns; it builds with `--stack-size auto` and
`armgen run` still checks the model at 0 LSB; the generated example main still runs as it did. The Zephyr 3.7 case is in
tests/firmware/test_zephyr_firmware.py (its shared west build).

The commands run in this process (:func:`_programs.armgen_here`): each compile then costs about 2.5 s instead
of a new interpreter's 12 s, and the first project is the session's (:func:`_programs.made_project`, shared
with tests/project/test_update.py)."""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import pytest

from _programs import ANSI, armgen_here, made_project, ok
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


MAIN_EDIT = 'extern "C" int mine(void);  // src/app/mine.c\n\nint main(void) {\n  armgen_printf("mine says %d\\n", mine());\n'


def edit_like_a_team(project: Path) -> bytes:
    """A line in main() calling their own src/app/mine.c; returns the edited main.cpp."""
    main = project / "src" / "main.cpp"
    main.write_text(main.read_text().replace("int main(void) {\n", MAIN_EDIT, 1))
    (project / "src" / "app").mkdir(exist_ok=True)
    (project / "src" / "app" / "mine.c").write_text("int mine(void) { return 42; }\n")
    return main.read_bytes()


def built_and_run(project: Path, product: str, harness: str) -> dict:
    """`armgen build` + `armgen run --json`: the run passed at 0 LSB, the team's code is in the product ELF
    and not in `armgen run`'s (armgen's harness main, issue 42)."""
    ok(armgen_here("build", str(project)), "armgen build")
    r = armgen_here("run", str(project), "--json")
    ok(r, "armgen run")
    report = json.loads(r.stdout)
    assert report["passed"] and report["max_lsb_diff"] == 0, report
    assert b"mine says %d" in (project / product).read_bytes(), product  # main.cpp's edit, linked with mine.c
    assert b"mine says %d" not in (project / harness).read_bytes(), harness
    return report


@pytest.mark.slow
@pytest.mark.workspace
@pytest.mark.needs_workspace
@pytest.mark.needs_qemu
def test_edits_survive_a_retrained_model_and_a_new_operator(tmp_path):
    shutil.copytree(made_project(MODELS / "update_v1.py", "qemu_mps3_an547", "mlp"), tmp_path, dirs_exist_ok=True)
    project = tmp_path / "mlp"  # `armgen new mlp --model ../model.py` (update_v1.py) for the M55 on QEMU
    edited = edit_like_a_team(project)
    pte_v1 = (project / "model" / "mlp.pte").read_bytes()

    # retrained: the recorded model source changes in place; update without flags compiles it again
    shutil.copy(MODELS / "update_v2.py", tmp_path / "model.py")
    r = armgen_here("update", str(project))
    ok(r, "armgen update (retrained)")
    assert "causes: new program (" in ANSI.sub("", r.stderr)
    assert (project / "src" / "main.cpp").read_bytes() == edited
    assert (project / "model" / "mlp.pte").read_bytes() != pte_v1
    built_and_run(project, "build/mlp.elf", "build/mlp-run.elf")
    # the example main (with the team's line) runs as it did: its product image prints the run and `ARMGEN done`
    emulator = load_board("qemu_mps3_an547").emulator
    assert emulator is not None
    log = parse_firmware_output(run_qemu(project / "build" / "mlp.elf", emulator, timeout=30).console)
    assert log.done and not log.errors and log.outputs and log.input_source == "pattern", log
    pools_v2 = {p["name"]: p["bytes"] for p in tomllib.loads((project / "armgen.toml").read_text())["pools"]}

    # a model with a new operator (cortex_m::quantized_add) and a temp pool; build/ kept: an incremental build
    r = armgen_here("update", str(project), "--model", str(MODELS / "update_v3.py"))
    ok(r, "armgen update (new operator)")
    assert "new operator cortex_m::quantized_add.out" in ANSI.sub("", r.stderr)
    assert (project / "build" / "mlp.elf").is_file()
    assert (project / "src" / "main.cpp").read_bytes() == edited and (project / "src" / "app" / "mine.c").is_file()
    pools_v3 = {p["name"]: p["bytes"] for p in tomllib.loads((project / "armgen.toml").read_text())["pools"]}
    assert pools_v3 != pools_v2 and "temp" in pools_v3
    assert "cortex_m::quantized_add" in (project / "model" / "selected_operators.yaml").read_text()
    built_and_run(project, "build/mlp.elf", "build/mlp-run.elf")

    # A copy with its build/ (cp -a): the cache names the original tree; the copy's own src/app must be built
    copy = tmp_path / "copy" / "mlp"
    shutil.copytree(project, copy, symlinks=True)
    (copy / "src" / "app" / "mine.c").write_text("int mine(void) { return 43; }  /* the copy's */\n")
    main = copy / "src" / "main.cpp"
    main.write_text(main.read_text().replace("mine says %d", "the copy says %d"))
    ok(armgen_here("build", str(copy)), "armgen build (a copied project)")
    assert b"the copy says %d" in (copy / "build" / "mlp.elf").read_bytes()


    # Issue 42: `main.cpp` belongs to the product. The team's main becomes a sensor loop with no armgen lines
    # that never returns, their driver in src/app/; with the stack sized from evidence (`update --stack-size
    # auto`): `build` measures `armgen run`'s image (armgen's harness main), not theirs, and `run` is 0 LSB.
    (project / "src" / "main.cpp").write_text(SENSOR_LOOP_MAIN)
    (project / "src" / "app" / "sensor.c").write_text(SENSOR_C)
    ok(armgen_here("update", str(project), "--stack-size", "auto"), "armgen update --stack-size auto")
    assert '[run]\non = "qemu"\nimage = "."' in (project / "armgen.toml").read_text()  # the run plan
    out = ok(armgen_here("build", str(project)), "armgen build (the team's main, stack auto)")
    assert "measured on QEMU mps3-an547 (mlp-run.elf)" in out and "for your main's frames" in out, out
    sizing = json.loads((project / "build" / "stack.json").read_text())
    assert sizing["image"] == "mlp-run.elf" and sizing["user_frames"] == 512, sizing
    assert sizing["reserved"] >= sizing["high_water"] * 1.25 + 512
    product = (project / "build" / "mlp.elf").read_bytes()
    assert b"our product's sensor driver" in product and b"ARMGEN input" not in product
    r = armgen_here("run", str(project), "--json")
    ok(r, "armgen run (the team's main)")
    report = json.loads(r.stdout)
    assert report["passed"] and report["max_lsb_diff"] == 0, report
    assert "not your main.cpp" in report["checks"] and report["stack"]["reserved"] == sizing["reserved"]
    harness = (project / "build" / "mlp-run.elf").read_bytes()
    assert b"our product's sensor driver" not in harness and b"ARMGEN input" in harness

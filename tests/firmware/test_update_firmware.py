"""`armgen update` in firmware (issue 41), bare metal: the team's edits (a line in main, their own
src/app/mine.c, called from it) survive a retrained model and then a model with a new operator, are
built into the product image, and `armgen run` (its own image) stays 0 LSB each time. The Zephyr 3.7 case is in
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

MODELS = Path(__file__).resolve().parents[1] / "models"
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

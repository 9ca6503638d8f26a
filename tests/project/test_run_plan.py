"""The run plan (issue 42): `new`/`update` decide how `armgen run` checks a project and record it
(`armgen.toml [run]`), rendering any stand-in then; `run` only carries it out. Fast: committed program
fixtures, rendered in process, nothing compiled or built."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from _programs import FIXTURES_DIR, armgen, one_error_line
from armgen.boards import load_board
from armgen.errors import ProjectError
from armgen.pipeline import new_project
from armgen.project.record import read_record
from armgen.project.run_plan import RunPlan, plan_from_record, plan_run, standin_rtos

BOARDS = Path(__file__).resolve().parents[2] / "boards"


def _new(tmp_path: Path, board: str, fixture: str, *, rtos: str = "baremetal", release: str | None = None,
         standin: str = "auto", backend: str | None = None) -> Path:
    new_project("kws", board, model=str(FIXTURES_DIR / fixture / "kws.pte"), weights=None, rtos=rtos,
                zephyr_release=release, backend=backend, out_dir=tmp_path, stack_size=None, force=False,
                say=lambda _line: None, standin_choice=standin)
    return tmp_path / "kws"


@pytest.mark.parametrize(
    ("board", "fixture", "rtos", "release", "standin", "want"),
    [
        # a QEMU board runs its own image
        ("qemu_mps3_an547", "kws-cortex-m55", "baremetal", None, "auto", ("qemu", ".", "baremetal")),
        ("qemu_mps3_an547", "kws-cortex-m55", "zephyr", "3.7", "auto", ("qemu", ".", "zephyr")),
        # a real board: the stand-in rendered with the project, bare metal...
        ("nucleo_f767zi", "kws-cortex-m7", "baremetal", None, "auto",
         ("qemu", "standin/qemu_mps2_an500", "baremetal")),
        # ... Zephyr when the QEMU machine is in the release, else bare metal; or bare metal when asked
        ("corstone_300", "kws-cortex-m55", "zephyr", "4.4", "auto", ("qemu", "standin/qemu_mps3_an547", "zephyr")),
        ("corstone_300", "kws-cortex-m55", "zephyr", "4.4", "baremetal",
         ("qemu", "standin/qemu_mps3_an547", "baremetal")),
        ("qemu_mps3_an547", "kws-cortex-m55", "zephyr", "3.7", "baremetal",
         ("qemu", "standin/qemu_mps3_an547", "baremetal")),
        # an Ethos-U program: the host (QEMU has no NPU model); no stand-in rendered
        ("alif_e8", "kws-alif_e8", "baremetal", None, "auto", ("tosa-reference", None, None)),
    ],
)
def test_new_records_the_run_plan_and_renders_its_stand_in(tmp_path, board, fixture, rtos, release, standin, want):
    backend = "cortex-m" if board == "corstone_300" else None  # its CPU path (the board's default is its NPU)
    project = _new(tmp_path, board, fixture, rtos=rtos, release=release, standin=standin, backend=backend)
    plan = read_record(project / "armgen.toml").run
    assert plan is not None and (plan.on, plan.image, plan.firmware) == want
    assert plan.why
    if plan.standin:
        sub = read_record(project / str(plan.image) / "armgen.toml")
        assert sub.rtos == plan.firmware and sub.board == plan.emulator
        assert sub.run is not None and sub.run.image == "."  # the stand-in runs its own image
        assert (project / str(plan.image) / "src" / "armgen" / "armgen_run_main.cpp").is_file()
    else:
        assert not (project / "standin").exists()


def test_a_board_without_a_qemu_machine_plans_no_run_and_says_why(tmp_path):
    data = yaml.safe_load((BOARDS / "corstone_300.yaml").read_text())
    del data["emulator"]
    (tmp_path / "silicon.yaml").write_text(yaml.safe_dump(data))
    board = load_board(str(tmp_path / "silicon.yaml"))
    plan = plan_run(board, rtos="baremetal", npu=False, standin=None)
    assert plan.on == "none" and "no QEMU stand-in" in plan.why
    assert standin_rtos(board, "baremetal", False, None) is None


def test_the_plan_round_trips_and_a_bad_table_is_one_line(tmp_path):
    plan = RunPlan(on="qemu", image="standin/qemu_mps3_an547", firmware="baremetal", emulator="qemu_mps3_an547",
                   why="w")
    assert RunPlan.from_table(plan.as_table(), "x") == plan
    with pytest.raises(ProjectError, match=r"\[run\] on must be one of"):
        RunPlan.from_table({"on": "fvp"}, "x")
    with pytest.raises(ProjectError, match="needs image, firmware"):
        RunPlan.from_table({"on": "qemu"}, "x")
    with pytest.raises(ProjectError, match="--standin"):
        standin_rtos(load_board("corstone_300"), "zephyr", False, "4.4", "fvp")
    with pytest.raises(ProjectError, match="has no key 'whyy'"):
        RunPlan.from_table({**plan.as_table(), "whyy": "typo"}, "x")
    for image in ("../x", "/etc", "build"):  # only the project itself or a stand-in inside it
        with pytest.raises(ProjectError, match=r"\[run\] image must be"):
            RunPlan.from_table({**plan.as_table(), "image": image}, "x")


def test_a_broken_plan_blocks_only_run_and_says_how_to_mend_it(tmp_path):
    project = _new(tmp_path, "qemu_mps3_an547", "kws-cortex-m55")
    text = (project / "armgen.toml").read_text()
    (project / "armgen.toml").write_text(text.replace('[run]\non = "qemu"', '[run]\non = "fvp"'))
    rec = read_record(project / "armgen.toml")  # build, size and update still read the record
    assert rec.run is None and rec.run_error is not None and "[run] on must be one of" in rec.run_error
    r = armgen("run", str(project))
    assert "[run] on must be one of" in one_error_line(r) and f"armgen update {project}" in r.stderr
    r = armgen("run", str(tmp_path / "nope"))
    assert "no such directory" in one_error_line(r)


def test_update_refuses_to_trade_trained_weights_for_fixed_seed_ones(tmp_path):
    from armgen.cli.update_cmd import _check_weights_kept
    from armgen.errors import ModelError

    project = _new(tmp_path, "qemu_mps3_an547", "kws-cortex-m55")  # the fixture: untrained weights
    rec = read_record(project / "armgen.toml")
    untrained = type("R", (), {"untrained_weights": True})()
    _check_weights_kept(rec, untrained, offline=False)  # untrained before and after: fine
    report = project / "model" / "kws.report.json"
    report.write_text(report.read_text().replace('"untrained_weights": true', '"untrained_weights": false'))
    with pytest.raises(ModelError, match="trained weights"):
        _check_weights_kept(rec, untrained, offline=False)
    _check_weights_kept(rec, untrained, offline=True)  # on purpose


def test_a_record_without_a_plan_is_planned_when_nothing_needs_rendering(tmp_path):
    """Records written before run plans: a QEMU board's own image or an NPU program are planned on the fly;
    a real board's CPU program needs a stand-in, which only `armgen update` renders: `run` says so in one line."""
    from armgen.model.program_report import ProgramReport

    own = _new(tmp_path / "own", "qemu_mps3_an547", "kws-cortex-m55")
    real = _new(tmp_path / "real", "nucleo_f767zi", "kws-cortex-m7")
    for project in (own, real):
        text = (project / "armgen.toml").read_text()
        start = text.index("[run]")
        (project / "armgen.toml").write_text(text[:start] + text[text.index("\n\n", start) + 2:])
    rec = read_record(own / "armgen.toml")
    assert rec.run is None
    report = ProgramReport.load(rec.model_path("report"))
    plan = plan_from_record(rec, load_board("qemu_mps3_an547"), report)
    assert plan is not None and plan.on == "qemu" and plan.image == "."
    rec = read_record(real / "armgen.toml")
    assert plan_from_record(rec, load_board("nucleo_f767zi"), ProgramReport.load(rec.model_path("report"))) is None
    r = armgen("run", str(real))
    assert r.returncode == 2
    line = one_error_line(r)
    assert "written before run plans" in line and "Traceback" not in r.stderr
    assert f"armgen update {real}" in r.stderr


def test_update_names_a_new_run_plan_as_the_cause(tmp_path):
    import tomllib

    from armgen.project.update import causes

    zephyr = _new(tmp_path / "a", "corstone_300", "kws-cortex-m55", rtos="zephyr", release="4.4", backend="cortex-m")
    bare = _new(tmp_path / "b", "corstone_300", "kws-cortex-m55", rtos="zephyr", release="4.4", backend="cortex-m",
                standin="baremetal")
    found = causes(read_record(zephyr / "armgen.toml"), tomllib.loads((bare / "armgen.toml").read_text()), set(), set())
    assert found["run"] == ["run plan qemu zephyr standin/qemu_mps3_an547 -> qemu baremetal standin/qemu_mps3_an547"]

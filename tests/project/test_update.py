"""`armgen update` (issue 41) without firmware: the plan, the three-way merge and its conflicts, atomicity
under Ctrl-C, a schema 1 record, bad input. Real export and lowering (a small MLP on the M55); the firmware side
(edits built, 0 LSB after each model change) is tests/firmware/test_update_firmware.py.

What costs is shared: the commands run in this process (:func:`_programs.armgen_here`: a compile about 2.5 s
once the process has imported ExecuTorch, against 12 s in a new interpreter), the project from update_v1.py and
the two-input program are made once per session (:func:`_programs.made_project`, :func:`_programs.compiled_file`)
and each test edits a copy. Two commands keep a process of their own: the Ctrl-C, and the `armgen new` of
update_v3.py whose tree a compile in this process must reproduce byte for byte.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import tomllib
from pathlib import Path

import pytest

from _programs import (
    ANSI,
    armgen,
    armgen_here,
    compiled_file,
    made_project,
    ok,
    one_error_line,
    program,
    sigint_default,
    tree,
)
from armgen.project.ownership import BASE_DIR, markdown_table, owner_of

MODELS = Path(__file__).resolve().parents[1] / "models"
BOARD = "qemu_mps3_an547"
#: A line of the user's in main(): where a team calls its own code.
MAIN_EDIT = 'extern "C" int mine(void);  // src/app/mine.c\n\nint main(void) {\n  armgen_printf("mine says %d\\n", mine());\n'


@pytest.fixture(scope="module")
def made() -> Path:
    """The session's project from update_v1.py (copied to model.py beside it, the recorded source): read only."""
    return made_project(MODELS / "update_v1.py", BOARD, "mlp")


@pytest.fixture(scope="module")
def two_inputs() -> Path:
    """two_inputs.py compiled once per session (the .pte, its report beside it), for `update --model X.pte`."""
    return compiled_file(MODELS / "two_inputs.py")[0]


@pytest.fixture
def project(made, tmp_path) -> Path:
    """A copy of the made project (and its model.py) for one test to edit."""
    shutil.copytree(made, tmp_path / "w")
    return tmp_path / "w" / "mlp"  # the record names the model source relative to the project: ../model.py


def _edit_main(project: Path) -> bytes:
    main = project / "src" / "main.cpp"
    text = main.read_text()
    assert "int main(void) {\n" in text
    main.write_text(text.replace("int main(void) {\n", MAIN_EDIT, 1))
    (project / "src" / "app").mkdir(exist_ok=True)
    (project / "src" / "app" / "mine.c").write_text("int mine(void) { return 42; }\n")
    return main.read_bytes()



def test_the_ownership_table_says_whose_each_file_is():
    assert owner_of("src/main.cpp") == owner_of("prj.conf") == owner_of("app.cmake") == "user"
    assert owner_of("src/app/mine.c") == owner_of("boards/mps3_an547.overlay") == "user"
    for armgens in ("src/model/armgen_pools.c", "src/armgen/armgen_print.c", "CMakeLists.txt", "Kconfig", "model/x.pte",
                    "armgen.toml", f"{BASE_DIR}/src/main.cpp", "standin/qemu_mps3_an547/src/main.cpp"):
        assert owner_of(armgens) == "armgen", armgens
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert markdown_table() in readme, "README's ownership table is stale: paste armgen.project.ownership.markdown_table()"


@pytest.mark.slow
def test_the_record_keeps_digests_and_the_pristine_text_of_your_files(made):
    project = made / "mlp"
    record = tomllib.loads((project / "armgen.toml").read_text())
    assert record["schema_version"] == 2
    files = record["files"]
    assert "armgen.toml" not in files and "src/main.cpp" in files and "model/mlp.pte" in files
    assert (project / BASE_DIR / "src" / "main.cpp").read_bytes() == (project / "src" / "main.cpp").read_bytes()
    assert (project / BASE_DIR / "app.cmake").is_file()
    assert not (project / BASE_DIR / "src" / "model").exists()  # armgen's own files: digests only


@pytest.mark.slow
def test_dry_run_prints_the_plan_with_causes_and_writes_nothing(project):
    _edit_main(project)
    shutil.copy(MODELS / "update_v2.py", project.parent / "model.py")  # retrained in place: the recorded source
    before = tree(project)
    r = armgen_here("update", str(project), "--dry-run")
    assert r.returncode == 0, r.stderr
    err, out = ANSI.sub("", r.stderr), ANSI.sub("", r.stdout)
    assert "causes: new program (" in err and "method pool 1,168 -> 1,216 B" in err, err
    assert "src/model/armgen_pools.h" in out and "replace (armgen's, untouched)" in out, out
    assert "keep (yours)" in out and "src/main.cpp" in out
    assert "-#define ARMGEN_POOL_METHOD_SIZE 1168u" in out and "+#define ARMGEN_POOL_METHOD_SIZE 1216u" in out
    assert tree(project) == before


@pytest.mark.slow
def test_an_edit_beside_armgen_s_change_merges_cleanly(project, two_inputs):
    """The team edits the input-filling loop; the new model has two inputs, so armgen's main.cpp gains a block
    just below: git merge-file keeps both, exit 0."""
    main = project / "src" / "main.cpp"
    text = main.read_text()
    assert "      in[i] = (int8_t)(x >> 24);" in text, text
    main.write_text(text.replace("      in[i] = (int8_t)(x >> 24);", "      in[i] = (int8_t)read_my_sensor(i);", 1))
    r = armgen_here("update", str(project), "--model", str(two_inputs))
    assert r.returncode == 0, r.stderr
    merged = main.read_text()
    assert "read_my_sensor(i)" in merged and "armgen_model_input_buffer(1)" in merged and "<<<<<<<" not in merged
    assert "merge (yours + armgen's)" in ANSI.sub("", r.stdout)
    assert (project / BASE_DIR / "src" / "main.cpp").read_text().count("read_my_sensor") == 0  # base: armgen's text
    assert "ARMGEN_INPUT1_NUMEL" in (project / "src" / "model" / "armgen_model.h").read_text()


@pytest.mark.slow
def test_a_conflicting_edit_gets_markers_the_saved_copy_and_exit_1(project, two_inputs):
    """The team adds a line where armgen's new main.cpp inserts the second input's block (two inputs): both
    insert at the same place, so markers in main.cpp, theirs beside it, exit 1; the model files move on."""
    main = project / "src" / "main.cpp"
    text = main.read_text()
    assert "    inputs[0] = in;\n  }\n" in text, text
    main.write_text(text.replace("    inputs[0] = in;\n  }\n", "    inputs[0] = in;\n  }\n  my_sensor_start();\n", 1))
    edited = main.read_bytes()
    r = armgen_here("update", str(project), "--model", str(two_inputs))
    err = ANSI.sub("", r.stderr)
    assert r.returncode == 1, err
    assert "armgen: conflict: src/main.cpp" in err and "Traceback" not in err
    merged = main.read_text()
    assert "<<<<<<< yours" in merged and ">>>>>>> armgen" in merged and "my_sensor_start" in merged
    assert (project / "src" / "main.cpp.mine").read_bytes() == edited
    record = tomllib.loads((project / "armgen.toml").read_text())
    assert record["model"]["source"].endswith("two_inputs.pte")
    assert "ARMGEN_INPUT1_NUMEL" in (project / "src" / "model" / "armgen_model.h").read_text()
    # another update with the markers still there: refused, one line (the compile would find them later)
    r = armgen_here("update", str(project), "--dry-run")
    assert r.returncode == 2 and "src/main.cpp still holds the conflict markers" in r.stderr, r.stderr


@pytest.mark.slow
def test_ctrl_c_in_the_middle_leaves_the_project_byte_identical(project, tmp_path):
    """SIGINT while torch.export traces the new model: exit 130, the project and its directory untouched.

    The model's forward announces itself (a file) and then waits, so the signal lands inside the compile on
    any machine (a fixed delay after "compiling" raced the compile of a small model under CPU contention).
    """
    _edit_main(project)
    before = tree(project)
    tracing = tmp_path / "tracing"
    slow = tmp_path / "models" / "slow_v3.py"
    slow.parent.mkdir()
    slow.write_text((MODELS / "update_v3.py").read_text() + textwrap.dedent(f"""

        _forward = Residual.forward


        def _announced_forward(self, x):
            import pathlib
            import time
            pathlib.Path({str(tracing)!r}).touch()
            time.sleep(120)
            return _forward(self, x)


        Residual.forward = _announced_forward
        """))
    exe = Path(sys.executable).with_name("armgen")
    proc = subprocess.Popen([str(exe), "update", str(project), "--model", str(slow)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=sigint_default)
    try:
        deadline = time.monotonic() + 240
        while not tracing.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert tracing.exists(), proc.communicate(timeout=60)
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "armgen: interrupted" in err
    assert tree(project) == before
    assert sorted(p.name for p in project.parent.iterdir()) == ["mlp", "model.py"]  # no temp or trash left


@pytest.mark.slow
def test_a_schema_1_project_is_updated_with_a_one_line_note(project, two_inputs):
    rec = project / "armgen.toml"
    text = rec.read_text()
    text = text.replace("schema_version = 2\n", "")
    rec.write_text(text[: text.index("\n# SHA-256 of every file armgen wrote")] + "\n")
    shutil.rmtree(project / ".armgen")
    edited = _edit_main(project)
    r = armgen_here("update", str(project), "--model", str(two_inputs))
    err = ANSI.sub("", r.stderr)
    assert r.returncode == 0, err
    notes = [ln for ln in err.splitlines() if ln.startswith("note:") and "schema 1" in ln]
    assert len(notes) == 1, err
    assert (project / "src" / "main.cpp").read_bytes() == edited  # yours, kept
    assert b"armgen_model_input_buffer(1)" in (project / "src" / "main.cpp.armgen-new").read_bytes()  # armgen's
    record = tomllib.loads(rec.read_text())
    assert record["schema_version"] == 2 and record["files"] and (project / BASE_DIR / "src" / "main.cpp").is_file()


@pytest.mark.slow
def test_bad_input_is_one_line_exit_2_and_writes_nothing(project, tmp_path):
    elsewhere = tmp_path / "not-a-project"
    elsewhere.mkdir()
    r = armgen_here("update", str(elsewhere))
    assert r.returncode == 2 and "is not an armgen project" in r.stderr and "Traceback" not in r.stderr
    assert list(elsewhere.iterdir()) == []
    rec = project / "armgen.toml"
    rec.write_text(rec.read_text().replace("schema_version = 2", "schema_version = 99"))
    before = tree(project)
    r = armgen_here("update", str(project))
    assert r.returncode == 2 and "schema_version 99 is newer than this armgen reads" in r.stderr, r.stderr
    assert r.stderr.count("armgen: error:") == 1 and tree(project) == before


@pytest.mark.slow
def test_new_force_on_an_armgen_project_points_at_update(made, tmp_path):
    shutil.copytree(made, tmp_path / "w")
    r = armgen_here("new", "mlp", "--model", str(made / "mlp" / "model" / "mlp.pte"), "--board", BOARD,
               "--out", str(tmp_path / "w"), "--force")
    assert r.returncode == 0, r.stderr
    assert "`armgen update" in ANSI.sub("", r.stderr)


def test_git_merge_file_is_what_merges(tmp_path):
    from armgen.project.update import merge3

    base = b"a\nb\nc\nd\ne\n"
    merged, clean = merge3(b"A\nb\nc\nd\ne\n", base, b"a\nb\nc\nd\nE\n")
    assert clean and merged == b"A\nb\nc\nd\nE\n"
    merged, clean = merge3(b"X\nb\nc\nd\ne\n", base, b"Y\nb\nc\nd\ne\n")
    assert not clean and b"<<<<<<< yours\nX\n" in merged and b"Y\n>>>>>>> armgen\n" in merged
    assert os.environ.get("PATH")  # git comes from PATH, as for every other git call of armgen


@pytest.mark.slow
def test_build_says_in_one_line_that_the_model_source_changed(project, tmp_path):
    """Issue 41: a model edited after `new` used to go unnoticed. `armgen build` (here stopped early by a
    missing workspace, after its check) names the changed source and points at `armgen update`."""
    nowhere = tmp_path / "no-workspace"
    r = armgen_here("build", "--workspace", str(nowhere), str(project))
    assert "changed since" not in r.stderr  # fresh: nothing to say
    shutil.copy(MODELS / "update_v2.py", project.parent / "model.py")
    r = armgen_here("build", "--workspace", str(nowhere), str(project))
    lines = [ln for ln in ANSI.sub("", r.stderr).splitlines() if "since mlp was written" in ln]
    assert len(lines) == 1 and "the model source ../model.py changed" in lines[0], r.stderr  # as the record says
    assert "`armgen update" in lines[0]
    assert r.returncode == 2  # and then the missing workspace, as before


@pytest.mark.slow
def test_the_record_holds_paths_relative_to_the_project(made):
    record = tomllib.loads((made / "mlp" / "armgen.toml").read_text())
    assert record["model"]["source"] == "../model.py"
    assert str(made) not in (made / "mlp" / "armgen.toml").read_text()


@pytest.mark.slow
def test_git_commits_no_intermediates_and_run_rebuilds_them_only_as_committed(project):
    """What a team commits: sources, the .pte, the report and the record; model/*.pt2 are git-ignored and
    rebuilt from the record (restore_intermediates, which `armgen run` calls) only if the .pte matches. The
    copy is in another directory than the one the project was made in: the same bytes all the same."""
    from armgen.errors import ProjectError
    from armgen.model.program_report import ProgramReport
    from armgen.project.intermediates import restore_intermediates
    from armgen.project.record import load_project

    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run(["git", "-C", str(project), "add", "-A"], check=True)
    tracked = subprocess.run(["git", "-C", str(project), "ls-files"], capture_output=True, text=True,
                             check=True).stdout.split()
    assert "model/mlp.pte" in tracked and "model/mlp.report.json" in tracked and "armgen.toml" in tracked
    assert not [f for f in tracked if f.endswith((".pt2", ".tosa"))], tracked
    pt2 = {p.name: p.read_bytes() for p in (project / "model").glob("*.pt2")}
    assert len(pt2) >= 2
    for name in pt2:
        (project / "model" / name).unlink()
    record = load_project(project)
    report = ProgramReport.load(record.model_path("report"))
    said: list[str] = []
    assert sorted(restore_intermediates(record, report, said.append)) == sorted(pt2)
    assert {n: (project / "model" / n).read_bytes() for n in pt2} == pt2  # the same bytes: a reproducible compile
    assert said and "rebuilding" in said[0]
    for name in pt2:
        (project / "model" / name).unlink()
    shutil.copy(MODELS / "update_v2.py", project.parent / "model.py")  # the source moved on since the commit
    with pytest.raises(ProjectError, match="the model source ../model.py changed since the program was made"):
        restore_intermediates(record, report, said.append)
    assert not list((project / "model").glob("*.pt2"))  # nothing taken


@pytest.mark.slow
def test_the_tree_is_reproducible_and_an_update_from_inside_with_nothing_changed_is_a_no_op(tmp_path, monkeypatch):
    """Issue 41: the tree a team commits is reproducible, binary files included (the .pte, the exported and
    lowered programs, the references; the Ethos-U host program is checked in tests/model/test_npu_host.py):
    `armgen new` runs in a process of its own (Python salts str hashes per process), the update compiles the
    model again in this one, and every file must come out the same bytes (the update writes none of them).

    A fresh user's findings: an update replaced the project directory (a shell inside it lost its working
    directory; .git, ignored data and empty directories were copied or lost), and a user-defined nn.Module made
    the git-ignored .pt2 files differ every compile, so each no-change update rewrote armgen.toml. Now the
    directory stays (same inode), untracked data is untouched, and git sees no change."""
    shutil.copy(MODELS / "update_v3.py", tmp_path / "model.py")  # a model class of its own (Residual)
    r = armgen("new", "mlp", "--model", str(tmp_path / "model.py"), "--board", BOARD, "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    project = tmp_path / "mlp"
    made_tree = tree(project)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run(["git", "-C", str(project), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(project), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "new"],
                   check=True)
    (project / "scratch").mkdir()
    (project / "empty").mkdir()
    (project / "scratch" / "data.bin").write_bytes(b"x" * 1000)
    inode = project.stat().st_ino
    monkeypatch.chdir(project)
    r = armgen_here("update")  # PROJECT defaults to "."
    assert r.returncode == 0, r.stderr
    assert project.stat().st_ino == inode and (project / "empty").is_dir() and (project / "scratch" / "data.bin").is_file()
    status = subprocess.run(["git", "-C", str(project), "status", "--porcelain"], capture_output=True, text=True,
                            check=True).stdout
    assert status.split() == ["??", "scratch/"], status  # nothing armgen wrote changed
    again = {k: v for k, v in tree(project).items() if not k.startswith((".git/", "scratch/"))}
    assert again.keys() == made_tree.keys() and [k for k in again if again[k] != made_tree[k]] == []  # .pt2 too
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp or trash left


@pytest.mark.slow
def test_a_new_board_removes_build_and_a_renamed_directory_updates(project):
    """build/ configured for the M55 would link the old CPU's code after `--board` an M4 board: it goes. The
    directory may be named otherwise than the project (a clone, a worktree)."""
    (project / "build").mkdir()
    (project / "build" / "CMakeCache.txt").write_text("ARMGEN_CPU=cortex-m55\n")
    renamed = project.with_name("mlp-m4")
    project.rename(renamed)
    r = armgen_here("update", str(renamed), "--board", "qemu_mps2_an386")
    assert r.returncode == 0, r.stderr
    err = ANSI.sub("", r.stderr)
    assert "build/ was configured for the old one and is removed" in err
    assert "board qemu_mps3_an547 -> qemu_mps2_an386" in err and "target cortex-m55 -> cortex-m4" in err, err
    assert not (renamed / "build").exists()
    assert tomllib.loads((renamed / "armgen.toml").read_text())["target"] == "cortex-m4"


def test_a_missing_model_file_is_said_before_anything_is_compiled(tmp_path):
    """`armgen new/update --model nope.py` said "compiling nope.py ..." and then that the file was missing: every
    cheap check (the model file, the calibration data, the board) comes before the compile. One line, exit 2,
    nothing written. A project from a committed program (no export)."""
    ok(armgen_here("new", "kws", "--model", str(program("kws-cortex-m55")[1]), "--board", BOARD,
                   "--out", str(tmp_path)), "armgen new")
    project = tmp_path / "kws"
    before, around = tree(project), sorted(tmp_path.iterdir())
    nope = tmp_path / "nope"
    for args, said in (
        (("new", "x", "--model", f"{nope}.py", "--board", BOARD, "--out", str(tmp_path)), f"{nope}.py: model file not found"),
        (("new", "x", "--model", f"{nope}.py:make", "--board", BOARD, "--out", str(tmp_path)), f"{nope}.py: model file not found"),
        (("update", str(project), "--model", f"{nope}.py"), f"{nope}.py: model file not found"),
        (("update", str(project), "--model", f"{nope}.pt2"), f"{nope}.pt2: model file not found"),
        (("update", str(project), "--model", "nope"), "'nope' is not a built-in sample (kws, vww, ic, ad, sww) nor a .py"),
        (("update", str(project), "--model", str(MODELS / "update_v1.py"), "--calibration", f"{nope}.npz"),
         f"{nope}.npz: calibration data not found"),
        (("update", str(project), "--model", str(MODELS / "update_v1.py"), "--board", "nope"), "unknown board 'nope'"),
    ):
        r = armgen_here(*args)
        assert said in one_error_line(r), (args, r.stderr)
        assert "compiling" not in r.stderr and len(r.stderr.strip().splitlines()) <= 2, r.stderr  # the error, a hint
        assert tree(project) == before and sorted(tmp_path.iterdir()) == around, args


#: A section a team adds to armgen's linker script (bare metal), far from the lines a stack size changes.
NOINIT = "  .noinit (NOLOAD) : ALIGN(4)\n  {\n    *(.noinit*)\n  } > DTCM\n\n  /DISCARD/ :"


def test_an_edit_to_an_armgen_file_merges_against_its_last_render(tmp_path):
    """armgen's own file (the linker script) edited by the team and changed by armgen (a new stack size): merged
    three ways against armgen's last render, made again from the record and the committed program (no compile)
    and taken only with the record's digest; overlapping edits get markers and <file>.mine, exit 1; without an
    accepted base (the digest says armgen wrote something else) armgen's version is written, yours beside it.
    A project from a committed program (no export)."""
    pte = str(program("kws-cortex-m55")[1])
    ok(armgen_here("new", "kws", "--model", pte, "--board", BOARD, "--out", str(tmp_path / "a")), "armgen new")
    made = tmp_path / "a" / "kws"
    ld = Path("linker") / "kws.ld"
    text = (made / ld).read_text()
    assert text.count("  /DISCARD/ :") == 1 and text.count("__armgen_stack_size__ : 8192;") == 1, text
    for copy in "bc":
        shutil.copytree(tmp_path / "a", tmp_path / copy)

    merged = made
    (merged / ld).write_text(text.replace("  /DISCARD/ :", NOINIT))
    r = armgen_here("update", str(merged), "--model", pte, "--stack-size", "4096")
    assert r.returncode == 0, r.stderr
    row = [ln for ln in ANSI.sub("", r.stdout).splitlines() if " linker/kws.ld " in ln]
    assert len(row) == 1 and "merge (yours + armgen's)" in row[0] and "stack 8192 -> 4096" in row[0], r.stdout
    cmake = [ln for ln in ANSI.sub("", r.stdout).splitlines() if " CMakeLists.txt " in ln]  # its stack comment
    assert len(cmake) == 1 and "replace" in cmake[0] and "stack 8192 -> 4096" in cmake[0], r.stdout
    out = (merged / ld).read_text()
    assert ".noinit (NOLOAD)" in out and "__armgen_stack_size__ : 4096;" in out and "8192" not in out, out
    assert not (merged / f"{ld}.mine").exists()
    # the next update merges against this update's render (the record's digest moved on with it)
    r = armgen_here("update", str(merged), "--model", pte, "--stack-size", "2048")
    assert r.returncode == 0, r.stderr
    out = (merged / ld).read_text()
    assert ".noinit (NOLOAD)" in out and "__armgen_stack_size__ : 2048;" in out and "4096" not in out, out

    clash = tmp_path / "b" / "kws"
    ours = text.replace("__armgen_stack_size__ : 8192;", "__armgen_stack_size__ : 16384;  /* ours */")
    (clash / ld).write_text(ours)
    r = armgen_here("update", str(clash), "--model", pte, "--stack-size", "4096")
    err = ANSI.sub("", r.stderr)
    assert r.returncode == 1 and "linker/kws.ld (conflict markers; your version in linker/kws.ld.mine)" in err, err
    out = (clash / ld).read_text()
    assert "<<<<<<< yours\n" in out and ": 16384;  /* ours */\n=======\n" in out and ": 4096;\n>>>>>>> armgen\n" in out
    assert (clash / f"{ld}.mine").read_text() == ours
    r = armgen_here("update", str(clash), "--model", pte, "--dry-run")
    assert r.returncode == 2 and "linker/kws.ld still holds the conflict markers" in r.stderr, r.stderr

    other = tmp_path / "c" / "kws"
    (other / ld).write_text(text.replace("  /DISCARD/ :", NOINIT))
    record = other / "armgen.toml"
    digest = tomllib.loads(record.read_text())["files"]["linker/kws.ld"]
    record.write_text(record.read_text().replace(digest, "0" * 64))  # as if an older armgen wrote another text
    r = armgen_here("update", str(other), "--model", pte, "--stack-size", "4096")
    err = ANSI.sub("", r.stderr)
    assert r.returncode == 1 and "linker/kws.ld (armgen's file: its new version written" in err, err
    assert (other / ld).read_text().count(".noinit") == 0 and "<<<<<<<" not in (other / ld).read_text()
    assert ".noinit (NOLOAD)" in (other / f"{ld}.mine").read_text()

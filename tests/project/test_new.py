"""`armgen new` and the render stage: the files of a bare-metal project, deterministic output,
atomic writes, and every bad input with its message, exit code and no partial directory.

The program is the committed kws fixture (tests/data/programs, a real kws compile made by its make.py; the
slow tier checks it is still what the pinned ExecuTorch produces); `armgen new --model <x>.pte` picks up the
report beside it, so neither these tests nor the CLI they run compile anything.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, cast

import pytest
import yaml

from _narrow import present
from _programs import armgen, program, tree
from armgen.boards import BOARDS_DIR, load_board
from armgen.errors import ProjectError
from armgen.project.render import render_project, write_project, write_project_result
from armgen.project.spec import make_spec
from armgen.project.zephyr import zephyr_placement


@pytest.fixture(scope="module")
def kws():
    return program("kws-cortex-m55")


@pytest.fixture(scope="module")
def kws_spec(kws):
    report, pte, report_path = kws
    return make_spec(report, load_board("qemu_mps3_an547"), name="kws", pte_path=pte, report_path=report_path,
                     rtos="baremetal")


def test_bare_metal_project_files(kws_spec):
    files = render_project(kws_spec).files
    for path in (
        "CMakeLists.txt", "armgen.toml", "cmake/arm-none-eabi-gcc.cmake", "cmake/executorch.cmake",
        "linker/kws.ld", "model/kws.pte", "model/kws.report.json", "model/selected_operators.yaml",
        "src/main.cpp", "src/model/armgen_model.h", "src/model/armgen_model.cpp", "src/model/armgen_pools.c",
        "src/model/armgen_model_pte.S", "src/platform/startup.c", "src/platform/platform.c",
        "src/platform/et_pal.cpp", "src/armgen/sample_io.c", "src/armgen/armgen_print.c",
    ):  # fmt: skip
        assert path in files, path
    assert "src/platform/npu.c" not in files and "cmake/ethos_u.cmake" not in files  # no NPU here
    # one console driver, the board's (semihosting on an547); armgen_platform_init is defined once
    assert [p for p in files if p.startswith("src/platform/console/")] == [
        "src/platform/console/armgen_console.h", "src/platform/console/semihosting.c"]
    assert sum(data.count(b"void armgen_platform_init(void) {") for data in files.values()) == 1
    report = kws_spec.report
    assert files["model/kws.pte"] == kws_spec.pte_path.read_bytes()

    pools_c = files["src/model/armgen_pools.c"].decode()
    pools_h = files["src/model/armgen_pools.h"].decode()
    for i, size in enumerate(report.planned_buffers, start=1):
        assert f"#define ARMGEN_POOL_PLANNED_{i}_SIZE {size}u" in pools_h
        assert f'section(".armgen_pool.planned_{i}"), aligned(16)' in pools_c
    assert f"#define ARMGEN_POOL_METHOD_SIZE {kws_spec.method_allocator_bound}u" in pools_h
    # Outputs are read in place from the planned output tensor: the example keeps no output buffer.
    main_cpp, model_h = files["src/main.cpp"].decode(), files["src/model/armgen_model.h"].decode()
    report_cpp = files["src/armgen/armgen_report.h"].decode()
    assert "const void* armgen_model_output_buffer(size_t index);" in model_h
    assert "armgen_model_output_buffer(0)" in report_cpp and "g_output" not in main_cpp + report_cpp
    # kws has no temp pool: the lookup scratch of load_method borrows planned_1 (spec.load_scratch).
    assert "#define ARMGEN_POOL_TEMP_SIZE 0u" in pools_h and kws_spec.load_scratch is not None
    assert f"#define ARMGEN_LOAD_SCRATCH_SIZE {kws_spec.load_scratch[1]}u" in pools_h
    assert "#define ARMGEN_LOAD_SCRATCH_BASE armgen_pool_planned_1" in pools_h

    # The linker script places every pool section in its region, NOLOAD, and the model in flash.
    ld = files["linker/kws.ld"].decode()
    for p in kws_spec.pools:
        assert re.search(rf"{re.escape(p.section)} \(NOLOAD\) : ALIGN\(16\)\s*\{{\s*KEEP\(\*\({re.escape(p.section)}\)\)\s*\}} > {p.region}", ld)
    assert re.search(r"\.armgen_model : ALIGN\(16\)\s*\{\s*KEEP\(\*\(\.armgen_model\)\)\s*\} > ITCM", ld)
    assert "ORIGIN = 0x10000000" in ld and "__StackTop" in ld and "__HeapBase" in ld

    # The model is embedded with .incbin, 16-byte aligned, in .armgen_model.
    asm = files["src/model/armgen_model_pte.S"].decode()
    assert '.incbin "kws.pte"' in asm and ".balign 16" in asm and ".section .armgen_model" in asm

    # Toolchain flags from the board; the op list drives ExecuTorch's selective build.
    assert "-mcpu=cortex-m55" in files["cmake/arm-none-eabi-gcc.cmake"].decode()
    sel = yaml.safe_load(files["model/selected_operators.yaml"])
    assert sorted(sel["operators"]) == sorted(kws_spec.selected_operators)
    assert not sel["include_all_operators"]
    cm = files["cmake/executorch.cmake"].decode()
    assert "generate_bindings_for_kernels" in cm
    assert f"MAX_KERNEL_NUM={len(set(sel['operators']))}" in cm  # one slot per registered kernel
    assert 'set(CMSIS_OPTIMIZATION_LEVEL "-Ofast" CACHE STRING' in cm  # Cortex-M55: Helium keeps CMSIS-NN's default

    # I/O quantization parameters are constants of the C API.
    h = files["src/model/armgen_model.h"].decode()
    inp = report.inputs[0]
    assert f"#define ARMGEN_INPUT0_NUMEL {inp.nbytes // (4 if inp.dtype == 'float32' else 1)}" in h
    if inp.scale is not None:
        assert "#define ARMGEN_INPUT0_QUANTIZED 1" in h and f"#define ARMGEN_INPUT0_ZERO_POINT {inp.zero_point}" in h
    assert "ARMGEN_OPERATOR_MISSING = 20" in h  # ExecuTorch's Error::OperatorMissing = 0x14


def test_project_record(kws_spec):
    rec = tomllib.loads(render_project(kws_spec).files["armgen.toml"].decode())
    for key in ("name", "board", "rtos", "backend", "target", "cpu", "elf", "map", "armgen_version",
                "executorch_version"):  # fmt: skip
        assert key in rec, key
    assert rec["elf"] == "build/kws.elf" and rec["map"] == "build/kws.map"
    assert rec["board"] == "qemu_mps3_an547" and rec["rtos"] == "baremetal" and rec["backend"] == "cortex-m"
    assert rec["model"]["sha256"] == kws_spec.report.pte_sha256 and rec["model"]["pte"] == "model/kws.pte"
    assert [(p["name"], p["bytes"], p["region"], p["section"]) for p in rec["pools"]] == [
        (p.name, p.bytes, p.region, p.section) for p in kws_spec.pools
    ]
    assert rec["pools"][0]["bytes"] == kws_spec.report.planned_buffers[0]
    # the board's own flash/RAM budgets stay in the board file (a copy here went stale: --force keeps
    # this table); armgen size resolves them from the board
    assert "flash" not in rec["budgets"] and "ram" not in rec["budgets"]
    from armgen.firmware.size import resolve_budgets

    resolved = resolve_budgets(kws_spec.board, rec["budgets"])
    assert (resolved.flash, resolved.ram) == (kws_spec.board.budgets.flash, kws_spec.board.budgets.ram)


def test_force_drops_the_budgets_older_armgen_copied_from_the_board(tmp_path):
    """Projects written before boards stated their budgets carry the regions' whole capacity as
    [budgets] flash/ram (an547: ram = 273154048, its DDR window included); --force must not keep those
    as if they were the user's, but keeps what the user set."""
    from armgen.pipeline import _user_budgets

    project = tmp_path / "old"
    project.mkdir()
    (project / "armgen.toml").write_text(
        'schema_version = 1\nname = "old"\nboard = "qemu_mps3_an547"\nrtos = "baremetal"\n'
        '[budgets]\nflash = 524288\nram = 273154048\n[budgets.components]\nmodel = "40 KiB"\n')
    assert _user_budgets(project) == {"components": {"model": "40 KiB"}}
    (project / "armgen.toml").write_text(
        'schema_version = 1\nname = "old"\nboard = "qemu_mps3_an547"\nrtos = "baremetal"\n'
        '[budgets]\nflash = 400000\nram = "1 MiB"\n')
    assert _user_budgets(project) == {"flash": 400000, "ram": "1 MiB"}


def test_rendering_twice_is_byte_identical(kws_spec, tmp_path):
    a = render_project(kws_spec).files
    b = render_project(kws_spec).files
    assert a == b
    da = write_project(render_project(kws_spec), tmp_path / "a")
    db = write_project(render_project(kws_spec), tmp_path / "b")
    assert tree(da) == tree(db) == a


def test_force_replaces_atomically_and_keeps_build(kws_spec, tmp_path):
    dest = write_project(render_project(kws_spec), tmp_path)
    (dest / "build").mkdir()
    (dest / "build" / "keep.txt").write_text("x")
    (dest / "stale.txt").write_text("old")
    with pytest.raises(ProjectError, match="already exists"):
        write_project(render_project(kws_spec), tmp_path)
    assert (dest / "stale.txt").exists()  # untouched by the refused write
    generated = render_project(kws_spec).files
    (dest / "src" / "mycode.c").write_bytes(b"int mine(void) { return 42; }\n")
    (dest / "src" / "main.cpp").write_text("edited by hand\n")  # a generated file: --force replaces it
    old_pools = (dest / "src" / "model" / "armgen_pools.c").stat().st_mtime_ns
    result = write_project_result(render_project(kws_spec), tmp_path, force=True)
    assert result.path == dest
    # never lost work: files armgen does not generate are carried over byte for byte
    assert result.kept == ("src/mycode.c", "stale.txt")
    assert (dest / "stale.txt").read_text() == "old"
    assert (dest / "src" / "mycode.c").read_bytes() == b"int mine(void) { return 42; }\n"
    assert (dest / "build" / "keep.txt").read_text() == "x"
    assert (dest / "src" / "main.cpp").read_bytes() == generated["src/main.cpp"]  # generated: replaced
    assert (dest / "src" / "model" / "armgen_pools.c").stat().st_mtime_ns == old_pools  # unchanged, same mtime
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kws"]  # no temp or trash left behind


def test_force_refuses_when_a_user_file_is_in_the_way(kws_spec, tmp_path):
    """A directory of the user's where armgen writes a file: refused, old project untouched."""
    dest = write_project(render_project(kws_spec), tmp_path)
    (dest / "notes.md").write_text("mine")
    (dest / "README.md").unlink()
    (dest / "README.md").mkdir()
    (dest / "README.md" / "draft.txt").write_text("draft")
    before = tree(dest)
    with pytest.raises(ProjectError, match="README.md: it is a directory"):
        write_project(render_project(kws_spec), tmp_path, force=True)
    assert tree(dest) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kws"]


def test_project_directories_are_not_private(kws_spec, tmp_path):
    """mkdtemp's 0o700 must not leak into the project: directories get 0o777 & ~umask."""
    import os
    import stat

    umask = os.umask(0o022)
    try:
        dest = write_project(render_project(kws_spec), tmp_path)
        assert stat.S_IMODE(dest.stat().st_mode) == 0o755
        assert stat.S_IMODE((dest / "src").stat().st_mode) == 0o755
        assert stat.S_IMODE((dest / "armgen.toml").stat().st_mode) == 0o644
        again = write_project(render_project(kws_spec), tmp_path, force=True)
        assert stat.S_IMODE(again.stat().st_mode) == 0o755
        os.umask(0o027)
        other = write_project(render_project(kws_spec), tmp_path / "g")
        assert stat.S_IMODE(other.stat().st_mode) == 0o750
    finally:
        os.umask(umask)


# ---- the CLI --------------------------------------------------------------------------------------
def test_new_cli_with_compiled_program(kws, tmp_path):
    report, pte, _ = kws
    r = armgen("new", "kws", "--board", "qemu_mps3_an547", "--model", str(pte), "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    project = tmp_path / "kws"
    rec = tomllib.loads((project / "armgen.toml").read_text())
    assert rec["rtos"] == "baremetal" and rec["backend"] == "cortex-m"  # defaults for a QEMU board
    assert [p["bytes"] for p in rec["pools"] if p["name"].startswith("planned_")] == list(report.planned_buffers)
    assert "planned_1" in r.stdout and "created" in r.stderr
    assert "kept" not in r.stderr

    # --force keeps the user's own files and says so; generated files are replaced.
    (project / "src" / "mycode.c").write_text("mine\n")
    (project / "notes.md").write_text("notes\n")
    (project / "armgen.toml").write_text("# hand edit\n")
    r = armgen("new", "kws", "--board", "qemu_mps3_an547", "--model", str(pte), "--out", str(tmp_path), "--force")
    assert r.returncode == 0, r.stderr
    assert "kept 2 files armgen does not generate: notes.md, src/mycode.c" in r.stderr
    assert (project / "src" / "mycode.c").read_text() == "mine\n" and (project / "notes.md").read_text() == "notes\n"
    assert tomllib.loads((project / "armgen.toml").read_text())["name"] == "kws"
    help_text = armgen("new", "--help").stdout
    assert "generates is overwritten" in " ".join(help_text.split())


def _assert_refused(r, tmp_path: Path, before: set[str], pattern: str) -> None:
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert re.search(pattern, r.stderr), r.stderr
    assert "Traceback" not in r.stderr
    assert r.stderr.count("armgen: error:") == 1
    assert {p.name for p in tmp_path.iterdir()} == before  # nothing written, nothing left behind


def test_bad_input_existing_directory(kws, tmp_path):
    (tmp_path / "kws").mkdir()
    (tmp_path / "kws" / "mine.c").write_text("keep me")
    r = armgen("new", "kws", "--board", "qemu_mps3_an547", "--model", str(kws[1]), "--out", str(tmp_path))
    _assert_refused(r, tmp_path, {"kws"}, r"armgen: error: .*kws already exists")
    assert "--force" in r.stderr
    assert (tmp_path / "kws" / "mine.c").read_text() == "keep me"


def test_force_never_replaces_a_directory_armgen_did_not_make(kws, kws_spec, tmp_path):
    """Issue 41: `--force` into the user's own directory (no armgen.toml) refuses in one line, before compiling,
    and leaves their main.cpp and README alone; write_project refuses too (the last line of defence)."""
    mine = tmp_path / "kws"
    (mine / "src").mkdir(parents=True)
    (mine / "src" / "main.cpp").write_text("int main() { return 0; }  // theirs\n")
    (mine / "README.md").write_text("their notes\n")
    before = tree(mine)
    r = armgen("new", "kws", "--board", "qemu_mps3_an547", "--model", str(kws[1]), "--out", str(tmp_path), "--force")
    _assert_refused(r, tmp_path, {"kws"}, r"armgen: error: .*kws is not an armgen project \(no armgen.toml\)")
    assert tree(mine) == before
    with pytest.raises(ProjectError, match="not an armgen project"):
        write_project(render_project(kws_spec), tmp_path, force=True)
    assert tree(mine) == before and sorted(p.name for p in tmp_path.iterdir()) == ["kws"]


@pytest.mark.parametrize("name,pattern", [
    ("../x", r"project name '\.\./x' is a path"),
    ("1kws", r"project name '1kws' is not a C/CMake identifier"),
    ("k-ws", r"project name 'k-ws' is not a C/CMake identifier"),
])  # fmt: skip
def test_bad_input_name(kws, tmp_path, name, pattern):
    out = tmp_path / "out"
    out.mkdir()
    r = armgen("new", name, "--board", "qemu_mps3_an547", "--model", str(kws[1]), "--out", str(out))
    _assert_refused(r, out, set(), pattern)
    assert {p.name for p in tmp_path.iterdir()} == {"out"}


def test_stack_size_option(kws, tmp_path):
    r = armgen("new", "kws", "--board", "qemu_mps3_an547", "--model", str(kws[1]), "--out", str(tmp_path),
               "--stack-size", "2304")  # fmt: skip
    assert r.returncode == 0, r.stderr
    project = tmp_path / "kws"
    assert tomllib.loads((project / "armgen.toml").read_text())["memory"]["stack"] == 2304
    assert "__stack_size__ = DEFINED(__armgen_stack_size__) ? __armgen_stack_size__ : 2304;" in (
        project / "linker" / "kws.ld").read_text()
    r = armgen("new", "kws_auto", "--board", "qemu_mps3_an547", "--model", str(kws[1]), "--out", str(tmp_path),
               "--stack-size", "auto")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert tomllib.loads((tmp_path / "kws_auto" / "armgen.toml").read_text())["memory"]["stack"] == "auto"
    # Zephyr on its QEMU machine: armgen build sizes the main, ISR and idle stacks into armgen-stacks.conf
    r = armgen("new", "kws_zauto", "--board", "qemu_mps3_an547", "--rtos", "zephyr", "--zephyr-release", "3.7",
               "--model", str(kws[1]), "--out", str(tmp_path), "--stack-size", "auto")  # fmt: skip
    assert r.returncode == 0, r.stderr
    zauto = tmp_path / "kws_zauto"
    assert tomllib.loads((zauto / "armgen.toml").read_text())["memory"]["stack"] == "auto"
    assert 'list(APPEND EXTRA_CONF_FILE "${CMAKE_CURRENT_SOURCE_DIR}/armgen-stacks.conf")' in (
        zauto / "CMakeLists.txt").read_text()
    assert not (zauto / "armgen-stacks.conf").exists()  # armgen build writes it
    assert "| `armgen-stacks.conf` | the main, ISR and idle stack sizes" in (zauto / "README.md").read_text()
    # where armgen build could not measure the image: refused before compiling, nothing written
    for board, pattern in (("alif_e8 --rtos baremetal", r"board 'alif_e8_hp' does not run on QEMU"),
                           ("stm32f4_disco --rtos zephyr --zephyr-release 3.7",
                            r"--stack-size auto: the QEMU machine of board 'stm32f4_disco' \(qemu_mps2_an386\) has "
                            r"no target in Zephyr 3.7"),
                           ("stm32f4_disco --rtos zephyr --zephyr-release 4.1",
                            r"sizing its Zephyr stacks from its stand-in qemu_mps2_an386 is not supported yet")):
        out = tmp_path / "refused"
        out.mkdir()
        r = armgen("new", "kws", "--board", *board.split(), "--model", str(kws[1]), "--out", str(out),
                   "--stack-size", "auto")  # fmt: skip
        _assert_refused(r, out, set(), pattern)
        out.rmdir()
    out = tmp_path / "bad"
    out.mkdir()
    r = armgen("new", "kws", "--board", "qemu_mps3_an547", "--model", str(kws[1]), "--out", str(out),
               "--stack-size", "1000001")  # fmt: skip
    _assert_refused(r, out, set(), r"stack size 1000001 B: must be a multiple of 8")


def test_bad_input_ethos_u_without_npu(kws, tmp_path):
    r = armgen("new", "kws", "--board", "qemu_mps3_an547", "--backend", "ethos-u", "--model", str(kws[1]),
               "--out", str(tmp_path))  # fmt: skip
    _assert_refused(r, tmp_path, set(), r"board 'qemu_mps3_an547' has no Ethos-U NPU")


def test_bad_input_program_for_another_npu(kws, tmp_path):
    """An Ethos-U program compiled for ethos-u55-256 is refused for corstone_320 (ethos-u85-256)."""
    import dataclasses
    import shutil

    from armgen.model.program_report import DelegateInfo, ProgramReport, VelaInfo

    report, pte, report_path = kws
    prog = tmp_path / "eu"
    prog.mkdir()
    shutil.copy(pte, prog / "kws.pte")
    vela = VelaInfo("ethos-u55-256", "Ethos_U55_High_End_Embedded", "Shared_Sram", 22048, 0, 1816, 30240)
    dataclasses.replace(ProgramReport.load(report_path), backend="ethos-u", target="ethos-u55-256",
                        delegates=(DelegateInfo("EthosUBackend", 34000, vela),)).save(prog / "kws.report.json")
    out = tmp_path / "out"
    out.mkdir()
    r = armgen("new", "kws", "--board", "corstone_320", "--model", str(prog / "kws.pte"), "--out", str(out))
    _assert_refused(r, out, set(),
                    r"armgen: error: kws\.pte was compiled for ethos-u55-256, but board corstone_320 has an ethos-u85-256")
    assert "hint: compile again: armgen compile kws --target ethos-u85-256 (or armgen new without --model)" in r.stderr


def test_bad_input_program_for_another_cpu(kws, tmp_path):
    r = armgen("new", "kws", "--board", "qemu_mps2_an386", "--model", str(kws[1]), "--out", str(tmp_path))
    _assert_refused(r, tmp_path, set(), r"compiled for cortex-m55, but board 'qemu_mps2_an386' has a cortex-m4")
    assert "hint: compile again: armgen compile kws --target cortex-m4 (or armgen new without --model)" in r.stderr
    assert "--backend" not in r.stderr


def test_bad_input_model_too_large(kws, tmp_path):
    """A board file whose RAM cannot hold the kws pools: the region and shortfall are named."""
    data = yaml.safe_load((BOARDS_DIR / "qemu_mps3_an547.yaml").read_text())
    for r in data["regions"]:
        if r["name"] == "DTCM":
            r["size"] = 24 * 1024
        elif "pools" in r["uses"]:
            r["uses"] = [u for u in r["uses"] if u != "pools"]
    data.pop("budgets", None)
    board_file = tmp_path / "tiny_an547.yaml"
    board_file.write_text(yaml.safe_dump(data))
    out = tmp_path / "out"
    out.mkdir()
    r = armgen("new", "kws", "--board", str(board_file), "--model", str(kws[1]), "--out", str(out))
    _assert_refused(r, out, set(), r"fits no region: DTCM .* short by \d+ bytes")


def test_bad_input_unknown_sample(tmp_path):
    r = armgen("new", "nosuchsample", "--board", "qemu_mps3_an547", "--out", str(tmp_path))
    _assert_refused(r, tmp_path, set(), r"'nosuchsample' is not a built-in sample \(.*kws.*\)")


def test_embedded_sample_input_is_the_reference_bytes_as_they_are(tmp_path):
    """The reference's input_<i> is in memory (dim) order: embedded unchanged. Reshaping it to the
    logical shape and transposing again scrambles a 3-channel channels_last input (vww, ic)."""
    from types import SimpleNamespace

    import numpy as np

    from armgen.project.render import _sample_inputs

    x = np.arange(-60, 60, dtype=np.int8).reshape(1, 3, 5, 8)  # logical NCHW
    stored = np.ascontiguousarray(x.transpose(0, 2, 3, 1))  # what the compile stage saves (NHWC)
    io = SimpleNamespace(index=0, shape=(1, 3, 5, 8), dim_order=(0, 2, 3, 1), numel=120, dtype="int8")

    def embedded(arr):
        np.savez(tmp_path / "r.npz", input_0=arr)
        lines, _ = _sample_inputs(cast(Any, SimpleNamespace(reference_path=tmp_path / "r.npz", inputs=[io])))
        return [int(v) for line in lines[0] for v in line.rstrip(",").split(", ")]

    assert embedded(stored) == stored.reshape(-1).tolist()
    assert embedded(x) == stored.reshape(-1).tolist()  # a logical-order array is put in memory order


# ---- Zephyr: one region for data and stack -----------------------------------------------------
@pytest.fixture(scope="module")
def zephyr_programs():
    """kws compiled (torch.export, ExecuTorch lowering, Vela) for the NPU of alif_e8 and corstone_300: the
    committed fixtures, {board: (report, pte, report path)}."""
    return {board_name: program(f"kws-{board_name}") for board_name in ("alif_e8", "corstone_300")}


@pytest.mark.parametrize("board_name", ["alif_e8", "corstone_300"])
def test_zephyr_stack_and_data_region_is_the_overlays_zephyr_sram(zephyr_programs, board_name):
    """armgen.toml, the `new` summary (spec.stack_region), the README and the overlay name one region."""
    from armgen.project import zephyr

    report, pte, report_path = zephyr_programs[board_name]
    board = load_board(board_name)
    spec = make_spec(report, board, name="kws", pte_path=pte, report_path=report_path,
                     zephyr=zephyr_placement(board))
    assert spec.rtos == "zephyr" and spec.uses_npu
    files = render_project(spec).files
    rec = tomllib.loads(files["armgen.toml"].decode())
    facts = zephyr.ZEPHYR_DTS[present(board.zephyr).target("4.4")]
    overlay = files[f"boards/{zephyr.normalise_board_target(present(board.zephyr).target('4.4'))}.overlay"].decode()
    m = re.search(r"zephyr,sram = &(\w+);", overlay)
    label = m.group(1) if m else facts.regions[facts.sram].label  # no line: the board's default stays
    (sram,) = [name for name, dt in facts.regions.items() if dt.label == label]
    assert rec["regions"]["stack"] == rec["regions"]["data"] == sram == spec.stack_region == spec.data_region
    readme = files["README.md"].decode()
    assert f"| main stack | {spec.stack_size} | zephyr,sram ({sram}) |" in readme
    # zephyr,sram is where the NPU pools are (not Alif's DTCM, which the NPU sees only through an alias)
    assert all(p.region == sram for p in spec.pools if p.npu)
    # and the region's use counts the stack, heap and data reserve where they really are
    use = {u.name: u.placed for u in spec.region_use}
    assert use[sram] >= spec.stack_size + spec.heap_size + 8 * 1024 + sum(p.bytes for p in spec.pools if p.region == sram)


# ---- README "Flash and watch": the board file's flash_and_watch facts ---------------------------------
def _flash_watch_section(board_name: str, rtos: str, release: str | None) -> str:
    """The README's section alone, through render's own jinja environment (no program needed)."""
    from armgen.project.flash_watch import flash_watch_context
    from armgen.project.render import _environment

    board = load_board(board_name)
    tmpl = _environment().get_template("common/partials/flash_and_watch.md.j2")
    return tmpl.render(board=board, flash_watch=flash_watch_context(board, rtos, "kws", release),
                       zephyr_release_name=release)


@pytest.mark.parametrize("board_name", sorted(p.stem for p in BOARDS_DIR.glob("*.yaml") if p.stem != "aliases"))
def test_flash_and_watch_section_for_every_board_and_flavour(board_name):
    board = load_board(board_name)
    flavours = [("baremetal", None)] + [("zephyr", rel) for rel in (board.zephyr.releases if board.zephyr else ())]
    for rtos, release in flavours:
        text = _flash_watch_section(board_name, rtos, release)
        fw = present(board.flash_and_watch)
        zephyr = rtos == "zephyr"
        flash = present(fw.zephyr_flash) if zephyr else fw.baremetal_flash
        console = present(fw.zephyr_console) if zephyr else fw.baremetal_console
        assert text.startswith("\n\n## Flash and watch\n\n") and not text.endswith("\n"), (rtos, release)
        assert f"Flash with {flash.tool}" in text
        if rtos == "zephyr":
            assert f"default runner for this board: `{flash.runner(release)}`" in text
        assert f"Watch the console on {console.uart}, " in text
        assert (f"{console.baud} baud" if console.baud else "no line rate") in text
        assert flash.source in text and console.source in text
        assert "{elf}" not in text and "{bin}" not in text and "{name}" not in text
        image = "build/zephyr/zephyr.elf" if rtos == "zephyr" else "build/kws.elf"
        assert image in text or not any("{elf}" in c for c in flash.commands)


def test_readmes_have_flash_and_watch(kws):
    """A Zephyr and a bare-metal project for the Alif E8 (HP core; the CPU-only kws program, compiled once per
    session): the README names the runner/tool, the console and its baud."""
    report, pte, report_path = kws
    board = load_board("alif_e8_hp")
    bm = make_spec(report, board, name="kws", pte_path=pte, report_path=report_path, rtos="baremetal",
                   backend="cortex-m")
    zp = make_spec(report, board, name="kws", pte_path=pte, report_path=report_path, backend="cortex-m",
                   zephyr=zephyr_placement(board))
    bm_readme = render_project(bm).files["README.md"].decode()
    z_files = render_project(zp).files
    z_readme = z_files["README.md"].decode()
    assert render_project(zp).files["README.md"] == z_files["README.md"]  # deterministic
    for readme in (bm_readme, z_readme):
        assert readme.count("\n## Flash and watch\n") == 1
        assert "Watch the console on UART4" in readme and "115200 baud" in readme
        # the section sits between the build instructions and the layout
        assert readme.index("## Flash and watch") < readme.index("## Layout")
    assert "Flash with Alif Security Toolkit (SETOOLS)" in bm_readme
    assert "app-gen-toc --filename build/config/kws.json && app-write-mram" in bm_readme
    assert "arm-none-eabi-objcopy -O binary build/kws.elf build/kws.bin" in bm_readme
    assert '"cpu_id": "M55_HP", "mramAddress": "0x80008000"' in bm_readme
    assert "Flash with west flash (SEGGER J-Link) (Zephyr 4.4's default runner for this board: `jlink`)" in z_readme
    assert "\n```sh\nwest flash\n```\n" in z_readme


@pytest.mark.parametrize("board_name", sorted(p.stem for p in BOARDS_DIR.glob("*.yaml") if p.stem != "aliases"))
def test_bare_metal_project_gets_its_boards_console_driver_and_no_other(board_name):
    """Which console file a project gets is decided in Python (writes_template), not by a template that renders
    to nothing: exactly one driver template applies to each board, and it is the one for its console."""
    from types import SimpleNamespace

    from armgen.paths import TEMPLATES_DIR
    from armgen.project.render import CONSOLE_DIR, console_driver, writes_template

    board = load_board(board_name)
    spec: Any = SimpleNamespace(board=board)  # writes_template reads the board only
    drivers = sorted(p.name.removesuffix(".c.j2") for p in (TEMPLATES_DIR / "baremetal" / "project" / CONSOLE_DIR)
                     .glob("*.c.j2"))
    assert drivers == ["cmsdk_uart", "ns16550", "semihosting", "stm32_usart"]
    assert [d for d in drivers if writes_template(f"{CONSOLE_DIR}{d}.c", spec)] == [console_driver(board)]
    bm = board.baremetal
    by_kind = {"cmsdk": "cmsdk_uart", "ns16550": "ns16550", "stm32_usart_v1": "stm32_usart", "stm32_usart_v2": "stm32_usart"}
    assert console_driver(board) == ("semihosting" if bm.console == "semihosting" else by_kind[present(bm.uart_kind)])

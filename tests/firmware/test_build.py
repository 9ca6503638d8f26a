"""`armgen build`: real CMake + Ninja + arm-none-eabi-gcc builds of generated projects.

Without a workspace only the bad-input paths run (no workspace, no cross compiler, not a project).
With one (marker `workspace`; skipped with the reason otherwise) kws is built for real for
qemu_mps3_an547 (Cortex-M55, CMSIS-NN MVE) and qemu_mps2_an386 (Cortex-M4, DSP) and run on QEMU,
and for corstone_320 with the Ethos-U85 delegate (link only: there is no NPU model here).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from _narrow import present
from _programs import ANSI, armgen, compiled
from armgen.boards import load_board
from armgen.errors import BuildError
from armgen.firmware.build import TOOLCHAIN_PACKAGES, build_project
from armgen.firmware.size import validate_report
from armgen.model.method_allocator import operator_lookup_scratch
from armgen.project.record import load_project
from armgen.project.render import render_project, write_project
from armgen.project.spec import make_spec


def _new(tmp: Path, sample: str, target: str, board: str) -> Path:
    report, pte, report_path = compiled(sample, target)
    spec = make_spec(report, load_board(board), name=sample, pte_path=pte, report_path=report_path, rtos="baremetal")
    return write_project(render_project(spec), tmp)


# ---- without a workspace -------------------------------------------------------------------------
def test_no_workspace_says_how_to_make_one(tmp_path):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "armgen.toml").write_text(
        'name = "p"\nboard = "qemu_mps3_an547"\nrtos = "baremetal"\nbackend = "cortex-m"\n'
        'elf = "build/p.elf"\nmap = "build/p.map"\n'
    )
    r = armgen("build", str(tmp_path / "proj"), env={"ARMGEN_WORKSPACE": str(tmp_path / "no-workspace")})
    assert r.returncode == 2
    err = ANSI.sub("", r.stderr)
    assert "armgen: error:" in err and "no-workspace" in err
    assert "armgen workspace init" in err
    assert not (tmp_path / "proj" / "build" / "build.ninja").exists()


def test_missing_cross_compiler_names_debian_packages(tmp_path):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "armgen.toml").write_text(
        'name = "p"\nboard = "qemu_mps3_an547"\nrtos = "baremetal"\nbackend = "cortex-m"\n'
        'elf = "build/p.elf"\nmap = "build/p.map"\n'
    )
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("cmake", "ninja"):  # everything but the cross compiler
        if shutil.which(tool):
            os.symlink(present(shutil.which(tool)), bindir / tool)
    armgen_exe = shutil.which("armgen") or str(Path(sys.executable).with_name("armgen"))
    r = subprocess.run([armgen_exe, "build", str(tmp_path / "proj")], capture_output=True, text=True,
                       env={**os.environ, "PATH": str(bindir)})  # fmt: skip
    assert r.returncode == 2
    err = ANSI.sub("", r.stderr)
    assert "arm-none-eabi-gcc not found" in err
    assert TOOLCHAIN_PACKAGES in err


def _fake_workspace(root: Path, identifier: str, version: str) -> Path:
    """The files a firmware build checks first, without sources (the build must stop before cmake)."""
    et = root / "modules" / "lib" / "executorch"
    (et / "schema").mkdir(parents=True)
    (et / "CMakeLists.txt").write_text("# not a real ExecuTorch\n")
    (et / "version.txt").write_text(version + "\n")
    (et / "schema" / "program.fbs").write_text(f'namespace executorch_flatbuffer;\nfile_identifier "{identifier}";\n')
    (root / "modules" / "lib" / "cmsis-nn").mkdir(parents=True)
    (root / "modules" / "lib" / "cmsis-nn" / "CMakeLists.txt").write_text("# not a real CMSIS-NN\n")
    return root


def test_program_the_runtime_cannot_load_is_refused(tmp_path):
    proj = tmp_path / "proj"
    (proj / "model").mkdir(parents=True)
    (proj / "armgen.toml").write_text(
        'name = "p"\nboard = "qemu_mps3_an547"\nrtos = "baremetal"\nbackend = "cortex-m"\n'
        'elf = "build/p.elf"\nmap = "build/p.map"\n[model]\nreport = "model/p.report.json"\n'
    )
    (proj / "model" / "p.report.json").write_text('{"file_identifier": "ET12", "executorch_version": "1.5.1"}')
    ws = _fake_workspace(tmp_path / "ws", "ET13", "1.6.0")
    r = armgen("build", str(proj), "--workspace", str(ws))
    err = ANSI.sub("", r.stderr)
    assert r.returncode == 2, err
    assert "the program has file identifier ET12 but the workspace's ExecuTorch runtime reads ET13" in err
    assert not (proj / "build" / "build.ninja").exists()

    # Same identifier, other version: only a warning (the fake sources then fail at configure).
    from armgen.firmware.build import check_program_compatibility

    ws2 = _fake_workspace(tmp_path / "ws2", "ET12", "1.5.0")
    warnings = check_program_compatibility(load_project(proj), ws2)
    assert warnings and "executorch 1.5.1" in warnings[0] and "1.5.0" in warnings[0]


def test_not_a_project(tmp_path):
    r = armgen("build", str(tmp_path))
    assert r.returncode == 2
    assert "is not an armgen project (no armgen.toml)" in ANSI.sub("", r.stderr)


# ---- with a workspace: real builds ---------------------------------------------------------------
def _qemu(elf: Path, machine: str, cpu: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["qemu-system-arm", "-machine", machine, "-cpu", cpu, "-nographic", "-semihosting-config",
         "enable=on,target=native", "-icount", "shift=0", "-kernel", str(elf)],
        capture_output=True, text=True, timeout=300, cwd=cwd,
    )  # fmt: skip


def _lines(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line.startswith("ARMGEN "):
            key, _, rest = line[len("ARMGEN ") :].partition(" ")
            out.setdefault(key, []).append(rest)
    return out


def _ccache_log_counts(stats_log: Path) -> dict[str, int]:
    """The counters of ccache's stats log (``CCACHE_STATSLOG``: ``# source`` then one counter name per line,
    for every call made with it set): only this build's calls, whatever else the other test workers
    compile into the same cache meanwhile (the cache's global ``--print-stats`` counters count theirs too)."""
    counts: dict[str, int] = {}
    for line in stats_log.read_text().splitlines() if stats_log.is_file() else ():
        if line and not line.startswith("#"):
            counts[line.strip()] = counts.get(line.strip(), 0) + 1
    return counts


def _sizes(elf: Path) -> str:
    return subprocess.run(["arm-none-eabi-size", "-A", str(elf)], capture_output=True, text=True).stdout


@pytest.mark.workspace
@pytest.mark.needs_workspace
@pytest.mark.slow
@pytest.mark.parametrize("board,target,machine,cpu", [
    ("qemu_mps3_an547", "cortex-m55", "mps3-an547", "cortex-m55"),
    ("qemu_mps2_an386", "cortex-m4", "mps2-an386", "cortex-m4"),
])  # fmt: skip
def test_kws_builds_and_runs_on_qemu(tmp_path, monkeypatch, board, target, machine, cpu):
    project = _new(tmp_path, "kws", target, board)
    result = build_project(project)
    assert result.elf == project / "build" / "kws.elf" and result.elf.is_file()
    assert result.map == project / "build" / "kws.map" and result.map.is_file()
    assert result.compiled > 0
    print(f"{board}: clean build {result.seconds:.1f} s, {result.compiled} files\n{_sizes(result.elf)}")
    sized = armgen("size", str(project), "--json")
    assert sized.returncode == 0, sized.stderr
    validate_report(json.loads(sized.stdout), f"armgen size --json of {project}")  # the size report schema

    # The firmware checks its planned pools against MethodMeta and prints what it used.
    run = _qemu(result.elf, machine, cpu, project)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = _lines(run.stdout + run.stderr)  # QEMU 7.2 writes semihosting output to stderr
    assert lines.get("done") == [""]
    assert "error" not in lines
    report = compiled("kws", target)[0]
    pools = {m.group(1): (int(m.group(2)), int(m.group(3)))
             for m in (present(re.fullmatch(r"(\S+) reserved=(\d+) used=(\d+)", p)) for p in lines["pool"])}  # fmt: skip
    for i, size in enumerate(report.planned_buffers, start=1):
        assert pools[f"planned_{i}"] == (size, size)
    reserved, used = pools["method"]
    assert 0 <= reserved - used <= 256, pools["method"]
    # No temp pool: the operator-lookup scratch of load_method (ExecuTorch asks 28 B per kernel
    # argument) borrows the start of planned_1, idle until the first execute. The method pool's use is
    # still the replay's, so no TensorMeta fell back into it, and the outputs matched (above).
    assert "temp" not in pools
    rec = tomllib.loads((project / "armgen.toml").read_text())
    assert rec["memory"]["load_scratch"] == operator_lookup_scratch((project / "model" / "kws.pte").read_bytes())
    assert report.method_allocator is not None and used == report.method_allocator.method_use
    # Nothing allocates and snprintf goes to armgen's formatter: none of newlib's malloc or printf
    # machinery is linked.
    nm = subprocess.run(["arm-none-eabi-nm", str(result.elf)], capture_output=True, text=True).stdout
    symbols = {line.split()[-1] for line in nm.splitlines() if line.strip()}
    assert "__wrap_snprintf" in symbols
    assert not symbols & {"malloc", "_malloc_r", "free", "_free_r", "_svfprintf_r", "_printf_i", "snprintf"}
    stack = re.fullmatch(r"reserved=(\d+) used=(\d+)", lines["stack"][0])
    assert stack and 0 < int(stack.group(2)) < int(stack.group(1))
    assert len(lines["output"]) == len(report.outputs)
    values = lines["output"][0].split(" ", 1)[1].split(",")
    assert len(values) == report.outputs[0].nbytes // (4 if report.outputs[0].dtype == "float32" else 1)
    assert int(lines["ticks"][0]) > 0

    # A second project of the same program, elsewhere: with ccache on PATH its build takes the objects
    # from the cache (armgen.firmware.compiler_cache: CCACHE_BASEDIR = the project), and links the same ELF.
    if shutil.which("ccache"):
        twin = tmp_path / "elsewhere" / "kws"
        shutil.copytree(project, twin, ignore=shutil.ignore_patterns("build"))
        stats_log = tmp_path / "ccache-twin.log"
        monkeypatch.setenv("CCACHE_STATSLOG", str(stats_log))
        assert build_project(twin, size=False).elf.read_bytes() == result.elf.read_bytes()
        monkeypatch.delenv("CCACHE_STATSLOG")
        counts = _ccache_log_counts(stats_log)
        hits = counts.get("direct_cache_hit", 0) + counts.get("preprocessed_cache_hit", 0)
        misses = counts.get("cache_miss", 0)
        assert hits >= 0.95 * result.compiled and misses <= 0.05 * result.compiled, (hits, misses, result.compiled)

    # The product image does not read input.bin: no reader, no buffer. `armgen run`'s variant
    # (target kws_run of the same tree: build/kws-run.elf) has both; the buffer holds all inputs. It
    # shares the product's objects and runtime: it compiles armgen run's harness main (src/armgen/armgen_run_main.cpp,
    # instead of main.cpp) and the input reader, then links.
    # The product's example writes a pattern straight into the planned input (armgen_model_input_buffer):
    # no embedded sample input is linked.
    assert "input pattern" in (run.stdout + run.stderr)
    assert not {s for s in symbols if "input_file" in s or "armgen_sample_input" in s}
    variant = build_project(project, size=False, run_input=True)
    assert variant.elf == project / "build" / "kws-run.elf"
    assert variant.compiled == 2, variant.compiled
    assert not (project / "build" / "run-input").exists()
    nm = subprocess.run(["arm-none-eabi-nm", "-S", "-C", str(variant.elf)], capture_output=True, text=True).stdout
    buffer = next(line.split() for line in nm.splitlines() if line.endswith("g_input_file"))
    assert int(buffer[1], 16) == sum(t.nbytes for t in report.inputs)

    # Rebuilding after a model change recompiles only the object that embeds the .pte, then relinks.
    os.utime(project / "model" / "kws.pte")
    again = build_project(project)
    assert again.compiled == 1, again.compiled
    assert again.steps >= 2

    # [memory] stack = "auto": the image runs on QEMU, is relinked with high-water x 1.25 (8-byte steps)
    # and runs again; build/stack.json and the ELF's .stack say the same.
    toml = project / "armgen.toml"
    fixed = toml.read_text()
    toml.write_text(fixed.replace("stack = 8192", 'stack = "auto"'))
    auto = build_project(project)
    sizing = auto.stack
    assert sizing is not None and sizing.measured_with == 8192 and sizing.method == "measured"
    assert sizing.reserved % 8 == 0 and sizing.high_water <= sizing.reserved < 8192
    assert sizing.reserved >= sizing.high_water * 1.25
    assert json.loads((project / "build" / "stack.json").read_text())["reserved"] == sizing.reserved
    assert re.search(rf"^\.stack\s+{sizing.reserved}\s", _sizes(auto.elf), re.MULTILINE)
    assert result.size.ram - auto.size.ram == 8192 - sizing.reserved
    print(f"{board}: {sizing.describe()}")
    if board == "qemu_mps2_an386" and _kernel_key_patch_applied():
        # armgen's patch 0001 (modules/patches/): load_method no longer puts a 659 B kernel-key buffer on the
        # stack, so an inference is the deepest phase here: 732 B (1,208 B without the patch, 2026-12-06)
        assert sizing.high_water < 1000, sizing.describe()
    toml.write_text(fixed)  # back to bytes: the record's stack is linked again
    assert re.search(r"^\.stack\s+8192\s", _sizes(build_project(project, size=False).elf), re.MULTILINE)

    # A failing compile shows the compiler's first error and its file, and where the full log is.
    main = project / "src" / "main.cpp"
    original = main.read_text()
    main.write_text(original.replace("int main(void) {", "int main(void) { this_is_not_cpp;", 1))
    with pytest.raises(BuildError) as err:
        build_project(project, size=False)
    assert "src/main.cpp" in err.value.message and "this_is_not_cpp" in err.value.message
    assert "armgen-build.log" in (err.value.hint or "")

    # A fault ends the run with an ARMGEN error line and a non-zero exit status.
    main.write_text(original.replace("int main(void) {", "int main(void) { __builtin_trap();", 1))
    faulty = build_project(project, size=False)
    assert faulty.compiled == 1
    run = _qemu(faulty.elf, machine, cpu, project)
    assert run.returncode == 3
    assert re.search(r"^ARMGEN error HardFault .*pc=0x[0-9a-f]{8}", run.stdout + run.stderr, re.MULTILINE)


@pytest.mark.workspace
@pytest.mark.needs_workspace
@pytest.mark.slow
def test_kws_ethos_u_corstone_320_links(tmp_path):
    report, pte, report_path = compiled("kws", "ethos-u85-256")
    assert any(d.backend_id == "EthosUBackend" for d in report.delegates)
    spec = make_spec(report, load_board("corstone_320"), name="kws", pte_path=pte, report_path=report_path,
                     rtos="baremetal")  # fmt: skip
    project = write_project(render_project(spec), tmp_path)
    assert (project / "src" / "platform" / "npu.c").is_file()
    result = build_project(project)
    sizes = _sizes(result.elf)
    print(f"corstone_320: clean build {result.seconds:.1f} s\n{sizes}")
    nm = subprocess.run(["arm-none-eabi-nm", "-C", str(result.elf)], capture_output=True, text=True).stdout
    # LTO inlines the driver's entry points (ethosu_init ...) into their callers; its driver list and
    # the delegate's methods stay as symbols.
    assert "EthosUBackend::execute" in nm and "registered_drivers" in nm
    assert "__cxa_begin_catch" not in nm  # no C++ exception support dragged in by the delegate
    rec = tomllib.loads((project / "armgen.toml").read_text())
    temp = [p for p in rec["pools"] if p["name"] == "temp"]
    assert temp and temp[0]["bytes"] >= report.temp_allocator_size > 0


def _kernel_key_patch_applied() -> bool:
    """Whether the default workspace's ExecuTorch has armgen's kernel-key patch (modules/patches/)."""
    from armgen.workspace import find_workspace
    from armgen.workspace.patches import APPLIED, patch_state, source_patches

    patch = next(p for p in source_patches() if "kernel-key" in p.name)
    return patch_state(find_workspace(), patch) == APPLIED

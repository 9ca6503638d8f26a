"""Zephyr firmware for real: `armgen new --rtos zephyr`, `armgen build` (west), `armgen size` and
`armgen run` on QEMU, through the CLI, against the workspace's Zephyr tree.

Needs an armgen workspace with Zephyr (`armgen workspace init --zephyr --zephyr-release 3.7`, found
through ``$ARMGEN_WORKSPACE`` or armgen's default location); without one every test here skips with
the reason. To stay within CI's time, the programs share one project directory and one west build
directory: kws is built clean once, then ``armgen new --force`` puts ad and a two-input user model into
the same directory (``--force`` keeps ``build/``), and west rebuilds only what changed (the model, its
kernel registration and the pools). The STM32F4 application is a clean build of its own.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from _programs import ANSI, armgen, ok, sww_marvin_recording
from armgen.firmware.size import validate_report

MODELS = Path(__file__).parents[1] / "models"
RELEASE = "3.7"


needs_zephyr = pytest.mark.needs_zephyr(release=RELEASE)


def _record_only_project(tmp_path: Path, release: str, target: str) -> tuple[Path, str]:
    """A project directory holding only its armgen.toml (an an547 Zephyr project of ``release``): enough for
    `armgen build` to get as far as finding the workspace. Returns (directory, the record's text)."""
    proj = tmp_path / "p"
    proj.mkdir()
    record = ('name = "p"\nboard = "qemu_mps3_an547"\nrtos = "zephyr"\nbackend = "cortex-m"\n'
              'elf = "build/zephyr/zephyr.elf"\nmap = "build/zephyr/zephyr.map"\n'
              f'zephyr_release = "{release}"\nzephyr_target = "{target}"\n')
    (proj / "armgen.toml").write_text(record)
    return proj, record


def _new(out: Path, model: str, board: str = "qemu_mps3_an547", name: str = "zapp") -> Path:
    ok(armgen("new", name, "--model", model, "--board", board, "--rtos", "zephyr", "--zephyr-release", RELEASE,
               "--out", str(out), "--force"), f"armgen new --model {model}")
    return out / name


def _run_checked(project: Path) -> dict:
    """`armgen run --json` of a Zephyr project: the Zephyr image ran, 0 LSB from the reference."""
    r = armgen("run", str(project), "--json")
    ok(r, "armgen run")
    report = json.loads(r.stdout)
    assert report["firmware"] == "zephyr" and report["zephyr_board"] == "mps3/an547"
    # armgen run's own variant (reads input.bin); the product image build/zephyr/zephyr.elf does not
    assert report["elf"].endswith("build/run-input/zephyr/zephyr.elf")
    assert report["passed"] and report["max_lsb_diff"] == 0
    assert report["alternate_checked"]  # the image read input.bin: the second input changed the outputs
    assert len(set(report["ticks_per_run"])) == 1 and report["instructions"] > 0
    record = tomllib.loads((project / "armgen.toml").read_text())
    planned = {p["name"]: p["bytes"] for p in record["pools"]}
    for pool in report["pools"]:  # every pool as armgen.toml planned it; planned buffers used exactly
        assert pool["reserved"] == planned[pool["name"]]
        if pool["name"].startswith("planned_"):
            assert pool["used"] == pool["reserved"]
        assert pool["used"] <= pool["reserved"]
    return report


def _size_checked(project: Path) -> dict:
    """`armgen size --json` exits 0 on a Zephyr image: pools, stacks and the kernel attributed, parts add up."""
    r = armgen("size", str(project), "--json")
    ok(r, "armgen size")
    data = json.loads(r.stdout)
    validate_report(data, f"armgen size --json of {project}")  # the size report schema, on a real Zephyr image
    assert data["within_budget"] and not data["violations"]
    report = data["report"]
    assert report["elf"].endswith("build/zephyr/zephyr.elf")  # the product image
    comps = report["components"]
    assert comps["zephyr_kernel"]["flash"] > 0 and comps["model"]["flash"] > 0
    record = tomllib.loads((project / "armgen.toml").read_text())
    assert comps["pools"]["ram"] == sum(p["bytes"] for p in record["pools"])
    assert {s["name"] for s in report["stacks"]} >= {"main", "ISR", "idle"}
    main = next(s for s in report["stacks"] if s["name"] == "main")
    assert main["size"] == record["memory"]["stack"]
    assert sum(c["flash"] for c in comps.values()) == report["flash"]  # parts add up (fill included)
    assert sum(c["ram"] for c in comps.values()) == report["ram"]
    return data


@pytest.fixture(scope="module")
def zapp(tmp_path_factory) -> Path:
    """The shared project directory (one west build directory for kws, ad and the two-input model)."""
    return tmp_path_factory.mktemp("zephyr")


@pytest.mark.workspace
@needs_zephyr
def test_kws_builds_sizes_and_runs_bit_exact(zapp):
    project = _new(zapp, "kws")
    out = ok(armgen("build", str(project)), "armgen build")
    assert "west build" not in out or "error" not in out
    elf = project / "build" / "zephyr" / "zephyr.elf"
    assert elf.is_file() and (project / "build" / "zephyr" / "zephyr.map").is_file()
    config = (project / "build" / "zephyr" / ".config").read_text()
    # The libc setup armgen.firmware.toolchain.zephyr_libc_args documents, and the generated prj.conf, in force.
    for line in ("CONFIG_PICOLIBC=y", "CONFIG_THREAD_LOCAL_STORAGE=y", "CONFIG_SPEED_OPTIMIZATIONS=y",
                 "CONFIG_HEAP_MEM_POOL_SIZE=0", "CONFIG_SYS_CLOCK_HW_CYCLES_PER_SEC=32000000"):
        assert line in config, line
    assert "CONFIG_EXECUTORCH_ENABLE_LOGGING=y" not in config
    # the stack guard prj.conf asks for is in force (the M55's stack-limit registers)
    assert "CONFIG_HW_STACK_PROTECTION=y" in config and "CONFIG_BUILTIN_STACK_GUARD=y" in config
    # CMSIS-NN at its own level (-Ofast on the M55): the last -O of its compile lines, after Zephyr's -O2
    commands = json.loads((project / "build" / "compile_commands.json").read_text())
    conv = next(c["command"] for c in commands if c["file"].endswith("arm_convolve_s8.c"))
    assert [w for w in conv.split() if w.startswith("-O")][-1] == "-Ofast", conv
    if "CONFIG_PICOLIBC_USE_TOOLCHAIN=y" in config:  # printk's vfprintf: picolibc's integer-only variant
        nm = subprocess.run(["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, check=True).stdout
        symbols = {line.split()[-1]: line.split()[0] for line in nm.splitlines() if len(line.split()) == 3}
        assert symbols["vfprintf"] == symbols["__i_vfprintf"]  # no float conversion, no Ryu tables
        assert not [name for name in symbols if "ryu" in name.lower() or "dtoa" in name]
    # The lean image: link-time optimised (the C-library calls LTO's output makes resolved, CMakeLists.txt), and no
    # malloc arena or heap code behind malloc (prj.conf).
    for line in ("CONFIG_LTO=y", "CONFIG_ISR_TABLES_LOCAL_DECLARATION=y", "CONFIG_COMMON_LIBC_MALLOC_ARENA_SIZE=0"):
        assert line in config, line
    nm = subprocess.run(["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, check=True).stdout
    assert ".ltrans" in (project / "build" / "zephyr" / "zephyr.map").read_text()  # LTO did run
    assert not {"z_malloc_heap", "malloc_prepare", "sys_heap_init"} & {line.split()[-1] for line in nm.splitlines()}
    sections = {s["name"]: s for s in _size_checked(project)["report"]["sections"]}
    # LTO's interrupt table is writable data in rodata (each IRQ_CONNECT's entry); it counts as read-only flash.
    assert "_sw_isr_table" in nm and sections["rodata"]["role"] == "rodata"
    report = _run_checked(project)
    assert report["instructions"] < 2_000_000  # bare metal: 1,806,500 (benchmarks/results.json)
    # Nothing changed: west is not handed CMake arguments again, so CMake does not re-run and nothing
    # relinks (it relinked on every call: about 30 s of each `armgen run`). Through the CLI, as a user
    # runs it (the Python path is one of the CMake arguments).
    ok(armgen("build", str(project)), "armgen build (nothing changed)")
    log = (project / "build" / "armgen-build.log").read_text()
    assert "generating a build system" not in log and "Linking" not in log, log[-2000:]


@pytest.mark.workspace
@needs_zephyr
def test_kws_with_the_mfcc_front_end_hears_a_spoken_word(zapp, tmp_path):
    """kws with `--frontend mfcc` as a Zephyr application (issue 44): CMSIS-DSP from the workspace compiled into
    the app, the same generated C as bare metal; `armgen run --input word.wav` on the Zephyr image: features
    within 1 LSB of the host pipeline, outputs 0 LSB, the host's label (with the trained weights: the word).
    In the shared directory after the kws test: the front end, CMSIS-DSP and a reconfigure are the rebuild."""
    exe = shutil.which("espeak-ng")
    if exe is None:
        pytest.skip("espeak-ng not installed (Debian package espeak-ng)")
    clip = tmp_path / "yes.wav"
    subprocess.run([exe, "-w", str(clip), "yes"], check=True, capture_output=True, timeout=60)
    ok(armgen("new", "zapp", "--model", "kws", "--board", "qemu_mps3_an547", "--rtos", "zephyr", "--zephyr-release",
              RELEASE, "--frontend", "mfcc", "--out", str(zapp), "--force"), "armgen new --frontend mfcc")
    project = zapp / "zapp"
    west_yml = (project / "west.yml").read_text()
    assert "- name: cmsis-dsp" in west_yml and "path: modules/lib/cmsis-dsp" in west_yml  # a plain west update gets it
    r = armgen("run", str(project), "--input", str(clip), "--json")
    ok(r, "armgen run --input yes.wav")
    report = json.loads(r.stdout)
    assert report["firmware"] == "zephyr" and report["elf"].endswith("build/run-input/zephyr/zephyr.elf")
    assert report["passed"] and report["features_max_lsb"] <= 1, report["findings"]
    assert all(o["max_lsb_diff"] == 0 for o in report["outputs"])
    assert report["label"] == report["host_label"]
    assert report["frontend_instructions"] > 0 and report["network_instructions"] > 0
    from armgen.model.model_source import mlperf_dir

    weights = mlperf_dir()
    if weights is not None and (weights / "kws_ref_model_float32.tflite").is_file():
        assert report["label"] == "yes", report["label"]  # 0.897 on 2026-12-06, as bare metal
    text = ANSI.sub("", ok(armgen("run", str(project), "--input", str(clip)), "armgen run"))
    assert "mfcc front end, Zephyr image on QEMU mps3-an547" in text


@pytest.mark.workspace
@needs_zephyr
def test_sww_streams_a_recording_on_zephyr(zapp, tmp_path):
    """sww with `--frontend lfbe --stream` as a Zephyr application (issue 45): espeak-ng's "marvin" in 2.5 s of
    quiet streamed through the Zephyr image on QEMU mps3-an547 in 512-sample blocks (semihosting), checked as on
    bare metal (tests/model/test_stream.py): every frame within 1 LSB of the whole-recording host features, every
    window's outputs within 1 LSB of the host program's on the firmware's window, the detections those outputs
    give. In the shared directory after the mfcc test: CMSIS-DSP is compiled already."""
    _, long_wav, extra = sww_marvin_recording(tmp_path)
    ok(armgen("new", "zapp", "--model", "sww", "--board", "qemu_mps3_an547", "--rtos", "zephyr", "--zephyr-release",
              RELEASE, "--frontend", "lfbe", "--stream", "--out", str(zapp), "--force", *extra),
       "armgen new --frontend lfbe --stream")
    r = armgen("run", str(zapp / "zapp"), "--input", str(long_wav), "--json")
    ok(r, "armgen run --input long.wav")
    rr = json.loads(r.stdout)
    print(f"\nsww stream on Zephyr {RELEASE}: detections {rr['detections']} (host {rr['host_detections']}), features "
          f"{rr['features_off']} of {rr['features_total']} off, outputs {rr['outputs_max_lsb']} LSB, per hop front "
          f"end {rr['frontend_instructions']:,} + network {rr['network_instructions']:,} instructions")
    assert rr["firmware"] == "zephyr" and rr["elf"].endswith("build/run-input/zephyr/zephyr.elf")
    assert rr["passed"], rr["findings"]
    assert rr["frames"] == 1 + (40000 - 1024) // 512 and rr["windows"] == rr["frames"] - 29
    assert rr["features_max_lsb"] <= 1 and rr["outputs_max_lsb"] <= 1
    assert not [f for f in rr["findings"] if f["subject"] == "detections" and f["severity"] == "error"]
    assert rr["frontend_instructions"] and rr["network_instructions"]


def test_a_front_end_without_cmsis_dsp_in_the_workspace_is_one_line(tmp_path):
    """A Zephyr project with a front end against a workspace that has no CMSIS-DSP (one made before the manifest
    pinned it): exit 2, one line naming the directory and the init that brings it, before CMake runs."""
    real = Path.home() / ".local" / "share" / "armgen" / f"workspace-zephyr-{RELEASE}"
    if not (real / "zephyr").is_dir():
        pytest.skip(f"no Zephyr {RELEASE} workspace at {real}: the check runs after the workspace is found")
    ws = tmp_path / "ws"
    (ws / "modules" / "lib").mkdir(parents=True)
    for part in (".west", ".armgen", "armgen-manifest", "zephyr"):
        if (real / part).exists():
            (ws / part).symlink_to(real / part)
    for lib in (real / "modules" / "lib").iterdir():
        if lib.name != "cmsis-dsp":
            (ws / "modules" / "lib" / lib.name).symlink_to(lib)
    for other in (real / "modules").iterdir():
        if other.name != "lib":
            (ws / "modules" / other.name).symlink_to(other)
    proj, record = _record_only_project(tmp_path, RELEASE, "mps3/an547")
    record += '\n[frontend]\nkind = "mfcc"\n'
    (proj / "armgen.toml").write_text(record)
    r = armgen("build", "--workspace", str(ws), str(proj))
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in ANSI.sub("", r.stderr).strip().splitlines() if ln.startswith(("armgen:", "hint:"))]
    assert lines[0] == (f"armgen: error: project p has an audio front end (mfcc) and the workspace {ws} has no "
                        f"CMSIS-DSP at {ws / 'modules' / 'lib' / 'cmsis-dsp'}"), lines
    assert f"armgen workspace init {ws} --zephyr --zephyr-release {RELEASE}" in lines[1]
    assert (proj / "armgen.toml").read_text() == record and not (proj / "build").exists()


@pytest.mark.workspace
@needs_zephyr
def test_ad_rebuilds_incrementally_and_runs_bit_exact(zapp):
    if not (zapp / "zapp" / "build" / "zephyr" / "zephyr.elf").is_file():
        pytest.skip("needs the kws build of test_kws_builds_sizes_and_runs_bit_exact")
    project = _new(zapp, "ad")
    ok(armgen("build", str(project)), "armgen build (incremental)")
    _size_checked(project)
    _run_checked(project)


@pytest.mark.workspace
@needs_zephyr
def test_two_input_user_model_runs_bit_exact(zapp):
    if not (zapp / "zapp" / "build" / "zephyr" / "zephyr.elf").is_file():
        pytest.skip("needs the kws build of test_kws_builds_sizes_and_runs_bit_exact")
    project = _new(zapp, str(MODELS / "two_inputs.py"))
    report = _run_checked(project)  # run builds it (incrementally) itself
    assert len(report["outputs"]) == 1


@pytest.mark.workspace
@needs_zephyr
def test_update_keeps_main_prj_conf_and_src_app_and_runs_bit_exact(zapp, tmp_path):
    """Issue 41 on Zephyr 3.7: the team edits main.cpp (a call into their src/app/mine.c) and prj.conf; `armgen
    update --model` to a model with a new operator keeps both, app.cmake builds mine.c into the app, 0 LSB.
    Then issue 42: their main becomes a sensor loop with no armgen lines; it builds and `armgen run` is 0 LSB."""
    import shutil

    from test_update_firmware import edit_like_a_team

    shutil.copy(MODELS / "update_v1.py", tmp_path / "model.py")
    project = _new(zapp, str(tmp_path / "model.py"))
    edited = edit_like_a_team(project)
    prj = project / "prj.conf"
    prj.write_text(prj.read_text() + "\n# ours: asserts on while we bring the sensor up\nCONFIG_ASSERT=y\n")
    prj_edited = prj.read_bytes()
    r = armgen("update", str(project), "--model", str(MODELS / "update_v3.py"))
    ok(r, "armgen update")
    assert "new operator cortex_m::quantized_add.out" in ANSI.sub("", r.stderr)
    assert (project / "src" / "main.cpp").read_bytes() == edited and prj.read_bytes() == prj_edited
    ok(armgen("build", str(project)), "armgen build")
    assert "CONFIG_ASSERT=y" in (project / "build" / "zephyr" / ".config").read_text()
    _run_checked(project)
    assert b"mine says %d" in (project / "build/zephyr/zephyr.elf").read_bytes()
    # `armgen run`'s image is armgen's harness main, not the team's (issue 42)
    assert b"mine says %d" not in (project / "build/run-input/zephyr/zephyr.elf").read_bytes()

    # Issue 42: a main with no armgen lines that never returns (it waits for a sensor): the product builds,
    # `armgen run` still checks the model at 0 LSB (its image is unchanged: only QEMU runs again).
    from test_update_firmware import SENSOR_C, SENSOR_LOOP_MAIN

    (project / "src" / "main.cpp").write_text(SENSOR_LOOP_MAIN)
    # Their driver calls the C library (strchr), which the link-time optimised image does not name for ld
    # (ARMGEN_LTO_LIBC_SYMBOLS): it links, because src/app/ is compiled without GCC's built-ins.
    with_libc = SENSOR_C.replace("#include <stdint.h>", "#include <stdint.h>\n#include <string.h>").replace(
        "our_product_marker[sensor_status & 7u]", "*strchr(our_product_marker + (sensor_status & 7u), 's')")
    assert "strchr" in with_libc
    (project / "src" / "app" / "sensor.c").write_text(with_libc)
    ok(armgen("build", str(project)), "armgen build (the team's main)")
    assert b"our product's sensor driver" in (project / "build/zephyr/zephyr.elf").read_bytes()
    report = _run_checked(project)
    assert "not your main.cpp" in report["checks"]


@pytest.mark.workspace
@needs_zephyr
def test_stack_auto_sizes_main_isr_and_idle_and_runs_bit_exact(zapp):
    """Issue 44 item 2, on the team's project of the test above (their main never returns): `armgen update
    --stack-size auto`, then `armgen build` measures the main, ISR and idle stacks of armgen run's image on QEMU,
    writes armgen-stacks.conf (the main stack + 512 B for their main's frames), and builds both images with it;
    the sized run image runs at 0 LSB within its stack; the product image carries no measuring code; a second
    build runs QEMU once and rebuilds nothing."""
    from armgen.firmware.stack import USER_FRAMES_BYTES, sized_stack_bytes
    from armgen.firmware.zephyr_stack import FRAGMENT, KCONFIG, parse_fragment

    project = zapp / "zapp"
    if not (project / "src" / "app" / "sensor.c").is_file():
        pytest.skip("needs the project of test_update_keeps_main_prj_conf_and_src_app_and_runs_bit_exact")
    ok(armgen("update", str(project), "--stack-size", "auto"), "armgen update --stack-size auto")
    assert tomllib.loads((project / "armgen.toml").read_text())["memory"]["stack"] == "auto"
    ok(armgen("build", str(project)), "armgen build (stack = auto)")
    sizes = parse_fragment((project / FRAGMENT).read_text())
    record = json.loads((project / "build" / "stack.json").read_text())
    assert record["machine"] == "mps3-an547" and record["resized"] and record["zephyr_release"] == RELEASE
    assert record["image"] == "build/run-input/zephyr/zephyr.elf" and "ISR stack" in record["qemu_note"]
    product = (project / "build" / "zephyr" / ".config").read_text()
    run_image = (project / "build" / "run-input" / "zephyr" / ".config").read_text()
    defaults = {"main": 8192, "isr": 2048, "idle": 320}  # prj.conf's main stack, Zephyr 3.7's defaults on the M55
    for name, symbol in KCONFIG.items():
        figures = record["stacks"][name]
        frames = USER_FRAMES_BYTES if name == "main" else 0
        assert figures["measured_with"] == defaults[name] and figures["user_frames"] == frames
        assert 0 < figures["high_water"] <= figures["reserved"] == sizes[name] < defaults[name]
        assert sizes[name] == sized_stack_bytes(figures["high_water"]) + frames
        assert f"{symbol}={sizes[name]}\n" in product and f"{symbol}={sizes[name]}\n" in run_image
    report = _run_checked(project)
    assert report["stack"]["reserved"] == sizes["main"]
    assert report["stack"]["used"] == record["stacks"]["main"]["high_water"]
    assert {k: (v["reserved"], v["used"]) for k, v in report["kernel_stacks"].items()} == {
        k: (sizes[k], record["stacks"][k]["high_water"]) for k in ("isr", "idle")}
    assert b"ARMGEN stack isr" in (project / "build/run-input/zephyr/zephyr.elf").read_bytes()
    assert b"ARMGEN stack isr" not in (project / "build/zephyr/zephyr.elf").read_bytes()
    # nothing changed: the sizes hold on the sized image itself, so one QEMU run and no rebuild
    ok(armgen("build", str(project)), "armgen build (stack = auto, nothing changed)")
    assert not json.loads((project / "build" / "stack.json").read_text())["resized"]
    assert parse_fragment((project / FRAGMENT).read_text()) == sizes
    for log in ("build/armgen-build.log", "build/run-input/armgen-build.log"):
        text = (project / log).read_text()
        assert "Linking" not in text and "generating a build system" not in text, text[-2000:]


@pytest.mark.workspace
@needs_zephyr
def test_stm32f4_disco_mlp_links_with_hal_stm32(tmp_path):
    """STM32F4 Discovery: configure, compile and link on 3.7 with hal_stm32 at 3.7.1's pin. Its QEMU machine,
    mps2/an386, is not in Zephyr 3.7: `new` rendered a bare-metal stand-in, which `armgen run` runs (issue 42)."""
    project = _new(tmp_path, str(MODELS / "mlp.py"), board="stm32f4_disco", name="mlp")
    r = armgen("build", str(project))
    out = ok(r, "armgen build stm32f4_disco")
    assert (project / "build" / "zephyr" / "zephyr.elf").is_file()
    config = (project / "build" / "zephyr" / ".config").read_text()
    assert "CONFIG_SOC_STM32F407XG=y" in config and "CONFIG_HAS_STM32CUBE=y" in config
    assert "flash" in out
    # No Zephyr stand-in in 3.7: the run plan is the bare-metal stand-in `new` rendered.
    record = tomllib.loads((project / "armgen.toml").read_text())
    assert record["run"]["image"] == "standin/qemu_mps2_an386" and record["run"]["firmware"] == "baremetal"
    r = armgen("run", str(project), "--json")
    ok(r, "armgen run (bare-metal stand-in)")
    report = json.loads(r.stdout)
    assert report["firmware"] == "baremetal" and report["machine"] == "mps2-an386"
    assert report["passed"] and report["max_lsb_diff"] == 0


# ---- bad input (no Zephyr needed) ------------------------------------------------------------------
def test_board_missing_in_the_release_is_one_line(tmp_path):
    r = armgen("new", "kws", "--board", "alif_e8", "--rtos", "zephyr", "--zephyr-release", "3.7", "--out",
               str(tmp_path))
    assert r.returncode == 2
    err = ANSI.sub("", r.stderr).strip().splitlines()
    assert err[0] == "armgen: error: board 'alif_e8_hp' is not in Zephyr 3.7 (Zephyr releases that have it: 4.4)"
    assert not (tmp_path / "kws").exists()


def test_unknown_release_is_one_line(tmp_path):
    r = armgen("new", "kws", "--board", "qemu_mps3_an547", "--rtos", "zephyr", "--zephyr-release", "2.7",
               "--out", str(tmp_path))
    assert r.returncode == 2
    assert "unknown Zephyr release '2.7' (armgen knows 4.4, 4.1, 3.7)" in ANSI.sub("", r.stderr)


def test_no_zephyr_in_the_workspace_is_one_line_and_keeps_the_project(tmp_path):
    """A Zephyr project against a workspace without Zephyr: exit 2, one error line, nothing lost."""
    ws = tmp_path / "ws"
    (ws / "modules" / "lib" / "executorch").mkdir(parents=True)
    (ws / "modules" / "lib" / "executorch" / "CMakeLists.txt").write_text("")
    (ws / "modules" / "lib" / "cmsis-nn").mkdir(parents=True)
    (ws / "modules" / "lib" / "cmsis-nn" / "CMakeLists.txt").write_text("")
    proj, record = _record_only_project(tmp_path, "3.7", "mps3/an547")
    # --workspace, not $ARMGEN_WORKSPACE: a Zephyr 3.7 workspace at the default location (CI has one) is
    # rightly preferred to an env workspace without Zephyr (armgen.workspace.find_zephyr_workspace).
    r = armgen("build", "--workspace", str(ws), str(proj))
    assert r.returncode == 2
    lines = [ln for ln in ANSI.sub("", r.stderr).strip().splitlines() if ln.startswith(("armgen:", "hint:"))]
    assert lines[0].startswith("armgen: error: no Zephyr in the workspace") and "Zephyr 3.7 project" in lines[0]
    assert "armgen workspace init --zephyr --zephyr-release 3.7" in lines[1]
    assert (proj / "armgen.toml").read_text() == record


def test_no_workspace_at_all_hints_at_the_zephyr_init(tmp_path):
    """A Zephyr project where no workspace exists at all: the hint is the Zephyr init of the project's release
    (it was the bare-metal `armgen workspace init`, which would not have helped); exit 2, nothing lost."""
    proj, record = _record_only_project(tmp_path, "4.4", "mps3/corstone300/an547")
    nowhere = tmp_path / "nowhere"
    r = armgen("build", "--workspace", str(nowhere), str(proj))
    assert r.returncode == 2
    lines = [ln for ln in ANSI.sub("", r.stderr).strip().splitlines() if ln.startswith(("armgen:", "hint:"))]
    assert lines[0] == f"armgen: error: no armgen workspace at {nowhere} (this is a Zephyr 4.4 project)"
    assert "armgen workspace init --zephyr --zephyr-release 4.4" in lines[1]
    assert (proj / "armgen.toml").read_text() == record and not nowhere.exists()


@pytest.mark.workspace
@needs_zephyr
def test_west_failure_is_one_line(tmp_path):
    """A project whose board target west does not know: exit 2, west's reason in one line."""
    project = tmp_path / "p"
    project.mkdir()
    (project / "armgen.toml").write_text(
        'name = "p"\nboard = "qemu_mps3_an547"\nrtos = "zephyr"\nbackend = "cortex-m"\n'
        'elf = "build/zephyr/zephyr.elf"\nmap = "build/zephyr/zephyr.map"\nzephyr_release = "3.7"\n'
        'zephyr_target = "no_such_board"\n'
    )
    (project / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nfind_package(Zephyr REQUIRED HINTS $ENV{ZEPHYR_BASE})\nproject(p)\n"
    )
    r = armgen("build", str(project))
    assert r.returncode == 2
    lines = [ln for ln in ANSI.sub("", r.stderr).strip().splitlines() if ln.startswith(("armgen:", "hint:"))]
    assert lines[0] == "armgen: error: west build: configure failed: No board named 'no_such_board' found.", lines
    assert "Traceback" not in r.stderr
    assert lines[-1].startswith("hint: full log:")

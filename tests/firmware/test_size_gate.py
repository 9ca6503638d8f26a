"""The size gate: `armgen size --compare BASE` with causes, --format markdown/html, the baseline ratchet.

Two real arm-none-eabi-gcc images in hand-written projects (armgen.toml, model/selected_operators.yaml,
the program report): the new one registers one more operator (its kernel in the cortex_m kernel
archive, a CMSIS-NN helper beside it), carries a bigger model and a bigger pool. The causes must name
each with its bytes and add up, with the unexplained rest, to the total delta.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import zlib
from pathlib import Path

import jsonschema
import pytest

from _narrow import present
from armgen.firmware.size import report_schema, validate_report
from test_size import AR, BOARD_YAML, CFLAGS, GCC, LINK_LD, _run, invoke, needs_gcc

MAIN_C = r"""
#include <stdint.h>
#ifndef MODEL_N
#define MODEL_N 4096
#endif
#ifndef POOL_N
#define POOL_N 2048
#endif
__attribute__((used, section(".armgen_model"), aligned(16))) const uint8_t armgen_model_pte[MODEL_N] = {2};
__attribute__((used, section(".armgen_pool.planned_1"), aligned(16))) uint8_t armgen_pool_planned_1[POOL_N];
__attribute__((used, section(".armgen_pool.method"), aligned(16))) uint8_t armgen_pool_method[512];
__attribute__((used)) uint8_t data_arr[64] = {1};
extern int softmax_kernel(int);
#ifdef WITH_ADD
extern int quantized_add_out(int);
#endif
void Reset_Handler(void) {
  volatile int x = softmax_kernel(data_arr[0]);
#ifdef WITH_ADD
  x += quantized_add_out(x);
#endif
  for (;;) { (void)x; }
}
"""

SOFTMAX_C = r"""
#include <stdint.h>
__attribute__((used)) const int32_t softmax_table[32] = {1};
int softmax_kernel(int x) { return softmax_table[x & 31] * 3 + x; }
"""

ADD_C = r"""
#include <stdint.h>
__attribute__((used)) const int32_t add_lut[64] = {1};
int arm_elementwise_add_s8(int x);
int quantized_add_out(int x) { return add_lut[x & 63] + arm_elementwise_add_s8(x); }
"""

CMSIS_C = r"""
#include <stdint.h>
__attribute__((used)) const int16_t add_helper_lut[40] = {1};
int arm_elementwise_add_s8(int x) { return add_helper_lut[x % 40] * x; }
"""

OPS_BASE = ["cortex_m::softmax.out"]
OPS_NEW = ["cortex_m::quantized_add.out", "cortex_m::softmax.out"]


def _selected_ops(ops: list[str]) -> str:
    lines = ["build_features: []", "et_kernel_metadata:"]
    lines += [f"  {op}:\n  - default" for op in ops]
    lines += ["operators:"] + [f"  {op}:\n    is_root_operator: true" for op in ops]
    return "\n".join(lines) + "\n"


def build_project(d: Path, *, with_add: bool, model_n: int, pool_n: int, constant: int,
                  board_file: Path, growth: str = "") -> Path:
    """A project directory with a real gcc image: armgen.toml, its model files, build/fw.elf and .map."""
    build = d / "build"
    build.mkdir(parents=True, exist_ok=True)
    (build / "main.c").write_text(MAIN_C)
    (build / "softmax.c").write_text(SOFTMAX_C)
    (build / "add.c").write_text(ADD_C)
    (build / "cmsis.c").write_text(CMSIS_C)
    (build / "link.ld").write_text(LINK_LD.replace("@WRONGPLACE@", "> FLASH"))
    defs = [f"-DMODEL_N={model_n}", f"-DPOOL_N={pool_n}"] + (["-DWITH_ADD"] if with_add else [])
    _run([GCC, *CFLAGS, *defs, "-c", "main.c", "-o", "main.o"], build)
    kernels = ["softmax.c"] + (["add.c"] if with_add else [])
    objs = []
    for src in kernels:
        obj = "op_" + ("softmax" if src == "softmax.c" else "quantized_add") + ".cpp.obj"
        _run([GCC, *CFLAGS, "-c", src, "-o", obj], build)
        objs.append(obj)
    _run([AR, "rcs", "libarmgen_cortex_m_kernels.a", *objs], build)
    _run([GCC, *CFLAGS, "-c", "cmsis.c", "-o", "arm_elementwise_add_s8.c.obj"], build)
    _run([AR, "rcs", "libcmsis-nn.a", "arm_elementwise_add_s8.c.obj"], build)
    _run([GCC, *CFLAGS, "-nostartfiles", "-nostdlib", "-T", "link.ld", "-Wl,-Map=fw.map", "-Wl,--gc-sections",
          "main.o", "libarmgen_cortex_m_kernels.a", "libcmsis-nn.a", "-lgcc", "-o", "fw.elf"], build)
    model = d / "model"
    model.mkdir(exist_ok=True)
    (model / "selected_operators.yaml").write_text(_selected_ops(OPS_NEW if with_add else OPS_BASE))
    (model / "fw.pte").write_bytes(b"\0" * model_n)
    (model / "fw.report.json").write_text(json.dumps({"constant_data_size": constant}))
    shutil.copy(board_file, d / "board.yaml")
    (d / "armgen.toml").write_text(
        'name = "fw"\nboard = "board.yaml"\nrtos = "baremetal"\nbackend = "cortex-m"\nelf = "build/fw.elf"\n'
        'map = "build/fw.map"\n\n[model]\nsource = "x.py"\npte = "model/fw.pte"\nreport = "model/fw.report.json"\n'
        'sha256 = "00"\n\n[memory]\nstack = 1024\n\n[[pools]]\nname = "planned_1"\n'
        f'bytes = {pool_n}\n\n[[pools]]\nname = "method"\nbytes = 512\n\n[budgets]\n{growth}\n'
    )
    return d


@pytest.fixture(scope="module")
def board_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("board") / "two_region.yaml"
    p.write_text(BOARD_YAML)
    return p


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory, board_file: Path) -> tuple[Path, Path]:
    assert GCC is not None and AR is not None, "arm-none-eabi-gcc/ar not installed: mark the test @needs_gcc"
    root = tmp_path_factory.mktemp("gate")
    old = build_project(root / "old", with_add=False, model_n=4096, pool_n=2048, constant=3000,
                        board_file=board_file)
    new = build_project(root / "new", with_add=True, model_n=4608, pool_n=2560, constant=3400,
                        board_file=board_file)
    return old, new


def _json(*args: str, code: int = 0) -> dict:
    got, out, err = invoke("size", *args, "--format", "json")
    assert got == code, err
    return json.loads(out)


def _symbol_bytes(report: dict, *names: str) -> int:
    return sum(report["symbols"][n]["size"] for n in names)


@needs_gcc
@pytest.mark.parametrize("base_kind", ["project", "elf", "saved"])
def test_compare_names_the_causes_and_they_add_up(tmp_path: Path, pair: tuple[Path, Path], base_kind: str) -> None:
    old, new = pair
    saved = tmp_path / "old.json"
    saved.write_text(json.dumps(_json(str(old))))
    base = {"project": str(old), "elf": str(old / "build" / "fw.elf"), "saved": str(saved)}[base_kind]
    doc = _json(str(new), "--compare", base, "--top", "3")
    validate_report(doc)
    cmp, rep = doc["compare"], doc["report"]
    causes = {c["name"]: c for c in cmp["causes"]}
    op = causes["cortex_m::quantized_add.out"]
    assert op["kind"] == "operator_added"
    # the kernel (function + its table) and the CMSIS-NN helper that came with it, exact bytes from the ELF
    want = _symbol_bytes(rep, "quantized_add_out", "add_lut", "arm_elementwise_add_s8", "add_helper_lut")
    assert op["flash"] == want > 0 and op["ram"] == 0
    assert op["detail"].startswith("kernel ") and "CMSIS-NN " in op["detail"]
    assert causes["model constant data"]["flash"] == 400
    assert causes["model constant data"]["flash"] + causes["model program (rest of the .pte)"]["flash"] == 512
    assert causes["pool planned_1"]["ram"] == 512
    assert "pool method" not in causes
    for memory in ("flash", "ram"):
        total = sum(c[memory] for c in cmp["causes"]) + cmp["unexplained"][memory]
        assert total == cmp[memory]["delta"], memory
    assert len(cmp["symbols"]) == 3 and cmp["top"] == 3
    assert cmp["symbols"][0]["name"] == "armgen_model_pte" and cmp["symbols"][0]["delta"] == 512


@needs_gcc
def test_markdown_and_html(tmp_path: Path, pair: tuple[Path, Path]) -> None:
    old, new = pair
    got, md, err = invoke("size", str(new), "--compare", str(old), "--format", "markdown")
    assert got == 0, err
    first = md.splitlines()[0]
    assert first.startswith("✅ **within budget**")
    assert "| cortex_m::quantized_add.out |" in md and "| unexplained |" in md and "<details>" in md
    assert len(md) < 65536
    out = tmp_path / "r.html"
    got, _, err = invoke("size", str(new), "--compare", str(old), "--format", "html", "--output", str(out))
    assert got == 0, err
    html = out.read_text()
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "") and "https://" not in html
    assert 'data-region="FLASH"' in html and 'data-region="RAM"' in html and "cortex_m::quantized_add.out" in html


@needs_gcc
def test_growth_budget_ratchet(tmp_path: Path, board_file: Path) -> None:
    growth = '[budgets.growth]\nflash = "256 B"\ncomponents.model = "5 %"\n'
    proj = build_project(tmp_path / "p", with_add=False, model_n=4096, pool_n=2048, constant=3000,
                         board_file=board_file, growth=growth)
    got, _, err = invoke("size", str(proj))
    assert got == 0 and "growth check skipped" in err
    got, _, err = invoke("size", str(proj), "--write-baseline")
    assert got == 0 and (proj / "size-baseline.json").is_file()
    build_project(proj, with_add=True, model_n=4608, pool_n=2560, constant=3400, board_file=board_file, growth=growth)
    got, md, err = invoke("size", str(proj), "--format", "markdown")
    assert got == 1, err
    assert md.splitlines()[0].startswith("❌ **grew over the baseline: components.model grew by 512 B")
    assert "flash grew by" in md and "cortex_m::quantized_add.out" in md
    build_project(proj, with_add=False, model_n=4160, pool_n=2048, constant=3050, board_file=board_file,
                  growth=growth)
    got, md, err = invoke("size", str(proj), "--format", "markdown")
    assert got == 0, err + md
    assert md.startswith("✅ **within budget**")


@needs_gcc
@pytest.mark.parametrize("case", ["other_board", "corrupt", "future", "old_version", "missing_map", "growth_key",
                                  "growth_unit", "growth_bits"])
def test_bad_input_is_one_line_exit_2(tmp_path: Path, pair: tuple[Path, Path], board_file: Path, case: str) -> None:
    old, new = pair
    args = [str(new)]
    doc = _json(str(old))
    base = tmp_path / "base.json"
    if case == "other_board":
        doc["report"]["board"] = "qemu_mps3_an547"
        base.write_text(json.dumps(doc))
        args += ["--compare", str(base)]
        want = "board qemu_mps3_an547 vs board"
    elif case == "corrupt":
        base.write_text(json.dumps(doc)[:200])
        args += ["--compare", str(base)]
        want = "not a size report (invalid JSON"
    elif case in ("future", "old_version"):
        doc["report"]["schema_version"] = 9 if case == "future" else 1
        base.write_text(json.dumps(doc))
        args += ["--compare", str(base)]
        want = "newer than this armgen reads" if case == "future" else "lacks what a comparison needs"
    elif case == "missing_map":
        args += ["--map", str(tmp_path / "nope.map")]
        want = "nope.map: no such file"
    else:
        text, want = {
            "growth_key": ('growth.flashy = "1 KiB"', "unknown key 'budgets.growth.flashy'"),
            "growth_unit": ('growth.flash = "1 KiBs"', "not a size: '1 KiBs'"),
            "growth_bits": ('growth.flash = "1 kb"', "growth budget 'budgets.growth.flash' is in bits: '1 kb'"),
        }[case]
        (tmp_path / "b.toml").write_text(f"[budgets]\n{text}\n")
        args += ["--budget", str(tmp_path / "b.toml"), "--write-baseline", str(tmp_path / "bl.json")]
    got, out, err = invoke("size", *args, "--format", "markdown")
    assert got == 2, (out, err)
    lines = [x for x in err.splitlines() if x.startswith("armgen: error:")]
    assert len(lines) == 1 and want in lines[0], err
    assert "Traceback" not in err and out == ""
    assert not (tmp_path / "bl.json").exists()


@needs_gcc
def test_allow_different_board(tmp_path: Path, pair: tuple[Path, Path]) -> None:
    old, new = pair
    doc = _json(str(old))
    doc["report"]["board"] = "qemu_mps3_an547"
    (tmp_path / "b.json").write_text(json.dumps(doc))
    got, _, err = invoke("size", str(new), "--compare", str(tmp_path / "b.json"), "--allow-different-board")
    assert got == 0, err


def test_schema_is_valid_draft_2020_12() -> None:
    schema = report_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$defs"]["report"]["properties"]["schema_version"] == {"const": 2}


_CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@needs_gcc
@pytest.mark.skipif(_CHROMIUM is None, reason="chromium not installed (apt-get install chromium)")
def test_html_in_headless_chromium(tmp_path: Path, pair: tuple[Path, Path]) -> None:
    """The page opens in a real browser, without console errors, shows the regions and components,
    and its screenshot is not blank."""
    old, new = pair
    page = tmp_path / "r.html"
    got, _, err = invoke("size", str(new), "--compare", str(old), "--format", "html", "--output", str(page))
    assert got == 0, err
    shot = tmp_path / "shot.png"
    env = dict(os.environ, HOME=str(tmp_path))
    base = [present(_CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
            "--window-size=1000,1400"]
    dom = subprocess.run([*base, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120, env=env)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert 'data-region="FLASH"' in dom.stdout and "cortex_m::quantized_add.out" in dom.stdout
    assert "CONSOLE" not in dom.stderr and "Uncaught" not in dom.stderr, dom.stderr[-2000:]
    r = subprocess.run([*base, f"--screenshot={shot}", page.as_uri()], capture_output=True, text=True, timeout=120,
                       env=env)
    assert r.returncode == 0 and shot.is_file(), r.stderr[-2000:]
    assert len(set(_png_pixels(shot))) > 20, "blank screenshot"


def _png_pixels(path: Path) -> bytes:
    """The decompressed image data of a PNG (filter bytes included): enough to tell a blank page."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    while pos < len(data):
        n = int.from_bytes(data[pos:pos + 4], "big")
        kind = data[pos + 4:pos + 8]
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + n]
        pos += 12 + n
    raw = zlib.decompress(idat)
    width = int.from_bytes(data[16:20], "big")
    # the filtered rows (RGB or RGBA, 8 bit, as Chromium writes): a blank page filters to a few byte values
    stride = 1 + width * (4 if data[25] == 6 else 3)
    return b"".join(raw[i * stride + 1:(i + 1) * stride] for i in range(len(raw) // stride))


def test_kconfig_changes_are_listed_without_bytes(tmp_path: Path) -> None:
    from armgen.firmware.size.causes import config_changes
    from armgen.firmware.size.project_facts import read_kconfig

    (tmp_path / "a").write_text('CONFIG_MAIN_STACK_SIZE=2048\n# CONFIG_FPU is not set\nCONFIG_BOARD="mps3"\n')
    (tmp_path / "b").write_text('CONFIG_MAIN_STACK_SIZE=4096\nCONFIG_FPU=y\nCONFIG_BOARD="mps3"\nCONFIG_NEW=1\n')
    a, b = read_kconfig(tmp_path / "a"), read_kconfig(tmp_path / "b")
    assert a == {"CONFIG_BOARD": '"mps3"', "CONFIG_FPU": "n", "CONFIG_MAIN_STACK_SIZE": "2048"}
    changes = config_changes({"project": {"kconfig": a}}, {"project": {"kconfig": b}})
    assert [(c.symbol, c.old, c.new) for c in changes] == [
        ("CONFIG_FPU", "n", "y"), ("CONFIG_MAIN_STACK_SIZE", "2048", "4096"), ("CONFIG_NEW", None, "1")]
    assert read_kconfig(tmp_path / "missing") is None


def test_record_writes_growth_budgets_as_tables(tmp_path: Path) -> None:
    """`armgen new --force` carries [budgets] (with [budgets.growth]) into the new armgen.toml: the record
    writes nested tables back as TOML that reads the same."""
    import tomllib

    from armgen.pipeline import _user_budgets
    from armgen.project.record import ProjectRecord

    budgets = {"flash": 524288, "ram": "64 KiB", "components": {"model": "40 KiB"},
               "growth": {"flash": "1 KiB", "components": {"model": "5 %"}, "regions": {"DTCM": "512 B"}}}
    text = ProjectRecord(root=tmp_path, name="p", budgets=budgets).to_toml()
    assert tomllib.loads(text.decode())["budgets"] == budgets
    (tmp_path / "armgen.toml").write_bytes(text)
    assert _user_budgets(tmp_path) == budgets
    assert _user_budgets(tmp_path / "none") is None


@needs_gcc
def test_html_without_board_draws_the_totals(tmp_path: Path, pair: tuple[Path, Path]) -> None:
    """An ELF outside a project (no board, no map): the treemaps are one box per memory, by component."""
    _, new = pair
    elf = tmp_path / "lone.elf"
    shutil.copy(new / "build" / "fw.elf", elf)
    got, html, err = invoke("size", str(elf), "--format", "html")
    assert got == 0, err
    assert html.count("<rect") > 4 and 'aria-label="flash treemap"' in html and "model" in html

"""Zephyr flavour of ``armgen new``: static checks of the generated west application.

Zephyr itself is not available here (over 1 GB, not in the mirrors), so no Zephyr build runs. The
generated files are checked against what Zephyr and ExecuTorch define:

* every ``CONFIG_`` line of ``prj.conf`` / ``boards/*.conf`` names a symbol declared in the
  project's own ``Kconfig``, in ExecuTorch's ``zephyr/Kconfig`` (read from the armgen workspace;
  that half is skipped without one) or in :data:`armgen.project.zephyr.ZEPHYR_CORE_SYMBOLS` (each with the
  Zephyr file that declares it);
* board file names are the normalised board target; the top-level files match upstream's
  ``zephyr/samples/mv2-ethosu``;
* overlays parse as devicetree (a small parser below) with the expected nodes;
* ``west.yml`` loads with west's manifest model and pins what ``modules/west.yml`` pins;
* pool sizes in the Kconfig defaults equal the spec's and the report's numbers;
* generating twice gives byte-identical trees.

The programs are compiled for real (torch.export, ExecuTorch lowering, Vela) once per module.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from _programs import compile_result, config_lines, program
from armgen.boards import load_board
from armgen.errors import ProjectError, WorkspaceError
from armgen.model.method_allocator import operator_lookup_scratch
from armgen.paths import MODULES_DIR, workspace_dir
from armgen.project import zephyr
from armgen.project.render import render_project, write_project
from armgen.project.spec import make_spec
from armgen.project.zephyr import zephyr_placement

#: Top-level entries of upstream's zephyr/samples/mv2-ethosu (ExecuTorch main, 2026-08-22):
#: CMakeLists.txt Kconfig README.md boards/ model_section.ld.in prj.conf sample.yaml src/.
#: armgen's project has all of them except model_section.ld.in (its linker snippets are in linker/).
UPSTREAM_MV2_TOP = {"CMakeLists.txt", "Kconfig", "README.md", "boards", "prj.conf", "sample.yaml", "src"}


# ---- fixtures -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def programs():
    """kws compiled for the three boards' targets (the Ethos-U ones with the default Cortex-M55), from the
    session's compile cache (tests/_programs.py): {target: CompileResult}."""
    return {target: compile_result("kws", target) for target in ("ethos-u55-256", "ethos-u55-128", "cortex-m7")}


BOARD_TARGET = {"alif_e8": "ethos-u55-256", "corstone_300": "ethos-u55-128", "nucleo_h743zi": "cortex-m7"}


def _spec(programs, board_name):
    res = programs[BOARD_TARGET[board_name]]
    board = load_board(board_name)
    return make_spec(
        res.report, board, name="kws", pte_path=res.pte_path, report_path=res.report_path,
        board_ref=board_name, zephyr=zephyr_placement(board),
    )


@pytest.fixture(scope="module")
def projects(programs):
    """{board: (spec, {path: bytes})} for the three boards."""
    return {b: (s := _spec(programs, b), render_project(s).files) for b in BOARD_TARGET}


def _text(files, path):
    return files[path].decode()


# ---- Kconfig --------------------------------------------------------------------------------------


def _kconfig_symbols(text: str) -> set[str]:
    return set(re.findall(r"^\s*(?:menu)?config\s+([A-Za-z0-9_]+)", text, re.MULTILINE))


def _kconfig_defaults(text: str) -> dict[str, int]:
    out = {}
    for block in re.split(r"^config ", text, flags=re.MULTILINE)[1:]:
        name = block.split()[0]
        m = re.search(r"^\s*default\s+(\d+)\s*$", block, re.MULTILINE)
        if m:
            out[name] = int(m.group(1))
    return out


def _et_zephyr_kconfig() -> Path | None:
    p = workspace_dir() / "modules" / "lib" / "executorch" / "zephyr" / "Kconfig"
    return p if p.is_file() else None


def test_normalised_board_targets():
    n = zephyr.normalise_board_target
    assert n("ensemble_e8_dk/ae822fa0e5597ls0/rtss_hp") == "ensemble_e8_dk_ae822fa0e5597ls0_rtss_hp"
    assert n("mps3/corstone300/fvp") == "mps3_corstone300_fvp"
    assert n("nucleo_h743zi") == "nucleo_h743zi"
    assert n("mps4/corstone320/fvp") == "mps4_corstone320_fvp"
    for bad in ("", "a b", "../x"):
        with pytest.raises(ProjectError):
            n(bad)


@pytest.mark.slow  # compiles kws for three targets (module fixture `programs`)
@pytest.mark.parametrize("board", sorted(BOARD_TARGET))
def test_config_symbols_are_declared(projects, board):
    spec, files = projects[board]
    own = _kconfig_symbols(_text(files, "Kconfig"))
    stem = zephyr.normalise_board_target(spec.board.zephyr.target(spec.zephyr_release))
    used = config_lines(_text(files, "prj.conf")) | config_lines(_text(files, f"boards/{stem}.conf"))
    et = _et_zephyr_kconfig()
    et_syms = _kconfig_symbols(et.read_text()) if et else set()
    undeclared = [
        s for s in used
        if s not in own and s not in zephyr.ZEPHYR_CORE_SYMBOLS and not (s.startswith("EXECUTORCH") and et is None)
        and s not in et_syms
    ]
    assert not undeclared, f"CONFIG_ symbols declared nowhere: {undeclared}"
    for s in used:
        if s.startswith("EXECUTORCH"):
            if et is None:
                continue
            assert s in et_syms, f"{s} is not in ExecuTorch's zephyr/Kconfig"


@pytest.mark.slow  # compiles kws for three targets (module fixture `programs`)
def test_executorch_kconfig_half(projects):
    et = _et_zephyr_kconfig()
    if et is None:
        pytest.skip(f"no armgen workspace with ExecuTorch at {workspace_dir()}: ExecuTorch's zephyr/Kconfig not "
                    "checked (armgen workspace init)")
    syms = _kconfig_symbols(et.read_text())
    _, files = projects["alif_e8"]
    used = config_lines(_text(files, "prj.conf"))
    assert {"EXECUTORCH", "EXECUTORCH_BUILD_PORTABLE_OPS"} <= syms
    assert used["EXECUTORCH"] == "y" and used["EXECUTORCH_BUILD_PORTABLE_OPS"] == "n"


@pytest.mark.slow  # compiles kws for three targets (module fixture `programs`)
@pytest.mark.parametrize("board", sorted(BOARD_TARGET))
def test_pool_kconfig_defaults_equal_the_plan(projects, board):
    spec, files = projects[board]
    defaults = _kconfig_defaults(_text(files, "Kconfig"))
    assert defaults == {f"ARMGEN_POOL_{p.name.upper()}_SIZE": p.bytes for p in spec.pools}
    report = spec.report
    for i, size in enumerate(report.planned_buffers, start=1):
        assert defaults[f"ARMGEN_POOL_PLANNED_{i}_SIZE"] == size
    if report.temp_allocator_size:
        assert defaults["ARMGEN_POOL_TEMP_SIZE"] >= report.temp_allocator_size
        assert defaults["ARMGEN_POOL_TEMP_SIZE"] - report.temp_allocator_size < 16
    else:  # Cortex-M path: the operator-lookup scratch borrows a planned pool during load_method
        assert "ARMGEN_POOL_TEMP_SIZE" not in defaults
        assert spec.load_scratch == ("planned_1", operator_lookup_scratch(spec.pte_path.read_bytes()))
    # The platform layer asserts at build time that Kconfig and armgen_pools.h agree.
    platform = _text(files, "src/platform/platform.c")
    for name in defaults:
        assert f"BUILD_ASSERT(CONFIG_{name} == {name}" in platform


# ---- devicetree -----------------------------------------------------------------------------------
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|<[^>]*>|/delete-node/|[^\s{};=,"<][^\s{};="<]*|[{};=,]')


def parse_dts(text: str) -> dict:
    """A minimal devicetree source parser: nodes ``name {`` / ``label: name {`` / ``&ref {``,
    properties ``name = value, ...;`` and ``name;``, ``/delete-node/ &x;``. Returns
    ``{"children": {key: node}, "props": {name: [values]}, "labels": {label: key}}``.

    Raises:
        AssertionError: unbalanced braces or a statement without its ``;``.
    """
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.DOTALL)
    text = re.sub(r"//[^\n]*", "", text)
    toks = _TOKEN.findall(text) + [None, None]  # sentinels: running off the end fails an assert
    pos = 0
    root: dict = {"children": {}, "props": {}, "labels": {}, "deleted": []}

    def node_body(node):
        nonlocal pos
        while toks[pos] is not None and toks[pos] != "}":
            stmt = []
            while toks[pos] not in ("{", ";", "}", None):
                stmt.append(toks[pos])
                pos += 1
            assert toks[pos] is not None, f"statement {stmt} runs off the end"
            if toks[pos] == "{":
                pos += 1
                label = None
                if stmt[0].endswith(":"):
                    label, stmt = stmt[0][:-1], stmt[1:]
                assert len(stmt) == 1, f"bad node header {stmt}"
                child = node["children"].setdefault(stmt[0], {"children": {}, "props": {}})
                if label:
                    root["labels"][label] = child
                node_body(child)
                assert toks[pos] == "}", "missing }"
                pos += 1
                assert toks[pos] == ";", f"node {stmt[0]} not closed with '}};'"
                pos += 1
            elif toks[pos] == ";":
                pos += 1
                if stmt and stmt[0] == "/delete-node/":
                    root["deleted"].append(stmt[1])
                elif stmt:
                    if "=" in stmt:
                        i = stmt.index("=")
                        node["props"][stmt[0]] = [t for t in stmt[i + 1:] if t != ","]
                    else:
                        assert len(stmt) == 1, f"bad property {stmt}"
                        node["props"][stmt[0]] = []
            else:
                raise AssertionError(f"unexpected '}}' after {stmt}")

    while toks[pos] is not None:
        if toks[pos] == "/delete-node/":
            root["deleted"].append(toks[pos + 1])
            assert toks[pos + 2] == ";"
            pos += 3
            continue
        head = toks[pos]
        assert toks[pos + 1] == "{", f"top level: expected '{{' after {head}"
        pos += 2
        node = root["children"].setdefault(head, {"children": {}, "props": {}})
        node_body(node)
        assert toks[pos] == "}" and toks[pos + 1] == ";", "top-level node not closed with '};'"
        pos += 2
    return root


def test_parser_rejects_unbalanced():
    with pytest.raises(AssertionError):
        parse_dts("/ { chosen { zephyr,sram = &x; };")
    with pytest.raises(AssertionError):
        parse_dts("/ { a = <1> };")


@pytest.mark.slow  # compiles kws for three targets (module fixture `programs`)
def test_alif_overlay_adds_the_npu_and_moves_zephyr_sram(projects):
    spec, files = projects["alif_e8"]
    tree = parse_dts(_text(files, "boards/ensemble_e8_dk_ae822fa0e5597ls0_rtss_hp.overlay"))
    npu = tree["children"]["&soc"]["children"]["ethosu55@400e1000"]
    assert npu["props"]["compatible"] == ['"arm,ethos-u"']
    assert npu["props"]["reg"] == ["<0x400e1000 0x1000>"]
    assert npu["props"]["interrupts"] == [f"<{spec.board.npu.irq} 0>"]
    assert "secure-enable" in npu["props"] and npu["props"]["status"] == ['"okay"']
    assert tree["labels"]["ethosu0"] is npu
    # zephyr,sram: the NPU pools' region, reachable by the NPU at its own address.
    sram_label = tree["children"]["/"]["children"]["chosen"]["props"]["zephyr,sram"]
    npu_regions = {p.region for p in spec.pools if p.npu}
    assert len(npu_regions) == 1
    (region,) = npu_regions
    assert sram_label == [f"&{zephyr.ZEPHYR_DTS[spec.board.zephyr.target(spec.zephyr_release)].regions[region].label}"]
    r = spec.board.region(region)
    assert r.npu_address == r.base and r.kind == "sram"


@pytest.mark.slow  # compiles kws for three targets (module fixture `programs`)
def test_corstone_300_zephyr_sram_is_npu_reachable_not_dtcm(projects):
    spec, files = projects["corstone_300"]
    tree = parse_dts(_text(files, "boards/mps3_corstone300_fvp.overlay"))
    assert tree["children"]["/"]["children"]["chosen"]["props"]["zephyr,sram"] == ["&isram"]
    assert "&soc" not in tree["children"], "the FVP's devicetree already has ethosu0: no second NPU node"
    isram = spec.board.region("ISRAM")
    assert isram.npu_address == isram.base
    assert all(p.region != "DTCM" for p in spec.pools if p.npu)


@pytest.mark.slow  # compiles kws for three targets (module fixture `programs`)
def test_cortex_m_board_keeps_its_devicetree_and_caches(projects):
    spec, files = projects["nucleo_h743zi"]
    tree = parse_dts(_text(files, "boards/nucleo_h743zi.overlay"))
    # No NPU, no region change: the overlay documents the plan and only disables the Ethernet MAC
    # (board file zephyr.disable_nodes), whose enabled node makes Zephyr reserve 16 KiB of SRAM3.
    assert tree["children"] == {"&mac": {"children": {}, "props": {"status": ['"disabled"']}}}
    conf = config_lines(_text(files, "boards/nucleo_h743zi.conf"))
    assert conf == {"CACHE_MANAGEMENT": "y", "DCACHE": "y", "ICACHE": "y"}
    assert "ETHOS_U" not in _text(files, "prj.conf")


@pytest.mark.slow  # compiles kws for three targets (module fixture `programs`)
def test_npu_board_conf_uses_the_board_prefix_and_dcache(projects):
    spec, files = projects["alif_e8"]
    conf = config_lines(_text(files, "boards/ensemble_e8_dk_ae822fa0e5597ls0_rtss_hp.conf"))
    assert zephyr.zephyr_release(spec.zephyr_release).ethos_u_kconfig_prefix == "ETHOS_U"
    assert conf["ETHOS_U"] == "y" and conf["ETHOS_U55_256"] == "y"
    assert conf["ETHOS_U_DCACHE"] == "y" and conf["DCACHE"] == "y"
    assert int(conf["FLASH_LOAD_OFFSET"], 16) == spec.board.zephyr.flash_load_offset == 0x8000
    # A vendor-fork board (ARM_ETHOS_U prefix) gets the old names.
    # Zephyr 3.7 spells the driver's symbols ARM_ETHOS_U* (v3.7.1 modules/hal_ethos_u/Kconfig).
    assert zephyr.npu_kconfig_choice(spec.board, zephyr.zephyr_release("3.7")) == "ARM_ETHOS_U55_256"
    assert zephyr.npu_kconfig_choice(spec.board, zephyr.zephyr_release("4.4")) == "ETHOS_U55_256"


def test_npu_before_42_supplies_the_drivers_dcache_hooks():
    """Before 4.2 there is no ETHOS_U_DCACHE and hal_ethos_u's cache hooks are weak no-ops: a 4.1 NPU project
    on a cached core keeps the D-cache on and its platform.c overrides ethosu_flush_dcache/
    ethosu_invalidate_dcache with Zephyr's sys_cache API (the board conf says so); a 4.4 project leaves them
    to Zephyr's driver (CONFIG_ETHOS_U_DCACHE), and a project without NPU has no hooks."""
    report, pte_path, report_path = program("kws-corstone_300")  # committed fixture: no export
    board = load_board("corstone_300")

    def files_for(release: str) -> dict[str, bytes]:
        spec = make_spec(
            report, board, name="kws", pte_path=pte_path, report_path=report_path,
            board_ref="corstone_300", zephyr=zephyr_placement(board, release),
        )
        assert spec.zephyr_release == release
        return render_project(spec).files

    files = files_for("4.1")
    text = _text(files, "boards/mps3_corstone300_fvp.conf")
    conf = config_lines(text)
    assert conf["ARM_ETHOS_U"] == "y" and conf["DCACHE"] == "y" and "ETHOS_U_DCACHE" not in conf
    flat = " ".join(line.lstrip("# ") for line in text.splitlines())
    assert "Zephyr 4.1 has no ETHOS_U_DCACHE, so src/platform/platform.c overrides" in flat
    platform = _text(files, "src/platform/platform.c")
    assert "#include <zephyr/cache.h>" in platform
    for hook, call in (("ethosu_flush_dcache", "sys_cache_data_flush_range"),
                       ("ethosu_invalidate_dcache", "sys_cache_data_invd_range")):
        body = platform.split(f"void {hook}(const uint64_t* base_addr, const size_t* base_addr_size, "
                              "int num_base_addr) {", 1)[1].split("\n}\n", 1)[0]
        assert call in body, hook
    assert "ethosu_flush_dcache" not in _text(files_for("4.4"), "src/platform/platform.c")


# ---- structure, west, determinism ---------------------------------------------------------------
@pytest.mark.slow  # compiles kws for three targets (module fixture `programs`)
@pytest.mark.parametrize("board", sorted(BOARD_TARGET))
def test_structure_matches_upstream_sample(projects, board):
    spec, files = projects[board]
    top = {p.split("/")[0] for p in files}
    assert top >= UPSTREAM_MV2_TOP
    stem = zephyr.normalise_board_target(spec.board.zephyr.target(spec.zephyr_release))
    assert sorted(p for p in files if p.startswith("boards/")) == [f"boards/{stem}.conf", f"boards/{stem}.overlay"]
    assert "src/platform/platform.c" in files and "src/platform/et_pal.cpp" not in files
    # The shared model API and main come from templates/common unchanged (not forked).
    for shared in ("src/main.cpp", "src/model/armgen_model.cpp", "src/model/armgen_pools.c", "src/armgen/armgen_print.c"):
        assert shared in files
    cmake = _text(files, "CMakeLists.txt")
    assert "find_package(Zephyr REQUIRED HINTS $ENV{ZEPHYR_BASE})" in cmake
    assert "target_sources(" in cmake and "src/platform/platform.c" in cmake
    for snippet in re.findall(r"zephyr_linker_sources\(\w+ (\S+)\)", cmake):
        assert snippet in files


@pytest.mark.slow  # compiles kws for three targets (module fixture `programs`)
def test_alif_files_and_placement(projects):
    spec, files = projects["alif_e8"]
    assert spec.rtos == "zephyr" and spec.backend == "ethos-u" and spec.uses_npu
    assert spec.board.zephyr.target("4.4") == "ensemble_e8_dk/ae822fa0e5597ls0/rtss_hp"
    assert spec.report.target == "ethos-u55-256"
    # The .pte is read in place from MRAM (zephyr,flash), in its own output section.
    assert spec.model_region == "MRAM"
    model_ld = _text(files, "linker/armgen_model.ld")
    assert "SECTION_PROLOGUE(.armgen_model,,)" in model_ld and "ROMABLE_REGION" in model_ld
    assert "zephyr_linker_sources(ROM_SECTIONS linker/armgen_model.ld)" in _text(files, "CMakeLists.txt")
    # Temp pool = Vela scratch from the report, in NPU-reachable SRAM (Zephyr's .noinit there).
    temp = spec.pool("temp")
    assert temp.bytes >= spec.report.temp_allocator_size > 0 and temp.npu
    noinit = _text(files, "linker/armgen_pools_noinit.ld")
    for p in spec.pools:
        if p.region == "SRAM0":
            assert f"KEEP(*({p.section}))" in noinit
    # Only the non-delegated operators are registered.
    ops = _text(files, "model/selected_operators.yaml")
    # DS-CNN is fully delegated to the U55-256 (its global average pool has stride 1): one
    # delegate call and nothing left for the CPU, so no kernel is registered at all.
    assert len(spec.report.delegates) == 1 and spec.report.selected_operators == ()
    for op in spec.report.selected_operators:
        assert op in ops
    assert "EthosU" not in ops and "delegate" not in ops.lower()
    delegated = {"aten::convolution", "aten::linear", "aten::_softmax"}
    assert not any(f"{op}" in ops for op in delegated)


@pytest.mark.slow  # compiles kws for three targets (module fixture `programs`)
def test_west_manifest_pins_what_modules_pins(projects):
    from west.manifest import ImportFlag, Manifest

    from armgen.workspace import load_manifest

    pins = {p.name: p for p in load_manifest(MODULES_DIR / "west.yml")}
    pins.update({p.name: p for p in load_manifest(zephyr.zephyr_release("4.4").manifest)})
    for board in BOARD_TARGET:
        spec, files = projects[board]
        m = Manifest.from_data(_text(files, "west.yml"), import_flags=ImportFlag.IGNORE)
        projects_ = {p.name: p for p in m.projects[1:]}
        assert projects_["zephyr"].revision == pins["zephyr"].revision == "v4.4.0"
        for name in ("executorch", "flatbuffers", "flatcc", "cmsis-nn", "json", "gflags"):
            assert projects_[name].revision == pins[name].revision, name
            assert projects_[name].path == pins[name].path, name
            assert projects_[name].url == pins[name].url, name
        allow = zephyr.west_projects(spec.board, zephyr.zephyr_release("4.4"))["allowlist"]
        text = _text(files, "west.yml")
        for name in allow:
            assert f"          - {name}\n" in text
        assert ("hal_stm32" in allow) == board.startswith("nucleo")
        assert {"cmsis_6", "hal_ethos_u"} <= set(allow) and "cmsis-nn" not in allow and "cmsis" not in allow
        assert m.projects[0].path == "kws"


@pytest.mark.slow  # compiles kws for three targets (module fixture `programs`)
def test_generating_twice_is_byte_identical(programs, projects, tmp_path):
    for board in BOARD_TARGET:
        again = render_project(_spec(programs, board)).files
        assert again == projects[board][1]
    spec = _spec(programs, "alif_e8")
    a = write_project(render_project(spec), tmp_path / "a")
    b = write_project(render_project(spec), tmp_path / "b")
    fa = {p.relative_to(a): p.read_bytes() for p in a.rglob("*") if p.is_file()}
    fb = {p.relative_to(b): p.read_bytes() for p in b.rglob("*") if p.is_file()}
    assert fa == fb


# ---- errors ---------------------------------------------------------------------------------------
@pytest.mark.slow  # compiles kws for three targets (module fixture `programs`)
def test_npu_pool_behind_an_alias_is_refused(programs):
    spec = _spec(programs, "alif_e8")
    pool = spec.pool("temp")
    bad = dataclasses.replace(spec, pools=tuple(dataclasses.replace(p, region="DTCM") if p is pool else p for p in spec.pools))
    with pytest.raises(ProjectError, match="sees only at 0x50800000"):
        zephyr.check_npu_placement(bad)


def test_no_zephyr_in_the_workspace_is_one_clear_line(tmp_path):
    from armgen.workspace import Workspace, check_zephyr_workspace

    with pytest.raises(WorkspaceError) as exc:
        check_zephyr_workspace(Workspace(tmp_path))
    msg = str(exc.value.message if hasattr(exc.value, "message") else exc.value)
    assert "no Zephyr in the workspace" in msg and "\n" not in msg
    assert "armgen workspace init --zephyr" in (exc.value.hint or "")


@pytest.mark.slow  # compiles kws for three targets (module fixture `programs`)
def test_armgen_build_of_a_zephyr_project_without_zephyr(projects, tmp_path):
    """`armgen build` on a generated Zephyr project, against a workspace without Zephyr: one line,
    exit code 2, no traceback."""
    from click.testing import CliRunner

    from armgen.cli import main

    spec, files = projects["alif_e8"]
    project = write_project(render_project(spec), tmp_path)
    ws = tmp_path / "ws"  # holds the bare-metal sources at the usual paths, but no zephyr/
    for rel in ("modules/lib/executorch", "modules/lib/cmsis-nn", "modules/hal/ethos_u", "modules/hal/cmsis_6/CMSIS/Core/Include"):
        (ws / rel).mkdir(parents=True)
    for rel in ("modules/lib/executorch/CMakeLists.txt", "modules/lib/cmsis-nn/CMakeLists.txt"):
        (ws / rel).write_text("")
    result = CliRunner().invoke(main, ["build", str(project), "--workspace", str(ws)])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("armgen: error:")]
    assert len(errors) == 1 and "no Zephyr in the workspace" in errors[0], result.output
    assert "Traceback" not in result.output

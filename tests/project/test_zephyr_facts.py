"""Generated Zephyr 4.4 applications checked against facts read from Zephyr's own files.

Zephyr cannot be built here, so ``tests/data/zephyr_facts.yaml`` records what Zephyr v4.4-era files
declare (Kconfig symbols, board file stems, devicetree labels, ``zephyr,memory-region`` names,
Ethos-U nodes), each with the file and commit it was read at. These tests check against that table:

* every ``CONFIG_`` line of ``prj.conf`` / ``boards/<stem>.conf`` names a symbol of the project's own
  ``Kconfig``, of ExecuTorch's ``zephyr/Kconfig`` or one Zephyr 4.4 declares, with a value of its type;
* the ``boards/`` file stems are Zephyr's stems for the target;
* every ``&label`` of the overlay exists in the target's devicetree (or the overlay defines it), and
  every linker memory region the ``linker/*.ld`` snippets name is a ``zephyr,memory-region`` of the
  devicetree, one the overlay adds, or one of Zephyr's ROMABLE_REGION/RAMABLE_REGION;
* armgen's own tables (:data:`armgen.project.zephyr.ZEPHYR_DTS`, the board files' regions, the Zephyr Kconfig
  symbol table) agree with the recorded facts, so a drift on either side is caught.

Known disagreements between armgen and the recorded facts are marked ``xfail(strict=True)`` with the
reason: they fail loudly (XPASS) once fixed, so the mark is removed then. The generating tests compile
kws once per NPU configuration (module fixture) and are marked slow.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from _narrow import present
from _programs import compile_result, config_lines
from armgen.boards import load_board
from armgen.paths import MODULES_DIR
from armgen.project import zephyr

FACTS_PATH = Path(__file__).parents[1] / "data" / "zephyr_facts.yaml"
FACTS = yaml.safe_load(FACTS_PATH.read_text(encoding="utf-8"))
RELEASE = FACTS["releases"]["v4.4.0"]
KCONFIG = RELEASE["kconfig"]
BOARDS = RELEASE["boards"]
ET_SYMBOLS = FACTS["executorch"]["zephyr_kconfig"]["symbols"]
#: Linker region names Zephyr's Cortex-M linker script defines itself (not devicetree nodes).
LINKER_BUILTIN_REGIONS = set(RELEASE["linker"]["regions"]["names"])

_SHA = re.compile(r"^[0-9a-f]{40}$")

#: armgen board file -> the Zephyr 4.4 board target it must name (the boards these tests generate).
GENERATED = {
    "alif_e8_hp": "ensemble_e8_dk/ae822fa0e5597ls0/rtss_hp",
    "alif_e8_he": "ensemble_e8_dk/ae822fa0e5597ls0/rtss_he",
    "corstone_300": "mps3/corstone300/fvp",
    "corstone_320": "mps4/corstone320/fvp",
}
#: Board files whose Zephyr 4.4 target has recorded facts (region/label cross-checks, no compile).
BOARD_FILES = {
    **GENERATED,
    "qemu_mps3_an547": "mps3/corstone300/an547",
    "nucleo_h743zi": "nucleo_h743zi",
    "nucleo_f767zi": "nucleo_f767zi",
    "stm32f4_disco": "stm32f4_disco",
}

#: Known disagreements between armgen.project.zephyr.ZEPHYR_DTS and the recorded facts, keyed
#: (target, armgen region or "@flash"/"@sram"/"@npu"): reason. Strict xfail: remove when fixed.
DTS_TABLE_DRIFT: dict[tuple[str, str], str] = {}

#: Known disagreements of armgen's Zephyr Kconfig symbol table with the facts: symbol -> reason.
KCONFIG_TABLE_DRIFT: dict[str, str] = {}


# ---- helpers ------------------------------------------------------------------------------------
def _target(board) -> str:
    """The board's Zephyr 4.4 target (board files name it per release, older ones had one target)."""
    t = board.zephyr.target
    return t("4.4") if callable(t) else t


def _labels(target: str, *, certain: bool = True) -> dict:
    """Recorded labels of ``target``; ``certain`` drops labels seen in only some file versions."""
    labels = BOARDS[target]["labels"]
    return {k: v for k, v in labels.items() if not (certain and v.get("only_in"))}


def _memory_regions(target: str) -> set[str]:
    return {v["memory_region"] for v in _labels(target).values() if v.get("memory_region")}




def _own_kconfig_symbols(text: str) -> set[str]:
    return set(re.findall(r"^\s*(?:menu)?config\s+([A-Za-z0-9_]+)", text, re.MULTILINE))


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.DOTALL)
    return re.sub(r"//[^\n]*", "", text)


def _overlay_refs(text: str) -> tuple[set[str], set[str], set[str]]:
    """(labels referenced with &label, labels the overlay defines, memory regions it adds)."""
    text = _strip_comments(text)
    refs = set(re.findall(r"&([A-Za-z_][A-Za-z0-9_]*)", text))
    defined = set(re.findall(r"(?:^|[\s{;])([A-Za-z_][A-Za-z0-9_]*):\s*[A-Za-z0-9_,.@+-]+\s*\{", text))
    regions = set(re.findall(r'zephyr,memory-region\s*=\s*"([^"]+)"', text))
    return refs, defined, regions


def _linker_regions(text: str) -> set[str]:
    """Memory region names a linker snippet places sections in."""
    text = _strip_comments(text)
    names: set[str] = set()
    for args in re.findall(r"GROUP_(?:ROM_|DATA_|NOLOAD_)?LINK_IN\(([^)]*)\)", text):
        names.update(a.strip() for a in args.split(",") if a.strip())
    names.update(re.findall(r"(?:AT\s*)?>\s*([A-Za-z_][A-Za-z0-9_]*)", text))
    return names


def _value_ok(kind: str | None, value: str) -> bool:
    if kind == "bool":
        return value in ("y", "n")
    if kind == "int":
        return re.fullmatch(r"-?\d+", value) is not None
    if kind == "hex":
        return re.fullmatch(r"0x[0-9a-fA-F]+", value) is not None
    if kind == "string":
        return value.startswith('"') and value.endswith('"')
    return True


# ---- the facts file itself ----------------------------------------------------------------------
def test_facts_name_a_file_and_commit():
    for name, fact in KCONFIG.items():
        assert fact["declared"] in (True, False), name
        if fact["declared"]:
            assert fact.get("file") and _SHA.match(fact.get("commit", "")), f"{name}: file/commit missing"
            assert fact.get("type") in ("bool", "int", "hex", "string"), name
    for target, b in BOARDS.items():
        assert _SHA.match(b["dts"]["commit"]), target
        assert _SHA.match(b["board_yml"]["commit"]), target
        for label, fact in b["labels"].items():
            assert fact.get("file") and _SHA.match(fact["commit"]), f"{target}: {label}"
            if "reg" in fact:
                base, size = fact["reg"]
                assert isinstance(base, int) and isinstance(size, int) and size > 0, f"{target}: {label}"
        for prop, label in b["chosen"].items():
            if prop in ("zephyr,flash", "zephyr,sram"):
                assert label in b["labels"], f"{target}: chosen {prop} = &{label} has no recorded label"
    for name in FACTS["executorch"]["zephyr_kconfig"]["symbols"]:
        assert name.startswith(("EXECUTORCH", "ZEPHYR_EXECUTORCH")), name


@pytest.mark.parametrize("target", sorted(BOARDS))
def test_recorded_stems_are_zephyrs_file_names(target):
    """The stem is the board DTS file name and armgen's normalisation of the target."""
    fact = BOARDS[target]
    assert Path(fact["dts"]["file"]).name == f"{fact['stem']}.dts"
    assert Path(fact["dts"]["file"]).parent.as_posix() == fact["board_dir"]
    assert zephyr.normalise_board_target(target) == fact["stem"]
    assert fact["board_yml"]["name"] == target.split("/")[0]


# ---- armgen's tables against the facts ----------------------------------------------------------
def _dts_table_cases():
    cases = []
    for target, facts in sorted(zephyr.ZEPHYR_DTS.items()):
        if target not in BOARDS:  # other releases' targets (e.g. 3.7's mps3/an547)
            continue
        keys = [*sorted(facts.regions), "@flash", "@sram", "@npu"]
        for key in keys:
            reason = DTS_TABLE_DRIFT.get((target, key))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            cases.append(pytest.param(target, key, marks=marks, id=f"{target}:{key}"))
    return cases


def test_every_recorded_target_is_in_armgens_table():
    for target in BOARDS:
        assert target in zephyr.ZEPHYR_DTS, f"{target}: no devicetree facts in armgen.project.zephyr.ZEPHYR_DTS"


@pytest.mark.parametrize(("target", "key"), _dts_table_cases())
def test_armgen_dts_table_matches_zephyr(target, key):
    facts = zephyr.ZEPHYR_DTS[target]
    rec = BOARDS[target]
    labels = _labels(target)
    if key == "@flash":
        assert facts.regions[facts.flash].label == rec["chosen"]["zephyr,flash"]
    elif key == "@sram":
        assert facts.regions[facts.sram].label == rec["chosen"]["zephyr,sram"]
    elif key == "@npu":
        assert facts.has_npu_node == rec["ethos_u"]["exists"]
    else:
        dt = facts.regions[key]
        assert dt.label in labels, f"{target}: armgen region {key} -> &{dt.label}, not a label of the DTS"
        assert dt.memory_region == labels[dt.label].get("memory_region"), (
            f"{target}: &{dt.label} has zephyr,memory-region {labels[dt.label].get('memory_region')!r}, "
            f"armgen says {dt.memory_region!r}"
        )


@pytest.mark.parametrize("board_name", sorted(BOARD_FILES))
def test_board_file_names_the_4_4_target_and_its_regions_match_the_dts(board_name):
    board = load_board(board_name)
    target = _target(board)
    assert target == BOARD_FILES[board_name]
    facts = zephyr.ZEPHYR_DTS.get(target)
    if facts is None:
        pytest.fail(f"{target}: no devicetree facts in armgen.project.zephyr.ZEPHYR_DTS")
    labels = _labels(target)
    for region in board.regions:
        dt = facts.regions.get(region.name)
        if dt is None or dt.label not in labels or "reg" not in labels[dt.label]:
            continue
        base, size = labels[dt.label]["reg"]
        assert (region.base, region.size) == (base, size), (
            f"{board_name}: {region.name} is {region.base:#x}+{region.size:#x}, the DTS's &{dt.label} "
            f"is {base:#x}+{size:#x}"
        )
    # The NPU armgen adds itself (no node in the DTS) sits in the board's own register window.
    if board.npu is not None and not BOARDS[target]["ethos_u"]["exists"]:
        assert board.npu.base_address not in {v["reg"][0] for v in labels.values() if "reg" in v}


def _kconfig_table():
    """armgen's table of Zephyr Kconfig symbols with their declaring file (whichever form it has)."""
    table = dict(getattr(zephyr, "ZEPHYR_CORE_SYMBOLS", {}) or {})
    releases = MODULES_DIR / "zephyr" / "releases.yaml"
    if releases.is_file():
        data = yaml.safe_load(releases.read_text(encoding="utf-8")) or {}
        table.update((data.get("releases", {}).get("4.4", {}) or {}).get("kconfig", {}) or {})
    return table


def _kconfig_table_cases():
    cases = []
    for sym in sorted(_kconfig_table()):
        if sym.startswith("ARM_ETHOS_U"):  # the pre-4.2 spelling, kept for other releases
            continue
        reason = KCONFIG_TABLE_DRIFT.get(sym)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        cases.append(pytest.param(sym, marks=marks, id=sym))
    return cases


@pytest.mark.parametrize("symbol", _kconfig_table_cases())
def test_armgen_kconfig_table_matches_zephyr(symbol):
    where = _kconfig_table()[symbol]
    fact = KCONFIG.get(symbol)
    assert fact is not None and fact["declared"], f"CONFIG_{symbol} is not declared in Zephyr 4.4"
    path = str(where).split(" (")[0].split()[0]
    assert path == fact["file"], f"CONFIG_{symbol}: armgen says {path}, Zephyr declares it in {fact['file']}"


def _release_allowlist() -> tuple[str, ...]:
    """Zephyr projects armgen's 4.4 applications import by name (releases.yaml, else the old constant)."""
    releases = MODULES_DIR / "zephyr" / "releases.yaml"
    if releases.is_file():
        data = yaml.safe_load(releases.read_text(encoding="utf-8")) or {}
        allow = (data.get("releases", {}).get("4.4", {}) or {}).get("allowlist")
        if allow:
            return tuple(allow)
    return tuple(getattr(zephyr, "_ALLOWLIST_BASE", ()))


def test_imported_zephyr_projects_exist_in_zephyrs_manifest():
    west = RELEASE["west"]["projects"]
    names = set(_release_allowlist())
    for board_name in BOARD_FILES:
        names.update(present(load_board(board_name).zephyr).hal_modules)
    assert names, "no allowlist found"
    missing = sorted(n for n in names if n not in west)
    assert not missing, f"Zephyr's west.yml (@{RELEASE['west']['commit'][:12]}) has no projects {missing}"
    # armgen pins these itself; they match the recorded Zephyr manifest.
    from armgen.workspace import load_manifest

    manifests = [MODULES_DIR / "west.yml", *sorted((MODULES_DIR / "zephyr").glob("v4.4*.yml"))]
    pins = {p.name: p for m in manifests if m.is_file() for p in load_manifest(m)}
    for name in ("hal_ethos_u", "hal_stm32"):
        if name in pins:
            assert pins[name].revision == west[name]["revision"], name


# ---- generated projects -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def projects():
    """{board file: (spec, {path: bytes}, Zephyr target)}; kws compiled once per test run for each board's NPU
    settings (the session's compile cache, tests/_programs.py, shared with the other files' tests)."""
    from armgen.project.render import render_project
    from armgen.project.spec import make_spec
    from armgen.project.zephyr import zephyr_placement

    out = {}
    for name in GENERATED:
        board = load_board(name)
        res = compile_result("kws", present(board.npu).vela_accelerator, name)
        spec = make_spec(
            res.report, board, name="kws", pte_path=res.pte_path, report_path=res.report_path,
            board_ref=name, rtos="zephyr", zephyr=zephyr_placement(board),
        )
        out[name] = (spec, render_project(spec).files, _target(board))
    return out


def _text(files, path):
    return files[path].decode()


@pytest.mark.slow
@pytest.mark.parametrize("board", sorted(GENERATED))
def test_config_symbols_are_declared_in_zephyr_4_4(projects, board):
    spec, files, target = projects[board]
    stem = BOARDS[target]["stem"]
    own = _own_kconfig_symbols(_text(files, "Kconfig"))
    used = {**config_lines(_text(files, "prj.conf")), **config_lines(_text(files, f"boards/{stem}.conf"))}
    undeclared, bad_values = [], []
    for sym, value in sorted(used.items()):
        if sym in own:
            continue
        if sym in ET_SYMBOLS:
            kind = ET_SYMBOLS[sym].get("type")
        elif KCONFIG.get(sym, {}).get("declared"):
            kind = KCONFIG[sym]["type"]
        else:
            undeclared.append(f"CONFIG_{sym}" + (f" ({KCONFIG[sym]['note']})" if sym in KCONFIG else ""))
            continue
        if not _value_ok(kind, value):
            bad_values.append(f"CONFIG_{sym}={value} (a {kind})")
    assert not undeclared, f"{board}: CONFIG_ symbols Zephyr 4.4 / ExecuTorch do not declare: {undeclared}"
    assert not bad_values, f"{board}: values of the wrong type: {bad_values}"


@pytest.mark.slow
@pytest.mark.parametrize("board", sorted(GENERATED))
def test_board_files_use_zephyrs_stem(projects, board):
    spec, files, target = projects[board]
    stem = BOARDS[target]["stem"]
    board_files = sorted(p for p in files if p.startswith("boards/"))
    assert board_files == [f"boards/{stem}.conf", f"boards/{stem}.overlay"]
    # The stems in the generated text (prj.conf's pointer, the README's build line) name the target.
    assert f"boards/{stem}.conf" in _text(files, "prj.conf")


@pytest.mark.slow
@pytest.mark.parametrize("board", sorted(GENERATED))
def test_overlay_labels_exist_in_the_devicetree(projects, board):
    spec, files, target = projects[board]
    rec = BOARDS[target]
    overlay = _text(files, f"boards/{rec['stem']}.overlay")
    refs, defined, _ = _overlay_refs(overlay)
    known = set(_labels(target)) | defined
    missing = sorted(refs - known)
    assert not missing, f"{board}: overlay references labels {target}'s devicetree does not have: {missing}"
    # A node the overlay adds must not duplicate a label of the board's devicetree (unless the
    # overlay deletes the board's node first, as ExecuTorch's E8 overlays do with sram0).
    deleted = set(re.findall(r"/delete-node/\s*&([A-Za-z_][A-Za-z0-9_]*)", _strip_comments(overlay)))
    clash = sorted((defined & set(rec["labels"])) - deleted)
    assert not clash, f"{board}: overlay redefines labels of the DTS: {clash}"


@pytest.mark.slow
@pytest.mark.parametrize("board", sorted(GENERATED))
def test_linker_regions_exist(projects, board):
    spec, files, target = projects[board]
    overlay = _text(files, f"boards/{BOARDS[target]['stem']}.overlay")
    _, _, added = _overlay_refs(overlay)
    known = _memory_regions(target) | added | LINKER_BUILTIN_REGIONS
    for path in sorted(p for p in files if p.startswith("linker/") and p.endswith(".ld")):
        unknown = sorted(_linker_regions(_text(files, path)) - known)
        assert not unknown, f"{board}: {path} links into regions {target} does not define: {unknown}"
    macros = set(RELEASE["linker"]["macros"]["names"])
    for path in sorted(p for p in files if p.startswith("linker/")):
        used = set(re.findall(r"\b((?:SECTION_[A-Z_]*PROLOGUE|GROUP_[A-Z_]*LINK_IN))\(", _text(files, path)))
        assert used <= macros, f"{board}: {path} uses linker macros Zephyr does not define: {sorted(used - macros)}"


@pytest.mark.slow
@pytest.mark.parametrize("board", sorted(GENERATED))
def test_npu_node_and_kconfig_choice_match_the_devicetree(projects, board):
    spec, files, target = projects[board]
    rec = BOARDS[target]
    overlay = _strip_comments(_text(files, f"boards/{rec['stem']}.overlay"))
    adds_npu = '"arm,ethos-u"' in overlay
    # Exactly one enabled arm,ethos-u node: the DTS's or the overlay's, never both, never none.
    assert adds_npu != rec["ethos_u"]["exists"], (
        f"{board}: DTS has an Ethos-U node: {rec['ethos_u']['exists']}, overlay adds one: {adds_npu}"
    )
    conf = config_lines(_text(files, f"boards/{rec['stem']}.conf"))
    assert conf.get("ETHOS_U") == "y"
    choice = f"ETHOS_U{board_npu_kind(spec)}"
    assert conf.get(choice) == "y" and KCONFIG[choice]["declared"], f"{board}: CONFIG_{choice}"


def board_npu_kind(spec) -> str:
    npu = spec.board.npu
    return f"{npu.type.replace('ethos-u', '')}_{npu.macs}"


# ---- Zephyr v4.1.0: armgen's release "4.1" against what could be established of the tag ----------
V410 = FACTS["releases"]["v4.1.0"]


def _v410_sources_ok(fact: dict) -> bool:
    """A v4.1.0 fact names where it was read: a file at a commit, an index id, or the basis in words."""
    for src in fact.get("sources", ()):
        if not src.get("file") or not (_SHA.match(src.get("commit", "")) or src.get("index_id")):
            return False
    return bool(fact.get("basis") or fact.get("sources"))


def test_v410_facts_say_where_they_were_read():
    assert _SHA.match(V410["released"]["commit"]) and V410["released"]["date"] == "2025-03-07"
    for name, notes in V410["release_notes"].items():
        assert notes["file"].startswith("doc/releases/") and notes["index_id"], name
    for target, fact in V410["boards"].items():
        assert fact["in_tag"] in (True, False, None) and _v410_sources_ok(fact), target
    for name, fact in V410["kconfig"].items():
        assert fact["declared"] in (True, False) and _v410_sources_ok(fact), name
    for name, pin in V410["west"]["projects"].items():
        assert _SHA.match(pin["snapshot_revision"]) and pin["in_tag"] in (False, None) and pin["basis"], name


def test_board_targets_v410_lacks_are_marked_development_only():
    """A 4.1 target the tag lacks (mps4/corstone320/fvp, new in 4.2.0) is `zephyr.development_only`, so
    `armgen new --zephyr-release 4.1` refuses it without the override; a target the tag has is not."""
    from armgen.boards import list_boards

    seen = set()
    for name in list_boards():
        board = load_board(name)
        if board.zephyr is None or "4.1" not in board.zephyr.releases:
            continue
        target = board.zephyr.target("4.1")
        fact = V410["boards"].get(target)
        assert fact is not None, f"{name}: 4.1 target {target} has no v4.1.0 fact (in_tag true/false/null)"
        seen.add(target)
        note = board.zephyr.development_note("4.1")
        if fact["in_tag"] is False:
            assert note, f"{name}: v4.1.0 lacks {target}, but the board file does not mark it development_only"
        elif fact["in_tag"] is True:
            assert note is None, f"{name}: v4.1.0 has {target}, but the board file marks it development_only"
    assert "mps4/corstone320/fvp" in seen


def test_41_release_data_follows_v410():
    """The 4.1 release spells Ethos-U as v4.1.0 does, and its generated west.yml imports the CMSIS module
    v4.1.0 builds Cortex-M with (`cmsis`, CMSIS 5.9.0; CMSIS_6 became required in 4.2)."""
    rel = zephyr.zephyr_release("4.1")
    assert rel.tag == "v4.1.0"
    kconfig = V410["kconfig"]
    assert kconfig["ARM_ETHOS_U"]["declared"] and not kconfig["ETHOS_U"]["declared"]
    assert rel.ethos_u_kconfig_prefix == "ARM_ETHOS_U"
    assert V410["cmsis"]["cortex_m_module"] in rel.allowlist


def test_nodes_the_board_files_disable_exist_in_the_devicetree():
    """A label of zephyr.disable_nodes is a node of the board's 4.4 devicetree (else the overlay's
    `&label { status = "disabled"; }` would not compile)."""
    for board_name, target in BOARD_FILES.items():
        board = load_board(board_name)
        for label, _reason in present(board.zephyr).disable_nodes:
            assert label in BOARDS[target]["labels"], f"{board_name}: &{label} is not a recorded label of {target}"

"""`armgen workspace`: the pinned manifest, mirror templates, missing-workspace errors, a real init from
mirrors (skipped without them) and the .pte file-identifier check.

Mirror for the real-init tests: $ARMGEN_TEST_MIRROR (a ``{owner}``/``{name}`` URL template), else the
``file://`` mirror template the armgen workspace of this machine was made with (its record,
``.armgen/workspace.json``) when that mirror is there; otherwise they skip.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from _narrow import present
from armgen.cli import main
from armgen.errors import WorkspaceError
from armgen.paths import workspace_dir
from armgen.workspace import (
    SPARSE_PATTERNS,
    STUB_MARKER,
    Workspace,
    check_program_compatible,
    find_workspace,
    init_workspace,
    load_manifest,
    manifest_pins,
    parse_revision_overrides,
    project_url,
    read_pte_file_identifier,
    resolve_revision,
    select_projects,
    validate_mirror_template,
    workspace_status,
)

BARE_METAL = {"executorch", "flatbuffers", "flatcc", "cmsis-nn", "cmsis_6", "hal_ethos_u", "cmsis-dsp"}


def _test_mirror() -> str | None:
    env = os.environ.get("ARMGEN_TEST_MIRROR")
    if env:
        return env
    from armgen.workspace import Workspace

    recorded = Workspace(workspace_dir()).mirror
    if recorded and recorded.startswith("file://"):
        probe = Path(recorded[len("file://"):].format(owner="pytorch", name="executorch"))
        if probe.is_dir():
            return recorded
    return None


MIRROR = _test_mirror()
#: Why the tests that clone for real skip (they init a workspace of their own from local git mirrors).
NO_MIRROR = ("no git mirrors: these tests clone modules/west.yml's repositories from local mirrors; make bare "
             "clones of them (e.g. git clone --mirror <url> /srv/m/<owner>+<name>/repo) and set "
             "ARMGEN_TEST_MIRROR='file:///srv/m/{owner}+{name}/repo', or init the default workspace with "
             "`armgen workspace init --mirror file://...` (its recorded mirror is used)")
needs_mirror = pytest.mark.skipif(MIRROR is None, reason=NO_MIRROR)


def _mirror_git_dir(owner: str, name: str) -> Path | None:
    """The bare repo behind a file:// mirror template (None for other schemes)."""
    if not MIRROR or not MIRROR.startswith("file://"):
        return None
    return Path(MIRROR[len("file://"):].format(owner=owner, name=name))


def _pins() -> dict:
    return {p.name: p for p in load_manifest()}


# ------------------------------------------------------------------ manifest (no network, no mirror)


def test_manifest_parses_with_west_and_pins_what_the_issue_says():
    pins = _pins()
    et = pins["executorch"]
    assert (et.revision, et.path, et.owner, et.repo) == ("v1.5.1", "modules/lib/executorch", "pytorch", "executorch")
    assert et.sparse == SPARSE_PATTERNS["executorch"]
    assert pins["flatbuffers"].path == "modules/lib/executorch/third-party/flatbuffers"
    assert pins["flatbuffers"].revision == "595bf0007ab1929570c7671f091313c8fc20644e"
    assert pins["flatcc"].path == "modules/lib/executorch/third-party/flatcc"
    assert pins["flatcc"].revision == "896db54787e8b730a6be482c69324751f3f5f117"
    assert pins["cmsis-nn"].revision == "4a8f5b5de3ab7857c9b5e56a6efdc6e63220feb6"
    assert (pins["cmsis-nn"].owner, pins["cmsis-nn"].repo) == ("ARM-software", "CMSIS-NN")
    assert pins["cmsis_6"].path == "modules/hal/cmsis_6"
    assert (pins["hal_ethos_u"].owner, pins["hal_ethos_u"].path) == ("zephyrproject-rtos", "modules/hal/ethos_u")
    dsp = pins["cmsis-dsp"]  # the audio front end's FFT: CMSIS-DSP v1.17.1, sources and headers only
    assert (dsp.owner, dsp.repo, dsp.revision) == ("ARM-software", "CMSIS-DSP", "4b4fa8ff218ca5ac20bad71b653a37d93815f24b")
    assert dsp.sparse == SPARSE_PATTERNS["cmsis-dsp"]
    assert "zephyr" not in pins and "hal_stm32" not in pins  # per release: modules/zephyr/<release>.yml
    z44 = {p.name: p for p in manifest_pins("4.4")}
    assert (z44["zephyr"].revision, z44["zephyr"].groups) == ("v4.4.0", ("zephyr",))
    z37 = {p.name: p for p in manifest_pins("3.7")}
    assert (z37["zephyr"].revision, z37["zephyr"].path) == ("v3.7.1", "zephyr")
    # zephyr v3.7.1 west.yml pins of the modules 3.7 applications need
    assert z37["cmsis"].revision == "4b96cbb174678dcd3ca86e11e1f24bc5f8726da0"
    assert z37["hal_stm32"].revision == "f1317150eac951fdd8259337a47cbbc4c2e6d335"
    with pytest.raises(WorkspaceError, match="unknown Zephyr release '2.7'"):
        manifest_pins("2.7")
    pins.update(z44)
    for name in ("tflite-micro", "gemmlowp", "ruy", "kissfft", "flatbuffers-tflm"):
        assert pins[name].groups == ("benchmarks",)
    assert (pins["flatbuffers-tflm"].owner, pins["flatbuffers-tflm"].repo) == ("google", "flatbuffers")
    # default selection = the bare-metal set; the groups switch on exactly their projects
    assert {p.name for p in select_projects(pins.values())} == BARE_METAL
    assert {p.name for p in select_projects(pins.values(), ["zephyr"])} == BARE_METAL | {"zephyr", "hal_stm32"}
    assert {p.name for p in select_projects(pins.values(), ["benchmarks"])} - BARE_METAL == {
        "tflite-micro",
        "gemmlowp",
        "ruy",
        "kissfft",
        "flatbuffers-tflm",
    }


def test_every_pinned_commit_is_full_length():
    for pin in load_manifest():
        if pin.name in ("executorch", "zephyr", "kissfft"):
            continue  # tags
        assert len(pin.revision) == 40 and int(pin.revision, 16) >= 0, pin


def test_mirror_template_fills_owner_and_name():
    et = _pins()["executorch"]
    assert project_url(et, "file:///m/{owner}+{name}/repo") == "file:///m/pytorch+executorch/repo"
    assert project_url(et, None) == "https://github.com/pytorch/executorch"


@pytest.mark.parametrize(
    "template", ["file:///m/{owner}/repo", "file:///m/{name}", "https://example.com/mirror", "f:///{owner}/{name}/{x}"]
)
def test_mirror_template_without_placeholders_is_an_error(template):
    with pytest.raises(WorkspaceError):
        validate_mirror_template(template)


def test_mirror_template_error_through_cli(tmp_path):
    target = tmp_path / "ws"
    result = CliRunner().invoke(main, ["workspace", "init", str(target), "--mirror", "file:///m/{owner}/repo"])
    assert result.exit_code == 2
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert lines[0].startswith("armgen: error: mirror template") and "{name}" in lines[0]
    assert not target.exists()


def test_mirror_without_repositories_says_what_git_said(tmp_path):
    """A template that names no repository: git's reason in one line (not its trailing advice) + a hint."""
    target = tmp_path / "ws"
    template = f"file://{tmp_path}/nowhere/{{owner}}+{{name}}/repo"
    result = CliRunner().invoke(main, ["workspace", "init", str(target), "--mirror", template])
    assert result.exit_code == 2, result.output
    error = [ln for ln in result.output.splitlines() if ln.startswith("armgen: error:")]
    assert len(error) == 1, result.output
    assert f"reading file://{tmp_path}/nowhere/pytorch+executorch/repo failed" in error[0]
    assert "does not appear to be a git repository" in error[0] or "not found" in error[0]
    assert "repository exists" not in result.output and "Traceback" not in result.output
    assert any(ln.startswith("hint:") and "--mirror" in ln for ln in result.output.splitlines())


def test_revision_overrides_parse_and_reject_unknown_projects():
    pins = load_manifest()
    assert parse_revision_overrides(["executorch=main", "cmsis-nn=abc1234"], pins) == {
        "executorch": "main",
        "cmsis-nn": "abc1234",
    }
    with pytest.raises(WorkspaceError, match="no project 'torch'"):
        parse_revision_overrides(["torch=main"], pins)
    with pytest.raises(WorkspaceError, match="PROJECT=VALUE"):
        parse_revision_overrides(["executorch"], pins)


def test_unknown_revision_suggests_an_override_and_lists_few_branches():
    refs = {"refs/heads/main": "a" * 40, "refs/heads/release/1.4": "b" * 40, "refs/tags/v1.4.0": "c" * 40}
    with pytest.raises(WorkspaceError) as info:
        resolve_revision("executorch", "file:///m/pytorch+executorch/repo", "v1.5.1", refs)
    assert "v1.5.1" in info.value.message and "main, release/1.4" in info.value.message
    assert "--revision executorch=" in present(info.value.hint)
    assert resolve_revision("executorch", "u", "v1.4.0", refs).commit == "c" * 40
    assert resolve_revision("executorch", "u", "main", refs).kind == "branch"


# ------------------------------------------------------------------ missing workspace


def test_missing_workspace_raises_with_init_advice(tmp_path, monkeypatch):
    monkeypatch.setenv("ARMGEN_WORKSPACE", str(tmp_path / "nowhere"))
    with pytest.raises(WorkspaceError) as info:
        find_workspace(None)
    assert str(tmp_path / "nowhere") in info.value.message
    assert "armgen workspace init --mirror" in present(info.value.hint)
    with pytest.raises(WorkspaceError):
        find_workspace(tmp_path)  # exists, but no .west/config


def test_missing_workspace_through_cli(tmp_path, monkeypatch):
    monkeypatch.setenv("ARMGEN_WORKSPACE", str(tmp_path / "nowhere"))
    result = CliRunner().invoke(main, ["workspace", "status"])
    assert result.exit_code == 1
    assert f"no armgen workspace at {tmp_path / 'nowhere'}" in result.output
    assert "hint: run: armgen workspace init --mirror" in result.output
    result = CliRunner().invoke(main, ["workspace", "status", "--json"])
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["complete"] is False and data["exists"] is False


# ------------------------------------------------------------------ .pte file identifier


def _fake_workspace(root: Path, identifier: str = "ET12", version: str = "1.5.0") -> Workspace:
    """A directory with just the two ExecuTorch files the compatibility check reads."""
    et = root / "modules" / "lib" / "executorch"
    (et / "schema").mkdir(parents=True)
    (et / "schema" / "program.fbs").write_text(f'namespace executorch_flatbuffer;\nfile_identifier "{identifier}";\n')
    (et / "version.txt").write_text(version + "\n")
    return Workspace(root)


def _fake_pte(path: Path, identifier: bytes) -> Path:
    path.write_bytes(b"\x1c\x00\x00\x00" + identifier + b"\x00" * 24)
    return path


def test_pte_with_other_file_identifier_is_an_error(tmp_path):
    ws = _fake_workspace(tmp_path / "ws")
    pte = _fake_pte(tmp_path / "old.pte", b"ET11")
    assert read_pte_file_identifier(pte) == "ET11"
    with pytest.raises(WorkspaceError) as info:
        check_program_compatible(ws, pte)
    assert "has file identifier ET11 but the workspace's ExecuTorch runtime reads ET12" in info.value.message


def test_pte_with_same_identifier_other_version_only_warns(tmp_path, monkeypatch):
    ws = _fake_workspace(tmp_path / "ws", version="0.9.0")
    monkeypatch.setattr("armgen.workspace.compatibility.pip_executorch_version", lambda: "1.5.1")
    warnings = check_program_compatible(ws, _fake_pte(tmp_path / "m.pte", b"ET12"))
    assert len(warnings) == 1 and "0.9.0" in warnings[0] and "1.5.1" in warnings[0]


def test_truncated_pte_is_an_error(tmp_path):
    (tmp_path / "short.pte").write_bytes(b"\x00\x00")
    with pytest.raises(WorkspaceError, match="not an ExecuTorch program"):
        read_pte_file_identifier(tmp_path / "short.pte")


# ------------------------------------------------------------------ with mirrors: a real init


@pytest.fixture(scope="module")
def real_workspace(tmp_path_factory):
    if MIRROR is None:
        pytest.skip(NO_MIRROR)
    root = tmp_path_factory.mktemp("armgen-ws") / "ws"
    result = init_workspace(root, mirror=MIRROR, revisions={"executorch": "main"})
    return result


@needs_mirror
def test_pinned_release_missing_from_mirror_fails_cleanly(tmp_path):
    et = _mirror_git_dir("pytorch", "executorch")
    if et is not None:
        tags = subprocess.run(["git", "--git-dir", str(et), "tag", "-l", "v1.5.1"], capture_output=True, text=True)
        if tags.stdout.strip():
            pytest.skip("this mirror has the v1.5.1 tag")
    target = tmp_path / "ws"
    result = CliRunner().invoke(main, ["workspace", "init", str(target), "--mirror", present(MIRROR)])
    assert result.exit_code == 2
    assert "revision v1.5.1 is not in" in result.output
    assert "--revision executorch=" in result.output
    assert not (target / "modules").exists()  # resolved before anything was written


@pytest.mark.workspace
@needs_mirror
def test_real_init_checks_out_the_bare_metal_set(real_workspace):
    ws = real_workspace.workspace
    assert set(real_workspace.actions) >= BARE_METAL
    assert all(real_workspace.actions[n] == "cloned" for n in BARE_METAL)
    st = workspace_status(ws.root)
    assert st.complete, [(p.name, p.missing) for p in st.projects]
    by_name = {p.name: p for p in st.projects}
    for name in BARE_METAL:
        assert by_name[name].present and by_name[name].size_bytes > 0
    assert by_name["cmsis-nn"].commit == "4a8f5b5de3ab7857c9b5e56a6efdc6e63220feb6"
    assert not by_name["zephyr"].active and not (ws.root / "zephyr").exists()
    # sparse: no examples/ or docs/ (where the mirror's missing 4 MiB+ blobs live)
    assert not (ws.executorch_dir / "examples").exists() and not (ws.executorch_dir / "docs").exists()
    assert (ws.executorch_dir / "backends" / "cortex_m" / "CMakeLists.txt").is_file()
    # ExecuTorch's CMake adds these unconditionally; inactive projects -> marked stubs
    for sub in ("json", "gflags"):
        assert STUB_MARKER in (ws.executorch_dir / "third-party" / sub / "CMakeLists.txt").read_text()
    assert ws.program_file_identifier() == "ET12"
    assert find_workspace(ws.root) == ws
    assert ws.mirror == MIRROR
    # armgen's patches (modules/patches/) applied to the fresh checkouts, and shown as such
    from armgen.workspace.patches import source_patches

    assert {p.name: real_workspace.actions.get(p.name) for p in source_patches()} == {
        p.name: "patched" for p in source_patches()}
    assert {(name, state) for name, _module, state, _saves in st.patches} == {
        (p.name, "applied") for p in source_patches()}


@pytest.mark.workspace
@needs_mirror
def test_real_workspace_is_a_west_workspace(real_workspace):
    root = real_workspace.workspace.root
    out = subprocess.run(
        [sys.executable, "-m", "west", "list", "-f", "{name} {path}"], cwd=root, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    listed = dict(line.split() for line in out.stdout.splitlines())
    assert listed["executorch"] == "modules/lib/executorch"
    assert listed["flatcc"] == "modules/lib/executorch/third-party/flatcc"
    assert "zephyr" not in listed  # inactive group


#: ExecuTorch's own CMSIS-NN pin (backends/cortex_m/CMakeLists.txt, CMSIS_NN_VERSION, at v1.5.x and main of
#: 2026-08); armgen's pin (modules/west.yml) is its descendant with the arm_transpose_conv_s8 row fix.
EXECUTORCH_CMSIS_NN_VERSION = "dbf45dbfcc515421dd6099037d3e2637b90748c8"


@pytest.mark.workspace
@needs_mirror
def test_cmsis_nn_pin_is_executorch_s_plus_the_transposed_convolution_fix(real_workspace):
    ws = real_workspace.workspace
    text = (ws.executorch_dir / "backends" / "cortex_m" / "CMakeLists.txt").read_text()
    assert f'"{EXECUTORCH_CMSIS_NN_VERSION}"' in text.split("CMSIS_NN_VERSION", 1)[1][:200]
    pin, cmsis_nn = _pins()["cmsis-nn"].revision, ws.root / "modules" / "lib" / "cmsis-nn"
    # (the checkout is shallow: fetch ExecuTorch's commit to compare the two trees)
    subprocess.run(["git", "fetch", "-q", "origin", EXECUTORCH_CMSIS_NN_VERSION], cwd=cmsis_nn, check=True)
    changed = subprocess.run(["git", "diff", "--name-only", EXECUTORCH_CMSIS_NN_VERSION, pin, "--", "Source", "Include"],
                             cwd=cmsis_nn, capture_output=True, text=True, check=True).stdout.split()
    assert changed == ["Source/ConvolutionFunctions/arm_transpose_conv_s8.c"]
    # flatbuffers/flatcc pins = executorch's gitlinks
    tree = subprocess.run(
        ["git", "ls-tree", "HEAD", "third-party/flatbuffers", "third-party/flatcc"],
        cwd=ws.executorch_dir,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    gitlinks = {line.split("\t")[1].rsplit("/", 1)[1]: line.split()[2] for line in tree.splitlines()}
    assert gitlinks == {"flatbuffers": _pins()["flatbuffers"].revision, "flatcc": _pins()["flatcc"].revision}


@pytest.mark.workspace
@needs_mirror
def test_status_cli_reports_everything_present(real_workspace):
    root = real_workspace.workspace.root
    result = CliRunner().invoke(main, ["workspace", "status", str(root), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["complete"] and data["program_file_identifier"] == "ET12"
    present = {p["name"] for p in data["projects"] if p["present"]}
    assert present == BARE_METAL


@pytest.mark.workspace
@needs_mirror
def test_second_init_reuses_mirror_and_revision_and_does_nothing(real_workspace):
    again = init_workspace(real_workspace.workspace.root)  # no mirror, no --revision: both recorded
    assert again.already_complete
    assert set(again.actions.values()) == {"up to date"}


@pytest.mark.slow
@pytest.mark.workspace
@needs_mirror
def test_real_pte_from_pip_executorch_is_compatible(real_workspace, tmp_path):
    """A real program from the installed executorch carries the identifier the workspace runtime expects."""
    import torch
    from executorch.exir import to_edge

    class Tiny(torch.nn.Module):
        def forward(self, x):
            return x + 1

    program = to_edge(torch.export.export(Tiny(), (torch.ones(2),))).to_executorch()
    pte = tmp_path / "tiny.pte"
    pte.write_bytes(program.buffer)
    assert read_pte_file_identifier(pte) == "ET12"
    warnings = check_program_compatible(real_workspace.workspace, pte)
    assert all("programs load" in w for w in warnings)


@pytest.mark.workspace
@needs_mirror
def test_damaged_workspace_is_reported_then_repaired(real_workspace):
    """Runs last: deletes a required file, checks status/find_workspace, then lets init restore it."""
    ws = real_workspace.workspace
    (ws.executorch_dir / "schema" / "program.fbs").unlink()
    st = workspace_status(ws.root)
    assert not st.complete
    assert "schema/program.fbs missing" in {p.name: p for p in st.projects}["executorch"].missing
    with pytest.raises(WorkspaceError, match="incomplete"):
        find_workspace(ws.root)
    result = CliRunner().invoke(main, ["workspace", "status", str(ws.root)])
    assert result.exit_code == 1
    fixed = init_workspace(ws.root)
    assert fixed.actions["executorch"] == "restored"
    assert workspace_status(ws.root).complete


@needs_mirror
def test_failed_init_leaves_no_project_that_looks_complete(tmp_path):
    root = tmp_path / "ws"
    bogus = "0123456789" * 4
    with pytest.raises(WorkspaceError, match="hal_ethos_u"):
        init_workspace(root, mirror=MIRROR, revisions={"executorch": "main", "hal_ethos_u": bogus})
    assert not (root / "modules" / "hal" / "ethos_u").exists()
    assert not list((root / "modules" / "hal").glob(".*armgen-tmp"))
    with pytest.raises(WorkspaceError, match="no armgen workspace"):
        find_workspace(root)  # no record written: the half-made workspace is not taken for a complete one

"""armgen's patches to the pinned sources (armgen.workspace.patches, modules/patches/patches.yml): the list and its
checksums, the state of a checkout (applied, not applied, does not apply), applying (and refusing to apply) on a
git checkout of its own, the build's warning, and the real patch against the workspace's ExecuTorch when there is
one. What the kernel-key patch saves on a firmware is measured by tests/firmware/test_build.py (stack auto)."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest
import yaml

from armgen.errors import WorkspaceError
from armgen.workspace.layout import Workspace
from armgen.workspace.patches import (
    APPLIED,
    DOES_NOT_APPLY,
    NO_MODULE,
    NOT_APPLIED,
    PATCHES_DIR,
    PATCHES_YML,
    apply_patches,
    missing_patch_warnings,
    patch_state,
    source_patches,
)

ORIGINAL = "int answer(void) {\n  return 41;\n}\n"
PATCHED = "int answer(void) {\n  return 42;\n}\n"


def test_every_patch_file_is_listed_with_its_checksum_and_in_west_patch_s_format():
    listed = source_patches()
    assert listed, "modules/patches/patches.yml lists no patch"
    on_disk = sorted(p.relative_to(PATCHES_DIR).as_posix() for p in PATCHES_DIR.glob("*/*.patch"))
    assert sorted(p.relpath for p in listed) == on_disk
    for p in listed:
        assert hashlib.sha256(p.path.read_bytes()).hexdigest() == p.sha256
        text = p.path.read_text()
        assert text.startswith("From: ") and "\nSubject: [PATCH] " in text and "\n---\n" in text  # upstream-shaped
        assert p.saves  # what it is for, shown by `armgen workspace status` and the build's warning
    data = yaml.safe_load(PATCHES_YML.read_text())
    required = {"path", "sha256sum", "module", "author", "email", "date"}  # west patch's required keys
    assert all(required <= set(e) for e in data["patches"])


def _checkout(tmp_path: Path, text: str) -> Workspace:
    """A workspace whose project ``executorch`` is a one-file git checkout holding ``text``."""
    root = tmp_path / "ws"
    module = root / "modules" / "lib" / "executorch"
    module.mkdir(parents=True)
    (module / "answer.c").write_text(text)
    for cmd in (["init", "-q"], ["add", "answer.c"], ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "0"]):
        subprocess.run(["git", *cmd], cwd=module, check=True, capture_output=True)
    return Workspace(root)


def _patch_list(tmp_path: Path) -> tuple:
    """A patch list of one patch (41 -> 42), in the format of modules/patches/patches.yml."""
    base = tmp_path / "patches"
    (base / "executorch").mkdir(parents=True)
    diff = ("diff --git a/answer.c b/answer.c\n--- a/answer.c\n+++ b/answer.c\n@@ -1,3 +1,3 @@\n"
            " int answer(void) {\n-  return 41;\n+  return 42;\n }\n")
    patch = base / "executorch" / "0001-answer.patch"
    patch.write_text("From: t <t@t>\nSubject: [PATCH] answer 42\n\nWhy.\n---\n" + diff)
    sha = hashlib.sha256(patch.read_bytes()).hexdigest()
    (base / "patches.yml").write_text(
        "patches:\n  - path: executorch/0001-answer.patch\n"
        f"    sha256sum: {sha}\n    module: executorch\n    author: t\n    email: t@t\n    date: 2026-12-06\n"
        "    custom:\n      saves: \"42 B\"\n")
    return source_patches(base / "patches.yml")


def test_a_patch_is_applied_once_and_its_state_follows_the_checkout(tmp_path):
    patches = _patch_list(tmp_path)
    ws = _checkout(tmp_path, ORIGINAL)
    assert patch_state(ws, patches[0]) == NOT_APPLIED
    said: list[str] = []
    assert apply_patches(ws, said.append, patches) == {"0001-answer": "applied"}
    assert (ws.project_dir("executorch") / "answer.c").read_text() == PATCHED
    assert said == ["patched executorch: 0001-answer"]
    assert patch_state(ws, patches[0]) == APPLIED
    assert apply_patches(ws, None, patches) == {"0001-answer": "already applied"}  # init again: nothing to do
    assert (ws.project_dir("executorch") / "answer.c").read_text() == PATCHED


def test_a_patch_that_does_not_apply_stops_init_in_one_line_and_writes_nothing(tmp_path):
    patches = _patch_list(tmp_path)
    other = "int answer(void) {\n  return 7;\n}\n"
    ws = _checkout(tmp_path, other)
    assert patch_state(ws, patches[0]) == DOES_NOT_APPLY
    with pytest.raises(WorkspaceError) as info:
        apply_patches(ws, None, patches)
    assert info.value.message.startswith("armgen's patch executorch/0001-answer.patch does not apply to executorch at ")
    assert "\n" not in info.value.message and "pin" in (info.value.hint or "")
    assert (ws.project_dir("executorch") / "answer.c").read_text() == other
    # at a --revision of its own the module may differ: left out with a warning, init goes on
    said: list[str] = []
    assert apply_patches(ws, said.append, patches, overridden=frozenset({"executorch"})) == {"0001-answer": DOES_NOT_APPLY}
    assert said and said[0].startswith("warning: armgen's patch 0001-answer does not apply") and "42 B" in said[0]


def test_a_module_the_workspace_does_not_hold_is_skipped(tmp_path):
    patches = _patch_list(tmp_path)
    ws = Workspace(tmp_path / "empty")
    assert patch_state(ws, patches[0]) == NO_MODULE
    assert apply_patches(ws, None, patches) == {"0001-answer": NO_MODULE}


def test_a_changed_patch_file_is_refused_by_its_checksum(tmp_path):
    patches = _patch_list(tmp_path)
    patches[0].path.write_text(patches[0].path.read_text() + "\n")
    with pytest.raises(WorkspaceError, match="its SHA-256 is not the one patches.yml lists"):
        source_patches(tmp_path / "patches" / "patches.yml")


def test_the_real_patches_against_the_workspace_s_executorch():
    """Each of armgen's patches is applied to (or applies cleanly to) the ExecuTorch the default workspace holds; a
    workspace without it builds with a warning that names what it costs."""
    from armgen.workspace import find_workspace

    try:
        ws = find_workspace()
    except WorkspaceError as exc:
        pytest.skip(f"no armgen workspace: {exc.message}")
    states = {p.name: patch_state(ws, p) for p in source_patches()}
    assert all(s in (APPLIED, NOT_APPLIED) for s in states.values()), states
    warnings = missing_patch_warnings(ws)
    assert len(warnings) == sum(s == NOT_APPLIED for s in states.values())
    for w in warnings:
        assert "lacks armgen's patch" in w and "RAM" in w and "armgen workspace init" in w


def test_a_workspace_without_the_patch_warns_in_one_line_naming_what_it_costs(tmp_path):
    """An older workspace (ExecuTorch as pinned, without armgen's patch): `armgen build` builds and warns, one line
    per patch, with what the patch saves and the init that applies it. The file comes from the workspace."""
    from armgen.workspace import find_workspace

    try:
        real = find_workspace()
    except WorkspaceError as exc:
        pytest.skip(f"no armgen workspace: {exc.message}")
    patch = next(p for p in source_patches() if "kernel-key" in p.name)
    rel = Path("runtime") / "kernel" / "operator_registry.cpp"
    old = Workspace(tmp_path / "ws")
    module = old.project_dir("executorch")
    (module / rel).parent.mkdir(parents=True)
    (module / rel).write_bytes((real.project_dir("executorch") / rel).read_bytes())
    if patch_state(old, patch) == APPLIED:  # the workspace has it: take it back out in the copy
        subprocess.run(["git", "apply", "--reverse", str(patch.path)], cwd=module, check=True, capture_output=True)
    assert patch_state(old, patch) == NOT_APPLIED
    warnings = [w for w in missing_patch_warnings(old) if patch.name in w]
    assert len(warnings) == 1 and "\n" not in warnings[0]
    assert f"lacks armgen's patch {patch.name} (not applied): the image needs more RAM ({patch.saves})" in warnings[0]
    assert f"armgen workspace init {old.root} applies it" in warnings[0]
    assert apply_patches(old, None, (patch,)) == {patch.name: "applied"}  # and init brings it
    assert not [w for w in missing_patch_warnings(old) if patch.name in w]

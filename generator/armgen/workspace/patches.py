"""armgen's patches to the pinned upstream sources: ``modules/patches/patches.yml``.

The list has the format of Zephyr's ``west patch`` (Zephyr 4.x, ``scripts/schemas/patch-schema.yml``: ``path``
relative to the patch directory, ``sha256sum``, ``module``, author, date, ``comments``; armgen reads
``custom.saves``, what the patch is for in one phrase). Each patch is one upstream-shaped change with its
reason and measurements in its message. :func:`apply_patches` brings a workspace's checkouts to them
(``armgen workspace init``), :func:`patch_states` says where each stands (``armgen workspace status``, and the
build's warning when a workspace lacks one). ``git apply`` does the work, as ``west patch`` does.
"""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from armgen.errors import WorkspaceError
from armgen.paths import MODULES_DIR
from armgen.workspace.layout import Workspace

#: The patch list and the directory its paths are relative to (west patch's patch-base).
PATCHES_DIR = MODULES_DIR / "patches"
PATCHES_YML = PATCHES_DIR / "patches.yml"

#: Where a patch stands against a checkout.
APPLIED, NOT_APPLIED, DOES_NOT_APPLY, NO_MODULE = "applied", "not applied", "does not apply", "module missing"


@dataclass(frozen=True)
class SourcePatch:
    """One patch of :data:`PATCHES_YML`.

    Attributes:
        name: the file's stem (``0001-runtime-kernel-key-only-for-keyed-kernels``). path: the file.
        relpath: its path relative to :data:`PATCHES_DIR` (west patch's ``path``). module: the west project
            (and Zephyr module) it changes. sha256: the file's SHA-256 as listed. saves: what it is for.
    """

    name: str
    path: Path
    relpath: str
    module: str
    sha256: str
    saves: str


def source_patches(patches_yml: Path = PATCHES_YML) -> tuple[SourcePatch, ...]:
    """The patches armgen applies, in order, each file checked against its listed SHA-256.

    Raises:
        WorkspaceError: the list is malformed, or a patch file is missing or differs from its checksum.
    """
    try:
        data = yaml.safe_load(patches_yml.read_text()) or {}
        entries = data.get("patches") or []
        out = []
        for e in entries:
            path = patches_yml.parent / str(e["path"])
            custom = e.get("custom") or {}
            out.append(SourcePatch(path.stem, path, str(e["path"]), str(e["module"]), str(e["sha256sum"]),
                                   str(custom.get("saves", e.get("comments", "")))))
    except (OSError, yaml.YAMLError, KeyError, TypeError, AttributeError) as exc:
        raise WorkspaceError(f"{patches_yml}: not a readable patch list ({exc})") from None
    for p in out:
        if not p.path.is_file():
            raise WorkspaceError(f"{patches_yml}: patch {p.relpath} is missing")
        if hashlib.sha256(p.path.read_bytes()).hexdigest() != p.sha256:
            raise WorkspaceError(f"{p.path}: its SHA-256 is not the one {patches_yml.name} lists",
                                 hint="a patch changed without its checksum: update sha256sum")
    return tuple(out)


def _git_apply(module_dir: Path, patch: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "apply", *args, str(patch)], cwd=module_dir, capture_output=True, text=True,
                          timeout=60, check=False)


def patch_state(ws: Workspace, patch: SourcePatch) -> str:
    """Where ``patch`` stands in the workspace: :data:`APPLIED` (it reverses cleanly), :data:`NOT_APPLIED` (it
    applies cleanly), :data:`DOES_NOT_APPLY` (neither: another upstream revision) or :data:`NO_MODULE`."""
    module_dir = ws.project_dir(patch.module)
    if not module_dir.is_dir():
        return NO_MODULE
    if _git_apply(module_dir, patch.path, "--reverse", "--check").returncode == 0:
        return APPLIED
    if _git_apply(module_dir, patch.path, "--check").returncode == 0:
        return NOT_APPLIED
    return DOES_NOT_APPLY


def patch_states(ws: Workspace, patches: tuple[SourcePatch, ...] | None = None) -> dict[str, str]:
    """``{patch name: state}`` (:func:`patch_state`) for every patch (default: :func:`source_patches`).

    Raises:
        WorkspaceError: as :func:`source_patches`.
    """
    return {p.name: patch_state(ws, p) for p in (patches if patches is not None else source_patches())}


def apply_patches(ws: Workspace, say: Callable[[str], None] | None = None,
                  patches: tuple[SourcePatch, ...] | None = None, overridden: frozenset[str] = frozenset(),
                  ) -> dict[str, str]:
    """Apply every patch not yet applied to its module's checkout (``git apply``).

    Args:
        overridden: modules checked out at another revision than the pin (``--revision``): a patch that does
            not apply there is left out with a warning (``say``) instead of stopping init.

    Returns:
        dict: ``{patch name: "applied" | "already applied" | "module missing" | "does not apply"}`` (a module
        the workspace does not hold, e.g. an inactive group, is skipped).

    Raises:
        WorkspaceError: a patch does not apply to its module at the pinned revision: one line naming the patch
            and the module's directory; nothing of that patch is written (``git apply`` checks every hunk first).
    """
    say = say or (lambda _msg: None)
    done: dict[str, str] = {}
    for p in patches if patches is not None else source_patches():
        state = patch_state(ws, p)
        if state == APPLIED:
            done[p.name] = "already applied"
            continue
        if state == NO_MODULE:
            done[p.name] = NO_MODULE
            continue
        module_dir = ws.project_dir(p.module)
        if state == DOES_NOT_APPLY and p.module in overridden:
            say(f"warning: armgen's patch {p.name} does not apply to {p.module} at its --revision; left out "
                f"(it saves {p.saves})")
            done[p.name] = DOES_NOT_APPLY
            continue
        r = _git_apply(module_dir, p.path) if state == NOT_APPLIED else None
        if r is None or r.returncode != 0:
            reason = (r.stderr if r is not None else _git_apply(module_dir, p.path, "--check").stderr).strip()
            first = reason.splitlines()[0] if reason else "git apply failed"
            raise WorkspaceError(f"armgen's patch {p.relpath} does not apply to {p.module} at {module_dir}: {first}",
                                 hint=f"the patch was made for the pinned {p.module}: check out the pin "
                                 "(armgen workspace init without --revision for it)")
        say(f"patched {p.module}: {p.name}")
        done[p.name] = "applied"
    return done


def missing_patch_warnings(ws: Workspace) -> list[str]:
    """One warning line per patch the workspace's checkouts lack (``armgen build`` prints them): what it would
    save and how to get it. A workspace made before the patch (or with its module at another revision) still
    builds; the image then needs the RAM the patch saves. Never raises: an unreadable patch list is a warning.
    """
    try:
        patches = source_patches()
    except WorkspaceError as exc:
        return [exc.message]
    out = []
    for p in patches:
        state = patch_state(ws, p)
        if state in (NOT_APPLIED, DOES_NOT_APPLY):
            fix = (f"armgen workspace init {ws.root} applies it" if state == NOT_APPLIED
                   else f"it does not apply to this {p.module}")
            out.append(f"the workspace's {p.module} lacks armgen's patch {p.name} ({state}): the image needs more "
                       f"RAM ({p.saves}); {fix}")
    return out


def patch_files(prefix: str) -> dict[str, bytes]:
    """armgen's patch list and files as a west manifest repository carries them for ``west patch`` (Zephyr 4.x):
    ``{prefix}patches.yml`` (``path`` entries relative to ``{prefix}patches/``, as in :data:`PATCHES_YML`) and each
    patch under ``{prefix}patches/``. A generated Zephyr application uses ``prefix="zephyr/"`` (west patch's
    default places). ``{path: bytes}``.

    Raises:
        WorkspaceError: as :func:`source_patches`.
    """
    files = {f"{prefix}patches.yml": PATCHES_YML.read_bytes()}
    for p in source_patches():
        files[f"{prefix}patches/{p.relpath}"] = p.path.read_bytes()
    return files

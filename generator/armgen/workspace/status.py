"""What a workspace has on disk (``armgen workspace status``), and the checks that a command can use it.

:func:`workspace_status` never raises for a missing or broken workspace: that is what it reports.
:func:`find_workspace` is what every source-needing command calls; :func:`check_zephyr_workspace`
is what a Zephyr build calls.
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from armgen.errors import NoWorkspaceError, WorkspaceError
from armgen.paths import (
    DEFAULT_WORKSPACE,
    workspace_dir,
    zephyr_default_workspace,
    zephyr_workspace_candidates,
    zephyr_workspace_env,
)
from armgen.workspace.compatibility import pip_executorch_version
from armgen.workspace.git import HEX40, head_commit
from armgen.workspace.layout import STATE_PATH, Workspace, read_state, state_zephyr_release
from armgen.workspace.manifest import (
    REQUIRED_FILES,
    STUB_GROUP,
    STUB_MARKER,
    ProjectPin,
    manifest_pins,
    select_projects,
)
from armgen.workspace.patches import patch_state, source_patches
from armgen.workspace.releases import default_release, zephyr_release


@dataclass(frozen=True)
class ProjectStatus:
    """What one project of a workspace looks like on disk.

    Attributes:
        name, path: manifest project name and path in the workspace.
        active: whether the workspace's groups include it.
        present: directory exists and is a git checkout.
        commit: checked-out commit (40 hex) or None.
        expected_commit: the commit init recorded (or the manifest pin when that is a commit).
        revision: the requested revision (tag, branch or commit) it was checked out from.
        size_bytes: bytes on disk under ``path`` (incl. ``.git``; nested projects excluded).
        missing: what is wrong, one short phrase each; empty when complete.
        stub: True for an inactive ExecuTorch host dependency replaced by armgen's CMake stub.
    """

    name: str
    path: str
    active: bool
    present: bool
    commit: str | None
    expected_commit: str | None
    revision: str | None
    size_bytes: int
    missing: tuple[str, ...] = ()
    stub: bool = False

    @property
    def complete(self) -> bool:
        """True when an active project is present, at its commit, with its required files."""
        return not self.active or not self.missing


@dataclass(frozen=True)
class WorkspaceStatus:
    """Status of a whole workspace (``armgen workspace status``)."""

    root: Path
    exists: bool
    is_west_workspace: bool
    mirror: str | None
    groups: tuple[str, ...]
    projects: tuple[ProjectStatus, ...]
    executorch_version: str | None = None
    program_file_identifier: str | None = None
    problems: tuple[str, ...] = field(default=())
    pip_executorch_version: str | None = None
    #: armgen's patches (:mod:`armgen.workspace.patches`): (name, module, state, what it saves) each.
    patches: tuple[tuple[str, str, str, str], ...] = ()

    @property
    def complete(self) -> bool:
        """True when the workspace exists, is a west workspace, and every active project is complete."""
        return self.exists and self.is_west_workspace and not self.problems and all(
            p.complete for p in self.projects
        )

    def to_dict(self) -> dict:
        """JSON-ready dict (paths as strings)."""
        data = asdict(self)
        data["root"] = str(self.root)
        data["complete"] = self.complete
        for p, src in zip(data["projects"], self.projects, strict=False):
            p["complete"] = src.complete
        return data


def _tree_size(path: Path, skip: set[Path]) -> int:
    total = 0
    for dirpath, dirnames, filenames in os.walk(path):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if here / d not in skip]
        for f in filenames:
            with contextlib.suppress(OSError):
                total += (here / f).lstat().st_size
    return total


def workspace_status(root: Path | None = None, with_sizes: bool = True) -> WorkspaceStatus:
    """Inspect the workspace at ``root`` (default :func:`armgen.paths.workspace_dir`). Never raises for
    a missing or broken workspace: that is what the status reports.

    Projects are those init recorded in ``.armgen/workspace.json``; without that record, the manifest's
    default (bare-metal) set.
    """
    root = (root or workspace_dir()).expanduser().absolute()
    if not root.is_dir():
        return WorkspaceStatus(root, False, False, None, (), (), problems=(f"{root} does not exist",))
    problems: list[str] = []
    is_west = (root / ".west" / "config").is_file()
    if not is_west:
        problems.append("no .west/config (not made by `armgen workspace init`)")
    state = read_state(root)
    # Without Zephyr, the default release's projects are listed as inactive.
    pins = manifest_pins(state_zephyr_release(state) or default_release())
    if state is None:
        problems.append(f"no {STATE_PATH.as_posix()} (init did not finish)")
        groups: tuple[str, ...] = ()
        recorded: dict = {}
    else:
        groups = tuple(state.get("groups", ()))
        recorded = state.get("projects", {})
    active = {p.name for p in select_projects(pins, groups)}
    paths = {p.name: recorded.get(p.name, {}).get("path", p.path) for p in pins}
    project_roots = {root / pth for pth in paths.values()}
    out = [
        _project_status(root, pin, paths, recorded.get(pin.name, {}), pin.name in active, project_roots, with_sizes)
        for pin in pins
    ]
    ws = Workspace(root)
    version = ident = None
    if (ws.executorch_dir / "version.txt").is_file():
        version = ws.executorch_version()
    with contextlib.suppress(WorkspaceError):
        ident = ws.program_file_identifier()
    patches: list[tuple[str, str, str, str]] = []
    try:
        for patch in source_patches():
            patches.append((patch.name, patch.module, patch_state(ws, patch), patch.saves))
    except WorkspaceError as exc:
        problems.append(exc.message)
    return WorkspaceStatus(
        root=root,
        exists=True,
        is_west_workspace=is_west,
        mirror=(state or {}).get("mirror"),
        groups=groups,
        projects=tuple(out),
        executorch_version=version,
        program_file_identifier=ident,
        problems=tuple(problems),
        pip_executorch_version=pip_executorch_version(),
        patches=tuple(patches),
    )


def _project_status(
    root: Path, pin: ProjectPin, paths: dict[str, str], rec: dict, is_active: bool, project_roots: set[Path],
    with_sizes: bool,
) -> ProjectStatus:
    """One project's status: checked out at the recorded commit with its required files, or a stub."""
    path = paths[pin.name]
    pdir = root / path
    commit = head_commit(pdir)
    expected = rec.get("commit") or (pin.revision if HEX40.match(pin.revision) else None)
    missing: list[str] = []
    stub = False
    if not is_active:
        stub = (pdir / "CMakeLists.txt").is_file() and STUB_MARKER in _head_of(pdir / "CMakeLists.txt")
        if not stub and STUB_GROUP in pin.groups and (root / paths["executorch"]).is_dir():
            missing.append("armgen CMake stub missing (ExecuTorch's CMake adds this dir)")
            is_active = True  # a bare-metal build fails without it: count it
    elif commit is None:
        missing.append("not checked out" if not pdir.exists() else "not a git checkout")
    else:
        if expected and commit != expected:
            missing.append(f"at {commit[:12]}, expected {expected[:12]}")
        for rel in REQUIRED_FILES.get(pin.name, ()):
            if not (pdir / rel).exists():
                missing.append(f"{rel} missing")
    size = _tree_size(pdir, project_roots - {pdir}) if with_sizes and pdir.is_dir() else 0
    return ProjectStatus(
        name=pin.name,
        path=path,
        active=is_active,
        present=commit is not None,
        commit=commit,
        expected_commit=expected,
        revision=rec.get("revision") or pin.revision,
        size_bytes=size,
        missing=tuple(missing),
        stub=stub,
    )


def _head_of(path: Path, n: int = 512) -> str:
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            return fh.read(n)
    except OSError:
        return ""


INIT_HINT = (
    "run: armgen workspace init --mirror 'file:///path/to/mirrors/{owner}+{name}/repo' "
    "(or without --mirror to fetch from GitHub)"
)


def find_workspace(explicit: Path | None = None) -> Workspace:
    """Return the workspace every source-needing command uses: ``explicit`` or
    :func:`armgen.paths.workspace_dir` (``$ARMGEN_WORKSPACE``, else ``~/.local/share/armgen/workspace``).

    Raises:
        NoWorkspaceError: no workspace there. WorkspaceError: it is incomplete; the hint says how to make one.
    """
    root = (explicit or workspace_dir()).expanduser().absolute()
    if not (root / ".west" / "config").is_file() or read_state(root) is None:
        raise NoWorkspaceError(f"no armgen workspace at {root}", hint=INIT_HINT)
    status = workspace_status(root, with_sizes=False)
    if not status.complete:
        what = [f"{p.name}: {m}" for p in status.projects if p.active for m in p.missing] + list(status.problems)
        raise WorkspaceError(
            f"armgen workspace at {root} is incomplete ({'; '.join(what[:3])}{'; ...' if len(what) > 3 else ''})",
            hint=f"run: armgen workspace init {root}" + (f" --mirror '{status.mirror}'" if status.mirror else ""),
        )
    return Workspace(root)


#: Set to 1 to build a project of one Zephyr release against a workspace holding another release's tree
#: (e.g. 4.4 applications against a 4.1 development tree): never silent, every build says so.
OTHER_RELEASE_ENV = "ARMGEN_ZEPHYR_TREE_OF_ANOTHER_RELEASE"


def zephyr_tree_version(workspace: Workspace) -> str | None:
    """The Zephyr tree's own version, ``MAJOR.MINOR.PATCHLEVEL`` from ``zephyr/VERSION`` (``4.1.99``);
    None when the file is missing or unreadable."""
    try:
        text = (workspace.zephyr_dir / "VERSION").read_text(encoding="utf-8")
    except OSError:
        return None
    fields = dict(re.findall(r"^(VERSION_MAJOR|VERSION_MINOR|PATCHLEVEL)\s*=\s*(\d+)", text, re.MULTILINE))
    if len(fields) != 3:
        return None
    return f"{fields['VERSION_MAJOR']}.{fields['VERSION_MINOR']}.{fields['PATCHLEVEL']}"


def check_zephyr_workspace(workspace: Workspace, release: str = "") -> tuple[str, ...]:
    """Refuse a Zephyr build when the workspace has no Zephyr tree, or another release than the project's.

    With ``$ARMGEN_ZEPHYR_TREE_OF_ANOTHER_RELEASE=1`` (:data:`OTHER_RELEASE_ENV`) another release's tree
    is accepted, and the returned warning says "built against a tree of another release". A tree whose
    ``VERSION`` differs from the release's tag (a development tree such as 4.1.99 for 4.1) is a warning too.

    Args:
        workspace: the workspace. release: the project's Zephyr release
            (``armgen.toml`` zephyr_release); empty skips the release check.

    Returns:
        warnings (one line each).

    Raises:
        WorkspaceError: ``no Zephyr in the workspace <root>`` / ``the workspace has Zephyr X, the project
            is for Zephyr Y``, with the command that fixes it.
    """
    rel = release or default_release()
    if not workspace.has_zephyr:
        raise WorkspaceError(
            f"no Zephyr in the workspace {workspace.root} (this is a Zephyr {rel} project)",
            hint=f"run: armgen workspace init --zephyr --zephyr-release {rel} (add --url/--revision for a "
            "mirror), or build it with plain `west build` in a west workspace made from the project's west.yml",
        )
    have = workspace.zephyr_release
    tree = zephyr_tree_version(workspace)
    warnings: list[str] = []
    if release and have and have != release:
        if os.environ.get(OTHER_RELEASE_ENV) != "1":
            raise WorkspaceError(
                f"the workspace {workspace.root} has Zephyr {have}, the project is for Zephyr {release}",
                hint=f"run: armgen workspace init --zephyr --zephyr-release {release} (armgen keeps one workspace "
                f"per release), or regenerate the project with --zephyr-release {have} if its board is in that "
                f"release ({OTHER_RELEASE_ENV}=1 builds it against the other tree anyway, saying so)",
            )
        warnings.append(
            f"built against a tree of another release: the project is for Zephyr {release}, the workspace "
            f"{workspace.root} holds Zephyr {have} (tree {tree or 'of unknown version'}; {OTHER_RELEASE_ENV}=1)"
        )
    elif have and tree:
        tag = zephyr_release(have).tag.lstrip("v")
        if tree != tag:
            warnings.append(f"the workspace's Zephyr tree is {tree}, not the release v{tag} (a development tree)")
    return tuple(warnings)


def find_zephyr_workspace(release: str, explicit: Path | None = None) -> Path:
    """The workspace root a Zephyr ``release`` project builds against, so that workspaces of several
    releases can sit side by side without editing anything.

    ``explicit`` when given; else the first of :func:`armgen.paths.zephyr_workspace_candidates`
    (``$ARMGEN_WORKSPACE_ZEPHYR_<R>``, ``$ARMGEN_WORKSPACE``, ``~/.local/share/armgen/workspace-zephyr-<R>``,
    ``~/.local/share/armgen/workspace``) whose record says it holds Zephyr ``release``; when none does,
    ``$ARMGEN_WORKSPACE_ZEPHYR_<R>`` if set, else :func:`armgen.paths.workspace_dir` (whose check then
    says what it holds instead). Never raises: the caller checks the workspace.
    """
    if explicit is not None:
        return Path(explicit).expanduser().absolute()
    for cand in zephyr_workspace_candidates(release):
        if state_zephyr_release(read_state(cand)) == release:
            return cand
    env = os.environ.get(zephyr_workspace_env(release))
    return Path(env).expanduser().absolute() if env else workspace_dir()


def zephyr_init_dir(release: str) -> Path:
    """Where ``armgen workspace init --zephyr --zephyr-release R`` without a directory puts the workspace:
    ``$ARMGEN_WORKSPACE_ZEPHYR_<R>``, else ``$ARMGEN_WORKSPACE``, else the default workspace when it
    already holds Zephyr ``release`` (brought up to the pins in place), else the release's own
    ``~/.local/share/armgen/workspace-zephyr-<R>`` (so a second release never replaces the first).
    """
    for var in (zephyr_workspace_env(release), "ARMGEN_WORKSPACE"):
        if os.environ.get(var):
            return Path(os.environ[var]).expanduser().absolute()
    if state_zephyr_release(read_state(DEFAULT_WORKSPACE)) == release:
        return DEFAULT_WORKSPACE
    return zephyr_default_workspace(release)

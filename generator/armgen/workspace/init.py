"""``armgen workspace init``: make (or bring up to the pins) a west workspace from the pinned manifest.

The phases, in order: resolve every revision (nothing is written when one cannot be found), stop
if the workspace is already complete at those commits, check out each project (parents before
nested ones), stub the inactive ExecuTorch host dependencies, and write west's files and armgen's
record last, so their presence means init finished.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from armgen.errors import WorkspaceError
from armgen.paths import workspace_dir
from armgen.workspace.git import (
    ResolvedRevision,
    clone_into,
    fetch_and_checkout,
    head_commit,
    resolve_revision,
    run_git,
)
from armgen.workspace.layout import (
    MANIFEST_DIR_NAME,
    STATE_PATH,
    STATE_SCHEMA_VERSION,
    Workspace,
    read_state,
    write_atomic,
)
from armgen.workspace.manifest import (
    BENCHMARKS_GROUP,
    MANIFEST_PATH,
    REQUIRED_FILES,
    STUB_GROUP,
    STUB_MARKER,
    ZEPHYR_GROUP,
    ProjectPin,
    active_groups,
    manifest_pins,
    project_url,
    release_manifest,
    select_projects,
    validate_mirror_template,
)
from armgen.workspace.patches import apply_patches
from armgen.workspace.releases import default_release
from armgen.workspace.status import workspace_status

Progress = Callable[[str], None]


@dataclass(frozen=True)
class InitResult:
    """What :func:`init_workspace` did: ``actions`` maps project name to
    ``cloned`` / ``updated`` / ``up to date`` / ``stubbed``."""

    workspace: Workspace
    actions: dict[str, str]
    already_complete: bool


def _stub_text(name: str, path: str) -> str:
    return (
        f"# {STUB_MARKER}: ExecuTorch's third-party/CMakeLists.txt adds {path.rsplit('/', 1)[-1]}/ "
        "unconditionally, but a\n"
        f"# bare-metal firmware build uses nothing from it. armgen left the '{name}' west project "
        f"(group {STUB_GROUP}) inactive\n"
        f"# and put this empty CMakeLists.txt here instead. For host builds: "
        f"armgen workspace init ... with that group active.\n"
    )


def _west_config_text(groups: Iterable[str]) -> str:
    lines = ["[manifest]", f"path = {MANIFEST_DIR_NAME}", "file = west.yml"]
    groups = list(groups)
    if groups:
        lines.append("group-filter = " + ",".join("+" + g for g in groups))
    return "\n".join(lines) + "\n"


def _manifest_copy_text(
    manifest_path: Path, urls: Mapping[str, str], revisions: Mapping[str, str], zephyr_release: str | None = None
) -> str:
    """The manifest as the workspace has it: each project's fetch URL and effective revision, with the
    Zephyr release's projects (and its remotes) added when the workspace has Zephyr."""
    data = yaml.safe_load(manifest_path.read_text(encoding="utf-8"))
    if zephyr_release is not None:
        extra = yaml.safe_load(release_manifest(zephyr_release).read_text(encoding="utf-8"))["manifest"]
        names = {r["name"] for r in data["manifest"].get("remotes", [])}
        data["manifest"].setdefault("remotes", []).extend(r for r in extra.get("remotes", []) if r["name"] not in names)
        replaced = {p["name"]: p for p in extra["projects"]}  # as manifest_pins: same name replaces
        base = [replaced.pop(p["name"], p) for p in data["manifest"]["projects"]]
        data["manifest"]["projects"] = base + list(replaced.values())
    for proj in data["manifest"]["projects"]:
        name = proj["name"]
        if name in urls:  # active: fetched from here (remotes stay for the inactive ones)
            proj.pop("remote", None)
            proj.pop("repo-path", None)
            proj["url"] = urls[name]
        if name in revisions:
            proj["revision"] = revisions[name]
    header = (
        "# Written by `armgen workspace init` from armgen's modules/west.yml: URLs through the mirror\n"
        "# template (or --url), revisions as checked out, plus the Zephyr release's projects\n"
        "# (modules/zephyr/<release>.yml). Edit the originals, not this copy.\n"
    )
    return header + yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


def init_workspace(
    root: Path | None = None, *, mirror: str | None = None, revisions: Mapping[str, str] | None = None,
    zephyr: bool | None = None, benchmarks: bool | None = None, manifest_path: Path = MANIFEST_PATH,
    progress: Progress | None = None, zephyr_release: str | None = None, urls: Mapping[str, str] | None = None,
) -> InitResult:
    """Create (or bring up to the pins) a west workspace at ``root`` from the pinned manifest.

    Every active project is resolved first (``git ls-remote``; nothing is written when a revision
    cannot be found), then checked out: a blobless (``--filter=blob:none``), depth-1 fetch of the one
    commit, a sparse checkout where :data:`SPARSE_PATTERNS` has patterns, into a temporary directory
    renamed into place. A project already at its commit is left alone; one at another commit is fetched
    and checked out in place. Inactive ExecuTorch host dependencies (group ``et-host-deps``) get a marked
    empty CMakeLists.txt. armgen's patches (:mod:`armgen.workspace.patches`) are applied to the checkouts, also
    to a workspace that was already at the pins. Finally ``.west/config``, ``armgen-manifest/west.yml`` and
    ``.armgen/workspace.json`` are written, so ``west list`` works and :func:`find_workspace` accepts it.

    Args:
        root: workspace directory (default :func:`armgen.paths.workspace_dir`).
        mirror: URL template with ``{owner}`` and ``{name}``; None fetches from the manifest URLs. When
            None and the workspace was made with a mirror, that mirror is reused.
        revisions: ``{project: tag|branch|commit}`` overriding the pins.
        zephyr, benchmarks: switch the ``zephyr`` / ``benchmarks`` groups on or off; None keeps what the
            workspace has (off for a new one). An earlier ``revisions`` override is kept likewise while
            the manifest pin it overrode is unchanged.
        manifest_path: the manifest (default ``modules/west.yml``).
        progress: called with one-line progress messages.
        zephyr_release: with Zephyr, which release (``"3.7"``, ``"4.4"``; None keeps the workspace's,
            else the default); its projects come from ``modules/zephyr/<release>.yml``. One release per
            workspace: another release replaces the Zephyr checkout.
        urls: ``{project: URL}`` fetching a project from a URL of its own (a mirror under another name,
            e.g. ``zephyr`` from a fork); wins over ``mirror`` for that project, and is recorded and
            reused by later inits like ``revisions``.

    Raises:
        WorkspaceError: bad mirror template, unknown project, a revision not in the remote (with the
            ``--revision`` advice), a failing fetch or checkout, a foreign directory in the way, or one of
            armgen's patches that does not apply (another revision of its module).
    """
    say = progress or (lambda _msg: None)
    root = (root or workspace_dir()).expanduser().absolute()
    old_state = read_state(root) or {}
    if mirror is None:
        mirror = old_state.get("mirror")
    if mirror is not None:
        validate_mirror_template(mirror)
    old_groups = set(old_state.get("groups", ()))
    want_zephyr = ZEPHYR_GROUP in old_groups if zephyr is None else zephyr
    zephyr_release = _zephyr_release_to_init(want_zephyr, zephyr_release, old_state)
    pins = manifest_pins(zephyr_release, manifest_path)
    revisions, url_overrides = _overrides_in_force(pins, old_state, revisions, urls, zephyr_release)
    groups = active_groups(want_zephyr, BENCHMARKS_GROUP in old_groups if benchmarks is None else benchmarks)
    selected = sorted(select_projects(pins, groups), key=lambda p: p.path.count("/"))
    stubbed = [
        p
        for p in pins
        if STUB_GROUP in p.groups and p not in selected and p.path.startswith(_path_of(pins, "executorch") + "/")
    ]

    # 1. resolve every revision before touching the disk
    fetch_urls = {pin.name: url_overrides.get(pin.name) or project_url(pin, mirror) for pin in selected}
    resolved: dict[str, ResolvedRevision] = {}
    for pin in selected:
        wanted = revisions.get(pin.name, pin.revision)
        say(f"resolving {pin.name} {wanted} at {fetch_urls[pin.name]}")
        resolved[pin.name] = resolve_revision(pin.name, fetch_urls[pin.name], wanted)

    # 2. already complete at exactly these commits? (armgen's patches brought up to date all the same)
    if _complete_at(root, old_state, selected, resolved, mirror):
        patched = apply_patches(Workspace(root), say, overridden=frozenset(revisions))
        _write_records(root, manifest_path, mirror, groups, selected, stubbed, fetch_urls, resolved,
                       zephyr_release, url_overrides)
        actions = {p.name: "up to date" for p in selected}
        actions.update({name: "patched" for name, how in patched.items() if how == "applied"})
        return InitResult(Workspace(root), actions, not any(how == "applied" for how in patched.values()))

    # 3. check out, parents before nested projects
    root.mkdir(parents=True, exist_ok=True)
    actions = {pin.name: _check_out(root, pin, resolved[pin.name], fetch_urls[pin.name], say) for pin in selected}
    actions.update(_write_stubs(root, stubbed))
    # armgen's patches (modules/patches/patches.yml) on the fresh checkouts; one that does not apply stops here,
    # before the record that says init finished
    patched = apply_patches(Workspace(root), say, overridden=frozenset(revisions))
    actions.update({name: "patched" for name, how in patched.items() if how == "applied"})

    # 4. west's files and armgen's record, last: their presence means init finished
    _write_records(root, manifest_path, mirror, groups, selected, stubbed, fetch_urls, resolved,
                   zephyr_release, url_overrides)
    return InitResult(Workspace(root), actions, False)


def _zephyr_release_to_init(want_zephyr: bool, zephyr_release: str | None, old_state: dict) -> str | None:
    """The Zephyr release the workspace gets (the asked one, else the workspace's, else the default);
    None without Zephyr.

    Raises:
        WorkspaceError: an unknown release, or a release asked for without Zephyr.
    """
    if not want_zephyr:
        if zephyr_release is not None:
            raise WorkspaceError("--zephyr-release needs --zephyr (or a workspace that has Zephyr)")
        return None
    zephyr_release = zephyr_release or old_state.get("zephyr_release") or default_release()
    release_manifest(zephyr_release)  # an unknown release fails before anything is fetched
    return zephyr_release


def _overrides_in_force(
    pins: tuple[ProjectPin, ...], old_state: dict, revisions: Mapping[str, str] | None,
    urls: Mapping[str, str] | None, zephyr_release: str | None,
) -> tuple[dict[str, str], dict[str, str]]:
    """``(revisions, urls)`` to use: the given ones, plus earlier ones still in force (a ``--revision``
    while the pin it overrode is unchanged; a ``--url`` unless the Zephyr release changed).

    Raises:
        WorkspaceError: an override names a project the manifests do not have.
    """
    revisions = dict(revisions or {})
    url_overrides = dict(urls or {})
    for what, given in (("--revision", revisions), ("--url", url_overrides)):
        unknown = sorted(set(given) - {p.name for p in pins})
        if unknown:
            raise WorkspaceError(
                f"{what} for unknown project(s): {', '.join(unknown)}",
                hint=f"projects: {', '.join(p.name for p in pins)}",
            )
    # A release change replaces the Zephyr projects: earlier overrides of them no longer apply.
    same_release = old_state.get("zephyr_release") == zephyr_release
    for name, url in (old_state.get("urls") or {}).items():
        if name not in url_overrides and any(p.name == name for p in pins) and (same_release or name != "zephyr"):
            url_overrides[name] = url
    # An earlier --revision stays in force while the manifest pin it overrode is unchanged.
    for pin in pins:
        rec = old_state.get("projects", {}).get(pin.name, {})
        if pin.name not in revisions and rec.get("pinned") == pin.revision and rec.get("revision"):
            revisions[pin.name] = rec["revision"]
    return revisions, url_overrides


def _complete_at(
    root: Path, old_state: dict, selected: list[ProjectPin], resolved: Mapping[str, ResolvedRevision],
    mirror: str | None,
) -> bool:
    """True when the workspace already has exactly these projects at these commits, complete."""
    if not old_state or not (root / ".west" / "config").is_file():
        return False
    rec = old_state.get("projects", {})
    same = all(rec.get(p.name, {}).get("commit") == resolved[p.name].commit for p in selected)
    if not (same and set(rec) == {p.name for p in selected} and old_state.get("mirror") == mirror):
        return False
    return workspace_status(root, with_sizes=False).complete


def _write_stubs(root: Path, stubbed: list[ProjectPin]) -> dict[str, str]:
    """A marked, empty CMakeLists.txt in each inactive ExecuTorch host dependency that has none."""
    actions: dict[str, str] = {}
    for pin in stubbed:
        dest = root / pin.path
        cm = dest / "CMakeLists.txt"
        if head_commit(dest) is None and not cm.exists():
            dest.mkdir(parents=True, exist_ok=True)
            cm.write_text(_stub_text(pin.name, pin.path), encoding="utf-8")
            actions[pin.name] = "stubbed"
    return actions


def _check_out(root: Path, pin: ProjectPin, resolved: ResolvedRevision, url: str, say: Progress) -> str:
    """Bring one project to its commit: ``up to date``, ``restored`` (deleted files), ``updated`` or
    ``cloned``.

    Raises:
        WorkspaceError: a failing fetch or checkout, or a foreign directory in the way.
    """
    dest = root / pin.path
    commit = resolved.commit
    current = head_commit(dest)
    if current == commit:
        if pin.sparse:
            run_git(["sparse-checkout", "set", "--no-cone", *pin.sparse], cwd=dest)
        if any(not (dest / rel).exists() for rel in REQUIRED_FILES.get(pin.name, ())):
            say(f"restoring deleted files of {pin.name}")
            run_git(["checkout", "--quiet", "--force", "--detach", commit], cwd=dest, what=f"{pin.name}: restore")
            return "restored"
        return "up to date"
    if current is not None:
        say(f"updating {pin.name} to {resolved.requested} ({commit[:12]})")
        fetch_and_checkout(dest, url, commit, pin.sparse, pin.name)
        return "updated"
    say(f"fetching {pin.name} {resolved.requested} ({commit[:12]}) into {pin.path}")
    clone_into(dest, url, commit, pin.sparse, pin.name)
    return "cloned"


def _write_records(
    root: Path,
    manifest_path: Path,
    mirror: str | None,
    groups: tuple[str, ...],
    selected: Iterable[ProjectPin],
    stubbed: Iterable[ProjectPin],
    urls: Mapping[str, str],
    resolved: Mapping[str, ResolvedRevision],
    zephyr_release: str | None = None,
    url_overrides: Mapping[str, str] | None = None,
) -> None:
    """Write armgen-manifest/west.yml, .west/config and .armgen/workspace.json (each atomically)."""
    selected = list(selected)
    effective = {p.name: resolved[p.name].requested for p in selected}
    write_atomic(
        root / MANIFEST_DIR_NAME / "west.yml", _manifest_copy_text(manifest_path, urls, effective, zephyr_release)
    )
    write_atomic(root / ".west" / "config", _west_config_text(groups))
    state = {
        "schema_version": STATE_SCHEMA_VERSION,
        "mirror": mirror,
        "urls": dict(sorted((url_overrides or {}).items())),
        "zephyr_release": zephyr_release,
        "groups": list(groups),
        "projects": {
            p.name: {
                "path": p.path,
                "url": urls[p.name],
                "revision": resolved[p.name].requested,
                "kind": resolved[p.name].kind,
                "pinned": p.revision,
                "commit": resolved[p.name].commit,
                "sparse": list(p.sparse) if p.sparse else None,
            }
            for p in selected
        },
        "stubs": [p.path for p in stubbed],
    }
    write_atomic(root / STATE_PATH, json.dumps(state, indent=2, sort_keys=True) + "\n")


def _path_of(pins: Iterable[ProjectPin], name: str) -> str:
    for p in pins:
        if p.name == name:
            return p.path
    return "\0"


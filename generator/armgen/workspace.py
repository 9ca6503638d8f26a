"""The upstream-source workspace: a west workspace made from ``modules/west.yml``.

A firmware build needs the ExecuTorch runtime (with its flatbuffers and flatcc submodules), CMSIS-NN,
the CMSIS_6 core headers and the Ethos-U driver; a Zephyr project also needs Zephyr. None of these are
Python packages, so armgen keeps them the way Zephyr users do: in a west workspace made from one pinned
manifest. West's manifest model (:class:`west.manifest.Manifest`) reads the pins (projects, revisions,
paths, groups, URLs); the checkout itself is plain git, because west can do neither a blobless partial
clone nor a sparse checkout, and the ExecuTorch tree needs both: its mirror lacks blobs of 4 MiB and more
(``git fetch`` over ``file://`` aborts on them) and a firmware build needs only a few of its folders.

Layout of a workspace ``<ws>`` (agreed with render/build, see the brief)::

    <ws>/.west/config                      west's config: manifest.path = armgen-manifest
    <ws>/armgen-manifest/west.yml          the manifest as checked out (mirror URLs, effective revisions)
    <ws>/.armgen/workspace.json            what init checked out (mirror template, revisions, commits)
    <ws>/modules/lib/executorch            sparse, blobless checkout (SPARSE_PATTERNS["executorch"])
    <ws>/modules/lib/executorch/third-party/{flatbuffers,flatcc}
    <ws>/modules/lib/cmsis-nn, <ws>/modules/hal/cmsis_6, <ws>/modules/hal/ethos_u
    <ws>/zephyr, <ws>/modules/hal/stm32    (only with ``--zephyr``)

Every command that needs sources calls :func:`find_workspace`; the build stage calls
:func:`check_program_compatible` before linking a ``.pte``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import yaml

from armgen.errors import WorkspaceError
from armgen.paths import MODULES_DIR, workspace_dir

#: The pinned manifest in the repository.
MANIFEST_PATH = MODULES_DIR / "west.yml"
#: Where the workspace keeps its manifest copy (west's ``manifest.path``) and armgen's own record.
MANIFEST_DIR_NAME = "armgen-manifest"
STATE_PATH = Path(".armgen") / "workspace.json"
STATE_SCHEMA_VERSION = 1

#: Groups the CLI can switch on; everything else in ``group-filter`` stays as the manifest says.
ZEPHYR_GROUP = "zephyr"
BENCHMARKS_GROUP = "benchmarks"
#: ExecuTorch submodules that its top-level CMake adds unconditionally (``third-party/CMakeLists.txt``:
#: ``add_subdirectory(json)``, ``add_subdirectory(gflags)``) but a bare-metal build never compiles. When
#: this group is inactive, init writes an empty, marked ``CMakeLists.txt`` into each empty submodule dir.
STUB_GROUP = "et-host-deps"
STUB_MARKER = "armgen stub"

#: The one list of what a firmware build needs from each sparse project (``git sparse-checkout`` patterns,
#: non-cone mode, gitignore syntax). Found by reading executorch's top-level CMakeLists.txt and what it
#: includes for ``tools/cmake/preset/arm_baremetal.cmake`` (EXECUTORCH_BUILD_ARM_BAREMETAL,
#: EXECUTORCH_BUILD_CORTEX_M, EXECUTORCH_BUILD_KERNELS_QUANTIZED, EXECUTORCH_BUILD_EXTENSION_RUNNER_UTIL,
#: devtools/etdump) and what those reach through ${EXECUTORCH_ROOT}/...: tools/cmake (Utils, Codegen,
#: presets), codegen (gen_oplist & co.), shim_et/xplat/executorch/build/build_variables.bzl (source lists
#: Codegen.cmake reads), kernels (portable, quantized, prim_ops, optimized.yaml), configurations, schema,
#: backends/cortex_m and the runtime parts of backends/arm, plus ExecuTorch's Zephyr module files.
SPARSE_PATTERNS: dict[str, tuple[str, ...]] = {
    "executorch": (
        "/*",  # top-level files: CMakeLists.txt, version.txt, Test.cmake, LICENSE, ...
        "!/*/",
        "/runtime/",
        "/kernels/",
        "!/kernels/test/",
        "/schema/",
        "/codegen/",
        "/configurations/",
        "/tools/cmake/",
        "/shim_et/xplat/executorch/build/",
        "/backends/cortex_m/",
        "/backends/arm/CMakeLists.txt",
        "/backends/arm/cmake/",
        "/backends/arm/runtime/",
        "/backends/arm/scripts/",
        "/extension/",
        "!/extension/llm/",
        "!/extension/android/",
        "!/extension/apple/",
        "!/extension/wasm/",
        "!/extension/benchmark/",
        "!/extension/pybindings/",
        "!/extension/training/",
        "/devtools/",
        "!/devtools/inspector/",
        "!/devtools/visualization/",
        "/third-party/",
        "/zephyr/",
    ),
    # The generated audio front end compiles a few CMSIS-DSP sources (armgen.project.spec.CMSIS_DSP_SOURCES).
    "cmsis-dsp": ("/Include/", "/PrivateInclude/", "/Source/", "/LICENSE"),
}

#: Files whose absence makes a project incomplete even when its checkout is at the right commit.
REQUIRED_FILES: dict[str, tuple[str, ...]] = {
    "executorch": (
        "CMakeLists.txt",
        "version.txt",
        "schema/program.fbs",
        "runtime/executor/method.h",
        "kernels/portable/functions.yaml",
        "backends/cortex_m/CMakeLists.txt",
        "backends/arm/CMakeLists.txt",
        "tools/cmake/Codegen.cmake",
        "third-party/CMakeLists.txt",
    ),
    "flatbuffers": ("include/flatbuffers/flatbuffers.h",),
    "flatcc": ("include/flatcc/flatcc_builder.h",),
    "cmsis-nn": ("Include/arm_nnfunctions.h", "CMakeLists.txt"),
    "cmsis_6": ("CMSIS/Core/Include/cmsis_version.h",),
    "hal_ethos_u": ("CMakeLists.txt",),
    "cmsis-dsp": ("Include/arm_math.h", "Source/TransformFunctions/arm_rfft_fast_f32.c"),
}

#: Client-side upload-pack command: a blobless (``--filter=blob:none``) fetch needs the serving
#: upload-pack to allow filters; the mirrors are not modified, the option rides on the client's command.
UPLOAD_PACK = "git -c uploadpack.allowFilter=true upload-pack"

_HEX40 = re.compile(r"^[0-9a-f]{40}$")
_HEX_SHORT = re.compile(r"^[0-9a-f]{7,39}$")

Progress = Callable[[str], None]


# --------------------------------------------------------------------------------------------------
# The manifest


@dataclass(frozen=True)
class ProjectPin:
    """One west project of the manifest, as armgen checks it out.

    Attributes:
        name: west project name (``executorch``, ``cmsis-nn``, ...).
        path: path inside the workspace, POSIX, relative (``modules/lib/executorch``).
        url: upstream URL from the manifest (``https://github.com/pytorch/executorch``).
        revision: pinned revision: tag, branch or 40-hex commit.
        groups: west groups; empty means always active.
        owner, repo: GitHub owner and repository name taken from ``url`` (for ``--mirror``).
        sparse: sparse-checkout patterns, or None for a full work tree.
    """

    name: str
    path: str
    url: str
    revision: str
    groups: tuple[str, ...]
    owner: str
    repo: str
    sparse: tuple[str, ...] | None = None


def owner_and_name(url: str) -> tuple[str, str]:
    """Return ``(owner, name)`` of a git URL's last two path parts (``.git`` stripped).

    Raises:
        WorkspaceError: the URL has fewer than two path parts.
    """
    parts = [p for p in urlparse(url).path.split("/") if p]
    if len(parts) < 2:
        raise WorkspaceError(f"cannot tell owner/name from the manifest URL {url!r}")
    name = parts[-1][:-4] if parts[-1].endswith(".git") else parts[-1]
    return parts[-2], name


def load_manifest(manifest_path: Path = MANIFEST_PATH) -> tuple[ProjectPin, ...]:
    """Read the pinned manifest with west's manifest model and return every project (active or not).

    Args:
        manifest_path: a west.yml (default: ``modules/west.yml`` of the armgen checkout).

    Raises:
        WorkspaceError: the file is missing or west rejects it (MalformedManifest and friends).
    """
    from west.manifest import MalformedManifest, Manifest  # west is a declared dependency

    try:
        manifest = Manifest.from_data(manifest_path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise WorkspaceError(f"manifest not found: {manifest_path}") from exc
    except (MalformedManifest, ValueError) as exc:
        raise WorkspaceError(f"{manifest_path}: malformed west manifest: {exc}") from exc
    pins = []
    for project in manifest.projects[1:]:  # [0] is the manifest repository itself
        owner, repo = owner_and_name(project.url)
        pins.append(
            ProjectPin(
                name=project.name,
                path=Path(project.path).as_posix(),
                url=project.url,
                revision=project.revision,
                groups=tuple(project.groups),
                owner=owner,
                repo=repo,
                sparse=SPARSE_PATTERNS.get(project.name),
            )
        )
    return tuple(pins)


def release_manifest(zephyr_release: str) -> Path:
    """The west manifest of Zephyr release ``zephyr_release`` (``modules/zephyr/v3.7.yml`` ...).

    Raises:
        WorkspaceError: an unknown release (naming the known ones).
    """
    from armgen.errors import ProjectError
    from armgen.project.zephyr import zephyr_release as find_release

    try:
        return find_release(zephyr_release).manifest
    except ProjectError as exc:
        raise WorkspaceError(exc.message) from None


def manifest_pins(zephyr_release: str | None = None, manifest_path: Path = MANIFEST_PATH) -> tuple[ProjectPin, ...]:
    """The projects of armgen's manifest plus, with ``zephyr_release``, that release's Zephyr projects
    (group ``zephyr``; :func:`release_manifest`).

    Raises:
        WorkspaceError: a manifest is missing or malformed; an unknown release.
    """
    pins = load_manifest(manifest_path)
    if zephyr_release is None:
        return pins
    return pins + load_manifest(release_manifest(zephyr_release))


def active_groups(zephyr: bool = False, benchmarks: bool = False) -> tuple[str, ...]:
    """Return the optional groups switched on by ``--zephyr`` / ``--benchmarks``."""
    return tuple(g for g, on in ((ZEPHYR_GROUP, zephyr), (BENCHMARKS_GROUP, benchmarks)) if on)


def select_projects(pins: Iterable[ProjectPin], groups: Iterable[str] = ()) -> tuple[ProjectPin, ...]:
    """Return the pins that are active: no groups, or at least one group in ``groups``."""
    wanted = set(groups)
    return tuple(p for p in pins if not p.groups or wanted.intersection(p.groups))


def validate_mirror_template(template: str) -> str:
    """Check a ``--mirror`` URL template and return it.

    The template names each project's mirror through ``{owner}`` and ``{name}``, e.g.
    ``file:///srv/mirrors/{owner}+{name}/repo`` or ``https://git.example.com/{owner}/{name}.git``.

    Raises:
        WorkspaceError: a placeholder is missing, or the template has other ``{...}`` fields.
    """
    missing = [p for p in ("{owner}", "{name}") if p not in template]
    if missing:
        raise WorkspaceError(
            f"mirror template {template!r} lacks {' and '.join(missing)}",
            hint="example: --mirror 'file:///srv/mirrors/{owner}+{name}/repo'",
        )
    try:
        template.format(owner="o", name="n")
    except (KeyError, IndexError, ValueError) as exc:
        raise WorkspaceError(
            f"mirror template {template!r} may use only {{owner}} and {{name}} ({exc})"
        ) from exc
    return template


def project_url(pin: ProjectPin, mirror: str | None) -> str:
    """Return where to fetch ``pin`` from: the mirror template filled in, or the manifest URL."""
    return mirror.format(owner=pin.owner, name=pin.repo) if mirror else pin.url


def parse_revision_overrides(
    items: Iterable[str], pins: Iterable[ProjectPin], option: str = "--revision"
) -> dict[str, str]:
    """Turn ``PROJECT=VALUE`` strings (``--revision PROJECT=REV``, ``--url PROJECT=URL``) into a dict.

    Raises:
        WorkspaceError: bad syntax or an unknown project name (the message lists the known ones).
    """
    names = [p.name for p in pins]
    example = "executorch=main" if option == "--revision" else "zephyr=file:///srv/mirrors/zephyr.git"
    out: dict[str, str] = {}
    for item in items:
        project, sep, value = item.partition("=")
        if not sep or not project or not value:
            raise WorkspaceError(f"{option} {item!r}: expected PROJECT=VALUE, e.g. {example}")
        if project not in names:
            raise WorkspaceError(
                f"{option} {item!r}: no project {project!r} in the manifest",
                hint=f"projects: {', '.join(names)}",
            )
        out[project] = value
    return out


# --------------------------------------------------------------------------------------------------
# git


def _git_reason(stderr: str, returncode: int) -> str:
    """The one stderr line that says why git failed: its first ``fatal:``/``error:`` line (prefix
    dropped), else the first non-empty line; git's trailing advice ("Please make sure you have the
    correct access rights / and the repository exists.") is never it."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for ln in lines:
        for prefix in ("fatal:", "error:"):
            if ln.startswith(prefix):
                return ln[len(prefix):].strip()
    return lines[0] if lines else f"exit status {returncode}"


def _git(args: list[str], cwd: Path | None = None, what: str | None = None, hint: str | None = None) -> str:
    """Run git, return stdout; raise WorkspaceError(hint=hint) with git's reason in one line on failure."""
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", GIT_ASKPASS="echo", LC_ALL="C")
    cmd = ["git", "-c", "advice.detachedHead=false", *args]
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise WorkspaceError("git not found", hint="install git (Debian: apt-get install git)") from exc
    if proc.returncode != 0:
        reason = _git_reason(proc.stderr, proc.returncode)
        raise WorkspaceError(f"{what or 'git ' + args[0]} failed: {reason}", hint=hint)
    return proc.stdout


def remote_refs(url: str) -> dict[str, str]:
    """Return ``{ref: commit}`` of a remote (``git ls-remote``; annotated tags peeled).

    Raises:
        WorkspaceError: the remote cannot be reached or is not a git repository.
    """
    out = _git(
        ["ls-remote", "--upload-pack", UPLOAD_PACK, url],
        what=f"reading {url}",
        hint="check the URL; with --mirror, check that the template's {owner}/{name} give an existing "
        "repository (e.g. 'file:///srv/mirrors/{owner}+{name}/repo')",
    )
    refs: dict[str, str] = {}
    for line in out.splitlines():
        sha, _, ref = line.partition("\t")
        if ref.endswith("^{}"):
            refs[ref[:-3]] = sha  # the peeled commit wins over the tag object
        else:
            refs.setdefault(ref, sha)
    return refs


@dataclass(frozen=True)
class ResolvedRevision:
    """A requested revision and the commit it names."""

    requested: str
    commit: str
    kind: str  # "tag" | "branch" | "commit"


def resolve_revision(name: str, url: str, revision: str, refs: Mapping[str, str] | None = None) -> ResolvedRevision:
    """Resolve ``revision`` (tag, branch or 40-hex commit) of project ``name`` at ``url``.

    A full commit id is taken as is (the fetch checks it exists). Tags and branches are looked up with
    ``git ls-remote``.

    Raises:
        WorkspaceError: the revision is neither a tag nor a branch of the remote (nor a full commit
            id); the hint suggests ``--revision name=<branch-or-commit>`` and lists the branch heads
            when there are few (else ``main``/``master`` and the count).
    """
    if _HEX40.match(revision):
        return ResolvedRevision(revision, revision, "commit")
    refs = remote_refs(url) if refs is None else refs
    for prefix, kind in (("refs/tags/", "tag"), ("refs/heads/", "branch")):
        if prefix + revision in refs:
            return ResolvedRevision(revision, refs[prefix + revision], kind)
    if _HEX_SHORT.match(revision):
        tips = {sha for sha in refs.values() if sha.startswith(revision)}
        if len(tips) == 1:
            return ResolvedRevision(revision, tips.pop(), "commit")
        raise WorkspaceError(
            f"{name}: abbreviated commit {revision} cannot be fetched from {url}; give all 40 hex digits"
        )
    heads = sorted(r[len("refs/heads/"):] for r in refs if r.startswith("refs/heads/"))
    if len(heads) <= 8:
        seen = f"branches seen: {', '.join(heads) or 'none'}"
    else:
        common = [h for h in ("main", "master") if h in heads]
        seen = f"{len(heads)} branches seen, incl. {', '.join(common) or heads[0]}"
    example = ("main" if "main" in heads else heads[0]) if heads else "<commit>"
    raise WorkspaceError(
        f"{name}: revision {revision} is not in {url} ({seen})",
        hint=f"pass --revision {name}=<branch-or-commit>, e.g. --revision {name}={example}",
    )


def head_commit(checkout: Path) -> str | None:
    """Return the commit checked out in ``checkout`` (40 hex), or None when it is not a git checkout."""
    if not (checkout / ".git").exists():
        return None
    head = checkout / ".git" / "HEAD"
    try:
        text = head.read_text().strip()
    except OSError:
        text = ""
    if _HEX40.match(text):
        return text
    try:
        return _git(["rev-parse", "HEAD"], cwd=checkout).strip() or None
    except WorkspaceError:
        return None


def _fetch_and_checkout(repo: Path, url: str, commit: str, sparse: tuple[str, ...] | None, name: str) -> None:
    """Blobless, shallow fetch of one commit into an initialised repo, then (sparse) checkout."""
    if _has_origin(repo):
        _git(["remote", "set-url", "origin", url], cwd=repo)
    else:
        _git(["remote", "add", "origin", url], cwd=repo)
    # Lazy blob fetches during checkout go through the remote's config, so the option lives there too.
    _git(["config", "remote.origin.uploadpack", UPLOAD_PACK], cwd=repo)
    _git(
        ["fetch", "--quiet", "--no-tags", "--filter=blob:none", "--depth", "1", "origin", commit],
        cwd=repo,
        what=f"{name}: fetching {commit[:12]} from {url}",
    )
    if sparse:
        _git(["sparse-checkout", "set", "--no-cone", *sparse], cwd=repo, what=f"{name}: sparse-checkout")
    _git(["checkout", "--quiet", "--detach", commit], cwd=repo, what=f"{name}: checkout {commit[:12]}")
    # west's convention: refs/heads/manifest-rev marks the manifest's revision.
    _git(["update-ref", "refs/heads/manifest-rev", commit], cwd=repo)


def _has_origin(repo: Path) -> bool:
    return "origin" in _git(["remote"], cwd=repo).split()


def _clone_into(dest: Path, url: str, commit: str, sparse: tuple[str, ...] | None, name: str) -> None:
    """Make ``dest`` a checkout of ``commit``: built under a temporary name, then renamed in place.

    A failure leaves no directory that could later pass for a complete project.
    """
    tmp = dest.parent / f".{dest.name}.armgen-tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        _git(["init", "--quiet", str(tmp)])
        _fetch_and_checkout(tmp, url, commit, sparse, name)
        if dest.exists():
            if dest.is_dir() and not any(dest.iterdir()):
                dest.rmdir()  # the empty directory an unpopulated submodule (gitlink) leaves
            else:
                raise WorkspaceError(
                    f"{dest} exists and is not a git checkout",
                    hint="move it away, then run `armgen workspace init` again",
                )
        tmp.rename(dest)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


# --------------------------------------------------------------------------------------------------
# The workspace


@dataclass(frozen=True)
class Workspace:
    """A workspace on disk. Paths of the projects render/build need (they may be absent: see status)."""

    root: Path

    def project_dir(self, name: str) -> Path:
        """Return the directory of manifest project ``name`` (by the recorded or pinned path).

        Raises:
            WorkspaceError: no such project in the manifest.
        """
        state = _read_state(self.root)
        if state and name in state.get("projects", {}):
            return self.root / state["projects"][name]["path"]
        for pin in manifest_pins(self.zephyr_release):
            if pin.name == name:
                return self.root / pin.path
        if name == "zephyr":
            return self.root / "zephyr"  # every release manifest puts Zephyr there
        raise WorkspaceError(f"no project {name!r} in the armgen manifest")

    @property
    def executorch_dir(self) -> Path:
        """ExecuTorch source tree (sparse): ``<ws>/modules/lib/executorch``."""
        return self.project_dir("executorch")

    @property
    def flatbuffers_dir(self) -> Path:
        """flatbuffers (headers): ``<ws>/modules/lib/executorch/third-party/flatbuffers``."""
        return self.project_dir("flatbuffers")

    @property
    def flatcc_dir(self) -> Path:
        """flatcc (headers): ``<ws>/modules/lib/executorch/third-party/flatcc``."""
        return self.project_dir("flatcc")

    @property
    def cmsis_nn_dir(self) -> Path:
        """CMSIS-NN at ExecuTorch's pin; hand it to CMake as ``-DCMSIS_NN_LOCAL_PATH``."""
        return self.project_dir("cmsis-nn")

    @property
    def cmsis_6_dir(self) -> Path:
        """CMSIS_6 (Core(M) headers under ``CMSIS/Core/Include``)."""
        return self.project_dir("cmsis_6")

    @property
    def ethos_u_dir(self) -> Path:
        """Ethos-U core driver (zephyrproject-rtos/hal_ethos_u)."""
        return self.project_dir("hal_ethos_u")

    @property
    def zephyr_dir(self) -> Path:
        """Zephyr tree (present only in workspaces made with ``--zephyr``)."""
        return self.project_dir("zephyr")

    @property
    def has_zephyr(self) -> bool:
        """True when the Zephyr tree is checked out (``zephyr/west.yml`` exists)."""
        return (self.zephyr_dir / "west.yml").is_file()

    @property
    def zephyr_release(self) -> str | None:
        """The Zephyr release (``"3.7"``, ``"4.4"``) the workspace was made with; None without Zephyr."""
        return _state_zephyr_release(_read_state(self.root))

    @property
    def mirror(self) -> str | None:
        """The ``--mirror`` template the workspace was made with, if any."""
        return (_read_state(self.root) or {}).get("mirror")

    def executorch_version(self) -> str:
        """Return ExecuTorch's ``version.txt`` (e.g. ``1.5.0``).

        Raises:
            WorkspaceError: the file is missing.
        """
        path = self.executorch_dir / "version.txt"
        try:
            return path.read_text().strip()
        except OSError as exc:
            raise WorkspaceError(f"{path} is missing; the workspace is incomplete") from exc

    def program_file_identifier(self) -> str:
        """Return the flatbuffer file identifier the runtime expects (``file_identifier "ET12";`` in
        ExecuTorch's ``schema/program.fbs``).

        Raises:
            WorkspaceError: the schema is missing or has no file_identifier line.
        """
        path = self.executorch_dir / "schema" / "program.fbs"
        try:
            text = path.read_text()
        except OSError as exc:
            raise WorkspaceError(f"{path} is missing; the workspace is incomplete") from exc
        match = re.search(r'^\s*file_identifier\s+"([^"]{4})"\s*;', text, re.MULTILINE)
        if not match:
            raise WorkspaceError(f"{path}: no file_identifier declaration")
        return match.group(1)


def _read_state(root: Path) -> dict | None:
    try:
        return json.loads((root / STATE_PATH).read_text())
    except (OSError, ValueError):
        return None


def _state_zephyr_release(state: dict | None) -> str | None:
    """The Zephyr release a workspace record says it has (None when its zephyr group is off)."""
    state = state or {}
    return state.get("zephyr_release") if ZEPHYR_GROUP in state.get("groups", ()) else None


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


# --------------------------------------------------------------------------------------------------
# status


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
    state = _read_state(root)
    from armgen.project.zephyr import default_release

    # Without Zephyr, the default release's projects are listed as inactive.
    pins = manifest_pins(_state_zephyr_release(state) or default_release())
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
    )


def _project_status(
    root: Path, pin: ProjectPin, paths: dict[str, str], rec: dict, is_active: bool, project_roots: set[Path],
    with_sizes: bool,
) -> ProjectStatus:
    """One project's status: checked out at the recorded commit with its required files, or a stub."""
    path = paths[pin.name]
    pdir = root / path
    commit = head_commit(pdir)
    expected = rec.get("commit") or (pin.revision if _HEX40.match(pin.revision) else None)
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
        WorkspaceError: no workspace there, or it is incomplete; the hint says how to make one.
    """
    root = (explicit or workspace_dir()).expanduser().absolute()
    if not (root / ".west" / "config").is_file() or _read_state(root) is None:
        raise WorkspaceError(f"no armgen workspace at {root}", hint=INIT_HINT)
    status = workspace_status(root, with_sizes=False)
    if not status.complete:
        what = [f"{p.name}: {m}" for p in status.projects if p.active for m in p.missing] + list(status.problems)
        raise WorkspaceError(
            f"armgen workspace at {root} is incomplete ({'; '.join(what[:3])}{'; ...' if len(what) > 3 else ''})",
            hint=f"run: armgen workspace init {root}" + (f" --mirror '{status.mirror}'" if status.mirror else ""),
        )
    return Workspace(root)


# --------------------------------------------------------------------------------------------------
# init


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
        data["manifest"]["projects"].extend(extra["projects"])
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
    empty CMakeLists.txt. Finally ``.west/config``, ``armgen-manifest/west.yml`` and
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
            ``--revision`` advice), a failing fetch or checkout, or a foreign directory in the way.
    """
    say = progress or (lambda _msg: None)
    root = (root or workspace_dir()).expanduser().absolute()
    old_state = _read_state(root) or {}
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

    # 2. already complete at exactly these commits?
    if _complete_at(root, old_state, selected, resolved, mirror):
        _write_records(root, manifest_path, mirror, groups, selected, stubbed, fetch_urls, resolved,
                       zephyr_release, url_overrides)
        return InitResult(Workspace(root), {p.name: "up to date" for p in selected}, True)

    # 3. check out, parents before nested projects
    root.mkdir(parents=True, exist_ok=True)
    actions = {pin.name: _check_out(root, pin, resolved[pin.name], fetch_urls[pin.name], say) for pin in selected}
    actions.update(_write_stubs(root, stubbed))

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
    from armgen.project.zephyr import default_release

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
            _git(["sparse-checkout", "set", "--no-cone", *pin.sparse], cwd=dest)
        if any(not (dest / rel).exists() for rel in REQUIRED_FILES.get(pin.name, ())):
            say(f"restoring deleted files of {pin.name}")
            _git(["checkout", "--quiet", "--force", "--detach", commit], cwd=dest, what=f"{pin.name}: restore")
            return "restored"
        return "up to date"
    if current is not None:
        say(f"updating {pin.name} to {resolved.requested} ({commit[:12]})")
        _fetch_and_checkout(dest, url, commit, pin.sparse, pin.name)
        return "updated"
    say(f"fetching {pin.name} {resolved.requested} ({commit[:12]}) into {pin.path}")
    _clone_into(dest, url, commit, pin.sparse, pin.name)
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
    _write_atomic(
        root / MANIFEST_DIR_NAME / "west.yml", _manifest_copy_text(manifest_path, urls, effective, zephyr_release)
    )
    _write_atomic(root / ".west" / "config", _west_config_text(groups))
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
    _write_atomic(root / STATE_PATH, json.dumps(state, indent=2, sort_keys=True) + "\n")


def _path_of(pins: Iterable[ProjectPin], name: str) -> str:
    for p in pins:
        if p.name == name:
            return p.path
    return "\0"


# --------------------------------------------------------------------------------------------------
# program compatibility


def read_pte_file_identifier(pte_path: Path) -> str:
    """Return the flatbuffer file identifier of a ``.pte`` (bytes 4..8, e.g. ``ET12``).

    Raises:
        WorkspaceError: the file cannot be read or is shorter than 8 bytes.
    """
    try:
        with Path(pte_path).open("rb") as fh:
            head = fh.read(8)
    except OSError as exc:
        raise WorkspaceError(f"cannot read {pte_path}: {exc.strerror}") from exc
    if len(head) < 8:
        raise WorkspaceError(f"{pte_path} is not an ExecuTorch program (only {len(head)} bytes)")
    return head[4:8].decode("ascii", errors="replace")


def pip_executorch_version() -> str | None:
    """Return the installed pip ``executorch`` version (importlib.metadata), or None."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("executorch")
    except PackageNotFoundError:
        return None


def version_warnings(workspace: Workspace) -> list[str]:
    """Return a warning when the workspace's ExecuTorch (version.txt) differs from pip's executorch."""
    pip_v = pip_executorch_version()
    ws_v = workspace.executorch_version()
    if pip_v and ws_v and pip_v.split("+")[0] != ws_v:
        return [
            f"workspace ExecuTorch is {ws_v} (version.txt), pip executorch is {pip_v}; "
            "programs load as long as the file identifier matches"
        ]
    return []


def check_file_identifier(workspace: Workspace, found: str, what: str, made_with: str | None = None) -> list[str]:
    """The one check that the workspace's runtime can load a program with file identifier ``found``.

    The runtime refuses a program whose flatbuffer file identifier (bytes 4..8 of the .pte) differs from
    the ``file_identifier`` in its ``schema/program.fbs`` (``Program::load``; executorch issue 2533); a
    different ExecuTorch version with the same identifier only earns a warning.

    Args:
        workspace: the workspace. found: the program's identifier (e.g. ``ET12``). what: the program
            as the message names it. made_with: the ExecuTorch version the program was made with (its
            report's); None compares pip's executorch instead.

    Returns:
        warnings (one-line strings).

    Raises:
        WorkspaceError: the identifiers differ, or the workspace's schema cannot be read.
    """
    expected = workspace.program_file_identifier()
    if found != expected:
        raise WorkspaceError(
            f"{what} has file identifier {found} but the workspace's ExecuTorch runtime reads {expected} "
            f"(ExecuTorch {workspace.executorch_version()} at {workspace.executorch_dir})",
            hint="make a workspace whose ExecuTorch matches the pip executorch the program was compiled with: "
            "armgen workspace init --revision executorch=<release-tag-or-commit>",
        )
    if made_with is None:
        return version_warnings(workspace)
    try:
        ws_version = workspace.executorch_version()
    except WorkspaceError:
        ws_version = ""
    if made_with and ws_version and made_with.split("+")[0] != ws_version:
        return [f"the program was made with executorch {made_with}, the workspace's runtime is {ws_version} "
                f"(same file identifier {found}; it loads)"]
    return []


def check_program_compatible(workspace: Workspace, pte_path: Path) -> list[str]:
    """Check that the workspace's runtime can load the ``.pte`` at ``pte_path`` (see
    :func:`check_file_identifier`; the version compared is pip's executorch).

    Raises:
        WorkspaceError: identifiers differ, or the .pte / schema cannot be read.
    """
    return check_file_identifier(workspace, read_pte_file_identifier(pte_path), str(pte_path))

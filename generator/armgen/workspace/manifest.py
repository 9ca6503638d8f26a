"""The pinned manifest: which upstream projects a workspace has, at which revisions, from where.

West's manifest model (:class:`west.manifest.Manifest`) reads ``modules/west.yml`` and, with Zephyr,
the release's ``modules/zephyr/<release>.yml`` (:mod:`armgen.workspace.releases`); this module turns
their projects into :class:`ProjectPin` and holds what armgen adds per project (sparse-checkout
patterns, required files), the groups, and the ``--mirror`` / ``--revision`` / ``--url`` options.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from armgen.errors import ProjectError, WorkspaceError
from armgen.paths import MODULES_DIR
from armgen.workspace.releases import zephyr_release as find_release

#: The pinned manifest in the repository.
MANIFEST_PATH = MODULES_DIR / "west.yml"

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
    try:
        return find_release(zephyr_release).manifest
    except ProjectError as exc:
        raise WorkspaceError(exc.message) from None


def manifest_pins(zephyr_release: str | None = None, manifest_path: Path = MANIFEST_PATH) -> tuple[ProjectPin, ...]:
    """The projects of armgen's manifest plus, with ``zephyr_release``, that release's Zephyr projects
    (group ``zephyr``; :func:`release_manifest`). A release project named like a base one replaces it
    in place (4.x's ``cmsis_6``: Zephyr's fork, a Zephyr module, instead of Arm's CMSIS_6, which has no
    ``zephyr/module.yml``).

    Raises:
        WorkspaceError: a manifest is missing or malformed; an unknown release.
    """
    pins = load_manifest(manifest_path)
    if zephyr_release is None:
        return pins
    extra = {p.name: p for p in load_manifest(release_manifest(zephyr_release))}
    merged = tuple(extra.pop(p.name, p) for p in pins)
    return merged + tuple(extra.values())


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


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

The package, along its seams (data moves forward: nothing here imports :mod:`armgen.project`):

* :mod:`~armgen.workspace.releases`: the Zephyr releases (``modules/zephyr/releases.yaml``), read
  by the workspace and by the project stage;
* :mod:`~armgen.workspace.manifest`: the pins, groups, sparse patterns, mirror/revision options;
* :mod:`~armgen.workspace.git`: refs, revision resolution, the blobless sparse checkout;
* :mod:`~armgen.workspace.layout`: :class:`Workspace` (paths) and init's record;
* :mod:`~armgen.workspace.compatibility`: the ``.pte`` file-identifier check;
* :mod:`~armgen.workspace.status`: ``armgen workspace status``, :func:`find_workspace`,
  :func:`check_zephyr_workspace`;
* :mod:`~armgen.workspace.init`: ``armgen workspace init``.
"""

from armgen.workspace.compatibility import (
    check_file_identifier,
    check_program_compatible,
    pip_executorch_version,
    read_pte_file_identifier,
    version_warnings,
)
from armgen.workspace.git import UPLOAD_PACK, ResolvedRevision, head_commit, remote_refs, resolve_revision
from armgen.workspace.init import InitResult, Progress, init_workspace
from armgen.workspace.layout import MANIFEST_DIR_NAME, STATE_PATH, STATE_SCHEMA_VERSION, Workspace
from armgen.workspace.manifest import (
    BENCHMARKS_GROUP,
    MANIFEST_PATH,
    REQUIRED_FILES,
    SPARSE_PATTERNS,
    STUB_GROUP,
    STUB_MARKER,
    ZEPHYR_GROUP,
    ProjectPin,
    active_groups,
    load_manifest,
    manifest_pins,
    owner_and_name,
    parse_revision_overrides,
    project_url,
    release_manifest,
    select_projects,
    validate_mirror_template,
)
from armgen.workspace.releases import RELEASES_PATH, ZephyrRelease, default_release, zephyr_release, zephyr_releases
from armgen.workspace.status import (
    INIT_HINT,
    OTHER_RELEASE_ENV,
    ProjectStatus,
    WorkspaceStatus,
    check_zephyr_workspace,
    find_workspace,
    find_zephyr_workspace,
    workspace_status,
    zephyr_init_dir,
    zephyr_tree_version,
)

__all__ = [
    "BENCHMARKS_GROUP", "INIT_HINT", "MANIFEST_DIR_NAME", "MANIFEST_PATH", "OTHER_RELEASE_ENV", "RELEASES_PATH",
    "REQUIRED_FILES",
    "SPARSE_PATTERNS", "STATE_PATH", "STATE_SCHEMA_VERSION", "STUB_GROUP", "STUB_MARKER", "UPLOAD_PACK",
    "ZEPHYR_GROUP", "InitResult", "ProjectPin", "ProjectStatus", "Progress", "ResolvedRevision", "Workspace",
    "WorkspaceStatus", "ZephyrRelease", "active_groups", "check_file_identifier", "check_program_compatible",
    "check_zephyr_workspace", "default_release", "find_workspace", "find_zephyr_workspace", "head_commit",
    "init_workspace",
    "load_manifest", "manifest_pins", "owner_and_name", "parse_revision_overrides", "pip_executorch_version",
    "project_url", "read_pte_file_identifier", "release_manifest", "remote_refs", "resolve_revision",
    "select_projects", "validate_mirror_template", "version_warnings", "workspace_status", "zephyr_release",
    "zephyr_init_dir", "zephyr_releases", "zephyr_tree_version",
]

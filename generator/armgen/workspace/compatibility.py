"""Can the workspace's ExecuTorch runtime load a program? The ``.pte`` file identifier check.

The runtime refuses a program whose flatbuffer file identifier differs from its own
``schema/program.fbs``; a different ExecuTorch version with the same identifier only earns a
warning. The build stage calls :func:`check_file_identifier` before linking a ``.pte``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from armgen.errors import WorkspaceError

if TYPE_CHECKING:
    from armgen.workspace.layout import Workspace


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

"""A workspace on disk: where its projects are and the record ``armgen workspace init`` leaves.

The record (``<ws>/.armgen/workspace.json``) says what init checked out; west's own files are
``<ws>/.west/config`` and ``<ws>/armgen-manifest/west.yml``. :class:`Workspace` gives the paths
render/build need (they may be absent: see :mod:`armgen.workspace.status`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from armgen.errors import WorkspaceError
from armgen.workspace.manifest import ZEPHYR_GROUP, manifest_pins

#: Where the workspace keeps its manifest copy (west's ``manifest.path``) and armgen's own record.
MANIFEST_DIR_NAME = "armgen-manifest"
STATE_PATH = Path(".armgen") / "workspace.json"
STATE_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Workspace:
    """A workspace on disk. Paths of the projects render/build need (they may be absent: see status)."""

    root: Path

    def project_dir(self, name: str) -> Path:
        """Return the directory of manifest project ``name`` (by the recorded or pinned path).

        Raises:
            WorkspaceError: no such project in the manifest.
        """
        state = read_state(self.root)
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
    def cmsis_dsp_dir(self) -> Path:
        """CMSIS-DSP (Arm's repository, sparse: Include, PrivateInclude, Source) of the MFCC front end."""
        return self.project_dir("cmsis-dsp")

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
        return state_zephyr_release(read_state(self.root))

    @property
    def mirror(self) -> str | None:
        """The ``--mirror`` template the workspace was made with, if any."""
        return (read_state(self.root) or {}).get("mirror")

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


def read_state(root: Path) -> dict | None:
    """The record init wrote (``<root>/.armgen/workspace.json``), or None when it is missing or unreadable."""
    try:
        return json.loads((root / STATE_PATH).read_text())
    except (OSError, ValueError):
        return None


def state_zephyr_release(state: dict | None) -> str | None:
    """The Zephyr release a workspace record says it has (None when its zephyr group is off)."""
    state = state or {}
    return state.get("zephyr_release") if ZEPHYR_GROUP in state.get("groups", ()) else None


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file renamed into place (parents made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)



def require_cmsis_dsp(ws: Workspace, needed_by: str, zephyr_release: str | None = None) -> Path:
    """The workspace's CMSIS-DSP tree (what an audio front end compiles), checked before CMake runs.

    Args:
        ws: the workspace. needed_by: who needs it, for the message ("project kws has an audio front end
            (mfcc)"). zephyr_release: the project's Zephyr release, for the hint's init command.

    Raises:
        WorkspaceError: no ``Include/arm_math.h`` under the workspace's ``cmsis-dsp`` project (a workspace made
            before the manifest pinned it, or a hand-made one): one line naming the directory.
    """
    dsp = ws.cmsis_dsp_dir
    zephyr = f" --zephyr --zephyr-release {zephyr_release}" if zephyr_release else ""
    if not (dsp / "Include" / "arm_math.h").is_file():
        raise WorkspaceError(f"{needed_by} and the workspace {ws.root} has no CMSIS-DSP at {dsp}",
                             hint=f"armgen workspace init {ws.root}{zephyr} brings the workspace up to date "
                             "(modules/west.yml pins cmsis-dsp)")
    return dsp

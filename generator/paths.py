"""Where armgen's own data lives (boards, templates, samples, modules) and the default workspace."""

from __future__ import annotations

import os
from pathlib import Path

#: The checkout armgen is installed from (``pip install -e .``); data dirs sit beside ``generator/``.
REPO_ROOT = Path(__file__).resolve().parent.parent
BOARDS_DIR = REPO_ROOT / "boards"
TEMPLATES_DIR = REPO_ROOT / "templates"
SAMPLES_DIR = REPO_ROOT / "samples"
MODULES_DIR = REPO_ROOT / "modules"

#: Default workspace location when ``ARMGEN_WORKSPACE`` is not set.
DEFAULT_WORKSPACE = Path.home() / ".local" / "share" / "armgen" / "workspace"


def workspace_dir() -> Path:
    """Return the workspace directory: ``$ARMGEN_WORKSPACE`` or :data:`DEFAULT_WORKSPACE`.

    The directory may not exist; callers check and raise ``WorkspaceError`` with advice.
    """
    env = os.environ.get("ARMGEN_WORKSPACE")
    return Path(env).expanduser().resolve() if env else DEFAULT_WORKSPACE

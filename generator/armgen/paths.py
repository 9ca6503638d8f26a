"""Where armgen's own data lives (boards, templates, samples, modules) and the default workspace.

The data folders are packages of their own (``armgen.data.<name>``, see :mod:`armgen.data`), mapped
from the repository's top-level folders by ``pyproject.toml``: in a wheel they sit inside the
installed package, in an editable install they are the checkout's folders. Either way the import
system says where (``importlib.util.find_spec``), so nothing here depends on the checkout.
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path


def data_dir(name: str) -> Path:
    """The directory of the data package ``armgen.data.<name>`` (``boards``, ``templates``, ...).

    Raises:
        RuntimeError: the package is not installed (a broken installation).
    """
    spec = importlib.util.find_spec(f"armgen.data.{name}")
    locations = list(spec.submodule_search_locations or []) if spec else []
    if not locations:
        raise RuntimeError(f"armgen's data package armgen.data.{name} is not installed; reinstall armgen")
    return Path(locations[0])


BOARDS_DIR = data_dir("boards")
TEMPLATES_DIR = data_dir("templates")
SAMPLES_DIR = data_dir("samples")
MODULES_DIR = data_dir("modules")

#: Default workspace location when ``ARMGEN_WORKSPACE`` is not set.
DEFAULT_WORKSPACE = Path.home() / ".local" / "share" / "armgen" / "workspace"


def workspace_dir() -> Path:
    """Return the workspace directory: ``$ARMGEN_WORKSPACE`` or :data:`DEFAULT_WORKSPACE`.

    The directory may not exist; callers check and raise ``WorkspaceError`` with advice.
    """
    env = os.environ.get("ARMGEN_WORKSPACE")
    return Path(env).expanduser().resolve() if env else DEFAULT_WORKSPACE


def zephyr_workspace_env(release: str) -> str:
    """The environment variable naming the workspace of Zephyr release ``release``:
    ``ARMGEN_WORKSPACE_ZEPHYR_4_4`` for ``"4.4"``."""
    return "ARMGEN_WORKSPACE_ZEPHYR_" + re.sub(r"[^0-9A-Za-z]", "_", release).upper()


def zephyr_default_workspace(release: str) -> Path:
    """The default location of a workspace made for Zephyr ``release``:
    ``~/.local/share/armgen/workspace-zephyr-<R>``."""
    return DEFAULT_WORKSPACE.parent / f"workspace-zephyr-{release}"


def zephyr_workspace_candidates(release: str) -> tuple[Path, ...]:
    """Where the workspace of Zephyr release ``release`` may be, in the order armgen looks:
    ``$ARMGEN_WORKSPACE_ZEPHYR_<R>`` (:func:`zephyr_workspace_env`), ``$ARMGEN_WORKSPACE``, the
    release's own default ``~/.local/share/armgen/workspace-zephyr-<R>``, then :data:`DEFAULT_WORKSPACE`
    (a workspace made before per-release locations, holding one release). Unset variables are left out.
    A workspace holds one Zephyr release; these locations let several releases sit side by side.
    """
    out: list[Path] = []
    for var in (zephyr_workspace_env(release), "ARMGEN_WORKSPACE"):
        if os.environ.get(var):
            out.append(Path(os.environ[var]).expanduser().resolve())
    out += [zephyr_default_workspace(release), DEFAULT_WORKSPACE]
    return tuple(dict.fromkeys(out))

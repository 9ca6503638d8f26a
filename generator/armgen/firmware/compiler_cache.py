"""ccache for firmware builds: the workspace's runtime sources compiled once, reused across build trees.

Every armgen project compiles the same ExecuTorch runtime, CMSIS-NN and (Zephyr) kernel sources from the
workspace; only a handful of files differ between projects. With ccache (Debian's ``ccache``) on PATH, a
second project for the same CPU and configuration, ``armgen build --rebuild`` and the run variant's
build tree (``build/run-input/`` on Zephyr) take those objects from the cache.

What makes hits possible across trees is ccache's ``base_dir``: a compile names the project's own files
and its build tree's generated headers by absolute path, which differs per project. With
``CCACHE_BASEDIR`` = the project directory, ccache rewrites those paths relative to the compile's
working directory before hashing (and compiling), so two projects laid out alike hash alike; the
workspace's sources keep their absolute paths, which are the same for every project. Debug builds
(Zephyr's default ``-g``) also hash the working directory unless ``CCACHE_NOHASHDIR`` is set; armgen
sets it, at the cost that an object taken from the cache names the directory it was first compiled in
as ``DW_AT_comp_dir``. A user's own ``CCACHE_BASEDIR``/``CCACHE_NOHASHDIR`` win. (ccache manual,
"Compiling in different directories", https://ccache.dev/manual/4.7.html.)

``ARMGEN_CCACHE=0`` turns it off: bare metal then configures without a compiler launcher, Zephyr with
``-DUSE_CCACHE=0`` (Zephyr's own switch, ``cmake/modules/ccache.cmake``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

#: The environment switch: ``0``, ``off``, ``no`` or ``false`` turns ccache off for armgen's builds.
SWITCH = "ARMGEN_CCACHE"


def ccache_enabled(env: Mapping[str, str] | None = None) -> bool:
    """Whether armgen builds go through ccache: ``$ARMGEN_CCACHE`` is not 0/off/no/false."""
    value = (os.environ if env is None else env).get(SWITCH, "").strip().lower()
    return value not in ("0", "off", "no", "false")


def ccache_launcher(env: Mapping[str, str] | None = None) -> Path | None:
    """The ``ccache`` executable to use as CMake's compiler launcher, or None (not on PATH, or switched off)."""
    if not ccache_enabled(env):
        return None
    found = shutil.which("ccache", path=(os.environ if env is None else env).get("PATH"))
    return Path(found) if found else None


def ccache_env(env: Mapping[str, str], project_root: Path) -> dict[str, str]:
    """``env`` with ccache's settings for building the project at ``project_root`` (see the module text).

    Args:
        env: the build's environment (not changed). project_root: the project directory (absolute).

    Returns:
        A copy of ``env`` with ``CCACHE_BASEDIR`` = ``project_root`` and ``CCACHE_NOHASHDIR=1`` unless
        ``env`` already has them.
    """
    out = dict(env)
    out.setdefault("CCACHE_BASEDIR", str(project_root))
    out.setdefault("CCACHE_NOHASHDIR", "1")
    return out

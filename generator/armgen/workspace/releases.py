"""The Zephyr releases armgen knows (``modules/zephyr/releases.yaml``, one west manifest per release).

Both the workspace (which Zephyr projects ``armgen workspace init --zephyr`` checks out) and the
project stage (which Zephyr an application is written for) read this list; it lives here, in the
workspace package, so the project stage reads it forward and the workspace needs no project code.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from armgen.errors import ProjectError
from armgen.paths import MODULES_DIR

#: Where the Zephyr releases are described (one west manifest per release beside it).
RELEASES_PATH = MODULES_DIR / "zephyr" / "releases.yaml"


@dataclass(frozen=True)
class ZephyrRelease:
    """A Zephyr release armgen writes applications for (``modules/zephyr/releases.yaml``).

    Attributes:
        name: the short name users pass (``"3.7"``, ``"4.4"``). tag: the release tag (``v3.7.1``).
        manifest: the west manifest of Zephyr and the modules the workspace takes for this release.
        ethos_u_kconfig_prefix: ``ARM_ETHOS_U`` (up to 4.1) or ``ETHOS_U`` (4.2 on).
        ethos_u_dcache_kconfig: the release's Ethos-U driver glue has ``ETHOS_U_DCACHE`` (4.2 on), which
            cleans/invalidates the buffers the NPU reads and writes; without it the application does.
        allowlist: Zephyr's own projects a generated application's west.yml imports.
    """

    name: str
    tag: str
    manifest: Path
    ethos_u_kconfig_prefix: str
    ethos_u_dcache_kconfig: bool
    allowlist: tuple[str, ...]


@functools.cache
def zephyr_releases(path: Path = RELEASES_PATH) -> tuple[tuple[str, ZephyrRelease], ...]:
    """Every release of ``modules/zephyr/releases.yaml`` as ``(name, ZephyrRelease)``, default first, then
    newest first.

    Raises:
        ProjectError: the file is missing or malformed.
    """
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        default = str(data["default"])
        out = {
            str(name): ZephyrRelease(
                name=str(name), tag=str(r["tag"]), manifest=path.parent / str(r["manifest"]),
                ethos_u_kconfig_prefix=str(r["ethos_u_kconfig_prefix"]),
                ethos_u_dcache_kconfig=bool(r["ethos_u_dcache_kconfig"]), allowlist=tuple(r["allowlist"]),
            )
            for name, r in data["releases"].items()
        }
    except (OSError, yaml.YAMLError, KeyError, TypeError) as exc:
        raise ProjectError(f"{path}: not a Zephyr release list ({exc})") from exc
    newest_first = sorted(out.items(), key=lambda kv: tuple(-int(n) for n in re.findall(r"\d+", kv[0])))
    return tuple(sorted(newest_first, key=lambda kv: kv[0] != default))


def default_release() -> str:
    """The release ``armgen new`` writes for without ``--zephyr-release`` (4.4)."""
    return zephyr_releases()[0][0]


def zephyr_release(name: str | None = None) -> ZephyrRelease:
    """The release called ``name`` (``"3.7"``; a tag such as ``v3.7.1`` works too); None: the default.

    Raises:
        ProjectError: an unknown release (the message lists the known ones).
    """
    releases = dict(zephyr_releases())
    name = name or default_release()
    for rel in releases.values():
        if name in (rel.name, rel.tag, rel.tag.lstrip("v")):
            return rel
    raise ProjectError(f"unknown Zephyr release '{name}' (armgen knows {', '.join(releases)})")

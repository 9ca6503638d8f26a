"""Why a test cannot run here: the one home of the suite's skip conditions (tests/conftest.py applies them).

A test says what it needs with a marker (registered in pyproject.toml) instead of a hand-written skipif:

    @pytest.mark.needs_gcc                      arm-none-eabi-gcc and -ar on PATH
    @pytest.mark.needs_qemu                     qemu-system-arm on PATH
    @pytest.mark.needs_workspace                an armgen workspace a firmware build can use
    @pytest.mark.needs_zephyr(release="3.7")    a workspace holding that Zephyr release, found as a build finds it

Each function returns None when the need is met, else the skip reason: what is missing and how to get it.
Each is computed at most once per session (a workspace lookup reads files; a PATH lookup is cheap but asked
by hundreds of parametrized tests). Not a test module (leading underscore).
"""

from __future__ import annotations

import functools
import shutil


@functools.cache
def gcc_missing() -> str | None:
    """arm-none-eabi-gcc and -ar (the Debian package gcc-arm-none-eabi has both)."""
    missing = [tool for tool in ("arm-none-eabi-gcc", "arm-none-eabi-ar") if shutil.which(tool) is None]
    if missing:
        return f"{'/'.join(missing)} not installed (apt-get install gcc-arm-none-eabi)"
    return None


@functools.cache
def qemu_missing() -> str | None:
    if shutil.which("qemu-system-arm") is None:
        return "qemu-system-arm not installed (apt-get install qemu-system-arm)"
    return None


@functools.cache
def workspace_missing() -> str | None:
    """Why no workspace usable for firmware builds exists (None when one does): the build's own lookup
    (``armgen.firmware.build.resolve_workspace``: ``$ARMGEN_WORKSPACE`` or the default location)."""
    from armgen.errors import ArmgenError
    from armgen.firmware.build import resolve_workspace

    try:
        resolve_workspace()
    except (ArmgenError, OSError) as exc:  # armgen's one-line errors, or an unreadable tree: no usable workspace
        return f"needs an armgen workspace ({getattr(exc, 'message', str(exc))}; armgen workspace init)"
    return None


@functools.cache
def zephyr_missing(release: str) -> str | None:
    """Why no workspace holding Zephyr ``release`` is found where ``armgen build`` of a Zephyr project of
    that release looks (``armgen.workspace.find_zephyr_workspace``, then ``resolve_workspace``)."""
    from armgen.errors import ArmgenError
    from armgen.firmware.build import resolve_workspace
    from armgen.workspace import Workspace, find_zephyr_workspace

    candidate = find_zephyr_workspace(release)
    try:
        ws = Workspace(resolve_workspace(candidate))
    except (ArmgenError, OSError) as exc:  # not a bug of armgen's (that fails the run): no usable workspace
        return (f"no armgen workspace for Zephyr {release} ({getattr(exc, 'message', exc)}): "
                f"armgen workspace init --zephyr --zephyr-release {release}")
    if not ws.has_zephyr:
        return f"no Zephyr in the workspace {ws.root}: armgen workspace init --zephyr --zephyr-release {release}"
    if ws.zephyr_release != release:
        return (f"the workspace {ws.root} has Zephyr {ws.zephyr_release}, these tests build for {release}: "
                f"armgen workspace init --zephyr --zephyr-release {release} (beside it, or $ARMGEN_WORKSPACE_ZEPHYR_"
                f"{release.replace('.', '_')})")
    return None


def reason(marker) -> str | None:
    """The skip reason for one ``needs_*`` marker (None: the need is met, or the marker is not one of these)."""
    if marker.name == "needs_gcc":
        return gcc_missing()
    if marker.name == "needs_qemu":
        return qemu_missing()
    if marker.name == "needs_workspace":
        return workspace_missing()
    if marker.name == "needs_zephyr":
        release = marker.kwargs.get("release", marker.args[0] if marker.args else None)
        if release is None:
            raise ValueError("needs_zephyr takes the release: @pytest.mark.needs_zephyr(release=\"3.7\")")
        return zephyr_missing(str(release))
    return None

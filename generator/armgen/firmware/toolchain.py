"""The cross toolchain of ``armgen build`` (:mod:`armgen.firmware.build`): finding Debian's ``arm-none-eabi-gcc``
and, for a Zephyr build with it, the environment west runs in, the picolibc arguments and the compiler wrapper
for a CPU GCC 12 does not name.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from armgen.errors import ToolchainError
from armgen.project.record import ProjectRecord

#: Debian packages that provide the cross toolchain (compiler, newlib, libstdc++).
TOOLCHAIN_PACKAGES = "gcc-arm-none-eabi libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib"
#: Debian packages a Zephyr build with Debian's toolchain needs on top (see :func:`zephyr_libc_args`).
ZEPHYR_LIBC_PACKAGES = "picolibc-arm-none-eabi libstdc++-arm-none-eabi-picolibc"


def find_toolchain() -> dict[str, Path]:
    """Locate the host tools of a bare-metal build.

    Returns:
        ``{"gcc": ..., "cmake": ..., "ninja": ...}`` absolute paths. cmake and ninja are Debian's
        (``/usr/bin``) when present: mixing a venv's pip cmake/ninja with Debian's forces full rebuilds.

    Raises:
        ToolchainError: arm-none-eabi-gcc, cmake or ninja missing (the hint names Debian packages).
    """
    gcc = shutil.which("arm-none-eabi-gcc")
    if gcc is None:
        raise ToolchainError(
            "arm-none-eabi-gcc not found on PATH",
            hint=f"install the Debian packages: sudo apt-get install {TOOLCHAIN_PACKAGES}",
        )
    tools: dict[str, Path] = {"gcc": Path(gcc)}
    for tool, pkg in (("cmake", "cmake"), ("ninja", "ninja-build")):
        system = Path("/usr/bin") / tool
        found = str(system) if system.is_file() and os.access(system, os.X_OK) else shutil.which(tool)
        if found is None:
            raise ToolchainError(f"{tool} not found", hint=f"install the Debian package: sudo apt-get install {pkg}")
        tools[tool] = Path(found)
    return tools


def zephyr_toolchain_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment ``west build`` runs in: the user's Zephyr toolchain when one is set
    (``ZEPHYR_TOOLCHAIN_VARIANT``, e.g. ``zephyr`` for the Zephyr SDK), else Debian's
    ``arm-none-eabi-gcc`` as Zephyr's ``gnuarmemb`` variant (``GNUARMEMB_TOOLCHAIN_PATH`` = the
    prefix that holds ``bin/arm-none-eabi-gcc``).

    Raises:
        ToolchainError: no Zephyr toolchain is set and arm-none-eabi-gcc is not on PATH.
    """
    env = dict(os.environ if env is None else env)
    if env.get("ZEPHYR_TOOLCHAIN_VARIANT"):
        return env
    gcc = find_toolchain()["gcc"]
    env["ZEPHYR_TOOLCHAIN_VARIANT"] = "gnuarmemb"
    env["GNUARMEMB_TOOLCHAIN_PATH"] = str(Path(gcc).resolve().parent.parent)
    return env


def zephyr_libc_args(env: Mapping[str, str]) -> list[str]:
    """CMake arguments that give a ``gnuarmemb`` Zephyr build a C library it can use.

    Debian's newlib is built without retargetable locking, which Zephyr's newlib hooks assert
    (``lib/libc/newlib/libc-hooks.c``), and Zephyr's picolibc module cannot serve ExecuTorch, which
    selects ``REQUIRES_FULL_LIBCPP`` (``lib/libc/Kconfig``: the module only without it). Debian's
    ``picolibc-arm-none-eabi`` + ``libstdc++-arm-none-eabi-picolibc`` work: gcc finds
    ``picolibc.specs``, and ``-DTOOLCHAIN_HAS_PICOLIBC=ON`` tells Zephyr's Kconfig the toolchain has it
    (3.7.1's gnuarmemb toolchain file only declares newlib), so Zephyr's default libc, picolibc from
    the toolchain, is chosen. Nothing in Zephyr is patched.

    Returns:
        ``["-DTOOLCHAIN_HAS_PICOLIBC=ON"]`` for gnuarmemb; ``[]`` for other toolchains (the Zephyr SDK
        declares its own libraries).

    Raises:
        ToolchainError: gnuarmemb without Debian's picolibc (the hint names the packages).
    """
    if env.get("ZEPHYR_TOOLCHAIN_VARIANT") != "gnuarmemb":
        return []
    gcc = Path(env.get("GNUARMEMB_TOOLCHAIN_PATH", "/usr")) / "bin" / "arm-none-eabi-gcc"
    try:
        specs = subprocess.run([str(gcc), "-print-file-name=picolibc.specs"], capture_output=True, text=True,
                               check=False).stdout.strip()
    except OSError:
        specs = ""
    if not specs or not Path(specs).is_absolute() or not Path(specs).is_file():
        raise ToolchainError(
            f"{gcc} has no picolibc (picolibc.specs), which Zephyr builds with Debian's toolchain need",
            hint=f"install the Debian packages: sudo apt-get install {ZEPHYR_LIBC_PACKAGES}",
        )
    return ["-DTOOLCHAIN_HAS_PICOLIBC=ON"]


#: The wrapper :func:`gcc_cpu_wrapper` writes: the real compiler with ``-mcpu=<core>`` changed to
#: ``-mcpu=<gcc_mcpu>`` (modifiers such as ``+nomve.fp`` kept), every other argument as given.
_GCC_WRAPPER = """#!/bin/sh
# Written by armgen (armgen.firmware.toolchain.gcc_cpu_wrapper): {gcc} rejects -mcpu={core}, which Zephyr's
# cmake/gcc-m-cpu.cmake sets for this CPU; compile for -mcpu={mcpu} instead, as the board file says
# (cpu.gcc_mcpu) and as armgen's bare-metal build does. Every other argument is passed on unchanged.
for arg do
  shift
  case "$arg" in
    -mcpu={core}*) arg="-mcpu={mcpu}${{arg#-mcpu={core}}}" ;;
  esac
  set -- "$@" "$arg"
done
exec {real} "$@"
"""


def gcc_cpu_wrapper(record: ProjectRecord, env: dict[str, str], build_dir: Path) -> dict[str, str]:
    """Let Debian's GCC 12 build a Zephyr image for a core it does not know (Cortex-M85).

    Zephyr's ``cmake/gcc-m-cpu.cmake`` sets ``-mcpu=cortex-m85`` (``+nomve.fp`` ...) unconditionally for
    ``CONFIG_CPU_CORTEX_M85``; GCC learnt that core in 13, and Debian 12's ``arm-none-eabi-gcc`` 12.2
    rejects it. Zephyr is not patched: for armgen's default toolchain (``gnuarmemb`` = Debian's gcc),
    when the board's core differs from its ``cpu.gcc_mcpu`` (corstone_320: cortex-m85 -> cortex-m55, the
    same mapping the bare-metal build and ExecuTorch's own Arm toolchain file use) and the compiler
    rejects the core, ``GNUARMEMB_TOOLCHAIN_PATH`` points at a prefix of armgen's own in
    ``PROJECT/.armgen-toolchain/`` whose ``gcc``/``g++`` rewrite the flag and whose other tools and
    ``arm-none-eabi`` sysroot link to the real ones. An M55 image runs on an M85 (Armv8.1-M with MVE; the
    M85's PACBTI is optional and Zephyr does not enable it here); the price is M55 instruction
    scheduling. With a toolchain the user chose (``ZEPHYR_TOOLCHAIN_VARIANT`` set, e.g. the Zephyr SDK)
    or a ``gnuarmemb`` GCC that accepts the core (GCC 13+), nothing is wrapped.

    Returns:
        ``env``, or a copy whose ``GNUARMEMB_TOOLCHAIN_PATH`` is the wrapper prefix.
    """
    from armgen.boards import load_board

    cpu = load_board(record.board_spec or "").cpu
    if env.get("ZEPHYR_TOOLCHAIN_VARIANT") != "gnuarmemb" or not cpu.gcc_mcpu or cpu.gcc_mcpu == cpu.core:
        return env
    home = Path(env.get("GNUARMEMB_TOOLCHAIN_PATH", "/usr"))
    gcc = home / "bin" / "arm-none-eabi-gcc"
    probe = subprocess.run([str(gcc), f"-mcpu={cpu.core}", "-E", "-x", "c", "-"], input="", capture_output=True,
                           text=True, check=False)
    if probe.returncode == 0:
        return env
    prefix = record.root / ".armgen-toolchain"
    (prefix / "bin").mkdir(parents=True, exist_ok=True)
    for tool in sorted((home / "bin").glob("arm-none-eabi-*")):
        dest = prefix / "bin" / tool.name
        if tool.name in ("arm-none-eabi-gcc", "arm-none-eabi-g++"):
            text = _GCC_WRAPPER.format(gcc=gcc.name, core=cpu.core, mcpu=cpu.gcc_mcpu, real=tool.resolve())
            if dest.is_symlink() or not dest.is_file() or dest.read_text() != text:  # unchanged: keep its mtime
                dest.unlink(missing_ok=True)
                dest.write_text(text)
                dest.chmod(0o755)
        elif not dest.is_symlink():
            dest.symlink_to(tool.resolve())
    sysroot = home / "arm-none-eabi"
    if sysroot.exists() and not (prefix / "arm-none-eabi").is_symlink():
        (prefix / "arm-none-eabi").symlink_to(sysroot.resolve())
    return {**env, "GNUARMEMB_TOOLCHAIN_PATH": str(prefix)}

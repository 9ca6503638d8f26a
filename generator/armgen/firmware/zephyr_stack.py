"""Zephyr's stacks sized from evidence: ``[memory] stack = "auto"`` for a Zephyr project, a step of ``armgen build``.

A Zephyr image has three stacks of its own size: the main thread's (``CONFIG_MAIN_STACK_SIZE``), the
interrupt stack every ISR and (on Cortex-M) the early kernel start-up run on (``CONFIG_ISR_STACK_SIZE``)
and the idle thread's (``CONFIG_IDLE_STACK_SIZE``). All three are Kconfig, so ``armgen build``:

1. builds `armgen run`'s image (``build/run-input/``: armgen's harness main, never yours, which may never
   return), which with ``stack = "auto"`` also prints ``ARMGEN stack isr|idle ...`` (the generated
   ``src/platform/platform.c``, compiled only into that image); the main stack's line is the usual one;
2. runs it once on the board's QEMU machine. How the marks are read: ``CONFIG_INIT_STACKS`` (already in the
   generated ``prj.conf`` for the main stack's report) paints every stack with 0xaa, and Zephyr's own
   ``z_stack_space_get`` (what ``k_thread_stack_space_get`` and the thread analyzer call) counts the untouched
   paint. ``CONFIG_THREAD_ANALYZER`` was not used: it needs ``CONFIG_THREAD_MONITOR`` and a logging or
   printk format that differs between releases, and it would have to be in the Kconfig of the image that is
   measured, so the sized image would not be the measured one. Before it reads them the image sleeps one
   tick, so the idle thread runs and waits for the timer interrupt at least once, as it does on a board;
3. each stack becomes :func:`armgen.firmware.stack.sized_stack_bytes` of its mark (x 1.25, 8-byte steps; the
   main stack + :data:`armgen.firmware.stack.USER_FRAMES_BYTES` once ``src/main.cpp`` is yours, as on bare
   metal), written to :data:`FRAGMENT` in the project (armgen's file; the generated ``CMakeLists.txt`` adds
   it to ``EXTRA_CONF_FILE`` before ``find_package(Zephyr)``, so a plain ``west build`` builds the sized
   image; ``prj.conf`` is yours and untouched);
4. the image is built again with those sizes and runs again: every mark must fit. When the fragment already
   holds exactly the sizes a run yields, that run was on the sized image and is the check: an unchanged
   project costs one QEMU run, not a rebuild (a Kconfig change recompiles most of the image). When the image
   fails with the fragment's sizes (a larger model overflows them: the stack guard stops it), the failed run's log
   is kept as ``build/stack-measure-earlier-sizes.log`` and the stacks are measured again with the defaults.

The figures are QEMU's: interrupts on a real board (more sources, other priorities, nesting) load the ISR
stack differently, and the record says so. The sizes are recorded in ``build/stack.json``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from armgen.errors import BuildError, RunError
from armgen.firmware.stack import (
    NO_STATIC_BOUND,
    STACK_ALIGN,
    STACK_FILE,
    STACK_MARGIN,
    USER_FRAMES_BYTES,
    sized_stack_bytes,
)

#: The armgen-owned Kconfig fragment ``armgen build`` writes, in the project's root.
FRAGMENT = "armgen-stacks.conf"
#: Stack -> the Kconfig symbol that sizes it, in the fragment's order.
KCONFIG = {"main": "CONFIG_MAIN_STACK_SIZE", "isr": "CONFIG_ISR_STACK_SIZE", "idle": "CONFIG_IDLE_STACK_SIZE"}
#: What the figures cannot show (the record's ``qemu_note``).
QEMU_NOTE = ("measured on QEMU: interrupts on the real board (other sources, priorities, nesting, a debugger) "
             "load the ISR stack differently")

_HEADER = """\
# Stack sizes measured by `armgen build` ([memory] stack = "auto"; written by armgen, do not edit:
# give [memory] stack in bytes in armgen.toml to size the main stack yourself). Merged after prj.conf
# (CMakeLists.txt: EXTRA_CONF_FILE). How they were measured: build/stack.json.
"""
_LINE = re.compile(r"^(CONFIG_[A-Z0-9_]+)=(\d+)\s*$")


def fragment_text(sizes: dict[str, int], high_water: dict[str, int] | None = None) -> str:
    """The fragment for ``sizes`` (stack -> bytes; keys of :data:`KCONFIG`), one commented line per stack.

    Args:
        sizes: bytes per stack. high_water: the measured marks (bytes), named in each line's comment.

    Returns:
        str: the text (the same for the same arguments). ``{}`` gives the header alone (no assignment:
        ``prj.conf`` and Zephyr's defaults apply).

    Raises:
        ValueError: a stack :data:`KCONFIG` does not know, or a size that is not a positive multiple of 8.
    """
    lines = [_HEADER]
    for stack in KCONFIG:
        if stack not in sizes:
            continue
        size = sizes[stack]
        if size <= 0 or size % STACK_ALIGN:
            raise ValueError(f"{stack} stack {size} B: not a positive multiple of {STACK_ALIGN}")
        if high_water is not None and stack in high_water:
            lines.append(f"# {stack}: high-water {high_water[stack]} B x {STACK_MARGIN}, rounded up to {STACK_ALIGN} B"
                         + (f" + {size - sized_stack_bytes(high_water[stack])} B for your main's frames"
                            if size != sized_stack_bytes(high_water[stack]) else "") + "\n")
        lines.append(f"{KCONFIG[stack]}={size}\n")
    unknown = sorted(set(sizes) - set(KCONFIG))
    if unknown:
        raise ValueError(f"no Kconfig symbol for the {unknown[0]} stack (stacks: {', '.join(KCONFIG)})")
    return "".join(lines)


def parse_fragment(text: str, where: str = FRAGMENT) -> dict[str, int]:
    """The stack sizes (stack -> bytes) a fragment sets; comments and blank lines are skipped.

    Raises:
        BuildError: a line that is not ``CONFIG_<stack>_SIZE=<bytes>`` of :data:`KCONFIG`, or a symbol set twice.
    """
    by_symbol = {v: k for k, v in KCONFIG.items()}
    sizes: dict[str, int] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if not m or m.group(1) not in by_symbol:
            raise BuildError(f"{where}:{n}: not a stack size armgen writes: {line!r}",
                             hint=f"armgen writes only {', '.join(KCONFIG.values())}; delete the file to measure again")
        stack = by_symbol[m.group(1)]
        if stack in sizes:
            raise BuildError(f"{where}:{n}: {m.group(1)} is set twice")
        sizes[stack] = int(m.group(2))
    return sizes


def read_fragment(root: Path) -> dict[str, int]:
    """The sizes in ``root``/:data:`FRAGMENT` (``{}`` when there is none).

    Raises:
        BuildError: as :func:`parse_fragment`.
    """
    path = root / FRAGMENT
    return parse_fragment(path.read_text(), str(path)) if path.is_file() else {}


def write_fragment(root: Path, sizes: dict[str, int], high_water: dict[str, int] | None = None) -> Path:
    """Write ``root``/:data:`FRAGMENT` (only when its text changes: Zephyr re-runs Kconfig on a new mtime)."""
    path = root / FRAGMENT
    text = fragment_text(sizes, high_water)
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)
    return path


@dataclass(frozen=True)
class StackFigure:
    """One stack: ``reserved`` (bytes the sized image reserves, as the firmware reports it), ``high_water``
    (bytes the sized image used on QEMU), ``measured_with`` (bytes reserved during the measuring run),
    ``kconfig`` (its symbol), ``user_frames`` (bytes added for your main's frames; main stack only)."""

    reserved: int
    high_water: int
    measured_with: int
    kconfig: str
    user_frames: int = 0


@dataclass(frozen=True)
class ZephyrStackSizing:
    """How ``armgen build`` sized a Zephyr project's stacks (written to ``build/stack.json``).

    Attributes:
        stacks: ``main``, ``isr``, ``idle`` -> :class:`StackFigure`. machine: the QEMU machine.
        image: the ELF that ran (project-relative). fragment: the file the sizes went to.
        zephyr_release: the project's. resized: the fragment changed (the image was rebuilt and run again).
        seconds: wall time of the measuring, resizing and checking (the run image's builds and QEMU runs).
        rebuild_seconds: of which the run image's rebuild with the new sizes (0 when ``resized`` is false; the
            product image's rebuild comes after, in the build's own time).
    """

    stacks: dict[str, StackFigure]
    machine: str
    image: str
    fragment: str
    zephyr_release: str
    resized: bool
    seconds: float
    rebuild_seconds: float = 0.0

    @property
    def reserved(self) -> int:
        """The main stack's bytes (what the bare-metal record's ``reserved`` is)."""
        return self.stacks["main"].reserved

    @property
    def high_water(self) -> int:
        """The main stack's high-water mark in bytes."""
        return self.stacks["main"].high_water

    def describe(self) -> str:
        """One line for people: every stack's size and where it comes from."""
        parts = ", ".join(f"{name} {f.reserved:,} B (high-water {f.high_water:,} B"
                          + (f" + {f.user_frames} B for your main's frames" if f.user_frames else "") + ")"
                          for name, f in self.stacks.items())
        return (f"stacks {parts}: measured on QEMU {self.machine} ({self.image}) x {STACK_MARGIN}, rounded up to "
                f"{STACK_ALIGN} B, in {self.fragment}{'' if self.resized else ' (unchanged)'}")

    def as_dict(self) -> dict[str, object]:
        """The record: the main stack's figures at the top (as bare metal's ``stack.json``), every stack under
        ``stacks``, and what the figures do not cover."""
        main = self.stacks["main"]
        return {
            "reserved": main.reserved, "high_water": main.high_water, "measured_with": main.measured_with,
            "user_frames": main.user_frames, "machine": self.machine, "image": self.image, "margin": STACK_MARGIN,
            "method": "measured", "static_bound": None, "note": NO_STATIC_BOUND, "rtos": "zephyr",
            "zephyr_release": self.zephyr_release, "fragment": self.fragment, "resized": self.resized,
            "seconds": round(self.seconds, 1), "rebuild_seconds": round(self.rebuild_seconds, 1),
            "qemu_note": QEMU_NOTE,
            "stacks": {name: {"reserved": f.reserved, "high_water": f.high_water, "measured_with": f.measured_with,
                              "kconfig": f.kconfig, "user_frames": f.user_frames} for name, f in self.stacks.items()},
        }

    def write(self, build_dir: Path) -> Path:
        """Write ``build_dir/stack.json`` and return its path."""
        path = build_dir / STACK_FILE
        path.write_text(json.dumps(self.as_dict(), indent=2, sort_keys=True) + "\n")
        return path


def measure_stacks(elf: Path, emulator: object, *, log_path: Path,
                   timeout: float = 120.0) -> dict[str, tuple[int, int]]:
    """Run the Zephyr run image ``elf`` once on QEMU and read its three stack lines.

    Returns:
        stack -> (bytes reserved, bytes used), for ``main``, ``isr`` and ``idle``.

    Raises:
        RunError: the image faulted (a stack guard included), timed out or reported an error.
        BuildError: a stack line is missing (an image built without ``stack = "auto"``'s report).
        ToolchainError: qemu-system-arm is missing.
    """
    from armgen.firmware.console_protocol import parse_firmware_output
    from armgen.firmware.faults import check_run
    from armgen.firmware.qemu import run_qemu

    run = run_qemu(elf, emulator, timeout=timeout, log_path=log_path)  # type: ignore[arg-type]
    log = parse_firmware_output(run.console)
    check_run(run, log, where=f"{elf.name} (stack measurement)")
    found = dict(log.kernel_stacks)
    if log.stack is not None:
        found["main"] = log.stack
    missing = [s for s in KCONFIG if s not in found]
    if missing:
        raise BuildError(f"{elf} printed no 'ARMGEN stack' line for the {', '.join(missing)} stack: cannot size it",
                         hint=f"QEMU log: {log_path}; `armgen update` renders the report into the run image")
    return {s: (found[s].reserved, found[s].used) for s in KCONFIG}


def size_zephyr_stacks(record: Any, build_run_image: Callable[[], Any],
                       progress: Callable[..., None]) -> ZephyrStackSizing:
    """Measure, size, write :data:`FRAGMENT` and check (the module docstring's steps 1-4).

    Args:
        record: the project's :class:`armgen.project.record.ProjectRecord`. build_run_image: builds `armgen
            run`'s image with the fragment as it is (a :class:`armgen.firmware.build.BuildResult`, its ``elf``).
        progress: ``progress(phase, done, total, detail)`` (phase ``stack``).

    Returns:
        ZephyrStackSizing (also written to ``build/stack.json``). The main stack gets
        :data:`armgen.firmware.stack.USER_FRAMES_BYTES` more once ``src/main.cpp`` is yours
        (:func:`armgen.firmware.stack.example_main_unchanged`).

    Raises:
        ProjectError: the board does not run on QEMU itself. BuildError: the rebuilt image used more than a
            stack reserves, reserves less than sized, or printed no stack line; the fragment is not armgen's.
        RunError: the image failed on QEMU with the default sizes. ToolchainError: QEMU is missing.
    """
    from armgen.firmware.stack import example_main_unchanged, stack_emulator

    emulator = stack_emulator(record.board_spec)
    root, build_dir = Path(record.root), Path(record.build_dir)
    user_frames = not example_main_unchanged(root, record.files)
    start = time.monotonic()
    had = read_fragment(root)
    if not (root / FRAGMENT).is_file():
        write_fragment(root, {})  # before the first configure: CMakeLists.txt only merges a file that exists
    progress("stack", 0, 2, "measure")
    elf = build_run_image().elf
    measure_log = build_dir / "stack-measure.log"
    try:
        first = measure_stacks(elf, emulator, log_path=measure_log)
    except RunError:
        if not had:
            raise
        # the sizes of an earlier build no longer hold (a larger model, a new main): measure with the defaults
        if measure_log.is_file():
            measure_log.replace(build_dir / "stack-measure-earlier-sizes.log")  # the evidence stays
        write_fragment(root, {})
        elf = build_run_image().elf
        first = measure_stacks(elf, emulator, log_path=measure_log)
    used = {s: first[s][1] for s in KCONFIG}
    sizes = {s: sized_stack_bytes(used[s]) + (USER_FRAMES_BYTES if user_frames and s == "main" else 0)
             for s in KCONFIG}
    resized = read_fragment(root) != sizes
    rebuild_seconds = 0.0
    if resized:
        write_fragment(root, sizes, used)
        progress("stack", 1, 2, "resize and check")
        rebuild_start = time.monotonic()
        elf = build_run_image().elf
        rebuild_seconds = time.monotonic() - rebuild_start
        final = measure_stacks(elf, emulator, log_path=build_dir / "stack-check.log")
    else:
        final = first  # measured on the sized image itself: that run is the check
    for s in KCONFIG:
        reserved, again = final[s]
        if reserved < sizes[s] or again > sizes[s]:
            raise BuildError(
                f"stack sizing: the {s} stack of the rebuilt image reserves {reserved} B and used {again} B "
                f"(sized {sizes[s]} B, {KCONFIG[s]})",
                hint=f"QEMU logs: {build_dir / 'stack-check.log'}",
            )
    stacks = {s: StackFigure(reserved=final[s][0], high_water=final[s][1], measured_with=first[s][0],
                             kconfig=KCONFIG[s], user_frames=USER_FRAMES_BYTES if user_frames and s == "main" else 0)
              for s in KCONFIG}
    try:
        image = str(elf.relative_to(root))
    except ValueError:
        image = str(elf)
    sizing = ZephyrStackSizing(stacks=stacks, machine=str(getattr(emulator, "qemu_machine", "?")), image=image,
                               fragment=FRAGMENT, zephyr_release=record.zephyr_release or "", resized=resized,
                               seconds=time.monotonic() - start, rebuild_seconds=rebuild_seconds)
    sizing.write(build_dir)
    progress("stack", 2, 2, "done")
    return sizing

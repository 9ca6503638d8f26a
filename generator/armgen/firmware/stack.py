"""The main stack sized from evidence: ``armgen.toml [memory] stack = "auto"``, a step of ``armgen build``.

A static bound needs every call edge: ``-fstack-usage`` gives each function's frame, the linked call
graph the paths. ExecuTorch's firmware never has a complete graph: ``Method::execute_instruction``
calls every kernel through an ``OpFunction`` pointer from the kernel table
(``runtime/executor/method.cpp``), ``Method::init`` calls backends through ``BackendInterface``'s
virtual ``init``/``execute``, and newlib/libgcc come without ``.su`` files. So the bound armgen can
state is the measured one, and the report says so (:data:`NO_STATIC_BOUND`):

1. the image is linked with the stack the project was generated with (8 KiB by default): the product
   image while it runs armgen's example main (:func:`example_main_unchanged`), else `armgen run`'s image
   (``build/<name>-run.elf``: armgen's harness main with the product's model library, pools, platform,
   runtime and linker script). Your own ``main.cpp`` is never run: it may wait for a sensor for ever;
2. it runs once on the board's own QEMU machine; the firmware paints its stack at reset and prints
   the high-water mark (``ARMGEN stack reserved=... used=...``, ``src/platform``; the line is
   described in :mod:`armgen.firmware.console_protocol`);
3. the stack becomes :func:`sized_stack_bytes` of that mark (x :data:`STACK_MARGIN`, rounded up to
   :data:`STACK_ALIGN`, plus :data:`USER_FRAMES_BYTES` for your main's own frames when the harness
   image was measured) through the linker symbol ``__armgen_stack_size__``, and both images are relinked;
4. the measured image runs again: the mark must repeat and fit.

The margin covers what one QEMU run does not: exception frames pushed on the main stack by interrupts
on the real board (32 B basic, 104 B with lazy FP state; Armv7-M/Armv8-M ARM, "Exception entry
behavior") and code paths a different input could take. The benchmarks apply the same rule to TFLite
Micro (``benchmarks/bench.py``), whose measured image is its own main (no allowance).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from armgen.errors import BuildError, ProjectError

#: Headroom over the measured high-water mark.
STACK_MARGIN = 1.25
#: Bytes: AAPCS keeps the stack 8-byte aligned at public interfaces.
STACK_ALIGN = 8
#: Bytes added for your main's own frames, which the measured harness image does not have: its locals and
#: what it calls around the model (the model's own frames are measured). A main with larger locals needs
#: a fixed ``[memory] stack``.
USER_FRAMES_BYTES = 512
#: Why armgen states no static bound for ExecuTorch firmware (see the module docstring).
NO_STATIC_BOUND = (
    "no static bound: ExecuTorch calls kernels through function pointers (Method::execute_instruction) "
    "and backends through virtual calls, and newlib has no -fstack-usage data"
)
#: The record armgen build leaves in ``build/`` (what ``armgen size`` and people read).
STACK_FILE = "stack.json"


def sized_stack_bytes(high_water: int, *, user_frames: bool = False) -> int:
    """The stack for a measured high-water mark: ``high_water`` x :data:`STACK_MARGIN`, rounded up to
    :data:`STACK_ALIGN`, plus :data:`USER_FRAMES_BYTES` with ``user_frames``.

    Args:
        high_water: bytes of stack the firmware used. user_frames: the mark was measured on armgen's
            harness image, not on the image that runs your main.

    Returns:
        int: bytes.

    Raises:
        ValueError: ``high_water`` is not positive.
    """
    if high_water <= 0:
        raise ValueError(f"stack high-water mark must be positive, not {high_water}")
    need = -(-high_water * int(STACK_MARGIN * 100) // 100)
    return -(-need // STACK_ALIGN) * STACK_ALIGN + (USER_FRAMES_BYTES if user_frames else 0)


@dataclass(frozen=True)
class StackSizing:
    """How ``armgen build`` sized the main stack.

    Attributes:
        reserved: bytes the image reserves. high_water: bytes the sized image used on QEMU.
        measured_with: bytes reserved during the measuring run. machine: the QEMU machine.
        image: the ELF that ran (``<name>-run.elf``: armgen's harness main). user_frames: bytes added
        for your main's frames (:data:`USER_FRAMES_BYTES`; 0 when the product image itself ran).
        margin: :data:`STACK_MARGIN`. method: ``"measured"`` (the only one for now).
        static_bound: bytes when proven (None; see ``note``). note: why there is no static bound.
    """

    reserved: int
    high_water: int
    measured_with: int
    machine: str
    image: str = ""
    user_frames: int = 0
    margin: float = STACK_MARGIN
    method: str = "measured"
    static_bound: int | None = None
    note: str = NO_STATIC_BOUND

    def describe(self) -> str:
        """One line for people: the size and where it comes from."""
        image = f" ({self.image})" if self.image else ""
        frames = f" + {self.user_frames:,} B for your main's frames" if self.user_frames else ""
        return (f"stack {self.reserved:,} B = high-water {self.high_water:,} B measured on QEMU {self.machine}{image} "
                f"x {self.margin}, rounded up to {STACK_ALIGN} B{frames} ({self.note})")

    def write(self, build_dir: Path) -> Path:
        """Write ``build_dir/stack.json`` and return its path."""
        path = build_dir / STACK_FILE
        path.write_text(json.dumps(asdict(self), indent=2, sort_keys=True) + "\n")
        return path


def measure_high_water(
    elf: Path, emulator: object, *, timeout: float = 60.0, log_path: Path | None = None
) -> tuple[int, int]:
    """Run ``elf`` once on QEMU and read the stack line the firmware prints.

    Args:
        elf: the product image. emulator: the board's :class:`armgen.boards.Emulator`.
        timeout: wall-clock seconds. log_path: where to keep QEMU's output.

    Returns:
        (bytes reserved, bytes used: the high-water mark).

    Raises:
        RunError: the image faulted, timed out or reported an error (see
            :func:`armgen.firmware.faults.check_run`). BuildError: it printed no stack line.
        ToolchainError: qemu-system-arm is missing.
    """
    from armgen.firmware.console_protocol import parse_firmware_output
    from armgen.firmware.faults import check_run
    from armgen.firmware.qemu import run_qemu

    run = run_qemu(elf, emulator, timeout=timeout, log_path=log_path)  # type: ignore[arg-type]
    log = parse_firmware_output(run.console)
    check_run(run, log, where=f"{elf.name} (stack measurement)")
    if log.stack is None:
        raise BuildError(f"{elf.name} printed no 'ARMGEN stack' line: cannot size the stack from it")
    return log.stack.reserved, log.stack.used


def example_main_unchanged(root: Path, digests: dict[str, str]) -> bool:
    """Whether the project's product image still runs armgen's example main: ``src/main.cpp`` has the
    SHA-256 the record's ``[files]`` holds for it and ``src/app/`` has no sources. Then the product image
    itself is measured (it returns, and its frames are the product's: no allowance); else `armgen run`'s
    harness image, plus :data:`USER_FRAMES_BYTES`."""
    import hashlib

    main = root / "src" / "main.cpp"
    want = digests.get("src/main.cpp")
    if not want or not main.is_file() or hashlib.sha256(main.read_bytes()).hexdigest() != want:
        return False
    app = root / "src" / "app"
    return not (app.is_dir() and any(p.suffix in (".c", ".cpp", ".S") for p in app.rglob("*")))


def size_stack(elf: Path, emulator: object, relink: Callable[[int], None], build_dir: Path, *,
               harness: bool) -> StackSizing:
    """``[memory] stack = "auto"``: run ``elf`` (built with the generated stack) on QEMU, ``relink`` the
    images with :func:`sized_stack_bytes` of its high-water mark, run it again: the mark must fit.

    Args:
        elf: the image to measure (`armgen run`'s harness image, or the product's for an older project).
        emulator: the board's :class:`armgen.boards.Emulator`. relink: rebuilds with a stack of that many
            bytes. build_dir: where the QEMU logs and ``stack.json`` go. harness: ``elf`` is the harness
            image (the size allows for your main's frames).

    Returns:
        StackSizing (also written to ``build_dir/stack.json``).

    Raises:
        BuildError: the relinked image used more stack than it reserves, or printed no stack line.
        RunError: the image failed on QEMU.
    """
    measured_with, used = measure_high_water(elf, emulator, log_path=build_dir / "stack-measure.log")
    size = sized_stack_bytes(used, user_frames=harness)
    relink(size)
    reserved, again = measure_high_water(elf, emulator, log_path=build_dir / "stack-check.log")
    if reserved != size or again > size:
        raise BuildError(
            f"stack sizing: the relinked image reserves {reserved} B and used {again} B (sized {size} B)",
            hint=f"QEMU logs: {build_dir / 'stack-check.log'}",
        )
    sizing = StackSizing(reserved=size, high_water=again, measured_with=measured_with,
                         machine=getattr(emulator, "qemu_machine", "?"), image=elf.name,
                         user_frames=USER_FRAMES_BYTES if harness else 0)
    sizing.write(build_dir)
    return sizing


def stack_emulator(board_spec: str | None) -> object:
    """The QEMU machine that runs a project's own image, for ``stack = "auto"`` (``board_spec``: the
    record's board, :attr:`armgen.project.record.ProjectRecord.board_spec`).

    Raises:
        ProjectError: the board does not run on QEMU itself (its image cannot be measured here).
        BoardError: the board cannot be loaded.
    """
    from armgen.boards import load_board

    board = load_board(board_spec or "")
    emulator = board.emulator
    if emulator is None or emulator.board != board.name:
        raise ProjectError(
            f"stack = \"auto\" needs the image to run on QEMU, and board '{board.name}' does not",
            hint="give armgen.toml [memory] stack in bytes (a QEMU board of the same CPU measures it: "
                 "armgen run on its stand-in prints the high-water mark)",
        )
    return emulator

"""The main stack sized from evidence: ``armgen.toml [memory] stack = "auto"``, a step of ``armgen build``.

A static bound needs every call edge: ``-fstack-usage`` gives each function's frame, the linked call
graph the paths. ExecuTorch's firmware never has a complete graph: ``Method::execute_instruction``
calls every kernel through an ``OpFunction`` pointer from the kernel table
(``runtime/executor/method.cpp``), ``Method::init`` calls backends through ``BackendInterface``'s
virtual ``init``/``execute``, and newlib/libgcc come without ``.su`` files. So the bound armgen can
state is the measured one, and the report says so (:data:`NO_STATIC_BOUND`):

1. the product image is linked with the stack the project was generated with (8 KiB by default);
2. it runs once on the board's own QEMU machine; the firmware paints its stack at reset and prints
   the high-water mark (``ARMGEN stack reserved=... used=...``, ``src/platform``; the line is
   described in :mod:`armgen.firmware.console_protocol`);
3. the stack becomes :func:`sized_stack_bytes` of that mark (x :data:`STACK_MARGIN`, rounded up to
   :data:`STACK_ALIGN`) through the linker symbol ``__armgen_stack_size__``, and the image is relinked;
4. it runs again: the mark must repeat and fit.

The margin covers what one QEMU run of the product does not: exception frames pushed on the main
stack by interrupts on the real board (32 B basic, 104 B with lazy FP state; Armv7-M/Armv8-M ARM,
"Exception entry behavior") and code paths a different input could take. The benchmarks apply the
same rule to TFLite Micro (``benchmarks/bench.py``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from armgen.errors import BuildError

#: Headroom over the measured high-water mark.
STACK_MARGIN = 1.25
#: Bytes: AAPCS keeps the stack 8-byte aligned at public interfaces.
STACK_ALIGN = 8
#: Why armgen states no static bound for ExecuTorch firmware (see the module docstring).
NO_STATIC_BOUND = (
    "no static bound: ExecuTorch calls kernels through function pointers (Method::execute_instruction) "
    "and backends through virtual calls, and newlib has no -fstack-usage data"
)
#: The record armgen build leaves in ``build/`` (what ``armgen size`` and people read).
STACK_FILE = "stack.json"


def sized_stack_bytes(high_water: int) -> int:
    """The stack for a measured high-water mark: ``high_water`` x :data:`STACK_MARGIN`, rounded up to
    :data:`STACK_ALIGN`.

    Args:
        high_water: bytes of stack the firmware used.

    Returns:
        int: bytes.

    Raises:
        ValueError: ``high_water`` is not positive.
    """
    if high_water <= 0:
        raise ValueError(f"stack high-water mark must be positive, not {high_water}")
    need = -(-high_water * int(STACK_MARGIN * 100) // 100)
    return -(-need // STACK_ALIGN) * STACK_ALIGN


@dataclass(frozen=True)
class StackSizing:
    """How ``armgen build`` sized the main stack.

    Attributes:
        reserved: bytes the image reserves. high_water: bytes the sized image used on QEMU.
        measured_with: bytes reserved during the measuring run. machine: the QEMU machine.
        margin: :data:`STACK_MARGIN`. method: ``"measured"`` (the only one for now).
        static_bound: bytes when proven (None; see ``note``). note: why there is no static bound.
    """

    reserved: int
    high_water: int
    measured_with: int
    machine: str
    margin: float = STACK_MARGIN
    method: str = "measured"
    static_bound: int | None = None
    note: str = NO_STATIC_BOUND

    def describe(self) -> str:
        """One line for people: the size and where it comes from."""
        return (f"stack {self.reserved:,} B = high-water {self.high_water:,} B measured on QEMU {self.machine} "
                f"x {self.margin}, rounded up to {STACK_ALIGN} B ({self.note})")

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

"""QEMU for the run stage: the one subprocess wrapper for ``qemu-system-arm`` and the machine facts
that turn its virtual time into instruction counts.

- :func:`qemu_command` / :func:`run_qemu`: run a firmware ELF on a board's QEMU stand-in
  (:class:`armgen.boards.Emulator`) with Arm semihosting and ``-icount shift=0``, hand it
  ``input.bin`` (:data:`armgen.firmware.console_protocol.INPUT_FILE`), collect what it printed
  (:class:`QemuRun`), with a wall-clock timeout and no core dumps;
- :func:`instructions_from_ticks` (SysTick rate: :attr:`armgen.boards.Emulator.systick_hz`): under
  ``-icount shift=0`` QEMU advances virtual time by exactly 1 ns per instruction, so the firmware's
  SysTick ticks (``ARMGEN ticks``) are an instruction count: ``instructions = ticks * 1e9 /
  systick_hz``. It repeats exactly from run to run; it is not a cycle count on silicon (:data:`ICOUNT_NOTE`).

What the firmware prints is read by :mod:`armgen.firmware.console_protocol`; how a run failed
(timeouts, lockups, faults) by :mod:`armgen.firmware.faults`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from armgen.boards import Emulator
from armgen.errors import RunError, ToolchainError
from armgen.firmware.console_protocol import INPUT_FILE

QEMU = "qemu-system-arm"

#: ``-icount`` shift: 2**shift ns of virtual time per instruction. 0 makes 1 instruction = 1 ns.
ICOUNT_SHIFT = 0

#: What the instruction count is, said once wherever it is printed.
ICOUNT_NOTE = (
    "instruction count from QEMU -icount shift=0 (1 instruction = 1 ns of virtual time, read with "
    "SysTick around execute()); it repeats exactly run to run but is not a cycle count on silicon"
)


@dataclass(frozen=True)
class QemuRun:
    """One finished (or stopped) QEMU process.

    Attributes:
        command: the argv that ran.
        returncode: QEMU's exit status (the firmware's semihosting exit status; negative for a
            signal, e.g. -6 when QEMU aborts on a CPU lockup); None when stopped at the timeout.
        stdout / stderr: decoded output (semihosting console and serial go to stdout).
        seconds: wall-clock time.
        timed_out: True when the wall-clock timeout stopped it.
        timeout: the timeout in seconds.
        log: path of the saved log (command, status, stdout, stderr), or None.
    """

    command: tuple[str, ...]
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool
    timeout: float
    log: str | None = None

    @property
    def console(self) -> str:
        """Everything the firmware printed: stdout, then stderr (in case a console went there)."""
        return self.stdout + ("\n" + self.stderr if self.stderr else "")


def qemu_command(elf: Path, emulator: Emulator, icount_shift: int = ICOUNT_SHIFT) -> list[str]:
    """Return the ``qemu-system-arm`` argv that runs ``elf`` on ``emulator``'s machine and CPU.

    Semihosting is on (target=native: SYS_WRITE0/SYS_OPEN/SYS_EXIT reach the host); its console and
    the first serial port share one stdio chardev, so both reach stdout (QEMU 7.2 otherwise writes
    the semihosting console to stderr) and stderr keeps QEMU's own diagnostics; no display or monitor,
    and ``-icount shift=<icount_shift>`` makes virtual
    time advance by ``2**shift`` ns per instruction so timer reads repeat exactly.
    """
    return [
        QEMU,
        "-machine", emulator.qemu_machine,
        "-cpu", emulator.qemu_cpu,
        "-display", "none",
        "-monitor", "none",
        "-chardev", "stdio,mux=on,id=con",
        "-serial", "chardev:con",
        "-semihosting-config", "enable=on,target=native,chardev=con",
        "-icount", f"shift={icount_shift}",
        "-kernel", str(Path(elf).resolve()),
    ]  # fmt: skip


def _no_core_dumps() -> None:  # pragma: no cover - runs in the child
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except Exception:  # noqa: BLE001 - best effort only
        pass


def run_qemu(
    elf: Path,
    emulator: Emulator,
    *,
    timeout: float = 60.0,
    input_bytes: bytes | None = None,
    log_path: Path | None = None,
    icount_shift: int = ICOUNT_SHIFT,
) -> QemuRun:
    """Run ``elf`` once on QEMU and collect its output; the one subprocess wrapper for QEMU.

    Args:
        elf: the firmware ELF (QEMU loads its segments at their LMAs).
        emulator: machine and CPU (:class:`armgen.boards.Emulator`).
        timeout: wall-clock seconds before QEMU is stopped (``QemuRun.timed_out``).
        input_bytes: when given, written to ``input.bin`` in QEMU's working directory (a fresh
            temporary directory) for the firmware to read through semihosting.
        log_path: when given, the command line, status, stdout and stderr are saved there.
        icount_shift: ``-icount shift`` value (0: one instruction per ns).

    Returns:
        A :class:`QemuRun`. A non-zero status or a timeout is not raised here; see :func:`check_run`.

    Raises:
        ToolchainError: ``qemu-system-arm`` is not installed.
        RunError: the ELF does not exist.
    """
    if shutil.which(QEMU) is None:
        raise ToolchainError(
            f"{QEMU} not found on PATH",
            hint="install it (Debian: sudo apt-get install qemu-system-arm)",
        )
    elf = Path(elf)
    if not elf.is_file():
        raise RunError(f"firmware ELF not found: {elf}", hint="build it first: armgen build")
    cmd = qemu_command(elf, emulator, icount_shift)
    with tempfile.TemporaryDirectory(prefix="armgen-run-") as cwd:
        if input_bytes is not None:
            Path(cwd, INPUT_FILE).write_bytes(input_bytes)
        start = time.monotonic()
        proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=_no_core_dumps if os.name == "posix" else None,
        )
        timed_out = False
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            proc.kill()
            out, err = proc.communicate()
        seconds = time.monotonic() - start
    result = QemuRun(
        command=tuple(cmd),
        returncode=None if timed_out else proc.returncode,
        stdout=out.decode("utf-8", "replace"),
        stderr=err.decode("utf-8", "replace"),
        seconds=round(seconds, 3),
        timed_out=timed_out,
        timeout=timeout,
        log=str(log_path) if log_path else None,
    )
    if log_path is not None:
        log_path = Path(log_path)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        status = "timeout" if timed_out else str(result.returncode)
        log_path.write_text(
            f"$ {' '.join(cmd)}\n# status: {status}  wall: {result.seconds} s\n"
            f"# --- stdout\n{result.stdout}# --- stderr\n{result.stderr}"
        )
    return result


def instructions_from_ticks(ticks: int, systick_hz: int | None, icount_shift: int = ICOUNT_SHIFT) -> int:
    """Convert SysTick ticks (processor clock) under ``-icount shift=s`` into instructions.

    QEMU's icount advances virtual time by ``2**s`` ns per instruction; SysTick counts at the machine's
    ``systick_hz`` (:attr:`armgen.boards.Emulator.systick_hz`, from the QEMU board file) of virtual time.
    So ``instructions = ticks * 1e9 / hz / 2**s``, e.g. 31.25 instructions per tick on mps3-an547 (32 MHz)
    and 40 on mps2-an386 (25 MHz). The result is an instruction count (to within one tick), not silicon cycles.
    Checked by tests/firmware/test_run.py, which counts a busy loop of known length on mps3-an547 and mps2-an386.

    Raises:
        RunError: the SysTick rate is unknown (None or not positive).
    """
    if not systick_hz or systick_hz <= 0:
        raise RunError(f"SysTick rate {systick_hz!r} Hz: unknown to armgen")
    return round(ticks * 1e9 / systick_hz / (2**icount_shift))

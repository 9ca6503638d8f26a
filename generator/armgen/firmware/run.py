"""The run stage: execute a built firmware ELF on QEMU and check what it prints.

Input: a built ELF, the :class:`~armgen.model.program_report.ProgramReport` of the program inside it, and
the board's :class:`~armgen.boards.Emulator` facts. Output: a frozen :class:`RunReport`.

What the stage does, in order:

1. runs ``qemu-system-arm -machine <m> -cpu <c> -icount shift=0`` with Arm semihosting (one
   subprocess wrapper, :func:`run_qemu`, with a wall-clock timeout); an input, when given, is handed
   to the firmware as the file ``input.bin`` in QEMU's working directory (semihosting
   ``SYS_OPEN``/``SYS_READ``; the firmware falls back to its embedded sample input without it);
2. parses the firmware's ``ARMGEN ...`` lines (:func:`parse_firmware_output`) and turns hard
   faults, CPU lockups, ExecuTorch error codes, timeouts and early exits into :class:`RunError`
   (:func:`check_run`);
3. dequantizes the outputs with the program's output scale/zero point and compares them with the
   reference the compile stage saved (max absolute difference, difference in output LSBs; pass
   when every output is within 1 LSB);
4. checks the outputs are not degenerate (they change when the input changes, and are not all
   saturated at the int8 limits);
5. checks every pool's reserved against used bytes and the stack high-water mark;
6. converts ``ARMGEN ticks`` (SysTick, processor clock, read around ``execute()``) into an
   instruction count: under ``-icount shift=0`` QEMU advances virtual time by exactly 1 ns per
   instruction, so ``instructions = ticks * 1e9 / systick_hz``. The count repeats exactly from run
   to run; it is not a cycle count on silicon.

Firmware protocol (agreed with render/build; one fact per line, semihosting console)::

    ARMGEN pool <name> reserved=<bytes> used=<bytes>
    ARMGEN stack reserved=<bytes> used=<bytes>
    ARMGEN output <i> <comma-separated int values, in memory (dim) order>
    ARMGEN ticks <n>
    ARMGEN error <ErrorName> <where>
    ARMGEN done
    ARMGEN input file|embedded      (optional: whether input.bin was read)

and the exit status through semihosting ``SYS_EXIT``/``SYS_EXIT_EXTENDED``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from armgen.boards import Emulator
from armgen.errors import ModelError, RunError, ToolchainError
from armgen.et_errors import ET_ERRORS
from armgen.model.program_report import ProgramReport, TensorInfo
from armgen.model.reference import (
    ARITHMETIC_WARNING,
    load_reference,
    reference_outputs,
    reference_program,
)
from armgen.model.tensors import dequantize, numpy_dtype, quantize, to_logical_order, to_memory_order

QEMU = "qemu-system-arm"

#: SysTick rate (processor clock, SYST_CSR.CLKSOURCE=1) of each QEMU machine, in Hz.
#: Source: QEMU 7.2 hw/arm/mps2.c (``sysclk_frq`` 25 MHz for an385/an386/an500) and
#: hw/arm/mps2-tz.c (an505 20 MHz; an524/an547 32 MHz). Checked by tests/test_run.py, which counts
#: a busy loop of known length on mps3-an547 and mps2-an386.
SYSTICK_HZ: dict[str, int] = {
    "mps2-an385": 25_000_000,
    "mps2-an386": 25_000_000,
    "mps2-an500": 25_000_000,
    "mps2-an505": 20_000_000,
    "mps3-an524": 32_000_000,
    "mps3-an547": 32_000_000,
    "netduinoplus2": 168_000_000,  # QEMU stm32f405_soc.c SYSCLK_FRQ; SysTick on the processor clock
}

#: ``-icount`` shift: 2**shift ns of virtual time per instruction. 0 makes 1 instruction = 1 ns.
ICOUNT_SHIFT = 0

#: What the instruction count is, said once wherever it is printed.
ICOUNT_NOTE = (
    "instruction count from QEMU -icount shift=0 (1 instruction = 1 ns of virtual time, read with "
    "SysTick around execute()); it repeats exactly run to run but is not a cycle count on silicon"
)

#: File name the firmware reads its input from, in QEMU's working directory (semihosting).
INPUT_FILE = "input.bin"


_ET_HINTS: dict[str, str] = {
    "OperatorMissing": "the firmware lacks a kernel the program calls: regenerate the project from "
    "this .pte (`armgen new`) so the selected-operator list matches the program",
    "MemoryAllocationFailed": "a memory pool is too small for the program: regenerate the project "
    "from the .pte it runs, or raise the method/temp allocator pool in armgen.toml",
    "InvalidProgram": "the embedded .pte is not one this runtime reads: recompile the model with "
    "the ExecuTorch version the workspace pins",
    "RegistrationExceedingMaxKernels": "the kernel table is too small for the registered kernels: "
    "rebuild after regenerating the project",
    "NotSupported": "a kernel rejected its arguments: the .pte may have been compiled for another "
    "CPU (CMSIS-NN scratch sizes are planned per CPU)",
    "InvalidArgument": "a kernel or the runtime rejected an argument: check the input file's shape "
    "and dtype, and that the .pte matches the CPU it runs on",
    "DelegateInvalidCompatibility": "the delegate blob does not match the backend in the firmware",
}

#: Cortex-M CFSR bits (ARMv7-M/ARMv8-M ARM, B3.2.15 / D1.2.x): bit -> name.
_CFSR_BITS: dict[int, str] = {
    0: "IACCVIOL (instruction access violation)",
    1: "DACCVIOL (data access violation)",
    3: "MUNSTKERR",
    4: "MSTKERR",
    5: "MLSPERR",
    8: "IBUSERR (instruction bus error)",
    9: "PRECISERR (precise data bus error)",
    10: "IMPRECISERR (imprecise data bus error)",
    11: "UNSTKERR",
    12: "STKERR (stacking error: stack overflow?)",
    13: "LSPERR",
    16: "UNDEFINSTR (undefined instruction)",
    17: "INVSTATE (invalid state: Thumb bit clear?)",
    18: "INVPC",
    19: "NOCP (coprocessor/FPU not enabled or absent)",
    20: "STKOF (stack limit overflow)",
    24: "UNALIGNED",
    25: "DIVBYZERO",
}

Severity = Literal["info", "warning", "error"]


# ---------------------------------------------------------------------------------------------
# QEMU wrapper
# ---------------------------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------------------------
# Parsing the firmware's lines
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PoolUse:
    """One memory pool as the firmware reports it (bytes)."""

    name: str
    reserved: int
    used: int


@dataclass(frozen=True)
class StackUse:
    """The stack as the firmware reports it: reserved bytes and the high-water mark in bytes."""

    reserved: int
    used: int


@dataclass(frozen=True)
class FirmwareError:
    """One ``ARMGEN error <name> <where>`` line."""

    name: str
    where: str


@dataclass(frozen=True)
class FirmwareLog:
    """Everything the firmware said in ``ARMGEN`` lines, in a typed form.

    Attributes:
        pools: in print order. stack: None when not printed.
        outputs: output index -> int values in memory order.
        ticks: SysTick ticks around ``execute()``, None when not printed.
        errors: error lines in print order. done: ``ARMGEN done`` was printed.
        input_source: ``"file"`` or ``"embedded"`` (the sample input) from an optional ``ARMGEN input
            <source>`` line of armgen run's variant (the firmware says whether it read ``input.bin``);
            ``"pattern"`` / ``"silence"`` from a product image (a pattern written in place, or a
            front end's empty audio buffer); None when not printed.
        features / frontend_ticks: an audio front end's int8 output and SysTick ticks around it
            (``ARMGEN features`` / ``ARMGEN frontend_ticks``), None without a front end.
        malformed: ``ARMGEN`` lines that matched no known form (reported, not fatal: the
            firmware may print more facts than this armgen knows).
    """

    pools: tuple[PoolUse, ...] = ()
    stack: StackUse | None = None
    outputs: dict[int, tuple[int, ...]] = field(default_factory=dict)
    ticks: int | None = None
    errors: tuple[FirmwareError, ...] = ()
    done: bool = False
    input_source: str | None = None
    malformed: tuple[str, ...] = ()
    features: tuple[int, ...] | None = None
    frontend_ticks: int | None = None


_FEATURES_RE = re.compile(r"^features\s+(-?\d+(?:,-?\d+)*)$")
_FRONTEND_TICKS_RE = re.compile(r"^frontend_ticks\s+(\d+)$")
_POOL_RE = re.compile(r"^pool\s+(\S+)\s+reserved=(\d+)\s+used=(\d+)$")
_STACK_RE = re.compile(r"^stack\s+reserved=(\d+)\s+used=(\d+)$")
_OUTPUT_RE = re.compile(r"^output\s+(\d+)(?:\s+(-?\d+(?:\s*,\s*-?\d+)*))?\s*$")
_TICKS_RE = re.compile(r"^ticks\s+(\d+)$")
_ERROR_RE = re.compile(r"^error\s+(\S+)\s*(.*)$")
_INPUT_RE = re.compile(r"^input\s+(file|embedded|pattern|silence)\b")


def parse_firmware_output(text: str) -> FirmwareLog:
    """Parse the ``ARMGEN ...`` lines of a firmware's console output.

    Other lines (logging, QEMU warnings) are ignored. ``ARMGEN`` may appear after other text on the
    same line (a log prefix); a line that starts with ``ARMGEN`` but matches no known form is kept
    in ``malformed``. A numeric error name (``0x21`` or ``33``) is translated to the ExecuTorch
    name (:data:`ET_ERRORS`).
    """
    pools: list[PoolUse] = []
    stack: StackUse | None = None
    outputs: dict[int, tuple[int, ...]] = {}
    ticks: int | None = None
    errors: list[FirmwareError] = []
    done = False
    input_source: str | None = None
    malformed: list[str] = []
    features: tuple[int, ...] | None = None
    frontend_ticks: int | None = None
    for raw in text.splitlines():
        pos = raw.find("ARMGEN ")
        if pos < 0:
            continue
        line = raw[pos + len("ARMGEN ") :].strip()
        if m := _POOL_RE.match(line):
            pools.append(PoolUse(m.group(1), int(m.group(2)), int(m.group(3))))
        elif m := _STACK_RE.match(line):
            stack = StackUse(int(m.group(1)), int(m.group(2)))
        elif m := _OUTPUT_RE.match(line):
            values = m.group(2)
            outputs[int(m.group(1))] = (
                tuple(int(v) for v in values.split(",")) if values else ()
            )
        elif m := _TICKS_RE.match(line):
            ticks = int(m.group(1))
        elif m := _ERROR_RE.match(line):
            errors.append(FirmwareError(_error_name(m.group(1)), m.group(2).strip()))
        elif line == "done":
            done = True
        elif m := _INPUT_RE.match(line):
            input_source = m.group(1)
        elif m := _FEATURES_RE.match(line):
            features = tuple(int(v) for v in m.group(1).split(","))
        elif m := _FRONTEND_TICKS_RE.match(line):
            frontend_ticks = int(m.group(1))
        else:
            malformed.append(raw.strip())
    return FirmwareLog(
        pools=tuple(pools),
        stack=stack,
        outputs=outputs,
        ticks=ticks,
        errors=tuple(errors),
        done=done,
        input_source=input_source,
        malformed=tuple(malformed),
        features=features,
        frontend_ticks=frontend_ticks,
    )


def _error_name(token: str) -> str:
    try:
        code = int(token, 0)
    except ValueError:
        return token
    return ET_ERRORS.get(code, f"Error{code:#04x}")


def decode_cfsr(cfsr: int) -> list[str]:
    """Names of the set fault-status bits of a Cortex-M CFSR value (MMFSR/BFSR/UFSR)."""
    return [name for bit, name in _CFSR_BITS.items() if cfsr & (1 << bit)]


_LOCKUP_RE = re.compile(r"Lockup[^\n]*")
_PC_RE = re.compile(r"R15=([0-9a-fA-F]{8})")


def check_run(run: QemuRun, log: FirmwareLog, where: str = "") -> None:
    """Raise :class:`RunError` when a run did not end with ``ARMGEN done`` and status 0.

    Decodes, in order: a wall-clock timeout; QEMU failing to start; a CPU lockup (QEMU aborts with
    ``Lockup: can't escalate ... to HardFault``: a fault with no usable HardFault handler); an
    ``ARMGEN error HardFault ...`` line (CFSR bits named when ``cfsr=0x...`` is printed); an
    ExecuTorch error line (its name, where it happened and a hint); a non-zero exit status; a
    missing ``ARMGEN done``.

    Args:
        run: the QEMU process result. log: its parsed lines. where: a label for messages
            (e.g. ``"run 2 of 3"``), may be empty.

    Raises:
        RunError: with one line naming the failure, a hint, exit code 2.
    """
    tag = f" ({where})" if where else ""
    logref = f"; QEMU log: {run.log}" if run.log else ""
    if run.timed_out:
        last = [ln for ln in run.stdout.splitlines() if ln.strip()]
        tail = f"; last line: {last[-1].strip()!r}" if last else "; it printed nothing"
        raise RunError(
            f"timeout: firmware did not finish within {run.timeout:g} s on QEMU{tag}{tail}",
            hint="raise --timeout if the model is large; otherwise the firmware hangs "
            f"(a fault handler that spins, or a wait on a peripheral QEMU lacks){logref}",
        )
    stderr = run.stderr.strip()
    if run.returncode and run.returncode > 0 and not run.stdout and stderr.startswith(QEMU):
        raise RunError(
            f"QEMU could not start{tag}: {stderr.splitlines()[0]}",
            hint=f"command: {' '.join(run.command)}; `{QEMU} -machine help` and `-cpu help` list "
            "what this QEMU knows" + logref,
        )
    if lock := _LOCKUP_RE.search(run.stderr):
        pc = _PC_RE.search(run.stderr)
        at = f" at pc=0x{pc.group(1).lower()}" if pc else ""
        raise RunError(
            f"HardFault: the CPU locked up{tag}{at} ({lock.group(0).strip()}); the firmware has no "
            "usable HardFault handler",
            hint="run with `armgen -v run` to see QEMU's register dump" + logref,
        )
    for err in log.errors:
        if err.name in ("HardFault", "MemManage", "BusFault", "UsageFault", "SecureFault"):
            detail = err.where
            m = re.search(r"cfsr=(0x[0-9a-fA-F]+|\d+)", err.where)
            bits = decode_cfsr(int(m.group(1), 0)) if m else []
            if bits:
                detail += " [" + ", ".join(bits) + "]"
            raise RunError(
                f"HardFault: firmware faulted{tag}: {err.name} {detail}".rstrip(),
                hint="look up the pc in the map file (build/<name>.map) or with "
                "arm-none-eabi-addr2line -e <elf> <pc>" + logref,
            )
    if log.errors:
        err = log.errors[0]
        code = next((hex(c) for c, n in ET_ERRORS.items() if n == err.name), None)
        codetxt = f" ({code})" if code else ""
        at = f" in {err.where}" if err.where else ""
        raise RunError(
            f"ExecuTorch error {err.name}{codetxt}{at}{tag}",
            hint=_ET_HINTS.get(err.name, "see ExecuTorch runtime/core/error.h") + logref,
        )
    if run.returncode != 0:
        if run.returncode is not None and run.returncode < 0:
            what = f"QEMU was killed by signal {-run.returncode}"
        else:
            what = f"firmware exited with status {run.returncode}"
        first = stderr.splitlines()[0] if stderr else ""
        raise RunError(
            f"{what}{tag} without an ARMGEN error line" + (f": {first}" if first else ""),
            hint=logref[2:] or None,
        )
    if not log.done:
        raise RunError(
            f"firmware exited before printing `ARMGEN done`{tag}",
            hint="the firmware stopped early or its console output was lost" + logref,
        )


# ---------------------------------------------------------------------------------------------
# Instruction counts
# ---------------------------------------------------------------------------------------------
def instructions_from_ticks(ticks: int, machine: str, icount_shift: int = ICOUNT_SHIFT) -> int:
    """Convert SysTick ticks (processor clock) under ``-icount shift=s`` into instructions.

    QEMU's icount advances virtual time by ``2**s`` ns per instruction; SysTick counts at
    :data:`SYSTICK_HZ` of virtual time. So ``instructions = ticks * 1e9 / hz / 2**s``, e.g.
    31.25 instructions per tick on mps3-an547 (32 MHz) and 40 on mps2-an386 (25 MHz). The result
    is an instruction count (to within one tick), not silicon cycles.

    Raises:
        RunError: the machine's SysTick rate is unknown.
    """
    hz = SYSTICK_HZ.get(machine)
    if hz is None:
        raise RunError(f"SysTick rate of QEMU machine {machine!r} is unknown to armgen")
    return round(ticks * 1e9 / hz / (2**icount_shift))


# ---------------------------------------------------------------------------------------------
# Inputs and outputs
# ---------------------------------------------------------------------------------------------
def _np_dtype(info: TensorInfo) -> Any:
    try:
        return numpy_dtype(info.dtype)
    except KeyError:
        raise RunError(f"program {info.dtype} I/O is not supported by armgen run") from None


def quantize_input(value: np.ndarray, info: TensorInfo) -> np.ndarray:
    """Turn one user/reference input array into the program's input dtype and shape.

    Float arrays are quantized with the input's scale/zero point (round half to even, clamped to
    the dtype's range, as ``torch.quantize_per_tensor`` does); integer arrays of the input dtype
    are taken as they are.

    Args:
        value: array of ``info.shape`` (float32/float64 or the input's integer dtype).
        info: the program input.

    Returns:
        Array of ``info.shape`` and the input's dtype, logical (contiguous NCHW) order.

    Raises:
        RunError: shape or dtype does not fit.
    """
    value = np.asarray(value)
    if tuple(value.shape) != tuple(info.shape):
        raise RunError(
            f"input {info.index} has shape {tuple(value.shape)}, the program wants {tuple(info.shape)}"
        )
    dtype = _np_dtype(info)
    if np.issubdtype(value.dtype, np.floating) and np.issubdtype(dtype, np.integer):
        if info.scale is None or info.zero_point is None:
            raise RunError(f"input {info.index} is {info.dtype} without quantization parameters")
        return quantize(value, info.scale, info.zero_point, dtype)
    if np.issubdtype(dtype, np.integer) and value.dtype != dtype:
        raise RunError(f"input {info.index} is {value.dtype}, the program wants {info.dtype} (or float)")
    return value.astype(dtype)


def input_bytes(arrays: Sequence[np.ndarray], infos: Sequence[TensorInfo]) -> bytes:
    """Serialize program inputs for ``input.bin``: each input in its dim order, concatenated.

    Each array (logical shape, program dtype) is permuted to the tensor's ``dim_order`` (e.g.
    ``(0, 2, 3, 1)`` for channels_last) and written little-endian, inputs in index order.
    """
    parts = []
    for arr, info in zip(arrays, infos, strict=True):
        arr = to_memory_order(arr, info.dim_order)
        parts.append(arr.astype(arr.dtype.newbyteorder("<")).tobytes())
    return b"".join(parts)


def output_array(values: Sequence[int], info: TensorInfo) -> np.ndarray:
    """Turn one ``ARMGEN output`` line's values (memory order) into an array of ``info.shape``.

    Integer outputs are printed as their values; float32 outputs as their IEEE-754 bit patterns
    (signed 32-bit integers), which are turned back into float32 here.

    Returns:
        int64 array (integer outputs) or float32 array (float32 outputs), logical order.

    Raises:
        RunError: the count does not match the output's shape.
    """
    n = int(np.prod(info.shape)) if info.shape else 1
    if len(values) != n:
        raise RunError(f"firmware printed {len(values)} values for output {info.index}, expected {n}")
    if info.dtype == "float32":
        flat = np.asarray([v & 0xFFFFFFFF for v in values], dtype=np.uint32).view(np.float32)
    else:
        flat = np.asarray(values, dtype=np.int64)
    return to_logical_order(flat, info.shape, info.dim_order)


def alternate_inputs(infos: Sequence[TensorInfo], seed: int = 7) -> list[np.ndarray]:
    """A second deterministic input (seeded uniform over each input dtype's range).

    Used to check the outputs change with the input (a firmware that ignores its input, or a
    model that returns a constant, proves nothing).
    """
    rng = np.random.default_rng(seed)
    arrays = []
    for info in infos:
        dtype = _np_dtype(info)
        if np.issubdtype(dtype, np.integer):
            lim = np.iinfo(dtype)
            arrays.append(rng.integers(lim.min, lim.max, size=info.shape, endpoint=True).astype(dtype))
        else:
            arrays.append(rng.standard_normal(info.shape).astype(dtype))
    return arrays


def load_input_file(path: Path, infos: Sequence[TensorInfo]) -> list[np.ndarray]:
    """Read program inputs from ``.npy``, ``.npz`` or ``.pt`` (logical shapes, float or int).

    - ``.npy``: one array (a program with one input).
    - ``.npz``: ``input_<i>`` arrays (as in the compile stage's reference), else ``arr_<i>``.
    - ``.pt``: ``torch.save`` of a tensor, or a tuple/list of tensors, or a dict with ``input_<i>``
      keys (loaded with ``weights_only=True``).

    A missing leading batch dimension of 1 is added. Float arrays are quantized later with the
    input's scale/zero point (:func:`quantize_input`).

    Raises:
        RunError: unknown suffix, unreadable file, wrong number of inputs.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    try:
        if suffix == ".npy":
            arrays = [np.load(path, allow_pickle=False)]
        elif suffix == ".npz":
            with np.load(path, allow_pickle=False) as npz:
                keys = [f"input_{t.index}" for t in infos]
                if not all(k in npz for k in keys):
                    keys = [f"arr_{i}" for i in range(len(infos))]
                missing = [k for k in keys if k not in npz]
                if missing:
                    raise RunError(f"{path}: no array {missing[0]} (expected input_<i> or arr_<i>)")
                arrays = [np.asarray(npz[k]) for k in keys]
        elif suffix == ".pt":
            import torch

            obj = torch.load(path, map_location="cpu", weights_only=True)
            items: list[Any]
            if isinstance(obj, torch.Tensor):
                items = [obj]
            elif isinstance(obj, (list, tuple)):
                items = list(obj)
            elif isinstance(obj, dict):
                items = [obj.get(f"input_{t.index}") for t in infos]
                if any(v is None for v in items):
                    raise RunError(f"{path}: a dict input needs keys input_0..input_{len(infos) - 1}")
            else:
                raise RunError(f"{path}: holds a {type(obj).__name__}, expected a tensor or a tuple of tensors")
            arrays = [
                np.asarray(t.detach().cpu().numpy()) if isinstance(t, torch.Tensor) else np.asarray(t) for t in items
            ]
        else:
            raise RunError(f"{path}: unknown input format {suffix or '(none)'}", hint="give a .npy, .npz or .pt file")
    except RunError:
        raise
    except Exception as exc:  # noqa: BLE001 - unreadable file: one line
        raise RunError(f"cannot read input {path}: {type(exc).__name__}: {exc}") from None
    if len(arrays) != len(infos):
        raise RunError(f"{path} holds {len(arrays)} inputs, the program takes {len(infos)}")
    out = []
    for arr, info in zip(arrays, infos, strict=False):
        if arr.ndim == len(info.shape) - 1 and info.shape and info.shape[0] == 1:
            arr = arr[None, ...]
        out.append(arr)
    return out


# ---------------------------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Finding:
    """Something a reader should know about a run.

    Attributes:
        severity: ``"info"``, ``"warning"`` (e.g. a wasted byte in a planned pool) or ``"error"``
            (an overflow, a mismatch the run cannot pass with).
        subject: what it is about (``"pool planned_1"``, ``"stack"``, ``"output 0"``, ``"ticks"``).
        message: one line.
    """

    severity: Severity
    subject: str
    message: str


@dataclass(frozen=True)
class OutputCheck:
    """One program output of the main run, compared with the reference.

    Attributes:
        index: output index. shape: logical shape.
        values: firmware values (int, logical row-major order).
        dequantized: ``(values - zero_point) * scale``.
        reference: reference values as floats (dequantized when the reference is quantized),
            None when no reference was available.
        max_abs_diff: max ``|dequantized - reference|`` (output units), None without reference.
        max_lsb_diff: the same in output LSBs (``/ scale``), None without reference or for float
            outputs (compared with :data:`FLOAT_RTOL`/:data:`FLOAT_ATOL` instead).
        saturated: every value sits at the int8 limits (-128 or 127).
    """

    index: int
    shape: tuple[int, ...]
    values: tuple[int, ...]
    dequantized: tuple[float, ...]
    reference: tuple[float, ...] | None
    max_abs_diff: float | None
    max_lsb_diff: float | None
    saturated: bool


@dataclass(frozen=True)
class RunReport:
    """What one ``armgen run`` found (the run stage's output).

    Attributes:
        elf: the ELF that ran. board: the armgen board it was built for. machine / qemu_cpu: QEMU
            ``-machine``/``-cpu``. cpu_note: e.g. "Cortex-M85 runs as Cortex-M55 on an547".
        program: program name. input_source: where the input came from.
        runs: number of QEMU runs with the main input (``--repeat``).
        outputs: per-output comparison (main input).
        reference_source: the reference file or program, None when there was none (the
            reference's kind is in a "reference" warning when it is not the lowered program).
        alternate_checked: a second, different input was run and its outputs compared.
        pools / stack: the firmware's own figures (bytes).
        ticks: SysTick ticks around ``execute()`` (first run); ticks_per_run: all runs.
        systick_hz: SysTick rate of the machine (Hz).
        instructions: ``ticks * 1e9 / systick_hz`` under ``-icount shift=0`` (instructions,
            not silicon cycles; see ``icount_note``).
        seconds: wall-clock seconds of all QEMU runs.
        findings: pool/stack/output/determinism facts, each with a severity.
        passed: every output within 1 LSB of the reference, outputs not degenerate, counts repeat,
            no error finding.
        logs: paths of the saved QEMU logs.
        firmware: ``baremetal`` or ``zephyr``: what kind of image ran. zephyr_board: its Zephyr board
            target (Zephyr images), e.g. ``mps3/an547``.
    """

    elf: str
    board: str
    machine: str
    qemu_cpu: str
    cpu_note: str | None
    program: str
    input_source: str
    runs: int
    outputs: tuple[OutputCheck, ...]
    reference_source: str | None
    alternate_checked: bool
    pools: tuple[PoolUse, ...]
    stack: StackUse | None
    ticks: int | None
    ticks_per_run: tuple[int | None, ...]
    systick_hz: int | None
    instructions: int | None
    seconds: float
    findings: tuple[Finding, ...]
    passed: bool
    logs: tuple[str, ...] = ()
    firmware: str = "baremetal"
    zephyr_board: str | None = None
    icount_note: str = ICOUNT_NOTE

    @property
    def max_abs_diff(self) -> float | None:
        """Largest absolute difference over all outputs (output units), None without reference."""
        diffs = [o.max_abs_diff for o in self.outputs if o.max_abs_diff is not None]
        return max(diffs) if diffs else None

    @property
    def max_lsb_diff(self) -> float | None:
        """Largest difference over all outputs in output LSBs, None without reference."""
        diffs = [o.max_lsb_diff for o in self.outputs if o.max_lsb_diff is not None]
        return max(diffs) if diffs else None

    @property
    def errors(self) -> tuple[Finding, ...]:
        """Findings of severity ``"error"``."""
        return tuple(f for f in self.findings if f.severity == "error")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (with ``max_abs_diff``/``max_lsb_diff`` added)."""
        data = asdict(self)
        data["max_abs_diff"] = self.max_abs_diff
        data["max_lsb_diff"] = self.max_lsb_diff
        return data


#: Quantized outputs may differ from the reference by this many LSBs and still pass.
LSB_TOLERANCE = 1.0
#: Float (unquantized) outputs have no LSB: they pass when ``np.allclose`` with these tolerances.
FLOAT_RTOL = 1e-5
FLOAT_ATOL = 1e-6


def compare_outputs(
    fw: Sequence[np.ndarray], ref: Sequence[np.ndarray] | None, infos: Sequence[TensorInfo]
) -> tuple[list[OutputCheck], list[Finding]]:
    """Each firmware output against its reference, in the output's own units and in LSBs.

    Args:
        fw: the outputs the firmware printed (stored dtype, in ``infos`` order).
        ref: reference outputs indexed by ``TensorInfo.index`` (quantized integers or floats); None
            when there is no reference (the checks then only carry the firmware's values).
        infos: the program's outputs (dtype, scale, zero point).

    Returns:
        (one :class:`OutputCheck` per output; findings: an output beyond :data:`LSB_TOLERANCE`,
        or saturated everywhere, is an error).

    Raises:
        RunError: a reference output has another number of values than the firmware printed.
    """
    checks: list[OutputCheck] = []
    findings: list[Finding] = []
    for q, info in zip(fw, infos, strict=True):
        deq = dequantize(q, info.scale, info.zero_point)
        lim = np.iinfo(_np_dtype(info)) if np.issubdtype(_np_dtype(info), np.integer) else None
        saturated = bool(lim is not None and q.size and np.all((q == lim.min) | (q == lim.max)))
        ref_f = abs_d = lsb_d = None
        if ref is not None:
            r = np.asarray(ref[info.index])
            if r.size != q.size:
                raise RunError(
                    f"reference output {info.index} has {r.size} values, the firmware printed {q.size}"
                )
            r = r.reshape(q.shape)
            integer = np.issubdtype(r.dtype, np.integer)
            r_f = dequantize(r, info.scale, info.zero_point) if integer else r.astype(np.float64)
            diff = np.abs(deq - r_f)
            abs_d = float(diff.max()) if diff.size else 0.0
            ref_f = tuple(float(v) for v in r_f.reshape(-1))
            if info.scale:
                # A float32 reference on the output grid is a whole number of LSBs off up to its
                # own rounding (~1e-5 LSB): snap to the integer then, so 1 LSB reads 1, not 1.00001.
                raw = abs_d / info.scale
                lsb_d = float(round(raw)) if abs(raw - round(raw)) < 1e-3 else round(raw, 6)
                if lsb_d > LSB_TOLERANCE + 1e-6:
                    findings.append(
                        Finding("error", f"output {info.index}",
                                f"differs from the reference by {lsb_d:g} LSB (max |diff| {abs_d:.6g}); "
                                f"allowed {LSB_TOLERANCE:g} LSB")
                    )  # fmt: skip
            elif not np.allclose(deq, r_f, rtol=FLOAT_RTOL, atol=FLOAT_ATOL):
                findings.append(
                    Finding("error", f"output {info.index}",
                            f"float output differs from the reference by up to {abs_d:.6g} "
                            f"(allowed rtol {FLOAT_RTOL:g}, atol {FLOAT_ATOL:g})")
                )  # fmt: skip
        if saturated:
            findings.append(
                Finding("error", f"output {info.index}",
                        "every value is saturated at the int8 limits (-128/127): degenerate output")
            )  # fmt: skip
        checks.append(
            OutputCheck(
                index=info.index,
                shape=tuple(info.shape),
                values=tuple(int(v) for v in q.reshape(-1)),
                dequantized=tuple(float(v) for v in deq.reshape(-1)),
                reference=ref_f,
                max_abs_diff=abs_d,
                max_lsb_diff=lsb_d,
                saturated=saturated,
            )
        )
    return checks, findings


def check_pools(
    pools: Sequence[PoolUse], stack: StackUse | None, report: ProgramReport
) -> list[Finding]:
    """Compare every pool's reservation with its use, and the stack with its high-water mark.

    Rules (bytes):

    - ``planned_<i>``: reserved must equal the plan (``report.planned_buffers[i-1]``) and used must
      equal reserved (the firmware reads used from ``MethodMeta::memory_planned_buffer_size``);
      used < reserved is a warning (wasted bytes), used > reserved an error.
    - ``method``/``temp`` and any other pool: the reservation is the documented upper bound
      (armgen.project.spec); used above it is an error (overflow), below it an info finding with the
      headroom (the allocators' use is not in the ``.pte``, so the bound is not exact).
    - a planned buffer of the program with no ``planned_<i>`` line is an error.
    - stack: used above reserved is an error; otherwise an info finding with the headroom.
    """
    findings: list[Finding] = []
    seen: set[int] = set()
    for p in pools:
        subject = f"pool {p.name}"
        m = re.fullmatch(r"planned_(\d+)", p.name)
        if p.used > p.reserved:
            findings.append(
                Finding("error", subject, f"overflow: used {p.used} B > reserved {p.reserved} B "
                        f"(by {p.used - p.reserved} B)")
            )  # fmt: skip
            continue
        if m:
            i = int(m.group(1))
            seen.add(i)
            planned = report.planned_buffers[i - 1] if 1 <= i <= len(report.planned_buffers) else None
            if planned is None:
                findings.append(Finding("error", subject, "the program has no planned buffer with this memory id"))
            elif p.reserved != planned:
                findings.append(
                    Finding("error", subject,
                            f"reserved {p.reserved} B but the memory plan says {planned} B")
                )  # fmt: skip
            if p.used < p.reserved:
                findings.append(
                    Finding("warning", subject,
                            f"used {p.used} B of {p.reserved} B reserved: {p.reserved - p.used} B wasted")
                )  # fmt: skip
        elif p.used < p.reserved:
            findings.append(
                Finding("info", subject,
                        f"used {p.used} B of {p.reserved} B reserved (within the bound; "
                        f"{p.reserved - p.used} B headroom)")
            )  # fmt: skip
    for i in range(1, len(report.planned_buffers) + 1):
        if i not in seen and report.planned_buffers[i - 1] > 0:
            findings.append(Finding("error", f"pool planned_{i}", "the firmware reported no such pool"))
    if stack is not None:
        if stack.used > stack.reserved:
            findings.append(
                Finding("error", "stack", f"overflow: high-water {stack.used} B > reserved {stack.reserved} B")
            )
        elif stack.used >= stack.reserved:
            findings.append(
                Finding("error", "stack",
                        f"high-water mark reached the whole {stack.reserved} B: it may have overflowed")
            )  # fmt: skip
        else:
            findings.append(
                Finding("info", "stack",
                        f"high-water {stack.used} B of {stack.reserved} B ({stack.reserved - stack.used} B headroom)")
            )  # fmt: skip
    return findings


def _one_run(
    elf: Path,
    emulator: Emulator,
    report: ProgramReport,
    data: bytes | None,
    timeout: float,
    log_path: Path | None,
    label: str,
) -> tuple[QemuRun, FirmwareLog, list[np.ndarray]]:
    qrun = run_qemu(elf, emulator, timeout=timeout, input_bytes=data, log_path=log_path)
    log = parse_firmware_output(qrun.console)
    check_run(qrun, log, label)
    outs = []
    for info in report.outputs:
        if info.index not in log.outputs:
            raise RunError(f"firmware printed no `ARMGEN output {info.index}` line ({label})")
        outs.append(output_array(log.outputs[info.index], info))
    return qrun, log, outs


@dataclass
class _QemuRuns:
    """Runs one firmware repeatedly, keeping the wall time and the QEMU logs of every run."""

    elf: Path
    emulator: Emulator
    report: ProgramReport
    timeout: float
    log_dir: Path | None
    seconds: float = 0.0
    logs: list[str] = field(default_factory=list)

    def run(self, data: bytes | None, log_name: str, label: str) -> tuple[FirmwareLog, list[np.ndarray]]:
        log_path = Path(self.log_dir) / log_name if self.log_dir else None
        qrun, log, outs = _one_run(self.elf, self.emulator, self.report, data, self.timeout, log_path, label)
        self.seconds += qrun.seconds
        if qrun.log:
            self.logs.append(qrun.log)
        return log, outs


def _run_input(
    report: ProgramReport, report_dir: Path, inputs: Sequence[np.ndarray] | None, input_source: str | None,
    findings: list[Finding],
) -> tuple[bytes | None, str, Sequence[np.ndarray] | None, str | None]:
    """What the firmware is given and what it is compared with: (input.bin bytes or None, a label for
    the input, reference outputs or None, where the reference came from).

    Raises:
        RunError: the given inputs do not fit the program, or the reference cannot be read.
    """
    reference = load_reference(report, report_dir)
    if inputs is not None:
        if len(inputs) != len(report.inputs):
            raise RunError(f"{len(inputs)} inputs given, the program takes {len(report.inputs)}")
        q_inputs = [quantize_input(a, t) for a, t in zip(inputs, report.inputs, strict=True)]
        ref_outputs: Sequence[np.ndarray] | None = None
        ref_source = None
        try:
            ref_outputs = reference_outputs(report, report_dir, q_inputs)
            ref_path, ref_kind = reference_program(report, report_dir)
            ref_source = str(ref_path)
            if ref_kind != "lowered_cortex_m":
                findings.append(Finding("warning", "reference", ARITHMETIC_WARNING.format(tol=LSB_TOLERANCE)))
        except ModelError as exc:
            findings.append(Finding("warning", "reference", f"no reference for this input: {exc.message}"))
        return input_bytes(q_inputs, report.inputs), input_source or "given input", ref_outputs, ref_source
    if reference is not None:
        q_inputs = [quantize_input(a, t) for a, t in zip(reference.inputs, report.inputs, strict=True)]
        if reference.kind != "lowered_cortex_m":
            findings.append(Finding("warning", "reference", ARITHMETIC_WARNING.format(tol=LSB_TOLERANCE)))
        return (input_bytes(q_inputs, report.inputs), "sample input (reference .npz)", reference.outputs,
                reference.source)
    findings.append(Finding("warning", "reference", "the program report names no reference: outputs not compared"))
    return None, "firmware's embedded sample input", None, None


def _repeated_runs(
    runs: _QemuRuns, data: bytes | None, repeat: int, input_given: bool, source: str, findings: list[Finding]
) -> tuple[FirmwareLog, list[np.ndarray], list[int | None], str]:
    """``repeat`` runs with the same input: the first run's log and outputs, every run's ticks, and the
    input label (the firmware may say it ran its embedded input). Differing outputs are an error finding.

    Raises:
        RunError: as :func:`_one_run`; or a given input the firmware ignored.
    """
    ticks_per_run: list[int | None] = []
    first: tuple[FirmwareLog, list[np.ndarray]] | None = None
    for n in range(repeat):
        label = f"run {n + 1} of {repeat}" if repeat > 1 else ""
        log, outs = runs.run(data, f"qemu-{n + 1}.log", label)
        ticks_per_run.append(log.ticks)
        if first is None:
            first = (log, outs)
            if log.input_source == "embedded" and input_given:
                raise RunError(
                    "the firmware ignored input.bin and ran its embedded sample input",
                    hint="regenerate the project with this armgen (`armgen new --force`) so its "
                    "firmware reads input.bin through semihosting",
                )
            if log.input_source == "embedded":
                source = "firmware's embedded sample input (the reference's input)"
        elif any(not np.array_equal(a, b) for a, b in zip(first[1], outs, strict=False)):
            findings.append(
                Finding("error", "outputs", f"outputs of run {n + 1} differ from run 1 with the same input")
            )
    assert first is not None
    return first[0], first[1], ticks_per_run, source


def _second_input_checked(
    runs: _QemuRuns, report: ProgramReport, report_dir: Path, outs: list[np.ndarray], findings: list[Finding]
) -> bool:
    """Run a second, seeded input: its outputs must differ from the first input's (else the model is
    degenerate or the firmware ignores input.bin) and, where a reference can be computed, match it.

    Returns:
        True when the firmware read the second input.
    """
    alt = alternate_inputs(report.inputs)
    alt_log, alt_outs = runs.run(input_bytes(alt, report.inputs), "qemu-alternate.log", "second input")
    alternate_checked = alt_log.input_source != "embedded"
    if not alternate_checked:
        findings.append(
            Finding("warning", "second input",
                    "the firmware does not read input.bin (it printed `ARMGEN input embedded`): "
                    "outputs were not checked against a second input")
        )  # fmt: skip
    elif all(np.array_equal(a, b) for a, b in zip(outs, alt_outs, strict=False)):
        findings.append(
            Finding("error", "outputs",
                    "outputs are identical for two different inputs: degenerate model, or the "
                    "firmware does not read input.bin")
        )  # fmt: skip
    try:
        if not alternate_checked:
            raise RunError("the firmware did not run it")
        alt_ref = reference_outputs(report, report_dir, alt)
    except (RunError, ModelError) as exc:
        findings.append(Finding("info", "second input", f"not compared with a reference: {exc.message}"))
    else:
        _, alt_findings = compare_outputs(alt_outs, alt_ref, report.outputs)
        for f in alt_findings:
            if "reference" in f.message:
                findings.append(Finding(f.severity, f"{f.subject} (second input)", f.message))
    return alternate_checked


def _log_findings(log: FirmwareLog, ticks_per_run: list[int | None], report: ProgramReport) -> list[Finding]:
    """Ticks missing or not repeating, pool and stack use, and console lines this armgen does not read."""
    findings: list[Finding] = []
    if log.ticks is None:
        findings.append(Finding("warning", "ticks", "the firmware printed no `ARMGEN ticks` line"))
    elif len(set(ticks_per_run)) > 1:
        findings.append(
            Finding("error", "ticks", "instruction count differs between runs: "
                    + ", ".join(str(t) for t in ticks_per_run))
        )  # fmt: skip
    findings.extend(check_pools(log.pools, log.stack, report))
    for line in log.malformed:
        findings.append(Finding("warning", "console", f"line not understood by this armgen: {line!r}"))
    return findings


def run_firmware(
    elf: Path, report: ProgramReport, emulator: Emulator, *, report_dir: Path,
    inputs: Sequence[np.ndarray] | None = None, input_source: str | None = None, timeout: float = 60.0,
    repeat: int = 2, check_alternate: bool = True, log_dir: Path | None = None, firmware: str = "baremetal",
    zephyr_board: str | None = None,
) -> RunReport:
    """Run a built firmware on QEMU and check it against the program report and its reference.

    Args:
        elf: the built firmware ELF (for the emulator's machine memory map).
        report: the program report of the ``.pte`` inside the firmware.
        emulator: QEMU machine/CPU and the stand-in note (:class:`armgen.boards.Emulator`).
        report_dir: directory ``report.files`` paths are relative to.
        inputs: program inputs (logical shapes; float arrays are quantized with the input scale/zero
            point). None: the sample's deterministic input from the reference ``.npz``; without a
            reference, the firmware's embedded input.
        input_source: label for the report (e.g. the input file's path).
        timeout: wall-clock seconds per QEMU run.
        repeat: runs with the main input (>= 1); the instruction count must repeat exactly.
        check_alternate: also run a second, different input and require different outputs (and,
            when a quantized program was saved, agreement with it within 1 LSB).
        log_dir: where to save one QEMU log per run (``qemu-<n>.log``); None keeps none.
        firmware: what the ELF is, ``baremetal`` or ``zephyr`` (for the report).
        zephyr_board: the Zephyr board target the image was built for (Zephyr images).

    Returns:
        A :class:`RunReport`. Mismatches, degenerate outputs and pool overflows are findings of
        severity "error" (``passed`` False); they do not raise.

    Raises:
        RunError: a hard fault, a CPU lockup, an ExecuTorch error, a timeout, an early exit, a bad
            input, or an unreadable reference.
        ToolchainError: qemu-system-arm is missing.
    """
    repeat = max(1, int(repeat))
    findings: list[Finding] = []
    data, source, ref_outputs, ref_source = _run_input(report, report_dir, inputs, input_source, findings)
    runs = _QemuRuns(elf, emulator, report, timeout, log_dir)
    log, outs, ticks_per_run, source = _repeated_runs(runs, data, repeat, inputs is not None, source, findings)
    checks, out_findings = compare_outputs(outs, ref_outputs, report.outputs)
    findings.extend(out_findings)
    alternate_checked = False
    if check_alternate and data is not None and report.inputs:
        alternate_checked = _second_input_checked(runs, report, report_dir, outs, findings)
    findings.extend(_log_findings(log, ticks_per_run, report))
    hz = SYSTICK_HZ.get(emulator.qemu_machine)
    return RunReport(
        elf=str(elf),
        board=emulator.board,
        machine=emulator.qemu_machine,
        qemu_cpu=emulator.qemu_cpu,
        cpu_note=emulator.note,
        program=report.name,
        input_source=source,
        runs=repeat,
        outputs=tuple(checks),
        reference_source=ref_source,
        alternate_checked=alternate_checked,
        pools=log.pools,
        stack=log.stack,
        ticks=log.ticks,
        ticks_per_run=tuple(ticks_per_run),
        systick_hz=hz,
        instructions=instructions_from_ticks(log.ticks, emulator.qemu_machine) if (log.ticks is not None and hz)
        else None,
        seconds=round(runs.seconds, 3),
        findings=tuple(findings),
        passed=not any(f.severity == "error" for f in findings) and ref_outputs is not None,
        logs=tuple(runs.logs),
        firmware=firmware,
        zephyr_board=zephyr_board,
    )

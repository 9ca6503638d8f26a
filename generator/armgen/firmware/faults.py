"""How a firmware run failed: a finished QEMU run and its ``ARMGEN`` lines turned into one
:class:`~armgen.errors.RunError` (:func:`check_run`).

Decoded here: wall-clock timeouts, QEMU failing to start, CPU lockups (QEMU's ``Lockup`` abort),
``ARMGEN error HardFault ...`` lines (CFSR bits named, :func:`decode_cfsr`), ExecuTorch error lines
(their name, code and a hint), non-zero exit statuses and a missing ``ARMGEN done``.
"""

from __future__ import annotations

import re

from armgen.errors import RunError
from armgen.et_errors import ET_ERRORS
from armgen.exit_codes import exit_status_name
from armgen.firmware.console_protocol import FirmwareLog
from armgen.firmware.qemu import QEMU, QemuRun

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


def decode_cfsr(cfsr: int) -> list[str]:
    """Names of the set fault-status bits of a Cortex-M CFSR value (MMFSR/BFSR/UFSR)."""
    return [name for bit, name in _CFSR_BITS.items() if cfsr & (1 << bit)]


_LOCKUP_RE = re.compile(r"Lockup[^\n]*")
_PC_RE = re.compile(r"R15=([0-9a-fA-F]{8})")


def _cfsr_bits(fields: str) -> list[str]:
    """The CFSR bits named in an error line's ``cfsr=`` field (empty when it has none)."""
    m = re.search(r"cfsr=(0x[0-9a-fA-F]+|\d+)", fields)
    return decode_cfsr(int(m.group(1), 0)) if m else []


def _stack_overflow(fields: str) -> str | None:
    """What a fault line says about the stack, when it reached its limit; else None.

    The bare-metal fault handler and ``et_pal_abort`` (``startup.c``, ``et_pal.cpp``) end their
    error lines with ``sp=``, ``stack_limit=``, ``stack_size=`` (bytes) and ``stack_limit_reached``,
    which is 1 when the word at the stack's limit lost its start-up paint or sp is within 64 B of
    the limit or below it: the stack grew into (or past) its last word, so what it overwrote below
    (pools, .bss) is the likely cause of the failure (issue 27: ``--stack-size 512`` ran kws into
    an abort that named no stack).
    """
    values = dict(re.findall(r"(\w+)=(0x[0-9a-fA-F]+|\d+)", fields))
    if values.get("stack_limit_reached") != "1":
        return None
    size = int(values["stack_size"], 0) if "stack_size" in values else None
    sp, limit = values.get("sp"), values.get("stack_limit")
    where = f"; sp={sp}, stack limit {limit}" if sp and limit else ""
    return f"the {size:,} B stack was used to its limit{where}" if size is not None else (
        f"the stack was used to its limit{where}"
    )


def check_run(run: QemuRun, log: FirmwareLog, where: str = "") -> None:
    """Raise :class:`RunError` when a run did not end with ``ARMGEN done`` and status 0.

    Decodes, in order: a wall-clock timeout; QEMU failing to start; a CPU lockup (QEMU aborts with
    ``Lockup: can't escalate ... to HardFault``: a fault with no usable HardFault handler); any
    error line whose stack fields say the stack reached its limit (a stack overflow, whatever
    failed after it: a HardFault, an abort); an ``ARMGEN error HardFault ...`` line (CFSR bits
    named when ``cfsr=0x...`` is printed); an ExecuTorch error line (its name, where it happened
    and a hint); a non-zero exit status; a missing ``ARMGEN done``.

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
        if overflow := _stack_overflow(err.where):
            if err.name == "ZephyrFatal":  # Zephyr's stack guard caught it (prj.conf names which)
                raise RunError(
                    f"stack overflow{tag}: Zephyr's stack guard stopped the main thread (fatal error 2, "
                    f"K_ERR_STACK_CHK_FAIL); {overflow.replace('was used to its limit', 'is too small')}",
                    hint="give the firmware a larger stack: armgen update --stack-size BYTES "
                    "(CONFIG_MAIN_STACK_SIZE), or --stack-size auto on a QEMU board (armgen build sizes the main, "
                    "ISR and idle stacks)" + logref,
                )
            bits = _cfsr_bits(err.where)
            then = f"{err.name}" + (f" [{', '.join(bits)}]" if bits else "")
            raise RunError(
                f"stack overflow{tag}: {overflow}, then {then}",
                hint="give the firmware a larger stack: armgen update --stack-size BYTES, or "
                "--stack-size auto (armgen build measures it on QEMU)" + logref,
            )
    for err in log.errors:
        if err.name in ("HardFault", "MemManage", "BusFault", "UsageFault", "SecureFault", "ZephyrFatal"):
            detail = err.where
            bits = _cfsr_bits(err.where)
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
            named = exit_status_name(run.returncode) if run.returncode is not None else None
            what = f"firmware exited with status {run.returncode}" + (f" ({named})" if named else "")
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

"""The firmware's exit statuses, one table for the code that writes them (render: the generated
``src/armgen/armgen_exit_codes.h``, used by every template that calls ``armgen_exit``) and the code that
reads them (run: QEMU's exit status is the firmware's, through semihosting ``SYS_EXIT_EXTENDED``).

A run that stops prints an ``ARMGEN error <name> <where>`` line first (:mod:`armgen.firmware.console_protocol`);
the status says the same in a number. A failed runtime call exits with its ExecuTorch ``Error`` code
(its low byte; :data:`armgen.et_errors.ET_ERRORS`); armgen's own stops use the small numbers below,
and a few use the ExecuTorch code of what went wrong (named here after ``ET_ERRORS``).
"""

from __future__ import annotations

from armgen.et_errors import ET_ERRORS

_ET_CODE = {name: code for code, name in ET_ERRORS.items()}

#: ``(name, status, meaning)``: the header's ``ARMGEN_EXIT_<name>``, in status order.
EXIT_CODES: tuple[tuple[str, int, str], ...] = (
    ("OK", 0, "the run finished (ARMGEN done)"),
    ("FAILURE", 1, "a failure without a code of its own: the front end, or a runtime error whose low byte is 0"),
    ("FAULT", 3, "a fault exception (ARMGEN error HardFault ...; Zephyr: ZephyrFatal)"),
    ("UNEXPECTED_EXCEPTION", 4, "an interrupt or exception without a handler (bare metal)"),
    ("HEAP_USE_AFTER_INIT", 5, "an allocation after armgen_platform_lock_heap"),
    ("PURE_VIRTUAL_CALL", 6, "__cxa_pure_virtual (bare metal)"),
    ("ABORT", 7, "abort() (bare metal)"),
    ("ET_PAL_ABORT", 8, "ExecuTorch's et_pal_abort (bare metal)"),
    ("NPU_INIT_FAILED", 9, "the Ethos-U driver did not initialise (bare metal)"),
    ("OPERATOR_NEW_FAILED", 10, "operator new without memory (bare metal)"),
    ("INPUT_BAD_SIZE", _ET_CODE["InvalidArgument"], "armgen run's input.bin has the wrong size"),
    ("NO_KERNEL_HEAP", _ET_CODE["MemoryAllocationFailed"], "a kernel heap allocation without a heap (Zephyr)"),
    ("INPUT_UNREADABLE", _ET_CODE["AccessFailed"], "armgen run's input.bin could not be read"),
)


def exit_status_name(status: int) -> str | None:
    """What a firmware exit status means: armgen's name for it (``FAULT``), else the ExecuTorch
    ``Error`` of that code (``OperatorMissing``), else None."""
    own = next((name for name, code, _ in EXIT_CODES if code == status), None)
    return own if own is not None else ET_ERRORS.get(status)

"""The firmware's error codes, one table for the code that prints them (render: the generated C API's
``armgen_status_name``) and the code that reads them (run: ``ARMGEN error <name>`` lines).

Source: ExecuTorch ``runtime/core/error.h`` (``enum class Error``, ExecuTorch 1.5); armgen's own checks
are numbered from 0x100 up.
"""

from __future__ import annotations

#: ExecuTorch ``runtime/core/error.h`` (``enum class Error``): code -> name.
ET_ERRORS: dict[int, str] = {
    0x00: "Ok",
    0x01: "Internal",
    0x02: "InvalidState",
    0x03: "EndOfMethod",
    0x04: "AlreadyLoaded",
    0x10: "NotSupported",
    0x11: "NotImplemented",
    0x12: "InvalidArgument",
    0x13: "InvalidType",
    0x14: "OperatorMissing",
    0x15: "RegistrationExceedingMaxKernels",
    0x16: "RegistrationAlreadyRegistered",
    0x20: "NotFound",
    0x21: "MemoryAllocationFailed",
    0x22: "AccessFailed",
    0x23: "InvalidProgram",
    0x24: "InvalidExternalData",
    0x25: "OutOfResources",
    0x30: "DelegateInvalidCompatibility",
    0x31: "DelegateMemoryAllocationFailed",
    0x32: "DelegateInvalidHandle",
}

#: armgen's own firmware checks (the generated model code): code -> name.
ARMGEN_ERRORS: dict[int, str] = {
    0x100: "PlannedPoolMismatch",
}

#: Every code the generated C API can return, sorted: ``(code, name)``.
ERROR_CODES: tuple[tuple[int, str], ...] = tuple(sorted({**ET_ERRORS, **ARMGEN_ERRORS}.items()))

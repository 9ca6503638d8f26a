"""One error root for armgen and the exit-code table.

Every error a user can cause is an :class:`ArmgenError`. The CLI prints
``armgen: error: <message>`` (and ``hint: <hint>`` when given) on stderr and exits with
``exit_code``. Tracebacks are shown only with ``armgen -v``.

Exit codes:

====  ==========================================================
0     success (``armgen size``: within budget)
1     over budget (``armgen size`` / ``armgen build``), a run whose outputs mismatch, or merge
      conflicts (``armgen update``)
2     any other error (bad input, missing tool or workspace, failed build or run)
130   interrupted (Ctrl-C; :data:`armgen.cli.group.EXIT_INTERRUPTED`)
====  ==========================================================
"""

from __future__ import annotations


class ArmgenError(Exception):
    """A failure the user can act on; carries a one-line message, an optional hint, an exit code."""

    exit_code: int = 2

    def __init__(self, message: str, hint: str | None = None, exit_code: int | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        if exit_code is not None:
            self.exit_code = exit_code


class ModelError(ArmgenError):
    """Raised when a model cannot be loaded, exported, quantized or lowered."""


class ProgramError(ArmgenError):
    """Raised when a .pte file cannot be read or does not fit what armgen can link."""


class BoardError(ArmgenError):
    """Raised for an unknown board or an invalid board data file."""


class ProjectError(ArmgenError):
    """Raised when a project cannot be generated or read (bad name, existing dir, no fit)."""


class WorkspaceError(ArmgenError):
    """Raised when the upstream-source workspace is missing, incomplete or incompatible."""


class NoWorkspaceError(WorkspaceError):
    """Raised when there is no armgen workspace at all where one was looked for (not an incomplete one)."""


class ToolchainError(ArmgenError):
    """Raised when a required host tool (arm-none-eabi-gcc, cmake, ninja, qemu) is missing."""


class BuildError(ArmgenError):
    """Raised when configuring or compiling the firmware fails."""


class SizeError(ArmgenError):
    """Raised when an ELF or a budget file cannot be read (exit 2; over budget is not an error)."""


class RunError(ArmgenError):
    """Raised when firmware faults, times out, reports an ExecuTorch error, or cannot run."""

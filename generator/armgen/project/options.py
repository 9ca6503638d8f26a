"""The options of one project checked and defaulted, and the check that the program suits the board.

These are the cheap checks of ``armgen new``: they read only the options, the board and (for
:func:`check_program_fits` and :func:`check_frontend`) the program report, so the pipeline runs them
before anything is compiled or written. :func:`armgen.project.spec.make_spec` runs them again on its
own inputs.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Literal

from armgen.boards import Board
from armgen.errors import ModelError, ProjectError
from armgen.model.frontend import Frontend
from armgen.model.program_report import ProgramReport

Rtos = Literal["baremetal", "zephyr"]
Backend = Literal["cortex-m", "ethos-u"]

#: Default main stack in bytes (the hand-made DS-CNN build peaked at about 1.9 KB without logging).
DEFAULT_STACK_SIZE = 8 * 1024

#: Smallest main stack ``--stack-size`` accepts (bytes): start-up, ``main`` and one kernel call.
MIN_STACK_SIZE = 512
#: File suffixes of the models `armgen new --model` takes (a NAME ending in one is a misplaced model).
MODEL_SUFFIXES = (".py", ".pt2", ".pte", ".pt", ".onnx", ".tflite")

_C_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_C_KEYWORDS = frozenset(
    [
        "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
        "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return",
        "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void",
        "volatile", "while", "class", "namespace", "new", "delete", "template", "this", "main",
    ]
)


def validate_name(name: str) -> str:
    """Check that ``name`` is a C and CMake identifier usable as a directory name.

    Returns:
        str: the name unchanged.

    Raises:
        ProjectError: for an empty name, a model file name (the hint shows ``--model``), path
            separators or ``..`` (escaping ``--out``), characters outside ``[A-Za-z0-9_]``, a leading
            digit, a C keyword, or more than 64 characters.
    """
    if not name:
        raise ProjectError("project name is empty")
    if name.lower().endswith(MODEL_SUFFIXES) or ".py:" in name:
        # `armgen new model.py --board B`: the model file was given where the project name goes.
        stem = re.sub(r"[^A-Za-z0-9_]", "_", Path(name.split(":")[0]).stem) or "model"
        raise ProjectError(
            f"'{name}' looks like a model file, not a project name",
            hint=f"name the project and pass the model with --model: armgen new {stem} --model {name} --board BOARD",
        )
    if "/" in name or "\\" in name or name in (".", "..") or ".." in name:
        raise ProjectError(
            f"project name '{name}' is a path; it must name one directory inside --out",
            hint="use --out DIR to choose where the project goes and a plain identifier as NAME",
        )
    if not _C_IDENT.match(name) or len(name) > 64:
        raise ProjectError(
            f"project name '{name}' is not a C/CMake identifier",
            hint="use letters, digits and '_' only, starting with a letter or '_' (at most 64 characters)",
        )
    if name in _C_KEYWORDS:
        raise ProjectError(f"project name '{name}' is a C/C++ keyword", hint="choose another name")
    return name


def check_stack_size(stack_size: int) -> int:
    """Validate a main-stack size: bytes, a multiple of 8 (AAPCS stack alignment), at least 512.

    Returns:
        int: ``stack_size`` unchanged.

    Raises:
        ProjectError: not a multiple of 8 or below :data:`MIN_STACK_SIZE`.
    """
    if stack_size < MIN_STACK_SIZE or stack_size % 8:
        raise ProjectError(
            f"stack size {stack_size} B: must be a multiple of 8 and at least {MIN_STACK_SIZE} B",
            hint="size it from the high-water mark `armgen run` prints, with some headroom",
        )
    return stack_size


def check_stack_auto(board: Board, rtos: str, zephyr_release: str | None = None) -> None:
    """Refuse ``--stack-size auto`` where ``armgen build`` cannot measure the image it builds.

    Bare metal: the board's own image must run on QEMU (its ``emulator`` is itself). Zephyr
    (:mod:`armgen.firmware.zephyr_stack`): the main, ISR and idle stacks are measured on the board's own
    QEMU machine under the project's Zephyr release, so the board must be a QEMU machine and the release
    must have its target (``zephyr_release``: None is the default release).

    Raises:
        ProjectError: a board whose own image does not run on QEMU; for Zephyr, one whose QEMU machine
            the release has no target for (the message names it), or a real board whose QEMU stand-in the
            release has (sizing the stacks of a real board's Zephyr image from its stand-in: not yet).
    """
    emulator = board.emulator
    if rtos == "zephyr" and emulator is not None and emulator.board != board.name:
        from armgen.boards import load_board

        qemu = load_board(emulator.board)
        release = zephyr_release or _default_zephyr_release()
        if qemu.zephyr is None or release not in qemu.zephyr.releases:
            have = ", ".join(qemu.zephyr.releases) if qemu.zephyr is not None else "none"
            raise ProjectError(
                f"--stack-size auto: the QEMU machine of board '{board.name}' ({emulator.board}) has no target in "
                f"Zephyr {release}, so its Zephyr stacks cannot be measured (releases that have it: {have})",
                hint="give --stack-size in bytes",
            )
        raise ProjectError(
            f"--stack-size auto: board '{board.name}' does not run on QEMU itself; sizing its Zephyr stacks from "
            f"its stand-in {emulator.board} is not supported yet",
            hint=f"give --stack-size in bytes (armgen run on the stand-in prints the high-water mark), or build "
                 f"for {emulator.board} with --stack-size auto",
        )
    if emulator is None or emulator.board != board.name:
        raise ProjectError(
            f"--stack-size auto: board '{board.name}' does not run on QEMU, so its image cannot be measured",
            hint="give --stack-size in bytes (armgen run on a QEMU board of the same CPU prints the high-water mark)",
        )


def _default_zephyr_release() -> str:
    """The release ``--zephyr-release`` defaults to (``modules/zephyr/releases.yaml``)."""
    from armgen.workspace import default_release

    return str(default_release())


def default_rtos(board: Board) -> Rtos:
    """Zephyr for boards Zephyr supports that are not QEMU machines; bare metal otherwise."""
    is_qemu = board.emulator is not None and board.emulator.board == board.name
    if board.zephyr is not None and not is_qemu:
        return "zephyr"
    return "baremetal"


def default_backend(board: Board) -> Backend:
    """Ethos-U when the board has an NPU, Cortex-M (CMSIS-NN) otherwise."""
    return "ethos-u" if board.npu is not None else "cortex-m"


def resolve_options(name: str, board: Board, backend: str | None, rtos: str | None) -> tuple[Backend, Rtos]:
    """Check NAME and fill in the board's default backend and RTOS: the cheap checks of ``new``.

    Returns:
        ``(backend, rtos)``, e.g. ``("ethos-u", "zephyr")`` for alif_e8 with no options.

    Raises:
        ProjectError: NAME is not a C/CMake identifier; an unknown backend or RTOS; Ethos-U asked for
            a board without NPU.
    """
    validate_name(name)
    chosen_backend: Backend
    chosen_rtos: Rtos
    if backend is None:
        chosen_backend = default_backend(board)
    elif backend in ("cortex-m", "ethos-u"):
        chosen_backend = backend  # type: ignore[assignment]  # narrowed by the check
    else:
        raise ProjectError(f"unknown backend '{backend}' (cortex-m or ethos-u)")
    if rtos is None:
        chosen_rtos = default_rtos(board)
    elif rtos in ("baremetal", "zephyr"):
        chosen_rtos = rtos  # type: ignore[assignment]  # narrowed by the check
    else:
        raise ProjectError(f"unknown RTOS '{rtos}' (baremetal or zephyr)")
    if chosen_backend == "ethos-u" and board.npu is None:
        raise ProjectError(
            f"board '{board.name}' has no Ethos-U NPU, so backend 'ethos-u' cannot be used",
            hint="use --backend cortex-m (CMSIS-NN kernels on the CPU)",
        )
    return chosen_backend, chosen_rtos


def reads_input_file(board: Board, rtos: str) -> bool:
    """True when the firmware reads ``armgen run``'s ``input.bin`` through semihosting: bare metal
    on a semihosting console (the QEMU boards), and Zephyr on a board that is a QEMU machine."""
    if rtos == "zephyr":
        return board.emulator is not None and board.emulator.board == board.name
    return board.baremetal.console == "semihosting"


def check_frontend(frontend: Frontend, report: ProgramReport, rtos: str) -> None:
    """Check an audio front end can feed the program.

    Raises:
        ProjectError: a program that does not take one quantized int8 input of ``num_frames x frame_features``
            elements, or whose input memory does not hold them at fixed strides.
    """
    from armgen.model.frontend import memory_strides

    want = frontend.num_frames * frontend.frame_features
    ins = report.inputs
    if len(ins) != 1 or ins[0].dtype != "int8" or ins[0].scale is None or ins[0].zero_point is None:
        raise ProjectError(f"the {frontend.kind} front end writes one quantized int8 input; program "
                           f"{report.name} takes {len(ins)} input(s) of {', '.join(t.dtype for t in ins)}")
    numel = math.prod(ins[0].shape)
    if numel != want:
        shape = "x".join(map(str, ins[0].shape))
        raise ProjectError(f"the {frontend.kind} front end makes {frontend.num_frames} x {frontend.frame_features} = "
                           f"{want} values; program {report.name}'s input {shape} has {numel}")
    try:
        memory_strides(frontend, ins[0].shape, ins[0].dim_order)
    except ModelError as exc:
        raise ProjectError(exc.message) from exc


def check_program_fits(
    report: ProgramReport, board: Board, backend: Backend, pte_path: Path, allow_cpu_mismatch: bool
) -> None:
    """The program's backend, NPU configuration and CPU agree with the board (see
    :func:`armgen.project.spec.make_spec`).

    Raises:
        ProjectError: naming what differs and the compile command that fixes it.
    """
    if report.backend != backend:
        # `armgen compile` picks the backend from --target (cortex-m* or ethos-u*); it has no --backend.
        again = board.npu.vela_accelerator if backend == "ethos-u" and board.npu is not None else board.cpu.et_target
        raise ProjectError(
            f"program '{report.name}' was compiled for backend '{report.backend}', not '{backend}'",
            hint=f"compile again: armgen compile {report.name} --target {again} (or armgen new without --model)",
        )
    if backend == "ethos-u" and board.npu is not None and report.target != board.npu.vela_accelerator:
        # A Vela command stream only runs on the NPU configuration it was compiled for (the driver
        # checks the product and MAC count at init), so this holds for emulator stand-ins too.
        raise ProjectError(
            f"{pte_path.name} was compiled for {report.target}, but board {board.name} has an "
            f"{board.npu.vela_accelerator}",
            hint=f"compile again: armgen compile {report.name} --target {board.npu.vela_accelerator} "
            "(or armgen new without --model)",
        )
    if backend == "cortex-m" and not allow_cpu_mismatch and report.cpu != board.cpu.et_target:
        raise ProjectError(
            f"program '{report.name}' was compiled for {report.cpu}, but board '{board.name}' has a "
            f"{board.cpu.et_target} (CMSIS-NN scratch buffers are planned per CPU)",
            hint=f"compile again: armgen compile {report.name} --target {board.cpu.et_target} "
            "(or armgen new without --model)",
        )

"""The ``ARMGEN`` console protocol: what an armgen firmware tells the host, one fact per line.

This module is the protocol's reference: the firmware templates (``main.cpp.j2``, the report of a run
``armgen_report.h.j2``, ``armgen run``'s harness ``armgen_run_harness.cpp.j2``, the platform
sources), the TFLite Micro benchmark runner and the test probe print these lines, and
:func:`parse_firmware_output` reads them into a :class:`FirmwareLog` for the run stage
(:mod:`armgen.firmware.run`), the stack sizing (:mod:`armgen.firmware.stack`), audio runs
(:mod:`armgen.firmware.audio_run`) and the benchmarks.

Lines go to the firmware's console (semihosting or UART; ``armgen run`` reads QEMU's stdout). Each
starts with ``ARMGEN ``, possibly after other text on the same line (a log prefix, which is
ignored); other lines are ignored. Numbers are decimal unless written ``0x...``. The firmware
prints, in this order::

    ARMGEN input file|embedded|pattern|silence
    ARMGEN pool <name> reserved=<bytes> used=<bytes>
    ARMGEN stack isr|idle reserved=<bytes> used=<bytes>
    ARMGEN stack reserved=<bytes> used=<bytes>
    ARMGEN output <i> <v0>,<v1>,...
    ARMGEN features <v0>,<v1>,...
    ARMGEN frontend_ticks <n>
    ARMGEN ticks <n>
    ARMGEN done

or, at any point, ``ARMGEN error <name> <where>`` and a non-zero exit status.

``input <source>`` (optional; without it the input is taken as read)
    Where the program's input came from. ``armgen run``'s variant of the firmware
    (``ARMGEN_RUN_INPUT=1``): ``file`` (it read :data:`INPUT_FILE`) or ``embedded`` (no such file:
    it ran its embedded sample input, so a user's input was not used). The product image: ``pattern``
    (inputs written in place) or ``silence`` (an audio front end's empty clip).
``pool <name> reserved=<bytes> used=<bytes>``
    One line per memory pool, in pool order: ``planned_<i>`` (the memory plan's planned buffer of
    memory id ``i``, used = ``MethodMeta::memory_planned_buffer_size``), ``method`` and ``temp``
    (the method and temp allocators, used = their peak), ``arena`` (the TFLite Micro runner).
``stack isr|idle reserved=<bytes> used=<bytes>`` (Zephyr's run image with ``[memory] stack = "auto"``)
    Zephyr's ISR stack (``z_interrupt_stacks[0]``) and the idle thread's stack: size and high-water mark
    in bytes, read from their ``CONFIG_INIT_STACKS`` paint with ``z_stack_space_get``, as Zephyr's thread
    analyzer does (:mod:`armgen.firmware.zephyr_stack`).
``stack reserved=<bytes> used=<bytes>``
    The main stack's size and its high-water mark (bare metal: a painted stack; Zephyr:
    ``k_thread_stack_space_get``).
``output <i> <values>``
    Output ``i``'s values in memory (dim) order, comma-separated (spaces after commas allowed; none
    for an empty output). Integer outputs as their values; float32 outputs as their IEEE-754 bit
    patterns read as signed 32-bit integers.
``features <values>`` (with an audio front end)
    The front end's int8 output (the model input), comma-separated, in memory order.
``frontend_ticks <n>`` (with an audio front end)
    Timer ticks around the front end (the same timer as ``ticks``).
``ticks <n>``
    Timer ticks around ``execute()`` (all methods), at the platform's ``armgen_ticks_hz()``: the
    processor clock's SysTick on bare metal, ``sys_clock_hw_cycles_per_sec()`` on Zephyr. On QEMU
    they are an instruction count (:func:`armgen.firmware.qemu.instructions_from_ticks`).
``error <name> <where>``
    The firmware stopped. ``name`` is an ExecuTorch ``Error`` name, or its code (``0x21`` or ``33``,
    translated with :data:`armgen.et_errors.ET_ERRORS`), or one of armgen's own: ``HardFault``
    (every fault exception; ``where`` is ``exception=<IPSR number, decimal>`` then ``pc= lr= cfsr=
    hfsr= bfar= exc_return=`` in ``0x`` hex; ``MemManage``, ``BusFault``, ``UsageFault`` and
    ``SecureFault`` are read the same way), ``UnexpectedException``, ``HeapUseAfterInit``,
    ``MemoryAllocationFailed``, ``NpuInitFailed``, ``PureVirtualCall``, ``Abort`` (``Fault`` from the
    TFLite Micro runner). ``where`` is free text (the call or check that failed), may be empty.
    :func:`armgen.firmware.faults.check_run` turns it into a :class:`~armgen.errors.RunError`.
``done``
    The run finished; the firmware then exits with status 0.

The exit status reaches the host through semihosting ``SYS_EXIT``/``SYS_EXIT_EXTENDED`` (QEMU's own
exit status). A line that starts with ``ARMGEN`` but has none of these forms is kept as
``FirmwareLog.malformed`` (reported, not fatal).

The input half of the protocol is :data:`INPUT_FILE` in QEMU's working directory, read by the
firmware through semihosting (``SYS_OPEN``/``SYS_FLEN``/``SYS_READ``): every method input in index
order, in its dtype and dim order, little-endian, concatenated
(:func:`armgen.firmware.host_io.input_bytes`), or, with an audio front end, one clip of int16
little-endian PCM samples. A file of another size stops the firmware with
``ARMGEN error InvalidArgument input.bin_size_differs_from_<n>_bytes``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from armgen.et_errors import ET_ERRORS

#: File name the firmware reads its input from, in QEMU's working directory (semihosting).
INPUT_FILE = "input.bin"


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
        pools: in print order. stack: the main stack, None when not printed.
        kernel_stacks: ``"isr"``/``"idle"`` -> Zephyr's ISR and idle stacks (``ARMGEN stack isr|idle``; empty
            when not printed).
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
    kernel_stacks: dict[str, StackUse] = field(default_factory=dict)


_FEATURES_RE = re.compile(r"^features\s+(-?\d+(?:,-?\d+)*)$")
_FRONTEND_TICKS_RE = re.compile(r"^frontend_ticks\s+(\d+)$")
_POOL_RE = re.compile(r"^pool\s+(\S+)\s+reserved=(\d+)\s+used=(\d+)$")
_STACK_RE = re.compile(r"^stack\s+reserved=(\d+)\s+used=(\d+)$")
_KERNEL_STACK_RE = re.compile(r"^stack\s+(isr|idle)\s+reserved=(\d+)\s+used=(\d+)$")
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
    kernel_stacks: dict[str, StackUse] = {}
    for raw in text.splitlines():
        pos = raw.find("ARMGEN ")
        if pos < 0:
            continue
        line = raw[pos + len("ARMGEN ") :].strip()
        if m := _POOL_RE.match(line):
            pools.append(PoolUse(m.group(1), int(m.group(2)), int(m.group(3))))
        elif m := _STACK_RE.match(line):
            stack = StackUse(int(m.group(1)), int(m.group(2)))
        elif m := _KERNEL_STACK_RE.match(line):
            kernel_stacks[m.group(1)] = StackUse(int(m.group(2)), int(m.group(3)))
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
        kernel_stacks=kernel_stacks,
    )


def _error_name(token: str) -> str:
    try:
        code = int(token, 0)
    except ValueError:
        return token
    return ET_ERRORS.get(code, f"Error{code:#04x}")

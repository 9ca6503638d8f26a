"""The run report: what one run of a firmware found, and the checks that make its findings.

- :func:`compare_outputs`: each firmware output against the reference, in the output's units and in
  LSBs (pass within :data:`LSB_TOLERANCE`; float outputs within :data:`FLOAT_RTOL`/:data:`FLOAT_ATOL`);
- :func:`check_pools`: every pool's reserved against used bytes, and the stack's high-water mark;
- :class:`RunReport`: the run stage's output, with :class:`Finding` and :class:`OutputCheck`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np

from armgen.errors import RunError
from armgen.firmware.console_protocol import PoolUse, StackUse
from armgen.firmware.host_io import io_dtype
from armgen.firmware.qemu import ICOUNT_NOTE
from armgen.model.program_report import ProgramReport, TensorInfo
from armgen.model.tensors import dequantize

Severity = Literal["info", "warning", "error"]


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


#: The words every output-mismatch finding of :func:`compare_outputs` holds; :func:`is_mismatch` reads them.
MISMATCH = "differs from the reference"

#: What every run (QEMU, audio, TOSA reference) of a sample compiled without trained weights says (the check
#: passes, the labels mean nothing).
UNTRAINED_NOTE = ("the model's weights are UNTRAINED (fixed-seed): the outputs match the reference but mean "
                  "nothing; regenerate with trained weights (`armgen weights fetch`, ARMGEN_MLPERF_DIR or --weights)")


def is_mismatch(f: Finding) -> bool:
    """True for an error finding that an output differs from the reference by more than the tolerance."""
    return f.severity == "error" and MISMATCH in f.message


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
        pools / stack: the firmware's own figures (bytes). kernel_stacks: Zephyr's ISR and idle stacks
            (``"isr"``/``"idle"``; bytes), printed by the run image of a ``stack = "auto"`` project; else empty.
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
        quality: the firmware's (dequantized) outputs against the float model for the same input, one
            :meth:`armgen.model.quality.OutputQuality.to_json` dict per output (empty: no float model saved).
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
    quality: tuple[dict[str, Any], ...] = ()
    icount_note: str = ICOUNT_NOTE
    kernel_stacks: dict[str, StackUse] = field(default_factory=dict)

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


#: The finding of an output whose every value sits at an int8 limit (``armgen.firmware.run`` makes it an info
#: where the float model agrees).
SATURATED = "every value is saturated at the int8 limits (-128/127): degenerate output"

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
        lim = np.iinfo(io_dtype(info)) if np.issubdtype(io_dtype(info), np.integer) else None
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
                                f"{MISMATCH} by {lsb_d:g} LSB (max |diff| {abs_d:.6g}); "
                                f"allowed {LSB_TOLERANCE:g} LSB")
                    )  # fmt: skip
            elif not np.allclose(deq, r_f, rtol=FLOAT_RTOL, atol=FLOAT_ATOL):
                findings.append(
                    Finding("error", f"output {info.index}",
                            f"float output {MISMATCH} by up to {abs_d:.6g} "
                            f"(allowed rtol {FLOAT_RTOL:g}, atol {FLOAT_ATOL:g})")
                )  # fmt: skip
        if saturated:
            findings.append(
                Finding("error", f"output {info.index}",
                        SATURATED)
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

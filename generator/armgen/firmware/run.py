"""The run stage: execute a built firmware ELF on QEMU and check what it prints.

Input: a built ELF, the :class:`~armgen.model.program_report.ProgramReport` of the program inside it, and
the board's :class:`~armgen.boards.Emulator` facts. Output: a frozen :class:`RunReport`.

What the stage does, in order:

1. runs ``qemu-system-arm -machine <m> -cpu <c> -icount shift=0`` with Arm semihosting (one
   subprocess wrapper, :func:`~armgen.firmware.qemu.run_qemu`, with a wall-clock timeout); an
   input, when given, is handed to the firmware as the file ``input.bin`` in QEMU's working
   directory (semihosting ``SYS_OPEN``/``SYS_READ``; the firmware falls back to its embedded sample
   input without it);
2. parses the firmware's ``ARMGEN ...`` lines
   (:func:`~armgen.firmware.console_protocol.parse_firmware_output`) and turns hard faults, CPU
   lockups, ExecuTorch error codes, timeouts and early exits into :class:`RunError`
   (:func:`~armgen.firmware.faults.check_run`);
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

Where each part lives: QEMU in :mod:`armgen.firmware.qemu`; the ``ARMGEN ...`` lines the firmware
prints in :mod:`armgen.firmware.console_protocol` (the protocol's one description); failed runs in
:mod:`armgen.firmware.faults`; inputs and outputs on the host in :mod:`armgen.firmware.host_io`;
the report and its checks in :mod:`armgen.firmware.run_report`. This module runs them in order
(:func:`run_firmware`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from armgen.boards import Emulator
from armgen.errors import ModelError, RunError
from armgen.firmware.console_protocol import FirmwareLog, parse_firmware_output
from armgen.firmware.faults import check_run
from armgen.firmware.host_io import alternate_inputs, input_bytes, output_array, quantize_input
from armgen.firmware.qemu import QemuRun, instructions_from_ticks, run_qemu
from armgen.firmware.run_report import (
    LSB_TOLERANCE,
    SATURATED,
    UNTRAINED_NOTE,
    Finding,
    OutputCheck,
    RunReport,
    check_pools,
    compare_outputs,
)
from armgen.model.program_report import ProgramReport
from armgen.model.quality import format_quality, output_quality
from armgen.model.reference import (
    ARITHMETIC_WARNING,
    Reference,
    float_model_outputs,
    float_reference,
    load_reference,
    reference_outputs,
    reference_program,
)


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
    findings: list[Finding], reference: Reference | None, cache_dir: Path | None = None,
) -> tuple[bytes | None, str, Sequence[np.ndarray] | None, str | None]:
    """What the firmware is given and what it is compared with: (input.bin bytes or None, a label for
    the input, reference outputs or None, where the reference came from).

    Raises:
        RunError: the given inputs do not fit the program.
    """
    if inputs is not None:
        if len(inputs) != len(report.inputs):
            raise RunError(f"{len(inputs)} inputs given, the program takes {len(report.inputs)}")
        q_inputs = [quantize_input(a, t) for a, t in zip(inputs, report.inputs, strict=True)]
        ref_outputs: Sequence[np.ndarray] | None = None
        ref_source = None
        try:
            ref_outputs = reference_outputs(report, report_dir, q_inputs, cache_dir=cache_dir)
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
                    hint="take this armgen into the project (`armgen update`) so its "
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


def _float_outputs(
    report: ProgramReport, report_dir: Path, inputs: Sequence[np.ndarray] | None
) -> tuple[np.ndarray, ...] | None:
    """The float model's outputs for the run's input: the saved float reference for the reference input
    (``inputs`` None), else the saved float program run on ``inputs``; None when neither was saved.

    Raises:
        ModelError: a saved file cannot be read or run.
    """
    if inputs is None:
        return float_reference(report, report_dir)
    if not report.files.get("float_program"):
        return None
    return float_model_outputs(report, report_dir, inputs)


def quality_finding(
    report: ProgramReport, checks: Sequence[OutputCheck], floats: tuple[np.ndarray, ...] | None
) -> tuple[tuple[dict, ...], Finding]:
    """The firmware's outputs (``checks``, dequantized) against the float model's ``floats`` for the same
    input: (the :mod:`armgen.model.quality` figures as JSON dicts, an info finding that prints them)."""
    if floats is None:
        return (), Finding("info", "int8 vs float", "no float model saved with this program: not measured")
    cand = [np.asarray(c.dequantized, dtype=np.float64).reshape(1, *info.shape)
            for c, info in zip(checks, report.outputs, strict=True)]
    ref = [np.asarray(f, dtype=np.float64).reshape(1, *info.shape) for f, info in zip(floats, report.outputs,
                                                                                         strict=True)]
    figures = output_quality(ref, cand, classifier=report.classifier)
    return tuple(q.to_json() for q in figures), Finding("info", "int8 vs float", format_quality(figures))


def saturation_explained(
    findings: list[Finding], checks: Sequence[OutputCheck], floats: tuple[np.ndarray, ...] | None,
    report: ProgramReport,
) -> list[Finding]:
    """``findings`` with each "saturated" error (:func:`armgen.firmware.run_report.compare_outputs`) made an
    info where the float model's output is within 1.5 output LSB of the firmware's: the int8 limits are
    then the right answer (a sigmoid of all zeros, a clamp every value reaches), not a degenerate program.
    ExecuTorch's own operator cases have such outputs (benchmarks/executorch_op_cases.py)."""
    if floats is None:
        return findings
    right: set[str] = set()
    for c, info, f in zip(checks, report.outputs, floats, strict=False):
        if c.saturated and info.scale:
            deq = np.asarray(c.dequantized, dtype=np.float64)
            # (1.5 LSB: a softmax's 1.0 sits one LSB above the grid's top, 127 -> 0.99609 at scale 1/256)
            if deq.size == f.size and float(np.max(np.abs(deq - f.reshape(-1)))) <= 1.5 * info.scale:
                right.add(f"output {info.index}")
    return [Finding("info", x.subject, x.message.replace("degenerate output", "so is the float model's output, "
                                                         "within 1.5 LSB"))
            if x.severity == "error" and x.subject in right and x.message == SATURATED else x for x in findings]


#: An output that changes by fewer output LSB than this between the two inputs "barely changes": int8 rounding
#: through the layers can lose a difference that small.
BARELY_LSB = 4
#: The smallest scale the quantizer's observers give (torch clamps a scale to float32 epsilon): an output at it
#: had a calibrated range narrower than int8 can represent.
SCALE_FLOOR = float(np.finfo(np.float32).eps)


def degenerate_causes(
    report: ProgramReport, report_dir: Path, outs: Sequence[np.ndarray], alt_inputs: Sequence[np.ndarray],
    floats: tuple[np.ndarray, ...] | None,
) -> list[str]:
    """What the host can see behind outputs that do not change with the input, one phrase each: the
    float model is constant too (its outputs for the two inputs differ by under half an output LSB) or
    barely changes (under :data:`BARELY_LSB` output LSB), an output scale at the quantizer's floor (the float
    outputs are all near zero), the int8 ranges were calibrated on a single input, the outputs sit at the int8
    limits.

    ``outs``: the firmware's outputs for the first input; ``alt_inputs``: the second input (program
    dtype); ``floats``: the float model's outputs for the first input (None: not saved).
    """
    causes = []
    if floats is not None and report.files.get("float_program"):
        try:
            alt_floats = float_model_outputs(report, report_dir, alt_inputs)
        except ModelError:
            alt_floats = None
        if alt_floats is not None:
            diffs = [float(np.max(np.abs(a.reshape(-1) - b.reshape(-1)))) if a.size else 0.0
                     for a, b in zip(floats, alt_floats, strict=False)]
            lsbs = [info.scale or 0.0 for info in report.outputs]
            in_lsb = max((d / lsb for d, lsb in zip(diffs, lsbs, strict=False) if lsb), default=0.0)
            if all(d < lsb / 2 or d == 0.0 for d, lsb in zip(diffs, lsbs, strict=False)):
                how = ("identical for the two inputs" if max(diffs) == 0.0 else
                       f"within {max(diffs):.3g} for the two inputs, under half an output LSB")
                causes.append(f"the float model's outputs are constant too ({how}): the model itself does not "
                              "depend on its input")
            elif all(lsb and d < BARELY_LSB * lsb for d, lsb in zip(diffs, lsbs, strict=False)):
                causes.append(f"the float model's outputs barely change (by up to {max(diffs):.3g} for the two "
                              f"inputs, {in_lsb:.2g} output LSB): int8 rounding loses a difference that small")
            else:
                causes.append(f"the float model's outputs do change (by up to {max(diffs):.3g}): the int8 program "
                              "lost the difference")
    for i, info in enumerate(report.outputs):
        if info.dtype == "int8" and info.scale and info.scale <= SCALE_FLOOR * (1 + 1e-6):
            peak = (f"; the float outputs are all near zero (largest |value| "
                    f"{float(np.max(np.abs(floats[i]))):.3g}; an untrained or dead network does this)"
                    if floats is not None and i < len(floats) and floats[i].size else "")
            causes.append(f"output {info.index}'s scale is the quantizer's floor ({info.scale:.3g}, float32 epsilon):"
                          f" its calibrated range was narrower than int8 can represent{peak}")
    if report.calibration_samples == 1:
        causes.append("the int8 ranges were calibrated on a single input (pass --calibration with "
                      "representative inputs)")
    for q, info in zip(outs, report.outputs, strict=False):
        if info.dtype == "int8" and q.size and np.all((q == -128) | (q == 127)):
            causes.append(f"output {info.index} is saturated at the int8 limits (-128/127)")
    return causes


def _second_input_checked(
    runs: _QemuRuns, report: ProgramReport, report_dir: Path, outs: list[np.ndarray], findings: list[Finding],
    floats: tuple[np.ndarray, ...] | None = None, cache_dir: Path | None = None,
    reference: Reference | None = None,
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
        causes = degenerate_causes(report, report_dir, outs, alt, floats)
        findings.append(
            Finding("error", "outputs",
                    "outputs are identical for two different inputs: " + "; ".join(causes) if causes else
                    "outputs are identical for two different inputs: degenerate model, or the "
                    "firmware does not read input.bin")
        )  # fmt: skip
    try:
        if not alternate_checked:
            raise RunError("the firmware did not run it")
        alt_ref = _saved_alternate(reference, alt)
        if alt_ref is None:
            alt_ref = reference_outputs(report, report_dir, alt, cache_dir=cache_dir)
    except (RunError, ModelError) as exc:
        findings.append(Finding("info", "second input", f"not compared with a reference: {exc.message}"))
    else:
        _, alt_findings = compare_outputs(alt_outs, alt_ref, report.outputs)
        for f in alt_findings:
            if "reference" in f.message:
                findings.append(Finding(f.severity, f"{f.subject} (second input)", f.message))
    return alternate_checked


def _saved_alternate(reference: Reference | None, alt: Sequence[np.ndarray]) -> tuple[np.ndarray, ...] | None:
    """The reference outputs the compile stage saved for the second input, when it saved them for
    exactly ``alt``; else None."""
    if reference is None or reference.alternate_inputs is None or reference.alternate_outputs is None:
        return None
    same = len(reference.alternate_inputs) == len(alt) and all(
        np.array_equal(a, b) for a, b in zip(reference.alternate_inputs, alt, strict=True))
    return reference.alternate_outputs if same else None


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
    zephyr_board: str | None = None, reference_cache: Path | None = None,
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
        reference_cache: a folder where host reference outputs are kept between runs (see
            :func:`armgen.model.reference.reference_outputs`); None computes them every time.

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
    if report.untrained_weights:
        findings.append(Finding("warning", "weights", UNTRAINED_NOTE))
    reference = load_reference(report, report_dir)  # read once: the first input's and the second's
    data, source, ref_outputs, ref_source = _run_input(report, report_dir, inputs, input_source, findings,
                                                     reference, reference_cache)
    runs = _QemuRuns(elf, emulator, report, timeout, log_dir)
    log, outs, ticks_per_run, source = _repeated_runs(runs, data, repeat, inputs is not None, source, findings)
    checks, out_findings = compare_outputs(outs, ref_outputs, report.outputs)
    findings.extend(out_findings)
    try:
        floats = _float_outputs(report, report_dir, inputs)
    except ModelError as exc:
        floats = None
        findings.append(Finding("warning", "int8 vs float", f"not measured: {exc.message}"))
    quality, q_finding = quality_finding(report, checks, floats)
    findings.append(q_finding)
    findings = saturation_explained(findings, checks, floats, report)
    alternate_checked = False
    if check_alternate and data is not None and report.inputs:
        alternate_checked = _second_input_checked(runs, report, report_dir, outs, findings, floats,
                                                  reference_cache, reference)
    findings.extend(_log_findings(log, ticks_per_run, report))
    hz = emulator.systick_hz
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
        kernel_stacks=log.kernel_stacks,
        ticks=log.ticks,
        ticks_per_run=tuple(ticks_per_run),
        systick_hz=hz,
        instructions=instructions_from_ticks(log.ticks, hz) if (log.ticks is not None and hz)
        else None,
        seconds=round(runs.seconds, 3),
        findings=tuple(findings),
        passed=not any(f.severity == "error" for f in findings) and ref_outputs is not None,
        quality=quality,
        logs=tuple(runs.logs),
        firmware=firmware,
        zephyr_board=zephyr_board,
    )

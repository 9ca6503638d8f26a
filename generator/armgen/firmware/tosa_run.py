"""``armgen run`` of an Ethos-U program on the host: checked on the TOSA reference model, not on an NPU.

QEMU has no Ethos-U model and there is no FVP here. :func:`run_on_tosa_reference` runs the whole
program on the host instead (:func:`armgen.model.npu_host.run_host_program`: every delegated partition
in the TOSA reference model, from the very TOSA graph Vela compiled; the CPU ops between them with
the host reference kernels; in program order) from the program's own int8 input, and checks it as
the QEMU run does (:mod:`armgen.firmware.run_report`):

- each output against the Ethos-U program's own reference (the quantized model made with
  ``EthosUQuantizer``, ``armgen.model.reference``), max difference in LSBs, pass within
  :data:`~armgen.firmware.run_report.LSB_TOLERANCE` (1 LSB: ExecuTorch's Arm tests compare the
  TOSA reference model with ``qtol=1``, ``backends/arm/test/tester/analyze_output.py``);
- a second, seeded input: outputs must change (a degenerate model or run proves nothing) and match
  the reference for it too;
- the distance of the dequantized outputs from the float model (:mod:`armgen.model.quality`) over
  both inputs;
- an input whose outputs are more than 1 LSB off is checked again against the exact reference
  (:func:`armgen.model.exact_reference.explain_reference`: float64 between the quantize points, each
  average pool as TOSA's integer AVG_POOL2D with the zero points the TOSA graph really has). Within
  1 LSB of it, the difference is EXPLAINED: the report names each cause (layer, cause, figures) and
  the run exits 0; otherwise it is a FAIL (exit 1), as is every other error. ExecuTorch 1.5.1 gives
  the MLPerf Tiny ``ic``'s average pool zero points of 127 for 17 (see that module), 12 LSB at the
  output on its first representative input.

Outcomes (:attr:`TosaRunReport.outcome`): ``"pass"`` (within 1 LSB of the quantized reference),
``"explained"`` (not, but within 1 LSB of the exact reference, causes named), ``"fail"``.

What it does not run is said in the report (:data:`NOT_CHECKED`): the NPU command stream Vela made,
the Ethos-U driver, the caches, the board's memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from armgen.errors import ModelError, RunError
from armgen.firmware.host_io import alternate_inputs, quantize_input
from armgen.firmware.run_report import (
    LSB_TOLERANCE,
    UNTRAINED_NOTE,
    Finding,
    OutputCheck,
    compare_outputs,
    is_mismatch,
)
from armgen.model.exact_reference import Cause, explain_reference
from armgen.model.npu_host import dequantized_inputs, float_model_outputs, host_program_files, run_host_program
from armgen.model.program_report import ProgramReport
from armgen.model.quality import OutputQuality, format_quality, output_quality
from armgen.model.reference import load_reference, reference_outputs
from armgen.model.tensors import dequantize

CHECKED_ON = "tosa-reference"

#: What this check runs, in words (the report's ``checked``).
CHECKED = (
    "every delegated partition's TOSA graph, as the lowering handed it to Vela, in the TOSA reference "
    "model (tosa_reference_model)",
    "the CPU ops between and around the partitions with the host reference kernels (aten, cortex_m host "
    "implementations), in program order",
)
#: What it does not run (the report's ``not_checked``).
NOT_CHECKED = (
    "the Ethos-U command stream Vela compiled from the TOSA graphs (Vela's lowering is trusted)",
    "the Ethos-U driver and the ExecuTorch delegate runtime",
    "the NPU's caches, memory placement and address remap on a board",
    "timing: no NPU cycles are measured (Vela's figures are estimates)",
)


@dataclass(frozen=True)
class Explanation:
    """Why one input's outputs differ from the quantized reference by more than 1 LSB, or that they
    are not explained.

    Attributes:
        input: ``"main input"`` or ``"second input"``.
        explained: the host outputs are within 1 LSB of the exact reference and a cause is named.
        host_vs_exact_lsb: max difference of the host outputs from the exact reference (output LSBs;
            None when it could not be computed). reference_vs_exact_lsb: the quantized reference's.
        causes: each cause with its layer and figures (:class:`armgen.model.exact_reference.Cause`).
        note: why it is not explained, when it is not.
    """

    input: str
    explained: bool
    host_vs_exact_lsb: float | None
    reference_vs_exact_lsb: float | None
    causes: tuple[Cause, ...]
    note: str = ""


def _explain(report: ProgramReport, report_dir: Path, q_in: Sequence[np.ndarray], outs: Sequence[np.ndarray],
             graphs: Sequence[bytes], which: str) -> Explanation:
    """Check ``outs`` against the exact reference for ``q_in`` (see the module docstring)."""
    try:
        exact = explain_reference(report, report_dir, q_in, graphs)
    except ModelError as exc:
        return Explanation(which, False, None, None, (), f"no exact reference: {exc.message}")
    except Exception as exc:  # noqa: BLE001 - the check it would explain stays a failure, said in one line
        return Explanation(which, False, None, None, (), f"no exact reference: {type(exc).__name__}: {exc}")
    checks, _ = compare_outputs(outs, exact.exact_outputs, report.outputs)
    lsb = max((c.max_lsb_diff for c in checks if c.max_lsb_diff is not None), default=None)
    if lsb is None or lsb > LSB_TOLERANCE + 1e-6:
        note = (f"the host outputs differ from the exact reference by {lsb:g} LSB too" if lsb is not None
                else "the exact reference has no quantized outputs to compare")
        return Explanation(which, False, lsb, exact.reference_vs_exact_lsb, exact.causes, note)
    if not exact.causes:
        return Explanation(which, False, lsb, exact.reference_vs_exact_lsb, (),
                           "no cause found: the exact reference equals the quantized one")
    return Explanation(which, True, lsb, exact.reference_vs_exact_lsb, exact.causes)


def _apply(findings: Sequence[Finding], e: Explanation | None) -> list[Finding]:
    """``findings`` with their mismatches made warnings when ``e`` explains them, and ``e``'s lines added."""
    if e is None:
        return list(findings)
    out = [Finding("warning", f.subject, f"{f.message}; explained: within {e.host_vs_exact_lsb:g} LSB of the "
                   "exact reference") if e.explained and is_mismatch(f) else f for f in findings]
    out.extend(Finding("info", f"{c.layer} ({e.input})", c.message) for c in e.causes)
    if not e.explained:
        out.append(Finding("info", f"explanation ({e.input})", f"not explained: {e.note}"))
    return out


@dataclass(frozen=True)
class TosaRunReport:
    """What one host run of an Ethos-U program found.

    Attributes:
        checked_on: ``"tosa-reference"``. checked / not_checked: what ran and what did not, in words.
        program / target: the program and its NPU configuration (``ethos-u55-256``).
        tosa_files: the delegates' TOSA graphs that ran (file names, delegate order).
        input_source: where the input came from. reference_source: the reference file or program.
        outputs: per-output comparison with the program's own quantized reference (main input).
        alternate_checked: a second, seeded input ran and its outputs were compared.
        alternate_max_lsb_diff: its largest difference in LSBs (None without a reference for it).
        float_quality: each output's distance from the float model on the main input (empty when the
            float model could not run; a finding says why). alternate_float_quality: the same on the
            second input (seeded uniform int8, far from what the model was calibrated for: a large
            distance there says little about the program).
        findings: mismatches and degenerate outputs are errors, as in the QEMU run report.
        matches_reference: every output within 1 LSB on both inputs, outputs not degenerate, no error
            finding: on the TOSA reference model, not on an NPU (:attr:`verdict` says so in words; the
            report never carries a bare "passed").
        explanations: one per input more than 1 LSB off (:class:`Explanation`).
    """

    checked_on: str
    checked: tuple[str, ...]
    not_checked: tuple[str, ...]
    program: str
    target: str
    tosa_files: tuple[str, ...]
    input_source: str
    reference_source: str | None
    outputs: tuple[OutputCheck, ...]
    alternate_checked: bool
    alternate_max_lsb_diff: float | None
    float_quality: tuple[OutputQuality, ...]
    alternate_float_quality: tuple[OutputQuality, ...]
    findings: tuple[Finding, ...]
    matches_reference: bool
    explanations: tuple[Explanation, ...] = ()

    @property
    def outcome(self) -> str:
        """``"pass"``, ``"explained"`` (exit 0, causes named) or ``"fail"`` (exit 1): see the module docstring."""
        if any(f.severity == "error" for f in self.findings):
            return "fail"
        return "explained" if any(e.explained for e in self.explanations) else "pass"

    @property
    def verdict(self) -> str:
        """The outcome in words, naming what was and was not run."""
        not_run = "the NPU command stream, driver and caches were not run"
        if self.outcome == "explained":
            layers = ", ".join(sorted({f"{c.layer} ({c.kind.replace('_', ' ')})" for e in self.explanations
                                       for c in e.causes if c.output_max_lsb > 0} or {"see the causes"}))
            worst = max(e.host_vs_exact_lsb or 0.0 for e in self.explanations if e.explained)
            return (f"EXPLAINED on the TOSA reference model: outputs NOT within {LSB_TOLERANCE:g} LSB of the "
                    f"program's quantized reference, but within {worst:g} LSB of the exact reference with the "
                    f"TOSA graph's own zero points; the difference comes from {layers}; {not_run}")
        what = "within" if self.matches_reference else "NOT within"
        return (f"{'PASS' if self.matches_reference else 'FAIL'} on the TOSA reference model: outputs {what} "
                f"{LSB_TOLERANCE:g} LSB of the program's quantized reference; {not_run}")

    @property
    def max_lsb_diff(self) -> float | None:
        """Largest difference over all outputs of the main input, in output LSBs."""
        diffs = [o.max_lsb_diff for o in self.outputs if o.max_lsb_diff is not None]
        return max(diffs) if diffs else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (``float_quality`` as :meth:`OutputQuality.to_json`, ``max_lsb_diff`` added)."""
        data = asdict(self)
        data["float_quality"] = [q.to_json() for q in self.float_quality]
        data["alternate_float_quality"] = [q.to_json() for q in self.alternate_float_quality]
        data["max_lsb_diff"] = self.max_lsb_diff
        data["outcome"] = self.outcome
        data["verdict"] = self.verdict
        return data


def _main_input(
    report: ProgramReport, report_dir: Path, inputs: Sequence[np.ndarray] | None, input_source: str | None
) -> tuple[list[np.ndarray], list[np.ndarray] | None, Sequence[np.ndarray] | None, str, str | None]:
    """(program inputs, float inputs or None, reference outputs, input label, reference source).

    Raises:
        RunError: inputs that do not fit, or a program without a reference.
    """
    if inputs is not None:
        if len(inputs) != len(report.inputs):
            raise RunError(f"{len(inputs)} inputs given, the program takes {len(report.inputs)}")
        q = [quantize_input(a, t) for a, t in zip(inputs, report.inputs, strict=True)]
        floats = [np.asarray(a, np.float32) for a in inputs] if all(
            np.issubdtype(np.asarray(a).dtype, np.floating) for a in inputs) else None
        return q, floats, reference_outputs(report, report_dir, q), input_source or "given input", \
            report.files.get("quantized_program")
    reference = load_reference(report, report_dir)
    if reference is None:
        raise RunError("the program report names no reference: nothing to compare the host run with")
    q = [quantize_input(a, t) for a, t in zip(reference.inputs, report.inputs, strict=True)]
    with np.load(reference.source) as npz:  # the float input the int8 one was quantized from
        keys = [f"float_input_{t.index}" for t in report.inputs]
        floats = [np.asarray(npz[k], np.float32).reshape(t.shape) for k, t in zip(keys, report.inputs, strict=True)] \
            if all(k in npz for k in keys) else None
    return q, floats, reference.outputs, "sample input (reference .npz)", reference.source


def _dequantized_outputs(outs: Sequence[np.ndarray], report: ProgramReport) -> list[np.ndarray]:
    return [dequantize(o, t.scale, t.zero_point).astype(np.float32) if t.scale is not None else
            np.asarray(o, np.float32) for o, t in zip(outs, report.outputs, strict=True)]


def _float_quality(
    report: ProgramReport, report_dir: Path, runs: Sequence[tuple[list[np.ndarray], list[np.ndarray] | None,
                                                                   Sequence[np.ndarray]]],
    classifier: bool, findings: list[Finding],
) -> tuple[OutputQuality, ...]:
    """Each output's distance from the float model over ``runs`` ((program inputs, float inputs or None,
    program outputs) per input; without float inputs the float model gets the dequantized int8 ones)."""
    try:
        ref: list[list[np.ndarray]] = [[] for _ in report.outputs]
        cand: list[list[np.ndarray]] = [[] for _ in report.outputs]
        for q_in, f_in, outs in runs:
            floats = float_model_outputs(report, report_dir, f_in if f_in is not None else
                                         dequantized_inputs(report, q_in))
            for i, (r, c) in enumerate(zip(floats, _dequantized_outputs(outs, report), strict=True)):
                ref[i].append(r.reshape(c.shape))
                cand[i].append(c)
        return tuple(output_quality([np.stack(r) for r in ref], [np.stack(c) for c in cand],
                                    classifier=classifier))
    except (ModelError, ValueError) as exc:
        findings.append(Finding("warning", "float model", f"distance to the float model not computed: {exc}"))
        return ()


def run_on_tosa_reference(
    report: ProgramReport, *, report_dir: Path, inputs: Sequence[np.ndarray] | None = None,
    input_source: str | None = None, classifier: bool = False,
) -> TosaRunReport:
    """Run an Ethos-U program on the host (see the module docstring) and check its outputs.

    Args:
        report: the program report of the Ethos-U ``.pte``; report_dir: where its files are.
        inputs: program inputs (logical shapes; float arrays are quantized with the input's scale and
            zero point); None: the sample's input from the reference ``.npz``.
        classifier: the outputs are class scores (adds top-1 agreement to the float distance).

    Returns:
        A :class:`TosaRunReport`; degenerate outputs and mismatches are error findings (outcome
        ``"fail"``), except mismatches the exact reference explains (warnings, outcome ``"explained"``).

    Raises:
        ModelError: the program was compiled without its TOSA graphs, the TOSA reference model refuses
            a graph, or a CPU op fails on the host. RunError: inputs that do not fit, no reference.
    """
    _, tosa = host_program_files(report, report_dir)
    findings: list[Finding] = []
    if report.untrained_weights:
        findings.append(Finding("warning", "weights", UNTRAINED_NOTE))
    q_in, f_in, ref, source, ref_source = _main_input(report, report_dir, inputs, input_source)
    outs = run_host_program(report, report_dir, q_in)
    checks, out_findings = compare_outputs(outs, ref, report.outputs)
    graphs = [p.read_bytes() for p in tosa]
    explanations: list[Explanation] = []
    if any(is_mismatch(f) for f in out_findings):
        explanations.append(_explain(report, report_dir, q_in, outs, graphs, "main input"))
    findings.extend(_apply(out_findings, explanations[-1] if explanations else None))

    alt = alternate_inputs(report.inputs)
    alt_outs = run_host_program(report, report_dir, alt)
    if all(np.array_equal(a, b) for a, b in zip(outs, alt_outs, strict=True)):
        findings.append(Finding("error", "outputs", "outputs are identical for two different inputs: degenerate model"))
    alt_lsb = None
    try:
        alt_checks, alt_findings = compare_outputs(alt_outs, reference_outputs(report, report_dir, alt), report.outputs)
    except ModelError as exc:
        findings.append(Finding("info", "second input", f"not compared with a reference: {exc.message}"))
    else:
        lsbs = [c.max_lsb_diff for c in alt_checks if c.max_lsb_diff is not None]
        alt_lsb = max(lsbs) if lsbs else None
        alt_findings = [Finding(f.severity, f"{f.subject} (second input)", f.message)
                        for f in alt_findings if "reference" in f.message]
        alt_expl = None
        if any(is_mismatch(f) for f in alt_findings):
            alt_expl = _explain(report, report_dir, alt, alt_outs, graphs, "second input")
            explanations.append(alt_expl)
        findings.extend(_apply(alt_findings, alt_expl))
    quality = _float_quality(report, report_dir, [(q_in, f_in, outs)], classifier, findings)
    alt_quality = _float_quality(report, report_dir, [(alt, None, alt_outs)], classifier, findings) if quality else ()
    return TosaRunReport(
        checked_on=CHECKED_ON, checked=CHECKED, not_checked=NOT_CHECKED, program=report.name, target=report.target,
        tosa_files=tuple(p.name for p in tosa), input_source=source, reference_source=ref_source,
        outputs=tuple(checks), alternate_checked=True, alternate_max_lsb_diff=alt_lsb, float_quality=quality,
        alternate_float_quality=alt_quality,
        findings=tuple(findings), explanations=tuple(explanations),
        matches_reference=not any(f.severity == "error" for f in findings) and not explanations,
    )


def describe(rr: TosaRunReport) -> list[str]:
    """The report in words, one line each (what ran, what did not, the figures, the verdict)."""
    lines = [f"program {rr.program} ({rr.target}) checked on the TOSA reference model on the host, not on an NPU",
             "ran: " + "; ".join(rr.checked) + f" ({', '.join(rr.tosa_files)})",
             "not run: " + "; ".join(rr.not_checked),
             f"input: {rr.input_source}; + 1 run with a second input"]
    if rr.reference_source:
        lines.append(f"reference: {rr.reference_source} (the Ethos-U program's quantized model, EthosUQuantizer)")
    for o in rr.outputs:
        lines.append(f"output {o.index}: {len(o.values)} values, max diff "
                     + ("-" if o.max_lsb_diff is None else f"{o.max_lsb_diff:g} LSB ({o.max_abs_diff:.6g})")
                     + (", saturated" if o.saturated else ""))
    if rr.alternate_max_lsb_diff is not None:
        lines.append(f"second input: max diff {rr.alternate_max_lsb_diff:g} LSB")
    if rr.float_quality:
        lines.append("distance to the float model (main input): " + format_quality(rr.float_quality))
    if rr.alternate_float_quality:
        lines.append("distance to the float model (second input, seeded uniform int8): "
                     + format_quality(rr.alternate_float_quality))
    lines.extend(f"{f.severity}: {f.subject}: {f.message}" for f in rr.findings)
    for e in rr.explanations:
        lines.append(f"{e.input}: quantized reference vs exact reference: "
                     + ("-" if e.reference_vs_exact_lsb is None else f"{e.reference_vs_exact_lsb:g} LSB")
                     + "; host run vs exact reference: "
                     + ("-" if e.host_vs_exact_lsb is None else f"{e.host_vs_exact_lsb:g} LSB")
                     + (" (explained)" if e.explained else f" (NOT explained: {e.note})"))
    worst = max([d for d in (rr.max_lsb_diff, rr.alternate_max_lsb_diff) if d is not None], default=None)
    lines.append(rr.verdict + (f" (max {worst:g} LSB over both inputs)" if worst is not None else ""))
    return lines


__all__ = ["CHECKED", "CHECKED_ON", "NOT_CHECKED", "Explanation", "TosaRunReport", "describe", "run_on_tosa_reference"]

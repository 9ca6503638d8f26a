"""Runs of a firmware with an audio front end: a clip in, features and a label out, each checked.

A project made with ``armgen new ... --frontend mfcc`` (or ``lfbe``) takes 16-bit PCM, not the model's input
tensor. ``armgen run --input word.wav`` reads the clip on the host (:func:`armgen.model.frontend.read_wav`:
any PCM or float WAV, resampled to the front end's rate), pads or cuts it to one clip (:func:`clip_for`:
a one-shot window, the first or the last ``clip_samples`` as the front end says) and hands it to
the firmware as ``input.bin``; the firmware prints its int8 features (the model input), its outputs
and the timer ticks of each stage. This module checks

- **the front end**: the firmware's int8 features against the host pipeline's
  (``features`` of :class:`armgen.model.frontend.MfccFrontend` or
  :class:`armgen.model.frontend_lfbe.LfbeFrontend`, quantized as the front end does it with the input's
  scale and zero point), element by element, within :data:`FEATURE_TOLERANCE_LSB`;
- **the network**: the firmware's outputs against the lowered program run on the host with the
  *firmware's* features (so a front-end LSB does not show up as a network error), exactly as
  :mod:`armgen.firmware.run` checks any input;

and reports the top label and score, the label the host gets from its own features, and the
instructions of each stage (front end vs network) under ``-icount shift=0``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from armgen.boards import Emulator
from armgen.errors import ModelError, RunError
from armgen.firmware.console_protocol import parse_firmware_output
from armgen.firmware.faults import check_run
from armgen.firmware.host_io import output_array
from armgen.firmware.qemu import instructions_from_ticks, run_qemu
from armgen.firmware.run import quality_finding
from armgen.firmware.run_report import LSB_TOLERANCE, UNTRAINED_NOTE, Finding, OutputCheck, compare_outputs
from armgen.model.frontend import Frontend
from armgen.model.program_report import ProgramReport
from armgen.model.reference import float_model_outputs, reference_outputs
from armgen.model.tensors import dequantize, to_logical_order

#: Largest difference allowed between the firmware's and the host's int8 features (LSB of the
#: model input): float32 on the device against float64 on the host may round a value the other way.
FEATURE_TOLERANCE_LSB = 1


@dataclass(frozen=True)
class AudioRunReport:
    """One clip through the firmware's front end and network.

    Attributes:
        elf, machine: what ran where. input_source: the clip's file (or a description).
        clip_samples: samples handed over (after resampling, padding or cutting).
        features_max_lsb: largest |firmware - host| over the int8 features; features_off: how many
            elements differ at all.
        outputs: the network's outputs checked against the host run on the firmware's features.
        label / score: the firmware's top class and its dequantized output value; host_label: the
            top class of the lowered program on the host's own features.
        frontend_instructions / network_instructions: per stage (instructions, ``-icount shift=0``).
        findings, passed: as :class:`armgen.firmware.run_report.RunReport`.
        quality: the firmware's outputs against the float model on the host's float features
            (:mod:`armgen.model.quality` figures; empty when no float model was saved).
        firmware: ``baremetal`` or ``zephyr``: what kind of image ran.
    """

    elf: str
    machine: str
    input_source: str
    clip_samples: int
    features_max_lsb: int
    features_off: int
    outputs: tuple[OutputCheck, ...]
    label: str
    score: float
    host_label: str
    frontend_instructions: int | None
    network_instructions: int | None
    findings: tuple[Finding, ...]
    passed: bool
    quality: tuple[dict[str, Any], ...] = ()
    firmware: str = "baremetal"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (``armgen run --json``)."""
        return asdict(self)


def clip_for(frontend: Frontend, pcm: np.ndarray) -> np.ndarray:
    """``pcm`` cut or zero-padded to one clip (``frontend.clip_samples`` int16 samples) as the front end
    does it (``fit``: MFCC the first samples, zeros after; LFBE as its ``align`` says, sww the last, zeros before)."""
    return frontend.fit(pcm)


def synthetic_clip(frontend: Frontend, seconds: float = 0.6) -> np.ndarray:
    """A deterministic test clip: a 300 -> 3,000 Hz linear chirp of ``seconds`` at half full scale,
    then silence (what ``armgen run`` hands a front end without ``--input``)."""
    n = int(frontend.sample_rate * seconds)
    t = np.arange(n) / frontend.sample_rate
    f0, f1 = 300.0, 3000.0
    phase = 2 * np.pi * (f0 * t + (f1 - f0) * t * t / (2 * seconds))
    return clip_for(frontend, np.rint(16384 * np.sin(phase)).astype(np.int16))


def host_features(frontend: Frontend, clip: np.ndarray, report: ProgramReport) -> np.ndarray:
    """The host pipeline's int8 features of ``clip``, in the program input's logical shape.

    Raises:
        RunError: the program's input is not a quantized int8 tensor of the front end's size.
    """
    info = report.inputs[0]
    if info.scale is None or info.zero_point is None or info.dtype != "int8":
        raise RunError(f"program {report.name}'s input is not a quantized int8 tensor")
    q = frontend.quantized(frontend.features(clip), info.scale, info.zero_point)
    return frontend.model_input(q, info.shape)


def top_class(values: np.ndarray, report: ProgramReport, labels: tuple[str, ...]) -> tuple[str, float]:
    """(label, dequantized value) of the largest output element; the index when no labels are known."""
    info = report.outputs[0]
    real = dequantize(np.asarray(values).reshape(-1), info.scale, info.zero_point)
    i = int(np.argmax(real))
    return (labels[i] if i < len(labels) else str(i)), float(real[i])


def run_audio(
    elf: Path, report: ProgramReport, emulator: Emulator, frontend: Frontend, pcm: np.ndarray, *,
    report_dir: Path, labels: tuple[str, ...] = (), input_source: str = "clip", timeout: float = 60.0,
    log_path: Path | None = None, firmware: str = "baremetal",
) -> AudioRunReport:
    """Run one clip through a front-end firmware on QEMU and check features and outputs.

    Args:
        elf: armgen run's variant (reads ``input.bin``). report: the program report. pcm: int16
            samples at ``frontend.sample_rate`` (cut or padded to one clip here).
        report_dir: directory the report's files are relative to. labels: output class names.
        firmware: ``baremetal`` or ``zephyr`` (recorded in the report; the console protocol is the same).

    Returns:
        AudioRunReport: mismatches are findings of severity "error" (``passed`` False).

    Raises:
        RunError: the firmware faulted, timed out, ignored the clip, or printed no features.
        ToolchainError: qemu-system-arm is missing.
    """
    clip = clip_for(frontend, pcm)
    qrun = run_qemu(elf, emulator, timeout=timeout, input_bytes=clip.astype("<i2").tobytes(), log_path=log_path)
    log = parse_firmware_output(qrun.console)
    check_run(qrun, log, input_source)
    if log.input_source != "file":
        raise RunError("the firmware did not read the clip (input.bin)",
                       hint="build armgen run's variant: `armgen run` does it (build/run-input/)")
    info = report.inputs[0]
    if log.features is None or len(log.features) != int(np.prod(info.shape)):
        raise RunError("the firmware printed no `ARMGEN features` line of the model input's size")
    if 0 not in log.outputs:
        raise RunError("the firmware printed no `ARMGEN output 0` line")
    fw_features = to_logical_order(np.asarray(log.features, dtype=np.int8), info.shape, info.dim_order)
    host = host_features(frontend, clip, report)
    diff = np.abs(fw_features.astype(np.int32) - host.astype(np.int32))
    findings: list[Finding] = []
    if int(diff.max()) > FEATURE_TOLERANCE_LSB:
        findings.append(Finding("error", "features",
                                f"front end differs from the host pipeline by up to {int(diff.max())} LSB "
                                f"({int((diff > FEATURE_TOLERANCE_LSB).sum())} of {diff.size} values over "
                                f"{FEATURE_TOLERANCE_LSB} LSB)"))  # fmt: skip
    outs = [output_array(log.outputs[o.index], o) for o in report.outputs if o.index in log.outputs]
    try:
        ref = reference_outputs(report, report_dir, [fw_features])
        host_out = reference_outputs(report, report_dir, [host])[0]
    except ModelError as exc:
        raise RunError(f"no host reference for the network: {exc.message}") from exc
    checks, out_findings = compare_outputs(outs, ref, report.outputs)
    findings.extend(out_findings)
    quality = _float_quality(report, report_dir, frontend, clip, checks, findings)
    label, score = top_class(outs[0], report, labels)
    host_label, _ = top_class(host_out, report, labels)
    hz = emulator.systick_hz

    def instructions(ticks: int | None) -> int | None:
        return instructions_from_ticks(ticks, hz) if ticks is not None and hz else None

    return AudioRunReport(
        elf=str(elf), machine=emulator.qemu_machine, input_source=input_source, clip_samples=int(clip.size),
        features_max_lsb=int(diff.max()), features_off=int((diff > 0).sum()), outputs=tuple(checks),
        label=label, score=score, host_label=host_label,
        frontend_instructions=instructions(log.frontend_ticks), network_instructions=instructions(log.ticks),
        findings=tuple(findings), passed=not any(f.severity == "error" for f in findings), quality=quality,
        firmware=firmware,
    )


def _float_quality(report: ProgramReport, report_dir: Path, frontend: Frontend, clip: np.ndarray,
                   checks: list[OutputCheck], findings: list[Finding]) -> tuple[dict[str, Any], ...]:
    """The firmware's outputs against the saved float model on the host's float features (appends the
    finding that prints them, and the untrained-weights warning)."""
    if report.untrained_weights:
        findings.append(Finding("warning", "weights", UNTRAINED_NOTE))
    floats = None
    if report.files.get("float_program"):
        try:
            feats = frontend.model_input(np.asarray(frontend.features(clip), dtype=np.float32), report.inputs[0].shape)
            floats = float_model_outputs(report, report_dir, [feats])
        except ModelError as exc:
            findings.append(Finding("warning", "int8 vs float", f"not measured: {exc.message}"))
            return ()
    quality, finding = quality_finding(report, checks, floats)
    findings.append(finding)
    return quality


__all__ = ["FEATURE_TOLERANCE_LSB", "LSB_TOLERANCE", "AudioRunReport", "clip_for", "host_features", "run_audio",
           "synthetic_clip", "top_class"]

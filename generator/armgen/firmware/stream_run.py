"""``armgen run --input long.wav`` on a streaming project (``armgen new sww --frontend lfbe --stream``).

The recording goes to the firmware whole as ``input.bin`` (int16 PCM, little-endian); the firmware reads it
through semihosting in blocks of :data:`armgen.model.stream.STREAM_BLOCK` samples, as audio would arrive, and
prints every frame it computes (``ARMGEN frame <k> <40 values>``), every window's outputs (``ARMGEN window <i>
<outputs>``, ``ARMGEN hop_ticks <i> <front end> <network>``) and each debounced detection (``ARMGEN detection
<sample> <output 0>``). This module checks, against the host:

- **features**: every frame against :meth:`armgen.model.frontend_lfbe.LfbeFrontend.recording_features` of the
  whole recording (get_lfbe_func over evaluate.py's long wav), quantized as the front end does, within
  :data:`FEATURE_TOLERANCE_LSB`; every window is 30 of these frames, so every window is checked;
- **the network**: each window's outputs against the lowered program on the host with the *firmware's*
  window, within 1 LSB (:func:`armgen.firmware.run_report.compare_outputs`);
- **the detections**: the firmware's against the host reference's: the reference ``.tflite`` in LiteRT on
  the host's windows, the same threshold (its own output quantization) and debouncing
  (:mod:`armgen.model.stream`), run with TFLite's reference kernels. A built-in ``sww`` program has the
  file's own integers (:mod:`armgen.model.tflite_quant`), so the two differ only where CMSIS-NN's arithmetic
  differs from TFLite's reference kernels: a different list is a warning (the check of the firmware is the
  per-window one above), a firmware detection that does not follow from its own printed outputs an error.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from armgen.boards import Emulator
from armgen.errors import ModelError, RunError
from armgen.firmware.audio_run import FEATURE_TOLERANCE_LSB
from armgen.firmware.console_protocol import parse_firmware_output
from armgen.firmware.faults import check_run
from armgen.firmware.qemu import instructions_from_ticks, run_qemu
from armgen.firmware.run_report import SATURATED, Finding, compare_outputs
from armgen.model import stream as st
from armgen.model.frontend_lfbe import LfbeFrontend
from armgen.model.program_report import ProgramReport
from armgen.model.reference import reference_outputs_many
from armgen.model.stream_score import Truth, score_windows

_FRAME = re.compile(r"ARMGEN frame (\d+) (-?\d+(?:,-?\d+)*)\s*$")
_WINDOW = re.compile(r"ARMGEN window (\d+) (-?\d+(?:,-?\d+)*)\s*$")
_TICKS = re.compile(r"ARMGEN hop_ticks (\d+) (\d+) (\d+)\s*$")
_DETECT = re.compile(r"ARMGEN detection (\d+) (-?\d+)\s*$")


@dataclass(frozen=True)
class StreamRunReport:
    """One recording through the streaming firmware.

    Attributes:
        samples: samples handed over (16 kHz); frames / windows: what the firmware computed and ran.
        detections / host_detections: detection start samples, firmware and host reference (LiteRT).
        features_off / features_max_lsb: int8 feature values (of all frames) off the host's, and the worst.
        outputs_max_lsb: the worst |firmware - lowered program on the firmware's window| over all windows.
        litert_max_lsb: the worst |firmware - LiteRT on the host's window| over output 0 (information: the
            host's windows may differ from the firmware's by 1 LSB of a feature, and CMSIS-NN from TFLite's kernels).
        frontend_instructions / network_instructions: per hop, mean over the windows (``-icount shift=0``).
        frontend_instructions_max / network_instructions_max: the largest hop's (what a deadline must fit).
        infer_every: hops per inference (``--infer-every``); the network figures are per inference.
        threshold_q / host_threshold_q: the int8 output 0 a positive needs, firmware and reference.
        truth / truth_kind: the ``--truth`` file and how its windows were made (``windows``, ``recipe``:
            :mod:`armgen.model.stream_score`), or None.
        score / host_score: :class:`armgen.model.stream_score.Score` as a dict, firmware and host reference.
        firmware: ``baremetal`` or ``zephyr``: what kind of image ran (the console protocol is the same).
    """

    elf: str
    machine: str
    input_source: str
    samples: int
    frames: int
    windows: int
    detections: tuple[int, ...]
    host_detections: tuple[int, ...]
    features_off: int
    features_total: int
    features_max_lsb: int
    outputs_max_lsb: int
    litert_max_lsb: int | None
    frontend_instructions: int | None
    network_instructions: int | None
    threshold_q: int
    host_threshold_q: int | None
    findings: tuple[Finding, ...]
    passed: bool
    sample_rate: int = 16000
    frontend_instructions_max: int | None = None
    network_instructions_max: int | None = None
    infer_every: int = 1
    truth: str | None = None
    truth_kind: str | None = None
    truth_windows: tuple[tuple[float, float], ...] = ()
    score: dict[str, Any] | None = None
    host_score: dict[str, Any] | None = None
    firmware: str = "baremetal"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (``armgen run --json``)."""
        return asdict(self)


def _ints(text: str) -> list[int]:
    return [int(v) for v in text.split(",")]


def parse_stream(console: str) -> tuple[dict[int, list[int]], dict[int, list[int]], dict[int, tuple[int, int]],
                                        list[tuple[int, int]]]:
    """The stream lines of a console: (frames, window outputs, window ticks (front end, network), detections)."""
    frames: dict[int, list[int]] = {}
    outs: dict[int, list[int]] = {}
    ticks: dict[int, tuple[int, int]] = {}
    dets: list[tuple[int, int]] = []
    for line in console.splitlines():
        if m := _FRAME.search(line):
            frames[int(m.group(1))] = _ints(m.group(2))
        elif m := _WINDOW.search(line):
            outs[int(m.group(1))] = _ints(m.group(2))
        elif m := _TICKS.search(line):
            ticks[int(m.group(1))] = (int(m.group(2)), int(m.group(3)))
        elif m := _DETECT.search(line):
            dets.append((int(m.group(1)), int(m.group(2))))
    return frames, outs, ticks, dets


def litert_outputs(tflite: Path, windows_q: np.ndarray) -> tuple[np.ndarray, float, int]:
    """Output 0 of the reference ``.tflite`` (LiteRT's reference kernels, ``ai_edge_litert``) on each int8 window
    (``n x frames x bins``, fed as its NHWC ``1 x frames x 1 x bins``): (``n x classes`` int8, output scale, zero
    point).

    Raises:
        ModelError: LiteRT is not installed or the file does not load.
    """
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError as exc:
        raise ModelError("ai_edge_litert is not installed (pip install ai-edge-litert)") from exc
    try:
        # TFLite's reference kernels: the arithmetic the file specifies. The default XNNPACK delegate requantizes
        # its own way (measured: 10 LSB apart from them on one of the 45 calibration windows).
        it = Interpreter(model_path=str(tflite), experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
        it.allocate_tensors()
    except Exception as exc:  # noqa: BLE001 - any load failure: one line
        raise ModelError(f"{tflite}: LiteRT cannot load it ({type(exc).__name__}: {exc})") from None
    i, o = it.get_input_details()[0], it.get_output_details()[0]
    ys = []
    for w in windows_q:
        it.set_tensor(i["index"], w[:, None, :][None].astype(np.int8))
        it.invoke()
        ys.append(it.get_tensor(o["index"])[0].copy())
    scale, zero = o["quantization"]
    return np.asarray(ys).reshape(len(ys), -1), float(scale), int(zero)


def check_recording(frontend: LfbeFrontend, pcm: np.ndarray, source: str, truth: Truth | None = None) -> None:
    """A recording must hold one window (``clip_samples``) and ``truth`` must fit it: checked before anything is
    built or run (``armgen run`` calls it ahead of the build; :func:`run_stream` again for direct callers).

    Raises:
        RunError: fewer samples than one window; a truth window outside the recording or at another sample rate
            (:func:`armgen.model.stream_score.score_windows`).
    """
    n = int(np.asarray(pcm).size)
    if n < frontend.clip_samples:
        raise RunError(f"{source}: {n:,} samples, shorter than one window ({frontend.clip_samples:,} samples, "
                       f"{frontend.clip_samples / frontend.sample_rate:.3f} s)", hint="stream a longer recording")
    if truth is not None:
        score_windows(frontend, truth, np.zeros(0, dtype=int), n)


def run_stream(
    elf: Path, report: ProgramReport, emulator: Emulator, frontend: LfbeFrontend, pcm: np.ndarray, *,
    report_dir: Path, input_source: str, tflite: Path | None, timeout: float = 600.0, log_path: Path | None = None,
    truth: Truth | None = None, firmware: str = "baremetal",
) -> StreamRunReport:
    """Stream ``pcm`` (int16 at 16 kHz) through the firmware on QEMU and check it frame by frame, window by window;
    with ``truth``, score the firmware's and the host reference's detectors by MLPerf Tiny's rules
    (:mod:`armgen.model.stream_score`). ``timeout``: seconds of QEMU wall time; ``firmware``: ``baremetal`` or
    ``zephyr``, recorded in the report.

    Raises:
        RunError: the firmware faulted, timed out, printed no frames, or the recording is shorter than a window;
            a truth window outside the recording (checked before QEMU runs).
    """
    x = np.asarray(pcm, dtype=np.int16).reshape(-1)
    check_recording(frontend, x, input_source, truth)
    qrun = run_qemu(elf, emulator, timeout=timeout, input_bytes=x.astype("<i2").tobytes(), log_path=log_path)
    check_run(qrun, parse_firmware_output(qrun.console), input_source)
    frames, outs, ticks, dets = parse_stream(qrun.console)
    info, out_info = report.inputs[0], report.outputs[0]
    assert info.scale is not None and info.zero_point is not None and out_info.scale is not None
    host_q = frontend.quantized(frontend.recording_features(x), info.scale, info.zero_point)
    if len(frames) != host_q.shape[0] or sorted(frames) != list(range(len(frames))):
        raise RunError(f"the firmware printed {len(frames)} frames, the recording has {host_q.shape[0]}")
    fw_q = np.asarray([frames[k] for k in range(len(frames))], dtype=np.int8)
    diff = np.abs(fw_q.astype(np.int32) - host_q.astype(np.int32))
    findings: list[Finding] = []
    if int(diff.max()) > FEATURE_TOLERANCE_LSB:
        findings.append(Finding("error", "features", f"{int((diff > FEATURE_TOLERANCE_LSB).sum())} of {diff.size} "
                                f"values more than {FEATURE_TOLERANCE_LSB} LSB off the host's"))
    # the network on the firmware's own windows, every window it ran
    fw_windows = st.windows(fw_q, frontend.num_frames)
    ran = sorted(outs)
    worst = 0
    try:
        refs = reference_outputs_many(report, report_dir, [[frontend.model_input(fw_windows[i], info.shape)]
                                                           for i in ran])
    except ModelError as exc:
        raise RunError(f"no host reference for the network: {exc.message}") from exc
    saturated = 0
    for i, ref in zip(ran, refs, strict=True):
        got = np.asarray(outs[i], dtype=np.int64).reshape(ref[0].shape)
        checks, bad = compare_outputs([got], ref, report.outputs)
        worst = max(worst, max(int(c.max_lsb_diff or 0) for c in checks))
        saturated += int(all(c.saturated for c in checks))
        # one window's posteriors at the int8 limits is a sure window (silence, a clear word), not a fault
        if any(f.severity == "error" and f.message != SATURATED for f in bad) and \
                not any(f.subject == "outputs" for f in findings):
            findings.append(Finding("error", "outputs", f"window {i}: more than 1 LSB off the host program"))
    if ran and saturated == len(ran):  # a recording without the wake word: sure "other" windows, not a fault
        findings.append(Finding("warning", "outputs", "every window's outputs are at the int8 limits (-128/127): "
                                "the model was sure of every window"))
    thr = st.threshold_q(frontend.threshold, out_info.scale, int(out_info.zero_point or 0))
    every = frontend.infer_every
    fw_pos = _positives(outs, len(fw_windows), thr)
    expect = st.detections(frontend, fw_pos, every)
    if expect != [d for d, _ in dets]:
        findings.append(Finding("error", "detections", f"the firmware reported {[d for d, _ in dets]}, its own "
                                f"outputs give {expect}"))
    host_dets: list[int] = []
    host_pos = None
    litert_lsb = host_thr = None
    if tflite is not None and tflite.is_file():
        ys, scale, zero = litert_outputs(tflite, st.windows(host_q, frontend.num_frames)[::every])
        host_thr = st.threshold_q(frontend.threshold, scale, zero)
        pos = np.zeros(len(fw_windows), dtype=int)
        pos[::every] = st.positives(ys[:, 0], host_thr)
        host_dets, host_pos = st.detections(frontend, pos, every), pos
        fw0 = np.asarray([outs[i][0] for i in ran], dtype=np.int64)
        litert_lsb = int(np.abs(fw0 - ys[: len(fw0), 0].astype(np.int64)).max()) if len(fw0) else 0
        if host_dets != [d for d, _ in dets]:
            findings.append(Finding("warning", "detections", "the firmware's detections differ from the reference "
                                    ".tflite's on the host's features"))
    else:
        findings.append(Finding("warning", "reference", "no reference .tflite: the host detections were not made"))
    hz = emulator.systick_hz
    fe_t = [t[0] for t in ticks.values()]
    net_t = [t[1] for t in ticks.values()]

    def mean_instructions(values: list[int]) -> int | None:
        return instructions_from_ticks(round(float(np.mean(values))), hz) if values and hz else None

    def max_instructions(values: list[int]) -> int | None:
        return instructions_from_ticks(max(values), hz) if values and hz else None

    scores: dict[str, Any] = {}
    if truth is not None:
        scores["score"] = asdict(score_windows(frontend, truth, fw_pos, int(x.size), every))
        if host_pos is not None:
            scores["host_score"] = asdict(score_windows(frontend, truth, host_pos, int(x.size), every))
        scores |= {"truth": truth.path, "truth_kind": truth.kind, "truth_windows": truth.windows}
        seconds = x.size / frontend.sample_rate
        if truth.length_s is not None and abs(truth.length_s - seconds) > 0.5:  # a truth file of another recording?
            findings.append(Finding("warning", "truth", f"{truth.path} states length_sec {truth.length_s:g}, the "
                                    f"recording is {seconds:.2f} s"))
    return StreamRunReport(
        elf=str(elf), machine=emulator.qemu_machine, input_source=input_source, samples=int(x.size),
        frames=len(frames), windows=len(outs), detections=tuple(d for d, _ in dets), host_detections=tuple(host_dets),
        features_off=int((diff > 0).sum()), features_total=int(diff.size), features_max_lsb=int(diff.max()),
        outputs_max_lsb=worst, litert_max_lsb=litert_lsb, frontend_instructions=mean_instructions(fe_t),
        network_instructions=mean_instructions(net_t), frontend_instructions_max=max_instructions(fe_t),
        network_instructions_max=max_instructions(net_t), threshold_q=thr, host_threshold_q=host_thr,
        findings=tuple(findings), passed=not any(f.severity == "error" for f in findings),
        sample_rate=frontend.sample_rate, firmware=firmware, infer_every=every, **scores,
    )


def reference_tflite(record: Any) -> Path | None:
    """The reference ``.tflite`` of a project (its record's weights file, else ``$ARMGEN_MLPERF_DIR`` or the
    weights cache of sample sww: never downloaded here), or None."""
    from armgen.model.model_source import mlperf_dir
    from armgen.model.pretrained import cached, weights_file

    model = getattr(record, "model", None)
    if model is not None and model.weights and str(model.weights).endswith(".tflite"):
        path = Path(record.resolve(model.weights))
        if path.is_file():
            return path
    folder = mlperf_dir()
    if folder is not None and (folder / weights_file("sww").file).is_file():
        return folder / weights_file("sww").file
    return cached("sww")


def _positives(outs: dict[int, list[int]], n: int, threshold: int) -> np.ndarray:
    """0/1 per window from the firmware's printed output 0 (0 for windows it did not run)."""
    pos = np.zeros(n, dtype=int)
    for i, values in outs.items():
        if i < n:
            pos[i] = int(values[0] >= threshold)
    return pos


def describe(rr: StreamRunReport) -> list[str]:
    """The report as lines for the console."""
    sec = rr.sample_rate

    def times(values: tuple[int, ...]) -> str:
        return ", ".join(f"{v / sec:.3f} s (sample {v:,})" for v in values) or "none"

    lines = [f"input: {rr.input_source} ({rr.samples:,} samples, {rr.samples / sec:.2f} s): {rr.frames} frames, "
             f"{rr.windows} windows run",
             f"detections (firmware):          {times(rr.detections)}",
             f"detections (host, .tflite/LiteRT): {times(rr.host_detections)}",
             f"features vs host (whole recording): {rr.features_off:,} of {rr.features_total:,} values off, max "
             f"{rr.features_max_lsb} LSB (allowed {FEATURE_TOLERANCE_LSB})",
             f"outputs vs the host program on the firmware's windows: max {rr.outputs_max_lsb} LSB"
             + (f"; output 0 vs LiteRT on the host's windows: max {rr.litert_max_lsb} LSB"
                if rr.litert_max_lsb is not None else ""),
             f"threshold: int8 output 0 >= {rr.threshold_q}" + (f" (reference .tflite: >= {rr.host_threshold_q})"
                                                               if rr.host_threshold_q is not None else "")]
    if rr.truth is not None:
        how = "detection windows" if rr.truth_kind == "windows" else "a recipe: each word's start + 1 s"
        spans = ", ".join(f"{a:.3f}-{b:.3f} s" for a, b in rr.truth_windows)
        lines.append(f"truth: {rr.truth} ({how}): {len(rr.truth_windows)} wake word(s) at {spans or 'none'}")
        for who, sc in (("firmware", rr.score), ("host, .tflite/LiteRT", rr.host_score)):
            if sc is not None:
                lines.append(f"score ({who}): {_score_line(sc, sec)}")
    if rr.frontend_instructions is not None and rr.network_instructions is not None:
        per = "per hop" if rr.infer_every == 1 else f"per inference, one every {rr.infer_every} hops"
        lines.append(f"instructions: front end {rr.frontend_instructions:,} per hop, network "
                     f"{rr.network_instructions:,} {per} (mean; largest {rr.frontend_instructions_max or 0:,} + "
                     f"{rr.network_instructions_max or 0:,}; QEMU -icount shift=0, not silicon cycles)")
    lines += [f"{f.severity}: {f.subject}: {f.message}" for f in rr.findings]
    lines.append("PASS" if rr.passed else "FAIL")
    return lines


def _score_line(sc: dict[str, Any], rate: int) -> str:
    """``true detections 2, false detections 0, false rejections 1 (7.000 s)`` from a score dict."""
    def at(key: str) -> str:
        return f" ({', '.join(f'{v / rate:.3f} s' for v in sc[key])})" if sc[key] else ""

    return (f"true detections {sc['true_detections']}{at('true_at')}, false detections {sc['false_detections']}"
            f"{at('false_at')}, false rejections {sc['false_rejections']}{at('rejected_at')}")


def duty_cycle(rr: StreamRunReport, clock_hz: int, frame_step: int = 512) -> dict[str, Any] | None:
    """The share of a hop (``frame_step`` samples, 32 ms at 16 kHz) a core at ``clock_hz`` spends on the largest
    hop's instructions (one with an inference) and on the mean hop's (the network once every ``infer_every``
    hops), counted as one instruction per cycle (QEMU counts instructions, not
    cycles: a lower bound of the cycles on silicon, whose loads and multiplies take more); None without counts.
    Above 1 the board cannot keep up with the audio."""
    if not clock_hz or rr.frontend_instructions is None or rr.network_instructions is None:
        return None
    budget = clock_hz * frame_step / rr.sample_rate
    mean = rr.frontend_instructions + rr.network_instructions / max(rr.infer_every, 1)
    worst = (rr.frontend_instructions_max or 0) + (rr.network_instructions_max or 0)  # a hop with an inference
    return {"clock_hz": clock_hz, "cycles_per_hop": round(budget), "mean": round(mean / budget, 4),
            "largest": round(worst / budget, 4), "keeps_up": worst < budget}

"""Scoring by MLPerf Tiny's rules (armgen.model.stream_score) and the truth files it reads."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import wave

import numpy as np
import pytest

from armgen.errors import RunError
from armgen.model.frontend import read_wav, wav_conversion
from armgen.model.frontend_lfbe import LfbeFrontend
from armgen.model.stream import window_end
from armgen.model.stream_score import detector_signal, load_truth, presence, score, score_windows

RATE = 16000


def _truth(tmp_path, data, name="truth.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return load_truth(path)


def test_reads_both_upstream_formats(tmp_path):
    windows = _truth(tmp_path, {"length_sec": 10.0, "detection_windows": [[1.0, 1.6], [4.0, 4.5]],
                                "sample_rate": 16000})
    assert windows.kind == "windows" and windows.windows == ((1.0, 1.6), (4.0, 4.5)) and windows.length_s == 10.0
    config = _truth(tmp_path, [{"wav_file": "x.wav", "detection_windows": [[2.0, 2.5]], "length_sec": 5,
                                "sample_rate": 16000}], "config.json")
    assert config.windows == ((2.0, 2.5),)
    # short_wav_easy10s_spec.json's shape: a word's start, the window start + 1 s
    recipe = _truth(tmp_path, {"configs_background": [["{musan_path}/m.wav", 5.0, 10.0, 0.05]],
                               "configs_wakeword": [["{speech_commands_path}/marvin/a.wav", 1.0, 0.7],
                                                    ["{speech_commands_path}/marvin/b.wav", 7.0, 0.9]],
                               "length_sec": 10.0, "sample_rate": 16000}, "spec.json")
    assert recipe.kind == "recipe" and recipe.windows == ((1.0, 2.0), (7.0, 8.0))


@pytest.mark.parametrize("text, words", [
    ("not json", "not JSON"),
    ("[1, 2]", "neither detection windows nor a recipe"),
    ('{"windows": []}', "neither detection_windows nor configs_wakeword"),
    ('{"detection_windows": [[2.0, 1.0]]}', "is not 0 <= start < stop"),
    ('{"detection_windows": [[1.0]]}', r"malformed truth file: entry 1 is \[1.0\], not \[start_s, stop_s\]"),
    ('{"detection_windows": "abc"}', "detection_windows must be a list"),
    ('{"detection_windows": [[0.5, "a"]]}', "entry 1 is"),
    ('{"configs_wakeword": [["a.wav"]]}', r"not \[wav, start_s, amplitude\]"),
    ('{"detection_windows": [], "sample_rate": "x"}', "are not numbers"),
])
def test_a_truth_file_in_neither_format_is_one_clear_error(tmp_path, text, words):
    path = tmp_path / "t.json"
    path.write_text(text)
    with pytest.raises(RunError, match=words):
        load_truth(path)
    with pytest.raises(RunError, match="not found"):
        load_truth(tmp_path / "missing.json")


def _upstream_get_true_and_false_detections(detection_signal, ww_present, stride=512, rate=RATE):
    """str_ww_util.py's function as upstream wrote it (mlcommons/tiny 1afd2c98), for the comparison below."""
    from armgen.model.stream import debounce_detections

    det_delay_tol, det_mask_delay = int(0.5 * rate), int(1.0 * rate)
    ww_detected = np.repeat(detection_signal, stride)
    ww_detected = np.concatenate((np.zeros(len(ww_present) - len(ww_detected)), ww_detected), axis=0)
    ww_false_detected = np.copy(ww_detected)
    ww_false_rejected, ww_true_detected = np.zeros(ww_detected.shape), np.zeros(ww_detected.shape)
    ww_starts, ww_stops = np.nonzero(np.diff(ww_present) > 0.5)[0], np.nonzero(np.diff(ww_present) < -0.5)[0]
    for win in zip(ww_starts, ww_stops, strict=True):
        if np.any(ww_detected[win[0] : win[1] + det_delay_tol] == 1):
            ww_true_detected[win[0]] = 1
        else:
            ww_false_rejected[win[0]] = 1
        ww_false_detected[win[0] : win[1] + det_mask_delay] = 0
    return ww_true_detected, debounce_detections(ww_false_detected, rate), ww_false_rejected


def test_score_equals_upstreams_function_on_a_stride_aligned_recording():
    """A recording whose length leaves no remainder after the last hop: evaluate.py's alignment (zeros in front)
    and armgen's (each window's real end) are the same, so the scores must be equal, mark for mark."""
    fe = LfbeFrontend()
    windows = 400
    samples = window_end(fe, windows - 1)  # 15,872 + 399 x 512: stride-aligned
    rng = np.random.default_rng(3)
    positive = (rng.random(windows) > 0.93).astype(int)
    truth_windows = ((2.0, 2.6), (5.5, 6.2), (9.0, 9.4), (12.0, 12.5))
    present = np.zeros(samples, dtype=int)
    for a, b in truth_windows:
        present[int(a * RATE) : int(b * RATE)] = 1
    mine = score(detector_signal(fe, positive, samples), present)
    true_d, false_d, rejected = _upstream_get_true_and_false_detections(positive, present)
    assert mine.true_detections == int(np.sum(true_d != 0)) and mine.true_at == tuple(np.nonzero(true_d)[0])
    assert mine.false_detections == int(np.sum(false_d != 0)) and mine.false_at == tuple(np.nonzero(false_d)[0])
    assert mine.false_rejections == int(np.sum(rejected != 0))
    assert mine.true_detections + mine.false_rejections == 4 and mine.false_detections > 0


def test_detected_late_within_half_a_second_and_false_outside_the_mask():
    fe = LfbeFrontend()
    samples = 10 * RATE
    present = np.zeros(samples, dtype=int)
    present[RATE : RATE + 8000] = 1  # a word at 1.0-1.5 s
    n = (samples - fe.clip_samples) // fe.frame_step + 1

    def hit(at_s):
        """Positive windows whose hop covers ``at_s``."""
        pos = np.zeros(n, dtype=int)
        for i in range(n):
            end = window_end(fe, i)
            pos[i] = int(end - fe.frame_step <= at_s * RATE < end)
        return pos

    assert score(detector_signal(fe, hit(1.9), samples), present).true_detections == 1  # 0.4 s after the end
    late = score(detector_signal(fe, hit(2.2), samples), present)  # 0.7 s late: a miss, inside the 1 s mask
    assert (late.true_detections, late.false_rejections, late.false_detections) == (0, 1, 0)
    far = score(detector_signal(fe, hit(4.0), samples), present)
    assert (far.false_rejections, far.false_detections) == (1, 1) and far.false_at[0] <= 4 * RATE


def test_truth_outside_the_recording_or_at_another_rate_is_refused(tmp_path):
    fe = LfbeFrontend()
    late = _truth(tmp_path, {"detection_windows": [[9.5, 10.5]]})
    with pytest.raises(RunError, match="ends at or after the recording's end"):
        presence(late, 10 * RATE)
    other = _truth(tmp_path, {"detection_windows": [[1.0, 1.5]], "sample_rate": 8000}, "r.json")
    with pytest.raises(RunError, match="8000 Hz"):
        score_windows(fe, other, np.zeros(0, dtype=int), 10 * RATE)


def test_an_8_khz_24_bit_wav_is_converted_and_says_so(tmp_path):
    t = np.arange(8000) / 8000.0
    x = np.rint(np.sin(2 * np.pi * 440 * t) * 0.5 * 2**23).astype(np.int32)
    path = tmp_path / "low.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(3)
        w.setframerate(8000)
        w.writeframes(b"".join(int(v).to_bytes(3, "little", signed=True) for v in x))
    assert wav_conversion(path, RATE) == "8,000 Hz resampled to 16,000 Hz, 24-bit PCM to 16-bit"
    if shutil.which("sox"):  # sox writes 24 bits as WAVE_FORMAT_EXTENSIBLE, which the wave module cannot read
        ext = tmp_path / "sox24.wav"
        subprocess.run(["sox", "-n", "-r", "8000", "-b", "24", "-c", "1", str(ext), "synth", "0.5", "sine", "440"],
                       check=True, capture_output=True, timeout=60)
        assert wav_conversion(ext, RATE) == "8,000 Hz resampled to 16,000 Hz, 24-bit PCM to 16-bit"
    pcm = read_wav(path, RATE)
    assert pcm.dtype == np.int16 and pcm.size == 16000 and 16000 < int(np.abs(pcm).max()) < 16700  # resampling rings a little


def test_truth_on_a_project_that_does_not_stream_is_refused_before_building(tmp_path):
    from _programs import FIXTURES_DIR, armgen, one_error_line
    from armgen.pipeline import new_project

    new_project("kws", "qemu_mps3_an547", model=str(FIXTURES_DIR / "kws-cortex-m55" / "kws.pte"), weights=None,
                rtos="baremetal", zephyr_release=None, backend=None, out_dir=tmp_path, stack_size=None, force=False,
                say=lambda _line: None)
    truth = tmp_path / "t.json"
    truth.write_text('{"detection_windows": [[1.0, 1.5]]}')
    r = armgen("run", str(tmp_path / "kws"), "--input", str(tmp_path / "x.wav"), "--truth", str(truth))
    assert r.returncode == 2 and "--truth scores a streaming wakeword project; kws is not one" in one_error_line(r)
    assert not (tmp_path / "kws" / "build").exists()


def test_duty_cycle_is_the_share_of_a_hop_at_the_boards_clock():
    from armgen.firmware.stream_run import StreamRunReport, duty_cycle

    rr = StreamRunReport(
        elf="x.elf", machine="mps2-an386", input_source="r.wav", samples=160000, frames=311, windows=282,
        detections=(), host_detections=(), features_off=0, features_total=12440, features_max_lsb=0, outputs_max_lsb=0,
        litert_max_lsb=0, frontend_instructions=84_840, network_instructions=2_294_880, threshold_q=116,
        host_threshold_q=116, findings=(), passed=True, frontend_instructions_max=90_000,
        network_instructions_max=2_300_000)
    at_168 = duty_cycle(rr, 168_000_000)  # stm32f4_disco: 5,376,000 cycles per 32 ms hop
    assert at_168 is not None and at_168["cycles_per_hop"] == 5_376_000 and at_168["keeps_up"]
    assert at_168["mean"] == round(2_379_720 / 5_376_000, 4) and at_168["largest"] == round(2_390_000 / 5_376_000, 4)
    at_25 = duty_cycle(rr, 25_000_000)  # the an386 FPGA's 25 MHz: 800,000 cycles, about three times too few
    assert at_25 is not None and not at_25["keeps_up"] and at_25["largest"] > 2.9
    assert duty_cycle(rr, 0) is None
    every3 = duty_cycle(dataclasses.replace(rr, infer_every=3), 168_000_000)  # the network on one hop in three
    assert every3 is not None and every3["mean"] == round((84_840 + 2_294_880 / 3) / 5_376_000, 4)
    assert every3["largest"] == at_168["largest"]  # a hop with an inference


def test_an_npu_programs_host_run_takes_a_wav_through_the_host_front_end(tmp_path):
    """An Ethos-U program runs on the TOSA reference model with tensors: a project with an audio front end gives it
    the host front end's int8 features of the WAV's clip (kws: MFCC; the committed U55 kws program)."""
    from types import SimpleNamespace

    from scipy.io import wavfile

    from _programs import FIXTURES_DIR
    from armgen.model.frontend import frontend_from_declaration
    from armgen.model.model_source import sample_module
    from armgen.model.program_report import ProgramReport
    from armgen.pipeline import _npu_inputs

    report = ProgramReport.load(FIXTURES_DIR / "kws-alif_e8" / "kws.report.json")
    fe = frontend_from_declaration(sample_module("kws").FRONTEND, "kws")
    record = SimpleNamespace(name="kws", frontend=fe.as_record())
    t = np.arange(8000) / 8000.0
    wavfile.write(tmp_path / "tone.wav", 8000, np.rint(np.sin(2 * np.pi * 440 * t) * 12000).astype(np.int16))
    notes: list[str] = []
    inputs, source = _npu_inputs(record, report, tmp_path / "tone.wav", notes.append)
    assert len(inputs) == 1 and tuple(inputs[0].shape) == tuple(report.inputs[0].shape)
    assert inputs[0].dtype == np.int8 and len(set(inputs[0].reshape(-1).tolist())) > 10
    assert source is not None and source.endswith("(8,000 Hz resampled to 16,000 Hz): the host mfcc front end's features") and not notes

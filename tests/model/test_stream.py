"""The streaming wakeword (armgen.model.stream, armgen new sww --frontend lfbe --stream, armgen run --input
long.wav): the host ring buffer against get_lfbe_func over the whole recording, the per-window detector against
str_ww_util.py's debounce, the early refusals, and one recording streamed through the firmware on QEMU."""

from __future__ import annotations

import json

import numpy as np
import pytest

from _programs import armgen, one_error_line, sww_marvin_recording
from armgen.model import stream as st
from armgen.model.frontend import LfbeFrontend, frontend_from_declaration


def _sww_frontend() -> LfbeFrontend:
    from armgen.model.model_source import sample_module

    fe = frontend_from_declaration(sample_module("sww").FRONTEND, "sww")
    assert isinstance(fe, LfbeFrontend)
    return fe


def _speech_like(seconds: float, seed: int = 0) -> np.ndarray:
    """Chirps and noise bursts over quiet noise, int16 at 16 kHz (loud enough to reach both clips of the scale)."""
    rng = np.random.default_rng(seed)
    n = int(16000 * seconds)
    t = np.arange(n) / 16000
    x = 200 * rng.standard_normal(n) + 12000 * np.sin(2 * np.pi * (300 + 900 * t) * t) * (np.sin(2 * np.pi * 0.7 * t) > 0.3)
    return np.clip(np.rint(x), -32768, 32767).astype(np.int16)


@pytest.mark.parametrize("block", [512, 160, 1000, 7])
def test_ring_buffer_equals_the_whole_recording(block):
    """Frames of any block size equal get_lfbe_func over the whole recording (pre-emphasis carried across hops)."""
    fe = _sww_frontend()
    pcm = _speech_like(2.5)
    whole = fe.recording_features(pcm)
    assert whole.shape == (1 + (pcm.size - 1024) // 512, 40)
    assert (whole == 0).any() and (whole > 0.5).any()
    assert np.abs(st.stream_features(fe, pcm, block) - whole).max() < 1e-12


def test_first_window_is_the_one_shot_window():
    """Window 0 of a stream (pre-emphasis from x[-1] = 0 at the recording's start) is the one-shot features of
    the recording's first 15,872 samples; later windows differ from a one-shot window only by the pre-emphasis
    of their first sample."""
    fe = _sww_frontend()
    pcm = _speech_like(1.5, seed=1)
    frames = fe.recording_features(pcm)
    one_shot = frontend_from_declaration({**fe.as_record(), "align": "start"}, "test")
    assert np.abs(st.windows(frames, 30)[0] - one_shot.features(pcm[:15872])).max() < 1e-12
    assert len(st.windows(frames, 30)) == frames.shape[0] - 29


def test_detector_follows_upstream_debounce():
    fe = _sww_frontend()
    rng = np.random.default_rng(0)
    for _ in range(200):
        pos = (rng.random(int(rng.integers(1, 150))) < rng.random()).astype(int)
        assert st.detections(fe, pos) == st.detections_upstream(fe, pos)
    # a run of 40 positive hops from window 0: one detection, a second 16,000 samples later (mid-hop 31)
    assert st.detections(fe, np.ones(40, dtype=int)) == [15360, 31360]
    assert st.threshold_q(0.95, 1 / 256, -128) == 116  # the C reference's out_data[0] > 115


def test_stream_record_keys_only_when_streaming():
    fe = _sww_frontend()
    assert "stream" not in fe.as_record()
    streaming = frontend_from_declaration({**fe.as_record(), "stream": True, "infer_every": 2}, "test")
    assert streaming.as_record()["infer_every"] == 2


def test_new_refuses_bad_stream_options(tmp_path):
    r = armgen("new", "sww", "--board", "qemu_mps3_an547", "--stream", "--out", str(tmp_path))
    assert r.returncode == 2 and "--frontend lfbe" in r.stderr and len(r.stderr.strip().splitlines()) <= 2
    r = armgen("new", "sww", "--board", "qemu_mps3_an547", "--infer-every", "2", "--out", str(tmp_path))
    assert r.returncode == 2 and "--stream" in r.stderr
    r = armgen("new", "kws", "--board", "qemu_mps3_an547", "--frontend", "mfcc", "--stream", "--out", str(tmp_path))
    assert r.returncode == 2 and "log-mel" in r.stderr


@pytest.mark.workspace
@pytest.mark.needs_workspace
@pytest.mark.slow
def test_sww_streams_a_recording_on_qemu(tmp_path):
    """espeak-ng's "marvin" in 2.5 s of quiet, streamed through the generated firmware on QEMU mps3-an547: every
    frame within 1 LSB of the whole-recording host features, every window's outputs equal to the host program's
    on the firmware's window, the detections those outputs give."""
    weights, long_wav, extra = sww_marvin_recording(tmp_path)
    from scipy.io import wavfile

    rec = wavfile.read(long_wav)[1]
    made = armgen("new", "sww", "--board", "qemu_mps3_an547", "--frontend", "lfbe", "--stream", "--out",
                  str(tmp_path), *extra)
    assert made.returncode == 0, made.stderr
    # bad input, refused in one line before anything is built
    wavfile.write(tmp_path / "short.wav", 16000, rec[:15000])
    r = armgen("run", str(tmp_path / "sww"), "--input", str(tmp_path / "short.wav"))
    assert r.returncode == 2 and "15,000 samples, shorter than one window (15,872" in one_error_line(r)
    (tmp_path / "truth.json").write_text('{"windows": [[0.75, 1.3]]}')
    r = armgen("run", str(tmp_path / "sww"), "--input", str(tmp_path / "long.wav"), "--truth",
               str(tmp_path / "truth.json"))
    assert r.returncode == 2 and "neither detection_windows nor configs_wakeword" in one_error_line(r)
    assert not (tmp_path / "sww" / "build").exists()
    (tmp_path / "truth.json").write_text('{"detection_windows": [[0.75, 1.3]], "sample_rate": 16000}')
    res = armgen("run", str(tmp_path / "sww"), "--input", str(tmp_path / "long.wav"), "--json", "--truth",
                 str(tmp_path / "truth.json"))
    assert res.returncode == 0, res.stderr
    rr = json.loads(res.stdout)
    print(f"\nsww stream: detections {rr['detections']} (host {rr['host_detections']}), features "
          f"{rr['features_off']} of {rr['features_total']} off, score {rr['score']}, outputs {rr['outputs_max_lsb']} LSB, per hop front end "
          f"{rr['frontend_instructions']:,} + network {rr['network_instructions']:,} instructions")
    assert rr["passed"] and rr["frames"] == 1 + (40000 - 1024) // 512 and rr["windows"] == rr["frames"] - 29
    assert rr["features_max_lsb"] <= 1 and rr["outputs_max_lsb"] <= 1
    assert rr["frontend_instructions"] and rr["network_instructions"]
    assert rr["truth_kind"] == "windows" and rr["score"]["true_detections"] + rr["score"]["false_rejections"] == 1
    assert rr["frontend_instructions_max"] >= rr["frontend_instructions"]
    # white noise: sure "other" windows at the int8 limits, no detection, and the run passes (a recording without
    # the wake word is how a false-alarm rate is measured)
    noise = np.random.default_rng(0).standard_normal(24000) * 4000
    wavfile.write(tmp_path / "noise.wav", 16000, noise.astype(np.int16))
    quiet = armgen("run", str(tmp_path / "sww"), "--input", str(tmp_path / "noise.wav"), "--json")
    assert quiet.returncode == 0, quiet.stderr
    assert json.loads(quiet.stdout)["detections"] == []
    _program_gives_the_reference_files_integers(tmp_path / "sww" / "model", weights)


def _program_gives_the_reference_files_integers(model_dir, weights):
    """The project's program adopts the .tflite's own scales and zero points (armgen.model.tflite_quant): on
    upstream's 45 calibration windows its lowered program (the firmware's arithmetic, on the host) gives LiteRT's
    int8 outputs with TFLite's reference kernels, to the bit (with calibration's scales: up to 20 LSB apart)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    from armgen.model.program_report import ProgramReport
    from armgen.model.reference import reference_outputs_many

    cal = weights.parent / "calibration_samples.npz"
    if not cal.is_file():
        print(f"(no {cal}: the comparison with LiteRT on the calibration windows was not made)")
        return
    report = ProgramReport.load(next(model_dir.glob("*.report.json")))
    assert (report.outputs[0].scale, report.outputs[0].zero_point) == (1 / 256, -128)
    it = Interpreter(model_path=str(weights), experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    i, o = it.get_input_details()[0], it.get_output_details()[0]
    scale, zero = i["quantization"]
    with np.load(cal) as z:
        q_inputs = [np.array(w[None] / scale + zero, dtype=np.int8) for w in z["specs"]]  # evaluate.py's cast
    mine = reference_outputs_many(report, model_dir, [[q.transpose(0, 3, 1, 2).copy()] for q in q_inputs])
    worst = 0
    for m, q in zip(mine, q_inputs, strict=True):
        it.set_tensor(i["index"], q)
        it.invoke()
        worst = max(worst, int(np.abs(np.asarray(m[0]).reshape(-1).astype(int)
                                      - it.get_tensor(o["index"]).reshape(-1).astype(int)).max()))
    assert len(q_inputs) == 45 and worst == 0, f"largest int8 output difference from LiteRT {worst} LSB"

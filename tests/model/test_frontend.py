"""The MFCC front end (armgen.model.frontend, armgen new --frontend, armgen run --input word.wav):
the numpy pipeline against TensorFlow's recorded features, the generated constants, WAV reading, the
early refusals, and the firmware on QEMU hearing espeak-ng words with features equal to the host's."""

from __future__ import annotations

import json
import shutil
import subprocess
import wave
from pathlib import Path

import numpy as np
import pytest

from _programs import armgen
from armgen.errors import ModelError
from armgen.model.frontend import MfccFrontend, frontend_from_declaration, read_wav

FIXTURE = Path(__file__).parents[1] / "data" / "mfcc_tf_fixture.npz"
WORDS = ("down", "go", "left", "no", "off", "on", "right", "stop", "up", "yes")


def _kws_frontend() -> MfccFrontend:
    from armgen.model.model_source import sample_module

    fe = frontend_from_declaration(sample_module("kws").FRONTEND, "kws")
    assert isinstance(fe, MfccFrontend)
    return fe


def test_numpy_pipeline_matches_tensorflow():
    """tests/data/make_mfcc_tf_fixture.py recorded TensorFlow 2.21's features of three espeak-ng words
    (tf.signal.stft, linear_to_mel_weight_matrix, mfccs_from_log_mel_spectrograms, as MLPerf Tiny's
    get_dataset.py calls them). float32 TensorFlow vs float64 numpy: about 1e-4, a few ten-thousandths
    of the kws input's quantization step (0.59)."""
    data = np.load(FIXTURE)
    fe = _kws_frontend()
    assert data["mfcc"].shape == (3, fe.num_frames, fe.num_mfcc) == (3, 49, 10)
    for pcm, expected in zip(data["pcm"], data["mfcc"], strict=True):
        got = fe.features(pcm)
        assert np.abs(got - expected).max() < 1e-3, np.abs(got - expected).max()
    assert data["mfcc"].min() < -100  # the silent frames after each word: log(1e-6) in coefficient 0


def test_generated_constants_rebuild_the_pipeline():
    fe = _kws_frontend()
    t = fe.tables()
    assert len(t["window"]) == 480 and len(t["dct"]) == 10 * 40
    mel = np.zeros((fe.num_bins, fe.mel_bins))
    w = iter(t["mel_weights"])
    for m, (start, count) in enumerate(zip(t["mel_start"], t["mel_count"], strict=True)):
        for j in range(count):
            mel[start + j, m] = next(w)
    assert np.allclose(mel, fe.mel_matrix(), atol=1e-7)
    assert mel[0].sum() == 0 and mel[129:].sum() == 0  # DC bin zero, nothing above 4 kHz (bin 128 = 4000 Hz)
    assert sum(t["mel_count"]) == len(t["mel_weights"]) < 300  # sparse rows, not 257 x 40


def test_read_wav_resamples_mixes_and_refuses(tmp_path):
    rate = 22050  # what espeak-ng writes
    t = np.arange(rate // 2) / rate
    stereo = (np.stack([np.sin(2 * np.pi * 440 * t), np.zeros_like(t)], axis=1) * 20000).astype(np.int16)
    path = tmp_path / "tone.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(stereo.tobytes())
    pcm = read_wav(path, 16000)
    assert pcm.dtype == np.int16 and pcm.size == 8000
    assert 9000 < np.abs(pcm).max() < 10500  # channels averaged: half of 20,000
    for name, data in (("not.wav", b"hello"), ("truncated.wav", b"RIFF....WAVEfmt ")):
        bad = tmp_path / name
        bad.write_bytes(data)
        with pytest.raises(ModelError, match="not a readable WAV file"):
            read_wav(bad, 16000)
    with pytest.raises(ModelError, match="audio file not found"):
        read_wav(tmp_path / "missing.wav", 16000)


@pytest.mark.parametrize("decl,message", [
    ({"kind": "lpc"}, "kind 'lpc' is not one of: mfcc"),
    ({"kind": "mfcc", "mel_bin": 40}, "unknown keys mel_bin"),
    ({"kind": "mfcc", "fft_length": 500}, "power of two"),
    ({"kind": "mfcc", "upper_hz": 9000.0}, "mel band"),
    ([1, 2], "must be a dict"),
])  # fmt: skip
def test_bad_declarations_are_one_line_errors(decl, message):
    with pytest.raises(ModelError, match=message):
        frontend_from_declaration(decl, "model.py")


def test_new_refuses_a_frontend_before_compiling(tmp_path):
    r = armgen("new", "kws", "--board", "alif_e8", "--frontend", "lpc", "--out", str(tmp_path))
    assert r.returncode == 2 and "Invalid value for '--frontend'" in r.stderr and "Traceback" not in r.stderr
    r = armgen("new", "ic", "--board", "qemu_mps3_an547", "--frontend", "mfcc", "--out", str(tmp_path))
    assert r.returncode == 2 and "ic declares no front end" in r.stderr
    assert not any(tmp_path.iterdir())


def _espeak_clips(tmp_path: Path) -> dict[str, Path]:
    exe = shutil.which("espeak-ng")
    if exe is None:
        pytest.skip("espeak-ng not installed (Debian package espeak-ng)")
    clips = {}
    for word in WORDS:
        path = tmp_path / f"{word}.wav"
        subprocess.run([exe, "-w", str(path), word], check=True, capture_output=True, timeout=60)
        clips[word] = path
    return clips


@pytest.mark.workspace
@pytest.mark.needs_workspace
@pytest.mark.slow
@pytest.mark.parametrize("board", ["qemu_mps3_an547", "qemu_mps2_an386"])
def test_kws_hears_espeak_words_on_qemu(board, tmp_path):
    """Ten espeak-ng command words through the generated front end and kws on QEMU: every feature
    within 1 LSB of the host pipeline, the network's outputs equal to the host's on the firmware's
    features, the same label as the host. Synthetic speech is not what kws was trained on; with the
    trained weights at least half the words are heard right (6 of 10 on 2026-12-01)."""
    from armgen.boards import load_board
    from armgen.firmware.audio_run import run_audio
    from armgen.firmware.build import build_project
    from armgen.model.frontend import frontend_from_record
    from armgen.model.model_source import mlperf_dir
    from armgen.model.program_report import ProgramReport
    from armgen.project.record import load_project

    clips = _espeak_clips(tmp_path)
    made = armgen("new", "kws", "--board", board, "--frontend", "mfcc", "--out", str(tmp_path))
    assert made.returncode == 0, made.stderr
    project = tmp_path / "kws"
    record = load_project(project)
    assert record.frontend is not None and record.model is not None and len(record.model.labels) == 12
    frontend = frontend_from_record(record.frontend)
    elf = build_project(project, size=False, run_input=True).elf
    report = ProgramReport.load(record.model_path("report"))
    emulator = load_board(board).emulator
    assert emulator is not None
    heard = {}
    for word, path in clips.items():
        rr = run_audio(elf, report, emulator, frontend, read_wav(path, 16000), report_dir=project / "model",
                       labels=record.model.labels, input_source=str(path))  # fmt: skip
        print(f"\n{board} {word}: {rr.label} ({rr.score:.2f}), host {rr.host_label}, features max {rr.features_max_lsb}"
              f" LSB, front end {rr.frontend_instructions:,} + network {rr.network_instructions:,} instructions")
        assert rr.passed, rr.findings
        assert rr.features_max_lsb <= 1 and all(o.max_lsb_diff == 0 for o in rr.outputs)
        assert rr.label == rr.host_label
        assert rr.frontend_instructions and rr.network_instructions
        assert len(rr.quality) == 1 and rr.quality[0]["samples"] == 1  # against the float model on the host features
        heard[word] = rr.label
    weights = mlperf_dir()
    if weights is not None and (weights / "kws_ref_model_float32.tflite").is_file():
        assert sum(heard[w] == w for w in WORDS) >= 5, heard

    # the CLI: a WAV at espeak-ng's 22,050 Hz, the label printed; a broken file refused in one line
    res = armgen("run", str(project), "--input", str(clips["yes"]), "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["label"] == heard["yes"]
    broken = tmp_path / "broken.wav"
    broken.write_bytes(b"RIFF....WAVEfmt ")
    res = armgen("run", str(project), "--input", str(broken))
    assert res.returncode == 2 and "not a readable WAV file" in res.stderr and "Traceback" not in res.stderr
    tensor = tmp_path / "features.npy"
    np.save(tensor, np.zeros((1, 1, 49, 10), dtype=np.float32))
    res = armgen("run", str(project), "--input", str(tensor))
    assert res.returncode == 2 and "audio front end (mfcc): --input takes a WAV clip, not a tensor" in res.stderr, res.stderr

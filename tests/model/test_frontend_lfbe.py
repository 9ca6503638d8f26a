"""The streaming wakeword's log-mel (LFBE) front end (armgen.model.frontend_lfbe, armgen new sww --frontend
lfbe, armgen run --input marvin.wav): the numpy pipeline against features computed from the C reference
submission's own mel matrix, the generated constants, the int8 cast, the early refusals, and the firmware
on QEMU hearing espeak-ng's "marvin" with features within 1 LSB of the host's."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from _programs import armgen
from armgen.errors import ModelError
from armgen.model.frontend import LfbeFrontend, frontend_from_declaration, memory_strides

FIXTURE = Path(__file__).parents[1] / "data" / "lfbe_ref_fixture.npz"


def _sww_frontend() -> LfbeFrontend:
    from armgen.model.model_source import sample_module

    fe = frontend_from_declaration(sample_module("sww").FRONTEND, "sww")
    assert isinstance(fe, LfbeFrontend)
    return fe


def test_numpy_pipeline_matches_the_reference_data():
    """tests/data/make_lfbe_ref_fixture.py computed get_lfbe_func's features of three 30-frame clips with the mel
    matrix of upstream's C reference (fixed_data.c, 6 decimals). Measured: 6.4e-6 at most, 0.002 of the sww
    input's quantization step (0.0036). The C file's window is the periodic Hamming window, not the training
    pipeline's symmetric one (0.0011 apart in the features): window_periodic=True reproduces those too."""
    data = np.load(FIXTURE)
    fe = _sww_frontend()
    assert data["features"].shape == (3, fe.num_frames, fe.mel_bins) == (3, 30, 40)
    assert data["pcm"].shape == (3, fe.clip_samples) == (3, 15872)
    worst = max(float(np.abs(fe.features(p) - f).max()) for p, f in zip(data["pcm"], data["features"], strict=True))
    assert worst < 1e-5, worst
    periodic = frontend_from_declaration({**fe.as_record(), "window_periodic": True}, "test")
    worst_c = max(float(np.abs(periodic.features(p) - f).max())
                  for p, f in zip(data["pcm"], data["features_c_window"], strict=True))  # fmt: skip
    assert worst_c < 1e-5, worst_c
    n = np.arange(1024)  # the C file's window is the periodic Hamming window (make_lfbe_ref_fixture.py checks it)
    assert np.abs(periodic.window() - (0.54 - 0.46 * np.cos(2 * np.pi * n / 1024))).max() < 1e-6
    assert 1e-4 < np.abs(data["features"] - data["features_c_window"]).max() < 2e-3
    # the clips reach both clips of the scale: silence (0) and the loud chirp (1)
    assert (data["features"] == 0).mean() > 0.2 and (data["features"] == 1).any()


def test_mel_matrix_and_constants_are_the_references():
    fe = _sww_frontend()
    # The C file's mel matrix itself is not committed: the fixture's features, computed with it, agree with
    # fe.features() within 1e-5 (test above).
    mel = fe.mel_matrix()
    assert mel.shape == (513, 40) and (mel[0] == 0).all()
    t = fe.tables()
    assert len(t["window"]) == 1024 and t["window"][0] == t["window"][-1] == pytest.approx(0.08)  # symmetric
    assert sum(t["mel_count"]) == len(t["mel_weights"]) == 987  # lin2mel_packed_513x40[987]
    assert t["mel_start"][:3] == [1, 3, 6] and t["mel_count"][-1] == 64  # filter_starts / filter_lens


def test_int8_cast_truncates_and_saturates():
    """evaluate.py's np.array(spec / scale + zero_point, dtype=np.int8) truncates toward zero; where it would
    wrap (features above 128 x scale) armgen saturates."""
    fe = _sww_frontend()
    scale = 0.0036
    got = fe.quantized(np.array([0.0, 0.001, 0.0036 * 10.7, 0.92, 0.95, 1.0]), scale, -128)
    assert got.tolist() == [-128, -127, -117, 127, 127, 127]  # -117.3 -> -117: toward zero, not floor


def test_layout_alignment_and_memory_order():
    fe = _sww_frontend()
    ids = np.arange(30 * 40).reshape(30, 40)
    x = fe.model_input(ids, (1, 40, 30, 1))
    assert x[0, 7, 3, 0] == ids[3, 7]  # mel bins are channels, frames run down H
    assert memory_strides(fe, (1, 40, 30, 1), (0, 2, 3, 1)) == (40, 1)  # channels-last: frame-major
    assert memory_strides(fe, (1, 40, 30, 1), (0, 1, 2, 3)) == (1, 30)
    word = np.full(1000, 7, np.int16)
    clip = fe.fit(word)
    assert clip.size == 15872 and not clip[:-1000].any() and (clip[-1000:] == 7).all()  # zeros in front
    long = np.arange(20000).astype(np.int16)
    assert np.array_equal(fe.fit(long), long[-15872:])  # the last window


@pytest.mark.parametrize("decl,message", [
    ({"kind": "lfbe", "layout": "time_major"}, "layout 'time_major' is not one of"),
    ({"kind": "lfbe", "align": "middle"}, "align 'middle'"),
    ({"kind": "lfbe", "preemphasis": 1.5}, "preemphasis"),
    ({"kind": "lfbe", "upper_hz": 9000.0}, "mel band"),
    ({"kind": "lfbe", "fft_length": 512}, "power of two"),
    ({"kind": "lfbe", "num_mfcc": 10}, "unknown keys num_mfcc"),
])  # fmt: skip
def test_bad_declarations_are_one_line_errors(decl, message):
    with pytest.raises(ModelError, match=message):
        frontend_from_declaration(decl, "model.py")


def test_new_refuses_lfbe_where_the_source_declares_other(tmp_path):
    r = armgen("new", "kws", "--board", "qemu_mps3_an547", "--frontend", "lfbe", "--out", str(tmp_path))
    assert r.returncode == 2 and "kws declares a mfcc front end, not lfbe" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) <= 2, r.stderr
    r = armgen("new", "ic", "--board", "qemu_mps3_an547", "--frontend", "lfbe", "--out", str(tmp_path))
    assert r.returncode == 2 and "ic declares no front end" in r.stderr
    r = armgen("new", "sww", "--board", "qemu_mps3_an547", "--frontend", "mfcc", "--out", str(tmp_path))
    assert r.returncode == 2 and "sww declares a lfbe front end, not mfcc" in r.stderr
    assert not any(tmp_path.iterdir())


def _sww_weights() -> Path:
    from armgen.model.model_source import mlperf_dir

    folder = mlperf_dir()
    path = folder / "str_ww_ref_model.tflite" if folder is not None else None
    if path is None or not path.is_file():
        pytest.skip(f"no str_ww_ref_model.tflite in ARMGEN_MLPERF_DIR ({folder}): `armgen weights fetch sww`")
    return path


@pytest.mark.workspace
@pytest.mark.needs_workspace
@pytest.mark.slow
def test_sww_hears_marvin_on_qemu(tmp_path):
    """espeak-ng's "marvin" (22,050 Hz, resampled; 0.77 s, so zeros in front) through the generated LFBE front
    end and sww on QEMU mps3-an547: features within 1 LSB of the host pipeline, outputs equal to the host's on
    the firmware's features, the wakeword heard. Measured 2026-12-06: 0 of 1,200 features off, 0 LSB,
    wakeword 0.996; front end 1.10 M instructions, network 0.41 M."""
    weights = _sww_weights()
    exe = shutil.which("espeak-ng")
    if exe is None:
        pytest.skip("espeak-ng not installed (Debian package espeak-ng)")
    wav = tmp_path / "marvin.wav"
    subprocess.run([exe, "-w", str(wav), "marvin"], check=True, capture_output=True, timeout=60)
    calibration = weights.parent / "sww_cal.npz"
    extra = ("--calibration", str(calibration)) if calibration.is_file() else ()
    made = armgen("new", "sww", "--board", "qemu_mps3_an547", "--frontend", "lfbe", "--out", str(tmp_path), *extra)
    assert made.returncode == 0, made.stderr
    res = armgen("run", str(tmp_path / "sww"), "--input", str(wav), "--json")
    assert res.returncode == 0, res.stderr
    rr = json.loads(res.stdout)
    print(f"\nsww marvin: {rr['label']} ({rr['score']:.3f}), host {rr['host_label']}, features max "
          f"{rr['features_max_lsb']} LSB ({rr['features_off']} of 1200 off), front end "
          f"{rr['frontend_instructions']:,} + network {rr['network_instructions']:,} instructions")
    assert rr["passed"] and rr["features_max_lsb"] <= 1
    assert all(o["max_lsb_diff"] == 0 for o in rr["outputs"])
    assert rr["label"] == rr["host_label"] == "wakeword"
    assert rr["frontend_instructions"] and rr["network_instructions"]

"""samples/sww_recordings/marvin_mix.py, the streaming-wakeword test recording made here (issue 45): the same bytes
on every run, a window file in build_long_wav.py's format whose windows match the recipe, and words really at
those windows; a one-line refusal without espeak-ng or sox."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import wave
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "samples" / "sww_recordings" / "marvin_mix.py"


def _make(out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), "--out", str(out)], capture_output=True, text=True,
                          timeout=120)


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> tuple[Path, Path]:
    missing = [t for t in ("espeak-ng", "sox") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not installed (Debian packages espeak-ng, sox)")
    a, b = tmp_path_factory.mktemp("mix_a"), tmp_path_factory.mktemp("mix_b")
    for out in (a, b):
        run = _make(out)
        assert run.returncode == 0, run.stderr
    return a, b


def _pcm(path: Path) -> np.ndarray:
    with wave.open(str(path), "rb") as w:
        assert (w.getframerate(), w.getsampwidth(), w.getnchannels()) == (16000, 2, 2)
        x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").reshape(-1, 2)
    assert np.array_equal(x[:, 0], x[:, 1])  # stereo as upstream writes it, both channels the same
    return x[:, 0].astype(np.float64)


def test_two_runs_give_the_same_bytes(made):
    a, b = made
    for name in ("marvin_mix.wav", "marvin_mix_ww_windows.json", "marvin_mix_spec.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_window_file_is_upstreams_format_and_matches_the_recipe(made):
    out = made[0]
    text = (out / "marvin_mix_ww_windows.json").read_text()
    info = json.loads(text)
    assert text.startswith('{"detection_windows": [[') and text.endswith("}\n")  # pprint's layout, as upstream
    assert set(info) == {"detection_windows", "length_sec", "sample_rate"} and info["sample_rate"] == 16000
    spec = json.loads((out / "marvin_mix_spec.json").read_text())
    pcm = _pcm(out / "marvin_mix.wav")
    assert pcm.size == round(info["length_sec"] * 16000) == round(spec["length_sec"] * 16000)
    windows = info["detection_windows"]
    assert len(windows) == len(spec["configs_wakeword"]) >= 4
    assert sorted(at for _, at, _ in spec["configs_wakeword"]) == [w[0] for w in windows]
    for (start, stop), nxt in zip(windows, [*windows[1:], [info["length_sec"], None]], strict=True):
        assert 0 <= start < stop <= nxt[0] and 0.2 < stop - start < 1.2  # ordered, not overlapping, a word long
    assert max(abs(pcm)) >= 32000  # scaled to full scale


def test_the_words_are_at_their_windows(made):
    """Each window's loudest 32 ms is well above the 0.3 s of noise before it: 5x over the quiet bed, 1.3x
    inside a louder noise segment (where the recipe puts its quietest marvin)."""
    out = made[0]
    pcm = _pcm(out / "marvin_mix.wav")
    spec = json.loads((out / "marvin_mix_spec.json").read_text())
    bed = spec["configs_background"][0][3]
    louder = [(s, e) for _, s, e, level in spec["configs_background"] if level > bed]

    def rms(a: np.ndarray) -> float:
        return float(np.sqrt(np.mean(a**2)))

    for start, stop in json.loads((out / "marvin_mix_ww_windows.json").read_text())["detection_windows"]:
        s, e = int(start * 16000), int(stop * 16000)
        peak = max(rms(pcm[i : i + 512]) for i in range(s, e - 512, 512))
        ratio = peak / rms(pcm[s - 4800 : s])
        need = 1.3 if any(a <= start and stop <= b for a, b in louder) else 5.0
        assert ratio > need, f"window {start}..{stop}: loudest frame {ratio:.2f}x the noise before it"


def test_refuses_in_one_line_without_the_tools(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    run = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path / "o")], capture_output=True,
                         text=True, timeout=60, env={"PATH": str(empty)})
    assert run.returncode == 2
    assert run.stderr == "error: espeak-ng and sox not found on PATH (apt-get install espeak-ng sox)\n"
    assert not (tmp_path / "o").exists()

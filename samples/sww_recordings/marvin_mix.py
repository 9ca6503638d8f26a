"""A streaming-wakeword test recording made here: espeak-ng words over sox noise, with its truth windows.

MLPerf Tiny's streaming wakeword benchmark (mlcommons/tiny ``benchmark/training/streaming_wakeword/``) scores a
model on a long recording that ``build_long_wav.py`` mixes from a recipe (``short_wav_easy10s_spec.json``):
background segments ``[source, start s, stop s, RMS level]`` and wake words ``[source, insertion s, amplitude]``.
Each word is trimmed to where it exceeds ``rel_thresh`` (0.05) of its peak and normalized to RMS 1
(``trim_and_normalize``), each background segment is normalized to RMS 1 and scaled to its level; the sum is
scaled to a peak of 1, written as int16 16 kHz stereo (both channels equal), and the truth goes to a window file
``{"detection_windows": [[start s, stop s], ...], "length_sec": ..., "sample_rate": 16000}``, one window per wake
word: its insertion time to insertion + trimmed length / 16,000.

This script does the same with sources anyone can regenerate, so that no audio needs to be committed or
downloaded: the words are spoken by **espeak-ng** (fixed voice, speed, pitch) and resampled to 16 kHz by
**sox**; the noise beds are sox ``synth`` pink/brown noise, made repeatable by ``sox -R`` (fixed seed). The same
tools give the same bytes on every run. Beside the upstream keys the recipe has ``configs_other``: words that are
*not* the wake word (some of them near it, "marble", "martin", "margin"), mixed in exactly like the wake words
but given no window, so a detector that fires on them scores false positives.

Differences from build_long_wav.py, on purpose: ``length_sec`` in the window file is the recording's length
(upstream writes 10.0 whatever the recipe says), and the int16 conversion saturates the peak at 32,767 (upstream's
``(x * 2**15).astype(np.int16)`` wraps a sample of exactly 1.0 to -32,768).

Usage (from the repository root; needs ``espeak-ng`` and ``sox`` on PATH, ``apt-get install espeak-ng sox``)::

    python samples/sww_recordings/marvin_mix.py --out DIR

writes ``DIR/marvin_mix.wav``, ``DIR/marvin_mix_ww_windows.json`` (the truth) and ``DIR/marvin_mix_spec.json``
(the recipe). Score a model on it with ``armgen run PROJECT --input DIR/marvin_mix.wav`` of a streaming sww
project (``armgen new sww --frontend lfbe --stream``).
"""

from __future__ import annotations

import argparse
import json
import pprint
import shutil
import subprocess
import sys
import tempfile
import wave
from pathlib import Path
from typing import Any

import numpy as np

NAME = "marvin_mix"
TOOLS = ("espeak-ng", "sox")


def _word(text: str, voice: str, speed: int, pitch: int) -> dict[str, Any]:
    """A spoken word: ``espeak-ng -v voice -s speed -p pitch text``."""
    return {"text": text, "voice": voice, "speed": speed, "pitch": pitch}


#: The recipe, in build_long_wav.py's form. Sources are descriptions instead of paths: a word is what espeak-ng
#: says, a background segment is sox ``synth <seconds> <noise>``. Words are 1.5 s apart or more, so that the
#: scorer's 1 s debounce and 0.5 s detection delay of one word do not reach the next.
RECIPE: dict[str, Any] = {
    "length_sec": 24.0,
    "sample_rate": 16000,
    "rel_thresh": 0.05,
    "configs_background": [
        [{"synth": "pinknoise"}, 0.0, 24.0, 0.05],
        [{"synth": "pinknoise"}, 12.0, 15.5, 0.3],  # a louder stretch over the fourth marvin (the quietest)
    ],
    "configs_wakeword": [
        [_word("marvin", "en-us", 150, 50), 1.0, 0.8],
        [_word("marvin", "en-gb", 130, 40), 5.5, 0.6],
        [_word("marvin", "en-us+f3", 170, 70), 10.0, 0.5],
        [_word("marvin", "en-gb-scotland", 140, 35), 13.0, 0.2],
        [_word("marvin", "en-029", 180, 60), 16.0, 0.7],
        [_word("marvin", "en+klatt2", 120, 55), 20.5, 0.9],
    ],
    "configs_other": [
        [_word("hello", "en-gb", 150, 50), 2.5, 0.8],
        [_word("marble", "en-us", 150, 50), 4.0, 0.8],
        [_word("seven", "en-us+f3", 160, 60), 7.0, 0.7],
        [_word("martin", "en-us", 150, 50), 8.5, 0.8],
        [_word("garden", "en-gb-scotland", 150, 45), 11.5, 0.7],
        [_word("carving", "en-us", 140, 50), 14.5, 0.6],
        [_word("harvest", "en-gb", 150, 50), 17.5, 0.8],
        [_word("margin", "en-us+m3", 150, 50), 19.0, 0.8],
        [_word("morning", "en-029", 160, 55), 22.0, 0.7],
    ],
}


def missing_tools() -> list[str]:
    """The tools of :data:`TOOLS` not on PATH."""
    return [t for t in TOOLS if shutil.which(t) is None]


def _run(cmd: list[str]) -> None:
    try:
        subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=60)
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(f"{' '.join(cmd)} failed: {exc.stderr.strip() or exc.returncode}") from None


def _read_pcm(path: Path, sample_rate: int) -> np.ndarray:
    """A mono 16-bit WAV file as float64 samples (int16 values)."""
    with wave.open(str(path), "rb") as w:
        if w.getframerate() != sample_rate or w.getsampwidth() != 2 or w.getnchannels() != 1:
            raise RuntimeError(f"{path}: expected 16-bit mono at {sample_rate} Hz")
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float64)


def speak(word: dict[str, Any], sample_rate: int, work: Path) -> np.ndarray:
    """``word`` spoken by espeak-ng (22,050 Hz) and resampled by sox to ``sample_rate`` (no dither)."""
    raw, out = work / "espeak.wav", work / "word.wav"
    _run(["espeak-ng", "-v", word["voice"], "-s", str(word["speed"]), "-p", str(word["pitch"]), "-w", str(raw),
          word["text"]])
    _run(["sox", "-R", "-D", str(raw), "-r", str(sample_rate), "-b", "16", "-c", "1", str(out)])
    return _read_pcm(out, sample_rate)


def noise(source: dict[str, Any], seconds: float, sample_rate: int, work: Path) -> np.ndarray:
    """``seconds`` of sox ``synth`` noise (``pinknoise``, ``brownnoise``, ``whitenoise``), seeded by ``-R``."""
    out = work / "noise.wav"
    _run(["sox", "-R", "-D", "-n", "-r", str(sample_rate), "-b", "16", "-c", "1", str(out),
          "synth", f"{seconds:.6f}", source["synth"]])
    return _read_pcm(out, sample_rate)


def trim_and_normalize(wav: np.ndarray, rel_thresh: float) -> np.ndarray:
    """build_long_wav.py's ``trim_and_normalize``: from the first to (not including) the last sample above
    ``rel_thresh`` x the peak (signed, as upstream compares), scaled to RMS (standard deviation) 1."""
    above = np.nonzero(wav > np.max(wav) * rel_thresh)[0]
    out = wav[above.min() : above.max()]
    return out / np.std(out)


def build(recipe: dict[str, Any], work: Path) -> tuple[np.ndarray, list[tuple[float, float]]]:
    """The recording (int16, mono) and the wake words' windows (start s, stop s), as build_long_wav.py mixes them."""
    rate = int(recipe["sample_rate"])
    mix = np.zeros(int(recipe["length_sec"] * rate), dtype=np.float64)
    for source, start, stop, level in recipe["configs_background"]:
        seg = noise(source, stop - start, rate, work)[: int((stop - start) * rate)]
        seg = level * seg / np.std(seg)
        mix[int(start * rate) : int(start * rate) + seg.size] += seg
    windows: list[tuple[float, float]] = []
    for key in ("configs_wakeword", "configs_other"):
        for word, at, ampl in recipe[key]:
            w = trim_and_normalize(speak(word, rate, work), recipe["rel_thresh"])
            index = int(at * rate)
            if index + w.size >= mix.size:
                raise ValueError(f"{word['text']} at {at} s runs past the end of the recording")
            mix[index : index + w.size] += ampl * w
            if key == "configs_wakeword":
                windows.append((at, at + w.size / rate))
    mix = mix / np.max(np.abs(mix))
    return np.clip(mix * 2**15, -32768, 32767).astype(np.int16), sorted(windows)


def window_file_text(windows: list[tuple[float, float]], length_sec: float, sample_rate: int) -> str:
    """The window file, formatted as build_long_wav.py writes it (pprint, double quotes, lists)."""
    info = {"length_sec": length_sec, "detection_windows": windows, "sample_rate": sample_rate}
    text = pprint.pformat(info, compact=True).replace("'", '"')
    return text.replace("(", "[").replace(")", "]") + "\n"


def write(out: Path, recipe: dict[str, Any] = RECIPE) -> tuple[Path, Path]:
    """Make the recording of ``recipe`` in ``out``: (the wav, the window file); the recipe goes beside them."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="marvin_mix_") as tmp:
        pcm, windows = build(recipe, Path(tmp))
    rate = int(recipe["sample_rate"])
    wav_path, win_path = out / f"{NAME}.wav", out / f"{NAME}_ww_windows.json"
    with wave.open(str(wav_path), "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.stack([pcm, pcm], axis=1).astype("<i2").tobytes())
    win_path.write_text(window_file_text(windows, pcm.size / rate, rate))
    (out / f"{NAME}_spec.json").write_text(json.dumps(recipe, indent=1) + "\n")
    return wav_path, win_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, required=True, help="folder for the wav, window and recipe files")
    args = parser.parse_args(argv)
    if missing := missing_tools():
        print(f"error: {' and '.join(missing)} not found on PATH (apt-get install {' '.join(missing)})",
              file=sys.stderr)
        return 2
    try:
        wav_path, win_path = write(args.out)
    except (RuntimeError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {wav_path} and {win_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

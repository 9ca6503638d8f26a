"""Scoring a streaming wakeword detector by MLPerf Tiny's rules: true detections, false detections, false rejections.

The rules are ``get_true_and_false_detections`` of mlcommons/tiny ``benchmark/training/streaming_wakeword/
str_ww_util.py`` (pinned commit :data:`armgen.model.pretrained.MLPERF_TINY_COMMIT`), as ``evaluate.py`` calls it:

- the truth is a 0/1 signal at the sample rate, 1 inside each detection window ``[int(start x rate),
  int(stop x rate))`` (evaluate.py's ``ww_present``);
- the detector's signal is each window's positive (wakeword posterior above the threshold) held for the hop
  it stands for (``np.repeat`` by ``window_stride``);
- a wake word is **detected** when the detector is positive anywhere in ``[start, stop + 0.5 s)``
  (``true_pos_max_delay_sec``), else it is a **false rejection**;
- positives in ``[start, stop + 1 s)`` of every wake word (``false_pos_suppresion_delay_sec``) are removed,
  and what is left, debounced (:func:`armgen.model.stream.debounce_detections`, 1 s), are the **false
  detections**.

One difference, stated: evaluate.py aligns the detector's signal to the *end* of the recording (zeros in
front), armgen to the samples each window really ends on (:func:`armgen.model.stream.window_end`), so armgen's
signal is ``(samples - frame_length) mod frame_step`` samples (256 for a 10 s recording) earlier than
evaluate.py's. The counts can differ only for a positive within that many samples of a window's edge.

Truth files (:func:`load_truth`), in either of upstream's two formats:

- **detection windows**: build_long_wav.py's ``*_ww_windows.json``, ``{"length_sec": ..., "detection_windows":
  [[start_s, stop_s], ...], "sample_rate": ...}``, or evaluate.py's ``--stream_config`` (a list whose first item
  holds ``detection_windows``);
- **a recipe** like ``short_wav_easy10s_spec.json`` (``configs_wakeword``: ``[path, start_s, amplitude]``): it
  says where each word starts, not where it stops (build_long_wav.py trims each word first), so each window
  is taken as ``[start, start + 1 s)``, the length of a Speech Commands clip, the longest a word can be.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from armgen.errors import RunError
from armgen.model.frontend_lfbe import LfbeFrontend
from armgen.model.stream import debounce_detections, window_end

#: Seconds after a wake word's end within which a positive still counts as its detection (str_ww_util.py
#: ``true_pos_max_delay_sec``).
TRUE_POSITIVE_DELAY_S = 0.5
#: Seconds after a wake word's end within which positives are not false detections (str_ww_util.py
#: ``false_pos_suppresion_delay_sec``).
FALSE_POSITIVE_MASK_S = 1.0
#: A recipe's word is taken to last this long (s): a Speech Commands clip, which build_long_wav.py trims.
RECIPE_WORD_S = 1.0


@dataclass(frozen=True)
class Truth:
    """Where the wake word is in a recording.

    Attributes:
        windows: (start, stop) in seconds, in the file's order.
        kind: ``windows`` (detection windows as the scorer wants them) or ``recipe`` (start + 1 s).
        sample_rate: Hz the file states (16,000 when it states none).
        length_s: the recording length the file states, or None.
    """

    path: str
    windows: tuple[tuple[float, float], ...]
    kind: str
    sample_rate: int = 16000
    length_s: float | None = None


@dataclass(frozen=True)
class Score:
    """A detector's result on one recording (sample indices at the truth's rate).

    Attributes:
        true_detections / false_detections / false_rejections: counts, as evaluate.py prints them.
        true_at / false_at / rejected_at: the samples each is marked at (a wake word's start for true and
            rejected ones, the debounced start of a false one).
    """

    true_detections: int
    false_detections: int
    false_rejections: int
    true_at: tuple[int, ...]
    false_at: tuple[int, ...]
    rejected_at: tuple[int, ...]


def load_truth(path: Path) -> Truth:
    """A truth file in either of upstream's formats (module docstring).

    Raises:
        RunError: the file is missing, not JSON, or in neither format, or a window is not ``start < stop``.
    """
    hint = ('a detection-window file {"detection_windows": [[start_s, stop_s], ...]} as build_long_wav.py '
            'writes, or a recipe like short_wav_easy10s_spec.json')
    if not path.is_file():
        raise RunError(f"{path}: truth file not found", hint=hint)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise RunError(f"{path}: the truth file is not JSON ({exc})", hint=hint) from None
    if isinstance(data, list) and data and isinstance(data[0], dict):
        data = data[0]  # evaluate.py --stream_config
    if not isinstance(data, dict):
        raise RunError(f"{path}: the truth file is neither detection windows nor a recipe", hint=hint)
    rate = data.get("sample_rate", 16000)
    length = data.get("length_sec")
    if "detection_windows" in data:
        kind, entries, shape = "windows", data["detection_windows"], "[start_s, stop_s]"
    elif "configs_wakeword" in data:
        kind, entries, shape = "recipe", data["configs_wakeword"], "[wav, start_s, amplitude]"
    else:
        raise RunError(f"{path}: the truth file has neither detection_windows nor configs_wakeword", hint=hint)
    if not isinstance(entries, list):
        key = "detection_windows" if kind == "windows" else "configs_wakeword"
        raise RunError(f"{path}: a malformed truth file: {key} must be a list of {shape}", hint=hint)
    windows = []
    for i, e in enumerate(entries):
        try:
            if kind == "windows":
                a, b = e  # exactly two
                windows.append((float(a), float(b)))
            else:
                windows.append((float(e[1]), float(e[1]) + RECIPE_WORD_S))
        except (TypeError, ValueError, IndexError):
            raise RunError(f"{path}: a malformed truth file: entry {i + 1} is {json.dumps(e)}, not {shape}",
                           hint=hint) from None
    try:
        rate, length = int(rate), (float(length) if length is not None else None)
    except (TypeError, ValueError):
        raise RunError(f"{path}: a malformed truth file: sample_rate {rate!r} / length_sec {length!r} are not "
                       "numbers", hint=hint) from None
    for a, b in windows:
        if not 0.0 <= a < b:
            raise RunError(f"{path}: detection window [{a}, {b}] s is not 0 <= start < stop", hint=hint)
    return Truth(str(path), tuple(windows), kind, rate, length)


def presence(truth: Truth, samples: int) -> np.ndarray:
    """evaluate.py's ``ww_present``: 0/1 per sample of a ``samples``-long recording, 1 inside each window.

    Raises:
        RunError: a window ends at or after the recording's last sample (upstream wants 0 at both ends).
    """
    present = np.zeros(samples, dtype=int)
    for a, b in truth.windows:
        lo, hi = int(a * truth.sample_rate), int(b * truth.sample_rate)
        if hi >= samples:
            raise RunError(f"{truth.path}: detection window [{a}, {b}] s ends at or after the recording's end "
                           f"({samples / truth.sample_rate:.3f} s)")
        present[lo:hi] = 1
    return present


def detector_signal(frontend: LfbeFrontend, window_positive: np.ndarray, samples: int, every: int = 1) -> np.ndarray:
    """The detector's 0/1 at the sample rate: window ``i``'s positive held over the ``every`` hops before its
    end (:func:`armgen.model.stream.window_end`); windows not run (``i`` not a multiple of ``every``) ignored."""
    signal = np.zeros(samples, dtype=int)
    span = frontend.frame_step * every
    for i in range(0, len(window_positive), every):
        if window_positive[i]:
            end = min(window_end(frontend, i), samples)
            signal[max(end - span, 0) : end] = 1
    return signal


def score(detected: np.ndarray, present: np.ndarray, sample_rate: int = 16000) -> Score:
    """str_ww_util.py ``get_true_and_false_detections`` on two sample-rate 0/1 signals of equal length.

    Raises:
        RunError: ``present`` does not start and end with 0 (upstream's ValueError: a word in progress at
            either end of the recording).
    """
    tol, mask = int(TRUE_POSITIVE_DELAY_S * sample_rate), int(FALSE_POSITIVE_MASK_S * sample_rate)
    starts = np.nonzero(np.diff(present) > 0.5)[0]
    stops = np.nonzero(np.diff(present) < -0.5)[0]
    if len(starts) != len(stops) or present[0] > 0 or present[-1] > 0:
        raise RunError("the truth has a wake word in progress at the start or end of the recording")
    false = np.copy(detected)
    true_at: list[int] = []
    rejected_at: list[int] = []
    for a, b in zip(starts, stops, strict=True):
        (true_at if np.any(detected[a : b + tol] == 1) else rejected_at).append(int(a))
        false[a : b + mask] = 0
    false_at = np.nonzero(debounce_detections(false, sample_rate) == 1)[0]
    return Score(len(true_at), len(false_at), len(rejected_at), tuple(true_at), tuple(int(i) for i in false_at),
                 tuple(rejected_at))


def score_windows(frontend: LfbeFrontend, truth: Truth, window_positive: np.ndarray, samples: int,
                  every: int = 1) -> Score:
    """A detector's per-window positives scored against ``truth`` on a ``samples``-long recording.

    Raises:
        RunError: the truth's sample rate is not the front end's, or a window lies outside the recording.
    """
    if truth.sample_rate != frontend.sample_rate:
        raise RunError(f"{truth.path}: sample_rate {truth.sample_rate} Hz, the front end's is "
                       f"{frontend.sample_rate} Hz")
    present = presence(truth, samples)
    return score(detector_signal(frontend, window_positive, samples, every), present, frontend.sample_rate)

"""Streaming wakeword detection on the host: the firmware's ring buffer and detector in numpy.

``armgen new sww --frontend lfbe --stream`` generates a firmware that hears a recording as it arrives, as
MLPerf Tiny v1.3's streaming wakeword benchmark runs it (mlcommons/tiny at the commit of
:data:`armgen.model.pretrained.MLPERF_TINY_COMMIT`):

- **the front end, hop by hop** (:class:`LfbeStream`): audio comes in blocks of any size into a ring buffer;
  each ``frame_step`` (512 samples, 32 ms) hop, once a whole ``frame_length`` (1,024) frame is there, it
  computes that one frame's ``mel_bins`` (40) log-mel values and shifts the ``num_frames`` (30) frame window
  by one frame, as the C reference submission does (``sww_ref_util_submitter.c``
  ``th_extract_features_on_chunk``: the 1,024-sample buffer shifted by 512, one ``th_compute_lfbe_f32``, the
  1,200-value model input shifted by 40). Unlike that reference, whose pre-emphasis restarts at each frame,
  the pre-emphasis carries on across hops (one sample of state, ``x[n - 1]``), so frame ``k`` equals frame
  ``k`` of ``get_lfbe_func`` over the whole recording (evaluate.py's long-wav spectrogram):
  :meth:`armgen.model.frontend_lfbe.LfbeFrontend.recording_features`;
- **the detector** (:func:`positives`, :func:`debounce_detections`, :class:`Detector`): evaluate.py's
  ``yy[:, 0] > det_thresh`` (0.95) on the dequantized wakeword posterior of each window, then str_ww_util.py's
  ``debounce_detections`` (1 s at 16 kHz), which works at the sample rate: a positive window stands for the
  ``frame_step`` samples of its last hop (``np.repeat`` in ``get_true_and_false_detections``), and after a
  detection at sample ``s`` the next one is the first positive sample at or after ``s + 16,000``.

Times are sample indices of the recording (divide by 16,000 for seconds). The hop of window ``i`` (frames
``i .. i + 29``) is samples ``[end - 512, end)`` with ``end = 15,872 + 512 i``, the samples the window ends on.
evaluate.py aligns the detection signal to the *end* of the recording instead (zeros in front of it), which
shifts every time by the same ``(samples - 1,024) mod 512`` samples (256 for a 10 s recording); counts and
spacing do not change.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from armgen.model.frontend_lfbe import LfbeFrontend

#: Samples the streaming firmware's `armgen run` harness reads from input.bin at a time (one hop: the C
#: reference's I2S chunk, ``g_i2s_chunk_size_bytes`` of 512 mono samples); any size works (:class:`LfbeStream`).
STREAM_BLOCK = 512


class LfbeStream:
    """The streaming front end in float64: blocks of int16 PCM in, one frame of log-mel values per hop out.

    State (what the C firmware keeps, :mod:`armgen.model.stream` docstring): the last ``frame_length`` samples
    and the count of samples heard; the pre-emphasis's previous sample is the sample before the frame, kept
    in the buffer.
    """

    def __init__(self, frontend: LfbeFrontend) -> None:
        self.fe = frontend
        self._buffer = np.zeros(0, dtype=np.int16)
        self._prev = 0.0  # x[start - 1] / 32768 of the next frame (x[-1] = 0)
        self.heard = 0  # samples pushed so far
        self.frames = 0  # frames computed so far

    def push(self, block: np.ndarray) -> Iterator[np.ndarray]:
        """Add ``block`` (int16 samples); yield each frame it completes (``mel_bins`` float64 values in [0, 1])."""
        fe = self.fe
        self._buffer = np.concatenate([self._buffer, np.asarray(block, dtype=np.int16).reshape(-1)])
        self.heard += int(np.asarray(block).size)
        while self._buffer.size >= fe.frame_length:
            x = self._buffer[: fe.frame_length].astype(np.float64) / 32768.0
            y = x - fe.preemphasis * np.concatenate([[self._prev], x[:-1]])
            spectrum = np.fft.rfft(y * fe.window(), n=fe.fft_length)
            power = (spectrum.real**2 + spectrum.imag**2) / fe.frame_length
            self._prev = float(x[fe.frame_step - 1])
            self._buffer = self._buffer[fe.frame_step :]
            self.frames += 1
            yield fe._log_mel(power[None, :])[0]


def stream_features(frontend: LfbeFrontend, pcm: np.ndarray, block: int = 512) -> np.ndarray:
    """``pcm`` through :class:`LfbeStream` in blocks of ``block`` samples: ``frames x mel_bins`` float64."""
    stream, x = LfbeStream(frontend), np.asarray(pcm, dtype=np.int16).reshape(-1)
    frames = [f for i in range(0, x.size, block) for f in stream.push(x[i : i + block])]
    return np.asarray(frames).reshape(-1, frontend.mel_bins)


def windows(frames: np.ndarray, num_frames: int) -> np.ndarray:
    """Every window of ``num_frames`` consecutive frames, one per hop: ``(frames - num_frames + 1) x num_frames x
    values`` (evaluate.py's ``long_spec_q[0:1, idx:idx + input_shape[1]]``); none for fewer frames."""
    n = frames.shape[0] - num_frames + 1
    if n <= 0:
        return np.zeros((0, num_frames, frames.shape[1]), dtype=frames.dtype)
    return np.stack([frames[i : i + num_frames] for i in range(n)])


def threshold_q(threshold: float, scale: float, zero_point: int) -> int:
    """The smallest int8 output whose dequantized value ``(q - zero_point) x scale`` exceeds ``threshold``
    (evaluate.py ``yy[:, 0] > det_thresh``); 128 when none does. 0.95 at scale 1/256, zero point -128: 116
    (the C reference's ``DETECT_THRESHOLD 115`` with ``out_data[0] > 115``)."""
    for q in range(-128, 128):
        if (q - zero_point) * scale > threshold:
            return q
    return 128


def window_end(frontend: LfbeFrontend, window: int) -> int:
    """Samples heard when window ``window`` is complete: ``clip_samples + window x frame_step``."""
    return frontend.clip_samples + window * frontend.frame_step


def positives(wakeword_q: np.ndarray, threshold: int) -> np.ndarray:
    """1 where a window's int8 wakeword output is at least ``threshold`` (:func:`threshold_q`), else 0."""
    return (np.asarray(wakeword_q).reshape(-1) >= threshold).astype(int)


def debounce_detections(detection_signal: np.ndarray, sample_rate: int = 16000, debounce_time: float = 1.0
                        ) -> np.ndarray:
    """str_ww_util.py ``debounce_detections``, as upstream wrote it: a 1 marks the start of each detection of
    ``detection_signal`` (0/1 at the sample rate) after positives within ``debounce_time`` s of the previous
    detection's start are dropped."""
    debounce_samples = int(debounce_time * sample_rate)
    idx = 0
    detection_signal = np.copy(detection_signal)
    while idx < len(detection_signal):
        if not np.any(detection_signal[idx:] == 1):
            break
        idx = int(np.min(np.nonzero(detection_signal == 1)))
        detection_signal[idx : idx + debounce_samples] = 0
        detection_signal[idx] = -1
        idx = idx + debounce_samples
    detection_signal[detection_signal == -1] = 1
    return detection_signal


def detections_upstream(frontend: LfbeFrontend, window_positive: np.ndarray) -> list[int]:
    """Detection samples of a recording from each window's 0/1 (window 0 first), with upstream's own functions:
    ``np.repeat`` by ``frame_step`` (get_true_and_false_detections), the hop of window 0 starting at sample
    ``clip_samples - frame_step``, then :func:`debounce_detections`. No ground truth: every positive counts."""
    sig = np.repeat(np.asarray(window_positive, dtype=int), frontend.frame_step)
    sig = np.concatenate([np.zeros(frontend.clip_samples - frontend.frame_step, dtype=int), sig])
    out = debounce_detections(sig, frontend.sample_rate, frontend.debounce_samples / frontend.sample_rate)
    return [int(i) for i in np.nonzero(out == 1)[0]]


@dataclass
class Detector:
    """The debounced detector as the firmware runs it, one window at a time (equal to :func:`detections_upstream`).

    State: the first sample a new detection may start at (``next_allowed``, 4 bytes in C).
    """

    frame_step: int = 512
    debounce_samples: int = 16000
    next_allowed: int = 0

    def window(self, positive: bool, end: int) -> int | None:
        """A window ending at sample ``end``: the sample its detection starts at, or None. Its hop stands for
        samples ``[end - frame_step, end)``; a detection starts at the first of them at or after
        ``next_allowed`` and holds back the next ``debounce_samples`` samples."""
        start = max(end - self.frame_step, self.next_allowed)
        if not positive or start >= end:
            return None
        self.next_allowed = start + self.debounce_samples
        return start


def detections(frontend: LfbeFrontend, window_positive: np.ndarray, every: int = 1) -> list[int]:
    """Detection samples with :class:`Detector` for windows ``0, every, 2 every, ...`` (the others not run)."""
    det, out = Detector(frontend.frame_step * every, frontend.debounce_samples), []
    for i in range(0, len(window_positive), every):
        hit = det.window(bool(window_positive[i]), window_end(frontend, i))
        if hit is not None:
            out.append(hit)
    return out


def stream_context(frontend: LfbeFrontend, output: Any) -> dict[str, Any]:
    """What the streaming C needs beyond the front end's parameters: ``threshold_q`` (:func:`threshold_q` on
    output 0's quantization) and ``stream_block``; empty for a one-shot front end."""
    if not frontend.stream:
        return {}
    return {"threshold_q": threshold_q(frontend.threshold, float(output.scale), int(output.zero_point)),
            "stream_block": STREAM_BLOCK}

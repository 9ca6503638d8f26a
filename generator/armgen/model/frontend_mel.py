"""The mel filter bank both audio front ends use, and its sparse form for the generated C.

:func:`mel_weight_matrix` is TensorFlow's ``tf.signal.linear_to_mel_weight_matrix``
(``tensorflow/python/ops/signal/mel_ops.py``) in float64: HTK mel scale ``1127 ln(1 + f / 700)``,
triangles between ``lower_hz`` and ``upper_hz`` whose edges are evenly spaced in mel, the DC bin
weighing zero. MLPerf Tiny's KWS (MFCC) and streaming-wakeword (log-mel) features both call it.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np


def mel_weight_matrix(num_bins: int, mel_bins: int, sample_rate: int, lower_hz: float, upper_hz: float) -> np.ndarray:
    """``num_bins x mel_bins`` weights, float64 (``tf.signal.linear_to_mel_weight_matrix``).

    Args:
        num_bins: spectrum bins of the real FFT (``fft_length / 2 + 1``), 0 .. ``sample_rate / 2`` Hz.
        mel_bins: triangular filters. sample_rate: Hz. lower_hz / upper_hz: the band edges, Hz.
    """

    def mel(hz: np.ndarray) -> np.ndarray:
        return 1127.0 * np.log1p(hz / 700.0)

    freqs = np.linspace(0.0, sample_rate / 2.0, num_bins)[1:]
    bins_mel = mel(freqs)[:, None]
    edges = np.linspace(mel(np.array(lower_hz)), mel(np.array(upper_hz)), mel_bins + 2)
    lower, center, upper = edges[:-2][None, :], edges[1:-1][None, :], edges[2:][None, :]
    rising = (bins_mel - lower) / (center - lower)
    falling = (upper - bins_mel) / (upper - center)
    weights = np.maximum(0.0, np.minimum(rising, falling))
    return np.vstack([np.zeros((1, mel_bins)), weights])


def sparse_rows(matrix: np.ndarray) -> dict[str, Any]:
    """A mel matrix as the C front ends embed it: per mel bin its non-zero band of spectrum bins.

    Returns:
        dict: ``mel_start`` / ``mel_count`` (first non-zero spectrum bin and band length per mel bin)
        and ``mel_weights`` (the bands' weights as float32 values, mel bins in order).
    """
    starts: list[int] = []
    counts: list[int] = []
    weights: list[float] = []
    for m in range(matrix.shape[1]):
        nz = np.nonzero(matrix[:, m])[0]
        start = int(nz[0]) if nz.size else 0
        count = int(nz[-1] - nz[0] + 1) if nz.size else 0
        starts.append(start)
        counts.append(count)
        weights.extend(float(np.float32(w)) for w in matrix[start : start + count, m])
    return {"mel_start": starts, "mel_count": counts, "mel_weights": weights}


class FrameGeometry:
    """What every front end derives alike from its fields: frames per clip, spectrum bins, its record.

    Mixed into the front-end dataclasses (:class:`armgen.model.frontend.MfccFrontend`,
    :class:`armgen.model.frontend_lfbe.LfbeFrontend`), which declare these fields.
    """

    clip_samples: int
    frame_length: int
    frame_step: int
    fft_length: int
    kind: str

    @property
    def num_frames(self) -> int:
        """Frames per clip: whole frames only (``tf.signal.frame`` / ``tf.signal.stft`` without end padding)."""
        return 1 + (self.clip_samples - self.frame_length) // self.frame_step

    @property
    def num_bins(self) -> int:
        """Spectrum bins of the real FFT (``fft_length / 2 + 1``)."""
        return self.fft_length // 2 + 1

    def as_record(self) -> dict[str, Any]:
        """The parameters as a TOML-able table (``[frontend]`` in ``armgen.toml``), with ``kind``."""
        return {"kind": self.kind, **asdict(self)}  # type: ignore[call-overload]

"""The log-mel filterbank energy (LFBE) front end of MLPerf Tiny's streaming wakeword (``sww``).

The pipeline is ``get_lfbe_func`` of mlcommons/tiny ``benchmark/training/streaming_wakeword/get_dataset.py``
(pinned commit 1afd2c98), with the flags of ``str_ww_util.py`` (16 kHz, ``window_size_ms`` 64 ->
1,024 samples, ``window_stride_ms`` 32 -> 512, ``dct_coefficient_count`` 40 mel bins), in this order:

1. int16 PCM / 32768 (``evaluate.py``: ``long_wav / 2**15``; training reads ``tf.audio.decode_wav``, the same);
2. pre-emphasis ``y[n] = x[n] - 0.96875 x[n-1]`` with ``x[-1] = 0`` (``preemphasis_coef = 1 - 2 ** -5``,
   a zero padded in front), over the whole clip before framing;
3. ``tf.signal.stft``: frames of 1,024 every 512 with no end padding, a symmetric Hamming window
   (``hamming_window(periodic=False)``: ``0.54 - 0.46 cos(2 pi n / (N - 1))``), FFT length 1,024
   (``fft_length=None``: the next power of two), 513 bins;
4. power ``|X|^2 / 1024`` (``1 / window_size_samples``), clipped below at ``1e-30`` (and above at the
   spectrogram's own maximum: no change);
5. ``linear_to_mel_weight_matrix(40, 513, 16000, 0, 8000)`` (:func:`armgen.model.frontend_mel.mel_weight_matrix`);
6. ``10 log10``, then ``(x + 52 - 32 + 32) / 64`` (``power_offset = 52``) clipped to ``[0, 1]``.

The model's int8 input is made as upstream's ``evaluate.py`` makes it, ``np.array(spec / scale + zero_point,
dtype=np.int8)``: a cast that truncates toward zero (not rounding), with the program input's scale and
zero point; where that cast would overflow int8 (features above ``(127 - zero_point) x scale``, 0.93 for
scale 0.0036 and zero point -128) numpy wraps around (0.98 -> -114): armgen saturates at 127 instead.
The C reference submission (``reference_submissions/streaming_wakeword/sww_ref_l4r5zi``,
``th_compute_lfbe_f32`` and ``fixed_data.c``'s ``hamm_win_1024`` / ``lin2mel_packed_513x40``) computes the
same on CMSIS-DSP; ``tests/data/lfbe_ref_fixture.npz`` holds features computed from its window and mel
matrix, which this module's numpy pipeline matches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from armgen.model.frontend_mel import FrameGeometry, mel_weight_matrix, sparse_rows

#: How the features sit in the model's logical input: ``frames_bins`` (frame-major, e.g. 1 x 1 x frames x
#: bins) or ``bins_frames`` (the bins as channels, time down H: sww's NCHW 1 x 40 x 30 x 1).
LAYOUTS = ("frames_bins", "bins_frames")
#: The parameters of the streaming firmware (``armgen new --stream``), recorded only when it streams.
STREAM_KEYS = ("stream", "infer_every", "threshold", "debounce_samples")


@dataclass(frozen=True)
class LfbeFrontend(FrameGeometry):
    """A log-mel filterbank energy front end's parameters (counts in samples, frequencies in Hz).

    Defaults are MLPerf Tiny's streaming wakeword (get_dataset.py ``get_lfbe_func``, str_ww_util.py flags).

    Attributes:
        sample_rate: Hz of the PCM (other rates are resampled on the host).
        clip_samples: samples per inference (cut or zero-padded to this): ``frame_length + (frames - 1)
            x frame_step``, 15,872 for 30 frames.
        frame_length / frame_step / fft_length: STFT frame, hop and FFT size in samples (1,024 / 512 / 1,024).
        mel_bins / lower_hz / upper_hz: the mel filter bank (40 bins, 0 .. 8,000 Hz).
        preemphasis: the pre-emphasis coefficient (``1 - 2 ** -5``).
        window_periodic: False for get_lfbe_func's symmetric Hamming window; True for the periodic one
            the C reference submission embeds (``fixed_data.c`` ``hamm_win_1024``; features within 0.0011).
        power_floor: the power spectrum's lower clip before the mel sum (``1e-30``).
        db_offset / db_range: the dB value maps to ``(dB + db_offset) / db_range`` (52, 64), clipped to [0, 1].
        layout: one of :data:`LAYOUTS`, how the ``frames x mel_bins`` features fill the model input.
        align: how a clip of another length becomes one window (:meth:`fit`): ``end`` (its last
            ``clip_samples``, zeros in front of a shorter one: the window a streaming detector sees when the
            word has just ended, where the reference fires) or ``start`` (its first, zeros after).
        source: a citation for the generated code's comments.
        stream: generate the streaming firmware (``armgen new --stream``; :mod:`armgen.model.stream`): audio in
            blocks through a ring buffer, one new frame per ``frame_step`` hop, the window shifted by a frame.
        infer_every: hops between inferences when streaming (1: every 32 ms hop, as upstream's evaluate.py).
        threshold: the wakeword posterior (output 0, dequantized) a window must exceed to count as positive
            (evaluate.py ``det_thresh = 0.95``).
        debounce_samples: samples after a detection in which positives are not reported again
            (str_ww_util.py ``debounce_detections``: ``debounce_time`` 1.0 s x 16 kHz).
    """

    sample_rate: int = 16000
    clip_samples: int = 15872
    frame_length: int = 1024
    frame_step: int = 512
    fft_length: int = 1024
    mel_bins: int = 40
    lower_hz: float = 0.0
    upper_hz: float = 8000.0
    preemphasis: float = 0.96875
    window_periodic: bool = False
    power_floor: float = 1e-30
    db_offset: float = 52.0
    db_range: float = 64.0
    layout: str = "frames_bins"
    align: str = "end"
    source: str = ""
    stream: bool = False
    infer_every: int = 1
    threshold: float = 0.95
    debounce_samples: int = 16000

    kind = "lfbe"

    @property
    def frame_features(self) -> int:
        """Values per frame: the mel bins."""
        return self.mel_bins

    def as_record(self) -> dict[str, Any]:
        """The parameters as a TOML-able table (``[frontend]`` in ``armgen.toml``), with ``kind``; the streaming
        keys only for a streaming project (a one-shot project's table is as before they existed)."""
        table = super().as_record()
        if not self.stream:
            for key in STREAM_KEYS:
                table.pop(key)
        return table

    def check(self) -> str | None:
        """What is wrong with the parameters, or None (the kind-specific part of the declaration check)."""
        if self.layout not in LAYOUTS:
            return f"layout {self.layout!r} is not one of: {', '.join(LAYOUTS)}"
        if self.align not in ("start", "end"):
            return f"align {self.align!r} is not start or end"
        if not 0.0 <= self.preemphasis < 1.0 or self.power_floor <= 0 or self.db_range <= 0:
            return "preemphasis must be in [0, 1), power_floor and db_range positive"
        if not 0 <= self.lower_hz < self.upper_hz <= self.sample_rate / 2:
            return "the mel band is out of range"
        if self.infer_every < 1 or self.debounce_samples < 0 or not 0.0 <= self.threshold < 1.0:
            return "infer_every must be at least 1, debounce_samples not negative, threshold in [0, 1)"
        return None

    # --- the pipeline, float64 -----------------------------------------------------------------

    def window(self) -> np.ndarray:
        """Hamming window of ``frame_length``: symmetric, ``0.54 - 0.46 cos(2 pi n / (N - 1))``
        (``tf.signal.hamming_window(periodic=False)``), or periodic (``/ N``) with :attr:`window_periodic`."""
        n = np.arange(self.frame_length, dtype=np.float64)
        period = self.frame_length if self.window_periodic else self.frame_length - 1
        return 0.54 - 0.46 * np.cos(2.0 * np.pi * n / period)

    def mel_matrix(self) -> np.ndarray:
        """``num_bins x mel_bins`` weights (``linear_to_mel_weight_matrix``), float64."""
        return mel_weight_matrix(self.num_bins, self.mel_bins, self.sample_rate, self.lower_hz, self.upper_hz)

    def fit(self, pcm: np.ndarray) -> np.ndarray:
        """``pcm`` as one window of ``clip_samples`` int16 samples, cut or zero-padded as :attr:`align` says.

        Pre-emphasis then starts from zero at the window's first sample, also where a longer clip had a
        sample before it (a one-shot window, not a stream).
        """
        x = np.asarray(pcm, dtype=np.int16).reshape(-1)
        n = self.clip_samples
        if self.align == "end":
            x = x[-n:] if x.size else x
            return np.pad(x, (n - x.size, 0))
        return np.pad(x[:n], (0, n - min(x.size, n)))

    def clip(self, pcm: np.ndarray) -> np.ndarray:
        """``pcm`` as one window (:meth:`fit`) in float64 in [-1, 1) (``/ 32768``, evaluate.py's ``/ 2**15``)."""
        return self.fit(pcm).astype(np.float64) / 32768.0

    def power_spectrum(self, pcm: np.ndarray) -> np.ndarray:
        """``num_frames x num_bins`` power spectrum of one clip of int16 PCM (steps 1-4, before the floor)."""
        return self._power(self.clip(pcm))

    def _power(self, x: np.ndarray) -> np.ndarray:
        """Power spectrum of every whole frame of ``x`` (float64 in [-1, 1)), pre-emphasis from ``x[-1] = 0``."""
        y = x - self.preemphasis * np.concatenate([[0.0], x[:-1]])
        frames = 1 + (x.size - self.frame_length) // self.frame_step if x.size >= self.frame_length else 0
        idx = np.arange(self.frame_length)[None, :] + self.frame_step * np.arange(frames)[:, None]
        spectrum = np.fft.rfft(y[idx] * self.window()[None, :], n=self.fft_length, axis=1)
        return (spectrum.real**2 + spectrum.imag**2) / self.frame_length

    def _log_mel(self, power: np.ndarray) -> np.ndarray:
        """Steps 4-6: the floor, the mel sum, ``(10 log10 + db_offset) / db_range`` clipped to [0, 1]."""
        power = np.clip(power, self.power_floor, max(power.max(initial=0.0), self.power_floor))
        db = 10.0 * np.log10(power @ self.mel_matrix())
        return np.clip((db + self.db_offset) / self.db_range, 0.0, 1.0)

    def features(self, pcm: np.ndarray) -> np.ndarray:
        """Log-mel energies of one clip of int16 PCM at ``sample_rate``: ``num_frames x mel_bins`` float64 in [0, 1]."""
        return self._log_mel(self.power_spectrum(pcm))

    def recording_features(self, pcm: np.ndarray) -> np.ndarray:
        """Log-mel energies of a whole recording, as evaluate.py computes a long wav's spectrogram
        (``get_lfbe_func(long_wav / 2**15)``): pre-emphasis once from the first sample, every whole frame
        (``1 + (samples - frame_length) // frame_step`` of them, none for a recording shorter than a frame),
        ``frames x mel_bins`` float64 in [0, 1]. Window ``i`` of the stream is frames ``i .. i + num_frames - 1``.

        The power floor's upper clip (the spectrogram's maximum) is a no-op, so each frame's values depend on
        its own samples and the one before it only: what a streaming front end computes hop by hop.
        """
        x = np.asarray(pcm, dtype=np.int16).reshape(-1).astype(np.float64) / 32768.0
        return self._log_mel(self._power(x))

    def model_input(self, features: np.ndarray, shape: tuple[int, ...] | list[int]) -> np.ndarray:
        """``num_frames x mel_bins`` values (features, or anything of that shape) in the model input's
        logical ``shape``, as :attr:`layout` says."""
        values = np.asarray(features)
        return (values.T if self.layout == "bins_frames" else values).reshape(tuple(shape))

    def quantized(self, features: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
        """int8 of ``features`` as upstream's evaluate.py casts them: ``features / scale + zero_point``
        truncated toward zero, float64; saturated to [-128, 127] where numpy's cast would wrap."""
        v = np.asarray(features, dtype=np.float64) / scale + zero_point
        return np.clip(np.trunc(v), -128, 127).astype(np.int8)

    # --- what the generated C embeds -----------------------------------------------------------

    def tables(self) -> dict[str, Any]:
        """The C front end's constants (float32 values as Python floats).

        Returns:
            dict: ``window`` (``frame_length`` values) and the mel matrix's sparse rows
            (:func:`armgen.model.frontend_mel.sparse_rows`: ``mel_start``, ``mel_count``, ``mel_weights``).
        """
        return {"window": [float(np.float32(w)) for w in self.window()], **sparse_rows(self.mel_matrix())}

"""Audio front ends declared with a model: the features a keyword spotter was trained on.

A model source declares its front end as a module attribute ``FRONTEND`` (a dict with a ``kind``;
``samples/kws.py`` has the MLPerf Tiny KWS MFCC one, ``samples/sww.py`` the streaming wakeword's log-mel
filterbank energies, kind ``lfbe``: :mod:`armgen.model.frontend_lfbe`). For the MFCC, armgen turns the
declaration into:

- a host reference of the pipeline in numpy (:meth:`MfccFrontend.features`), the firmware's ground
  truth: it was checked against TensorFlow's own functions (``tf.signal.stft``,
  ``linear_to_mel_weight_matrix``, ``mfccs_from_log_mel_spectrograms``) on speech clips, and the
  values TensorFlow gave are a test fixture (``tests/data/mfcc_tf_fixture.npz``);
- the constants the generated C front end embeds (:meth:`MfccFrontend.tables`: window, mel
  weights in sparse rows, DCT matrix), computed here at generate time in float64 and stored as float32.

The pipeline (what TensorFlow computes, in order): int16 PCM as float, divided by its maximum
(``wav / tf.reduce_max(wav)``: peak, not full-scale, normalisation), zero-padded or cut to
``clip_samples``; frames of ``frame_length`` every ``frame_step`` samples with no end padding,
each multiplied by a periodic Hann window and zero-padded to ``fft_length``; the magnitude (not
power) of the real FFT; a mel filter bank (HTK mel scale, triangles between ``lower_hz`` and
``upper_hz``, DC bin zero); ``log(mel + log_offset)``; a DCT-II scaled by ``1/sqrt(2 * mel_bins)``
(TensorFlow's unnormalised DCT-II, ``2 * sum x[n] cos(pi k (2n + 1) / 2N)``, times ``rsqrt(2N)``);
the first ``num_mfcc`` coefficients. Sources: mlcommons/tiny
``benchmark/training/keyword_spotting/get_dataset.py`` (``prepare_processing_graph``) and
``kws_util.py`` (window 30 ms, stride 20 ms, 10 coefficients, 16 kHz); TensorFlow's
``tensorflow/python/ops/signal/mel_ops.py`` and ``mfcc_ops.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from armgen.errors import ModelError
from armgen.model.frontend_lfbe import LfbeFrontend
from armgen.model.frontend_mel import FrameGeometry, mel_weight_matrix, sparse_rows

#: The front-end kinds armgen generates (``armgen new --frontend``).
FRONTEND_KINDS = ("mfcc", "lfbe")


@dataclass(frozen=True)
class MfccFrontend(FrameGeometry):
    """An MFCC front end's parameters (sample counts in samples, frequencies in Hz).

    Attributes:
        sample_rate: Hz of the PCM the front end takes (other rates are resampled on the host).
        clip_samples: samples per inference (a clip is padded with zeros or cut to this).
        frame_length / frame_step / fft_length: STFT frame, hop and FFT size in samples.
        mel_bins / lower_hz / upper_hz: the mel filter bank.
        log_offset: added to each mel energy before the natural log.
        num_mfcc: DCT coefficients kept per frame.
        source: where the parameters come from (a citation, for the generated code's comments).
    """

    sample_rate: int = 16000
    clip_samples: int = 16000
    frame_length: int = 480
    frame_step: int = 320
    fft_length: int = 512
    mel_bins: int = 40
    lower_hz: float = 20.0
    upper_hz: float = 4000.0
    log_offset: float = 1e-6
    num_mfcc: int = 10
    source: str = ""

    kind = "mfcc"

    @property
    def frame_features(self) -> int:
        """Values per frame: the coefficients kept."""
        return self.num_mfcc

    def check(self) -> str | None:
        """What is wrong with the parameters, or None (the kind-specific part of the declaration check)."""
        if not 0 <= self.lower_hz < self.upper_hz <= self.sample_rate / 2 or not 0 < self.num_mfcc <= self.mel_bins:
            return "the mel band and coefficient count are out of range"
        return None

    # --- the pipeline, float64 -----------------------------------------------------------------

    def window(self) -> np.ndarray:
        """Periodic Hann window of ``frame_length`` (``tf.signal.hann_window(periodic=True)``)."""
        n = np.arange(self.frame_length, dtype=np.float64)
        return 0.5 - 0.5 * np.cos(2.0 * np.pi * n / self.frame_length)

    def mel_matrix(self) -> np.ndarray:
        """``num_bins x mel_bins`` weights: TensorFlow's ``linear_to_mel_weight_matrix`` (HTK mel,
        ``1127 ln(1 + f / 700)``; the DC bin weighs 0), in float64."""
        return mel_weight_matrix(self.num_bins, self.mel_bins, self.sample_rate, self.lower_hz, self.upper_hz)

    def dct_matrix(self) -> np.ndarray:
        """``num_mfcc x mel_bins``: TensorFlow's DCT-II times ``rsqrt(2 * mel_bins)``."""
        n = np.arange(self.mel_bins)
        k = np.arange(self.num_mfcc)[:, None]
        return 2.0 * np.cos(np.pi * k * (2 * n + 1) / (2.0 * self.mel_bins)) / math.sqrt(2.0 * self.mel_bins)

    def fit(self, pcm: np.ndarray) -> np.ndarray:
        """``pcm`` as one clip: its first ``clip_samples`` int16 samples, zero-padded at the end."""
        x = np.asarray(pcm, dtype=np.int16).reshape(-1)[: self.clip_samples]
        return np.pad(x, (0, self.clip_samples - x.size))

    def normalised(self, pcm: np.ndarray) -> np.ndarray:
        """The clip as the pipeline sees it: float64, divided by its maximum, ``clip_samples`` long.

        A clip whose maximum is not positive (silence) is left unscaled: TensorFlow would divide by
        zero there; the firmware does the same as this function.
        """
        x = np.asarray(pcm, dtype=np.float64).reshape(-1)[: self.clip_samples]
        x = np.pad(x, (0, self.clip_samples - x.size))
        peak = x.max() if x.size else 0.0
        return x / peak if peak > 0 else x

    def features(self, pcm: np.ndarray) -> np.ndarray:
        """MFCCs of one clip of int16 PCM at ``sample_rate``: ``num_frames x num_mfcc`` float64."""
        x = self.normalised(pcm)
        idx = np.arange(self.frame_length)[None, :] + self.frame_step * np.arange(self.num_frames)[:, None]
        frames = x[idx] * self.window()[None, :]
        spectrum = np.abs(np.fft.rfft(frames, n=self.fft_length, axis=1))
        mel = spectrum @ self.mel_matrix()
        return np.log(mel + self.log_offset) @ self.dct_matrix().T

    def model_input(self, features: np.ndarray, shape: tuple[int, ...] | list[int]) -> np.ndarray:
        """``num_frames x num_mfcc`` values in the model input's logical ``shape`` (frame-major)."""
        return np.asarray(features).reshape(tuple(shape))

    def quantized(self, features: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
        """int8 of ``features``, rounded to nearest as ExecuTorch quantizes
        (:func:`armgen.model.tensors.quantize`)."""
        from armgen.model.tensors import quantize

        return quantize(features, scale, zero_point, np.int8)

    # --- what the generated C embeds -----------------------------------------------------------

    def tables(self) -> dict[str, Any]:
        """The C front end's constants (float32 values as Python floats).

        Returns:
            dict: ``window`` (``frame_length`` values), ``mel_start`` / ``mel_count`` (first
            nonzero bin and count per mel bin), ``mel_weights`` (the nonzero weights, bins in order),
            ``dct`` (``num_mfcc * mel_bins`` values, row-major).
        """
        return {
            "window": [float(np.float32(w)) for w in self.window()],
            **sparse_rows(self.mel_matrix()),
            "dct": [float(np.float32(v)) for v in self.dct_matrix().reshape(-1)],
        }


#: Any front end armgen generates.
Frontend = MfccFrontend | LfbeFrontend

_CLASSES: dict[str, type[MfccFrontend] | type[LfbeFrontend]] = {"mfcc": MfccFrontend, "lfbe": LfbeFrontend}


def frontend_from_declaration(decl: Any, where: str) -> Frontend:
    """The front end a model source declares (its ``FRONTEND`` dict).

    Raises:
        ModelError: not a dict, an unknown kind or key, or parameters that do not make frames.
    """
    if not isinstance(decl, dict):
        raise ModelError(f"{where}: FRONTEND must be a dict (kind = one of {', '.join(FRONTEND_KINDS)}, and the "
                         "pipeline's parameters)")
    decl = dict(decl)
    kind = decl.pop("kind", None)
    if kind not in FRONTEND_KINDS:
        raise ModelError(f"{where}: FRONTEND kind {kind!r} is not one of: {', '.join(FRONTEND_KINDS)}")
    cls = _CLASSES[kind]
    known = set(cls.__dataclass_fields__)
    unknown = sorted(set(decl) - known)
    if unknown:
        raise ModelError(f"{where}: FRONTEND has unknown keys {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    try:
        fe = cls(**decl)
    except TypeError as exc:
        raise ModelError(f"{where}: FRONTEND: {exc}") from exc
    if fe.frame_length > fe.fft_length or fe.fft_length & (fe.fft_length - 1) or fe.clip_samples < fe.frame_length:
        raise ModelError(f"{where}: FRONTEND: frames of {fe.frame_length} need an FFT length that is a power of two "
                         f"at least as long (got {fe.fft_length}) and a clip of at least one frame")
    problem = fe.check()
    if problem is not None:
        raise ModelError(f"{where}: FRONTEND: {problem}")
    if fe.fft_length not in (32, 64, 128, 256, 512, 1024, 2048, 4096):
        raise ModelError(f"{where}: FRONTEND: CMSIS-DSP's arm_rfft_fast_f32 has no {fe.fft_length}-point transform")
    return fe


def memory_strides(frontend: Frontend, shape: tuple[int, ...] | list[int],
                   dim_order: tuple[int, ...] | list[int]) -> tuple[int, int]:
    """Where feature (frame ``f``, value ``k``) lies in the model input's memory: ``f * frame + k * value``.

    Args:
        shape / dim_order: the program input's logical shape and dim order (memory order of its dimensions).

    Returns:
        (frame stride, value stride), in elements.

    Raises:
        ModelError: the input's memory does not hold the features at two fixed strides.
    """
    frames, per = frontend.num_frames, frontend.frame_features
    ids = np.arange(frames * per).reshape(frames, per)
    logical = frontend.model_input(ids, shape)
    if len(dim_order) == logical.ndim:
        logical = np.transpose(logical, tuple(dim_order))
    stored = logical.reshape(-1)
    pos = np.empty(frames * per, dtype=np.int64)
    pos[stored] = np.arange(stored.size)
    pos = pos.reshape(frames, per)
    frame_stride = int(pos[1, 0] - pos[0, 0]) if frames > 1 else per
    value_stride = int(pos[0, 1] - pos[0, 0]) if per > 1 else 1
    expected = pos[0, 0] + frame_stride * np.arange(frames)[:, None] + value_stride * np.arange(per)[None, :]
    if not np.array_equal(pos, expected):
        raise ModelError(f"the {frontend.kind} front end's features do not lie at fixed strides in the input "
                         f"{'x'.join(map(str, shape))} (dim order {tuple(dim_order)})")
    return frame_stride, value_stride


def frontend_from_record(table: dict[str, Any]) -> Frontend:
    """The front end an ``armgen.toml`` ``[frontend]`` table records.

    Raises:
        ModelError: as :func:`frontend_from_declaration`.
    """
    return frontend_from_declaration(dict(table), "armgen.toml [frontend]")


def wav_conversion(path: Any, sample_rate: int) -> str:
    """What :func:`read_wav` does to ``path`` to make it mono 16-bit PCM at ``sample_rate`` Hz, for the run report
    (``"8,000 Hz resampled to 16,000 Hz, 24-bit PCM to 16-bit"``); empty when nothing. Unreadable files give
    empty too (:func:`read_wav` says why).
    """
    import wave

    from scipy.io import wavfile

    notes: list[str] = []
    try:
        rate, data = wavfile.read(path)
    except Exception:  # noqa: BLE001 - read_wav reports the file's problem in its own words
        return ""
    if int(rate) != sample_rate:
        notes.append(f"{int(rate):,} Hz resampled to {sample_rate:,} Hz")
    try:
        with wave.open(str(path)) as w:
            bits = f"{8 * w.getsampwidth()}-bit PCM"
    except (wave.Error, EOFError, OSError):  # float or WAVE_FORMAT_EXTENSIBLE (sox's 24-bit): read the fmt chunk
        bits = f"{data.dtype.itemsize * 8}-bit {'float' if data.dtype.kind == 'f' else 'PCM'}"
        with open(path, "rb") as f:
            head = f.read(4096)
        at = head.find(b"fmt ")
        # WAVEFORMATEXTENSIBLE: wFormatTag 0xFFFE, then wValidBitsPerSample 18 bytes into the chunk's data
        if at >= 0 and head[at + 8 : at + 10] == b"\xfe\xff" and len(head) >= at + 28 and data.dtype.kind != "f":
            bits = f"{int.from_bytes(head[at + 26 : at + 28], 'little')}-bit PCM"
    if bits != "16-bit PCM":
        notes.append(f"{bits} to 16-bit")
    if data.ndim == 2 and data.shape[1] > 1:
        notes.append(f"{data.shape[1]} channels averaged")
    return ", ".join(notes)


def read_wav(path: Any, sample_rate: int) -> np.ndarray:
    """A WAV file as mono int16 PCM at ``sample_rate`` Hz.

    Reads integer PCM (8/16/24/32-bit) and float WAV with ``scipy.io.wavfile``; channels are averaged;
    other rates are resampled with ``scipy.signal.resample_poly`` (polyphase, Kaiser window), as
    espeak-ng's 22,050 Hz needs for a 16 kHz model. Floats are taken as full scale 1.0.

    Raises:
        ModelError: the file is missing, not a WAV file, or holds no samples.
    """
    import struct
    from pathlib import Path

    from scipy.io import wavfile
    from scipy.signal import resample_poly

    p = Path(path)
    if not p.is_file():
        raise ModelError(f"{p}: audio file not found")
    try:
        rate, data = wavfile.read(p)
    except (ValueError, OSError, EOFError, struct.error) as exc:  # struct.error: a truncated header
        raise ModelError(f"{p}: not a readable WAV file ({exc})") from exc
    data = np.asarray(data)
    if data.size == 0:
        raise ModelError(f"{p}: the WAV file holds no samples")
    if data.dtype.kind == "f":
        x = data.astype(np.float64) * 32767.0
    elif data.dtype == np.uint8:
        x = (data.astype(np.float64) - 128.0) * 256.0
    else:  # int16, int32 (24-bit files arrive as int32, left-aligned)
        x = data.astype(np.float64) / (2.0 ** (8 * data.dtype.itemsize - 16))
    if x.ndim == 2:
        x = x.mean(axis=1)
    if rate != sample_rate:
        g = math.gcd(int(rate), int(sample_rate))
        x = resample_poly(x, sample_rate // g, int(rate) // g)
    return np.clip(np.rint(x), -32768, 32767).astype(np.int16)

"""Record lfbe_ref_fixture.npz: MLPerf Tiny streaming-wakeword log-mel features from the reference's own data.

No TensorFlow: the mel matrix and the window are the numbers the C reference submission embeds, parsed at
generation time from mlcommons/tiny at the commit armgen pins (``fixed_data.c`` of
``benchmark/reference_submissions/streaming_wakeword/sww_ref_l4r5zi``: ``lin2mel_packed_513x40`` with
``lin2mel_513x40_filter_starts`` / ``_lens``, TensorFlow's ``linear_to_mel_weight_matrix(40, 513, 16000, 0,
8000)`` printed to 6 decimals, and ``hamm_win_1024``). The pipeline is written out here step by step after
``get_lfbe_func`` (``benchmark/training/streaming_wakeword/get_dataset.py``), independently of armgen's code,
in float64.

One upstream inconsistency: get_lfbe_func windows with ``hamming_window(periodic=False)`` (symmetric,
``0.54 - 0.46 cos(2 pi n / 1023)``), but ``hamm_win_1024`` is the *periodic* Hamming window
(``cos(2 pi n / 1024)``, within 2e-7; 0.0022 apart at most). ``features`` follow the training pipeline: the
symmetric window (computed here) with the C file's mel matrix; ``features_c_window`` use the C file's window
too (what the C reference computes), so the size of the difference is on record. Run once from the repository root, with a clone or bare mirror of
mlcommons/tiny:

    python tests/data/make_lfbe_ref_fixture.py /path/to/mlcommons-tiny.git

The audio is deterministic and made here (no upstream audio is stored): three clips of 30 frames (15,872
samples at 16 kHz, about 1 s each): a loud 100 -> 7,900 Hz chirp that drives features into the clip at 1,
a voiced buzz (120 -> 180 Hz pulse train through two formant resonators) over quiet noise, and noise bursts at
-6, -30 and -60 dBFS between stretches of digital silence (features clipped at 0). The npz holds the int16 PCM
(``pcm``, 3 x 15,872), the features (``features`` and ``features_c_window``, 3 x 30 x 40 float64, frames x
mel bins) and the commit; the parsed tables themselves (upstream's data) are not stored.
tests/model/test_frontend_lfbe.py checks armgen's numpy pipeline against it.
"""

import re
import subprocess
import sys

import numpy as np
from scipy.signal import lfilter

COMMIT = "1afd2c9820f795965a6134facd0b4dfae41ef23f"
FIXED_DATA = "benchmark/reference_submissions/streaming_wakeword/sww_ref_l4r5zi/Core/Src/fixed_data.c"
RATE, CLIP, FRAME, STEP, BINS, MELS = 16000, 15872, 1024, 512, 513, 40


def c_array(text, name):
    found = re.search(rf"\b{name}\s*\[[^\]]*\]\s*=\s*\{{(.*?)\}};", text, re.S)
    assert found is not None, name
    body = found.group(1)
    return np.array([float(v) for v in re.split(r"[,\s]+", body) if v])


def reference_tables(repo):
    text = subprocess.run(["git", "-C", repo, "show", f"{COMMIT}:{FIXED_DATA}"], check=True,
                          capture_output=True, text=True).stdout
    window = c_array(text, "hamm_win_1024").astype(np.float32)
    packed = c_array(text, "lin2mel_packed_513x40").astype(np.float32)
    starts = c_array(text, "lin2mel_513x40_filter_starts").astype(int)
    lens = c_array(text, "lin2mel_513x40_filter_lens").astype(int)
    assert window.size == FRAME and packed.size == lens.sum() == 987 and starts.size == lens.size == MELS
    mel = np.zeros((BINS, MELS), dtype=np.float32)
    offsets = np.concatenate([[0], np.cumsum(lens)])
    for m in range(MELS):
        mel[starts[m] : starts[m] + lens[m], m] = packed[offsets[m] : offsets[m + 1]]
    return window, mel


def lfbe(pcm, window, mel):
    """get_lfbe_func, step by step, float64 with the reference's float32 window and mel matrix."""
    x = pcm.astype(np.float64) / 2**15  # evaluate.py: long_wav / 2**15
    x = np.concatenate([[0.0], x])  # tf.pad([[0, 0], [1, 0]])
    x = x[1:] - (1 - 2**-5) * x[:-1]  # pre-emphasis
    frames = np.stack([x[i : i + FRAME] for i in range(0, x.size - FRAME + 1, STEP)])  # pad_end=False
    mag = np.abs(np.fft.rfft(frames * window.astype(np.float64), n=FRAME))  # fft_length=None -> 1024
    pow_ = (1 / FRAME) * np.square(mag)
    pow_ = np.clip(pow_, 1e-30, pow_.max())
    log_mel = 10 * (np.log(pow_ @ mel.astype(np.float64)) / np.log(10))
    return np.clip((log_mel + 52 - 32 + 32.0) / 64.0, 0, 1)


def clips():
    rng = np.random.default_rng(45)
    t = np.arange(CLIP) / RATE
    dur = CLIP / RATE
    chirp = 0.9 * np.sin(2 * np.pi * (100 * t + (7900 - 100) * t * t / (2 * dur)))
    f0 = 120 + 60 * t / dur
    pulses = (np.diff(np.floor(np.cumsum(f0) / RATE), prepend=0) > 0).astype(float)
    voiced = pulses
    for freq, bw in ((700, 130), (1200, 150)):
        r = np.exp(-np.pi * bw / RATE)
        voiced = lfilter([1 - r], [1, -2 * r * np.cos(2 * np.pi * freq / RATE), r * r], voiced)
    voiced = 0.5 * voiced / np.abs(voiced).max() * np.minimum(1, np.sin(np.pi * t / dur) * 3) + 0.003 * rng.standard_normal(CLIP)
    bursts = np.zeros(CLIP)
    for k, level_db in enumerate((-6, -30, -60)):
        start = 1500 + k * 4800
        bursts[start : start + 3000] = 10 ** (level_db / 20) * np.clip(rng.standard_normal(3000) / 3, -1, 1)
    return np.stack([np.clip(np.rint(c * 32767), -32768, 32767).astype(np.int16) for c in (chirp, voiced, bursts)])


if __name__ == "__main__":
    c_window, mel = reference_tables(sys.argv[1])
    n = np.arange(FRAME)
    assert np.abs(c_window - (0.54 - 0.46 * np.cos(2 * np.pi * n / FRAME))).max() < 1e-6  # periodic
    symmetric = 0.54 - 0.46 * np.cos(2 * np.pi * n / (FRAME - 1))  # tf.signal.hamming_window(periodic=False)
    pcm = clips()
    features = np.stack([lfbe(c, symmetric, mel) for c in pcm])
    features_c_window = np.stack([lfbe(c, c_window, mel) for c in pcm])
    assert features.shape == (3, 30, MELS)
    # Only test audio and the features computed from the C file's tables: the tables themselves (upstream's
    # data) stay out of the repository.
    np.savez_compressed("tests/data/lfbe_ref_fixture.npz", pcm=pcm, features=features,
                        features_c_window=features_c_window, commit=np.array(COMMIT))
    print(f"symmetric vs the C file's periodic window: features differ by up to "
          f"{np.abs(features - features_c_window).max():.5f}")
    print(f"features: min {features.min():.3f} max {features.max():.3f}, zeros {np.mean(features == 0):.1%}, "
          f"ones {np.mean(features == 1):.1%}")

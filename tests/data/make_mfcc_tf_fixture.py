"""Record mfcc_tf_fixture.npz: TensorFlow's MLPerf Tiny KWS features of three espeak-ng words.

Run once, in a Python that has TensorFlow (armgen does not depend on it):

    espeak-ng -w yes.wav yes; espeak-ng -w no.wav no; espeak-ng -w stop.wav stop
    python -m venv tfvenv && tfvenv/bin/pip install tensorflow-cpu scipy
    tfvenv/bin/python tests/data/make_mfcc_tf_fixture.py yes.wav no.wav stop.wav

The PCM is what ``armgen.model.frontend.read_wav`` makes of the files (16 kHz int16, padded to 1 s;
the resampling is repeated here with the same scipy call). The features are computed exactly as
mlcommons/tiny benchmark/training/keyword_spotting/get_dataset.py computes its training features.
tests/model/test_frontend.py compares armgen's numpy pipeline with them.
"""

import math
import sys

import numpy as np
import tensorflow as tf
from scipy.io import wavfile
from scipy.signal import resample_poly


def pcm_16k(path):
    rate, data = wavfile.read(path)
    x = data.astype(np.float64)
    g = math.gcd(rate, 16000)
    x = resample_poly(x, 16000 // g, rate // g)
    x = np.clip(np.rint(x), -32768, 32767).astype(np.int16)[:16000]
    return np.pad(x, (0, 16000 - x.size))


def tf_mfcc(clip):
    w = tf.cast(tf.constant(clip), tf.float32)
    w = w / tf.reduce_max(w)
    w = tf.pad(w, [[0, 16000 - tf.shape(w)[-1]]])
    stfts = tf.signal.stft(w, frame_length=480, frame_step=320, fft_length=None, window_fn=tf.signal.hann_window)
    spectrograms = tf.abs(stfts)
    mel_matrix = tf.signal.linear_to_mel_weight_matrix(40, stfts.shape[-1], 16000, 20.0, 4000.0)
    log_mel = tf.math.log(tf.tensordot(spectrograms, mel_matrix, 1) + 1e-6)
    return tf.signal.mfccs_from_log_mel_spectrograms(log_mel)[..., :10].numpy()


paths = sys.argv[1:]
pcm = np.stack([pcm_16k(p) for p in paths])
np.savez_compressed(
    "tests/data/mfcc_tf_fixture.npz",
    pcm=pcm,
    mfcc=np.stack([tf_mfcc(c) for c in pcm]),
    words=np.array([p.rsplit("/", 1)[-1].removesuffix(".wav") for p in paths]),
    tensorflow=np.array(tf.__version__),
)

"""armgen.model.quality: the int8-vs-float figures, on arrays whose answers are known by hand."""

import math

import numpy as np
import pytest

from armgen.errors import ModelError
from armgen.model.quality import format_quality, output_quality


def test_figures_match_hand_computation():
    ref = np.array([[1.0, 2.0, 3.0], [3.0, 0.0, 1.0]])
    cand = np.array([[1.0, 2.5, 3.0], [0.0, 4.0, 1.0]])  # sample 0 keeps argmax 2, sample 1 moves 0 -> 1
    (q,) = output_quality([ref], [cand], classifier=True)
    assert q.max_abs_error == pytest.approx(4.0)
    signal = 1 + 4 + 9 + 9 + 0 + 1
    noise = 0.25 + 9 + 16
    assert q.snr_db == pytest.approx(10 * math.log10(signal / noise))
    assert q.top1_agreement == pytest.approx(0.5)
    assert q.samples == 2
    assert "top-1 1/2 (50 %)" in format_quality([q])
    assert "over 2 inputs" in format_quality([q])


def test_identical_and_zero_signal_edges():
    ref = np.zeros((3, 4))
    (same,) = output_quality([ref], [ref.copy()])
    assert same.snr_db == math.inf and same.max_abs_error == 0.0 and same.top1_agreement is None
    assert same.to_json()["snr_db"] == "inf"
    (off,) = output_quality([ref], [ref + 0.5])
    assert off.snr_db == -math.inf and off.to_json()["snr_db"] == "-inf"
    assert "identical" in format_quality([same])


def test_mismatched_outputs_are_refused():
    with pytest.raises(ModelError, match="1 outputs, the quantized program 2"):
        output_quality([np.zeros((1, 2))], [np.zeros((1, 2)), np.zeros((1, 2))])
    with pytest.raises(ModelError, match="output 0 has shape"):
        output_quality([np.zeros((1, 2))], [np.zeros((1, 3))])

"""How far a quantized program's outputs are from its float model's: the int8 quality figures.

The bit-exact check (firmware against the host reference of the same int8 program) says the
firmware computes what the program says; these figures say how good that program is. For each
output: the largest absolute error, the signal-to-noise ratio of the float output against the error
(dB), and, for a classifier's output, the share of samples whose top-1 class agrees.

The figures follow the usual definitions of post-training-quantization studies (e.g. the
per-layer SNR that ``torch.ao.ns`` numeric-suite comparisons report, 10 * log10 of signal power
over error power); they are computed here because they are a few lines of numpy over arrays armgen
already holds, not a model transformation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from armgen.errors import ModelError


@dataclass(frozen=True)
class OutputQuality:
    """One output's distance from the float model, over ``samples`` inputs.

    ``max_abs_error`` is in the output's own (dequantized, float) units. ``snr_db`` is
    ``10 * log10(sum(reference**2) / sum((candidate - reference)**2))`` in dB over all samples and
    elements; ``math.inf`` when the outputs are identical, ``-math.inf`` when the reference is all
    zeros but the candidate is not. ``top1_agreement`` is the share (0..1) of samples whose argmax
    over the last axis agrees, or ``None`` for an output that is not a classifier's.
    """

    index: int
    max_abs_error: float
    snr_db: float
    top1_agreement: float | None
    samples: int

    def to_json(self) -> dict[str, object]:
        """The figures as JSON values (an infinite SNR becomes the string ``"inf"``/``"-inf"``)."""
        snr: object = self.snr_db if math.isfinite(self.snr_db) else ("inf" if self.snr_db > 0 else "-inf")
        return {"output": self.index, "max_abs_error": self.max_abs_error, "snr_db": snr,
                "top1_agreement": self.top1_agreement, "samples": self.samples}


def _snr_db(reference: np.ndarray, error: np.ndarray) -> float:
    """Signal power over error power, in dB; +inf without error, -inf for a zero signal with error."""
    noise = float(np.sum(error.astype(np.float64) ** 2))
    signal = float(np.sum(reference.astype(np.float64) ** 2))
    if noise == 0.0:
        return math.inf
    if signal == 0.0:
        return -math.inf
    return 10.0 * math.log10(signal / noise)


def output_quality(reference: Sequence[np.ndarray], candidate: Sequence[np.ndarray], *,
                   classifier: bool = False) -> list[OutputQuality]:
    """The quality figures of each output of ``candidate`` against ``reference``.

    ``reference[i]`` and ``candidate[i]`` hold output ``i`` for every sample, as float arrays with
    the sample axis first (``(N, ...)``, same shape); ``reference`` is the float model's, the
    candidate the quantized program's dequantized outputs. ``classifier`` asks for top-1 agreement
    (argmax over the last axis of each sample).

    Raises:
        ModelError: the two sides have different output counts or an output's shapes differ.
    """
    if len(reference) != len(candidate):
        raise ModelError(f"quality: the float model has {len(reference)} outputs, "
                         f"the quantized program {len(candidate)}")
    figures = []
    for index, (ref, cand) in enumerate(zip(reference, candidate, strict=True)):
        ref = np.asarray(ref, dtype=np.float64)
        cand = np.asarray(cand, dtype=np.float64)
        if ref.shape != cand.shape:
            raise ModelError(f"quality: output {index} has shape {cand.shape} in the quantized program, "
                             f"{ref.shape} in the float model")
        error = cand - ref
        samples = ref.shape[0] if ref.ndim else 1
        top1 = None
        if classifier and ref.ndim >= 2 and samples:
            flat_ref = ref.reshape(samples, -1)
            flat_cand = cand.reshape(samples, -1)
            top1 = float(np.mean(np.argmax(flat_ref, axis=1) == np.argmax(flat_cand, axis=1)))
        figures.append(OutputQuality(index=index, max_abs_error=float(np.max(np.abs(error))) if error.size else 0.0,
                                     snr_db=_snr_db(ref, error), top1_agreement=top1, samples=samples))
    return figures


def format_quality(figures: Sequence[OutputQuality]) -> str:
    """One line for people: ``output 0: max abs error 0.0123, SNR 31.2 dB, top-1 9/10 (90 %)``."""
    parts = []
    for q in figures:
        snr = f"{q.snr_db:.1f} dB" if math.isfinite(q.snr_db) else ("inf dB (identical)" if q.snr_db > 0 else "-inf dB")
        text = f"output {q.index}: max abs error {q.max_abs_error:.4g}, SNR {snr}"
        if q.top1_agreement is not None:
            agree = round(q.top1_agreement * q.samples)
            text += f", top-1 {agree}/{q.samples} ({q.top1_agreement * 100:.0f} %)"
        parts.append(text)
    if not parts:
        return "no outputs"
    samples = figures[0].samples
    return "; ".join(parts) + f" (over {samples} input{'s' if samples != 1 else ''})"

"""AD: anomaly detection on ToyADMOS with the deep autoencoder (MLPerf Tiny), input 1x640.

Reuses upstream's ``executorch.examples.models.mlperf_tiny.DeepAutoEncoder`` (ten dense layers,
ReLU after the first nine): it matches the reference graph once its batch norms are identities,
which is what loading the TFLite weights does (the reference folded batch norm into the dense
layers). The output is the reconstruction of the input (no classes); the anomaly score is the
mean squared error between input and output.
"""

from __future__ import annotations

import torch
from executorch.examples.models.mlperf_tiny import DeepAutoEncoder
from torch import nn

from ._layers import seeded_init

NAME = "ad"
TITLE = "Anomaly detection, deep autoencoder (MLPerf Tiny), 640 log-mel values -> reconstruction"
INPUT_SHAPE = (1, 640)
CLASS_LABELS: tuple[str, ...] = ()
WEIGHTS_FILE = "ad01_fp32.tflite"


def build_model() -> nn.Module:
    """Return the deep autoencoder in eval mode with fixed-seed weights and identity batch norms."""
    model = seeded_init(DeepAutoEncoder(), seed=0)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm1d):
            with torch.no_grad():
                m.weight.fill_(1.0)
                m.bias.zero_()
                m.running_mean.zero_()
                m.running_var.fill_(1.0 - m.eps)
    return model.eval()


def representative_inputs(count: int = 8, seed: int = 0) -> list[tuple[torch.Tensor]]:
    """Deterministic log-mel-like inputs, 1x640 float32 (5 frames x 128 mel bins), about -80..10.

    The int8 reference model's input quantization spans about -85..15.
    """
    gen = torch.Generator().manual_seed(seed)
    out = []
    mel_profile = torch.linspace(-20.0, -55.0, 128)
    for _ in range(count):
        frames = mel_profile + 10.0 * torch.randn(1, 128, generator=gen) + 4.0 * torch.randn(5, 128, generator=gen)
        out.append((frames.reshape(1, 640).clamp(-80.0, 10.0).contiguous(),))
    return out

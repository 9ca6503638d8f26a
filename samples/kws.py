"""KWS: keyword spotting on Speech Commands with DS-CNN (MLPerf Tiny), input 1x1x49x10 MFCC.

Own definition, not upstream's ``DSCNNKWS``: the TFLite reference pads the first (10x4, stride 2)
convolution 4 rows above and 5 below (TF 'SAME'), pools over the full 25x5 map, and ends in a
softmax; upstream pads 5/5, pools 24x5 and returns logits.
"""

from __future__ import annotations

import torch
from torch import nn

from ._layers import SameConv2d, seeded_init

NAME = "kws"
TITLE = "Keyword spotting, DS-CNN (MLPerf Tiny), 49x10 MFCC -> 12 classes"
INPUT_SHAPE = (1, 1, 49, 10)
#: MLPerf Tiny KWS label order (benchmark/training/keyword_spotting, 12 classes).
CLASS_LABELS = ("down", "go", "left", "no", "off", "on", "right", "stop", "up", "yes", "silence", "unknown")
WEIGHTS_FILE = "kws_ref_model_float32.tflite"
#: The MFCC pipeline the MLPerf Tiny KWS reference computed its training features with
#: (mlcommons/tiny benchmark/training/keyword_spotting/get_dataset.py, prepare_processing_graph, and
#: kws_util.py's defaults): 16 kHz, 1 s clips divided by their maximum, tf.signal.stft with a 30 ms
#: (480-sample) periodic Hann window every 20 ms (320 samples), FFT length 512 (fft_length=None: the
#: next power of two), magnitude spectrum, linear_to_mel_weight_matrix(40 bins, 20-4000 Hz),
#: log(mel + 1e-6), mfccs_from_log_mel_spectrograms, first 10 coefficients: 49 x 10.
#: `armgen new kws --frontend mfcc` generates it in C (armgen.model.frontend).
FRONTEND = {
    "kind": "mfcc",
    "sample_rate": 16000,
    "clip_samples": 16000,
    "frame_length": 480,
    "frame_step": 320,
    "fft_length": 512,
    "mel_bins": 40,
    "lower_hz": 20.0,
    "upper_hz": 4000.0,
    "log_offset": 1e-6,
    "num_mfcc": 10,
    "source": "mlcommons/tiny benchmark/training/keyword_spotting/get_dataset.py + kws_util.py",
}


class DSCNN(nn.Module):
    """DS-CNN as in the TFLite reference (batch norm folded into conv biases)."""

    def __init__(self, num_classes: int = len(CLASS_LABELS)) -> None:
        super().__init__()
        layers: list[nn.Module] = [SameConv2d(1, 64, (10, 4), 2, (49, 10)), nn.ReLU()]
        for _ in range(4):
            layers += [
                nn.Conv2d(64, 64, 3, padding=1, groups=64, bias=True),
                nn.ReLU(),
                nn.Conv2d(64, 64, 1, bias=True),
                nn.ReLU(),
            ]
        self.features = nn.Sequential(*layers)
        # Global average pool. The kernel covers the whole feature map, so the stride does not
        # change the result; stride 1 (not the default stride = kernel) is what the Ethos-U55
        # takes (ExecuTorch's U55 pool check wants stride <= 3), so the NPU runs the whole net.
        self.pool = nn.AvgPool2d((25, 5), stride=1)
        self.classifier = nn.Linear(64, num_classes)
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.features(x))
        return self.softmax(self.classifier(torch.flatten(x, 1)))


def build_model() -> nn.Module:
    """Return DS-CNN in eval mode with fixed-seed (untrained) weights."""
    return seeded_init(DSCNN(), seed=0)


def representative_inputs(count: int = 8, seed: int = 0) -> list[tuple[torch.Tensor]]:
    """Deterministic MFCC-like inputs, shape 1x1x49x10 float32, in the reference model's range.

    The int8 reference model's input quantization spans about -123..26 (scale 0.585, zero point
    83); coefficient 0 (log energy) is strongly negative, higher coefficients shrink toward 0.
    """
    gen = torch.Generator().manual_seed(seed)
    out = []
    coeff_mean = torch.tensor([-60.0, 5.0, -5.0, 3.0, -2.0, 1.0, -1.0, 0.5, -0.5, 0.0])
    coeff_std = torch.tensor([25.0, 12.0, 10.0, 8.0, 6.0, 5.0, 4.0, 3.0, 3.0, 2.0])
    for _ in range(count):
        smooth = torch.cumsum(torch.randn(1, 1, 49, 10, generator=gen), dim=2) / 4.0
        x = coeff_mean + coeff_std * (0.6 * smooth + 0.8 * torch.randn(1, 1, 49, 10, generator=gen))
        out.append((x.clamp(-120.0, 25.0).contiguous(),))
    return out

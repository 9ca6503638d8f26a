"""IC: image classification on CIFAR-10 with ResNet-8 (MLPerf Tiny), input 1x3x32x32.

Own definition, not upstream's ``ResNet8``: the TFLite reference pads its stride-2 3x3 layers
TF-'SAME' style (0 before, 1 after; upstream pads 1/1), its 1x1 shortcut convolutions carry a
bias, and it ends in a softmax. Input values are raw pixels 0..255 (the int8 reference quantizes
with scale 1.0, zero point -128).
"""

from __future__ import annotations

import torch
from torch import nn

from ._layers import SameConv2d, seeded_init

NAME = "ic"
TITLE = "Image classification, ResNet-8 (MLPerf Tiny), 32x32 RGB -> 10 CIFAR-10 classes"
INPUT_SHAPE = (1, 3, 32, 32)
CLASS_LABELS = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
WEIGHTS_FILE = "pretrainedResnet.tflite"


class _Stage(nn.Module):
    """Two 3x3 convs plus a shortcut (identity or strided 1x1 conv), then add and ReLU."""

    def __init__(self, ch_in: int, ch_out: int, stride: int, hw: int) -> None:
        super().__init__()
        self.conv1 = SameConv2d(ch_in, ch_out, (3, 3), stride, (hw, hw))
        self.relu1 = nn.ReLU()
        self.conv2 = SameConv2d(ch_out, ch_out, (3, 3), 1, (hw // stride, hw // stride))
        self.shortcut = nn.Conv2d(ch_in, ch_out, 1, stride=stride, bias=True) if stride != 1 else nn.Identity()
        self.relu2 = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv2(self.relu1(self.conv1(x)))
        return self.relu2(self.shortcut(x) + y)


class ResNet8(nn.Module):
    """ResNet-8 as in the TFLite reference (batch norm folded)."""

    def __init__(self, num_classes: int = len(CLASS_LABELS)) -> None:
        super().__init__()
        self.stem = SameConv2d(3, 16, (3, 3), 1, (32, 32))
        self.stem_relu = nn.ReLU()
        self.stage1 = _Stage(16, 16, 1, 32)
        self.stage2 = _Stage(16, 32, 2, 32)
        self.stage3 = _Stage(32, 64, 2, 16)
        # Global average pool. The kernel covers the whole feature map, so the stride does not
        # change the result; stride 1 (not the default stride = kernel) is what the Ethos-U55
        # takes (ExecuTorch's U55 pool check wants stride <= 3), so the NPU runs the whole net.
        self.pool = nn.AvgPool2d(8, stride=1)
        self.classifier = nn.Linear(64, num_classes)
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem_relu(self.stem(x))
        x = self.stage3(self.stage2(self.stage1(x)))
        x = self.pool(x)
        return self.softmax(self.classifier(torch.flatten(x, 1)))


def build_model() -> nn.Module:
    """Return ResNet-8 in eval mode with fixed-seed (untrained) weights."""
    return seeded_init(ResNet8(), seed=0)


def representative_inputs(count: int = 8, seed: int = 0) -> list[tuple[torch.Tensor]]:
    """Deterministic image-like inputs, 1x3x32x32 float32 with pixel values 0..255."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(count):
        coarse = torch.rand(1, 3, 4, 4, generator=gen)
        img = nn.functional.interpolate(coarse, size=(32, 32), mode="bilinear", align_corners=False)
        img = (img + 0.08 * torch.randn(1, 3, 32, 32, generator=gen)).clamp(0.0, 1.0) * 255.0
        out.append((img.round().contiguous(),))
    return out

"""VWW: visual wake words (person / no person) with MobileNetV1 0.25 (MLPerf Tiny), 1x3x96x96.

Own definition, not upstream's ``MobileNetV1025``: the TFLite reference pads its stride-2 3x3
layers TF-'SAME' style (0 before, 1 after on even sizes; upstream pads 1/1) and ends in a softmax.
Input values are in 0..1 (the int8 reference quantizes 0..1 with scale 1/255, zero point -128).
"""

from __future__ import annotations

import torch
from torch import nn

from ._layers import SameConv2d, seeded_init

NAME = "vww"
TITLE = "Visual wake words, MobileNetV1 0.25 (MLPerf Tiny), 96x96 RGB -> person / no person"
INPUT_SHAPE = (1, 3, 96, 96)
CLASS_LABELS = ("no_person", "person")
WEIGHTS_FILE = "vww_96_float.tflite"

#: (stride, doubles channels) of the 13 depthwise-separable blocks (same table as upstream).
_BLOCKS = ((1, True), (2, True), (1, False), (2, True), (1, False), (2, True), (1, False),
           (1, False), (1, False), (1, False), (1, False), (2, True), (1, False))


class MobileNetV1025(nn.Module):
    """MobileNetV1 width 0.25 as in the TFLite reference (batch norm folded)."""

    def __init__(self, num_classes: int = len(CLASS_LABELS)) -> None:
        super().__init__()
        hw = 96
        ch = 8
        layers: list[nn.Module] = [SameConv2d(3, ch, (3, 3), 2, (hw, hw)), nn.ReLU()]
        hw //= 2
        for stride, doubles in _BLOCKS:
            out_ch = ch * 2 if doubles else ch
            layers += [SameConv2d(ch, ch, (3, 3), stride, (hw, hw), groups=ch), nn.ReLU()]
            hw = -(-hw // stride)
            layers += [nn.Conv2d(ch, out_ch, 1, bias=True), nn.ReLU()]
            ch = out_ch
        self.features = nn.Sequential(*layers)
        self.pool = nn.AvgPool2d(hw)
        self.classifier = nn.Linear(ch, num_classes)
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.features(x))
        return self.softmax(self.classifier(torch.flatten(x, 1)))


def build_model() -> nn.Module:
    """Return MobileNetV1 0.25 in eval mode with fixed-seed (untrained) weights."""
    return seeded_init(MobileNetV1025(), seed=0)


def representative_inputs(count: int = 8, seed: int = 0) -> list[tuple[torch.Tensor]]:
    """Deterministic image-like inputs, 1x3x96x96 float32 in 0..1 (smooth blobs plus noise)."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(count):
        coarse = torch.rand(1, 3, 6, 6, generator=gen)
        img = nn.functional.interpolate(coarse, size=(96, 96), mode="bilinear", align_corners=False)
        img = img + 0.08 * torch.randn(1, 3, 96, 96, generator=gen)
        out.append((img.clamp(0.0, 1.0).contiguous(),))
    return out

"""A tiny image model whose middle op the Ethos-U55 does not take: a bilinear 2x upsample between two
convolutions. ExecuTorch's ``EthosUNotSupported`` check for the U55 rejects ``upsample_bilinear2d``
(``backends/arm/operator_support/ethos_u55_support.py``: RESIZE), so the program is delegate,
CPU ops (dequantize, upsample, quantize), delegate: the shape a CPU fallback between two NPU parts has.
"""

import torch
from torch import nn


class UpsampleBetweenConvs(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.fc = nn.Linear(8 * 8 * 8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.conv1(x))
        x = nn.functional.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=False)
        x = torch.relu(self.conv2(x))
        return self.fc(x.flatten(1))


torch.manual_seed(0)
model = UpsampleBetweenConvs().eval()
example_inputs = (torch.randn(1, 1, 8, 8),)

"""A model with no op the Ethos-U55 takes (one bilinear upsample, RESIZE: rejected for the U55 by
ExecuTorch's ``backends/arm/operator_support/ethos_u55_support.py``): nothing would run on the NPU."""

import torch
from torch import nn


class UpsampleOnly(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=False)


model = UpsampleOnly().eval()
example_inputs = (torch.randn(1, 2, 4, 4),)

"""Small building blocks shared by the samples (TF-style layers as plain PyTorch modules)."""

from __future__ import annotations

import torch
from torch import nn


def tf_same_padding(size: int, kernel: int, stride: int) -> tuple[int, int]:
    """Return (before, after) padding of TensorFlow's 'SAME' mode for one spatial dimension.

    TF pads ``max((ceil(size/stride) - 1) * stride + kernel - size, 0)`` in total and puts the
    odd element after (bottom/right). Source: TensorFlow's conv padding documentation.
    """
    out = -(-size // stride)
    total = max((out - 1) * stride + kernel - size, 0)
    return total // 2, total - total // 2


class SameConv2d(nn.Module):
    """Conv2d with TF 'SAME' padding for a fixed input size (bias on: batch norm is folded).

    Symmetric padding goes into the convolution; the asymmetric remainder (one extra row/column
    after) becomes an explicit zero pad in front of it, which is what TF computes.
    """

    def __init__(
        self,
        in_ch: int,
        out_ch: int,
        kernel: tuple[int, int],
        stride: int,
        in_hw: tuple[int, int],
        groups: int = 1,
    ) -> None:
        super().__init__()
        (pt, pb) = tf_same_padding(in_hw[0], kernel[0], stride)
        (pl, pr) = tf_same_padding(in_hw[1], kernel[1], stride)
        sym = (min(pt, pb), min(pl, pr))
        extra = (pl - sym[1], pr - sym[1], pt - sym[0], pb - sym[0])
        self.pad = nn.ZeroPad2d(extra) if any(extra) else nn.Identity()
        self.conv = nn.Conv2d(in_ch, out_ch, kernel, stride=stride, padding=sym, groups=groups, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(self.pad(x))


def seeded_init(model: nn.Module, seed: int = 0) -> nn.Module:
    """Re-initialise all parameters from a fixed seed (deterministic untrained weights)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            fan_in = p[0].numel() if p.dim() > 1 else max(p.numel(), 1)
            bound = (1.0 / fan_in) ** 0.5 * (3.0 if p.dim() > 1 else 1.0) ** 0.5
            p.copy_((torch.rand(p.shape, generator=gen) * 2 - 1) * bound)
    return model.eval()

"""A tiny image model whose average pool has a zero point far from -128 and 0: convolution (no ReLU),
2x2 average pool, linear. ExecuTorch 1.5.1 gives the TOSA AVG_POOL2D of such a pool wrong zero
points (the model's quantized once more with the pool's own qparams and saturated to -128: see
``armgen.model.exact_reference``), which moves pool outputs that sit on an exact tie of the 2x2 sum
(about a quarter of them) by 1 LSB against the program's quantized reference.

The linear layer makes that visible at the output: its 16 outputs are the differences of two
convolution channels that are equal up to 20 % (``conv`` channel 1 is channel 0 x 1.2), so the
output range is a fifth of the pool's and one pool LSB is about 5 output LSBs.
"""

import torch
from torch import nn


class ConvPoolLinear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3, padding=1)
        self.pool = nn.AvgPool2d(2)
        self.fc = nn.Linear(2 * 4 * 4, 16)
        with torch.no_grad():
            self.conv.weight[1] = self.conv.weight[0] * 1.2
            assert self.conv.bias is not None  # nn.Conv2d's bias=True (for mypy)
            self.conv.bias.copy_(torch.tensor([0.5, 0.6]))
            eye = torch.eye(16)
            self.fc.weight.copy_(torch.cat([eye, -eye], dim=1))
            self.fc.bias.zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.pool(self.conv(x)).flatten(1))


torch.manual_seed(0)
model = ConvPoolLinear().eval()
example_inputs = (torch.randn(1, 1, 8, 8),)

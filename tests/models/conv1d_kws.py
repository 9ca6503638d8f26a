"""A 1-D convolution keyword spotter (user-style model, fixed-seed weights): MFCC-like input (1, 40, 101),
12 class scores. Conv1d + BatchNorm1d + ReLU, a dilated Conv1d + ReLU, global average pooling, Linear."""

import torch
from torch import nn

torch.manual_seed(11)


class Conv1dKws(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv1d(40, 64, 3)
        self.bn1 = nn.BatchNorm1d(64)
        self.conv2 = nn.Conv1d(64, 64, 3, dilation=2)
        self.pool = nn.AdaptiveAvgPool1d(1)
        self.fc = nn.Linear(64, 12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.bn1(self.conv1(x)))
        x = torch.relu(self.conv2(x))
        return self.fc(self.pool(x).squeeze(-1))


model = Conv1dKws().eval()
with torch.no_grad():  # non-trivial batch-norm statistics, as a trained model has
    assert model.bn1.running_mean is not None and model.bn1.running_var is not None  # track_running_stats (mypy)
    model.bn1.running_mean.uniform_(-0.5, 0.5)
    model.bn1.running_var.uniform_(0.5, 2.0)
example_inputs = (torch.randn(1, 40, 101),)

"""A user-style model with two inputs (a feature vector and a context vector), for the Zephyr tests:
the kind of model nobody tuned armgen for. Fixed-seed weights, so the program is the same every run."""

import torch
from torch import nn

torch.manual_seed(1234)


class TwoInputs(nn.Module):
    """Two branches joined by an add, then a classifier: inputs (1, 32) and (1, 16), output (1, 4)."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Linear(32, 24), nn.ReLU())
        self.context = nn.Sequential(nn.Linear(16, 24), nn.ReLU())
        self.head = nn.Linear(24, 4)

    def forward(self, x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x) + self.context(c))


model = TwoInputs().eval()
example_inputs = (torch.randn(1, 32), torch.randn(1, 16))

"""`armgen update`'s test model, version 3: a residual add joins the MLP (a new operator,
cortex_m::quantized_add, and a temp pool), same input and output shapes."""

import torch
from torch import nn

torch.manual_seed(9)


class Residual(nn.Module):
    """Linear -> ReLU -> (+ Linear -> ReLU) -> Linear."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.c = nn.Linear(64, 32), nn.Linear(32, 32), nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.a(x))
        return self.c(h + torch.relu(self.b(h)))


model = Residual().eval()
example_inputs = (torch.randn(1, 64),)

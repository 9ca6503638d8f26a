"""`armgen update`'s test model, version 2: version 1 retrained (the same layers, other weights)."""

import torch
from torch import nn

torch.manual_seed(8)

model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 8)).eval()
example_inputs = (torch.randn(1, 64),)

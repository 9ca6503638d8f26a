"""`armgen update`'s test model, version 1: a small MLP, input (1, 64), output (1, 8), fixed-seed weights."""

import torch
from torch import nn

torch.manual_seed(7)

model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 8)).eval()
example_inputs = (torch.randn(1, 64),)

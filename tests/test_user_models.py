"""Users' own models through `armgen new`: early errors naming the layer, the NAME/--model mix-up,
and --calibration."""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from _programs import armgen
from torch import nn

from armgen.errors import ModelError
from armgen.model.layer_support import check_layers

MODELS = Path(__file__).parent / "models"
ANSI = re.compile(r"\x1b\[[0-9;]*m")

GRU_MODEL = '''
import torch
from torch import nn


class GruKws(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(10, 32, batch_first=True)
        self.fc = nn.Linear(32, 12)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.fc(y[:, -1])


model = GruKws().eval()
example_inputs = (torch.randn(1, 49, 10),)
'''


@pytest.mark.parametrize("layer", [nn.GRU(4, 8), nn.LSTM(4, 8), nn.RNN(4, 8)])
def test_recurrent_layers_are_refused_by_name(layer):
    model = nn.Sequential(nn.Identity(), layer)
    with pytest.raises(ModelError) as info:
        check_layers(model, "m.py")
    kind = type(layer).__name__
    assert info.value.message.startswith(f"m.py: layer '1' ({kind}) cannot run on the Cortex-M path")
    assert "aten::linear" in info.value.message and info.value.hint


def test_gru_model_fails_early_with_one_line(tmp_path):
    (tmp_path / "gru_kws.py").write_text(GRU_MODEL)
    start = time.monotonic()
    r = armgen("new", "gru", "--model", str(tmp_path / "gru_kws.py"), "--board", "qemu_mps3_an547",
               "--out", str(tmp_path))
    err = ANSI.sub("", r.stderr)
    assert r.returncode == 2 and "Traceback" not in err
    assert "layer 'rnn' (GRU) cannot run on the Cortex-M path" in err
    assert time.monotonic() - start < 30  # before export and lowering (those took 40-50 s)
    assert not (tmp_path / "gru").exists()


def test_a_model_file_given_as_name_points_at_model(tmp_path):
    r = armgen("new", "my_kws.py", "--board", "qemu_mps3_an547", "--out", str(tmp_path))
    err = ANSI.sub("", r.stderr)
    assert r.returncode == 2
    assert "'my_kws.py' looks like a model file, not a project name" in err
    assert "armgen new my_kws --model my_kws.py --board BOARD" in err


def test_calibration_does_not_apply_to_a_pte(tmp_path):
    (tmp_path / "m.pte").write_bytes(b"\0" * 16)
    (tmp_path / "m.report.json").write_text("{}")
    r = armgen("new", "m", "--model", str(tmp_path / "m.pte"), "--calibration", str(tmp_path),
               "--board", "qemu_mps3_an547", "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and "--calibration does not apply to a compiled .pte" in ANSI.sub("", r.stderr)


@pytest.mark.slow
def test_new_takes_calibration_data(tmp_path):
    """`armgen new --calibration` calibrates with the given samples (and says so) instead of the example input."""
    torch.manual_seed(3)
    samples = np.random.default_rng(0).standard_normal((16, 1, 64)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", input_0=samples)
    r = armgen("new", "mlp", "--model", str(MODELS / "mlp.py"), "--board", "qemu_mps3_an547",
               "--calibration", str(tmp_path / "calib.npz"), "--out", str(tmp_path))
    err = ANSI.sub("", r.stderr)
    assert r.returncode == 0, err
    assert f"calibrating with 16 samples from {tmp_path / 'calib.npz'}" in err
    assert "no --calibration data" not in err
    # without it: the example inputs only, and the warning
    r = armgen("new", "mlp2", "--model", str(MODELS / "mlp.py"), "--board", "qemu_mps3_an547", "--out", str(tmp_path))
    assert r.returncode == 0 and "no --calibration data" in ANSI.sub("", r.stderr)

"""Users' own models through `armgen new`: early errors naming the layer, the NAME/--model mix-up,
and --calibration."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from _programs import ANSI, armgen
from armgen.errors import ModelError
from armgen.model.layer_support import check_layers

MODELS = Path(__file__).parents[1] / "models"

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
    assert "FutureWarning" not in err, err  # torch's LeafSpec deprecation, via copyreg (issue 27, item 4)
    # without it: the example inputs only, and the warning
    r = armgen("new", "mlp2", "--model", str(MODELS / "mlp.py"), "--board", "qemu_mps3_an547", "--out", str(tmp_path))
    assert r.returncode == 0 and "no --calibration data" in ANSI.sub("", r.stderr)


def _usage_compiles(header: Path, tmp_path: Path) -> None:
    """The usage example in armgen_model.h's comment, compiled against the header itself."""
    import shutil
    import subprocess

    gcc = shutil.which("arm-none-eabi-gcc")
    assert gcc is not None, "arm-none-eabi-gcc not installed: mark the test @pytest.mark.needs_gcc"
    text = header.read_text()
    comment = text[text.index("Usage:"):text.index("*/")]
    code = [line.split("*", 1)[1][5:] for line in comment.splitlines()[1:] if line.startswith(" *     ")]
    assert code, "no usage example in the header comment"
    body = "\n".join(c.replace("{ ... armgen_model_error_where() says where ... }", "{ return 1; }") for c in code)
    src = tmp_path / "usage.c"
    src.write_text(f'#include "armgen_model.h"\nint use(void) {{\n{body}\n  return 0;\n}}\n')
    r = subprocess.run([gcc, "-mcpu=cortex-m55", "-std=c11", "-Wall", "-Werror", "-fsyntax-only",
                        "-I", str(header.parent), str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr + body


@pytest.mark.slow
@pytest.mark.needs_gcc
@pytest.mark.parametrize("model", ["mlp", "two_inputs"])
def test_header_usage_matches_the_generated_api(model, tmp_path):
    r = armgen("new", "m", "--model", str(MODELS / f"{model}.py"), "--board", "qemu_mps3_an547",
               "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    header = tmp_path / "m" / "src" / "model" / "armgen_model.h"
    _usage_compiles(header, tmp_path)
    text = header.read_text()
    assert "_DIM_ORDER" not in text  # no macro the header does not define
    assert ("armgen_model_run(" in text.split("*/")[0]) == (model == "mlp")


@pytest.mark.workspace
@pytest.mark.needs_workspace
@pytest.mark.slow
@pytest.mark.parametrize("board", ["stm32f4_disco", "nucleo_f767zi", "nucleo_h743zi"])
def test_an_mlp_builds_bare_metal_for_every_stm32_board(board, tmp_path):
    """The generated STM32 USART driver (from board data) links: no user-supplied symbol."""
    r = armgen("new", "mlp", "--model", str(MODELS / "mlp.py"), "--board", board, "--rtos", "baremetal",
               "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    console = tmp_path / "mlp" / "src" / "platform" / "console"
    assert [p.name for p in console.glob("*.c")] == ["stm32_usart.c"]  # the board's driver, no other
    assert "UART_BRR" in (console / "stm32_usart.c").read_text()
    r = armgen("build", str(tmp_path / "mlp"))
    assert r.returncode == 0, ANSI.sub("", r.stderr)[-3000:]
    assert (tmp_path / "mlp" / "build" / "mlp.elf").is_file()


@pytest.mark.workspace
@pytest.mark.needs_workspace
@pytest.mark.slow
def test_the_stm32f4_usart_driver_prints_on_qemu_netduinoplus2(tmp_path):
    """QEMU's netduinoplus2 (STM32F405) runs the same F4 USART driver as stm32f4_disco: everything the
    run reads (outputs, pools, ticks) came through USART1."""
    r = armgen("new", "mlp", "--model", str(MODELS / "mlp.py"), "--board", "qemu_netduinoplus2", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "F1/F2/F4 layout" in (tmp_path / "mlp" / "src" / "platform" / "console" / "stm32_usart.c").read_text()
    res = armgen("run", str(tmp_path / "mlp"), "--json")
    assert res.returncode == 0, ANSI.sub("", res.stderr)[-3000:]
    import json

    rr = json.loads(res.stdout)
    assert rr["passed"] and rr["max_lsb_diff"] == 0 and rr["machine"] == "netduinoplus2"

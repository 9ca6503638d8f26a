"""The operator matrix (armgen.model.operator_matrix), proven in firmware.

Every row's case is a branch of one model (tests/models/operator_matrix_ci.py: the rows, then 16 of
ExecuTorch's own Cortex-M operator cases read from the installed wheel), so one program and one
firmware build per CPU check them all: the Cortex-M55 (qemu_mps3_an547, CMSIS-NN's MVE paths) and the
Cortex-M4 (qemu_mps2_an386, its DSP paths). Per row: the layer runs as the row says (the program report's
placement), a float row is warned by name, and its output is within 1 LSB of the host reference on QEMU.
Without a workspace only the README check and the early refusal run.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from _programs import ANSI, armgen
from armgen.model.operator_matrix import CMSIS_NN, FLOAT_WARNED, PORTABLE_INT8, ROWS, markdown_table

ROOT = Path(__file__).parents[2]
MATRIX_MODEL = ROOT / "tests" / "models" / "operator_matrix_ci.py"  # the rows, then a part of ExecuTorch's cases

#: Kernels a branch may call besides its row's: the int8 <-> float conversions around a float layer and
#: the data movement around a layout or rank change (view, (un)squeeze, dim-order copies).
AROUND = re.compile(r"cortex_m::(de)?quantize_per_tensor|dim_order_ops::|aten::(view|squeeze|unsqueeze)_copy")


def test_the_readme_shows_the_matrix():
    readme = (ROOT / "README.md").read_text()
    assert markdown_table() in readme, "README's operator matrix is stale: paste armgen.model.operator_matrix.markdown_table()"


def test_rows_are_distinct_and_say_how_they_run():
    layers = [r.layer for r in ROWS]
    assert len(set(layers)) == len(layers)
    for r in ROWS:
        assert r.kind in (CMSIS_NN, PORTABLE_INT8, FLOAT_WARNED), r.layer
        assert r.aten and r.runs_as and r.inputs, r.layer
        assert all(k.startswith(("cortex_m::", "aten::")) for k in r.runs_as + r.runs_as_dsp), r.layer
        assert (r.kind == CMSIS_NN) == all(k.startswith("cortex_m::") for k in r.runs_as), r.layer


def _branch(layer: str) -> str:
    return layer.split(".", 1)[0]


@pytest.mark.slow
@pytest.mark.workspace
@pytest.mark.needs_workspace
@pytest.mark.needs_qemu
@pytest.mark.parametrize("board,mve", [("qemu_mps3_an547", True), ("qemu_mps2_an386", False)])
def test_every_row_runs_as_it_says_within_one_lsb_on_qemu(board, mve, tmp_path):
    made = armgen("new", "matrix", "--model", str(MATRIX_MODEL), "--board", board, "--out", str(tmp_path))
    assert made.returncode == 0, made.stderr
    report = json.loads((tmp_path / "matrix" / "model" / "matrix.report.json").read_text())
    kernels: dict[str, set[str]] = {}
    for p in report["placement"]:
        kernels.setdefault(_branch(p["layer"]), set()).add(p["op"])
    warned = " ".join(report["warnings"])
    for r in ROWS:
        want = set(r.kernels(mve))
        got = kernels.get(r.key, set())
        assert want <= got, f"{r.key} {r.layer}: runs as {sorted(got)}, the matrix says {sorted(want)}"
        extra = {k for k in got - want if not AROUND.match(k)}
        assert not extra, f"{r.key} {r.layer}: also runs {sorted(extra)}"
        assert (f"layer '{r.key}" in warned) == (r.kind == FLOAT_WARNED), f"{r.key} {r.layer}: warning {warned}"

    ran = armgen("run", str(tmp_path / "matrix"), "--json")
    assert ran.returncode == 0, ANSI.sub("", ran.stderr)
    rr = json.loads(ran.stdout)
    assert rr["passed"] and rr["alternate_checked"]
    names = [r.layer for r in ROWS] + [f"ExecuTorch case output {i}" for i in range(len(rr["outputs"]) - len(ROWS))]
    off = [(names[o["index"]], o["max_lsb_diff"]) for o in rr["outputs"] if o["max_lsb_diff"] > 1]
    assert not off, off
    assert len(rr["outputs"]) > len(ROWS)  # the rows, then ExecuTorch's cases (tests/models/operator_matrix_ci.py)
    # Bit-exact against the lowered program is not enough (a layer a pass dropped would be bit-exact too):
    # each row's output against the float model. Lowest measured on both CPUs: 24.5 dB (the global pools).
    weak = [(ROWS[i].layer, round(q["snr_db"], 1)) for i, q in enumerate(rr["quality"]) if q["snr_db"] < 20.0]
    assert not weak, weak
    print(f"\noperator matrix on {board}: {len(ROWS)} rows, max {rr['max_lsb_diff']} LSB, "
          f"{rr['instructions']:,} instructions")


@pytest.mark.slow
def test_an_operator_outside_the_matrix_is_refused_by_name_in_seconds(tmp_path):
    (tmp_path / "c3.py").write_text(
        "import torch\nfrom torch import nn\n"
        "model = nn.Sequential(nn.Conv3d(2, 4, 3)).eval()\n"
        "example_inputs = (torch.randn(1, 2, 5, 5, 5),)\n"
    )
    start = time.monotonic()
    r = armgen("new", "c3", "--model", str(tmp_path / "c3.py"), "--board", "qemu_mps3_an547", "--out", str(tmp_path))
    err = ANSI.sub("", r.stderr)
    assert r.returncode == 2 and "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.startswith("armgen: error:")]
    assert len(lines) == 1 and "operator aten.conv3d of layer '0' (Conv3d) is not in armgen's Cortex-M operator" \
        in lines[0], err
    assert time.monotonic() - start < 30  # before quantization and lowering
    assert not (tmp_path / "c3").exists()


@pytest.mark.slow
def test_a_transposed_convolution_cmsis_nn_would_overrun_is_refused_by_layer(tmp_path):
    """CMSIS-NN's arm_transpose_conv_s8 writes the rows past its output when the kernel is shorter than
    stride + padding (armgen.model.layer_support.check_kernel_limits): refused, nothing written."""
    (tmp_path / "t1.py").write_text(
        "import torch\nfrom torch import nn\n"
        "model = nn.Sequential(nn.ConvTranspose2d(3, 6, kernel_size=1, stride=2)).eval()\n"
        "example_inputs = (torch.randn(1, 3, 4, 4),)\n"
    )
    r = armgen("compile", str(tmp_path / "t1.py"), "--target", "cortex-m4", "-o", str(tmp_path / "out"))
    err = ANSI.sub("", r.stderr)
    assert r.returncode == 2 and "Traceback" not in err
    assert err.splitlines()[0].endswith(
        "t1.py: layer '0' (ConvTranspose2d, stride 2, padding 0, output height 7) cannot run on CMSIS-NN: its int8 "
        "transposed convolution writes 1 row(s) (42 B) past its output when the kernel is shorter than stride + padding")
    assert not (tmp_path / "out").exists()

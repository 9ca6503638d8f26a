"""armgen's graph passes (armgen.model.passes): the rewrite itself (float-equal, milliseconds), what it
does to the compiled program (int8 CMSIS-NN kernels), and the firmware bit-exact on QEMU."""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
import runpy
from pathlib import Path

import pytest
import torch
from torch import nn

from _programs import armgen, compile_result
from armgen.model.passes.conv1d_to_conv2d import Conv1dToConv2dPass
from armgen.model.passes.same_padding_to_explicit import SamePaddingToExplicitPass

MODELS = Path(__file__).parents[1] / "models"
CONV1D_KWS = MODELS / "conv1d_kws.py"


def _rewritten(model: nn.Module, x: torch.Tensor):
    graph = torch.export.export(model.eval(), (x,)).module(check_guards=False)
    result = Conv1dToConv2dPass((x,)).call(graph)
    return result


class _Pools1d(nn.Module):
    """Strided/padded convolutions, 1-D pools, an add of two converted values, a mean over time."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv1d(8, 16, 5, stride=2, padding=2)
        self.b = nn.Conv1d(16, 16, 3, padding=1, groups=4)
        self.avg = nn.AvgPool1d(3, stride=2)
        self.max = nn.MaxPool1d(2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.a(x))
        z = torch.clamp(self.b(y), -1.0, 1.0) + y
        return self.max(self.avg(z)).mean(dim=-1, keepdim=True)


@pytest.mark.parametrize("model_x", ["conv1d_kws", "pools"])
def test_conv1d_regions_become_2d_with_equal_float_outputs(model_x):
    torch.manual_seed(0)
    if model_x == "conv1d_kws":
        ns = runpy.run_path(str(CONV1D_KWS))
        model, x = ns["model"], ns["example_inputs"][0]
    else:
        model, x = _Pools1d(), torch.randn(1, 8, 64)
    result = _rewritten(model, x)
    assert result.modified
    gm = result.graph_module
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert torch.ops.aten.conv1d.default not in targets and torch.ops.aten.conv2d.default in targets
    assert not any("pool1d" in str(t) for t in targets)  # the pools moved to 2-D with the convolutions
    assert all(p.dim() != 3 for p in gm.parameters())  # the 3-D weights are gone (not carried into the program)
    for _ in range(3):
        x2 = torch.randn_like(x)
        assert torch.allclose(model(x2), gm(x2), atol=1e-5), (model(x2) - gm(x2)).abs().max()


@pytest.mark.parametrize("conv,shape,pads", [
    (nn.Conv2d(4, 8, 3, padding="same"), (1, 4, 8, 8), 0),  # even totals: the convolution's own padding
    (nn.Conv2d(4, 8, (2, 4), dilation=(1, 2), padding="same"), (1, 4, 8, 8), 1),  # odd: a pad in front
    (nn.Conv1d(4, 8, 4, padding="same"), (1, 4, 10), 1),
    (nn.Conv2d(4, 8, 3, padding="valid"), (1, 4, 8, 8), 0),
])
def test_same_padding_becomes_explicit_with_equal_float_outputs(conv, shape, pads):
    torch.manual_seed(0)
    x = torch.randn(shape)
    graph = torch.export.export(conv.eval(), (x,)).module(check_guards=False)
    result = SamePaddingToExplicitPass((x,)).call(graph)
    targets = [n.target for n in result.graph_module.graph.nodes if n.op == "call_function"]
    assert result.modified and aten_padding_overloads_gone(targets)
    assert targets.count(torch.ops.aten.pad.default) == pads
    assert torch.equal(result.graph_module(x), conv(x))


def aten_padding_overloads_gone(targets: list) -> bool:
    return torch.ops.aten.conv2d.padding not in targets and torch.ops.aten.conv1d.padding not in targets


def test_a_graph_without_conv1d_is_left_alone():
    model = nn.Sequential(nn.Linear(8, 4), nn.ReLU()).eval()
    graph = torch.export.export(model, (torch.randn(1, 8),)).module(check_guards=False)
    result = Conv1dToConv2dPass((torch.randn(1, 8),)).call(graph)
    assert not result.modified and result.graph_module is graph


def _pass_modules():
    """Every module of armgen.model.passes, imported."""
    import armgen.model.passes as package

    return [importlib.import_module(f"{package.__name__}.{m.name}") for m in pkgutil.iter_modules(package.__path__)]


def test_readme_names_passes_that_exist_and_run():
    """The README's pass paragraph named two classes that did not exist (`StridedConvWidthToChannels`,
    `FoldPadIntoConv`): each pass it names in backticks must be armgen's own, in a list of
    armgen.model.passes.order (so the compile stage runs it); each module it names must import."""
    from armgen.model.passes import order

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    start = readme.index("armgen's passes (`armgen.model.passes`")
    section = readme[start:readme.index("stage by stage, in order.", start)]
    names = re.findall(r"`([A-Za-z_][\w.]*)`", section)
    passes = [n for n in names if "." not in n and ("_" in n or n[:1].isupper())]
    modules = [n for n in names if n.startswith("armgen.")]
    assert len(passes) >= 5 and modules, names  # the paragraph was found and read
    run = {obj for name, value in vars(order).items() if name.isupper() and isinstance(value, tuple) for obj in value}
    for name in passes:
        owners = [m for m in _pass_modules() if hasattr(m, name) and getattr(m, name).__module__ == m.__name__]
        assert owners, f"README names `{name}`, which is no pass of armgen.model.passes"
        assert getattr(owners[0], name) in run, f"README names `{name}`, which armgen.model.passes.order does not run"
    for name in modules:
        importlib.import_module(name)


@pytest.mark.slow
def test_conv1d_kws_compiles_to_cmsis_nn_int8(tmp_path):
    from armgen.model.compile import compile_model

    report = compile_model(str(CONV1D_KWS), "cortex-m55", out_dir=tmp_path).report
    ops = {f"{o.name}.{o.overload}": o.library for o in report.operators}
    assert ops.get("cortex_m::quantized_conv2d.out") == "cortex_m"
    # no float convolution, activation or mean: what stays portable only moves int8 bytes
    assert not any(op.startswith(("aten::convolution", "aten::relu", "aten::mean")) for op in ops), ops
    assert not any(lib == "portable" and "quantize" in op for op, lib in ops.items())
    assert report.pte_size < 40_000  # int8 weights (the float program was 88 KB)
    # the converted ops keep their layer's name in the placement table (they were all "-")
    layers = {r.layer for r in report.placement if r.op.startswith("cortex_m::quantized_conv2d")}
    assert layers == {"conv1", "conv2"}, layers
    assert {r.layer for r in report.placement if "avg_pool" in r.op} == {"pool"}


def _run_bit_exact(tmp_path, name: str, board: str, *model: str) -> dict:
    """``armgen new`` + ``armgen run --json`` on QEMU; the run report, checked to be 0 LSB (callers are
    marked needs_workspace)."""
    made = armgen("new", name, *model, "--board", board, "--out", str(tmp_path))
    assert made.returncode == 0, made.stderr
    res = armgen("run", str(tmp_path / name), "--json")
    assert res.returncode == 0, res.stderr
    rr = json.loads(res.stdout)
    print(f"\n{name} on {board}: {rr['instructions']:,} instructions, {rr['max_lsb_diff']} LSB")
    assert rr["passed"] and rr["max_lsb_diff"] == 0
    return rr


@pytest.mark.workspace
@pytest.mark.needs_workspace
@pytest.mark.slow
def test_conv1d_kws_runs_bit_exact_on_qemu(tmp_path):
    rr = _run_bit_exact(tmp_path, "c1kws", "qemu_mps3_an547", "--model", str(CONV1D_KWS))
    assert rr["instructions"] < 10_000_000  # 87.8 M with float portable convolutions


@pytest.mark.slow
@pytest.mark.parametrize("cpu,convs,depthwise,pads", [("cortex-m4", 5, 4, 1), ("cortex-m55", 4, 5, 0)])
def test_one_channel_depthwise_becomes_a_convolution_without_mve(cpu, convs, depthwise, pads, tmp_path):
    """kws's first layer (1 input channel, 64 filters): a regular convolution on the M4 (CMSIS-NN's
    DSP depthwise path is the slow generic one), upstream's depthwise on the M55 (MVE kernel).
    Bit-exact on QEMU: tests/firmware/test_run.py runs kws on the M4 (qemu_mps2_an386) against the reference."""
    report = compile_result("kws", cpu).report  # the session's compile (tests/_programs.py)
    calls = {o.name: o.calls for o in report.operators}
    assert calls["cortex_m::quantized_conv2d"] == convs
    assert calls["cortex_m::quantized_depthwise_conv2d"] == depthwise
    # RemoveNoOpPadPass: upstream's zero-width pad in front of the average pool (a copy of the whole
    # 1x64x25x5 map) is gone. The first layer's real pad (one row below) stays on the M4, where the
    # pixel pairing needs it, and is folded into the depthwise convolution on the M55.
    assert calls.get("cortex_m::pad", 0) == pads


@pytest.mark.slow
def test_float_fallback_is_warned_naming_layer_op_and_share(tmp_path, monkeypatch):
    """Without the Conv1d pass the convolutions stay float: the report's placement says where each
    call runs, and a warning names each float layer with its share of the MACs and the fix."""
    from torch.fx.passes.infra.pass_base import PassResult

    from armgen.model.compile import compile_model

    monkeypatch.setattr(Conv1dToConv2dPass, "call", lambda self, gm: PassResult(gm, False))
    report = compile_model(str(CONV1D_KWS), "cortex-m55", out_dir=tmp_path).report
    rows = {(r.layer, r.op): r for r in report.placement}
    conv1 = rows[("conv1", "aten::convolution")]
    assert conv1.library == "portable" and conv1.dtype == "float32"
    assert conv1.macs == 64 * 99 * 40 * 3  # output elements x weights per output channel
    assert rows[("fc", "cortex_m::quantized_linear")].macs == 12 * 64
    warning = next(w for w in report.warnings if "layer 'conv1'" in w)
    # conv1 760,320 of 1,928,448 MACs (conv2 64 x 95 x 64 x 3 = 1,167,360; fc 768)
    assert "runs aten::convolution as a float portable kernel" in warning and "39.4% of the program's" in warning
    assert "fix:" in warning
    assert not any("squeeze_copy" in w for w in report.warnings)  # data movement is listed, not warned about


def _first_conv_call(pte: bytes) -> tuple[list[int], list[int], list[int], list[int], list[int]]:
    """(input sizes, input dim order, weight sizes, stride, padding) of the program's first
    ``cortex_m::quantized_conv2d`` call, read with ExecuTorch's deserializer."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    plan = deserialize_pte_binary(pte).program.execution_plan[0]
    values = plan.values
    conv = next(i for i, op in enumerate(plan.operators) if op.name == "cortex_m::quantized_conv2d")
    call = next(ins.instr_args for ins in plan.chains[0].instructions
                if getattr(ins.instr_args, "op_index", None) == conv)  # fmt: skip
    x, w, _b, stride, padding = (values[i].val for i in call.args[:5])

    def ints(v):
        return [values[i].val.int_val for i in v.items]

    return list(x.sizes), list(x.dim_order), list(w.sizes), ints(stride), ints(padding)


@pytest.mark.slow
def test_strided_one_channel_convolution_reads_pairs_of_pixels(tmp_path):
    """kws's first layer on the M4 (Conv2d(1, 64, (10, 4), stride 2) behind its one-row pad): the
    emitted program pads 49x10 to 50x12 and reads it as 50x6 pixels of 2 channels, with the same
    weight bytes as 10x2 taps of 2 channels, stride (2, 1), no horizontal padding. The lowered
    program the host reference runs keeps upstream's geometry. Bit-exact on QEMU:
    test_kws_on_the_m4_is_bit_exact_and_below_tflm below and tests/firmware/test_run.py (trained weights)."""
    from armgen.model.lowered_program import load_lowered_program

    result = compile_result("kws", "cortex-m4")
    x, order, w, stride, padding = _first_conv_call(result.pte_path.read_bytes())
    assert (x, order) == ([1, 2, 50, 6], [0, 2, 3, 1])
    assert (w, stride, padding) == ([64, 10, 2, 2], [2, 1], [4, 0])
    lowered = load_lowered_program(result.files["lowered_program"])
    conv = next(n for n in lowered.graph.nodes if "quantized_conv2d" in str(n.target))
    assert list(conv.args[0].meta["val"].shape) == [1, 1, 50, 10]
    assert (list(conv.args[3]), list(conv.args[4])) == ([2, 2], [4, 1])


@pytest.mark.workspace
@pytest.mark.needs_workspace
@pytest.mark.slow
def test_kws_on_the_m4_is_bit_exact_and_below_tflm(tmp_path):
    """kws on the M4 with both armgen passes on its first layer (a regular convolution, pairs of
    pixels): 0 LSB on QEMU, and fewer instructions than TFLite Micro's 7,699,760 for the same model
    on the same machine (benchmarks/results.json). Without the pixel pairing it was 7,710,320."""
    rr = _run_bit_exact(tmp_path, "kws", "qemu_mps2_an386")
    assert rr["instructions"] < 7_699_760


@pytest.mark.slow
def test_trailing_pads_are_folded_into_the_convolutions(tmp_path):
    """vww's strided 'SAME' layers (one extra row and column after the data): no cortex_m::pad is
    left in the emitted program; the first convolution reads the 96x96x3 program input itself, with
    no top/left padding (CMSIS-NN reads the missing last row and column as the zero point). The
    lowered program the host reference runs keeps its pads. Bit-exact on QEMU: tests/firmware/test_run.py."""
    from armgen.model.lowered_program import load_lowered_program

    result = compile_result("vww", "cortex-m55")
    calls = {o.name: o.calls for o in result.report.operators}
    assert "cortex_m::pad" not in calls
    x, order, _w, stride, padding = _first_conv_call(result.pte_path.read_bytes())
    assert (x, stride, padding) == ([1, 3, 96, 96], [2, 2], [0, 0])
    lowered = load_lowered_program(result.files["lowered_program"])
    assert sum("cortex_m.pad" in str(n.target) for n in lowered.graph.nodes) >= 5


LAYER_NORM_MODEL = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.norm = nn.LayerNorm(32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(self.norm(self.fc1(x)))


torch.manual_seed(0)
model = Net().eval()
example_inputs = (torch.randn(1, 16),)
"""


@pytest.mark.slow
def test_float_layer_norm_has_its_dtype_and_a_warning(tmp_path):
    """native_layer_norm returns three tensors; its row had dtype "-" and so no float-fallback warning.
    The (de)quantize rows at the program's edges are not called CMSIS-NN."""
    from rich.console import Console

    from armgen.cli.compile_cmd import placement_table
    from armgen.model.compile import compile_model
    from armgen.model.placement import float_fallback_warnings

    source = tmp_path / "ln.py"
    source.write_text(LAYER_NORM_MODEL)
    report = compile_model(str(source), "cortex-m55", out_dir=tmp_path / "out").report
    norm = [r for r in report.placement if "layer_norm" in r.op]
    assert norm and all(r.dtype == "float32" and r.library == "portable" for r in norm), norm
    warnings = float_fallback_warnings(report)
    assert any("layer 'norm'" in w and "layer_norm" in w for w in warnings), warnings
    console = Console(width=300, record=True)
    console.print(placement_table(report))
    lines = console.export_text().splitlines()
    conversions = [ln for ln in lines if "quantize_per_tensor" in ln]
    assert conversions and all("CMSIS-NN" not in ln and "int8 <-> float" in ln for ln in conversions), conversions

"""The operator matrix: every layer the Cortex-M path accepts, what it runs as, and the case that proves it.

One row per PyTorch layer and configuration that matters. ``runs_as`` names the kernels the lowered
program calls for the layer (besides the int8 <-> float conversions at the edges of a float layer):
``cortex_m::`` kernels are ExecuTorch's CMSIS-NN operators (``backends/cortex_m/ops``; on the M55 CMSIS-NN
takes its MVE paths, on the M4/M7 its DSP paths: the same kernels, the same results), ``aten::`` ones
ExecuTorch's portable kernels, in int8 or, for a layer the 1.5.1 ``CortexMQuantizer`` leaves float, in float
between a dequantize and a quantize (``armgen new`` warns, naming the layer).

How each row is known: ``tests/model/test_operator_matrix.py`` compiles one program holding every row's
case as its own branch (own input, own output; :func:`matrix_model`) for each CPU, checks that each
branch's layer runs as its row says, and runs the program on QEMU (an547: Cortex-M55, an386: Cortex-M4)
against the host reference of the lowered program, every output within 1 LSB. The README's table is
rendered from :data:`ROWS` (:func:`markdown_table`) and checked against it.

ATen operators of no row are refused right after ``torch.export`` (:func:`unknown_operators`), before
quantization, naming the operator and the layer that made it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812 - PyTorch's own spelling

#: What a row runs as, in the words of the placement table.
CMSIS_NN = "CMSIS-NN int8"
PORTABLE_INT8 = "portable int8"
FLOAT_WARNED = "portable float, warned"


@dataclass(frozen=True)
class Row:
    """One configuration of one layer.

    Attributes:
        group: the README's grouping ("Convolution", "Pooling", ...).
        layer: the PyTorch layer and its configuration, as a user writes it.
        aten: the ATen operators ``torch.export`` makes of it (``aten.conv2d``, without overload).
        runs_as: the kernels of the lowered program for the layer (``cortex_m::quantized_conv2d``).
        kind: :data:`CMSIS_NN`, :data:`PORTABLE_INT8` or :data:`FLOAT_WARNED`.
        inputs: the case's input shapes.
        build: the case's module (fixed seed: the same weights every call).
        note: what else a user should know ("" for nothing).
        runs_as_dsp: ``runs_as`` on a CPU without MVE (M4, M7, M33) where it differs, else empty.
    """

    group: str
    layer: str
    aten: tuple[str, ...]
    runs_as: tuple[str, ...]
    kind: str
    inputs: tuple[tuple[int, ...], ...]
    build: Callable[[], nn.Module]
    note: str = ""
    runs_as_dsp: tuple[str, ...] = ()

    def kernels(self, mve: bool) -> tuple[str, ...]:
        """The kernels the layer runs as on a CPU with (M55, M85) or without MVE."""
        return self.runs_as if mve or not self.runs_as_dsp else self.runs_as_dsp

    @property
    def key(self) -> str:
        """The row's branch name in :func:`matrix_model` (``r07``)."""
        return f"r{ROWS.index(self):02d}"


class _Fn(nn.Module):
    """A module around a function of the inputs (an elementwise op, a permute), holding its layers."""

    def __init__(self, fn: Callable[..., torch.Tensor], **layers: nn.Module) -> None:
        super().__init__()
        self.fn = fn
        for name, layer in layers.items():
            self.add_module(name, layer)

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        return self.fn(self, *xs)


class _DivByConstant(nn.Module):
    """``x / d`` with ``d`` a constant of ``x``'s shape in [0.5, 2] (no division by a number near zero)."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        super().__init__()
        self.register_buffer("d", torch.rand(shape) * 1.5 + 0.5)

    d: torch.Tensor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / self.d


def _seeded(make: Callable[[], nn.Module]) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        torch.manual_seed(7)
        module = make().eval()
        for m in module.modules():  # non-trivial batch-norm statistics, as a trained model has
            if isinstance(m, nn.BatchNorm2d) and m.running_mean is not None and m.running_var is not None:
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
        return module
    return build


def _row(group: str, layer: str, aten: Sequence[str], runs_as: Sequence[str], kind: str,
         inputs: Sequence[Sequence[int]], make: Callable[[], nn.Module], note: str = "",
         runs_as_dsp: Sequence[str] = ()) -> Row:
    return Row(group, layer, tuple(aten), tuple(runs_as), kind, tuple(tuple(s) for s in inputs), _seeded(make), note,
               tuple(runs_as_dsp))


_X = (1, 4, 8, 8)  # the default activation: NCHW, 4 channels
_CONV = "cortex_m::quantized_conv2d"
_DW = "cortex_m::quantized_depthwise_conv2d"
_TCONV = "cortex_m::quantized_transpose_conv2d"

ROWS: tuple[Row, ...] = (
    # ---- convolutions ----------------------------------------------------------------------------
    _row("Convolution", "Conv2d 3x3, stride 1, padding 1, bias", ["aten.conv2d"], [_CONV], CMSIS_NN, [_X],
         lambda: nn.Conv2d(4, 8, 3, padding=1)),
    _row("Convolution", "Conv2d 3x3, stride 2, padding 1", ["aten.conv2d"], [_CONV], CMSIS_NN, [_X],
         lambda: nn.Conv2d(4, 8, 3, stride=2, padding=1)),
    _row("Convolution", "Conv2d 3x3, padding 'same'", ["aten.conv2d"], [_CONV], CMSIS_NN, [_X],
         lambda: nn.Conv2d(4, 8, 3, padding="same"), "armgen makes the padding explicit before quantization"),
    _row("Convolution", "Conv2d 2x4, dilation 1x2, padding 'same' (odd totals)", ["aten.conv2d"],
         [_CONV], CMSIS_NN, [_X], lambda: nn.Conv2d(4, 8, (2, 4), dilation=(1, 2), padding="same"),
         "the odd padding becomes a pad in front, which armgen folds into the convolution"),
    _row("Convolution", "Conv2d 3x3, dilation 2", ["aten.conv2d"], [_CONV], CMSIS_NN, [_X],
         lambda: nn.Conv2d(4, 8, 3, dilation=2, padding=2)),
    _row("Convolution", "Conv2d 1x1, no bias", ["aten.conv2d"], [_CONV], CMSIS_NN, [_X],
         lambda: nn.Conv2d(4, 8, 1, bias=False)),
    _row("Convolution", "Conv2d, one input channel (a spectrogram)", ["aten.conv2d"], [_DW], CMSIS_NN,
         [(1, 1, 12, 10)], lambda: nn.Conv2d(1, 8, (5, 3), stride=(2, 1)),
         "a depthwise convolution to ExecuTorch; without MVE armgen makes it a regular one (CMSIS-NN's faster "
         "DSP path)", runs_as_dsp=[_CONV]),
    _row("Convolution", "Conv2d, groups 2", ["aten.conv2d"], [_CONV], CMSIS_NN, [_X],
         lambda: nn.Conv2d(4, 8, 3, groups=2, padding=1)),
    _row("Convolution", "Conv2d depthwise (groups = channels)", ["aten.conv2d"], [_DW], CMSIS_NN, [_X],
         lambda: nn.Conv2d(4, 4, 3, groups=4, padding=1)),
    _row("Convolution", "Conv2d depthwise, depth multiplier 2", ["aten.conv2d"], [_DW], CMSIS_NN, [_X],
         lambda: nn.Conv2d(4, 8, 3, groups=4, padding=1)),
    _row("Convolution", "Conv2d + BatchNorm2d + ReLU (folded, fused)",
         ["aten.conv2d", "aten.batch_norm", "aten.relu"], [_CONV], CMSIS_NN, [_X],
         lambda: nn.Sequential(nn.Conv2d(4, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())),
    _row("Convolution", "Conv1d, stride 2, dilation 2", ["aten.conv1d"], [_CONV], CMSIS_NN, [(1, 4, 20)],
         lambda: nn.Conv1d(4, 8, 3, stride=2, dilation=2), "rewritten to a Conv2d by armgen before quantization"),
    _row("Convolution", "Conv1d + AvgPool1d + MaxPool1d + AdaptiveAvgPool1d(1)",
         ["aten.conv1d", "aten.avg_pool1d", "aten.max_pool1d", "aten.adaptive_avg_pool1d", "aten.squeeze"],
         [_CONV, "cortex_m::quantized_avg_pool2d", "cortex_m::quantized_max_pool2d"], CMSIS_NN, [(1, 4, 24)],
         lambda: _Fn(lambda m, x: m.gap(m.max(m.avg(m.conv(x)))).squeeze(-1), conv=nn.Conv1d(4, 8, 3),
                     avg=nn.AvgPool1d(2), max=nn.MaxPool1d(2), gap=nn.AdaptiveAvgPool1d(1)),
         "the pools move to 2-D with the convolution"),
    _row("Transposed convolution", "ConvTranspose2d, stride 1, padding 1", ["aten.conv_transpose2d"], [_TCONV],
         CMSIS_NN, [_X], lambda: nn.ConvTranspose2d(4, 2, 3, padding=1)),
    _row("Transposed convolution", "ConvTranspose2d, stride 2, padding 0", ["aten.conv_transpose2d"], [_TCONV],
         CMSIS_NN, [_X], lambda: nn.ConvTranspose2d(4, 2, 2, stride=2)),
    _row("Transposed convolution", "ConvTranspose2d, stride 2, padding 1", ["aten.conv_transpose2d"], [_TCONV],
         CMSIS_NN, [(1, 3, 8, 8)], lambda: nn.ConvTranspose2d(3, 1, 4, stride=2, padding=1),
         "needs CMSIS-NN 4a8f5b5d or later (the workspace's pin): at ExecuTorch's dbf45dbf, 191-255 LSB off"),
    _row("Transposed convolution", "ConvTranspose2d, stride 3, padding 2", ["aten.conv_transpose2d"], [_TCONV],
         CMSIS_NN, [(1, 3, 6, 6)], lambda: nn.ConvTranspose2d(3, 2, 5, stride=3, padding=2)),
    _row("Transposed convolution", "ConvTranspose2d, 20 input channels, stride 2, padding 1",
         ["aten.conv_transpose2d"], [_TCONV], CMSIS_NN, [(1, 20, 4, 4)],
         lambda: nn.ConvTranspose2d(20, 4, 3, stride=2, padding=1)),
    _row("Transposed convolution", "ConvTranspose2d + ReLU", ["aten.conv_transpose2d", "aten.relu"], [_TCONV],
         CMSIS_NN, [(1, 3, 8, 8)], lambda: nn.Sequential(nn.ConvTranspose2d(3, 2, 4, stride=2, padding=1), nn.ReLU())),
    _row("Transposed convolution", "ConvTranspose2d, output_padding 1", ["aten.conv_transpose2d"],
         ["aten::convolution"], FLOAT_WARNED, [_X],
         lambda: nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1),
         "the 1.5.1 quantizer leaves it float"),
    _row("Transposed convolution", "ConvTranspose1d", ["aten.conv_transpose1d"], ["aten::convolution"],
         FLOAT_WARNED, [(1, 4, 10)], lambda: nn.ConvTranspose1d(4, 2, 3, stride=2),
         "the 1.5.1 quantizer leaves it float"),
    # ---- fully connected and matrix products -------------------------------------------------------
    _row("Linear and matmul", "Linear", ["aten.linear"], ["cortex_m::quantized_linear"], CMSIS_NN, [(1, 16)],
         lambda: nn.Linear(16, 8)),
    _row("Linear and matmul", "Linear + ReLU", ["aten.linear", "aten.relu"], ["cortex_m::quantized_linear"],
         CMSIS_NN, [(1, 16)], lambda: nn.Sequential(nn.Linear(16, 8), nn.ReLU())),
    _row("Linear and matmul", "Linear + BatchNorm1d + ReLU (an autoencoder layer)",
         ["aten.linear", "aten.batch_norm", "aten.relu"], ["cortex_m::quantized_linear"], CMSIS_NN, [(1, 16)],
         lambda: nn.Sequential(nn.Linear(16, 8), nn.BatchNorm1d(8), nn.ReLU())),
    _row("Linear and matmul", "Conv2d -> flatten -> Linear", ["aten.conv2d", "aten.flatten", "aten.linear"],
         [_CONV, "cortex_m::quantized_linear"], CMSIS_NN, [_X],
         lambda: nn.Sequential(nn.Conv2d(4, 4, 3, stride=2, padding=1), nn.Flatten(), nn.Linear(64, 8)),
         "the flatten reads the NHWC feature map in NCHW order, as PyTorch does (a dim-order copy)"),
    _row("Linear and matmul", "torch.bmm (rank 3)", ["aten.bmm"], ["cortex_m::quantized_batch_matmul"],
         CMSIS_NN, [(1, 4, 8), (1, 8, 3)], lambda: _Fn(lambda m, a, b: torch.bmm(a, b))),
    _row("Linear and matmul", "torch.matmul (rank 4)", ["aten.matmul"], ["cortex_m::quantized_batch_matmul"],
         CMSIS_NN, [(1, 2, 4, 8), (1, 2, 8, 3)], lambda: _Fn(lambda m, a, b: torch.matmul(a, b))),
    # ---- pooling ---------------------------------------------------------------------------------
    _row("Pooling", "AvgPool2d 2x2", ["aten.avg_pool2d"], ["cortex_m::quantized_avg_pool2d"], CMSIS_NN, [_X],
         lambda: nn.AvgPool2d(2)),
    _row("Pooling", "AdaptiveAvgPool2d(1) (global)", ["aten.adaptive_avg_pool2d"], ["cortex_m::quantized_avg_pool2d"],
         CMSIS_NN, [_X], lambda: nn.AdaptiveAvgPool2d(1)),
    _row("Pooling", "mean over H and W, keepdim", ["aten.mean"], ["cortex_m::quantized_avg_pool2d"], CMSIS_NN, [_X],
         lambda: _Fn(lambda m, x: x.mean((2, 3), keepdim=True))),
    _row("Pooling", "mean over H and W, to a (N, C) output", ["aten.mean"], ["cortex_m::quantized_avg_pool2d"],
         CMSIS_NN, [_X], lambda: _Fn(lambda m, x: x.mean((2, 3))),
         "the program's output: its reshape stays a kernel, which wants a dim-order copy in front"),
    _row("Pooling", "MaxPool2d 2x2", ["aten.max_pool2d"], ["cortex_m::quantized_max_pool2d"], CMSIS_NN, [_X],
         lambda: nn.MaxPool2d(2)),
    _row("Pooling", "MaxPool2d 3x3, stride 2, ceil_mode", ["aten.max_pool2d"], ["aten::max_pool2d_with_indices"],
         PORTABLE_INT8, [(1, 4, 9, 9)], lambda: nn.MaxPool2d(3, stride=2, ceil_mode=True)),
    _row("Pooling", "MaxPool2d 2x2, dilation 2", ["aten.max_pool2d"], ["aten::max_pool2d_with_indices"],
         PORTABLE_INT8, [_X], lambda: nn.MaxPool2d(2, dilation=2)),
    # ---- element-wise ------------------------------------------------------------------------------
    _row("Element-wise", "add, same shape", ["aten.add"], ["cortex_m::quantized_add"], CMSIS_NN, [_X, _X],
         lambda: _Fn(lambda m, a, b: a + b)),
    _row("Element-wise", "add, per-channel broadcast (1, C, 1, 1)", ["aten.add"], ["cortex_m::quantized_add"],
         CMSIS_NN, [_X, (1, 4, 1, 1)], lambda: _Fn(lambda m, a, b: a + b)),
    _row("Element-wise", "sub, same shape", ["aten.sub"], ["cortex_m::quantized_add"], CMSIS_NN, [_X, _X],
         lambda: _Fn(lambda m, a, b: a - b)),
    _row("Element-wise", "div by a tensor of the same shape", ["aten.div"], ["cortex_m::quantized_div"], CMSIS_NN,
         [_X], lambda: _DivByConstant(_X)),
    _row("Element-wise", "mul, same shape", ["aten.mul"], ["cortex_m::quantized_mul"], CMSIS_NN, [_X, _X],
         lambda: _Fn(lambda m, a, b: a * b)),
    _row("Element-wise", "maximum, same shape", ["aten.maximum"], ["cortex_m::maximum"], CMSIS_NN, [_X, _X],
         lambda: _Fn(lambda m, a, b: torch.maximum(a, b))),
    _row("Element-wise", "minimum, same shape", ["aten.minimum"], ["cortex_m::minimum"], CMSIS_NN, [_X, _X],
         lambda: _Fn(lambda m, a, b: torch.minimum(a, b))),
    _row("Element-wise", "mul by a constant (x * 0.5)", ["aten.mul"], ["aten::mul"], FLOAT_WARNED, [_X],
         lambda: _Fn(lambda m, x: x * 0.5), "the 1.5.1 quantizer leaves a multiplication by a Python number float"),
    # ---- activations -------------------------------------------------------------------------------
    _row("Activation", "ReLU after a convolution (fused)", ["aten.conv2d", "aten.relu"], [_CONV], CMSIS_NN, [_X],
         lambda: nn.Sequential(nn.Conv2d(4, 4, 1), nn.ReLU())),
    _row("Activation", "ReLU6 after a convolution (fused)", ["aten.conv2d", "aten.hardtanh"], [_CONV], CMSIS_NN, [_X],
         lambda: nn.Sequential(nn.Conv2d(4, 4, 1), nn.ReLU6())),
    _row("Activation", "Hardswish after a convolution", ["aten.conv2d", "aten.hardswish"],
         [_CONV, "cortex_m::minimum", "cortex_m::quantized_mul"], CMSIS_NN, [_X],
         lambda: nn.Sequential(nn.Conv2d(4, 4, 1), nn.Hardswish()),
         "upstream's DecomposeHardswishPass: a clamp fused into the convolution, a minimum and a multiply"),
    _row("Activation", "Sigmoid after a convolution", ["aten.conv2d", "aten.sigmoid"],
         [_CONV, "cortex_m::quantized_activation"], CMSIS_NN, [_X],
         lambda: nn.Sequential(nn.Conv2d(4, 4, 1), nn.Sigmoid())),
    _row("Activation", "Hardsigmoid after a convolution", ["aten.conv2d", "aten.hardsigmoid"], [_CONV], CMSIS_NN,
         [_X], lambda: nn.Sequential(nn.Conv2d(4, 4, 1), nn.Hardsigmoid()),
         "upstream's ActivationFusionPass folds it into the convolution's output range"),
    _row("Activation", "SiLU after a convolution", ["aten.conv2d", "aten.silu"],
         [_CONV, "cortex_m::quantized_activation"], CMSIS_NN, [_X],
         lambda: nn.Sequential(nn.Conv2d(4, 4, 1), nn.SiLU())),
    _row("Activation", "GELU after a linear layer", ["aten.linear", "aten.gelu"],
         ["cortex_m::quantized_linear", "cortex_m::quantized_activation"], CMSIS_NN, [(1, 16)],
         lambda: nn.Sequential(nn.Linear(16, 8), nn.GELU())),
    _row("Activation", "Tanh after a linear layer", ["aten.linear", "aten.tanh"],
         ["cortex_m::quantized_linear", "cortex_m::quantized_activation"], CMSIS_NN, [(1, 16)],
         lambda: nn.Sequential(nn.Linear(16, 8), nn.Tanh())),
    _row("Activation", "ReLU on its own (after an add)", ["aten.add", "aten.relu"], ["cortex_m::quantized_add"],
         CMSIS_NN, [_X, _X], lambda: _Fn(lambda m, a, b: torch.relu(a + b))),
    _row("Activation", "clamp(-1, 1) on its own", ["aten.clamp"], ["aten::clamp"], PORTABLE_INT8,
         [_X], lambda: _Fn(lambda m, x: torch.clamp(x, -1.0, 1.0)), "after a convolution or linear layer it is fused"),
    _row("Activation", "LayerNorm", ["aten.layer_norm"], ["aten::native_layer_norm"], FLOAT_WARNED, [(1, 6, 16)],
         lambda: nn.LayerNorm(16), "no int8 layer norm in ExecuTorch 1.5.1's Cortex-M path"),
    _row("Activation", "Softmax over the last axis", ["aten.softmax"], ["cortex_m::softmax"], CMSIS_NN, [(1, 10)],
         lambda: nn.Softmax(dim=-1)),
    # ---- shape and data movement -------------------------------------------------------------------
    _row("Shape", "F.pad, constant", ["aten.pad"], ["cortex_m::pad"], CMSIS_NN, [_X],
         lambda: _Fn(lambda m, x: F.pad(x, (1, 1, 2, 0)))),
    _row("Shape", "permute of a rank-4 tensor", ["aten.permute"], ["cortex_m::transpose"], CMSIS_NN, [(1, 3, 4, 5)],
         lambda: _Fn(lambda m, x: x.permute(0, 2, 3, 1))),
    _row("Shape", "transpose of a rank-3 tensor", ["aten.transpose"], ["cortex_m::transpose"], CMSIS_NN, [(1, 4, 6)],
         lambda: _Fn(lambda m, x: x.transpose(1, 2))),
    _row("Shape", "cat along channels, inputs of different scales", ["aten.conv2d", "aten.cat"], [_CONV, "aten::cat"],
         PORTABLE_INT8, [_X, _X],
         lambda: _Fn(lambda m, a, b: torch.cat([a, m.conv(b)], dim=1), conv=nn.Conv2d(4, 4, 1)),
         "a concat's inputs share one scale after quantization: the input of the wider range sets it"),
    _row("Shape", "nearest Upsample x2 + cat (a U-Net step)", ["aten.conv2d", "aten.upsample_nearest2d", "aten.cat"],
         [_CONV, "aten::upsample_nearest2d", "aten::cat"], FLOAT_WARNED, [_X],
         lambda: _Fn(lambda m, x: torch.cat([(y := m.conv(x)), m.up(m.down(y))], dim=1),
                     conv=nn.Conv2d(4, 4, 3, padding=1), down=nn.Conv2d(4, 4, 3, stride=2, padding=1),
                     up=nn.Upsample(scale_factor=2, mode="nearest")),
         "the upsample runs float between a dequantize and a quantize"),
    _row("Shape", "bilinear Upsample x2", ["aten.upsample_bilinear2d"], ["aten::upsample_bilinear2d"], FLOAT_WARNED,
         [_X], lambda: nn.Upsample(scale_factor=2, mode="bilinear"), "runs float between a dequantize and a quantize"),
)


class MatrixModel(nn.Module):
    """Every row's case as its own branch: inputs and outputs in row order, a row's inputs side by side."""

    def __init__(self, rows: Sequence[Row]) -> None:
        super().__init__()
        self.arity = [len(r.inputs) for r in rows]
        for r in rows:
            self.add_module(r.key, r.build())

    def forward(self, *xs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        outs = []
        i = 0
        for (_name, branch), n in zip(self.named_children(), self.arity, strict=True):
            outs.append(branch(*xs[i:i + n]))
            i += n
        return tuple(outs)


def matrix_model(rows: Sequence[Row] = ROWS) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """One model holding ``rows``' cases (:class:`MatrixModel`) and its example inputs (fixed seed)."""
    model = MatrixModel(rows).eval()
    gen = torch.Generator().manual_seed(3)
    inputs = tuple(torch.randn(shape, generator=gen) for r in rows for shape in r.inputs)
    return model, inputs


#: ATen operators that compute nothing of their own (shape bookkeeping, inference no-ops): known besides
#: the rows' own, which are every operator that computes.
STRUCTURAL_ATEN = frozenset({
    "aten.view", "aten.reshape", "aten.flatten", "aten.squeeze", "aten.unsqueeze", "aten.contiguous", "aten.clone",
    "aten.dropout", "aten.alias", "aten.detach", "aten.expand", "aten.slice", "aten.select", "aten.t",
    "aten.size", "aten.sym_size", "aten.lift_fresh_copy", "aten._assert_tensor_metadata", "aten.feature_dropout",
})


def known_aten_operators() -> frozenset[str]:
    """The ATen operators (``aten.conv2d``, no overload) the Cortex-M path accepts: every row's and
    :data:`STRUCTURAL_ATEN`."""
    return frozenset(op for r in ROWS for op in r.aten) | STRUCTURAL_ATEN


def unknown_operators(graph: torch.fx.Graph) -> list[tuple[str, str]]:
    """``(operator, layer)`` for each ATen operator of ``graph`` (a ``torch.export`` graph) that
    :func:`known_aten_operators` lacks, in graph order, each operator once; the layer is the innermost
    ``nn_module_stack`` entry's path and class, ``'conv' (Conv3d)`` ("" when the operator was called
    outside any submodule)."""
    known = known_aten_operators()
    found: dict[str, str] = {}
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        packet = getattr(node.target, "overloadpacket", None)
        if packet is None or getattr(node.target, "namespace", "") != "aten":
            continue
        name = f"aten.{packet.__name__.rstrip('_')}"  # an in-place relu_ is a relu
        if name in known or name in found:
            continue
        stack = node.meta.get("nn_module_stack") or {}
        path, cls = list(stack.values())[-1] if stack else ("", "")
        cls_name = cls.__name__ if isinstance(cls, type) else str(cls).rsplit(".", 1)[-1].strip("'>")
        found[name] = f"'{path}' ({cls_name})" if path else ""
    return list(found.items())


def markdown_table(rows: Sequence[Row] = ROWS) -> str:
    """The README's matrix: one line per row (layer, runs as, kind, note)."""
    lines = ["| layer | runs as (M55 with MVE; M4/M7 where it differs) | kind | note |", "|---|---|---|---|"]
    group = ""
    for r in rows:
        if r.group != group:
            group = r.group
            lines.append(f"| **{group}** | | | |")
        runs = ", ".join(f"`{k}`" for k in r.runs_as)
        if r.runs_as_dsp:
            runs += "; M4/M7: " + ", ".join(f"`{k}`" for k in r.runs_as_dsp)
        lines.append(f"| {r.layer} | {runs} | {r.kind} | {r.note} |")
    return "\n".join(lines) + "\n"

"""Load trained float weights from a TFLite flatbuffer into a PyTorch architecture.

Used for the MLPerf Tiny reference models (``kws_ref_model_float32.tflite``,
``vww_96_float.tflite``, ``pretrainedResnet.tflite``, ``ad01_fp32.tflite``). The file is read
with the PyPI ``tflite`` package (generated flatbuffer accessors for TFLite's schema).

Matching is by order: the weighted TFLite operators (``CONV_2D``, ``DEPTHWISE_CONV_2D``,
``FULLY_CONNECTED``) in graph order are paired with the ``nn.Conv2d``/``nn.Linear`` modules in
module-registration order; kinds and shapes must agree. Layouts are converted from TFLite to
PyTorch: conv ``OHWI`` -> ``OIHW``, depthwise ``1HWO`` -> ``O1HW``, dense ``[out, in]`` as is.
Batch norm is already folded into the TFLite weights, so every ``BatchNorm`` module of the
architecture is set to the identity.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from armgen.errors import ModelError

_WEIGHTED = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")


@dataclass(frozen=True)
class TfliteLayer:
    """One weighted TFLite operator: kind, weight (TFLite layout) and bias (or None)."""

    index: int
    kind: str
    weight: np.ndarray
    bias: np.ndarray | None


def _op_names() -> dict[int, str]:
    from tflite.BuiltinOperator import BuiltinOperator

    return {v: k for k, v in vars(BuiltinOperator).items() if not k.startswith("_") and isinstance(v, int)}


def read_tflite_layers(path: Path) -> list[TfliteLayer]:
    """Return the weighted layers of the first subgraph of a float TFLite model, in graph order.

    Raises:
        ModelError: missing/unreadable file, not a TFLite flatbuffer, or non-float32 weights.
    """
    import tflite
    from tflite.TensorType import TensorType

    path = Path(path)
    try:
        buf = path.read_bytes()
    except OSError as exc:
        raise ModelError(f"{path}: cannot read weights file ({exc.strerror})") from exc
    if len(buf) < 8 or buf[4:8] != b"TFL3":
        raise ModelError(f"{path}: not a TFLite model (no 'TFL3' identifier)")
    try:
        model = tflite.Model.GetRootAsModel(buf, 0)
        graph = model.Subgraphs(0)
        names = _op_names()
        layers: list[TfliteLayer] = []

        def tensor_data(idx: int) -> np.ndarray:
            t = graph.Tensors(idx)
            raw = np.asarray(model.Buffers(t.Buffer()).DataAsNumpy(), dtype=np.uint8).tobytes()
            shape = tuple(int(s) for s in t.ShapeAsNumpy())
            if t.Type() == TensorType.FLOAT32:
                return np.frombuffer(raw, dtype="<f4").reshape(shape).copy()
            if t.Type() == TensorType.INT8 and t.Quantization() is not None:
                # Weight-only (hybrid) quantized tensor: real = scale[c] * (q - zero_point[c]).
                q = t.Quantization()
                scale = q.ScaleAsNumpy().astype(np.float32)
                zp = q.ZeroPointAsNumpy().astype(np.float32)
                axis = q.QuantizedDimension()
                bshape = [1] * len(shape)
                bshape[axis] = -1
                vals = np.frombuffer(raw, dtype=np.int8).reshape(shape).astype(np.float32)
                if scale.size > 1:
                    scale, zp = scale.reshape(bshape), zp.reshape(bshape)
                return ((vals - zp) * scale).astype(np.float32)
            raise ModelError(f"{path}: tensor {t.Name().decode()} is neither float32 nor int8 weights")

        for i in range(graph.OperatorsLength()):
            op = graph.Operators(i)
            code = model.OperatorCodes(op.OpcodeIndex())
            kind = names.get(max(code.BuiltinCode(), code.DeprecatedBuiltinCode()), "?")
            if kind not in _WEIGHTED:
                continue
            ins = [int(j) for j in op.InputsAsNumpy()]
            weight = tensor_data(ins[1])
            bias = tensor_data(ins[2]) if len(ins) > 2 and ins[2] >= 0 else None
            layers.append(TfliteLayer(i, kind, weight, bias))
    except ModelError:
        raise
    except Exception as exc:  # noqa: BLE001 - flatbuffer accessors raise assorted errors
        raise ModelError(f"{path}: cannot parse TFLite model ({type(exc).__name__}: {exc})") from exc
    return layers


def _to_torch_weight(layer: TfliteLayer, module: nn.Module) -> np.ndarray:
    w = layer.weight
    if layer.kind == "CONV_2D":
        return w.transpose(0, 3, 1, 2)  # OHWI -> OIHW
    if layer.kind == "DEPTHWISE_CONV_2D":
        return w.transpose(3, 0, 1, 2)  # 1HWO -> O1HW
    return w  # FULLY_CONNECTED: [out, in]


def _kind_of(module: nn.Module) -> str:
    if isinstance(module, nn.Linear):
        return "FULLY_CONNECTED"
    assert isinstance(module, nn.Conv2d)
    if module.groups == 1:
        return "CONV_2D"
    if module.groups == module.in_channels:
        return "DEPTHWISE_CONV_2D"
    return "GROUPED_CONV_2D"


def load_tflite_weights(model: nn.Module, path: Path) -> nn.Module:
    """Copy the trained float weights of ``path`` into ``model`` (in place) and return it.

    Args:
        model: architecture whose Conv2d/Linear modules, in registration order, correspond one
            to one to the TFLite model's CONV_2D/DEPTHWISE_CONV_2D/FULLY_CONNECTED operators.
        path: a float32 ``.tflite`` file.

    Raises:
        ModelError: unreadable file, different layer count, kind or shape (the message names
            the first layer that differs), or a layer without a bias slot for a TFLite bias.
    """
    layers = read_tflite_layers(path)
    modules = [(n, m) for n, m in model.named_modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    if len(layers) != len(modules):
        raise ModelError(
            f"{Path(path).name} has {len(layers)} weighted layers but the model has {len(modules)} "
            "Conv2d/Linear modules; the weights are for another architecture"
        )
    with torch.no_grad():
        for layer, (name, module) in zip(layers, modules, strict=False):
            kind = _kind_of(module)
            if kind != layer.kind:
                raise ModelError(
                    f"{Path(path).name}: operator {layer.index} is {layer.kind}, module '{name}' is {kind}"
                )
            w = _to_torch_weight(layer, module)
            if tuple(w.shape) != tuple(module.weight.shape):
                raise ModelError(
                    f"{Path(path).name}: operator {layer.index} weight {tuple(w.shape)} does not fit "
                    f"module '{name}' {tuple(module.weight.shape)}"
                )
            module.weight.copy_(torch.from_numpy(np.ascontiguousarray(w)))
            if layer.bias is not None:
                if module.bias is None or tuple(module.bias.shape) != layer.bias.shape:
                    raise ModelError(f"{Path(path).name}: operator {layer.index} bias does not fit module '{name}'")
                module.bias.copy_(torch.from_numpy(layer.bias))
            elif module.bias is not None:
                module.bias.zero_()
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                # Folded in the TFLite weights: make it exactly the identity in float32.
                assert m.weight is not None and m.bias is not None  # affine, tracked (the sample layers)
                assert m.running_mean is not None and m.running_var is not None
                m.weight.fill_(1.0)
                m.bias.zero_()
                m.running_mean.zero_()
                m.running_var.fill_(1.0 - m.eps)
    return model.eval()

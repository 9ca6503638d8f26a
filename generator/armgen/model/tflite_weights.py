"""Load trained float weights from a TFLite flatbuffer into a PyTorch architecture.

Used for the MLPerf Tiny reference models (``kws_ref_model_float32.tflite``,
``vww_96_float.tflite``, ``pretrainedResnet.tflite``, ``ad01_fp32.tflite``, and the int8-only
``str_ww_ref_model.tflite``). The file is read with the PyPI ``tflite`` package (generated
flatbuffer accessors for TFLite's schema).

Quantized tensors are dequantized with TFLite's rule ``real = scale * (q - zero_point)``
(tensorflow/lite/schema/schema.fbs, ``QuantizationParameters``): int8 weights per tensor or per
channel, and the int32 bias of a full-integer layer with ``scale = input scale x weight scale``
(per output channel), the scale TFLite's int8 kernels apply to it (TFLite's 8-bit quantization
spec: bias zero point 0, scale input_scale * weight_scale).

Matching is by order: the weighted TFLite operators (``CONV_2D``, ``DEPTHWISE_CONV_2D``,
``FULLY_CONNECTED``) in graph order are paired with the ``nn.Conv2d``/``nn.Linear`` modules in
module-registration order; kinds and shapes must agree. Layouts are converted from TFLite to
PyTorch: conv ``OHWI`` -> ``OIHW``, depthwise ``1HWO`` -> ``O1HW``, dense ``[out, in]`` as is.
Batch norm is already folded into the TFLite weights, so every ``BatchNorm`` module of the
architecture is set to the identity. A module without a bias takes a TFLite bias that is all zeros
(the converter adds zero biases to Keras layers built with ``use_bias=False``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def tensor_quantization(t: Any, where: str) -> tuple[np.ndarray, np.ndarray, int]:
    """A quantized TFLite tensor's (scales float64, zero points int64, quantized dimension), from the flatbuffer
    tensor ``t`` (schema.fbs ``QuantizationParameters``; zero points default to 0).

    Raises:
        ModelError: the tensor has no scale (``where`` names it in the message).
    """
    from tflite.TensorType import TensorType

    q = t.Quantization()
    scale = q.ScaleAsNumpy() if q is not None else 0
    if not isinstance(scale, np.ndarray) or scale.size == 0:
        names = {v: k.lower() for k, v in vars(TensorType).items() if not k.startswith("_") and isinstance(v, int)}
        raise ModelError(f"{where} {t.Name().decode()} is {names.get(t.Type(), t.Type())} without a quantization "
                         "scale")
    zp = q.ZeroPointAsNumpy()
    zp = zp if isinstance(zp, np.ndarray) and zp.size else np.zeros_like(scale, dtype=np.int64)
    return scale.astype(np.float64), zp.astype(np.int64), int(q.QuantizedDimension())


def read_tflite_layers(path: Path) -> list[TfliteLayer]:
    """Return the weighted layers of the first subgraph of a TFLite model, in graph order, as float32.

    Float32 tensors are taken as they are; int8 weights and int32 biases are dequantized (module
    docstring), so a full-integer file gives the float weights its int8 layers approximate.

    Raises:
        ModelError: missing/unreadable file, not a TFLite flatbuffer, weights neither float32 nor int8,
            a bias neither float32 nor int32 over int8, or quantization parameters that do not fit.
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
        type_names = {v: k.lower() for k, v in vars(TensorType).items() if not k.startswith("_") and isinstance(v, int)}
        layers: list[TfliteLayer] = []

        def quant(t: Any, what: str) -> tuple[np.ndarray, np.ndarray, int]:
            scale, zp, axis = tensor_quantization(t, f"{path}: {what}")
            return scale, zp.astype(np.float64), axis

        def per_axis(v: np.ndarray, shape: tuple[int, ...], axis: int) -> np.ndarray:
            if v.size == 1:
                return v.reshape(())
            bshape = [1] * len(shape)
            bshape[axis] = -1
            return v.reshape(bshape)

        def tensor_data(idx: int, bias_of: tuple[int, int] | None = None) -> np.ndarray:
            """The float32 values of tensor ``idx``; ``bias_of`` = (input, weight) tensors of its operator."""
            t = graph.Tensors(idx)
            raw = np.asarray(model.Buffers(t.Buffer()).DataAsNumpy(), dtype=np.uint8).tobytes()
            shape = tuple(int(s) for s in t.ShapeAsNumpy())
            if t.Type() == TensorType.FLOAT32:
                return np.frombuffer(raw, dtype="<f4").reshape(shape).copy()
            if t.Type() == TensorType.INT8 and bias_of is None:
                # Quantized weights (weight-only "hybrid" or full-integer): real = scale[c] * (q - zero_point[c]).
                scale, zp, axis = quant(t, "weight")
                vals = np.frombuffer(raw, dtype=np.int8).reshape(shape).astype(np.float64)
                return ((vals - per_axis(zp, shape, axis)) * per_axis(scale, shape, axis)).astype(np.float32)
            if t.Type() == TensorType.INT32 and bias_of is not None:
                # Full-integer bias: real = q * input_scale * weight_scale[c] (TFLite's int8 spec, zero point 0).
                inp, wgt = (graph.Tensors(j) for j in bias_of)
                if inp.Type() != TensorType.INT8 or wgt.Type() != TensorType.INT8:
                    raise ModelError(f"{path}: int32 bias {t.Name().decode()} belongs to a layer whose input and "
                                     "weights are not both int8 (not a full-integer model)")
                in_scale, _, _ = quant(inp, "input")
                w_scale, _, _ = quant(wgt, "weight")
                _, bzp, _ = quant(t, "bias")
                if in_scale.size != 1 or w_scale.size not in (1, int(np.prod(shape))) or bzp.any():
                    raise ModelError(f"{path}: bias {t.Name().decode()}: unexpected quantization (input scales "
                                     f"{in_scale.size}, weight scales {w_scale.size}, {int(np.prod(shape))} "
                                     "channels, zero point must be 0)")
                vals = np.frombuffer(raw, dtype="<i4").reshape(shape).astype(np.float64)
                return (vals * in_scale[0] * w_scale).astype(np.float32)
            raise ModelError(f"{path}: tensor {t.Name().decode()} is {type_names.get(t.Type(), t.Type())}, not float32 "
                             "or int8 weights / int32 bias")

        for i in range(graph.OperatorsLength()):
            op = graph.Operators(i)
            code = model.OperatorCodes(op.OpcodeIndex())
            kind = names.get(max(code.BuiltinCode(), code.DeprecatedBuiltinCode()), "?")
            if kind not in _WEIGHTED:
                continue
            ins = [int(j) for j in op.InputsAsNumpy()]
            weight = tensor_data(ins[1])
            has_bias = len(ins) > 2 and ins[2] >= 0
            bias = tensor_data(ins[2], (ins[0], ins[1])) if has_bias else None
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
        path: a ``.tflite`` file with float32 or int8 weights (int8 ones are dequantized).

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
            if layer.bias is not None and module.bias is None and not layer.bias.any():
                pass  # a zero bias the converter added to a layer without one (Keras use_bias=False)
            elif layer.bias is not None:
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

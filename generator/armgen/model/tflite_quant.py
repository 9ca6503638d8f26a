"""A full-integer ``.tflite``'s own quantization, adopted by armgen's PT2E quantization of the same network.

``str_ww_ref_model.tflite`` (sample ``sww``) is int8 only: armgen loads its dequantized weights
(:mod:`armgen.model.tflite_weights`) and quantizes again. Left to calibration, the result is another int8 network:
PT2E's per-channel symmetric weight observers divide by 127.5 where TFLite divides by 127 (TFLite's 8-bit spec:
weights in [-127, 127]), and the activation observers see other data than TensorFlow's converter saw. Measured on
short_wav_easy10s.wav: output 0 up to 20 LSB from LiteRT's and a first detection one hop (32 ms) later.

:func:`adopt_tflite_quantization` gives every observer of the prepared graph the file's parameters instead, so
``convert_pt2e`` makes the file's integers: weights ``round(q x s / s) = q`` exactly, the int32 biases derived
from the same input and weight scales, every activation at the file's scale and zero point. The kernels then
differ only where CMSIS-NN's arithmetic differs from TFLite's reference kernels.

Matching is by order, as :mod:`armgen.model.tflite_weights` matches weights: activation observers (inputs of
the graph and outputs of operators, in graph order) against the file's input tensor and then each operator's
output tensor, in operator order; weight observers against the weighted operators' weight tensors. A PT2E
graph puts one more observer after the softmax (the output's), which takes the softmax's output parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from armgen.errors import ModelError


@dataclass(frozen=True)
class TfliteQuantization:
    """The quantization of a full-integer TFLite model, in graph order.

    Attributes:
        activations: (scale, zero point) of the input tensor, then of each operator's first output.
        weights: the per-channel (or one per-tensor) scales of each weighted operator's weight tensor.
    """

    activations: tuple[tuple[float, int], ...]
    weights: tuple[np.ndarray, ...]


def read_tflite_quantization(path: Path) -> TfliteQuantization | None:
    """The quantization of ``path``'s first subgraph; None when its input is not int8 (a float model).

    Raises:
        ModelError: not a readable TFLite model, or an int8 tensor without scales.
    """
    import tflite
    from tflite.TensorType import TensorType

    from armgen.model.tflite_weights import tensor_quantization

    buf = Path(path).read_bytes()
    try:
        model = tflite.Model.GetRootAsModel(buf, 0)
        graph = model.Subgraphs(0)

        def qparams(idx: int) -> tuple[np.ndarray, np.ndarray]:
            scale, zp, _ = tensor_quantization(graph.Tensors(idx), f"{path}: tensor")
            return scale, zp

        first = int(graph.InputsAsNumpy()[0])
        if graph.Tensors(first).Type() != TensorType.INT8:
            return None
        s, z = qparams(first)
        acts = [(float(s[0]), int(z[0]))]
        weights = []
        for i in range(graph.OperatorsLength()):
            op = graph.Operators(i)
            s, z = qparams(int(op.OutputsAsNumpy()[0]))
            acts.append((float(s[0]), int(z[0])))
            ins = [int(j) for j in op.InputsAsNumpy()]
            if len(ins) > 1 and ins[1] >= 0 and graph.Tensors(ins[1]).Buffer() > 0 and \
                    graph.Tensors(ins[1]).Type() == TensorType.INT8:
                weights.append(qparams(ins[1])[0])
    except ModelError:
        raise
    except Exception as exc:  # noqa: BLE001 - flatbuffer accessors raise assorted errors
        raise ModelError(f"{path}: cannot read its quantization ({type(exc).__name__}: {exc})") from exc
    return TfliteQuantization(tuple(acts), tuple(weights))


def adopt_tflite_quantization(prepared: Any, quant: TfliteQuantization) -> None:
    """Set the observers of a calibrated PT2E graph (``prepare_pt2e``'s) to ``quant``'s parameters (module docstring).

    Raises:
        ModelError: the graph's observers do not pair with the file's tensors (count or channels).
    """
    import torch
    from torchao.quantization.pt2e.observer import FixedQParamsObserver

    act_nodes, weight_obs = [], []
    for node in prepared.graph.nodes:
        if node.op != "call_module" or "activation_post_process" not in str(node.target):
            continue
        obs = getattr(prepared, str(node.target))
        src = node.args[0]
        if getattr(src, "op", None) == "get_attr":
            if type(obs).__name__ in ("PerChannelMinMaxObserver", "MinMaxObserver"):
                weight_obs.append(obs)  # int32 biases: derived from input and weight scales
        else:
            act_nodes.append(node)
    acts = list(quant.activations)
    if len(act_nodes) == len(acts) + 1:  # the output's observer after the last operator's
        acts.append(acts[-1])
    if len(act_nodes) != len(acts) or len(weight_obs) != len(quant.weights):
        raise ModelError(f"the .tflite's quantization does not pair with the graph: {len(acts)} activation and "
                         f"{len(quant.weights)} weight tensors, {len(act_nodes)} and {len(weight_obs)} observers")
    replaced: dict[int, Any] = {}
    for node, (scale, zero_point) in zip(act_nodes, acts, strict=True):
        old = getattr(prepared, str(node.target))
        new = FixedQParamsObserver(scale, zero_point, dtype=old.dtype, qscheme=torch.per_tensor_affine,
                                   quant_min=old.quant_min, quant_max=old.quant_max)
        replaced[id(old)] = new
        setattr(prepared, str(node.target), new)
    for module in prepared.modules():  # the int32 biases' observers derive their scale from the input's observer
        derived_from = getattr(module, "obs_or_fqs", None)
        if isinstance(derived_from, list):
            module.obs_or_fqs = [replaced.get(id(o), o) for o in derived_from]
    for obs, scales in zip(weight_obs, quant.weights, strict=True):
        if obs.max_val.numel() != scales.size:
            raise ModelError(f"the .tflite has {scales.size} weight scales where the graph has "
                             f"{obs.max_val.numel()} channels")
        # symmetric: scale = max(-min, max) / ((quant_max - quant_min) / 2)
        half = (obs.quant_max - obs.quant_min) / 2.0
        bound = torch.as_tensor(scales * half, dtype=obs.max_val.dtype).reshape(obs.max_val.shape)
        obs.max_val.copy_(bound)
        obs.min_val.copy_(-bound)

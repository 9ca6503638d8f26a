"""The ``sww`` sample (MLPerf Tiny v1.3 streaming wakeword) against its int8 TFLite reference, run by LiteRT.

The reference files are data, not part of the project: ``str_ww_ref_model.tflite`` is found in
``$ARMGEN_MLPERF_DIR`` and upstream's ``calibration_samples.npz`` (45 labelled windows, 15 per class) in
``$ARMGEN_SWW_CALIBRATION`` or beside the model; each test that needs one skips, saying how to get it,
when it is missing. Both come from github.com/mlcommons/tiny at armgen's pinned commit,
``benchmark/training/streaming_wakeword/`` (``armgen weights fetch sww`` downloads the model).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from armgen.errors import ModelError
from armgen.model import pretrained
from armgen.model.model_source import load_calibration, load_sample, mlperf_dir, sample_module
from armgen.model.tflite_weights import load_tflite_weights, read_tflite_layers

litert = pytest.importorskip("ai_edge_litert.interpreter", reason="ai-edge-litert (test extra) not installed")

_UPSTREAM = "github.com/mlcommons/tiny benchmark/training/streaming_wakeword/"


def _model_file() -> Path:
    folder = mlperf_dir()
    path = folder / "str_ww_ref_model.tflite" if folder is not None else None
    if path is None or not path.is_file():
        pytest.skip(f"no str_ww_ref_model.tflite in ARMGEN_MLPERF_DIR ({folder}): `armgen weights fetch sww` "
                    f"downloads it (or take it from {_UPSTREAM}trained_models/)")
    return path


def _calibration_file() -> Path:
    env = os.environ.get("ARMGEN_SWW_CALIBRATION")
    path = Path(env) if env else _model_file().parent / "calibration_samples.npz"
    if not path.is_file():
        pytest.skip(f"{path} not available: set ARMGEN_SWW_CALIBRATION to upstream's calibration_samples.npz "
                    f"({_UPSTREAM})")
    return path


def _sww():
    return sample_module("sww")


def _reference_runs():
    """(float model with the dequantized weights, calibration inputs, labels, LiteRT interpreter, the
    reference's int8 inputs quantized as upstream's evaluate.py does, output scale and zero point)."""
    path, cal = _model_file(), _calibration_file()
    src = load_sample("sww", weights=path)
    assert src.weights == path and not src.warnings
    windows, labels = _sww().calibration_windows(cal)
    interp = litert.Interpreter(model_path=str(path))
    interp.allocate_tensors()
    inp, out = interp.get_input_details()[0], interp.get_output_details()[0]
    scale, zp = inp["quantization"]
    with np.load(cal) as z:
        specs = z["specs"]
    # evaluate.py: np.array(long_spec/input_scale + input_zero_point, dtype=np.int8) (a truncating cast)
    q_inputs = [np.array(specs[k:k + 1] / scale + zp, dtype=np.int8) for k in range(len(specs))]
    return src.model, windows, labels, interp, q_inputs, out


def _run_int8(interp, q) -> np.ndarray:
    interp.set_tensor(interp.get_input_details()[0]["index"], q)
    interp.invoke()
    return interp.get_tensor(interp.get_output_details()[0]["index"]).astype(np.int32)


def test_float_model_follows_the_int8_reference_on_the_calibration_windows():
    model, windows, labels, interp, q_inputs, out = _reference_runs()
    o_scale, o_zp = out["quantization"]
    assert len(windows) == 45 and np.bincount(labels).tolist() == [15, 15, 15]
    same_top, worst, right = 0, 0.0, [0, 0]
    for (x,), q, label in zip(windows, q_inputs, labels, strict=True):
        ref = (_run_int8(interp, q) - o_zp) * o_scale  # dequantized int8 probabilities, as evaluate.py
        with torch.no_grad():
            y = model(x).numpy()
        same_top += int(ref.argmax() == y.argmax())
        worst = max(worst, float(np.abs(ref - y).max()))
        right[0] += int(ref.argmax() == label)
        right[1] += int(y.argmax() == label)
    msg = f"top-1 agreement {same_top}/45, largest output difference {worst:.4f}, right (int8, float) {right}"
    # measured with LiteRT 2.3.0: 45/45, 0.0602 (probabilities; one int8 output step is 1/256), 41 and 41
    assert same_top == 45 and worst < 0.1, msg


def test_model_with_the_reference_activation_quantization_is_bit_exact():
    """The mapping is exact, not just close: quantizing each activation at the reference's own scale and zero
    point (LiteRT's tensors) makes the PyTorch model give the reference's int8 outputs on every window."""
    model, _, _, interp, q_inputs, out = _reference_runs()
    scales = {t["index"]: t["quantization"] for t in interp.get_tensor_details()}
    names = {t["index"]: t["name"] for t in interp.get_tensor_details()}
    ops = [op for op in interp._get_ops_details() if op["op_name"] in ("DEPTHWISE_CONV_2D", "CONV_2D")]
    fc = next(op for op in interp._get_ops_details() if op["op_name"] == "FULLY_CONNECTED")
    # the modules whose outputs are the reference's quantized tensors, in graph order
    taps = [m for m in model.features if isinstance(m, (torch.nn.Conv2d, torch.nn.ReLU))]
    taps = [m for m in taps if not (isinstance(m, torch.nn.Conv2d) and m.groups == 1)]  # conv's output is its ReLU's
    assert len(taps) == len(ops) == 8, [names[op["outputs"][0]] for op in ops]

    def fake_quant(index):
        s, z = scales[index]
        return lambda _m, _i, y: (torch.clamp(torch.floor(y / s + 0.5) + z, -128, 127) - z) * s

    hooks = [m.register_forward_hook(fake_quant(op["outputs"][0])) for m, op in zip(taps, ops, strict=True)]
    hooks.append(model.classifier.register_forward_hook(fake_quant(fc["outputs"][0])))
    o_scale, o_zp = out["quantization"]
    s_in, zp_in = interp.get_input_details()[0]["quantization"]
    try:
        worst = 0
        for q in q_inputs:
            x = torch.from_numpy(((q.astype(np.float32) - zp_in) * s_in).transpose(0, 3, 1, 2).copy())
            with torch.no_grad():
                y = model(x).numpy()
            mine = np.clip(np.floor(y / o_scale + 0.5) + o_zp, -128, 127).astype(np.int32)
            worst = max(worst, int(np.abs(mine - _run_int8(interp, q)).max()))
    finally:
        for h in hooks:
            h.remove()
    assert worst == 0, f"largest int8 output difference {worst} LSB"


def test_architecture_is_the_reference_graph():
    layers = read_tflite_layers(_model_file())
    assert [lay.kind for lay in layers] == ["DEPTHWISE_CONV_2D", "CONV_2D"] * 4 + ["FULLY_CONNECTED"]
    assert [lay.weight.shape[1] for lay in layers[0:8:2]] == [k for k, _ in _sww().BLOCKS]  # 1 x k x 1 x C
    assert all(lay.bias is not None and not lay.bias.any() for lay in layers[0:8:2])  # use_bias=False: zero biases
    model = _sww().build_model()
    assert model(torch.zeros(_sww().INPUT_SHAPE)).shape == (1, 3)


def test_weights_table_entry_is_the_file():
    path = _model_file()
    w = pretrained.WEIGHTS["sww"]
    assert (w.file, path.stat().st_size, pretrained.sha256_of(path)) == (path.name, w.size, w.sha256)


def _rewrite(buf: bytes, change) -> bytes:
    """The model ``buf`` with ``change(tensors_by_name)`` applied (TFLite's own schema, LiteRT's object API)."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as S

    m = S.ModelT.InitFromObj(S.Model.GetRootAs(buf, 0))
    change({t.name.decode(): t for t in m.subgraphs[0].tensors}, S)
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def _no_input_scale(tensors, _s):
    tensors["serving_default_input_1:0"].quantization = None


def _bias_zero_point(tensors, _s):
    tensors["model/dense/BiasAdd/ReadVariableOp"].quantization.zeroPoint = [5]


def _uint8_weights(tensors, s):
    tensors["model/dense/MatMul"].type = s.TensorType.UINT8


@pytest.mark.parametrize(("change", "message"), [
    (_no_input_scale, "input serving_default_input_1:0 is int8 without a quantization scale"),
    (_bias_zero_point, "bias model/dense/BiasAdd/ReadVariableOp: unexpected quantization"),
    (_uint8_weights, "tensor model/dense/MatMul is uint8, not float32 or int8 weights / int32 bias"),
])
def test_loader_refuses_an_unexpected_file_in_one_line(tmp_path, change, message):
    bad = tmp_path / "str_ww_ref_model.tflite"
    bad.write_bytes(_rewrite(_model_file().read_bytes(), change))
    with pytest.raises(ModelError) as exc:
        load_tflite_weights(_sww().build_model(), bad)
    assert message in exc.value.message and "\n" not in exc.value.message


def test_weights_of_another_sample_are_refused():
    with pytest.raises(ModelError, match="has 9 weighted layers but the model has 10"):
        load_tflite_weights(sample_module("kws").build_model(), _model_file())


def test_documented_calibration_conversion_is_accepted(tmp_path):
    """The module docstring's one-line conversion of upstream's npz gives ``--calibration`` 45 windows."""
    with np.load(_calibration_file()) as z:
        np.savez(tmp_path / "sww_cal.npz", input_0=z["specs"].transpose(0, 3, 1, 2).astype("float32"))
    windows = load_calibration(tmp_path / "sww_cal.npz", (torch.zeros(_sww().INPUT_SHAPE),))
    expected, _ = _sww().calibration_windows(_calibration_file())
    assert len(windows) == 45 and all(torch.equal(a[0], b[0]) for a, b in zip(windows, expected, strict=True))


def test_calibration_windows_refuses_other_arrays(tmp_path):
    np.savez(tmp_path / "x.npz", specs=np.zeros((2, 40, 30, 1)), labels=np.zeros(2))
    with pytest.raises(ValueError, match=r"'specs' is \(2, 40, 30, 1\), expected N x 30 x 1 x 40"):
        _sww().calibration_windows(tmp_path / "x.npz")


def test_representative_inputs_are_in_the_reference_input_range():
    inputs = _sww().representative_inputs(4, seed=1)
    assert [tuple(x.shape) for (x,) in inputs] == [(1, 40, 30, 1)] * 4
    assert all(float(x.min()) >= 0.0 and float(x.max()) <= 1.0 for (x,) in inputs)
    assert torch.equal(inputs[0][0], _sww().representative_inputs(4, seed=1)[0][0])  # deterministic


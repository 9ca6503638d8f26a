"""Trained MLPerf Tiny weights: PyTorch sample == TFLite float reference within 1e-4."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from _narrow import present
from armgen.errors import ModelError
from armgen.model.model_source import load_sample, mlperf_dir, sample_module
from armgen.model.tflite_weights import load_tflite_weights, read_tflite_layers

litert = pytest.importorskip("ai_edge_litert.interpreter", reason="ai-edge-litert (test extra) not installed")


def _weights(name):
    folder = mlperf_dir()
    if folder is None:
        pytest.skip("no trained MLPerf Tiny weights: ARMGEN_MLPERF_DIR is not set (and no ../shared beside the "
                    "checkout); `armgen weights fetch` downloads them, then point ARMGEN_MLPERF_DIR at its cache "
                    "folder (armgen weights list shows it)")
    path = folder / sample_module(name).WEIGHTS_FILE
    if not path.is_file():
        pytest.skip(f"{path} not available")
    return path


def _float_only(buf: bytes) -> bytes:
    """Rewrite weight-only int8 tensors of a TFLite model as float32 (same values).

    kws_ref_model_float32.tflite stores its five CONV_2D weights as per-channel int8; TFLite then
    runs "hybrid" kernels that quantize activations on the fly, which is not a float reference.
    Dequantizing the weights in the file (with TFLite's own schema, ai_edge_litert's object API)
    makes the interpreter compute in float.
    """
    import flatbuffers
    from ai_edge_litert import schema_py_generated as S

    m = S.ModelT.InitFromObj(S.Model.GetRootAs(buf, 0))
    for sg in m.subgraphs:
        for t in sg.tensors:
            data = m.buffers[t.buffer].data if t.buffer else None
            if t.type != S.TensorType.INT8 or data is None or len(data) == 0:
                continue
            q = t.quantization
            vals = np.frombuffer(bytes(data), np.int8).reshape(t.shape).astype(np.float32)
            scale, zp = np.asarray(q.scale, np.float32), np.asarray(q.zeroPoint, np.float32)
            if scale.size > 1:
                shape = [1] * vals.ndim
                shape[q.quantizedDimension] = -1
                scale, zp = scale.reshape(shape), zp.reshape(shape)
            m.buffers[t.buffer].data = np.frombuffer(((vals - zp) * scale).astype("<f4").tobytes(), np.uint8)
            t.type, t.quantization = S.TensorType.FLOAT32, None
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


@pytest.mark.parametrize("name", ["kws", "vww", "ic", "ad"])
def test_pytorch_matches_tflite_float(name):
    path = _weights(name)
    src = load_sample(name, weights=path)
    assert src.weights == path and not src.warnings
    interp = litert.Interpreter(model_content=_float_only(path.read_bytes()))
    interp.allocate_tensors()
    inp, out = interp.get_input_details()[0], interp.get_output_details()[0]
    for (x,) in src.representative[:3]:
        with torch.no_grad():
            y = present(src.model)(x).numpy()
        xt = x.numpy().transpose(0, 2, 3, 1) if x.dim() == 4 else x.numpy()  # NCHW -> NHWC
        interp.set_tensor(inp["index"], np.ascontiguousarray(xt, dtype=np.float32))
        interp.invoke()
        ref = interp.get_tensor(out["index"])
        assert ref.shape == y.shape
        assert np.abs(ref - y).max() <= 1e-4, (name, float(np.abs(ref - y).max()))
    if src.class_labels:
        assert y.shape[-1] == len(src.class_labels)
        assert abs(float(y.sum()) - 1.0) < 1e-5  # trailing softmax, as in the reference graph


def test_kws_reference_file_is_hybrid_int8_for_its_convolutions():
    # Documents why the float check above dequantizes weights first.
    layers = read_tflite_layers(_weights("kws"))
    assert [lay.kind for lay in layers].count("CONV_2D") == 5
    assert len(layers) == 10


def test_weights_for_another_architecture_are_refused():
    path = _weights("kws")
    model = sample_module("vww").build_model()
    with pytest.raises(ModelError, match="weighted layers"):
        load_tflite_weights(model, path)


def test_samples_without_weights_warn(monkeypatch, tmp_path):
    monkeypatch.setenv("ARMGEN_MLPERF_DIR", str(tmp_path))
    src = load_sample("ad")
    assert src.weights is None
    assert any("outputs are meaningless" in w for w in src.warnings)


def test_not_a_tflite_file(tmp_path):
    f = tmp_path / "x.tflite"
    f.write_bytes(b"\0" * 64)
    with pytest.raises(ModelError, match="not a TFLite model"):
        read_tflite_layers(f)

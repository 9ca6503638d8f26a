"""The ``.tflite`` side of a TFLM run on the host: its operators, the runner's input, LiteRT's outputs."""

from __future__ import annotations

from pathlib import Path


def tflite_ops(path: Path) -> list[str]:
    """Builtin operator names of subgraph 0 of a .tflite file (PyPI `tflite` accessors)."""
    import tflite
    from tflite.BuiltinOperator import BuiltinOperator

    names = {v: k for k, v in vars(BuiltinOperator).items() if not k.startswith("_") and isinstance(v, int)}
    buf = path.read_bytes()
    m = tflite.Model.GetRootAsModel(buf, 0)
    sg = m.Subgraphs(0)
    ops = set()
    for i in range(sg.OperatorsLength()):
        oc = m.OperatorCodes(sg.Operators(i).OpcodeIndex())
        ops.add(names[max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode())])
    return sorted(ops)


def lcg_input(nbytes: int) -> bytes:
    """The runner's deterministic input (runner.cc fill_input): top byte of a 32-bit LCG."""
    s = 12345
    out = bytearray(nbytes)
    for i in range(nbytes):
        s = (s * 1664525 + 1013904223) & 0xFFFFFFFF
        out[i] = s >> 24
    return bytes(out)


def litert_reference(path: Path) -> list[list[int]]:
    """Outputs of the same model on the host (LiteRT interpreter) for the runner's input."""
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(path))
    it.allocate_tensors()
    for d in it.get_input_details():
        n = int(np.prod(d["shape"])) * np.dtype(d["dtype"]).itemsize
        arr = np.frombuffer(lcg_input(n), dtype=d["dtype"]).reshape(d["shape"])
        it.set_tensor(d["index"], arr)
    it.invoke()
    return [it.get_tensor(d["index"]).astype(int).flatten().tolist() for d in it.get_output_details()]

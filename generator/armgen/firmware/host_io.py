"""The host side of a firmware's I/O: program inputs in, printed outputs back.

- in: :func:`load_input_file` reads a user's ``.npy``/``.npz``/``.pt`` file, :func:`quantize_input`
  turns arrays into the program's input dtype, :func:`alternate_inputs` makes a second, seeded
  input, and :func:`input_bytes` serializes inputs as the firmware reads them from
  :data:`~armgen.firmware.console_protocol.INPUT_FILE`;
- out: :func:`output_array` turns one ``ARMGEN output`` line's values into an array of the
  output's logical shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from armgen.errors import RunError
from armgen.model.program_report import TensorInfo
from armgen.model.reference import alternate_inputs as reference_alternate_inputs
from armgen.model.tensors import numpy_dtype, quantize, to_logical_order, to_memory_order


def io_dtype(info: TensorInfo) -> Any:
    """The numpy dtype of a program input or output.

    Raises:
        RunError: armgen run does not support the tensor's dtype.
    """
    try:
        return numpy_dtype(info.dtype)
    except KeyError:
        raise RunError(f"program {info.dtype} I/O is not supported by armgen run") from None


def quantize_input(value: np.ndarray, info: TensorInfo) -> np.ndarray:
    """Turn one user/reference input array into the program's input dtype and shape.

    Float arrays are quantized with the input's scale/zero point (round half to even, clamped to
    the dtype's range, as ``torch.quantize_per_tensor`` does); integer arrays of the input dtype
    are taken as they are.

    Args:
        value: array of ``info.shape`` (float32/float64 or the input's integer dtype).
        info: the program input.

    Returns:
        Array of ``info.shape`` and the input's dtype, logical (contiguous NCHW) order.

    Raises:
        RunError: shape or dtype does not fit.
    """
    value = np.asarray(value)
    if tuple(value.shape) != tuple(info.shape):
        raise RunError(
            f"input {info.index} has shape {tuple(value.shape)}, the program wants {tuple(info.shape)}"
        )
    dtype = io_dtype(info)
    if np.issubdtype(value.dtype, np.floating) and np.issubdtype(dtype, np.integer):
        if info.scale is None or info.zero_point is None:
            raise RunError(f"input {info.index} is {info.dtype} without quantization parameters")
        return quantize(value, info.scale, info.zero_point, dtype)
    if np.issubdtype(dtype, np.integer) and value.dtype != dtype:
        raise RunError(f"input {info.index} is {value.dtype}, the program wants {info.dtype} (or float)")
    return value.astype(dtype)


def input_bytes(arrays: Sequence[np.ndarray], infos: Sequence[TensorInfo]) -> bytes:
    """Serialize program inputs for ``input.bin``: each input in its dim order, concatenated.

    Each array (logical shape, program dtype) is permuted to the tensor's ``dim_order`` (e.g.
    ``(0, 2, 3, 1)`` for channels_last) and written little-endian, inputs in index order.
    """
    parts = []
    for arr, info in zip(arrays, infos, strict=True):
        arr = to_memory_order(arr, info.dim_order)
        parts.append(arr.astype(arr.dtype.newbyteorder("<")).tobytes())
    return b"".join(parts)


def output_array(values: Sequence[int], info: TensorInfo) -> np.ndarray:
    """Turn one ``ARMGEN output`` line's values (memory order) into an array of ``info.shape``.

    Integer outputs are printed as their values; float32 outputs as their IEEE-754 bit patterns
    (signed 32-bit integers), which are turned back into float32 here.

    Returns:
        int64 array (integer outputs) or float32 array (float32 outputs), logical order.

    Raises:
        RunError: the count does not match the output's shape.
    """
    n = int(np.prod(info.shape)) if info.shape else 1
    if len(values) != n:
        raise RunError(f"firmware printed {len(values)} values for output {info.index}, expected {n}")
    if info.dtype == "float32":
        flat = np.asarray([v & 0xFFFFFFFF for v in values], dtype=np.uint32).view(np.float32)
    else:
        flat = np.asarray(values, dtype=np.int64)
    return to_logical_order(flat, info.shape, info.dim_order)


def alternate_inputs(infos: Sequence[TensorInfo]) -> list[np.ndarray]:
    """:func:`armgen.model.reference.alternate_inputs` (the run's second input), as a run error.

    Raises:
        RunError: armgen run does not support an input's dtype.
    """
    for info in infos:
        io_dtype(info)
    return reference_alternate_inputs(infos)


def load_input_file(path: Path, infos: Sequence[TensorInfo]) -> list[np.ndarray]:
    """Read program inputs from ``.npy``, ``.npz`` or ``.pt`` (logical shapes, float or int).

    - ``.npy``: one array (a program with one input).
    - ``.npz``: ``input_<i>`` arrays (as in the compile stage's reference), else ``arr_<i>``.
    - ``.pt``: ``torch.save`` of a tensor, or a tuple/list of tensors, or a dict with ``input_<i>``
      keys (loaded with ``weights_only=True``).

    Each array must have its input's exact shape: nothing is squeezed or added, because a
    different rank with the same number of elements (``(1, 49, 10)`` for ``(1, 1, 49, 10)``) may
    mean a different layout, and guessing would pass a wrong input silently (issue 27). Float
    arrays are quantized later with the input's scale/zero point (:func:`quantize_input`).

    Raises:
        RunError: unknown suffix, unreadable file, wrong number of inputs, an array whose shape is
            not its input's (the message names both).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    try:
        if suffix == ".npy":
            arrays = [np.load(path, allow_pickle=False)]
        elif suffix == ".npz":
            with np.load(path, allow_pickle=False) as npz:
                keys = [f"input_{t.index}" for t in infos]
                if not all(k in npz for k in keys):
                    keys = [f"arr_{i}" for i in range(len(infos))]
                missing = [k for k in keys if k not in npz]
                if missing:
                    raise RunError(f"{path}: no array {missing[0]} (expected input_<i> or arr_<i>)")
                arrays = [np.asarray(npz[k]) for k in keys]
        elif suffix == ".pt":
            import torch

            obj = torch.load(path, map_location="cpu", weights_only=True)
            items: list[Any]
            if isinstance(obj, torch.Tensor):
                items = [obj]
            elif isinstance(obj, (list, tuple)):
                items = list(obj)
            elif isinstance(obj, dict):
                items = [obj.get(f"input_{t.index}") for t in infos]
                if any(v is None for v in items):
                    raise RunError(f"{path}: a dict input needs keys input_0..input_{len(infos) - 1}")
            else:
                raise RunError(f"{path}: holds a {type(obj).__name__}, expected a tensor or a tuple of tensors")
            arrays = [
                np.asarray(t.detach().cpu().numpy()) if isinstance(t, torch.Tensor) else np.asarray(t) for t in items
            ]
        else:
            wav = " (a .wav clip needs a project with an audio front end: armgen new --frontend mfcc)"
            raise RunError(f"{path}: unknown input format {suffix or '(none)'}",
                           hint="give a .npy, .npz or .pt file" + (wav if suffix in (".wav", ".wave") else ""))
    except RunError:
        raise
    except Exception as exc:  # noqa: BLE001 - unreadable file: one line
        raise RunError(f"cannot read input {path}: {type(exc).__name__}: {exc}") from None
    if len(arrays) != len(infos):
        raise RunError(f"{path} holds {len(arrays)} inputs, the program takes {len(infos)}")
    for arr, info in zip(arrays, infos, strict=True):
        if tuple(arr.shape) != tuple(info.shape):
            raise RunError(
                f"{path}: input {info.index} has shape {tuple(arr.shape)}, the program wants {tuple(info.shape)}",
                hint="save the array with exactly the program's input shape (armgen inspect lists it)",
            )
    return arrays

"""Tensor facts every stage shares: dtype names and sizes, numpy dtypes, dim order, (de)quantization.

A program tensor has a *logical* shape (``TensorInfo.shape``, e.g. NCHW) and is stored in its
*dim order* (``TensorInfo.dim_order``, e.g. ``(0, 2, 3, 1)`` for channels_last: NHWC bytes in
memory). The firmware's input arrays, ``input.bin`` and the reference ``.npz`` hold memory order;
everything shown to users and compared is logical order. These helpers are the one place that
converts between the two.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

#: ExecuTorch ``ScalarType`` enum names -> the lower-case dtype names used in reports.
#: Source: ``executorch/exir/scalar_type.py`` (mirrors c10::ScalarType).
DTYPE_NAMES = {
    "BYTE": "uint8",
    "CHAR": "int8",
    "SHORT": "int16",
    "INT": "int32",
    "LONG": "int64",
    "HALF": "float16",
    "FLOAT": "float32",
    "DOUBLE": "float64",
    "BOOL": "bool",
    "BFLOAT16": "bfloat16",
    "QINT8": "qint8",
    "QUINT8": "quint8",
    "QINT32": "qint32",
    "UINT16": "uint16",
}

#: Bytes per element of each report dtype name.
DTYPE_SIZES = {
    "uint8": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8, "float16": 2, "float32": 4,
    "float64": 8, "bool": 1, "bfloat16": 2, "qint8": 1, "quint8": 1, "qint32": 4, "uint16": 2,
}

#: Report dtype names armgen can hand to and read from firmware, as numpy dtypes.
NUMPY_DTYPES: dict[str, Any] = {
    "int8": np.int8,
    "uint8": np.uint8,
    "int16": np.int16,
    "int32": np.int32,
    "float32": np.float32,
    "bool": np.bool_,
}


def numpy_dtype(dtype: str) -> Any:
    """The numpy dtype of report dtype name ``dtype`` (``"int8"`` -> ``np.int8``).

    Raises:
        KeyError: a dtype armgen does not exchange with firmware (e.g. ``float16``).
    """
    return NUMPY_DTYPES[dtype]


def is_identity(dim_order: Sequence[int], ndim: int) -> bool:
    """True when ``dim_order`` is the contiguous order of ``ndim`` dims (or does not describe them)."""
    return len(dim_order) != ndim or tuple(dim_order) == tuple(range(ndim))


def stored_shape(shape: Sequence[int], dim_order: Sequence[int]) -> tuple[int, ...]:
    """The shape of the tensor's bytes in memory (``shape`` permuted by ``dim_order``)."""
    if len(dim_order) != len(shape):
        return tuple(shape)
    return tuple(shape[d] for d in dim_order)


def to_memory_order(arr: np.ndarray, dim_order: Sequence[int]) -> np.ndarray:
    """A logical-order array -> its bytes' order (contiguous), e.g. NCHW -> NHWC for ``(0, 2, 3, 1)``."""
    arr = np.asarray(arr)
    if len(dim_order) != arr.ndim:
        return np.ascontiguousarray(arr)
    return np.ascontiguousarray(np.transpose(arr, dim_order))


def to_logical_order(stored: np.ndarray, shape: Sequence[int], dim_order: Sequence[int]) -> np.ndarray:
    """Values in memory order (any shape of ``prod(shape)`` elements) -> an array of logical ``shape``."""
    if len(dim_order) != len(shape):
        return np.asarray(stored).reshape(shape)
    return np.transpose(np.asarray(stored).reshape(stored_shape(shape, dim_order)), np.argsort(dim_order))


def with_dim_order(t: Any, dim_order: Sequence[int]) -> Any:
    """A torch tensor with the same values (logical shape) and strides in ``dim_order``.

    For example channels_last strides for ``(0, 2, 3, 1)``; the tensor itself when the order is the
    contiguous one.
    """
    if is_identity(dim_order, t.dim()):
        return t
    return t.permute(*dim_order).contiguous().permute(*np.argsort(dim_order).tolist())


def quantize(values: np.ndarray, scale: float, zero_point: int, dtype: Any) -> np.ndarray:
    """``clamp(round(values / scale) + zero_point)`` to ``dtype``'s range, as
    ``quantized_decomposed.quantize_per_tensor`` computes it (float32 arithmetic with the reciprocal
    of ``scale``, round half to even)."""
    lim = np.iinfo(dtype)
    q = np.round(np.asarray(values).astype(np.float32) * np.float32(1.0 / scale)) + zero_point
    return np.clip(q, lim.min, lim.max).astype(dtype)


def dequantize(q: np.ndarray, scale: float | None, zero_point: int | None) -> np.ndarray:
    """``(q - zero_point) * scale`` as float64; the values themselves (float64) when unquantized."""
    if scale is None or zero_point is None:
        return np.asarray(q, dtype=np.float64)
    return (np.asarray(q, dtype=np.float64) - zero_point) * scale

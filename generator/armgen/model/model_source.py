"""Where a model comes from: a built-in sample, a user's Python file, a ``.pt2`` or a ``.pte``.

Accepted ``MODEL`` arguments of ``armgen compile``:

``kws`` | ``vww`` | ``ic`` | ``ad`` | ``sww``
    A built-in sample (see ``samples/``). Trained weights are the MLPerf Tiny reference ``.tflite``
    (``--weights``, ``$ARMGEN_MLPERF_DIR``, the cache, or downloaded once: :mod:`armgen.model.pretrained`);
    without any, fixed-seed weights are used with a warning.
``path/to/file.py``
    A Python file defining module-level ``model`` (an ``nn.Module``) and ``example_inputs`` (a
    tuple of tensors).
``path/to/file.py:attr``
    ``attr`` is either an ``nn.Module`` (then ``example_inputs`` must be defined too) or a
    callable returning ``(model, example_inputs)``.
``path/to/program.pt2``
    A float program saved with ``torch.export.save``; its ``example_inputs`` are used.
``path/to/program.pte``
    An existing ExecuTorch program: only inspected, not compiled.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import os
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from armgen.errors import ModelError
from armgen.model.model_spec import check_model_spec, sample_names, samples_package


def mlperf_dir() -> Path | None:
    """Return ``$ARMGEN_MLPERF_DIR`` (the folder of the MLPerf Tiny reference ``.tflite`` files), or
    None when it is not set: armgen does not look for weights relative to where it is installed."""
    env = os.environ.get("ARMGEN_MLPERF_DIR")
    return Path(env).expanduser() if env else None


@dataclass
class ModelSource:
    """A model ready for export.

    Attributes:
        name: file stem for outputs (sample name or the file's stem).
        kind: ``"sample"``, ``"python"``, ``"pt2"`` or ``"pte"``.
        model: the float ``nn.Module`` in eval mode (``None`` for ``.pte``).
        example_inputs: one tuple of float tensors with the input shapes (``None`` for ``.pte``).
        representative: inputs for calibration and the reference outputs; item 0 is the
            sample's deterministic input.
        class_labels: output class names when known.
        weights: path of the trained weights loaded, if any.
        untrained: a built-in sample running on fixed-seed weights (no trained file was found).
        path: the file the model came from (``None`` for samples).
        notes: informational lines for the user (e.g. which weights were used).
        warnings: things that make outputs less meaningful (untrained weights, calibration).
    """

    name: str
    kind: str
    model: nn.Module | None
    example_inputs: tuple[torch.Tensor, ...] | None
    representative: list[tuple[torch.Tensor, ...]] = field(default_factory=list)
    class_labels: tuple[str, ...] = ()
    weights: Path | None = None
    untrained: bool = False
    path: Path | None = None
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def sample_module(name: str) -> types.ModuleType:
    """Return the module of built-in sample ``name``.

    Raises:
        ModelError: unknown sample name.
    """
    if name not in sample_names():
        raise ModelError(f"unknown sample '{name}'; built-in samples: {', '.join(sample_names())}")
    return importlib.import_module(f"{samples_package().__name__}.{name}")


def load_sample(name: str, weights: Path | str | None = None, use_default_weights: bool = True) -> ModelSource:
    """Build a built-in sample.

    Args:
        name: ``kws``, ``vww``, ``ic``, ``ad`` or ``sww``.
        weights: a ``.tflite`` with trained weights (float; int8 for ``sww``, dequantized); ``None`` finds
            the sample's MLPerf Tiny reference file (``$ARMGEN_MLPERF_DIR``, the cache, a download:
            :mod:`armgen.model.pretrained`) when ``use_default_weights``.
        use_default_weights: look for the reference file when ``weights`` is ``None``.

    Raises:
        ModelError: unknown sample, missing/mismatched weights file, a download refused by its checksum.
    """
    from armgen.model.tflite_weights import load_tflite_weights

    mod = sample_module(name)
    model = mod.build_model()
    src = ModelSource(
        name=name,
        kind="sample",
        model=model,
        example_inputs=None,
        class_labels=tuple(mod.CLASS_LABELS),
    )
    if weights is not None or use_default_weights:
        from armgen.model.pretrained import find_weights

        wpath, note = find_weights(name, weights)
    else:
        wpath, note = None, f"no trained weights for '{name}' (not looked for)"
    if wpath is not None:
        load_tflite_weights(model, wpath)
        src.weights = wpath
        src.notes.append(note)
    else:
        src.untrained = True
        src.warnings.append(f"{note}; fixed-seed weights are used: the weights are UNTRAINED, outputs are meaningless")
    src.representative = list(mod.representative_inputs())
    src.example_inputs = src.representative[0]
    return src


def _import_file(path: Path) -> types.ModuleType:
    # A name stable from process to process (Python's hash() of a str is salted per process): it is recorded in
    # the exported program's nn_module_stack, which must not change between two identical compiles.
    mod_name = f"armgen_user_model_{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]}"
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise ModelError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - user code may raise anything
        raise ModelError(f"{path}: importing it failed: {type(exc).__name__}: {exc}") from exc
    return module


def _as_inputs(value: Any, where: str) -> tuple[torch.Tensor, ...]:
    if isinstance(value, torch.Tensor):
        value = (value,)
    if not isinstance(value, (tuple, list)) or not value or not all(isinstance(v, torch.Tensor) for v in value):
        raise ModelError(f"{where}: example_inputs must be a tensor or a tuple of tensors")
    return tuple(value)


def factory_candidates(module: types.ModuleType) -> list[str]:
    """Names in a user's model file that ``file.py:NAME`` could mean, in file order.

    The candidates are the functions the file itself defines (not imported ones) that can be called
    without arguments, and the module-level ``nn.Module`` instances. Private names (``_x``) are left out.
    """
    names = []
    for name, obj in vars(module).items():
        if name.startswith("_"):
            continue
        if isinstance(obj, nn.Module):
            names.append(name)
        elif inspect.isfunction(obj) and obj.__module__ == module.__name__:
            params = inspect.signature(obj).parameters.values()
            if all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
                names.append(name)
    return names


def _factory_hint(module: types.ModuleType, path: Path) -> str:
    """The second half of the hint for a file without ``model``/``example_inputs``: its own candidates."""
    candidates = factory_candidates(module)
    if not candidates:
        return f"or name a factory that returns (model, example_inputs): {path}:<function>"
    listed = ", ".join(f"{path}:{name}" for name in candidates[:5])
    return f"or name one of the file's own factories or modules: {listed}"


def load_python_model(spec: str) -> ModelSource:
    """Load ``file.py`` or ``file.py:attr`` (see module docstring for the convention).

    Raises:
        ModelError: missing file, import error, missing/ill-typed ``model``/``example_inputs``,
            a factory that fails or returns something else.
    """
    file_part, _, attr = spec.partition(".py:")
    path = Path(file_part + ".py") if attr else Path(spec)
    if not path.is_file():
        raise ModelError(f"{path}: model file not found")
    module = _import_file(path)
    where = f"{path}" + (f":{attr}" if attr else "")
    model: Any  # what the user's file defines; checked to be an nn.Module below
    if attr:
        if not hasattr(module, attr):
            raise ModelError(f"{path} does not define '{attr}'")
        obj = getattr(module, attr)
        if isinstance(obj, nn.Module):
            model, inputs = obj, getattr(module, "example_inputs", None)
            if inputs is None:
                raise ModelError(f"{path} defines '{attr}' but no module-level 'example_inputs'")
        elif callable(obj):
            try:
                result = obj()
            except Exception as exc:  # noqa: BLE001
                raise ModelError(f"{where}: calling the factory failed: {type(exc).__name__}: {exc}") from exc
            if not (isinstance(result, tuple) and len(result) == 2):
                raise ModelError(f"{where}: the factory must return (model, example_inputs)")
            model, inputs = result
        else:
            raise ModelError(f"{where} is neither an nn.Module nor a factory function")
    else:
        model = getattr(module, "model", None)
        inputs = getattr(module, "example_inputs", None)
        if model is None or inputs is None:
            missing = " and ".join(n for n, v in (("model", model), ("example_inputs", inputs)) if v is None)
            raise ModelError(
                f"{path} does not define module-level {missing}",
                hint="define `model` (an nn.Module) and `example_inputs` (a tuple of tensors), "
                + _factory_hint(module, path),
            )
    if not isinstance(model, nn.Module):
        raise ModelError(f"{where}: 'model' is a {type(model).__name__}, not a torch.nn.Module")
    example = _as_inputs(inputs, where)
    model = model.eval()
    return ModelSource(
        name=path.stem,
        kind="python",
        model=model,
        example_inputs=example,
        representative=[example],
        path=path,
    )


def load_pt2(path: Path) -> ModelSource:
    """Load a float program saved with ``torch.export.save``.

    Raises:
        ModelError: missing or unreadable file, or no example inputs stored in it.
    """
    path = Path(path)
    if not path.is_file():
        raise ModelError(f"{path}: model file not found")
    try:
        ep = torch.export.load(str(path))
    except Exception as exc:  # noqa: BLE001
        raise ModelError(f"{path}: not a torch.export program ({type(exc).__name__})") from exc
    if ep.example_inputs is None:
        raise ModelError(f"{path}: the program stores no example inputs; re-save it from torch.export.export")
    args, _kwargs = ep.example_inputs
    example = _as_inputs(args, str(path))
    return ModelSource(
        name=path.stem,
        kind="pt2",
        model=ep.module(check_guards=False),
        example_inputs=example,
        representative=[example],
        path=path,
    )


def resolve_model(spec: str, weights: Path | str | None = None) -> ModelSource:
    """Turn the ``MODEL`` argument into a :class:`ModelSource` (see the module docstring).

    Raises:
        ModelError: for every model that cannot be found or loaded (one-line message).
    """
    if spec in sample_names():
        return load_sample(spec, weights)
    if weights is not None:
        raise ModelError("--weights applies to the built-in samples only")
    check_model_spec(spec)  # a kind armgen takes, and its file exists
    lower = spec.lower()
    if lower.endswith(".pte"):
        path = Path(spec)
        return ModelSource(name=path.stem, kind="pte", model=None, example_inputs=None, path=path)
    if lower.endswith(".pt2"):
        return load_pt2(Path(spec))
    return load_python_model(spec)


def load_calibration(path: Path | str, example_inputs: tuple[torch.Tensor, ...]) -> list[tuple[torch.Tensor, ...]]:
    """Read representative inputs for post-training quantization.

    Accepted: a ``.npz`` (each array one sample for a single-input model, or arrays named
    ``input_<i>`` with a leading batch-of-samples axis), a ``.pt`` (a tensor with a leading sample
    axis, a list of tensors, or a list of tuples of tensors), or a directory of ``.npy``/``.npz``/
    ``.pt`` files (sorted by name, one or more samples each). Each sample must match the shapes
    of ``example_inputs`` (a leading axis of samples is split off when shapes differ by it).

    Raises:
        ModelError: missing/unreadable path, no samples, or shapes that do not fit.
    """
    import numpy as np

    path = Path(path)
    if not path.exists():
        raise ModelError(f"{path}: calibration data not found")
    shapes = [tuple(t.shape) for t in example_inputs]

    def split(t: torch.Tensor, k: int) -> list[torch.Tensor]:
        t = t.to(example_inputs[k].dtype)
        if tuple(t.shape) == shapes[k]:
            return [t]
        if tuple(t.shape[1:]) == shapes[k] or (tuple(t.shape[1:]) == shapes[k][1:] and shapes[k][0] == 1):
            return [x.reshape(shapes[k]) for x in t]  # leading axis of samples
        raise ModelError(f"{path}: calibration tensor of shape {tuple(t.shape)} does not fit input {k} {shapes[k]}")

    def from_obj(obj: Any) -> list[tuple[torch.Tensor, ...]]:
        if isinstance(obj, np.ndarray):
            obj = torch.from_numpy(obj)
        if isinstance(obj, torch.Tensor):
            if len(shapes) != 1:
                raise ModelError(f"{path}: the model has {len(shapes)} inputs; give tuples of tensors")
            return [(x,) for x in split(obj, 0)]
        if isinstance(obj, (list, tuple)):
            out: list[tuple[torch.Tensor, ...]] = []
            for item in obj:
                if isinstance(item, (list, tuple)):
                    if len(item) != len(shapes):
                        raise ModelError(
                            f"{path}: a calibration sample has {len(item)} tensors, the model takes {len(shapes)}"
                        )
                    out.append(tuple(split(torch.as_tensor(t), k)[0] for k, t in enumerate(item)))
                else:
                    out.extend(from_obj(item))
            return out
        raise ModelError(f"{path}: unsupported calibration content {type(obj).__name__}")

    def from_file(f: Path) -> list[tuple[torch.Tensor, ...]]:
        try:
            if f.suffix == ".npy":
                return from_obj(np.load(f, allow_pickle=False))
            if f.suffix == ".npz":
                with np.load(f, allow_pickle=False) as z:
                    keys = sorted(z.files)
                    if all(k.startswith("input_") for k in keys) and len(keys) == len(shapes):
                        per_input = [split(torch.from_numpy(z[f"input_{k}"]), k) for k in range(len(shapes))]
                        return list(zip(*per_input, strict=False))
                    out: list[tuple[torch.Tensor, ...]] = []
                    for k in keys:
                        out.extend(from_obj(z[k]))
                    return out
            if f.suffix == ".pt":
                return from_obj(torch.load(f, map_location="cpu", weights_only=True))
        except ModelError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise ModelError(f"{f}: cannot read calibration data ({type(exc).__name__}: {exc})") from exc
        raise ModelError(f"{f}: calibration files must be .npz, .npy or .pt")

    if path.is_dir():
        samples: list[tuple[torch.Tensor, ...]] = []
        for f in sorted(p for p in path.iterdir() if p.suffix in (".npy", ".npz", ".pt")):
            samples.extend(from_file(f))
    else:
        samples = from_file(path)
    if not samples:
        raise ModelError(f"{path}: no calibration samples found")
    return samples


def run_forward(model: nn.Module, inputs: tuple[torch.Tensor, ...], where: str) -> Any:
    """Run ``model(*inputs)`` once, turning any failure into a one-line :class:`ModelError`."""
    try:
        with torch.no_grad():
            return model(*inputs)
    except Exception as exc:  # noqa: BLE001 - user forward may raise anything
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelError(
            f"{where}: forward() failed on the example inputs "
            f"{[tuple(t.shape) for t in inputs]}: {type(exc).__name__}: {msg}"
        ) from exc



def declared_frontend(source: str) -> tuple[Any, tuple[str, ...]]:
    """The ``FRONTEND`` declaration and ``CLASS_LABELS`` of a model source, without building the model.

    Args:
        source: a built-in sample name, or ``file.py`` / ``file.py:attr``.

    Returns:
        (the ``FRONTEND`` value or None, the class labels or ()).

    Raises:
        ModelError: missing file or import error; a ``.pt2`` or ``.pte`` (they carry no declaration).
    """
    if source in sample_names():
        module = sample_module(source)
    elif source.endswith(".py") or ".py:" in source:
        path = Path(source.partition(".py:")[0] + ".py") if ".py:" in source else Path(source)
        if not path.is_file():
            raise ModelError(f"{path}: model file not found")
        module = _import_file(path)
    else:
        raise ModelError(f"{source}: a front end is declared in the model's Python source (FRONTEND = {{...}}); "
                         "a compiled or exported program carries none")
    labels = getattr(module, "CLASS_LABELS", ())
    return getattr(module, "FRONTEND", None), tuple(str(x) for x in labels)

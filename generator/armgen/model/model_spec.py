"""The ``MODEL`` argument (a built-in sample, ``file.py``, ``file.py:attr``, ``.pt2``, ``.pte``; see
:mod:`armgen.model.model_source`): the samples' names, the file an argument names and whether it exists.

Nothing here imports torch, so ``armgen new`` and ``armgen update`` say a missing model file or an unknown
kind in one line before anything is compiled (a new interpreter takes seconds to import torch and ExecuTorch).
"""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

from armgen.errors import ModelError
from armgen.paths import SAMPLES_DIR

_SAMPLES_PACKAGE = "armgen_samples"


def samples_package() -> types.ModuleType:
    """The built-in samples' package (``samples/``, imported once as ``armgen_samples``; its modules import
    torch, its ``__init__`` does not).

    Raises:
        ModelError: the samples are not installed.
    """
    if _SAMPLES_PACKAGE in sys.modules:
        return sys.modules[_SAMPLES_PACKAGE]
    spec = importlib.util.spec_from_file_location(
        _SAMPLES_PACKAGE, SAMPLES_DIR / "__init__.py", submodule_search_locations=[str(SAMPLES_DIR)]
    )
    if spec is None or spec.loader is None:
        raise ModelError(f"built-in samples not found in {SAMPLES_DIR}")
    pkg = importlib.util.module_from_spec(spec)
    sys.modules[_SAMPLES_PACKAGE] = pkg
    spec.loader.exec_module(pkg)
    return pkg


def sample_names() -> tuple[str, ...]:
    """Return the names of the built-in samples (``kws``, ``vww``, ``ic``, ``ad``, ``sww``)."""
    return tuple(samples_package().SAMPLE_NAMES)


def model_file(spec: str) -> Path | None:
    """The file a ``MODEL`` argument names (``file.py:attr`` -> ``file.py``); None for a built-in sample or an
    argument of no kind armgen takes."""
    if spec in sample_names():
        return None
    if ".py:" in spec:
        return Path(spec.partition(".py:")[0] + ".py")
    if spec.lower().endswith((".py", ".pt2", ".pte")):
        return Path(spec)
    return None


def check_model_spec(spec: str) -> None:
    """The cheap checks of a ``MODEL`` argument, before any import of torch or compile.

    Raises:
        ModelError: ``spec`` is no built-in sample nor a ``.py``, ``.pt2`` or ``.pte`` file, or the file it
            names is missing (one line each).
    """
    if spec in sample_names():
        return
    path = model_file(spec)
    if path is None:
        raise ModelError(
            f"'{spec}' is not a built-in sample ({', '.join(sample_names())}) nor a .py, .pt2 or .pte file"
        )
    if not path.is_file():
        raise ModelError(f"{path}: model file not found")

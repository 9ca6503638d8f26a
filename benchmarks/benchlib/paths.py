"""Where things are on this machine, and the placeholders that hide it in recorded commands.

Importing this module sets ``ARMGEN_MLPERF_DIR`` from ``ARMGEN_BENCH_MODELS`` when only the latter is set:
armgen reads the trained weights only from ``$ARMGEN_MLPERF_DIR`` (it guesses no folder), and every ``armgen
new`` of a run compiles the samples with them, as TFLM runs the reference models.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

#: ``benchmarks/`` (the scripts, ``tflm/``, the committed results) and the checkout around it.
BENCH_DIR = Path(__file__).resolve().parent.parent
REPO = BENCH_DIR.parent
#: The MLPerf Tiny .tflite folder: $ARMGEN_BENCH_MODELS, else $ARMGEN_MLPERF_DIR (no default: a site fact).
MODELS_DIR = Path(os.environ.get("ARMGEN_BENCH_MODELS") or os.environ.get("ARMGEN_MLPERF_DIR") or "")
if str(MODELS_DIR) not in ("", "."):
    os.environ["ARMGEN_MLPERF_DIR"] = str(MODELS_DIR)

#: Machine-specific prefixes shown as placeholders in the recorded commands (results.json), in this order.
PLACEHOLDERS = (
    (str(MODELS_DIR), "$ARMGEN_BENCH_MODELS"),
    (str(Path.home() / ".cache" / "armgen-bench"), "$ARMGEN_BENCH_CACHE"),
    (str(Path(sys.executable).parent) + "/", ""),
    (str(Path.home() / ".local" / "share" / "armgen" / "workspace"), "$ARMGEN_WORKSPACE"),
    (os.environ.get("ARMGEN_WORKSPACE", ""), "$ARMGEN_WORKSPACE"),
    (os.environ.get("ARMGEN_BENCH_CACHE", ""), "$ARMGEN_BENCH_CACHE"),
    (str(REPO) + "/", ""),
)
#: This Python, and the ``armgen`` console script installed beside it.
PYTHON = sys.executable
ARMGEN = str(Path(sys.executable).with_name("armgen"))


def models_dir_set() -> bool:
    """Whether the model folder is given ($ARMGEN_BENCH_MODELS or $ARMGEN_MLPERF_DIR) and is a folder."""
    return MODELS_DIR.is_dir() and str(MODELS_DIR) not in ("", ".")


def default_cache() -> Path:
    """Where builds are cached: $ARMGEN_BENCH_CACHE, else ``~/.cache/armgen-bench``."""
    return Path(os.environ.get("ARMGEN_BENCH_CACHE", Path.home() / ".cache/armgen-bench"))


def without_machine_paths(text: str) -> str:
    """``text`` with this machine's paths (model folder, cache, venv, workspace, checkout) as placeholders."""
    for prefix, placeholder in PLACEHOLDERS:
        if prefix and prefix not in ("/", "."):
            text = text.replace(prefix, placeholder)
    return text


def workspace_dir() -> Path:
    """The armgen workspace (``armgen.paths.workspace_dir``: $ARMGEN_WORKSPACE or armgen's default)."""
    from armgen.paths import workspace_dir as wd

    return Path(wd())

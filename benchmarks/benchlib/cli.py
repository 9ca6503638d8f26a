"""The command-line options the side scripts (``tflm_arena.py``, ``tflm_lto.py``) share with ``bench.py``."""

from __future__ import annotations

import argparse
from pathlib import Path

from .paths import BENCH_DIR, default_cache


def script_arguments(description: str, out: str) -> argparse.Namespace:
    """Parse ``--samples``, ``--machines``, ``--cache``, ``--jobs`` and ``--out`` (default ``benchmarks/<out>``)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--samples", default="kws,vww,ic,ad")
    ap.add_argument("--machines", default="an547,an386")
    ap.add_argument("--cache", type=Path, default=default_cache())
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", type=Path, default=BENCH_DIR / out)
    return ap.parse_args()

#!/usr/bin/env python3
"""TFLite Micro built with link-time optimization, the way armgen builds its bare-metal images.

armgen's projects link with ``-flto`` (``ARMGEN_LTO``, on by default); TFLM's Makefile has no LTO
option, so ``results.json`` compares armgen with LTO against TFLM as its upstream build makes it.
This script answers the obvious follow-up: what TFLM gets from the same switch. It runs the main run's
whole TFLM procedure (``benchlib.tflm``: probe run, smallest working arena in 16-byte steps, stack by
armgen's rule, final build, size from the map, run and check against LiteRT) in a build tree of its own, with
``CMAKE_INTERPROCEDURAL_OPTIMIZATION=ON`` for every target (runtime, kernels, CMSIS-NN, runner).
Writes ``tflm_lto.json``, which ``report.py`` renders beside the main table.

    ARMGEN_BENCH_MODELS=... benchmarks/tflm_lto.py [--samples kws,vww,ic,ad] [--machines an547,an386]

Needs the same workspace as the main run's TFLM side (``armgen workspace init --benchmarks``).
"""

from __future__ import annotations

import sys
from typing import Any

from benchlib.cli import script_arguments
from benchlib.results import write_side_result
from benchlib.tflm import Tflm

KEYS = ("flash", "flash_excl_model", "ram_static", "arena_reserved", "stack_reserved", "stack_used",
        "instructions", "ticks", "max_abs_diff_vs_litert")


def main() -> int:
    a = script_arguments(__doc__.splitlines()[0], "tflm_lto.json")
    tflm = Tflm(a.cache / "tflm-lto", a.jobs)
    tflm.extra_defs = {"CMAKE_INTERPROCEDURAL_OPTIMIZATION": "ON"}
    full = tflm.measure(a.machines.split(","), a.samples.split(","), clean=True)
    res: dict[str, Any] = {m: {s: {k: e.get(k) for k in KEYS} for s, e in per.items()} for m, per in full.items()}
    res["how"] = ("bench.py's Tflm.measure (same arena search and stack rule) with "
                  "-DCMAKE_INTERPROCEDURAL_OPTIMIZATION=ON for every target of benchmarks/tflm")
    return write_side_result(a.out, res)


if __name__ == "__main__":
    sys.exit(main())

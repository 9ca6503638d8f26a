#!/usr/bin/env python3
"""TFLite Micro built with link-time optimization, the way armgen builds its bare-metal images.

armgen's projects link with ``-flto`` (``ARMGEN_LTO``, on by default); TFLM's Makefile has no LTO
option, so ``results.json`` compares armgen with LTO against TFLM as its upstream build makes it.
This script answers the obvious follow-up: what TFLM gets from the same switch. It runs bench.py's
whole TFLM procedure (probe run, smallest working arena in 16-byte steps, stack by armgen's rule,
final build, size from the map, run and check against LiteRT) in a build tree of its own, with
``CMAKE_INTERPROCEDURAL_OPTIMIZATION=ON`` for every target (runtime, kernels, CMSIS-NN, runner).
Writes ``tflm_lto.json``, which ``report.py`` renders beside the main table.

    ARMGEN_BENCH_MODELS=... benchmarks/tflm_lto.py [--samples kws,vww,ic,ad] [--machines an547,an386]

Needs the same workspace as bench.py's TFLM side (``armgen workspace init --benchmarks``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402  (benchmarks/ is not a package)

KEYS = ("flash", "flash_excl_model", "ram_static", "arena_reserved", "stack_reserved", "stack_used",
        "instructions", "ticks", "max_abs_diff_vs_litert")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", default="kws,vww,ic,ad")
    ap.add_argument("--machines", default="an547,an386")
    ap.add_argument("--cache", type=Path,
                    default=Path(os.environ.get("ARMGEN_BENCH_CACHE", Path.home() / ".cache/armgen-bench")))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", type=Path, default=bench.HERE / "tflm_lto.json")
    a = ap.parse_args()
    tflm = bench.Tflm(a.cache / "tflm-lto", a.jobs)
    tflm.extra_defs = {"CMAKE_INTERPROCEDURAL_OPTIMIZATION": "ON"}
    full = tflm.measure(a.machines.split(","), a.samples.split(","), clean=True)
    res: dict = {m: {s: {k: e.get(k) for k in KEYS} for s, e in per.items()} for m, per in full.items()}
    res["how"] = ("bench.py's Tflm.measure (same arena search and stack rule) with "
                  "-DCMAKE_INTERPROCEDURAL_OPTIMIZATION=ON for every target of benchmarks/tflm")
    a.out.write_text(json.dumps(res, indent=2, sort_keys=True) + "\n")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""results.md (tables, targets, findings) and results.svg (flash and RAM plot) rendered from results.json.

Called by bench.py at the end of every run (and by `benchmarks/run --report-only`, `benchmarks/report.py`).
The side scripts' files beside results.md (``tflm_lto.json``, ``tflm_arena.json``, ``zephyr.json``) add
their tables when they exist.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from .compare_tables import all_portable, method_pool, pools, portable_lowering, profile, ram_target, stacks, vela
from .findings import findings_section, targets_table
from .main_tables import flash_by_component, header, main_table, wall_times
from .plot import write_svg
from .side_tables import against_tflm, tflm_arena_rows, tflm_lto_rows, zephyr_rows

#: the line that replaces the plot when matplotlib (the ``bench`` extra) is not installed
PLOT_NEEDS_MATPLOTLIB = ("bench: warning: results.svg not written: the plot needs matplotlib: "
                         "pip install -e '.[bench]' (then benchmarks/run --report-only draws it)")


def write_md(res: dict[str, Any], out: Path) -> None:
    """Write ``out/results.md`` from ``res`` (results.json as loaded) and the side files in ``out``."""
    cmpres = res.get("compare", {})
    L = [
        *header(res),
        *main_table(res),
        *against_tflm(res),
        *tflm_lto_rows(res, out / "tflm_lto.json"),
        *zephyr_rows(res, out / "zephyr.json"),
        *flash_by_component(res),
        *wall_times(res),
        *all_portable(cmpres),
        *pools(cmpres),
        *stacks(res),
        *method_pool(res),
        *ram_target(res),
        *tflm_arena_rows(out / "tflm_arena.json"),
        *portable_lowering(cmpres),
        *profile(cmpres),
        *vela(cmpres),
        *targets_table(res),
        *findings_section(res),
        "",
    ]
    (out / "results.md").write_text("\n".join(L) + "\n")


def write_report(res: dict[str, Any], out: Path) -> list[Path]:
    """Write results.md and results.svg into ``out``; the files written.

    Without matplotlib (``pip install -e '.[bench]'``) results.md is still written and results.svg is not: one
    line on stderr says so, and the caller's exit status stays 0 (the measurements are all in results.json and
    results.md; ``benchmarks/run --report-only`` draws the plot later from them).
    """
    write_md(res, out)
    written = [out / "results.md"]
    if importlib.util.find_spec("matplotlib") is None:
        print(PLOT_NEEDS_MATPLOTLIB, file=sys.stderr)
        return written
    if write_svg(res, out):
        written.append(out / "results.svg")
    return written

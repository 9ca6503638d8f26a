"""Render benchmarks/results.json as results.md (tables, targets) and results.svg (flash and RAM plot).

bench.py renders at the end of every run (and ``benchmarks/run --report-only`` re-renders, after adding
what the cached projects can still tell); this script only renders, and needs neither the model folder nor
the cache. The tables are ``benchlib.report``'s. Usage:

    python benchmarks/report.py [--results benchmarks/results.json] [--out benchmarks]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchlib.paths import BENCH_DIR
from benchlib.report import write_report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", type=Path, default=BENCH_DIR / "results.json", help="the results.json to render")
    ap.add_argument("--out", type=Path, default=None,
                    help="where results.md/.svg go and the side files are read (default: beside --results)")
    a = ap.parse_args(argv)
    if not a.results.is_file():
        raise SystemExit(f"report: no results file {a.results}")
    out = a.out or a.results.parent
    for path in write_report(json.loads(a.results.read_text()), out):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

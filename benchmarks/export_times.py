"""Time `armgen compile` per sample and target; write benchmarks/export_times.json.

Run: ``.venv/bin/python benchmarks/export_times.py [--targets cortex-m55,cortex-m4,...]``.
Each compile runs once in this process (imports warmed up by a first untimed kws compile), so
the figures are wall-clock seconds for quantize + export + lower + serialize + report on this
machine; they also record the planned buffer and .pte sizes the compile produced.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

from armgen.model.compile import compile_model

DEFAULT_CASES = [(s, t) for t in ("cortex-m55", "cortex-m4") for s in ("kws", "vww", "ic", "ad")] + [
    ("kws", "ethos-u55-128"),
    ("kws", "ethos-u85-256"),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default=str(Path(__file__).with_name("export_times.json")))
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        compile_model("kws", "cortex-m55", out_dir=Path(tmp) / "warmup")  # imports, lazy init
        for sample, target in DEFAULT_CASES:
            t0 = time.perf_counter()
            res = compile_model(sample, target, out_dir=Path(tmp) / f"{sample}-{target}")
            dt = time.perf_counter() - t0
            r = res.report
            rows.append({
                "sample": sample,
                "target": target,
                "seconds": round(dt, 1),
                "pte_size": r.pte_size,
                "planned_buffers": list(r.planned_buffers),
                "operators": [f"{o.name}.{o.overload} x{o.calls}" for o in r.operators],
                "scratch_size": r.temp_allocator_size,
                "vela_cycles": [d.vela.cycles for d in r.delegates if d.vela],
            })
            print(f"{sample:4} {target:14} {dt:6.1f} s  pte {r.pte_size} B  planned {list(r.planned_buffers)}",
                  flush=True)
    doc = {
        "what": "wall-clock seconds of armgen.model.compile.compile_model per (sample, target), "
                "trained MLPerf Tiny weights",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "shared": "2 cores shared with other jobs"},
        "versions": {name: version(name) for name in ("torch", "executorch", "ethos-u-vela")},
        "results": rows,
    }
    Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()

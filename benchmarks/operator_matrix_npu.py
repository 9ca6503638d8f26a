"""Every operator-matrix row on the Ethos-U path, checked on the TOSA reference model (U55 and U85).

Run: ``.venv/bin/python benchmarks/operator_matrix_npu.py [--boards alif_e8_hp,corstone_320]`` (no
workspace needed: real export, lowering, Vela and the TOSA reference model, no firmware). Writes
``benchmarks/operator_matrix_npu.json`` and ``.md``.

The program is the one CI's Cortex-M matrix firmware runs (``tests/models/operator_matrix.py``, every row
of ``armgen.model.operator_matrix.ROWS`` a branch), made with ``armgen new --rtos baremetal`` for each
board's NPU and run with ``armgen run --json`` (the delegates' TOSA graphs in the reference model, the CPU
ops around them with the host kernels). Per row: where its layer runs (NPU, or the CPU kernels the
partitioner left it on, with the partitioner's reason), the largest difference from the program's
quantized reference on both inputs, and the SNR of the first input's output against the float model.
CI checks a part of the rows on the U55 (``tests/models/operator_matrix_npu_ci.py``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ARMGEN = [str(Path(sys.executable).with_name("armgen"))]
MATRIX_MODEL = ROOT / "tests" / "models" / "operator_matrix.py"


def _armgen(*args: str) -> str:
    r = subprocess.run([*ARMGEN, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"armgen {' '.join(args)} failed:\n{r.stdout}\n{r.stderr}")
    return r.stdout


def measure(board: str, work: Path) -> dict[str, Any]:
    """Make and check the matrix program for ``board`` (see the module text); seconds are this machine's."""
    from armgen.model.operator_matrix import ROWS

    t0 = time.monotonic()
    _armgen("new", "matrix", "--model", str(MATRIX_MODEL), "--board", board, "--rtos", "baremetal", "--out", str(work))
    t_new = time.monotonic() - t0
    project = work / "matrix"
    run = json.loads(_armgen("run", str(project), "--json"))
    report = json.loads((project / "model" / "matrix.report.json").read_text())
    rows = []
    for i, r in enumerate(ROWS):
        cpu = [p for p in report["placement"] if p["layer"].split(".", 1)[0] == r.key]
        snr = run["float_quality"][i]["snr_db"]
        rows.append({"key": r.key, "layer": r.layer,
                     "cpu_kernels": sorted({f"{p['op']} ({p['dtype']})" for p in cpu}),
                     "cpu_reasons": sorted({p["reason"] for p in cpu if p["reason"]}),
                     "max_lsb_diff": run["outputs"][i]["max_lsb_diff"],
                     "snr_db": snr if isinstance(snr, str) else round(snr, 1)})
    return {"board": board, "target": run["target"], "seconds_new": round(t_new, 1),
            "delegates": len(run["tosa_files"]), "verdict": run["verdict"],
            "alternate_max_lsb_diff": run["alternate_max_lsb_diff"], "rows": rows}


def render(results: list[dict[str, Any]]) -> str:
    """The Markdown table: per row and target, where the layer runs and its LSB difference."""
    lines = ["# The operator matrix on the Ethos-U path (TOSA reference model)", "",
             "Made by `benchmarks/operator_matrix_npu.py`. One program per target holding every row; "
             "\"NPU\" means no kernel of the row's layer is left on the CPU. LSB: the row's output against the "
             "program's quantized reference (first input); dB: against the float model.", ""]
    for r in results:
        lines.append(f"- {r['board']} ({r['target']}): {r['delegates']} delegates; {r['verdict']}; second input "
                     f"max {r['alternate_max_lsb_diff']:g} LSB; `armgen new` {r['seconds_new']} s on this machine")
    lines += ["", "| row | layer | " + " | ".join(f"{r['target']}: runs on, LSB, dB" for r in results) + " |",
              "|" + "---|" * (2 + len(results))]
    for i, row in enumerate(results[0]["rows"]):
        cells = []
        for r in results:
            x = r["rows"][i]
            where = "NPU" if not x["cpu_kernels"] else "CPU " + ", ".join(x["cpu_kernels"])
            if x["cpu_reasons"]:
                where += " (" + "; ".join(x["cpu_reasons"]) + ")"
            cells.append(f"{where}, {x['max_lsb_diff']:g}, {x['snr_db']}")
        lines.append(f"| {row['key']} | {row['layer']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--boards", default="alif_e8_hp,corstone_320")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="armgen-matrix-npu-") as tmp:
        results = [measure(b, Path(tmp) / b) for b in a.boards.split(",")]
    (HERE / "operator_matrix_npu.json").write_text(json.dumps({"results": results}, indent=1) + "\n")
    (HERE / "operator_matrix_npu.md").write_text(render(results))
    print(render(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

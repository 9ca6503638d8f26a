"""Instructions per MAC of every operator-matrix row, on the Cortex-M55 and the Cortex-M4.

Run: ``.venv/bin/python benchmarks/operator_matrix_insns.py [--boards qemu_mps3_an547,qemu_mps2_an386]``
(needs a workspace, arm-none-eabi-gcc, qemu-system-arm and a host ``cc``). Writes
``benchmarks/operator_matrix_insns.json`` and ``.md``.

The firmware is the one CI's matrix test runs (``tests/firmware/test_operator_matrix.py``): every row of
``armgen.model.operator_matrix.ROWS`` a branch of one program (``tests/models/operator_matrix.py``), one
``armgen new`` + ``armgen build`` per board. One QEMU run under the instruction-counting plugin
(``benchlib/profile.py``) records every entry into one of ExecuTorch's kernel registration wrappers
(``kernels_to_register::{lambda``, one per registered kernel, entered once per kernel call of the method)
between the two ``armgen_ticks()`` calls that bracket the inference: the instructions from one entry to the
next are that kernel call's (its argument unboxing included). The calls are the program report's placement
rows in execution order (the count must match, or the script stops), so each call has its layer and MACs.

Per row: the instructions of the calls whose layer is the row's branch (the quantize/dequantize at the
branch's edges and the dim-order copies a pass adds carry no layer and are left out), divided by the row's
MACs; for a row without MACs (pools, activations, element-wise), by its output elements.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from math import prod
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
ARMGEN = [str(Path(sys.executable).with_name("armgen"))]
MATRIX_MODEL = ROOT / "tests" / "models" / "operator_matrix.py"
KERNEL_CALL = r"kernels_to_register::\{lambda"
TICKS = r"^armgen_ticks$"


def _armgen(*args: str, cwd: Path | None = None) -> None:
    r = subprocess.run([*ARMGEN, *args], capture_output=True, text=True, cwd=cwd)
    if r.returncode != 0:
        raise SystemExit(f"armgen {' '.join(args)} failed:\n{r.stdout}\n{r.stderr}")


def kernel_call_instructions(elf: Path, board: str) -> list[int]:
    """Instructions of each kernel call of the one inference of ``elf`` on ``board``'s QEMU, in order.

    Raises:
        SystemExit: the ELF has no kernel wrappers or ``armgen_ticks``, or QEMU recorded no inference.
    """
    from benchlib.profile import profile_elf

    entries = profile_elf(elf, board, splits=(KERNEL_CALL, TICKS))["splits"]
    ticks = [i for i, (name, _) in enumerate(entries) if name == "armgen_ticks"]
    windows = list(zip(ticks, ticks[1:], strict=False))
    if not windows:
        raise SystemExit(f"{elf}: armgen_ticks() ran fewer than twice")
    a, b = max(windows, key=lambda w: w[1] - w[0])  # the pair around the method's kernel calls
    marks = [n for _, n in entries[a + 1 : b + 1]]
    return [end - start for start, end in zip(marks, marks[1:], strict=False)]


def measure(board: str, work: Path) -> dict[str, Any]:
    """Build the matrix for ``board`` in ``work`` and count instructions per row (see the module text)."""
    from armgen.model.operator_matrix import ROWS

    _armgen("new", "matrix", "--model", str(MATRIX_MODEL), "--board", board, "--out", str(work))
    project = work / "matrix"
    _armgen("build", cwd=project)
    report = json.loads((project / "model" / "matrix.report.json").read_text())
    placement = report["placement"]
    calls = kernel_call_instructions(project / "build" / "matrix.elf", board)
    if len(calls) != len(placement):
        raise SystemExit(f"{board}: {len(calls)} kernel calls counted, the placement has {len(placement)}")
    rows = []
    for i, r in enumerate(ROWS):
        mine = [(p, n) for p, n in zip(placement, calls, strict=True) if p["layer"].split(".", 1)[0] == r.key]
        insns = sum(n for _, n in mine)
        macs = sum(p["macs"] for p, _ in mine)
        elements = prod(report["outputs"][i]["shape"])
        rows.append({"key": r.key, "layer": r.layer, "kind": r.kind, "kernels": sorted({p["op"] for p, _ in mine}),
                     "instructions": insns, "macs": macs, "output_elements": elements,
                     "per_mac": round(insns / macs, 2) if macs else None,
                     "per_element": round(insns / elements, 1)})
    return {"board": board, "cpu": report["cpu"], "kernel_calls": len(calls), "instructions": sum(calls),
            "rows": rows}


def render(results: list[dict[str, Any]]) -> str:
    """The Markdown table: one line per row, instructions per MAC (or per output element) per board."""
    boards = [f"{r['board']} ({r['cpu']})" for r in results]
    head = "| row | layer | runs as | MACs | " + " | ".join(f"{b}: instructions, per MAC (per output element)"
                                                           for b in boards) + " |"
    lines = ["# Instructions per MAC of the operator matrix's rows", "",
             "Made by `benchmarks/operator_matrix_insns.py` (see its docstring for how calls are counted).",
             "Instructions of the row's own kernel calls (q/dq at the branch edges and dim-order copies "
             "left out), from one QEMU run per board (`-icount shift=0`, plugin-counted). A row without "
             "MACs shows instructions per output element in brackets.", "",
             head, "|" + "---|" * (4 + len(boards))]
    for i, row in enumerate(results[0]["rows"]):
        cells = []
        for r in results:
            x = r["rows"][i]
            ratio = f"{x['per_mac']:.2f}" if x["per_mac"] is not None else f"({x['per_element']:.1f})"
            cells.append(f"{x['instructions']:,}, {ratio}")
        lines.append(f"| {row['key']} | {row['layer']} | {row['kind']} | {row['macs']:,} | " + " | ".join(cells) + " |")
    lines += ["", "Whole program: " + "; ".join(
        f"{r['board']} {r['instructions']:,} instructions in {r['kernel_calls']} kernel calls" for r in results), ""]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--boards", default="qemu_mps3_an547,qemu_mps2_an386")
    a = ap.parse_args()
    t0 = time.monotonic()
    results = []
    with tempfile.TemporaryDirectory(prefix="armgen-matrix-insns-") as tmp:
        for board in a.boards.split(","):
            results.append(measure(board, Path(tmp) / board))
    (HERE / "operator_matrix_insns.json").write_text(json.dumps(
        {"seconds": round(time.monotonic() - t0, 1), "results": results}, indent=1) + "\n")
    (HERE / "operator_matrix_insns.md").write_text(render(results))
    print(render(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

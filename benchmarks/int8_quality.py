"""How far each sample's int8 program is from its float model: max abs error, SNR, top-1 agreement.

Run: ``ARMGEN_MLPERF_DIR=... .venv/bin/python benchmarks/int8_quality.py [--targets cortex-m55,cortex-m4]``.
Each sample is compiled with its trained MLPerf Tiny weights and calibrated with its own generator
(8 synthetic inputs, no ``--calibration``); the figures are the program report's ``quality``: the
quantized program (Cortex-M: the lowered program run on the host with the ``cortex_m::`` kernels,
bit-exact with the firmware) against the float model on those 8 inputs (:mod:`armgen.model.quality`).
Writes ``benchmarks/int8_quality.json`` and ``benchmarks/int8_quality.md``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from armgen.model.compile import compile_model


def _row(sample: str, target: str, out: Path) -> dict[str, object]:
    res = compile_model(sample, target, out_dir=out / f"{sample}-{target}")
    (q,) = res.report.quality
    return {"sample": sample, "target": target, "untrained": res.report.untrained_weights,
            "calibration_samples": res.report.calibration_samples, **q}


def _markdown(rows: list[dict[str, object]]) -> str:
    lines = ["# int8 against float (benchmarks/int8_quality.py)", "",
             "Trained MLPerf Tiny weights; calibrated with each sample's 8 synthetic inputs; figures over "
             "those 8 inputs (the program report's `quality`).", "",
             "| sample | target | max abs error | SNR (dB) | top-1 agreement |", "|---|---|---|---|---|"]
    for r in rows:
        top1 = "-" if r["top1_agreement"] is None else f"{float(r['top1_agreement']) * 100:.0f} %"  # type: ignore[arg-type]
        lines.append(f"| {r['sample']} | {r['target']} | {float(r['max_abs_error']):.4g} | "  # type: ignore[arg-type]
                     f"{float(r['snr_db']):.1f} | {top1} |")  # type: ignore[arg-type]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--targets", default="cortex-m55,cortex-m4")
    ap.add_argument("--samples", default="kws,vww,ic,ad")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for target in args.targets.split(","):
            for sample in args.samples.split(","):
                rows.append(_row(sample, target, Path(tmp)))
                print(rows[-1], flush=True)
    here = Path(__file__).parent
    (here / "int8_quality.json").write_text(json.dumps(rows, indent=2, sort_keys=True) + "\n")
    (here / "int8_quality.md").write_text(_markdown(rows))


if __name__ == "__main__":
    main()

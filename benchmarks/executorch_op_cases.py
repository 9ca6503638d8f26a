"""ExecuTorch's own Cortex-M operator cases, run in firmware by armgen: an external check of the matrix.

Run: ``.venv/bin/python benchmarks/executorch_op_cases.py [--boards qemu_mps3_an547,qemu_mps2_an386]``
(needs a workspace, arm-none-eabi-gcc and qemu-system-arm). Writes ``benchmarks/executorch_op_cases.json``
and ``.md``.

The cases are read at run time from the installed executorch wheel (the pinned 1.5.1):
``executorch/backends/cortex_m/test/ops/test_*.py``, every ``McuTestCase`` that a ``test_implementation*``
function is parametrized with (upstream runs those on an FVP), with upstream's expectation from the
same ``parametrize`` (``xfails``: "xfail: reason"). Nothing is copied into this repository.

Each case gets one verdict per board:

* ``refused``: armgen refuses the model in one line (an operator outside the operator matrix, a layer
  it cannot run): the message is the verdict's detail;
* ``not run``: the case has inputs armgen's firmware harness does not feed (not floating point);
* otherwise the case is a branch of one program per board (its own inputs, its own outputs; the same
  construction as ``tests/models/operator_matrix.py``), run on QEMU against the host reference: the
  largest difference of its outputs in LSB (``ok`` within 1; ``wrong`` beyond), ``flagged`` where
  ``armgen run`` calls an output degenerate (every value at the int8 limits, or constant).

A case that makes the whole program fail to compile is found by compiling the cases one by one and is
reported ``compile error`` with armgen's one line; a program that stops on the device (an ExecuTorch
error) is split into one program per upstream test file, and a file that stops into one per case:
``program stopped`` with armgen's line.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ARMGEN = [str(Path(sys.executable).with_name("armgen"))]  # the entry point beside this Python
CASES_DIR = ROOT / "tests" / "models"  # executorch_cases.py: the reader of upstream's case tables
sys.path.insert(0, str(CASES_DIR))

from executorch_cases import Case, upstream_cases  # noqa: E402


def _float_inputs(case: Case) -> bool:
    return all(isinstance(t, torch.Tensor) and t.is_floating_point() for t in case.inputs)


def _screen(case: Case) -> str | None:
    """Why ``case`` is not put in the program, found in-process in a second: inputs armgen does not feed,
    a forward that fails in PyTorch itself, or armgen's refusal of an operator (the same check as
    ``armgen new``); None for a case to run."""
    from armgen.errors import ArmgenError
    from armgen.model.layer_support import check_layers, check_operators

    if not _float_inputs(case):
        return "inputs are not floating point"
    model = copy.deepcopy(case.model).eval()
    try:
        with torch.no_grad():
            model(*case.inputs)
    except Exception as exc:  # noqa: BLE001 - whatever the case raises
        return f"its forward fails in PyTorch: {str(exc).splitlines()[0]}"
    try:
        check_layers(model, case.name)
        check_operators(torch.export.export(model, case.inputs, strict=False), case.name)
    except ArmgenError as exc:
        return exc.message
    except Exception as exc:  # noqa: BLE001 - torch.export's many errors
        return f"torch.export fails: {str(exc).splitlines()[0]}"
    return None


def _model_file(folder: Path, names: list[str]) -> Path:
    """A model file armgen loads: the named cases as one :class:`CasesModel`."""
    path = folder / "cases_model.py"
    path.write_text(
        f"import sys\nsys.path.insert(0, {str(CASES_DIR)!r})\n"
        "from executorch_cases import CasesModel, upstream_cases\n"
        f"_names = {names!r}\n"
        "_cases = [c for c in upstream_cases() if c.name in _names]\n"
        "model = CasesModel(_cases).eval()\n"
        "example_inputs = tuple(t for c in _cases for t in c.inputs)\n"
    )
    return path


def _armgen(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ARMGEN, *args], capture_output=True, text=True, check=False)


def _error(res: subprocess.CompletedProcess[str]) -> str:
    """armgen's one error line (without its prefix), else the last line it printed."""
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("armgen: error:")]
    if lines:
        return lines[0].removeprefix("armgen: error: ")
    tail = res.stderr.strip().splitlines()
    return tail[-1] if tail else "?"


def _check_alone(case: Case, folder: Path, target: str) -> str | None:
    """armgen's one line if it refuses or fails to compile ``case`` alone, else None."""
    res = _armgen("compile", str(_model_file(folder, [case.name])), "--target", target, "-o", str(folder / "out"))
    return None if res.returncode == 0 else _error(res)


def _run_program(cases: list[Case], board: str, target: str, folder: Path) -> dict[str, dict[str, Any]]:
    """Verdicts of ``cases`` run as one program on ``board`` (``folder`` is made); cases that fail to
    compile alone are dropped first (refused, compile error)."""
    verdicts: dict[str, dict[str, Any]] = {}
    runnable = list(cases)
    folder.mkdir(parents=True, exist_ok=True)
    while runnable:
        made = _armgen("new", "cases", "--model", str(_model_file(folder, [c.name for c in runnable])),
                       "--board", board, "--out", str(folder), "--force")
        if made.returncode == 0:
            break
        named = re.search(r"layer 'c(\d{3})", _error(made))
        if named:  # armgen named the branch (a refusal after lowering): that case alone
            case = runnable.pop(int(named.group(1)))
            verdicts[case.name] = {"verdict": "refused",  # no machine path in the committed table
                                   "detail": _error(made).replace(str(folder / "cases_model.py"), "cases_model.py")}
            continue
        print(f"{folder.name}: {len(runnable)} cases together: {_error(made)}; compiling them one by one",
              file=sys.stderr)
        dropped = False
        for c in list(runnable):
            why = _check_alone(c, folder, target)
            if why is not None:
                kind = "refused" if "operator matrix" in why or "cannot run" in why else "compile error"
                verdicts[c.name] = {"verdict": kind, "detail": why}
                runnable.remove(c)
                dropped = True
        if not dropped:
            for c in runnable:
                verdicts[c.name] = {"verdict": "compile error", "detail": f"only together: {_error(made)}"}
            return verdicts
    if not runnable:
        return verdicts
    ran = _armgen("run", str(folder / "cases"), "--json")
    report = json.loads(ran.stdout) if ran.stdout.strip().startswith("{") else None
    if report is None:  # the firmware stopped: no outputs
        for c in runnable:
            verdicts[c.name] = {"verdict": "program stopped", "detail": _error(ran)}
        return verdicts
    flags: dict[int, str] = {}
    for f in report.get("findings", []):
        if f["severity"] == "error" and f["subject"].startswith("output "):
            flags.setdefault(int(f["subject"].split()[1]), f["message"])
    index = 0
    for c in runnable:
        with torch.no_grad():
            y = copy.deepcopy(c.model).eval()(*c.inputs)
        n = len(y) if isinstance(y, (tuple, list)) else 1
        outs = report["outputs"][index:index + n]
        lsb = max(o["max_lsb_diff"] for o in outs)
        flagged = [flags[i] for i in range(index, index + n) if i in flags]
        verdict = "wrong" if lsb > 1 else "flagged" if flagged else "ok"
        verdicts[c.name] = {"verdict": verdict, "lsb": lsb, **({"detail": flagged[0]} if flagged else {})}
        index += n
    return verdicts


def run_board(cases: list[Case], board: str, target: str, work: Path) -> dict[str, dict[str, Any]]:
    """``{case name: verdict}`` for ``board`` (see the module): screened, then one program; if that program
    stops on the device, one program per upstream test file, then one per case of a file that stopped."""
    verdicts: dict[str, dict[str, Any]] = {}
    runnable = []
    for c in cases:
        why = _screen(c)
        if why is not None:
            verdicts[c.name] = {"verdict": "refused" if "operator matrix" in why else "not run", "detail": why}
        else:
            runnable.append(c)
    result = _run_program(runnable, board, target, work / board / "all")
    stopped = [c for c in runnable if result[c.name]["verdict"] == "program stopped"]
    if stopped:
        result = {k: v for k, v in result.items() if v["verdict"] != "program stopped"}
        files = sorted({c.name.split(".")[0] for c in stopped})
        for f in files:
            group = [c for c in stopped if c.name.split(".")[0] == f]
            got = _run_program(group, board, target, work / board / f)
            if any(v["verdict"] == "program stopped" for v in got.values()) and len(group) > 1:
                for c in group:
                    got.update(_run_program([c], board, target, work / board / f"{f}-{c.name.split('.')[1]}"))
            result.update(got)
    verdicts.update(result)
    return verdicts


def _markdown(cases: list[Case], boards: list[str], results: dict[str, dict[str, dict[str, Any]]],
              seconds: float) -> str:
    def cell(v: dict[str, Any]) -> str:
        if "lsb" in v:
            return f"{v['verdict']} ({v['lsb']:g} LSB)" + (f": {v['detail']}" if "detail" in v else "")
        return f"{v['verdict']}: {v['detail']}"

    lines = ["# ExecuTorch's Cortex-M operator cases in armgen's firmware (benchmarks/executorch_op_cases.py)", "",
             f"{len(cases)} cases of the installed executorch's `backends/cortex_m/test/ops` (`test_implementation*`), "
             f"run as branches of one program per board on QEMU against the host reference; {seconds:.0f} s.", "",
             *[f"- {b}: " + ", ".join(f"{n} {v}" for v, n in sorted(Counter(results[b][c.name]["verdict"]
                                                                              for c in cases).items()))
               for b in boards], "",
             "| case | upstream | " + " | ".join(boards) + " |", "|---|---|" + "---|" * len(boards)]
    for c in cases:
        lines.append(f"| {c.name} | {c.expectation} | " + " | ".join(cell(results[b][c.name]) for b in boards) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", default="qemu_mps3_an547,qemu_mps2_an386")
    parser.add_argument("--out", type=Path, default=HERE)
    parser.add_argument("--work", type=Path, help="keep the projects here (default: a temporary folder)")
    args = parser.parse_args()
    targets = {"qemu_mps3_an547": "cortex-m55", "qemu_mps2_an386": "cortex-m4"}
    boards = args.boards.split(",")
    start = time.monotonic()
    cases = upstream_cases()
    results: dict[str, dict[str, dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="armgen-et-cases-") as tmp:
        for board in boards:
            results[board] = run_board(cases, board, targets[board], args.work or Path(tmp))
    seconds = time.monotonic() - start
    (args.out / "executorch_op_cases.json").write_text(json.dumps(
        {"boards": boards, "seconds": round(seconds), "cases": [
            {"case": c.name, "upstream": c.expectation, **{b: results[b][c.name] for b in boards}} for c in cases]},
        indent=1) + "\n")
    (args.out / "executorch_op_cases.md").write_text(_markdown(cases, boards, results, seconds))
    print(f"{len(cases)} cases on {', '.join(boards)} in {seconds:.0f} s: {args.out / 'executorch_op_cases.md'}")


if __name__ == "__main__":
    main()

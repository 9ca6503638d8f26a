"""ExecuTorch's own Cortex-M operator cases, read from the installed executorch wheel (the pinned 1.5.1):
``executorch/backends/cortex_m/test/ops/test_*.py``, every ``McuTestCase`` a ``test_implementation*``
function is parametrized with, with upstream's expectation from the same ``parametrize``. Nothing is
copied into this repository. Used by ``benchmarks/executorch_op_cases.py`` (all of them) and by
``tests/models/operator_matrix_ci.py`` (the part CI runs in the matrix firmware).
"""

from __future__ import annotations

import copy
import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn


@dataclass
class Case:
    """One upstream case: ``module.case`` with its model, inputs and upstream's expectation."""

    name: str
    model: nn.Module
    inputs: tuple[Any, ...]
    expectation: str


def upstream_cases(files: set[str] | None = None) -> list[Case]:
    """Every case a ``test_implementation*`` function of the installed ``backends/cortex_m/test/ops`` runs;
    with ``files`` (``{"transpose", "add"}``: upstream's ``test_<file>.py``), only those files' (importing
    all of them takes about 7 s)."""
    import executorch.backends.cortex_m.test.ops as ops

    cases: dict[str, Case] = {}
    for info in sorted(pkgutil.iter_modules(ops.__path__), key=lambda i: i.name):
        if not info.name.startswith("test_") or (files is not None and info.name[5:] not in files):
            continue
        module = importlib.import_module(f"{ops.__name__}.{info.name}")
        for fn_name, fn in sorted(vars(module).items()):
            if not fn_name.startswith("test_implementation") or not callable(fn):
                continue
            for mark in getattr(fn, "pytestmark", []):
                if mark.name != "parametrize":
                    continue
                for param in mark.args[1]:
                    case = param.values[0] if hasattr(param, "values") else param
                    if not hasattr(case, "model") or not hasattr(case, "example_inputs"):
                        continue
                    inputs = case.get_example_inputs() if hasattr(case, "get_example_inputs") else case.example_inputs
                    xfail = [m for m in getattr(param, "marks", ()) if m.name in ("xfail", "skip")]
                    expectation = f"{xfail[0].name}: {xfail[0].kwargs.get('reason', '')}" if xfail else "pass"
                    name = f"{info.name[5:]}.{getattr(param, 'id', None) or len(cases)}"
                    cases.setdefault(name, Case(name, case.model, tuple(inputs), expectation))
    return list(cases.values())


class CasesModel(nn.Module):
    """The cases as branches: inputs side by side, outputs flattened, in case order."""

    def __init__(self, cases: list[Case]) -> None:
        super().__init__()
        self.arity = [len(c.inputs) for c in cases]
        for i, c in enumerate(cases):  # a copy each: upstream reuses one module instance in several cases
            self.add_module(f"c{i:03d}", copy.deepcopy(c.model))

    def forward(self, *xs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        outs: list[torch.Tensor] = []
        i = 0
        for (_name, branch), n in zip(self.named_children(), self.arity, strict=True):
            y = branch(*xs[i:i + n])
            outs.extend(y if isinstance(y, (tuple, list)) else [y])
            i += n
        return tuple(outs)

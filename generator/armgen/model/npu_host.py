"""An Ethos-U program run on the host: its delegated partitions in the TOSA reference model, its CPU
ops with the host reference kernels, in program order.

QEMU has no Ethos-U model and there is no FVP here, so this is how far the NPU half of a program can
be checked on this machine, with the tools ExecuTorch's own Arm backend tests its lowering with
(``executorch/backends/arm/test/runner_utils.py``: ``run_tosa_graph``, ``TosaReferenceModelDispatch``;
executorch 1.5.1):

- the compile stage sets the Ethos-U compile spec's ``dump_intermediate_artifacts_to``, so
  ``TOSABackend._preprocess`` writes the very TOSA flatbuffer of every delegated partition that it
  hands to Vela (``output_<tag>_<spec>.tosa``, ``backends/arm/tosa/backend.py``);
  :func:`delegate_tosa` pairs each with its ``executorch_call_delegate`` node through the partition's
  ``delegation_tag`` and the compile stage saves them as ``<name>.delegate<i>.tosa``, ``i`` the
  delegate's place in the program (the ``.pte``'s delegate order);
- it also saves the lowered edge program (the delegates' Vela blobs and the CPU ops outside them,
  e.g. ``cortex_m::quantize_per_tensor`` or a portable op the partitioner rejected) as
  ``<name>.host.pt2`` and the float model as ``<name>.float.pt2``;
- :func:`run_host_program` runs that edge program: every ``executorch_call_delegate`` is answered by
  ``run_tosa_graph`` on the delegate's saved TOSA (the ``tosa_reference_model`` package), every other
  node by its host kernel (aten, and the ``cortex_m::`` ops' host implementations).

What this does not run: the command stream Vela made from the TOSA, the Ethos-U driver, caches and
memory placement on a board. Vela's lowering of TOSA to NPU commands is trusted here.
"""

from __future__ import annotations

import copy
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from armgen.errors import ModelError
from armgen.model.program_report import ProgramReport
from armgen.model.tensors import dequantize, with_dim_order

#: Roles in ``ProgramReport.files`` (values: file names beside the report).
HOST_PROGRAM_ROLE = "host_program"
FLOAT_PROGRAM_ROLE = "float_program"
TOSA_ROLE = "delegate{index}_tosa"


@dataclass(frozen=True)
class HostArtifacts:
    """What the host check of an Ethos-U program needs, from the compile stage: the lowered edge
    program (delegates and CPU ops) and each delegate's TOSA graph (program order). The float model is
    the compile stage's ``float_program`` (saved for every target)."""

    program: Any
    tosa: tuple[bytes, ...]


def drop_intermediate_path(exported_program: Any) -> None:
    """Remove the ``debug_artifact_path`` compile spec (the temporary folder given to
    ``dump_intermediate_artifacts_to``) from every delegate: ``ArmCompileSpec._to_list`` serializes it
    into the delegate's compile specs, so the ``.pte`` would carry a host path and differ from compile to
    compile. The Cortex-M Ethos-U runtime ignores the compile specs
    (``backends/arm/runtime/EthosUBackend_Cortex_M.cpp``: ``platform_init``)."""
    from executorch.backends.arm.common.arm_compile_spec import ArmCompileSpec

    for lowered in delegate_modules(exported_program):
        lowered._compile_specs = [c for c in lowered.compile_specs if c.key != ArmCompileSpec._DEBUG_ARTIFACT_KEY]


def host_artifacts(edge: Any, artifacts: Path, rejected: dict[str, str] | None = None) -> HostArtifacts:
    """Keep the lowered Ethos-U edge program (a copy: ``to_executorch`` rewrites it) and the TOSA graphs
    the lowering wrote into ``artifacts``. ``rejected``: the partitioner's reason per node it left on the
    CPU (:func:`armgen.model.vela.reporting_partitioner`), named when nothing was delegated.

    Raises:
        ModelError: the program has no delegate (the NPU takes none of its ops: the message names them
            with the partitioner's reasons), or a delegate's TOSA graph was not written.
    """
    drop_intermediate_path(edge.exported_program())
    program = copy.deepcopy(edge.exported_program())
    if not delegate_modules(program):
        reasons = sorted(rejected.items()) if rejected else []
        why = "; ".join(f"{node}: {reason}" for node, reason in reasons[:3])
        more = f" (+{len(reasons) - 3} more)" if len(reasons) > 3 else ""
        raise ModelError(
            "the Ethos-U partitioner delegated none of the model's operators: nothing would run on the NPU"
            + (f" ({why}{more})" if why else ""),
            hint="compile for the Cortex-M (--target cortex-m55, or armgen new --backend cortex-m)",
        )
    return HostArtifacts(program, tuple(delegate_tosa(program, artifacts)))


def write_host_artifacts(folder: Path, files: dict[str, str], npu: HostArtifacts, target: str) -> None:
    """The lowered Ethos-U program and its delegates' TOSA graphs into ``folder``, under the names
    ``files`` gives their roles (:data:`HOST_PROGRAM_ROLE`, :data:`TOSA_ROLE`).

    Raises:
        ModelError: a program cannot be serialized. OSError: the folder cannot be written.
    """
    from armgen.model.lowered_program import save_lowered_program, strip_volatile_meta

    for i, graph in enumerate(npu.tosa):
        (folder / files[TOSA_ROLE.format(index=i)]).write_bytes(graph)
    strip_volatile_meta(npu.program)
    # The program only runs: its stack traces (host paths) and module stacks (a user model's module is
    # imported under a per-process name) would make the file differ from compile to compile.
    graphs = [npu.program.graph_module.graph]
    graphs += [m.original_module.graph_module.graph for m in delegate_modules(npu.program)]
    for graph in graphs:
        for node in graph.nodes:
            for key in ("stack_trace", "nn_module_stack", "source_fn_stack"):
                node.meta.pop(key, None)
    try:
        save_lowered_program(npu.program, folder / files[HOST_PROGRAM_ROLE])
    except OSError:
        raise
    except Exception as exc:  # noqa: BLE001 - the serializers raise their own types
        raise ModelError(f"cannot save the {target} program for the host check: {type(exc).__name__}: {exc}") from exc


def tosa_roles(report: ProgramReport) -> list[str]:
    """The ``files`` roles of the delegates' TOSA graphs, in delegate order (``delegate0_tosa``, ...)."""
    roles: list[str] = []
    while TOSA_ROLE.format(index=len(roles)) in report.files:
        roles.append(TOSA_ROLE.format(index=len(roles)))
    return roles


def delegate_modules(exported_program: Any) -> list[Any]:
    """The ``LoweredBackendModule`` of every ``executorch_call_delegate`` node, in graph (program) order."""
    import torch

    gm = exported_program.graph_module
    out = []
    for node in exported_program.graph.nodes:
        if node.op == "call_function" and node.target is torch.ops.higher_order.executorch_call_delegate:
            out.append(getattr(gm, node.args[0].target))
    return out


def _delegation_tag(lowered: Any) -> str:
    for node in lowered.original_module.graph.nodes:
        tag = node.meta.get("delegation_tag")
        if tag:
            return str(tag)
    return ""


def delegate_tosa(exported_program: Any, artifact_dir: Path) -> list[bytes]:
    """The TOSA flatbuffer that was handed to Vela for each delegate of ``exported_program``, in
    program order, read from ``artifact_dir`` (the compile spec's ``dump_intermediate_artifacts_to``;
    ``TOSABackend._preprocess`` names each file ``output_<delegation tag>_<TOSA spec>.tosa``).

    Raises:
        ModelError: a delegate whose TOSA file is missing (or matched twice).
    """
    files = sorted(Path(artifact_dir).glob("output_*.tosa"))
    out = []
    for i, lowered in enumerate(delegate_modules(exported_program)):
        tag = _delegation_tag(lowered)
        hits = [f for f in files if tag and f.name.startswith(f"output_{tag}_")]
        if len(hits) != 1:
            raise ModelError(f"the TOSA graph of delegate {i} (partition '{tag}') was not written by the lowering")
        out.append(hits[0].read_bytes())
    return out


#: The child process that runs one TOSA graph in the reference model (``tosa_reference_model.run``, as
#: ExecuTorch's ``run_tosa_graph`` calls it). A malformed flatbuffer crashes the reference model
#: (measured: SIGSEGV on a truncated graph), so it runs apart from armgen; it also keeps what the C++
#: code prints on stdout out of armgen's own output. Arguments: a folder with graph.tosa and in.npz
#: (arg0, arg1, ...); it writes out.npz (status, out0, out1, ...).
_CHILD = """
import sys, numpy as np, tosa_reference_model as rm
d = sys.argv[1]
with np.load(d + "/in.npz") as z:
    ins = [z["arg%d" % i] for i in range(len(z.files))]
with open(d + "/graph.tosa", "rb") as f:
    graph = f.read()
outs, status = rm.run(graph, ins, verbosity="NONE", initialize_variable_tensor_from_numpy=True)
np.savez(d + "/out.npz", status=np.array(status.name), **{"out%d" % i: o for i, o in enumerate(outs)})
"""


def run_tosa_graph_apart(
    graph: bytes, inputs: Sequence[np.ndarray], what: str, timeout: float = 600.0
) -> list[np.ndarray]:
    """Run one TOSA graph in the reference model in a child process (see :data:`_CHILD`).

    Args:
        inputs: numpy arrays in the graph's input order and layout (NHWC for channels_last tensors:
            ExecuTorch's ``runner_utils.torch_tensor_to_numpy``).
        what: names the graph in errors (``delegate 0 (kws.delegate0.tosa)``).

    Returns:
        The graph's outputs (numpy, the graph's layout).

    Raises:
        ModelError: the reference model refuses the graph (status not ``TOSA_VALID``), crashes on it, or
            fails (one line each, with the child's last line of output).
    """
    with tempfile.TemporaryDirectory(prefix="armgen-tosa-run-") as tmp:
        Path(tmp, "graph.tosa").write_bytes(graph)
        np.savez(Path(tmp, "in.npz"), **{f"arg{i}": np.ascontiguousarray(a) for i, a in enumerate(inputs)})
        try:
            proc = subprocess.run([sys.executable, "-c", _CHILD, tmp], capture_output=True, text=True,
                                  timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise ModelError(f"the TOSA reference model did not finish {what} within {timeout:g} s") from None
        said = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        last = said[-1][:300] if said else ""
        if proc.returncode < 0:
            sig = signal.Signals(-proc.returncode).name
            raise ModelError(f"the TOSA reference model crashed ({sig}) on {what}: the graph is malformed "
                             "or not one it accepts")
        if proc.returncode != 0:
            raise ModelError(f"the TOSA reference model failed on {what}: {last}")
        with np.load(Path(tmp, "out.npz")) as z:
            status = str(z["status"])
            outs = [z[f"out{i}"] for i in range(len(z.files) - 1)]
    if status != "TOSA_VALID":
        raise ModelError(f"the TOSA reference model refused {what}: graph status {status}")
    return outs


def _tosa_dispatch(graphs: Sequence[bytes], names: Sequence[str]) -> Any:
    """A ``TorchFunctionMode`` that answers the k-th ``executorch_call_delegate`` with ``graphs[k]`` in
    the TOSA reference model and runs everything else as it is: ExecuTorch's
    ``TosaReferenceModelDispatch`` with the delegate's saved TOSA graph instead of its processed bytes
    (an Ethos-U delegate's are Vela's), the tensors converted as its ``run_tosa_graph`` does."""
    import torch
    from executorch.backends.arm.test.runner_utils import numpy_to_torch_tensor, torch_tensor_to_numpy
    from torch.overrides import TorchFunctionMode

    class TosaDispatch(TorchFunctionMode):
        calls = 0

        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            if func is not torch._higher_order_ops.executorch_call_delegate:
                return func(*args, **(kwargs or {}))
            k, lowered = self.calls, args[0]
            self.calls += 1
            if k >= len(graphs):
                raise ModelError(f"the program calls more delegates than the {len(graphs)} TOSA graphs saved")
            outs = run_tosa_graph_apart(graphs[k], [torch_tensor_to_numpy(t) for t in args[1:]],
                                        f"delegate {k} ({names[k]})")
            nodes = lowered.original_module.graph.output_node().args[0]
            if len(outs) != len(nodes):
                raise ModelError(f"delegate {k} ({names[k]}) gave {len(outs)} outputs, the program wants {len(nodes)}")
            return tuple(numpy_to_torch_tensor(a, n) for a, n in zip(outs, nodes, strict=True))

    return TosaDispatch()


def _artifact(report_dir: Path, report: ProgramReport, role: str) -> Path:
    name = report.files.get(role)
    if not name:
        raise ModelError(
            f"the program report names no {role.replace('_', ' ')} (compiled by an armgen without the "
            "TOSA host check)",
            hint="recompile the model (armgen compile, or armgen new --force)",
        )
    path = Path(report_dir) / name
    if not path.is_file():
        raise ModelError(f"{path}: not found")
    return path


def host_program_files(report: ProgramReport, report_dir: Path) -> tuple[Path, list[Path]]:
    """The saved lowered edge program and the delegates' TOSA files, in delegate order.

    Raises:
        ModelError: the report names none of them, a file is missing, or the TOSA count differs from
            the program's delegate count.
    """
    program = _artifact(report_dir, report, HOST_PROGRAM_ROLE)
    tosa = [_artifact(report_dir, report, role) for role in tosa_roles(report)]
    if len(tosa) != len(report.delegates):
        raise ModelError(f"{len(tosa)} TOSA graphs saved for the program's {len(report.delegates)} delegates")
    return program, tosa


def run_host_program(
    report: ProgramReport, report_dir: Path, inputs: Sequence[np.ndarray]
) -> tuple[np.ndarray, ...]:
    """Run the whole Ethos-U program on the host (see the module docstring) on its own inputs.

    Args:
        inputs: the program's inputs in its dtype (int8 for quantized I/O), logical order.

    Returns:
        One array per program output (the program's dtype, logical order).

    Raises:
        ModelError: the saved files are missing, the TOSA reference model refuses or fails on a
            delegate's graph, or a CPU op fails on the host.
    """
    import torch

    from armgen.model.lowered_program import exact_integer_convolution, load_lowered_program

    path, tosa_files = host_program_files(report, report_dir)
    try:
        program = load_lowered_program(path)
    except Exception as exc:  # noqa: BLE001 - the deserializer raises many types
        raise ModelError(f"cannot load {path}: {type(exc).__name__}: {exc}") from None
    args = [with_dim_order(torch.from_numpy(np.ascontiguousarray(a)), t.dim_order)
            for a, t in zip(inputs, report.inputs, strict=True)]
    dispatch = _tosa_dispatch([f.read_bytes() for f in tosa_files], [f.name for f in tosa_files])
    try:
        with torch.no_grad(), exact_integer_convolution(), dispatch:
            out = program.module()(*args)
    except ModelError:
        raise
    except Exception as exc:  # noqa: BLE001 - a CPU op failing on the host
        raise ModelError(f"running {path.name} on the host failed: {type(exc).__name__}: {exc}") from None
    if dispatch.calls != len(tosa_files):
        raise ModelError(f"the program called {dispatch.calls} delegates, {len(tosa_files)} TOSA graphs were saved")
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return tuple(np.asarray(o.detach().contiguous().numpy()) for o in outs)


def float_model_outputs(
    report: ProgramReport, report_dir: Path, float_inputs: Sequence[np.ndarray]
) -> tuple[np.ndarray, ...]:
    """The float model (the compile stage's ``float_program``, ``<name>.float.pt2``: the ``torch.export``
    program of the model the Ethos-U program was quantized from) on float inputs (logical order).

    Raises:
        ModelError: no saved float program, or it cannot be loaded or run.
    """
    import torch

    path = _artifact(report_dir, report, FLOAT_PROGRAM_ROLE)
    try:
        program = torch.export.load(str(path))
        with torch.no_grad():
            out = program.module()(*[torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)) for x in float_inputs])
    except Exception as exc:  # noqa: BLE001 - load/run failures are one line for the user
        raise ModelError(f"cannot run the float program {path}: {type(exc).__name__}: {exc}") from None
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return tuple(np.asarray(o.detach().numpy(), dtype=np.float32) for o in outs)


def dequantized_inputs(report: ProgramReport, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Program inputs (int8) as the float values they stand for (``(q - zero_point) * scale``)."""
    return [dequantize(a, t.scale, t.zero_point).astype(np.float32) if t.scale is not None else
            np.asarray(a, dtype=np.float32) for a, t in zip(inputs, report.inputs, strict=True)]


__all__ = [
    "FLOAT_PROGRAM_ROLE",
    "HOST_PROGRAM_ROLE",
    "HostArtifacts",
    "TOSA_ROLE",
    "delegate_modules",
    "delegate_tosa",
    "dequantized_inputs",
    "float_model_outputs",
    "host_artifacts",
    "host_program_files",
    "run_host_program",
    "run_tosa_graph_apart",
    "tosa_roles",
    "write_host_artifacts",
]

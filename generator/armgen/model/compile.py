"""The compile stage: model -> int8 ExecuTorch program (``.pte``) + :class:`ProgramReport`.

Flow (each step is ExecuTorch's / PyTorch's own API, wrapped):

1. Model source (:mod:`armgen.model.model_source`): sample, ``.py``, ``.pt2``.
2. ``torch.export`` of the float model; post-training int8 quantization with PT2E
   (``prepare_pt2e`` -> calibration -> ``convert_pt2e``) using the target's quantizer:
   ``CortexMQuantizer`` for Cortex-M, ``EthosUQuantizer`` for Ethos-U.
3. Lowering:

   * Cortex-M (CMSIS-NN kernels): ``to_edge_transform_and_lower`` with
     ``cortex_m_edge_compile_config()``, then ``CortexMPassManager`` with the
     ``CortexMTargetConfig`` of the CPU (it also plans the CMSIS-NN scratch buffers per CPU).
     4-D inputs are channels_last, as upstream's ``aot_arm_compiler`` does.
   * Ethos-U (Vela): ``to_edge_transform_and_lower`` with ``EthosUPartitioner`` and an
     ``EthosUCompileSpec`` (accelerator config, Vela system config and memory mode); quantize/
     dequantize left outside the delegate become ``cortex_m::`` ops (``ReplaceQuantNodesPass``),
     as upstream does.

   The boundary quantize/dequantize are removed with ExecuTorch's ``QuantizeInputs`` /
   ``QuantizeOutputs`` so the program takes and returns int8 tensors; their scale and zero
   point are recorded in the report (the firmware quantizes its float input with them).
4. ``to_executorch()`` with ExecuTorch's default memory planning (for Cortex-M, armgen's
   :mod:`armgen.model.passes.before_planning` rewrites the specs just before it, and
   :mod:`armgen.model.compact_program` shares equal constant arguments in the emitted program);
   the ``.pte`` is read back
   (:mod:`armgen.model.inspect_program`) to fill the report, which fails when a non-delegated
   operator has no kernel in the libraries armgen links.

Which graph passes run at each step, and in what order: :mod:`armgen.model.passes.order` (this
module runs its lists). Vela's compile spec and summary: :mod:`armgen.model.vela`.

Outputs in ``out_dir`` (written to a temporary folder first, then moved in):
``<name>.pte``, ``<name>.report.json``, ``<name>.pt2`` (the quantized ``torch.export``
program), ``<name>.reference.npz`` (``input_<i>``/``output_<i>``, see :data:`REFERENCE_KINDS`),
for Cortex-M ``<name>.lowered.pt2`` (the lowered edge program, see :mod:`armgen.model.lowered_program`)
and, for Ethos-U, ``<name>.vela.txt`` (Vela's summary), ``<name>.delegate<i>.tosa`` (each delegate's TOSA
graph as handed to Vela), ``<name>.host.pt2`` (the lowered edge program with the delegates) and
``<name>.float.pt2`` (the float model), which :mod:`armgen.model.npu_host` runs on the host.

The reference outputs of a Cortex-M program come from the lowered edge program (after the
Cortex-M passes) run on the host with the ``cortex_m::`` ops' host implementations
(``executorch/backends/cortex_m/ops/operators.py``), on the very int8 input the firmware gets:
they follow CMSIS-NN's integer arithmetic, which the quantized model before lowering does not
(measured: up to 7 LSB apart on kws). An Ethos-U program's reference is the quantized model's
(``EthosUQuantizer``); :mod:`armgen.model.npu_host` runs the program itself on the host (delegates in
the TOSA reference model) to compare with it.
"""

from __future__ import annotations

import copy
import dataclasses
import io
import logging
import re
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from armgen.errors import ArmgenError, ModelError, ProgramError
from armgen.model import npu_host, vela
from armgen.model.compile_outputs import as_arrays as _as_arrays
from armgen.model.compile_outputs import looks_like_classifier as _looks_like_classifier
from armgen.model.compile_outputs import one_line as _one_line
from armgen.model.compile_outputs import quality as _quality
from armgen.model.compile_outputs import quiet as _quiet
from armgen.model.compile_outputs import reference_arrays as _reference_arrays
from armgen.model.inspect_program import IoQuantization, ProgramExtras, report_from_pte_bytes
from armgen.model.layer_support import check_kernel_limits, check_layers, check_operators
from armgen.model.lowered_program import save_lowered_program, strip_volatile_meta
from armgen.model.model_source import ModelSource, load_calibration, resolve_model, run_forward
from armgen.model.placement import cpu_reasons, float_fallback_warnings, layers_of
from armgen.model.program_report import ProgramReport, VelaInfo
from armgen.model.quality import format_quality
from armgen.model.vela import parse_vela_summary  # part of this module's API (__all__)

log = logging.getLogger(__name__)

#: Cortex-M CPUs ExecuTorch's ``CortexMTargetConfig`` knows (``backends/cortex_m/target_config.py``).
CORTEX_M_TARGETS = (
    "cortex-m0", "cortex-m0plus", "cortex-m3", "cortex-m4", "cortex-m7", "cortex-m23",
    "cortex-m33", "cortex-m35p", "cortex-m55", "cortex-m85",
)
#: Ethos-U accelerator configs, as in upstream's ``backends/arm/scripts/aot_arm_compiler.py``.
ETHOS_U_TARGETS = (
    "ethos-u55-32", "ethos-u55-64", "ethos-u55-128", "ethos-u55-256",
    "ethos-u65-256", "ethos-u65-512",
    "ethos-u85-128", "ethos-u85-256", "ethos-u85-512", "ethos-u85-1024", "ethos-u85-2048",
)
DEFAULT_ETHOS_U_CPU = "cortex-m55"
#: What the reference ``.npz``'s outputs come from (its ``reference_kind`` entry):
#: ``lowered_cortex_m``: the lowered edge program run on the host with the ``cortex_m::`` ops'
#: host implementations (the firmware's integer arithmetic); ``quantized_model``: the quantized
#: (fake-quant) model before lowering, whose outputs may differ from the firmware's by a few LSB.
REFERENCE_KINDS = ("lowered_cortex_m", "quantized_model")


@dataclass(frozen=True)
class CompileResult:
    """What :func:`compile_model` wrote.

    Attributes:
        report: the program report (also saved as ``report_path``).
        pte_path / report_path: final locations in ``out_dir``.
        files: every file written, by role (``pte``, ``report``, ``quantized_program``,
            ``lowered_program`` (Cortex-M), ``reference``, ``vela_summary`` (Ethos-U)).
        notes: informational lines for the user (weights used, calibration source).
        weights: the trained weights file a built-in sample was loaded with (None: not a sample, or
            untrained, see ``report.untrained_weights``).
    """

    report: ProgramReport
    pte_path: Path
    report_path: Path
    files: dict[str, Path]
    notes: tuple[str, ...] = ()
    weights: Path | None = None


def parse_target(target: str) -> str:
    """Return ``"cortex-m"`` or ``"ethos-u"`` for a target string.

    Raises:
        ModelError: unknown target (the message lists the valid ones).
    """
    t = target.strip().lower()
    if t in CORTEX_M_TARGETS:
        return "cortex-m"
    if t in ETHOS_U_TARGETS:
        return "ethos-u"
    raise ModelError(
        f"unknown target '{target}'",
        hint="use one of " + ", ".join(CORTEX_M_TARGETS + ETHOS_U_TARGETS),
    )


# ---- helpers -------------------------------------------------------------------------------

def _channels_last(t: torch.Tensor) -> torch.Tensor:
    return t.to(memory_format=torch.channels_last) if t.dim() == 4 else t


def _export(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...], what: str) -> Any:
    try:
        return torch.export.export(model, inputs, strict=False)
    except Exception as exc:  # noqa: BLE001 - export raises many error types
        raise ModelError(f"torch.export of the {what} failed: {_one_line(exc)}") from exc


def _boundary_qparams(ep: Any) -> tuple[list[IoQuantization | None], list[IoQuantization | None]]:
    """Read the quantize after each user input and the dequantize before each output."""
    graph = ep.graph_module.graph
    user_inputs = list(ep.graph_signature.user_inputs)
    placeholders = {n.name: n for n in graph.nodes if n.op == "placeholder"}
    ins: list[IoQuantization | None] = []
    for name in user_inputs:
        node = placeholders.get(name)
        q = None
        if node is not None and len(node.users) == 1:
            user = next(iter(node.users))
            if "quantize_per_tensor" in str(user.target) and "dequantize" not in str(user.target):
                q = IoQuantization(float(user.args[1]), int(user.args[2]), int(user.args[3]), int(user.args[4]))
        ins.append(q)
    outs: list[IoQuantization | None] = []
    for node in graph.output_node().args[0]:
        q = None
        if hasattr(node, "target") and "dequantize_per_tensor" in str(node.target):
            q = IoQuantization(float(node.args[1]), int(node.args[2]), int(node.args[3]), int(node.args[4]))
        outs.append(q)
    return ins, outs


def _quantize_io(edge: Any, ins: list[IoQuantization | None], outs: list[IoQuantization | None]) -> Any:
    """Make quantized inputs/outputs int8 at the program boundary (ExecuTorch's own passes)."""
    from executorch.exir.passes.quantize_io_pass import QuantizeInputs, QuantizeOutputs

    passes = []
    in_idx = [i for i, q in enumerate(ins) if q is not None]
    out_idx = [i for i, q in enumerate(outs) if q is not None]
    if in_idx:
        passes.append(QuantizeInputs(edge, in_idx))
    if out_idx:
        passes.append(QuantizeOutputs(edge, out_idx))
    return edge.transform(passes) if passes else edge


def _write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write an ``.npz`` deterministically (fixed zip timestamps, sorted names)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as zf:
        for key in sorted(arrays):
            info = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.ascontiguousarray(arrays[key]), allow_pickle=False)
            zf.writestr(info, buf.getvalue())


# ---- lowering ------------------------------------------------------------------------------

def _lower_cortex_m(qep: Any, cpu: str) -> tuple[Any, list, list]:
    from executorch.backends.cortex_m.edge_compile_config import cortex_m_edge_compile_config
    from executorch.backends.cortex_m.passes.cortex_m_pass_manager import CortexMPassManager
    from executorch.backends.cortex_m.target_config import CortexMTargetConfig
    from executorch.exir import to_edge_transform_and_lower

    from armgen.model.passes import order

    edge = to_edge_transform_and_lower(
        qep,
        transform_passes=[order.build(p) for p in order.EDGE_TRANSFORMS],
        compile_config=cortex_m_edge_compile_config(),
    )
    ins, outs = _boundary_qparams(edge.exported_program())
    edge = _quantize_io(edge, ins, outs)
    target_config = CortexMTargetConfig.from_target_string(cpu)
    program = CortexMPassManager(edge.exported_program(), target_config=target_config).transform()
    for pass_cls in order.AFTER_CORTEX_M_PASSES:  # armgen's, in place on the lowered graph
        order.build(pass_cls, exported_program=program, backend=target_config.backend).call(program.graph_module)
    edge._edge_programs["forward"] = program
    return edge, ins, outs


def _lower_ethos_u(qep: Any, spec: Any, rejected: dict[str, str]) -> tuple[Any, list, list]:
    """Lower for Vela; ``rejected`` gets the partitioner's reason for every node it left on the CPU
    (node name -> reason)."""
    from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower

    from armgen.model.passes import order

    edge = to_edge_transform_and_lower(
        qep,
        partitioner=[vela.reporting_partitioner(spec, rejected)],
        compile_config=EdgeCompileConfig(_check_ir_validity=False),
    )
    ins, outs = _boundary_qparams(edge.exported_program())
    edge = _quantize_io(edge, ins, outs)
    edge = edge.transform([order.build(p) for p in order.AFTER_PARTITION_ETHOS_U])
    from armgen.model.passes.remove_dead_constants import remove_dead_constants

    remove_dead_constants(edge.exported_program())  # on the exported program: it edits the signature too
    return edge, ins, outs


# ---- the stage -----------------------------------------------------------------------------

def compile_model(
    source: str | ModelSource, target: str, *, out_dir: Path | str, cpu: str | None = None,
    system_config: str | None = None, memory_mode: str | None = None, vela_config_file: str | Path | None = None,
    weights: str | Path | None = None, calibration: str | Path | None = None, name: str | None = None,
) -> CompileResult:
    """Compile a model to an int8 ExecuTorch program for a Cortex-M CPU or an Ethos-U NPU.

    Args:
        source: a built-in sample name (``kws``, ``vww``, ``ic``, ``ad``, ``sww``), ``file.py``,
            ``file.py:attr``, a ``.pt2`` path, or an already loaded :class:`ModelSource`.
        target: ``cortex-m0`` ... ``cortex-m85`` (CMSIS-NN kernels) or ``ethos-u55-32`` ...
            ``ethos-u85-2048`` (Vela delegate); same strings as upstream's aot_arm_compiler.
        out_dir: folder for the outputs (created; existing files of the same names replaced).
        cpu: Cortex-M that runs the non-delegated ops. For Cortex-M targets it must equal the
            target (CMSIS-NN scratch sizes are planned per CPU); for Ethos-U it defaults to
            ``cortex-m55``.
        system_config / memory_mode: Vela system config and memory mode; ``None`` takes
            upstream's default for the NPU (``EthosUCompileSpec``: U55 ->
            ``Ethos_U55_High_End_Embedded``/``Shared_Sram``, U65 -> ``Ethos_U65_High_End``/
            ``Dedicated_Sram_384KB``, U85 -> ``Ethos_U85_SYS_DRAM_Mid``/``Sram_Only``).
        vela_config_file: a Vela ``.ini`` instead of Vela's built-in ``Arm/vela.ini``.
        weights: trained ``.tflite`` for a built-in sample (float; int8 for ``sww``, dequantized).
        calibration: directory / ``.npz`` / ``.pt`` of representative inputs; without it the
            sample's generator or the example inputs are used (with a warning).
        name: output file stem (default: the sample name or the model file's stem).

    Returns:
        A :class:`CompileResult`; the report lists planned buffer sizes in bytes, the operator
        table, delegates (with Vela scratch sizes in bytes and cycle estimates), I/O quantization.

    Raises:
        ModelError: unknown target, missing/invalid model, forward/export/quantization/lowering
            failure. ProgramError: an operator with no kernel in the linked libraries.
    """
    backend = parse_target(target)
    target = target.strip().lower()
    cpu = _program_cpu(backend, target, cpu, system_config, memory_mode, vela_config_file)

    src, name = _model_to_compile(source, weights, name)
    assert src.model is not None and src.example_inputs is not None
    notes = list(src.notes)
    warns = list(src.warnings)

    where = str(src.path) if src.path else src.name
    model = src.model.eval()
    if backend == "cortex-m":
        check_layers(model, where)  # before the long export: one line naming the layer
    run_forward(model, src.example_inputs, where)

    calib = _calibration_set(src, calibration, notes, warns)
    float_outs = [_as_arrays(run_forward(model, sample, f"{where} (calibration sample)")) for sample in calib]
    float_ep = _export(model, src.example_inputs, "float model")  # the float program `armgen run` compares with
    if backend == "cortex-m":
        check_operators(float_ep, where)  # before quantization and lowering: one line naming the operator

    ref_inputs = tuple(t.detach().clone() for t in src.representative[0]) if src.representative else src.example_inputs

    with _quiet():
        qmodel, qep = _quantize(
            model, src.example_inputs, calib, backend, target, system_config, memory_mode, vela_config_file,
            _int8_reference(src, backend, notes),
        )
    vela_text, rejected = io.StringIO(), dict[str, str]()
    with tempfile.TemporaryDirectory(prefix="armgen-tosa-") as artifacts:
        edge, in_q, out_q, spec = _lower(qep, backend, target, cpu, system_config, memory_mode, vela_config_file,
                                         vela_text, Path(artifacts), rejected)
        if backend == "cortex-m":
            check_kernel_limits(edge.exported_program(), where)  # before a program that overwrites memory is emitted
        # to_executorch() rewrites the edge program in place: keep the lowered one to run on the host
        # (Cortex-M: the reference; Ethos-U: with each delegate's TOSA graph, armgen.model.npu_host).
        lowered = copy.deepcopy(edge.exported_program()) if backend == "cortex-m" else None
        npu = npu_host.host_artifacts(edge, Path(artifacts), rejected) if backend == "ethos-u" else None
    layers = layers_of(edge.exported_program())  # the model's layer of each kernel call, before emitting
    reasons = cpu_reasons(edge.exported_program(), rejected)
    pte_bytes = _to_pte(edge, target, vela_text)
    vela_infos: tuple[VelaInfo, ...] = ()
    if npu is not None:
        vela_infos = vela.with_per_layer(vela.vela_infos(target, spec, vela_text, notes), npu.tosa,
                                         [m.processed_bytes for m in npu_host.delegate_modules(npu.program)], spec)

    report, files = _program_report(pte_bytes, name, backend, target, cpu, in_q, out_q, vela_infos, warns,
                                    lowered is not None, layers, len(npu.tosa) if npu else 0, reasons)
    classifier = bool(src.class_labels) if src.kind == "sample" else _looks_like_classifier(report)
    quality = _quality(calib, float_outs, report, in_q, out_q, lowered, qmodel, target, classifier)
    report = dataclasses.replace(report, untrained_weights=src.untrained, classifier=classifier,
                                 calibration_samples=len(calib), quality=tuple(q.to_json() for q in quality))
    notes.append(f"int8 against the float model (calibration inputs): {format_quality(quality)}"
                 + (" (the float model's weights are UNTRAINED: this measures quantization only)" if src.untrained
                    else ""))
    arrays = _reference_arrays(ref_inputs, report, in_q, out_q, lowered, qmodel, target)
    float_ref = {f"input_{i}": t.detach().contiguous().numpy().astype(np.float32) for i, t in enumerate(ref_inputs)}
    float_ref.update({f"output_{i}": a for i, a in enumerate(_as_arrays(run_forward(model, ref_inputs, where)))})

    written = _write_outputs(Path(out_dir), name, pte_bytes, (qep, float_ep), lowered, (arrays, float_ref), report,
                             files, vela_text, target, npu)
    return CompileResult(
        report=report,
        pte_path=written["pte"],
        report_path=written["report"],
        files=written,
        notes=tuple(notes),
        weights=src.weights,
    )


def _program_report(
    pte_bytes: bytes, name: str, backend: str, target: str, cpu: str, in_q: list[Any], out_q: list[Any],
    vela_infos: tuple[VelaInfo, ...], warns: list[str], has_lowered: bool, layers: tuple[tuple[str, str], ...] = (),
    n_tosa: int = 0, reasons: tuple[str, ...] = (),
) -> tuple[ProgramReport, dict[str, str]]:
    """The program report (read from the ``.pte`` with ExecuTorch's deserializer, plus what only the
    compile stage knows) and the file names of the other outputs by role.

    Raises:
        ModelError: the program's I/O quantization is not what the firmware can feed.
    """
    files = {
        "quantized_program": f"{name}.pt2",
        "reference": f"{name}.reference.npz",
        "float_program": f"{name}.float.pt2",
        "float_reference": f"{name}.float_reference.npz",
    }
    if has_lowered:
        files["lowered_program"] = f"{name}.lowered.pt2"
    if backend == "ethos-u":
        files["vela_summary"] = f"{name}.vela.txt"
    if n_tosa:
        files[npu_host.HOST_PROGRAM_ROLE] = f"{name}.host.pt2"
        for i in range(n_tosa):
            files[npu_host.TOSA_ROLE.format(index=i)] = f"{name}.delegate{i}.tosa"
    extras = ProgramExtras(
        name=name, backend=backend, target=target, cpu=cpu,
        input_quant=tuple(in_q), output_quant=tuple(out_q), vela=vela_infos,
        files=files, warnings=tuple(warns), layers=layers, reasons=reasons,
    )
    report = report_from_pte_bytes(pte_bytes, f"{name}.pte", extras, source=f"the {target} program of {name}")
    _check_io_quant(report)
    # A quantized program that still runs float portable kernels says so, naming the layers.
    fallback = float_fallback_warnings(report)
    if fallback:
        report = dataclasses.replace(report, warnings=report.warnings + tuple(fallback))
    return report, files


def _model_to_compile(
    source: str | ModelSource, weights: str | Path | None, name: str | None
) -> tuple[ModelSource, str]:
    """The loaded model and the output file stem.

    Raises:
        ModelError: the model cannot be loaded, is already a ``.pte``, or the name is not usable.
    """
    src = source if isinstance(source, ModelSource) else resolve_model(str(source), weights)
    if src.kind == "pte":
        raise ModelError(
            f"{src.path} is already an ExecuTorch program; nothing to compile",
            hint=f"use `armgen inspect {src.path}`",
        )
    name = name or src.name
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_\-]*", name):
        raise ModelError(f"'{name}' is not a usable output name (letters, digits, _ and - only)")
    return src, name


def _lower(
    qep: Any, backend: str, target: str, cpu: str, system_config: str | None, memory_mode: str | None,
    vela_config_file: str | Path | None, vela_text: io.StringIO, artifacts: Path, rejected: dict[str, str],
) -> tuple[Any, list[Any], list[Any], Any]:
    """The quantized program lowered to the edge dialect for CMSIS-NN or Vela: (edge program manager,
    input quantization, output quantization, Ethos-U compile spec or None). Vela's output goes to
    ``vela_text``; for Ethos-U, the TOSA graph of every delegate to ``artifacts`` (the compile spec's
    ``dump_intermediate_artifacts_to``, where Vela also works), and the partitioner's reason for every
    node it left on the CPU to ``rejected``.

    Raises:
        ModelError: lowering failed (one line from whichever layer failed).
    """
    spec = None
    try:
        with _quiet(vela_text):
            if backend == "cortex-m":
                edge, in_q, out_q = _lower_cortex_m(qep, cpu)
            else:
                spec = vela.ethos_u_compile_spec(target, system_config, memory_mode,
                                                 str(vela_config_file) if vela_config_file else None)
                spec.dump_intermediate_artifacts_to(str(artifacts))
                edge, in_q, out_q = _lower_ethos_u(qep, spec, rejected)
    except ArmgenError:
        raise
    except Exception as exc:  # noqa: BLE001 - lowering errors come from many layers
        if vela.raised_in_vela(exc):
            raise ModelError(f"Vela failed to compile the {target} delegate: {_one_line(exc)}",
                             hint="check the Vela system config, memory mode and config file") from exc
        hint = (f"ExecuTorch's Arm backend could not lower a layer for the NPU; --target {cpu} runs the whole "
                "model on the CPU" if backend == "ethos-u" else None)
        raise ModelError(f"lowering for {target} failed: {_one_line(exc)}", hint=hint) from exc
    return edge, in_q, out_q, spec


def _to_pte(edge: Any, target: str, vela_text: io.StringIO) -> bytes:
    """The ``.pte`` bytes of the edge program (delegate blobs kept inline).

    Raises:
        ModelError: ExecuTorch's emitter failed.
    """
    try:
        with _quiet(vela_text):
            from executorch.exir import ExecutorchBackendConfig

            from armgen.model.passes import order
            from armgen.model.passes.before_planning import memory_planning_pass

            config = ExecutorchBackendConfig(extract_delegate_segments=False)
            if target.startswith("cortex-m"):
                # order.BEFORE_PLANNING on the program to emit, on its tensor specs just before memory planning
                config.memory_planning_pass = memory_planning_pass()
            et_program = edge.to_executorch(config=config)
            pte = bytes(et_program.buffer)
            if target.startswith("cortex-m"):
                for step in order.AFTER_EMIT:
                    pte = step(pte)
            return pte
    except ArmgenError:
        raise
    except Exception as exc:  # noqa: BLE001 - lowering errors come from many layers
        raise ModelError(f"lowering for {target} failed: {_one_line(exc)}") from exc


def _program_cpu(
    backend: str, target: str, cpu: str | None, system_config: str | None, memory_mode: str | None,
    vela_config_file: str | Path | None,
) -> str:
    """The Cortex-M that runs the program's CPU part (see :func:`compile_model`'s ``cpu``).

    Raises:
        ModelError: a CPU other than a Cortex-M target, an unknown CPU, Vela options for a Cortex-M
            target, or a missing Vela config file.
    """
    if backend == "cortex-m":
        if cpu is not None and cpu.strip().lower() != target:
            raise ModelError(
                f"--cpu {cpu} differs from target {target}; a Cortex-M program is planned for one CPU",
                hint=f"drop --cpu or use --target {cpu}",
            )
        cpu = target
        if system_config or memory_mode or vela_config_file:
            raise ModelError("Vela system config / memory mode / config file apply to Ethos-U targets only")
    else:
        cpu = (cpu or DEFAULT_ETHOS_U_CPU).strip().lower()
        if cpu not in CORTEX_M_TARGETS:
            raise ModelError(f"unknown CPU '{cpu}'", hint="use one of " + ", ".join(CORTEX_M_TARGETS))
    if vela_config_file is not None and not Path(vela_config_file).is_file():
        raise ModelError(f"{vela_config_file}: Vela config file not found")
    return cpu


def _calibration_set(
    src: ModelSource, calibration: str | Path | None, notes: list[str], warns: list[str]
) -> list[tuple[torch.Tensor, ...]]:
    """Representative inputs for post-training quantization: the given data, else the sample's
    generator, else the example inputs (each with a note or warning).

    Raises:
        ModelError: the calibration data cannot be read or does not fit the model's inputs.
    """
    assert src.example_inputs is not None
    if calibration is not None:
        calib = load_calibration(calibration, src.example_inputs)
        notes.append(f"calibrating with {len(calib)} samples from {calibration}")
    elif src.kind == "sample":
        calib = list(src.representative)
        warns.append(
            f"no --calibration data: calibrating with {len(calib)} synthetic samples from the '{src.name}' "
            "sample generator; int8 accuracy depends on representative data"
        )
    else:
        calib = [src.example_inputs]
        warns.append(
            "no --calibration data: calibrating with the example inputs only; int8 accuracy depends on "
            "representative data"
        )
    return calib


def _write_outputs(
    out_dir: Path, name: str, pte_bytes: bytes, programs: tuple[Any, Any], lowered: Any,
    references: tuple[dict[str, np.ndarray], dict[str, np.ndarray]],
    report: ProgramReport, files: dict[str, str], vela_text: io.StringIO, target: str,
    npu: npu_host.HostArtifacts | None = None,
) -> dict[str, Path]:
    """Write the ``.pte``, report, quantized, float and lowered programs, the int8 and float references
    and Vela summary into a temporary folder, then move each into ``out_dir``: ``{role: path}``.
    ``programs``: (quantized, float) ``torch.export`` programs; ``references``: (int8, float) arrays.

    Raises:
        ModelError: the folder cannot be created or written, or the lowered program not serialized.
    """
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".armgen-compile-", dir=out_dir))
    except OSError as exc:
        raise ModelError(f"{out_dir}: cannot create output folder ({exc.strerror})") from exc
    try:
        (tmp / f"{name}.pte").write_bytes(pte_bytes)
        for ep, role in zip(programs, ("quantized_program", "float_program"), strict=True):
            strip_volatile_meta(ep)
            with _quiet():
                torch.export.save(ep, str(tmp / files[role]))
        if lowered is not None:
            strip_volatile_meta(lowered)
            try:
                save_lowered_program(lowered, tmp / files["lowered_program"])
            except OSError:
                raise
            except Exception as exc:  # noqa: BLE001 - the serializer raises its own types
                raise ModelError(f"cannot save the lowered {target} program: {_one_line(exc)}") from exc
        if npu is not None:
            npu_host.write_host_artifacts(tmp, files, npu, target)
        _write_npz(tmp / files["reference"], references[0])
        _write_npz(tmp / files["float_reference"], references[1])
        if "vela_summary" in files:
            (tmp / files["vela_summary"]).write_text(vela.clean_vela_text(vela_text.getvalue()))
        report.save(tmp / f"{name}.report.json")
        written: dict[str, Path] = {}
        roles = {"pte": f"{name}.pte", "report": f"{name}.report.json", **files}
        for role, fname in roles.items():
            (tmp / fname).replace(out_dir / fname)
            written[role] = out_dir / fname
    except OSError as exc:
        raise ModelError(f"{out_dir}: cannot write outputs ({exc.strerror})") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return written


def _check_io_quant(report: ProgramReport) -> None:
    for info in report.inputs + report.outputs:
        if info.dtype == "int8" and info.scale is None:
            raise ProgramError(f"program I/O {info.index} is int8 but its quantization was not found")


def _int8_reference(src: Any, backend: str, notes: list[str]) -> Any:
    """The quantization of the sample's weights file when it is a full-integer ``.tflite`` (``sww``) and the
    program is a Cortex-M one: armgen then makes the file's integers (:mod:`armgen.model.tflite_quant`); else
    None. An Ethos-U program keeps its quantizer's symmetric scheme."""
    weights = getattr(src, "weights", None)
    if backend != "cortex-m" or weights is None or Path(weights).suffix.lower() != ".tflite":
        return None
    from armgen.model.tflite_quant import read_tflite_quantization

    quant = read_tflite_quantization(Path(weights))
    if quant is not None:
        notes.append(f"quantization: {Path(weights).name}'s own scales and zero points ({len(quant.activations)} "
                     f"activation, {len(quant.weights)} weight tensors), not calibration's")
    return quant


def _quantize(
    model: torch.nn.Module,
    example: tuple[torch.Tensor, ...],
    calib: list[tuple[torch.Tensor, ...]],
    backend: str,
    target: str,
    system_config: str | None,
    memory_mode: str | None,
    vela_config_file: str | Path | None,
    int8_reference: Any = None,
) -> tuple[torch.fx.GraphModule, Any]:
    """PT2E post-training quantization; returns (converted model, its torch.export program). ``int8_reference``:
    a full-integer ``.tflite``'s :class:`armgen.model.tflite_quant.TfliteQuantization`, adopted after calibration."""
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    if backend == "cortex-m":
        from executorch.backends.cortex_m.quantizer.quantizer import CortexMQuantizer

        model = model.to(memory_format=torch.channels_last)  # type: ignore[call-overload]  # torch's stubs lack it
        example = tuple(_channels_last(t) for t in example)
        calib = [tuple(_channels_last(t) for t in s) for s in calib]
        quantizer = CortexMQuantizer()
    else:
        from executorch.backends.arm.quantizer import EthosUQuantizer, get_symmetric_quantization_config

        spec = vela.ethos_u_compile_spec(target, system_config, memory_mode,
                                         str(vela_config_file) if vela_config_file else None)
        quantizer = EthosUQuantizer(spec)
        quantizer.set_global(get_symmetric_quantization_config(is_per_channel=True))
    graph = _export(model, example, "float model").module(check_guards=False)
    from armgen.model.passes import order

    for pass_cls in order.BEFORE_QUANTIZATION if backend == "cortex-m" else order.BEFORE_QUANTIZATION_ETHOS_U:
        graph = order.build(pass_cls, example_inputs=example).call(graph).graph_module
    try:
        prepared = prepare_pt2e(graph, quantizer)
        with torch.no_grad():
            for sample in calib:
                prepared(*sample)
        if int8_reference is not None:
            from armgen.model.tflite_quant import adopt_tflite_quantization

            adopt_tflite_quantization(prepared, int8_reference)
        converted = convert_pt2e(prepared)
    except Exception as exc:  # noqa: BLE001
        raise ModelError(f"int8 quantization failed: {_one_line(exc)}") from exc
    qep = _export(converted, example, "quantized model")
    return converted, qep


__all__ = [
    "CORTEX_M_TARGETS",
    "DEFAULT_ETHOS_U_CPU",
    "ETHOS_U_TARGETS",
    "REFERENCE_KINDS",
    "CompileResult",
    "compile_model",
    "parse_target",
    "parse_vela_summary",
]

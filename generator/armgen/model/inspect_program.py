"""Read a serialized ExecuTorch program (``.pte``) back and describe it as a :class:`ProgramReport`.

Everything here comes from the bytes of the ``.pte``, parsed with ExecuTorch's own deserializer
(``executorch.exir._serialize._program.deserialize_pte_binary``), never from an in-memory graph:
the operator table, the memory plan (``non_const_buffer_sizes``), the method I/O, the delegates
and, for Ethos-U delegates, the scratch size Vela wrote into the delegate blob.

Facts that are not in the ``.pte`` (I/O quantization parameters of an int8 program, Vela's
cycle/SRAM estimates, the target string) are passed in by the compile stage through
:class:`ProgramExtras`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from armgen.errors import ProgramError
from armgen.model.activation_bound import activation_lower_bound
from armgen.model.method_allocator import plan_method_allocator
from armgen.model.placement import plan_placement
from armgen.model.program_report import (
    DelegateInfo,
    KernelLibrary,
    OperatorInfo,
    ProgramReport,
    ProgramStats,
    TensorInfo,
    VelaInfo,
)
from armgen.model.tensors import DTYPE_NAMES, DTYPE_SIZES

#: Operators the ExecuTorch runtime registers itself (``kernels/prim_ops/register_prim_ops.cpp``):
#: every ``executorch_prim::*`` op plus these ``aten::`` symbolic-shape helpers.
_PRIM_ATEN_OPS = frozenset({"aten::sym_size", "aten::sym_numel", "aten::_local_scalar_dense"})

#: Vela delegate blob framing (``executorch/backends/arm/arm_vela.py``): 16-byte name, uint32 size,
#: uint8 flags, 11 reserved bytes; data padded to 16 bytes.
_VELA_BLOCK_HEADER = struct.Struct("<16sIB11s")
_ETHOS_U_BACKEND_IDS = frozenset({"EthosUBackend"})


@dataclass(frozen=True)
class IoQuantization:
    """Quantization of one method input/output, from the boundary quantize/dequantize node.

    ``real = (q - zero_point) * scale``; ``q = clamp(round(real / scale) + zero_point, qmin, qmax)``.
    """

    scale: float
    zero_point: int
    qmin: int = -128
    qmax: int = 127


@dataclass(frozen=True)
class ProgramExtras:
    """What the compile stage knows that is not stored in the ``.pte`` itself."""

    name: str | None = None
    backend: str | None = None
    target: str | None = None
    cpu: str | None = None
    input_quant: tuple[IoQuantization | None, ...] = ()
    output_quant: tuple[IoQuantization | None, ...] = ()
    vela: tuple[VelaInfo, ...] = ()  # one per Ethos-U delegate, in delegate order
    vela_config: VelaInfo | None = None  # system config / memory mode to report when no summary
    files: dict[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    layers: tuple[tuple[str, str], ...] = ()  # (op name, layer path) per kernel call, execution order
    reasons: tuple[str, ...] = ()  # why each of those stayed on the CPU (Ethos-U partitioner), "" for none


# ---- kernel libraries ------------------------------------------------------------------------

def _yaml_op_keys(path: Path) -> set[str]:
    """Return ``namespace::name.overload`` keys listed in a kernel library's functions YAML."""
    import yaml

    keys: set[str] = set()
    for entry in yaml.safe_load(path.read_text()) or []:
        spec = entry.get("op") or entry.get("func")
        if not spec:
            continue
        head = spec.split("(", 1)[0].strip()
        if "::" not in head:
            head = "aten::" + head
        if "." not in head.split("::", 1)[1]:
            head += ".default"
        keys.add(head)
    return keys


_KERNEL_TABLE: dict[str, KernelLibrary] | None = None


def kernel_library_table() -> dict[str, KernelLibrary]:
    """Map ``namespace::name.overload`` to the kernel library armgen links that provides it.

    Read from the YAML files of the installed ExecuTorch wheel, the same files the runtime's
    selective build reads: ``backends/cortex_m/ops/operators.yaml`` (cortex_m),
    ``kernels/quantized/quantized.yaml`` (quantized), ``kernels/portable/functions.yaml`` and
    ``kernels/portable/custom_ops.yaml`` (portable). Prim ops are not listed here
    (see :func:`classify_operator`).
    """
    global _KERNEL_TABLE
    if _KERNEL_TABLE is None:
        import executorch.exir

        root = Path(executorch.exir.__file__).resolve().parent.parent
        table: dict[str, KernelLibrary] = {}
        for lib, rel in (
            ("portable", "kernels/portable/custom_ops.yaml"),
            ("portable", "kernels/portable/functions.yaml"),
            ("quantized", "kernels/quantized/quantized.yaml"),
            ("cortex_m", "backends/cortex_m/ops/operators.yaml"),
        ):
            for key in _yaml_op_keys(root / rel):
                table[key] = lib  # type: ignore[assignment]
        _KERNEL_TABLE = table
    return _KERNEL_TABLE


def classify_operator(name: str, overload: str) -> KernelLibrary | None:
    """Return the kernel library that provides ``name.overload``, or ``None`` when none does.

    Args:
        name: e.g. ``"cortex_m::quantized_conv2d"`` or ``"aten::add"``.
        overload: e.g. ``"out"``.
    """
    if name.startswith("executorch_prim::") or name in _PRIM_ATEN_OPS:
        return "prim"
    return kernel_library_table().get(f"{name}.{overload or 'default'}")


# ---- Vela blob -----------------------------------------------------------------------------

def iter_vela_blocks(blob: bytes) -> Iterator[tuple[str, bytes]]:
    """Yield ``(name, data)`` for each block of an Ethos-U delegate blob.

    Format (``backends/arm/arm_vela.py``, consumed by ``VelaBinStream.cpp``): a 32-byte header
    (16-byte NUL-padded name, uint32 little-endian data size, flag byte, 11 reserved bytes)
    followed by the data padded to 16 bytes; the stream starts with ``vela_bin_stream`` and
    ends with ``vela_end_stream``.

    Raises:
        ProgramError: when the blob is not a Vela bin stream.
    """
    off = 0
    first = True
    while off + _VELA_BLOCK_HEADER.size <= len(blob):
        raw_name, size, _flags, _ = _VELA_BLOCK_HEADER.unpack_from(blob, off)
        name = raw_name.split(b"\x00", 1)[0].decode("ascii", "replace")
        if first and name != "vela_bin_stream":
            raise ProgramError("delegate blob is not a Vela bin stream (no 'vela_bin_stream' block)")
        first = False
        off += _VELA_BLOCK_HEADER.size
        data = blob[off : off + size]
        off += (size + 15) // 16 * 16
        yield name, data
        if name == "vela_end_stream":
            return
    raise ProgramError("Vela bin stream in the delegate blob is truncated (no 'vela_end_stream')")


def read_vela_blob(blob: bytes) -> dict[str, int]:
    """Return ``scratch_size``, ``command_stream_size`` and ``weights_size`` (bytes) of a blob."""
    blocks = dict(iter_vela_blocks(blob))
    scratch = blocks.get("scratch_size", b"")
    return {
        "scratch_size": struct.unpack("<I", scratch[:4])[0] if len(scratch) >= 4 else 0,
        "command_stream_size": len(blocks.get("cmd_data", b"")),
        "weights_size": len(blocks.get("weight_data", b"")),
    }


# ---- reading the program -------------------------------------------------------------------

def _executorch_version() -> str:
    try:
        return version("executorch")
    except PackageNotFoundError:  # pragma: no cover - the wheel is a hard dependency
        return "unknown"


def load_program(data: bytes, source: str = "<bytes>") -> Any:
    """Deserialize ``.pte`` bytes into ExecuTorch's ``Program`` dataclass (``exir/schema.py``).

    Raises:
        ProgramError: when the bytes are not a readable ExecuTorch program.
    """
    if len(data) < 8 or data[4:6] != b"ET":
        raise ProgramError(
            f"{source} is not an ExecuTorch program (no 'ET' flatbuffer identifier at bytes 4..8)",
            hint="give a .pte written by ExecuTorch's to_executorch()/save",
        )
    from armgen.model.pte_reader import deserialized_program

    try:
        program = deserialized_program(bytes(data))
    except Exception as exc:  # noqa: BLE001 - flatc/segment errors come in many types
        raise ProgramError(
            f"{source} cannot be read as an ExecuTorch program: the file is truncated or corrupt "
            f"(flatbuffer {type(exc).__name__})"
        ) from exc
    if not program.execution_plan:
        raise ProgramError(f"{source} holds no method (empty execution plan)")
    return program


def _tensor_info(index: int, value: Any, quant: IoQuantization | None) -> TensorInfo:
    t = value.val
    if type(t).__name__ != "Tensor":
        raise ProgramError(f"method I/O {index} is a {type(t).__name__}, armgen handles tensors only")
    dtype = DTYPE_NAMES.get(t.scalar_type.name, t.scalar_type.name.lower())
    n = 1
    for s in t.sizes:
        n *= int(s)
    return TensorInfo(
        index=index,
        shape=tuple(int(s) for s in t.sizes),
        dtype=dtype,
        dim_order=tuple(int(d) for d in t.dim_order),
        nbytes=n * DTYPE_SIZES.get(dtype, 1),
        scale=float(quant.scale) if quant is not None and dtype in ("int8", "uint8", "int16") else None,
        zero_point=int(quant.zero_point) if quant is not None and dtype in ("int8", "uint8", "int16") else None,
    )


def _stats(plan: Any) -> ProgramStats:
    n_tensors = n_dims = n_lists = n_items = n_const = 0
    for v in plan.values:
        kind = type(v.val).__name__
        if kind == "Tensor":
            n_tensors += 1
            n_dims += len(v.val.sizes)
            if v.val.data_buffer_idx != 0 or (
                v.val.extra_tensor_info is not None
                and v.val.extra_tensor_info.fully_qualified_name
                and v.val.allocation_info is None
            ):
                n_const += 1
        elif kind in ("TensorList", "OptionalTensorList"):
            n_lists += 1
            n_items += len(v.val.items)
    n_instr = n_kc = n_kc_args = n_dc = n_dc_args = 0
    for chain in plan.chains:
        for instr in chain.instructions:
            n_instr += 1
            kind = type(instr.instr_args).__name__
            if kind == "KernelCall":
                n_kc += 1
                n_kc_args += len(instr.instr_args.args)
            elif kind == "DelegateCall":
                n_dc += 1
                n_dc_args += len(instr.instr_args.args)
    return ProgramStats(
        num_values=len(plan.values),
        num_tensors=n_tensors,
        num_tensor_dims=n_dims,
        num_tensor_lists=n_lists,
        num_tensor_list_items=n_items,
        num_instructions=n_instr,
        num_kernel_calls=n_kc,
        num_kernel_call_args=n_kc_args,
        num_delegate_calls=n_dc,
        num_delegate_call_args=n_dc_args,
        num_operators=len(plan.operators),
        num_chains=len(plan.chains),
        num_inputs=len(plan.inputs),
        num_outputs=len(plan.outputs),
        num_constant_tensors=n_const,
    )


def _operators(plan: Any) -> tuple[OperatorInfo, ...]:
    calls = [0] * len(plan.operators)
    for chain in plan.chains:
        for instr in chain.instructions:
            if type(instr.instr_args).__name__ == "KernelCall":
                calls[instr.instr_args.op_index] += 1
    ops = []
    for i, op in enumerate(plan.operators):
        lib = classify_operator(op.name, op.overload)
        if lib is None:
            raise ProgramError(
                f"operator {op.name}.{op.overload or 'default'} has no kernel in the libraries "
                "armgen links (cortex_m, quantized, portable, prim)",
                hint="change the model so this op is quantized/lowered, or delegate it to an NPU",
            )
        ops.append(OperatorInfo(name=op.name, overload=op.overload, library=lib, calls=calls[i]))
    return tuple(ops)


def _delegates(program: Any, plan: Any, extras: ProgramExtras) -> tuple[DelegateInfo, ...]:
    out = []
    vela_i = 0
    for d in plan.delegates:
        ref = d.processed
        if ref.location.name == "INLINE":
            blob = program.backend_delegate_data[ref.index].data
            blob_size = len(blob)
        else:  # SEGMENT: the blob lives in a data segment after the flatbuffer
            blob = b""
            blob_size = int(program.segments[ref.index].size)
        vela = None
        if d.id in _ETHOS_U_BACKEND_IDS and blob:
            facts = read_vela_blob(blob)
            base = extras.vela[vela_i] if vela_i < len(extras.vela) else extras.vela_config
            vela_i += 1
            specs = {c.key: c.value for c in d.compile_specs}
            flags = specs.get("compile_flags", b"").decode("utf-8", "replace")
            accel = _flag(flags, "--accelerator-config") or (base.accelerator_config if base else "")
            sysc = _flag(flags, "--system-config") or (base.system_config if base else "")
            mode = _flag(flags, "--memory-mode") or (base.memory_mode if base else "")
            vela = VelaInfo(
                accelerator_config=accel,
                system_config=sysc,
                memory_mode=mode,
                scratch_size=facts["scratch_size"],
                fast_scratch_size=base.fast_scratch_size if base else 0,
                command_stream_size=facts["command_stream_size"],
                weights_size=facts["weights_size"],
                cycles=base.cycles if base else None,
                sram_bytes=base.sram_bytes if base else None,
                flash_bytes=base.flash_bytes if base else None,
                layers=base.layers if base else (),
                config_file=base.config_file if base else "",
                vela_clock_hz=base.vela_clock_hz if base else None,
            )
        out.append(DelegateInfo(backend_id=d.id, blob_size=blob_size, vela=vela))
    return tuple(out)


def _flag(flags: str, key: str) -> str | None:
    for tok in flags.replace("\x00", " ").split():
        if tok.startswith(key + "="):
            return tok.split("=", 1)[1]
    return None


def report_from_pte_bytes(
    data: bytes, pte_file: str, extras: ProgramExtras | None = None, source: str | None = None
) -> ProgramReport:
    """Build a :class:`ProgramReport` from the bytes of a ``.pte``.

    Args:
        data: the whole ``.pte`` file.
        pte_file: file name recorded in the report (relative to the report).
        extras: compile-time facts not stored in the program (see :class:`ProgramExtras`).
        source: name used in error messages (defaults to ``pte_file``).

    Raises:
        ProgramError: unreadable program, non-tensor I/O, or an operator with no kernel in the
            libraries armgen links.
    """
    extras = extras or ProgramExtras()
    source = source or pte_file
    program = load_program(data, source)
    plan = program.execution_plan[0]
    values = plan.values
    inputs = tuple(
        _tensor_info(i, values[v], extras.input_quant[i] if i < len(extras.input_quant) else None)
        for i, v in enumerate(plan.inputs)
    )
    outputs = tuple(
        _tensor_info(i, values[v], extras.output_quant[i] if i < len(extras.output_quant) else None)
        for i, v in enumerate(plan.outputs)
    )
    delegates = _delegates(program, plan, extras)
    backend = extras.backend or ("ethos-u" if any(d.vela for d in delegates) else "cortex-m")
    target = extras.target
    if target is None:
        accel = next((d.vela.accelerator_config for d in delegates if d.vela), None)
        target = accel or "unknown"
    constant_size = sum(len(b.storage) for b in program.constant_buffer)
    if program.named_data:
        for seg_idx in {nd.segment_index for nd in program.named_data}:
            constant_size += program.segments[seg_idx].size
    operators = _operators(plan)
    libraries = [o.library for o in operators]
    report = ProgramReport(
        name=extras.name or Path(pte_file).stem,
        pte_file=pte_file,
        pte_size=len(data),
        pte_sha256=hashlib.sha256(data).hexdigest(),
        file_identifier=data[4:8].decode("ascii", "replace"),
        executorch_version=_executorch_version(),
        backend=backend,  # type: ignore[arg-type]
        target=target,
        cpu=extras.cpu or (target if target.startswith("cortex-m") else "unknown"),
        method=plan.name,
        operators=operators,
        delegates=delegates,
        planned_buffers=tuple(int(s) for s in plan.non_const_buffer_sizes[1:]),
        constant_data_size=constant_size,
        inputs=inputs,
        outputs=outputs,
        stats=_stats(plan),
        files=dict(extras.files),
        warnings=tuple(extras.warnings),
        placement=plan_placement(plan, libraries, extras.layers, extras.reasons),
        activation_lower_bound=activation_lower_bound(plan).bytes,
    )
    # The method allocator's need, replayed once here so later stages size pools from the report.
    return dataclasses.replace(report, method_allocator=plan_method_allocator(data, report.temp_allocator_size))


def inspect_pte(path: Path) -> ProgramReport:
    """Read ``path`` (a ``.pte``) and return its report.

    When ``<stem>.report.json`` written by ``armgen compile`` lies beside it and its sha256
    matches, the compile-time facts (I/O quantization, Vela estimates, target, warnings, files)
    are taken from it; everything else is re-read from the program.

    Raises:
        ProgramError: missing/unreadable file, or not an ExecuTorch program.
    """
    path = Path(path)
    if not path.is_file():
        raise ProgramError(f"{path}: no such file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ProgramError(f"{path}: cannot read ({exc.strerror})") from exc
    extras = ProgramExtras()
    old = None
    sidecar = path.with_name(path.stem + ".report.json")
    if sidecar.is_file():
        try:
            old = ProgramReport.load(sidecar)
        except (OSError, ValueError, KeyError, TypeError):
            old = None
        if old is not None and old.pte_sha256 == hashlib.sha256(data).hexdigest():
            extras = ProgramExtras(
                name=old.name,
                backend=old.backend,
                target=old.target,
                cpu=old.cpu,
                input_quant=tuple(_q(t) for t in old.inputs),
                output_quant=tuple(_q(t) for t in old.outputs),
                vela=tuple(d.vela for d in old.delegates if d.vela is not None),
                files=old.files,
                warnings=old.warnings,
                layers=tuple((r.op, r.layer) for r in old.placement if r.library != "delegate"),
                reasons=tuple(r.reason for r in old.placement if r.library != "delegate"),
            )
        else:
            old = None
    report = report_from_pte_bytes(data, path.name, extras, source=str(path))
    if old is None:
        return report
    # What only the compile stage measured (the program cannot say it): int8 against float, whether
    # the model is a classifier, how many calibration inputs it saw, whether its weights were trained.
    return dataclasses.replace(report, **{k: getattr(old, k) for k in COMPILE_TIME_FIELDS})


#: :class:`ProgramReport` fields that only the compile stage knows; ``inspect`` keeps them from the sidecar.
COMPILE_TIME_FIELDS = ("quality", "classifier", "calibration_samples", "untrained_weights")


def _q(t: TensorInfo) -> IoQuantization | None:
    return IoQuantization(t.scale, t.zero_point) if t.scale is not None and t.zero_point is not None else None


__all__ = [
    "IoQuantization",
    "ProgramExtras",
    "classify_operator",
    "inspect_pte",
    "iter_vela_blocks",
    "kernel_library_table",
    "load_program",
    "read_vela_blob",
    "report_from_pte_bytes",
]

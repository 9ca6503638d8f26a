"""The program report: what the firmware will need, read back from a serialized ``.pte``.

Written by the compile stage as ``<name>.report.json`` beside ``<name>.pte``; read by every later
stage (spec, render, build, size, run). Numbers here must be exact: they size the firmware's pools.

Contract (schema_version 1). Field names are stable; add fields, never rename them.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

SCHEMA_VERSION = 1

KernelLibrary = Literal["cortex_m", "quantized", "portable", "prim", "delegate"]


@dataclass(frozen=True)
class TensorInfo:
    """One method input or output.

    Attributes:
        index: position in the method's inputs/outputs.
        shape: sizes, e.g. ``(1, 1, 49, 10)``.
        dtype: ExecuTorch scalar type in lower case: ``"int8"``, ``"uint8"``, ``"float32"``, ``"int32"``...
        dim_order: ExecuTorch dim order, e.g. ``(0, 2, 3, 1)`` for channels_last.
        nbytes: ``prod(shape) * element size`` in bytes.
        scale / zero_point: I/O quantization parameters when the program's I/O is quantized
            (int8 in/out), ``None`` when the program takes/returns float.
    """

    index: int
    shape: tuple[int, ...]
    dtype: str
    dim_order: tuple[int, ...]
    nbytes: int
    scale: float | None = None
    zero_point: int | None = None


@dataclass(frozen=True)
class OperatorInfo:
    """One entry of the program's operator table.

    Attributes:
        name: fully qualified name, e.g. ``"cortex_m::quantized_conv2d"``, ``"aten::add"``.
        overload: e.g. ``"out"`` (selected-ops YAML uses ``name.overload``).
        library: kernel library that must provide it when linked: ``cortex_m``, ``quantized``,
            ``portable`` or ``prim`` (prim ops are built into the runtime).
        calls: number of kernel-call instructions that use it in the execution plan.
    """

    name: str
    overload: str
    library: KernelLibrary
    calls: int


@dataclass(frozen=True)
class VelaLayer:
    """Vela's estimate for one NPU operation of a delegate (its per-layer performance table).

    Read from the performance database Vela writes with ``--verbose-performance --enable-debug-db``
    (``<name>_debug.xml``: tables ``perf`` and ``perf_debug``; ethos-u-vela 5.1.0
    ``stats_writer.write_regor_db``), the same figures as its ``_per-layer.csv``.

    Attributes:
        name: the TOSA operator's tensor name (``tosa_rescale_default_2``).
        original_op: the TOSA operator it came from (``Conv2D``, ``DepthwiseConv2D``, ``Rescale``).
        npu_op: what Vela runs it as on the NPU (``Conv2D``, ``MemoryCopy``, ``LUT``).
        cycles: Vela's ``op_cycles`` (NPU cycles, the maximum of compute and memory access).
        npu_cycles: the NPU's compute cycles alone.
        macs: multiply-accumulates.
        read_bytes: bytes the operation reads, per memory area as Vela names it (``Sram``, ``Dram``,
            ``OnChipFlash``, ``OffChipFlash``: feature maps, weights, scales and look-up tables added).
    """

    name: str
    original_op: str
    npu_op: str
    cycles: int
    npu_cycles: int
    macs: int
    read_bytes: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class VelaInfo:
    """What Vela compiled for one Ethos-U delegate (from the blob and Vela's own summary).

    Sizes are in bytes, cycles in NPU cycles as estimated by Vela (not measured). ``layers`` is Vela's
    per-layer estimate (:class:`VelaLayer`), ``config_file`` the Vela ``.ini`` the system config came
    from (``Arm/vela.ini`` for Vela's built-in one), ``vela_clock_hz`` the NPU clock that system config
    assumes (Hz; a config's value, not a board's).
    """

    accelerator_config: str
    system_config: str
    memory_mode: str
    scratch_size: int  # from the blob's ``scratch_size`` block: temp allocator bytes per execute()
    fast_scratch_size: int  # Dedicated_Sram modes only; 0 otherwise
    command_stream_size: int
    weights_size: int
    cycles: int | None = None
    sram_bytes: int | None = None
    flash_bytes: int | None = None
    layers: tuple[VelaLayer, ...] = ()
    config_file: str = ""
    vela_clock_hz: float | None = None

    @property
    def layer_cycles(self) -> int:
        """The sum of the layers' ``cycles`` (NPU cycles)."""
        return sum(x.cycles for x in self.layers)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> VelaInfo:
        """Build from :func:`dataclasses.asdict` output (layers as dicts)."""
        layers = tuple(VelaLayer(**x) for x in d.get("layers", ()))
        return cls(**{**d, "layers": layers})


@dataclass(frozen=True)
class DelegateInfo:
    """One delegate call in the execution plan.

    Attributes:
        backend_id: e.g. ``"EthosUBackend"``.
        blob_size: size in bytes of the processed delegate blob in the ``.pte``.
        vela: Vela facts when the backend is Ethos-U.
    """

    backend_id: str
    blob_size: int
    vela: VelaInfo | None = None


@dataclass(frozen=True)
class ProgramStats:
    """Counts from the execution plan that bound the runtime's method-allocator use.

    All are plain counts read from the program's flatbuffer (``execution_plan[0]``).
    """

    num_values: int
    num_tensors: int
    num_tensor_dims: int  # sum over tensor values of len(sizes)
    num_tensor_lists: int
    num_tensor_list_items: int
    num_instructions: int
    num_kernel_calls: int
    num_kernel_call_args: int  # sum over kernel calls of len(args)
    num_delegate_calls: int
    num_delegate_call_args: int
    num_operators: int
    num_chains: int
    num_inputs: int
    num_outputs: int
    num_constant_tensors: int


@dataclass(frozen=True)
class OpPlacement:
    """Where one kernel or delegate call of the program runs (see :mod:`armgen.model.placement`).

    Attributes:
        index: position among the program's calls, in execution order.
        op: operator name (``cortex_m::quantized_conv2d``) or the delegate's backend id.
        library: ``cortex_m`` (CMSIS-NN int8), ``quantized``, ``portable``, ``prim`` or ``delegate`` (NPU).
        dtype: the call's output dtype (``int8``, ``float32``; "" for delegates).
        macs: multiply-accumulates of the call (convolutions, linear, matrix products; 0 otherwise).
        layer: the model's module path the call came from (``features.0``; "" when unknown).
        reason: for a call of an Ethos-U program that stayed on the CPU, why the partitioner left it
            out of the NPU partitions (ExecuTorch's ``WhyNoPartitionReporter``); "" otherwise.
    """

    index: int
    op: str
    library: str
    dtype: str
    macs: int
    layer: str
    reason: str = ""


@dataclass(frozen=True)
class MethodAllocatorPlan:
    """The method allocator's need, replayed from the program (see :mod:`armgen.model.method_allocator`).

    Attributes:
        method_pool: bytes to reserve for the method allocator (``method_use`` rounded up to 16).
        temp_pool: bytes of the temp allocator the firmware hands over (the Vela scratch, or the
            operator-lookup scratch when that shrinks the method pool by more; 0: none).
        method_use: bytes ``Method::init`` takes from the method allocator with that temp pool (exact).
        temp_load_only: the temp pool is used only while ``load_method`` runs: it holds just the
            operator-lookup scratch (the program needs no temp memory to execute), the program has no
            delegate, and no memory-planned tensor gets data before the first execute (no mutable
            buffer with initial values). Planned memory is then idle during loading, so the firmware
            may lend its start to the lookup scratch instead of reserving a temp pool.
    """

    method_pool: int
    temp_pool: int
    method_use: int
    temp_load_only: bool = False


@dataclass(frozen=True)
class ProgramReport:
    """Everything later stages need to know about one compiled program.

    Attributes:
        name: the model/project name, also the file stem.
        pte_file: file name of the ``.pte``, relative to the report.
        pte_size: bytes.
        pte_sha256: hex digest of the ``.pte``.
        file_identifier: the flatbuffer file identifier, e.g. ``"ET12"``.
        executorch_version: pip ExecuTorch version the program was made with.
        backend: ``"cortex-m"`` (CMSIS-NN kernels) or ``"ethos-u"`` (Vela delegate).
        target: the target string given, e.g. ``"cortex-m55"`` or ``"ethos-u85-256"``.
        cpu: the Cortex-M that runs non-delegated ops, e.g. ``"cortex-m55"``.
        method: method name (``"forward"``).
        operators: the program's operator table, with libraries and call counts.
        delegates: delegate calls with backend ids, blob sizes and Vela facts.
        planned_buffers: bytes per memory-planned buffer, memory ids 1..N in order (id 0 is
            reserved by ExecuTorch and not listed). Equals ``non_const_buffer_sizes[1:]``.
        constant_data_size: bytes of constant tensor data in the program.
        inputs / outputs: method I/O.
        stats: execution-plan counts (see :class:`ProgramStats`).
        files: other artifacts saved beside the ``.pte`` for the reference check
            (keys: ``"quantized_program"`` -> ``.pt2``, ``"reference"`` -> ``.npz`` with
            ``input_<i>``/``output_<i>`` arrays for the sample's deterministic inputs and
            ``reference_kind``; Cortex-M: ``"lowered_program"`` -> ``.lowered.pt2``, the lowered
            edge program the reference outputs come from, see armgen.model.lowered_program; Ethos-U:
            ``"host_program"``, ``"float_program"`` and ``"delegate<i>_tosa"``, see armgen.model.npu_host).
        warnings: human-readable warnings raised while compiling.
        placement: where each call runs (library, dtype, MACs, layer), in execution order.
        quality: the quantized program against the float model on the calibration inputs, one
            :meth:`armgen.model.quality.OutputQuality.to_json` dict per output (max abs error in output
            units, SNR in dB, top-1 agreement 0..1 for a classifier).
        classifier: the outputs are class scores (a sample with class labels; a user model with one
            2-D output). calibration_samples: how many inputs calibrated the int8 ranges (0: unknown).
        untrained_weights: a built-in sample compiled with fixed-seed weights (no trained file found):
            its outputs are meaningless.
        method_allocator: the method/temp pool need replayed from the program (None in reports
            written before it was recorded; :func:`armgen.model.method_allocator.with_method_allocator`
            adds it).
        activation_lower_bound: bytes: the largest sum of planned tensors live at one instruction, which no
            memory plan of this graph and order can beat (:mod:`armgen.model.activation_bound`); None in
            reports written before it was recorded.
    """

    name: str
    pte_file: str
    pte_size: int
    pte_sha256: str
    file_identifier: str
    executorch_version: str
    backend: Literal["cortex-m", "ethos-u"]
    target: str
    cpu: str
    method: str
    operators: tuple[OperatorInfo, ...]
    delegates: tuple[DelegateInfo, ...]
    planned_buffers: tuple[int, ...]
    constant_data_size: int
    inputs: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]
    stats: ProgramStats
    files: dict[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    method_allocator: MethodAllocatorPlan | None = None
    placement: tuple[OpPlacement, ...] = ()
    untrained_weights: bool = False
    quality: tuple[dict[str, Any], ...] = ()
    classifier: bool = False
    calibration_samples: int = 0
    activation_lower_bound: int | None = None
    schema_version: int = SCHEMA_VERSION

    # ---- serialization -------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict (tuples become lists)."""
        return asdict(self)

    def to_json(self) -> str:
        """Return deterministic JSON text (sorted keys, 2-space indent, trailing newline)."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProgramReport:
        """Build a report from :meth:`to_dict` output.

        Raises:
            ValueError: on a schema version this armgen does not read.
        """
        if data.get("schema_version") != SCHEMA_VERSION:
            raise ValueError(f"program report schema {data.get('schema_version')} != {SCHEMA_VERSION}")

        def tensors(items: list[dict[str, Any]]) -> tuple[TensorInfo, ...]:
            return tuple(
                TensorInfo(**{**t, "shape": tuple(t["shape"]), "dim_order": tuple(t["dim_order"])})
                for t in items
            )

        delegates = tuple(
            DelegateInfo(
                backend_id=d["backend_id"],
                blob_size=d["blob_size"],
                vela=VelaInfo.from_dict(d["vela"]) if d.get("vela") else None,
            )
            for d in data["delegates"]
        )
        return cls(
            name=data["name"],
            pte_file=data["pte_file"],
            pte_size=data["pte_size"],
            pte_sha256=data["pte_sha256"],
            file_identifier=data["file_identifier"],
            executorch_version=data["executorch_version"],
            backend=data["backend"],
            target=data["target"],
            cpu=data["cpu"],
            method=data["method"],
            operators=tuple(OperatorInfo(**o) for o in data["operators"]),
            delegates=delegates,
            planned_buffers=tuple(data["planned_buffers"]),
            constant_data_size=data["constant_data_size"],
            inputs=tensors(data["inputs"]),
            outputs=tensors(data["outputs"]),
            stats=ProgramStats(**data["stats"]),
            files=dict(data.get("files", {})),
            warnings=tuple(data.get("warnings", ())),
            method_allocator=MethodAllocatorPlan(**data["method_allocator"]) if data.get("method_allocator") else None,
            placement=tuple(OpPlacement(**r) for r in data.get("placement", ())),
            untrained_weights=bool(data.get("untrained_weights", False)),
            quality=tuple(dict(q) for q in data.get("quality", ())),
            classifier=bool(data.get("classifier", False)),
            calibration_samples=int(data.get("calibration_samples", 0)),
            activation_lower_bound=data.get("activation_lower_bound"),
            schema_version=data["schema_version"],
        )

    @classmethod
    def load(cls, path: Path) -> ProgramReport:
        """Read ``<name>.report.json``.

        Raises:
            OSError: when the file cannot be read. ValueError/KeyError: on malformed content.
        """
        return cls.from_dict(json.loads(Path(path).read_text()))

    @staticmethod
    def identity(path: Path) -> tuple[str, str]:
        """``(file_identifier, executorch_version)`` of the report at ``path``, read without the rest
        (a build checks them against its workspace before anything else).

        Raises:
            OSError: the file cannot be read. ValueError/KeyError: not a report.
        """
        data = json.loads(Path(path).read_text())
        return str(data["file_identifier"]), str(data.get("executorch_version", ""))

    def save(self, path: Path) -> None:
        """Write the report as deterministic JSON to ``path``."""
        Path(path).write_text(self.to_json())

    # ---- derived views -------------------------------------------------------------------
    @property
    def uses_npu(self) -> bool:
        """The program has an Ethos-U delegate (``EthosUBackend``): its NPU command streams need the NPU."""
        return any(d.backend_id == "EthosUBackend" for d in self.delegates)

    @property
    def selected_operators(self) -> tuple[str, ...]:
        """Non-delegated, non-prim operators as ``name.overload``, sorted (selected-ops YAML keys)."""
        return tuple(sorted(f"{o.name}.{o.overload}" for o in self.operators if o.library != "prim"))

    @property
    def temp_allocator_size(self) -> int:
        """Bytes the temp allocator must hold: the largest Ethos-U scratch of any one delegate call.

        ExecuTorch resets the temp allocator after every instruction (``Method::step`` in
        ``runtime/executor/method.cpp``), and ``EthosUBackend::execute`` takes the scratch with
        ``temp_allocator->allocate(scratch_data_size, 16)`` (``backends/arm/runtime/EthosUBackend.cpp``),
        so delegate calls never hold scratch at the same time: the need is the maximum, rounded up
        to 16 bytes, not the sum. 0 on the Cortex-M path (CMSIS-NN scratch is memory-planned).
        """
        sizes = [d.vela.scratch_size for d in self.delegates if d.vela is not None]
        return (max(sizes) + 15) // 16 * 16 if sizes else 0

"""Vela, the Ethos-U compiler, as the compile stage drives it: the compile spec it is given and the
summary it prints.

ExecuTorch's ``EthosUPartitioner`` runs Vela on each delegated part of the program with an
``EthosUCompileSpec`` (:func:`ethos_u_compile_spec`); Vela prints one network summary per delegate,
which :func:`parse_vela_summary` reads into bytes and cycles and :func:`vela_infos` turns into the
report's :class:`~armgen.model.program_report.VelaInfo` records.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import os
import re
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np

from armgen.errors import ModelError
from armgen.model.inspect_program import iter_vela_blocks
from armgen.model.program_report import VelaInfo, VelaLayer

#: Vela's memory areas in its performance database (column prefixes of ``perf_debug``), in the
#: order reports list them. ``shram`` (the NPU's internal buffer) is not a system memory and left out.
MEMORY_AREAS = ("Sram", "Dram", "OnChipFlash", "OffChipFlash")
#: What a layer reads from an area: these ``perf_debug`` columns, each prefixed by the area.
_READ_KINDS = ("FeatureMap_read", "Weights_read", "Scales_read", "Lut_read")

_VELA_PATTERNS = {
    "sram_bytes": re.compile(r"^Total SRAM used\s+([\d.]+)\s+KiB", re.M),
    "flash_bytes": re.compile(r"^Total (?:Off-chip Flash|On-chip Flash|DRAM) used\s+([\d.]+)\s+KiB", re.M),
    "cycles": re.compile(r"^Total cycles\s+(\d+)\s+cycles/batch", re.M),
}


def parse_vela_summary(text: str) -> list[dict[str, int | None]]:
    """Parse Vela's printed network summaries (one per delegate) into bytes/cycles.

    Vela prints sizes in KiB with two decimals; they are converted to bytes (rounded), so they
    are estimates, not exact sizes. The exact sizes come from the delegate blob.
    """
    out = []
    for chunk in re.split(r"(?=^Network summary for)", text, flags=re.M):
        if not chunk.startswith("Network summary for"):
            continue
        facts: dict[str, int | None] = {}
        for key, pat in _VELA_PATTERNS.items():
            m = pat.search(chunk)
            if m is None:
                facts[key] = None
            elif key == "cycles":
                facts[key] = int(m.group(1))
            else:
                facts[key] = int(round(float(m.group(1)) * 1024))
        out.append(facts)
    return out


def ethos_u_compile_spec(
    target: str, system_config: str | None, memory_mode: str | None, vela_config_file: str | None
) -> Any:
    """ExecuTorch's ``EthosUCompileSpec`` for ``target`` (``ethos-u55-128``, ...); None system config or
    memory mode takes upstream's default for the NPU."""
    from executorch.backends.arm.ethosu import EthosUCompileSpec

    # --verbose-cycle-estimate makes Vela print its cycle estimate in the network summary.
    kwargs: dict[str, Any] = {
        "system_config": system_config,
        "memory_mode": memory_mode,
        "extra_flags": ["--verbose-cycle-estimate"],
    }
    if vela_config_file is not None:
        kwargs["config_ini"] = str(vela_config_file)
    return EthosUCompileSpec(target, **kwargs)


def compile_flag(spec: Any, key: str) -> str:
    """The value of Vela flag ``key`` (``--system-config``) in the compile spec; "" when absent."""
    for f in spec.compiler_flags:
        if f.startswith(key + "="):
            return f.split("=", 1)[1]
    return ""


def vela_infos(target: str, spec: Any, vela_text: io.StringIO, notes: list[str]) -> tuple[VelaInfo, ...]:
    """Vela's per-delegate summary (cycles, SRAM and flash bytes) of an Ethos-U program, from what Vela
    printed into ``vela_text``; appends a note naming the configuration to ``notes``."""
    summaries = parse_vela_summary(vela_text.getvalue())
    sysc, mode = compile_flag(spec, "--system-config"), compile_flag(spec, "--memory-mode")
    notes.append(f"Vela: {target}, system config {sysc}, memory mode {mode}")
    return tuple(
        VelaInfo(
            accelerator_config=target, system_config=sysc, memory_mode=mode, scratch_size=0,
            fast_scratch_size=0, command_stream_size=0, weights_size=0,
            cycles=s["cycles"], sram_bytes=s["sram_bytes"], flash_bytes=s["flash_bytes"],
        )
        for s in summaries
    )


def clean_vela_text(text: str) -> str:
    """Keep Vela's printed summary, dropping temp-dir paths so the file is deterministic."""
    lines = [re.sub(r"/tmp[^\s]*", "<tmp>", line.rstrip()) for line in text.splitlines()]
    return "\n".join(lines).strip() + "\n"


def _db_tables(xml_text: str) -> dict[str, list[dict[str, str]]]:
    """The tables of Vela's ``<name>_debug.xml`` (CSV inside CDATA) as rows of ``{column: text}``."""
    tables = {}
    for table in ET.fromstring(xml_text).iter("table"):
        rows = list(csv.reader(io.StringIO((table.text or "").strip())))
        if rows:
            tables[str(table.get("name"))] = [dict(zip(rows[0], r, strict=False)) for r in rows[1:]]
    return tables


def _int(text: str | None) -> int:
    try:
        return int(float(text)) if text else 0
    except ValueError:
        return 0


#: Names Vela gives operations it makes itself (a process-wide serial number), not a TOSA tensor's name.
_VELA_SERIAL_NAME = re.compile(r"#\d+")


def layers_from_debug_db(xml_text: str) -> tuple[VelaLayer, ...]:
    """Vela's per-layer estimates from its performance database (tables ``perf``, ``perf_debug`` and
    ``source``, joined as ethos-u-vela 5.1.0's ``stats_writer.postprocess_regor_performance_database``
    joins them for ``_per-layer.csv``), in Vela's order."""
    tables = _db_tables(xml_text)
    debug = {r.get("id"): r for r in tables.get("perf_debug", [])}
    source = {r.get("id"): r.get("operator", "") for r in tables.get("source", [])}
    layers: list[VelaLayer] = []
    for row in tables.get("perf", []):
        d = debug.get(row.get("id"), {})
        reads = {area: sum(_int(d.get(area + kind)) for kind in _READ_KINDS) for area in MEMORY_AREAS}
        name = row.get("name", "")
        if _VELA_SERIAL_NAME.fullmatch(name):
            # an operation Vela made itself: "#<n>" numbers it in Vela's whole process, so the same
            # program compiled after other programs got another number (a report that differed)
            name = f"(Vela op {len(layers)})"
        layers.append(VelaLayer(
            name=name, original_op=source.get(row.get("source_id"), "") or "",
            npu_op=row.get("operator", ""), cycles=_int(row.get("op_cycles")), npu_cycles=_int(row.get("npu_cycles")),
            macs=_int(row.get("mac_count")), read_bytes={k: v for k, v in reads.items() if v or f"{k}_ac" in row},
        ))
    return tuple(layers)


def _config_file(spec: Any) -> str:
    """The Vela ``.ini`` of the compile spec (``--config=``), or Vela's built-in ``Arm/vela.ini``."""
    from ethosu.vela.architecture_features import CONFIG_FILES_PATH

    path = compile_flag(spec, "--config")  # ExecuTorch names Vela's own as "Arm/vela.ini", relative to it
    if not path:
        return "Arm/vela.ini (Vela built-in)"
    if not Path(path).is_absolute() and (Path(CONFIG_FILES_PATH) / path).is_file():
        return f"{path} (Vela built-in)"
    return Path(path).name


def per_layer_estimates(
    tosa: bytes, spec: Any, blob: bytes, what: str
) -> tuple[tuple[VelaLayer, ...], float | None]:
    """Vela's per-layer estimates for one delegate: Vela run again on the delegate's TOSA graph with the
    compile spec's own flags, plus ``--verbose-performance --enable-debug-db`` (ExecuTorch's
    ``arm_vela.vela_compile`` runs every delegate in one folder under one name, so each delegate's
    per-layer files would overwrite the last one's). The second compile must give the very command
    stream the ``.pte``'s blob holds, else it is refused.

    Returns:
        (the layers, the NPU clock the system config assumes in Hz, None when not read).

    Raises:
        ModelError: Vela fails, writes no performance database, or its command stream differs from the blob's.
    """
    from ethosu.vela import vela as vela_cli

    with tempfile.TemporaryDirectory(prefix="armgen-vela-") as tmp:
        graph = Path(tmp) / "delegate.tosa"
        graph.write_bytes(tosa)
        args = [*spec.compiler_flags, "--verbose-performance", "--enable-debug-db", f"--output-dir={tmp}/out",
                str(graph)]
        text = io.StringIO()
        try:
            with contextlib.redirect_stdout(text):
                vela_cli.main(" ".join(args).split(" "))  # as arm_vela.vela_compile calls it
            db = (Path(tmp) / "out" / "delegate_debug.xml").read_text()
            with np.load(Path(tmp) / "out" / "delegate_vela.npz") as npz:
                cmd = npz["cmd_data"].tobytes()
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - Vela raises many types
            raise ModelError(f"Vela's per-layer estimate of {what} failed: {type(exc).__name__}: {exc}") from None
    if cmd != dict(iter_vela_blocks(blob)).get("cmd_data"):
        raise ModelError(f"Vela compiled {what}'s TOSA graph to another command stream than the program's")
    m = re.search(r"^Accelerator clock\s+([\d.]+)\s+MHz", text.getvalue(), re.M)
    return layers_from_debug_db(db), float(m.group(1)) * 1e6 if m else None


def with_per_layer(
    infos: tuple[VelaInfo, ...], tosa: tuple[bytes, ...], blobs: list[bytes], spec: Any
) -> tuple[VelaInfo, ...]:
    """``infos`` (one per delegate) with Vela's per-layer estimates, config file and clock added.

    Raises:
        ModelError: as :func:`per_layer_estimates`; or the delegate counts differ.
    """
    if not (len(infos) == len(tosa) == len(blobs)):
        raise ModelError(f"Vela printed {len(infos)} summaries for {len(tosa)} delegates")
    out = []
    for i, (info, graph, blob) in enumerate(zip(infos, tosa, blobs, strict=True)):
        layers, clock = per_layer_estimates(graph, spec, blob, f"delegate {i}")
        out.append(dataclasses.replace(info, layers=layers, config_file=_config_file(spec), vela_clock_hz=clock))
    return tuple(out)


def raised_in_vela(exc: BaseException) -> bool:
    """Whether ``exc`` was raised inside Vela (the ``ethosu.vela`` package of ``ethos-u-vela``), which
    ExecuTorch's Ethos-U backend calls from ``preprocess`` (``backends/arm/arm_vela.py``: ``vela.main``).
    ExecuTorch's own ``executorch/backends/arm/ethosu/`` (the backend and its passes) is not Vela: a
    failure of an Arm pass there once got Vela's hint ("check the Vela system config")."""
    import importlib.util

    spec = importlib.util.find_spec("ethosu")
    roots = [os.path.join(p, "") for p in (spec.submodule_search_locations or [])] if spec else []
    tb = exc.__traceback__
    while tb is not None:
        if any(tb.tb_frame.f_code.co_filename.startswith(r) for r in roots):
            return True
        tb = tb.tb_next
    return False


def reporting_partitioner(spec: Any, rejected: dict[str, str]) -> Any:
    """ExecuTorch's ``EthosUPartitioner`` for ``spec`` that records, into ``rejected`` (node name ->
    reason), why it left each node out of the NPU partitions: its ``partition`` makes a
    ``WhyNoPartitionReporter`` and only logs it (``backends/arm/tosa/partitioner.py``, executorch 1.5.1;
    ``_tag_module`` is handed the reporter)."""
    from executorch.backends.arm.ethosu import EthosUPartitioner

    class ReportingPartitioner(EthosUPartitioner):
        def _tag_module(self, graph_module: Any, containing_program: Any, reporter: Any, *args: Any,
                        **kwargs: Any) -> Any:
            tags = super()._tag_module(graph_module, containing_program, reporter, *args, **kwargs)
            # the reporter's own record ({node: reason}); it has no public accessor, only a text table. Only
            # operators: its inputs and output are "rejected" too ("Not included in BaseTOSASupportList").
            rejected.update({n.name: str(why) for n, why in reporter._rejected_nodes.items()
                             if n.op == "call_function"})
            return tags

    return ReportingPartitioner(spec)

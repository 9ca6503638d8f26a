"""Vela, the Ethos-U compiler, as the compile stage drives it: the compile spec it is given and the
summary it prints.

ExecuTorch's ``EthosUPartitioner`` runs Vela on each delegated part of the program with an
``EthosUCompileSpec`` (:func:`ethos_u_compile_spec`); Vela prints one network summary per delegate,
which :func:`parse_vela_summary` reads into bytes and cycles and :func:`vela_infos` turns into the
report's :class:`~armgen.model.program_report.VelaInfo` records.
"""

from __future__ import annotations

import io
import re
from typing import Any

from armgen.model.program_report import VelaInfo

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

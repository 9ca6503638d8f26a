#!/usr/bin/env python3
"""TFLite Micro's tensor arena by allocation kind, for the MLPerf Tiny samples on both QEMU machines.

armgen's method pool is split by kind from the program (``armgen.model.method_allocator_breakdown``,
in ``results.json``); this is TFLM's side of the same question. It builds the main run's TFLM runner
(``benchlib.tflm``) again, in a build tree of its own, with ``TFLM_RECORD_ARENA=ON``: the runner then uses
TFLM's own ``RecordingMicroInterpreter`` and prints, after one inference, the bytes and counts TFLM's
``RecordingMicroAllocator`` recorded per ``RecordedAllocationType`` and the arena's persistent
(tail) and non-persistent (head: activations and scratch) use. Writes ``tflm_arena.json``, which
``report.py`` renders beside armgen's method-pool table. The recording allocator's own objects add
``recording_overhead`` bytes to the persistent figure; they are reported, not hidden.

    ARMGEN_BENCH_MODELS=... benchmarks/tflm_arena.py [--samples kws,vww,ic,ad] [--machines an547,an386]

Needs the same workspace as the main run's TFLM side (``armgen workspace init --benchmarks``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from benchlib.cli import script_arguments
from benchlib.commands import log
from benchlib.results import write_side_result
from benchlib.tflm import TFLM_PROBE_ARENA, Tflm

_KIND = re.compile(r"^ARMGEN arena_kind (\S+) bytes=(\d+) count=(\d+)$", re.MULTILINE)
_SPLIT = re.compile(r"^ARMGEN arena_split persistent=(\d+) nonpersistent=(\d+) recording_overhead=(\d+)$",
                    re.MULTILINE)


def measure(machines: list[str], samples: list[str], cache: Path, jobs: int) -> dict[str, Any]:
    """Build the recording runner per machine, run each model once, parse its arena lines."""
    tflm = Tflm(cache / "tflm-record", jobs)
    tflm.extra_defs = {"TFLM_RECORD_ARENA": "ON"}
    out: dict[str, Any] = {}
    for m in machines:
        arenas = {s: TFLM_PROBE_ARENA[m] for s in samples}
        bdir, _ = tflm.configure(m, samples, arenas)
        log(f"TFLM {m}: building the recording runners")
        tflm.build(bdir, [f"tflm_{s}" for s in samples])
        for s in samples:
            run, fw = tflm.run_elf(bdir / f"tflm_{s}.elf", m)
            split = _SPLIT.search(run.console)
            if not fw.done or split is None:
                raise SystemExit(f"tflm_arena: {s} on {m} failed:\n{run.console[-2000:]}")
            persistent, nonpersistent, overhead = (int(x) for x in split.groups())
            out.setdefault(m, {})[s] = {
                "kinds": {k: {"bytes": int(b), "count": int(c)} for k, b, c in _KIND.findall(run.console)},
                "persistent": persistent,
                "nonpersistent": nonpersistent,
                "recording_overhead": overhead,
            }
            log(f"TFLM {m} {s}: persistent {persistent} B (recording overhead {overhead} B), "
                      f"non-persistent {nonpersistent} B")
    return out


def main() -> int:
    a = script_arguments(__doc__.splitlines()[0], "tflm_arena.json")
    res = measure(a.machines.split(","), a.samples.split(","), a.cache, a.jobs)
    res["how"] = ("TFLM runner built with TFLM_RECORD_ARENA=ON (RecordingMicroInterpreter), one inference on QEMU; "
                  "bytes are RecordingMicroAllocator's used_bytes per RecordedAllocationType")
    return write_side_result(a.out, res)


if __name__ == "__main__":
    sys.exit(main())

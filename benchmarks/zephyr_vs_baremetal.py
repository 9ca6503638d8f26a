#!/usr/bin/env python3
"""The MLPerf Tiny samples on QEMU mps3-an547: the generated Zephyr applications against the bare-metal firmware.

Makes each project with the armgen CLI (`new --stack-size auto`, `build`, `size --json`, `run --json`), bare metal
and one Zephyr application per release, and writes `benchmarks/zephyr.json`: flash, flash excluding the model,
static RAM, instructions per inference, the main stack (reserved and high-water, both sized from a measured run),
pool use and per-component flash/RAM of each image, the Zephyr - bare-metal differences and issue 44's targets
(flash excluding the model within 12 KiB, static RAM within 3 KiB, instructions within 2 %). Needs armgen
workspaces with each Zephyr release (`armgen workspace init --zephyr --zephyr-release R`). Not a test: run it by
hand; `benchmarks/run --report-only` then puts the table in results.md.

    benchmarks/zephyr_vs_baremetal.py [--releases 3.7,4.1] [--samples kws,vww,ic,ad] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from benchlib.commands import run
from benchlib.paths import ARMGEN, BENCH_DIR

#: Issue 44's targets for a Zephyr image against the bare-metal one (both stacks sized from evidence).
TARGETS = {"instructions_ratio_max": 1.02, "ram_delta_max": 3 * 1024, "flash_excl_model_delta_max": 12 * 1024}


def _armgen(*args: str, cwd: Path) -> tuple[str, float]:
    """The armgen CLI of this Python in ``cwd``: (its stdout, wall seconds); exits when it fails."""
    r, seconds = run([ARMGEN, *args], cwd=cwd, check=False)
    if r.returncode != 0:
        raise SystemExit(f"armgen {' '.join(args)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return r.stdout, round(seconds, 1)


def measure(work: Path, sample: str, rtos: str, release: str) -> dict[str, Any]:
    """new + clean build + size + run of one project; the figures that matter (bytes, instructions)."""
    d = work / (f"{rtos}-{release}" if rtos == "zephyr" else rtos)
    d.mkdir(parents=True, exist_ok=True)
    extra = ["--zephyr-release", release] if rtos == "zephyr" else []
    _, t_new = _armgen("new", sample, "--board", "qemu_mps3_an547", "--rtos", rtos, *extra, "--stack-size", "auto",
                       "--force", cwd=d)
    _, t_build = _armgen("build", sample, "--rebuild", cwd=d)
    size = json.loads(_armgen("size", sample, "--json", cwd=d)[0])["report"]
    run = json.loads(_armgen("run", sample, "--json", cwd=d)[0])
    comps = size["components"]
    return {
        "command": f"armgen new {sample} --board qemu_mps3_an547 --rtos {rtos} {' '.join(extra)} --stack-size auto",
        "flash": size["flash"],
        "flash_excl_model": size["flash"] - comps["model"]["flash"],
        "ram": size["ram"],
        "instructions": run["instructions"],
        "max_lsb_diff": run["max_lsb_diff"],
        "firmware": run["firmware"],
        "stack_used": run["stack"]["used"] if run.get("stack") else None,
        "stack_reserved": run["stack"]["reserved"] if run.get("stack") else None,
        "pools": {p["name"]: {"reserved": p["reserved"], "used": p["used"]} for p in run["pools"]},
        "stacks": size.get("stacks", []),
        "components": comps,
        "seconds": {"new": t_new, "clean_build": t_build},
        "stack_sizing": json.loads((d / sample / "build" / "stack.json").read_text())
        if (d / sample / "build" / "stack.json").is_file() else None,
    }


def _delta(bm: dict[str, Any], zp: dict[str, Any]) -> dict[str, Any]:
    return {
        "instructions_ratio": round(zp["instructions"] / bm["instructions"], 4),
        "ram_delta": zp["ram"] - bm["ram"],
        "flash_excl_model_delta": zp["flash_excl_model"] - bm["flash_excl_model"],
        "components_flash_delta": {
            k: zp["components"].get(k, {}).get("flash", 0) - bm["components"].get(k, {}).get("flash", 0)
            for k in sorted(set(zp["components"]) | set(bm["components"]))
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--releases", default="3.7,4.1", help="Zephyr releases, comma-separated")
    ap.add_argument("--samples", default="kws,vww,ic,ad", help="samples, comma-separated")
    ap.add_argument("--work", type=Path, default=None, help="work directory (default: a temporary one)")
    ap.add_argument("--out", type=Path, default=BENCH_DIR / "zephyr.json")
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="armgen-bench-zephyr-"))
    releases = [r for r in args.releases.split(",") if r]
    runs: dict[str, dict[str, Any]] = {}
    delta: dict[str, dict[str, Any]] = {}
    met: dict[str, dict[str, Any]] = {}
    for sample in [s for s in args.samples.split(",") if s]:
        bm = measure(work, sample, "baremetal", "")
        runs[sample] = {"baremetal": bm}
        for release in releases:
            zp = measure(work, sample, "zephyr", release)
            runs[sample][f"zephyr-{release}"] = zp
            d = _delta(bm, zp)
            delta.setdefault(sample, {})[release] = d
            met.setdefault(sample, {})[release] = {
                "instructions": d["instructions_ratio"] <= TARGETS["instructions_ratio_max"],
                "ram": d["ram_delta"] <= TARGETS["ram_delta_max"],
                "flash_excl_model": d["flash_excl_model_delta"] <= TARGETS["flash_excl_model_delta_max"],
            }
    result = {"schema": 2, "machine": "qemu mps3-an547 (-icount shift=0)", "zephyr_releases": releases,
              "runs": runs, "delta": delta, "targets": TARGETS, "met": met,
              "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(json.dumps({"delta": {s: {r: {k: v for k, v in d.items() if k != "components_flash_delta"}
                                    for r, d in per.items()} for s, per in delta.items()}, "met": met}, indent=2))


if __name__ == "__main__":
    main()

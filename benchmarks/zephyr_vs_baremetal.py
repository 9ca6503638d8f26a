#!/usr/bin/env python3
"""kws on QEMU mps3-an547: the generated Zephyr application against the bare-metal firmware.

Makes both projects with the armgen CLI (`new`, `build`, `size --json`, `run --json`), and writes
`benchmarks/zephyr.json`: flash, flash excluding the model, static RAM, instructions per inference,
stack high-water mark, pool use and per-component flash/RAM of each image, the Zephyr - bare-metal
differences and the issue's targets (instructions within 3 %, RAM within 8 KiB, flash excluding the
model within 40 KiB). Needs an armgen workspace with Zephyr (`armgen workspace init --zephyr
--zephyr-release 3.7`). Not a test: run it by hand.

    benchmarks/zephyr_vs_baremetal.py [--release 3.7] [--work DIR] [--sample kws]
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

TARGETS = {"instructions_ratio_max": 1.03, "ram_delta_max": 8 * 1024, "flash_excl_model_delta_max": 40 * 1024}


def _armgen(*args: str, cwd: Path) -> tuple[str, float]:
    """The armgen CLI of this Python in ``cwd``: (its stdout, wall seconds); exits when it fails."""
    r, seconds = run([ARMGEN, *args], cwd=cwd, check=False)
    if r.returncode != 0:
        raise SystemExit(f"armgen {' '.join(args)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return r.stdout, round(seconds, 1)


def measure(work: Path, sample: str, rtos: str, release: str) -> dict[str, Any]:
    """new + clean build + size + run of one project; the figures that matter (bytes, instructions)."""
    d = work / rtos
    d.mkdir(parents=True, exist_ok=True)
    extra = ["--zephyr-release", release] if rtos == "zephyr" else []
    _, t_new = _armgen("new", sample, "--board", "qemu_mps3_an547", "--rtos", rtos, *extra, "--force", cwd=d)
    _, t_build = _armgen("build", sample, "--rebuild", cwd=d)
    size = json.loads(_armgen("size", sample, "--json", cwd=d)[0])["report"]
    run = json.loads(_armgen("run", sample, "--json", cwd=d)[0])
    comps = size["components"]
    return {
        "command": f"armgen new {sample} --board qemu_mps3_an547 --rtos {rtos} {' '.join(extra)}".strip(),
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
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--release", default="3.7")
    ap.add_argument("--sample", default="kws")
    ap.add_argument("--work", type=Path, default=None, help="work directory (default: a temporary one)")
    ap.add_argument("--out", type=Path, default=BENCH_DIR / "zephyr.json")
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="armgen-bench-zephyr-"))
    bm = measure(work, args.sample, "baremetal", args.release)
    zp = measure(work, args.sample, "zephyr", args.release)
    delta = {
        "instructions_ratio": round(zp["instructions"] / bm["instructions"], 4),
        "ram_delta": zp["ram"] - bm["ram"],
        "flash_excl_model_delta": zp["flash_excl_model"] - bm["flash_excl_model"],
        "components_flash_delta": {
            k: zp["components"].get(k, {}).get("flash", 0) - bm["components"].get(k, {}).get("flash", 0)
            for k in sorted(set(zp["components"]) | set(bm["components"]))
        },
    }
    met = {
        "instructions": delta["instructions_ratio"] <= TARGETS["instructions_ratio_max"],
        "ram": delta["ram_delta"] <= TARGETS["ram_delta_max"],
        "flash_excl_model": delta["flash_excl_model_delta"] <= TARGETS["flash_excl_model_delta_max"],
    }
    result = {"sample": args.sample, "machine": "qemu mps3-an547 (-icount shift=0)", "zephyr_release": args.release,
              "baremetal": bm, "zephyr": zp, "delta": delta, "targets": TARGETS, "met": met,
              "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(json.dumps({"delta": delta, "met": met}, indent=2))


if __name__ == "__main__":
    main()

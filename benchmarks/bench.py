"""armgen benchmarks: flash, RAM, pool waste and instruction counts of the MLPerf Tiny samples.

Run through ``benchmarks/run`` (see benchmarks/README.md). Needs an armgen workspace (``armgen
workspace init --benchmarks``), arm-none-eabi-gcc, cmake + ninja (Debian's) and qemu-system-arm.
Not a test: CI never runs it.

Parts (each can be skipped):
  tflm     TFLite Micro + CMSIS-NN runners for the int8 MLPerf Tiny .tflite models (benchmarks/tflm/)
  armgen   `armgen new` + clean `armgen build` + `armgen size --json` + `armgen run --json`
  compare  selective vs all portable ops, exact pools vs upstream defaults, CMSIS-NN vs portable
           lowering, Vela estimates
Writes benchmarks/results.json, benchmarks/results.md and benchmarks/results.svg (or into --out).
Builds are cached under ~/.cache/armgen-bench (or $ARMGEN_BENCH_CACHE / --cache).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchlib.armgen_projects import Armgen, backfill_product_runs
from benchlib.commands import log
from benchlib.compare import Compare
from benchlib.paths import BENCH_DIR, default_cache, models_dir_set, without_machine_paths
from benchlib.pools import compare_pools
from benchlib.report import write_report
from benchlib.results import load_results, merge_results, run_meta, save_results
from benchlib.samples import MACHINES, TFLM_MODELS
from benchlib.tflm import Tflm


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="benchmarks/run", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", default="kws,vww,ic,ad", help="comma-separated subset of kws,vww,ic,ad")
    ap.add_argument("--machines", default="an547,an386", help="comma-separated subset of an547,an386")
    ap.add_argument("--skip-tflm", action="store_true")
    ap.add_argument("--skip-armgen", action="store_true")
    ap.add_argument("--skip-compare", action="store_true")
    ap.add_argument("--tflm-libc", choices=["nano", "full"], default="nano")
    ap.add_argument("--clean", action="store_true",
                    help="delete cached TFLM build trees first and start results.json afresh")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--cache", type=Path, default=default_cache())
    ap.add_argument("--out", type=Path, default=BENCH_DIR, help="where results.{json,md,svg} go")
    ap.add_argument("--reuse", action="store_true",
                    help="keep existing armgen projects/ELFs in the cache (times of skipped steps come from "
                         "results.json)")
    ap.add_argument("--compare", default="pools,allportable,portable,profile,vela",
                    help="comparisons to run: pools, allportable, portable, profile, vela")
    ap.add_argument("--allportable-machines", default="an547", help="machines for the all-portable-ops build (slow)")
    ap.add_argument("--merge", type=Path, nargs="+", metavar="RESULTS_JSON",
                    help="merge results.json files of partial runs (later files win) into --out, then render")
    ap.add_argument("--report-only", action="store_true",
                    help="only regenerate results.md and the plot from results.json")
    return ap.parse_args(argv)


def measure_tflm(a: argparse.Namespace, machines: list[str], samples: list[str], results: dict[str, Any]) -> None:
    """TFLM's runners (newlib-nano into ``tflm``, full newlib into ``tflm_full_newlib``)."""
    got = Tflm(a.cache, a.jobs, a.tflm_libc).measure(machines, samples, a.clean)
    key = "tflm" if a.tflm_libc == "nano" else "tflm_full_newlib"
    for m, per in got.items():
        results.setdefault(key, {}).setdefault(m, {}).update(per)


def run_comparisons(a: argparse.Namespace, ag: Armgen, machines: list[str], samples: list[str],
                    results: dict[str, Any], save: Callable[[], None]) -> None:
    """The ``--compare`` comparisons, each saved as soon as it is measured; kws's armgen entry is the base."""
    which = set(a.compare.split(","))
    cmp_ = Compare(ag, a.cache)
    c = results.setdefault("compare", {})
    if "pools" in which and results.get("armgen"):
        c["pools"] = compare_pools(results["armgen"])
        save()
    for m in machines:
        base = results.get("armgen", {}).get(m, {}).get("kws")
        if base is None:
            continue
        if "allportable" in which and m in a.allportable_machines.split(","):
            c.setdefault("all_portable", {})[m] = {"kws": cmp_.all_portable(m, "kws", base)}
            save()
        if "portable" in which:
            c.setdefault("portable_lowering", {})[m] = {"kws": cmp_.portable_lowering(m, "kws", base)}
            save()
        if "profile" in which:
            tf = results.get("tflm", {}).get(m, {}).get("kws")
            c.setdefault("profile", {})[m] = {"kws": cmp_.profile(m, "kws", base, tf)}
            save()
    if "vela" in which:
        c["vela"] = cmp_.vela([x for x in ("kws", "vww") if x in samples] or ["kws", "vww"])
        save()


def measure(a: argparse.Namespace, args: list[str], machines: list[str], samples: list[str],
            results: dict[str, Any], save: Callable[[], None]) -> None:
    """One measuring run: its meta record, then TFLM, armgen and the comparisons (as not skipped)."""
    results["meta"] = run_meta(args, a.jobs)
    if not a.skip_tflm:
        measure_tflm(a, machines, samples, results)
        save()
    ag = Armgen(a.cache, a.jobs, a.reuse)
    if not a.skip_armgen:
        def save_one(m: str, s: str, e: dict[str, Any]) -> None:
            results.setdefault("armgen", {}).setdefault(m, {})[s] = e
            save()

        ag.measure(machines, samples, results.get("armgen", {}), save_one)
    if not a.skip_compare:
        run_comparisons(a, ag, machines, samples, results, save)


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    if not models_dir_set():
        raise SystemExit("bench: set ARMGEN_BENCH_MODELS (or ARMGEN_MLPERF_DIR) to the MLPerf Tiny .tflite folder")
    samples = [s for s in a.samples.split(",") if s]
    machines = [m for m in a.machines.split(",") if m]
    for s in samples:
        if s not in TFLM_MODELS:
            raise SystemExit(f"bench: unknown sample {s!r} (kws, vww, ic, ad)")
    for m in machines:
        if m not in MACHINES:
            raise SystemExit(f"bench: unknown machine {m!r} (an547, an386)")
    a.cache.mkdir(parents=True, exist_ok=True)
    a.out.mkdir(parents=True, exist_ok=True)
    res_path = a.out / "results.json"
    # --clean starts from nothing: every figure in results.json is from this run
    results = load_results(res_path, fresh=a.clean)

    def save() -> None:
        save_results(res_path, results)

    if a.merge:
        merge_results(results, a.merge)
        save()
    elif not a.report_only:
        measure(a, argv if argv is not None else sys.argv[1:], machines, samples, results, save)
    backfill_product_runs(results, a.cache)
    if a.report_only:
        save()
    # results.md/.svg from the same machine-path-free form as results.json
    written = write_report(json.loads(without_machine_paths(json.dumps(results))), a.out)
    log(f"wrote {', '.join(str(p) for p in [res_path, *written])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

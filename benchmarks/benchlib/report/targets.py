"""The target list of issue 8, each with the measured value and a verdict."""

from __future__ import annotations

from typing import Any

from .cells import KIB, MACHINES, SAMPLES, armgen_value, comp, measured, n


def targets(res: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(target, measured, verdict) rows of the targets of issue 8."""
    rows: list[tuple[str, str, str]] = []
    ag = measured(res, "armgen", "an547", "kws")
    tf = measured(res, "tflm", "an547", "kws")

    def verdict(ok: bool | None) -> str:
        return "–" if ok is None else ("met" if ok else "**missed**")

    if ag:
        ok = ag["ram_static"] <= 36 * KIB and (tf is None or ag["ram_static"] <= tf["ram_static"])
        rows.append((
            "Whole-firmware static RAM for kws on M55 <= 36 KiB (36,864 B) and <= TFLM's "
            "(both stacks sized by one rule)",
            f"{n(ag['ram_static'])} B (TFLM {n(tf['ram_static']) if tf else '–'} B)", verdict(ok)))
        rows.append((
            "Flash excluding the model <= 48 KiB (49,152 B) for kws on M55",
            f"{n(ag['flash_excl_model'])} B", verdict(ag["flash_excl_model"] <= 48 * KIB)))
    for m in ("an547", "an386"):
        cells, oks = [], []
        for s in SAMPLES:
            a, t = measured(res, "armgen", m, s), measured(res, "tflm", m, s)
            if a and t and armgen_value(a, "instructions") and t.get("instructions"):
                ai = armgen_value(a, "instructions")
                cells.append(f"{s} {n(ai)} vs {n(t['instructions'])} ({ai / t['instructions']:.2f}x)")
                oks.append(ai <= t["instructions"])
        if cells:
            rows.append((f"Instructions per inference <= TFLM's on {MACHINES[m]}", "; ".join(cells),
                         verdict(all(oks)) + ("" if all(oks) else f" ({oks.count(False)} of {len(oks)})")))
    if ag:
        rc = comp(ag, "runtime_core")
        rows.append(("ExecuTorch runtime core flash (no kernels, no model) <= 20 KiB (20,480 B), kws M55",
                     f"{n(rc)} B", verdict(rc <= 20 * KIB)))
    pool_cells, pool_ok = [], []
    for m in ("an547", "an386"):
        for s in SAMPLES:
            a = measured(res, "armgen", m, s)
            if not a or not a.get("pools"):
                continue
            planned_unused = sum(v["reserved"] - v["used"] for k, v in a["pools"].items() if k.startswith("planned_"))
            meth = a["pools"].get("method")
            slack = meth["reserved"] - meth["used"] if meth else None
            pool_ok.append(planned_unused == 0 and slack is not None and 0 <= slack <= KIB)
            temp = a["pools"].get("temp")
            pool_cells.append(f"{s}/{m}: planned unused {planned_unused} B, method slack {n(slack)} B"
                              + (f" (temp {n(temp['reserved'] - temp['used'])} B)" if temp else ""))
    if pool_cells:
        rows.append(("Planned-buffer pools 0 B unused; method-allocator pool within 1 KiB of use",
                     "; ".join(pool_cells), verdict(all(pool_ok))))
    ap = res.get("compare", {}).get("all_portable", {})
    for m, per in ap.items():
        c = per.get("kws")
        if c and c.get("kernel_flash_ratio"):
            rows.append((f"Selective build >= 10x smaller in kernel flash than all portable operators (kws, {m})",
                         f"{n(c['selective']['kernel_flash'])} B vs {n(c['all_portable']['kernel_flash'])} B "
                         f"= {c['kernel_flash_ratio']:.1f}x", verdict(c["kernel_flash_ratio"] >= 10)))
    pl = res.get("compare", {}).get("portable_lowering", {})
    for m, per in pl.items():
        c = per.get("kws")
        if c and c.get("instruction_ratio"):
            rows.append((f"CMSIS-NN >= 3x fewer instructions than the portable lowering (kws, {m})",
                         f"{n(c['cmsis_nn']['instructions'])} vs {n(c['portable']['instructions'])} "
                         f"= {c['instruction_ratio']:.1f}x", verdict(c["instruction_ratio"] >= 3)))
    if tf:
        rows.append(("Reproduce the hand-made TFLM kws/M55 build (130,586 B flash with newlib 29,091 B; "
                     "arena 27,352 B; 58,150 ticks)",
                     f"flash {n(tf['flash'])} B (libc {n(comp(tf, 'libc'))} B: nano, no printf), CMSIS-NN "
                     f"{n(comp(tf, 'cmsis_nn'))} B, runtime {n(comp(tf, 'tflm_runtime'))} B, arena used "
                     f"{n(tf['arena_used'])} B, {n(tf['ticks'])} ticks", "reproduced"))
    return rows


"""Render benchmarks/results.json as results.md (tables, targets) and results.svg (flash and RAM plot).

Called by bench.py at the end of every run (and by `benchmarks/run --report-only`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

SAMPLES = ("kws", "vww", "ic", "ad")
MACHINES = {"an547": "qemu_mps3_an547 (Cortex-M55)", "an386": "qemu_mps2_an386 (Cortex-M4)"}
KIB = 1024
FIT_ORDER = {"an547": ["qemu_mps3_an547", "corstone_300", "alif_e8_he"], "an386": ["qemu_mps2_an386", "stm32f4_disco"]}


def n(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:,.2f}"
    return f"{v:,}"


def ratio(a: Any, b: Any) -> str:
    return f"{a / b:.2f}" if a and b else "–"


def table(head: list[str], rows: list[list[Any]], align: str | None = None) -> str:
    align = align or ("l" + "r" * (len(head) - 1))
    sep = ["---:" if c == "r" else "---" for c in align]
    out = ["| " + " | ".join(head) + " |", "| " + " | ".join(sep) + " |"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def comp(e: dict[str, Any], *keys: str) -> int:
    return sum(e.get("components", {}).get(k, {}).get("flash", 0) for k in keys)


def _get(res: dict[str, Any], part: str, m: str, s: str) -> dict[str, Any] | None:
    e = res.get(part, {}).get(m, {}).get(s)
    return None if (e is None or "error" in e) else e


def targets(res: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(target, measured, verdict) rows."""
    rows: list[tuple[str, str, str]] = []
    ag = _get(res, "armgen", "an547", "kws")
    tf = _get(res, "tflm", "an547", "kws")

    def verdict(ok: bool | None) -> str:
        return "–" if ok is None else ("met" if ok else "**missed**")

    if ag:
        ok = ag["ram_static"] <= 36 * KIB and (tf is None or ag["ram_static"] <= tf["ram_static"])
        rows.append((
            "Whole-firmware static RAM for kws on M55 <= 36 KiB (36,864 B) and <= TFLM's (both stacks sized by one rule)",
            f"{n(ag['ram_static'])} B (TFLM {n(tf['ram_static']) if tf else '–'} B)", verdict(ok)))
        rows.append((
            "Flash excluding the model <= 48 KiB (49,152 B) for kws on M55",
            f"{n(ag['flash_excl_model'])} B", verdict(ag["flash_excl_model"] <= 48 * KIB)))
    for m in ("an547", "an386"):
        cells, oks = [], []
        for s in SAMPLES:
            a, t = _get(res, "armgen", m, s), _get(res, "tflm", m, s)
            if a and t and _value(a, "instructions") and t.get("instructions"):
                ai = _value(a, "instructions")
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
            a = _get(res, "armgen", m, s)
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


def _value(a: dict[str, Any], key: str) -> Any:
    """armgen's figure for ``key``; instructions are the product image's (``instructions_product``: input
    written in place before the timed call, as TFLM's runner does), else ``armgen run``'s variant."""
    if key == "instructions":
        return a.get("instructions_product") or a.get("instructions")
    return a.get(key)


def _against_tflm(res: dict[str, Any]) -> list[str]:
    """Issue 15's grid: armgen / TFLM per sample and machine, at or below 1 marked."""
    metrics = (("static RAM", "ram_static"), ("flash excl. model", "flash_excl_model"),
               ("instructions", "instructions"))
    cols = [(m, s) for m in MACHINES for s in SAMPLES]
    rows = []
    for label, key in metrics:
        cells = []
        for m, s in cols:
            a, t = _get(res, "armgen", m, s) or {}, _get(res, "tflm", m, s) or {}
            if _value(a, key) and t.get(key):
                r = _value(a, key) / t[key]
                d = _value(a, key) - t[key]
                cells.append(f"**{r:.3f}** ({d:+,})" if r <= 1 else f"{r:.3f} ({d:+,})")
            else:
                cells.append("–")
        rows.append([label, *cells])
    if all(c == "–" for r in rows for c in r[1:]):
        return []
    return [
        "## armgen / TFLM (issue 15: at or below 1 in bold; the difference in bytes or instructions)\n",
        table(["", *[f"{s} {m[2:]}" for m, s in cols]], rows),
        "",
    ]


def _tflm_lto_rows(res: dict[str, Any], path: Path) -> list[str]:
    """armgen / TFLM built with LTO too (``tflm_lto.py`` writes ``tflm_lto.json``)."""
    import json

    if not path.is_file():
        return []
    d = json.loads(path.read_text())
    cols = [(m, s) for m in MACHINES for s in SAMPLES]
    rows = []
    for label, key in (("static RAM", "ram_static"), ("flash excl. model", "flash_excl_model"),
                       ("instructions", "instructions")):
        cells = []
        for m, s in cols:
            a, t = _get(res, "armgen", m, s) or {}, (d.get(m) or {}).get(s) or {}
            if _value(a, key) and t.get(key):
                r, diff = _value(a, key) / t[key], _value(a, key) - t[key]
                cells.append(f"**{r:.3f}** ({diff:+,})" if r <= 1 else f"{r:.3f} ({diff:+,})")
            else:
                cells.append("–")
        rows.append([label, *cells])
    lto = [[f"{s} / {m}", n(e.get("flash_excl_model")), n(e.get("ram_static")), n(e.get("stack_reserved")),
            n(e.get("instructions")), n(e.get("max_abs_diff_vs_litert"))]
           for m in MACHINES for s in SAMPLES if (e := (d.get(m) or {}).get(s))]
    return [
        "## armgen / TFLM with LTO as well (`tflm_lto.py`; not TFLM's upstream build)\n",
        "armgen links its images with `-flto`; TFLM's Makefile has no such option, so the grid above is armgen's "
        "build against TFLM's. Here TFLM gets the same switch (every target, same arena search and stack rule).\n",
        table(["", *[f"{s} {m[2:]}" for m, s in cols]], rows),
        "",
        table(["TFLM with LTO", "flash excl. model", "static RAM", "stack", "instructions", "max abs. difference vs LiteRT"], lto),
        "",
    ]


def _tflm_arena_rows(path: Path) -> list[str]:
    """TFLM's arena by allocation kind (``tflm_arena.py`` writes ``tflm_arena.json``)."""
    import json

    if not path.is_file():
        return []
    d = json.loads(path.read_text())
    kinds: list[str] = []
    for m in MACHINES:
        for s in SAMPLES:
            kinds += [k for k in ((d.get(m) or {}).get(s) or {}).get("kinds", {}) if k not in kinds]
    rows = []
    for m in MACHINES:
        for s in SAMPLES:
            e = (d.get(m) or {}).get(s)
            if e:
                rows.append([f"{s} / {m}"] + [f"{n(e['kinds'][k]['bytes'])} ({e['kinds'][k]['count']})" if k in e["kinds"]
                                              else "–" for k in kinds]
                            + [n(e["persistent"] - e["recording_overhead"]), n(e["nonpersistent"])])
    return [
        "## TFLM arena by allocation kind (bytes (count), `tflm_arena.py`: TFLM's RecordingMicroAllocator)\n",
        table(["sample / machine", *kinds, "persistent (tail) less recording overhead", "non-persistent (head)"], rows),
        "\nPersistent: what TFLM keeps for the life of the interpreter, the counterpart of armgen's method pool "
        "(per-channel multipliers and shifts are TFLM's persistent buffers; armgen keeps them in the `.pte`, in "
        "flash). Non-persistent: activations and kernel scratch, the counterpart of armgen's planned pools.\n",
    ]


def _zephyr_rows(res: dict[str, Any], path: Path) -> list[str]:
    """kws / an547 as a Zephyr application (``zephyr_vs_baremetal.py`` writes ``zephyr.json``) beside the
    bare-metal and TFLM columns of the main table."""
    import json

    if not path.is_file():
        return []
    z = json.loads(path.read_text())
    ze, ag, tf = z.get("zephyr") or {}, _get(res, "armgen", "an547", "kws") or {}, _get(res, "tflm", "an547", "kws") or {}
    pools = ze.get("pools", {})
    rows = [
        ["flash", n(ag.get("flash")), n(ze.get("flash")), n(tf.get("flash"))],
        ["flash excl. model", n(ag.get("flash_excl_model")), n(ze.get("flash_excl_model")), n(tf.get("flash_excl_model"))],
        ["static RAM", n(ag.get("ram_static")), n(ze.get("ram")), n(tf.get("ram_static"))],
        ["pools (planned + method + temp)", n(sum(p["reserved"] for p in (ag.get("pools") or {}).values()) or None),
         n(sum(p["reserved"] for p in pools.values()) or None), n(tf.get("arena_reserved"))],
        ["main stack reserved / high-water",
         f"{n((ag.get('stack_sizing') or {}).get('reserved'))} / {n((ag.get('stack_sizing') or {}).get('high_water'))}",
         f"{n(ze.get('stack_reserved'))} / {n(ze.get('stack_used'))}",
         f"{n(tf.get('stack_reserved'))} / {n(tf.get('stack_used'))}"],
        ["instructions per inference", n(ag.get("instructions")), n(ze.get("instructions")), n(tf.get("instructions"))],
        ["max LSB vs reference", n(ag.get("max_lsb_diff")), n(ze.get("max_lsb_diff")), n(tf.get("max_abs_diff_vs_litert"))],
    ]
    return [
        f"## kws / an547 as a Zephyr {z.get('zephyr_release', '?')} application (`zephyr_vs_baremetal.py`, "
        f"{z.get('when', '?')})\n",
        table(["", "armgen bare metal", f"armgen Zephyr {z.get('zephyr_release', '?')}", "TFLM"], rows),
        "\nThe Zephyr image keeps its generated `CONFIG_MAIN_STACK_SIZE` (8 KiB; `--stack-size auto` is bare metal "
        "only) and adds the kernel, its own start-up and console. Its column comes from `zephyr.json`, its own run.\n",
    ]


def write_md(res: dict[str, Any], out: Path) -> None:
    meta = res.get("meta", {})
    tools = meta.get("tools", {})
    L: list[str] = []
    L.append("# armgen benchmarks: MLPerf Tiny samples on QEMU, side by side with upstream defaults and TFLite Micro\n")
    L.append(f"Generated by `{meta.get('command', 'benchmarks/run')}` on {meta.get('date', '?')} "
             "(every figure's producing command is in `results.json`). Instruction counts are from "
             "`qemu-system-arm -icount shift=0` with SysTick read around one inference: exact and repeatable, "
             "but instruction counts, not silicon cycles. Static RAM = `.data` + `.bss` + pools/arena + stack + heap "
             "as linked (armgen size); both stacks sized by one rule: measured high-water mark x 1.25, 8-byte steps "
             "(see the Stacks table).\n")
    L.append("Tools: " + ", ".join(f"{k} `{v}`" for k, v in tools.items()
                                  if k not in ("workspace_commits", "workspace") and v) + ".")
    wc = tools.get("workspace_commits") or {}
    if wc:
        L.append("Sources (workspace " + f"`{tools.get('workspace')}`): " + ", ".join(f"{k} `{(v or '–')[:12]}`" for k, v in wc.items()) + ".\n")

    # main table
    L.append("## Main table: armgen vs TFLite Micro (same QEMU machine, int8, CMSIS-NN)\n")
    rows = []
    for m in MACHINES:
        for s in SAMPLES:
            a, t = _get(res, "armgen", m, s), _get(res, "tflm", m, s)
            if not a and not t:
                continue
            a = a or {}
            t = t or {}
            pools = a.get("pools", {})
            planned = [v for k, v in pools.items() if k.startswith("planned_")]
            rows.append([
                f"{s} / {m}",
                n(a.get("flash")), n(t.get("flash")),
                n(a.get("flash_excl_model")), n(t.get("flash_excl_model")),
                n(a.get("ram_static")), n(t.get("ram_static")),
                (f"{n(sum(p['reserved'] for p in planned))} / {n(sum(p['used'] for p in planned))}" if planned else "–"),
                (f"{n(pools['method']['reserved'])} / {n(pools['method']['used'])}" if "method" in pools else "–")
                + (f" + {n(pools['temp']['reserved'])} / {n(pools['temp']['used'])}" if "temp" in pools else ""),
                (f"{n(t['arena_reserved'])} / {n(t['arena_used'])}" if t.get("arena_reserved") else "–"),
                f"{n(a.get('stack_used'))} / {n(t.get('stack_used'))}",
                n(_value(a, "instructions")), n(t.get("instructions")),
                ratio(_value(a, "instructions"), t.get("instructions")),
            ])
    L.append(table(["sample / machine", "flash armgen", "flash TFLM", "flash excl. model armgen", "excl. model TFLM",
                    "static RAM armgen", "static RAM TFLM", "planned pools reserved / used", "method + temp pools reserved / used",
                    "TFLM arena reserved / used", "stack high-water armgen / TFLM", "instructions armgen",
                    "instructions TFLM", "instr. armgen/TFLM"], rows))
    L.append("\nAll sizes in bytes. No sample has a temp pool: ExecuTorch's operator-lookup scratch during "
             "`load_method` (28 B asked per kernel argument) borrows the start of the planned pool, idle until the "
             "first execute (`armgen.toml` `[memory] load_scratch`). armgen's instructions are the product image's (its "
             "check run in `armgen build`: the input is written in place before SysTick starts, as in TFLM's runner); "
             "`armgen run`'s variant, which copies the sample input inside the timed call, is `instructions` in "
             "`results.json`. armgen's model is the `.pte`; TFLM's is the `.tflite` (both trained MLPerf Tiny "
             "weights; armgen quantizes the float reference model itself with PT2E, TFLM runs the int8 reference file).\n")

    L.extend(_against_tflm(res))
    L.extend(_tflm_lto_rows(res, out / "tflm_lto.json"))
    L.extend(_zephyr_rows(res, out / "zephyr.json"))

    # flash components
    L.append("## Flash by component\n")
    rows = []
    for m in MACHINES:
        for s in SAMPLES:
            a = _get(res, "armgen", m, s)
            if a:
                rows.append([f"{s} / {m}", "armgen", n(comp(a, "runtime_core")), n(comp(a, "kernel_registration")),
                             n(comp(a, "cortex_m_kernels", "portable_kernels", "quantized_kernels")),
                             n(comp(a, "cmsis_nn")), n(comp(a, "model")), n(comp(a, "app")), n(comp(a, "libc")),
                             n(comp(a, "other_libraries", "unattributed")), n(a["flash"])])
            t = _get(res, "tflm", m, s)
            if t:
                rows.append([f"{s} / {m}", "TFLM", n(comp(t, "tflm_runtime")), "(in runtime)",
                             n(comp(t, "tflm_kernels")), n(comp(t, "cmsis_nn")), n(comp(t, "model")),
                             n(comp(t, "app")), n(comp(t, "libc")), n(comp(t, "other_libraries", "unattributed")),
                             n(t["flash"])])
    L.append(table(["sample / machine", "build", "runtime core", "registration", "kernels (non-CMSIS-NN)", "CMSIS-NN",
                    "model", "app + start-up", "libc/libgcc", "other", "total"], rows, "llrrrrrrrrr"))
    L.append("\nComponents from the linker map (armgen.firmware.size rules; TFLM adds rules for its runtime and kernel "
             "archives). ExecuTorch's `kernels_util_all_deps` counts as kernels.\n")

    # times
    L.append("## Wall time (2 shared cores, other jobs running: indicative only)\n")
    rows = []
    for m in MACHINES:
        for s in SAMPLES:
            a = _get(res, "armgen", m, s)
            t = _get(res, "tflm", m, s)
            if a or t:
                rows.append([f"{s} / {m}", n((a or {}).get("seconds_new")), n((a or {}).get("seconds_clean_build")),
                             n((t or {}).get("clean_build_seconds_all_models"))])
    L.append(table(["sample / machine", "`armgen new` s", "clean `armgen build` s", "TFLM clean build s (all 4 runners of the machine)"], rows))
    L.append(f"\nLoad average when the run started: {n(meta.get('host', {}).get('load_average_at_start'))}.\n")

    cmpres = res.get("compare", {})
    ap = cmpres.get("all_portable", {})
    if ap:
        L.append("## Selective registration vs all portable operators (upstream `EXECUTORCH_BUILD_PORTABLE_OPS=y`)\n")
        rows = []
        for m, per in ap.items():
            c = per["kws"]
            rows.append([f"kws / {m}", n(c["selective"]["kernel_flash"]), n(c["all_portable"]["kernel_flash"]),
                         f"{c['kernel_flash_ratio']:.1f}x", n(c["selective"]["flash"]), n(c["all_portable"]["flash"]),
                         f"{c['flash_ratio']:.2f}x", n(c["selective"]["ram_static"]), n(c["all_portable"]["ram_static"])])
        L.append(table(["sample", "kernel flash selective", "kernel flash all portable", "ratio", "flash selective",
                        "flash all portable", "ratio", "static RAM selective", "static RAM all portable"], rows))
        L.append("\nBoth at -O2 (armgen's default; GCC 12.2 cannot assemble the portable `op_remainder.cpp` at -Os for "
                 "cortex-m55). Kernel flash = registration + portable + quantized + cortex_m kernels + CMSIS-NN. "
                 "The all-portable build also has ExecuTorch's default kernel table (2000 slots) instead of one sized "
                 "from the program.\n")

    pl = cmpres.get("pools", {})
    if pl:
        L.append("## Exact pools vs upstream defaults (arithmetic on the board data, no build)\n")
        rows = []
        for m in MACHINES:
            for s in SAMPLES:
                c = pl.get(m, {}).get(s)
                if not c:
                    continue
                order = ["armgen (exact)"] + [k for k in c["configs"] if k != "armgen (exact)"]
                for cfg in order:
                    r = c["configs"][cfg]
                    fits = ", ".join(f"{b}: {'yes' if r['fit'][b]['fits'] else 'NO'}" for b in FIT_ORDER[m] if b in r["fit"])
                    rows.append([f"{s} / {m}", cfg, n(r["pools_reserved"]), n(r["ram_reserved"]),
                                 "yes" if r["program_loads"] else f"NO (needs {n(c['method_pool_needed_upstream_style'])} B method pool)",
                                 fits])
        L.append(table(["sample / machine", "pool configuration", "pools reserved", "RAM reserved (pools + stack + heap)",
                        "enough for the program", "pools fit the board"], rows, "llrrll"))
        L.append("\nUpstream runners take the planned buffers from the method pool, so the program needs "
                 "planned + method-allocator bytes there. A pool is one static array: it must fit one region that may "
                 "hold pools. QEMU an547 and Corstone-300 have 256 MiB DDR windows, so even the 60 MiB pool fits "
                 "there; Alif E8 (largest pool region 4 MiB), QEMU an386 (4 MiB) and STM32F4 (128 KiB SRAM) do not take it, "
                 "and STM32F4 does not take mv2-ethosu's 1.5 MiB pools either.\n")

    rows = []
    for m in MACHINES:
        for s in SAMPLES:
            a, t = _get(res, "armgen", m, s), _get(res, "tflm", m, s)
            st = (a or {}).get("stack_sizing")
            if not st:
                continue
            tm = (t or {}).get("stack_measured_with") or {}
            rows.append([f"{s} / {m}", n(st["high_water"]), n(st["reserved"]), n(tm.get("used")),
                         n((t or {}).get("stack_reserved")), n((t or {}).get("stack_used"))])
    if rows:
        L.append("## Stacks: one rule for both (armgen `--stack-size auto`, `armgen.firmware.stack`)\n")
        L.append(table(["sample / machine", "armgen product high-water", "armgen stack reserved",
                        "TFLM high-water (8 KiB run)", "TFLM stack reserved", "TFLM high-water (sized run)"], rows))
        L.append("\nRule: the high-water mark of one run of the image on its QEMU machine (stack painted at reset, "
                 "scanned after the run), x 1.25, rounded up to 8 B; the image is relinked with that stack and run "
                 "again. `armgen build` does this for armgen's product image; bench.py does the same for TFLM's runner. "
                 "No static bound: ExecuTorch calls kernels through function pointers.\n")

    rows = []
    kinds: list[str] = []
    for m in MACHINES:
        for s in SAMPLES:
            b = (_get(res, "armgen", m, s) or {}).get("method_pool_breakdown")
            if b:
                kinds += [k for k in b if k not in kinds]
    for m in MACHINES:
        for s in SAMPLES:
            b = (_get(res, "armgen", m, s) or {}).get("method_pool_breakdown")
            if b:
                rows.append([f"{s} / {m}"] + [n(b.get(k, 0)) for k in kinds] + [n(sum(b.values()))])
    if rows:
        L.append("## Method pool by allocation kind (bytes, `armgen.model.method_allocator` replay = firmware use)\n")
        L.append(table(["sample / machine", *kinds, "total"], rows))
        L.append("\nTensors: a 32-byte `TensorImpl` and 4 B of strides per dimension each; evalues: 16 B per "
                 "program value. TFLM keeps a 12-byte `TfLiteEvalTensor` per tensor and per-channel quantization "
                 "in its arena instead.\n")
    L.extend(_tflm_arena_rows(out / "tflm_arena.json"))

    pr = cmpres.get("portable_lowering", {})
    if pr:
        L.append("## CMSIS-NN lowering vs the same program without the Cortex-M passes (portable kernels)\n")
        rows = []
        for m, per in pr.items():
            c = per["kws"]
            p = c["portable"]
            rows.append([f"kws / {m}", n(c["cmsis_nn"]["instructions"]), n(p["instructions"]),
                         f"{c['instruction_ratio']:.1f}x" if c.get("instruction_ratio") else "–",
                         n(c["cmsis_nn"]["flash"]), n(p["flash"]), f"{c['flash_ratio']:.2f}x",
                         n(c["cmsis_nn"]["flash_excl_model"]), n(p["flash_excl_model"]), f"{c['flash_excl_model_ratio']:.2f}x",
                         n(c["cmsis_nn"]["ram_static"]), n(p["ram_static"])])
        L.append(table(["sample", "instr. CMSIS-NN", "instr. portable", "ratio", "flash CMSIS-NN", "flash portable", "ratio",
                        "excl. model CMSIS-NN", "excl. model portable", "ratio", "RAM CMSIS-NN", "RAM portable"], rows))
        for m, per in pr.items():
            f = per["kws"]["portable"].get("run_findings") or []
            errs = [x for x in f if x.startswith("error")]
            if errs:
                L.append(f"\nPortable build on {m}: `armgen run` reported: " + "; ".join(errs))
        L.append("\nSame PT2E quantization; `benchmarks/portable_lowering.py` runs armgen's compile stage with the "
                 "Cortex-M pass manager left out (quantize/dequantize around float ATen operators).\n")

    pf = cmpres.get("profile", {})
    if pf:
        L.append("## Where the instructions go: kws, one whole run per firmware (`insn_profile.py`, a QEMU plugin)\n")
        for m, per in pf.items():
            c = per.get("kws") or {}
            a, t = c.get("armgen") or {}, c.get("tflm") or {}
            if not a:
                continue
            af, tf_ = a.get("functions", {}), t.get("functions", {})
            names = sorted(set(af) | set(tf_), key=lambda x: (-max(af.get(x, 0), tf_.get(x, 0)), x))
            rows = [[f"`{x}`", n(af.get(x)), n(tf_.get(x))] for x in names]
            rows.append(["**whole run** (start-up, load, one inference)", n(a.get("total")), n(t.get("total"))])
            L.append(f"### {MACHINES[m]}\n")
            L.append(table(["function", "armgen", "TFLM"], rows))
            L.append("")
        L.append("Instructions per function (each executed instruction counted by the plugin, attributed by ELF symbol; "
                 "LTO inlines much of ExecuTorch into its callers, so armgen's runtime shows under fewer names), "
                 "the 15 largest of each firmware; `–`: not among the other firmware's 15 largest or not linked.\n")

    ve = cmpres.get("vela", {})
    if ve:
        L.append("## Ethos-U: Vela estimates (`armgen compile -t <npu>` with each board's system config)\n")
        rows = []
        for acc, per in ve.items():
            for s, c in per.items():
                for v in c["vela"] or [{}]:
                    rows.append([acc, s, c["board"], c["system_config"], c["memory_mode"], n(v.get("cycles")),
                                 n(v.get("sram_bytes")), n(v.get("flash_bytes")), n(c.get("pte_size"))])
        L.append(table(["NPU", "sample", "board", "system config", "memory mode", "NPU cycles (Vela)", "SRAM B (Vela)",
                        "flash B (Vela)", ".pte B"], rows, "lllllrrrr"))
        L.append("\nVela's own estimates (no NPU model in QEMU; nothing here ran on an NPU).\n")

    L.append("## Targets from issue 8\n")
    L.append(table(["target", "measured", "verdict"], [list(r) for r in targets(res)], "lll"))

    notes = res.get("notes") or []
    findings = []
    reattr: list[str] = []
    for m in MACHINES:
        for s in SAMPLES:
            for part in ("armgen", "tflm"):
                bad = res.get(part, {}).get(m, {}).get(s)
                if bad and "error" in bad:
                    findings.append(f"{part} {s}/{m} FAILED: `{bad.get('failed_command')}`: {bad['error']}")
            a = _get(res, "armgen", m, s)
            if a and a.get("run_passed") is False:
                errs = [x for x in a.get("run_findings", []) if x.startswith("error")]
                findings.append(f"`armgen run` on {s}/{m} exited {a.get('run_exit_status')}: " + "; ".join(errs))
            if a and a.get("components_note"):
                reattr.append(f"{s}/{m}")
            if a and a.get("libc_members") and m == "an547" and s == "kws":
                heavy = [x for x in a["libc_members"] if any(k in x for k in ("(snprintf)", "(malloc)", "printf"))]
                if heavy:
                    findings.append("armgen kws/an547 links newlib-nano's formatted output and allocator although nothing "
                                    "prints or allocates at run time: " + "; ".join(f"`{x}`" for x in heavy))
            t = _get(res, "tflm", m, s)
            if t and t.get("arena_reserved") and t.get("arena_used") and t["arena_reserved"] - t["arena_used"] > 16:
                findings.append(f"TFLM {s}/{m}: `arena_used_bytes()` reports {n(t['arena_used'])} B but the smallest arena "
                                f"that works is {n(t['arena_reserved'])} B (AllocateTensors fails below that; the cause was not investigated)")
            if t and t.get("max_abs_diff_vs_litert"):
                findings.append(f"TFLM {s}/{m}: outputs differ from LiteRT on the host by up to {t['max_abs_diff_vs_litert']} LSB")
    prof = res.get("compare", {}).get("profile", {}).get("an386", {}).get("kws") or {}
    pa, pt = (prof.get("armgen") or {}).get("functions", {}), (prof.get("tflm") or {}).get("functions", {})
    if pa.get("depthwise_conv_s8_mult_4") and pt:
        conv = sum(pt.get(f, 0) for f in ("arm_convolve_s8", "arm_nn_mat_mult_kernel_s8_s16",
                                           "arm_s8_to_s16_unordered_with_offset"))
        findings.append(
            f"kws on the Cortex-M4: the first layer (1 input channel, 64 output channels, 10x4 kernel) costs armgen "
            f"{n(pa['depthwise_conv_s8_mult_4'])} instructions in CMSIS-NN's generic depthwise kernel "
            f"(`depthwise_conv_s8_mult_4`), TFLM about {n(conv)} in its convolution (`arm_convolve_s8` + "
            "`arm_nn_mat_mult_kernel_s8_s16` + `arm_s8_to_s16_unordered_with_offset`): ExecuTorch's Cortex-M pass "
            "(backends/cortex_m/passes/aten_to_cortex_m_pass.py, 1.5.1) lowers every conv with `in_channels == groups` "
            "to `quantized_depthwise_conv2d`, which includes `groups == in_channels == 1`; its own TODO(#16347) asks "
            "for exactly this benchmark. That layer is most of kws's gap to TFLM on the M4. On the M55 "
            "`arm_depthwise_conv_wrapper_s8` itself turns a one-input-channel depthwise call into a convolution "
            "(`arm_depthwise_conv_to_conv_s8`, only under `ARM_MATH_MVEI`), so there armgen is level with TFLM.")
    if reattr:
        findings.append("armgen.firmware.size gave the whole `.text` to `unattributed` for " + ", ".join(reattr) + ": GNU ld "
                        "merges `.rodata.str1.*` string sections, so two map lines overlap; `bench.component_sizes()` "
                        "re-attributes those sections from the same map (overlap counted once)")
    app_big = [f"{s}/{m} {n(comp(a, 'app'))} B" for m in MACHINES for s in SAMPLES
               if (a := _get(res, "armgen", m, s)) and comp(a, "app") > 16 * KIB]
    if app_big:
        findings.append("armgen's `app` component includes the sample's built-in input tensor (sample_io): " + ", ".join(app_big))
    if findings or notes:
        L.append("\n## Findings and notes\n")
        L += [f"- {x}" for x in findings + list(notes)]
    L.append("")
    (out / "results.md").write_text("\n".join(L) + "\n")


def write_svg(res: dict[str, Any], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams["svg.hashsalt"] = "armgen-bench"
    labels, af, tf_, ar, tr = [], [], [], [], []
    for m in MACHINES:
        for s in SAMPLES:
            a, t = _get(res, "armgen", m, s), _get(res, "tflm", m, s)
            if not a and not t:
                continue
            labels.append(f"{s}\n{m}")
            af.append((a or {}).get("flash", 0) / KIB)
            tf_.append((t or {}).get("flash", 0) / KIB)
            ar.append((a or {}).get("ram_static", 0) / KIB)
            tr.append((t or {}).get("ram_static", 0) / KIB)
    if not labels:
        return
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    x = list(range(len(labels)))
    w = 0.38
    for ax, (a_, t_), title in ((axes[0], (af, tf_), "Flash (KiB)"), (axes[1], (ar, tr), "Static RAM (KiB)")):
        b1 = ax.bar([i - w / 2 for i in x], a_, w, label="armgen (ExecuTorch + CMSIS-NN)", color="#1f77b4")
        b2 = ax.bar([i + w / 2 for i in x], t_, w, label="TFLite Micro + CMSIS-NN", color="#ff7f0e")
        ax.bar_label(b1, fmt="%.0f", fontsize=7)
        ax.bar_label(b2, fmt="%.0f", fontsize=7)
        ax.set_xticks(x, labels, fontsize=8)
        ax.set_title(title)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("MLPerf Tiny samples on QEMU (an547: Cortex-M55, an386: Cortex-M4)")
    fig.tight_layout()
    fig.savefig(out / "results.svg", format="svg", metadata={"Date": None, "Creator": "armgen benchmarks"})
    plt.close(fig)


def write_report(res: dict[str, Any], out: Path) -> None:
    write_md(res, out)
    write_svg(res, out)

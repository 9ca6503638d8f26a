"""The comparison sections of results.md: all portable operators, exact pools vs upstream defaults, stacks,
the method pool by kind, the portable lowering, instructions per function and Vela's estimates."""

from __future__ import annotations

from typing import Any

from .cells import FIT_ORDER, MACHINES, SAMPLES, measured, n, table


def all_portable(cmpres: dict[str, Any]) -> list[str]:
    """Selective registration vs all portable operators (kws)."""
    ap = cmpres.get("all_portable", {})
    if not ap:
        return []
    L: list[str] = []
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
    return L


def pools(cmpres: dict[str, Any]) -> list[str]:
    """Exact pools vs upstream defaults: reserved, enough for the program, fit per board."""
    pl = cmpres.get("pools", {})
    if not pl:
        return []
    L: list[str] = []
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
                fits = ", ".join(f"{b}: {'yes' if r['fit'][b]['fits'] else 'NO'}"
                                 for b in FIT_ORDER[m] if b in r["fit"])
                loads = "yes" if r["program_loads"] else \
                    f"NO (needs {n(c['method_pool_needed_upstream_style'])} B method pool)"
                rows.append([f"{s} / {m}", cfg, n(r["pools_reserved"]), n(r["ram_reserved"]), loads, fits])
    L.append(table(["sample / machine", "pool configuration", "pools reserved",
                    "RAM reserved (pools + stack + heap)", "enough for the program", "pools fit the board"],
                   rows, "llrrll"))
    L.append("\nUpstream runners take the planned buffers from the method pool, so the program needs "
             "planned + method-allocator bytes there. A pool is one static array: it must fit one region that may "
             "hold pools. QEMU an547 and Corstone-300 have 256 MiB DDR windows, so even the 60 MiB pool fits "
             "there; Alif E8 (largest pool region 4 MiB), QEMU an386 (4 MiB) and STM32F4 (128 KiB SRAM) do not take "
             "it, and STM32F4 does not take mv2-ethosu's 1.5 MiB pools either.\n")
    return L


def stacks(res: dict[str, Any]) -> list[str]:
    """Both stacks by one rule: high-water marks and reserved bytes, armgen and TFLM."""
    L: list[str] = []
    rows = []
    for m in MACHINES:
        for s in SAMPLES:
            a, t = measured(res, "armgen", m, s), measured(res, "tflm", m, s)
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
                 "again. `armgen build` does this for armgen's product image; bench.py does the same for TFLM's "
                 "runner. No static bound: ExecuTorch calls kernels through function pointers.\n")
    return L


def method_pool(res: dict[str, Any]) -> list[str]:
    """armgen's method pool by allocation kind."""
    L: list[str] = []
    rows = []
    kinds: list[str] = []
    for m in MACHINES:
        for s in SAMPLES:
            b = (measured(res, "armgen", m, s) or {}).get("method_pool_breakdown")
            if b:
                kinds += [k for k in b if k not in kinds]
    for m in MACHINES:
        for s in SAMPLES:
            b = (measured(res, "armgen", m, s) or {}).get("method_pool_breakdown")
            if b:
                rows.append([f"{s} / {m}"] + [n(b.get(k, 0)) for k in kinds] + [n(sum(b.values()))])
    if rows:
        L.append("## Method pool by allocation kind (bytes, `armgen.model.method_allocator` replay = firmware use)\n")
        L.append(table(["sample / machine", *kinds, "total"], rows))
        L.append("\nTensors: a 32-byte `TensorImpl` and 4 B of strides per dimension each; evalues: 16 B per "
                 "program value. TFLM keeps a 12-byte `TfLiteEvalTensor` per tensor and per-channel quantization "
                 "in its arena instead.\n")
    return L


def ram_target(res: dict[str, Any], ratio: float = 0.90) -> list[str]:
    """Issue 43's static-RAM target (``ratio`` x TFLM's) per column, with where armgen's bytes go: the activation
    lower bound no memory plan beats, the method pool, the sized stack and the rest (.data, .bss), and what the
    image would be with no method pool at all (every metadata byte moved to flash: the most that change can give)."""
    L: list[str] = []
    rows = []
    for m in MACHINES:
        for s in SAMPLES:
            a, t = measured(res, "armgen", m, s), measured(res, "tflm", m, s)
            if not a or not t or not a.get("pools"):
                continue
            target = int(t["ram_static"] * ratio)
            planned = sum(v["reserved"] for k, v in a["pools"].items() if k.startswith("planned_"))
            method = sum(v["reserved"] for k, v in a["pools"].items() if not k.startswith("planned_"))
            stack = a.get("stack_reserved") or 0
            other = a["ram_static"] - planned - method - stack
            no_meta = a["ram_static"] - method
            bound = a.get("activation_lower_bound")
            rows.append([f"{s} / {m}", n(t["ram_static"]), n(target), n(a["ram_static"]),
                         f"{a['ram_static'] - target:+,}", n(bound) if bound else "–", n(planned), n(method), n(stack),
                         n(other), n(no_meta), "yes" if no_meta <= target else "**no**"])
    if rows:
        L.append(f"## What {ratio:.2f}x of TFLM's static RAM needs (issue 43)\n")
        L.append(table(["sample / machine", "TFLM static RAM", f"{ratio:.2f}x", "armgen", "armgen - target",
                        "activation lower bound", "planned pools", "method + temp pools", "stack reserved",
                        ".data/.bss/other", "armgen without any method pool", "reachable that way"], rows))
        L.append("\n\"Without any method pool\" is the image with every byte of runtime metadata moved to flash, the "
                 "most that step can save; where it is still above the target the activations and the stack alone "
                 "are (ic: its residual add keeps three 16 KiB feature maps alive at once, the lower bound), so only "
                 "a plan that overlaps what a kernel allows, or a fused residual, gets there.\n")
    return L


def portable_lowering(cmpres: dict[str, Any]) -> list[str]:
    """CMSIS-NN lowering vs the same program on portable kernels (kws)."""
    pr = cmpres.get("portable_lowering", {})
    if not pr:
        return []
    L: list[str] = []
    L.append("## CMSIS-NN lowering vs the same program without the Cortex-M passes (portable kernels)\n")
    rows = []
    for m, per in pr.items():
        c = per["kws"]
        p = c["portable"]
        rows.append([f"kws / {m}", n(c["cmsis_nn"]["instructions"]), n(p["instructions"]),
                     f"{c['instruction_ratio']:.1f}x" if c.get("instruction_ratio") else "–",
                     n(c["cmsis_nn"]["flash"]), n(p["flash"]), f"{c['flash_ratio']:.2f}x",
                     n(c["cmsis_nn"]["flash_excl_model"]), n(p["flash_excl_model"]),
                     f"{c['flash_excl_model_ratio']:.2f}x",
                     n(c["cmsis_nn"]["ram_static"]), n(p["ram_static"])])
    L.append(table(["sample", "instr. CMSIS-NN", "instr. portable", "ratio", "flash CMSIS-NN", "flash portable",
                    "ratio", "excl. model CMSIS-NN", "excl. model portable", "ratio", "RAM CMSIS-NN", "RAM portable"],
                   rows))
    for m, per in pr.items():
        f = per["kws"]["portable"].get("run_findings") or []
        errs = [x for x in f if x.startswith("error")]
        if errs:
            L.append(f"\nPortable build on {m}: `armgen run` reported: " + "; ".join(errs))
    L.append("\nSame PT2E quantization; `benchmarks/portable_lowering.py` runs armgen's compile stage with the "
             "Cortex-M pass manager left out (quantize/dequantize around float ATen operators).\n")
    return L


def profile(cmpres: dict[str, Any]) -> list[str]:
    """Instructions per function of one whole run, armgen and TFLM (kws)."""
    pf = cmpres.get("profile", {})
    if not pf:
        return []
    L: list[str] = []
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
    return L


def vela(cmpres: dict[str, Any]) -> list[str]:
    """Vela's estimates per NPU and sample."""
    ve = cmpres.get("vela", {})
    if not ve:
        return []
    L: list[str] = []
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
    return L

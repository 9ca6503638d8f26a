"""The last sections of results.md: the targets of issue 8 and the findings (failures, surprises, notes)."""

from __future__ import annotations

from typing import Any

from .cells import KIB, MACHINES, SAMPLES, comp, measured, n, table
from .targets import targets


def targets_table(res: dict[str, Any]) -> list[str]:
    """The targets of issue 8 with the measured values and verdicts."""
    L: list[str] = []
    L.append("## Targets from issue 8\n")
    L.append(table(["target", "measured", "verdict"], [list(r) for r in targets(res)], "lll"))
    return L


def _entry_findings(res: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Findings of each sample and machine (failed steps and runs, heavy libc members, TFLM's arena and LiteRT
    differences); and the entries whose sections were re-attributed from the map."""
    findings: list[str] = []
    reattr: list[str] = []
    for m in MACHINES:
        for s in SAMPLES:
            for part in ("armgen", "tflm"):
                bad = res.get(part, {}).get(m, {}).get(s)
                if bad and "error" in bad:
                    findings.append(f"{part} {s}/{m} FAILED: `{bad.get('failed_command')}`: {bad['error']}")
            a = measured(res, "armgen", m, s)
            if a and a.get("run_passed") is False:
                errs = [x for x in a.get("run_findings", []) if x.startswith("error")]
                findings.append(f"`armgen run` on {s}/{m} exited {a.get('run_exit_status')}: " + "; ".join(errs))
            if a and a.get("components_note"):
                reattr.append(f"{s}/{m}")
            if a and a.get("libc_members") and m == "an547" and s == "kws":
                heavy = [x for x in a["libc_members"] if any(k in x for k in ("(snprintf)", "(malloc)", "printf"))]
                if heavy:
                    findings.append("armgen kws/an547 links newlib-nano's formatted output and allocator although "
                                    "nothing prints or allocates at run time: " + "; ".join(f"`{x}`" for x in heavy))
            t = measured(res, "tflm", m, s)
            if t and t.get("arena_reserved") and t.get("arena_used") and t["arena_reserved"] - t["arena_used"] > 16:
                findings.append(f"TFLM {s}/{m}: `arena_used_bytes()` reports {n(t['arena_used'])} B but the smallest "
                                f"arena that works is {n(t['arena_reserved'])} B (AllocateTensors fails below that; "
                                "the cause was not investigated)")
            if t and t.get("max_abs_diff_vs_litert"):
                findings.append(f"TFLM {s}/{m}: outputs differ from LiteRT on the host by up to "
                                f"{t['max_abs_diff_vs_litert']} LSB")
    return findings, reattr


def _known_gaps(res: dict[str, Any], reattr: list[str]) -> list[str]:
    """Findings across entries: kws's first layer on the M4, re-attributed sections, large ``app`` components."""
    findings: list[str] = []
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
        findings.append("armgen.firmware.size gave the whole `.text` to `unattributed` for " + ", ".join(reattr)
                        + ": GNU ld merges `.rodata.str1.*` string sections, so two map lines overlap; "
                        "`bench.component_sizes()` re-attributes those sections from the same map (overlap counted "
                        "once)")
    app_big = [f"{s}/{m} {n(comp(a, 'app'))} B" for m in MACHINES for s in SAMPLES
               if (a := measured(res, "armgen", m, s)) and comp(a, "app") > 16 * KIB]
    if app_big:
        findings.append("armgen's `app` component includes the sample's built-in input tensor (sample_io): "
                        + ", ".join(app_big))
    return findings


def findings_section(res: dict[str, Any]) -> list[str]:
    """Findings and notes: what failed or surprised in the results, then the results' own ``notes``."""
    notes = res.get("notes") or []
    findings, reattr = _entry_findings(res)
    findings += _known_gaps(res, reattr)
    if not (findings or notes):
        return []
    return ["\n## Findings and notes\n", *[f"- {x}" for x in findings + list(notes)]]

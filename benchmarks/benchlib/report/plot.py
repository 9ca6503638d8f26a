"""results.svg: flash and static RAM per sample and machine, armgen vs TFLM (matplotlib, the ``bench`` extra)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .cells import KIB, MACHINES, SAMPLES, measured


def write_svg(res: dict[str, Any], out: Path) -> bool:
    """Draw ``out/results.svg`` (deterministic: fixed hash salt, no date); False when there is nothing to draw.

    Raises:
        ModuleNotFoundError: matplotlib is not installed (:func:`benchlib.report.write_report` checks first).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams["svg.hashsalt"] = "armgen-bench"
    labels: list[str] = []
    af: list[float] = []
    tf_: list[float] = []
    ar: list[float] = []
    tr: list[float] = []
    for m in MACHINES:
        for s in SAMPLES:
            a, t = measured(res, "armgen", m, s), measured(res, "tflm", m, s)
            if not a and not t:
                continue
            labels.append(f"{s}\n{m}")
            af.append((a or {}).get("flash", 0) / KIB)
            tf_.append((t or {}).get("flash", 0) / KIB)
            ar.append((a or {}).get("ram_static", 0) / KIB)
            tr.append((t or {}).get("ram_static", 0) / KIB)
    if not labels:
        return False
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
    return True

"""Picture of each memory region's fill by component, as a small hand-written SVG.

Plain SVG text (no matplotlib): same report -> byte-identical file, no fonts or timestamps embedded.
One bar per region, scaled to the region's usable bytes, split into one coloured segment per
component; a legend lists each component with its bytes. Without a board (regions unknown) the two
bars are the flash and RAM totals, scaled to the larger one.
"""

from __future__ import annotations

from html import escape

from armgen.firmware.size.records import ElfSizeReport
from armgen.firmware.size.rules import COMPONENT_LABELS, UNATTRIBUTED

#: Fixed colour per component key (colour-blind-friendly Okabe-Ito first, then greys/others).
COMPONENT_COLOURS: dict[str, str] = {
    "runtime_core": "#0072B2",
    "kernel_registration": "#56B4E9",
    "portable_kernels": "#009E73",
    "quantized_kernels": "#66C2A5",
    "cortex_m_kernels": "#E69F00",
    "cmsis_nn": "#D55E00",
    "ethos_u_delegate": "#CC79A7",
    "ethos_u_driver": "#F0A3D0",
    "model": "#F0E442",
    "pools": "#8DA0CB",
    "stack_heap": "#A6761D",
    "app": "#1B9E77",
    "zephyr_kernel": "#E7298A",
    "libc": "#7570B3",
    "other_libraries": "#B3B3B3",
    UNATTRIBUTED: "#DDDDDD",
}
_OTHER_COLOUR = "#999999"

_W = 760
_LEFT = 20
_BAR_W = 560
_BAR_H = 22
_ROW_H = 58


def _fmt(n: int) -> str:
    return f"{n:,} B"


def render_region_svg(report: ElfSizeReport) -> str:
    """Return SVG text showing each region's fill by component.

    Args:
        report: the size report (bytes). Regions with nothing placed in them are still drawn.

    Returns:
        A complete SVG document (UTF-8 text, ``\\n`` line ends), deterministic for a given report.
    """
    rows: list[tuple[str, str, int, tuple[tuple[str, int], ...]]] = []  # title, subtitle, scale, comps
    if report.regions_known:
        for r in report.regions:
            pct = f"{r.percent:.1f}%" if r.usable else "-"
            sub = f"{r.kind}, 0x{r.base:08x}: {_fmt(r.used)} of {_fmt(r.usable)} usable ({pct})"
            rows.append((r.name, sub, max(r.usable, r.used, 1), r.components))
    else:
        flash: dict[str, int] = {}
        ram: dict[str, int] = {}
        for c in report.components:
            if c.flash:
                flash[c.name] = c.flash
            if c.ram:
                ram[c.name] = c.ram
        scale = max(report.flash, report.ram, 1)
        rows.append(("flash", f"regions unknown: {_fmt(report.flash)}", scale, tuple(sorted(flash.items()))))
        rows.append(("RAM", f"regions unknown: {_fmt(report.ram)}", scale, tuple(sorted(ram.items()))))

    order = list(COMPONENT_LABELS)
    present: dict[str, int] = {}
    for _, _, _, comps in rows:
        for k, v in comps:
            present[k] = present.get(k, 0) + v
    legend = sorted(present, key=lambda k: (order.index(k) if k in order else len(order), k))

    height = 40 + _ROW_H * len(rows) + 20 * len(legend) + 20
    out: list[str] = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{height}" '
        f'viewBox="0 0 {_W} {height}" font-family="sans-serif" font-size="12">',
        f'<title>{escape(report.elf)}: memory region fill by component</title>',
        f'<text x="{_LEFT}" y="22" font-size="14" font-weight="bold">{escape(report.elf)}'
        f'{" (board " + escape(report.board) + ")" if report.board else ""}</text>',
    ]
    y = 40
    for title, sub, scale, comps in rows:
        out.append(f'<text x="{_LEFT}" y="{y + 12}" font-weight="bold">{escape(title)}</text>')
        out.append(f'<text x="{_LEFT + 90}" y="{y + 12}">{escape(sub)}</text>')
        by = y + 18
        out.append(
            f'<rect x="{_LEFT}" y="{by}" width="{_BAR_W}" height="{_BAR_H}" fill="#ffffff" stroke="#333333"/>'
        )
        x = 0.0
        ordered = sorted(comps, key=lambda kv: (order.index(kv[0]) if kv[0] in order else len(order), kv[0]))
        for name, size in ordered:
            w = _BAR_W * size / scale
            colour = COMPONENT_COLOURS.get(name, _OTHER_COLOUR)
            out.append(
                f'<rect x="{_LEFT + x:.2f}" y="{by}" width="{w:.2f}" height="{_BAR_H}" fill="{colour}">'
                f"<title>{escape(name)}: {_fmt(size)}</title></rect>"
            )
            x += w
        y += _ROW_H
    for name in legend:
        colour = COMPONENT_COLOURS.get(name, _OTHER_COLOUR)
        label = COMPONENT_LABELS.get(name, name)
        out.append(f'<rect x="{_LEFT}" y="{y}" width="12" height="12" fill="{colour}" stroke="#333333"/>')
        out.append(f'<text x="{_LEFT + 18}" y="{y + 10}">{escape(label)}: {_fmt(present[name])}</text>')
        y += 20
    out.append("</svg>")
    return "\n".join(out) + "\n"

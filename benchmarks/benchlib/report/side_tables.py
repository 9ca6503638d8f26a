"""The tables of results.md from the side scripts' files beside results.json (``tflm_lto.json``,
``tflm_arena.json``, ``zephyr.json``), and the armgen / TFLM ratio grid."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .cells import MACHINES, SAMPLES, armgen_value, measured, n, table

#: the grid's rows (label, key of the entries) and columns (machine, sample)
_GRID_METRICS = (("static RAM", "ram_static"), ("flash excl. model", "flash_excl_model"),
                 ("instructions", "instructions"))
_GRID_COLUMNS = [(m, s) for m in MACHINES for s in SAMPLES]


def _ratio_grid(res: dict[str, Any], tflm_of: Callable[[str, str], dict[str, Any]]) -> list[list[str]]:
    """armgen / TFLM per metric (rows) and sample and machine (columns), at or below 1 in bold, with the
    difference; ``tflm_of(machine, sample)`` gives TFLM's entry ({} when none)."""
    rows = []
    for label, key in _GRID_METRICS:
        cells = []
        for m, s in _GRID_COLUMNS:
            a, t = measured(res, "armgen", m, s) or {}, tflm_of(m, s)
            if armgen_value(a, key) and t.get(key):
                r, diff = armgen_value(a, key) / t[key], armgen_value(a, key) - t[key]
                cells.append(f"**{r:.3f}** ({diff:+,})" if r <= 1 else f"{r:.3f} ({diff:+,})")
            else:
                cells.append("–")
        rows.append([label, *cells])
    return rows


def _grid_table(rows: list[list[str]]) -> str:
    return table(["", *[f"{s} {m[2:]}" for m, s in _GRID_COLUMNS]], rows)


def against_tflm(res: dict[str, Any]) -> list[str]:
    """Issue 15's grid: armgen / TFLM per sample and machine, at or below 1 marked."""
    rows = _ratio_grid(res, lambda m, s: measured(res, "tflm", m, s) or {})
    if all(c == "–" for r in rows for c in r[1:]):
        return []
    return [
        "## armgen / TFLM (issue 15: at or below 1 in bold; the difference in bytes or instructions)\n",
        _grid_table(rows),
        "",
    ]


def tflm_lto_rows(res: dict[str, Any], path: Path) -> list[str]:
    """armgen / TFLM built with LTO too (``tflm_lto.py`` writes ``tflm_lto.json``)."""
    if not path.is_file():
        return []
    d = json.loads(path.read_text())
    rows = _ratio_grid(res, lambda m, s: (d.get(m) or {}).get(s) or {})
    lto = [[f"{s} / {m}", n(e.get("flash_excl_model")), n(e.get("ram_static")), n(e.get("stack_reserved")),
            n(e.get("instructions")), n(e.get("max_abs_diff_vs_litert"))]
           for m in MACHINES for s in SAMPLES if (e := (d.get(m) or {}).get(s))]
    return [
        "## armgen / TFLM with LTO as well (`tflm_lto.py`; not TFLM's upstream build)\n",
        "armgen links its images with `-flto`; TFLM's Makefile has no such option, so the grid above is armgen's "
        "build against TFLM's. Here TFLM gets the same switch (every target, same arena search and stack rule).\n",
        _grid_table(rows),
        "",
        table(["TFLM with LTO", "flash excl. model", "static RAM", "stack", "instructions",
               "max abs. difference vs LiteRT"], lto),
        "",
    ]


def tflm_arena_rows(path: Path) -> list[str]:
    """TFLM's arena by allocation kind (``tflm_arena.py`` writes ``tflm_arena.json``)."""
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
                by_kind = [f"{n(e['kinds'][k]['bytes'])} ({e['kinds'][k]['count']})" if k in e["kinds"] else "–"
                           for k in kinds]
                rows.append([f"{s} / {m}", *by_kind,
                             n(e["persistent"] - e["recording_overhead"]), n(e["nonpersistent"])])
    return [
        "## TFLM arena by allocation kind (bytes (count), `tflm_arena.py`: TFLM's RecordingMicroAllocator)\n",
        table(["sample / machine", *kinds, "persistent (tail) less recording overhead", "non-persistent (head)"], rows),
        "\nPersistent: what TFLM keeps for the life of the interpreter, the counterpart of armgen's method pool "
        "(per-channel multipliers and shifts are TFLM's persistent buffers; armgen keeps them in the `.pte`, in "
        "flash). Non-persistent: activations and kernel scratch, the counterpart of armgen's planned pools.\n",
    ]


def zephyr_rows(res: dict[str, Any], path: Path) -> list[str]:
    """kws / an547 as a Zephyr application (``zephyr_vs_baremetal.py`` writes ``zephyr.json``) beside the
    bare-metal and TFLM columns of the main table."""
    if not path.is_file():
        return []
    z = json.loads(path.read_text())
    if z.get("schema") == 2:
        return _zephyr_rows_v2(res, z)
    ze = z.get("zephyr") or {}
    ag, tf = measured(res, "armgen", "an547", "kws") or {}, measured(res, "tflm", "an547", "kws") or {}
    pools = ze.get("pools", {})
    rows = [
        ["flash", n(ag.get("flash")), n(ze.get("flash")), n(tf.get("flash"))],
        ["flash excl. model", n(ag.get("flash_excl_model")), n(ze.get("flash_excl_model")),
         n(tf.get("flash_excl_model"))],
        ["static RAM", n(ag.get("ram_static")), n(ze.get("ram")), n(tf.get("ram_static"))],
        ["pools (planned + method + temp)", n(sum(p["reserved"] for p in (ag.get("pools") or {}).values()) or None),
         n(sum(p["reserved"] for p in pools.values()) or None), n(tf.get("arena_reserved"))],
        ["main stack reserved / high-water",
         f"{n((ag.get('stack_sizing') or {}).get('reserved'))} / {n((ag.get('stack_sizing') or {}).get('high_water'))}",
         f"{n(ze.get('stack_reserved'))} / {n(ze.get('stack_used'))}",
         f"{n(tf.get('stack_reserved'))} / {n(tf.get('stack_used'))}"],
        ["instructions per inference", n(ag.get("instructions")), n(ze.get("instructions")), n(tf.get("instructions"))],
        ["max LSB vs reference", n(ag.get("max_lsb_diff")), n(ze.get("max_lsb_diff")),
         n(tf.get("max_abs_diff_vs_litert"))],
    ]
    return [
        f"## kws / an547 as a Zephyr {z.get('zephyr_release', '?')} application (`zephyr_vs_baremetal.py`, "
        f"{z.get('when', '?')})\n",
        table(["", "armgen bare metal", f"armgen Zephyr {z.get('zephyr_release', '?')}", "TFLM"], rows),
        "\nThe Zephyr image keeps its generated `CONFIG_MAIN_STACK_SIZE` (8 KiB; `--stack-size auto` is bare metal "
        "only) and adds the kernel, its own start-up and console. Its column comes from `zephyr.json`, its own run.\n",
    ]


def _zephyr_rows_v2(res: dict[str, Any], z: dict[str, Any]) -> list[str]:
    """Every sample on an547: bare metal, one Zephyr application per release and TFLM (``zephyr.json`` schema 2,
    all armgen images with ``--stack-size auto``), and issue 44's targets per Zephyr image."""
    releases = z.get("zephyr_releases", [])
    rows = []
    for sample, per in z.get("runs", {}).items():
        tf = measured(res, "tflm", "an547", sample) or {}
        cols = [per.get("baremetal", {})] + [per.get(f"zephyr-{r}", {}) for r in releases]

        def row(label: str, key: str, tflm: Any, cols: list[dict[str, Any]] = cols, sample: str = sample) -> list[str]:
            return [f"{sample}: {label}", *[n(c.get(key)) for c in cols], n(tflm)]

        rows += [row("flash excl. model", "flash_excl_model", tf.get("flash_excl_model")),
                 row("static RAM", "ram", tf.get("ram_static")),
                 [f"{sample}: main stack reserved / high-water",
                  *[f"{n(c.get('stack_reserved'))} / {n(c.get('stack_used'))}" for c in cols],
                  f"{n(tf.get('stack_reserved'))} / {n(tf.get('stack_used'))}"],
                 row("instructions per inference", "instructions", tf.get("instructions")),
                 row("max LSB vs reference", "max_lsb_diff", tf.get("max_abs_diff_vs_litert"))]
    t = z.get("targets", {})
    verdicts = []
    for sample, per in z.get("delta", {}).items():
        for r, d in per.items():
            ok = z.get("met", {}).get(sample, {}).get(r, {})
            verdicts.append([f"{sample} / Zephyr {r}", f"{d['flash_excl_model_delta']:+,}", f"{d['ram_delta']:+,}",
                             f"x{d['instructions_ratio']:.3f}",
                             ", ".join(k for k, v in ok.items() if not v) or "all met"])
    return [
        f"## The samples on an547 as Zephyr applications (`zephyr_vs_baremetal.py`, {z.get('when', '?')})\n",
        table(["", "armgen bare metal", *[f"armgen Zephyr {r}" for r in releases], "TFLM"], rows),
        "\nEvery armgen image with `--stack-size auto` (the main stack sized from a measured run; on Zephyr also the "
        "ISR and idle stacks). Instructions are `armgen run`'s (its harness image, the input copied inside the timed "
        "call) for both armgen columns; TFLM's from its runner.\n",
        f"Issue 44's targets, Zephyr - bare metal: flash excl. model <= +{n(t.get('flash_excl_model_delta_max'))} B, "
        f"static RAM <= +{n(t.get('ram_delta_max'))} B, instructions <= x{t.get('instructions_ratio_max')}.\n",
        table(["image", "flash excl. model", "static RAM", "instructions", "missed"], verdicts),
    ]

"""MLPerf Tiny's streaming wakeword on the firmware: detections scored, per-hop cost, duty cycle and size per board.

For each QEMU machine of :data:`MACHINES`, ``armgen new sww --frontend lfbe --stream`` and, per recording,
``armgen run --input REC --truth TRUTH --json``: the firmware's detections and the host reference's (the
reference ``.tflite`` in LiteRT on the host features), both scored by upstream's rules (true detections, false
detections, false rejections), features and outputs against the host, and the instructions of each hop (front
end, network; mean and largest). Recordings: upstream's ``short_wav_easy10s.wav`` with its recipe (windows from
each word's start + 1 s) and the generated ``marvin_mix.wav`` with its window file
(``samples/sww_recordings/marvin_mix.py``).

For each CPU board of :data:`BOARDS`, the product image (``armgen build``) sized against the board's budgets,
and the duty cycle ``instructions per hop / (clock_hz x 0.032 s)`` with the instructions measured on the QEMU
machine of the same CPU (:data:`MEASURED_ON`); above 1 the board cannot keep up (an instruction count, not
a cycle count: QEMU is not silicon). The streaming state (ring buffer, counters) is read from the ELF's symbols
beside the one-shot clip buffer it replaces (15,872 int16 samples).

Writes ``benchmarks/sww_stream.json`` and ``benchmarks/sww_stream.md``.

Usage: ``ARMGEN_MLPERF_DIR=... python benchmarks/sww_stream.py --short-wav short_wav_easy10s.wav --short-spec
short_wav_easy10s_spec.json [--cache DIR]`` (an armgen workspace, espeak-ng and sox, the sww ``.tflite`` and
``sww_cal.npz`` in ``$ARMGEN_MLPERF_DIR``; about 30 min on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchlib.commands import run
from benchlib.paths import ARMGEN, BENCH_DIR, REPO, default_cache

#: QEMU machines the recordings stream through (board -> CPU); an385 (Cortex-M3, no FPU) with the short one only.
MACHINES = {"qemu_mps3_an547": "cortex-m55", "qemu_mps2_an386": "cortex-m4", "qemu_mps2_an500": "cortex-m7",
            "qemu_mps2_an385": "cortex-m3"}
#: The CPU boards sized (the NPU boards with --backend cortex-m: their CPU path).
BOARDS = ("qemu_mps3_an547", "qemu_mps2_an386", "qemu_mps2_an500", "qemu_mps2_an385", "qemu_netduinoplus2",
          "stm32f4_disco", "nucleo_f767zi", "nucleo_h743zi", "alif_e8_he", "alif_e8_hp", "corstone_300",
          "corstone_320")
#: Which machine's per-hop instructions stand for a CPU (the M85 has no QEMU machine: the M55's, said so).
MEASURED_ON = {"cortex-m55": "qemu_mps3_an547", "cortex-m85": "qemu_mps3_an547", "cortex-m4": "qemu_mps2_an386",
               "cortex-m7": "qemu_mps2_an500", "cortex-m3": "qemu_mps2_an385"}
HOP_S = 0.032
STATE_SYMBOLS = ("s_ring", "s_heard", "s_next", "s_prev", "s_frames")
WORK_SYMBOLS = ("s_frame", "s_spectrum", "s_power")


def _armgen(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    r, _ = run([ARMGEN, *args], check=False)
    if check and r.returncode != 0:
        raise SystemExit(f"armgen {' '.join(args)} failed:\n{r.stderr}")
    return r


def _new(cache: Path, board: str) -> Path:
    cal = Path(os.environ.get("ARMGEN_MLPERF_DIR", ".")) / "sww_cal.npz"
    extra = ["--calibration", str(cal)] if cal.is_file() else []
    backend = ["--backend", "cortex-m"] if board.startswith(("alif", "corstone")) else []
    _armgen("new", "sww", "--board", board, "--rtos", "baremetal", "--frontend", "lfbe", "--stream", "--out",
            str(cache / board), "--force",
            *backend, *extra)
    return cache / board / "sww"


def _symbol_sizes(elf: Path, names: tuple[str, ...]) -> dict[str, int]:
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection

    out: dict[str, int] = {}
    with elf.open("rb") as f:
        for sec in ELFFile(f).iter_sections():
            if isinstance(sec, SymbolTableSection):
                for sym in sec.iter_symbols():
                    if sym.name in names:
                        out[sym.name] = int(sym["st_size"])
    return out


def _size(project: Path, board: str) -> dict[str, Any]:
    r = _armgen("build", str(project), check=False)
    if r.returncode != 0:
        return {"error": (r.stderr.strip().splitlines() or ["?"])[-1]}
    data = json.loads(_armgen("size", str(project), "--json", check=False).stdout or "{}")
    rep, budgets = data.get("report") or {}, data.get("budgets") or {}
    elf = Path(rep["elf"]) if rep.get("elf") else next((project / "build").glob("*.elf"))
    return {"flash": rep.get("flash"), "ram": rep.get("ram"), "flash_budget": budgets.get("flash"),
            "ram_budget": budgets.get("ram"), "within_budget": data.get("within_budget"),
            "state": _symbol_sizes(elf, STATE_SYMBOLS), "work": _symbol_sizes(elf, WORK_SYMBOLS)}


def _stream(project: Path, wav: Path, truth: Path) -> dict[str, Any]:
    r = _armgen("run", str(project), "--input", str(wav), "--truth", str(truth), "--json", "--timeout", "1800",
                check=False)
    if not r.stdout.strip():
        return {"error": (r.stderr.strip().splitlines() or ["?"])[-1]}
    keys = ("detections", "host_detections", "score", "host_score", "features_off", "features_total",
            "features_max_lsb", "outputs_max_lsb", "litert_max_lsb", "frontend_instructions", "network_instructions",
            "frontend_instructions_max", "network_instructions_max", "windows", "passed", "truth_kind",
            "threshold_q", "host_threshold_q")
    return {k: json.loads(r.stdout).get(k) for k in keys}


def measure(cache: Path, short_wav: Path, short_spec: Path) -> dict[str, Any]:
    """Every figure of the module docstring."""
    rec = cache / "recordings"
    subprocess.run([sys.executable, str(REPO / "samples" / "sww_recordings" / "marvin_mix.py"), "--out", str(rec)],
                   check=True)
    recordings = {"short_wav_easy10s": (short_wav, short_spec),
                  "marvin_mix": (rec / "marvin_mix.wav", rec / "marvin_mix_ww_windows.json")}
    runs: dict[str, dict[str, Any]] = {}
    for board in MACHINES:
        project = _new(cache, board)
        names = recordings if board in ("qemu_mps3_an547", "qemu_mps2_an386") else ("short_wav_easy10s",)
        runs[board] = {name: _stream(project, *recordings[name]) for name in names}
        print(board, json.dumps(runs[board])[:400], flush=True)
    return {"runs": runs, "boards": measure_boards(cache, runs), "recordings": {
        k: [str(v[0].name), str(v[1].name)] for k, v in recordings.items()},
            "command": "python benchmarks/sww_stream.py --short-wav short_wav_easy10s.wav --short-spec "
                       "short_wav_easy10s_spec.json"}


def measure_boards(cache: Path, runs: dict[str, Any]) -> dict[str, Any]:
    """Per CPU board: the product image against its budgets, the duty cycle from the runs of its CPU's machine."""
    from armgen.boards import load_board

    boards: dict[str, Any] = {}
    for board in BOARDS:
        b = load_board(board)
        project = cache / board / "sww"
        if not (project / "armgen.toml").is_file():
            _new(cache, board)
        size = _size(project, board)
        on = MEASURED_ON.get(b.cpu.core)
        hop = runs.get(on or "", {}).get("short_wav_easy10s", {})
        per_hop = per_hop_max = None
        if hop.get("frontend_instructions") and hop.get("network_instructions"):
            per_hop = hop["frontend_instructions"] + hop["network_instructions"]
            per_hop_max = hop["frontend_instructions_max"] + hop["network_instructions_max"]
        budget = HOP_S * b.cpu.clock_hz
        boards[board] = {"cpu": b.cpu.core, "clock_hz": b.cpu.clock_hz, "measured_on": on, "size": size,
                         "instructions_per_hop": per_hop, "instructions_per_hop_max": per_hop_max,
                         "duty_cycle": round(per_hop / budget, 4) if per_hop else None,
                         "duty_cycle_max": round(per_hop_max / budget, 4) if per_hop_max else None}
        print(board, json.dumps(boards[board])[:300], flush=True)
    return boards


def _score(sc: dict[str, Any] | None) -> str:
    return f"{sc['true_detections']} / {sc['false_detections']} / {sc['false_rejections']}" if sc else "-"


def markdown(result: dict[str, Any]) -> str:
    """sww_stream.md: the scored runs, then per board the duty cycle and the image against its budgets."""
    lines = ["# Streaming wakeword (sww) on the firmware (benchmarks/sww_stream.py)", "",
             "Scores are true detections / false detections / false rejections (MLPerf Tiny's "
             "`get_true_and_false_detections`); times in s. Instructions per 32 ms hop on QEMU (-icount shift=0), "
             "mean (largest).", "",
             "| machine | recording | firmware detections | host (.tflite) detections | firmware score | host score "
             "| features off | outputs LSB | front end instr. | network instr. |",
             "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for board, per in result["runs"].items():
        for name, r in per.items():
            if "error" in r:
                lines.append(f"| {board} | {name} | {r['error']} | | | | | | | |")
                continue
            t = ", ".join(f"{d / 16000:.3f}" for d in r["detections"]) or "none"
            h = ", ".join(f"{d / 16000:.3f}" for d in r["host_detections"]) or "none"
            lines.append(f"| {board} | {name} | {t} | {h} | {_score(r['score'])} | {_score(r['host_score'])} | "
                         f"{r['features_off']} of {r['features_total']:,} | {r['outputs_max_lsb']} | "
                         f"{r['frontend_instructions']:,} ({r['frontend_instructions_max']:,}) | "
                         f"{r['network_instructions']:,} ({r['network_instructions_max']:,}) |")
    lines += ["", "| board | CPU @ clock | instr. per hop (largest), measured on | duty cycle (largest) | keeps up | "
              "flash of budget | RAM of budget | streaming state (ring + counters) | front end work buffers |",
              "| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |"]
    for board, b in result["boards"].items():
        s = b["size"]
        size = ("error: " + s["error"], "") if "error" in s else (
            f"{s['flash']:,} of {s['flash_budget'] or 0:,}", f"{s['ram']:,} of {s['ram_budget'] or 0:,}")
        state = sum(s.get("state", {}).values()) if "error" not in s else 0
        work = sum(s.get("work", {}).values()) if "error" not in s else 0
        hop = f"{b['instructions_per_hop']:,} ({b['instructions_per_hop_max']:,}), {b['measured_on']}" \
            if b["instructions_per_hop"] else "-"
        duty = f"{b['duty_cycle']:.3f} ({b['duty_cycle_max']:.3f})" if b["duty_cycle"] else "-"
        keeps = "-" if not b["duty_cycle_max"] else ("yes" if b["duty_cycle_max"] < 1 else "**no**")
        lines.append(f"| {board} | {b['cpu']} @ {b['clock_hz'] / 1e6:g} MHz | {hop} | {duty} | {keeps} | "
                     f"{size[0]} | {size[1]} | {state:,} B | {work:,} B |")
    lines += ["", "The one-shot clip buffer a streaming firmware does without: 15,872 int16 samples = 31,744 B."]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", type=Path, default=default_cache())
    ap.add_argument("--short-wav", type=Path, required=True, help="upstream's short_wav_easy10s.wav")
    ap.add_argument("--short-spec", type=Path, required=True, help="upstream's short_wav_easy10s_spec.json")
    ap.add_argument("--markdown-only", action="store_true", help="rewrite sww_stream.md from sww_stream.json")
    ap.add_argument("--boards-only", action="store_true",
                    help="keep sww_stream.json's runs, measure the boards again (projects kept in the cache)")
    a = ap.parse_args()
    out = BENCH_DIR / "sww_stream.json"
    if a.markdown_only:
        result = json.loads(out.read_text())
    elif a.boards_only:
        result = json.loads(out.read_text())
        result["boards"] = measure_boards(a.cache / "sww_stream", result["runs"])
        out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    else:
        result = measure(a.cache / "sww_stream", a.short_wav.resolve(), a.short_spec.resolve())
        out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    md = markdown(result)
    (BENCH_DIR / "sww_stream.md").write_text(md)
    print(md, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""kws hearing words nobody tuned it for: espeak-ng's ten command words through the MFCC front end.

For each word, ``espeak-ng -w`` writes a WAV (22,050 Hz), armgen reads it (resampled to 16 kHz,
padded to one second) and the label is taken four ways:

- host float: the float kws model (trained MLPerf Tiny weights) on the numpy pipeline's features;
- host int8: the lowered int8 program (ExecuTorch's cortex_m host kernels) on the quantized features;
- firmware on QEMU mps3-an547 (Cortex-M55) and mps2-an386 (Cortex-M4): ``armgen new kws --frontend
  mfcc``, the run variant, one run per clip (armgen.firmware.audio_run), with the features' largest
  difference from the host's and the instructions of each stage.

The front end's flash and RAM are the difference between the product images (``armgen build``) of
kws with and without ``--frontend mfcc``, per section kind. Writes ``benchmarks/kws_speech.json``
and ``benchmarks/kws_speech.md``.

Usage: ``ARMGEN_MLPERF_DIR=... python benchmarks/kws_speech.py [--cache DIR]`` (needs an armgen
workspace, espeak-ng and the trained kws weights).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

from benchlib.commands import run
from benchlib.paths import ARMGEN, BENCH_DIR, default_cache
from benchlib.samples import MACHINES

WORDS = ("down", "go", "left", "no", "off", "on", "right", "stop", "up", "yes")


def _armgen(*args: str) -> None:
    """The armgen CLI of this Python (its console script); exits with armgen's stderr when it fails."""
    r, _ = run([ARMGEN, *args], check=False)
    if r.returncode != 0:
        raise SystemExit(f"armgen {' '.join(args)} failed:\n{r.stderr}")


def _project(cache: Path, name: str, board: str, frontend: bool) -> Path:
    from armgen.firmware.build import build_project

    project = cache / name
    args = ["new", name, "--model", "kws", "--board", board, "--out", str(cache), "--force"]
    _armgen(*(args + (["--frontend", "mfcc"] if frontend else [])))
    build_project(project)
    return project


def _sizes(project: Path) -> dict[str, Any]:
    from armgen.boards import load_board
    from armgen.firmware.size import size_elf
    from armgen.project.record import load_project

    rec = load_project(project)
    assert rec.elf_path is not None
    rep = size_elf(rec.elf_path, load_board(str(rec.board_spec)), rec.map_path)
    comps = {c.name: (c.flash, c.ram) for c in rep.components}
    return {"flash": rep.flash, "ram": rep.ram, "components": comps}


def _speak(clips_dir: Path) -> None:
    """One WAV per word from espeak-ng (22,050 Hz)."""
    clips_dir.mkdir(parents=True, exist_ok=True)
    for w in WORDS:
        subprocess.run([shutil.which("espeak-ng") or "espeak-ng", "-w", str(clips_dir / f"{w}.wav"), w], check=True)


def measure(cache: Path) -> dict[str, Any]:
    """Every word through kws four ways, on both machines; the front end's flash and RAM (bytes) per machine."""
    import torch

    from armgen.boards import load_board
    from armgen.firmware.audio_run import clip_for, host_features, run_audio, top_class
    from armgen.firmware.build import build_project
    from armgen.model.frontend import frontend_from_record, read_wav
    from armgen.model.model_source import load_sample
    from armgen.model.program_report import ProgramReport
    from armgen.model.reference import reference_outputs
    from armgen.project.record import load_project

    clips_dir = cache / "clips"
    _speak(clips_dir)
    sample = load_sample("kws")
    if sample.warnings:
        raise SystemExit(f"kws_speech: {sample.warnings[0]}")
    rows: dict[str, dict[str, Any]] = {w: {} for w in WORDS}
    sizes: dict[str, Any] = {}
    for machine, board in MACHINES.items():
        project = _project(cache, f"kws_fe_{machine}", board, frontend=True)
        plain = _project(cache, f"kws_{machine}", board, frontend=False)
        with_fe, without = _sizes(project), _sizes(plain)
        sizes[machine] = {"with_frontend": with_fe, "without": without,
                          "frontend": {k: with_fe[k] - without[k] for k in ("flash", "ram")}}
        rec = load_project(project)
        assert rec.frontend is not None and rec.model is not None
        fe = frontend_from_record(rec.frontend)
        labels = rec.model.labels
        report = ProgramReport.load(rec.model_path("report"))
        elf = build_project(project, size=False, run_input=True).elf
        emulator = load_board(board).emulator
        assert emulator is not None
        for w in WORDS:
            pcm = read_wav(clips_dir / f"{w}.wav", fe.sample_rate)
            clip = clip_for(fe, pcm)
            rr = run_audio(elf, report, emulator, fe, pcm, report_dir=project / "model", labels=labels,
                           input_source=f"{w}.wav")
            row = rows[w]
            if "host_float" not in row:
                feats = fe.model_input(fe.features(clip), (1, 1, fe.num_frames, fe.frame_features))
                x = torch.tensor(feats, dtype=torch.float32)
                with torch.no_grad():
                    y = sample.model(x)[0].numpy()  # type: ignore[misc]
                row["host_float"] = labels[int(np.argmax(y))]
                out = reference_outputs(report, project / "model", [host_features(fe, clip, report)])[0]
                row["host_int8"] = top_class(out, report, labels)[0]
            row[machine] = {"label": rr.label, "score": round(rr.score, 3), "features_max_lsb": rr.features_max_lsb,
                            "outputs_max_lsb": max((o.max_lsb_diff or 0) for o in rr.outputs),
                            "frontend_instructions": rr.frontend_instructions,
                            "network_instructions": rr.network_instructions, "passed": rr.passed}
            print(machine, w, row[machine], flush=True)

    return {"words": WORDS, "rows": rows, "sizes": sizes,
            "espeak_ng": subprocess.run(["espeak-ng", "--version"], capture_output=True, text=True).stdout.strip(),
            "command": "python benchmarks/kws_speech.py"}


def markdown(result: dict[str, Any]) -> str:
    """kws_speech.md: labels per word, features' difference and instructions per stage; front end sizes."""
    rows, sizes = result["rows"], result["sizes"]
    lines = ["# kws hears espeak-ng words (benchmarks/kws_speech.py)", "",
             "| word | host float | host int8 | an547 firmware | an386 firmware | features max LSB (547/386) "
             "| front end instr. (547/386) | network instr. (547/386) |",
             "| --- | --- | --- | --- | --- | ---: | ---: | ---: |"]
    for w in WORDS:
        r = rows[w]
        a5, a3 = r["an547"], r["an386"]
        lines.append(f"| {w} | {r['host_float']} | {r['host_int8']} | {a5['label']} ({a5['score']}) | "
                     f"{a3['label']} ({a3['score']}) | {a5['features_max_lsb']} / {a3['features_max_lsb']} | "
                     f"{a5['frontend_instructions']:,} / {a3['frontend_instructions']:,} | "
                     f"{a5['network_instructions']:,} / {a3['network_instructions']:,} |")
    right = {k: sum((rows[w][k] if k.startswith("host") else rows[w][k]["label"]) == w for w in WORDS)
             for k in ("host_float", "host_int8", "an547", "an386")}
    lines += ["", "Right: " + ", ".join(f"{k} {v}/10" for k, v in right.items()), "",
              "| machine | product flash without / with front end | RAM without / with | front end flash | "
              "front end RAM |", "| --- | ---: | ---: | ---: | ---: |"]
    for m, s in sizes.items():
        lines.append(f"| {m} | {s['without']['flash']:,} / {s['with_frontend']['flash']:,} | "
                     f"{s['without']['ram']:,} / {s['with_frontend']['ram']:,} | {s['frontend']['flash']:,} | "
                     f"{s['frontend']['ram']:,} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", type=Path, default=default_cache())
    a = ap.parse_args()
    result = measure(a.cache / "kws_speech")
    (BENCH_DIR / "kws_speech.json").write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    md = markdown(result)
    (BENCH_DIR / "kws_speech.md").write_text(md)
    print(md, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

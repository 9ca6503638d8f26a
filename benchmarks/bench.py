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
import datetime as _dt
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MODELS_DIR = Path(os.environ.get("ARMGEN_BENCH_MODELS", "/work/shared/models/mlperf_tiny"))
PYTHON = sys.executable
ARMGEN = str(Path(sys.executable).with_name("armgen"))

#: sample name -> the int8 MLPerf Tiny reference model TFLM runs (issue 8).
TFLM_MODELS = {
    "kws": "kws_ref_model.tflite",
    "vww": "vww_96_int8.tflite",
    "ic": "pretrainedResnet_quant.tflite",
    "ad": "ad01_int8.tflite",
}
#: short machine name -> armgen board
MACHINES = {"an547": "qemu_mps3_an547", "an386": "qemu_mps2_an386"}
CPU_OF = {"an547": "Cortex-M55", "an386": "Cortex-M4"}

#: TFLite builtin operator -> (MicroMutableOpResolver call with the int8-only registration, kernel stem)
TFLM_OPS = {
    "CONV_2D": ("AddConv2D(tflite::Register_CONV_2D_INT8())", "conv"),
    "DEPTHWISE_CONV_2D": ("AddDepthwiseConv2D(tflite::Register_DEPTHWISE_CONV_2D_INT8())", "depthwise_conv"),
    "FULLY_CONNECTED": ("AddFullyConnected(tflite::Register_FULLY_CONNECTED_INT8())", "fully_connected"),
    "AVERAGE_POOL_2D": ("AddAveragePool2D(tflite::Register_AVERAGE_POOL_2D_INT8())", "pooling"),
    "MAX_POOL_2D": ("AddMaxPool2D(tflite::Register_MAX_POOL_2D_INT8())", "pooling"),
    "SOFTMAX": ("AddSoftmax(tflite::Register_SOFTMAX_INT8())", "softmax"),
    "ADD": ("AddAdd(tflite::Register_ADD_INT8())", "add"),
    "RESHAPE": ("AddReshape()", "reshape"),
}

TFLM_PROBE_ARENA = {"an547": 384 * 1024, "an386": 1024 * 1024}
TFLM_STACK = 8 * 1024  # same main-stack reservation as armgen's default (armgen.spec.DEFAULT_STACK_SIZE)


# ---------------------------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------------------------
def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def cmdline(cmd: list[str]) -> str:
    return " ".join(shlex.quote(str(c)) for c in cmd)


class CommandFailed(RuntimeError):
    def __init__(self, cmd: list[str], rc: int, out: str, err: str):
        super().__init__(f"command failed ({rc}): {cmdline(cmd)}\n{out[-3000:]}\n{err[-3000:]}")
        self.cmd, self.rc, self.out, self.err = cmd, rc, out, err


def run(cmd: list[str], cwd: Path | None = None, env: dict[str, str] | None = None, check: bool = True,
        timeout: float | None = None) -> tuple[subprocess.CompletedProcess, float]:
    """Run a command, return (completed process, wall seconds)."""
    t0 = time.monotonic()
    p = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    dt = time.monotonic() - t0
    if check and p.returncode != 0:
        raise CommandFailed(cmd, p.returncode, p.stdout, p.stderr)
    return p, dt


def first_line(cmd: list[str]) -> str | None:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True)
        return (p.stdout or p.stderr).strip().splitlines()[0]
    except (OSError, IndexError):
        return None


def git_head(path: Path) -> str | None:
    try:
        p = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True)
        return p.stdout.strip() or None
    except OSError:
        return None


def workspace_dir() -> Path:
    from armgen.paths import workspace_dir as wd

    return Path(wd())


def tool_versions() -> dict[str, Any]:
    ws = workspace_dir()
    v: dict[str, Any] = {
        "arm-none-eabi-gcc": first_line(["arm-none-eabi-gcc", "--version"]),
        "qemu-system-arm": first_line(["qemu-system-arm", "--version"]),
        "cmake": first_line(["cmake", "--version"]),
        "ninja": first_line(["ninja", "--version"]),
        "python": platform.python_version(),
        "armgen_commit": git_head(REPO),
    }
    for mod in ("armgen", "executorch", "torch", "ethos-u-vela", "tflite", "ai-edge-litert"):
        try:
            from importlib.metadata import version

            v[mod] = version(mod)
        except Exception:  # noqa: BLE001
            v[mod] = None
    v["workspace"] = str(ws)
    v["workspace_commits"] = {
        name: git_head(ws / rel)
        for name, rel in (
            ("executorch", "modules/lib/executorch"),
            ("cmsis-nn", "modules/lib/cmsis-nn"),
            ("tflite-micro", "modules/lib/tflite-micro"),
            ("flatbuffers (TFLM)", "modules/lib/flatbuffers-tflm"),
            ("gemmlowp", "modules/lib/gemmlowp"),
            ("ruy", "modules/lib/ruy"),
        )
    }
    return v


# ---------------------------------------------------------------------------------------------
# TFLite Micro
# ---------------------------------------------------------------------------------------------
def tflite_ops(path: Path) -> list[str]:
    """Builtin operator names of subgraph 0 of a .tflite file (PyPI `tflite` accessors)."""
    import tflite
    from tflite.BuiltinOperator import BuiltinOperator

    names = {v: k for k, v in vars(BuiltinOperator).items() if not k.startswith("_") and isinstance(v, int)}
    buf = path.read_bytes()
    m = tflite.Model.GetRootAsModel(buf, 0)
    sg = m.Subgraphs(0)
    ops = set()
    for i in range(sg.OperatorsLength()):
        oc = m.OperatorCodes(sg.Operators(i).OpcodeIndex())
        ops.add(names[max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode())])
    return sorted(ops)


def lcg_input(nbytes: int) -> bytes:
    """The runner's deterministic input (runner.cc fill_input): top byte of a 32-bit LCG."""
    s = 12345
    out = bytearray(nbytes)
    for i in range(nbytes):
        s = (s * 1664525 + 1013904223) & 0xFFFFFFFF
        out[i] = s >> 24
    return bytes(out)


def litert_reference(path: Path) -> list[list[int]]:
    """Outputs of the same model on the host (LiteRT interpreter) for the runner's input."""
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(path))
    it.allocate_tensors()
    for d in it.get_input_details():
        n = int(np.prod(d["shape"])) * np.dtype(d["dtype"]).itemsize
        arr = np.frombuffer(lcg_input(n), dtype=d["dtype"]).reshape(d["shape"])
        it.set_tensor(d["index"], arr)
    it.invoke()
    return [it.get_tensor(d["index"]).astype(int).flatten().tolist() for d in it.get_output_details()]


def tflm_size_rules():
    from armgen.size import COMPONENT_RULES, ComponentRule

    return (
        ComponentRule("tflm_runtime", archive=r"libtflm_runtime\.a"),
        ComponentRule("tflm_kernels", archive=r"libtflm_kernels\.a"),
        *COMPONENT_RULES,
    )


class Tflm:
    def __init__(self, cache: Path, jobs: int, libc: str = "nano"):
        ws = workspace_dir()
        self.roots = {
            "TFLM_ROOT": ws / "modules/lib/tflite-micro",
            "CMSIS_NN_ROOT": ws / "modules/lib/cmsis-nn",
            "FLATBUFFERS_ROOT": ws / "modules/lib/flatbuffers-tflm",
            "GEMMLOWP_ROOT": ws / "modules/lib/gemmlowp",
            "RUY_ROOT": ws / "modules/lib/ruy",
        }
        missing = [f"{k}={p}" for k, p in self.roots.items() if not p.is_dir()]
        if missing:
            raise SystemExit(
                "bench: TFLM sources missing: " + ", ".join(missing)
                + "\n  run: armgen workspace init --benchmarks --revision tflite-micro=main"
                + " (and see benchmarks/README.md for flatbuffers-tflm)"
            )
        self.cache = cache / f"tflm-{libc}"
        self.jobs = jobs
        self.libc = libc

    def _ops_inc(self, bdir: Path, name: str, ops: list[str]) -> Path:
        lines = [
            f"// generated by benchmarks/bench.py for {name}: {', '.join(ops)}",
            f"constexpr unsigned kTflmNumOps = {len(ops)};",
            "template <class R>",
            "TfLiteStatus tflm_register_ops(R& r) {",
        ]
        for op in ops:
            if op not in TFLM_OPS:
                raise SystemExit(f"bench: TFLM runner knows no registration for {op} ({name})")
            lines.append(f"  if (r.{TFLM_OPS[op][0]} != kTfLiteOk) return kTfLiteError;")
        lines += ["  return kTfLiteOk;", "}", ""]
        p = bdir / f"ops_{name}.inc"
        text = "\n".join(lines)
        if not p.exists() or p.read_text() != text:
            p.write_text(text)
        return p

    def configure(self, machine: str, samples: list[str], arenas: dict[str, int]) -> tuple[Path, list[str]]:
        bdir = self.cache / machine
        bdir.mkdir(parents=True, exist_ok=True)
        defs = {k: str(v) for k, v in self.roots.items()}
        stems: list[str] = []
        defs["TFLM_MACHINE"] = machine
        defs["TFLM_MODELS"] = ";".join(samples)
        defs["TFLM_STACK_SIZE"] = str(TFLM_STACK)
        defs["TFLM_LIBC"] = self.libc
        for s in samples:
            path = MODELS_DIR / TFLM_MODELS[s]
            ops = tflite_ops(path)
            for op in ops:
                st = TFLM_OPS[op][1]
                if st not in stems:
                    stems.append(st)
            S = s.upper()
            defs[f"TFLM_{S}_PATH"] = str(path)
            defs[f"TFLM_{S}_OPS_INC"] = str(self._ops_inc(bdir, s, ops))
            defs[f"TFLM_{S}_ARENA"] = str(arenas[s])
        defs["TFLM_KERNELS"] = ";".join(sorted(stems))
        cmd = ["cmake", "-G", "Ninja", "-S", str(HERE / "tflm"), "-B", str(bdir)] + [f"-D{k}={v}" for k, v in defs.items()]
        run(cmd)
        return bdir, cmd

    def build(self, bdir: Path, targets: list[str]) -> tuple[float, list[str]]:
        cmd = ["cmake", "--build", str(bdir), "-j", str(self.jobs), "--target", *targets]
        _, dt = run(cmd)
        return dt, cmd

    def run_elf(self, elf: Path, machine: str):
        from armgen.boards import load_board
        from armgen.run import parse_firmware_output, run_qemu

        board = load_board(MACHINES[machine])
        r = run_qemu(elf, board.emulator, timeout=300)
        return r, parse_firmware_output(r.console)

    def measure(self, machines: list[str], samples: list[str], clean: bool) -> dict[str, Any]:
        from armgen.boards import load_board
        from armgen.run import instructions_from_ticks, qemu_command
        from armgen.size import size_elf

        out: dict[str, Any] = {}
        for m in machines:
            board = load_board(MACHINES[m])
            if clean and (self.cache / m).exists():
                shutil.rmtree(self.cache / m)
            probe = {s: TFLM_PROBE_ARENA[m] for s in samples}
            bdir, cfg_cmd = self.configure(m, samples, probe)
            targets = [f"tflm_{s}" for s in samples]
            log(f"TFLM {m}: building {', '.join(targets)} (probe arena {TFLM_PROBE_ARENA[m]} B)")
            build_s, build_cmd = self.build(bdir, targets)
            used: dict[str, int] = {}
            arenas: dict[str, int] = {}
            for s in samples:
                r, fw = self.run_elf(bdir / f"tflm_{s}.elf", m)
                pool = next((p for p in fw.pools if p.name == "arena"), None)
                if not fw.done or pool is None:
                    raise SystemExit(f"bench: TFLM probe run of {s} on {m} failed:\n{r.console[-2000:]}")
                used[s] = pool.used
            # smallest arena that works (16-byte steps): start at arena_used_bytes() of the probe run
            for s in samples:
                tries: list[dict[str, Any]] = []

                def works(n: int, s: str = s, tries: list = tries) -> bool:
                    ar = {x: arenas.get(x, (used[x] + 15) // 16 * 16) for x in samples}
                    ar[s] = n
                    self.configure(m, samples, ar)
                    self.build(bdir, [f"tflm_{s}"])
                    r, fw = self.run_elf(bdir / f"tflm_{s}.elf", m)
                    ok = fw.done and not fw.errors
                    tries.append({"arena": n, "ok": ok})
                    return ok

                cand = (used[s] + 15) // 16 * 16
                if works(cand):
                    while cand > 16 and works(cand - 16):
                        cand -= 16
                else:
                    lo, hi = cand, TFLM_PROBE_ARENA[m]
                    while hi - lo > 16:
                        mid = max(lo + 16, (lo + hi) // 32 * 16)
                        if works(mid):
                            hi = mid
                        else:
                            lo = mid
                    cand = hi
                arenas[s] = cand
                log(f"TFLM {m} {s}: arena_used_bytes {used[s]}, smallest arena that works {cand} ({len(tries)} tries)")
                out.setdefault(m, {})[s] = {"arena_search": tries}
            # final build with every smallest arena; clean rebuild timing done above (probe build)
            cfg_cmd = self.configure(m, samples, arenas)[1]
            self.build(bdir, targets)
            for s in samples:
                elf = bdir / f"tflm_{s}.elf"
                mp = bdir / f"tflm_{s}.elf.map"
                if not mp.exists():
                    mp = bdir / f"tflm_{s}.map"
                rep = size_elf(elf, board, mp, rules=tflm_size_rules())
                r, fw = self.run_elf(elf, m)
                if not fw.done:
                    raise SystemExit(f"bench: TFLM run of {s} on {m} failed:\n{r.console[-2000:]}")
                ref = litert_reference(MODELS_DIR / TFLM_MODELS[s])
                outs = [list(fw.outputs.get(i, ())) for i in range(len(ref))]
                maxdiff = max(abs(a - b) for o, rr in zip(outs, ref) for a, b in zip(o, rr))
                comps = {c.name: {"flash": c.flash, "ram": c.ram} for c in rep.components}
                pool = next(p for p in fw.pools if p.name == "arena")
                entry = out[m][s]
                entry.update({
                    "model_file": str(MODELS_DIR / TFLM_MODELS[s]),
                    "ops": tflite_ops(MODELS_DIR / TFLM_MODELS[s]),
                    "elf": str(elf),
                    "flash": rep.flash,
                    "ram_static": rep.ram,
                    "components": comps,
                    "flash_excl_model": rep.flash - comps.get("model", {}).get("flash", 0),
                    "arena_reserved": pool.reserved,
                    "arena_used": pool.used,
                    "arena_used_bytes_probe": used[s],
                    "stack_reserved": fw.stack.reserved if fw.stack else None,
                    "stack_used": fw.stack.used if fw.stack else None,
                    "ticks": fw.ticks,
                    "instructions": instructions_from_ticks(fw.ticks, board.emulator.qemu_machine) if fw.ticks is not None else None,
                    "outputs": outs,
                    "litert_reference": ref,
                    "max_abs_diff_vs_litert": maxdiff,
                    "clean_build_seconds_all_models": round(build_s, 1),
                    "commands": {
                        "configure": cmdline(cfg_cmd),
                        "build": cmdline(build_cmd),
                        "size": f"armgen.size.size_elf({elf}, board={MACHINES[m]}, map={mp}, rules=COMPONENT_RULES + TFLM archive rules)",
                        "run": cmdline(qemu_command(elf, board.emulator)),
                    },
                })
                log(f"TFLM {m} {s}: flash {rep.flash} B (excl. model {entry['flash_excl_model']}), static RAM {rep.ram} B, "
                    f"arena {pool.reserved}/{pool.used}, stack {entry['stack_used']}, ticks {fw.ticks} "
                    f"({entry['instructions']} instr), max |diff| vs LiteRT {maxdiff}")
        return out


# ---------------------------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------------------------
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="benchmarks/run", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", default="kws,vww,ic,ad", help="comma-separated subset of kws,vww,ic,ad")
    ap.add_argument("--machines", default="an547,an386", help="comma-separated subset of an547,an386")
    ap.add_argument("--skip-tflm", action="store_true")
    ap.add_argument("--skip-armgen", action="store_true")
    ap.add_argument("--skip-compare", action="store_true")
    ap.add_argument("--tflm-libc", choices=["nano", "full"], default="nano")
    ap.add_argument("--clean", action="store_true", help="delete cached build trees first")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--cache", type=Path, default=Path(os.environ.get("ARMGEN_BENCH_CACHE", Path.home() / ".cache/armgen-bench")))
    ap.add_argument("--out", type=Path, default=HERE, help="where results.{json,md,svg} go")
    ap.add_argument("--report-only", action="store_true", help="only regenerate results.md and the plot from results.json")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    samples = [s for s in a.samples.split(",") if s]
    machines = [m for m in a.machines.split(",") if m]
    for s in samples:
        if s not in TFLM_MODELS:
            raise SystemExit(f"bench: unknown sample {s!r} (kws, vww, ic, ad)")
    for m in machines:
        if m not in MACHINES:
            raise SystemExit(f"bench: unknown machine {m!r} (an547, an386)")
    a.cache.mkdir(parents=True, exist_ok=True)
    res_path = a.out / "results.json"
    results: dict[str, Any] = json.loads(res_path.read_text()) if res_path.exists() else {}
    if not a.report_only:
        results["meta"] = {
            "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "command": "benchmarks/run " + " ".join(argv if argv is not None else sys.argv[1:]),
            "host": {"machine": platform.machine(), "cpus": os.cpu_count(), "jobs": a.jobs},
            "tools": tool_versions(),
        }
        if not a.skip_tflm:
            t = Tflm(a.cache, a.jobs, a.tflm_libc)
            got = t.measure(machines, samples, a.clean)
            key = "tflm" if a.tflm_libc == "nano" else "tflm_full_newlib"
            for m, per in got.items():
                results.setdefault(key, {}).setdefault(m, {}).update(per)
        res_path.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

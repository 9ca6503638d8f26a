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
#: The MLPerf Tiny .tflite folder: $ARMGEN_BENCH_MODELS, else $ARMGEN_MLPERF_DIR (no default: a site fact).
MODELS_DIR = Path(os.environ.get("ARMGEN_BENCH_MODELS") or os.environ.get("ARMGEN_MLPERF_DIR") or "")
if str(MODELS_DIR) not in ("", "."):
    # armgen reads the trained weights only from $ARMGEN_MLPERF_DIR (it guesses no folder): every
    # `armgen new` below compiles the samples with them, as TFLM runs the reference models.
    os.environ["ARMGEN_MLPERF_DIR"] = str(MODELS_DIR)

#: Machine-specific prefixes shown as placeholders in the recorded commands (results.json).
_PLACEHOLDERS = (
    (str(MODELS_DIR), "$ARMGEN_BENCH_MODELS"),
    (str(Path.home() / ".cache" / "armgen-bench"), "$ARMGEN_BENCH_CACHE"),
    (str(Path(sys.executable).parent) + "/", ""),
    (str(Path.home() / ".local" / "share" / "armgen" / "workspace"), "$ARMGEN_WORKSPACE"),
    (os.environ.get("ARMGEN_WORKSPACE", ""), "$ARMGEN_WORKSPACE"),
    (os.environ.get("ARMGEN_BENCH_CACHE", ""), "$ARMGEN_BENCH_CACHE"),
    (str(Path(__file__).resolve().parent.parent) + "/", ""),
)
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
TFLM_STACK = 8 * 1024  # the stack TFLM's probe runs reserve; the measured runs use armgen's rule (armgen.firmware.stack)


# ---------------------------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------------------------
def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def cmdline(cmd: list[str]) -> str:
    """A command line as recorded: machine paths (the model folder, the cache, the venv) as placeholders."""
    return without_machine_paths(" ".join(shlex.quote(str(c)) for c in cmd))


def without_machine_paths(text: str) -> str:
    """``text`` with this machine's paths (model folder, cache, venv, workspace, checkout) as placeholders."""
    for prefix, placeholder in _PLACEHOLDERS:
        if prefix and prefix not in ("/", "."):
            text = text.replace(prefix, placeholder)
    return text


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
    from armgen.firmware.size import COMPONENT_RULES, ComponentRule

    return (
        ComponentRule("tflm_runtime", archive=r"libtflm_runtime\.a"),
        ComponentRule("tflm_kernels", archive=r"libtflm_kernels\.a"),
        *COMPONENT_RULES,
    )


#: flatbuffers as TFLM main's flatbuffers_download.sh fetches it (tag v25.9.23 = this commit), with TFLM's
#: tensorflow/lite/micro/tools/make/flatbuffers.patch applied; not a project of modules/west.yml (ExecuTorch
#: pins flatbuffers v24.3.25 and TFLM's schema_generated.h asserts 25.9.23).
FLATBUFFERS_TFLM_COMMIT = "187240970746d00bbd26b0f5873ed54d2477f9f3"


def ensure_flatbuffers_tflm(ws: Path) -> Path:
    """Check out flatbuffers v25.9.23 (headers) into <ws>/modules/lib/flatbuffers-tflm, patched as TFLM does.

    The URL comes from the workspace's mirror template (.armgen/workspace.json), else GitHub.
    """
    dst = ws / "modules/lib/flatbuffers-tflm"
    if (dst / "include/flatbuffers/flatbuffers.h").exists():
        return dst
    url = "https://github.com/google/flatbuffers"
    try:
        tmpl = json.loads((ws / ".armgen/workspace.json").read_text()).get("mirror")
        if tmpl:
            url = tmpl.format(owner="google", name="flatbuffers")
    except (OSError, ValueError, KeyError):
        pass
    log(f"checking out flatbuffers {FLATBUFFERS_TFLM_COMMIT[:12]} for TFLM from {url}")
    run(["git", "-c", "protocol.file.allow=always", "clone", "-q", "--filter=blob:none", "--no-checkout",
         "--upload-pack=git -c uploadpack.allowFilter=true upload-pack", url, str(dst)])
    run(["git", "-C", str(dst), "sparse-checkout", "set", "--no-cone", "/include/", "/LICENSE"])
    run(["git", "-C", str(dst), "checkout", "-q", FLATBUFFERS_TFLM_COMMIT])
    run(["git", "-C", str(dst), "apply",
         str(ws / "modules/lib/tflite-micro/tensorflow/lite/micro/tools/make/flatbuffers.patch")])
    return dst


class Tflm:
    def __init__(self, cache: Path, jobs: int, libc: str = "nano"):
        ws = workspace_dir()
        if (ws / "modules/lib/tflite-micro").is_dir():
            ensure_flatbuffers_tflm(ws)
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

            )
        self.cache = cache / f"tflm-{libc}"
        self.jobs = jobs
        self.libc = libc
        self.extra_defs: dict[str, str] = {}  # e.g. TFLM_RECORD_ARENA=ON (tflm_arena.py)

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

    def configure(self, machine: str, samples: list[str], arenas: dict[str, int],
                  stacks: dict[str, int] | None = None) -> tuple[Path, list[str]]:
        bdir = self.cache / machine
        bdir.mkdir(parents=True, exist_ok=True)
        defs = {k: str(v) for k, v in self.roots.items()}
        stems: list[str] = []
        defs["TFLM_MACHINE"] = machine
        defs["TFLM_MODELS"] = ";".join(samples)
        defs["TFLM_STACK_SIZE"] = str(TFLM_STACK)
        defs["TFLM_LIBC"] = self.libc
        defs.update(self.extra_defs)
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
            defs[f"TFLM_{S}_STACK"] = str((stacks or {}).get(s, TFLM_STACK))
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
        from armgen.firmware.console_protocol import parse_firmware_output
        from armgen.firmware.qemu import run_qemu

        board = load_board(MACHINES[machine])
        r = run_qemu(elf, board.emulator, timeout=300)
        return r, parse_firmware_output(r.console)

    def measure(self, machines: list[str], samples: list[str], clean: bool) -> dict[str, Any]:
        from armgen.boards import load_board
        from armgen.firmware.qemu import instructions_from_ticks, qemu_command
        from armgen.firmware.size import size_elf

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
            # the stack by armgen's own rule (armgen.firmware.stack, what `--stack-size auto` does):
            # high-water mark of the run with the smallest arena and the 8 KiB stack, x 1.25, 8-byte steps
            from armgen.firmware.stack import sized_stack_bytes

            self.configure(m, samples, arenas)
            self.build(bdir, targets)
            stacks: dict[str, int] = {}
            for s in samples:
                r, fw = self.run_elf(bdir / f"tflm_{s}.elf", m)
                if not fw.done or fw.stack is None:
                    raise SystemExit(f"bench: TFLM stack run of {s} on {m} failed:\n{r.console[-2000:]}")
                stacks[s] = sized_stack_bytes(fw.stack.used)
                out[m][s]["stack_measured_with"] = {"reserved": fw.stack.reserved, "used": fw.stack.used}
                log(f"TFLM {m} {s}: stack high-water {fw.stack.used} B with {fw.stack.reserved} B -> {stacks[s]} B")
            # final build with every smallest arena and sized stack; clean rebuild timing done above (probe build)
            cfg_cmd = self.configure(m, samples, arenas, stacks)[1]
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
                        "size": f"armgen.firmware.size.size_elf({elf}, board={MACHINES[m]}, map={mp}, rules=COMPONENT_RULES + TFLM archive rules)",
                        "run": cmdline(qemu_command(elf, board.emulator)),
                    },
                })
                log(f"TFLM {m} {s}: flash {rep.flash} B (excl. model {entry['flash_excl_model']}), static RAM {rep.ram} B, "
                    f"arena {pool.reserved}/{pool.used}, stack {entry['stack_used']}, ticks {fw.ticks} "
                    f"({entry['instructions']} instr), max |diff| vs LiteRT {maxdiff}")
        return out


# ---------------------------------------------------------------------------------------------
# sizes: armgen.firmware.size plus a workaround for overlapping map lines
# ---------------------------------------------------------------------------------------------
def component_sizes(elf: Path, board_name: str, map_path: Path, rules=None) -> dict[str, Any]:
    """Flash/RAM per component from armgen.firmware.size.size_elf with the linker map.

    Workaround (reported to the lead): armgen.firmware.size gives a whole section to ``unattributed`` when two
    map lines overlap, which GNU ld's merged string sections (``.rodata.str1.4`` of two objects
    at one address) do in armgen's own firmware maps. For such sections the bytes are attributed
    here from the same map with the same rules, overlapping bytes counted once (first line wins).
    """
    from armgen.boards import load_board
    from armgen.firmware.size import COMPONENT_RULES, UNATTRIBUTED, classify, parse_map, size_elf

    if rules is None:
        from armgen.firmware.size import ComponentRule

        # armgen's build now compiles only the cortex_m/portable kernel sources a program needs into its
        # own archives (libarmgen_cortex_m_kernels.a, libarmgen_portable_kernels.a), which
        # armgen.firmware.size's rules do not name yet (they land in other_libraries); reported to the lead.
        rules = (
            ComponentRule("cortex_m_kernels", archive=r"libarmgen_cortex_m_kernels\.a"),
            ComponentRule("portable_kernels", archive=r"libarmgen_portable_kernels\.a"),
            *COMPONENT_RULES,
        )
    rep = size_elf(elf, load_board(board_name), map_path, rules=rules)
    totals = {c.name: {"flash": c.flash, "ram": c.ram} for c in rep.components}
    fixed = []
    lmap = None
    for sec in rep.sections:
        comps = dict(sec.components)
        if sec.size == 0 or comps.get(UNATTRIBUTED, 0) != sec.size or sec.size < 256:
            continue
        lmap = lmap or parse_map(map_path.read_text(errors="replace"))
        ins = sorted((i for i in lmap.inputs if i.output_section == sec.name and i.size), key=lambda i: i.address)
        if not ins:
            continue
        out: dict[str, int] = {}
        covered = sec.vma
        for i in ins:
            b, e = max(i.address, covered), min(i.address + i.size, sec.vma + sec.size)
            if e <= b:
                continue
            covered = e
            c = classify(output_section=sec.name, input_section=i.input_section, archive=i.archive,
                         obj=None if i.archive else i.obj, rules=rules)
            out[c] = out.get(c, 0) + (e - b)
        rest = sec.size - sum(out.values())
        if rest > 0:
            out[UNATTRIBUTED] = out.get(UNATTRIBUTED, 0) + rest
        for pl in sec.placements:
            totals[UNATTRIBUTED][pl.memory] -= sec.size
            for c, n in out.items():
                totals.setdefault(c, {"flash": 0, "ram": 0})[pl.memory] += n
        fixed.append(sec.name)
    totals = {k: v for k, v in totals.items() if v["flash"] or v["ram"]}
    return {
        "flash": rep.flash,
        "ram": rep.ram,
        "components": totals,
        "pools": {p.name: p.size for p in rep.pools},
        "stack": rep.stack,
        "heap": rep.heap,
        "sections": {x.name: x.size for x in rep.sections},
        "reattributed_sections": fixed,
    }


def libc_members(map_path: Path) -> list[str]:
    """Which newlib/libgcc members the link pulled in and who asked ("member <- object (symbol)"), from
    the map's "Archive member included to satisfy reference by file (symbol)" block."""
    out: list[str] = []
    lines = map_path.read_text(errors="replace").splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Discarded input sections") or line.startswith("Memory Configuration"):
            break
        m = re.match(r"^\S*/(lib(?:c|c_nano|m|g|g_nano|stdc\+\+_nano|supc\+\+_nano)\.a)\((.*?)\)$", line)
        if m and i + 1 < len(lines):
            by = re.match(r"^\s+(\S+)\s+\((.*)\)$", lines[i + 1])
            if by:
                out.append(f"{m.group(1)}({m.group(2)}) <- {Path(by.group(1)).name} ({by.group(2)})")
    return out


COMPONENTS_HOW = ("benchmarks/bench.py component_sizes({elf}, {board}, {map}): armgen.firmware.size.size_elf with the "
                  "linker map, plus rules for armgen's own kernel archives and overlap-safe re-attribution")

KERNEL_COMPONENTS = ("kernel_registration", "portable_kernels", "quantized_kernels", "cortex_m_kernels", "cmsis_nn")


def kernel_flash(comps: dict[str, Any]) -> int:
    return sum(comps.get(k, {}).get("flash", 0) for k in KERNEL_COMPONENTS)


# ---------------------------------------------------------------------------------------------
# armgen: new, clean build, size, run
# ---------------------------------------------------------------------------------------------
def _stack_sizing(proj: Path) -> dict[str, Any] | None:
    """``build/stack.json``: how ``armgen build`` sized the stack (``--stack-size auto``), None otherwise."""
    path = proj / "build" / "stack.json"
    return json.loads(path.read_text()) if path.is_file() else None


def _product_run(proj: Path) -> dict[str, Any] | None:
    """The product image's own run, ``build/stack-check.log``: what ``armgen build`` ran to check the sized
    stack. It is the image as shipped, which writes its input in place before SysTick starts, as TFLM's
    runner does; ``armgen run``'s variant copies the sample input inside the timed call (ad: 640 B)."""
    from armgen.firmware.console_protocol import parse_firmware_output
    from armgen.firmware.qemu import instructions_from_ticks

    log_path, sizing = proj / "build" / "stack-check.log", _stack_sizing(proj)
    if not log_path.is_file() or not sizing:
        return None
    fw = parse_firmware_output(log_path.read_text(errors="replace"))
    if fw.ticks is None or not fw.done:
        return None
    return {"ticks": fw.ticks, "instructions": instructions_from_ticks(fw.ticks, sizing["machine"]),
            "log": "build/stack-check.log (armgen build's check run of the product image)"}


def backfill_product_runs(results: dict[str, Any], cache: Path) -> None:
    """Add ``instructions_product`` to armgen entries recorded before it existed, from the same run's
    projects in the cache (their ``build/stack-check.log``)."""
    for per in results.get("armgen", {}).values():
        for e in per.values():
            if isinstance(e, dict) and "instructions_product" not in e and e.get("project"):
                pr = _product_run(Path(e["project"].replace("$ARMGEN_BENCH_CACHE", str(cache))))
                if pr:
                    e["product_run"], e["instructions_product"] = pr, pr["instructions"]


def _method_pool_breakdown(proj: Path) -> dict[str, int]:
    """The method pool's bytes by allocation kind (armgen.model.method_allocator's replay of the project's .pte)."""
    import tomllib

    from armgen.model.method_allocator import method_allocator_breakdown

    rec = tomllib.loads((proj / "armgen.toml").read_text())
    # the temp allocator's size during load_method: a temp pool, or the load scratch a planned pool lends
    temp = next((p["bytes"] for p in rec.get("pools", []) if p["name"] == "temp"), 0) \
        or int(rec.get("memory", {}).get("load_scratch", 0))
    return method_allocator_breakdown((proj / rec["model"]["pte"]).read_bytes(), temp)


class Armgen:
    def __init__(self, cache: Path, jobs: int, reuse: bool):
        self.cache = cache / "armgen"
        self.jobs = jobs
        self.reuse = reuse

    def project(self, machine: str, name: str) -> Path:
        return self.cache / machine / name

    def new(self, machine: str, name: str, extra: list[str] | None = None) -> tuple[float | None, str]:
        parent = self.cache / machine
        parent.mkdir(parents=True, exist_ok=True)
        cmd = [ARMGEN, "new", name, "--board", MACHINES[machine], "--out", str(parent), "--force", *(extra or [])]
        if self.reuse and (parent / name / "armgen.toml").exists():
            return None, cmdline(cmd)
        log(f"armgen new {name} on {machine}")
        _, dt = run(cmd)
        report = parent / name / "model" / f"{name}.report.json"
        untrained = [w for w in json.loads(report.read_text()).get("warnings", []) if "no trained weights" in w]
        if untrained and name in TFLM_MODELS:
            raise SystemExit(f"bench: {untrained[0]}")
        return round(dt, 1), cmdline(cmd)

    def build_elf(self, proj: Path, elf: Path, incremental: bool = False) -> tuple[float | None, str]:
        cmd = [ARMGEN, "build", str(proj), *([] if incremental else ["--rebuild"]), "-j", str(self.jobs)]
        if self.reuse and elf.exists() and not incremental:
            return None, cmdline(cmd)
        log(f"armgen build --rebuild {proj}")
        p, dt = run(cmd, check=False)
        if p.returncode not in (0, 1):
            raise CommandFailed(cmd, p.returncode, p.stdout, p.stderr)
        return round(dt, 1), cmdline(cmd)

    def size(self, proj: Path) -> tuple[dict[str, Any], str]:
        cmd = [ARMGEN, "size", str(proj), "--json"]
        p, _ = run(cmd, check=False)
        if p.returncode not in (0, 1):
            raise CommandFailed(cmd, p.returncode, p.stdout, p.stderr)
        return json.loads(p.stdout), cmdline(cmd)

    def run_fw(self, proj: Path) -> tuple[dict[str, Any], str]:
        cmd = [ARMGEN, "run", str(proj), "--json"]
        p, _ = run(cmd, check=False, timeout=1800)
        try:
            rep = json.loads(p.stdout)
        except json.JSONDecodeError:  # the firmware failed before armgen run could report: keep the reason
            err = [x for x in p.stderr.strip().splitlines() if "error" in x]
            rep = {"passed": False, "findings": [{"severity": "error", "subject": "run",
                                                   "message": err[-1] if err else f"exit {p.returncode}"}]}
        rep["_exit_status"] = p.returncode
        rep["_stderr_tail"] = p.stderr.strip().splitlines()[-1:] if p.stderr.strip() else []
        return rep, cmdline(cmd)

    def measure_project(self, machine: str, proj: Path, t_new: float | None, new_cmd: str,
                        incremental: bool = False, run_it: bool = True, detail: bool = True) -> dict[str, Any]:
        """Build (clean unless ``incremental``), size and (if ``run_it``) run one project.

        ``detail`` adds what only the main table uses: sections, libc members, stack, LSB difference.
        """
        elf, mp = project_files(proj)
        t_build, build_cmd = self.build_elf(proj, elf, incremental=incremental)
        size_json, size_cmd = self.size(proj)
        comp = component_sizes(elf, MACHINES[machine], mp)
        runrep, run_cmd = self.run_fw(proj) if run_it else ({"_exit_status": None}, None)
        rep = size_json["report"]
        e: dict[str, Any] = {
            "project": str(proj),
            "flash": rep["flash"],
            "ram_static": rep["ram"],
            "components": comp["components"],
            "flash_excl_model": rep["flash"] - comp["components"].get("model", {}).get("flash", 0),
            "kernel_flash": kernel_flash(comp["components"]),
            "pools": {p["name"]: {"reserved": p["reserved"], "used": p["used"]} for p in runrep.get("pools", [])},
            "ticks": runrep.get("ticks"),
            "instructions": runrep.get("instructions"),
            "run_passed": runrep.get("passed"),
            "run_exit_status": runrep["_exit_status"],
            "run_findings": [f"{f['severity']}: {f['subject']}: {f['message']}" for f in runrep.get("findings", [])],
            "seconds_new": t_new,
            "seconds_clean_build": t_build,
            "commands": {"new": new_cmd, "build": build_cmd, "size": size_cmd, "run": run_cmd},
        }
        if detail:
            e.update({
                "components_note": (f"sections {comp['reattributed_sections']} re-attributed from the map (overlapping "
                                    "merged-string lines; see component_sizes())") if comp["reattributed_sections"] else None,
                "components_armgen_size": rep["components"],
                "sections": comp["sections"],
                "libc_members": libc_members(mp),
                "stack_reserved": (runrep.get("stack") or {}).get("reserved"),
                "stack_used": (runrep.get("stack") or {}).get("used"),
                "stack_sizing": _stack_sizing(proj),
                "product_run": (product := _product_run(proj)),
                "instructions_product": (product or {}).get("instructions"),
                "method_pool_breakdown": _method_pool_breakdown(proj),
                "max_lsb_diff": runrep.get("max_lsb_diff"),
            })
            e["commands"]["components"] = COMPONENTS_HOW.format(elf=elf, board=MACHINES[machine], map=mp)
        return e

    def measure(self, machines: list[str], samples: list[str], previous: dict[str, Any], save=None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for m in machines:
            for s in samples:
                try:
                    t_new, new_cmd = self.new(m, s, ["--stack-size", "auto"])
                    proj = self.project(m, s)
                    e = self.measure_project(m, proj, t_new, new_cmd)
                except CommandFailed as exc:  # keep going: a failed step is a result too
                    msg = (exc.err.strip().splitlines() or exc.out.strip().splitlines() or ["?"])[-1]
                    log(f"armgen {m} {s}: FAILED: {cmdline(exc.cmd)}: {msg}")
                    out.setdefault(m, {})[s] = {"error": msg, "failed_command": cmdline(exc.cmd)}
                    if save:
                        save(m, s, out[m][s])
                    continue
                prev = previous.get(m, {}).get(s, {})
                for k in ("seconds_new", "seconds_clean_build"):  # --reuse keeps the last measured times
                    if e[k] is None:
                        e[k] = prev.get(k)
                        e[k + "_note"] = "from an earlier run (--reuse skipped the step)"
                out.setdefault(m, {})[s] = e
                if save:
                    save(m, s, e)
                log(f"armgen {m} {s}: flash {e['flash']} (excl. model {e['flash_excl_model']}), RAM {e['ram_static']}, "
                    f"pools {e['pools']}, stack {e['stack_used']}, instr {e['instructions']}, new {e['seconds_new']} s, "
                    f"build {e['seconds_clean_build']} s, run passed {e['run_passed']}")
        return out


# ---------------------------------------------------------------------------------------------
# side-by-side comparisons
# ---------------------------------------------------------------------------------------------
#: upstream defaults for the ExecuTorch memory pools (bytes), with where they come from
UPSTREAM_POOLS = {
    "bare-metal arm_executor_runner": {
        "method": 60 * 1024 * 1024, "temp": 0x200000, "stack": None, "heap": None,
        "source": "examples/arm/executor_runner/arm_executor_runner.cpp ET_ARM_BAREMETAL_METHOD_ALLOCATOR_POOL_SIZE "
                  "(60 MiB); CMakeLists.txt ET_ARM_BAREMETAL_SCRATCH_TEMP_ALLOCATOR_POOL_SIZE 0x200000 (not Dedicated_Sram)",
    },
    "Zephyr mv2-ethosu": {
        "method": 1572864, "temp": 1572864, "stack": 16384, "heap": 65536,
        "source": "zephyr/samples/mv2-ethosu/prj.conf (METHOD/TEMP_ALLOCATOR_POOL_SIZE 1572864, MAIN_STACK 16384, HEAP 65536)",
    },
    "Zephyr hello-executorch": {
        "method": 2000, "temp": 2000, "stack": 8192, "heap": 32768,
        "source": "zephyr/samples/hello-executorch/prj.conf (METHOD/TEMP_ALLOCATOR_POOL_SIZE 2000, MAIN_STACK 8192, HEAP 32768)",
    },
}
#: QEMU machine -> the real boards it stands in for (pool fit is checked on all of them)
FIT_BOARDS = {"an547": ["qemu_mps3_an547", "corstone_300", "alif_e8_he"], "an386": ["qemu_mps2_an386", "stm32f4_disco"]}


def pool_fit(board_name: str, pools: list[int]) -> dict[str, Any]:
    """Do these pools fit the board? Each pool is one static array, so it must sit in one region
    that the board lets hold pools; pools are placed largest first, best fit (arithmetic only)."""
    from armgen.boards import load_board

    b = load_board(board_name)
    free = {r.name: r.usable for r in b.regions if r.volatile and "pools" in r.uses}
    placed = []
    for n in sorted(pools, reverse=True):
        cands = [k for k, v in free.items() if v >= n]
        if not cands:
            return {"fits": False, "largest_pool_region": max(free.values()) if free else 0,
                    "why": f"a {n} B pool fits no pool region (largest {max(free.values()) if free else 0} B)"}
        k = min(cands, key=lambda k: free[k])
        free[k] -= n
        placed.append((n, k))
    return {"fits": True, "placement": placed}


def compare_pools(armgen_res: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for m, per in armgen_res.items():
        for s, e in per.items():
            planned = sum(v["reserved"] for k, v in e["pools"].items() if k.startswith("planned_"))
            needed_method_pool = planned + e["pools"].get("method", {}).get("used", 0)  # upstream takes planned buffers from the method pool
            temp_used = e["pools"].get("temp", {}).get("used", 0)
            armgen_pools = [v["reserved"] for v in e["pools"].values()]
            rows = {"armgen (exact)": {
                "pools_reserved": sum(armgen_pools),
                "ram_reserved": sum(armgen_pools) + (e["stack_reserved"] or 0),
                "program_loads": True,
                "fit": {b: pool_fit(b, armgen_pools) for b in FIT_BOARDS[m]},
            }}
            for cfg, u in UPSTREAM_POOLS.items():
                pools = [u["method"], u["temp"]]
                rows[cfg] = {
                    "pools_reserved": sum(pools),
                    "ram_reserved": sum(pools) + (u["stack"] or 0) + (u["heap"] or 0),
                    "program_loads": u["method"] >= needed_method_pool and u["temp"] >= temp_used,
                    "fit": {b: pool_fit(b, pools) for b in FIT_BOARDS[m]},
                    "source": u["source"],
                }
            out.setdefault(m, {})[s] = {"method_pool_needed_upstream_style": needed_method_pool, "configs": rows,
                                        "command": "arithmetic on the board data (armgen.boards.load_board) and the pools armgen run measured"}
    return out


def patch_all_portable(src: Path, dst: Path) -> None:
    """Copy an armgen project and make it register every portable operator, as upstream Zephyr's
    default EXECUTORCH_BUILD_PORTABLE_OPS=y does (ExecuTorch's portable_ops_lib, whole-archive, with
    ExecuTorch's default kernel table); the program's own selective libraries stay."""
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("build"))
    cm = dst / "cmake" / "executorch.cmake"
    t = cm.read_text()
    t2 = t.replace("set(EXECUTORCH_BUILD_PORTABLE_OPS OFF)", "set(EXECUTORCH_BUILD_PORTABLE_OPS ON)")
    t2, n_table = re.subn(r"\ntarget_compile_definitions\(executorch_core PRIVATE MAX_KERNEL_NUM=\d+\)\n",
                          "\n# bench: ExecuTorch's default kernel table (as upstream)\n", t2)
    t2 = t2.replace(
        "list(APPEND ARMGEN_REGISTRATION_LIBS armgen_prim_ops_lib)",
        "list(APPEND ARMGEN_REGISTRATION_LIBS armgen_prim_ops_lib)\n"
        "# bench: every portable operator registered (upstream EXECUTORCH_BUILD_PORTABLE_OPS=y)\n"
        "set_property(TARGET portable_ops_lib PROPERTY INTERFACE_LINK_OPTIONS \"\")\n"
        "list(APPEND ARMGEN_REGISTRATION_LIBS portable_ops_lib)\n"
        "list(APPEND ARMGEN_KERNEL_LIBS portable_kernels kernels_util_all_deps)")
    if n_table != 1 or "portable_ops_lib" not in t2 or "EXECUTORCH_BUILD_PORTABLE_OPS ON" not in t2:
        raise SystemExit(f"bench: could not patch {cm} for the all-portable-ops build (template changed?)")
    cm.write_text(t2)
    # The random ops (rand, randn, ...) reach std::random_device -> getentropy(), which bare-metal newlib
    # lacks (Zephyr's libc has one). A stub that fails, so the link completes; those ops are never run here.
    (dst / "src" / "bench_getentropy.c").write_text(
        "/* benchmarks: getentropy() stub for the all-portable-ops link (never called). */\n"
        "#include <errno.h>\n#include <stddef.h>\n"
        "int getentropy(void* buf, size_t len) { (void)buf; (void)len; errno = ENOSYS; return -1; }\n")
    # Sized, not run (see Compare.all_portable): the stack is the one `armgen build` sized for the
    # selective image (build/stack.json), fixed in the record, so static RAM compares like for like.
    sizing = _stack_sizing(src)
    rec = dst / "armgen.toml"
    if sizing:
        rec.write_text(rec.read_text().replace('stack = "auto"', f"stack = {sizing['reserved']}", 1))
    cl = dst / "CMakeLists.txt"
    c = cl.read_text()
    c2 = c.replace("  src/platform/et_pal.cpp\n", "  src/platform/et_pal.cpp\n  src/bench_getentropy.c\n", 1)
    if c2 == c:
        raise SystemExit(f"bench: could not add the getentropy stub to {cl} (template changed?)")
    cl.write_text(c2)


def project_files(proj: Path) -> tuple[Path, Path]:
    """The ELF and map a project's record (armgen.toml) names."""
    from armgen.project.record import load_project

    rec = load_project(proj)
    assert rec.elf_path is not None and rec.map_path is not None
    return rec.elf_path, rec.map_path


class Compare:
    def __init__(self, ag: Armgen, cache: Path):
        self.ag = ag
        self.cache = cache

    def all_portable(self, machine: str, sample: str, base: dict[str, Any]) -> dict[str, Any]:
        src = self.ag.project(machine, sample)
        dst = self.ag.project(machine, f"{sample}-allportable")
        keep = self.ag.reuse and (dst / "build").exists()  # --reuse: keep the compiled objects, relink only
        if not keep:
            patch_all_portable(src, dst)
        # Sized, not run: with every portable operator the code does not fit the QEMU machines' code
        # region, so the link script's code region is enlarged to 16 MiB first (sizing only); whether it
        # fits is read from the board's region sizes.
        for ld in (dst / "linker").glob("*.ld"):
            t = ld.read_text()
            code = re.search(r"\n  (\w+)\s+\(rx\)\s*:\s*ORIGIN", t)
            if code:
                t = re.sub(rf"(\n  {code.group(1)}\s+\(rx\)\s*:\s*ORIGIN = 0x[0-9a-fA-F]+, LENGTH = )0x[0-9a-fA-F]+",
                           r"\g<1>0x01000000", t)
                ld.write_text(t)
        e = self.ag.measure_project(machine, dst, None, f"copy of {src} patched by bench.patch_all_portable()",
                                    incremental=keep, run_it=False, detail=False)
        size_json, _ = self.ag.size(dst)
        overflow = None
        for r in size_json["report"]["regions"]:
            if r["used"] > r["usable"]:
                overflow = {"region": r["name"], "bytes": r["used"] - r["usable"], "region_size": r["usable"],
                            "note": f"does not fit: {r['name']} ({r['usable']} B usable) would overflow by {r['used'] - r['usable']} B; "
                                    "sized from a link with the code region enlarged to 16 MiB, not run"}
        e["overflow"] = overflow
        ratio = e["kernel_flash"] / base["kernel_flash"] if base["kernel_flash"] else None
        return {"selective": {k: base[k] for k in ("flash", "flash_excl_model", "kernel_flash", "ram_static")},
                "all_portable": e, "kernel_flash_ratio": ratio, "fits_board": overflow is None,
                "flash_ratio": e["flash"] / base["flash"], "opt_level": "-O2 (armgen's Release default)"}

    def portable_lowering(self, machine: str, sample: str, base: dict[str, Any]) -> dict[str, Any]:
        from armgen.boards import load_board

        cpu = load_board(MACHINES[machine]).cpu.et_target
        name = f"{sample}_portable"
        pdir = self.cache / "pte" / machine
        pte = pdir / f"{name}.pte"
        ccmd = [PYTHON, str(HERE / "portable_lowering.py"), sample, cpu, str(pdir), name]
        t_c = None
        if not (self.ag.reuse and pte.exists()):
            log(f"compiling {sample} for {cpu} without the Cortex-M passes")
            p, t_c = run(ccmd)
        proj_parent = self.ag.cache / machine
        ncmd = [ARMGEN, "new", name, "--model", str(pte), "--board", MACHINES[machine], "--out", str(proj_parent), "--force"]
        t_new = None
        if not (self.ag.reuse and (proj_parent / name / "armgen.toml").exists()):
            _, t_new = run(ncmd)
        e = self.ag.measure_project(machine, proj_parent / name, t_new, cmdline(ncmd), detail=False)
        e["commands"]["compile"] = cmdline(ccmd)
        e["seconds_compile"] = t_c
        return {
            "cmsis_nn": {k: base[k] for k in ("flash", "flash_excl_model", "kernel_flash", "instructions", "ram_static")},
            "portable": e,
            "instruction_ratio": (e["instructions"] / base["instructions"]) if e["instructions"] and base["instructions"] else None,
            "flash_ratio": e["flash"] / base["flash"],
            "flash_excl_model_ratio": e["flash_excl_model"] / base["flash_excl_model"],
        }

    def profile(self, machine: str, sample: str, base: dict[str, Any], tflm: dict[str, Any] | None,
                top: int = 15) -> dict[str, Any]:
        """Instructions per function, armgen vs TFLM, for one whole firmware run (insn_profile.py)."""
        from insn_profile import profile_elf

        out: dict[str, Any] = {}
        for who, elf in (("armgen", Path(base["project"]) / "build" / f"{sample}.elf"),
                         ("tflm", Path(tflm["elf"]) if tflm and tflm.get("elf") else None)):
            if elf is None or not elf.exists():
                continue
            log(f"profiling {who} {sample} on {machine} (QEMU instruction-count plugin)")
            r = profile_elf(elf, MACHINES[machine])
            out[who] = {"total": r["total"], "functions": dict(list(r["functions"].items())[:top]),
                        "command": f"python benchmarks/insn_profile.py {elf} {MACHINES[machine]}"}
        return out

    def vela(self, samples: list[str]) -> dict[str, Any]:
        from armgen.boards import load_board

        out: dict[str, Any] = {}
        for acc, board in (("ethos-u55-128", "alif_e8_he"), ("ethos-u55-256", "alif_e8_hp"), ("ethos-u85-256", "corstone_320")):
            npu = load_board(board).npu
            for s in samples:
                d = self.cache / "vela" / acc
                cmd = [ARMGEN, "compile", s, "-t", acc, "--system-config", npu.vela_system_config,
                       "--memory-mode", npu.vela_memory_mode, "--name", f"{s}", "-o", str(d), "--json"]
                rp = d / f"{s}.report.json"
                if not (self.ag.reuse and rp.exists()):
                    log(f"armgen compile {s} -t {acc} ({npu.vela_system_config}, {npu.vela_memory_mode})")
                    run(cmd)
                rep = json.loads(rp.read_text())
                vel = [v for dlg in rep.get("delegates", []) for v in ([dlg.get("vela")] if isinstance(dlg.get("vela"), dict) else dlg.get("vela") or [])]
                if not vel:
                    vel = rep.get("vela") or []
                out.setdefault(acc, {})[s] = {
                    "board": board, "system_config": npu.vela_system_config, "memory_mode": npu.vela_memory_mode,
                    "vela": vel, "pte_size": rep.get("pte_size"), "planned_buffers": rep.get("planned_buffers"),
                    "delegates": rep.get("delegates"), "command": cmdline(cmd),
                }
        return out


# ---------------------------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------------------------
def script_arguments(description: str, out: str) -> argparse.Namespace:
    """The options the side scripts (``tflm_arena.py``, ``tflm_lto.py``) share with bench.py."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--samples", default="kws,vww,ic,ad")
    ap.add_argument("--machines", default="an547,an386")
    ap.add_argument("--cache", type=Path,
                    default=Path(os.environ.get("ARMGEN_BENCH_CACHE", Path.home() / ".cache/armgen-bench")))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", type=Path, default=HERE / out)
    return ap.parse_args()


def write_side_result(path: Path, res: dict[str, Any]) -> int:
    """Write a side script's JSON (sorted keys, like results.json) and say where; the script's exit status."""
    path.write_text(json.dumps(res, indent=2, sort_keys=True) + "\n")
    print(f"wrote {path}")
    return 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="benchmarks/run", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", default="kws,vww,ic,ad", help="comma-separated subset of kws,vww,ic,ad")
    ap.add_argument("--machines", default="an547,an386", help="comma-separated subset of an547,an386")
    ap.add_argument("--skip-tflm", action="store_true")
    ap.add_argument("--skip-armgen", action="store_true")
    ap.add_argument("--skip-compare", action="store_true")
    ap.add_argument("--tflm-libc", choices=["nano", "full"], default="nano")
    ap.add_argument("--clean", action="store_true",
                    help="delete cached TFLM build trees first and start results.json afresh")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--cache", type=Path, default=Path(os.environ.get("ARMGEN_BENCH_CACHE", Path.home() / ".cache/armgen-bench")))
    ap.add_argument("--out", type=Path, default=HERE, help="where results.{json,md,svg} go")
    ap.add_argument("--reuse", action="store_true",
                    help="keep existing armgen projects/ELFs in the cache (times of skipped steps come from results.json)")
    ap.add_argument("--compare", default="pools,allportable,portable,profile,vela",
                    help="comparisons to run: pools, allportable, portable, profile, vela")
    ap.add_argument("--allportable-machines", default="an547", help="machines for the all-portable-ops build (slow)")
    ap.add_argument("--merge", type=Path, nargs="+", metavar="RESULTS_JSON",
                    help="merge results.json files of partial runs (later files win) into --out, then render")
    ap.add_argument("--report-only", action="store_true", help="only regenerate results.md and the plot from results.json")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    if not MODELS_DIR.is_dir() or str(MODELS_DIR) in ("", "."):
        raise SystemExit("bench: set ARMGEN_BENCH_MODELS (or ARMGEN_MLPERF_DIR) to the MLPerf Tiny .tflite folder")
    samples = [s for s in a.samples.split(",") if s]
    machines = [m for m in a.machines.split(",") if m]
    for s in samples:
        if s not in TFLM_MODELS:
            raise SystemExit(f"bench: unknown sample {s!r} (kws, vww, ic, ad)")
    for m in machines:
        if m not in MACHINES:
            raise SystemExit(f"bench: unknown machine {m!r} (an547, an386)")
    a.cache.mkdir(parents=True, exist_ok=True)
    a.out.mkdir(parents=True, exist_ok=True)
    res_path = a.out / "results.json"
    # --clean starts from nothing: every figure in results.json is from this run
    results: dict[str, Any] = json.loads(res_path.read_text()) if res_path.exists() and not a.clean else {}

    def save() -> None:
        # every recorded path (commands, project folders, the workspace) without this machine's prefixes
        res_path.write_text(without_machine_paths(json.dumps(results, indent=1, sort_keys=True)) + "\n")

    if a.merge:
        def deep(dst: dict[str, Any], src: dict[str, Any], depth: int) -> None:
            for k, v in src.items():
                if isinstance(v, dict) and isinstance(dst.get(k), dict) and depth < 2:
                    deep(dst[k], v, depth + 1)
                else:
                    dst[k] = v

        runs = list(results.get("meta", {}).get("runs", []))
        for f in a.merge:
            part = json.loads(Path(f).read_text())
            meta = part.pop("meta", {})
            runs += meta.get("runs", [meta] if meta else [])
            deep(results, part, 0)
        results["meta"] = {**(runs[-1] if runs else {}), "runs": runs,
                           "command": "; ".join(dict.fromkeys(r.get("command", "?") for r in runs))}
        save()
    elif not a.report_only:
        results["meta"] = {
            "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "command": "benchmarks/run " + " ".join(argv if argv is not None else sys.argv[1:]),
            "host": {"machine": platform.machine(), "cpus": os.cpu_count(), "jobs": a.jobs,
                     "load_average_at_start": os.getloadavg()[0]},
            "tools": tool_versions(),
        }
        if not a.skip_tflm:
            t = Tflm(a.cache, a.jobs, a.tflm_libc)
            got = t.measure(machines, samples, a.clean)
            key = "tflm" if a.tflm_libc == "nano" else "tflm_full_newlib"
            for m, per in got.items():
                results.setdefault(key, {}).setdefault(m, {}).update(per)
            save()
        ag = Armgen(a.cache, a.jobs, a.reuse)
        if not a.skip_armgen:
            def save_one(m: str, s: str, e: dict[str, Any]) -> None:
                results.setdefault("armgen", {}).setdefault(m, {})[s] = e
                save()

            ag.measure(machines, samples, results.get("armgen", {}), save_one)
        if not a.skip_compare:
            which = set(a.compare.split(","))
            cmp_ = Compare(ag, a.cache)
            c = results.setdefault("compare", {})
            if "pools" in which and results.get("armgen"):
                c["pools"] = compare_pools(results["armgen"])
                save()
            for m in machines:
                base = results.get("armgen", {}).get(m, {}).get("kws")
                if base is None:
                    continue
                if "allportable" in which and m in a.allportable_machines.split(","):
                    c.setdefault("all_portable", {})[m] = {"kws": cmp_.all_portable(m, "kws", base)}
                    save()
                if "portable" in which:
                    c.setdefault("portable_lowering", {})[m] = {"kws": cmp_.portable_lowering(m, "kws", base)}
                    save()
                if "profile" in which:
                    tf = results.get("tflm", {}).get(m, {}).get("kws")
                    c.setdefault("profile", {})[m] = {"kws": cmp_.profile(m, "kws", base, tf)}
                    save()
            if "vela" in which:
                c["vela"] = cmp_.vela([x for x in ("kws", "vww") if x in samples] or ["kws", "vww"])
                save()
    backfill_product_runs(results, a.cache)
    if a.report_only:
        save()
    from report import write_report

    # results.md/.svg from the same machine-path-free form as results.json
    write_report(json.loads(without_machine_paths(json.dumps(results))), a.out)
    log(f"wrote {res_path}, {a.out / 'results.md'}, {a.out / 'results.svg'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""TFLite Micro's side: the runner of ``benchmarks/tflm/`` configured, built, run, its arena searched and its
stack sized by armgen's rule, each image sized from its map and checked against LiteRT on the host."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .commands import cmdline, log, run
from .paths import BENCH_DIR, MODELS_DIR, workspace_dir
from .samples import MACHINES, TFLM_MODELS
from .tflite_model import litert_reference, tflite_ops

if TYPE_CHECKING:
    from armgen.boards import Board, Emulator
    from armgen.firmware.console_protocol import FirmwareLog
    from armgen.firmware.qemu import QemuRun
    from armgen.firmware.size import ComponentRule

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

#: the arena (bytes) of the probe build, whose run reports arena_used_bytes()
TFLM_PROBE_ARENA = {"an547": 384 * 1024, "an386": 1024 * 1024}
#: the stack (bytes) TFLM's probe runs reserve; the measured runs use armgen's rule (armgen.firmware.stack)
TFLM_STACK = 8 * 1024

#: flatbuffers as TFLM main's flatbuffers_download.sh fetches it (tag v25.9.23 = this commit), with TFLM's
#: tensorflow/lite/micro/tools/make/flatbuffers.patch applied; not a project of modules/west.yml (ExecuTorch
#: pins flatbuffers v24.3.25 and TFLM's schema_generated.h asserts 25.9.23).
FLATBUFFERS_TFLM_COMMIT = "187240970746d00bbd26b0f5873ed54d2477f9f3"


def tflm_size_rules() -> tuple[ComponentRule, ...]:
    """armgen.firmware.size's component rules, with TFLM's runtime and kernel archives first."""
    from armgen.firmware.size import COMPONENT_RULES, ComponentRule

    return (
        ComponentRule("tflm_runtime", archive=r"libtflm_runtime\.a"),
        ComponentRule("tflm_kernels", archive=r"libtflm_kernels\.a"),
        *COMPONENT_RULES,
    )


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


def emulator_of(machine: str) -> Emulator:
    """The QEMU emulator of a short machine name's board (an547, an386)."""
    from armgen.boards import load_board

    emulator = load_board(MACHINES[machine]).emulator
    if emulator is None:
        raise SystemExit(f"bench: board {MACHINES[machine]} has no emulator")
    return emulator


def _aligned(n: int) -> int:
    """``n`` rounded up to 16 bytes (the arena search's step)."""
    return (n + 15) // 16 * 16


class Tflm:
    """TFLM's runners, one CMake build tree per machine under ``<cache>/tflm-<libc>``."""

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
        """CMake-configure the machine's build tree for ``samples`` with these arenas and stacks (bytes);
        returns (build tree, the cmake command)."""
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
        cmd = ["cmake", "-G", "Ninja", "-S", str(BENCH_DIR / "tflm"), "-B", str(bdir)]
        cmd += [f"-D{k}={v}" for k, v in defs.items()]
        run(cmd)
        return bdir, cmd

    def build(self, bdir: Path, targets: list[str]) -> tuple[float, list[str]]:
        """Build ``targets``; returns (wall seconds, the command)."""
        cmd = ["cmake", "--build", str(bdir), "-j", str(self.jobs), "--target", *targets]
        _, dt = run(cmd)
        return dt, cmd

    def run_elf(self, elf: Path, machine: str) -> tuple[QemuRun, FirmwareLog]:
        """Run a runner once on the machine's QEMU (armgen.firmware.qemu) and parse its ``ARMGEN`` lines."""
        from armgen.firmware.console_protocol import parse_firmware_output
        from armgen.firmware.qemu import run_qemu

        r = run_qemu(elf, emulator_of(machine), timeout=300)
        return r, parse_firmware_output(r.console)

    def measure(self, machines: list[str], samples: list[str], clean: bool) -> dict[str, Any]:
        """Probe build and runs, smallest working arena (16-byte steps), stack by armgen's rule, final build,
        size and run of each sample on each machine; {machine: {sample: entry}} (bytes, ticks, instructions)."""
        from armgen.boards import load_board

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
                arenas[s], tries = self._smallest_arena(m, bdir, samples, used, arenas, s)
                log(f"TFLM {m} {s}: arena_used_bytes {used[s]}, smallest arena that works {arenas[s]} "
                    f"({len(tries)} tries)")
                out.setdefault(m, {})[s] = {"arena_search": tries}
            stacks = self._sized_stacks(m, bdir, samples, arenas, targets, out[m])
            # final build with every smallest arena and sized stack; clean rebuild timing done above (probe build)
            cfg_cmd = self.configure(m, samples, arenas, stacks)[1]
            self.build(bdir, targets)
            for s in samples:
                out[m][s].update(self._measure_final(m, board, bdir, s, used[s], build_s, cfg_cmd, build_cmd))
        return out

    def _smallest_arena(self, m: str, bdir: Path, samples: list[str], used: dict[str, int],
                        arenas: dict[str, int], s: str) -> tuple[int, list[dict[str, Any]]]:
        """The smallest arena (bytes, 16-byte steps) with which sample ``s`` runs, from the probe's
        arena_used_bytes() ``used`` (the samples searched before keep their ``arenas``); and the tries."""
        tries: list[dict[str, Any]] = []

        def works(n: int) -> bool:
            ar = {x: arenas.get(x, _aligned(used[x])) for x in samples}
            ar[s] = n
            self.configure(m, samples, ar)
            self.build(bdir, [f"tflm_{s}"])
            r, fw = self.run_elf(bdir / f"tflm_{s}.elf", m)
            ok = fw.done and not fw.errors
            tries.append({"arena": n, "ok": ok})
            return ok

        cand = _aligned(used[s])
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
        return cand, tries

    def _sized_stacks(self, m: str, bdir: Path, samples: list[str], arenas: dict[str, int], targets: list[str],
                      entries: dict[str, Any]) -> dict[str, int]:
        """The stack by armgen's own rule (armgen.firmware.stack, what `--stack-size auto` does): high-water
        mark of the run with the smallest arena and the 8 KiB stack, x 1.25, 8-byte steps; bytes per sample.
        Records what it measured with in ``entries[sample]``."""
        from armgen.firmware.stack import sized_stack_bytes

        self.configure(m, samples, arenas)
        self.build(bdir, targets)
        stacks: dict[str, int] = {}
        for s in samples:
            r, fw = self.run_elf(bdir / f"tflm_{s}.elf", m)
            if not fw.done or fw.stack is None:
                raise SystemExit(f"bench: TFLM stack run of {s} on {m} failed:\n{r.console[-2000:]}")
            stacks[s] = sized_stack_bytes(fw.stack.used)
            entries[s]["stack_measured_with"] = {"reserved": fw.stack.reserved, "used": fw.stack.used}
            log(f"TFLM {m} {s}: stack high-water {fw.stack.used} B with {fw.stack.reserved} B -> {stacks[s]} B")
        return stacks

    def _measure_final(self, m: str, board: Board, bdir: Path, s: str, used_probe: int, build_s: float,
                       cfg_cmd: list[str], build_cmd: list[str]) -> dict[str, Any]:
        """Size (from the map) and run the final build of sample ``s``; its figures, checked against LiteRT."""
        from armgen.firmware.qemu import instructions_from_ticks, qemu_command
        from armgen.firmware.size import size_elf

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
        maxdiff = max(abs(a - b) for o, rr in zip(outs, ref, strict=False) for a, b in zip(o, rr, strict=False))
        comps = {c.name: {"flash": c.flash, "ram": c.ram} for c in rep.components}
        pool = next(p for p in fw.pools if p.name == "arena")
        emulator = emulator_of(m)
        entry: dict[str, Any] = {
            "model_file": str(MODELS_DIR / TFLM_MODELS[s]),
            "ops": tflite_ops(MODELS_DIR / TFLM_MODELS[s]),
            "elf": str(elf),
            "flash": rep.flash,
            "ram_static": rep.ram,
            "components": comps,
            "flash_excl_model": rep.flash - comps.get("model", {}).get("flash", 0),
            "arena_reserved": pool.reserved,
            "arena_used": pool.used,
            "arena_used_bytes_probe": used_probe,
            "stack_reserved": fw.stack.reserved if fw.stack else None,
            "stack_used": fw.stack.used if fw.stack else None,
            "ticks": fw.ticks,
            "instructions": instructions_from_ticks(fw.ticks, emulator.systick_hz) if fw.ticks is not None else None,
            "outputs": outs,
            "litert_reference": ref,
            "max_abs_diff_vs_litert": maxdiff,
            "clean_build_seconds_all_models": round(build_s, 1),
            "commands": {
                "configure": cmdline(cfg_cmd),
                "build": cmdline(build_cmd),
                "size": f"armgen.firmware.size.size_elf({elf}, board={MACHINES[m]}, map={mp}, "
                        "rules=COMPONENT_RULES + TFLM archive rules)",
                "run": cmdline(qemu_command(elf, emulator)),
            },
        }
        log(f"TFLM {m} {s}: flash {rep.flash} B (excl. model {entry['flash_excl_model']}), static RAM {rep.ram} B, "
            f"arena {pool.reserved}/{pool.used}, stack {entry['stack_used']}, ticks {fw.ticks} "
            f"({entry['instructions']} instr), max |diff| vs LiteRT {maxdiff}")
        return entry

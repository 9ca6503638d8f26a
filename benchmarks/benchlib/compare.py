"""The side-by-side comparisons on armgen's kws project: selective vs all portable operators, CMSIS-NN vs the
portable lowering, instructions per function (QEMU plugin), and Vela's estimates for the Ethos-U boards."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from .armgen_projects import Armgen, stack_sizing
from .commands import cmdline, log, run
from .paths import ARMGEN, BENCH_DIR, PYTHON
from .samples import MACHINES


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
    sizing = stack_sizing(src)
    rec = dst / "armgen.toml"
    if sizing:
        rec.write_text(rec.read_text().replace('stack = "auto"', f"stack = {sizing['reserved']}", 1))
    cl = dst / "CMakeLists.txt"
    c = cl.read_text()
    c2 = c.replace("  src/platform/et_pal.cpp\n", "  src/platform/et_pal.cpp\n  src/bench_getentropy.c\n", 1)
    if c2 == c:
        raise SystemExit(f"bench: could not add the getentropy stub to {cl} (template changed?)")
    cl.write_text(c2)


def _vela_records(rep: dict[str, Any]) -> list[dict[str, Any]]:
    """Vela's estimates in a program report: one per delegate (a record or a list of them), else the report's."""
    vel: list[dict[str, Any]] = []
    for dlg in rep.get("delegates", []):
        v = dlg.get("vela")
        vel += [v] if isinstance(v, dict) else (v or [])
    return vel or rep.get("vela") or []


class Compare:
    """The comparisons, on the projects of ``ag`` (their cache) and with their own files under ``cache``."""

    def __init__(self, ag: Armgen, cache: Path):
        self.ag = ag
        self.cache = cache

    def all_portable(self, machine: str, sample: str, base: dict[str, Any]) -> dict[str, Any]:
        """A copy of ``sample``'s project with every portable operator (:func:`patch_all_portable`), sized, not
        run, against ``base`` (the selective project's entry): kernel flash and flash ratios, whether it fits."""
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
                length = rf"(\n  {code.group(1)}\s+\(rx\)\s*:\s*ORIGIN = 0x[0-9a-fA-F]+, LENGTH = )0x[0-9a-fA-F]+"
                t = re.sub(length, r"\g<1>0x01000000", t)
                ld.write_text(t)
        e = self.ag.measure_project(machine, dst, None, f"copy of {src} patched by bench.patch_all_portable()",
                                    incremental=keep, run_it=False, detail=False)
        size_json, _ = self.ag.size(dst)
        overflow = None
        for r in size_json["report"]["regions"]:
            if r["used"] > r["usable"]:
                over = r["used"] - r["usable"]
                overflow = {"region": r["name"], "bytes": over, "region_size": r["usable"],
                            "note": f"does not fit: {r['name']} ({r['usable']} B usable) would overflow by {over} B; "
                                    "sized from a link with the code region enlarged to 16 MiB, not run"}
        e["overflow"] = overflow
        ratio = e["kernel_flash"] / base["kernel_flash"] if base["kernel_flash"] else None
        return {"selective": {k: base[k] for k in ("flash", "flash_excl_model", "kernel_flash", "ram_static")},
                "all_portable": e, "kernel_flash_ratio": ratio, "fits_board": overflow is None,
                "flash_ratio": e["flash"] / base["flash"], "opt_level": "-O2 (armgen's Release default)"}

    def portable_lowering(self, machine: str, sample: str, base: dict[str, Any]) -> dict[str, Any]:
        """``sample`` compiled without the Cortex-M passes (``portable_lowering.py``, portable kernels), made,
        built and run as a project, against ``base`` (the CMSIS-NN project's entry): instruction and flash ratios."""
        from armgen.boards import load_board

        cpu = load_board(MACHINES[machine]).cpu.et_target
        name = f"{sample}_portable"
        pdir = self.cache / "pte" / machine
        pte = pdir / f"{name}.pte"
        ccmd = [PYTHON, str(BENCH_DIR / "portable_lowering.py"), sample, cpu, str(pdir), name]
        t_c = None
        if not (self.ag.reuse and pte.exists()):
            log(f"compiling {sample} for {cpu} without the Cortex-M passes")
            _, t_c = run(ccmd)
        proj_parent = self.ag.cache / machine
        ncmd = [ARMGEN, "new", name, "--model", str(pte), "--board", MACHINES[machine], "--out", str(proj_parent),
                "--force"]
        t_new = None
        if not (self.ag.reuse and (proj_parent / name / "armgen.toml").exists()):
            _, t_new = run(ncmd)
        e = self.ag.measure_project(machine, proj_parent / name, t_new, cmdline(ncmd), detail=False)
        e["commands"]["compile"] = cmdline(ccmd)
        e["seconds_compile"] = t_c
        keys = ("flash", "flash_excl_model", "kernel_flash", "instructions", "ram_static")
        return {
            "cmsis_nn": {k: base[k] for k in keys},
            "portable": e,
            "instruction_ratio": (e["instructions"] / base["instructions"])
            if e["instructions"] and base["instructions"] else None,
            "flash_ratio": e["flash"] / base["flash"],
            "flash_excl_model_ratio": e["flash_excl_model"] / base["flash_excl_model"],
        }

    def profile(self, machine: str, sample: str, base: dict[str, Any], tflm: dict[str, Any] | None,
                top: int = 15) -> dict[str, Any]:
        """Instructions per function, armgen vs TFLM, for one whole firmware run (insn_profile.py)."""
        from .profile import profile_elf

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
        """``armgen compile -t <npu>`` of ``samples`` with the system config and memory mode of an Ethos-U board
        per NPU; Vela's estimates (cycles, SRAM and flash bytes) from each program report."""
        from armgen.boards import load_board

        out: dict[str, Any] = {}
        for acc, board in (("ethos-u55-128", "alif_e8_he"), ("ethos-u55-256", "alif_e8_hp"),
                           ("ethos-u85-256", "corstone_320")):
            npu = load_board(board).npu
            if npu is None:
                raise SystemExit(f"bench: board {board} has no NPU")
            for s in samples:
                d = self.cache / "vela" / acc
                cmd = [ARMGEN, "compile", s, "-t", acc, "--system-config", npu.vela_system_config,
                       "--memory-mode", npu.vela_memory_mode, "--name", f"{s}", "-o", str(d), "--json"]
                rp = d / f"{s}.report.json"
                if not (self.ag.reuse and rp.exists()):
                    log(f"armgen compile {s} -t {acc} ({npu.vela_system_config}, {npu.vela_memory_mode})")
                    run(cmd)
                rep = json.loads(rp.read_text())
                vel = _vela_records(rep)
                out.setdefault(acc, {})[s] = {
                    "board": board, "system_config": npu.vela_system_config, "memory_mode": npu.vela_memory_mode,
                    "vela": vel, "pte_size": rep.get("pte_size"), "planned_buffers": rep.get("planned_buffers"),
                    "delegates": rep.get("delegates"), "command": cmdline(cmd),
                }
        return out

"""armgen's side: ``armgen new``, a clean ``armgen build``, ``armgen size --json`` and ``armgen run --json`` of each
sample's project in the cache, and what the main table reads from the project beside them (the stack sizing,
the product image's own run, the method pool by allocation kind)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .commands import CommandFailed, cmdline, log, run
from .paths import ARMGEN
from .samples import MACHINES, TFLM_MODELS
from .sizes import COMPONENTS_HOW, component_sizes, kernel_flash, libc_members


def project_files(proj: Path) -> tuple[Path, Path]:
    """The ELF and map a project's record (armgen.toml) names."""
    from armgen.project.record import load_project

    rec = load_project(proj)
    assert rec.elf_path is not None and rec.map_path is not None
    return rec.elf_path, rec.map_path


def stack_sizing(proj: Path) -> dict[str, Any] | None:
    """``build/stack.json``: how ``armgen build`` sized the stack (``--stack-size auto``), None otherwise."""
    path = proj / "build" / "stack.json"
    return json.loads(path.read_text()) if path.is_file() else None


def product_run(proj: Path) -> dict[str, Any] | None:
    """The check run of ``armgen build`` (``--stack-size auto``), ``build/stack-check.log``: `armgen run`'s
    image (armgen's harness main with the product's model library, pools, platform and sized stack; the
    product's own main may never return, issue 42). Projects written before that ran the product image here,
    which writes its input in place before SysTick starts; the harness image copies the sample input inside
    the timed call (ad: 640 B)."""
    from armgen.boards import load_board
    from armgen.firmware.console_protocol import parse_firmware_output
    from armgen.firmware.qemu import instructions_from_ticks
    from armgen.project.record import load_project

    log_path, sizing = proj / "build" / "stack-check.log", stack_sizing(proj)
    if not log_path.is_file() or not sizing:
        return None
    fw = parse_firmware_output(log_path.read_text(errors="replace"))
    if fw.ticks is None or not fw.done:
        return None
    emulator = load_board(str(load_project(proj).board_spec)).emulator
    hz = emulator.systick_hz if emulator is not None else None
    return {"ticks": fw.ticks, "instructions": instructions_from_ticks(fw.ticks, hz),
            "log": f"build/stack-check.log (armgen build's check run of {sizing.get('image') or 'the product image'})"}


def backfill_product_runs(results: dict[str, Any], cache: Path) -> None:
    """Add ``instructions_product`` to armgen entries recorded before it existed, from the same run's
    projects in the cache (their ``build/stack-check.log``)."""
    for per in results.get("armgen", {}).values():
        for e in per.values():
            if isinstance(e, dict) and "instructions_product" not in e and e.get("project"):
                pr = product_run(Path(e["project"].replace("$ARMGEN_BENCH_CACHE", str(cache))))
                if pr:
                    e["product_run"], e["instructions_product"] = pr, pr["instructions"]


def activation_lower_bound(proj: Path) -> int | None:
    """The program report's activation lower bound (bytes; armgen.model.activation_bound): the planned tensors
    live at once at the busiest instruction, which no plan of the graph beats. None in older reports."""
    reports = sorted((proj / "model").glob("*.report.json"))
    return json.loads(reports[0].read_text()).get("activation_lower_bound") if reports else None


def method_pool_breakdown(proj: Path) -> dict[str, int]:
    """The method pool's bytes by allocation kind (armgen.model.method_allocator's replay of the project's .pte)."""
    import tomllib

    from armgen.model.method_allocator import method_allocator_breakdown

    rec = tomllib.loads((proj / "armgen.toml").read_text())
    # the temp allocator's size during load_method: a temp pool, or the load scratch a planned pool lends
    temp = next((p["bytes"] for p in rec.get("pools", []) if p["name"] == "temp"), 0) \
        or int(rec.get("memory", {}).get("load_scratch", 0))
    return method_allocator_breakdown((proj / rec["model"]["pte"]).read_bytes(), temp)


class Armgen:
    """armgen's projects for the benchmarks, under ``<cache>/armgen/<machine>/<name>``, made and measured through
    the ``armgen`` CLI; with ``reuse``, projects and ELFs already there are kept (their steps are not timed)."""

    def __init__(self, cache: Path, jobs: int, reuse: bool):
        self.cache = cache / "armgen"
        self.jobs = jobs
        self.reuse = reuse

    def project(self, machine: str, name: str) -> Path:
        """The project folder of ``name`` on ``machine``."""
        return self.cache / machine / name

    def new(self, machine: str, name: str, extra: list[str] | None = None) -> tuple[float | None, str]:
        """``armgen new`` (timed); (wall seconds or None when reused, the command as recorded).

        Raises:
            SystemExit: a sample was compiled without its trained weights.
            CommandFailed: ``armgen new`` failed.
        """
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
        """``armgen build --rebuild`` (timed; incremental without ``--rebuild``); exit 1 (a budget finding) is a
        result. (wall seconds or None when reused, the command as recorded)."""
        cmd = [ARMGEN, "build", str(proj), *([] if incremental else ["--rebuild"]), "-j", str(self.jobs)]
        if self.reuse and elf.exists() and not incremental:
            return None, cmdline(cmd)
        log(f"armgen build --rebuild {proj}")
        p, dt = run(cmd, check=False)
        if p.returncode not in (0, 1):
            raise CommandFailed(cmd, p.returncode, p.stdout, p.stderr)
        return round(dt, 1), cmdline(cmd)

    def size(self, proj: Path) -> tuple[dict[str, Any], str]:
        """``armgen size --json``: (its report, the command as recorded)."""
        cmd = [ARMGEN, "size", str(proj), "--json"]
        p, _ = run(cmd, check=False)
        if p.returncode not in (0, 1):
            raise CommandFailed(cmd, p.returncode, p.stdout, p.stderr)
        return json.loads(p.stdout), cmdline(cmd)

    def run_fw(self, proj: Path) -> tuple[dict[str, Any], str]:
        """``armgen run --json``: (its report with ``_exit_status`` and ``_stderr_tail``, the command as recorded);
        a firmware that failed before armgen could report gives a failed report with the reason."""
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
        runrep: dict[str, Any] = {"_exit_status": None}
        run_cmd: str | None = None
        if run_it:
            runrep, run_cmd = self.run_fw(proj)
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
            "run_findings": [f"{f['severity']}: {f['subject']}: {f['message']}"
                             for f in runrep.get("findings", [])],
            "seconds_new": t_new,
            "seconds_clean_build": t_build,
            "commands": {"new": new_cmd, "build": build_cmd, "size": size_cmd, "run": run_cmd},
        }
        if detail:
            e.update({
                "components_note": (f"sections {comp['reattributed_sections']} re-attributed from the map "
                                    "(overlapping merged-string lines; see component_sizes())")
                if comp["reattributed_sections"] else None,
                "components_armgen_size": rep["components"],
                "sections": comp["sections"],
                "libc_members": libc_members(mp),
                "stack_reserved": (runrep.get("stack") or {}).get("reserved"),
                "stack_used": (runrep.get("stack") or {}).get("used"),
                "stack_sizing": stack_sizing(proj),
                "product_run": (product := product_run(proj)),
                "instructions_product": (product or {}).get("instructions"),
                "method_pool_breakdown": method_pool_breakdown(proj),
                "activation_lower_bound": activation_lower_bound(proj),
                "max_lsb_diff": runrep.get("max_lsb_diff"),
            })
            e["commands"]["components"] = COMPONENTS_HOW.format(elf=elf, board=MACHINES[machine], map=mp)
        return e

    def measure(self, machines: list[str], samples: list[str], previous: dict[str, Any],
                save: Callable[[str, str, dict[str, Any]], None] | None = None) -> dict[str, Any]:
        """Measure every sample on every machine (``armgen new --stack-size auto`` + :meth:`measure_project`);
        {machine: {sample: entry}}. A failed step is recorded as the entry's ``error``; ``save`` is called after
        each entry. With ``--reuse`` the wall times of skipped steps come from ``previous``."""
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
                log(f"armgen {m} {s}: flash {e['flash']} (excl. model {e['flash_excl_model']}), "
                    f"RAM {e['ram_static']}, pools {e['pools']}, stack {e['stack_used']}, "
                    f"instr {e['instructions']}, new {e['seconds_new']} s, "
                    f"build {e['seconds_clean_build']} s, run passed {e['run_passed']}")
        return out

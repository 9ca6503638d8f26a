"""Zephyr flavour: Board + ProjectSpec -> what the Zephyr templates (``templates/zephyr/project``) need.

Pure functions, no file I/O except reading ``modules/west.yml`` with west's manifest model. The
generated project is a normal west application (T2 topology: the application is the manifest
repository) that builds with plain ``west build -b <target>``:

* ``west.yml``: Zephyr (``modules/west.yml``'s pin, v4.4.0) imported with a ``name-allowlist``
  (the manifest form of ExecuTorch's documented ``manifest.project-filter``: cmsis, cmsis_6,
  hal_ethos_u, plus the board's HALs such as hal_stm32), and ExecuTorch with the sub-projects its
  CMake needs (flatbuffers, flatcc, json, gflags) and CMSIS-NN, all at ``modules/west.yml``'s pins.
  CMSIS-NN is *not* taken from Zephyr: it is pinned to the commit ExecuTorch's cortex_m backend
  pins, because CMSIS-NN scratch sizes are planned ahead of time; the project's own definition
  wins over the imported one (west: projects of the importing manifest take precedence).
* ``prj.conf`` / ``boards/<stem>.conf`` / ``boards/<stem>.overlay``: Kconfig lines and devicetree
  nodes below.
* Linker snippets (``zephyr_linker_sources``) that put armgen's named sections where the spec
  placed them: pools in the ``zephyr,sram`` region go into Zephyr's ``.noinit`` (NOINIT snippet),
  pools in other regions into one NOLOAD output section per region (SECTIONS snippet, ``> REGION``
  where REGION is the devicetree ``zephyr,memory-region`` name); the ``.pte`` gets the output
  section ``.armgen_model`` in the ``zephyr,flash`` region (ROM_SECTIONS snippet) or, when the spec
  placed it in RAM/DDR, a loadable section with VMA = LMA in that region (as ExecuTorch's
  ``model_section.ld.in`` does for DDR on the Corstone FVPs).

Devicetree facts per Zephyr board target (node labels, ``zephyr,memory-region`` names, the chosen
``zephyr,flash`` / ``zephyr,sram``, an existing Ethos-U node) are in the board files
(``zephyr.devicetree``, each with the Zephyr files it was read from; :class:`armgen.boards.DtsFacts`).
A board target without them is handled with the rule "the devicetree memory-region name equals the
armgen region name" and the overlay says so.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from armgen.boards import Board, DtRegion, DtsFacts, list_boards, load_board, speed_rank
from armgen.errors import ProjectError
from armgen.paths import MODULES_DIR
from armgen.project.spec import PoolPlan, ProjectSpec, reads_input_file
from armgen.project.zephyr_kconfig import (  # noqa: F401 - ZEPHYR_CORE_SYMBOLS, SPLIM_CORES, stack_guard: public here too
    SPLIM_CORES,
    ZEPHYR_CORE_SYMBOLS,
    pool_kconfig,
    prj_conf,
    stack_guard,
)
from armgen.workspace import OTHER_RELEASE_ENV, ZephyrRelease, load_manifest, zephyr_release


def board_target(board: Board, release: ZephyrRelease, *, development_tree: bool = False) -> str:
    """The board's Zephyr target in ``release``.

    A target the release's tag lacks (``zephyr.development_only`` of the board file: only development
    trees after the tag have it) is refused unless ``development_tree`` (the CLI sets it from
    ``$ARMGEN_ZEPHYR_TREE_OF_ANOTHER_RELEASE=1``); then :func:`development_target_warning` says so.

    Raises:
        ProjectError: the board has no Zephyr support, or not in this release (naming the releases
            that have it), or only in development trees of it and ``development_tree`` is not set.
    """
    if board.zephyr is None:
        raise ProjectError(f"board '{board.name}' has no Zephyr target", hint="use --rtos baremetal")
    if release.name not in board.zephyr.releases:
        have = ", ".join(board.zephyr.releases)
        raise ProjectError(
            f"board '{board.name}' is not in Zephyr {release.name} (Zephyr releases that have it: {have})",
            hint=f"use --zephyr-release {board.zephyr.releases[-1]}",
        )
    target = board.zephyr.target(release.name)
    note = board.zephyr.development_note(release.name)
    if note is not None and not development_tree:
        tagged = [r for r in board.zephyr.releases if board.zephyr.development_note(r) is None]
        raise ProjectError(
            f"board '{board.name}' is not in Zephyr {release.tag}: {note}",
            hint=(f"use --zephyr-release {tagged[-1]}, or " if tagged else "")
            + f"set {OTHER_RELEASE_ENV}=1 to write it for a {release.name} development tree that has {target}",
        )
    return target


def development_target_warning(board: Board, release: ZephyrRelease) -> str | None:
    """The one-line warning for a project written for a target the release's tag lacks (see
    :func:`board_target`); None for a target the tag has."""
    note = board.zephyr.development_note(release.name) if board.zephyr else None
    if note is None:
        return None
    return (f"warning: written for a Zephyr {release.name} development tree, not {release.tag}: {note} "
            f"({OTHER_RELEASE_ENV}=1)")

#: Cortex-M cores with a data cache (Arm TRMs: Cortex-M7, -M55 and -M85 have optional I/D caches;
#: every board armgen ships with these cores has them). Data-cache maintenance around NPU DMA is
#: switched on for these (``CONFIG_ETHOS_U_DCACHE``, default y with ``CONFIG_CACHE_MANAGEMENT``).
DCACHE_CORES = frozenset({"cortex-m7", "cortex-m55", "cortex-m85"})

class _BoardFileFacts(Mapping[str, DtsFacts]):
    """Devicetree facts of every built-in board's Zephyr targets, read from ``boards/*.yaml`` on first use."""

    @functools.cached_property
    def _facts(self) -> dict[str, DtsFacts]:
        out: dict[str, DtsFacts] = {}
        for name in list_boards():
            zt = load_board(name).zephyr
            out.update(zt.devicetree if zt is not None else ())
        return out

    def __getitem__(self, target: str) -> DtsFacts:
        return self._facts[target]

    def __iter__(self) -> Iterator[str]:
        return iter(self._facts)

    def __len__(self) -> int:
        return len(self._facts)


#: Devicetree facts per Zephyr board target, as the built-in board files give them (``zephyr.devicetree``;
#: :func:`dts_facts` reads the board's own, this table is the view across boards).
ZEPHYR_DTS: Mapping[str, DtsFacts] = _BoardFileFacts()

#: armgen manifest projects the Zephyr application pins itself (``modules/west.yml``), in order.
APP_PROJECTS = ("executorch", "flatbuffers", "flatcc", "json", "gflags", "cmsis-nn")
#: ... and those of an application with an audio front end (``--frontend``): Arm's CMSIS-DSP, at
#: ``modules/lib/cmsis-dsp`` where the application's CMakeLists.txt looks for it.
FRONTEND_PROJECTS = ("cmsis-dsp",)


def normalise_board_target(target: str) -> str:
    """Zephyr's file stem for a board target: ``/`` (board qualifiers) becomes ``_``.

    ``ensemble_e8_dk/ae822fa0e5597ls0/rtss_hp`` -> ``ensemble_e8_dk_ae822fa0e5597ls0_rtss_hp``,
    the name Zephyr looks for in an application's ``boards/<stem>.conf`` / ``.overlay``
    (hardware model v2, ``cmake/modules/boards.cmake``; ExecuTorch's samples use the same names).

    Raises:
        ProjectError: an empty target or one with characters Zephyr board names do not use.
    """
    if not target or not re.fullmatch(r"[A-Za-z0-9_]+(/[A-Za-z0-9_]*)*(@[A-Za-z0-9_.]+)?", target):
        raise ProjectError(f"'{target}' is not a Zephyr board target (board[/soc[/cpucluster[/variant]]])")
    base, _, revision = target.partition("@")
    stem = "_".join(p for p in base.split("/") if p)
    return f"{stem}_{revision.replace('.', '_')}" if revision else stem


def dts_facts(board: Board, target: str) -> DtsFacts:
    """Devicetree facts for the board's Zephyr ``target``: the board file's (``zephyr.devicetree``,
    schema_version 2), else the naming rule.

    For a target without facts (a schema-1 board file, or none given): every region is assumed to
    have a node labelled ``<name in lower case>`` with ``zephyr,memory-region = "<NAME>"``,
    ``zephyr,flash`` is the code region and ``zephyr,sram`` the fastest RAM region that may hold
    data; no NPU node.

    Raises:
        ProjectError: the board has no Zephyr target.
    """
    if board.zephyr is None:
        raise ProjectError(f"board '{board.name}' has no Zephyr target", hint="use --rtos baremetal")
    known = board.zephyr.devicetree_facts(target)
    if known is not None:
        return known
    regions = {r.name: DtRegion(r.name.lower(), r.name) for r in board.regions}
    code = next((r.name for r in board.regions if r.base <= board.baremetal.vector_table < r.base + r.size), None)
    ram = sorted((r for r in board.regions if r.volatile and "data" in r.uses), key=speed_rank)
    return DtsFacts(
        regions,
        code or board.regions[0].name,
        ram[0].name if ram else board.regions[0].name,
        False,
        f"assumed (no devicetree facts for {target} in armgen): node labels and memory-region names follow "
        "the board file",
    )


def _hex(n: int) -> str:
    return f"0x{n:x}"


def _dt_size(n: int) -> str:
    if n % (1 << 20) == 0:
        return f"DT_SIZE_M({n >> 20})"
    if n % (1 << 10) == 0:
        return f"DT_SIZE_K({n >> 10})"
    return _hex(n)


def has_dcache(board: Board) -> bool:
    """True when the board's core has a data cache (:data:`DCACHE_CORES`)."""
    return board.cpu.core in DCACHE_CORES


def npu_kconfig_choice(board: Board, release: ZephyrRelease) -> str | None:
    """The NPU configuration symbol (without ``CONFIG_``) in ``release``, e.g. ``ETHOS_U55_256``
    (4.4) or ``ARM_ETHOS_U55_256`` (3.7); None without NPU."""
    if board.npu is None or board.zephyr is None:
        return None
    kind = board.npu.type.replace("ethos-u", "")
    return f"{release.ethos_u_kconfig_prefix}{kind}_{board.npu.macs}"


def check_npu_placement(spec: ProjectSpec) -> None:
    """Check that every pool and the ``.pte`` the NPU touches sit where it sees them at the same
    address: Zephyr's Ethos-U driver (drivers/misc/ethos_u/ethos_u_arm.c) calls ``ethosu_init``
    without an address remap, so a region the NPU reaches only through an alias (Alif's TCM global
    aliases) does not work there.

    Raises:
        ProjectError: naming the pool and region.
    """
    if not spec.uses_npu:
        return
    regions = {r.name: r for r in spec.board.regions}
    touched = [(f"pool {p.name}", p.region) for p in spec.pools if p.npu] + [("the model (.pte)", spec.model_region)]
    for what, name in touched:
        r = regions[name]
        if r.npu_address != r.base:
            raise ProjectError(
                f"{what} is in {name}, which the NPU "
                + ("cannot reach" if r.npu_address is None else f"sees only at {r.npu_address:#x}")
                + "; Zephyr's Ethos-U driver does not remap addresses",
                hint="place it in a region whose npu_address equals its base (e.g. SRAM0 on Alif)",
            )


def zephyr_sram_region(board: Board, facts: DtsFacts, uses_npu: bool, pools: Sequence[PoolPlan]) -> str:
    """The region armgen makes ``zephyr,sram`` (Zephyr's .data/.bss/.noinit, main stack, heap).

    With an NPU: the region of the NPU pools (so that all DMA buffers and the runtime share one
    NPU-reachable RAM, as ExecuTorch's overlays do: Corstone-300 ``isram``, Alif ``sram0``), never
    a region the NPU cannot reach. Without: the board's default ``zephyr,sram``.

    Called by :func:`armgen.project.spec.make_spec` only (through :class:`ZephyrPlacement`), which
    makes it the spec's ``data_region`` and ``stack_region`` on Zephyr; :func:`zephyr_context` reads it
    back from the spec.

    Args:
        board: the board. facts: :func:`dts_facts` of it. uses_npu: the program has an Ethos-U
            delegate. pools: the planned pools (:class:`armgen.project.spec.PoolPlan`, planned_1 first).

    Returns:
        str: an armgen region name.
    """
    if uses_npu:
        npu_pools = [p for p in pools if p.npu]
        if npu_pools:
            return npu_pools[0].region
        regions = {r.name: r for r in board.regions}
        if facts.sram not in regions or regions[facts.sram].npu_address is None:
            reach = [r for r in board.regions if r.npu_address == r.base and r.volatile and "data" in r.uses]
            if reach:
                return reach[0].name
    return facts.sram


@dataclass(frozen=True)
class ZephyrPlacement:
    """A board in one Zephyr release: the Zephyr flavour :func:`armgen.project.spec.make_spec` is given.

    Attributes:
        release_info: the release. target: the board's Zephyr board target in it. facts: its devicetree
            facts (:func:`dts_facts`).
    """

    release_info: ZephyrRelease
    target: str
    facts: DtsFacts

    @property
    def release(self) -> str:
        """The release name (``"4.4"``, ``"3.7"``)."""
        return self.release_info.name

    @property
    def default_sram(self) -> str:
        """The armgen region that is the target's devicetree ``zephyr,sram``."""
        return self.facts.sram

    def sram_region(self, board: Board, uses_npu: bool, pools: Sequence[PoolPlan]) -> str:
        """See :func:`zephyr_sram_region`."""
        return zephyr_sram_region(board, self.facts, uses_npu, pools)


def zephyr_placement(board: Board, release: str | None = None, *, development_tree: bool = False) -> ZephyrPlacement:
    """``board`` in Zephyr ``release`` (None: the default release) for the spec stage; ``development_tree``:
    also a target only development trees of the release have (:func:`board_target`).

    Raises:
        ProjectError: unknown release; the board has no Zephyr target or is not in that release.
    """
    info = zephyr_release(release)
    target = board_target(board, info, development_tree=development_tree)
    return ZephyrPlacement(info, target, dts_facts(board, target))


@dataclass(frozen=True)
class SectionPlacement:
    """One output section armgen adds through a Zephyr linker snippet.

    Attributes:
        name: output section name (``.armgen_model``, ``.armgen_pools_<REGION>``).
        region: armgen region name. memory_region: linker MEMORY region (``RAM``/``FLASH`` for the
        chosen ones, else the devicetree ``zephyr,memory-region`` name).
        inputs: input sections collected (``.armgen_pool.<name>`` / ``.armgen_model``).
        noload: True for pools (not in the image), False for the model (loadable).
    """

    name: str
    region: str
    memory_region: str
    inputs: tuple[str, ...]
    noload: bool


def _memory_region_of(
    region: str, facts: DtsFacts, sram: str, new_nodes: dict[str, dict[str, Any]], board: Board
) -> str:
    if region == sram:
        return "RAMABLE_REGION"
    if region == facts.flash:
        return "ROMABLE_REGION"
    dt = facts.regions.get(region)
    if dt is not None and dt.memory_region:
        return dt.memory_region
    r = board.region(region)
    name = f"ARMGEN_{region.upper()}"
    new_nodes[region] = {
        "label": f"armgen_{region.lower()}",
        "unit": f"{r.base:x}",
        "base": _hex(r.base),
        "size": _dt_size(r.size),
        "memory_region": name,
    }
    return name


def zephyr_context(spec: ProjectSpec) -> dict[str, Any]:
    """Everything the Zephyr templates need, from the spec (and its Board).

    Returns:
        dict with keys: ``zephyr_target``, ``board_stem``, ``zephyr_release``, ``dts_source``,
        ``prj_conf`` (list of (comment, [lines])), ``board_conf`` (same), ``overlay`` (dict: npu node,
        sram label, flash region, new memory-region nodes), ``pool_kconfig`` (list of dicts: symbol,
        bytes, pool, prompt), ``sections_noinit`` / ``sections_region`` / ``model_section``
        (:class:`SectionPlacement`), ``west`` (dict for west.yml), ``dcache``.

    Raises:
        ProjectError: the board has no Zephyr target, or the NPU placement is not usable by
            Zephyr's Ethos-U driver (:func:`check_npu_placement`).
    """

    board: Board = spec.board
    release = zephyr_release(spec.zephyr_release)
    target = spec.zephyr_target or board_target(board, release)
    facts = dts_facts(board, target)
    on_qemu = reads_input_file(board, "zephyr")
    zt = board.zephyr
    assert zt is not None
    check_npu_placement(spec)
    # The spec decided zephyr,sram (zephyr_sram_region): .data/.bss and the main stack live there.
    sram = spec.stack_region
    if spec.data_region != sram:
        raise ProjectError(
            f"Zephyr keeps .data/.bss and the main stack in one region (zephyr,sram), but the plan puts "
            f"data in {spec.data_region} and the stack in {sram}"
        )
    dcache = has_dcache(board)
    npu_choice = npu_kconfig_choice(board, release) if spec.uses_npu else None
    new_nodes: dict[str, dict[str, Any]] = {}
    noinit, region_sections, model_section = _linker_placement(spec, facts, sram, new_nodes)
    return {
        "zephyr_target": target,
        "board_stem": normalise_board_target(target),
        "zephyr_release": release.tag,
        "zephyr_release_name": release.name,
        "ethos_u_kconfig_prefix": release.ethos_u_kconfig_prefix,
        "on_qemu": on_qemu,
        "zephyr_vendor_fork": zt.vendor_fork,
        "zephyr_vendor_target": zt.vendor_target,
        "zephyr_note": zt.note,
        "dts_source": facts.source,
        "prj_conf": prj_conf(spec),
        "board_conf": _board_conf(spec, release, facts, npu_choice, dcache, on_qemu),
        "overlay": _overlay(spec, facts, sram, new_nodes),
        "pool_kconfig": pool_kconfig(spec),
        "sections_noinit": noinit,
        "sections_region": region_sections,
        "model_section": model_section,
        "west": west_projects(board, release, frontend=spec.frontend is not None),
        "dcache": dcache,
        "npu_kconfig": npu_choice,
        # The application supplies the Ethos-U driver's D-cache hooks where Zephyr does not (no
        # ETHOS_U_DCACHE before 4.2) and the core has a data cache.
        "npu_dcache_hooks": bool(npu_choice and dcache and not release.ethos_u_dcache_kconfig),
        "hal_modules": tuple(m for m in zt.hal_modules if m not in release.allowlist),
    }


def _linker_placement(
    spec: ProjectSpec, facts: DtsFacts, sram: str, new_nodes: dict[str, dict[str, Any]]
) -> tuple[tuple[str, ...], list[SectionPlacement], SectionPlacement]:
    """Pools and model -> linker snippets: the pool sections in zephyr,sram's ``.noinit``, one NOLOAD
    output section per other region, and the model's section. Regions the devicetree does not name
    get a node in ``new_nodes``.

    Raises:
        ProjectError: a pool planned in Zephyr's flash region.
    """
    board: Board = spec.board
    noinit = tuple(p.section for p in spec.pools if p.region == sram)
    by_region: dict[str, list[str]] = {}
    for p in spec.pools:
        if p.region != sram:
            by_region.setdefault(p.region, []).append(p.section)
    region_sections = []
    for region in sorted(by_region, key=lambda n: board.region(n).base):
        if region == facts.flash:
            raise ProjectError(f"a memory pool is planned in {region}, Zephyr's flash region")
        mem = _memory_region_of(region, facts, sram, new_nodes, board)
        region_sections.append(
            SectionPlacement(f".armgen_pools_{region.lower()}", region, mem, tuple(by_region[region]), True)
        )
    model_mem = _memory_region_of(spec.model_region, facts, sram, new_nodes, board)
    model_section = SectionPlacement(".armgen_model", spec.model_region, model_mem, (".armgen_model",), False)
    return noinit, region_sections, model_section


def _board_conf(
    spec: ProjectSpec, release: ZephyrRelease, facts: DtsFacts, npu_choice: str | None, dcache: bool, on_qemu: bool
) -> list[tuple[str, list[str]]]:
    """``boards/<stem>.conf``: load offset, the Ethos-U driver, caches, the QEMU clock (comment, lines)."""
    board: Board = spec.board
    zt = board.zephyr
    assert zt is not None
    prefix = release.ethos_u_kconfig_prefix
    board_conf: list[tuple[str, list[str]]] = []
    if zt.flash_load_offset:
        board_conf.append((
            f"The image starts {zt.flash_load_offset:#x} bytes into {facts.flash} (board file: "
            f"zephyr.flash_load_offset; on Alif it must equal the ATOC mramAddress).",
            [f"CONFIG_FLASH_LOAD_OFFSET={_hex(zt.flash_load_offset)}"],
        ))
    if npu_choice and board.npu is not None:
        board_conf.append((
            f"Zephyr's Ethos-U driver, so ExecuTorch builds and registers its EthosUBackend delegate "
            f"({board.npu.vela_accelerator}, the configuration the .pte was compiled for).",
            [f"CONFIG_{prefix}=y", f"CONFIG_{npu_choice}=y"],
        ))
    if dcache:
        lines = ["CONFIG_CACHE_MANAGEMENT=y", "CONFIG_DCACHE=y", "CONFIG_ICACHE=y"]
        why = f"{board.cpu.core} has instruction and data caches: keep them on"
        if npu_choice:
            if release.ethos_u_dcache_kconfig:
                lines.append(f"CONFIG_{prefix}_DCACHE=y")
                why += ("; the NPU's DMA bypasses the D-cache, so the driver cleans/invalidates the "
                        "buffers it hands over (ethosu_flush_dcache/ethosu_invalidate_dcache)")
            else:
                # Before 4.2 Zephyr has no ETHOS_U_DCACHE, and hal_ethos_u (src/ethosu_driver.c at armgen's
                # pin 03567073, as in the 3.7 and 4.1.99 workspaces) defines ethosu_flush_dcache/
                # ethosu_invalidate_dcache as weak no-ops: the application's platform.c overrides them
                # (npu_dcache_hooks) with Zephyr's sys_cache API.
                why += (f"; the NPU's DMA bypasses the D-cache and Zephyr {release.name} has no ETHOS_U_DCACHE, so "
                        "src/platform/platform.c overrides hal_ethos_u's weak ethosu_flush_dcache/"
                        "ethosu_invalidate_dcache (sys_cache_data_flush_range/sys_cache_data_invd_range over the "
                        "buffers the driver hands over)")
        board_conf.append((why + ".", lines))
    if spec.uses_npu:
        model_reach = board.region(spec.model_region)
        board_conf.append((
            f"The .pte is read in place from {spec.model_region} (NPU address {model_reach.npu_address:#x}): "
            "armgen's model code never copies it to SRAM (what ExecuTorch's samples ask for with "
            "CONFIG_ET_ARM_MODEL_PTE_DMA_ACCESSIBLE=y).",
            [],
        ))
    if on_qemu:
        hz = board.cpu.clock_hz
        board_conf.append((
            f"QEMU's SysTick runs at the machine's clock, {hz} Hz (board file cpu.clock_hz; QEMU "
            "hw/arm/mps2*.c), whatever the devicetree says (Zephyr 3.7's an547 DTS: 25 MHz).",
            [f"CONFIG_SYS_CLOCK_HW_CYCLES_PER_SEC={hz}"],
        ))
    return board_conf


def _overlay(spec: ProjectSpec, facts: DtsFacts, sram: str, new_nodes: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The devicetree overlay's facts: zephyr,sram, new memory-region nodes, the NPU node if missing,
    the nodes the board file disables (``zephyr.disable_nodes``)."""
    board: Board = spec.board
    overlay: dict[str, Any] = {
        "sram_label": facts.regions[sram].label if sram in facts.regions else f"armgen_{sram.lower()}",
        "sram_changed": sram != facts.sram,
        "sram_region": sram,
        "default_sram": facts.sram,
        "flash_region": facts.flash,
        "npu_node": None,
        "new_nodes": [new_nodes[k] for k in sorted(new_nodes, key=lambda n: board.region(n).base)],
        "disabled_nodes": [{"label": label, "reason": reason}
                           for label, reason in (board.zephyr.disable_nodes if board.zephyr else ())],
    }
    if sram not in facts.regions and sram not in new_nodes:
        r = board.region(sram)
        overlay["new_nodes"].append({
            "label": f"armgen_{sram.lower()}", "unit": f"{r.base:x}", "base": _hex(r.base),
            "size": _dt_size(r.size), "memory_region": f"ARMGEN_{sram.upper()}",
        })
    if spec.uses_npu and not facts.has_npu_node and board.npu is not None:
        overlay["npu_node"] = {
            "label": "ethosu0",
            "name": f"{board.npu.type.replace('-', '')}@{board.npu.base_address:x}",
            "base": _hex(board.npu.base_address),
            "irq": board.npu.irq,
        }
    return overlay


def west_projects(board: Board, release: ZephyrRelease, *, frontend: bool = False) -> dict[str, Any]:
    """The west projects of a generated application, from armgen's pinned manifests.

    Zephyr comes from the release's manifest (``modules/zephyr/<release>.yml``), the application's own
    projects (:data:`APP_PROJECTS`, and with ``frontend`` the CMSIS-DSP of the MFCC front end,
    :data:`FRONTEND_PROJECTS`) from ``modules/west.yml``.

    Returns:
        dict: ``zephyr`` (ProjectPin of Zephyr), ``allowlist`` (Zephyr's projects imported by name:
        the release's allowlist + the board's HALs, sorted), ``projects`` (ProjectPins pinned by
        the application itself, in :data:`APP_PROJECTS` order), ``remotes`` (sorted (name, url-base)).

    Raises:
        WorkspaceError: a manifest is missing or malformed (from armgen.workspace).
    """
    pins = {p.name: p for p in load_manifest(MODULES_DIR / "west.yml")}
    zephyr = next(p for p in load_manifest(release.manifest) if p.name == "zephyr")
    hals = board.zephyr.hal_modules if board.zephyr else ()
    allow = sorted(set(release.allowlist) | set(hals))
    projects = [pins[n] for n in APP_PROJECTS + (FRONTEND_PROJECTS if frontend else ()) if n in pins]
    remotes = {}
    for p in [zephyr, *projects]:
        remotes[p.owner] = p.url.rsplit("/", 1)[0]
    return {
        "zephyr": zephyr,
        "allowlist": allow,
        "projects": projects,
        "remotes": sorted(remotes.items()),
    }

"""`armgen size`: real arm-none-eabi-gcc ELFs with known arrays, exact byte counts, budgets, deltas.

No workspace needed: every ELF is compiled and linked here (CI installs gcc-arm-none-eabi). Only the
tests that compile (marker ``needs_gcc``) skip without the cross toolchain; the pure ones (map
parsing, classify, the budget grammar, the report schema, bad input) run anywhere.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tomllib
import typing
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from armgen.boards import load_board
from armgen.cli import main
from armgen.errors import SizeError
from armgen.firmware.size import (
    COMPONENT_LABELS,
    COMPONENT_RULES,
    SCHEMA_VERSION,
    ZEPHYR_ROM_SECTIONS,
    ZEPHYR_STACKS,
    Attribution,
    ElfSizeReport,
    Memory,
    Role,
    SizeBudgets,
    StackSize,
    Violation,
    check_budgets,
    classify,
    compare_reports,
    parse_budget_table,
    parse_map,
    parse_size,
    report_schema,
    resolve_budgets,
    size_elf,
    validate_report,
)
from armgen.firmware.size.plot import render_region_svg
from armgen.paths import BOARDS_DIR

GCC = shutil.which("arm-none-eabi-gcc")
AR = shutil.which("arm-none-eabi-ar")
#: Tests that compile and link an ELF here. CI installs the toolchain (.ci/run); a developer machine may not
#: (the skip reason comes from tests/_needs.py).
needs_gcc = pytest.mark.needs_gcc

# Sizes are multiples of 8 so that no alignment fill appears between the arrays.
MAIN_C = r"""
#include <stdint.h>
#include <string.h>
#ifndef RO_N
#define RO_N 1000
#endif
__attribute__((used)) const uint8_t ro_table[RO_N] = {1};                    /* .rodata: RO_N B */
__attribute__((used)) uint8_t data_arr[200] = {1};                          /* .data: 200 B */
__attribute__((used)) uint8_t bss_arr[304];                                 /* .bss: 304 B */
__attribute__((used, section(".armgen_model"), aligned(16)))
const uint8_t armgen_model_pte[4096] = {2};                                 /* model: 4096 B */
__attribute__((used, section(".armgen_pool.method"), aligned(16)))
uint8_t armgen_pool_method[2048];                                           /* pool: 2048 B */
__attribute__((used, section(".wrongplace"))) uint32_t counters[8] = {1};   /* 32 B, writable */
extern int libfn(int);
void Reset_Handler(void) {
  unsigned n = bss_arr[0] + 16u;
  memcpy(bss_arr + 8, data_arr, n);   /* pulls memcpy from newlib's libc.a */
  bss_arr[1] = (uint8_t)libfn(ro_table[n]);
  for (;;) {}
}
"""

# Goes into libcmsis-nn.a so the archive rule attributes it to the CMSIS-NN component.
LIB_C = r"""
#include <stdint.h>
__attribute__((used)) const int32_t lib_const[16] = {1};  /* .rodata: 64 B */
__attribute__((used)) int32_t lib_table[64] = {1};        /* .data: 256 B */
int libfn(int x) { return lib_table[x & 63] + lib_const[x & 15]; }
"""

LINK_LD = """
MEMORY {
  FLASH (rx) : ORIGIN = 0x00000000, LENGTH = 64K
  RAM (rwx)  : ORIGIN = 0x20000000, LENGTH = 16K
  EXTRA (rwx): ORIGIN = 0x60000000, LENGTH = 4K
}
ENTRY(Reset_Handler)
SECTIONS {
  .text : { KEEP(*(.vectors)) *(.text*) } > FLASH
  .rodata : { *(.rodata*) } > FLASH
  .armgen_model : ALIGN(16) { KEEP(*(.armgen_model)) } > FLASH
  .data : ALIGN(8) { *(.data*) } > RAM AT> FLASH
  .wrongplace : ALIGN(8) { KEEP(*(.wrongplace)) } @WRONGPLACE@
  .bss (NOLOAD) : ALIGN(8) { *(.bss*) *(COMMON) } > RAM
  .armgen_pools (NOLOAD) : ALIGN(16) { KEEP(*(.armgen_pool.*)) } > RAM
  .stack (NOLOAD) : ALIGN(8) { __StackLimit = .; . = . + 1024; __StackTop = .; } > RAM
  /DISCARD/ : { *(.ARM.exidx*) *(.ARM.extab*) }
}
"""

BOARD_YAML = """
schema_version: 1
description: two-region test board (64 KiB flash at 0, 16 KiB SRAM at 0x20000000)
cpu:
  core: cortex-m4
  fpu: none
  dsp: true
  mve: none
  clock_hz: 25000000
  et_target: cortex-m4
  gcc_mcpu: cortex-m4
  gcc_mfpu: null
  gcc_float_abi: soft
npu: null
regions:
  - name: FLASH
    kind: flash
    base: 0x00000000
    size: 64 KiB
    uses: [code, rodata, model]
  - name: RAM
    kind: sram
    base: 0x20000000
    size: 16 KiB
    uses: [data, pools, stack]
zephyr: null
baremetal:
  console: semihosting
  vector_table: 0x00000000
emulator: null
"""

CFLAGS = ["-mcpu=cortex-m4", "-mthumb", "-Os", "-g", "-ffunction-sections", "-fdata-sections", "-fno-builtin"]


def _run(cmd: list[str | None], cwd: Path) -> None:
    args = [c for c in cmd if c is not None]
    assert len(args) == len(cmd), "arm-none-eabi-gcc/ar not installed: mark the test @needs_gcc"
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(args)}\n{proc.stdout}\n{proc.stderr}"


def build_fw(
    d: Path, name: str = "fw", ro_n: int = 1000, wrongplace: str = "> RAM AT> FLASH", debug: bool = True
) -> tuple[Path, Path]:
    """Compile main.c + libcmsis-nn.a(lib.o), link with the two-region script; return (ELF, map)."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "main.c").write_text(MAIN_C)
    (d / "lib.c").write_text(LIB_C)
    (d / "link.ld").write_text(LINK_LD.replace("@WRONGPLACE@", wrongplace))
    flags = CFLAGS if debug else [f for f in CFLAGS if f != "-g"] + ["-Wl,--strip-debug"]  # newlib has DWARF
    _run([GCC, *flags, f"-DRO_N={ro_n}", "-c", "main.c", "-o", "main.o"], d)
    _run([GCC, *flags, "-c", "lib.c", "-o", "lib.o"], d)
    (d / "libcmsis-nn.a").unlink(missing_ok=True)
    _run([AR, "rcs", "libcmsis-nn.a", "lib.o"], d)
    elf, mapf = d / f"{name}.elf", d / f"{name}.map"
    _run(
        [GCC, *flags, "-nostartfiles", "-nostdlib", "-T", "link.ld", f"-Wl,-Map={mapf.name}", "-Wl,--gc-sections",
         "main.o", "libcmsis-nn.a", "-lc", "-lgcc", "-o", elf.name],
        d,
    )
    return elf, mapf


@pytest.fixture(scope="module")
def fw(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return build_fw(tmp_path_factory.mktemp("fw"))


@pytest.fixture(scope="module")
def board_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("board") / "two_region.yaml"
    p.write_text(BOARD_YAML)
    return p


@pytest.fixture(scope="module")
def board(board_file: Path):
    return load_board(board_file)


def invoke(*args: str) -> tuple[int, str, str]:
    try:
        runner = CliRunner(mix_stderr=False)  # type: ignore[call-arg]  # click 8.1 (8.2 dropped it: the except)
    except TypeError:
        runner = CliRunner()  # click >= 8.2 keeps stderr apart by default
    r = runner.invoke(main, list(args))
    return r.exit_code, r.stdout, r.stderr


def check_sums(r: ElfSizeReport) -> None:
    """Components add up to the section sizes and to the totals; regions add up to the totals."""
    for s in r.sections:
        assert sum(v for _, v in s.components) == s.size, s.name
    assert sum(c.flash for c in r.components) == r.flash
    assert sum(c.ram for c in r.components) == r.ram
    if r.regions_known and not r.misplaced:
        assert sum(x.used for x in r.regions if not x.volatile) == r.flash
        assert sum(x.used for x in r.regions if x.volatile) == r.ram


# ------------------------------------------------------------------------------- exact sizes


def fill(r, memory: str) -> int:
    """Bytes of alignment fill the report counts in ``memory`` (flash or ram)."""
    return sum(s.size for s in r.sections if s.role == "fill" and s.placements[0].memory == memory)


def span(r, region: str) -> int:
    """End of the last placement minus start of the first in ``region``."""
    ps = [p for s in r.sections for p in s.placements if p.region == region]
    return max(p.address + p.size for p in ps) - min(p.address for p in ps)


@needs_gcc
def test_exact_section_sizes_and_regions(fw: tuple[Path, Path], board) -> None:
    elf, mapf = fw
    r = size_elf(elf, board, mapf)
    assert r.attribution == "map" and r.regions_known and r.board == "two_region"
    assert r.section(".rodata").size == 1000 + 64
    assert r.section(".data").size == 200 + 256
    assert r.section(".bss").size == 304
    assert r.section(".armgen_model").size == 4096
    assert r.section(".armgen_pools").size == 2048
    assert r.section(".stack").size == 1024 and r.stack == 1024 and r.heap == 0
    assert r.section(".wrongplace").size == 32
    # .data: run copy in RAM at its VMA, initial image in FLASH at its LMA (from the program headers)
    data = r.section(".data")
    assert data.vma == 0x20000000 and data.lma < 0x10000
    assert [(p.what, p.region, p.memory) for p in data.placements] == [("run", "RAM", "ram"), ("image", "FLASH", "flash")]
    assert [(p.what, p.region) for p in r.section(".bss").placements] == [("run", "RAM")]
    assert [(p.what, p.region) for p in r.section(".armgen_model").placements] == [("run", "FLASH")]
    text = r.section(".text").size
    # the sections plus the alignment fill between them: the parts add up to the occupied span
    assert fill(r, "flash") > 0 and all(s.size < 16 for s in r.sections if s.role == "fill")
    assert r.flash == text + 1064 + 4096 + 456 + 32 + fill(r, "flash") == span(r, "FLASH")
    assert r.ram == 456 + 32 + 304 + 2048 + 1024 + fill(r, "ram") == span(r, "RAM")
    assert r.region("FLASH").used == r.flash and r.region("RAM").used == r.ram
    assert r.region("RAM").usable == 16384
    assert r.misplaced == ()
    assert [(p.name, p.size, p.section, p.region) for p in r.pools] == [("method", 2048, ".armgen_pools", "RAM")]
    check_sums(r)


@needs_gcc
def test_component_attribution_from_map(fw: tuple[Path, Path], board) -> None:
    elf, mapf = fw
    r = size_elf(elf, board, mapf)
    assert dict(r.section(".rodata").components) == {"app": 1000, "cmsis_nn": 64}
    assert dict(r.section(".data").components) == {"app": 200, "cmsis_nn": 256}
    assert dict(r.section(".bss").components) == {"app": 304}
    assert dict(r.section(".armgen_model").components) == {"model": 4096}
    assert dict(r.section(".armgen_pools").components) == {"pools": 2048}
    # the stack is linker fill inside .stack: claimed by the output-section rule
    assert dict(r.section(".stack").components) == {"stack_heap": 1024}
    text = dict(r.section(".text").components)
    assert text["app"] > 0 and text["cmsis_nn"] > 0 and text["libc"] > 0  # libfn, memcpy from libc.a
    assert r.component("model").flash == 4096 and r.component("model").ram == 0
    assert r.component("pools").ram == 2048 and r.component("pools").flash == 0
    assert r.component("cmsis_nn").ram == 256
    assert r.component("cmsis_nn").flash == text["cmsis_nn"] + 64 + 256
    ram_fill = {"unattributed": fill(r, "ram")} if fill(r, "ram") else {}
    assert r.region("RAM").components == tuple(
        sorted({"app": 200 + 32 + 304, "cmsis_nn": 256, "pools": 2048, "stack_heap": 1024, **ram_fill}.items())
    )
    check_sums(r)


@needs_gcc
def test_no_board_falls_back_to_section_classes(fw: tuple[Path, Path]) -> None:
    elf, mapf = fw
    r = size_elf(elf, None, mapf)
    assert not r.regions_known and r.regions == () and r.misplaced == ()
    assert any("regions unknown" in n for n in r.notes)
    text = r.section(".text").size
    assert r.flash == text + 1064 + 4096 + 456 + 32 + fill(r, "flash")
    assert r.ram == 456 + 32 + 304 + 2048 + 1024 + fill(r, "ram")
    check_sums(r)


@needs_gcc
def test_no_map_uses_dwarf_then_symbols(tmp_path: Path, fw: tuple[Path, Path]) -> None:
    elf, _ = fw
    r = size_elf(elf, None, None)
    assert r.attribution == "dwarf" and any("no linker map" in n for n in r.notes)
    assert r.component("model").flash == 4096 and r.component("pools").ram == 2048
    assert r.component("stack_heap").ram == 1024
    check_sums(r)
    elf2, _ = build_fw(tmp_path / "nodebug", debug=False)
    r2 = size_elf(elf2)
    assert r2.attribution == "symbols" and any("no DWARF" in n for n in r2.notes)
    assert r2.component("model").flash == 4096 and r2.component("pools").ram == 2048
    check_sums(r2)


@needs_gcc
def test_stale_map_is_noted_not_trusted(tmp_path: Path, fw: tuple[Path, Path]) -> None:
    _, other_map = build_fw(tmp_path / "grown", ro_n=1024)
    r = size_elf(fw[0], None, other_map)
    assert r.attribution == "dwarf" and r.map is None
    assert any("does not belong to this ELF" in n and ".rodata" in n for n in r.notes)


# ------------------------------------------------------------------------------- placement


@needs_gcc
def test_writable_section_in_flash_is_reported(tmp_path: Path, board) -> None:
    elf, mapf = build_fw(tmp_path, wrongplace="> FLASH")
    r = size_elf(elf, board, mapf)
    assert len(r.misplaced) == 1
    m = r.misplaced[0]
    assert (m.section, m.what, m.region, m.size) == (".wrongplace", "run", "FLASH", 32)
    assert "writable but FLASH is non-volatile flash" in m.reason
    v = check_budgets(r, SizeBudgets())
    assert [(x.kind, x.name) for x in v] == [("placement", ".wrongplace")]


@needs_gcc
def test_section_in_no_region_fails_the_gate(tmp_path: Path, board_file: Path) -> None:
    elf, _ = build_fw(tmp_path, wrongplace="> EXTRA")
    code, out, err = invoke("size", str(elf), "--board", str(board_file))
    assert code == 1
    assert "misplaced: section .wrongplace at 0x60000000 (32 B) is in no memory region of the board" in err


# ------------------------------------------------------------------------------- budgets


def test_parse_size_units() -> None:
    assert parse_size(36864, "k", "f") == 36864
    assert parse_size("512 KiB", "k", "f") == 524288
    assert parse_size("2MiB", "k", "f") == 2 * 1024 * 1024
    assert parse_size("1.5 KiB", "k", "f") == 1536
    assert parse_size("64 KB", "k", "f") == 64000
    assert parse_size("1 MB", "k", "f") == 1_000_000
    assert parse_size("100 B", "k", "f") == 100
    assert parse_size("40 kB", "k", "f") == 40000 and parse_size("40 KIB", "k", "f") == 40960
    for bad, why in (("-1 KiB", "negative"), (-5, "negative"), ("12 parsecs", "not a size"),
                     ("0.3 B", "whole number"), (True, "must be bytes"),
                     ("40 kb", r"is in bits: '40 kb' .*write '40 kB' \(40,000 B\), '40 KiB' \(40,960 B\) or plain bytes"),
                     ("40 Kb", "in bits"), ("2 mib", r"write '2 MiB' \(2,097,152 B\), '2 MB'"),
                     ("100 b", "in bits: '100 b' .*write '100 B' or plain bytes")):
        with pytest.raises(SizeError, match=why):
            parse_size(bad, "budgets.flash", "b.toml")


def test_board_defaults_and_precedence(tmp_path: Path, board) -> None:
    f = tmp_path / "b.toml"
    f.write_text('[budgets]\nram = 9000\n[budgets.components]\ncmsis_nn = { ram = 200 }\n')
    b = resolve_budgets(board, {"flash": "8 KiB", "ram": 1, "regions": {"RAM": "12 KiB"}}, "armgen.toml", f)
    assert b.flash == 8192 and b.sources["flash"] == "armgen.toml"
    assert b.ram == 9000 and b.sources["ram"] == str(f)
    assert b.regions == {"FLASH": 65536, "RAM": 12288}
    assert b.components["cmsis_nn"].ram == 200 and b.components["cmsis_nn"].total is None
    d = resolve_budgets(board)
    assert (d.flash, d.ram) == (65536, 16384) and d.sources["flash"] == "board two_region"


@needs_gcc
def test_over_budget_exit_1_names_each_overrun(tmp_path: Path, fw: tuple[Path, Path], board_file: Path) -> None:
    elf, mapf = fw
    r = size_elf(elf, load_board(board_file), mapf)
    f = tmp_path / "b.toml"
    f.write_text(
        f'[budgets]\nflash = {r.flash - 10}\nram = "{r.ram} B"\n'
        f'[budgets.regions]\nRAM = {r.ram - 100}\n'
        '[budgets.components]\nmodel = "4 KiB"\ncmsis_nn = { ram = 200 }\nruntime_core = "20 KiB"\n'
    )
    code, out, err = invoke("size", str(elf), "--board", str(board_file), "--budget", str(f))
    assert code == 1, err
    lines = [x for x in err.splitlines() if x.startswith("armgen: over budget")]
    assert lines == [
        f"armgen: over budget: flash over budget by 10 B ({r.flash} B used, {r.flash - 10} B allowed by {f})",
        f"armgen: over budget: region RAM over budget by 100 B ({r.ram} B used, {r.ram - 100} B allowed by {f})",
        f"armgen: over budget: component cmsis_nn (RAM) over budget by 56 B (256 B used, 200 B allowed by {f})",
    ]
    f.write_text(f'[budgets]\nflash = {r.flash}\nram = {r.ram * 2}\n[budgets.components]\nmodel = "4 KiB"\n')
    code, out, err = invoke("size", str(elf), "--board", str(board_file), "--budget", str(f))
    assert code == 0, err
    assert "over budget" not in err and "model (.pte)" in out
    verdict = [x for x in err.splitlines() if x.startswith("armgen: within budget")]
    assert verdict == [f"armgen: within budget: flash {r.flash:,} of {r.flash:,} B (100.0 %), "
                       f"RAM {r.ram:,} of {2 * r.ram:,} B (50.0 %); 2 region budgets and 1 component budget met"], err
    code, _, err = invoke("size", str(elf))  # no board, no budget: nothing was checked, and the line says so
    assert code == 0 and f"armgen: no budget checked: flash {r.flash:,} B (no budget), " in err, err


@needs_gcc
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[budgets]\nflsh = 10\n", "unknown key 'budgets.flsh'"),
        ("[budgets]\nram = -4\n", "budget 'budgets.ram' is negative (-4)"),
        ('[budgets]\nflash = "-1 KiB"\n', "budget 'budgets.flash' is negative"),
        ('[budgets]\nflash = "40 kb"\n', "budget 'budgets.flash' is in bits: '40 kb' (a lower-case b means bits); "
                                          "write '40 kB' (40,000 B), '40 KiB' (40,960 B) or plain bytes"),
        ("[budgets.components]\nruntime = 10\n", "unknown key 'budgets.components.runtime'"),
        ("[budgets.regions]\nDTCM = 10\n", "unknown key 'budgets.regions.DTCM': board two_region has no region DTCM"),
        ('[budgets.regions]\nRAM = "17 KiB"\n', "'budgets.regions.RAM' = 17408 B is larger than region RAM (16384 B usable"),
        ("[other]\nx = 1\n", "unknown key 'other'"),
        ("[budgets\n", "not valid TOML"),
    ],
)
def test_bad_budget_file_exit_2(tmp_path: Path, fw: tuple[Path, Path], board_file: Path, text: str, message: str) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(text)
    code, out, err = invoke("size", str(fw[0]), "--board", str(board_file), "--budget", str(f))
    assert code == 2
    assert err.startswith(f"armgen: error: {f}: ") and message in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 2


def test_region_budget_without_board_is_an_error() -> None:
    with pytest.raises(SizeError, match="needs a board"):
        parse_budget_table({"regions": {"RAM": 10}}, "b.toml", None)


# ------------------------------------------------------------------------------- CLI, JSON, SVG


@needs_gcc
def test_json_and_svg_are_deterministic(fw: tuple[Path, Path], board_file: Path) -> None:
    elf, _ = fw
    code, out1, _ = invoke("size", str(elf), "--board", str(board_file), "--json")
    assert code == 0
    svg = elf.with_name("fw.size.svg")
    svg1 = svg.read_bytes()
    code, out2, _ = invoke("size", str(elf), "--board", str(board_file), "--json")
    assert out1 == out2 and svg.read_bytes() == svg1
    doc = json.loads(out1)
    assert list(doc) == sorted(doc)
    assert doc["within_budget"] is True and doc["violations"] == []
    assert doc["report"]["attribution"] == "map"  # fw.map found next to fw.elf
    assert doc["report"]["components"]["model"] == {"flash": 4096, "ram": 0}
    assert doc["svg"] == str(svg)
    text = svg1.decode()
    assert text.startswith("<?xml") and "FLASH" in text and "RAM" in text and "model (.pte): 4,096 B" in text


@needs_gcc
def test_svg_without_board_draws_totals(fw: tuple[Path, Path]) -> None:
    r = size_elf(fw[0], None, fw[1])
    svg = render_region_svg(r)
    assert svg == render_region_svg(size_elf(fw[0], None, fw[1]))
    assert f"regions unknown: {r.flash:,} B" in svg and f"regions unknown: {r.ram:,} B" in svg


@needs_gcc
def test_project_directory(tmp_path: Path, board_file: Path) -> None:
    proj = tmp_path / "proj"
    elf, _ = build_fw(proj / "build", name="kws")
    (proj / "armgen.toml").write_text(f'name = "kws"\nboard = "{board_file}"\n[budgets]\nram = 100\n')
    code, out, err = invoke("size", str(proj), "--json")
    assert code == 1
    doc = json.loads(out)
    assert doc["report"]["board"] == "two_region" and doc["budgets"]["ram"] == 100
    assert doc["budgets"]["sources"]["ram"] == str(proj / "armgen.toml")
    assert "RAM over budget by" in err
    # --budget wins over armgen.toml
    f = tmp_path / "b.toml"
    f.write_text("[budgets]\nram = 16384\n")
    code, out, err = invoke("size", str(proj), "--budget", str(f))
    assert code == 0, err
    assert (proj / "build" / "kws.size.svg").is_file()


def test_project_missing_pieces(tmp_path: Path) -> None:
    code, _, err = invoke("size", str(tmp_path))
    assert code == 2 and "is a directory without armgen.toml" in err
    (tmp_path / "armgen.toml").write_text('name = "kws"\n')
    code, _, err = invoke("size", str(tmp_path))
    assert code == 2 and f"{tmp_path / 'build' / 'kws.elf'}: no such file" in err
    (tmp_path / "armgen.toml").write_text('board = "two_region"\n')
    code, _, err = invoke("size", str(tmp_path))
    assert code == 2 and "has no 'name' key" in err


@needs_gcc
def test_compare_gives_deltas(tmp_path: Path, fw: tuple[Path, Path], board_file: Path) -> None:
    new_elf, new_map = build_fw(tmp_path / "grown", ro_n=1000 + 24)
    board = load_board(board_file)
    old_r, new_r = size_elf(fw[0], board, fw[1]), size_elf(new_elf, board, new_map)
    cmp = compare_reports(old_r, new_r)
    deltas = {d.name: d.delta for d in cmp.sections}
    assert deltas[".rodata"] == 24 and deltas[".data"] == 0 and deltas[".bss"] == 0
    assert {d.name: d.delta for d in cmp.components_flash}["app"] == 24
    assert {d.name: d.delta for d in cmp.components_ram}["app"] == 0
    assert cmp.flash.delta == 24 + deltas[".text"] + deltas[".armgen_model"] + fill(new_r, "flash") - fill(old_r, "flash")
    code, out, _ = invoke("size", str(new_elf), "--board", str(board_file), "--compare", str(fw[0]), "--json")
    assert code == 0
    doc = json.loads(out)["compare"]
    assert doc["sections"][".rodata"] == {"old": 1064, "new": 1088, "delta": 24}
    assert doc["components"]["flash"]["model"]["delta"] == 0
    code, out, _ = invoke("size", str(new_elf), "--compare", str(fw[0]))
    assert code == 0 and "section deltas" in out and "+24" in out


@needs_gcc
def test_compare_without_the_old_map_refuses_component_deltas(tmp_path: Path, fw: tuple[Path, Path],
                                                               board_file: Path) -> None:
    """Issue 27: an old ELF with no map beside it showed every component as 0 (so "app +N B"), silently."""
    new_elf, _new_map = build_fw(tmp_path / "grown", ro_n=1000 + 24)
    lone = tmp_path / "lone" / "old.elf"
    lone.parent.mkdir()
    lone.write_bytes(fw[0].read_bytes())  # the old image without its map
    code, out, err = invoke("size", str(new_elf), "--board", str(board_file), "--compare", str(lone), "--json")
    assert code == 0, err
    doc = json.loads(out)
    cmp = doc["compare"]
    assert cmp["components"] == {"flash": {}, "ram": {}}
    assert len(cmp["notes"]) == 1 and "components not compared" in cmp["notes"][0]
    assert f"{lone} by " in cmp["notes"][0] and "(no linker map beside it)" in cmp["notes"][0]
    assert cmp["sections"][".rodata"]["delta"] == 24  # sections are still compared
    assert validate_report(doc) is None  # type: ignore[func-returns-value]  # it raises on a bad report
    code, out, err = invoke("size", str(new_elf), "--board", str(board_file), "--compare", str(lone))
    assert code == 0 and "note: components not compared" in err and "component deltas" not in out
    # the old map given explicitly: components compared again, no note
    code, out, err = invoke("size", str(new_elf), "--board", str(board_file), "--compare", str(lone),
                            "--compare-map", str(fw[1]), "--json")
    cmp = json.loads(out)["compare"]
    assert code == 0 and cmp["notes"] == [] and cmp["components"]["flash"]["app"]["delta"] == 24
    code, _, err = invoke("size", str(new_elf), "--compare-map", str(fw[1]))
    assert code == 2 and "--compare-map needs --compare" in err


# ------------------------------------------------------------------------------- bad ELF input


def test_not_an_elf(tmp_path: Path) -> None:
    f = tmp_path / "notes.elf"
    f.write_text("hello\n")
    code, _, err = invoke("size", str(f))
    assert code == 2 and err.startswith(f"armgen: error: {f} is not an ELF file")


def test_missing_elf(tmp_path: Path) -> None:
    code, _, err = invoke("size", str(tmp_path / "nope.elf"))
    assert code == 2 and "nope.elf: no such file" in err
    assert "build the firmware first" in err
    code, _, err = invoke("size", str(tmp_path / "my_kws"))  # a mistyped project: not "build the firmware first"
    assert code == 2 and "my_kws: no such file or directory" in err and "project directory" in err
    assert "build the firmware first" not in err


def test_elf_for_another_architecture(tmp_path: Path) -> None:
    host = shutil.which("gcc") or shutil.which("cc")
    if host:
        (tmp_path / "h.c").write_text("int main(void) { return 0; }\n")
        _run([host, "h.c", "-o", "host.elf"], tmp_path)
        elf = tmp_path / "host.elf"
    else:  # no host compiler: the Python interpreter is a host ELF too
        elf = Path(sys.executable).resolve()
    code, _, err = invoke("size", str(elf))
    assert code == 2
    assert "is an ELF for" in err and "not 32-bit Arm" in err and "ARM (32-bit)" not in err


@needs_gcc
def test_elf_without_section_headers(tmp_path: Path, fw: tuple[Path, Path]) -> None:
    data = bytearray(fw[0].read_bytes())
    assert data[4] == 1  # ELFCLASS32: e_shoff at 0x20 (u32), e_shnum at 0x30, e_shstrndx at 0x32 (u16)
    struct.pack_into("<I", data, 0x20, 0)
    struct.pack_into("<HH", data, 0x30, 0, 0)
    stripped = tmp_path / "stripped.elf"
    stripped.write_bytes(bytes(data))
    code, _, err = invoke("size", str(stripped))
    assert code == 2 and f"{stripped} has no section headers" in err


@needs_gcc
def test_bad_map_file(tmp_path: Path, fw: tuple[Path, Path]) -> None:
    m = tmp_path / "x.map"
    m.write_text("not a map\n")
    code, _, err = invoke("size", str(fw[0]), "--map", str(m))
    assert code == 2 and f"{m}: not a GNU ld map file" in err


# ------------------------------------------------------------------------------- units


def test_classify_rules() -> None:
    assert classify(archive="libexecutorch_core.a") == "runtime_core"
    assert classify(archive="libextension_runner_util.a") == "runtime_core"
    assert classify(archive="libportable_ops_lib.a") == "portable_kernels"
    assert classify(archive="libquantized_kernels.a") == "quantized_kernels"
    assert classify(archive="libcortex_m_ops_lib.a") == "cortex_m_kernels"
    assert classify(archive="libcmsis-nn.a") == "cmsis_nn"
    assert classify(archive="libexecutorch_delegate_ethos_u.a") == "ethos_u_delegate"
    assert classify(archive="libethosu_core_driver.a") == "ethos_u_driver"
    assert classify(archive="libarm_portable_ops_lib.a") == "kernel_registration"
    assert classify(archive="libc_nano.a") == "libc" and classify(archive="libstdc++.a") == "libc"
    assert classify(obj="crti.o") == "libc" and classify(obj="main.c.obj") == "app"
    assert classify(archive="libfoo.a") == "other_libraries"
    assert classify(output_section=".armgen_model", input_section=".armgen_model", obj="model.c.obj") == "model"
    assert classify(output_section=".bss", input_section=".bss.armgen_pool_temp", obj="pools.c.obj") == "pools"
    assert classify(output_section=".text", input_section="*fill*") == "unattributed"
    assert classify(source="/ws/modules/lib/cmsis-nn/Source/x.c") == "cmsis_nn"
    assert all(r.component for r in COMPONENT_RULES)


def test_classify_lto_partitions() -> None:
    """-flto images: code comes from ld's ltrans objects; the symbol in the input section decides."""
    lt = "ccZDycqk.ltrans0.ltrans.o"
    cases = {
        ".text._ZN10executorch7runtime6Method7executeEv": "runtime_core",
        ".text._ZNK10executorch7runtime8internal13MergedDataMap8get_dataESt17basic_string_viewIcSt11char_traitsIcEE": "runtime_core",
        ".rodata._ZTVN10executorch7runtime8internal13MergedDataMapE": "runtime_core",
        ".text._ZN10executorch8backends3arm15EthosUBackend4initEv": "ethos_u_delegate",
        ".text.ethosu_invoke_v3": "ethos_u_driver",
        ".text._ZN8cortex_m6native21quantized_conv2d_outERN10executorch7runtime20KernelRuntimeContextE": "cortex_m_kernels",
        ".text._ZN5torch8executor8function12_GLOBAL__N_119kernels_to_registerEv": "kernel_registration",
        ".text._ZN5torch8executor6native7add_outEv": "portable_kernels",
        ".text.arm_convolve_s8.constprop.0.isra.0": "cmsis_nn",
        ".text.arm_nn_mat_mult_nt_t_s8": "cmsis_nn",
        ".text.arm_rfft_fast_f32": "other_libraries",
        ".rodata.twiddleCoef_512": "other_libraries",
        ".text.armgen_model_init": "app",
        ".text.put_uint": "app",
        ".rodata": "app",
    }
    for section, component in cases.items():
        assert classify(output_section=".text", input_section=section, obj=lt) == component, section
    # Outside an LTO partition the same names keep their archive's attribution.
    assert classify(input_section=".text.arm_nn_mat_mult_nt_t_s8", obj="main.c.obj") == "app"
    assert classify(input_section=".text.arm_nn_mat_mult_nt_t_s8", archive="libcmsis-nn.a") == "cmsis_nn"


def test_parse_map_lines() -> None:
    text = """Archive member included...
Linker script and memory map

LOAD main.o
.text           0x00000000       0x44
 *(.text*)
 .text.startup.main
                0x00000000       0x28 main.o
                0x00000000                main
 .text.memcpy   0x00000028       0x14 /usr/lib/arm-none-eabi/lib/libc.a(libc_a-memcpy.o)
 *fill*         0x0000003c        0x8 
.data           0x20000000       0x10 load address 0x00000044
 .data.x        0x20000000       0x10 /b/CMakeFiles/app.dir/src/app.c.obj
OUTPUT(fw.elf elf32-littlearm)
.debug_info     0x00000000      0x20d
 .debug_info    0x00000000      0x18d main.o
"""
    m = parse_map(text)
    assert m.outputs[".text"] == (0, 0x44) and m.outputs[".data"] == (0x20000000, 0x10)
    got = [(i.output_section, i.input_section, i.address, i.size, i.archive, i.obj) for i in m.inputs]
    assert got[:4] == [
        (".text", ".text.startup.main", 0, 0x28, None, "main.o"),
        (".text", ".text.memcpy", 0x28, 0x14, "libc.a", "libc_a-memcpy.o"),
        (".text", "*fill*", 0x3C, 8, None, None),
        (".data", ".data.x", 0x20000000, 0x10, None, "app.c.obj"),
    ]


# ------------------------------------------------------------------------------- merged strings

# GNU ld merges SHF_MERGE|SHF_STRINGS input sections (.rodata.str1.1): with -Os the map then lists
# a.o's .rodata.str1.1 ("" merged into another string's NUL; "0xa ... 0x1 (size before relaxing)")
# and b.o's .rodata.str1.1 ("planned_1\0", 10 B) at the same address, as in a real ExecuTorch build.
MERGE_A_C = r"""
extern const char *volatile b_name;
const char *volatile a_empty = "";
const char *volatile sink;
void Reset_Handler(void) {
  sink = "pool_info";          /* a.o: .rodata.Reset_Handler.str1.1, 10 B */
  sink = a_empty;
  sink = b_name;
  for (;;) {}
}
"""
MERGE_B_C = r"""
const char *volatile b_name = "planned_1";  /* b.o (in libcmsis-nn.a): .rodata.str1.1, 10 B */
const char *volatile b_dup = "pool_info";   /* identical to a.o's: merged away */
"""
MERGE_LD = """
MEMORY { FLASH (rx) : ORIGIN = 0, LENGTH = 64K  RAM (rwx) : ORIGIN = 0x20000000, LENGTH = 16K }
ENTRY(Reset_Handler)
SECTIONS {
  .text : { *(.text*) } > FLASH
  .rodata : { *(.rodata*) } > FLASH
  .data : { *(.data*) } > RAM AT> FLASH
  .bss (NOLOAD) : { *(.bss*) } > RAM
}
"""


@needs_gcc
def test_merged_strings_attributed_by_address(tmp_path: Path) -> None:
    """Overlapping merged-string map lines: every byte credited once, to the object that owns it."""
    (tmp_path / "a.c").write_text(MERGE_A_C)
    (tmp_path / "b.c").write_text(MERGE_B_C)
    (tmp_path / "link.ld").write_text(MERGE_LD)
    flags = ["-mcpu=cortex-m4", "-mthumb", "-Os", "-ffunction-sections", "-fdata-sections", "-fmerge-constants"]
    _run([GCC, *flags, "-c", "a.c", "-o", "a.o"], tmp_path)
    _run([GCC, *flags, "-c", "b.c", "-o", "b.o"], tmp_path)
    _run([AR, "rcs", "libcmsis-nn.a", "b.o"], tmp_path)
    _run([GCC, *flags, "-nostartfiles", "-nostdlib", "-T", "link.ld", "-Wl,-Map=fw.map", "-Wl,--gc-sections",
          "a.o", "libcmsis-nn.a", "-o", "fw.elf"], tmp_path)
    lmap = parse_map((tmp_path / "fw.map").read_text())
    strs = [i for i in lmap.inputs if i.output_section == ".rodata" and ".str1." in i.input_section]
    # The link really has the overlap: the input lines add up to more than the output section.
    assert sum(i.size for i in strs) > lmap.outputs[".rodata"][1]
    assert len({i.address for i in strs}) < len(strs)
    assert any(i.obj == "a.o" and i.size_before == 1 for i in strs)

    r = size_elf(tmp_path / "fw.elf", None, tmp_path / "fw.map")
    check_sums(r)
    rodata = r.section(".rodata")
    assert rodata.size == 20  # "pool_info\0" + "planned_1\0"; "" and b's "pool_info" merged away
    assert dict(rodata.components) == {"app": 10, "cmsis_nn": 10}
    assert all(v > 0 for _, v in rodata.components)


def test_armgen_kernel_archives_classified() -> None:
    """The archives armgen's templates build (armgen_<x>_kernels, armgen_<x>_ops_lib) land in their components."""
    assert classify(archive="libarmgen_cortex_m_kernels.a") == "cortex_m_kernels"
    assert classify(archive="libarmgen_portable_kernels.a") == "portable_kernels"
    assert classify(archive="libarmgen_quantized_kernels.a") == "quantized_kernels"
    for reg in ("libarmgen_cortex_m_ops_lib.a", "libarmgen_portable_ops_lib.a", "libarmgen_prim_ops_lib.a"):
        assert classify(archive=reg) == "kernel_registration", reg


@needs_gcc
def test_text_with_brackets_is_not_rich_markup(fw: tuple[Path, Path], board_file: Path) -> None:
    """Component keys ("[model]") and user text in tables/messages print verbatim, not as rich markup."""
    elf, mapf = fw
    code, out, err = invoke("size", str(elf), "--map", str(mapf), "--board", str(board_file))
    assert code == 0, err
    assert "model (.pte) [model]" in out and "[cmsis_nn]" in out


# ------------------------------------------------------------------------------- Zephyr images

# A small image laid out like Zephyr's (include/zephyr/arch/arm/cortex_m/scripts/linker.ld): output
# sections without a dot, the ROM group between __rom_region_start and __rom_region_end, writable
# rom_start/sw_isr_table/ctors/init_array in flash, kernel stacks and the pools in .noinit input
# sections of the `noinit` output section, and Zephyr's archive names (libkernel.a, libzephyr.a,
# libapp.a, isr_tables.c.obj outside any archive).
Z_KERNEL_C = r"""
#include <stdint.h>
/* kernel/init.c: __noinit -> .noinit."<file>".<counter> (include/zephyr/linker/section_tags.h) */
#define NOINIT(n) __attribute__((used, aligned(8), section(".noinit.\"WEST_TOPDIR/zephyr/kernel/init.c\"." #n)))
NOINIT(0) uint8_t z_interrupt_stacks[1][512];
NOINIT(1) static uint8_t z_idle_stacks[1][256];
NOINIT(2) uint8_t z_main_stack[1024];
__attribute__((used, aligned(8), section(".noinit.\"WEST_TOPDIR/zephyr/kernel/mempool.c\".kheap_buf__system_heap")))
uint8_t kheap__system_heap[2048];
__attribute__((used)) int32_t z_kernel_counter[16];                     /* .bss: 64 B */
int k_fn(int x) { return z_kernel_counter[x & 15] + z_idle_stacks[0][x & 7] + z_interrupt_stacks[0][x & 3]; }
"""
Z_ZEPHYR_C = r"""
#include <stdint.h>
__attribute__((used)) const uint32_t z_log_levels[8] = {1};            /* .rodata: 32 B */
/* arch/arm/core/vector_table.S: the exception table, read-only */
__attribute__((used, section(".exc_vector_table"))) const uint32_t _vector_table[16] = {0x20004000};
int z_fn(int x) { return (int)z_log_levels[x & 7] + 1; }
"""
# scripts/build/gen_isr_tables_parser_carrays.py: non-const tables (so the output sections are "WA")
Z_ISR_TABLES_C = r"""
#include <stdint.h>
__attribute__((used, section(".gnu.linkonce.irq_vector_table"))) uintptr_t _irq_vector_table[8] = {1};
struct _isr_table_entry { const void *arg; void (*isr)(const void *); };
__attribute__((used, section(".gnu.linkonce.sw_isr_table"))) struct _isr_table_entry _sw_isr_table[8] = {{0, 0}};
"""
Z_APP_C = r"""
#include <stdint.h>
#include <string.h>
__attribute__((used, section(".armgen_model"), aligned(16))) const uint8_t armgen_model_pte[1024] = {2};
__attribute__((used, section(".armgen_pool.method"), aligned(16))) uint8_t armgen_pool_method[2048];
__attribute__((used, section(".rogue"))) uint32_t rogue[4] = {1};      /* writable, Zephyr names it not */
static void ctor(void) {}
__attribute__((used, section(".init_array"))) void (*const init_ptr)(void) = ctor;
__attribute__((used, section(".ctors"))) void (*ctors_ptr)(void) = ctor;
__attribute__((used)) uint8_t app_buf[64] = {1};
extern int k_fn(int); extern int z_fn(int);
void Reset_Handler(void) {
  memcpy(app_buf + 8, armgen_pool_method, app_buf[0] + 4u);
  app_buf[1] = (uint8_t)(k_fn(app_buf[2]) + z_fn(app_buf[3]) + armgen_model_pte[app_buf[4]]);
  for (;;) {}
}
"""
Z_LINK_LD = """
MEMORY {
  FLASH (rx) : ORIGIN = 0x00000000, LENGTH = 64K
  RAM (rwx)  : ORIGIN = 0x20000000, LENGTH = 16K
}
ENTRY(Reset_Handler)
SECTIONS {
  @ROMSTART@
  rom_start : { KEEP(*(.exc_vector_table)) KEEP(*(.gnu.linkonce.irq_vector_table*)) } > FLASH
  text : { *(.text*) . = ALIGN(4); } > FLASH
  sw_isr_table : { . = ALIGN(4); KEEP(*(.gnu.linkonce.sw_isr_table*)) } > FLASH
  ctors : { . = ALIGN(4); LONG(1) KEEP(*(.ctors*)) LONG(0) } > FLASH
  init_array : { . = ALIGN(4); KEEP(*(.init_array*)) } > FLASH
  rogue : { KEEP(*(.rogue)) } @ROGUE@
  .armgen_model : ALIGN(16) { KEEP(*(.armgen_model)) } > FLASH
  rodata : { *(.rodata*) . = ALIGN(4); } > FLASH
  @ROMEND@
  datas : ALIGN(4) { *(.data*) } > RAM AT> FLASH
  bss (NOLOAD) : ALIGN(8) { *(.bss*) *(COMMON) } > RAM
  noinit (NOLOAD) : ALIGN(16) { KEEP(*(.noinit.*)) KEEP(*(.armgen_pool.*)) } > RAM
  /DISCARD/ : { *(.ARM.exidx*) *(.ARM.extab*) }
}
"""
PICOLIBC_DIR = Path("/usr/lib/picolibc/arm-none-eabi/lib/thumb/v7e-m/nofp")  # Debian's picolibc


def build_zephyr_like(d: Path, rom_symbols: bool = True, rogue: str = "> RAM AT> FLASH") -> tuple[Path, Path]:
    """Compile and link the Zephyr-like image in ``d`` (build/zephyr/zephyr.elf + .map); return (ELF, map)."""
    out = d / "build" / "zephyr"
    out.mkdir(parents=True, exist_ok=True)
    for name, text in (("kernel.c", Z_KERNEL_C), ("zephyr.c", Z_ZEPHYR_C), ("isr_tables.c", Z_ISR_TABLES_C),
                       ("app.c", Z_APP_C)):
        (out / name).write_text(text)
        _run([GCC, *CFLAGS, "-c", name, "-o", f"{name}.obj"], out)
    for lib, obj in (("libkernel.a", "kernel.c.obj"), ("libzephyr.a", "zephyr.c.obj"), ("libapp.a", "app.c.obj")):
        (out / lib).unlink(missing_ok=True)
        _run([AR, "rcs", lib, obj], out)
    ld = Z_LINK_LD.replace("@ROGUE@", rogue)
    ld = ld.replace("@ROMSTART@", "__rom_region_start = 0x00000000;" if rom_symbols else "")
    ld = ld.replace("@ROMEND@", "__rom_region_end = .;" if rom_symbols else "")
    (out / "linker.cmd").write_text(ld)
    libc = ["-L", str(PICOLIBC_DIR)] if (PICOLIBC_DIR / "libc.a").is_file() else []
    _run([GCC, *CFLAGS, "-nostartfiles", "-nostdlib", "-T", "linker.cmd", "-Wl,-Map=zephyr.map", "-Wl,--gc-sections",
          "-Wl,--whole-archive", "libapp.a", "-Wl,--no-whole-archive", "isr_tables.c.obj", "libkernel.a",
          "libzephyr.a", *libc, "-lc", "-lgcc", "-o", "zephyr.elf"], out)  # fmt: skip
    return out / "zephyr.elf", out / "zephyr.map"


@pytest.fixture(scope="module")
def zfw(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return build_zephyr_like(tmp_path_factory.mktemp("zfw"))


@needs_gcc
def test_zephyr_rom_sections_are_read_only_data(zfw: tuple[Path, Path], board) -> None:
    """rom_start, sw_isr_table, ctors, init_array: "WA" in the ELF, read-only data in flash for the size stage."""
    elf, mapf = zfw
    r = size_elf(elf, board, mapf)
    assert r.misplaced == () and r.attribution == "map"
    for name in ("rom_start", "sw_isr_table", "ctors", "init_array"):
        s = r.section(name)
        assert "W" in s.flags and s.role == "rodata", name
        assert [(p.what, p.region, p.memory) for p in s.placements] == [("run", "FLASH", "flash")], name
    assert r.section("rogue").role == "data"  # in RAM here; not a Zephyr ROM section
    assert check_budgets(r, SizeBudgets()) == []
    check_sums(r)
    # without a board the same rule keeps them out of the RAM total
    nb = size_elf(elf, None, mapf)
    assert nb.section("sw_isr_table").placements[0].memory == "flash"
    assert nb.flash == r.flash and nb.ram == r.ram


@needs_gcc
def test_zephyr_rom_rule_is_not_a_disabled_check(tmp_path: Path, board) -> None:
    """Only Zephyr's named sections inside its ROM group (__rom_region_start..__rom_region_end) qualify."""
    elf, mapf = build_zephyr_like(tmp_path / "nosyms", rom_symbols=False)  # not a Zephyr image
    r = size_elf(elf, board, mapf)
    assert sorted(m.section for m in r.misplaced) == ["ctors", "init_array", "rom_start", "sw_isr_table"]
    assert all("writable but FLASH is non-volatile flash" in m.reason for m in r.misplaced)
    elf, mapf = build_zephyr_like(tmp_path / "rogue", rogue="> FLASH")  # a writable section of another name
    r = size_elf(elf, board, mapf)
    assert [(m.section, m.reason) for m in r.misplaced] == [("rogue", "is writable but FLASH is non-volatile flash")]


@needs_gcc
def test_zephyr_stacks_and_heap_are_attributed_and_listed(tmp_path: Path, zfw: tuple[Path, Path], board) -> None:
    elf, mapf = zfw
    r = size_elf(elf, board, mapf)
    # the .noinit."<file>".<n> input sections are named by the symbol they start with
    assert dict(r.section("noinit").components) == {"pools": 2048, "stack_heap": 512 + 256 + 1024 + 2048}
    assert r.section("noinit").role == "data"  # holds stacks too: not a pools-only section
    got = {(x.name, x.kind, x.symbol, x.size, x.section, x.region) for x in r.stacks}
    assert got == {
        ("main", "stack", "z_main_stack", 1024, "noinit", "RAM"),
        ("ISR", "stack", "z_interrupt_stacks", 512, "noinit", "RAM"),
        ("idle", "stack", "z_idle_stacks", 256, "noinit", "RAM"),
        ("kernel heap", "heap", "kheap__system_heap", 2048, "noinit", "RAM"),
    }
    assert r.stack == 1792 and r.heap == 2048
    assert r.component("stack_heap").ram == 3840 and r.component("stack_heap").flash == 0
    assert [(p.name, p.size, p.section, p.region) for p in r.pools] == [("method", 2048, "noinit", "RAM")]
    doc = r.to_dict()
    assert {x["symbol"]: x["size"] for x in doc["stacks"]} == {
        "z_main_stack": 1024, "z_interrupt_stacks": 512, "z_idle_stacks": 256, "kheap__system_heap": 2048}
    # the bare-metal .stack section is listed as the main stack
    bm_elf, bm_map = build_fw(tmp_path / "bm")
    bm = size_elf(bm_elf, board, bm_map)
    assert [(x.name, x.kind, x.symbol, x.size) for x in bm.stacks] == [("main", "stack", ".stack", 1024)]
    # no map: the same symbols through the symbol/DWARF rules
    nm = size_elf(elf, board, None)
    assert nm.component("stack_heap").ram == 3840 and nm.stack == 1792
    check_sums(r)
    check_sums(nm)


@needs_gcc
def test_zephyr_archives_are_zephyr_kernel(zfw: tuple[Path, Path], board) -> None:
    elf, mapf = zfw
    r = size_elf(elf, board, mapf)
    assert dict(r.section("rom_start").components) == {"zephyr_kernel": 64 + 32}  # libzephyr.a, isr_tables.c.obj
    assert dict(r.section("sw_isr_table").components) == {"zephyr_kernel": 64}
    assert dict(r.section("rodata").components) == {"zephyr_kernel": 32}
    assert dict(r.section("bss").components) == {"zephyr_kernel": 64}  # libkernel.a
    assert dict(r.section("datas").components) == {"app": 64}  # libapp.a
    text = dict(r.section("text").components)
    assert text["zephyr_kernel"] > 0 and text["app"] > 0 and text["libc"] > 0  # k_fn/z_fn, Reset_Handler, memcpy
    assert r.component("other_libraries").flash == 0 and r.component("other_libraries").ram == 0
    if (PICOLIBC_DIR / "libc.a").is_file():  # memcpy came from Debian's picolibc, not newlib
        lmap = parse_map(mapf.read_text())
        assert any(i.archive == "libc.a" and i.input_section == ".text.memcpy" for i in lmap.inputs)
        assert str(PICOLIBC_DIR) in mapf.read_text()
    check_sums(r)


def test_classify_zephyr_names() -> None:
    for lib in ("libzephyr.a", "libkernel.a", "libarch__arm__core__cortex_m.a", "libarch__common.a",
                "libdrivers__serial.a", "libsoc__arm.a", "liblib__libc__picolibc.a", "liblib__libc__common.a",
                "libsubsys__logging.a", "libisr_tables.a", "liboffsets.a"):
        assert classify(archive=lib) == "zephyr_kernel", lib
    for obj in ("isr_tables.c.obj", "offsets.c.obj", "device_deps.c.obj", "empty_file.c.obj"):
        assert classify(obj=obj) == "zephyr_kernel", obj
    assert classify(archive="libapp.a") == "app"
    for lib in ("libc.a", "libstdc++.a", "libgcc.a", "libm.a", "libsupc++.a"):  # picolibc's and GCC's
        assert classify(archive=lib) == "libc", lib
    assert classify(archive="libmodules__foo.a") == "other_libraries"
    for sym in ("z_main_stack", "z_interrupt_stacks", "z_idle_stacks", "kheap__system_heap", "_system_heap"):
        assert classify(archive="libkernel.a", symbol=sym) == "stack_heap", sym
    assert classify(archive="libkernel.a", symbol="z_main_thread") == "zephyr_kernel"
    assert classify(source="/ws/zephyr/kernel/init.c") == "zephyr_kernel"
    assert classify(source="/ws/zephyr/lib/libc/picolibc/libc-hooks.c") == "zephyr_kernel"
    assert classify(source="/build/picolibc/newlib/libc/string/memcpy.c") == "libc"
    assert parse_budget_table({"components": {"zephyr_kernel": "16 KiB"}}, "b.toml").components[
        "zephyr_kernel"].total == 16384


ZEPHYR_RECORD = """name = "zapp"
board = "{board}"
rtos = "zephyr"
elf = "build/zephyr/zephyr.elf"
map = "build/zephyr/zephyr_final.map"

[[pools]]
name = "method"
bytes = 2048
region = "{region}"
section = ".armgen_pool.method"
"""


@needs_gcc
def test_zephyr_project_finds_elf_and_map_from_the_record(tmp_path: Path, board_file: Path) -> None:
    proj = tmp_path / "zapp"
    elf, mapf = build_zephyr_like(proj)
    mapf.rename(mapf.with_name("zephyr_final.map"))  # only the record names it: no <elf>.map next to the ELF
    (proj / "armgen.toml").write_text(ZEPHYR_RECORD.format(board=board_file, region="RAM"))
    for target in (proj, elf):  # the project, and the ELF (armgen.toml three levels up names it)
        code, out, err = invoke("size", str(target), "--json")
        assert code == 0, err
        doc = json.loads(out)
        rep = doc["report"]
        assert rep["board"] == "two_region" and rep["attribution"] == "map"
        assert rep["map"] == str(mapf.with_name("zephyr_final.map"))
        assert rep["misplaced"] == [] and doc["within_budget"] is True
        assert rep["stack"] == 1792 and rep["heap"] == 2048
        assert {x["name"] for x in rep["stacks"]} == {"main", "ISR", "idle", "kernel heap"}
        assert rep["components"]["zephyr_kernel"]["flash"] > 0
    assert (elf.parent / "zephyr.size.svg").is_file()
    code, out, err = invoke("size", str(proj))
    assert code == 0, err
    assert "z_main_stack" in out and "main stack" in out and "[zephyr_kernel]" in out
    # a pool outside the region armgen.toml names for it fails the gate
    (proj / "armgen.toml").write_text(ZEPHYR_RECORD.format(board=board_file, region="FLASH"))
    code, out, err = invoke("size", str(proj))
    assert code == 1
    assert "misplaced: section noinit at 0x" in err and "(2048 B) holds pool method, which armgen.toml places in FLASH" in err
    # a pool the record has but the ELF lacks is a note, not a failure
    (proj / "armgen.toml").write_text(
        ZEPHYR_RECORD.format(board=board_file, region="RAM") + '\n[[pools]]\nname = "temp"\nbytes = 64\nregion = "RAM"\n'
    )
    code, out, err = invoke("size", str(proj))
    assert code == 0 and "pool temp of armgen.toml is not in the ELF" in err


# ------------------------------------------------------------------------------- the real Zephyr image

#: A built `armgen new --rtos zephyr` project to size, when one is named (tests/firmware/test_zephyr_firmware.py
#: builds and sizes its own whenever the workspace has Zephyr).
_REAL = os.environ.get("ARMGEN_SIZE_ZEPHYR_PROJECT")
REAL_ZEPHYR_PROJECT = Path(_REAL) if _REAL else None


def _zephyr_tree(release: str) -> Path:
    """The Zephyr tree of the workspace of ``release`` (found as a build finds it; the needs_zephyr marker
    skipped the test when there is none)."""
    from armgen.workspace import find_zephyr_workspace

    return find_zephyr_workspace(release) / "zephyr"


@pytest.mark.parametrize("release", [pytest.param(r, marks=pytest.mark.needs_zephyr(release=r)) for r in ("3.7", "4.1")])
def test_zephyr_rom_rule_matches_the_workspace_linker_scripts(release: str) -> None:
    """Every section ZEPHYR_ROM_SECTIONS names is one Zephyr's linker scripts place in the ROM group, in each
    Zephyr tree the tests build against (3.7.1 and the 4.1.99 snapshot)."""
    tree = _zephyr_tree(release)
    scripts = [tree / "include/zephyr/arch/arm/cortex_m/scripts/linker.ld",
               *sorted((tree / "include/zephyr/linker").rglob("*.ld"))]
    text = "\n".join(p.read_text() for p in scripts)
    text = text.replace("_CTOR_SECTION_NAME", "ctors")  # include/zephyr/linker/sections.h
    # Zephyr 4.x links the GNU constructors into init_array only (common-rom-init.ld); 3.7 still has ctors.
    gone = {"4.1": {"ctors"}}.get(release, set())
    names = [n for n in ZEPHYR_ROM_SECTIONS.split("|") if n != ".+_area" and n not in gone]
    for name in gone:
        assert not re.search(rf"SECTION_(?:DATA_)?PROLOGUE\(\s*{name}\s*,", text), f"{name} is back in {release}"
    for name in names:
        m = re.search(rf"SECTION_(?:DATA_)?PROLOGUE\(\s*{name}\s*,.*?\}}\s*(GROUP_\w+\([^)]*\))", text, re.S)
        assert m, f"{name}: no such output section in Zephyr's linker scripts"
        assert "ROMABLE_REGION" in m.group(1) or "ROMSTART_REGION" in m.group(1), (name, m.group(1))
    init_c = (tree / "kernel/init.c").read_text()
    for sym in ("z_main_stack", "z_interrupt_stacks", "z_idle_stacks"):
        assert sym in init_c and sym in ZEPHYR_STACKS
    assert "K_HEAP_DEFINE(_system_heap" in (tree / "kernel/mempool.c").read_text()


@pytest.mark.needs_zephyr(release="3.7")
def test_real_zephyr_image(tmp_path: Path) -> None:
    """The Zephyr 3.7 image of a generated project sizes within budget, every byte named."""
    src = REAL_ZEPHYR_PROJECT
    if src is None:
        pytest.skip("ARMGEN_SIZE_ZEPHYR_PROJECT is not set: set it to a Zephyr project built by armgen "
                    "(tests/firmware/test_zephyr_firmware.py sizes its own)")
    elf, mapf = src / "build/zephyr/zephyr.elf", src / "build/zephyr/zephyr.map"
    if not ((src / "armgen.toml").is_file() and elf.is_file() and mapf.is_file()):
        pytest.skip(f"no built Zephyr project at {src} (set ARMGEN_SIZE_ZEPHYR_PROJECT to one built by armgen build)")
    proj = tmp_path / src.name  # a copy: the CLI writes the SVG next to the ELF
    (proj / "build/zephyr").mkdir(parents=True)
    shutil.copy(src / "armgen.toml", proj)
    for f in (elf, mapf):
        shutil.copy(f, proj / "build/zephyr")
    record = tomllib.loads((proj / "armgen.toml").read_text())
    code, out, err = invoke("size", str(proj), "--json")
    assert code == 0, err
    doc = json.loads(out)
    rep = doc["report"]
    assert doc["within_budget"] and rep["misplaced"] == [] and rep["attribution"] == "map"
    assert sum(c["flash"] for c in rep["components"].values()) == rep["flash"]
    assert sum(c["ram"] for c in rep["components"].values()) == rep["ram"]
    for s in rep["sections"]:
        assert sum(s["components"].values()) == s["size"], s["name"]
    comps = rep["components"]
    assert "other_libraries" not in comps  # every archive of the image has a component
    assert comps["zephyr_kernel"]["flash"] > 0 and comps["libc"]["flash"] > 0 and comps["app"]["flash"] > 0
    assert comps["model"]["flash"] == next(s["size"] for s in rep["sections"] if s["name"] == ".armgen_model")
    unattributed = comps.get("unattributed", {"flash": 0, "ram": 0})
    assert unattributed["flash"] + unattributed["ram"] < 0.01 * (rep["flash"] + rep["ram"])  # linker fill only
    stacks = {x["name"]: x for x in rep["stacks"]}
    assert {"main", "ISR", "idle"} <= set(stacks)
    assert stacks["main"]["size"] == record["memory"]["stack"]
    pools = {p["name"]: p for p in rep["pools"]}
    assert {p["name"]: (p["bytes"], p["region"]) for p in record["pools"]} == {
        n: (p["size"], p["region"]) for n, p in pools.items()}
    assert comps["pools"]["ram"] == sum(p["bytes"] for p in record["pools"])
    stack_bytes = sum(x["size"] for x in rep["stacks"])
    assert stack_bytes <= comps["stack_heap"]["ram"] < stack_bytes + 256  # + heap control blocks
    for name in ("rom_start", "sw_isr_table"):
        s = next(s for s in rep["sections"] if s["name"] == name)
        assert "W" in s["flags"] and s["role"] in ("code", "rodata") and s["flash"] == s["size"]


# ------------------------------------------------------------------------------- the JSON report's schema

def test_schema_is_draft_2020_12_and_names_what_the_code_writes() -> None:
    """The schema shipped in the package is valid 2020-12 and its enums are the code's own lists."""
    schema = report_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    defs = schema["$defs"]
    assert defs["report"]["properties"]["schema_version"] == {"const": SCHEMA_VERSION}
    assert defs["component"]["enum"] == list(COMPONENT_LABELS)
    assert {r.component for r in COMPONENT_RULES} <= set(COMPONENT_LABELS)
    assert defs["section"]["properties"]["role"]["enum"] == list(typing.get_args(Role))
    assert defs["report"]["properties"]["attribution"]["enum"] == list(typing.get_args(Attribution))
    assert defs["memory"]["enum"] == list(typing.get_args(Memory))
    assert defs["stack"]["properties"]["kind"]["enum"] == list(typing.get_args(typing.get_type_hints(StackSize)["kind"]))
    kinds = typing.get_args(typing.get_type_hints(Violation)["kind"])
    assert defs["violation"]["properties"]["kind"]["enum"] == list(kinds)
    boards = json.loads((BOARDS_DIR / "schema.json").read_text())
    board_kinds = boards["properties"]["regions"]["items"]["properties"]["kind"]["enum"]
    assert defs["region"]["properties"]["kind"]["enum"] == board_kinds
    assert report_schema() is not schema  # a fresh copy each call


def _size_json(*args: str, code: int = 0) -> dict:
    got, out, err = invoke("size", *args, "--json")
    assert got == code, err
    return json.loads(out)


def _closed_keys(doc: dict) -> None:
    """Every key the CLI writes is a required key of the schema: nothing is optional by accident."""
    defs = report_schema()["$defs"]
    assert set(doc["report"]) == set(defs["report"]["required"])
    assert set(doc["budgets"]) == set(defs["budgets"]["required"])
    for s in doc["report"]["sections"]:
        assert set(s) == set(defs["section"]["required"]), s["name"]
        for p in s["placements"]:
            assert set(p) == set(defs["placement"]["required"])
    for key, item in (("regions", "region"), ("pools", "pool"), ("stacks", "stack"), ("misplaced", "misplacement")):
        for x in doc["report"][key]:
            assert set(x) == set(defs[item]["required"]), key
    for v in doc["violations"]:
        assert set(v) == set(defs["violation"]["required"])
    if "compare" in doc:
        assert set(doc["compare"]) == set(defs["comparison"]["required"])


@needs_gcc
def test_real_reports_match_the_schema(tmp_path: Path, fw: tuple[Path, Path], board_file: Path) -> None:
    """`armgen size --json` of real ELFs: map, DWARF and symbol attribution, no board, every violation kind,
    misplaced sections, --compare, and a Zephyr-like project with stacks and heaps."""
    elf, _ = fw
    docs: dict[str, dict] = {}
    docs["board, map"] = _size_json(str(elf), "--board", str(board_file))
    docs["no board"] = _size_json(str(elf))
    r = size_elf(elf, load_board(board_file), fw[1])
    f = tmp_path / "b.toml"
    f.write_text(f'[budgets]\nflash = {r.flash - 10}\nram = 100\n[budgets.regions]\nRAM = 1000\n'
                 '[budgets.components]\napp = "1 KiB"\ncmsis_nn = { ram = 200 }\nmodel = { total = "4 KiB" }\n')
    grown, _ = build_fw(tmp_path / "grown", ro_n=1024)
    docs["over budget, compare"] = _size_json(str(grown), "--board", str(board_file), "--budget", str(f),
                                              "--compare", str(elf), code=1)
    assert {v["kind"] for v in docs["over budget, compare"]["violations"]} == {"flash", "ram", "region", "component"}
    misplaced, _ = build_fw(tmp_path / "extra", wrongplace="> EXTRA")
    docs["misplaced"] = _size_json(str(misplaced), "--board", str(board_file), code=1)
    assert docs["misplaced"]["report"]["misplaced"][0]["region"] is None
    dwarf = tmp_path / "dwarf" / "fw.elf"  # no map beside it
    dwarf.parent.mkdir()
    shutil.copy(elf, dwarf)
    docs["dwarf"] = _size_json(str(dwarf), "--board", str(board_file))
    nodebug, nodebug_map = build_fw(tmp_path / "nodebug", debug=False)
    nodebug_map.unlink()
    docs["symbols"] = _size_json(str(nodebug))
    proj = tmp_path / "zapp"
    build_zephyr_like(proj)
    (proj / "armgen.toml").write_text(ZEPHYR_RECORD.format(board=board_file, region="RAM").replace(
        "zephyr_final.map", "zephyr.map") + '\n[budgets.components]\nzephyr_kernel = "64 KiB"\n')
    docs["zephyr"] = _size_json(str(proj))
    assert {d["report"]["attribution"] for d in docs.values()} == {"map", "dwarf", "symbols"}
    assert docs["zephyr"]["report"]["stacks"] and docs["zephyr"]["report"]["pools"]
    for what, doc in docs.items():
        validate_report(doc, what)
        _closed_keys(doc)


@needs_gcc
def test_schema_rejects_renamed_missing_and_mistyped_fields(fw: tuple[Path, Path], board_file: Path) -> None:
    """The schema is not vacuous: each broken copy of a real report fails, in one line naming the field."""
    good = _size_json(str(fw[0]), "--board", str(board_file))
    validate_report(good)

    def broken(change) -> SizeError:
        doc = json.loads(json.dumps(good))
        change(doc)
        with pytest.raises(SizeError) as info:
            validate_report(doc, "base.json")
        message = info.value.message
        assert message.startswith("base.json does not match the size report schema: ") and "\n" not in message
        assert len(message) < 400, message
        return info.value

    def rename(d: dict, old: str, new: str) -> None:
        d[new] = d.pop(old)

    assert "report: missing field 'flash'" in broken(lambda d: d["report"].pop("flash")).message
    assert "(top level): missing field 'budgets'" in broken(lambda d: d.pop("budgets")).message
    e = broken(lambda d: rename(d["report"]["regions"][1], "used", "used_bytes"))
    assert "report.regions[1](RAM): " in e.message and "used" in e.message
    e = broken(lambda d: rename(d["report"], "stacks", "stack_list"))
    assert "report: " in e.message and "stack" in e.message
    assert "report.ram: is string, not integer" in broken(lambda d: d["report"].update(ram="16 KiB")).message
    e = broken(lambda d: d["report"]["sections"][0].update(size=-1))
    assert "report.sections[0](.text).size: " in e.message
    e = broken(lambda d: d["report"]["sections"][0].update(role="heap"))
    assert "report.sections[0](.text).role: value 'heap' is not one of: 'code'" in e.message
    e = broken(lambda d: d["report"]["components"].update(runtime={"flash": 1, "ram": 0}))
    assert "report.components: key 'runtime' is not one of: 'runtime_core'" in e.message
    e = broken(lambda d: d["report"]["sections"][0]["placements"][0].update(memory="rom"))
    assert "report.sections[0](.text).placements[0].memory: value 'rom' is not one of: 'flash', 'ram'" in e.message
    assert "within_budget: is string, not boolean" in broken(lambda d: d.update(within_budget="yes")).message
    assert "unknown field 'sizes'" in broken(lambda d: d["report"].update(sizes=[])).message
    assert "report.symbols: is array, not object" in broken(lambda d: d["report"].update(symbols=[])).message
    e = broken(lambda d: d["report"].update(schema_version=3))
    assert "report.schema_version: value 3 is not 2" in e.message and e.hint and "schema_version 3" in e.hint


#: Built projects to size when named (`armgen new ... && armgen build ...`; bare metal and Zephyr).
_REAL_PROJECTS = {"baremetal": "ARMGEN_SIZE_PROJECT", "zephyr": "ARMGEN_SIZE_ZEPHYR_PROJECT"}


@pytest.mark.parametrize("rtos", sorted(_REAL_PROJECTS))
def test_real_project_report_matches_the_schema(tmp_path: Path, rtos: str) -> None:
    """The report of a project armgen generated and built (bare metal, Zephyr) matches the schema."""
    var = _REAL_PROJECTS[rtos]
    if not os.environ.get(var):
        pytest.skip(f"{var} is not set: set it to a {rtos} project built by armgen (armgen new ... --rtos {rtos}, "
                    "then armgen build)")
    src = Path(os.environ[var])
    record_path = src / "armgen.toml"
    record = tomllib.loads(record_path.read_text()) if record_path.is_file() else {}
    if record.get("rtos", "baremetal") != rtos or "elf" not in record or "map" not in record:
        pytest.skip(f"{var}={src} is not an armgen {rtos} project with elf and map keys in its armgen.toml")
    if not ((src / record["elf"]).is_file() and (src / record["map"]).is_file()):
        pytest.skip(f"{var}={src} is not built (armgen build {src})")
    proj = tmp_path / src.name  # a copy: the CLI writes the SVG next to the ELF
    for rel in ("armgen.toml", record["elf"], record["map"]):
        (proj / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src / rel, proj / rel)
    doc = _size_json(str(proj))
    validate_report(doc, f"armgen size --json of {src}")
    _closed_keys(doc)
    assert doc["report"]["attribution"] == "map" and doc["report"]["board"] == record["board"]
    if rtos == "zephyr":
        assert doc["report"]["components"]["zephyr_kernel"]["flash"] > 0

"""Every NPU board's bare-metal kws image, linked, with every buffer the NPU is handed where it reaches.

For alif_e8_hp (U55-256), alif_e8_he (U55-128), corstone_300 (U55-128) and corstone_320 (U85-256):
`armgen new kws --board B --rtos baremetal`, `armgen build`, `armgen size` (exit 0), then the ELF is
read with pyelftools:

* the delegate (``EthosUBackend::execute``) and the driver (``registered_drivers``) are linked, the
  NPU's IRQ vector is ``NPU_IRQHandler``, and the NPU facts ``npu.c`` hands ``ethosu_init`` (base,
  IRQ, clock gate, secure/privileged) are the board file's;
* the remap table the firmware contains (``armgen_npu_remap``, read back from the ELF and referenced
  from code) equals :func:`armgen.boards.npu.remap_windows`;
* every buffer the NPU is given: the command stream and the weights (inside the ``.pte``'s delegate
  blob, at their addresses in the linked image), the NPU scratch (the temp pool) and, conservatively,
  the planned pools (the delegate copies inputs and outputs through the scratch with the CPU, so the
  NPU does not touch them in this ExecuTorch) resolve through that table to an address inside a
  region the board says the NPU reaches, 16-byte aligned as the driver demands.

Nothing here runs: there is no NPU model in QEMU and no FVP on this machine. The start-up steps are
cited in the board files, not tested. Marked ``workspace`` and ``slow`` (about 2.5 min per board).
Without a workspace only the bad-input tests run.
"""

from __future__ import annotations

import json
import struct
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from _narrow import present
from _programs import armgen
from armgen.boards import load_board
from armgen.boards.npu import NpuWindow, npu_windows, remap_windows

BOARDS = ["alif_e8_hp", "alif_e8_he", "corstone_300", "corstone_320"]
_VELA_HEADER = struct.Struct("<16sIB11s")  # backends/arm/arm_vela.py block header (32 bytes)


@dataclass
class Image:
    board: str
    project: Path
    elf: Path
    new_seconds: float
    build_seconds: float
    size: dict


_IMAGES: dict[str, Image] = {}


def _image(board: str, root: Path) -> Image:
    """The board's kws image, made once per session through the CLI."""
    if board not in _IMAGES:
        out = root / board
        out.mkdir(parents=True)
        t0 = time.monotonic()
        r = armgen("new", "kws", "--board", board, "--rtos", "baremetal", "--out", str(out))
        assert r.returncode == 0, r.stdout + r.stderr
        t1 = time.monotonic()
        project = out / "kws"
        r = armgen("build", str(project))
        assert r.returncode == 0, r.stdout + r.stderr
        t2 = time.monotonic()
        s = armgen("size", str(project), "--json")
        assert s.returncode == 0, s.stdout + s.stderr
        _IMAGES[board] = Image(board, project, project / "build" / "kws.elf", t1 - t0, t2 - t1, json.loads(s.stdout))
    return _IMAGES[board]


@pytest.fixture(scope="module")
def image_root(tmp_path_factory):
    """A folder for the images (its users are marked needs_workspace)."""
    return tmp_path_factory.mktemp("npu-images")


class Elf:
    """Symbols and bytes of a linked image (pyelftools)."""

    def __init__(self, path: Path):
        from elftools.elf.elffile import ELFFile

        self._f = ELFFile(path.open("rb"))
        from elftools.elf.sections import SymbolTableSection

        symtab = self._f.get_section_by_name(".symtab")
        assert isinstance(symtab, SymbolTableSection)  # a linked image has one (for mypy)
        self.symbols = {s.name: s for s in symtab.iter_symbols() if s.name}

    def address(self, name: str) -> int:
        return int(self.symbols[name]["st_value"])

    def read(self, address: int, size: int) -> bytes:
        """``size`` bytes at VMA ``address`` as the image holds them (initial values for .data)."""
        for sec in self._f.iter_sections():
            start, n = sec["sh_addr"], sec["sh_size"]
            if sec["sh_type"] != "SHT_NOBITS" and start <= address and address + size <= start + n:
                return sec.data()[address - start : address - start + size]
        raise AssertionError(f"no section holds {address:#x} + {size}")

    def words(self, name: str, count: int) -> tuple[int, ...]:
        return struct.unpack(f"<{count}I", self.read(self.address(name), 4 * count))

    def windows(self, name: str) -> list[NpuWindow]:
        """A size-0-terminated {cpu_base, size, npu_base} table of npu.c."""
        out: list[NpuWindow] = []
        addr = self.address(name)
        while True:
            cpu, size, npu = struct.unpack("<3I", self.read(addr, 12))
            if size == 0:
                return out
            out.append(NpuWindow(region="?", cpu_base=cpu, size=size, npu_base=npu))
            addr += 12

    def referenced_from_code(self, address: int) -> bool:
        """Some instruction loads ``address`` from a literal pool in .text."""
        text = present(self._f.get_section_by_name(".text")).data()
        return struct.pack("<I", address) in text


def _remap(table: list[NpuWindow], address: int) -> int:
    """``ethosu_address_remap`` of npu.c, evaluated on the table read from the ELF."""
    for w in table:
        if w.cpu_base <= address < w.cpu_base + w.size:
            return address - w.cpu_base + w.npu_base
    return address


def _blob_blocks(blob: bytes) -> dict[str, tuple[int, int]]:
    """Vela bin stream blocks: name -> (offset of the data in the blob, data bytes)."""
    out, off = {}, 0
    while off + _VELA_HEADER.size <= len(blob):
        raw, size, _, _ = _VELA_HEADER.unpack_from(blob, off)
        name = raw.split(b"\0", 1)[0].decode()
        out[name] = (off + _VELA_HEADER.size, size)
        off += _VELA_HEADER.size + (size + 15) // 16 * 16
        if name == "vela_end_stream":
            break
    return out


def _npu_buffers(elf: Elf, project: Path) -> list[tuple[str, int, int]]:
    """(what, CPU address, bytes) of everything the driver hands the NPU, plus the planned pools."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    pte = (project / "model" / "kws.pte").read_bytes()
    start = elf.address("armgen_model_pte")
    assert elf.read(start, len(pte)) == pte, "the image's .pte is not the project's"
    program = deserialize_pte_binary(pte).program
    assert program.backend_delegate_data, "no inline delegate data"
    out: list[tuple[str, int, int]] = []
    for i, data in enumerate(program.backend_delegate_data):
        blob = bytes(data.data)
        at = pte.find(blob)
        assert at >= 0 and pte.find(blob, at + 1) < 0, "delegate blob not found once in the .pte"
        blocks = _blob_blocks(blob)
        for name in ("cmd_data", "weight_data"):
            off, size = blocks[name]
            out.append((f"delegate {i} {name}", start + at + off, size))
        off, _ = blocks["scratch_size"]
        scratch = struct.unpack_from("<I", blob, off)[0]
        out.append((f"delegate {i} scratch (temp pool)", elf.address("armgen_pool_temp"), scratch))
    rec = _record(project)
    temp = next(p for p in rec["pools"] if p["name"] == "temp")
    assert max(n for w, _, n in out if "scratch" in w) <= temp["bytes"]
    for p in rec["pools"]:
        if p["name"].startswith("planned_"):
            symbol = f"armgen_pool_{p['name']}"
            out.append((f"planned pool {p['name']} (CPU-copied I/O)", elf.address(symbol), p["bytes"]))
    return out


def _record(project: Path) -> dict:
    import tomllib

    return tomllib.loads((project / "armgen.toml").read_text())


@pytest.mark.workspace
@pytest.mark.needs_workspace
@pytest.mark.slow
@pytest.mark.parametrize("board_name", BOARDS)
def test_npu_image_links_with_every_npu_buffer_where_the_npu_reaches(board_name, image_root):
    img = _image(board_name, image_root)
    board = load_board(board_name)
    npu = board.npu
    assert npu is not None
    elf = Elf(img.elf)

    # The delegate, the driver and the NPU bring-up are linked; the IRQ vector is the NPU's handler.
    nm = subprocess.run(["arm-none-eabi-nm", "-C", str(img.elf)], capture_output=True, text=True, check=True).stdout
    assert "EthosUBackend::execute" in nm and "registered_drivers" in nm
    for sym in ("NPU_IRQHandler", "armgen_npu_init", "armgen_npu_config", "armgen_npu_remap", "armgen_npu_dcache"):
        assert sym in elf.symbols, sym
    vector = elf.words("armgen_vectors", 16 + npu.irq + 1)[16 + npu.irq]
    assert vector == elf.address("NPU_IRQHandler") | 1

    # What npu.c hands ethosu_init, as the image holds it, is the board file's.
    base, irq, clk_reg, clk_bit, secure, privileged = elf.words("armgen_npu_config", 6)
    assert (base, irq) == (npu.base_address, npu.irq)
    assert (clk_reg, clk_bit) == (npu.clock_enable or (0, 0))
    assert (secure, privileged) == (int(npu.secure), int(npu.privileged))

    # The remap the firmware contains: read from the ELF, used by code, equal to the board's aliases.
    table = elf.windows("armgen_npu_remap")
    assert [(w.cpu_base, w.size, w.npu_base) for w in table] == [
        (w.cpu_base, w.size, w.npu_base) for w in remap_windows(board)
    ]
    for name in ("armgen_npu_remap", "armgen_npu_dcache", "armgen_npu_config"):
        assert elf.referenced_from_code(elf.address(name)), f"{name} is in the image but no code reads it"

    reach = npu_windows(board)
    lines = [f"{board_name}: new {img.new_seconds:.0f} s, build {img.build_seconds:.0f} s, "
             f"flash {img.size['report']['flash']} B, RAM {img.size['report']['ram']} B"]
    for what, cpu, nbytes in _npu_buffers(elf, img.project):
        assert cpu % 16 == 0, f"{what} at {cpu:#x} is not 16-byte aligned (the driver refuses it)"
        npu_addr = _remap(table, cpu)
        inside = [w for w in reach if w.npu_base <= npu_addr and npu_addr + max(nbytes, 1) <= w.npu_base + w.size]
        assert inside, f"{what}: CPU {cpu:#010x} -> NPU {npu_addr:#010x} (+{nbytes}) is in no region the NPU reaches"
        # ... and it is the region that holds the buffer on the CPU side, seen through its own alias.
        holder = next(w for w in reach if w.contains(cpu, nbytes))
        assert inside[0].region == holder.region and npu_addr == holder.to_npu(cpu)
        lines.append(f"  {what}: {nbytes} B in {holder.region}, CPU {cpu:#010x} -> NPU {npu_addr:#010x}")
    print("\n".join(lines))


# ---- bad input ----------------------------------------------------------------------------------
def _board_copy(tmp_path: Path, name: str, edit) -> Path:
    data = yaml.safe_load((Path(load_board(name).source)).read_text())
    edit(data)
    path = tmp_path / f"{name}_edited.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _one_line_error(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    errors = [line for line in r.stderr.splitlines() if line.startswith("armgen: error:")]
    assert len(errors) == 1, r.stderr
    return errors[0]


def test_npu_board_whose_pool_regions_have_no_npu_address_is_refused(tmp_path):
    def edit(d):
        for r in d["regions"]:
            if "pools" in r["uses"]:
                r["npu_address"] = None

    path = _board_copy(tmp_path, "alif_e8_hp", edit)
    r = armgen("new", "kws", "--board", str(path), "--rtos", "baremetal", "--out", str(tmp_path / "out"))
    assert "no region that holds pools has an npu_address" in _one_line_error(r)
    assert not (tmp_path / "out" / "kws").exists()


def test_npu_aliases_that_overlap_are_refused(tmp_path):
    def edit(d):
        for r in d["regions"]:
            if r["name"] == "DTCM":
                r["npu_address"] = 0x02000000  # on top of SRAM0 as the NPU sees it

    path = _board_copy(tmp_path, "alif_e8_hp", edit)
    r = armgen("new", "kws", "--board", str(path), "--rtos", "baremetal", "--out", str(tmp_path / "out"))
    line = _one_line_error(r)
    assert "overlap as the NPU sees them" in line and "DTCM" in line and "SRAM0" in line
    assert not (tmp_path / "out" / "kws").exists()


def test_caches_on_a_core_that_does_not_invalidate_them_at_reset_is_refused(tmp_path):
    def edit(d):
        d["baremetal"]["caches"] = True

    path = _board_copy(tmp_path, "nucleo_h743zi", edit)
    r = armgen("boards", "show", str(path))
    assert "baremetal.caches" in _one_line_error(r)


@pytest.mark.slow
def test_npu_pool_that_fits_no_region_the_npu_reaches_is_refused(tmp_path):
    """A Corstone-320 whose NPU-reachable RAM is 4 KiB: the 22 KB NPU scratch fits nowhere the NPU
    reaches (DTCM has room but no npu_address). One line, exit 2, no project directory."""
    from _programs import compiled

    _, pte, report_path = compiled("kws", "ethos-u85-256")
    assert report_path.parent == pte.parent

    def edit(d):
        for r in d["regions"]:
            if r["name"] == "SRAM":
                r["size"] = "4 KiB"
            if r["name"] == "DDR":
                r["npu_address"] = None
                r["uses"] = ["rodata", "data"]
            if r["name"] == "DTCM":
                r["uses"] = ["data", "pools", "stack"]
        d.pop("budgets", None)

    path = _board_copy(tmp_path, "corstone_320", edit)
    r = armgen("new", "kws", "--model", str(pte), "--board", str(path), "--rtos", "baremetal",
               "--out", str(tmp_path / "out"))
    line = _one_line_error(r)
    assert "pool temp, which the NPU reads and writes," in line, line
    assert not (tmp_path / "out" / "kws").exists()

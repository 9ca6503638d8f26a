"""How an Ethos-U NPU sees a board's memory: the address remap and the data-cache windows.

The Ethos-U driver (zephyrproject-rtos/hal_ethos_u ``src/ethosu_device_u55_u65.c`` and
``ethosu_device_u85.c``, ``ethosu_dev_run_command_stream``) passes every address it hands the NPU
through ``ethosu_address_remap(address, index)``: the command stream (index -1, QBASE) and each base
pointer (index 0.., BASEP[i]); its weak default returns the CPU address unchanged. ExecuTorch's
Ethos-U delegate (``backends/arm/runtime/EthosUBackend_Cortex_M.cpp``, ``platform_execute``) gives
the driver the command stream and three base pointers: 0 the Vela weights (both inside the ``.pte``'s
delegate blob), 1 the NPU scratch (taken from the method's temp allocator; the inputs and outputs are
copied in and out of it by the CPU, ``arm_ethos_io_memcpy``), 2 ``ethosu_fast_scratch`` (a weak null
pointer of size 0 unless the firmware defines it).

A board region whose ``npu_address`` differs from its ``base`` is seen by the NPU through an alias
(Alif Ensemble: the TCMs at their global addresses; hal_alif ``common/include/soc_memory_map.h``
``local_to_global`` and ``drivers/ethos_u/src/ethosu_callback.c`` ``ethosu_address_remap``, commit
789af97). The generated bare-metal ``npu.c`` defines ``ethosu_address_remap`` over the
:func:`remap_windows` table, so a buffer may sit in any region with an ``npu_address``.

Data cache: the driver calls ``ethosu_flush_dcache`` before it starts the NPU and
``ethosu_invalidate_dcache`` after the NPU is done, with the CPU addresses and sizes of the base
pointers. Only :func:`dcache_windows` need it: TCM is never cached (Armv8-M; hal_alif
``ethosu_callback.c``, "TCM is never cached"), and non-volatile memory (flash, MRAM) is not written
while the firmware runs (ibid., "MRAM should never change while running").
"""

from __future__ import annotations

from dataclasses import dataclass

from armgen.boards.model import Board, MemoryRegion

#: Region kinds the CPU never caches (tightly coupled memory).
TCM_KINDS: frozenset[str] = frozenset({"itcm", "dtcm"})
#: Region uses that can put a buffer the NPU reads or writes there (pools: the scratch and the
#: planned buffers; model: the ``.pte`` with the command stream and the weights).
NPU_BUFFER_USES: frozenset[str] = frozenset({"pools", "model"})


@dataclass(frozen=True)
class NpuWindow:
    """One region as the NPU sees it.

    Attributes:
        region: the board region's name.
        cpu_base: the region's CPU address. size: bytes.
        npu_base: where the NPU sees ``cpu_base`` (the region's ``npu_address``).
    """

    region: str
    cpu_base: int
    size: int
    npu_base: int

    def contains(self, cpu_address: int, nbytes: int = 1) -> bool:
        """True when ``[cpu_address, cpu_address + nbytes)`` lies inside the window (CPU side)."""
        return self.cpu_base <= cpu_address and cpu_address + max(nbytes, 1) <= self.cpu_base + self.size

    def to_npu(self, cpu_address: int) -> int:
        """The NPU address of ``cpu_address`` (which must lie in the window)."""
        return cpu_address - self.cpu_base + self.npu_base


def npu_windows(board: Board) -> tuple[NpuWindow, ...]:
    """Every region the NPU reaches (``npu_address`` set), sorted by CPU address."""
    return tuple(_window(r) for r in board.regions if r.npu_address is not None)


def remap_windows(board: Board) -> tuple[NpuWindow, ...]:
    """The regions the NPU reaches only through an alias (``npu_address != base``) and that may hold
    an NPU buffer: the table the generated ``ethosu_address_remap`` translates through. Addresses
    outside every window pass unchanged (``npu_address == base``), the null fast-scratch pointer too."""
    return tuple(
        _window(r) for r in board.regions
        if r.npu_address is not None and r.npu_address != r.base and r.uses & NPU_BUFFER_USES
    )


def dcache_windows(board: Board) -> tuple[NpuWindow, ...]:
    """The NPU-reachable regions whose NPU buffers need data-cache maintenance: RAM the CPU may cache
    (volatile, not TCM) that may hold an NPU buffer."""
    return tuple(
        _window(r) for r in board.regions
        if r.npu_address is not None and r.volatile and r.kind not in TCM_KINDS and r.uses & NPU_BUFFER_USES
    )


def npu_address(board: Board, cpu_address: int, nbytes: int = 1) -> int | None:
    """Where the NPU sees ``[cpu_address, cpu_address + nbytes)``: its address through the region that
    holds it, or None when no NPU-reachable region holds all of it."""
    for w in npu_windows(board):
        if w.contains(cpu_address, nbytes):
            return w.to_npu(cpu_address)
    return None


def _window(r: MemoryRegion) -> NpuWindow:
    assert r.npu_address is not None
    return NpuWindow(region=r.name, cpu_base=r.base, size=r.size, npu_base=r.npu_address)

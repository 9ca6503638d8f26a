"""Instructions per function of one firmware run on QEMU (where an instruction-count gap comes from).

A QEMU TCG plugin (``benchmarks/qemu_insn_plugin.c``, built here with the host's ``cc``) gives every
translated instruction its own counter, which QEMU increments only when that instruction runs, under
the same ``-icount shift=0`` as ``armgen run``. Counts per address, attributed to the ELF symbol that
holds the address, give the instructions per function for the whole run (start-up, ``load_method`` /
``AllocateTensors``, one inference).

With ``--window SYMBOL`` only what runs between the first and the second entry into SYMBOL counts:
``armgen_ticks`` for armgen's product image and ``bench_ticks_now`` for bench.py's TFLM runner bracket
the one inference their SysTick figure measures. The window's total agrees with the SysTick figure
to within one tick (kws/mps3-an547 with LTO: 1,791,680 counted, 57,334 ticks x 31.25 = 1,791,688).

An earlier version counted QEMU's ``-d exec`` log (blocks entered x their length). Under ``-icount``
QEMU enters blocks and leaves them before their first instruction when the instruction budget runs
out, and the log lists those too: it overcounted kws/an547 by 21 % and disagreed with SysTick.

Usage: ``python benchmarks/insn_profile.py ELF BOARD [--top N] [--window SYMBOL]`` (BOARD: an armgen
board with an emulator, e.g. qemu_mps2_an386).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchlib.profile import profile_elf


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("elf", type=Path)
    ap.add_argument("board")
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--window", default=None, metavar="SYMBOL",
                    help="count only between the first and second entry into SYMBOL (armgen_ticks, bench_ticks_now)")
    a = ap.parse_args()
    r = profile_elf(a.elf, a.board, window=a.window)
    print(json.dumps({"total": r["total"], "functions": dict(list(r["functions"].items())[: a.top])}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

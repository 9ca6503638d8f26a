"""Instructions per function of one firmware run on QEMU (where an instruction-count gap comes from).

QEMU logs every translated block (``-d in_asm``: its guest instructions) and every block executed
(``-d exec,nochain``: one line per execution, chaining off so none is skipped), under the same
``-icount shift=0`` as ``armgen run``. Instructions per block x executions, attributed to the ELF
symbol that holds the block's first address, give an instruction count per function for the
whole run (start-up, ``load_method`` / ``AllocateTensors``, one inference). The log of a kws run
is about 150 MB; it is written to a temporary directory and deleted.

With ``--window SYMBOL`` only the blocks executed between the first and the second entry into
SYMBOL count: ``armgen_ticks`` for armgen's product image and ``bench_ticks_now`` for bench.py's TFLM
runner bracket exactly the one inference their SysTick figure measures.

Usage: ``python benchmarks/insn_profile.py ELF BOARD [--top N] [--window SYMBOL]`` (BOARD: an armgen
board with an emulator, e.g. qemu_mps2_an386).
"""

from __future__ import annotations

import argparse
import bisect
import json
import re
import subprocess
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

_INSN = re.compile(r"0x([0-9a-f]{8}):")
_EXEC = re.compile(r"Trace \d+: 0x[0-9a-f]+ \[[0-9a-f]+/([0-9a-f]+)/")


def _symbols(elf: Path) -> tuple[list[int], list[tuple[int, int, str]]]:
    out = subprocess.run(["arm-none-eabi-nm", "-C", "-S", "--defined-only", str(elf)],
                         capture_output=True, text=True, check=True).stdout
    syms = []
    for line in out.splitlines():
        p = line.split(None, 3)
        if len(p) == 4 and p[2] in "tTwW":
            syms.append((int(p[0], 16) & ~1, int(p[1], 16), p[3]))
    syms.sort()
    return [s[0] for s in syms], syms


def profile_elf(elf: Path, board_name: str, timeout: int = 1800, window: str | None = None) -> dict[str, Any]:
    """Run ``elf`` once on ``board_name``'s QEMU machine and count instructions per function.

    ``window``: a function name; when given, only what runs between its first and second entry counts.

    Returns:
        dict: ``total`` (instructions executed, whole run), ``functions`` ({demangled name, cut at 120
        characters: instructions}, largest first), ``command`` (the QEMU argv as one string).

    Raises:
        subprocess.CalledProcessError / TimeoutExpired: QEMU or nm failed.
    """
    from armgen.boards import load_board
    from armgen.firmware.run import qemu_command

    board = load_board(board_name)
    starts, syms = _symbols(Path(elf))
    gate = None
    if window is not None:
        gate = next((a for a, _, name in syms if name == window), None)
        if gate is None:
            raise SystemExit(f"insn_profile: no function {window!r} in {elf}")
    entries = 0
    ninsn: dict[int, int] = {}
    execs: Counter[int] = Counter()
    with tempfile.TemporaryDirectory(prefix="armgen-profile-") as tmp:
        log = Path(tmp) / "qemu.log"
        cmd = qemu_command(Path(elf), board.emulator) + ["-d", "in_asm,exec,nochain", "-D", str(log)]
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout, cwd=tmp)
        cur, n = None, 0
        with log.open(errors="replace") as f:
            for line in f:
                m = _INSN.match(line)
                if m:
                    if cur is None:
                        cur = int(m.group(1), 16)
                    n += 1
                    continue
                if cur is not None:  # a block ended: a retranslation has the same length
                    ninsn[cur] = n
                    cur, n = None, 0
                m = _EXEC.match(line)
                if m:
                    pc = int(m.group(1), 16)
                    if gate is not None and pc == gate:
                        entries += 1
                    if gate is None or entries == 1:
                        execs[pc] += 1
        if cur is not None:
            ninsn[cur] = n
    per: Counter[str] = Counter()
    total = 0
    for pc, count in execs.items():
        k = ninsn.get(pc, 0) * count
        total += k
        i = bisect.bisect_right(starts, pc) - 1
        name = syms[i][2] if i >= 0 and pc < syms[i][0] + max(syms[i][1], 2) else "(no symbol)"
        per[name[:120]] += k
    return {"total": total, "functions": dict(per.most_common()),
            "command": " ".join(cmd[:-2] + ["-D", "<tmp>/qemu.log"])}


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

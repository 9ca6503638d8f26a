"""Instructions per function of one firmware run on QEMU, counted by a TCG plugin (``qemu_insn_plugin.c``).

How it counts and why (an earlier version counted QEMU's ``-d exec`` log and overcounted): see
``benchmarks/insn_profile.py``, the script around :func:`profile_elf`.
"""

from __future__ import annotations

import bisect
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from .paths import BENCH_DIR

PLUGIN_SOURCE = BENCH_DIR / "qemu_insn_plugin.c"


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


def profile_elf(elf: Path, board_name: str, timeout: int = 1800, window: str | None = None,
                splits: tuple[str, ...] = ()) -> dict[str, Any]:
    """Run ``elf`` once on ``board_name``'s QEMU machine and count instructions per function.

    ``window``: a function name; when given, only what runs between its first and second entry counts.
    ``splits``: regular expressions searched in the function names (demangled, as ``nm -C`` prints
    them); every entry into a function one matches is recorded with the number of instructions run
    before it, so the instructions between two entries can be attributed (ExecuTorch's kernel
    registration wrappers, ``kernels_to_register::{lambda``, mark each kernel call of a method).

    Returns:
        dict: ``total`` (instructions executed, whole run), ``functions`` ({demangled name, cut at 120
        characters: instructions}, largest first), ``command`` (the QEMU argv as one string),
        ``splits`` ([(function name, instructions run before this entry)], in execution order).

    Raises:
        subprocess.CalledProcessError / TimeoutExpired: QEMU or nm failed.
    """
    from armgen.boards import load_board
    from armgen.firmware.qemu import qemu_command

    emulator = load_board(board_name).emulator
    if emulator is None:
        raise SystemExit(f"insn_profile: board {board_name} has no emulator")
    starts, syms = _symbols(Path(elf))
    mark = None
    if window is not None:
        mark = next((a for a, _, name in syms if name == window), None)
        if mark is None:
            raise SystemExit(f"insn_profile: no function {window!r} in {elf}")
    split_at: dict[int, str] = {}
    for want in splits:
        found = {a: name for a, _, name in syms if re.search(want, name)}
        if not found:
            raise SystemExit(f"insn_profile: no function matches {want!r} in {elf}")
        split_at.update(found)
    if len(split_at) > 256:
        raise SystemExit(f"insn_profile: {len(split_at)} split functions, the plugin takes 256")
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise SystemExit("insn_profile: needs a host C compiler (cc) to build the QEMU plugin")
    with tempfile.TemporaryDirectory(prefix="armgen-profile-") as tmp:
        plugin, counts = Path(tmp) / "libqemu_insn_plugin.so", Path(tmp) / "counts.txt"
        subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(plugin), str(PLUGIN_SOURCE)], check=True)
        args = f"{plugin},out={counts}" + (f",mark=0x{mark:x}" if mark is not None else "")
        args += "".join(f",split=0x{a:x}" for a in split_at)
        cmd = qemu_command(Path(elf), emulator) + ["-plugin", args]
        # The exit status is the firmware's (semihosting); the plugin's file says whether it ran.
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout, cwd=tmp)
        if not counts.is_file():
            raise SystemExit(f"insn_profile: QEMU wrote no counts: {' '.join(cmd)}")
        lines = counts.read_text().splitlines()
        rows = [[int(f, 16) if i == 0 else int(f) for i, f in enumerate(line.split())]
                for line in lines if not line.startswith("split ")]
        entries = [(split_at[int(a, 16)], int(n)) for _, a, n in (line.split() for line in lines
                                                                  if line.startswith("split "))]
    per: Counter[str] = Counter()
    total = 0
    for row in rows:
        pc = row[0]
        if mark is None:
            k = row[1]
        elif len(row) >= 4:
            k = row[3] - row[2]
        else:
            raise SystemExit(f"insn_profile: {window} ran fewer than twice; no window to count")
        if not k:
            continue
        total += k
        i = bisect.bisect_right(starts, pc) - 1
        name = syms[i][2] if i >= 0 and pc < syms[i][0] + max(syms[i][1], 2) else "(no symbol)"
        per[name[:120]] += k
    return {"total": total, "functions": dict(per.most_common()), "splits": entries,
            "command": " ".join(cmd[:-1] + ["-plugin", "libqemu_insn_plugin.so,out=counts.txt"
                                            + (f",mark=0x{mark:x}" if mark is not None else "")])}

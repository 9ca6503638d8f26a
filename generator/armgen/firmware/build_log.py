"""What a failed configure or build says first: the one line ``armgen build`` puts in its error.

The build stage (:mod:`armgen.firmware.build`) tees every tool's output into ``armgen-build.log``;
these read that log back and pick the line a person needs: the first compiler error with its file
and line, a linker error, CMake's first ``CMake Error`` or Zephyr's own configure reason, west's
error line.
"""

from __future__ import annotations

import re
from pathlib import Path

_ERROR_LINE = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+)(?::\d+)?:\s+(?:fatal\s+)?error:\s+(?P<msg>.*)$")
_LD_ERROR = re.compile(r"(undefined reference to .*|region `[^']+' overflowed by \d+ bytes|cannot find .*|"
                       r"multiple definition of .*)")
_WEST_ERROR = re.compile(r"^(?:west \w+: error: |FATAL ERROR: |ERROR: )(?P<msg>.*)$")


#: Zephyr's own configure diagnostics that say more than the CMake Error after them (boards.cmake).
_ZEPHYR_CONFIGURE_ERROR = re.compile(r"^(No board named '[^']*' found\.|Board qualifiers .* not found.*)$")


def first_cmake_error(log_path: Path) -> str:
    """The first ``CMake Error`` (with the lines that explain it), else west's own error line. Zephyr's
    own reason (e.g. ``No board named 'x' found.``) comes first when it printed one."""
    text = log_path.read_text(errors="replace").splitlines()
    for line in text:
        if _ZEPHYR_CONFIGURE_ERROR.match(line.strip()):
            return line.strip()
    for i, line in enumerate(text):
        if line.startswith("CMake Error"):
            detail = " ".join(t.strip() for t in text[i + 1 : i + 4] if t.strip())
            return f"{line.strip()} {detail}".strip()
    for line in text:
        m = _WEST_ERROR.match(line.strip())
        if m:
            return m.group("msg")
    return "see the log"


def first_build_error(log_path: Path) -> str:
    """The first compiler error (``file:line: error: msg``) or linker error of a failed build."""
    lines = log_path.read_text(errors="replace").splitlines()
    for line in lines:
        m = _ERROR_LINE.match(line.strip())
        if m:
            return f"compile failed: {m.group('file')}:{m.group('line')}: {m.group('msg')}"
    for i, line in enumerate(lines):
        m = _LD_ERROR.search(line)
        if m and m.group(0).startswith("multiple definition"):
            # ld names the second file on the line before: "ld: a.o (symbol from plugin): in function `main':"
            where = re.search(r"ld: (\S+?)(?: \(symbol from plugin\))?: in function", lines[i - 1]) if i else None
            first = re.search(r"; (\S+?)(?: \(symbol from plugin\))?:", line)
            files = " and ".join(_source(g.group(1)) for g in (where, first) if g)
            return f"link failed: {m.group(0).split(';')[0]}" + (f" ({files})" if files else "")
        if m and ("ld" in line or "undefined" in line or "region" in line):
            return f"link failed: {line.strip()}"
    for line in lines:
        if line.startswith("FAILED:"):
            return f"build failed: {line[len('FAILED:'):].strip()}"
    return "build failed (see the log)"


#: ld's "undefined reference" of code that link-time optimisation produced: the line before names an ltrans object.
_LTRANS_UNDEFINED = re.compile(r"undefined reference to `(?P<symbol>[^']+)'")


def lto_undefined_symbols(log_path: Path) -> list[str]:
    """The symbols ld found undefined in link-time optimised code (``*.ltrans.o``), sorted, without repeats.

    A Zephyr image's LTO link loads from the C library only what ``ARMGEN_LTO_LIBC_SYMBOLS`` names (the
    generated CMakeLists.txt says why): a C-library function that only optimised code calls is reported
    like this. Empty when the log has none."""
    lines = log_path.read_text(errors="replace").splitlines()
    found = set()
    for i, line in enumerate(lines):
        m = _LTRANS_UNDEFINED.search(line)
        if m and (".ltrans" in line or (i and ".ltrans" in lines[i - 1])):
            found.add(m.group("symbol"))
    return sorted(found)


def _source(obj: str) -> str:
    """The source of a CMake object path (``CMakeFiles/x.dir/src/app/a.c.obj`` -> ``src/app/a.c``)."""
    m = re.search(r"CMakeFiles/[^/]+\.dir/(.+)\.obj$", obj)
    return m.group(1) if m else obj

"""The README's "Flash and watch" section: the board file's ``flash_and_watch`` facts for one project.

The facts (how to put the image on the board or into its simulator, which console to watch, the
baud rate, and the source of each) live in the board file (:class:`armgen.boards.FlashAndWatch`);
this module picks the flavour's part and fills in the image's paths. The section itself is the
partial ``templates/common/partials/flash_and_watch.md.j2``.
"""

from __future__ import annotations

from typing import Any

from armgen.boards import Board

#: Where each flavour's build puts the image (relative to the project directory).
_IMAGES = {
    "zephyr": ("build/zephyr/zephyr.elf", "build/zephyr/zephyr.bin"),
    "baremetal": ("build/{name}.elf", "build/{name}.bin"),
}


def fill(text: str | None, *, rtos: str, name: str) -> str | None:
    """Replace ``{elf}``, ``{bin}`` and ``{name}`` in a board-file command line or note.

    Plain replacement, not ``str.format``: notes may hold JSON braces.
    """
    if text is None:
        return None
    elf, binary = (p.replace("{name}", name) for p in _IMAGES[rtos])
    return text.replace("{elf}", elf).replace("{bin}", binary).replace("{name}", name)


def flash_watch_context(board: Board, rtos: str, name: str, zephyr_release: str | None = None) -> dict[str, Any] | None:
    """The template context of the "Flash and watch" section, or None when the board file has no
    ``flash_and_watch`` part for ``rtos`` (then the README has no such section).

    Args:
        board: the project's board. rtos: ``"zephyr"`` or ``"baremetal"``. name: the project name.
        zephyr_release: the project's Zephyr release name (``"3.7"``, ``"4.4"``): picks the default
            ``west flash`` runner.

    Returns:
        ``{"flash": {...}, "console": {...}, "not_checked": [...]}`` with the commands and notes filled in
        (baud is bits per second, or None where no line rate applies).
    """
    fw = board.flash_and_watch
    if fw is None:
        return None
    if rtos == "zephyr":
        flash, console = fw.zephyr_flash, fw.zephyr_console
    else:
        flash, console = fw.baremetal_flash, fw.baremetal_console
    if flash is None or console is None:
        return None
    return {
        "flash": {
            "tool": flash.tool,
            "runner": flash.runner(zephyr_release),
            "commands": [fill(c, rtos=rtos, name=name) for c in flash.commands],
            "note": fill(flash.note, rtos=rtos, name=name),
            "source": flash.source,
        },
        "console": {
            "uart": console.uart,
            "baud": console.baud,
            "where": console.where,
            "note": fill(console.note, rtos=rtos, name=name),
            "source": console.source,
        },
        "not_checked": list(fw.not_checked),
    }

"""Shared rich consoles: data to stdout, messages and progress to stderr.

On a terminal they wrap at its width, as rich does. Writing to a pipe or a file (CI logs, ``| grep``),
rich would wrap at 80 columns and split paths, hashes and command lines (``armgen workspace status``,
``armgen run``'s QEMU line); there they do not wrap at all (:class:`_UnwrappedWhenPiped`).
"""

import os

from rich.console import Console, ConsoleDimensions
from rich.measure import Measurement
from rich.table import Table

#: Columns of a console writing to a pipe or a file: no line of armgen's is that long, so none is wrapped
#: and tables take their natural width.
PIPE_WIDTH = 10_000


class _UnwrappedWhenPiped(Console):
    """A rich Console that, when its file is not a terminal, is :data:`PIPE_WIDTH` wide (tables at their
    natural width, cells unfolded) and soft-wraps (text, and table titles, are never wrapped).

    The file's own ``isatty`` decides, not rich's ``is_terminal`` (which ``FORCE_COLOR`` makes true in a CI
    log too); a width given to the console, or ``$COLUMNS``, still wins over the width.
    """

    _soft_wrap = False

    def _piped(self) -> bool:
        isatty = getattr(self.file, "isatty", None)
        try:
            return not (isatty is not None and isatty())
        except ValueError:  # a closed file
            return True

    @property
    def size(self) -> ConsoleDimensions:
        """The console's (width, height): rich's, but :data:`PIPE_WIDTH` wide when piped."""
        size = super().size
        if self._width is None and "COLUMNS" not in os.environ and self._piped():
            return ConsoleDimensions(PIPE_WIDTH, size.height)
        return size

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._width, self._height = new_size

    @property  # an attribute of rich's Console, a property here
    def soft_wrap(self) -> bool:
        """``print``'s default soft_wrap: as set, and always when piped."""
        return self._soft_wrap or self._piped()

    @soft_wrap.setter
    def soft_wrap(self, value: bool) -> None:
        self._soft_wrap = value


out_console = _UnwrappedWhenPiped(highlight=False)
err_console = _UnwrappedWhenPiped(stderr=True, highlight=False)


def print_table(table: Table, console: Console = out_console) -> None:
    """Print a table at its natural width, never cut to the terminal's (piped, the console is wide
    already: :class:`_UnwrappedWhenPiped`)."""
    width = Measurement.get(console, console.options.update_width(100_000), table).maximum
    if width <= console.width:
        console.print(table)
        return
    saved = console._width  # None = follow the terminal; restored below
    try:
        console.width = width
        console.print(table)
    finally:
        console._width = saved

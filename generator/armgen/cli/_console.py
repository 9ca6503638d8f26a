"""Shared rich consoles: data to stdout, messages and progress to stderr."""

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

out_console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


def print_table(table: Table, console: Console = out_console) -> None:
    """Print a table at its natural width, never cut to the terminal's (or, piped, rich's default 80
    columns: long layer and op names were cut there)."""
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

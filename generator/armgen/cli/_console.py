"""Shared rich consoles: data to stdout, messages and progress to stderr."""

from rich.console import Console

out_console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

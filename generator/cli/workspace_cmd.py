"""`armgen workspace` (not implemented yet)."""

from armgen.cli import main  # noqa: F401

"""Narrowing for the tests: a fact a test knows is there, as mypy sees it (not `_typing`: a stdlib module)."""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


def present(value: T | None) -> T:
    """``value``, which the test knows is set (a board's NPU, a program's reference, a regex match):
    mypy's narrowing from ``X | None`` to ``X``. A None fails the test here, as the attribute access on
    it would have a line later."""
    assert value is not None
    return value

"""Reading a project's record, ``armgen.toml`` (written by :mod:`armgen.project.render`).

One reader of the file for every later stage and command; each caller checks the keys it needs.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from armgen.errors import ArmgenError, ProjectError


def read_record(toml_path: Path, error: type[ArmgenError] = ProjectError) -> dict[str, Any]:
    """Parse ``armgen.toml`` at ``toml_path`` into a dict.

    Args:
        toml_path: the record's path.
        error: the error type to raise (``SizeError`` for ``armgen size``, whose exit-code contract
            differs; ``ProjectError`` otherwise).

    Raises:
        error: the file cannot be read, or is not valid TOML (one line naming the file).
    """
    try:
        return tomllib.loads(Path(toml_path).read_text())
    except OSError as exc:
        raise error(f"cannot read {toml_path}: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise error(f"{toml_path}: not valid TOML ({exc})") from None

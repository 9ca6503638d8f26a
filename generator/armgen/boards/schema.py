"""Board files as text: reading the YAML and checking its structure against ``boards/schema.json``.

JSON Schema 2020-12 with the ``jsonschema`` package; missing, unknown or mistyped fields are reported
with their path (``regions[2](DTCM).size``) and, where one is close, the field meant.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import json
from pathlib import Path
from typing import Any

from armgen.errors import BoardError
from armgen.paths import BOARDS_DIR

#: The board-file format this armgen writes about (``schema_version:`` in every board file): 2 adds
#: ``zephyr.devicetree`` (what each Zephyr board target's devicetree already has).
SCHEMA_VERSION = 2
#: Every format this armgen reads: a schema-1 file loads as before (its Zephyr targets have no
#: devicetree facts, so the project stage assumes the naming rule).
SCHEMA_VERSIONS = (1, 2)
SCHEMA_FILE = "schema.json"


def read_yaml(path: Path) -> Any:
    """Parse a board file (or ``aliases.yaml``) as YAML.

    Raises:
        BoardError: the file is missing or unreadable, or its YAML is invalid (with line and column).
    """
    import yaml

    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BoardError(
            f"board file not found: {path}", hint="give a built-in board name or an existing .yaml path"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BoardError(f"cannot read board file {path}: {exc}") from None
    try:
        # libyaml's parser when PyYAML was built with it (Debian's and PyPI's wheels are): the same safe
        # loader, about 10x faster on the 13 board files (0.25 -> 0.024 s), read by every armgen command.
        return yaml.load(raw, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise BoardError(f"{path}:{where}: invalid YAML: {problem}") from None


@functools.lru_cache(maxsize=1)
def _validator() -> Any:
    import jsonschema

    schema = json.loads((BOARDS_DIR / SCHEMA_FILE).read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _field_path(error: Any, data: Any) -> str:
    """``regions[2](DTCM).size`` style path of a jsonschema error."""
    parts: list[str] = []
    node = data
    for key in error.absolute_path:
        if isinstance(key, int):
            label = f"[{key}]"
            try:
                node = node[key]
                if isinstance(node, dict) and isinstance(node.get("name"), str):
                    label += f"({node['name']})"
            except (IndexError, KeyError, TypeError):
                pass
            parts.append(label)
        else:
            parts.append(("." if parts else "") + str(key))
            with contextlib.suppress(KeyError, TypeError):
                node = node[key]
    return "".join(parts)


def _describe(error: Any, data: Any) -> str:
    where = _field_path(error, data)
    prefix = f"{where}: " if where else ""
    kind = error.validator
    value = error.instance
    if kind == "required":
        missing = [f for f in error.validator_value if not isinstance(value, dict) or f not in value]
        return f"{prefix}missing field '{missing[0] if missing else '?'}'"
    if kind == "additionalProperties":
        known = sorted(error.schema.get("properties", {}))
        extra = sorted(k for k in value if k not in known)
        field = extra[0] if extra else "?"
        close = difflib.get_close_matches(field, known, n=1, cutoff=0.6)
        also = f" (did you mean '{close[0]}'?)" if close else ""
        return f"{prefix}unknown field '{field}'{also}; known fields: {', '.join(known)}"
    if kind == "type":
        want = error.validator_value
        want = " or ".join(want) if isinstance(want, list) else want
        desc = error.schema.get("description")
        return f"{prefix}expected {want}, got {type(value).__name__} {value!r}" + (f" ({desc})" if desc else "")
    if kind in ("const", "enum") and where == "schema_version":
        readable = " or ".join(str(v) for v in SCHEMA_VERSIONS)
        return f"schema_version: this armgen reads schema_version {readable}, the file has {value!r}"
    if kind == "enum":
        allowed = ", ".join("null" if v is None else str(v) for v in error.validator_value)
        close = difflib.get_close_matches(str(value), [str(v) for v in error.validator_value if v is not None], n=1)
        also = f" (did you mean '{close[0]}'?)" if close else ""
        return f"{prefix}{value!r} is not one of: {allowed}{also}"
    if kind in ("pattern", "oneOf", "minimum", "maximum"):
        desc = error.schema.get("description")
        if kind == "oneOf":
            desc = "; ".join(s.get("description", "") for s in error.schema["oneOf"] if isinstance(s, dict)) or None
            desc = desc or "an address (integer) or null"
        return f"{prefix}{value!r} is not valid" + (f": expected {desc}" if desc else f" ({error.message})")
    return f"{prefix}{error.message}"


def check_schema(data: Any, source: str) -> None:
    """Check the structure of parsed board data against ``boards/schema.json`` (any of
    :data:`SCHEMA_VERSIONS`).

    Raises:
        BoardError: not a mapping, no ``schema_version``, a missing/unknown/mistyped field (the
            first problem in the message, up to three more in the hint), or ``zephyr.devicetree`` in
            a schema-1 file.
    """
    if not isinstance(data, dict):
        raise BoardError(f"{source}: a board file must be a YAML mapping (got {type(data).__name__})")
    if "schema_version" not in data:
        raise BoardError(
            f"{source}: missing field 'schema_version'",
            hint=f"add `schema_version: {SCHEMA_VERSION}` at the top (copy a file from {BOARDS_DIR})",
        )
    errors = sorted(_validator().iter_errors(data), key=lambda e: (list(map(str, e.absolute_path)), e.validator))
    if errors:
        first = _describe(errors[0], data)
        hint = None
        if len(errors) > 1:
            hint = f"{len(errors) - 1} more problem(s): " + "; ".join(_describe(e, data) for e in errors[1:4])
        raise BoardError(f"{source}: {first}", hint=hint)
    zephyr = data.get("zephyr")
    if data["schema_version"] == 1 and isinstance(zephyr, dict) and "devicetree" in zephyr:
        raise BoardError(
            f"{source}: zephyr.devicetree needs schema_version {SCHEMA_VERSION} (the file has 1)",
            hint=f"set `schema_version: {SCHEMA_VERSION}` at the top; it reads everything version 1 does",
        )

"""The JSON Schema (draft 2020-12) of the document ``armgen size --json`` prints.

The schema file, :data:`SCHEMA_FILE`, lies in this package (the wheel carries it as package data).
It describes the whole document: ``report`` (:meth:`ElfSizeReport.to_dict`, which carries
``schema_version``), ``budgets``, ``violations``, ``within_budget``, ``svg`` and, with ``--compare``,
``compare``. Closed shapes have ``additionalProperties: false``, so a renamed, missing or mistyped
field fails :func:`validate_report`.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Mapping
from importlib import resources
from typing import Any

from armgen.errors import SizeError
from armgen.firmware.size.records import SCHEMA_VERSION

#: File name of the schema inside the ``armgen.firmware.size`` package.
SCHEMA_FILE = "size_report.schema.json"

#: Longest message :func:`validate_report` prints for one error (characters), so it stays one line.
_MAX_MESSAGE = 300


def report_schema() -> dict[str, Any]:
    """The parsed JSON Schema of ``armgen size --json`` (a fresh copy; callers may change it)."""
    return json.loads(_schema_text())


@functools.lru_cache(maxsize=1)
def _schema_text() -> str:
    return resources.files("armgen.firmware.size").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=1)
def _validator() -> Any:
    import jsonschema

    schema = json.loads(_schema_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def validate_report(doc: Mapping[str, Any], source: str = "size report") -> None:
    """Check a document of ``armgen size --json`` (parsed JSON) against :func:`report_schema`.

    Args:
        doc: the parsed document (``{"report": ..., "budgets": ..., ...}``).
        source: what the document is, for the message (a file name such as ``baseline.json``).

    Raises:
        SizeError: the document does not match the schema; one line naming the field
            (``report.sections[3](.text).role``) and what is wrong with it, for the most relevant
            error (:func:`jsonschema.exceptions.best_match`).
    """
    import jsonschema

    error = jsonschema.exceptions.best_match(_validator().iter_errors(doc))
    if error is None:
        return
    where = _field_path(error, doc)
    report = doc.get("report") if isinstance(doc, Mapping) else None
    schema_version = report.get("schema_version") if isinstance(report, Mapping) else None
    hint = None
    if isinstance(schema_version, int) and schema_version != SCHEMA_VERSION:
        hint = f"the report has schema_version {schema_version}; this armgen reads {SCHEMA_VERSION}"
    raise SizeError(f"{source} does not match the size report schema: {where or '(top level)'}: "
                    f"{_describe(error)}", hint=hint)


def _field_path(error: Any, doc: Any) -> str:
    """``report.sections[3](.text).role`` style path of a jsonschema error (list items named by ``name``)."""
    parts: list[str] = []
    node = doc
    for key in error.absolute_path:
        if isinstance(key, int):
            label = f"[{key}]"
            try:
                node = node[key]
                if isinstance(node, Mapping) and isinstance(node.get("name"), str):
                    label += f"({node['name']})"
            except (IndexError, KeyError, TypeError):
                pass
            parts.append(label)
        else:
            parts.append(("." if parts else "") + str(key))
            with contextlib.suppress(KeyError, TypeError):
                node = node[key]
    return "".join(parts)


_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object",
               type(None): "null"}


def _describe(error: Any) -> str:
    """What is wrong, in one short line (jsonschema's own message can quote a whole object)."""
    kind, value, want = error.validator, error.instance, error.validator_value
    if kind == "required":
        missing = [f for f in want if not isinstance(value, Mapping) or f not in value]
        return f"missing field '{missing[0] if missing else '?'}'"
    if kind == "additionalProperties" and isinstance(value, Mapping):
        known = set(error.schema.get("properties", {}))
        extra = sorted(k for k in value if k not in known)
        return f"unknown field '{extra[0] if extra else '?'}'"
    if kind == "type":
        wanted = " or ".join(want) if isinstance(want, list) else want
        return f"is {_JSON_TYPES.get(type(value), type(value).__name__)}, not {wanted}"
    if kind in ("enum", "const"):
        what = "key" if "propertyNames" in error.absolute_schema_path else "value"
        allowed = f"one of: {', '.join(repr(x) for x in want)}" if kind == "enum" else repr(want)
        message = f"{what} {value!r} is not {allowed}"
    else:
        message = " ".join(str(error.message).split())
    return message if len(message) <= _MAX_MESSAGE else message[: _MAX_MESSAGE - 3] + "..."

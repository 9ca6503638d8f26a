"""armgen.toml: one ProjectRecord writes and reads it, with a schema version."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import pytest

from armgen.errors import ProjectError, SizeError
from armgen.project.record import SCHEMA_VERSION, ModelEntry, PoolEntry, ProjectRecord, load_project, read_record


def _record(root: Path) -> ProjectRecord:
    return ProjectRecord(
        root=root, name="kws", board="boards/mine.yaml", rtos="baremetal", backend="cortex-m", target="cortex-m55",
        cpu="cortex-m55", elf="build/kws.elf", map="build/kws.map", armgen_version="0.1.0",
        executorch_version="1.5.1",
        model=ModelEntry(source="sample:kws", pte="model/kws.pte", sha256="ab" * 32, report="model/kws.report.json"),
        regions={"code": "ITCM", "model": "ITCM", "data": "DTCM", "stack": "DTCM"},
        memory={"stack": 8192, "heap": 0, "method_allocator_bound": 11648},
        pools=(PoolEntry("planned_1", 20464, "DTCM", ".armgen_pool.planned_1"), PoolEntry("method", 11648, "DTCM")),
        budgets={"flash": 524288, "ram": "256 KiB"},
    )


def test_round_trip(tmp_path: Path) -> None:
    rec = _record(tmp_path.resolve())
    (tmp_path / "armgen.toml").write_bytes(rec.to_toml())
    back = load_project(tmp_path)
    assert back == rec
    assert tomllib.loads(rec.to_toml().decode())["schema_version"] == SCHEMA_VERSION
    assert back.elf_path == tmp_path.resolve() / "build/kws.elf"
    assert back.board_spec == str(tmp_path.resolve() / "boards/mine.yaml")  # relative board files: from the project
    assert back.model_path("report") == tmp_path.resolve() / "model/kws.report.json"
    assert back.to_toml() == rec.to_toml()  # same record, same bytes


def test_record_without_schema_version_reads_as_version_1(tmp_path: Path) -> None:
    text = _record(tmp_path).to_toml().decode().replace(f"schema_version = {SCHEMA_VERSION}\n", "")
    (tmp_path / "armgen.toml").write_text(text)
    assert load_project(tmp_path).schema_version == 1


def test_newer_schema_is_refused_in_one_line(tmp_path: Path) -> None:
    text = _record(tmp_path).to_toml().decode().replace(f"schema_version = {SCHEMA_VERSION}", "schema_version = 99")
    (tmp_path / "armgen.toml").write_text(text)
    with pytest.raises(ProjectError, match="schema_version 99 is newer than this armgen reads") as info:
        load_project(tmp_path)
    assert "\n" not in info.value.message and "armgen new --force" in (info.value.hint or "")


def test_missing_and_mistyped_keys(tmp_path: Path) -> None:
    path = tmp_path / "armgen.toml"
    path.write_text('name = "kws"\nboard = "x"\n')
    with pytest.raises(ProjectError, match="missing key 'rtos'"):
        load_project(tmp_path)
    # armgen size reads hand-written records with fewer keys, and raises its own error type
    assert read_record(path, error=SizeError, required=()).name == "kws"
    path.write_text('name = 3\n')
    with pytest.raises(SizeError, match="'name' must be a string"):
        read_record(path, error=SizeError, required=())
    path.write_text('name = "kws"\n[[pools]]\nname = "method"\n')
    with pytest.raises(SizeError, match=r"each \[\[pools\]\] table needs a name \(string\) and bytes"):
        read_record(path, error=SizeError, required=())
    path.write_text("name = \n")
    with pytest.raises(ProjectError, match="not valid TOML"):
        read_record(path)


def test_not_a_project(tmp_path: Path) -> None:
    with pytest.raises(ProjectError, match=r"is not an armgen project \(no armgen.toml\)"):
        load_project(tmp_path)


def test_stack_is_bytes_or_auto(tmp_path: Path) -> None:
    path = tmp_path / "armgen.toml"
    rec = _record(tmp_path)
    auto = dataclasses.replace(rec, memory={**rec.memory, "stack": "auto"})
    path.write_bytes(auto.to_toml())
    back = read_record(path)
    assert back.stack_auto and back.memory["stack"] == "auto" and 'stack = "auto"' in path.read_text()
    assert not rec.stack_auto
    for bad in ('"big"', "-8", "true"):
        path.write_text(path.read_text().replace('stack = "auto"', f"stack = {bad}"))
        with pytest.raises(ProjectError, match=r"\[memory\] stack must be bytes or \"auto\""):
            read_record(path)
        path.write_bytes(auto.to_toml())

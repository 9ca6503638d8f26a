"""Golden renders: a handful of generated projects, compared file by file with committed copies.

Each case is ``armgen new`` (armgen.pipeline.new_project, in process) of a committed program fixture
(tests/data/programs: no export) for one board and RTOS. Every file the templates or armgen's Python
render is kept whole under ``tests/data/golden/<case>/`` and must match byte for byte; the files armgen
copies unchanged (the fixture's .pte, report and references; the templates' non-.j2 files), the pristine
copies under ``.armgen/base/`` and the stand-in applications under ``standin/`` are kept only as sha256 lines in ``tests/data/golden/<case>.sha256``. Together they are the project's exact file set.

A template change shows up here as a diff of generated text: review it, then rewrite the goldens with

    python -m pytest -q tests/project/test_golden.py --update-golden     (or ARMGEN_UPDATE_GOLDEN=1)

and commit them with the change. The goldens are machine-independent: the one absolute path armgen
writes, the record's ``[model] source`` (the .pte given to ``--model``, resolved so the hint of
``armgen run`` that repeats it works from any directory), is replaced by ``<fixtures>``.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import shutil
from pathlib import Path

import pytest

from _programs import FIXTURES_DIR
from armgen.paths import TEMPLATES_DIR
from armgen.pipeline import new_project

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "data" / "golden"
REPO = Path(__file__).resolve().parents[2]

#: case -> (board, rtos, Zephyr release or None, program fixture). Together they render every bare-metal
#: console driver (semihosting, cmsdk, ns16550, STM32 USART), both NPU generations, and Zephyr 3.7 and 4.4.
CASES: dict[str, tuple[str, str, str | None, str]] = {
    "kws-baremetal-qemu_mps3_an547": ("qemu_mps3_an547", "baremetal", None, "kws-cortex-m55"),
    "kws-baremetal-nucleo_f767zi": ("nucleo_f767zi", "baremetal", None, "kws-cortex-m7"),
    "kws-baremetal-alif_e8": ("alif_e8", "baremetal", None, "kws-alif_e8"),
    "kws-baremetal-corstone_320": ("corstone_320", "baremetal", None, "kws-ethos-u85-256"),
    "kws-zephyr4.4-corstone_320": ("corstone_320", "zephyr", "4.4", "kws-ethos-u85-256"),
    "kws-zephyr3.7-qemu_mps3_an547": ("qemu_mps3_an547", "zephyr", "3.7", "kws-cortex-m55"),
}

#: What stands for the program fixtures' folder in golden text.
FIXTURES_MARK = "<fixtures>"
#: Files of the first differing ones shown as a unified diff, and lines of each diff at most.
SHOW_FILES, SHOW_LINES = 3, 120


def _update() -> bool:
    return os.environ.get("ARMGEN_UPDATE_GOLDEN") == "1"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _copied_digests(fixture: str) -> set[str]:
    """sha256 of every file armgen copies into a project unchanged: the fixture's files and the templates'
    non-.j2 files."""
    sources = [p for p in (FIXTURES_DIR / fixture).iterdir() if p.is_file()]
    sources += [p for p in TEMPLATES_DIR.rglob("*") if p.is_file() and p.suffix != ".j2" and p.suffix != ".py"
                and "__pycache__" not in p.parts]
    return {_sha256(p.read_bytes()) for p in sources}


def _render(case: str, out: Path) -> dict[str, bytes]:
    board, rtos, release, fixture = CASES[case]
    made = new_project("kws", board, model=str(FIXTURES_DIR / fixture / "kws.pte"), weights=None, rtos=rtos,
                       zephyr_release=release, backend=None, out_dir=out, stack_size=None, force=False,
                       say=lambda _line: None)
    # the record holds the model's path relative to the project (schema 2): the same mark as an absolute one
    rel = os.path.relpath(FIXTURES_DIR, out / "kws").encode()
    files = {k: v.replace(rel, FIXTURES_MARK.encode()) for k, v in made.rendered.files.items()}
    # a stand-in's record holds that path too, so its digest in the project's [files] depends on where the
    # test runs (the stand-in itself is compared after the same replacement): masked
    for path in [k for k in files if k.startswith("standin/") and k.endswith("/armgen.toml")]:
        digest = hashlib.sha256(made.rendered.files[path]).hexdigest().encode()
        files["armgen.toml"] = files["armgen.toml"].replace(digest, b"<digest of a record with a relative path>")
    return files


def _split(case: str, files: dict[str, bytes]) -> tuple[dict[str, bytes], dict[str, str]]:
    """(rendered text kept whole, copied file -> sha256), machine paths replaced."""
    copied = _copied_digests(CASES[case][3])
    text, manifest = {}, {}
    for rel, data in files.items():
        # the base: a copy of a file kept whole; a stand-in: a render for its QEMU board (by sha256, the size rule)
        if _sha256(data) in copied or rel.startswith((".armgen/base/", "standin/")):
            manifest[rel] = _sha256(data)
        else:
            text[rel] = data.replace(str(FIXTURES_DIR).encode(), FIXTURES_MARK.encode())
    return text, manifest


def _read_golden(case: str) -> tuple[dict[str, bytes], dict[str, str]]:
    root = GOLDEN_DIR / case
    text = {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
    manifest_file = GOLDEN_DIR / f"{case}.sha256"
    manifest = {}
    if manifest_file.is_file():
        for line in manifest_file.read_text().splitlines():
            digest, rel = line.split("  ", 1)
            manifest[rel] = digest
    return text, manifest


def _write_golden(case: str, text: dict[str, bytes], manifest: dict[str, str]) -> None:
    root = GOLDEN_DIR / case
    shutil.rmtree(root, ignore_errors=True)
    for rel, data in text.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    (GOLDEN_DIR / f"{case}.sha256").write_text("".join(f"{d}  {rel}\n" for rel, d in sorted(manifest.items())))


def _diff(rel: str, want: bytes, got: bytes) -> str:
    lines = list(difflib.unified_diff(want.decode(errors="replace").splitlines(keepends=True),
                                      got.decode(errors="replace").splitlines(keepends=True),
                                      fromfile=f"golden/{rel}", tofile=f"rendered/{rel}"))
    more = f"... {len(lines) - SHOW_LINES} more diff lines\n" if len(lines) > SHOW_LINES else ""
    return "".join(lines[:SHOW_LINES]) + more


@pytest.mark.parametrize("case", sorted(CASES))
def test_render_matches_golden(case, tmp_path, request):
    text, manifest = _split(case, _render(case, tmp_path))
    for rel, data in text.items():  # machine-independent: no path of this checkout or of the run
        for where in (str(REPO), str(tmp_path), *([str(Path.home())] if len(Path.home().parts) > 1 else [])):
            assert where.encode() not in data, f"{rel} holds the machine path {where}"
    if _update() or request.config.getoption("--update-golden"):
        _write_golden(case, text, manifest)
    golden_text, golden_manifest = _read_golden(case)
    hint = "if the change is meant, rewrite the goldens: python -m pytest tests/project/test_golden.py --update-golden"
    assert golden_text or golden_manifest, f"no golden copy of {case}: {hint}"

    problems = []
    extra, missing = sorted(set(text) - set(golden_text)), sorted(set(golden_text) - set(text))
    if extra or missing:
        problems.append(f"rendered files not in the golden copy: {extra}; golden files not rendered: {missing}")
    if manifest != golden_manifest:
        changed = sorted(k for k in set(manifest) | set(golden_manifest) if manifest.get(k) != golden_manifest.get(k))
        problems.append(f"copied files differ from {case}.sha256 (added, removed or changed): {changed}")
    differing = [rel for rel in sorted(set(text) & set(golden_text)) if text[rel] != golden_text[rel]]
    if differing:
        problems.append(f"{len(differing)} file(s) differ: {differing}")
        problems += [_diff(rel, golden_text[rel], text[rel]) for rel in differing[:SHOW_FILES]]
    if problems:
        pytest.fail(f"{case}: render differs from tests/data/golden/{case}\n" + "\n".join(problems) + f"\n{hint}",
                    pytrace=False)


def test_every_golden_case_is_listed_and_small():
    on_disk = {p.name for p in GOLDEN_DIR.iterdir() if p.is_dir()}
    manifests = {p.name.removesuffix(".sha256") for p in GOLDEN_DIR.glob("*.sha256")}
    assert on_disk == manifests == set(CASES), "a golden copy without a case, or a case without its copy"
    total = sum(p.stat().st_size for p in GOLDEN_DIR.rglob("*") if p.is_file())
    assert total < 540_000, f"the goldens take {total} B: keep them small (fewer cases, binaries by sha256)"

"""Make the committed program fixtures: small ExecuTorch programs with their reports, so that project,
render and size tests need no export.

    python tests/data/programs/make.py           # (re)write every fixture
    python tests/data/programs/make.py KEY ...   # only these (keys: tests/_programs.py FIXTURE_PROGRAMS)

Each fixture is armgen's real compile stage (``armgen.model.compile.compile_model``: torch.export, PT2E,
ExecuTorch lowering, Vela for Ethos-U) run by ``tests/_programs.py``'s ``compile_fixture``: the recipe the
test session's compile cache uses too, with the samples' fixed-seed weights (no trained weights are looked
for, so the bytes do not depend on the machine); of its outputs the folder keeps the ``.pte``, the ``.report.json``, the
reference ``.npz`` files and Vela's summary (the ``.pt2`` programs are large and no fixture user reads them).
``tests/model/test_program_fixtures.py`` (slow tier) compiles every fixture again and fails when a byte differs from
what the pinned ExecuTorch produces now: run this script then, and commit the result with the pin change.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))  # tests/, for _programs

from _programs import FIXTURE_PROGRAMS, FIXTURE_ROLES, compile_fixture  # noqa: E402


def make(key: str, dest: Path) -> list[Path]:
    """Compile fixture ``key`` and copy the kept outputs into ``dest`` (replaced whole)."""
    with tempfile.TemporaryDirectory(prefix=f"armgen-fixture-{key}-") as tmp:
        result = compile_fixture(key, Path(tmp))
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        kept = [result.files[role] for role in FIXTURE_ROLES if role in result.files]
        for src in kept:
            shutil.copyfile(src, dest / src.name)
    return [dest / src.name for src in kept]


def main(argv: list[str]) -> int:
    keys = argv or list(FIXTURE_PROGRAMS)
    unknown = [k for k in keys if k not in FIXTURE_PROGRAMS]
    if unknown:
        print(f"unknown fixture(s) {', '.join(unknown)}; known: {', '.join(FIXTURE_PROGRAMS)}", file=sys.stderr)
        return 2
    for key in keys:
        files = make(key, HERE / key)
        print(f"{key}: " + ", ".join(f"{p.name} ({p.stat().st_size} B)" for p in files))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""ccache settings of armgen's firmware builds (armgen.firmware.compiler_cache): pure, no compiler run.

That a second project really takes its objects from the cache is checked on real builds in
test_build.py (test_kws_builds_and_runs_on_qemu).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from armgen.firmware.compiler_cache import ccache_enabled, ccache_env, ccache_launcher


def test_base_dir_is_the_project_and_the_working_directory_is_not_hashed():
    env = ccache_env({"PATH": "/usr/bin"}, Path("/work/p/kws"))
    assert env["CCACHE_BASEDIR"] == "/work/p/kws" and env["CCACHE_NOHASHDIR"] == "1"
    assert env["PATH"] == "/usr/bin"


def test_the_users_own_ccache_settings_win():
    mine = {"CCACHE_BASEDIR": "/home/me", "CCACHE_NOHASHDIR": "0"}
    env = ccache_env(mine, Path("/work/p/kws"))
    assert env["CCACHE_BASEDIR"] == "/home/me" and env["CCACHE_NOHASHDIR"] == "0"
    assert "CCACHE_BASEDIR" in mine and mine == {"CCACHE_BASEDIR": "/home/me", "CCACHE_NOHASHDIR": "0"}


@pytest.mark.parametrize("value,enabled", [("", True), ("1", True), ("0", False), ("off", False), ("No", False),
                                           ("false", False)])
def test_the_switch(value, enabled):
    assert ccache_enabled({"ARMGEN_CCACHE": value}) is enabled


def test_no_launcher_when_switched_off_or_absent(tmp_path):
    assert ccache_launcher({"ARMGEN_CCACHE": "0", "PATH": "/usr/bin"}) is None
    assert ccache_launcher({"PATH": str(tmp_path)}) is None  # nothing on this PATH
    fake = tmp_path / "ccache"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    assert ccache_launcher({"PATH": str(tmp_path)}) == fake

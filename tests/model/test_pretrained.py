"""Trained weights by default: download, verify and cache (armgen.model.pretrained), and `armgen weights`.

Every download is served from 127.0.0.1 (a thread of this process serving the MLPerf Tiny folder
ARMGEN_MLPERF_DIR names); no test reaches the network. The session runs with ARMGEN_OFFLINE=1
(tests/conftest.py); the tests that download lift it themselves.
"""

from __future__ import annotations

import functools
import http.server
import os
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from armgen.cli import main
from armgen.model import pretrained
from armgen.model.model_source import load_sample

_SITE = Path(os.environ["ARMGEN_MLPERF_DIR"]) if os.environ.get("ARMGEN_MLPERF_DIR") else None  # tests/conftest.py


def _site_dir() -> Path:
    folder = _SITE
    if folder is None or not (folder / pretrained.WEIGHTS["kws"].file).is_file():
        pytest.skip("no trained MLPerf Tiny files to serve: ARMGEN_MLPERF_DIR is not set (and no ../shared "
                    "beside the checkout); `armgen weights fetch` downloads them, then point ARMGEN_MLPERF_DIR at "
                    "its cache folder (armgen weights list shows it)")
    return folder


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Serves a folder; ``/cut/<file>`` announces the whole file but stops half-way (a dropped connection)."""

    requests: list[str] = []

    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):  # noqa: N802 - http.server's name
        type(self).requests.append(self.path)
        if self.path.startswith("/cut/"):
            data = (Path(self.directory) / self.path[len("/cut/"):]).read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        super().do_GET()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """(base URL of the real files, base URL of corrupted copies, base URL of cut-off downloads)."""
    site = _site_dir()
    root = tmp_path_factory.mktemp("mirror")
    (root / "good").symlink_to(site)
    bad = root / "bad"
    bad.mkdir()
    data = bytearray((site / pretrained.WEIGHTS["kws"].file).read_bytes())
    data[1000] ^= 0xFF  # same size, one byte off
    (bad / pretrained.WEIGHTS["kws"].file).write_bytes(bytes(data))
    (root / "cut").symlink_to(site)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Handler, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    yield f"{base}/good", f"{base}/bad", f"{base}/cut"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def online(monkeypatch, tmp_path):
    """No ARMGEN_MLPERF_DIR, downloads allowed, an empty cache of the test's own."""
    monkeypatch.delenv("ARMGEN_MLPERF_DIR", raising=False)
    monkeypatch.delenv("ARMGEN_OFFLINE", raising=False)
    monkeypatch.setenv("ARMGEN_CACHE_DIR", str(tmp_path / "cache"))
    _Handler.requests.clear()
    return tmp_path / "cache" / "weights"


def test_shipped_checksums_are_the_site_files():
    """Each file the site folder holds has the shipped size and SHA-256 (the folder may predate a sample: the
    streaming-wakeword file is newer than the site's four; tests/model/test_sww.py checks it where present)."""
    site = _site_dir()
    checked = []
    for w in pretrained.WEIGHTS.values():
        if w.sample == "sww" and not (site / w.file).is_file():
            continue
        assert (site / w.file).stat().st_size == w.size
        assert pretrained.sha256_of(site / w.file) == w.sha256
        checked.append(w.sample)
    assert {"kws", "vww", "ic", "ad"} <= set(checked)


def test_fetch_downloads_verifies_and_caches_once(server, online, monkeypatch):
    monkeypatch.setenv("ARMGEN_WEIGHTS_URL", server[0])
    path = pretrained.fetch("kws")
    assert path == online / "kws_ref_model_float32.tflite"
    assert pretrained.sha256_of(path) == pretrained.WEIGHTS["kws"].sha256
    assert sorted(p.name for p in online.iterdir()) == [path.name]  # no temporary file left
    assert pretrained.fetch("kws") == path
    assert _Handler.requests == ["/good/kws_ref_model_float32.tflite"]  # the second call used the cache


def test_sample_gets_trained_weights_by_download(server, online, monkeypatch):
    monkeypatch.setenv("ARMGEN_WEIGHTS_URL", server[0])
    src = load_sample("kws")
    assert src.weights == online / "kws_ref_model_float32.tflite" and not src.untrained
    assert not src.warnings
    assert any("downloaded trained weights" in n for n in src.notes)


def test_corrupted_download_is_refused_and_not_cached(server, online, monkeypatch):
    monkeypatch.setenv("ARMGEN_WEIGHTS_URL", server[1])
    with pytest.raises(pretrained.ChecksumMismatch, match="SHA-256 .* is not the expected"):
        pretrained.fetch("kws")
    assert not online.exists() or not any(online.iterdir())
    with pytest.raises(pretrained.ChecksumMismatch):  # a sample does not quietly fall back on a bad file
        load_sample("kws")


def test_interrupted_download_leaves_nothing(server, online, monkeypatch):
    monkeypatch.setenv("ARMGEN_WEIGHTS_URL", server[2])
    with pytest.raises(pretrained.WeightsUnavailable, match="cannot download"):
        pretrained.fetch("kws")
    assert not online.exists() or not any(online.iterdir())


def test_offline_switch_downloads_nothing_and_falls_back_loudly(server, online, monkeypatch):
    monkeypatch.setenv("ARMGEN_WEIGHTS_URL", server[0])
    monkeypatch.setenv("ARMGEN_OFFLINE", "1")
    with pytest.raises(pretrained.WeightsUnavailable, match="ARMGEN_OFFLINE"):
        pretrained.fetch("kws")
    src = load_sample("ad")
    assert src.weights is None and src.untrained
    (warning,) = src.warnings
    assert "ARMGEN_OFFLINE" in warning and "ARMGEN_MLPERF_DIR" in warning and "--weights" in warning
    assert "UNTRAINED" in warning
    assert _Handler.requests == []


def test_offline_option_downloads_nothing_and_lasts_one_command(server, online, monkeypatch):
    """`--offline` (new, compile, weights fetch) is the option form of ARMGEN_OFFLINE=1, and ends with its command."""
    monkeypatch.setenv("ARMGEN_WEIGHTS_URL", server[0])
    runner = CliRunner()
    res = runner.invoke(main, ["weights", "fetch", "--offline", "kws"])
    assert res.exit_code == 2 and "--offline: not downloading kws_ref_model_float32.tflite" in res.output
    assert _Handler.requests == [] and not pretrained.offline()
    with pretrained.offline_mode():
        src = load_sample("ad")
    assert src.untrained and "--offline" in src.warnings[0] and "UNTRAINED" in src.warnings[0]
    assert not pretrained.offline() and _Handler.requests == []
    for cmd in (["new"], ["compile"], ["weights", "fetch"]):
        assert "--offline" in runner.invoke(main, [*cmd, "--help"]).output
    res = runner.invoke(main, ["weights", "fetch", "kws"])  # the switch did not outlive its command
    assert res.exit_code == 0 and "downloaded, verified" in res.output


def test_no_network_falls_back_with_one_line(online, monkeypatch):
    monkeypatch.setenv("ARMGEN_WEIGHTS_URL", "http://127.0.0.1:9")  # discard port: connection refused
    src = load_sample("ad")
    assert src.untrained and len(src.warnings) == 1 and "\n" not in src.warnings[0]
    assert "cannot download http://127.0.0.1:9/ad01_fp32.tflite" in src.warnings[0]
    assert "ARMGEN_WEIGHTS_URL at a mirror" in src.warnings[0]  # the download failed: a mirror is a way out


def test_a_corrupt_cached_file_is_named_when_offline(online, monkeypatch):
    """A cached file whose SHA-256 is wrong is unused; offline, the fallback line says that is why."""
    monkeypatch.setenv("ARMGEN_OFFLINE", "1")
    online.mkdir(parents=True)
    (online / pretrained.WEIGHTS["kws"].file).write_bytes(b"not the MLPerf Tiny file")
    path, note = pretrained.find_weights("kws")
    assert path is None and "\n" not in note
    assert "ARMGEN_WEIGHTS_URL" not in note  # offline, a mirror would not help
    assert f"the cached {online / pretrained.WEIGHTS['kws'].file} fails its SHA-256 check; ARMGEN_OFFLINE" in note


def test_mlperf_dir_and_explicit_weights_win_over_cache_and_download(server, online, monkeypatch):
    site = _site_dir()
    monkeypatch.setenv("ARMGEN_WEIGHTS_URL", server[0])
    monkeypatch.setenv("ARMGEN_MLPERF_DIR", str(site))
    path, note = pretrained.find_weights("kws")
    assert path == site / "kws_ref_model_float32.tflite" and "ARMGEN_MLPERF_DIR" in note
    explicit, _ = pretrained.find_weights("kws", site / "kws_ref_model_float32.tflite")
    assert explicit == site / "kws_ref_model_float32.tflite"
    assert _Handler.requests == []


def test_weights_command_fetch_list_verify(server, online, monkeypatch):
    monkeypatch.setenv("ARMGEN_WEIGHTS_URL", server[0])
    runner = CliRunner()
    res = runner.invoke(main, ["weights", "fetch", "kws"])
    assert res.exit_code == 0, res.output
    assert "downloaded, verified" in res.output
    res = runner.invoke(main, ["weights", "list"])
    assert res.exit_code == 0 and "kws_ref_model_float32.tflite" in res.output and "cached" in res.output
    assert runner.invoke(main, ["weights", "verify", "kws"]).exit_code == 0
    cached = online / "kws_ref_model_float32.tflite"
    cached.write_bytes(cached.read_bytes() + b"x")
    res = runner.invoke(main, ["weights", "verify"])
    assert res.exit_code == 1 and "CHECKSUM MISMATCH" in res.output
    assert pretrained.cached("kws") is None  # a bad cached file is never used
    res = runner.invoke(main, ["weights", "fetch", "nope"])
    assert res.exit_code == 2 and "no trained weights are known for 'nope'" in res.output


def test_weights_verify_with_nothing_cached_says_so_and_exits_1(online):
    """Nothing verified is not a pass: one line naming the cache and the fetch command, exit 1; a named
    sample that is not cached fails too, while the default (every cached sample) passes with one verified."""
    runner = CliRunner()
    res = runner.invoke(main, ["weights", "verify"])
    assert res.exit_code == 1, res.output
    assert [line for line in res.output.splitlines() if "not cached" in line] == [
        f"{s}: not cached" for s in pretrained.WEIGHTS]
    assert (f"armgen: nothing verified: no trained weights are cached in {online}; `armgen weights fetch` "
            "downloads them") in res.output
    res = runner.invoke(main, ["weights", "verify", "kws"])
    assert res.exit_code == 1 and "`armgen weights fetch kws` downloads them" in res.output
    site = _site_dir()
    online.mkdir(parents=True)
    (online / pretrained.WEIGHTS["kws"].file).write_bytes((site / pretrained.WEIGHTS["kws"].file).read_bytes())
    assert runner.invoke(main, ["weights", "verify"]).exit_code == 0  # kws verified, the rest not cached
    assert runner.invoke(main, ["weights", "verify", "kws"]).exit_code == 0
    res = runner.invoke(main, ["weights", "verify", "vww"])  # kws is cached: the cache is not empty
    assert res.exit_code == 1 and "armgen: not verified: vww not cached; `armgen weights fetch vww`" in res.output
    assert "no trained weights are cached" not in res.output
    res = runner.invoke(main, ["weights", "verify", "kws", "ad"])
    assert res.exit_code == 1 and "armgen: not verified: ad not cached; `armgen weights fetch ad`" in res.output


@pytest.mark.slow
def test_new_warns_untrained_before_the_quality_line(tmp_path):
    """`armgen new` of a sample without trained weights: the UNTRAINED warning comes before the int8 quality
    note, and the note itself says the weights are untrained (its figures measure quantization only)."""
    from _programs import armgen

    (tmp_path / "empty").mkdir()
    r = armgen("new", "ad", "--board", "qemu_mps3_an547", "--rtos", "baremetal", "--offline", "--out",
               str(tmp_path), env={"ARMGEN_MLPERF_DIR": str(tmp_path / "empty"), "ARMGEN_CACHE_DIR": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    warn = next(i for i, line in enumerate(lines) if line.startswith("warning: no trained weights for 'ad'"))
    note = next(i for i, line in enumerate(lines) if line.startswith("note: int8 against the float model"))
    assert warn < note and "--offline: not downloading" in lines[warn], r.stderr
    assert lines[note].endswith("(the float model's weights are UNTRAINED: this measures quantization only)")


def test_project_record_says_untrained(tmp_path):
    from types import SimpleNamespace

    from armgen.pipeline import UNTRAINED_WEIGHTS, _weights_entry

    assert _weights_entry(SimpleNamespace(untrained_weights=True), None) == UNTRAINED_WEIGHTS
    f = tmp_path / "w.tflite"
    f.write_bytes(b"")
    assert _weights_entry(SimpleNamespace(untrained_weights=False), f) == str(f.resolve())
    assert _weights_entry(SimpleNamespace(untrained_weights=False), None) is None

"""Trained weights of the built-in samples: MLPerf Tiny's reference models, downloaded once.

As torchvision does for its models, armgen fetches the trained weights of a sample on first use from
their public home, checks them against a SHA-256 armgen ships (:data:`WEIGHTS`), and keeps them in a
cache folder. The files are MLPerf Tiny's float references (github.com/mlcommons/tiny at commit
:data:`MLPERF_TINY_COMMIT`, ``benchmark/training/*/trained_models/``, Apache-2.0), and for ``sww`` the
int8 reference (there is no float one), whose weights :mod:`armgen.model.tflite_weights` dequantizes.

Where a sample's weights come from, first match wins (:func:`find_weights`):

1. ``--weights FILE.tflite``;
2. ``$ARMGEN_MLPERF_DIR/<file>`` (a folder of the reference files);
3. the cache: ``$ARMGEN_CACHE_DIR/weights/`` (default ``$XDG_CACHE_HOME/armgen/weights/``, i.e.
   ``~/.cache/armgen/weights/``), a file whose SHA-256 is the shipped one;
4. a download from ``$ARMGEN_WEIGHTS_URL/<file>`` (a flat mirror of the files) or, unset, from
   ``raw.githubusercontent.com/mlcommons/tiny/<commit>/<upstream path>``; skipped offline: the
   commands' ``--offline`` (:func:`offline_mode`) or ``$ARMGEN_OFFLINE`` set (``1``/``true``/``yes``).

A download is written to a temporary file in the cache folder, checked, and only then renamed into
place, so the cache never holds a partial or unverified file. Nothing found: the sample falls back
to fixed-seed weights, and says why in one line.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import http.client
import os
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from armgen.errors import ModelError

#: The pinned commit of github.com/mlcommons/tiny the files come from.
MLPERF_TINY_COMMIT = "1afd2c9820f795965a6134facd0b4dfae41ef23f"
#: Default download base: the raw files of that commit.
UPSTREAM_BASE_URL = f"https://raw.githubusercontent.com/mlcommons/tiny/{MLPERF_TINY_COMMIT}"
#: Seconds before a stalled connection is given up.
TIMEOUT_S = 30.0


@dataclass(frozen=True)
class WeightsFile:
    """One trained reference file: its name, its path in mlcommons/tiny, its size (bytes) and SHA-256."""

    sample: str
    file: str
    upstream_path: str
    size: int
    sha256: str


#: The trained reference file of each sample (SHA-256 and size of the files at :data:`MLPERF_TINY_COMMIT`).
WEIGHTS: dict[str, WeightsFile] = {
    w.sample: w
    for w in (
        WeightsFile("kws", "kws_ref_model_float32.tflite",
                    "benchmark/training/keyword_spotting/trained_models/kws_ref_model_float32.tflite", 43392,
                    "e5004c6f1012246e33fa068d8488325538e0444073cd361f5a7edb40c73f12d2"),
        WeightsFile("vww", "vww_96_float.tflite",
                    "benchmark/training/visual_wake_words/trained_models/vww_96_float.tflite", 866284,
                    "115bbc094d2119561320a21f01b6500a18bea8cc8589282ab007097bec8af38c"),
        WeightsFile("ic", "pretrainedResnet.tflite",
                    "benchmark/training/image_classification/trained_models/pretrainedResnet.tflite", 318144,
                    "b5c0046d6e0328b4956afd6baa29555a29b1f1c65bdd45aaed75b7cd484d9f79"),
        WeightsFile("ad", "ad01_fp32.tflite",
                    "benchmark/training/anomaly_detection/trained_models/ad01_fp32.tflite", 1067648,
                    "c66636f4d7f8af8b10518e7be750a22c9d8d46ec97326b40b0d94c097e0aad9b"),
        # MLPerf Tiny v1.3 ships this benchmark's model as int8 only; the loader dequantizes it.
        WeightsFile("sww", "str_ww_ref_model.tflite",
                    "benchmark/training/streaming_wakeword/trained_models/str_ww_ref_model.tflite", 74520,
                    "3af8550895ba7d5c584277102b5075c52dcfa63ba9d2b2240f37c4e6abd5dd2b"),
    )
}


class WeightsUnavailable(ModelError):
    """The trained weights could not be downloaded (offline, no network, HTTP error)."""


class ChecksumMismatch(ModelError):
    """A downloaded or cached file is not the file armgen ships the SHA-256 of."""


def cache_dir() -> Path:
    """The weights cache: ``$ARMGEN_CACHE_DIR/weights``, else ``$XDG_CACHE_HOME/armgen/weights``,
    else ``~/.cache/armgen/weights`` (the folder may not exist yet)."""
    root = os.environ.get("ARMGEN_CACHE_DIR")
    if root:
        return Path(root).expanduser() / "weights"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "armgen" / "weights"


#: Set by :func:`offline_mode` (the commands' ``--offline``) for the duration of one command: a context
#: variable, so a switch is scoped to the block (and thread or task) that set it, never module state.
_OFFLINE_OPTION: contextvars.ContextVar[bool] = contextvars.ContextVar("armgen_offline_option", default=False)


def offline_reason() -> str | None:
    """Why armgen downloads nothing now: ``"--offline"``, ``"ARMGEN_OFFLINE is set"``, or None (online)."""
    if _OFFLINE_OPTION.get():
        return "--offline"
    if os.environ.get("ARMGEN_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return "ARMGEN_OFFLINE is set"
    return None


def offline() -> bool:
    """True when armgen downloads nothing: ``--offline`` (:func:`offline_mode`) or ``$ARMGEN_OFFLINE`` ``1``,
    ``true`` or ``yes``."""
    return offline_reason() is not None


@contextlib.contextmanager
def offline_mode(on: bool = True) -> Iterator[None]:
    """Within the block, download nothing when ``on`` (a command's ``--offline``); off, ``$ARMGEN_OFFLINE``
    still decides. Restored on exit, so one command's switch does not outlive it (the tests run many
    commands in one process)."""
    token = _OFFLINE_OPTION.set(_OFFLINE_OPTION.get() or on)
    try:
        yield
    finally:
        _OFFLINE_OPTION.reset(token)


def weights_url(w: WeightsFile) -> str:
    """Where ``w`` is downloaded from: ``$ARMGEN_WEIGHTS_URL/<file>`` (a flat mirror) or the pinned
    upstream raw URL."""
    base = os.environ.get("ARMGEN_WEIGHTS_URL")
    if base:
        return f"{base.rstrip('/')}/{w.file}"
    return f"{UPSTREAM_BASE_URL}/{w.upstream_path}"


def weights_file(sample: str) -> WeightsFile:
    """The :class:`WeightsFile` of a sample.

    Raises:
        ModelError: ``sample`` has no trained reference file.
    """
    if sample not in WEIGHTS:
        raise ModelError(f"no trained weights are known for '{sample}'; known: {', '.join(WEIGHTS)}")
    return WEIGHTS[sample]


def sha256_of(path: Path) -> str:
    """The SHA-256 (hex) of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


def cached_path(sample: str) -> Path:
    """Where a sample's file is (or would be) in the cache."""
    return cache_dir() / weights_file(sample).file


def cached(sample: str) -> Path | None:
    """The cached file of ``sample`` when it is there and its SHA-256 is the shipped one, else None."""
    path = cached_path(sample)
    return path if path.is_file() and sha256_of(path) == weights_file(sample).sha256 else None


def fetch(sample: str, *, force: bool = False) -> Path:
    """Download a sample's trained file into the cache (unless a verified copy is there already).

    The file is written to a temporary file beside its final place, its SHA-256 checked, then renamed:
    an interrupted or corrupted download leaves nothing in the cache.

    Returns:
        The cached file.

    Raises:
        WeightsUnavailable: offline (``--offline``, ``$ARMGEN_OFFLINE``), or the download failed (network, HTTP,
            a short file).
        ChecksumMismatch: the downloaded bytes are not the file armgen knows (nothing is cached).
        ModelError: the cache folder cannot be written.
    """
    w = weights_file(sample)
    if not force and (hit := cached(sample)) is not None:
        return hit
    url = weights_url(w)
    dest = cached_path(sample)
    if (why := offline_reason()) is not None:
        # a cached file that cached() refused is corrupt: say so, or "not downloading" hides why it is unused
        bad = f"the cached {dest} fails its SHA-256 check; " if not force and dest.is_file() else ""
        raise WeightsUnavailable(f"{bad}{why}: not downloading {w.file} from {url}")
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{w.file}.", suffix=".part", dir=dest.parent)
    except OSError as exc:
        raise ModelError(f"{dest.parent}: cannot write the weights cache ({exc.strerror})",
                         hint="set ARMGEN_CACHE_DIR to a writable folder") from exc
    tmp = Path(tmp_name)
    try:
        digest = _download(url, fd, w)
        if digest != w.sha256:
            raise ChecksumMismatch(
                f"{url}: SHA-256 {digest} is not the expected {w.sha256}; not cached",
                hint="check ARMGEN_WEIGHTS_URL, or pass --weights FILE.tflite (--offline: fixed-seed weights)",
            )
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600; a cache file is an ordinary file
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def _download(url: str, fd: int, w: WeightsFile) -> str:
    """Stream ``url`` into the open file ``fd`` (closed on return): the SHA-256 of what was read.

    Raises:
        WeightsUnavailable: the request failed, or fewer bytes than the file's size arrived.
    """
    h = hashlib.sha256()
    n = 0
    with os.fdopen(fd, "wb") as out:
        try:
            with urllib.request.urlopen(url, timeout=TIMEOUT_S) as resp:  # noqa: S310 - http(s) or file URL by choice
                for chunk in iter(lambda: resp.read(1 << 16), b""):
                    out.write(chunk)
                    h.update(chunk)
                    n += len(chunk)
        except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise WeightsUnavailable(f"cannot download {url}: {reason}") from exc
    if n != w.size:
        raise WeightsUnavailable(f"cannot download {url}: {n} of {w.size} bytes arrived")
    return h.hexdigest()


def find_weights(sample: str, explicit: Path | str | None = None) -> tuple[Path | None, str]:
    """Where a sample's trained weights are, in the order the module docstring gives.

    Returns:
        (the file, a note saying where it came from) or (None, one line saying why there is none and
        how to point armgen at local files).

    Raises:
        ModelError: an explicit file that does not exist; a download refused by its checksum.
    """
    w = weights_file(sample)
    if explicit is not None:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise ModelError(f"{path}: weights file not found")
        return path, f"using trained weights {path}"
    env = os.environ.get("ARMGEN_MLPERF_DIR")
    if env and (Path(env).expanduser() / w.file).is_file():
        path = Path(env).expanduser() / w.file
        return path, f"using trained weights {path} (MLPerf Tiny reference, ARMGEN_MLPERF_DIR)"
    if (hit := cached(sample)) is not None:
        return hit, f"using trained weights {hit} (MLPerf Tiny reference, cached)"
    stale = cached_path(sample).is_file()  # there, but cached() refused it: its SHA-256 is not the shipped one
    try:
        path = fetch(sample)
    except WeightsUnavailable as exc:
        # a mirror helps when the download failed, not when downloads are switched off
        mirror = "" if offline_reason() is not None else ", ARMGEN_WEIGHTS_URL at a mirror (a folder URL)"
        return None, (f"no trained weights for '{sample}': {exc.message}; point ARMGEN_MLPERF_DIR at a folder "
                      f"holding {w.file}{mirror}, or pass --weights FILE.tflite")
    replaced = " (replacing a cached copy that failed its SHA-256 check)" if stale else ""
    return path, f"downloaded trained weights {w.file} (MLPerf Tiny {MLPERF_TINY_COMMIT[:10]}) to {path}{replaced}"

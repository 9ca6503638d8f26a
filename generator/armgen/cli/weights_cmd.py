"""`armgen weights`: list, fetch or verify the built-in samples' trained weights (the cache of
:mod:`armgen.model.pretrained`).

``list`` (the default) shows each sample's file, where armgen would take it from and the cache folder;
``fetch [SAMPLE...]`` downloads into the cache (``--force`` again); ``verify`` checks every cached file
against the shipped SHA-256 and exits 1 when one does not match, when a named sample is not cached, or
when nothing is cached (nothing verified). Errors (offline, no network, a refused
checksum) are one line, exit 2.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from armgen.cli._console import err_console, out_console
from armgen.cli.group import main, offline_option
from armgen.model import pretrained


def _say(text: str) -> None:
    out_console.print(text, markup=False, soft_wrap=True)


def _where(sample: str) -> str:
    """Where a sample's weights would come from now (without downloading)."""
    w = pretrained.weights_file(sample)
    env = os.environ.get("ARMGEN_MLPERF_DIR")
    if env and (Path(env).expanduser() / w.file).is_file():
        return f"ARMGEN_MLPERF_DIR ({Path(env).expanduser() / w.file})"
    path = pretrained.cached_path(sample)
    if path.is_file():
        return "cached" if pretrained.cached(sample) else "cached, CHECKSUM MISMATCH (re-fetch with --force)"
    return "not cached (offline: fixed-seed weights)" if pretrained.offline() else "not cached (fetched on first use)"


def _samples(names: tuple[str, ...]) -> list[str]:
    for n in names:
        pretrained.weights_file(n)  # ModelError for an unknown name
    return list(names) or list(pretrained.WEIGHTS)


@main.group(name="weights", invoke_without_command=True)
@click.pass_context
def weights_group(ctx: click.Context) -> None:
    """List, fetch or verify the built-in samples' trained weights (MLPerf Tiny reference files).

    The cache is $ARMGEN_CACHE_DIR/weights (default $XDG_CACHE_HOME/armgen/weights, ~/.cache/armgen/weights);
    downloads come from $ARMGEN_WEIGHTS_URL/<file> or github.com/mlcommons/tiny at a pinned commit;
    `fetch --offline` or ARMGEN_OFFLINE=1 downloads nothing.
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_cmd)


@weights_group.command(name="list")
def list_cmd() -> None:
    """Each sample's file, SHA-256 and where armgen takes it from."""
    why = pretrained.offline_reason()
    _say(f"cache: {pretrained.cache_dir()}" + (f"  ({why}: no downloads)" if why else ""))
    _say(f"source: MLPerf Tiny {pretrained.MLPERF_TINY_COMMIT}")
    for sample, w in pretrained.WEIGHTS.items():
        _say(f"{sample:4} {w.file:30} {w.size:>8} B  sha256 {w.sha256[:16]}…  {_where(sample)}")
        _say(f"     {pretrained.weights_url(w)}")


@weights_group.command(name="fetch")
@click.argument("samples", nargs=-1)
@click.option("--force", is_flag=True, help="Download again even when a verified copy is cached.")
@offline_option("Download nothing: only check that SAMPLES are cached and verified; one that is not is an error "
                "(as ARMGEN_OFFLINE=1).")
def fetch_cmd(samples: tuple[str, ...], force: bool, offline: bool) -> None:
    """Download SAMPLES' trained weights into the cache (default: all of them), each checked by SHA-256."""
    with pretrained.offline_mode(offline):
        for sample in _samples(samples):
            already = not force and pretrained.cached(sample) is not None
            path = pretrained.fetch(sample, force=force)
            _say(f"{sample}: {path} ({'already cached, verified' if already else 'downloaded, verified'})")


@weights_group.command(name="verify")
@click.argument("samples", nargs=-1)
@click.pass_context
def verify_cmd(ctx: click.Context, samples: tuple[str, ...]) -> None:
    """Check the cached files against armgen's SHA-256 (default: every cached sample).

    Exit 1 when a file does not match, when a named SAMPLE is not cached, or when nothing is cached at
    all: a CI step that runs verify before an offline build means "the weights are there and good", and
    with nothing verified the build would get fixed-seed weights.
    """
    bad, missing, ok = [], [], []
    for sample in _samples(samples):
        w, path = pretrained.weights_file(sample), pretrained.cached_path(sample)
        if not path.is_file():
            missing.append(sample)
            _say(f"{sample}: not cached")
        elif pretrained.sha256_of(path) == w.sha256:
            ok.append(sample)
            _say(f"{sample}: ok {path}")
        else:
            bad.append(sample)
            _say(f"{sample}: CHECKSUM MISMATCH {path} (re-fetch with `armgen weights fetch --force {sample}`)")
    fetch = "armgen weights fetch" + "".join(f" {m}" for m in missing if samples)
    if bad:
        err_console.print(f"armgen: {len(bad)} cached file(s) do not match", highlight=False)
    # "no trained weights are cached" only when it is true: `verify vww` with kws cached names vww instead.
    if not ok and not bad and not any(pretrained.cached_path(s).is_file() for s in pretrained.WEIGHTS):
        err_console.print(f"armgen: nothing verified: no trained weights are cached in {pretrained.cache_dir()}; "
                          f"`{fetch}` downloads them", highlight=False, soft_wrap=True)
    elif samples and missing:
        err_console.print(f"armgen: not verified: {', '.join(missing)} not cached; `{fetch}` downloads "
                          f"{'it' if len(missing) == 1 else 'them'}", highlight=False, soft_wrap=True)
    if bad or not ok or (samples and missing):
        ctx.exit(1)

"""git for the workspace: remote refs, revision resolution, and the blobless, shallow, sparse checkout.

West can do neither a blobless partial clone nor a sparse checkout, and the ExecuTorch tree needs
both, so the checkout is plain git. Every failure is one :class:`~armgen.errors.WorkspaceError` line
with git's own reason.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from armgen.errors import WorkspaceError

#: Client-side upload-pack command: a blobless (``--filter=blob:none``) fetch needs the serving
#: upload-pack to allow filters; the mirrors are not modified, the option rides on the client's command.
UPLOAD_PACK = "git -c uploadpack.allowFilter=true upload-pack"

HEX40 = re.compile(r"^[0-9a-f]{40}$")
_HEX_SHORT = re.compile(r"^[0-9a-f]{7,39}$")


def _git_reason(stderr: str, returncode: int) -> str:
    """The one stderr line that says why git failed: its first ``fatal:``/``error:`` line (prefix
    dropped), else the first non-empty line; git's trailing advice ("Please make sure you have the
    correct access rights / and the repository exists.") is never it."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for ln in lines:
        for prefix in ("fatal:", "error:"):
            if ln.startswith(prefix):
                return ln[len(prefix):].strip()
    return lines[0] if lines else f"exit status {returncode}"


def run_git(args: list[str], cwd: Path | None = None, what: str | None = None, hint: str | None = None) -> str:
    """Run git, return stdout; raise WorkspaceError(hint=hint) with git's reason in one line on failure."""
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", GIT_ASKPASS="echo", LC_ALL="C")
    cmd = ["git", "-c", "advice.detachedHead=false", *args]
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise WorkspaceError("git not found", hint="install git (Debian: apt-get install git)") from exc
    if proc.returncode != 0:
        reason = _git_reason(proc.stderr, proc.returncode)
        raise WorkspaceError(f"{what or 'git ' + args[0]} failed: {reason}", hint=hint)
    return proc.stdout


def remote_refs(url: str) -> dict[str, str]:
    """Return ``{ref: commit}`` of a remote (``git ls-remote``; annotated tags peeled).

    Raises:
        WorkspaceError: the remote cannot be reached or is not a git repository.
    """
    out = run_git(
        ["ls-remote", "--upload-pack", UPLOAD_PACK, url],
        what=f"reading {url}",
        hint="check the URL; with --mirror, check that the template's {owner}/{name} give an existing "
        "repository (e.g. 'file:///srv/mirrors/{owner}+{name}/repo')",
    )
    refs: dict[str, str] = {}
    for line in out.splitlines():
        sha, _, ref = line.partition("\t")
        if ref.endswith("^{}"):
            refs[ref[:-3]] = sha  # the peeled commit wins over the tag object
        else:
            refs.setdefault(ref, sha)
    return refs


@dataclass(frozen=True)
class ResolvedRevision:
    """A requested revision and the commit it names."""

    requested: str
    commit: str
    kind: str  # "tag" | "branch" | "commit"


def resolve_revision(name: str, url: str, revision: str, refs: Mapping[str, str] | None = None) -> ResolvedRevision:
    """Resolve ``revision`` (tag, branch or 40-hex commit) of project ``name`` at ``url``.

    A full commit id is taken as is (the fetch checks it exists). Tags and branches are looked up with
    ``git ls-remote``.

    Raises:
        WorkspaceError: the revision is neither a tag nor a branch of the remote (nor a full commit
            id); the hint suggests ``--revision name=<branch-or-commit>`` and lists the branch heads
            when there are few (else ``main``/``master`` and the count).
    """
    if HEX40.match(revision):
        return ResolvedRevision(revision, revision, "commit")
    refs = remote_refs(url) if refs is None else refs
    for prefix, kind in (("refs/tags/", "tag"), ("refs/heads/", "branch")):
        if prefix + revision in refs:
            return ResolvedRevision(revision, refs[prefix + revision], kind)
    if _HEX_SHORT.match(revision):
        tips = {sha for sha in refs.values() if sha.startswith(revision)}
        if len(tips) == 1:
            return ResolvedRevision(revision, tips.pop(), "commit")
        raise WorkspaceError(
            f"{name}: abbreviated commit {revision} cannot be fetched from {url}; give all 40 hex digits"
        )
    heads = sorted(r[len("refs/heads/"):] for r in refs if r.startswith("refs/heads/"))
    if len(heads) <= 8:
        seen = f"branches seen: {', '.join(heads) or 'none'}"
    else:
        common = [h for h in ("main", "master") if h in heads]
        seen = f"{len(heads)} branches seen, incl. {', '.join(common) or heads[0]}"
    example = ("main" if "main" in heads else heads[0]) if heads else "<commit>"
    raise WorkspaceError(
        f"{name}: revision {revision} is not in {url} ({seen})",
        hint=f"pass --revision {name}=<branch-or-commit>, e.g. --revision {name}={example}",
    )


def head_commit(checkout: Path) -> str | None:
    """Return the commit checked out in ``checkout`` (40 hex), or None when it is not a git checkout."""
    if not (checkout / ".git").exists():
        return None
    head = checkout / ".git" / "HEAD"
    try:
        text = head.read_text().strip()
    except OSError:
        text = ""
    if HEX40.match(text):
        return text
    try:
        return run_git(["rev-parse", "HEAD"], cwd=checkout).strip() or None
    except WorkspaceError:
        return None


def fetch_and_checkout(repo: Path, url: str, commit: str, sparse: tuple[str, ...] | None, name: str) -> None:
    """Blobless, shallow fetch of one commit into an initialised repo, then (sparse) checkout."""
    if _has_origin(repo):
        run_git(["remote", "set-url", "origin", url], cwd=repo)
    else:
        run_git(["remote", "add", "origin", url], cwd=repo)
    # Lazy blob fetches during checkout go through the remote's config, so the option lives there too.
    run_git(["config", "remote.origin.uploadpack", UPLOAD_PACK], cwd=repo)
    run_git(
        ["fetch", "--quiet", "--no-tags", "--filter=blob:none", "--depth", "1", "origin", commit],
        cwd=repo,
        what=f"{name}: fetching {commit[:12]} from {url}",
    )
    if sparse:
        run_git(["sparse-checkout", "set", "--no-cone", *sparse], cwd=repo, what=f"{name}: sparse-checkout")
    run_git(["checkout", "--quiet", "--detach", commit], cwd=repo, what=f"{name}: checkout {commit[:12]}")
    # west's convention: refs/heads/manifest-rev marks the manifest's revision.
    run_git(["update-ref", "refs/heads/manifest-rev", commit], cwd=repo)


def _has_origin(repo: Path) -> bool:
    return "origin" in run_git(["remote"], cwd=repo).split()


def clone_into(dest: Path, url: str, commit: str, sparse: tuple[str, ...] | None, name: str) -> None:
    """Make ``dest`` a checkout of ``commit``: built under a temporary name, then renamed in place.

    A failure leaves no directory that could later pass for a complete project.
    """
    tmp = dest.parent / f".{dest.name}.armgen-tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        run_git(["init", "--quiet", str(tmp)])
        fetch_and_checkout(tmp, url, commit, sparse, name)
        if dest.exists():
            if dest.is_dir() and not any(dest.iterdir()):
                dest.rmdir()  # the empty directory an unpopulated submodule (gitlink) leaves
            else:
                raise WorkspaceError(
                    f"{dest} exists and is not a git checkout",
                    hint="move it away, then run `armgen workspace init` again",
                )
        tmp.rename(dest)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)

"""The pinned corpus (bench/ecosystem.toml): reading it, finding each snapshot in the cache
folder, and laying a repository's pinned paths out as plain files to run xla2tpu on."""

from __future__ import annotations

import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

KINDS = ("tpu", "control")
SOURCE_SUFFIXES = (".py", ".ipynb")


class CorpusError(Exception):
    """The corpus list itself is wrong (not a missing snapshot: that is reported per repo)."""


@dataclass(frozen=True)
class Repo:
    name: str  # owner/name
    commit: str
    kind: str  # "tpu" or "control"
    paths: tuple[str, ...]

    @property
    def slug(self) -> str:
        return self.name.replace("/", "+")


def load(path: Path) -> list[Repo]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CorpusError(f"{path}: {exc}") from None
    repos: list[Repo] = []
    for index, entry in enumerate(data.get("repo", [])):
        where = f"{path}: repo #{index + 1}"
        unknown = set(entry) - {"name", "commit", "kind", "paths"}
        if unknown:
            raise CorpusError(f"{where}: unknown keys {sorted(unknown)}")
        name, commit, kind, paths = entry.get("name"), entry.get("commit"), entry.get("kind"), entry.get("paths")
        if not isinstance(name, str) or name.count("/") != 1:
            raise CorpusError(f"{where}: `name` must be owner/name")
        if not isinstance(commit, str) or len(commit) != 40 or any(c not in "0123456789abcdef" for c in commit):
            raise CorpusError(f"{where} ({name}): `commit` must be a full 40-hex commit")
        if kind not in KINDS:
            raise CorpusError(f"{where} ({name}): `kind` must be one of {KINDS}")
        if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
            raise CorpusError(f"{where} ({name}): `paths` must be a non-empty list of strings")
        repos.append(Repo(name, commit, kind, tuple(paths)))
    names = [r.name for r in repos]
    if len(set(names)) != len(names):
        raise CorpusError(f"{path}: a repository is listed twice")
    return repos


def git_dir(cache: Path, repo: Repo) -> Path | None:
    """The snapshot's git directory in the cache, in any of the layouts a person may keep."""
    owner, name = repo.name.split("/")
    for base in (cache / repo.slug / "repo", cache / repo.slug, cache / owner / name):
        for candidate in (base / ".git", base):
            if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
                return candidate
    return None


def _git(gitdir: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", f"--git-dir={gitdir}", *args], capture_output=True, check=False)


def extract(gitdir: Path, repo: Repo, dest: Path) -> list[str]:
    """Write the .py/.ipynb (and .gitignore) files under the pinned paths at the pinned commit
    into `dest`, read blob by blob: a snapshot lacks its largest files, and those are never
    sources. Returns the problems (commit absent, paths not in it, sources the snapshot lacks);
    what can be had is extracted all the same."""
    if _git(gitdir, "cat-file", "-e", f"{repo.commit}^{{commit}}").returncode != 0:
        return [f"commit {repo.commit} is not in the snapshot at {gitdir}"]
    problems, present = [], []
    for path in repo.paths:
        spec = "" if path == "." else path.rstrip("/")
        if spec and _git(gitdir, "cat-file", "-e", f"{repo.commit}:{spec}").returncode != 0:
            problems.append(f"path {path!r} is not in commit {repo.commit[:12]}")
        else:
            present.append(spec or ".")
    if not present:
        return problems
    listing = _git(gitdir, "ls-tree", "-r", "-z", "--full-tree", repo.commit, "--", *present)
    if listing.returncode != 0:
        return problems + [f"git ls-tree failed: {listing.stderr.decode(errors='replace').strip()}"]
    wanted: list[tuple[str, str]] = []
    for entry in listing.stdout.split(b"\0"):
        if not entry:
            continue
        meta, _, name = entry.decode("utf-8", "surrogateescape").partition("\t")
        mode, kind, sha = meta.split()
        if kind == "blob" and mode != "120000" and name.endswith((*SOURCE_SUFFIXES, ".gitignore")):
            wanted.append((sha, name))
    batch = subprocess.run(["git", f"--git-dir={gitdir}", "cat-file", "--batch"], capture_output=True, check=False,
                           input=b"".join(f"{sha}\n".encode() for sha, _ in wanted))
    stream, offset = batch.stdout, 0
    for sha, name in wanted:
        header_end = stream.index(b"\n", offset)
        header = stream[offset:header_end].split()
        offset = header_end + 1
        if header[-1] == b"missing":
            problems.append(f"{name}: not in the snapshot")
            continue
        size = int(header[2])
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(stream[offset:offset + size])
        offset += size + 1  # the blob, then the newline git puts after it
    return problems

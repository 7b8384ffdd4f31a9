"""The pinned corpus (bench/ecosystem.toml): reading it, finding each snapshot in the cache
folder, and laying a repository's pinned paths out as plain files to run xla2tpu on.

The layout keeps the repository's package structure, so that relative imports resolve as they
do in the repository (`from ...utils import is_torch_xla_available` in
src/diffusers/pipelines/flux/x.py is diffusers.utils.is_torch_xla_available). Besides the
sources under the pinned paths, `extract` writes, when the commit has them:
  - the `__init__.py` of every folder on the way from the repository root to each file written;
  - for each relative import in a .py file under the pinned paths (`from .x import a`,
    `from ..x.y import b`, `from .. import c`), the module it names (x.py, or the package's
    x/__init__.py) and the names imported from a package when they are its submodules
    (c.py or c/__init__.py beside it). One level only: what those files import in turn is not
    followed, and notebooks (no package to be relative to) are not read for imports.
Nothing else outside the pinned paths is written."""

from __future__ import annotations

import ast
import posixpath
import subprocess
import sys
import tempfile
import tomllib
import warnings
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


def _blobs(listing: bytes) -> dict[str, str]:
    """name -> sha of the files (not symlinks, not submodules) in `git ls-tree -r -z` output."""
    blobs = {}
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        meta, _, name = entry.decode("utf-8", "surrogateescape").partition("\t")
        mode, kind, sha = meta.split()
        if kind == "blob" and mode != "120000":
            blobs[name] = sha
    return blobs


def _read(gitdir: Path, wanted: list[tuple[str, str]], problems: list[str]) -> dict[str, bytes]:
    """The blobs `wanted` (sha, name), read in one `git cat-file --batch`; those the snapshot
    lacks are named in `problems`."""
    batch = subprocess.run(["git", f"--git-dir={gitdir}", "cat-file", "--batch"], capture_output=True, check=False,
                           input=b"".join(f"{sha}\n".encode() for sha, _ in wanted))
    stream, offset, data = batch.stdout, 0, {}
    for sha, name in wanted:
        header_end = stream.index(b"\n", offset)
        header = stream[offset:header_end].split()
        offset = header_end + 1
        if header[-1] == b"missing":
            problems.append(f"{name}: not in the snapshot")
            continue
        size = int(header[2])
        data[name] = stream[offset:offset + size]
        offset += size + 1  # the blob, then the newline git puts after it
    return data


def _module_files(dotted: str) -> tuple[str, str]:
    """The two files a module path (a/b/c, "" for the root) may be: c.py or c/__init__.py."""
    return f"{dotted}.py", posixpath.join(dotted, "__init__.py")


def relative_targets(name: str, source: bytes) -> set[str]:
    """The files the relative imports of the .py file `name` (a path in the repository) may
    name: the imported module as a file and as a package, and each imported name as a
    submodule of it. Only candidates: the caller keeps those the commit has. A file that does
    not parse names none."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning and the like, of the repository's code
            tree = ast.parse(source, filename=name)
    except (SyntaxError, ValueError):
        return set()
    folder = posixpath.dirname(name).split("/") if posixpath.dirname(name) else []
    candidates: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or not node.level or node.level - 1 > len(folder):
            continue  # absolute, or above the repository root
        package = folder[:len(folder) - (node.level - 1)]
        module = "/".join([*package, *(node.module.split(".") if node.module else [])])
        if node.module:
            candidates.update(_module_files(module))
        for alias in node.names:
            if alias.name != "*":
                candidates.update(_module_files(posixpath.join(module, alias.name)))
    return candidates


def _ancestor_inits(name: str) -> list[str]:
    parts = name.split("/")[:-1]
    return [posixpath.join(*parts[:depth], "__init__.py") for depth in range(len(parts) + 1)]


def extract(gitdir: Path, repo: Repo, dest: Path) -> list[str]:
    """Write the .py/.ipynb (and .gitignore) files under the pinned paths at the pinned commit
    into `dest`, read blob by blob: a snapshot lacks its largest files, and those are never
    sources. With them, what keeps the package structure (module docstring): the ancestor
    folders' `__init__.py` and the targets of the relative imports, when the commit has them.
    Returns the problems (commit absent, paths not in it, sources the snapshot lacks); what can
    be had is extracted all the same."""
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
    everything = _git(gitdir, "ls-tree", "-r", "-z", "--full-tree", repo.commit)
    for done in (listing, everything):
        if done.returncode != 0:
            return problems + [f"git ls-tree failed: {done.stderr.decode(errors='replace').strip()}"]
    pinned = {name: sha for name, sha in _blobs(listing.stdout).items()
              if name.endswith((*SOURCE_SUFFIXES, ".gitignore"))}
    files = _read(gitdir, [(sha, name) for name, sha in pinned.items()], problems)
    blobs = _blobs(everything.stdout)
    extra = set()
    for name, data in files.items():
        if name.endswith(".py"):
            extra.update(target for target in relative_targets(name, data) if target in blobs)
    for name in [*files, *extra]:
        extra.update(init for init in _ancestor_inits(name) if init in blobs)
    extra -= pinned.keys()
    files.update(_read(gitdir, [(blobs[name], name) for name in sorted(extra)], problems))
    for name, data in files.items():
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    length = configured(gitdir, repo.commit)
    if length is not None:  # the repository's line length, without its other settings
        (dest / ".ruff.toml").write_text(f"line-length = {length}\n", encoding="utf-8")
    return problems


def configured(gitdir: Path, commit: str) -> int | None:
    """The line length the repository's root configuration sets, or None. The extraction
    keeps the sources only (a pyproject.toml would also bring pins and a project root), so
    this length is handed on alone, as a `.ruff.toml` at the extracted root."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from xla2tpu.project.line_length import CONFIG_FILES, LineLengths

    with tempfile.TemporaryDirectory() as folder:
        for name in CONFIG_FILES:
            shown = _git(gitdir, "show", f"{commit}:{name}")
            if shown.returncode == 0:
                (Path(folder) / name).write_bytes(shown.stdout)
        return LineLengths().said(folder)

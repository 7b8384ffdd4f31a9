"""Changed files that were clean under their repository's formatter before `fix` and are
not after, over the ecosystem corpus (issue 34).

    .venv/bin/python bench/formatter_clean.py --cache DIR --work WORK [--tools BIN] [--show]

Each repository's formatter is the one it enforces, read at the pinned commit: the
pre-commit hook first (ruff-format, black, yapf), else the configuration section
(`[tool.ruff.format]`, `[tool.black]`, `.style.yapf` / `[tool.yapf]` / setup.cfg `[yapf]`);
a repository with none has no formatter to break. Its configuration files are copied next
to the files, so the formatter reads the repository's own settings (line length, quotes,
yapf's indentation). Every changed `.py` file of an ecosystem run (WORK/src: before,
WORK/fixed: after `fix --unsafe-fixes`, as bench/ecosystem.py leaves them) is checked
before and after with the same formatter release; the count that matters is the files
clean before and not after. `--tools` is a folder holding `ruff`, `black` and `yapf`
(`python -m venv F && F/bin/pip install ruff black yapf`); the releases are printed, as a
repository may pin another one (so "clean before" is measured, not taken from its CI).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ecosystem_corpus import git_dir, load

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "bench" / "ecosystem.toml"
CONFIGS = ("pyproject.toml", "ruff.toml", ".ruff.toml", "setup.cfg", ".style.yapf", ".pre-commit-config.yaml")
# What each formatter prints for a file it would change, and the command that checks a folder.
REFORMAT = {
    "ruff": (re.compile(r"^Would reformat: (.+)$", re.M), ["format", "--check", "--no-cache"]),
    "black": (re.compile(r"^would reformat (.+)$", re.M), ["--check", "--quiet"]),
    "yapf": (re.compile(r"^--- (.+?)\s+\(original\)$", re.M), ["--diff", "--recursive"]),
}


def formatter(configs: dict[str, str]) -> str | None:
    """The formatter the repository enforces, from its configuration files' texts."""
    hooks = configs.get(".pre-commit-config.yaml", "")
    pyproject = configs.get("pyproject.toml", "")
    if "ruff-format" in hooks:
        return "ruff"
    if re.search(r"id:\s*black\b", hooks) and "[tool.black]" in pyproject:
        return "black"
    if re.search(r"id:\s*yapf\b", hooks) or ".style.yapf" in configs or "[tool.yapf]" in pyproject \
            or "[yapf]" in configs.get("setup.cfg", ""):
        return "yapf"
    if "[tool.ruff.format]" in pyproject:
        return "ruff"
    if "[tool.black]" in pyproject or re.search(r"id:\s*black\b", hooks):
        return "black"
    return None


def _configs(gitdir: Path, commit: str) -> dict[str, str]:
    found = {}
    for name in CONFIGS:
        shown = subprocess.run(["git", f"--git-dir={gitdir}", "show", f"{commit}:{name}"], capture_output=True)
        if shown.returncode == 0:
            found[name] = shown.stdout.decode("utf-8", "replace")
    return found


def unclean(tool: Path, kind: str, root: Path) -> set[str] | None:
    """The files under `root` the formatter would change (paths relative to it), or None
    when it cannot run on the repository's configuration."""
    pattern, arguments = REFORMAT[kind]
    run = subprocess.run([str(tool), *arguments, "."], cwd=root, capture_output=True, text=True)
    if run.returncode not in (0, 1):  # 1: some file would change; anything else: it could not run
        return None
    names = set()
    for match in pattern.finditer(run.stdout + run.stderr):
        path = Path(match.group(1).strip())
        names.add((path if not path.is_absolute() else path.relative_to(root)).as_posix().removeprefix("./"))
    return names


def changed(src: Path, fixed: Path) -> list[str]:
    return sorted(p.relative_to(fixed).as_posix() for p in fixed.rglob("*.py")
                  if p.is_file() and (src / p.relative_to(fixed)).read_bytes() != p.read_bytes())


def measure(kind: str, tool: Path, configs: dict[str, str], src: Path, fixed: Path,
            names: list[str]) -> tuple[set[str], set[str]] | None:
    """The changed files the formatter would change before, and after `fix`."""
    results = []
    for side in (src, fixed):
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            for name, text in configs.items():
                (root / name).write_text(text, encoding="utf-8")
            for name in names:
                (root / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(side / name, root / name)
            found = unclean(tool, kind, root)
            if found is None:
                return None
            results.append(found & set(names))
    return results[0], results[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, required=True, help="folder holding the repositories' snapshots")
    parser.add_argument("--work", type=Path, required=True, help="an ecosystem run's folder")
    parser.add_argument("--tools", type=Path, help="folder holding ruff, black and yapf (default: PATH)")
    parser.add_argument("--show", action="store_true", help="name each file clean before and not after")
    args = parser.parse_args()
    tools = {}
    for kind in REFORMAT:
        found = shutil.which(kind, path=str(args.tools) if args.tools else None)
        if found is None:
            print(f"{kind}: not found", file=sys.stderr)
            return 2
        version = subprocess.run([found, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
        print(f"{kind}: {version}")
        tools[kind] = Path(found)
    totals = [0, 0, 0]
    print("| repository | formatter | changed .py files | clean before | clean before, not after |")
    print("|---|---|---|---|---|")
    for repo in load(CORPUS):
        gitdir = git_dir(args.cache, repo)
        src, fixed = args.work / "src" / repo.slug, args.work / "fixed" / repo.slug
        if gitdir is None or not fixed.is_dir():
            continue
        configs = _configs(gitdir, repo.commit)
        kind = formatter(configs)
        names = changed(src, fixed)
        if kind is None or not names:
            continue
        result = measure(kind, tools[kind], configs, src, fixed, names)
        if result is None:
            print(f"| {repo.name} | {kind}: cannot read the repository's configuration | {len(names)} | | |")
            continue
        before, after = result
        clean = [n for n in names if n not in before]
        broken = [n for n in clean if n in after]
        totals = [totals[0] + len(names), totals[1] + len(clean), totals[2] + len(broken)]
        print(f"| {repo.name} | {kind} | {len(names)} | {len(clean)} | {len(broken)} |")
        for name in broken if args.show else []:
            print(f"|  | {name} | | | |")
    print(f"| total | | {totals[0]} | {totals[1]} | {totals[2]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""One repository of the corpus through xla2tpu as a user runs it: `check`, then
`fix --unsafe-fixes` on a copy, then `fix` once more on a copy of that (idempotency), each a
whole process; every file's facts before and after, and the diffs, kept for review."""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import shutil
from collections.abc import Sequence
from pathlib import Path

from ecosystem_corpus import SOURCE_SUFFIXES, Repo, extract
from ecosystem_facts import code_of, facts
from measure import ContenderFailed, run_once

INTERNAL = "internal error"


def _sources(root: Path) -> dict[str, bytes]:
    files = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in SOURCE_SUFFIXES:
            files[path.relative_to(root).as_posix()] = path.read_bytes()
    return files


def _tool(xla2tpu: Sequence[str], command: str, cwd: Path, report: Path, timeout: float) -> dict:
    """Run one xla2tpu command over `cwd` and read its JSON report."""
    argv = [*xla2tpu, command, "--unsafe-fixes", "--no-cache", "--output-format", "json",
            "--output-file", str(report), "."]
    report.unlink(missing_ok=True)
    try:
        sample = run_once(argv, cwd, ok_codes=(0, 1, 2), timeout=timeout)
    except ContenderFailed as exc:
        return {"crashed": str(exc), "wall": None, "cpu": None, "findings": [], "errors": []}
    outcome = {"crashed": None, "exit": sample.returncode, "wall": round(sample.wall, 3), "cpu": round(sample.cpu, 3)}
    try:
        document = json.loads(report.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        outcome.update(crashed=f"exit {sample.returncode}, no JSON report ({exc})", findings=[], errors=[])
        return outcome
    outcome.update(findings=document["findings"], errors=document["errors"])
    return outcome


def _diff(name: str, before: bytes, after: bytes) -> str:
    old = (code_of(name, before) if name.endswith(".ipynb") else before.decode("utf-8", "replace")) or ""
    new = (code_of(name, after) if name.endswith(".ipynb") else after.decode("utf-8", "replace")) or ""
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{name}", f"b/{name}", n=3))


def measure(repo: Repo, gitdir: Path, work: Path, xla2tpu: Sequence[str], timeout: float) -> dict:
    """Everything the ecosystem check records of one repository; diffs go to work/diffs."""
    src, fixed, again = (work / stage / repo.slug for stage in ("src", "fixed", "again"))
    for tree in (src, fixed, again):
        shutil.rmtree(tree, ignore_errors=True)
    problems = extract(gitdir, repo, src)
    src.mkdir(parents=True, exist_ok=True)
    reports = work / "reports"
    reports.mkdir(parents=True, exist_ok=True)

    check = _tool(xla2tpu, "check", src, reports / f"{repo.slug}.check.json", timeout)
    shutil.copytree(src, fixed)
    first = _tool(xla2tpu, "fix", fixed, reports / f"{repo.slug}.fix.json", timeout)
    shutil.copytree(fixed, again)
    second = _tool(xla2tpu, "fix", again, reports / f"{repo.slug}.fix2.json", timeout)

    before, after, after_again = _sources(src), _sources(fixed), _sources(again)
    findings: dict[str, list] = {}
    for item in first["findings"]:
        findings.setdefault(item["filename"], []).append(
            [item["code"], item["cell"], item["location"]["row"], item["location"]["column"],
             item["fix"]["applicability"], item["fix"]["applied"]])
    errors = {e["filename"]: e["message"] for e in first["errors"]}
    promised = {}
    for item in check["findings"]:
        if item["fix"]["applied"]:
            promised[item["filename"]] = promised.get(item["filename"], 0) + 1

    diff_dir = work / "diffs" / repo.slug
    shutil.rmtree(diff_dir, ignore_errors=True)
    files = {}
    lines = 0
    for name, data in before.items():
        new = after.get(name, data)
        changed = new != data
        was = facts(name, data)
        now = facts(name, new) if changed else was
        lines += was.lines
        if changed:
            target = diff_dir / f"{name}.diff"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(_diff(name, data, new), encoding="utf-8")
        if not (changed or was.legacy_import or now.legacy_import or name in findings or name in errors):
            continue  # nothing to say of it; it still counts in the repository's files and lines
        files[name] = {
            "before": dataclasses.asdict(was),
            "after": dataclasses.asdict(now),
            "changed": changed,
            "output_sha": hashlib.sha256(new).hexdigest()[:16],
            "idempotent": after_again.get(name, new) == new,
            "findings": sorted(findings.get(name, []), key=lambda f: (f[1] or 0, f[2], f[3], f[0])),
            "promised_fixes": promised.get(name, 0),
            "error": errors.get(name),
        }
    return {
        "name": repo.name,
        "commit": repo.commit,
        "kind": repo.kind,
        "problems": problems,
        "check": {k: check.get(k) for k in ("crashed", "exit", "wall", "cpu")},
        "fix": {k: first.get(k) for k in ("crashed", "exit", "wall", "cpu")},
        "fix_again": {k: second.get(k) for k in ("crashed", "exit")},
        "file_count": len(before),
        "line_count": lines,
        "files": files,
    }

"""The report as JSON (`fix --report FILE.json`), and reading it back as the next run's
`--baseline` to show what changed.

The JSON is the plan itself (plan.py): figures, ranked blockers, folders, programs and
every file with its state and findings. A baseline needs only the figures and, per file,
its state and the rule codes of its findings left for a human: findings are compared per
(file, rule) as counts, because their lines move as the code around them changes.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections import Counter
from pathlib import Path

from xla2tpu import __version__
from xla2tpu.catalogue.diagnostics import Diagnostic
from xla2tpu.report.plan import MIGRATED, Change, Delta, Plan

KIND = "xla2tpu-migration-report"
FORMAT = 1
# The figures a baseline compares, with the label the renderers show.
FIGURES = {
    "with_idioms": "Files with torch_xla idioms",
    "fully_migrated": "Files fully migrated",
    "no_import_left": "Files with no torch_xla import left",
    "programs_running": "Programs that run on TorchTPU after this fix",
    "left_for_a_human": "Findings left for a human",
    "unreadable": "Files that could not be read",
}
# The figures in which a baseline file with no idiom left now counts (compare).
_CLEANED_COUNT = ("fully_migrated", "no_import_left")


class BaselineError(Exception):
    """The baseline file cannot be used; the message names it and says why."""


@dataclasses.dataclass(frozen=True)
class Baseline:
    path: str
    figures: dict[str, int]
    states: dict[str, str]  # path -> state
    programs: frozenset[str]  # the paths of its programs
    left: Counter[tuple[str, str]]  # (path, code) -> findings left for a human


def _finding(d: Diagnostic) -> dict:
    return {"line": d.line, "col": d.col, "cell": getattr(d, "cell", None), "code": d.code,
            "message": d.message, "fix": d.fix.value}


def document(plan: Plan) -> dict:
    """The JSON form of the plan (what --baseline reads back)."""
    return {
        "tool": "xla2tpu",
        "version": __version__,
        "kind": KIND,
        "format": FORMAT,
        "dry_run": plan.dry_run,
        "figures": dataclasses.asdict(plan.figures),
        "blockers": [dataclasses.asdict(b) for b in plan.blockers],
        "folders": [dataclasses.asdict(f) for f in plan.folders],
        "programs": [{"path": p.path, "runs": p.runs, "blockers": list(p.blockers),
                      "imports_left": [list(i) for i in p.imports_left]} for p in plan.programs],
        "files": [{"path": f.path, "state": f.state, "blockers": list(f.blockers), "error": f.error,
                   "imports_left": [list(i) for i in f.imports_left],
                   "fixed": [_finding(d) for d in f.done], "left": [_finding(d) for d in f.todo]} for f in plan.files],
        "delta": dataclasses.asdict(plan.delta) if plan.delta is not None else None,
    }


def render(plan: Plan) -> str:
    return json.dumps(document(plan), indent=1, ensure_ascii=False) + "\n"


def read(path: Path, role: str = "baseline") -> dict:
    """The JSON report in `path` (read as a `role`: "baseline", "report"), or BaselineError
    saying what is wrong with it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BaselineError(f"{path}: cannot read the {role}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise BaselineError(f"{path}: the {role} is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise BaselineError(f"{path}: the {role} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise BaselineError(f"{path}: not a migration report: write one with `xla2tpu fix --report FILE.json`")
    if data.get("format") != FORMAT:
        raise BaselineError(f"{path}: a migration report in format {data.get('format')!r}; this xla2tpu reads format {FORMAT}")
    return data


def load(path: Path) -> Baseline:
    """The baseline in `path`, or BaselineError saying what is wrong with it."""
    data = read(path)
    try:
        figures = {name: int(data["figures"][name]) for name in FIGURES}
        states: dict[str, str] = {}
        left: Counter[tuple[str, str]] = Counter()
        for entry in data["files"]:
            states[str(entry["path"])] = str(entry["state"])
            for finding in entry["left"]:
                left[(str(entry["path"]), str(finding["code"]))] += 1
        programs = frozenset(str(entry["path"]) for entry in data["programs"])
    except (KeyError, TypeError, ValueError) as exc:
        raise BaselineError(f"{path}: a damaged migration report (at {exc!s})") from None
    return Baseline(str(path), figures, states, programs, left)


def compare(baseline: Baseline, plan: Plan) -> Delta:
    """What changed from the baseline run to this one. A file of the baseline that this run
    no longer reports but that still exists has no idiom left: it counts as migrated (and
    as running, if a program), in the lists and in the figures (else migrating a file by
    hand would lower the count)."""
    now = {f.path: f.state for f in plan.files}
    cleaned = [path for path in baseline.states if path not in now and os.path.exists(path)]
    after = {**now, **{path: MIGRATED for path in cleaned}}
    newly = [path for path, before in baseline.states.items() if before != MIGRATED and after.get(path) == MIGRATED]
    regressed = [path for path, state in now.items() if state != MIGRATED and baseline.states.get(path) == MIGRATED]
    left: Counter[tuple[str, str]] = Counter((f.path, d.code) for f in plan.files for d in f.todo)
    gone = baseline.left - left
    new = left - baseline.left
    current = dataclasses.asdict(plan.figures)
    for name in _CLEANED_COUNT:
        current[name] += len(cleaned)
    current["programs_running"] += sum(1 for path in cleaned if path in baseline.programs)  # nothing left to block them
    return Delta(
        baseline=baseline.path,
        figures=tuple((name, baseline.figures[name], current[name]) for name in FIGURES),
        cleaned=len(cleaned),
        newly_migrated=tuple(sorted(newly)),
        regressed=tuple(sorted(regressed)),
        gone=tuple(Change(p, c, n) for (p, c), n in sorted(gone.items())),
        new=tuple(Change(p, c, n) for (p, c), n in sorted(new.items())),
    )

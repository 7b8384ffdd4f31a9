"""`xla2tpu report merge A.json B.json ... --report plan.html`: one plan from the JSON reports
of several runs, the shards of one (`--shard K/N` over a CI matrix) or several repositories.

Each JSON report holds every file it saw with its state, the findings fixed and left, the
imports left and its blockers (baseline.document); the plan is assembled from those files
as a run assembles it from its results (plan.assemble), so the merged shards of a run give
that run's report. A file that two reports both hold is an error: shards never share one,
and repositories must be run from a folder where their paths differ.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from xla2tpu.catalogue.diagnostics import Diagnostic, FixClass
from xla2tpu.catalogue.rules import Catalogue
from xla2tpu.report import plan as plan_mod
from xla2tpu.report.baseline import BaselineError, read
from xla2tpu.run.notebook import CellDiagnostic


class MergeError(Exception):
    """The reports cannot be merged; the message names the file and says why."""


def merge(paths: Sequence[Path], catalogue: Catalogue) -> plan_mod.Plan:
    """The plan of the files of every report in `paths`."""
    states: dict[str, plan_mod.FileState] = {}
    programs: list[plan_mod.Program] = []
    scanned = 0
    dry_runs: set[bool] = set()
    for path in paths:
        try:
            data = read(path, "report")
            scanned += int(data["figures"]["files_scanned"])
            dry_runs.add(bool(data["dry_run"]))
            mains = {str(entry["path"]) for entry in data["programs"]}
            for entry in data["files"]:
                state = _state(entry)
                if state.path in states:
                    raise MergeError(f"{path}: `{state.path}` is in an earlier report too: shards never share a file; "
                                     "run each repository from a folder where their paths differ")
                states[state.path] = state
                if state.path in mains:
                    programs.append(plan_mod.Program(state.path, state.imports_left, state.todo, state.blockers,
                                                     plan_mod.launched(state.done)))
        except BaselineError as exc:
            raise MergeError(str(exc)) from None
        except (KeyError, TypeError, ValueError) as exc:
            raise MergeError(f"{path}: a damaged migration report (at {exc!s})") from None
    if len(dry_runs) > 1:
        raise MergeError("the reports mix dry runs (`fix --diff`) and runs that wrote their fixes: merge one kind")
    ordered = [states[name] for name in sorted(states)]
    return plan_mod.assemble(ordered, programs, scanned, catalogue, dry_runs.pop() if dry_runs else True)


def _state(entry: dict) -> plan_mod.FileState:
    todo = tuple(_diagnostic(d, fixed=False) for d in entry["left"])
    blockers = tuple(str(code) for code in entry["blockers"])
    return plan_mod.FileState(
        path=str(entry["path"]),
        state=str(entry["state"]),
        done=tuple(_diagnostic(d, fixed=True) for d in entry["fixed"]),
        todo=todo,
        imports_left=tuple((int(line), str(name)) for line, name in entry["imports_left"]),
        blockers=blockers,
        error=entry["error"],
        held=plan_mod.held_blockers(blockers, todo),
    )


def _diagnostic(finding: dict, fixed: bool) -> Diagnostic:
    fields = (int(finding["line"]), int(finding["col"]), str(finding["code"]), str(finding["message"]),
              FixClass(finding["fix"]), fixed)
    cell = finding.get("cell")
    return Diagnostic(*fields) if cell is None else CellDiagnostic(*fields, cell=int(cell))

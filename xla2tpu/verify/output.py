"""Render verify outcomes: a rich table with failure details, or JSON for machines."""
from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich is imported when a table is printed, not when the CLI starts
    from rich.console import Console


from . import backend as backends
from .runner import Outcome, Run

STYLE = {"pass": "green", "fail": "red", "error": "red", "manual": "yellow", "skip": "dim"}
MAX_DIFFS = 20


def _exit(run: Run | None) -> str:
    if run is None:
        return "-"
    return "timeout" if run.exit_code is None else str(run.exit_code)


def _comparison(o: Outcome) -> str:
    c = o.comparison
    if c is None:
        if o.migrated is not None and o.migrated.ok and not o.baseline:
            return "no baseline (exit status only)"
        return "exit status only" if o.baseline else "-"
    verdict = "ok" if c.ok else f"{len(c.diffs)} DIFF(S)"
    return f"{verdict} vs {o.baseline_label}, abs {c.max_abs:.1e} rel {c.max_rel:.1e}"


def _migration(o: Outcome) -> str:
    m = o.migration
    if m is None:
        return "-"
    left = f", {m.findings} left" if m.findings else ""
    return f"{o.migration_source}{left}"


def summary(outcomes: list[Outcome]) -> dict[str, int]:
    """Counts for the closing lines: a pass that needed the case's hand step is counted
    apart from a pass on the engine's output alone."""
    hand = sum(o.status == "pass" and o.hand_step for o in outcomes)
    passed = sum(o.status == "pass" for o in outcomes) - hand
    skipped = sum(o.status == "skip" for o in outcomes)
    return {"passed": passed, "passed_after_hand_step": hand,
            "failed": len(outcomes) - passed - hand - skipped, "skipped": skipped}


def closing_lines(outcomes: list[Outcome]) -> list[str]:
    """The last lines of the table output. The very last keeps the plain
    `N passed, N failed, N skipped` form that log parsers read; the hand-step passes go
    on a line of their own before it, behind a "hand step:" label, so that no parser
    adds them to the engine's passes."""
    counts = summary(outcomes)
    lines = []
    if counts["passed_after_hand_step"]:
        names = ", ".join(o.case.name for o in outcomes if o.status == "pass" and o.hand_step)
        lines.append(f"hand step: {counts['passed_after_hand_step']} passed after a documented "
                     f"hand step ({names})")
    lines.append(f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
    return lines


def _banner(outcomes: list[Outcome]) -> str:
    used = sorted({o.backend for o in outcomes}) or [backends.CPU_STANDIN]
    parts = []
    for b in used:
        parts.append("backend: cpu-standin (a CPU test double for TorchTPU, not a TPU)"
                     if b == backends.CPU_STANDIN else "backend: tpu (torch_tpu on TPU hardware)")
    return "; ".join(parts)


def print_table(outcomes: list[Outcome], console: Console | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    # Logs and CI are not terminals; rich would wrap every cell at 80 columns there.
    console = console or (Console() if sys.stdout.isatty() else Console(width=160))
    console.print(_banner(outcomes))
    table = Table(show_lines=False)
    for col in ("case", "backend", "migration", "migrated exit", "legacy exit", "comparison", "time", "status"):
        table.add_column(col)
    for o in outcomes:
        table.add_row(o.case.name, o.backend, _migration(o), _exit(o.migrated), _exit(o.legacy),
                      _comparison(o), f"{o.duration:.1f}s",
                      f"[{STYLE[o.status]}]{o.status.upper()}[/]")
    console.print(table)
    for o in outcomes:
        if o.status == "pass" and not o.notes:
            continue
        console.rule(f"{o.case.name}: {o.status}", style=STYLE[o.status])
        for line in o.reasons:
            console.print(f"  - {line}", markup=False, highlight=False)
        for line in o.notes:
            console.print(f"  note: {line}", markup=False, highlight=False)
        if o.status == "pass":
            continue
        if o.comparison is not None and o.comparison.diffs:
            console.print("  result differences (baseline -> migrated):")
            for d in o.comparison.diffs[:MAX_DIFFS]:
                console.print(f"    {d}", markup=False, highlight=False)
            if len(o.comparison.diffs) > MAX_DIFFS:
                console.print(f"    ... {len(o.comparison.diffs) - MAX_DIFFS} more")
        if o.status in ("manual", "error") and o.migration is not None:
            console.print("  engine output:")
            console.print(_indent(o.migration.output, 12), markup=False, highlight=False)
        for label, run in (("migrated", o.migrated), ("legacy", o.legacy)):
            if run is not None and not run.ok and run.stderr.strip():
                console.print(f"  {label} stderr (tail):")
                console.print(_indent(run.stderr, 15), markup=False, highlight=False)
    for line in closing_lines(outcomes):
        console.print(line, markup=False, highlight=False)


def _indent(text: str, lines: int) -> str:
    return "\n".join("    " + line for line in text.strip().splitlines()[-lines:])


def _run_json(run: Run | None) -> dict[str, Any] | None:
    if run is None:
        return None
    return {"exit_code": run.exit_code, "timed_out": run.exit_code is None,
            "duration": round(run.duration, 3), "result": run.result,
            "torch_xla_loaded": run.xla_loaded, "stderr_tail": run.stderr[-2000:]}


def to_json(outcomes: list[Outcome]) -> dict[str, Any]:
    cases = []
    for o in outcomes:
        c = o.comparison
        cases.append({
            "case": o.case.name,
            "path": str(o.case.root),
            "backend": o.backend,
            "status": o.status,
            "passed": o.status == "pass",
            "reasons": o.reasons,
            "notes": o.notes,
            "hand_step": o.hand_step,
            "migration": None if o.migration is None else {
                "source": o.migration_source, "exit_code": o.migration.exit_code,
                "findings_left": o.migration.findings, "duration": round(o.migration.duration, 3),
                "output": o.migration.output},
            "migrated": _run_json(o.migrated),
            "legacy": _run_json(o.legacy),
            "baseline": o.baseline or None,
            "baseline_borrowed_from": o.case.baseline_from if o.baseline == "recorded" else None,
            "comparison": None if c is None else {
                "ok": c.ok, "max_abs_err": c.max_abs, "max_rel_err": c.max_rel,
                "compared": c.leaves, "diffs": c.diffs},
            "duration": round(o.duration, 3),
        })
    return {"backend": sorted({o.backend for o in outcomes}),
            "passed": all(o.status in ("pass", "skip") for o in outcomes),
            "summary": summary(outcomes),
            "cases": cases}


def print_json(outcomes: list[Outcome]) -> None:
    print(json.dumps(to_json(outcomes), indent=2))

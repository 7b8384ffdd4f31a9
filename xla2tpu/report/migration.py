"""`xla2tpu fix --report FILE.md` (or `-`): the plan (plan.py) as Markdown, for a pull
request, a CI job summary or a lead planning the work.

The plan comes first, its top short enough for a first screen (also as plain text, as
`--report -` shows it in a CI log): the headline figures with their definitions, the top
blockers ranked by the files they keep on torch_xla, what changed since the baseline,
progress per folder and per program; then the rest of the blockers with the files each
keeps, and the files that could not be read.
The per-file detail follows, one collapsed `<details>` section per folder, so that a
300-file repository reads as a page. `plan_only` is what goes to `$GITHUB_STEP_SUMMARY`.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape

from xla2tpu.catalogue.rules import Catalogue
from xla2tpu.catalogue.diagnostics import Diagnostic
from xla2tpu.report.baseline import FIGURES
from xla2tpu.report.plan import (
    DEFINITIONS, MIGRATED, PROGRAM_ROWS, UNREADABLE, Blocker, Delta, FileState, Folder, Plan, Program, by_file, by_rule,
)
from xla2tpu.report.text import plural, position

TITLE = "# torch_xla → TorchTPU migration report"
TOP_BLOCKERS = 10  # rows in the first table; the rest are one click away
BAR_WIDTH = 10
CUT = "_The rest of the plan did not fit in the job summary: it is in the report file._\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    return f"`{_cell(text)}`"


def _files(paths: Iterable[str]) -> str:
    return ", ".join(_code(p) for p in paths)


def bar(done: int, total: int) -> str:
    """`▓▓▓░░░░░░░ 30%`: a progress bar a Markdown table can hold."""
    filled = round(BAR_WIDTH * done / total) if total else 0
    return "▓" * filled + "░" * (BAR_WIDTH - filled) + f" {round(100 * done / total) if total else 0}%"


def headline(plan: Plan) -> list[str]:
    f = plan.figures
    parts = [f"**{f.fully_migrated} of {f.with_idioms} files with torch_xla idioms fully migrated** by this fix",
             f"{f.no_import_left} with no torch_xla import left"]
    if f.programs:
        verb = "runs" if f.programs == 1 else "run"
        parts.append(f"**{f.programs_running} of {plural(f.programs, 'program')} {verb} on TorchTPU** after it")
    parts += [f"{f.rewritten} findings {'would be ' if plan.dry_run else ''}rewritten, {f.left_for_a_human} left for a human",
              f"{plural(f.files_scanned, 'file')} scanned, {f.unreadable} could not be read"]
    out = [" · ".join(parts), "", f"_{DEFINITIONS}_"]
    if plan.dry_run:
        out += ["", "_Dry run (`--diff`): nothing was written; the figures say what this fix would do._"]
    return out


def _blocker_row(rank: int, b: Blocker) -> str:
    rule = f"{b.code} `{b.name}`" if b.name else b.code
    return f"| {rank} | {rule} | {len(b.files)} | {b.only} | {len(b.programs)} | {b.fix_label} | {_cell(b.guidance)} |"


_BLOCKER_HEAD = ["| # | Rule | Files | Only blocker | Programs | Fix | What to do |", "| ---: | --- | ---: | ---: | ---: | --- | --- |"]


def blockers(plan: Plan) -> list[str]:
    """The top of the ranking: what a lead reads first."""
    if not plan.blockers:
        return ["## Blockers", "", "Nothing blocks the migration: every file with torch_xla idioms is fully migrated by this fix."]
    out = ["## Blockers", "",
           "Ranked by the files each keeps from being fully migrated; _only blocker_: files that fixing this rule alone migrates.",
           "", *_BLOCKER_HEAD]
    out += [_blocker_row(i, b) for i, b in enumerate(plan.blockers[:TOP_BLOCKERS], 1)]
    if len(plan.blockers) > TOP_BLOCKERS:
        out += ["", f"{len(plan.blockers) - TOP_BLOCKERS} more below, under _All blockers_."]
    if plan.launch.files:
        out += ["", f"**{_cell(plan.launch.describe())}**"]
    return out


def all_blockers(plan: Plan) -> list[str]:
    """The rest of the ranking and the files each blocker keeps, after the progress sections."""
    out = ["## All blockers", ""]
    rest = plan.blockers[TOP_BLOCKERS:]
    if rest:
        out += [f"<details><summary>{len(rest)} more blockers</summary>", "", *_BLOCKER_HEAD]
        out += [_blocker_row(i, b) for i, b in enumerate(rest, TOP_BLOCKERS + 1)]
        out += ["", "</details>", ""]
    out += ["<details><summary>The files each blocker keeps from being migrated</summary>", ""]
    out += [f"- **{b.code}** ({len(b.files)}): {_files(b.files)}" for b in plan.blockers]
    return out + ["", "</details>"]


def delta(change: Delta) -> list[str]:
    out = [f"## Since the baseline ({_code(change.baseline)})", "", "| | Before | Now |", "| --- | ---: | ---: |"]
    out += [f"| {FIGURES[name]} | {before} | {now} |" for name, before, now in change.figures]
    if change.cleaned:
        out += ["", f"_{change.cleaned_note()}_"]
    out += ["", f"**Newly migrated ({len(change.newly_migrated)}):** {_files(change.newly_migrated) or 'none'}"]
    if change.regressed:
        out += ["", f"**No longer fully migrated ({len(change.regressed)}):** {_files(change.regressed)}"]
    for title, changes in (("Findings gone", change.gone), ("New findings", change.new)):
        rules = by_rule(changes)
        listed = ", ".join(f"{code} ×{n}" for code, n in rules)
        out += ["", f"**{title}: {sum(n for _, n in rules)}**" + (f" ({listed})" if listed else "")]
        if changes:
            out += ["", f"<details><summary>{title}, by file</summary>", ""]
            out += [f"- {_code(path)}: {codes}" for path, codes in by_file(changes)]
            out += ["", "</details>"]
    return out


def _folder_rows(rows: Iterable[Folder]) -> list[str]:
    head = ["| Folder | Files | Fully migrated | Blocked | Not read | No torch_xla import left | Progress |",
            "| --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    return head + [f"| {_code(f.path)} | {f.files} | {f.migrated} | {f.blocked} | {f.unreadable} | {f.no_import_left} | "
                   f"{bar(f.migrated, f.files)} |" for f in rows]


def folders(plan: Plan) -> list[str]:
    out = ["## Progress by folder", "", *_folder_rows(plan.areas)]
    if plan.areas != plan.folders:  # rolled up: every folder is one click away
        out += ["", f"<details><summary>All {len(plan.folders)} folders</summary>", "", *_folder_rows(plan.folders), "", "</details>"]
    return out


def _program_rows(rows: Iterable[Program]) -> list[str]:
    out = ["| Program | Verdict | Start it with, or what still blocks it |", "| --- | --- | --- |"]
    for p in rows:
        if p.runs:
            out.append(f"| {_code(p.path)} | runs on TorchTPU after this fix | {_cell(p.start())} |")
        else:
            out.append(f"| {_code(p.path)} | blocked by {', '.join(p.blockers)} | {_cell('; '.join(p.items()))} |")
    return out


def programs(plan: Plan) -> list[str]:
    running = sum(1 for p in plan.programs if p.runs)
    out = ["## Programs", "", f"{running} of {len(plan.programs)} programs (files with a `__main__` block) run on TorchTPU "
           "after this fix; the blocked ones closest to running (fewest blockers) come first.", "",
           *_program_rows(plan.programs[:PROGRAM_ROWS])]
    rest = plan.programs[PROGRAM_ROWS:]
    if rest:
        out += ["", f"<details><summary>{len(rest)} more programs</summary>", "", *_program_rows(rest), "", "</details>"]
    return out


def unreadable(plan: Plan) -> list[str]:
    out = ["## Files that could not be read", "", "| File | Why |", "| --- | --- |"]
    return out + [f"| {_code(f.path)} | {_cell(f.error or '')} |" for f in plan.unreadable]


def fix_classes(plan: Plan) -> list[str]:
    verb = "Would be rewritten" if plan.dry_run else "Rewritten"
    out = ["## Findings by fix class", "", f"| Fix class | Findings | {verb} | Left for a human |", "| --- | ---: | ---: | ---: |"]
    return out + [f"| {fix} | {done + left} | {done} | {left} |" for fix, done, left in plan.fixed_by_class]


def sections(plan: Plan) -> list[list[str]]:
    """The plan, section by section, without the per-file detail."""
    out = [[TITLE, "", *headline(plan)], blockers(plan)]
    if plan.delta is not None:
        out.append(delta(plan.delta))
    if plan.folders:
        out.append(folders(plan))
    if plan.programs:
        out.append(programs(plan))
    if plan.blockers:
        out.append(all_blockers(plan))
    if plan.unreadable:
        out.append(unreadable(plan))
    out.append(fix_classes(plan))
    return out


def plan_only(plan: Plan, limit: int | None = None) -> str:
    """The plan without the per-file detail (the CI job summary). With `limit` (bytes), the
    sections that would not fit are left out and a last line says so: GitHub shows no job
    summary over 1 MiB."""
    out: list[str] = []
    size = 0
    for section in sections(plan):
        text = "\n".join(section) + "\n\n"
        if limit is not None and size + len(text.encode()) + len(CUT.encode()) > limit:
            out.append(CUT)
            break
        out.append(text)
        size += len(text.encode())
    return "".join(out).rstrip("\n") + "\n"


def _findings(rows: Iterable[Diagnostic], catalogue: Catalogue, fix_column: bool) -> list[str]:
    def rule(code: str) -> str:
        known = catalogue.by_code.get(code)
        return f"{code} `{known.name}`" if known else code

    if fix_column:
        return [f"| {position(d)} | {rule(d.code)} | {d.fix.value} | {_cell(d.message)} |" for d in rows]
    return [f"| {position(d)} | {rule(d.code)} | {_cell(d.message)} |" for d in rows]


def _file(state: FileState, catalogue: Catalogue, dry_run: bool) -> list[str]:
    if state.state == UNREADABLE:
        return [f"### {_code(state.path)}", "", f"**Could not be processed:** {_cell(state.error or '')}"]
    verdict = "fully migrated" if state.state == MIGRATED else "blocked by " + ", ".join(state.blockers)
    out = [f"### {_code(state.path)}: {verdict}", ""]
    if state.error:  # a notebook with a cell that does not parse: the others were processed
        out += [f"**Could not be processed:** {_cell(state.error)}", ""]
    if state.done:
        out += [f"{'Would be rewritten' if dry_run else 'Rewritten'}:", "", "| Line | Rule | Change |", "| --- | --- | --- |"]
        out += _findings(state.done, catalogue, fix_column=False) + [""]
    if state.todo:
        out += ["Needs a human:", "", "| Line | Rule | Fix class | What to do |", "| --- | --- | --- | --- |"]
        out += _findings(state.todo, catalogue, fix_column=True) + [""]
    kept = [name for _, name in state.imports_left]
    if kept and not state.todo:
        out += [f"Still imports {_files(kept)}: no finding is left, so the use that keeps it is code no rule names.", ""]
    return out[:-1] if out[-1] == "" else out


def detail(plan: Plan, catalogue: Catalogue) -> list[str]:
    """Every file, one collapsed section per folder."""
    out = ["## Files", ""]
    for folder in plan.folders:
        # A <summary> is HTML, not Markdown: the folder name is escaped as HTML.
        out += [f"<details><summary><b>{escape(folder.path)}</b>: {folder.describe()}</summary>", ""]
        for state in plan.files:
            if state.folder == folder.path:
                out += [*_file(state, catalogue, plan.dry_run), ""]
        out += ["</details>", ""]
    return out[:-1]


def render(plan: Plan, catalogue: Catalogue) -> str:
    """The whole report: the plan, then every file (when there is any)."""
    if not plan.files:
        return plan_only(plan)
    return plan_only(plan) + "\n" + "\n".join(detail(plan, catalogue)) + "\n"

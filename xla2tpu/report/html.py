"""`xla2tpu fix --report FILE.html`: the plan (plan.py) as one self-contained page.

One file with inline CSS and inline SVG: no script, no font, no image and no URL to
fetch, so it opens from a CI artifact or an e-mail as it is. The blockers are a horizontal
bar chart, each folder a progress bar; the per-file detail is in collapsed `<details>`
sections per folder. Every text (paths, messages) is escaped. Laid out for a 1280-pixel
screen: one column, at most 1200 pixels wide.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from html import escape

from xla2tpu.catalogue.rules import Catalogue
from xla2tpu.catalogue.diagnostics import Diagnostic
from xla2tpu.report.baseline import FIGURES
from xla2tpu.report.plan import (
    DEFINITIONS, MIGRATED, PROGRAM_ROWS, UNREADABLE, Blocker, Delta, FileState, Folder, Plan, Program, by_file, by_rule,
)
from xla2tpu.report.text import plural, position

CHART_ROWS = 10  # blockers drawn, so that the folders show on the first screen too; a table lists them all
# Colours: fully migrated, blocked, not read; a blocker's bar and its "only blocker" part.
GREEN, ORANGE, GREY = "#2e8540", "#e8912d", "#9aa0a6"
BAR, ONLY = "#f3b3a6", "#c9372c"
_INLINE_CODE = re.compile(r"`([^`]+)`")

_CSS = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1f2328; margin: 0; background: #f6f8fa; }
main { max-width: 1200px; margin: 0 auto; padding: 24px 32px 48px; background: #fff; }
h1 { font-size: 26px; margin: 0 0 16px; }
h2 { font-size: 20px; margin: 32px 0 10px; border-bottom: 1px solid #d0d7de; padding-bottom: 4px; }
h3 { font-size: 15px; margin: 16px 0 6px; }
.cards { display: flex; gap: 10px; }
.card { flex: 1; border: 1px solid #d0d7de; border-radius: 8px; padding: 8px 12px; font-size: 13px; }
.card b { display: block; font-size: 26px; }
.card.good b { color: #2e8540; } .card.bad b { color: #c9372c; }
.note { color: #59636e; font-size: 13px; }
table { border-collapse: collapse; width: 100%; margin: 8px 0; font-size: 14px; }
th, td { border: 1px solid #d0d7de; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
td.n { text-align: right; white-space: nowrap; }
td.path { min-width: 20em; }
table.narrow { width: auto; min-width: 50%; }
code { font: 13px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; overflow-wrap: anywhere; }
details { margin: 6px 0; }
summary { cursor: pointer; }
.legend span { display: inline-block; width: 12px; height: 12px; margin: 0 4px 0 14px; vertical-align: -1px; }
.launch { border-left: 4px solid #c9372c; padding: 4px 10px; background: #fdf3f1; }
.runs { color: #2e8540; font-weight: 600; } .blocked { color: #c9372c; font-weight: 600; }
"""


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def _code(text: str) -> str:
    return f"<code>{_e(text)}</code>"


def _inline(text: str) -> str:
    """A rule's text, escaped, with its `code` spans (Markdown in the catalogue) as <code>."""
    return _INLINE_CODE.sub(r"<code>\1</code>", _e(text))


def _cards(plan: Plan) -> list[str]:
    f = plan.figures
    cards = [
        ("good", f"{f.fully_migrated} / {f.with_idioms}", "files fully migrated"),
        ("", f"{f.no_import_left} / {f.with_idioms}", "files with no torch_xla import left"),
        ("good", f"{f.programs_running} / {f.programs}", "programs run on TorchTPU"),
        ("", str(f.rewritten), "findings " + ("would be rewritten" if plan.dry_run else "rewritten")),
        ("bad", str(f.left_for_a_human), "findings left for a human"),
        ("bad" if f.unreadable else "", str(f.unreadable), "files could not be read"),
    ]
    out = ['<div class="cards">']
    out += [f'<div class="card {kind}"><b>{_e(value)}</b>{_e(label)}</div>' for kind, value, label in cards]
    out.append("</div>")
    out.append(f'<p class="note">{_e(DEFINITIONS)} {plural(f.files_scanned, "file")} scanned.'
               + (" Dry run (--diff): nothing was written; the figures say what this fix would do." if plan.dry_run else "")
               + "</p>")
    return out


def stacked_bar(segments: Sequence[tuple[int, str, str]], total: int, width: int, height: int) -> str:
    """An inline SVG bar of `width` pixels: one rectangle per (count, colour, title) segment."""
    parts = [f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">',
             f'<rect width="{width}" height="{height}" fill="#eef1f4"/>']
    x = 0.0
    for count, colour, title in segments:
        if count and total:
            w = width * count / total
            parts.append(f'<rect x="{x:.1f}" width="{w:.1f}" height="{height}" fill="{colour}"><title>{_e(title)}</title></rect>')
            x += w
    parts.append("</svg>")
    return "".join(parts)


def blocker_chart(blockers: Sequence[Blocker]) -> str:
    """The ranked blockers as horizontal bars: files blocked, the darker part those it alone blocks."""
    shown = blockers[:CHART_ROWS]
    label_w, bar_w, value_w, row_h = 300, 560, 300, 24
    width, height = label_w + bar_w + value_w, row_h * len(shown) + 8
    most = max(len(b.files) for b in shown)
    parts = [f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" style="max-width: 100%; height: auto" '
             f'aria-label="Blockers by files kept from being migrated" font-family="system-ui, sans-serif" font-size="13">']
    for i, b in enumerate(shown):
        y = 4 + i * row_h
        files = len(b.files)
        w = bar_w * files / most
        only_w = bar_w * b.only / most
        label = f"{b.code} {b.name}".strip()
        parts.append(f'<g><title>{_e(label)}: {plural(files, "file")}, {b.only} only blocked by it, '
                     f'{plural(len(b.programs), "program")}. {_e(b.guidance.replace("`", ""))}</title>')  # a tooltip is plain text
        parts.append(f'<text x="{label_w - 8}" y="{y + 16}" text-anchor="end" fill="#1f2328">{_e(label)}</text>')
        parts.append(f'<rect x="{label_w}" y="{y + 4}" width="{w:.1f}" height="{row_h - 8}" fill="{BAR}"/>')
        parts.append(f'<rect x="{label_w}" y="{y + 4}" width="{only_w:.1f}" height="{row_h - 8}" fill="{ONLY}"/>')
        parts.append(f'<text x="{label_w + w + 6:.1f}" y="{y + 16}" fill="#1f2328">{plural(files, "file")} · {b.only} only · '
                     f'{plural(len(b.programs), "program")}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


def _chart(plan: Plan) -> list[str]:
    out = ["<h2>Blockers</h2>"]
    if not plan.blockers:
        return out + ["<p>Nothing blocks the migration: every file with torch_xla idioms is fully migrated by this fix.</p>"]
    out += [f'<p class="note">Ranked by the files each keeps from being fully migrated. '
            f'<span class="legend"><span style="background:{ONLY}"></span>files it alone blocks (fixing it migrates them)'
            f'<span style="background:{BAR}"></span>files it blocks with others</span></p>',
            blocker_chart(plan.blockers)]
    if len(plan.blockers) > CHART_ROWS:
        out.append(f'<p class="note">{len(plan.blockers) - CHART_ROWS} more in the table of all blockers below.</p>')
    if plan.launch.files:
        out.append(f'<p class="launch">{_e(plan.launch.describe())}</p>')
    return out


def _blocker_table(plan: Plan) -> list[str]:
    out = ["<h2>All blockers</h2>", "<table><tr><th>#</th><th>Rule</th><th>Files</th><th>Only blocker</th><th>Programs</th><th>Fix</th>"
           "<th>What to do</th><th>Files it blocks</th></tr>"]
    for i, b in enumerate(plan.blockers, 1):
        files = "".join(f"<li>{_code(p)}</li>" for p in b.files)
        out.append(f'<tr><td class="n">{i}</td><td>{_e(b.code)} {_code(b.name)}</td><td class="n">{len(b.files)}</td>'
                   f'<td class="n">{b.only}</td><td class="n">{len(b.programs)}</td><td>{_e(b.fix_label)}</td>'
                   f"<td>{_inline(b.guidance)}</td><td><details><summary>{plural(len(b.files), 'file')}</summary>"
                   f"<ul>{files}</ul></details></td></tr>")
    out.append("</table>")
    return out


def _delta(change: Delta) -> list[str]:
    out = [f"<h2>Since the baseline ({_code(change.baseline)})</h2>",
           '<table class="narrow"><tr><th></th><th>Before</th><th>Now</th></tr>']
    out += [f'<tr><td>{_e(FIGURES[name])}</td><td class="n">{before}</td><td class="n">{now}</td></tr>'
            for name, before, now in change.figures]
    out.append("</table>")
    if change.cleaned:
        out.append(f'<p class="note">{_e(change.cleaned_note())}</p>')
    for title, paths in (("Newly migrated", change.newly_migrated), ("No longer fully migrated", change.regressed)):
        if paths or title == "Newly migrated":
            out.append(f"<p><b>{title} ({len(paths)}):</b> {', '.join(_code(p) for p in paths) or 'none'}</p>")
    for title, changes in (("Findings gone", change.gone), ("New findings", change.new)):
        rules = by_rule(changes)
        listed = ", ".join(f"{code} ×{n}" for code, n in rules)
        rows = "".join(f"<li>{_code(path)}: {_e(codes)}</li>" for path, codes in by_file(changes))
        head = f"<b>{title}: {sum(n for _, n in rules)}</b>" + (f" ({_e(listed)})" if listed else "")
        out.append(f"<details><summary>{head}</summary><ul>{rows}</ul></details>" if changes else f"<p>{head}</p>")
    return out


def _folder_table(rows: Iterable[Folder]) -> str:
    out = ["<table><tr><th>Folder</th><th>Files</th><th>Fully migrated</th><th>Blocked</th><th>Not read</th>"
           "<th>No torch_xla import left</th><th>Progress</th></tr>"]
    for f in rows:
        bar = stacked_bar([(f.migrated, GREEN, f"{f.migrated} fully migrated"), (f.blocked, ORANGE, f"{f.blocked} blocked"),
                           (f.unreadable, GREY, f"{f.unreadable} could not be read")], f.files, 300, 14)
        share = round(100 * f.migrated / f.files) if f.files else 0
        out.append(f'<tr><td class="path">{_code(f.path)}</td><td class="n">{f.files}</td><td class="n">{f.migrated}</td>'
                   f'<td class="n">{f.blocked}</td><td class="n">{f.unreadable}</td><td class="n">{f.no_import_left}</td>'
                   f"<td>{bar} {share}%</td></tr>")
    return "".join(out) + "</table>"


def _folders(plan: Plan) -> list[str]:
    out = ["<h2>Progress by folder</h2>",
           f'<p class="legend note"><span style="background:{GREEN}"></span>fully migrated'
           f'<span style="background:{ORANGE}"></span>blocked<span style="background:{GREY}"></span>could not be read</p>',
           _folder_table(plan.areas)]
    if plan.areas != plan.folders:  # rolled up: every folder is one click away
        out.append(f"<details><summary>All {len(plan.folders)} folders</summary>{_folder_table(plan.folders)}</details>")
    return out


def _program_table(rows: Iterable[Program]) -> str:
    out = ["<table><tr><th>Program</th><th>Verdict</th><th>Start it with, or what still blocks it</th></tr>"]
    for p in rows:
        if p.runs:
            out.append(f'<tr><td class="path">{_code(p.path)}</td><td class="runs">runs on TorchTPU</td><td>{_e(p.start())}</td></tr>')
        else:
            items = "".join(f"<li>{_e(item)}</li>" for item in p.items())
            out.append(f'<tr><td class="path">{_code(p.path)}</td><td class="blocked">blocked by {_e(", ".join(p.blockers))}</td>'
                       f"<td><ul>{items}</ul></td></tr>")
    return "".join(out) + "</table>"


def _programs(plan: Plan) -> list[str]:
    running = sum(1 for p in plan.programs if p.runs)
    out = ["<h2>Programs</h2>",
           f"<p>{running} of {len(plan.programs)} programs (files with a <code>__main__</code> block) run on TorchTPU after this fix; "
           "the blocked ones closest to running (fewest blockers) come first.</p>",
           _program_table(plan.programs[:PROGRAM_ROWS])]
    rest = plan.programs[PROGRAM_ROWS:]
    if rest:
        out.append(f"<details><summary>{len(rest)} more programs</summary>{_program_table(rest)}</details>")
    return out


def _unreadable(plan: Plan) -> list[str]:
    out = ["<h2>Files that could not be read</h2>", "<table><tr><th>File</th><th>Why</th></tr>"]
    out += [f"<tr><td>{_code(f.path)}</td><td>{_e(f.error or '')}</td></tr>" for f in plan.unreadable]
    return out + ["</table>"]


def _rows(rows: Iterable[Diagnostic], catalogue: Catalogue, fix_column: bool) -> str:
    out = []
    for d in rows:
        rule = catalogue.by_code.get(d.code)
        name = f" {_code(rule.name)}" if rule else ""
        fix = f"<td>{_e(d.fix.value)}</td>" if fix_column else ""
        out.append(f"<tr><td class=\"n\">{_e(position(d))}</td><td>{_e(d.code)}{name}</td>{fix}<td>{_inline(d.message)}</td></tr>")
    return "".join(out)


def _file(state: FileState, catalogue: Catalogue, dry_run: bool) -> list[str]:
    if state.state == UNREADABLE:
        return [f"<h3>{_code(state.path)}</h3>", f"<p><b>Could not be processed:</b> {_e(state.error or '')}</p>"]
    verdict = ('<span class="runs">fully migrated</span>' if state.state == MIGRATED
               else f'<span class="blocked">blocked by {_e(", ".join(state.blockers))}</span>')
    out = [f"<h3>{_code(state.path)}: {verdict}</h3>"]
    if state.error:
        out.append(f"<p><b>Could not be processed:</b> {_e(state.error)}</p>")
    if state.done:
        out += [f"<p>{'Would be rewritten' if dry_run else 'Rewritten'}:</p>",
                f"<table><tr><th>Line</th><th>Rule</th><th>Change</th></tr>{_rows(state.done, catalogue, False)}</table>"]
    if state.todo:
        out += ["<p>Needs a human:</p>",
                "<table><tr><th>Line</th><th>Rule</th><th>Fix class</th><th>What to do</th></tr>"
                f"{_rows(state.todo, catalogue, True)}</table>"]
    if state.imports_left and not state.todo:
        kept = ", ".join(_code(name) for _, name in state.imports_left)
        out.append(f"<p>Still imports {kept}: no finding is left, so the use that keeps it is code no rule names.</p>")
    return out


def _detail(plan: Plan, catalogue: Catalogue) -> list[str]:
    out = ["<h2>Files</h2>"]
    for folder in plan.folders:
        out.append(f"<details><summary><b>{_e(folder.path)}</b>: {_e(folder.describe())}</summary>")
        for state in plan.files:
            if state.folder == folder.path:
                out += _file(state, catalogue, plan.dry_run)
        out.append("</details>")
    return out


def render(plan: Plan, catalogue: Catalogue) -> str:
    body = ["<h1>torch_xla → TorchTPU migration report</h1>", *_cards(plan), *_chart(plan)]
    if plan.delta is not None:
        body += _delta(plan.delta)
    if plan.folders:
        body += _folders(plan)
    if plan.programs:
        body += _programs(plan)
    if plan.blockers:
        body += _blocker_table(plan)
    if plan.unreadable:
        body += _unreadable(plan)
    if plan.files:
        body += _detail(plan, catalogue)
    head = ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>torch_xla → TorchTPU migration report</title><style>{_CSS}</style></head>")
    return head + "<body><main>\n" + "\n".join(body) + "\n</main></body></html>\n"

"""`xla2tpu fix --report FILE`: the Markdown a team reads before merging a migration PR.

A summary table first (files scanned, files with idioms, files fully migrated, findings
by fix class), then per file what was rewritten (rule, line) and what still needs a
human, with each rule's guidance.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from xla2tpu.catalogue import Catalogue
from xla2tpu.diagnostics import FileResult, FixClass
from xla2tpu.report.text import position

_LEGACY = b"torch_xla"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def fully_migrated(result: FileResult, written: bool) -> bool:
    """Every finding was fixed and no `torch_xla` is left in the file's new text."""
    if not written or result.new_source is None or result.error:
        return False
    return all(d.fixed for d in result.diagnostics) and _LEGACY not in result.new_source


def render(results: Sequence[FileResult], files: int, written: set[str], catalogue: Catalogue, dry_run: bool) -> str:
    with_idioms = [r for r in results if r.diagnostics]
    migrated = sum(1 for r in with_idioms if fully_migrated(r, r.path in written))
    fixed: Counter[FixClass] = Counter()
    left: Counter[FixClass] = Counter()
    for result in with_idioms:
        for d in result.diagnostics:
            (fixed if d.fixed and result.path in written else left)[d.fix] += 1
    verb = "would be rewritten" if dry_run else "rewritten"
    out = [
        "# torch_xla → TorchTPU migration report",
        "",
        "| | |",
        "| --- | ---: |",
        f"| Files scanned | {files} |",
        f"| Files with torch_xla idioms | {len(with_idioms)} |",
        f"| Files fully migrated (no torch_xla left) | {migrated} |",
        f"| Files that could not be read | {sum(1 for r in results if r.error)} |",
        "",
        f"| Fix class | Findings | {verb.capitalize()} | Left for a human |",
        "| --- | ---: | ---: | ---: |",
    ]
    for fix in FixClass:
        out.append(f"| {fix.value} | {fixed[fix] + left[fix]} | {fixed[fix]} | {left[fix]} |")
    if dry_run:
        out += ["", "_Dry run (`--diff`): nothing was written._"]
    for result in results:
        out += ["", f"## `{result.path}`", ""]
        if result.error:
            out.append(f"**Could not be processed:** {_cell(result.error)}")
            continue
        done = [d for d in result.diagnostics if d.fixed and result.path in written]
        todo = [d for d in result.diagnostics if d not in done]
        if done:
            out += [f"{verb.capitalize()}:", "", "| Line | Rule | Change |", "| --- | --- | --- |"]
            out += [f"| {position(d)} | {d.code} {_name(catalogue, d.code)} | {_cell(d.message)} |" for d in done]
        if todo:
            out += (["", ""] if done else []) + ["Needs a human:", "", "| Line | Rule | Fix class | What to do |", "| --- | --- | --- | --- |"]
            out += [f"| {position(d)} | {d.code} {_name(catalogue, d.code)} | {d.fix.value} | {_cell(d.message)} |" for d in todo]
    return "\n".join(out) + "\n"


def _name(catalogue: Catalogue, code: str) -> str:
    rule = catalogue.by_code.get(code)
    return f"`{rule.name}`" if rule else ""

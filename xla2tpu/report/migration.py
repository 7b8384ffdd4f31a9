"""`xla2tpu fix --report FILE`: the Markdown a team reads before merging a migration PR.

A summary table first (files scanned, files with idioms, files fully migrated, programs
that run on TorchTPU, findings by fix class), then a verdict per program (a file with a
`__main__` block): "runs on TorchTPU after this fix" (no torch_xla / Optimum TPU import
left, every finding fixed, its launch migrated) with the command that starts it, or the
exact items that still block it; then per file what was rewritten (rule, line) and what
still needs a human, with each rule's guidance.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from xla2tpu.ast_blocks import imported_modules
from xla2tpu.catalogue import Catalogue
from xla2tpu.diagnostics import FileResult, FixClass
from xla2tpu.report.text import position

_LEGACY = b"torch_xla"
_MAIN = re.compile(rb"""^if\s+(?:__name__\s*==\s*["']__main__["']|["']__main__["']\s*==\s*__name__)\s*:""", re.M)
_LAUNCH = "XLA601"  # its fix writes the TorchTPU launch (transforms/launch.py)


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
    programs = [(r, v) for r in with_idioms if not r.error and (v := program_verdict(r, r.path in written)) is not None]
    out = [
        "# torch_xla → TorchTPU migration report",
        "",
        "| | |",
        "| --- | ---: |",
        f"| Files scanned | {files} |",
        f"| Files with torch_xla idioms | {len(with_idioms)} |",
        f"| Files fully migrated (no torch_xla left) | {migrated} |",
        f"| Programs that run on TorchTPU after this fix | {sum(1 for _, v in programs if not v)} of {len(programs)} |",
        f"| Files that could not be read | {sum(1 for r in results if r.error)} |",
        "",
        f"| Fix class | Findings | {verb.capitalize()} | Left for a human |",
        "| --- | ---: | ---: | ---: |",
    ]
    for fix in FixClass:
        out.append(f"| {fix.value} | {fixed[fix] + left[fix]} | {fixed[fix]} | {left[fix]} |")
    if dry_run:
        out += ["", "_Dry run (`--diff`): nothing was written._"]
    if programs:
        out += ["", "## Programs", "", "| Program | Verdict | Start it with, or what still blocks it |", "| --- | --- | --- |"]
        for result, blockers in programs:
            if blockers:
                out.append(f"| `{_cell(result.path)}` | blocked | {_cell('; '.join(blockers))} |")
            else:
                out.append(f"| `{_cell(result.path)}` | runs on TorchTPU after this fix | {_cell(_start(result))} |")
    for result in results:
        out += ["", f"## `{result.path}`", ""]
        if result.error:
            out.append(f"**Could not be processed:** {_cell(result.error)}")
            if not result.diagnostics:
                continue
            out.append("")  # a notebook with a cell that does not parse: the others were processed
        done = [d for d in result.diagnostics if d.fixed and result.path in written]
        todo = [d for d in result.diagnostics if d not in done]
        if done:
            out += [f"{verb.capitalize()}:", "", "| Line | Rule | Change |", "| --- | --- | --- |"]
            out += [f"| {position(d)} | {d.code} {_name(catalogue, d.code)} | {_cell(d.message)} |" for d in done]
        if todo:
            out += (["", ""] if done else []) + ["Needs a human:", "", "| Line | Rule | Fix class | What to do |", "| --- | --- | --- | --- |"]
            out += [f"| {position(d)} | {d.code} {_name(catalogue, d.code)} | {d.fix.value} | {_cell(d.message)} |" for d in todo]
    return "\n".join(out) + "\n"


def program_verdict(result: FileResult, written: bool) -> list[str] | None:
    """None when the file is not a program (no `__main__` block); else what still keeps it
    from running on TorchTPU (empty: it runs): each torch_xla / Optimum TPU import left and
    each finding not fixed, by line."""
    text = result.new_source if result.new_source is not None and written else _on_disk(result.path)
    if text is None or _MAIN.search(text) is None:
        return None
    blockers = [f"line {line} still imports `{name}`" for line, name in _legacy_imports(text)]
    blockers += [f"line {position(d)} {d.code} ({d.fix.value})" for d in result.diagnostics if not (d.fixed and written)]
    return blockers


def _start(result: FileResult) -> str:
    launched = any(d.code == _LAUNCH and d.fixed for d in result.diagnostics)
    command = f"python {result.path}"
    if launched:
        return f"`{command}` (as before; it spawns one worker per TPU chip, each in the \"tpu\" process group)"
    return f"`{command}` (as before)"


def _legacy_imports(text: bytes) -> list[tuple[int, str]]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return [(0, "the file no longer parses")]
    return [(line, name) for line, name in imported_modules(tree)
            if name.split(".")[0] == "torch_xla" or name.startswith("optimum.tpu")]


def _on_disk(path: str) -> bytes | None:
    try:
        return Path(path).read_bytes()
    except OSError:
        return None


def _name(catalogue: Catalogue, code: str) -> str:
    rule = catalogue.by_code.get(code)
    return f"`{rule.name}`" if rule else ""

"""ruff-style text output: `path:line:col: CODE [*] message`, then a summary."""

from __future__ import annotations

from collections.abc import Iterable

import click

from xla2tpu.catalogue.diagnostics import Diagnostic, FileResult, FixClass
from xla2tpu.report.headline import headline


def position(diagnostic: Diagnostic) -> str:
    """`line:col`, or `cell N:line:col` in a notebook (code cells counted from 1)."""
    cell = getattr(diagnostic, "cell", None)
    return f"{'' if cell is None else f'cell {cell}:'}{diagnostic.line}:{diagnostic.col}"


def finding(path: str, diagnostic: Diagnostic, reasons: bool = False) -> str:
    """`path:line:col: CODE [*] headline`, or the whole message with `reasons`."""
    location = click.style(path, bold=True) + f":{position(diagnostic)}:"
    mark = click.style("[*] ", fg="cyan") if diagnostic.fixed else ""
    code = click.style(diagnostic.code, fg="red", bold=True)
    return f"{location} {code} {mark}{_message(diagnostic, reasons)}"


def concise(path: str, diagnostic: Diagnostic, reasons: bool = False) -> str:
    """One plain line a tool can split on `:` (no colour, no summary)."""
    mark = "[*] " if diagnostic.fixed else ""
    return f"{path}:{position(diagnostic)}: {diagnostic.code} {mark}{_message(diagnostic, reasons)}"


def _message(diagnostic: Diagnostic, reasons: bool) -> str:
    return diagnostic.message if reasons else headline(diagnostic.message)


def facts(results: Iterable[FileResult]) -> list[str]:
    """`check --show-facts`: each analysed file's facts, one per line, with where each came from."""
    lines: list[str] = []
    for result in results:
        if result.facts is None:
            continue
        lines.append(f"{result.path}: facts")
        for fact in result.facts:
            where = f"{result.path}:{fact.evidence.line}: " if fact.evidence else ""
            lines.append(f"  {where}{fact.describe()}")
    return lines


def problem(path: str, message: str) -> str:
    return f"{click.style(path, bold=True)}: {click.style('error', fg='red', bold=True)}: {message}"


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def errors_summary(errors: int) -> list[str]:
    return [f"{plural(errors, 'file')} could not be checked (see the errors above)."] if errors else []


def check_summary(diagnostics: Iterable[Diagnostic], unsafe_enabled: bool, errors: int = 0,
                  reasons: bool = True) -> list[str]:
    found = list(diagnostics)
    if not found:
        return errors_summary(errors) or [click.style("All checks passed!", fg="green")]
    fixable = sum(1 for d in found if d.fixed)
    hidden = sum(1 for d in found if d.fix is FixClass.UNSAFE and not d.fixed)
    manual = sum(1 for d in found if d.fix is FixClass.MANUAL)
    lines = [f"Found {plural(len(found), 'finding')}."]
    if fixable:
        flag = " --unsafe-fixes" if unsafe_enabled else ""
        lines.append(f"[*] {fixable} fixable with `xla2tpu fix{flag}`.")
    if hidden:
        lines.append(f"({hidden} more fixable with `xla2tpu fix --unsafe-fixes`.)")
    if manual:
        why = "" if reasons else "`--show-reasons` says why and what to do, "
        lines.append(f"{manual} need a human (manual migration; {why}see `xla2tpu explain CODE`).")
    return lines + errors_summary(errors)


def fix_summary(fixed: int, files: int, remaining: int, dry_run: bool) -> str:
    verb = "Would fix" if dry_run else "Fixed"
    text = f"{verb} {plural(fixed, 'finding')} in {plural(files, 'file')}"
    return text + (f", {remaining} remaining." if remaining else ".")


def unsafe_applied(results: Iterable[FileResult], dry_run: bool) -> list[str]:
    """The unsafe fixes this run applied, each with its message (what may now differ): a
    reviewer reads them before trusting the diff."""
    lines = [f"{r.path}:{position(d)}: {d.code} {d.message}" for r in results for d in r.diagnostics
             if d.fixed and d.fix is FixClass.UNSAFE]
    if not lines:
        return []
    verb = "Would apply" if dry_run else "Applied"
    fixes = "unsafe fix" if len(lines) == 1 else "unsafe fixes"
    return [f"{verb} {len(lines)} {fixes}; check what each says may differ:", *lines]


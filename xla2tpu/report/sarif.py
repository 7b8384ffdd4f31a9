"""`--output-format sarif`: SARIF 2.1.0 for GitHub code scanning and other SARIF viewers.

Every rule of the catalogue is listed (not only those found), so the `ruleIndex` of a
result means the same in every shard's file, and shards merge by concatenating results
(see docs/ci.md). Paths are relative to the project root (`%SRCROOT%`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from xla2tpu import __version__
from xla2tpu.catalogue.rules import Catalogue, Rule
from xla2tpu.catalogue.diagnostics import Diagnostic, FileResult, FixClass

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVELS = {FixClass.SAFE: "warning", FixClass.UNSAFE: "warning", FixClass.MANUAL: "note"}


def docs_base() -> str:
    """Where the rule pages live: the package's Documentation URL, else the repository path."""
    from importlib import metadata  # slow to import, and only SARIF needs it

    try:
        urls = metadata.metadata("xla2tpu").get_all("Project-URL") or []
    except metadata.PackageNotFoundError:
        urls = []
    for entry in urls:
        label, _, url = entry.partition(",")
        if label.strip().lower() == "documentation":
            return url.strip().rstrip("/") + "/rules/"
    return "docs/rules/"


def _what_it_does(rule: Rule) -> str:
    """The docs' first section (`## What it does`), else the summary."""
    for section in ("\n" + rule.docs).split("\n## ")[1:]:
        title, _, body = section.partition("\n")
        if title.strip().lower() == "what it does" and body.strip():
            return body.strip()
    return rule.summary


def _rule(rule: Rule, base: str) -> dict:
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": _what_it_does(rule)},
        "help": {"text": rule.docs, "markdown": rule.docs},
        "helpUri": f"{base}{rule.code}.md",
        "defaultConfiguration": {"level": _LEVELS[rule.best_fix]},
        "properties": {"fix": rule.best_fix.value, "fixable": rule.best_fix is not FixClass.MANUAL, "tags": [rule.area]},
    }


def _uri(path: str, root: Path) -> str:
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix()


def _result(path: str, diagnostic: Diagnostic, index: dict[str, int], root: Path) -> dict:
    cell = getattr(diagnostic, "cell", None)
    location: dict = {"artifactLocation": {"uri": _uri(path, root), "uriBaseId": "%SRCROOT%"}}
    if cell is None:
        location["region"] = {
            "startLine": diagnostic.line,
            "startColumn": diagnostic.col,
            "endLine": diagnostic.end_line or diagnostic.line,
            "endColumn": diagnostic.end_col or diagnostic.col,
        }
    prefix = "" if cell is None else f"cell {cell}, line {diagnostic.line}: "
    result = {
        "ruleId": diagnostic.code,
        "level": _LEVELS[diagnostic.fix],
        "message": {"text": prefix + diagnostic.message},
        "locations": [{"physicalLocation": location}],
        "properties": {"fixClass": diagnostic.fix.value, "fixAvailable": diagnostic.fixable, "fixApplied": diagnostic.fixed},
    }
    if diagnostic.code in index:
        result["ruleIndex"] = index[diagnostic.code]
    if cell is not None:
        result["properties"]["cell"] = cell
    return result


def document(results: Sequence[FileResult], catalogue: Catalogue, root: Path) -> dict:
    base = docs_base()
    rules = list(catalogue.rules)
    index = {rule.code: number for number, rule in enumerate(rules)}
    errors = [r for r in results if r.error]
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "xla2tpu",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": [_rule(rule, base) for rule in rules],
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"uri": root.resolve().as_uri() + "/"}},
                "results": [_result(r.path, d, index, root) for r in results for d in r.diagnostics],
                "invocations": [
                    {
                        "executionSuccessful": not any(r.internal_error for r in results),
                        "toolExecutionNotifications": [
                            {
                                "level": "error",
                                "message": {"text": r.error},
                                "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(r.path, root), "uriBaseId": "%SRCROOT%"}}}],
                            }
                            for r in errors
                        ],
                    }
                ],
            }
        ],
    }


def render(results: Sequence[FileResult], catalogue: Catalogue, root: Path) -> str:
    return json.dumps(document(results, catalogue, root), indent=2, ensure_ascii=False) + "\n"

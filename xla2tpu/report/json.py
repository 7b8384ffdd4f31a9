"""`--output-format json`: one document with every finding, every file error and the facts
of every analysed file.

Shards merge with `jq -s '{version: .[0].version, findings: map(.findings) | add,
errors: map(.errors) | add}'` (see docs/ci.md).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from xla2tpu import __version__
from xla2tpu.catalogue.diagnostics import Diagnostic, FileResult


def finding(path: str, diagnostic: Diagnostic) -> dict:
    return {
        "filename": path,
        "cell": getattr(diagnostic, "cell", None),
        "location": {"row": diagnostic.line, "column": diagnostic.col},
        "end_location": {"row": diagnostic.end_line or diagnostic.line, "column": diagnostic.end_col or diagnostic.col},
        "code": diagnostic.code,
        "message": diagnostic.message,
        "fix": {"applicability": diagnostic.fix.value, "applied": diagnostic.fixed},
    }


def document(results: Sequence[FileResult], statistics: list[dict] | None = None) -> dict:
    out: dict = {
        "tool": "xla2tpu",
        "version": __version__,
        "findings": [finding(r.path, d) for r in results for d in r.diagnostics],
        "errors": [{"filename": r.path, "message": r.error} for r in results if r.error],
        # What each analysed file is (xla2tpu/project/facts.py), each fact with the line it came from.
        "files": [{"filename": r.path, "facts": r.facts.as_json()} for r in results if r.facts is not None],
    }
    if statistics is not None:
        out["statistics"] = statistics
    return out


def render(results: Sequence[FileResult], statistics: list[dict] | None = None) -> str:
    return json.dumps(document(results, statistics), indent=2, ensure_ascii=False) + "\n"

"""`--output-format github`: GitHub Actions workflow commands, shown as annotations on the PR."""

from __future__ import annotations

from collections.abc import Sequence

from xla2tpu.catalogue.diagnostics import FileResult
from xla2tpu.report.text import concise


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def lines(results: Sequence[FileResult]) -> list[str]:
    out = []
    for result in results:
        for d in result.diagnostics:
            if getattr(d, "cell", None) is None:
                where = f"line={d.line},col={d.col},endLine={d.end_line or d.line},endColumn={d.end_col or d.col}"
            else:  # GitHub cannot point into a notebook cell: the message names it
                where = "line=1"
            title = _property(f"xla2tpu ({d.code})")
            out.append(f"::error title={title},file={_property(result.path)},{where}::{_data(concise(result.path, d, reasons=True))}")
        if result.error:
            out.append(f"::error title=xla2tpu,file={_property(result.path)}::{_data(result.path + ': error: ' + result.error)}")
    return out


"""`--statistics`: how many findings each rule has, and whether `fix` can rewrite them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from xla2tpu.catalogue.rules import Catalogue
from xla2tpu.catalogue.diagnostics import Diagnostic


@dataclass(frozen=True)
class Row:
    code: str
    name: str
    count: int
    fixable: int  # of `count`, fixed (or fixable) with the flags given

    def as_dict(self) -> dict:
        return {"code": self.code, "name": self.name, "count": self.count, "fixable": self.fixable}


def rows(diagnostics: Iterable[Diagnostic], catalogue: Catalogue) -> list[Row]:
    """Most frequent first, then by code."""
    counts: Counter[str] = Counter()
    fixable: Counter[str] = Counter()
    for diagnostic in diagnostics:
        counts[diagnostic.code] += 1
        fixable[diagnostic.code] += diagnostic.fixed
    ordered = sorted(counts, key=lambda code: (-counts[code], code))
    return [Row(code, catalogue.by_code[code].name if code in catalogue.by_code else "", counts[code], fixable[code]) for code in ordered]


def lines(table: list[Row]) -> list[str]:
    """ruff's layout: count, code, `[*]` when every one is fixable, name."""
    if not table:
        return []
    width = max(len(str(row.count)) for row in table)
    out = []
    for row in table:
        mark = "[*]" if row.fixable == row.count else ("[-]" if row.fixable else "   ")
        out.append(f"{row.count:>{width}}\t{row.code}\t{mark} {row.name}")
    return out

"""What a run asks of the engine for one file. Kept free of libcst, so a run whose files
are all cached never imports it."""

from __future__ import annotations

from dataclasses import dataclass

from xla2tpu.catalogue.diagnostics import FixClass
from xla2tpu.project.line_length import DEFAULT


@dataclass(frozen=True)
class Settings:
    selected: frozenset[str]
    apply: frozenset[FixClass]  # fix classes applied (or, for check, shown as applicable)
    target: str = "eager"
    line_length: int = DEFAULT  # generated lines longer than this are wrapped (wrap.py)
    # Whether the fixed code is wanted: `check` asks for the findings only, which the
    # detector can often tell without writing the fixes (engine.py).
    rewrite: bool = True

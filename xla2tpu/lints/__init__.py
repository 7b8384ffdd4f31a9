"""Analyses for `kind = "lint"` rules: findings that depend on context (the loop around a
call, say) rather than on one site. A lint is a pure function of one top-level statement of
CPython's tree returning `Hit`s, so what it finds may not depend on other statements; the
rewriter calls it for each top-level statement whose lines satisfy the rule's `when`, so a
`file-matches` gate there also spares it the statements that cannot hold a finding. It
reads CPython's tree only: LibCST parses no statement for a lint's sake. The rewriter
reports each hit with the rule's cases (always manual), where LibCST would put the node
(detect/positions.py). Register one with `@lint("name")` in a module of this package and
import it below.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Hit:
    node: ast.AST  # reported at this node's position; `{source}` is its code
    what: str  # a short description; conditions see it as the site's value


LintFn = Callable[[ast.stmt], list[Hit]]
LINTS: dict[str, LintFn] = {}


def lint(name: str) -> Callable[[LintFn], LintFn]:
    def register(function: LintFn) -> LintFn:
        LINTS[name] = function
        return function

    return register


# Lint modules register themselves on import (kept last: they import this module).
from xla2tpu.lints import host_sync  # noqa: E402,F401

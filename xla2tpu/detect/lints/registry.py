"""What a lint returns (`Hit`), and the registry it joins with `@lint("name")`."""


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

"""The blocks of a compound statement in CPython's tree: shared by the facts stage, which
must not import LibCST (a fully cached run never loads it), and the layout of a file."""

from __future__ import annotations

import ast


def blocks(node: ast.AST) -> list[list[ast.AST]]:
    """The blocks of a compound statement (or of a `case`), in source order: its body, its
    `case`s, its handlers' bodies, its `else` and `finally` (`elif` is an `if` in `else`)."""
    found: list[list[ast.AST]] = [getattr(node, f) for f in ("body", "cases") if isinstance(getattr(node, f, None), list)]
    found += [handler.body for handler in getattr(node, "handlers", ())]
    found += [getattr(node, f) for f in ("orelse", "finalbody") if getattr(node, f, None)]
    return found

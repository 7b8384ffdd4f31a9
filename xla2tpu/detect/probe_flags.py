"""Availability flags: module-level names that record whether torch_xla imports
(`XLA_AVAILABLE = True` under `if is_torch_xla_available():`, `_HAS_XLA = False` in the
`except ImportError:` of a `try:` that imports it). Once the fixes take every read of one
(`if XLA_AVAILABLE: xm.mark_step()`), rewrite/dead_flags.py removes it with the probe that
set it. Which reads the fixes take is known only by making them: a file that may define such
a flag is not judged on CPython's tree alone (detect/after_fixes.py)."""

from __future__ import annotations

import ast

from xla2tpu.sources.prefilter import holds_token
from xla2tpu.trees.blocks import module_level


def flag_name(name: str) -> bool:
    """A name a flag of torch_xla's availability may have: one holding a prefilter token
    (`XLA_AVAILABLE`, `_HAS_XLA`, `USE_TPU`). Every statement that reads such a name holds
    the token, so no parse plan leaves it out (rewrite/parse_plan.py), and the project model
    knows which other modules import it (project/model.py, `Context.imported_flags`)."""
    return holds_token(name)


def may_define(tree: ast.Module) -> bool:
    """Whether a statement the module runs when it loads assigns a flag name by itself."""
    return any(isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
               and flag_name(node.targets[0].id) for node in module_level(tree.body))

"""An expression pattern's text (patterns.py's language: `{d}.type == "xla"`), read
without a tree: its slots and the key type both trees' matchers share. Nothing here
imports LibCST."""

from __future__ import annotations

import re

_SLOT = re.compile(r"\{([A-Za-z_]\w*)\}")
_SLOT_NAME = re.compile(r"^__xla2tpu_pattern_([A-Za-z_]\w*)__$")

Key = tuple[str, object]  # a node kind and what tells its patterns apart


def placeholders(text: str) -> str:
    """The pattern as parseable Python: each `{name}` slot becomes a placeholder identifier."""
    return _SLOT.sub(r"__xla2tpu_pattern_\1__", text)


def slot_name(identifier: str) -> str | None:
    """The slot a placeholder identifier stands for, else None."""
    found = _SLOT_NAME.match(identifier)
    return found.group(1) if found else None


def has_slot(name: str) -> bool:
    """Whether a dotted name from a pattern goes through a slot (`{x}.is_tpu`)."""
    return "__xla2tpu_pattern_" in name

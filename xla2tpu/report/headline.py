"""A finding's one-line headline: what the default text output prints, as ruff prints one
short line per finding. The full message (why the fix is made or withheld, what to do, the
facts it rests on) is one flag away (`--show-reasons`) and in the JSON and SARIF outputs.

A message reads "`source` → `replacement` (unsafe: why): ..." or "`source` is X: do Y; or Z
[because fact=value (evidence)]": its headline is its first clause, cut at the first ": ",
" (", "; " or ". " outside a code span, where that leaves a replacement ("→") or a few words
beside the code; a fix that was offered but not made says so.
"""

from __future__ import annotations

import re

_FACTS = " [because "  # the facts a case tested, appended to its message (conditions.explained)
_BOUNDARIES = (": ", " (", "; ", ". ")
_WITHHELD = "(not rewritten"
_MIN_WORDS = 3  # beside the code spans: "`xr.world_size()`" alone says nothing
_ARROW = " → "  # "`xm.xla_device()` → `torch.device(\"tpu\")`" says it all


def headline(message: str) -> str:
    """The first clause of `message` (see the module's doc)."""
    text = message.split(_FACTS, 1)[0]
    for cut in _cuts(text):
        head = text[:cut].rstrip(" .:;,")
        if _ARROW in head or _words(head) >= _MIN_WORDS:
            break
    else:
        head = text.rstrip(" .")
    if _WITHHELD in text[len(head):]:
        head += " (not rewritten)"
    return head


def _cuts(text: str) -> list[int]:
    """Where a clause may end: the boundaries outside code spans, in order."""
    cuts = []
    inside = False
    for index, char in enumerate(text):
        if char == "`":
            inside = not inside
        elif not inside and text.startswith(_BOUNDARIES, index):
            cuts.append(index)
    return cuts


def _words(head: str) -> int:
    """The words of `head` outside its code spans."""
    return len(re.sub(r"`[^`]*`", " ", head).split())

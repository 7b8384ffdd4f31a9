"""Cosmetic artefacts of a fix, found mechanically in an ecosystem run's outputs.

    .venv/bin/python bench/ecosystem_cosmetic.py [--work DIR] [--list]

Reads WORK/src (the input) and WORK/fixed (after `fix --unsafe-fixes`) and counts, in the
lines the fix added, what a reviewer would clean up by hand (issue 15): a block emptied to
`pass`, an `if` whose two branches became the same, a block that opens with a blank line,
a comment left above a deleted statement with nothing after it to describe, a new block
indented unlike the block it lands in, a generated line longer than the project's line
length, the same statement twice in a row, a loop over a one-element list, a plain
`a = b` alias. The review still reads the diffs: this count is what it can check by rule.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from ecosystem_facts import code_of
from long_lines import long_generated  # it puts the repository on sys.path

from xla2tpu.project.line_length import LineLengths  # noqa: E402

DEFAULT_WORK = Path("/tmp/xla2tpu-ecosystem")
KINDS = ("emptied block", "identical branches", "blank first line", "orphaned comment",
         "foreign indentation", "long generated line", "repeated statement", "one-element loop", "alias")


def _text(path: Path) -> str | None:
    data = path.read_bytes()
    if path.suffix == ".ipynb":
        return code_of(path.name, data)
    return data.decode("utf-8", "replace")


def _added(old: list[str], new: list[str]) -> set[int]:
    """0-based numbers of the lines of `new` the fix added or changed."""
    added: set[int] = set()
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            added.update(range(j1, j2))
    return added


def _blank_first_lines(text: str) -> list[int]:
    """0-based lines of the blank lines that open a block (right below its header)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    lines = text.splitlines()
    found = []
    for node, field, body in _blocks(tree):
        if field != "body" or isinstance(node, ast.Module):
            continue
        first = body[0]
        start = min([first.lineno, *(d.lineno for d in getattr(first, "decorator_list", []))]) - 1
        header = start - 1
        while header >= 0 and (not lines[header].strip() or _COMMENT.match(lines[header])):
            header -= 1
        if header >= 0 and lines[header].rstrip().endswith(":") and not lines[header + 1].strip():
            found.append(header + 1)
    return found


def _orphaned_comments(old: list[str], new: list[str]) -> list[int]:
    """Output lines of kept comments whose statement right below was deleted, now left
    above nothing they could describe: a blank line, a dedent, `pass` or the end."""
    found = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    kept = {i: j for tag, i1, i2, j1, _ in matcher.get_opcodes() if tag == "equal" for i, j in zip(range(i1, i2), range(j1, i2 - i1 + j1))}
    for i, j in kept.items():
        if not _COMMENT.match(old[i]) or i + 1 >= len(old) or i + 1 in kept or not old[i + 1].strip():
            continue
        below = new[j + 1] if j + 1 < len(new) else ""
        if not below.strip() or _indent(below) < _indent(old[i]) or below.strip() == "pass":
            found.append(j)
    return found


def _blocks(tree: ast.AST) -> Iterator[tuple[ast.AST, str, list[ast.stmt]]]:
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody", "handlers"):
            body = getattr(node, field, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                yield node, field, body
        if isinstance(node, ast.ExceptHandler):
            yield node, "body", node.body


_COMMENT = re.compile(r"^\s*#")
_ONE_ELEMENT_LOOP = re.compile(r"^\s*for\s+\w+\s+in\s+[\[(][^,\[\]()]+,?[\])]\s*:")
_ALIAS = re.compile(r"^\s*(\w+)\s*=\s*(\w+)\s*(#.*)?$")


def artefacts(old_text: str, new_text: str, limit: int) -> list[tuple[str, int, str]]:
    """(kind, 1-based line in the output, the line) of each artefact the fix added."""
    old, new = old_text.splitlines(), new_text.splitlines()
    added = _added(old, new)
    found: list[tuple[str, int, str]] = []

    def add(kind: str, index: int) -> None:
        found.append((kind, index + 1, new[index].strip()))

    try:
        tree = ast.parse(new_text)
    except SyntaxError:
        tree = None
    if tree is not None:
        for node, field, body in _blocks(tree):
            first = body[0]
            if len(body) == 1 and isinstance(first, ast.Pass) and first.lineno - 1 in added:
                add("emptied block", first.lineno - 1)
            if isinstance(node, ast.If) and field == "body" and node.orelse and not isinstance(node.orelse[0], ast.If):
                same = [ast.dump(s) for s in node.body] == [ast.dump(s) for s in node.orelse]
                if same and any(line in added for line in range(node.lineno - 1, node.end_lineno or node.lineno)):
                    add("identical branches", node.lineno - 1)
    blank_old, blank_new = _blank_first_lines(old_text), _blank_first_lines(new_text)
    for index in blank_new[: max(0, len(blank_new) - len(blank_old))]:
        add("blank first line", index)
    for index in _orphaned_comments(old, new):
        add("orphaned comment", index)
    for index in long_generated(old_text, new_text, limit):
        add("long generated line", index)
    for index in sorted(added):
        line = new[index]
        if index and line.strip() and line == new[index - 1] and not _COMMENT.match(line):
            add("repeated statement", index)
        if _ONE_ELEMENT_LOOP.match(line):
            add("one-element loop", index)
        alias = _ALIAS.match(line)
        if alias and alias.group(2) not in ("None", "True", "False") and not _rebound(alias.group(1), new[index + 1:]):
            add("alias", index)
        if index and new[index - 1].rstrip().endswith(":") and line.strip() and index - 1 in added:
            unit = _unit(new, index - 1)
            if unit and _indent(line) - _indent(new[index - 1]) not in (0, unit):
                add("foreign indentation", index)
    return found


_ASSIGNMENT = re.compile(r"^([^=]*?[^=!<>])=(?!=)")


def _rebound(name: str, lines: list[str]) -> bool:
    """Whether `name` is assigned again below: then `name = other` starts a value (a loop's
    carry), not an alias."""
    for line in lines:
        left = _ASSIGNMENT.match(line)
        if left and re.search(rf"\b{re.escape(name)}\b", left.group(1)):
            return True
    return False


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _unit(lines: list[str], header: int) -> int:
    """The indent step of the block `header` sits in: its own indent minus its parent's."""
    own = _indent(lines[header])
    for line in reversed(lines[:header]):
        if line.strip() and not _COMMENT.match(line) and _indent(line) < own:
            return own - _indent(line)
    return 0


def scan(work: Path) -> list[tuple[str, str, int, str]]:
    """(kind, path, line, text) of every artefact in the run at `work`."""
    found = []
    lengths = LineLengths()  # each repository's, from the `.ruff.toml` the extraction writes
    fixed_root = work / "fixed"
    for fixed in sorted(fixed_root.rglob("*")):
        if not fixed.is_file() or fixed.suffix not in (".py", ".ipynb"):
            continue
        relative = fixed.relative_to(fixed_root)
        source = work / "src" / relative
        if not source.is_file() or source.read_bytes() == fixed.read_bytes():
            continue
        old, new = _text(source), _text(fixed)
        if old is None or new is None:
            continue
        limit = lengths.of(str(source))
        for kind, line, text in artefacts(old, new, limit):
            found.append((kind, relative.as_posix(), line, text))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK)
    parser.add_argument("--list", action="store_true", help="list every artefact, not only the counts")
    args = parser.parse_args()
    found = scan(args.work)
    counts = Counter(kind for kind, *_ in found)
    for kind in KINDS:
        print(f"{counts[kind]:5d}  {kind}")
    print(f"{len(found):5d}  total")
    if args.list:
        for kind, path, line, text in found:
            print(f"{path}:{line}: {kind}: {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""File rules (`kind = "file"`): a verdict on the whole file, taken before the rewrite pass.

A file rule either tests the file's facts (facts.py) in its rule-level `when`, and is
reported at the evidence of its first fact, or has a `pattern`, searched in the file's
code with comments and docstrings blanked out, so prose about a setting never counts as
the setting, and reported at the first match. The codes in its `disable` list are then
switched off for that file: e.g. a file that sets `PJRT_DEVICE=CPU` runs XLA on a CPU,
so XLA100 (`disable = ["ALL"]`) stops every rule there.
"""

from __future__ import annotations

import io
import tokenize
from dataclasses import dataclass

from xla2tpu.catalogue.rules import Catalogue, Rule
from xla2tpu.detect.conditions import Site, applies
from xla2tpu.project.facts import UNKNOWN, Facts

_LAYOUT_TOKENS = (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING)


@dataclass(frozen=True)
class Verdict:
    rule: Rule
    line: int  # 1-based
    col: int  # 0-based
    end_col: int
    text: str  # the line of the first match, whitespace collapsed


def code_only(source: str) -> str:
    """`source` with comments and docstrings replaced by spaces; line and column offsets kept."""
    lines = source.splitlines(keepends=True)
    blanks: list[tuple[tuple[int, int], tuple[int, int]]] = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return source
    previous = None
    for index, token in enumerate(tokens):
        if token.type == tokenize.COMMENT:
            blanks.append((token.start, token.end))
        elif token.type == tokenize.STRING:
            following = next((t for t in tokens[index + 1 :] if t.type != tokenize.COMMENT), None)
            statement_start = previous is None or previous.type in _LAYOUT_TOKENS
            if statement_start and (following is None or following.type in (tokenize.NEWLINE, tokenize.ENDMARKER)):
                blanks.append((token.start, token.end))
        if token.type not in (tokenize.COMMENT, tokenize.NL):
            previous = token
    for (start_line, start_col), (end_line, end_col) in blanks:
        for number in range(start_line, end_line + 1):
            line = lines[number - 1]
            begin = start_col if number == start_line else 0
            end = end_col if number == end_line else len(line.rstrip("\r\n"))
            lines[number - 1] = line[:begin] + " " * (end - begin) + line[end:]
    return "".join(lines)


def verdicts(catalogue: Catalogue, selected: frozenset[str], source: str, facts: Facts = UNKNOWN) -> list[Verdict]:
    """The file rules that fire on `source`, each with its first match (or, for a rule that
    judges by facts, the evidence of its first fact)."""
    found: list[Verdict] = []
    code: str | None = None
    for rule in catalogue.rules:
        if rule.kind != "file" or rule.code not in selected:
            continue
        if rule.pattern is None:  # a verdict on the file's facts
            if applies(rule, Site(target="", source=source, facts=facts)):
                fact = facts.get(next(c.arg for c in rule.when if c.kind == "fact"))
                if fact.evidence is not None:
                    e = fact.evidence
                    found.append(Verdict(rule, e.line, e.col, e.end_col, e.text))
                else:  # a fact known from where the file lives, not from a line of it
                    found.append(Verdict(rule, 1, 0, 0, fact.reason))
            continue
        if rule.pattern.search(source) is None:  # cheap test on the raw text first
            continue
        code = code if code is not None else code_only(source)
        match = rule.pattern.search(code)
        if match is None:
            continue
        line = code.count("\n", 0, match.start()) + 1
        col = match.start() - (code.rfind("\n", 0, match.start()) + 1)
        text = " ".join(code.splitlines()[line - 1].split())
        found.append(Verdict(rule, line, col, col + len(match.group(0).split("\n", 1)[0]), text))
    return found


def disabled(catalogue: Catalogue, found: list[Verdict]) -> frozenset[str]:
    """The codes the firing file rules switch off (prefixes as in `--select`)."""
    prefixes = [prefix for verdict in found for prefix in verdict.rule.disable]
    return catalogue.select(prefixes, []) if prefixes else frozenset()


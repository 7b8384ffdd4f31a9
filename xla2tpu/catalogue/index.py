"""Lookup tables over the selected rules, built once per process and settings."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from xla2tpu.catalogue.rules import Catalogue, Rule


@dataclass(frozen=True)
class _Matcher:
    exact: dict[str, tuple[Rule, ...]]
    prefixes: tuple[tuple[str, Rule], ...]  # longest prefix first

    def find(self, qualname: str) -> Rule | None:
        rules = self.exact.get(qualname)
        if rules:
            return rules[0]
        for prefix, rule in self.prefixes:
            if qualname.startswith(prefix):
                return rule
        return None


def _matcher(rules: list[Rule]) -> _Matcher:
    exact: dict[str, list[Rule]] = {}
    prefixes: list[tuple[str, Rule]] = []
    for rule in rules:
        for pattern in rule.match:
            if pattern.endswith(".*"):
                prefixes.append((pattern[:-1], rule))
            else:
                exact.setdefault(pattern, []).append(rule)
    prefixes.sort(key=lambda item: -len(item[0]))
    return _Matcher({k: tuple(v) for k, v in exact.items()}, tuple(prefixes))


@dataclass(frozen=True)
class RuleIndex:
    calls: _Matcher
    references: _Matcher
    imports: _Matcher
    env: dict[str, Rule]
    string_args: tuple[Rule, ...]
    # Qualified names that a call rule owns, so reference rules leave those callees alone.
    call_names: frozenset[str]
    # Expression patterns (their text, patterns.py) with their rules, in catalogue order: each
    # tree compiles them its own way.
    expressions: tuple[tuple[str, Rule], ...]
    lints: tuple[Rule, ...] = ()


@functools.cache
def build(catalogue: Catalogue, selected: frozenset[str]) -> RuleIndex:
    chosen = [rule for rule in catalogue.rules if rule.code in selected]

    def of(kind: str) -> list[Rule]:
        return [rule for rule in chosen if rule.kind == kind]

    env: dict[str, Rule] = {}
    for rule in of("env"):
        for variable in rule.match:
            env.setdefault(variable, rule)
    calls = of("call")
    return RuleIndex(
        calls=_matcher(calls),
        references=_matcher(of("reference")),
        imports=_matcher(of("import")),
        env=env,
        string_args=tuple(of("string-arg")),
        call_names=frozenset(name for rule in calls for name in rule.match),
        expressions=tuple((text, rule) for rule in of("expression") for text in rule.match),
        lints=tuple(of("lint")),
    )

"""The rule catalogue: loads `rules/*.toml` (data) into typed rules, and validates it.

A rule matches one kind of site (a call, a reference, a string argument, an environment
variable write, an import) and carries ordered cases; the first case whose conditions
hold decides the message, the fix class and the fix. See docs/writing-rules.md.
"""

from __future__ import annotations

import ast
import functools
import re
import tomllib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from xla2tpu.catalogue.diagnostics import FixClass
from xla2tpu.project.facts import VALUES as FACT_VALUES

KINDS = ("call", "reference", "string-arg", "env", "import", "expression", "file", "lint", "project")
ACTIONS = ("replace", "delete", "rename", "remove-import", "transform", "none")
_CODE_RE = re.compile(r"^XLA\d{3}$")


class CatalogueError(Exception):
    """The rule data is malformed; a bug in xla2tpu, never the user's input."""


@dataclass(frozen=True)
class Condition:
    """One test a case needs. `kind` names the test; `arg`/`value` parametrise it."""

    kind: str
    arg: str = ""
    value: object = None

    @classmethod
    def parse(cls, text: str) -> Condition:
        kind, _, rest = text.partition(":")
        negate = kind.startswith("not-")
        base = kind[4:] if negate else kind
        if base not in _CONDITION_KINDS:
            raise CatalogueError(f"unknown condition {text!r}")
        if base == "any":
            return cls(kind, "", tuple(cls.parse(part.strip()) for part in rest.split(" || ")))
        if base in ("literal", "value"):
            arg, _, literal = rest.partition("=") if base == "literal" else ("", "", rest)
            try:
                value: object = ast.literal_eval(literal)
            except (ValueError, SyntaxError):
                value = literal
            return cls(kind, arg, value)
        if base == "dotted":  # dotted:PARAM=A.B
            arg, _, name = rest.partition("=")
            return cls(kind, arg, name)
        if base == "fact":  # fact:NAME=V1|V2, or fact:NAME for a yes/no fact
            name, _, values = rest.partition("=")
            allowed = FACT_VALUES.get(name)
            chosen = tuple(values.split("|")) if values else ("yes",)
            if allowed is None or not set(chosen) <= set(allowed):
                raise CatalogueError(f"unknown fact or value in {text!r}: facts are {FACT_VALUES}")
            return cls(kind, name, chosen)
        return cls(kind, rest)



def _flat(conditions: Sequence[Condition]) -> Iterator[Condition]:
    """The conditions, with those inside `any:` groups."""
    for condition in conditions:
        if condition.kind.removeprefix("not-") == "any":
            yield from _flat(condition.value)  # type: ignore[arg-type]
        else:
            yield condition

# The conditions on a call's argument: each names one of the rule's parameters.
ARGUMENT_CONDITIONS = frozenset({"absent", "present", "literal", "falsy", "simple", "dotted", "plain"})

_CONDITION_KINDS = {
    "absent",  # absent:PARAM — the call does not pass PARAM
    "present",  # present:PARAM
    "falsy",  # falsy:PARAM — PARAM is absent or passed as False/None/0
    "literal",  # literal:PARAM=VALUE — PARAM is passed as that Python literal
    "statement",  # the call is a whole expression statement
    "discarded",  # the call's value goes unused: a whole statement, or `x = call()` with `x` read nowhere (or `_`)
    "target",  # target:eager|compile
    "file-contains",  # file-contains:TEXT — the file's source mentions TEXT
    "value",  # value:V — the string/env value is exactly V
    "unused",  # the import binds nothing used after the fixes
    "guarded",  # the import decides a `try:` / `except ImportError` block (rewrite/import_pass.py)
    "read-back",  # an env write whose variable the same file also reads
    "after",  # after:CALLEE({p}, {_}) — an earlier call of the same function (detect/ast_earlier.py)
    "then",  # then:CALLEE({p}) — the call of the statement that runs next (detect/ast_earlier.py)
    "guarded-by",  # guarded-by:CALLEE() — the statement is all of `if not CALLEE():` (detect/ast_earlier.py)
    "tensor",  # tensor:SLOT — the expression slot is known to be a tensor (tensors.py)
    "compared",  # the call is an operand of a comparison (`x.device == xm.xla_device()`)
    "top-level",  # the site is at module level (not inside a def)
    "setup-branch",  # the site is in the XLA branch of an if/elif chain whose other branches call init_process_group
    "launch-parent",  # the site runs only in the parent of the file's torch_xla launch (detect/launch_site.py)
    "spmd-program",  # the file is a torch_xla SPMD program that migrates whole (detect/spmd_program.py)
    "spmd-fsdp",  # that program wraps its model in FSDPv2, which becomes FSDP2 (spmd_program.Program.fsdp)
    "class-base",  # class-base:A|B — the site is in a method of a class with a base named A or B (last name)
    "name",  # name:A|B — the matched name (or env variable) is one of these (`prefix.*` allowed)
    "file-matches",  # file-matches:REGEX — the file's source contains a match of REGEX
    "store",  # the reference is assigned to (`em.eager_mode = ...`); see `assignments`
    "with-item",  # the call is a `with` item binding no name (`with f():`, not `with f() as x:`)
    "simple",  # simple:PARAM — PARAM is passed as a literal or a (dotted) name: safe to repeat
    "plain",  # plain:PARAM — PARAM is passed as a bare name (`x`, not `m.weight` or `m[0]`)
    "dotted",  # dotted:PARAM=A.B — PARAM is passed as the dotted name A.B (or its last part, B, imported)
    "fact",  # fact:NAME=V1|V2 — the file's fact NAME has one of these values (xla2tpu/project/facts.py)
    "any",  # any:COND || COND — one of these conditions holds
}


@dataclass(frozen=True)
class Case:
    when: tuple[Condition, ...]
    fix: FixClass
    message: str
    action: str  # one of ACTIONS
    template: str = ""  # for replace (an expression or statement) and rename (a dotted name)
    # Expression rules: the `match` patterns this case is for (empty: any of the rule's).
    forms: tuple[str, ...] = ()
    # Chosen only where the site refuses the transform of the case before it (detect/sites.py).
    fallback: bool = False

    @property
    def fixable(self) -> bool:
        return self.fix is not FixClass.MANUAL and self.action != "none"


@dataclass(frozen=True)
class Site:
    """Where a string-arg rule looks: a call (or a method name) and an argument slot."""

    calls: tuple[str, ...] = ()  # qualified callee names; empty = any callee
    method: str = ""  # attribute name of the callee, for `.to(...)`-style methods
    position: int | None = None
    keyword: str = ""


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    kind: str
    area: str
    summary: str
    docs: str
    ref: tuple[str, ...]
    match: tuple[str, ...]
    params: tuple[str, ...]
    cases: tuple[Case, ...]
    sites: tuple[Site, ...] = ()
    # Regex a string value must fully match for string-arg rules; for file rules, a regex
    # searched in the file's code (comments and docstrings left out). None: any.
    pattern: re.Pattern[str] | None = None
    # Conditions the whole rule needs: when one fails, the site is not reported at all.
    when: tuple[Condition, ...] = ()
    # Reference rules: also rewrite the name where it is assigned to (settable attributes).
    assignments: bool = False
    # File rules: codes (or prefixes) switched off for a file the rule fires on.
    disable: tuple[str, ...] = ()

    @property
    def fix_classes(self) -> set[FixClass]:
        return {case.fix for case in self.cases if case.fixable}

    @property
    def best_fix(self) -> FixClass:
        classes = self.fix_classes
        for fix in (FixClass.SAFE, FixClass.UNSAFE):
            if fix in classes:
                return fix
        return FixClass.MANUAL


# Identity-hashed: one catalogue object per process keys the index caches.
@dataclass(frozen=True, eq=False)
class Catalogue:
    rules: tuple[Rule, ...]
    module_renames: dict[str, str] = field(default_factory=dict)

    @functools.cached_property
    def by_code(self) -> dict[str, Rule]:
        return {rule.code: rule for rule in self.rules}

    def select(self, selectors: list[str], ignores: list[str]) -> frozenset[str]:
        """Codes chosen by ruff-style prefixes (`XLA`, `XLA1`, `XLA101`, `ALL`)."""
        chosen = {code for code in self.by_code if any(_prefix_hit(code, s) for s in selectors)}
        return frozenset(c for c in chosen if not any(_prefix_hit(c, i) for i in ignores))

    def unknown_selectors(self, selectors: list[str]) -> list[str]:
        return [s for s in selectors if not any(_prefix_hit(code, s) for code in self.by_code)]

    def __iter__(self) -> Iterator[Rule]:
        return iter(self.rules)


def _prefix_hit(code: str, selector: str) -> bool:
    return selector == "ALL" or code.startswith(selector)


def rules_dir() -> Path:
    """`rules/` of a source checkout, or the copy the wheel ships inside the package."""
    here = Path(__file__).resolve().parents[1]  # the xla2tpu package
    for candidate in (here / "_rules", here.parent / "rules"):
        if candidate.is_dir():
            return candidate
    raise CatalogueError(f"rule catalogue not found next to {here}")


@functools.cache
def load(directory: Path | None = None) -> Catalogue:
    directory = directory or rules_dir()
    rules: list[Rule] = []
    renames: dict[str, str] = {}
    for path in sorted(directory.glob("*.toml")):
        with path.open("rb") as handle:
            data = tomllib.load(handle)
        renames.update(data.get("module_renames", {}))
        for raw in data.get("rule", []):
            try:
                rules.append(_rule(raw, area=path.stem))
            except (KeyError, TypeError, ValueError) as exc:
                raise CatalogueError(f"{path.name}: rule {raw.get('code', '?')}: {exc!r}") from exc
    catalogue = Catalogue(tuple(sorted(rules, key=lambda r: r.code)), renames)
    _validate(catalogue)
    return catalogue


def _implied_action(case: dict) -> str:
    for action in ("replace", "rename", "transform"):
        if action in case:
            return action
    return "none"


def _rule(raw: dict, area: str) -> Rule:
    default_message = raw.get("message", "")
    default_fix = raw.get("fix", "manual")
    cases = tuple(
        Case(
            when=tuple(Condition.parse(c) for c in case.get("when", [])),
            fix=FixClass(case.get("fix", default_fix)),
            message=case.get("message", default_message),
            action=case.get("action", _implied_action(case)),
            template=case.get("replace", case.get("rename", case.get("transform", ""))),
            forms=tuple(case.get("match", ())),
            fallback=case.get("fallback", False),
        )
        for case in raw.get("case", [{}])
    )
    sites = tuple(
        Site(
            calls=tuple(site.get("call", ())),
            method=site.get("method", ""),
            position=site.get("position"),
            keyword=site.get("keyword", ""),
        )
        for site in raw.get("site", [])
    )
    ref = raw.get("ref", [])
    match = raw.get("match") or [form for case in cases for form in case.forms]
    return Rule(
        code=raw["code"],
        name=raw["name"],
        kind=raw["kind"],
        area=area,
        summary=raw["summary"],
        docs=raw["docs"].strip(),
        ref=tuple([ref] if isinstance(ref, str) else ref),
        match=tuple(dict.fromkeys(match)),
        params=tuple(raw.get("params", ())),
        cases=cases,
        sites=sites,
        pattern=re.compile(raw["pattern"]) if "pattern" in raw else None,
        when=tuple(Condition.parse(c) for c in raw.get("when", [])),
        assignments=raw.get("assignments", False),
        disable=tuple(raw.get("disable", ())),
    )


def _validate(catalogue: Catalogue) -> None:
    seen: set[str] = set()
    for rule in catalogue.rules:
        where = f"rule {rule.code}"
        if not _CODE_RE.match(rule.code):
            raise CatalogueError(f"{where}: code must look like XLA123")
        if rule.code in seen:
            raise CatalogueError(f"{where}: duplicate code")
        seen.add(rule.code)
        if rule.kind not in KINDS:
            raise CatalogueError(f"{where}: unknown kind {rule.kind!r}")
        if not rule.cases or rule.cases[-1].when or rule.cases[-1].forms:
            raise CatalogueError(f"{where}: the last case must have no conditions (catch-all)")
        for before, case in zip((None, *rule.cases), rule.cases):
            if case.fallback and (case.action != "transform" or before is None or before.action != "transform"):
                raise CatalogueError(f"{where}: a fallback case is a transform right after a transform case")
            if case.action not in ACTIONS:
                raise CatalogueError(f"{where}: unknown action {case.action!r}")
            if not case.message:
                raise CatalogueError(f"{where}: a case has no message")
            if case.fix is FixClass.MANUAL and case.action != "none":
                raise CatalogueError(f"{where}: a manual case cannot carry a fix")
            if case.fix is not FixClass.MANUAL and case.action == "none":
                raise CatalogueError(f"{where}: a {case.fix.value} case needs an action")
            for condition in _flat((*rule.when, *case.when)):
                if condition.kind.removeprefix("not-") in ARGUMENT_CONDITIONS and condition.arg not in rule.params:
                    raise CatalogueError(f"{where}: condition on unknown parameter {condition.arg!r}")
        if rule.kind == "string-arg" and not rule.sites:
            raise CatalogueError(f"{where}: a string-arg rule needs sites")
        if rule.kind == "project" and rule.fix_classes:
            raise CatalogueError(f"{where}: a project rule only reports (the site is found through another file)")
        if rule.kind == "lint" and (len(rule.match) != 1 or rule.fix_classes):
            raise CatalogueError(f"{where}: a lint rule names one analysis in `match` and only reports")
        if rule.kind in ("call", "reference", "import", "env", "expression") and not rule.match:
            raise CatalogueError(f"{where}: needs `match`")
        if rule.kind == "file" and rule.pattern is None and not any(c.kind == "fact" for c in rule.when):
            raise CatalogueError(f"{where}: a file rule needs `pattern` or a `fact:` condition in its `when`")
        for case in rule.cases:
            if set(case.forms) - set(rule.match):
                raise CatalogueError(f"{where}: a case matches a form the rule does not list")


# The rules whose names are torch_xla availability probes of other packages: a project
# name that reads one of them is a probe of the project's own (project/model.py).
_PROBE_RULES = ("XLA005", "XLA006")


def availability_probes(catalogue: Catalogue) -> frozenset[str]:
    return frozenset(name for code in _PROBE_RULES if code in catalogue.by_code for name in catalogue.by_code[code].match)


@functools.cache
def named_by_rules(catalogue: Catalogue) -> Callable[[str], bool]:
    """Whether a call, reference or import rule matches a qualified name (exactly, or below
    a `prefix.*` pattern), or a string-argument rule looks at its calls; free of LibCST,
    unlike index.py."""
    rules = [rule for rule in catalogue.rules if rule.kind in ("call", "reference", "import")]
    names = [p for rule in rules for p in rule.match] + [call for rule in catalogue.rules for site in rule.sites for call in site.calls]
    exact = frozenset(p for p in names if not p.endswith(".*"))
    prefixes = tuple(sorted({p[:-1] for p in names if p.endswith(".*")}))
    return lambda qualname: qualname in exact or qualname.startswith(prefixes)

"""Evaluating a case's conditions at one site, and binding a call's arguments to parameters."""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from xla2tpu.catalogue.rules import ARGUMENT_CONDITIONS, Case, Condition, Rule
from xla2tpu.project.facts import UNKNOWN, Facts
from xla2tpu.trees import names
from xla2tpu.detect import values
from xla2tpu.project.scope import matches_any

if TYPE_CHECKING:
    import libcst as cst

_MISSING = values.MISSING


@dataclass
class Site:
    """What the conditions of a case may look at."""

    target: str
    source: str
    args: dict[str, cst.BaseExpression] | None = None  # None: the arguments could not be bound
    star_args: dict[str, list[cst.Arg]] = field(default_factory=dict)
    statement: bool = False
    discarded: bool = False  # a whole statement, or assigned to a name the file reads nowhere else
    value: str | None = None  # the string or environment value, when it is a literal
    unused: bool = False
    guarded: bool = False
    top_level: bool = False
    name: str = ""  # the qualified name (or environment variable) the rule matched
    store: bool = False  # the matched reference is an assignment target
    form: str = ""  # for expression rules: the `match` pattern the site matched
    with_item: bool = False  # the call is a `with` item that binds no name
    compared: bool = False  # the call is an operand of a comparison
    setup_branch: bool = False  # in the XLA branch of an if/elif chain whose other branches create a process group
    launch_parent: bool = False  # runs only in the parent of the file's torch_xla launch (launch_site.parent_only)
    spmd_program: bool = False  # the file is an SPMD program that migrates whole (spmd_program.program)
    spmd_fsdp: bool = False  # that program wraps its model in FSDPv2, which becomes FSDP2 (Program.fsdp)
    class_bases: frozenset[str] = frozenset()  # last names of the bases of the class whose method holds the site
    tensors: frozenset[str] = frozenset()  # expression slots known to be tensors
    read_back: bool = False  # an environment write whose variable the same file reads
    after: frozenset[str] = frozenset()  # the `after:` patterns that hold here (detect/ast_earlier.py)
    then: frozenset[str] = frozenset()  # the `then:` patterns that hold here (detect/ast_earlier.py)
    guarded_by: frozenset[str] = frozenset()  # the `guarded-by:` patterns that hold here (detect/ast_earlier.py)
    facts: Facts = UNKNOWN  # what the file is (facts.py)


def literal(node: cst.BaseExpression | None) -> object:
    """The Python value of a literal argument (`0`, `True`, `"TPU"`, `-1`), else _MISSING."""
    if node is None:
        return _MISSING
    if isinstance(node, ast.AST):
        return values.literal(node)
    import libcst as cst  # a node of the LibCST pass: LibCST is loaded (detection never gets here)

    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[node.value]
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString)):
        value = node.evaluated_value
        return _MISSING if value is None and not isinstance(node, cst.SimpleString) else value
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = literal(node.expression)
        return -inner if isinstance(inner, (int, float)) and not isinstance(inner, bool) else _MISSING
    return _MISSING


def _holds(condition: Condition, site: Site) -> bool:
    kind = condition.kind
    negate = kind.startswith("not-")
    base = kind[4:] if negate else kind
    if base in ARGUMENT_CONDITIONS and site.args is None:
        return False  # unknown binding: no argument condition can be trusted either way
    if base == "absent":
        result = condition.arg not in site.args  # type: ignore[operator]
    elif base == "present":
        result = condition.arg in site.args  # type: ignore[operator]
    elif base == "falsy":
        value = literal(site.args.get(condition.arg)) if condition.arg in site.args else None  # type: ignore[union-attr,operator]
        result = value is not _MISSING and not value
    elif base == "literal":
        value = literal(site.args.get(condition.arg))  # type: ignore[union-attr]
        result = value is not _MISSING and value == condition.value and type(value) is type(condition.value)
    elif base == "statement":
        result = site.statement
    elif base == "discarded":
        result = site.discarded
    elif base == "target":
        result = site.target == condition.arg
    elif base == "file-contains":
        result = _file_holds(condition.arg, site.source, False)
    elif base == "value":
        result = site.value == condition.value
    elif base == "unused":
        result = site.unused
    elif base == "guarded":
        result = site.guarded
    elif base == "top-level":
        result = site.top_level
    elif base == "name":
        result = matches_any(site.name, condition.arg.split("|"))
    elif base == "file-matches":
        result = _file_holds(condition.arg, site.source, True)
    elif base == "store":
        result = site.store
    elif base == "tensor":
        result = condition.arg in site.tensors
    elif base == "after":
        result = condition.arg in site.after
    elif base == "then":
        result = condition.arg in site.then
    elif base == "guarded-by":
        result = condition.arg in site.guarded_by
    elif base == "read-back":
        result = site.read_back
    elif base == "with-item":
        result = site.with_item
    elif base == "compared":
        result = site.compared
    elif base == "setup-branch":
        result = site.setup_branch
    elif base == "launch-parent":
        result = site.launch_parent
    elif base == "spmd-program":
        result = site.spmd_program
    elif base == "spmd-fsdp":
        result = site.spmd_fsdp
    elif base == "class-base":
        result = not site.class_bases.isdisjoint(condition.arg.split("|"))
    elif base == "fact":
        result = site.facts.get(condition.arg).value in condition.value  # type: ignore[operator]
    elif base == "any":
        result = any(_holds(inner, site) for inner in condition.value)  # type: ignore[union-attr]
    elif base == "dotted":
        name = _dotted(site.args.get(condition.arg))  # type: ignore[union-attr]
        result = name is not None and name in (condition.value, str(condition.value).rsplit(".", 1)[-1])
    elif base == "plain":
        name = _dotted(site.args.get(condition.arg))  # type: ignore[union-attr]
        result = name is not None and "." not in name
    elif base == "simple":
        node = site.args.get(condition.arg)  # type: ignore[union-attr]
        result = node is not None and (_dotted(node) is not None or literal(node) is not _MISSING)
    else:  # pragma: no cover - the catalogue validates condition kinds
        raise ValueError(kind)
    return result != negate


def _dotted(node: ast.AST | cst.BaseExpression | None) -> str | None:
    """The dotted name an argument is (either tree's node), or None."""
    if node is None:
        return None
    return names.dotted_name(node) if isinstance(node, ast.AST) else _cst_dotted_name(node)


@functools.lru_cache(maxsize=256)
def _regex(text: str) -> re.Pattern[str]:
    return re.compile(text, re.MULTILINE)


@functools.lru_cache(maxsize=64)
def _file_holds(text: str, source: str, regex: bool) -> bool:
    """Whether the file's source holds `text` (a pattern when `regex`): asked once per file
    and condition, not once per site, which made a file's cost grow with sites × size. The
    source's hash is cached by the string, and a hit compares it by identity first."""
    return _regex(text).search(source) is not None if regex else text in source


def choose(cases: Sequence[Case], site: Site) -> Case:
    """The first case whose conditions all hold, fallbacks aside (detect/sites.py tries one
    where the site refuses the transform before it); the catalogue guarantees a catch-all last."""
    for case in cases:
        if not case.fallback and holds(case, site):
            return case
    return next(case for case in reversed(cases) if not case.fallback)


def holds(case: Case, site: Site) -> bool:
    """Whether the case is for the site's form and all its conditions hold there."""
    return not (case.forms and site.form not in case.forms) and all(_holds(condition, site) for condition in case.when)


def facts_behind(case: Case, facts: Facts) -> list[str]:
    """The facts a case's positive `fact:` conditions test, described with their evidence:
    a finding decided by a fact names it, so the user sees why a fix was withheld."""
    return [facts.get(c.arg).describe() for c in case.when if c.kind == "fact"]


def message_of(case: Case, facts: Facts, source: str = "", note: str = "", name: str = "",
               defined: Mapping[str, str] | None = None) -> str:
    """A finding's message: the case's, with the site's code (`{source}`), where a project
    probe is defined (`{defined}`, by the qualified name matched), why a fix the case would
    make is withheld here (`note`) and the facts the case tested."""
    message = case.message.replace("{source}", source) if "{source}" in case.message else case.message
    if "{defined}" in message:
        message = message.replace("{defined}", (defined or {}).get(".".join(name.split(".")[:4]), "another module"))
    if note:
        message = f"{message} ({note})"
    return explained(message, case, facts)


def withheld(code: str) -> str:
    """The note of a fix its case offers but that the code around the site does not allow
    (a transform that cannot be built there, a template missing an argument): the message
    reads as the fix, so the user is told it was not made, and where the shapes are listed."""
    return f"not rewritten: a shape the fix does not handle, see `xla2tpu explain {code}`"


def explained(message: str, case: Case, facts: Facts) -> str:
    """`message` with the facts its case tested, when it tested any (see facts_behind)."""
    behind = facts_behind(case, facts)
    return message + " [because " + "; ".join(behind) + "]" if behind else message


def applies(rule: Rule, site: Site) -> bool:
    """Whether the rule's own `when` holds here; when it does not, the site is not a finding."""
    return all(_holds(condition, site) for condition in rule.when)


def _cst_dotted_name(node: cst.BaseExpression) -> str | None:
    from xla2tpu.project.resolve import dotted_name  # the LibCST pass's node: LibCST is loaded

    return dotted_name(node)


def literal_text(node: cst.BaseExpression) -> str | None:
    """The text of a plain string literal, or None (f-strings, bytes, anything computed)."""
    import libcst as cst  # the LibCST pass's (detection reads ast nodes: detect/values.py)

    if isinstance(node, cst.SimpleString) and "b" not in node.prefix.lower():
        try:
            value = ast.literal_eval(node.value)
        except (ValueError, SyntaxError):
            return None
        return value if isinstance(value, str) else None
    return None

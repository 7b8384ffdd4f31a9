"""What the detector records of one site (`Found`): the rule and case that decide it, where it
is reported, whether its fix can be made, and what the rewrite and `check` read of it."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field

from xla2tpu.catalogue.diagnostics import FixClass
from xla2tpu.catalogue.rules import Case, Rule
from xla2tpu.detect import collective_sites, copied_helpers, spmd_program
from xla2tpu.project.scope import Scope

# What an ast-decided transform found it writes or edits, for after_fixes.
# (An SPMD program's edits reach past its calls: `check` leaves them to LibCST's pass.)
TransformMade = (collective_sites.Made | tuple[tuple[ast.Call, Scope], ...] | spmd_program.Program | copied_helpers.Helper
                 | None)
# A transform's decision on the ast: whether its fix can be made, the templates whose names it
# spells, and what it found (`TransformMade`).
Decision = tuple[bool, tuple[str, ...], TransformMade]


@dataclass
class Found:
    """One site: the rule and case that decide it, where it is reported, and its fix."""

    rule: Rule
    case: Case
    node: ast.AST  # reported at this node's position
    fixable: bool  # the fix can be made here (before a transform has its say)
    structural: bool = False  # a transform or statement template: the fix writes statements
    name: str = ""  # the qualified name (or variable) matched
    note: str = ""  # why a fix the case would make is withheld here
    source: str = ""  # `{source}`: the site's code, shortened
    inner: tuple[int, int] = (0, 0)  # for a call: the findings found in its arguments (indices)
    keeps_arguments: bool = False  # a call that stays as written, and its arguments with it
    category: str = ""  # what kind of node the site is: reference, call, string, pair, subscript, expression, lint
    key: str = ""  # what the node spells: a reference's dotted name, a call's callee, a string's text
    form: str = ""  # an expression site's pattern
    decided: bool = False  # a transform whose fix the ast decided (`Detector._transform_decision`)
    # What an ast-decided transform found it writes or edits: a collective's templates
    # (collective_sites.Made), a parallel loader's per-device calls (each with its scope), the
    # helper a call's copy is (copied_helpers.Helper).
    made: TransformMade = field(default=None, compare=False, repr=False)
    # What the fix leaves of the code around it is judged from these (detect/after_fixes.py):
    # the scope the site reads in, the nodes from the module down to it, and what its
    # template's placeholders bind (a call's parameters, an expression pattern's slots).
    scope: Scope | None = field(default=None, compare=False, repr=False)
    parents: tuple[ast.AST, ...] = field(default=(), compare=False, repr=False)
    args: Mapping[str, ast.AST] | None = field(default=None, compare=False, repr=False)
    star_args: Mapping[str, list[ast.AST]] = field(default_factory=dict, compare=False, repr=False)

    @property
    def fix(self) -> FixClass:
        return self.case.fix if self.fixable and not self.note else FixClass.MANUAL

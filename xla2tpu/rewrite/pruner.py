"""What a deletion leaves behind, cleaned up the way a person migrating the file would.

The passes delete statements (a `mark_step`, an unused import) by marking them doomed; the
pruner removes them on the way up and then the compound statements they emptied:
- an `if` whose block is now empty goes when its test only reads (`if XLA_AVAILABLE:`,
  `if step % 10 == 0:`), and leaves its test behind as a statement when evaluating it does
  something (`if check():` -> `check()`); `if A: <emptied> else: B` becomes `if not A: B`;
  an `if` whose two branches became the same is replaced by one of them;
- a `try:` whose body is empty and whose handlers do nothing goes (its `else:` and
  `finally:` blocks stay, as plain statements);
- a `with` of a context that only changes autograd or autocast state, a `for` over a
  `range` or a literal, and unittest's `setUp`/`tearDown` hooks go when emptied;
- anything else emptied gets `pass`.
A finding left for a human in the test of an `if` that goes is resolved with it: the code
it pointed at is gone (`FileContext.findings`).
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from dataclasses import dataclass
from typing import Protocol

import libcst as cst

from xla2tpu.project.module_summary import PREDICATE
from xla2tpu.detect.only_reads import MODULE_HOOKS, READERS, STATE_CONTEXTS, TEST_HOOKS
from xla2tpu.project.resolve import dotted_name
from xla2tpu.rewrite.statements import fallback_only, holds_only, pass_statement, prune, prune_small

_HOOK_DECORATORS = frozenset({"classmethod", "staticmethod"})
_INVERSE: dict[type[cst.BaseCompOp], type[cst.BaseCompOp]] = {
    cst.Equal: cst.NotEqual, cst.NotEqual: cst.Equal, cst.In: cst.NotIn, cst.NotIn: cst.In,
    cst.Is: cst.IsNot, cst.IsNot: cst.Is,
}


@dataclass(frozen=True)
class IfTest:
    """What the test of an `if` is, as the pruner judged it before any rewrite."""

    reads: bool  # evaluating it can only read (see `inert`)
    findings: list[int]  # the findings left for a human in it


class Shared(Protocol):
    """What the passes over one file share of what their pruners record (StatementPruner)."""

    unfixed: dict[int, tuple[cst.CSTNode, int | None]]
    held: dict[int, tuple[cst.CSTNode, IfTest]]
    sites: dict[int, cst.CSTNode]
    resolved: list[int]


class StatementPruner(cst.CSTTransformer):
    """Removes the small statements whose id is in `doomed`, then what they emptied."""

    def __init__(self) -> None:
        super().__init__()
        # id -> node: holding the node keeps its id from being reused by a new node.
        self.doomed: dict[int, cst.CSTNode] = {}
        # Blocks whose every statement was removed (now a bare `pass`, no comment kept).
        self._emptied: dict[int, cst.CSTNode] = {}
        self._elifs: set[int] = set()
        # Sites reported but not rewritten (id -> node and its finding's index, None when a
        # noqa silenced it), and the `if`s kept (their test's id -> what it is): FileContext's,
        # shared by the passes; a later pass sees a kept `if` as its original.
        self.unfixed: dict[int, tuple[cst.CSTNode, int | None]] = {}
        self.held: dict[int, tuple[cst.CSTNode, IfTest]] = {}
        # Every rule site (id -> node): a torch_xla call in a test is a query, it only reads.
        self.sites: dict[int, cst.CSTNode] = {}
        self.resolved: list[int] = []  # findings whose code went with an `if` (see leave_If)

    def share(self, other: Shared) -> None:
        """Record into `other`'s unfixed sites, kept `if`s, sites and resolved findings (the
        FileContext every pass of a file shares): a later pass sees what an earlier one did."""
        self.unfixed, self.held, self.sites, self.resolved = other.unfixed, other.held, other.sites, other.resolved

    def doom(self, node: cst.CSTNode) -> None:
        self.doomed[id(node)] = node

    def _empty(self, block: cst.BaseSuite) -> cst.BaseSuite:
        self._emptied[id(block)] = block
        return block

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine:
        if not any(id(s) in self.doomed for s in updated_node.body):
            return updated_node
        body = prune_small(updated_node.body, self.doomed)
        if not body:
            self.doom(updated_node)
            return updated_node
        return updated_node.with_changes(body=body)

    def leave_SimpleStatementSuite(
        self, original_node: cst.SimpleStatementSuite, updated_node: cst.SimpleStatementSuite
    ) -> cst.SimpleStatementSuite:
        if not any(id(s) in self.doomed for s in updated_node.body):
            return updated_node
        body = prune_small(updated_node.body, self.doomed)
        if body:
            return updated_node.with_changes(body=body)
        return self._empty(updated_node.with_changes(body=[cst.Pass()]))  # type: ignore[return-value]

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        if not any(id(s) in self.doomed for s in updated_node.body):
            return updated_node
        body, left = prune(updated_node.body, self.doomed)
        if not body:
            emptied = updated_node.with_changes(body=[pass_statement(left)])
            return self._empty(emptied) if not left else emptied  # type: ignore[return-value]
        return updated_node.with_changes(body=body, footer=[*left, *updated_node.footer])

    def visit_If(self, node: cst.If) -> None:
        if isinstance(node.orelse, cst.If):
            self._elifs.add(id(node.orelse))

    def leave_If(
        self, original_node: cst.If, updated_node: cst.If
    ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement]:
        orelse = updated_node.orelse
        if isinstance(orelse, cst.Else) and id(orelse.body) in self._emptied:
            updated_node = updated_node.with_changes(orelse=None)
        elif isinstance(orelse, cst.If) and id(orelse) in self.doomed:  # an emptied last `elif`
            updated_node = updated_node.with_changes(orelse=None)
        test = self._test(original_node)
        is_elif = id(original_node) in self._elifs
        orelse = updated_node.orelse
        if id(updated_node.body) in self._emptied:
            if isinstance(orelse, cst.Else):  # `if A: <emptied> else: B` -> `if not A: B`
                updated_node = updated_node.with_changes(test=negated(updated_node.test), body=orelse.body, orelse=None)
            elif isinstance(orelse, cst.If) and orelse.orelse is None:  # `... elif B: X` -> `if not A and B: X`
                both = cst.BooleanOperation(negated(updated_node.test), cst.And(), _operand(orelse.test))
                updated_node = updated_node.with_changes(test=both, body=orelse.body, orelse=None)
            elif orelse is None and (test.reads or not is_elif):
                kept = self._left_of(updated_node.test, test)
                if not kept:
                    self.doom(updated_node)
                    return updated_node
                return kept[0].with_changes(leading_lines=updated_node.leading_lines)
        elif (
            isinstance(orelse, cst.Else)
            and not is_elif
            and updated_node.body.deep_equals(orelse.body)
            and not (isinstance(original_node.orelse, cst.Else) and original_node.body.deep_equals(original_node.orelse.body))
        ):
            return _flatten(updated_node, self._left_of(updated_node.test, test) + _statements(updated_node.body))
        # Known by its test, which a later edit that gives the `if` new leading lines (a
        # copied helper written above it, a removed statement's blank lines) keeps.
        self.held[id(updated_node.test)] = (updated_node.test, test)
        return updated_node

    def _left_of(self, expression: cst.BaseExpression, test: IfTest) -> list[cst.BaseStatement]:
        """What is left of an `if`'s test when the `if` goes: nothing when it only reads (its
        findings go with it), else the part of it that does something, as a statement."""
        if test.reads:
            self.resolved += test.findings
            return []
        return [cst.SimpleStatementLine([cst.Expr(_effect(expression))])]

    def _test(self, node: cst.If) -> IfTest:
        """What the test of `node` is, judged as written (or as a former pass judged it)."""
        held = self.held.get(id(node.test))
        if held is not None:
            return held[1]
        return IfTest(inert(node.test, self.sites), findings_in(node.test, self.unfixed))

    def leave_Try(self, original_node: cst.Try, updated_node: cst.Try) -> cst.Try | cst.FlattenSentinel[cst.BaseStatement]:
        """An emptied `try:` cannot raise: with handlers that do nothing it reduces to its
        `else:` and `finally:` blocks."""
        if id(updated_node.body) not in self._emptied or not all(fallback_only(h.body) for h in updated_node.handlers):
            return updated_node
        kept = [*_statements(updated_node.orelse.body if updated_node.orelse else None),
                *_statements(updated_node.finalbody.body if updated_node.finalbody else None)]
        if not kept:
            self.doom(updated_node)
            return updated_node
        return _flatten(updated_node, kept)

    def leave_With(self, original_node: cst.With, updated_node: cst.With) -> cst.With:
        if id(updated_node.body) in self._emptied and all(_state_context(item.item) for item in updated_node.items):
            self.doom(updated_node)
        return updated_node

    def leave_For(self, original_node: cst.For, updated_node: cst.For) -> cst.For:
        if id(updated_node.body) in self._emptied and updated_node.orelse is None and _fixed_iterable(updated_node.iter):
            self.doom(updated_node)
        return updated_node

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        return self._without_hooks(updated_node, TEST_HOOKS)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        updated_node = self._without_hooks(updated_node, MODULE_HOOKS)
        if not any(id(s) in self.doomed for s in updated_node.body):
            return updated_node
        # At module level the blank lines after removed imports set the code off from the
        # imports that add_imports may put back above it.
        body, left = prune(updated_node.body, self.doomed, opens_block=False)
        return updated_node.with_changes(body=body, footer=[*left, *updated_node.footer])

    def _without_hooks(self, node: cst.ClassDef | cst.Module, hooks: frozenset[str]):  # type: ignore[no-untyped-def]
        """Dooms the unittest hooks of `node` that the fix emptied: unittest's own do nothing."""
        body = node.body if isinstance(node, cst.Module) else node.body.body
        if not isinstance(body, Sequence):
            return node
        for statement in body:
            if (
                isinstance(statement, cst.FunctionDef)
                and statement.name.value in hooks
                and id(statement.body) in self._emptied
                and all(dotted_name(d.decorator) in _HOOK_DECORATORS for d in statement.decorators)
            ):
                self.doom(statement)
        if isinstance(node, cst.ClassDef) and any(id(s) in self.doomed for s in body):
            return node.with_changes(body=self.leave_IndentedBlock(node.body, node.body))  # type: ignore[arg-type]
        return node


def findings_in(node: cst.CSTNode, unfixed: dict[int, tuple[cst.CSTNode, int | None]]) -> list[int]:
    """The findings left for a human in `node`'s code (`unfixed`: StatementPruner.unfixed)."""
    findings, stack = [], [node]
    while stack:
        child = stack.pop()
        entry = unfixed.get(id(child))
        if entry is not None and entry[1] is not None:
            findings.append(entry[1])
        stack.extend(child.children)
    return findings


def inert(test: cst.BaseExpression, queries: Container[int] = ()) -> bool:
    """Whether evaluating `test` can do nothing but read: names, attributes, literals,
    subscripts, arithmetic, comparisons and boolean logic of those, attributes of calls
    (`State().kind`), and calls of functions named as yes/no questions (`is_*`, `use_*`,
    `*_available`: modules.PREDICATE), reading builtins (`len`) and the calls whose id is in
    `queries`, with such arguments."""
    if isinstance(test, (cst.Name, cst.BaseNumber, cst.SimpleString)):
        return True
    if isinstance(test, cst.Attribute):
        value = test.value
        if isinstance(value, cst.Call):  # `State().distributed_type`: an accessor, read for its attribute
            return inert(value.func, queries) and all(not a.star and inert(a.value, queries) for a in value.args)
        return dotted_name(test) is not None or inert(value, queries)
    if isinstance(test, cst.UnaryOperation):
        return inert(test.expression, queries)
    if isinstance(test, (cst.BooleanOperation, cst.BinaryOperation)):
        return inert(test.left, queries) and inert(test.right, queries)
    if isinstance(test, cst.Comparison):
        return inert(test.left, queries) and all(inert(target.comparator, queries) for target in test.comparisons)
    if isinstance(test, cst.Subscript):
        return inert(test.value, queries) and all(
            isinstance(s.slice, cst.Index) and inert(s.slice.value, queries) for s in test.slice
        )
    if isinstance(test, (cst.Tuple, cst.List)):
        return all(isinstance(e, cst.Element) and inert(e.value, queries) for e in test.elements)
    if isinstance(test, cst.Call):
        name = dotted_name(test.func) or ""
        reads = id(test) in queries or name in READERS or PREDICATE.fullmatch(name.rsplit(".", 1)[-1]) is not None
        return reads and all(not arg.star and inert(arg.value, queries) for arg in test.args)
    return False


def negated(test: cst.BaseExpression) -> cst.BaseExpression:
    """`not test`, as a person would write it: `not a` -> `a`, `a == b` -> `a != b`."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _bare(test.expression)
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and not test.lpar:
        target = test.comparisons[0]
        inverse = _INVERSE.get(type(target.operator))
        if inverse is not None:
            return test.with_changes(comparisons=[target.with_changes(operator=_operator(inverse, target.operator))])
    if isinstance(test, (cst.BooleanOperation, cst.IfExp, cst.Lambda, cst.NamedExpr)) and not test.lpar:
        test = test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.UnaryOperation(operator=cst.Not(), expression=test)


def _operand(expression: cst.BaseExpression) -> cst.BaseExpression:
    """`expression` as the right operand of `and`."""
    loose = isinstance(expression, (cst.IfExp, cst.Lambda, cst.NamedExpr)) or (
        isinstance(expression, cst.BooleanOperation) and isinstance(expression.operator, cst.Or)
    )
    return expression.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]) if loose and not expression.lpar else expression


def _operator(kind: type[cst.BaseCompOp], like: cst.BaseCompOp) -> cst.BaseCompOp:
    return kind(whitespace_before=like.whitespace_before, whitespace_after=like.whitespace_after)  # type: ignore[attr-defined,call-arg]


def _effect(expression: cst.BaseExpression) -> cst.BaseExpression:
    """The part of a test that does something, as a statement: `check() == 0` -> `check()`.
    Parentheses that let it span lines stay (a statement needs them then)."""
    if isinstance(expression, cst.Comparison) and all(inert(target.comparator) for target in expression.comparisons):
        return _effect(expression.left)
    if isinstance(expression, cst.UnaryOperation):
        return _effect(expression.expression)
    return expression if "\n" in cst.Module([]).code_for_node(expression) else _bare(expression)


def _bare(expression: cst.BaseExpression) -> cst.BaseExpression:
    """`expression` without the parentheses a test or statement does not need."""
    if expression.lpar and isinstance(expression, (cst.BooleanOperation, cst.Comparison, cst.Name, cst.Attribute,
                                                   cst.Call, cst.UnaryOperation, cst.BinaryOperation)):
        return expression.with_changes(lpar=[], rpar=[])
    return expression


def _statements(block: cst.BaseSuite | None) -> list[cst.BaseStatement]:
    if block is None:
        return []
    if isinstance(block, cst.IndentedBlock):
        return list(block.body)
    assert isinstance(block, cst.SimpleStatementSuite)
    return [cst.SimpleStatementLine(list(block.body))]


def _flatten(node: cst.BaseCompoundStatement, statements: list[cst.BaseStatement]) -> cst.FlattenSentinel[cst.BaseStatement]:
    """`statements` in place of `node`, the first taking over the comment lines above it."""
    first = statements[0]
    return cst.FlattenSentinel([first.with_changes(leading_lines=[*node.leading_lines, *first.leading_lines]),
                                *statements[1:]])


def _state_context(item: cst.BaseExpression) -> bool:
    if not isinstance(item, cst.Call):
        return False
    name = dotted_name(item.func) or ""
    return name.rsplit(".", 1)[-1] in STATE_CONTEXTS and all(inert(arg.value) for arg in item.args)


def _fixed_iterable(iterable: cst.BaseExpression) -> bool:
    """A `range(...)` or literal of values that only read: looping over it does nothing else."""
    if isinstance(iterable, cst.Call):
        return dotted_name(iterable.func) == "range" and all(not a.star and inert(a.value) for a in iterable.args)
    return isinstance(iterable, (cst.Tuple, cst.List)) and inert(iterable)

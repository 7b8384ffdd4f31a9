"""What the code around a call already does: the `after:` and `then:` conditions.

`xm.set_rng_state(seed)` became `torch.manual_seed(seed)`, which is a duplicate right
after an identical `torch.manual_seed(seed)`, and which clobbers the CPU generator right
after `torch.set_rng_state(state)` restored it from a checkpoint. Whether such a call
comes earlier is a fact about the function, not about the call's own spelling. Likewise
a `torch.manual_seed(seed)` in the branch of an `if` right before the user's own
`torch.manual_seed(seed)` after it: `then:` is the call of the statement that runs next.

A pattern is a qualified callee and its arguments: `torch.manual_seed({seed})`, where
`{p}` must be the same code as the site's own argument `p` and `{_}` is any argument.

Decided on CPython's tree, with the results the LibCST version gives (tests/cst_earlier.py;
the suite checks the two agree on every fixture).

`parents` is the path from the `ast.Module` down to the site node, which comes last. ast
differs from LibCST in ways these functions make up for:
- `ast.walk` is breadth-first and a node's fields are not always in source order (a
  call's keywords after its positional arguments, a dict's keys before its values, the
  test of `a if test else b` first): `_in_source_order` walks as LibCST's visitor does,
  depth first, a node before its children, the children as they are written.
- ast has no statement line: `a(); b()` is two statements where LibCST has one line, and
  the statement after `a()` is the next line's, not `b()`.
- ast has no `else`, `elif` or one-line suite node. An `elif` is an If alone in its
  parent's `orelse`, which runs on exactly like an `else:` block holding only that `if`,
  so the two need not be told apart. A one-line suite (`if x: f()`) ends the search in
  LibCST; telling it from an indented block needs the source: pass `lines`.
- Arguments compare as ast (`ast.dump`), so `seed+1` is the same code as `(seed + 1)`,
  which LibCST's `deep_equals` tells apart by their layout.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TypeVar

from xla2tpu.trees.order import arguments, children

_PATTERN = re.compile(r"^(?P<callee>[\w.|]+)\((?P<args>.*)\)$")  # callee: one name, or a|b
_SLOT = re.compile(r"^\{(?P<name>\w+)\}$")
Node = TypeVar("Node")  # a callee, of either tree
Argument = TypeVar("Argument")  # an argument as its tree has it (cst.Arg, ast.expr / ast.keyword)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef)
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def calls_before(parents: Sequence[ast.AST], site: ast.AST) -> list[ast.Call]:
    """The calls of the innermost function (else the module) in `parents` that precede `site`,
    in source order, an enclosing call before the calls in its arguments."""
    scope = next((p for p in reversed(parents) if isinstance(p, _SCOPES)), parents[0])
    roots = scope.body if isinstance(scope, _SCOPES) else [scope]
    calls: list[ast.Call] = []
    for node in (n for root in roots for n in _in_source_order(root)):
        if node is site:
            break
        if isinstance(node, ast.Call):
            calls.append(node)
    return calls


def _in_source_order(root: ast.AST) -> Iterator[ast.AST]:
    """`root` and the nodes under it, depth first in source order, not entering nested
    functions, lambdas or classes (which are met, but not their insides)."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _NESTED):
            stack.extend(reversed(list(children(node))))


def call_next(parents: Sequence[ast.AST], lines: Sequence[str] | None = None) -> list[ast.Call]:
    """The call of the statement that runs right after the one holding the site, leaving
    `if`/`else`/`with` blocks at their end; none when that statement is not a lone call, or
    the site ends a loop, a function or the module, or sits in a one-line suite (told by the
    file's `lines`, when given; else every block is taken for an indented one)."""
    index = next((i for i in range(len(parents) - 1, -1, -1) if isinstance(parents[i], ast.stmt)), 0)
    if isinstance(parents[index], ast.Match) or "body" in parents[index]._fields:
        return []  # the site is in a compound statement's header (LibCST: in no statement line)
    while index > 0:
        statement, owner = parents[index], parents[index - 1]
        block = _block_of(owner, statement)
        if block is None or (lines is not None and _is_suite(block, lines)):
            return []
        position = next(i for i, s in enumerate(block) if s is statement)
        end = _line_end(block, position)
        if end + 1 < len(block):
            following = block[end + 1]
            if _line_end(block, end + 1) > end + 1:
                return []  # `a(); b()`: a line of more than one statement
            return [following.value] if isinstance(following, ast.Expr) and isinstance(following.value, ast.Call) else []
        if not isinstance(owner, (ast.If, ast.With, ast.AsyncWith)):
            return []
        index -= 1  # the block ended: on to the statement that owns it (an elif's If runs on as its chain)
    return []


def guard_of(parents: Sequence[ast.AST], lines: Sequence[str] | None = None) -> list[ast.Call]:
    """The call of `if not call():` when the statement holding the site is that `if`'s whole
    body (no `else`), on a line of its own: a check the code already makes before the site
    runs (`if not dist.is_initialized(): dist.init_process_group(...)`)."""
    index = next((i for i in range(len(parents) - 1, -1, -1) if isinstance(parents[i], ast.stmt)), 0)
    if index == 0 or "body" in parents[index]._fields:
        return []
    statement, owner = parents[index], parents[index - 1]
    if not (isinstance(owner, ast.If) and owner.body == [statement] and not owner.orelse):
        return []
    if lines is not None and _is_suite(owner.body, lines):
        return []
    test = owner.test
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and isinstance(test.operand, ast.Call):
        return [test.operand]
    return []


def _block_of(owner: ast.AST, statement: ast.AST) -> list[ast.stmt] | None:
    for field in ("body", "orelse", "finalbody"):
        block = getattr(owner, field, None)
        if isinstance(block, list) and any(s is statement for s in block):
            return block
    return None


def _line_end(block: list[ast.stmt], position: int) -> int:
    """The last statement on the line of `block[position]`: `a(); b()` is one line."""
    while position + 1 < len(block) and block[position + 1].lineno == block[position].end_lineno:
        position += 1
    return position


def _is_suite(block: list[ast.stmt], lines: Sequence[str]) -> bool:
    """A block on its header's line (`if x: f()`): code comes before its first statement there."""
    first = block[0]
    line = lines[first.lineno - 1].encode()  # col_offset counts UTF-8 bytes
    return bool(line[: first.col_offset].strip())


def matches(
    pattern: str,
    calls: Sequence[ast.Call],
    resolve: Callable[[ast.expr], str | None],
    args: Mapping[str, ast.expr] | None,
) -> bool:
    """Whether one of `calls` has the pattern's callee and arguments (this module's docstring)."""
    calls_ = ((call.func, arguments(call)) for call in calls)
    return any_call_matches(pattern, calls_, resolve, lambda slot, arg: _argument_matches(slot, arg, args))


def _argument_matches(slot: str, arg: ast.expr | ast.keyword, args: Mapping[str, ast.expr] | None) -> bool:
    if isinstance(arg, (ast.keyword, ast.Starred)):
        return False
    if slot == "_":
        return True
    own = args.get(slot) if args is not None else None
    return own is not None and ast.dump(own) == ast.dump(arg)


def any_call_matches(
    pattern: str,
    calls: Iterable[tuple[Node, Sequence[Argument]]],
    resolve: Callable[[Node], str | None],
    argument: Callable[[str, Argument], bool],
) -> bool:
    """`matches` for calls of either tree: each call is its callee and its
    arguments in source order; `argument(slot, arg)` says whether `arg` fills the pattern's `{slot}` (`_`: any)."""
    parsed = _PATTERN.match(pattern.strip())
    if parsed is None:
        return False
    callees = parsed["callee"].split("|")
    wanted = [_SLOT.match(a.strip()) for a in parsed["args"].split(",")] if parsed["args"].strip() else []
    for callee, given in calls:
        if len(given) != len(wanted) or resolve(callee) not in callees:
            continue
        if all(slot is not None and argument(slot["name"], arg) for slot, arg in zip(wanted, given)):
            return True
    return False

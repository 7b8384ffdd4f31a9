"""A call rebuilt from a template keeps the layout of the call it replaces.

Templates are written on one line (`torch.compile({f}, backend="tpu", ...)`). The
arguments they reuse are the original call's own nodes, but in LibCST the line breaks
and the comments between arguments belong to the commas, which are the template's: a
multi-line call would come out on one line with its comments gone. So when the original
spans lines, the new call is laid out like it: each argument on the line the original's
arguments used, a reused argument followed by its own end-of-line comment and preceded by
the comment lines that preceded it, and the original's closing (trailing comma or not).
A comment is never dropped with a line break: where the original stayed on one line, a
break is added. Comments of arguments the template drops go with them.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

_Whitespace = cst.BaseParenthesizableWhitespace


def keep_layout(old: cst.Call, new: cst.BaseExpression) -> cst.BaseExpression:
    """`new` with `old`'s line breaks and argument comments, when `new` is a call and `old` spans lines."""
    if not isinstance(new, cst.Call) or not new.args or not old.args or not _spans_lines(old):
        return new
    # The comment lines above each original argument: after `(` or after the comma before it.
    ahead = [old.whitespace_before_args, *(_comma(arg).whitespace_after for arg in old.args[:-1])]
    sources: dict[int, int] = {}
    for position, arg in enumerate(old.args):
        sources.setdefault(id(arg.value), position)
    # Which original argument each new one reuses; a value used twice keeps its comments once.
    reused = [sources.pop(id(arg.value), None) for arg in new.args]
    above = [_lines(ahead[position]) if position is not None else () for position in reused]
    between = _between(old)
    args: list[cst.Arg] = []
    for index, (arg, position) in enumerate(zip(new.args, reused)):
        comment = _comment_after(old.args[position]) if position is not None else cst.TrailingWhitespace()
        if index == len(new.args) - 1:
            args.append(_closing(arg, old.args[-1], comment))
        else:
            comma = cst.Comma(whitespace_after=_line(between, comment, above[index + 1]))
            args.append(arg.with_changes(comma=comma, whitespace_after_arg=cst.SimpleWhitespace("")))
    opening = _line(old.whitespace_before_args, _first(old.whitespace_before_args), above[0])
    return new.with_changes(whitespace_before_args=opening, args=args)


class _Relayout(cst.CSTTransformer):
    def __init__(self, old: cst.Call) -> None:
        super().__init__()
        self.old = old
        self.values = {id(arg.value) for arg in old.args}

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        # The visit rebuilt the children: the reused argument nodes are the original's.
        if any(id(arg.value) in self.values for arg in original_node.args):
            return keep_layout(self.old, original_node)
        return updated_node


def keep_layouts(old: cst.Call, statements: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement]:
    """`statements` (a transform's, replacing the statement of `old`) with each call that
    reuses `old`'s arguments laid out like `old` (`print(` of a multi-line `master_print(`)."""
    if not _spans_lines(old):
        return list(statements)
    return [statement.visit(_Relayout(old)) for statement in statements]  # type: ignore[misc]


def _spans_lines(call: cst.Call) -> bool:
    spaces = [call.whitespace_before_args]
    for arg in call.args:
        spaces.append(arg.whitespace_after_arg)
        if isinstance(arg.comma, cst.Comma):
            spaces.append(arg.comma.whitespace_after)
    return any(isinstance(space, cst.ParenthesizedWhitespace) for space in spaces)


def _comma(arg: cst.Arg) -> cst.Comma:
    assert isinstance(arg.comma, cst.Comma)  # every argument but the last has one
    return arg.comma


def _between(old: cst.Call) -> _Whitespace:
    """The whitespace between two arguments: the original's, else a new line at the first argument's indent."""
    if len(old.args) > 1:
        return _comma(old.args[0]).whitespace_after
    if isinstance(old.whitespace_before_args, cst.ParenthesizedWhitespace):
        return old.whitespace_before_args
    return cst.SimpleWhitespace(" ")


def _first(space: _Whitespace) -> cst.TrailingWhitespace:
    return space.first_line if isinstance(space, cst.ParenthesizedWhitespace) else cst.TrailingWhitespace()


def _lines(space: _Whitespace) -> Sequence[cst.EmptyLine]:
    return space.empty_lines if isinstance(space, cst.ParenthesizedWhitespace) else ()


def _comment_after(arg: cst.Arg) -> cst.TrailingWhitespace:
    """The end of `arg`'s line: where a comment about it sits, after its comma or before `)`."""
    if isinstance(arg.comma, cst.Comma) and isinstance(arg.comma.whitespace_after, cst.ParenthesizedWhitespace):
        return arg.comma.whitespace_after.first_line
    return _first(arg.whitespace_after_arg)


def _line(layout: _Whitespace, end: cst.TrailingWhitespace, lines: Sequence[cst.EmptyLine]) -> _Whitespace:
    """`layout`'s line break and indent, with `end` closing the line and `lines` after it."""
    if isinstance(layout, cst.ParenthesizedWhitespace):
        return layout.with_changes(first_line=end, empty_lines=list(lines))
    if end.comment is None and not lines:
        return layout
    # A comment moved to where the original stayed on one line: break the line there
    # (the next token at the statement's indent) rather than lose the comment.
    return cst.ParenthesizedWhitespace(first_line=end, empty_lines=list(lines), indent=True, last_line=cst.SimpleWhitespace(""))


def _closing(arg: cst.Arg, last: cst.Arg, comment: cst.TrailingWhitespace) -> cst.Arg:
    """The new last argument, closed like the original's last one."""
    if isinstance(last.comma, cst.Comma):
        comma = last.comma.with_changes(whitespace_after=_line(last.comma.whitespace_after, comment, _lines(last.comma.whitespace_after)))
        return arg.with_changes(comma=comma, whitespace_after_arg=last.whitespace_after_arg)
    after = _line(last.whitespace_after_arg, comment, _lines(last.whitespace_after_arg))
    return arg.with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=after)

"""Which parameter of the legacy callable each argument of a call binds, whatever tree the
call comes from (LibCST for edits, CPython's `ast` for detection)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import libcst as cst


class Argument(NamedTuple):
    """One argument of a call, whatever tree it comes from: `node` is the argument as the
    tree has it (a `cst.Arg`, or an `ast` expression / `Starred` / `keyword`)."""

    keyword: str | None
    value: Any
    star: bool
    node: Any


def cst_arguments(args: Sequence[cst.Arg]) -> list[Argument]:
    return [Argument(arg.keyword.value if arg.keyword else None, arg.value, bool(arg.star), arg) for arg in args]


def bind(params: Sequence[str], args: Sequence[Argument]) -> tuple[dict[str, Any], dict[str, list[Any]]] | None:
    """Map a call's arguments to the legacy callable's parameters, or None if that is unknowable.

    `params` reads like a signature: names after a `*name` entry are keyword-only, the
    `*name` entry collects the extra positional arguments (under `name` in the second map,
    as their nodes) and a `**name` entry the extra keyword arguments (under `**name`).
    """
    star_at = next((i for i, p in enumerate(params) if p.startswith("*")), len(params))
    positional = list(params[:star_at])
    star = params[star_at][1:] if star_at < len(params) and not params[star_at].startswith("**") else None
    star_kw = next((p for p in params if p.startswith("**")), None)
    bound: dict[str, Any] = {}
    spread: dict[str, list[Any]] = {name: [] for name in (star, star_kw) if name}
    index = 0
    for arg in args:
        if arg.star:  # *xs / **kw: which parameters they fill is only known at run time
            return None
        if arg.keyword is None:
            if index < len(positional):
                bound[positional[index]] = arg.value
                index += 1
            elif star is not None:
                spread[star].append(arg.node)
            else:
                return None
        else:
            name = arg.keyword
            if name in bound:
                return None
            if name in params:
                bound[name] = arg.value
            elif star_kw is not None:
                spread[star_kw].append(arg.node)
            else:
                return None
    return bound, spread

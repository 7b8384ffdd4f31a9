"""Optimum TPU's `AutoModelForCausalLM.from_pretrained` → Transformers' with `device_map="tpu"`.

optimum-tpu 0.2.3's `from_pretrained(model_id, task, batch_size, sequence_length, *model_args,
**kwargs)` loaded the Transformers model, moved it to "xla" and stored the three extra
arguments in its config. Transformers places the model itself with `device_map="tpu"`, so
the three arguments go and `device_map` comes in; every other argument is kept as written.
"""

from __future__ import annotations

import libcst as cst

from xla2tpu.detect import call_shapes
from xla2tpu.rewrite.transforms.base import CallSite, Rewrite, transform


@transform("optimum-from-pretrained")
def optimum_from_pretrained(site: CallSite) -> Rewrite | None:
    func = site.call.func
    if not isinstance(func, cst.Attribute):
        return None  # not the site the detector decided (call_shapes.makeable)
    kept = _without_optimum_args(site.call.args)
    imports: set[str] = set()
    device_map = cst.Arg(
        keyword=cst.Name("device_map"),
        value=cst.SimpleString('"tpu"'),
        equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
    )
    args = _join([*kept, device_map], site.call.args)
    new_func = func.with_changes(value=site.name(call_shapes.TRANSFORMERS_MODEL, imports))
    return Rewrite(expression=site.call.with_changes(func=new_func, args=args), imports=imports)


def _without_optimum_args(args: tuple[cst.Arg, ...] | list[cst.Arg]) -> list[cst.Arg]:
    """The call's arguments minus task / batch_size / sequence_length, by keyword or position."""
    kept: list[cst.Arg] = []
    position = 0
    for arg in args:
        if arg.keyword is None and not arg.star:
            position += 1
            if 1 < position <= 1 + len(call_shapes.OPTIMUM_ONLY):
                continue
        elif arg.keyword is not None and arg.keyword.value in call_shapes.OPTIMUM_ONLY:
            continue
        kept.append(arg)
    return kept


def _join(args: list[cst.Arg], original: tuple[cst.Arg, ...] | list[cst.Arg]) -> list[cst.Arg]:
    """`args` separated the way the original call separated its arguments.

    The first original separator (", " or a newline and indent) goes between arguments,
    and the original last argument's trailing comma, if any, stays last, so multi-line
    calls keep their layout.
    """
    separator: cst.Comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    if len(original) > 1 and isinstance(original[0].comma, cst.Comma):
        separator = original[0].comma
    trailing = original[-1].comma if original else cst.MaybeSentinel.DEFAULT
    return [arg.with_changes(comma=separator) for arg in args[:-1]] + [args[-1].with_changes(comma=trailing)]

"""Transforms whose fix the shape of the code around the call decides: torch_xla's structured
loops (`scan`, `scan_layers`), `with torch_xla.step():` and Optimum TPU's `from_pretrained`.
Decided on CPython's tree before any edit, with what each writes (transforms/loops.py,
with_unwrap.py and optimum.py build them on LibCST's). Nothing here imports LibCST."""

from __future__ import annotations

import ast
from collections.abc import Mapping

_PYTREE = "torch.utils._pytree"
# `carry, ys = scan(fn, init, xs)`: both results named, so each gets its loop role
# (`{parts}`, `{index}`, `{y}`: fresh names). torch_xla traced `fn` functionally: a body that
# adds into its carry in place (`acc += x; return acc, acc`) gave a new value each step, and
# never touched `init`. So each step's output is kept as a copy, and a named `init` (the
# caller's tensor) is copied first (SCAN_NAMED_INIT); a seed-76 review saw `[6, 6, 6]` for
# `[1, 3, 6]`.
_SCAN_LOOP = (
    "{parts} = []\n",
    f"for {{index}} in range({_PYTREE}.tree_leaves({{xs}})[0].shape[0]):\n"
    f"    {{carry}}, {{y}} = {{fn}}({{carry}}, {_PYTREE}.tree_map(lambda t: t[{{index}}], {{xs}}))\n"
    f"    {{parts}}.append({_PYTREE}.tree_map(torch.clone, {{y}}))\n",
    f"{{ys}} = {_PYTREE}.tree_map(lambda *leaves: torch.stack(leaves), *{{parts}})\n",
)
SCAN = ("{carry} = {init}\n", *_SCAN_LOOP)
SCAN_NAMED_INIT = (f"{{carry}} = {_PYTREE}.tree_map(torch.clone, {{init}})\n", *_SCAN_LOOP)
# `out = scan_layers(layers, x)`: each layer applied in turn. The rule binds scan's parameter
# names, so `layers` arrives as `fn` and the input as `init` (`{layer}`: a fresh name).
SCAN_LAYERS = ("{out} = {init}\n", "for {layer} in {fn}:\n    {out} = {layer}({out})\n")
TRANSFORMERS_MODEL = "transformers.AutoModelForCausalLM"
# optimum-tpu's extra parameters of `from_pretrained`, in positional order after the model id.
OPTIMUM_ONLY = ("task", "batch_size", "sequence_length")

# What each writes (the names it spells and may read).
TEXTS = {"scan-loop": (*SCAN, SCAN_NAMED_INIT[0]), "scan-layers-loop": SCAN_LAYERS, "with-unwrap": (), "optimum-from-pretrained": (TRANSFORMERS_MODEL,)}


def makeable(template: str, call: ast.Call, args: Mapping[str, ast.AST], parent: ast.AST | None,
             statement: ast.AST | None, assigned: bool) -> bool:
    """Whether the transform named `template` can be made at `call` (bound arguments `args`,
    under `parent`, the statement `statement` when `assigned`: `target = <call>`, a line of
    its own)."""
    if template == "with-unwrap":  # `with f() as x:` binds a name the body may use: by hand
        return (isinstance(parent, ast.withitem) and parent.context_expr is call and parent.optional_vars is None
                and isinstance(statement, (ast.With, ast.AsyncWith)))
    if template == "optimum-from-pretrained":  # an explicit placement is the user's to reconcile
        return isinstance(call.func, ast.Attribute) and "device_map" not in args
    target = statement.targets[0] if assigned and isinstance(statement, ast.Assign) else None
    if template == "scan-layers-loop":
        return isinstance(target, ast.Name)
    if template == "scan-loop":
        return (isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == 2
                and all(isinstance(name, ast.Name) for name in target.elts))
    raise KeyError(template)


def kept_arguments(call: ast.Call) -> list[ast.AST]:
    """The arguments `from_pretrained` keeps: all but optimum-tpu's own, by keyword or position."""
    kept: list[ast.AST] = []
    position = 0
    for argument in call.args:
        if not isinstance(argument, ast.Starred):
            position += 1
            if 1 < position <= 1 + len(OPTIMUM_ONLY):
                continue
        kept.append(argument)
    kept += [keyword for keyword in call.keywords if keyword.arg not in OPTIMUM_ONLY]
    return kept

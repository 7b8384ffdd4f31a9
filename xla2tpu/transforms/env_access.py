"""torch_xla's environment helpers spelled with `os` (`xu.getenv_as`, `xu.check_env_flag`)."""

from __future__ import annotations

import libcst as cst

from xla2tpu.transforms import CallSite, Rewrite, transform
from xla2tpu.transforms.forms import fresh_name, render_expression


def _repeatable(node: cst.BaseExpression) -> bool:
    """A variable name the replacement may read twice: a string literal or a plain name."""
    return isinstance(node, (cst.SimpleString, cst.Name, cst.Attribute))


@transform("getenv-as")
def getenv_as(site: CallSite) -> Rewrite | None:
    """`getenv_as(name, type, defval)` → `type(os.environ[name]) if name in os.environ else defval`.

    For `bool` torch_xla parsed an integer first (`bool(int(value))`), so "0" is False.
    """
    name, kind = site.args.get("name"), site.args.get("type")
    if name is None or kind is None or not _repeatable(name):
        return None
    is_bool = isinstance(kind, cst.Name) and kind.value == "bool" and not site.scope.binds("bool")
    value = "bool(int(os.environ[{name}]))" if is_bool else "{type}(os.environ[{name}])"
    imports: set[str] = set()
    expression = render_expression(site, f"{value} if {{name}} in os.environ else {{defval?None}}", imports)
    return Rewrite(expression=expression, imports=imports)


@transform("check-env-flag")
def check_env_flag(site: CallSite) -> Rewrite | None:
    """`check_env_flag(name, default)` → true for "true" or a positive integer, as torch_xla read it."""
    if "name" not in site.args:
        return None
    flag = fresh_name(site, "flag")
    imports: set[str] = set()
    template = f'(({flag} := os.getenv({{name}}, {{default?""}})) == "true" or ({flag}.isdigit() and int({flag}) > 0))'
    return Rewrite(expression=render_expression(site, template, imports), imports=imports)

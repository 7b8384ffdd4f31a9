"""torch_xla's environment helpers spelled with `os` (`xu.getenv_as`, `xu.check_env_flag`).

Which calls can be rewritten, and the templates, are decided on CPython's tree
(detect/env_access_site.py): this module builds what the detector allowed."""

from __future__ import annotations

import libcst as cst

from xla2tpu.detect import env_access_site
from xla2tpu.rewrite.transforms.base import CallSite, Rewrite, transform
from xla2tpu.rewrite.transforms.forms import fresh_name, render_expression


@transform(env_access_site.GETENV_AS)
def getenv_as(site: CallSite) -> Rewrite | None:
    """`getenv_as(name, type, defval)` → `type(os.environ[name]) if name in os.environ else defval`."""
    kind = site.args["type"]
    is_bool = isinstance(kind, cst.Name) and kind.value == "bool" and not site.scope.binds("bool")
    imports: set[str] = set()
    expression = render_expression(site, env_access_site.getenv_template(is_bool), imports)
    return Rewrite(expression=expression, imports=imports)


@transform(env_access_site.CHECK_ENV_FLAG)
def check_env_flag(site: CallSite) -> Rewrite | None:
    """`check_env_flag(name, default)` → true for "true" or a positive integer, as torch_xla read it."""
    imports: set[str] = set()
    template = env_access_site.flag_template(fresh_name(site, "flag"))
    return Rewrite(expression=render_expression(site, template, imports), imports=imports)

"""Where torch_xla's environment helpers (`xu.getenv_as`, `xu.check_env_flag`) can be
spelled with `os`, decided on CPython's tree before any edit (transforms/env_access.py
builds them on LibCST's), and what they write. Nothing here imports LibCST."""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence

from xla2tpu.detect.values import simple_string

GETENV_AS, CHECK_ENV_FLAG = "getenv-as", "check-env-flag"

# `getenv_as(name, type, defval)`; for `bool` torch_xla parsed an integer first, so "0" is False.
_GETENV = "{value} if {{name}} in os.environ else {{defval?None}}"
GETENV_VALUE = "{type}(os.environ[{name}])"
GETENV_BOOL = "bool(int(os.environ[{name}]))"
# `check_env_flag(name, default)`: true for "true" or a positive integer (`{flag}`: a fresh name).
CHECK_FLAG = '(({flag} := os.getenv({{name}}, {{default?""}})) == "true" or ({flag}.isdigit() and int({flag}) > 0))'


def getenv_template(is_bool: bool) -> str:
    return _GETENV.format(value=GETENV_BOOL if is_bool else GETENV_VALUE)


def flag_template(flag: str) -> str:
    return CHECK_FLAG.format(flag=flag)


# Every template either writes, for what a fix may read or spell (the flag's name is fresh).
TEMPLATES = {GETENV_AS: (getenv_template(True), getenv_template(False)), CHECK_ENV_FLAG: (flag_template("flag"),)}


def makeable(template: str, args: Mapping[str, ast.AST], lines: Sequence[str]) -> bool:
    """Whether the helper call, whose bound arguments are `args`, can be rewritten: for
    `getenv_as`, its name is one the replacement may read twice (a string literal, a
    variable or an attribute)."""
    if template == CHECK_ENV_FLAG:
        return "name" in args
    name = args.get("name")
    return "type" in args and (isinstance(name, (ast.Name, ast.Attribute)) or (name is not None and simple_string(name, lines)))

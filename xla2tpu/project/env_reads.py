"""Which environment variables a file reads, from its text.

A write of a variable the same file reads back is the input of that read (a test that
sets `XRT_HOST_ORDINAL` and then calls the code that reads it): deleting the write
changes what the read sees, whatever TorchTPU itself reads. Text, not the syntax tree,
because the write is decided before the pass reaches reads further down; a read in a
comment or a string only makes the verdict more careful.
"""

from __future__ import annotations

import re

# A variable's name: a string literal, or a constant of torch_xla's `xla_env_vars`
# (`xenv.HOST_ORDINAL`), as code reading it through `getenv_as(xenv.HOST_ORDINAL, int, 0)` spells it.
_NAME = (r"""(?:['"](?P<name>[A-Za-z_][A-Za-z0-9_]*)['"]"""
         r"|\b(?:xenv|xla_env_vars)\s*\.\s*(?P<constant>[A-Z][A-Z0-9_]*)\b)")
_READS = (
    # os.environ["X"], unless assigned to (`==` is a read)
    re.compile(rf"environ\s*\[\s*{_NAME}\s*\](?!\s*(?:=(?!=)|[-+*/|&]=))"),
    # os.environ.get("X"), os.getenv("X"), xu.getenv_as("X", ...), xu.check_env_flag("X")
    re.compile(rf"(?:environ\s*\.\s*get|getenv|getenv_as|check_env_flag)\s*\(\s*{_NAME}"),
    # "X" in os.environ
    re.compile(rf"{_NAME}\s+(?:not\s+)?in\s+(?:\w+\s*\.\s*)?environ\b"),
)


# Each pattern holds one of these words: a file without them reads no variable. The last two
# patterns start with a group or a class, which `re` tries at every character of the file.
_WORDS = ("environ", "getenv", "check_env_flag")
# The XRT-era constants whose value was not their name (torch_xla before 2.1).
_XRT_VALUES = {name: f"XRT_{name}" for name in (
    "HOST_ORDINAL", "SHARD_ORDINAL", "SHARD_LOCAL_ORDINAL", "SHARD_WORLD_SIZE", "LOCAL_WORKER", "WORKERS", "DEVICE_MAP",
    "MESH_SERVICE_ADDRESS", "TPU_CONFIG", "MULTI_PROCESSING_DEVICE", "START_LOCAL_SERVER")}


def variables_read(source: str) -> frozenset[str]:
    """Every variable the file reads through `os.environ` / `os.getenv` / torch_xla's readers."""
    if not any(word in source for word in _WORDS):
        return frozenset()
    return frozenset(_variable(match) for pattern in _READS for match in pattern.finditer(source))


_WRITES = (
    # os.environ["X"] = ...
    re.compile(rf"environ\s*\[\s*{_NAME}\s*\]\s*=(?!=)"),
    # os.environ.setdefault("X", ...), os.putenv("X", ...)
    re.compile(rf"(?:setdefault|putenv)\s*\(\s*{_NAME}"),
)
# os.environ.update(X=..., **{"Y": ...}): the keywords and string keys of the call.
_UPDATE = re.compile(r"environ\s*\.\s*update\s*\(([^)]*)\)")
_UPDATED = re.compile(r"""(?:\b([A-Za-z_][A-Za-z0-9_]*)\s*=(?!=)|['"]([A-Za-z_][A-Za-z0-9_]*)['"]\s*:)""")


def variables_written(source: str) -> frozenset[str]:
    """The variables the file sets in `os.environ` (the sites of the environment rules)."""
    if "environ" not in source and "putenv" not in source:
        return frozenset()
    found = {_variable(match) for pattern in _WRITES for match in pattern.finditer(source)}
    for call in _UPDATE.finditer(source):
        found.update(key or string for key, string in _UPDATED.findall(call.group(1)))
    return frozenset(found)


def _variable(match: re.Match[str]) -> str:
    """The variable a `_NAME` match names: the string, or the value of torch_xla's constant."""
    constant = match.group("constant")
    return match.group("name") or _XRT_VALUES.get(constant, constant)

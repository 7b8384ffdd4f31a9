"""Calls that print or log their argument (`print`, `logger.info`, `xm.master_print`): a
statement that only prints a torch_xla report goes with the report (transforms/helpers.py
on LibCST's tree, detect/sites.py on CPython's)."""

from __future__ import annotations

# Methods of a `logging.Logger` (or the `logging` module) that log one message.
LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "critical", "exception", "log"})


def prints(name: str | None, attribute: str | None) -> bool:
    """Whether a callee spelled `name` (a bare name) or `x.attribute` prints or logs."""
    if name is not None:
        return name in ("print", "master_print")
    return attribute is not None and (attribute in LOG_METHODS or attribute == "master_print")

"""Why a file cannot be read as Python, said the way a user can act on it."""

from __future__ import annotations

import ast
import re

# Why a file does not parse, when the line that fails shows it: old Python 2 code and
# notebook cells exported with their shell and magic lines are common in legacy TPU code.
_PYTHON2 = re.compile(r"^\s*(print\s+[^\s(=.,;)\]}]|exec\s+[\"']|except\s+[\w.]+\s*,\s*\w+\s*:)|`")
_NOTEBOOK = re.compile(r"^\s*[!%]")


class ParseError(Exception):
    """LibCST cannot parse the input."""


class InputSyntaxError(Exception):
    """The input is not valid for this Python, though LibCST's wider grammar parsed it."""

    def __init__(self, error: SyntaxError) -> None:
        super().__init__(str(error))
        self.error = error


def hint(text: str, line: int) -> str:
    lines = text.splitlines()
    failing = lines[line - 1] if 0 < line <= len(lines) else ""
    if _PYTHON2.search(failing):
        return " (this looks like Python 2 source; xla2tpu reads Python 3 only: port the file first, e.g. with `2to3`)"
    if _NOTEBOOK.search(failing):
        return (
            " (this looks like a notebook cell with a shell or magic command (`!pip`, `%env`): drop those lines"
            " or export the notebook with `jupyter nbconvert --to script`)"
        )
    return ""


def python_error(text: str) -> SyntaxError:
    """Why CPython rejects `text`."""
    try:
        ast.parse(text)
    except SyntaxError as exc:
        return exc
    except ValueError as exc:  # e.g. a lone surrogate
        return SyntaxError(str(exc))
    raise AssertionError("CPython parses this text after all")

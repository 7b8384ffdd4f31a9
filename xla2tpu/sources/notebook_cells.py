"""What of a notebook code cell is Python, read the way IPython reads it.

IPython first cleans a cell up: the indentation of its first non-blank line is removed
from every line that starts with it (a cell copied out of a block runs). A cell magic on
that first line (`%%bash`, `%%writefile`) hands the whole cell to something else, as does
cell metadata naming another language (VS Code's `languageId`, Polyglot Notebooks'
kernel). In the rest, `%magic`, `!shell`, `x = !cmd` and `obj?` lines, with their `\\`
continuations, are IPython's; so is a one-line cell such as `pip install x` (automagic).
Those lines become placeholder statements for the engine and are put back after a fix,
never changed.
"""

from __future__ import annotations

import ast
import difflib
import re
import warnings
from dataclasses import dataclass, field

PLACEHOLDER = "__xla2tpu_magic_{}__"
# The statement between two cells of the one module a notebook becomes (run/notebook.py);
# a rule that must know it reads a notebook (a forked launch there cannot become a spawn)
# finds it in the source.
BOUNDARY = "__xla2tpu_cell_{}__"
_PLACEHOLDER = re.compile(r"^([ \t]*)__xla2tpu_magic_(\d+)__\r?\n?$")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")  # Python's line ends only (not \f, \u2028, ...)

# Cell magics whose body is Python run in the notebook: only their first line is IPython's.
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})
_PYTHON_LANGUAGES = frozenset({"python", "python3", "ipython", "ipython3"})
# Where notebook editors record a cell's own language.
_LANGUAGE_KEYS = (("vscode", "languageId"), ("polyglot_notebook", "kernelName"), ("dotnet_interactive", "language"))
# Line magics (and the shell aliases IPython defines) that a one-line cell may call
# without `%`: IPython's automagic.
_AUTOMAGICS = frozenset({
    "pip", "conda", "mamba", "cd", "ls", "ll", "pwd", "mkdir", "rm", "rmdir", "cp", "mv", "cat", "env",
    "set_env", "load_ext", "reload_ext", "autoreload", "matplotlib", "run", "time", "timeit", "who", "whos",
})
_HELP = re.compile(r"^\s*[\w.]+\?\??\s*$")
_ASSIGNED_MAGIC = re.compile(r"^\s*[\w.,\s]+=\s*[!%]")


@dataclass(frozen=True)
class Command:
    """A line that is not Python (a shell or magic line and its `\\` continuations)."""

    first: int  # line numbers in the cell, from 1
    last: int
    col: int  # where it starts, from 1
    end_col: int  # just after its last character
    text: str  # its lines joined into one


@dataclass
class Cell:
    index: int  # position in the notebook's `cells` list
    number: int  # code cells counted from 1, as findings name them
    text: str  # the source as read
    kind: str  # "python", "other" (another language or a non-Python cell magic) or "empty"
    source: list[str]  # its lines, each ending with a newline
    indent: str = ""  # removed by IPython from each line starting with it
    lines: list[str] = field(default_factory=list)  # as IPython reads them: `indent` removed
    python: list[str] = field(default_factory=list)  # `lines` with IPython's lines as placeholders
    # The line (index into `lines`) behind each placeholder, and whether it continues a command.
    masked: list[tuple[int, bool]] = field(default_factory=list)

    def commands(self, every_line: bool = False) -> list[Command]:
        """The cell's lines that are not Python, each command with its continuations; with
        `every_line` (a cell in another language, or one that does not parse), all of them."""
        if every_line or self.kind == "other":
            starts = [(i, i > 0 and _continues(self.source[i - 1])) for i in range(len(self.source))]
        else:
            starts = self.masked
        groups: list[list[int]] = []
        for line, continuation in starts:
            if continuation and groups:
                groups[-1].append(line)
            else:
                groups.append([line])
        return [self._command(group) for group in groups if self.source[group[0]].strip()]

    def _command(self, group: list[int]) -> Command:
        bodies = [self.source[i].rstrip("\r\n") for i in group]
        text = " ".join(body[:-1] if body.endswith("\\") else body for body in bodies)
        first = bodies[0]
        return Command(group[0] + 1, group[-1] + 1, len(first) - len(first.lstrip()) + 1, len(bodies[-1]) + 1, text)

    def restore(self, region: list[str]) -> str | None:
        """The cell's new source from its lines in the fixed module; None when its
        placeholders are not all there, in order."""
        out: list[str] = []
        count = 0
        for line in region:
            match = _PLACEHOLDER.match(line)
            if match is None:
                out.append(line)
                continue
            if int(match.group(2)) != count or count >= len(self.masked):
                return None
            out.append(self._unmask(count, match.group(1)))
            count += 1
        if count != len(self.masked):
            return None
        if self.indent:
            out = self._indent(out)
        text = "".join(out)
        if not self.text.endswith(("\n", "\r")) and text.endswith("\n"):
            text = text[:-1]
        return text

    def _unmask(self, number: int, indent: str) -> str:
        """The line behind placeholder `number`, which the fix may have moved to `indent`
        (a block dedented takes its shell lines along; a continuation stays as it was)."""
        line, continuation = self.masked[number]
        original = self.lines[line]
        stripped = original.lstrip(" \t")
        if continuation or original[: len(original) - len(stripped)] == indent:
            return original
        return indent + stripped

    def _indent(self, lines: list[str]) -> list[str]:
        """`lines` with IPython's removed indentation given back: unchanged lines as they
        were read, new and changed ones indented."""
        out: list[str] = []
        matcher = difflib.SequenceMatcher(None, self.lines, lines, autojunk=False)
        for tag, old_from, old_to, new_from, new_to in matcher.get_opcodes():
            if tag == "equal":
                out += self.source[old_from:old_to]
            else:
                out += [self.indent + line if line.strip() else line for line in lines[new_from:new_to]]
        return out


def read(index: int, number: int, raw: dict, source: str) -> Cell:
    """Code cell `number` (at `index` in the notebook), whose source text is `source`."""
    lines = split_lines(source)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n"
    first = next((line for line in lines if line.strip()), None)
    if first is None:
        return Cell(index, number, source, "empty", lines)
    indent = first[: len(first) - len(first.lstrip(" \t"))]
    read_lines = [line[len(indent) :] if line.startswith(indent) else line for line in lines] if indent else lines
    magic = first.strip()
    if _other_language(raw) or (magic.startswith("%%") and (magic[2:].split() or [""])[0] not in _PYTHON_CELL_MAGICS):
        return Cell(index, number, source, "other", lines, indent, read_lines)
    cell = Cell(index, number, source, "python", lines, indent, read_lines)
    _mask(cell, automagic=sum(1 for line in lines if line.strip()) == 1)
    return cell


def _other_language(raw: dict) -> bool:
    for path in _LANGUAGE_KEYS:
        value: object = raw.get("metadata")
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, str) and value.strip():
            return value.strip().lower() not in _PYTHON_LANGUAGES
    return False


def _continues(line: str) -> bool:
    return line.rstrip("\r\n").endswith("\\")


def _mask(cell: Cell, automagic: bool) -> None:
    """Fill `cell.python` and `cell.masked` from `cell.lines`."""
    continued, command_indent = False, ""
    for number, line in enumerate(cell.lines):
        body = line.rstrip("\r\n")
        stripped = body.lstrip()
        starts = (
            stripped.startswith(("%", "!", "?"))
            or _HELP.match(body) is not None
            or _ASSIGNED_MAGIC.match(body) is not None
            or (automagic and stripped.split(maxsplit=1)[0] in _AUTOMAGICS and syntax_error(body) is not None)
        ) if stripped else False
        if not (continued or starts):
            cell.python.append(line)
            continued = False
            continue
        if not continued:
            command_indent = body[: len(body) - len(stripped)]
        cell.python.append(command_indent + PLACEHOLDER.format(len(cell.masked)) + "\n")
        cell.masked.append((number, continued))
        continued = body.endswith("\\")


def split_lines(text: str) -> list[str]:
    """`text`'s lines with their ends, split where Python ends a line (`str.splitlines`
    also splits at form feeds and \\u2028, which may sit inside a string literal)."""
    return _LINE.findall(text)


def syntax_error(text: str) -> SyntaxError | None:
    """Why CPython's parser rejects `text`, or None. (It only parses: nothing is run.)"""
    try:
        with warnings.catch_warnings():  # invalid escapes and the like are not our business
            warnings.simplefilter("ignore")
            compile(text, "<cell>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        return exc
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, deep nesting
        return SyntaxError(str(exc) or "the code nests too deeply")
    return None

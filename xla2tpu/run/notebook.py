"""Jupyter notebooks: their Python cells become one virtual Python module for the engine.

Cells are joined with a marker statement between them, so imports and names flow from
cell to cell as they do in the kernel; IPython's own lines are placeholders
(notebook_cells.py). A cell that is not Python (another language, a `%%bash` cell) or
that does not parse is kept out: it is never changed, a cell that does not parse is
reported with its number, and every other cell is still checked and fixed. Such a cell
stays in the module as a marker naming what it uses, so no import it needs is dropped,
and with its top-level import lines, so names it imports still resolve in later cells.
Findings are mapped back to a code cell (numbered from 1, as ruff does) and its line.

A fix is written into the notebook's JSON text in place (notebook_json.py): only the
`source` of the cells that changed is replaced.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import keyword
import re
from collections import Counter
from dataclasses import dataclass, field

from xla2tpu.catalogue import rules as catalogue_mod
from xla2tpu.sources import notebook_json
from xla2tpu.catalogue.diagnostics import Diagnostic, FileResult, FixClass
from xla2tpu.sources.notebook_cells import BOUNDARY, Cell, read, split_lines, syntax_error
from xla2tpu.catalogue.settings import Settings


SUFFIX = ".ipynb"
SETUP_CODE = "XLA090"  # the catalogue's torch-xla-install rule

_KEPT = "__xla2tpu_kept_{}__"
_BOUNDARY_LINE = re.compile(r"^__xla2tpu_cell_\d+__\r?\n?$")
_KEPT_LINE = re.compile(r"^__xla2tpu_kept_(\d+)__\b")
_ADDED_IMPORT = re.compile(r"^import [\w.]+\r?\n?$")  # what the engine's add_imports writes
_NAME = re.compile(r"(?<![\w.])[^\W\d]\w*")
_SYNTAX = re.compile(r"^syntax error at (\d+):(\d+): ")
_LIBCST_PREFIX = re.compile(r"^(?:parser error: error at \d+:\d+: |tokenizer error: )")
# First words of a line that is a shell command typed without `!`.
_SHELL = frozenset({
    "pip", "pip3", "python", "python3", "git", "gcloud", "gsutil", "apt", "apt-get", "sudo", "wget", "curl",
    "export", "cd", "conda", "echo", "mkdir", "unzip", "tar", "torchrun", "accelerate", "huggingface-cli",
})


@dataclass(frozen=True, order=True)
class CellDiagnostic(Diagnostic):
    """A finding in a notebook: `line` and `end_line` count within code cell `cell`."""

    cell: int = field(default=0, compare=False)


class NotebookError(Exception):
    """Not a notebook xla2tpu can read; the message says why, on one line."""


@dataclass
class Notebook:
    text: str  # the JSON as read, edited in place by a fix
    data: dict
    cells: list[Cell]  # the code cells


def load(data: bytes) -> Notebook:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotebookError(f"notebook is not UTF-8 (byte 0x{data[exc.start]:02x})") from None
    try:
        nb = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"invalid notebook JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise NotebookError("not a Jupyter notebook (nbformat 4): no `cells` list")
    cells: list[Cell] = []
    for index, raw in enumerate(nb["cells"]):
        source = raw.get("source") if isinstance(raw, dict) and raw.get("cell_type") == "code" else None
        if isinstance(source, list) and all(isinstance(line, str) for line in source):
            source = "".join(source)
        if isinstance(source, str):
            cells.append(read(index, len(cells) + 1, raw, source))
    return Notebook(text, nb, cells)


def is_python(nb: Notebook) -> bool:
    metadata = nb.data.get("metadata") or {}
    language = (metadata.get("language_info") or {}).get("name") or (metadata.get("kernelspec") or {}).get("language")
    return language in (None, "python", "python3")


def setup_findings(nb: Notebook, settings: Settings, unparsed: frozenset[int] = frozenset()) -> list[CellDiagnostic]:
    """The shell and magic commands that install torch_xla or set its runtime up (the
    XLA090 rule): IPython's lines, and every line of a cell in another language or of a
    cell in `unparsed` (code cell numbers)."""
    if SETUP_CODE not in settings.selected:
        return []
    rule = catalogue_mod.load().by_code[SETUP_CODE]
    assert rule.pattern is not None
    message = rule.cases[-1].message
    found: list[CellDiagnostic] = []
    for cell in nb.cells:
        for command in cell.commands(every_line=cell.number in unparsed):
            if rule.pattern.search(command.text) is not None:
                source = " ".join(command.text.split())
                found.append(CellDiagnostic(command.first, command.col, SETUP_CODE, message.replace("{source}", source),
                                            FixClass.MANUAL, end_line=command.last, end_col=command.end_col, cell=cell.number))
    return found


def _where(cell: Cell, line: int, col: int) -> str:
    """`line:col` in the cell as written, from a position in its Python (which lacks the
    indentation IPython removes)."""
    source = cell.source[line - 1] if 0 < line <= len(cell.source) else ""
    shift = len(cell.indent) if cell.indent and source.startswith(cell.indent) else 0
    return f"{line}:{col + shift}"


def _problem(cell: Cell) -> str | None:
    """Why the cell's Python does not parse, or None."""
    error = syntax_error("".join(cell.python))
    if error is None:
        return None
    if error.lineno is None:  # not a syntax error (NUL bytes, a lone surrogate, deep nesting)
        return f"cannot parse: {error.msg}"
    line = error.lineno
    words = cell.source[line - 1].split(maxsplit=1) if 0 < line <= len(cell.source) else []
    hint = " (a shell command? start the cell with %%bash, or the line with !)" if words and words[0] in _SHELL else ""
    return f"syntax error at {_where(cell, line, error.offset or 0)}: {error.msg}{hint}"


def _uses(cell: Cell) -> list[str]:
    """Every name the cell may use (and some words that are not names: keeping an import
    a cell might need is the safe side)."""
    names = {name for name in _NAME.findall("".join(cell.lines)) if not keyword.iskeyword(name)}
    return sorted(name for name in names if not name.startswith("__xla2tpu_"))


def _imports(cell: Cell) -> list[str]:
    """The cell's top-level import lines that parse on their own."""
    found = []
    for line in cell.python:
        if line.startswith(("import ", "from ")) and syntax_error(line) is None:
            statement = ast.parse(line).body[0]
            if not (isinstance(statement, ast.ImportFrom) and statement.module == "__future__"):
                found.append(line.rstrip("\r\n") + "\n")
    return found


def _kept(cell: Cell, unparsed: dict[int, str]) -> list[str]:
    """A cell that is not checked, in the module: its marker and, for one that does not
    parse, the names it uses and the imports it makes."""
    if cell.number not in unparsed:
        return [_KEPT.format(cell.number) + "\n"]
    uses = _uses(cell)
    return [_KEPT.format(cell.number) + (f"({', '.join(uses)})" if uses else "") + "\n", *_imports(cell)]


def _checked(cell: Cell, unparsed: dict[int, str]) -> bool:
    return cell.kind == "python" and cell.number not in unparsed


def virtual_module(nb: Notebook, unparsed: dict[int, str]) -> tuple[str, list[int]]:
    """The cells as one module, and the line each cell starts on."""
    lines: list[str] = []
    starts: list[int] = []
    for position, cell in enumerate(nb.cells):
        if position:
            lines.append(BOUNDARY.format(position) + "\n")
        starts.append(len(lines) + 1)
        lines += cell.python if _checked(cell, unparsed) else _kept(cell, unparsed)
    return "".join(lines), starts


def _locate(starts: list[int], line: int) -> tuple[int, int]:
    """(position in the code cells, line in that cell) of a module line."""
    for position in range(len(starts) - 1, -1, -1):
        if line >= starts[position]:
            return position, line - starts[position] + 1
    return 0, line


def _map(nb: Notebook, starts: list[int], diagnostic: Diagnostic) -> CellDiagnostic:
    position, line = _locate(starts, diagnostic.line)
    end_position, end_line = _locate(starts, diagnostic.end_line or diagnostic.line)
    fields = {f.name: getattr(diagnostic, f.name) for f in dataclasses.fields(diagnostic)}
    fields.update(line=line, end_line=end_line if end_position == position else line, cell=nb.cells[position].number)
    return CellDiagnostic(**fields)


def _new_sources(nb: Notebook, unparsed: dict[int, str], code: str) -> dict[int, str] | None:
    """The new source of each changed cell, by its index in the notebook, from the fixed
    module; None when the module's markers are not all there, in order.

    A cell that is not checked is never changed: what the fix did to its lines is dropped,
    except an import it added there (the import section it chose, or the top of the
    module), which goes to the top of the next checked cell."""
    regions: list[list[str]] = [[]]
    for line in split_lines(code):
        if _BOUNDARY_LINE.match(line):
            regions.append([])
        else:
            regions[-1].append(line)
    if len(regions) != len(nb.cells):
        return None
    carried: list[str] = []
    new: dict[int, str] = {}
    for cell, region in zip(nb.cells, regions):
        if not _checked(cell, unparsed):
            markers = [int(m.group(1)) for m in map(_KEPT_LINE.match, region) if m is not None]
            if markers != [cell.number]:
                return None
            emitted = Counter(_kept(cell, unparsed))
            carried += [line for line in region if _ADDED_IMPORT.match(line) and not _take(emitted, line)]
            continue
        text = cell.restore(carried + region)
        if text is None:
            return None
        carried = []
        if text != cell.text:
            new[cell.index] = text
    return new


def _take(counts: Counter[str], line: str) -> bool:
    """Whether `line` is one of `counts` not taken yet (and take it)."""
    if counts[line] <= 0:
        return False
    counts[line] -= 1
    return True


def _libcst_problem(cell: Cell) -> str | None:
    """Why LibCST does not parse the cell's Python, or None."""
    import libcst as cst

    try:
        cst.parse_module("".join(cell.python))
    except cst.ParserSyntaxError as exc:
        message = _LIBCST_PREFIX.sub("", exc.message)
        return f"syntax error at {_where(cell, exc.raw_line, exc.raw_column + 1)}: {message}"
    except RecursionError:
        return "cannot parse: the code nests too deeply"
    return None


def process_notebook(path: str, data: bytes, settings: Settings) -> FileResult:
    """Lint and fix one notebook's bytes, like `engine.process_source` for a .py file."""
    from xla2tpu.run import engine  # libcst is loaded only when a notebook needs it

    try:
        nb = load(data)
    except NotebookError as exc:
        return FileResult(path, error=str(exc), lines=data.count(b"\n"))
    if not is_python(nb):
        return FileResult(path, lines=data.count(b"\n"))
    unparsed = {cell.number: problem for cell in nb.cells if cell.kind == "python" and (problem := _problem(cell))}
    module, starts = virtual_module(nb, unparsed)
    result = engine.process_source(path, module.encode("utf-8"), settings)
    if _SYNTAX.match(result.error or ""):
        # LibCST rejects what CPython accepts (newer syntax, say): find the cells it rejects
        # one by one (an unclosed bracket is reported cells after the one that opened it).
        unparsed |= {cell.number: problem for cell in nb.cells if _checked(cell, unparsed) and (problem := _libcst_problem(cell))}
        module, starts = virtual_module(nb, unparsed)
        result = engine.process_source(path, module.encode("utf-8"), settings)
    result.lines = module.count("\n")
    syntax = _SYNTAX.match(result.error or "")
    if syntax is not None:  # not expected: every cell left in parses on its own
        position, line = _locate(starts, int(syntax.group(1)))
        rest = result.error[syntax.end() :]  # type: ignore[index]
        result.error = f"cell {nb.cells[position].number}: syntax error at {line}:{syntax.group(2)}: {rest}"
    checked = {cell.number for cell in nb.cells if _checked(cell, unparsed)}
    found = [d for d in (_map(nb, starts, d) for d in result.diagnostics) if d.cell in checked]
    found += setup_findings(nb, settings, frozenset(unparsed))
    result.diagnostics = sorted(found, key=lambda d: (d.cell, d.line, d.col, d.code))
    problems = [f"cell {number} not checked: {problem}" for number, problem in sorted(unparsed.items())]
    result.error = "; ".join([result.error, *problems] if result.error else problems) or None
    if result.new_source is not None:
        result.new_source = _write(nb, unparsed, result)
    return result


def _write(nb: Notebook, unparsed: dict[int, str], result: FileResult) -> bytes | None:
    """The fixed notebook's bytes; None (the findings unfixed, the reason in the error)
    when the fix cannot be put back into the cells."""
    assert result.new_source is not None
    new = _new_sources(nb, unparsed, result.new_source.decode("utf-8"))
    try:
        if new is None:
            raise notebook_json.LayoutError("the fixes could not be mapped back to the cells")
        return notebook_json.replace_sources(nb.text, new).encode("utf-8") if new else None
    except notebook_json.LayoutError as exc:
        result.diagnostics = [dataclasses.replace(d, fixed=False) for d in result.diagnostics]
        problem = f"{exc}, so the fixes were not written (please report it)"
        result.error = f"{result.error}; {problem}" if result.error else problem
        return None

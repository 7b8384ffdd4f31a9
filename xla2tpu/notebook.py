"""Jupyter notebooks: their code cells become one virtual Python module for the engine.

Cells are joined with a marker statement between them, so imports and names flow from
cell to cell as they do in the kernel. IPython lines (`%magic`, `!shell`, `obj?`,
`x = !cmd`, non-Python `%%cell` magics) are replaced by placeholder statements, so they
never break parsing and are never changed; the placeholders are put back after the fix.
Findings are mapped back to a code cell (numbered from 1, as ruff does) and its line.

The notebook JSON is written back with the formatting it was read with (indent, key
order, escaping, final newline); a notebook whose bytes that cannot reproduce is reported,
never rewritten.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field

from xla2tpu import catalogue as catalogue_mod
from xla2tpu.settings import Settings
from xla2tpu.diagnostics import Diagnostic, FileResult, FixClass


SUFFIX = ".ipynb"
SETUP_CODE = "XLA090"  # the catalogue's torch-xla-install rule

_CELL = "__xla2tpu_cell_{}__"
_MAGIC = "__xla2tpu_magic_{}__"
_MARKER = re.compile(r"^([ \t]*)__xla2tpu_(cell|magic)_(\d+)__$")
# Cell magics whose body is Python: only their first line is masked.
_PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun", "debug", "pypy"}
_HELP = re.compile(r"^\s*[\w.]+\?\??\s*$")
_ASSIGNED_MAGIC = re.compile(r"^\s*[\w.,\s]+=\s*[!%]")


@dataclass(frozen=True, order=True)
class CellDiagnostic(Diagnostic):
    """A finding in a notebook: `line` and `end_line` count within code cell `cell`."""

    cell: int = field(default=0, compare=False)


class NotebookError(Exception):
    """Not a notebook xla2tpu can read; the message says why, on one line."""


@dataclass
class _Cell:
    raw: dict  # the cell's JSON object, edited in place on a fix
    text: str  # its source, one string
    start: int = 0  # first line in the virtual module (1-based)
    masked: list[str] = field(default_factory=list)  # original lines of the placeholders, by number


@dataclass
class Notebook:
    data: dict
    indent: int | None
    ensure_ascii: bool
    newline: bool  # a final newline after the JSON
    cells: list[_Cell]

    def dump(self) -> bytes:
        text = json.dumps(self.data, indent=self.indent, ensure_ascii=self.ensure_ascii)
        return (text + ("\n" if self.newline else "")).encode("utf-8")


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
    cells = [
        _Cell(cell, _source_text(cell["source"]))
        for cell in nb["cells"]
        if isinstance(cell, dict) and cell.get("cell_type") == "code" and isinstance(cell.get("source"), (str, list))
    ]
    return Notebook(nb, _indent(text), _escapes_non_ascii(text), text.endswith("\n"), cells)


def _source_text(source: str | list[str]) -> str:
    return source if isinstance(source, str) else "".join(source)


def _indent(text: str) -> int | None:
    match = re.search(r"\n( *)\S", text)
    return len(match.group(1)) if match else None


def _escapes_non_ascii(text: str) -> bool:
    if not text.isascii():
        return False
    return re.search(r"\\u(?!00[0-7])[0-9a-fA-F]{4}", text) is not None


def is_python(nb: Notebook) -> bool:
    metadata = nb.data.get("metadata") or {}
    language = (metadata.get("language_info") or {}).get("name") or (metadata.get("kernelspec") or {}).get("language")
    return language in (None, "python", "python3")


def _mask(cell: _Cell) -> list[str]:
    """The cell's lines with every IPython line replaced by a placeholder."""
    lines = cell.text.splitlines(keepends=True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n"
    first = lines[0].strip() if lines else ""
    whole_cell = first.startswith("%%") and first[2:].split(" ", 1)[0] not in _PYTHON_CELL_MAGICS
    out: list[str] = []
    continued = False
    for number, line in enumerate(lines):
        body = line.rstrip("\r\n")
        stripped = body.lstrip()
        ipython = (
            whole_cell
            or continued
            or stripped.startswith(("%", "!", "?"))
            or _HELP.match(body) is not None
            or _ASSIGNED_MAGIC.match(body) is not None
        )
        if not ipython:
            out.append(line)
            continue
        continued = body.endswith("\\")
        indent = body[: len(body) - len(stripped)] if number else ""
        out.append(indent + _MAGIC.format(len(cell.masked)) + "\n")
        cell.masked.append(body)
    return out


def virtual_module(nb: Notebook) -> str:
    """The code cells as one module; each cell's `start` line is recorded."""
    lines: list[str] = []
    for index, cell in enumerate(nb.cells):
        if index:
            lines.append(_CELL.format(index) + "\n")
        cell.start = len(lines) + 1
        lines.extend(_mask(cell))
    return "".join(lines)


def _locate(nb: Notebook, line: int) -> tuple[int, int]:
    """(code cell number from 1, line in that cell) of a virtual module line."""
    for number in range(len(nb.cells), 0, -1):
        start = nb.cells[number - 1].start
        if line >= start:
            return number, line - start + 1
    return 1, line


def _map(nb: Notebook, diagnostic: Diagnostic) -> CellDiagnostic:
    cell, line = _locate(nb, diagnostic.line)
    end_cell, end_line = _locate(nb, diagnostic.end_line or diagnostic.line)
    fields = {f.name: getattr(diagnostic, f.name) for f in dataclasses.fields(diagnostic)}
    fields.update(line=line, end_line=end_line if end_cell == cell else line, cell=cell)
    return CellDiagnostic(**fields)


def setup_findings(nb: Notebook, settings: Settings) -> list[CellDiagnostic]:
    """The masked lines that install torch_xla or set its runtime up (the XLA090 rule)."""
    if SETUP_CODE not in settings.selected:
        return []
    rule = catalogue_mod.load().by_code[SETUP_CODE]
    assert rule.pattern is not None
    message = rule.cases[-1].message
    found: list[CellDiagnostic] = []
    for number, cell in enumerate(nb.cells, start=1):
        lines = cell.text.splitlines()
        for index, line in enumerate(lines, start=1):
            stripped = line.lstrip()
            if not stripped.startswith(("!", "%")) and _ASSIGNED_MAGIC.match(line) is None:
                continue
            match = rule.pattern.search(line)
            if match is not None:
                col = len(line) - len(stripped) + 1
                found.append(
                    CellDiagnostic(index, col, SETUP_CODE, message.replace("{source}", stripped.strip()),
                                   FixClass.MANUAL, end_line=index, end_col=len(line) + 1, cell=number)
                )
    return found


def _restore(nb: Notebook, code: str) -> list[str] | None:
    """Each cell's new source from the fixed virtual module; None if a marker was lost."""
    texts: list[list[str]] = [[]]
    magic = 0
    for line in code.splitlines(keepends=True):
        match = _MARKER.match(line.rstrip("\r\n"))
        if match is None:
            texts[-1].append(line)
        elif match.group(2) == "cell":
            if int(match.group(3)) != len(texts):
                return None
            texts.append([])
            magic = 0
        else:
            masked = nb.cells[len(texts) - 1].masked
            if int(match.group(3)) != magic or magic >= len(masked):
                return None
            original = masked[magic]
            # A block the fix dedented takes its shell lines along.
            texts[-1].append((match.group(1) + original.lstrip() if original[:1].isspace() else original) + "\n")
            magic += 1
    if len(texts) != len(nb.cells):
        return None
    out = []
    for cell, lines in zip(nb.cells, texts):
        text = "".join(lines)
        if not cell.text.endswith(("\n", "\r")) and text.endswith("\n"):
            text = text[:-1]
        out.append(text)
    return out


def _set_source(cell: _Cell, text: str) -> None:
    if isinstance(cell.raw["source"], str):
        cell.raw["source"] = text
    else:
        cell.raw["source"] = text.splitlines(keepends=True)


def process_notebook(path: str, data: bytes, settings: Settings) -> FileResult:
    """Lint and fix one notebook's bytes, like `engine.process_source` for a .py file."""
    from xla2tpu import engine  # libcst is loaded only when a notebook needs it

    try:
        nb = load(data)
    except NotebookError as exc:
        return FileResult(path, error=str(exc), lines=data.count(b"\n"))
    if not is_python(nb):
        return FileResult(path, lines=data.count(b"\n"))
    module = virtual_module(nb)
    result = engine.process_source(path, module.encode("utf-8"), settings)
    result.lines = module.count("\n")
    if result.error:
        result.error = _map_error(nb, result.error)
        return result
    diagnostics: list[Diagnostic] = [_map(nb, d) for d in result.diagnostics]
    diagnostics += setup_findings(nb, settings)
    result.diagnostics = sorted(diagnostics, key=lambda d: (getattr(d, "cell", 0), d.line, d.col, d.code))
    if result.new_source is not None:
        try:
            result.new_source = _rewrite(nb, data, result.new_source.decode("utf-8"))
        except NotebookError as exc:
            result.new_source = None
            result.diagnostics = [dataclasses.replace(d, fixed=False) for d in result.diagnostics]
            result.error = str(exc)
    return result


def _rewrite(nb: Notebook, original: bytes, code: str) -> bytes:
    if nb.dump() != original:  # say so rather than reformat the whole file
        raise NotebookError("its JSON formatting cannot be reproduced byte for byte, so the fixes were not written")
    texts = _restore(nb, code)
    if texts is None:
        raise NotebookError("the fixes could not be mapped back to the cells, so they were not written (please report it)")
    for cell, text in zip(nb.cells, texts):
        if text != cell.text:
            _set_source(cell, text)
    return nb.dump()


_ERROR_LINE = re.compile(r"^syntax error at (\d+):(\d+): ")


def _map_error(nb: Notebook, error: str) -> str:
    match = _ERROR_LINE.match(error)
    if match is None:
        return error
    cell, line = _locate(nb, int(match.group(1)))
    return f"syntax error in cell {cell} at {line}:{match.group(2)}: {error[match.end():]}"

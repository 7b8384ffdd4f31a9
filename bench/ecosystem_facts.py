"""What a source file is, read with CPython's own parser: does it import torch_xla or Optimum
TPU, is it a program (a `__main__` block), does it parse, how much "tpu" does it spell.

Independent of xla2tpu on purpose: the ecosystem check judges xla2tpu's output, so it must
not see that output through xla2tpu's own eyes.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass

LEGACY_ROOTS = ("torch_xla", "optimum.tpu", "optimum_tpu")
# Ways migrated code names the TPU; counted before and after so that a control repository
# (torch_xla on Neuron or Tenstorrent) shows any rewrite that sends it to a TPU.
TPU_SPELLING = re.compile(r"""["']tpu(?::\d+)?["']|\btorch\.tpu\b|\btorch_tpu\b""")
# IPython lines a notebook cell may hold; they are not Python.
_MAGIC = re.compile(r"^\s*[%!?]|^\s*\w[\w.]*\?\s*$")


@dataclass(frozen=True)
class Facts:
    lines: int
    parses: bool
    legacy_import: bool  # imports torch_xla / optimum.tpu anywhere (functions, try blocks too)
    program: bool  # has an `if __name__ == "__main__":` block at module level
    tpu_spellings: int


def code_of(name: str, data: bytes) -> str | None:
    """The Python text of a file: a .py file's text, or a notebook's code cells joined, with
    IPython lines blanked. None when it cannot be decoded."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        try:
            text = data.decode("latin-1")
        except UnicodeDecodeError:
            return None
    if not name.endswith(".ipynb"):
        return text
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError:
        return None
    cells = notebook.get("cells", []) if isinstance(notebook, dict) else []
    chunks = []
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        if source.lstrip().startswith("%%"):
            continue  # a cell magic: the whole cell is another language
        chunks.append("\n".join("" if _MAGIC.match(line) else line for line in source.splitlines()))
    return "\n\n".join(chunks) + "\n"


def _is_legacy(module: str) -> bool:
    return any(module == root or module.startswith(root + ".") for root in LEGACY_ROOTS)


def _imports_legacy(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(_is_legacy(alias.name) for alias in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if _is_legacy(node.module):
                return True
            if node.module == "optimum" and any(alias.name == "tpu" for alias in node.names):
                return True
    return False


def _is_main_guard(node: ast.stmt) -> bool:
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    sides = [node.test.left, *node.test.comparators]
    names = {s.id for s in sides if isinstance(s, ast.Name)}
    strings = {s.value for s in sides if isinstance(s, ast.Constant)}
    return names == {"__name__"} and strings == {"__main__"}


def facts(name: str, data: bytes) -> Facts:
    text = code_of(name, data)
    if text is None:
        return Facts(lines=data.count(b"\n"), parses=False, legacy_import=False, program=False, tpu_spellings=0)
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    spellings = len(TPU_SPELLING.findall(text))
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        # Unparsable: still say whether it imports torch_xla, by its lines.
        legacy = bool(re.search(r"^\s*(?:import|from)\s+(?:torch_xla|optimum\.tpu)\b", text, re.M))
        return Facts(lines, False, legacy, False, spellings)
    program = any(_is_main_guard(node) for node in tree.body)
    return Facts(lines, True, _imports_legacy(tree), program, spellings)

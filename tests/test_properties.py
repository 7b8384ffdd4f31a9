"""Property tests: on any module, `check` never crashes and `fix` never corrupts.

Inputs are composites: the rule fixtures (real torch_xla idioms, each a whole module with
its imports), optionally wrapped in a function, class, `if`, `with` or `try` block, with
generated modules spliced between them as *fillers* (hypothesmith's grammar-driven
modules, or lines that shadow idiom names), in LF or CRLF, with or without a BOM. For each:

- the engine returns (no exception) and reports no internal error;
- it reports a syntax error only when CPython also rejects the input, on one line;
- the fixed source compiles, and fixing it again changes nothing;
- every non-blank filler line is in the output unchanged and in order: `fix` may insert
  lines (imports), but edits nothing it did not match, whatever sits around it.

The CI profile runs a fixed set of a few hundred inputs (derandomized); the long profile,
`python bench/fuzz_long.py`, runs the same checks on fresh random inputs.
"""

from __future__ import annotations

import ast
import codecs
import difflib
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import hypothesmith
import libcst
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from xla2tpu.catalogue import rules as catalogue
from xla2tpu.catalogue.diagnostics import FixClass
from xla2tpu.run.engine import process_source
from xla2tpu.catalogue.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
IDIOMS = tuple(
    path.read_text(encoding="utf-8")
    for path in sorted((ROOT / "fixtures").glob("XLA*/*.py"))
    if not path.name.endswith(".fixed.py")
)

# Fillers that rebind or mention the names idioms use, without using them: they change
# what the fixtures' names resolve to, but a filler itself must never be edited.
SHADOWING = (
    "xm = None\n",
    "def xla_device():\n    return 'cpu'\n",
    "class xm:\n    pass\n",
    "torch = object()\n",
    "import os as torch_xla\n",
    "# xm.mark_step() in a comment\n",
    "message = 'call xm.xla_device() and mark_step()'\n",
    "def f(xm):\n    return xm.xla_device()\n",
    "for xm in range(2):\n    pass\n",
    "x = 1  # noqa: XLA101\n",
    "\n\n",
    "if True:\n    pass\n    # a comment at the end of a block\n",
    "\"\"\"A string statement.\"\"\"\n",
)

_WRAPPERS = (
    "def _wrapped():\n",
    "class _Wrapped:\n",
    "if __name__ == '__main__':\n",
    "with open(__file__) as _handle:\n",
    "try:\n",
)

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def lines(text: str) -> list[str]:
    """Physical lines as Python splits them (not str.splitlines, which also splits on \\f)."""
    return _LINE.findall(text)


def terminated(text: str) -> str:
    """`text` ending in a newline that cannot merge with the next chunk's first line."""
    if text.endswith("\r"):
        return text + "\n"
    return text if text.endswith("\n") else text + "\n"


def wrap(text: str, header: str) -> str:
    body = "".join(("    " + line) if line.strip() else line for line in lines(terminated(text)))
    body = body or "    pass\n"
    return header + body + ("except ImportError:\n    pass\n" if header == "try:\n" else "")


@dataclass(frozen=True)
class Composite:
    """A generated input: chunks of text, each an idiom module or a filler."""

    chunks: tuple[tuple[str, bool], ...]  # (text, is_filler)
    crlf: bool
    bom: bool
    settings: Settings

    def text(self) -> str:
        return "".join(self._chunk_text(text) for text, _ in self.chunks)

    def _chunk_text(self, text: str) -> str:
        text = terminated(text)
        return re.sub(r"\r\n|\r|\n", "\r\n", text) if self.crlf else text

    def data(self) -> bytes:
        return (codecs.BOM_UTF8 if self.bom else b"") + self.text().encode("utf-8")

    def filler_lines(self) -> list[int]:
        """Indexes, in `lines(self.text())`, of the lines that belong to fillers."""
        found: list[int] = []
        index = 0
        for text, filler in self.chunks:
            count = len(lines(self._chunk_text(text)))
            if filler:
                found.extend(range(index, index + count))
            index += count
        return found


def _settings(unsafe: bool, target: str) -> Settings:
    everything = frozenset(rule.code for rule in catalogue.load())
    return Settings(everything, frozenset({FixClass.SAFE, FixClass.UNSAFE} if unsafe else {FixClass.SAFE}), target)


# Built once: hypothesmith compiles its grammar each time a strategy is made.
_PLAIN_IDIOMS = st.sampled_from(IDIOMS)
IDIOM_CHUNKS = st.one_of(_PLAIN_IDIOMS, st.builds(wrap, _PLAIN_IDIOMS, st.sampled_from(_WRAPPERS)))
FILLER_CHUNKS = st.one_of(hypothesmith.from_grammar(), st.sampled_from(SHADOWING))


@st.composite
def composites(draw: st.DrawFn) -> Composite:
    # An idiom comes first, so an import `fix` adds goes where the idioms' imports are.
    chunks = [(draw(IDIOM_CHUNKS), False)]
    for _ in range(draw(st.integers(1, 3))):
        chunks.append((draw(FILLER_CHUNKS), True))
        if draw(st.booleans()):
            chunks.append((draw(IDIOM_CHUNKS), False))
    return Composite(
        tuple(chunks),
        crlf=draw(st.booleans()),
        bom=draw(st.booleans()),
        settings=_settings(draw(st.booleans()), draw(st.sampled_from(("eager", "compile")))),
    )


def compiles(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, "<fuzz>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _decode(data: bytes) -> str:
    return data[len(codecs.BOM_UTF8):].decode("utf-8") if data.startswith(codecs.BOM_UTF8) else data.decode("utf-8")


def check(composite: Composite) -> None:
    """Assert every property of one input; the message shows what broke."""
    data = composite.data()
    result = process_source("fuzz.py", data, composite.settings)
    assert not result.internal_error, result.error
    if result.error is not None:
        assert "\n" not in result.error, result.error
        # Valid source is refused only when LibCST cannot reproduce it (notes/requests-E.md).
        valid = compiles(composite.text()) and not libcst_loses_bytes(composite.text())
        assert not valid, f"reported {result.error!r} on source CPython compiles"
        return
    if result.new_source is None:
        return
    assert result.new_source.startswith(codecs.BOM_UTF8) == composite.bom
    fixed = _decode(result.new_source)
    assert compiles(fixed), "the fixed source does not compile"
    if composite.crlf:
        assert re.search(r"\r(?!\n)|(?<!\r)\n", fixed) is None, "a line ending other than CRLF in a CRLF file"
    again = process_source("fuzz.py", result.new_source, composite.settings)
    assert again.error is None and not again.internal_error, again.error
    assert again.new_source is None, "fix is not idempotent:\n" + _diff(fixed, _decode(again.new_source))
    _assert_fillers_kept(composite, fixed)


def _assert_fillers_kept(composite: Composite, fixed: str) -> None:
    """Every non-blank filler line is in the output unchanged and in order.

    Checked as a subsequence (found in order, each after the last), which no alignment
    choice can fool when chunks repeat. Blank lines are left out: deleting a statement may
    take a blank line next to it along.
    """
    if libcst_loses_bytes(composite.text()):
        # A LibCST bug, not ours: it prints some inputs without blank, whitespace-only or
        # comment lines near their end (e.g. "x = 1\n\n  \n" loses a line), so a fix of
        # such a file loses them too. Until the engine refuses to fix those
        # (notes/requests-E.md), they are set aside rather than counted.
        assume(False)
    after = iter(line for line in lines(fixed) if line.strip())
    text = lines(composite.text())
    for index in composite.filler_lines():
        wanted = text[index]
        if wanted.strip():
            assert wanted in after, f"filler line {index + 1} {wanted!r} was edited:\n" + _diff(composite.text(), fixed)


def libcst_loses_bytes(text: str) -> bool:
    return libcst.parse_module(text).code != text


def _diff(before: str, after: str) -> str:
    return "".join(difflib.unified_diff(lines(before), lines(after), "before", "after"))


# The CI profile: a fixed sample (the same each run, so CI is never flaky), a few hundred
# inputs in all, under ~30 s on two cores. No example database is written.
CI = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


@CI
@given(composites())
def test_check_and_fix_keep_every_property(composite: Composite) -> None:
    check(composite)


@CI
@given(st.sampled_from(IDIOMS), st.sampled_from(_WRAPPERS), st.booleans())
def test_every_fixture_in_every_block_and_line_ending(idiom: str, header: str, crlf: bool) -> None:
    check(Composite(((wrap(idiom, header), False),), crlf=crlf, bom=False, settings=_settings(True, "eager")))


def test_the_filler_check_catches_an_edit() -> None:
    """The byte check is not vacuous: an edited filler line is caught, an inserted line is not."""
    composite = Composite((("import torch_xla\n", False), ("x = 1\ny = 2\n", True)), False, False, _settings(True, "eager"))
    _assert_fillers_kept(composite, "import torch\nimport torch_xla\nx = 1\ny = 2\n")
    with pytest.raises(AssertionError, match="filler line 3 'y = 2\\\\n' was edited"):
        _assert_fillers_kept(composite, "import torch_xla\nx = 1\ny = 3\n")

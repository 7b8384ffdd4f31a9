"""Bytes to text and back, exactly: encoding cookie, BOM and line endings are kept.

`decode` also refuses text that the parser cannot take safely, because LibCST's native
parser does not guard its stack: a few thousand nested brackets or unary operators crash
the whole process (a segmentation fault, not an exception), and its time and memory grow
with size far beyond what a source file needs. Both limits are in docs/reliability.md.
"""

from __future__ import annotations

import ast
import codecs
import io
import re
import tokenize
import warnings
from dataclasses import dataclass, field

# Above this a file is reported, not parsed: LibCST takes about 0.4 GB of memory and 10 s
# per MB, and hand-written Python files stay under 1 MB (the largest in torch is ~1 MB).
MAX_SOURCE_BYTES = 2 * 1024 * 1024

# CPython refuses these itself, so a file that hits one could never run; the messages are
# CPython's own. RecursionError and MemoryError are how its parser reports deep nesting.
# (Its tokenizer counts brackets even past an earlier syntax error, so nested brackets
# always end here.)
_NESTING_MESSAGES = ("too many nested parentheses", "too many levels of indentation", "too complex")

# When CPython rejects the file for another reason (syntax newer than this Python, say),
# it may stop before the nesting, which LibCST then meets. Brackets CPython's tokenizer
# still counts, but a chain of prefix, power or conditional operators it never reaches:
# such a chain (operators with at most a short operand between them, across lines too)
# is refused at half of what LibCST survives (measured: 10,000 unary operators or
# `x if c else` links crash it; 3,000 pass).
_OPERATOR_CHAIN = re.compile(r"(?:(?:\*\*|[-+~]|\b(?:not|await|lambda|if|else)\b)[\s\\]*(?:[\w.]{1,20}[\s\\]*)?){1000}")


class DecodeError(Exception):
    """The bytes are not Python source text xla2tpu can read; the message says why, on one line."""


@dataclass(frozen=True)
class Decoded:
    text: str
    encoding: str
    bom: bool
    # CPython's own tree of the text, kept from the nesting check; None when it rejects the text.
    tree: ast.Module | None = field(default=None, compare=False, repr=False)

    def encode(self, text: str) -> bytes:
        return (codecs.BOM_UTF8 if self.bom else b"") + text.encode(self.encoding)


def decode(data: bytes) -> Decoded:
    """The text of `data`, or DecodeError when it is not source the parser can take safely."""
    if b"\x00" in data:
        raise DecodeError("binary file (contains NUL bytes), not Python source")
    if len(data) > MAX_SOURCE_BYTES:
        raise DecodeError(
            f"too large to parse: {len(data) / 2**20:.1f} MB, above the {MAX_SOURCE_BYTES // 2**20} MB limit"
            " (generated code? exclude it with `extend-exclude`)"
        )
    bom = data.startswith(codecs.BOM_UTF8)
    body = data[len(codecs.BOM_UTF8):] if bom else data
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise DecodeError(f"bad encoding declaration: {exc}") from None
    if encoding == "utf-8-sig":
        encoding = "utf-8"
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError as exc:
        bad = body[exc.start : exc.start + 1].hex()
        line = body.count(b"\n", 0, exc.start) + 1
        raise DecodeError(f"not valid {encoding}: byte 0x{bad} on line {line} (declare the encoding with a coding cookie)") from None
    except LookupError:
        raise DecodeError(f"unknown encoding {encoding!r}") from None
    return Decoded(text, encoding, bom, check_nesting(text))


def check_nesting(text: str) -> ast.Module | None:
    """Raise DecodeError when `text` nests deeper than a parser can follow without crashing.

    CPython's own parser is the judge: it is fast (a tenth of LibCST's time) and guards
    every kind of nesting. It never runs the code: `compile` with PyCF_ONLY_AST only parses.
    Its tree is returned (None when CPython rejects the text for another reason).
    """
    try:
        with warnings.catch_warnings():  # invalid escapes and the like are not our business
            warnings.simplefilter("ignore")
            return compile(text, "<source>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (RecursionError, MemoryError):
        raise DecodeError("cannot parse: the code nests too deeply (Python itself refuses it)") from None
    except SyntaxError as exc:
        if (exc.msg or "").startswith(_NESTING_MESSAGES):
            raise DecodeError(f"syntax error at {exc.lineno}:{exc.offset}: {exc.msg}") from None
        _scan_nesting(text)
    except ValueError:  # text CPython cannot take at all (e.g. lone surrogates): LibCST will say why
        _scan_nesting(text)
    return None


def _scan_nesting(text: str) -> None:
    chain = _OPERATOR_CHAIN.search(text)
    if chain is not None:
        line = text.count("\n", 0, chain.start()) + 1
        raise DecodeError(f"cannot parse: a chain of 1,000 or more operators from line {line} nests too deeply")

"""Bytes to text and back, exactly: encoding cookie, BOM and line endings are kept."""

from __future__ import annotations

import codecs
import io
import tokenize
from dataclasses import dataclass


class DecodeError(Exception):
    """The bytes are not Python source text; the message says why."""


@dataclass(frozen=True)
class Decoded:
    text: str
    encoding: str
    bom: bool

    def encode(self, text: str) -> bytes:
        return (codecs.BOM_UTF8 if self.bom else b"") + text.encode(self.encoding)


def decode(data: bytes) -> Decoded:
    if b"\x00" in data:
        raise DecodeError("binary file (contains NUL bytes), not Python source")
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
    return Decoded(text, encoding, bom)

"""Just enough of a PNG reader to look at a browser's screenshot: 8-bit RGB or RGBA, not
interlaced (what Chromium writes), decoded with zlib so that no image library is needed."""

from __future__ import annotations

import struct
import zlib

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {2: 3, 6: 4}  # colour type -> bytes per pixel at depth 8


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def pixels(data: bytes) -> tuple[int, int, list[tuple[int, ...]]]:
    """(width, height, every pixel as an (r, g, b) tuple, row by row)."""
    assert data.startswith(_SIGNATURE), "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    assert header is not None, "no IHDR chunk"
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in _CHANNELS and not interlace, f"unsupported PNG: {header}"
    step = _CHANNELS[colour]
    raw = zlib.decompress(idat)
    stride = width * step
    rows: list[bytearray] = []
    previous = bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - step] if i >= step else 0
            up, corner = previous[i], previous[i - step] if i >= step else 0
            line[i] = (line[i] + (0, left, up, (left + up) // 2, _paeth(left, up, corner))[kind]) & 0xFF
        rows.append(line)
        previous = line
    return width, height, [tuple(row[x:x + 3]) for row in rows for x in range(0, stride, step)]

"""Which files can hold an idiom at all, decided on their bytes before any parse.

A file none of the `PATTERN` tokens occur in cannot hold an idiom, so it is never parsed.
Plain "xla" is too common (matplotlib's xlabel, prose about XLA) to be a signal on its own.
`tests/test_catalogue.py` checks that every name and string a rule matches contains one.

Python's regex engine tries each of the pattern's alternatives at every byte (~25 MB/s),
while `bytes.__contains__` scans for one literal at ~1.5 GB/s; every alternative holds one
of `_LITERALS`, so the pattern only runs on the few files where one of those occurs.
"""

from __future__ import annotations

import re

PATTERN = re.compile(
    rb"torch_xla|optimum|openxla|PJRT_|XRT_|XLA_|_XLA|[\"']xla\b|torch[._]tpu|_tpu|TPU_|\.TPU\b|[\"']tpu"
    rb"|torch-xla|torchax|XLA[A-Z]|TPU[A-Z]|\.tpu\(|\.XLA\b|_NUM_DEVICES|TORCH_DEVICE_BACKEND_AUTOLOAD|ALLREDUCE_GRADIENTS|tpu_num_cores|enable_xla_flash_attention|autocast_xla"
)
# The same tokens over text, for the statements of a file that passed (see outline.py).
TEXT_PATTERN = re.compile(PATTERN.pattern.decode("ascii"))

# Each alternative of PATTERN contains one of these as plain text (checked by a test).
LITERALS = (b"xla", b"XLA", b"tpu", b"TPU", b"optimum", b"PJRT_", b"XRT_", b"torchax",
            b"_NUM_DEVICES", b"TORCH_DEVICE_BACKEND_AUTOLOAD", b"ALLREDUCE_GRADIENTS")
_TEXT_LITERALS = tuple(literal.decode("ascii") for literal in LITERALS)
# The short literals in both cases are the slowest to scan for: lowering the bytes once and
# scanning for `xla` and `tpu` costs less than four scans (0.39 s against 0.47 s of CPU
# over the 8,000 files of the two synthetic trees). The others are scanned for as written.
_FOLDED = (b"xla", b"tpu")
_AS_WRITTEN = tuple(literal for literal in LITERALS if literal.lower() not in _FOLDED)


def may_hold_idiom(data: bytes) -> bool:
    """Whether a file's bytes hold a prefilter token (False: no rule can match in it)."""
    lowered = data.lower()
    return (any(literal in lowered for literal in _FOLDED) or any(literal in data for literal in _AS_WRITTEN)) and (
        PATTERN.search(data) is not None)


def holds_token(text: str) -> bool:
    """`may_hold_idiom` over text: a statement's, say."""
    return any(literal in text for literal in _TEXT_LITERALS) and TEXT_PATTERN.search(text) is not None

"""`--shard K/N`: a deterministic share of the files, so a CI matrix can split a monorepo.

A file belongs to shard `sha256(path) mod N + 1`, with the path relative to the project
root (posix), so every shard of the same command on any machine agrees without talking.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


class ShardError(ValueError):
    """A `--shard` value that is not K/N with 1 <= K <= N."""


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        match = _SPEC.match(text)
        if match is None:
            raise ShardError(f"--shard {text!r}: expected K/N, e.g. 1/4")
        index, count = int(match.group(1)), int(match.group(2))
        if not 1 <= index <= count:
            raise ShardError(f"--shard {text!r}: K must be between 1 and N")
        return cls(index, count)

    def owns(self, path: Path, root: Path) -> bool:
        try:
            name = path.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            name = path.as_posix()
        number = int.from_bytes(hashlib.sha256(name.encode("utf-8", "surrogateescape")).digest()[:8], "big")
        return number % self.count == self.index - 1

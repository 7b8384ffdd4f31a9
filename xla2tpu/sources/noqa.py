"""`# noqa` / `# noqa: XLA101,XLA201` line suppressions and the `# xla2tpu: skip-file` marker."""

from __future__ import annotations

import bisect
import re

_NOQA = re.compile(
    r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?",
    re.IGNORECASE,
)
_SKIP_FILE = re.compile(r"^#\s*xla2tpu:\s*skip-file\s*$", re.MULTILINE)


def skip_file(source: str) -> bool:
    return _SKIP_FILE.search(source) is not None


class Suppressions:
    """Which codes each line silences. A bare `# noqa` silences every code on its line."""

    def __init__(self, source: str) -> None:
        self._lines: dict[int, frozenset[str] | None] = {}
        if "noqa" not in source.lower():
            return
        starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", source)]
        for match in _NOQA.finditer(source):
            line = bisect.bisect_right(starts, match.start())
            codes = match.group("codes")
            if codes is None:
                self._lines[line] = None
            elif self._lines.get(line, frozenset()) is not None:
                found = frozenset(c.upper() for c in re.split(r"[,\s]+", codes) if c)
                self._lines[line] = found | self._lines.get(line, frozenset())  # type: ignore[operator]

    def suppressed(self, line: int, code: str) -> bool:
        if line not in self._lines:
            return False
        codes = self._lines[line]
        return codes is None or code in codes

"""What the engine reports: findings, their fix class, and per-file results."""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field

from xla2tpu.project.facts import Facts


class FixClass(enum.Enum):
    """Fix applicability, with ruff's meanings."""

    SAFE = "safe"  # behaviour kept; applied by `fix`
    UNSAFE = "unsafe"  # applied only with --unsafe-fixes; the message says what may change
    MANUAL = "manual"  # reported with guidance, never rewritten


@dataclass(frozen=True, order=True)
class Diagnostic:
    line: int
    col: int  # 1-based, as editors and ruff count
    code: str
    message: str
    fix: FixClass = field(compare=False)
    # True when this finding's fix was (or, for check, would be) applied under the run's settings.
    fixed: bool = field(default=False, compare=False)
    end_line: int = field(default=0, compare=False)
    end_col: int = field(default=0, compare=False)

    @property
    def fixable(self) -> bool:
        return self.fix is not FixClass.MANUAL

    def removed_with_its_if(self) -> Diagnostic:
        """The finding once the fixes emptied the block of the `if` whose test holds it, and
        the `if` went (pruner.py): nothing of it is left to migrate."""
        return self.removed("removed with the `if` it tests, whose block the fixes emptied")

    def removed_unread(self, fix: FixClass) -> Diagnostic:
        """The finding once its code went with an availability flag nothing read any more
        (rewrite/dead_flags.py): `fix` says how safe, unsafe for a public flag."""
        return self.removed(UNREAD if fix is FixClass.SAFE else UNREAD_PUBLIC, fix)

    def removed(self, why: str, fix: FixClass = FixClass.SAFE) -> Diagnostic:
        """The finding once its code went for the reason `why` (a fix of `fix`'s safety)."""
        if self.fixed:
            return self
        return dataclasses.replace(self, message=f"{self.message} ({why})", fix=fix, fixed=True)


# Why a finding in an availability flag is fixed (rewrite/dead_flags.py): a private flag, and
# a public one, which code outside the project may import.
UNREAD = "removed: nothing reads this flag once the fixes are made"
UNREAD_PUBLIC = "removed: nothing in this project reads this flag once the fixes are made; unsafe: code outside it may import it"


@dataclass
class FileResult:
    """Outcome of one file: findings, the rewritten bytes (None when unchanged) or an error."""

    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    new_source: bytes | None = None
    error: str | None = None
    internal_error: bool = False
    lines: int = 0
    parsed: bool = False
    encoding: str = "utf-8"
    digest: bytes | None = None  # sha256 of the bytes read, to detect a change on disk before writing
    facts: Facts | None = None  # what the file is (facts.py); None when it was not analysed

    @classmethod
    def counted(cls, path: str, data: bytes) -> FileResult:
        """The result of a file that is not parsed: its line count only."""
        return cls(path, lines=line_count(data))


def line_count(data: bytes) -> int:
    """Lines as an editor counts them: a last line without a newline counts too."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)

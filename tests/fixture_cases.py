"""The fixture contract: `fixtures/<CODE>/<case>.py` in, `<case>.fixed.py` out, findings in `<case>.expected`.

A case may start with `# fixture: <flags>` (`--unsafe-fixes`, `--target compile`,
`--select XLA1,XLA2`). Without a `.fixed.py` the case must come out unchanged.
Set XLA2TPU_UPDATE_FIXTURES=1 to rewrite the expectations from the current output,
then review the diff like any code change. Off by default: a test whose expectation it
rewrites is reported as skipped, never as passed (`check_snapshots`).
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from xla2tpu.catalogue import rules as catalogue
from xla2tpu.catalogue.diagnostics import Diagnostic, FixClass
from xla2tpu.catalogue.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
UPDATE = os.environ.get("XLA2TPU_UPDATE_FIXTURES") == "1"


@dataclass(frozen=True)
class Case:
    path: Path

    @property
    def id(self) -> str:
        return f"{self.path.parent.name}/{self.path.stem}"

    @property
    def fixed(self) -> Path:
        return self.path.with_name(self.path.stem + ".fixed.py")

    @property
    def expected(self) -> Path:
        return self.path.with_name(self.path.stem + ".expected")

    def _flags(self) -> list[str]:
        first = self.path.read_text(encoding="utf-8", errors="replace").split("\n", 1)[0]
        return shlex.split(first.split(":", 1)[1]) if first.startswith("# fixture:") else []

    @property
    def known_wrong(self) -> str | None:
        """Why the engine still gets this case wrong (`--known-wrong "..."`), or None.

        A wrong rewrite found by the ecosystem review becomes a case before it is fixed: its
        `.fixed.py` holds the right output, and the case fails strictly until the engine
        produces it (then the flag must go and the `.expected` be written).
        """
        flags = self._flags()
        return flags[flags.index("--known-wrong") + 1] if "--known-wrong" in flags else None

    def settings(self) -> Settings:
        flags = self._flags()
        unsafe = "--unsafe-fixes" in flags
        target = flags[flags.index("--target") + 1] if "--target" in flags else "eager"
        select = flags[flags.index("--select") + 1].split(",") if "--select" in flags else ["ALL"]
        cat = catalogue.load()
        apply = {FixClass.SAFE, FixClass.UNSAFE} if unsafe else {FixClass.SAFE}
        return Settings(cat.select(select, []), frozenset(apply), target)


def cases() -> list[Case]:
    return [
        Case(path)
        for path in sorted(FIXTURES.glob("XLA*/*.py"))
        if not path.name.endswith(".fixed.py")
    ]


def render(diagnostics: list[Diagnostic]) -> str:
    return "".join(
        f"{d.line}:{d.col}: {d.code} {'[*] ' if d.fixed else ''}({d.fix.value}) {d.message}\n" for d in diagnostics
    )


Snapshot = str | bytes | None  # a file's text, its bytes, or None: the file must not exist


def _stored(path: Path, like: Snapshot) -> Snapshot:
    if not path.exists():
        return None
    return path.read_text(encoding="utf-8") if isinstance(like, str) else path.read_bytes()


def check_snapshots(snapshots: dict[Path, Snapshot]) -> None:
    """Assert each file holds what the engine produced now.

    With XLA2TPU_UPDATE_FIXTURES=1 the files that differ are rewritten first and the test
    is skipped: comparing them to what was just written would pass whatever the engine did.
    """
    stale = {path: now for path, now in snapshots.items() if _stored(path, now) != now}
    if UPDATE and stale:
        for path, now in stale.items():
            if now is None:
                path.unlink()
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                if isinstance(now, str):
                    path.write_text(now, encoding="utf-8")
                else:
                    path.write_bytes(now)
        names = ", ".join(path.relative_to(FIXTURES).as_posix() for path in stale)
        pytest.skip(f"XLA2TPU_UPDATE_FIXTURES rewrote {names}: review the diff, then run the tests without it")
    for path, now in snapshots.items():
        assert _stored(path, now) == now, f"{path.relative_to(ROOT)} is not what the engine produces now"

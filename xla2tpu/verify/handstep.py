"""A case's documented hand step: a unified diff over the engine's output (`hand.patch`).

Some idioms are manual by design (xmp.spawn): the engine reports them and rewrites the
rest of the file. A case that still wants to prove a full migration stores what a human
adds for those findings, and nothing else, as a patch applied to the engine's output at
verify time. Storing a whole hand-finished file instead would let it quietly differ
from the engine's output anywhere, so a wrong rewrite could pass verify; a patch
checked against the engine's remaining findings cannot:

* every hunk must apply to the engine's output as it is now (context and removed lines
  equal, at the stated line or the nearest shifted position), else the case fails and
  says where;
* every line a hunk removes must lie within a finding the engine left, and every hunk
  must remove at least one (added lines sit beside a finding, never elsewhere).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
NO_NEWLINE = "\\ No newline at end of file"


class HandStepError(ValueError):
    """The patch is malformed, does not apply, or touches a line no finding is on."""


@dataclass
class Hunk:
    old_start: int  # 1-based line in the engine's output where `old` begins
    old_count: int  # how many lines each side has, from the @@ header
    new_count: int
    old: list[str] = field(default_factory=list)  # context and removed lines, with newlines
    new: list[str] = field(default_factory=list)  # context and added lines
    removed: list[int] = field(default_factory=list)  # indexes into `old` of removed lines

    @property
    def open(self) -> bool:
        return len(self.old) < self.old_count or len(self.new) < self.new_count


@dataclass
class FilePatch:
    path: str  # relative to the case directory, "a/" / "b/" prefixes dropped
    hunks: list[Hunk] = field(default_factory=list)


def _target(header: str) -> str:
    name = header[4:].split("\t", 1)[0].strip()  # diff -u appends a tab and a timestamp
    return name[2:] if name.startswith(("a/", "b/")) else name


def _hunk(match: re.Match[str]) -> Hunk:
    def count(group: str | None) -> int:
        return 1 if group is None else int(group)

    return Hunk(int(match.group(1)), count(match.group(2)), count(match.group(4)))


def _add(hunk: Hunk, line: str) -> list[list[str]]:
    """Put one body line of a hunk on its side(s); return the sides it went to."""
    kind, body = (line[0], line[1:]) if line.strip("\n") else (" ", "\n")  # a stripped " \n"
    body = body if body.endswith("\n") else body + "\n"
    if kind == "-":
        hunk.removed.append(len(hunk.old))
    sides = {" ": [hunk.old, hunk.new], "-": [hunk.old], "+": [hunk.new]}[kind]
    for side in sides:
        side.append(body)
    return sides


def parse(text: str) -> list[FilePatch]:
    """The files and hunks of a unified diff (`diff -u` or `git diff` output). Lines
    outside a hunk's counted lines (prose, `diff`/`index`/`---` lines) are ignored."""
    patches: list[FilePatch] = []
    hunk: Hunk | None = None
    last: list[list[str]] = []  # the sides the previous body line went to
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        if line.rstrip("\n") == NO_NEWLINE:  # may sit between a hunk's - and + lines
            for side in last:
                side[-1] = side[-1].removesuffix("\n")
        elif hunk is not None and hunk.open:
            if line[:1] not in (" ", "-", "+", "\n"):
                raise HandStepError(f"line {number}: the hunk ends early (its @@ header "
                                    f"counts {hunk.old_count} old and {hunk.new_count} new lines)")
            last = _add(hunk, line)
        elif line.startswith("+++ "):
            patches.append(FilePatch(_target(line.rstrip("\n"))))
        elif (match := HUNK_HEADER.match(line)) is not None:
            if not patches:
                raise HandStepError(f"line {number}: a hunk before any '+++ file' header")
            hunk = _hunk(match)
            patches[-1].hunks.append(hunk)
    if hunk is not None and hunk.open:
        raise HandStepError("the last hunk is cut short")
    if not any(p.hunks for p in patches):
        raise HandStepError("no hunk found: not a unified diff")
    return patches


def _locate(lines: list[str], old: list[str], start: int, low: int) -> int | None:
    """Where `old` occurs in `lines[low:]`: the occurrence nearest to index `start`, the
    earlier of two equally near. The engine's output may have shifted since the patch
    was made; the lines themselves must be unchanged."""
    for distance in range(len(lines) + 1):
        for at in (start - distance, start + distance):
            if low <= at <= len(lines) - len(old) and lines[at:at + len(old)] == old:
                return at
    return None


def apply(patch: FilePatch, text: str, finding_lines: set[int]) -> str:
    """`text` (the engine's output for patch.path) with the hunks applied.

    `finding_lines` are the 1-based lines of `text` that lie within a finding the
    engine left; a hunk that removes any other line, or removes none, is refused.
    """
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    done = 0  # lines of `text` already copied to `out`
    for number, hunk in enumerate(patch.hunks, 1):
        where = f"{patch.path}: hunk {number} (@@ -{hunk.old_start})"
        if not hunk.removed:
            raise HandStepError(f"{where} only adds lines: a hand step replaces lines of the "
                                "findings the engine left")
        at = _locate(lines, hunk.old, hunk.old_start - 1, done)
        if at is None:
            first = hunk.old[0].rstrip("\n")
            raise HandStepError(f"{where} no longer applies to the engine's output: its lines "
                                f"(from {first!r}) are not there; redo the hand step over the "
                                "engine's current output")
        stray = [at + i + 1 for i in hunk.removed if at + i + 1 not in finding_lines]
        if stray:
            raise HandStepError(f"{where} changes line(s) {', '.join(map(str, stray))} of the "
                                "engine's output, where the engine left no finding: fix the "
                                "engine (or its fixture), not the case")
        out += lines[done:at] + hunk.new
        done = at + len(hunk.old)
    return "".join(out + lines[done:])

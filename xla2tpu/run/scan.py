"""The front of a run over files: read each one, decide on its bytes whether it can hold an
idiom (prefilter.py), count its lines and, for the project model, summarise its imports
(modules.light).

Over a big tree this is most of a cold run's work outside the parses, so the worker
processes do it, a slice of the files each, and send back the bytes of the few files that
go on to be analysed, not the whole tree's (pool.py, workflow.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xla2tpu.catalogue.diagnostics import line_count
from xla2tpu.sources.files import FileProblem, read
from xla2tpu.project.module_summary import Summary, light
from xla2tpu.run.notebook import SUFFIX as NOTEBOOK_SUFFIX
from xla2tpu.sources.prefilter import may_hold_idiom


@dataclass(frozen=True)
class Scanned:
    """What the front learnt of one file."""

    name: str
    error: str | None = None  # why it could not be read
    lines: int = 0
    candidate: bool = False  # may hold an idiom (always True for a notebook: it is not prefiltered)
    summary: Summary | None = None  # its light summary, when asked for (Python files only)
    data: bytes | None = None  # its bytes, for a candidate only


def scan(names: Sequence[str], summarise: bool) -> list[Scanned]:
    """Each of `names` read and judged; `summarise`: also make the light summaries (a cold
    run's model needs them all, a warm one takes them from the cache)."""
    found = []
    for name in names:
        try:
            data = read(name)
        except FileProblem as exc:
            found.append(Scanned(name, error=str(exc)))
            continue
        if name.endswith(NOTEBOOK_SUFFIX):
            found.append(Scanned(name, lines=line_count(data), candidate=True, data=data))
            continue
        candidate = may_hold_idiom(data)
        summary = light(data, candidate) if summarise else None
        found.append(Scanned(name, None, line_count(data), candidate, summary, data if candidate else None))
    return found

"""A progress bar on stderr, for long runs in a terminal only (never piped, never in machine formats)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

# Below this many files a run is short enough that a bar only flickers.
LONG_RUN_FILES = 200


def wanted(machine_format: bool) -> bool:
    return not machine_format and sys.stderr.isatty()


@contextmanager
def bar(enabled: bool) -> Iterator[Callable[[int], Callable[[], None]] | None]:
    """Yields what `workflow.run` takes as `progress` (None when no bar is wanted)."""
    if not enabled:
        yield None
        return
    from rich.console import Console  # only a terminal run pays for the import
    from rich.progress import Progress

    console = Console(file=sys.stderr)
    with Progress(console=console, transient=True, redirect_stdout=False, redirect_stderr=False) as progress:

        def start(total: int) -> Callable[[], None]:
            if total < LONG_RUN_FILES:
                return lambda: None
            task = progress.add_task("xla2tpu", total=total)
            return lambda: progress.advance(task)

        yield start

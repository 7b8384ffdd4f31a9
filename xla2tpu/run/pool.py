"""The worker processes of one run: in this process for a few items, in a process pool for
more, started once and kept for the rest of the run.

Work arrives as a stream and each item goes to a worker as soon as the pool runs: the
front's slices of the tree (scan.py), then each file that may hold an idiom as soon as a
slice names it, so parses start while other slices are still being read. The engine (and
LibCST with it) is imported only when a file needs it: a run the cache answers never pays
for it.
"""

from __future__ import annotations

import gc
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, TypeVar

from xla2tpu.catalogue.diagnostics import FileResult
from xla2tpu.catalogue.settings import Settings

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

    from xla2tpu.project.model import Context

Item = tuple[str, bytes, Settings, "Context"]  # path, bytes, settings, what the project says of it
In = TypeVar("In")
Out = TypeVar("Out")

# Below this many items a pool costs more to start than it saves.
POOL_MIN_ITEMS = 16


def _init_worker() -> None:
    from xla2tpu.catalogue import rules as catalogue

    catalogue.load()


def analysed(item: Item) -> FileResult:
    """One Python file's result (in a worker, or here)."""
    from xla2tpu.run.engine import process_source

    return process_source(*item)


class Workers:
    """The run's pool, started by the first stream long enough to pay for it."""

    def __init__(self, jobs: int | None = None) -> None:
        self.jobs = jobs or os.cpu_count() or 1
        self._pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            gc.unfreeze()  # a process that runs xla2tpu as a library collects its objects again

    def map(self, function: Callable[[In], Out], items: Iterable[In], at_least: int = POOL_MIN_ITEMS) -> Iterator[Out]:
        """`function` of each item, in order; `items` is consumed as the results are. Runs
        here while the pool has not started and fewer than `at_least` items come."""
        pending = iter(items)
        first: list[In] = []
        if self._pool is None and self.jobs > 1:
            for item in pending:
                first.append(item)
                if len(first) == at_least:
                    break
        if self._pool is None:
            if len(first) < at_least or self.jobs == 1:
                yield from map(function, first)
                yield from map(function, pending)
                return
            from concurrent.futures import ProcessPoolExecutor  # here: a run without a pool never pays for it

            # What this process holds now lives as long as the run: frozen, no collection
            # traverses it again, here or in a worker, where a traversal would write to each
            # inherited object and so copy its page (0.15 s of the workers' CPU on 5,000 files).
            gc.freeze()
            self._pool = ProcessPoolExecutor(max_workers=self.jobs, initializer=_init_worker)
        futures: deque[Future[Out]] = deque(self._pool.submit(function, item) for item in first)
        for item in pending:
            futures.append(self._pool.submit(function, item))
            while futures and futures[0].done():
                yield futures.popleft().result()
        while futures:
            yield futures.popleft().result()

"""The engine over many files: in this process for a few, in a process pool for more.

Files arrive as the walk reads them, and each goes to a worker as soon as the pool runs,
so the workers parse while this process is still reading the tree. The engine (and
LibCST with it) is imported only when a file needs it: a run the cache answers never
pays for it.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from xla2tpu.diagnostics import FileResult
from xla2tpu.settings import Settings

if TYPE_CHECKING:
    from concurrent.futures import Future

    from xla2tpu.project import Context

Item = tuple[str, bytes, Settings, "Context"]  # path, bytes, settings, what the project says of it

# Below this many files a pool costs more to start than it saves.
_POOL_MIN_FILES = 16


def _init_worker() -> None:
    from xla2tpu import catalogue

    catalogue.load()


def _process(item: Item) -> FileResult:
    from xla2tpu.engine import process_source

    return process_source(*item)


def run(items: Iterable[Item], jobs: int | None = None) -> Iterator[FileResult]:
    """The result of each item, in order; `items` is consumed as the results are."""
    jobs = jobs or os.cpu_count() or 1
    pending = iter(items)
    first: list[Item] = []
    if jobs > 1:
        for item in pending:
            first.append(item)
            if len(first) == _POOL_MIN_FILES:
                break
    if len(first) < _POOL_MIN_FILES:  # few files (or one job): no pool
        yield from map(_process, first)
        yield from map(_process, pending)
        return
    from concurrent.futures import ProcessPoolExecutor  # here: a run without a pool never pays for it

    with ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker) as pool:
        futures: deque[Future[FileResult]] = deque(pool.submit(_process, item) for item in first)
        for item in pending:
            futures.append(pool.submit(_process, item))
            while futures[0].done():
                yield futures.popleft().result()
        while futures:
            yield futures.popleft().result()

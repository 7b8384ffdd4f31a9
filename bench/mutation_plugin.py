"""A pytest plugin for bench/mutation.py's run on the rule loader (loaded with `-p`).

mutmut runs a mutant against the tests that called the mutated function while it
collected its statistics. The catalogue is loaded once per process, at collection (the
tests' module-level `RULES = catalogue.load().rules`), so mutmut would credit the loader
to whichever test ran first and judge every loader mutant by that one test, while all
the tests read the loaded rules. In the statistics run only, each test loads the
catalogue afresh, so each is recorded as a reader; a mutant's own run loads it once, at
collection, with the mutant in place, as any pytest run would.
"""

from __future__ import annotations

import os

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if os.environ.get("MUTANT_UNDER_TEST") != "stats":
        return
    from xla2tpu.catalogue import rules as catalogue

    catalogue.load.cache_clear()
    catalogue.load()

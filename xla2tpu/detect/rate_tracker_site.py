"""Where `xm.RateTracker(...)` can become a copy of torch_xla's class in the user's module,
decided on CPython's tree before any edit (transforms/helpers.py builds it on LibCST's), and
the class it writes. Nothing here imports LibCST."""

from __future__ import annotations

from xla2tpu.project.scope import Scope

TEMPLATE = "rate-tracker"

# The explanation is a comment, not a docstring paragraph: comments take the module's
# indentation (two spaces in many torch_xla examples), a docstring's lines would not.
CLASS = '''\
class {name}:
    """Samples per second, as torch_xla's `xm.RateTracker` computed them."""

    # rate(): the rate since the previous rate() call, smoothed with the previous one
    # (smooth_factor of the old, the rest of the new); global_rate(): every sample
    # counted over the time since the tracker was created.
    def __init__(self, smooth_factor=None):
        self._smooth_factor = 0.4 if smooth_factor is None else smooth_factor
        self._start_time = {clock}()
        self._partial_time = self._start_time
        self._partial_count = 0.0
        self._partial_rate = None
        self._count = 0.0

    def add(self, count):
        self._count += count

    def rate(self):
        now = {clock}()
        delta = now - self._partial_time
        report_rate = 0.0
        if delta > 0:
            report_rate = self._count / delta
            if self._partial_rate is not None:
                report_rate = (1 - self._smooth_factor) * report_rate + self._smooth_factor * self._partial_rate
            self._partial_count += self._count
            self._count = 0.0
            self._partial_time = now
            self._partial_rate = report_rate
        return report_rate

    def global_rate(self):
        delta = {clock}() - self._start_time
        count = self._partial_count + self._count
        return count / delta if delta > 0 else 0.0
'''


def clock(module: Scope) -> tuple[str, set[str]] | None:
    """How the module spells `time.perf_counter` at its top level, and the import it needs;
    None when it binds `time` to something else (`from time import time`): the class would
    then call the wrong thing, and the call stays for a human."""
    bound = module.bindings.get("time")
    if bound is None:
        return "time.perf_counter", {"time"}
    if bound == {"time"}:
        return "time.perf_counter", set()
    return None

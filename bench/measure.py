"""Timing a whole process: wall seconds, CPU seconds and peak memory of it and its children."""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


class ContenderFailed(Exception):
    """The command exited with a status that means an error (not just "found something")."""


@dataclass(frozen=True)
class Sample:
    wall: float  # seconds
    cpu: float  # user + system seconds, children included
    peak_kb: int  # largest resident set of the process or any child it waited for
    total_kb: int = 0  # largest sum of resident sets over the process tree (sampled; 0 if not)
    returncode: int = 0


def _tree_rss_kb(root: int) -> int:
    """Resident kilobytes of `root` and all its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    page_kb = os.sysconf("SC_PAGE_SIZE") // 1024
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry)
        children.setdefault(int(fields[1]), []).append(pid)  # fields[1]: parent pid
        rss[pid] = int(fields[21]) * page_kb  # fields[21]: resident pages
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, ()))
    return total


def run_once(
    argv: Sequence[str],
    cwd: Path,
    env: dict[str, str] | None = None,
    ok_codes: Sequence[int] = (0, 1),
    sample_tree: bool = False,
    timeout: float | None = None,
) -> Sample:
    """Run `argv` to completion (stdout discarded) and measure it; past `timeout` seconds
    its whole process group is killed and it counts as failed."""
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=errors,
                                   start_new_session=True)
        peak_total = 0
        done = threading.Event()
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout, kill) if timeout else None
        if timer is not None:
            timer.start()

        def sample() -> None:
            nonlocal peak_total
            while not done.wait(0.05):
                peak_total = max(peak_total, _tree_rss_kb(process.pid))

        sampler = threading.Thread(target=sample, daemon=True) if sample_tree else None
        if sampler is not None:
            sampler.start()
        _pid, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        done.set()
        if timer is not None:
            timer.cancel()
        if killed.is_set():
            raise ContenderFailed(f"did not finish within {timeout:.0f} s (killed)")
        if sampler is not None:
            sampler.join()
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode not in ok_codes:
            errors.seek(0)
            tail = errors.read()[-2000:].decode(errors="replace")
            raise ContenderFailed(f"{' '.join(argv)} exited with {process.returncode}:\n{tail}")
    return Sample(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, peak_total, process.returncode)


@dataclass(frozen=True)
class Timing:
    samples: tuple[Sample, ...]

    @property
    def wall(self) -> float:
        return statistics.median(s.wall for s in self.samples)

    @property
    def best(self) -> float:
        return min(s.wall for s in self.samples)

    @property
    def cpu(self) -> float:
        return statistics.median(s.cpu for s in self.samples)

    @property
    def peak_mb(self) -> float:
        return max(s.peak_kb for s in self.samples) / 1024

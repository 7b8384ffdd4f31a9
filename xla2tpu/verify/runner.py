"""Migrate a case in a temporary copy, run both legs, judge the outcome.

Everything that touches torch runs in a subprocess: the engine (`python -m xla2tpu
fix`, the same contract as the CLI), the migrated program (under the stand-in, or
guarded on a real TPU) and the original program (under the legacy interpreter).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from . import backend as backends
from . import handstep
from .cases import EXPECTED_FILE, HAND_PATCH, METADATA, Case
from .compare import Comparison, compare
from .handstep import HandStepError

STANDIN_DIR = Path(__file__).parent / "standin"
PACKAGE_PARENT = Path(__file__).resolve().parents[2]  # so `-m xla2tpu` works from source
# `fix`'s summary line: "Fixed N findings in M files, K remaining." (no count: none left).
REMAINING = re.compile(r"^(?:Fixed|Would fix) .*?, (\d+) remaining\.$", re.M)
TAIL = 4000  # characters of stdout/stderr kept for the report
ENGINE = "engine"  # where the migrated code came from: the engine's output as it is,
HAND_STEP = "engine + hand.patch"  # or with the case's documented hand step applied


@dataclass
class Migration:
    exit_code: int
    output: str
    duration: float

    @property
    def findings(self) -> int:
        """The findings `fix` left (not the unsafe fixes it lists as applied)."""
        found = REMAINING.findall(self.output)
        return int(found[-1]) if found else 0


Migrator = Callable[[Path, bool, str], Migration]


@dataclass
class Run:
    exit_code: int | None  # None: timed out
    duration: float
    stdout: str
    stderr: str
    result: Any = None  # the JSON object on the last stdout line, if any
    guard: list[dict[str, Any]] = field(default_factory=list)  # stand-in records

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @property
    def xla_loaded(self) -> list[str]:
        return sorted({m for rec in self.guard for m in rec.get("loaded", [])})

    @property
    def xla_attempts(self) -> list[str]:
        # Libraries probe for torch_xla on import (transformers does); only the
        # program's own attempts say something about the migration.
        return sorted({f"{a['module']} from {a['from']}" for rec in self.guard
                       for a in rec.get("attempts", []) if "-packages" not in a["from"]})


@dataclass
class Options:
    unsafe_fixes: bool = False
    target: str = "eager"
    legacy_python: Path | None = None
    rtol: float = 1e-4
    atol: float = 1e-5
    timeout: float = 300.0
    record: bool = False
    backend: str = backends.CPU_STANDIN
    migrator: Migrator | None = None


@dataclass
class Outcome:
    case: Case
    backend: str
    status: str = "fail"  # pass | fail | manual | skip | error
    reasons: list[str] = field(default_factory=list)  # why it did not pass
    notes: list[str] = field(default_factory=list)  # worth saying, not failures
    migration: Migration | None = None
    migration_source: str = ENGINE  # or HAND_STEP
    entry_source: str | None = None  # the migrated entry file as it ran
    migrated: Run | None = None
    legacy: Run | None = None
    baseline: str = ""  # "legacy", "recorded" or "" (none)
    comparison: Comparison | None = None
    duration: float = 0.0

    @property
    def hand_step(self) -> bool:
        return self.migration_source == HAND_STEP

    @property
    def baseline_label(self) -> str:
        borrowed = self.baseline == "recorded" and self.case.baseline_from is not None
        return f"{self.baseline} (borrowed from {self.case.baseline_from})" if borrowed else self.baseline


def last_json(stdout: str) -> Any:
    for line in reversed(stdout.splitlines()):
        if line.strip():
            try:
                value = json.loads(line)
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
    return None


def run_program(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float) -> Run:
    start = time.monotonic()
    # A new session, so a timeout can end the whole tree (spawned workers included).
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, errors="replace",
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        code = None
    return Run(code, time.monotonic() - start, out[-TAIL:], err[-TAIL:], last_json(out))


def _engine(workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m xla2tpu ARGS .` in `workdir`: the CLI's contract, not its internals."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE_PARENT), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "xla2tpu", *args, "."], cwd=workdir, env=env,
                          capture_output=True, text=True)


def engine_migrate(workdir: Path, unsafe_fixes: bool, target: str) -> Migration:
    """`xla2tpu fix` on the copy. Exit 0 (clean) and 1 (manual findings left) are normal."""
    start = time.monotonic()
    proc = _engine(workdir, "fix", "--target", target, *(["--unsafe-fixes"] if unsafe_fixes else []))
    return Migration(proc.returncode, (proc.stdout + proc.stderr)[-TAIL:], time.monotonic() - start)


def finding_lines(workdir: Path) -> dict[str, set[int]]:
    """The lines (1-based, first to last) of every finding left in `workdir`, by file.

    `xla2tpu check` on the engine's output, because `fix` reports what remains at its
    lines in the input, which the rewrites above it have shifted.
    """
    proc = _engine(workdir, "check", "--output-format", "json", "--no-cache", "--exit-zero")
    if proc.returncode != 0:
        raise HandStepError(f"`xla2tpu check` on the engine's output exited {proc.returncode}: "
                            f"{proc.stderr.strip()[-500:]}")
    lines: dict[str, set[int]] = {}
    for finding in json.loads(proc.stdout)["findings"]:
        first = finding["location"]["row"]
        last = (finding.get("end_location") or finding["location"])["row"]
        lines.setdefault(Path(finding["filename"]).as_posix(), set()).update(range(first, last + 1))
    return lines


def apply_hand_step(patch_file: Path, work: Path) -> None:
    """Apply a case's hand.patch to the engine's output in `work`, in place. Raises
    HandStepError when it does not apply, is not needed, or touches lines no finding is on."""
    patches = handstep.parse(patch_file.read_text(encoding="utf-8"))
    left = finding_lines(work)
    if not left:
        raise HandStepError(f"the engine left no finding, so {patch_file.name} has nothing to "
                            "finish: delete it")
    for patch in patches:
        target = (work / patch.path).resolve()
        if not target.is_relative_to(work.resolve()) or not target.is_file():
            raise HandStepError(f"{patch_file.name} patches {patch.path}, which is not in the case")
        text = target.read_bytes().decode("utf-8")
        new = handstep.apply(patch, text, left.get(patch.path, set()))
        target.write_bytes(new.encode("utf-8"))


def _copy(case: Case, dest: Path) -> Path:
    if case.is_script:
        dest.mkdir(parents=True)
        shutil.copy2(case.root, dest / case.root.name)
    else:
        def metadata(d: str, names: list[str]) -> list[str]:  # only at the case's top level
            return [n for n in names if n in METADATA and Path(d) == case.root]

        shutil.copytree(case.root, dest, ignore=metadata)
    return dest


def migrated_env(backend: str, report: Path, devices: int = 1) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("XLA2TPU_STANDIN")}
    env.pop("PJRT_DEVICE", None)  # TorchTPU does not read it; never hand it a TPU plugin
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(STANDIN_DIR), env.get("PYTHONPATH")]))
    env["TPU_SKIP_MDS_QUERY"] = "1"
    env["PYTHONHASHSEED"] = "0"
    env["XLA2TPU_STANDIN_REPORT"] = str(report)
    if backend == backends.TPU:
        env["XLA2TPU_STANDIN"] = "guard"
    else:
        env["XLA2TPU_STANDIN"] = "cpu"
        env["XLA2TPU_STANDIN_DEVICES"] = str(devices)
        env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"  # the real torch_tpu must never load
    return env


def legacy_env(case: Case) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("XLA2TPU_STANDIN")}
    env.setdefault("PJRT_DEVICE", "CPU")  # torch_xla on the CPU unless the user says otherwise
    env["TPU_SKIP_MDS_QUERY"] = "1"
    env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    env["PYTHONHASHSEED"] = "0"
    env.update(case.legacy_env)
    return env


def _missing(python: str, modules: list[str]) -> list[str]:
    if not modules:
        return []
    code = "import importlib.util as u, sys; print(' '.join(m for m in sys.argv[1:] if u.find_spec(m) is None))"
    proc = subprocess.run([python, "-c", code, *modules], capture_output=True, text=True)
    return proc.stdout.split() if proc.returncode == 0 else modules


def verify_case(case: Case, opts: Options) -> Outcome:
    start = time.monotonic()
    out = Outcome(case=case, backend=opts.backend)
    try:
        _verify(case, opts, out)
    finally:
        out.duration = time.monotonic() - start
    return out


def _verify(case: Case, opts: Options, out: Outcome) -> None:
    missing = _missing(sys.executable, case.requires)
    if missing:
        out.status = "skip"
        out.reasons.append(f"not installed for the migrated run: {', '.join(missing)}")
        return
    rtol, atol = tolerances(case, opts)
    timeout = case.timeout or opts.timeout
    with tempfile.TemporaryDirectory(prefix=f"xla2tpu-verify-{case.name}-") as tmp, \
            ThreadPoolExecutor(max_workers=2) as pool:  # the two legs are independent
        legacy = None
        if opts.legacy_python is not None and not case.legacy:
            out.notes.append("no legacy leg for this case (case.toml: legacy = false)")
        elif opts.legacy_python is not None:
            legacy_missing = _missing(str(opts.legacy_python), case.requires)
            if legacy_missing:
                out.notes.append(f"legacy run skipped: {', '.join(legacy_missing)} not installed there")
            else:
                orig = _copy(case, Path(tmp) / "legacy")
                legacy = pool.submit(run_program, [str(opts.legacy_python), case.entry, *case.args],
                                     orig, legacy_env(case), timeout)

        work = _copy(case, Path(tmp) / "migrated")
        mig, hand_error = _migrate(case, opts, work, out)
        if mig.exit_code in (0, 1) and hand_error is None:
            # What ran, for the report and tests (a script in another encoding still runs).
            out.entry_source = (work / case.entry).read_text(encoding="utf-8", errors="replace")
            report = Path(tmp) / "standin.jsonl"
            out.migrated = run_program([sys.executable, case.entry, *case.args], work,
                                       migrated_env(opts.backend, report, case.devices), timeout)
            if report.exists():
                out.migrated.guard = [json.loads(line) for line in report.read_text().splitlines() if line]
        out.legacy = legacy.result() if legacy is not None else None

    if mig.exit_code not in (0, 1):
        out.status = "error"
        out.reasons.append(f"the migration failed (exit {mig.exit_code})")
        return
    if hand_error is not None:
        out.status = "error"
        out.reasons.append(f"the hand step {HAND_PATCH} failed: {hand_error}")
        return
    _judge(case, opts, out, rtol, atol)


def tolerances(case: Case, opts: Options) -> tuple[float, float]:
    """(rtol, atol): a case's values are floors (bf16 cases need looser ones); the
    command line's apply when larger."""
    return max(opts.rtol, case.rtol), max(opts.atol, case.atol)


def _migrate(case: Case, opts: Options, work: Path, out: Outcome) -> tuple[Migration, str | None]:
    """The engine on `work`, then the case's hand step if it has one; returns the
    migration and why the hand step failed (None when it applied or there is none)."""
    migrate = opts.migrator or engine_migrate
    out.migration = mig = migrate(work, opts.unsafe_fixes, opts.target)
    if mig.exit_code not in (0, 1) or case.hand_patch is None:
        return mig, None
    try:
        apply_hand_step(case.hand_patch, work)
    except HandStepError as e:
        return mig, str(e)
    out.migration_source = HAND_STEP
    out.notes.append(f"the engine left {mig.findings} finding(s); applied the documented "
                     f"hand step {HAND_PATCH} over its output")
    return mig, None


def _judge(case: Case, opts: Options, out: Outcome, rtol: float, atol: float) -> None:
    mig, run, legacy = out.migration, out.migrated, out.legacy
    assert mig is not None and run is not None
    reasons = out.reasons
    if run.exit_code is None:
        reasons.append(f"the migrated run timed out after {run.duration:.0f}s")
    elif run.exit_code != 0:
        reasons.append(f"the migrated run exited {run.exit_code}")
    if run.xla_loaded:
        reasons.append(f"the migrated run imported {', '.join(run.xla_loaded)}")
    elif run.xla_attempts:
        out.notes.append("blocked torch_xla/optimum.tpu import attempts: " + "; ".join(run.xla_attempts[:5]))

    baseline = None
    if legacy is not None:
        if legacy.ok and legacy.result is not None:
            baseline, out.baseline = legacy.result, "legacy"
            if opts.record and not case.is_script and case.baseline_from is None:
                (case.root / EXPECTED_FILE).write_text(json.dumps(legacy.result, indent=1) + "\n")
        elif legacy.ok:
            out.baseline = "legacy"  # a script without a results line: exit status only
        else:
            code = "timed out" if legacy.exit_code is None else f"exited {legacy.exit_code}"
            reasons.append(f"the legacy (torch_xla) run {code}: no baseline")
    if baseline is None and not out.baseline and case.expected is not None:
        baseline, out.baseline = case.expected, "recorded"

    if baseline is not None and run.ok:
        if run.result is None:
            reasons.append("the migrated run printed no JSON results line (the baseline has one)")
        else:
            out.comparison = compare(baseline, run.result, rtol=rtol, atol=atol)
            if not out.comparison.ok:
                reasons.append(f"results differ from the {out.baseline_label} baseline "
                               f"(rtol={rtol:g}, atol={atol:g})")

    if not reasons:
        out.status = "pass"
    elif not run.ok and mig.exit_code == 1 and not out.hand_step:
        out.status = "manual"
        hint = "" if opts.unsafe_fixes else "; try --unsafe-fixes"
        reasons.insert(0, f"needs manual migration: the engine left {mig.findings} finding(s){hint}")
    else:
        out.status = "fail"

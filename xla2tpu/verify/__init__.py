"""`xla2tpu verify`: prove a migration by running it.

Each case is migrated in a temporary copy by the engine, run on TorchTPU (a TPU host)
or on the CPU stand-in, optionally run unmigrated under a torch_xla interpreter, and the
two runs' results compared. See docs/verify.md.

Receives: case folders (`fixtures/runnable/`). Hands on: one `Outcome` per case, printed by
`output`. It imports no stage of the engine: it runs the CLI (`python -m xla2tpu`) in
subprocesses, so it proves what a user gets.
"""
from __future__ import annotations

from pathlib import Path

from . import backend as backends
from .cases import CaseError, discover
from .runner import Migrator, Options, Outcome, verify_case

__all__ = ["run_verify", "verify_paths", "Options", "Outcome", "CaseError"]


def verify_paths(paths: list[Path], opts: Options) -> list[Outcome]:
    return [verify_case(case, opts) for case in discover(paths)]


def run_verify(
    paths: list[Path],
    *,
    unsafe_fixes: bool,
    target: str,
    legacy_python: Path | None,
    rtol: float,
    atol: float,
    timeout: float,
    output_format: str,
    record: bool = False,
    migrator: Migrator | None = None,
) -> int:
    """Verify every case under `paths`, print a table or JSON, return the exit code:
    0 if every case passed (skipped cases do not fail), 1 if any did not, 2 on bad input."""
    import sys

    from . import output

    opts = Options(unsafe_fixes=unsafe_fixes, target=target, legacy_python=legacy_python,
                   rtol=rtol, atol=atol, timeout=timeout, record=record,
                   backend=backends.select_backend(), migrator=migrator)
    try:
        cases = discover(paths)
    except CaseError as e:
        print(f"xla2tpu verify: {e}", file=sys.stderr)
        return 2
    if legacy_python is not None and not Path(legacy_python).exists():
        print(f"xla2tpu verify: --legacy-python {legacy_python} does not exist", file=sys.stderr)
        return 2
    outcomes = []
    for case in cases:
        if output_format != "json":
            print(f"verifying {case.name} ...", file=sys.stderr, flush=True)
        outcomes.append(verify_case(case, opts))
    if output_format == "json":
        output.print_json(outcomes)
    else:
        output.print_table(outcomes)
    return 0 if all(o.status in ("pass", "skip") for o in outcomes) else 1

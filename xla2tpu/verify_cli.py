"""The `verify` click command, outside the `verify` package so that adding it to the main CLI
imports none of the runner; the main CLI adds it with `main.add_command(verify_command)`."""
from __future__ import annotations

import sys
from pathlib import Path

import click


@click.command("verify")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--unsafe-fixes", is_flag=True, help="Migrate with unsafe fixes too.")
@click.option("--target", type=click.Choice(["eager", "compile"]), default="eager", show_default=True,
              help="Migration target passed to the engine.")
@click.option("--legacy-python", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              envvar="XLA2TPU_LEGACY_PYTHON",
              help="A torch_xla interpreter (see scripts/legacy-env.sh): also run the original "
                   "program with it (PJRT_DEVICE=CPU unless set) and compare results.")
@click.option("--rtol", type=float, default=1e-4, show_default=True, help="Relative tolerance for floats.")
@click.option("--atol", type=float, default=1e-5, show_default=True, help="Absolute tolerance for floats.")
@click.option("--timeout", type=float, default=300.0, show_default=True, help="Seconds per program run.")
@click.option("--format", "output_format", type=click.Choice(["table", "json"]), default="table",
              show_default=True)
@click.option("--record", is_flag=True,
              help="Write each case's legacy results to its expected.json (needs --legacy-python).")
def verify_command(paths: tuple[Path, ...], unsafe_fixes: bool, target: str, legacy_python: Path | None,
                   rtol: float, atol: float, timeout: float, output_format: str, record: bool) -> None:
    """Migrate runnable programs in a temporary copy, run them on TorchTPU (or the CPU
    stand-in when no TPU is present), and compare with the original torch_xla run."""
    if record and legacy_python is None:
        raise click.UsageError("--record needs --legacy-python")
    # Imported here: the runner's imports would otherwise slow every `check` start.
    from .verify import run_verify

    sys.exit(run_verify(list(paths), unsafe_fixes=unsafe_fixes, target=target,
                        legacy_python=legacy_python, rtol=rtol, atol=atol, timeout=timeout,
                        output_format=output_format, record=record))

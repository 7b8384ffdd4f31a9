"""The `xla2tpu` command: check, fix, rules, explain."""

from __future__ import annotations

import difflib
import hashlib
import sys
from collections.abc import Callable
from pathlib import Path

import click

from xla2tpu import __version__, catalogue as catalogue_mod, config as config_mod, engine
from xla2tpu.catalogue import Catalogue
from xla2tpu.config import Config, ConfigError
from xla2tpu.diagnostics import FileResult
from xla2tpu.docs import render_rule
from xla2tpu.report import text
from xla2tpu.workflow import Outcome, run, settings_for, write_back

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _codes(value: str | None) -> list[str]:
    return [c.strip().upper() for c in value.split(",") if c.strip()] if value else []


def _options(command: Callable) -> Callable:
    """Options shared by check and fix."""
    decorators = [
        click.argument("paths", nargs=-1, type=click.Path(path_type=Path)),
        click.option("--config", "config_path", type=click.Path(path_type=Path), help="A pyproject.toml (or a file of xla2tpu keys) to read instead of the nearest one."),
        click.option("--select", help="Rule codes or prefixes to enable, comma-separated (replaces the config's `select`)."),
        click.option("--extend-select", help="Rule codes or prefixes to enable on top of `select`."),
        click.option("--ignore", help="Rule codes or prefixes to disable, comma-separated."),
        click.option("--exclude", help="Glob patterns to skip, comma-separated (replaces the config's `exclude`)."),
        click.option("--extend-exclude", help="Glob patterns to skip on top of `exclude`."),
        click.option("--target", type=click.Choice(config_mod.TARGETS), help="eager (default): syncs disappear; compile: step regions become torch.compile work."),
        click.option("--unsafe-fixes", is_flag=True, help="Also apply (or count) fixes that may change behaviour."),
        click.option("--stdin-filename", help="The file name to report for source read from `-`."),
        click.option("-j", "--jobs", type=click.IntRange(min=1), help="Worker processes (default: all cores)."),
    ]
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


def _configure(options: dict) -> tuple[Config, Catalogue]:
    catalogue = catalogue_mod.load()
    explicit = options["config_path"]
    if explicit is not None:
        config = config_mod.load(explicit, explicit=True)
    else:
        paths = [p for p in options["paths"] if str(p) != "-"]
        config = config_mod.load(config_mod.find_pyproject(paths[0] if paths else Path.cwd()))
    if options["select"]:
        config.select = _codes(options["select"])
    config.extend_select += _codes(options["extend_select"])
    config.ignore += _codes(options["ignore"])
    if options["exclude"] is not None:
        config.exclude = [p for p in options["exclude"].split(",") if p]
    if options["extend_exclude"]:
        config.extend_exclude += [p for p in options["extend_exclude"].split(",") if p]
    if options["target"]:
        config.target = options["target"]
    config.validate_codes(catalogue)
    return config, catalogue


def _fail(message: str) -> None:
    click.echo(f"{click.style('error', fg='red', bold=True)}: {message}", err=True)
    sys.exit(EXIT_ERROR)


def _process(options: dict) -> tuple[Outcome, Config, Catalogue, bytes | None]:
    """Run the engine over the paths (or stdin). The stdin bytes come back for `fix -`."""
    try:
        config, catalogue = _configure(options)
    except ConfigError as exc:
        _fail(str(exc))
    settings = settings_for(config, catalogue, options["unsafe_fixes"])
    paths = list(options["paths"]) or [Path(".")]
    if [str(p) for p in paths] == ["-"]:
        data = sys.stdin.buffer.read()
        name = options["stdin_filename"] or "-"
        if options["stdin_filename"]:
            selected = config.selected_for(catalogue, Path(name), settings.selected)
            settings = settings.__class__(selected, settings.apply, settings.target)
        result = engine.process_source(name, data, settings)
        outcome = Outcome(results=[result], files=1, lines=result.lines, parsed=int(result.parsed))
        return outcome, config, catalogue, data
    if any(str(p) == "-" for p in paths):
        _fail("`-` (standard input) cannot be combined with other paths")
    return run(paths, config, catalogue, settings, options["jobs"]), config, catalogue, None


def _print_errors(outcome: Outcome) -> None:
    for result in outcome.results:
        if result.error:
            click.echo(text.problem(result.path, result.error), err=True)


def _exit_code(outcome: Outcome, findings: bool) -> int:
    if outcome.internal_errors:
        return EXIT_ERROR
    if findings or outcome.input_errors:
        return EXIT_FINDINGS
    return EXIT_CLEAN


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="xla2tpu")
def main() -> None:
    """Migrate PyTorch/XLA (torch_xla) and Optimum TPU code to native TorchTPU."""


@main.command()
@_options
def check(**options: object) -> None:
    """Report torch_xla idioms. Exit 0 when clean, 1 with findings, 2 on errors."""
    outcome, *_ = _process(options)
    for result in outcome.results:
        for diagnostic in result.diagnostics:
            click.echo(text.finding(result.path, diagnostic))
    _print_errors(outcome)
    errors = sum(1 for r in outcome.results if r.error)
    for line in text.check_summary(outcome.diagnostics, bool(options["unsafe_fixes"]), errors):
        click.echo(line)
    sys.exit(_exit_code(outcome, any(True for _ in outcome.diagnostics)))


@main.command()
@_options
@click.option("--diff", is_flag=True, help="Print a unified diff of the fixes and write nothing (exit 1 if anything would change).")
def fix(diff: bool, **options: object) -> None:
    """Apply safe fixes in place (unsafe ones too with --unsafe-fixes)."""
    outcome, _config, _catalogue, stdin_data = _process(options)
    fixed = changed = 0
    for result in outcome.results:
        if result.new_source is None:
            continue
        if diff:
            _print_diff(result, stdin_data)
        elif stdin_data is None:
            problem = write_back(result)
            if problem is not None:
                result.error, result.new_source = problem, None
                continue
        changed += 1
        fixed += sum(1 for d in result.diagnostics if d.fixed)
    if stdin_data is not None and not diff:
        result = outcome.results[0]
        sys.stdout.buffer.write(result.new_source if result.new_source is not None else stdin_data)
        sys.stdout.flush()
    remaining = [(r.path, d) for r in outcome.results for d in r.diagnostics if not d.fixed or r.new_source is None]
    report = click.echo if (not diff and stdin_data is None) else _to_stderr
    for path, diagnostic in remaining:
        report(text.finding(path, diagnostic))
    _print_errors(outcome)
    report(text.fix_summary(fixed, changed, len(remaining), dry_run=diff))
    for line in text.errors_summary(sum(1 for r in outcome.results if r.error)):
        report(line)
    sys.exit(_exit_code(outcome, bool(remaining) or (diff and changed > 0)))


def _to_stderr(line: str) -> None:
    click.echo(line, err=True)


def _print_diff(result: FileResult, stdin_data: bytes | None) -> None:
    assert result.new_source is not None
    if stdin_data is not None:
        before = stdin_data
    else:
        before = Path(result.path).read_bytes()
        if hashlib.sha256(before).digest() != result.digest:
            result.error = "changed on disk while xla2tpu ran; diff not shown (run again)"
            return
    old = before.decode(result.encoding, errors="replace").splitlines(keepends=True)
    new = result.new_source.decode(result.encoding, errors="replace").splitlines(keepends=True)
    for line in difflib.unified_diff(old, new, fromfile=f"a/{result.path}", tofile=f"b/{result.path}"):
        click.echo(line if line.endswith(("\n", "\r")) else line + "\n", nl=False)


@main.command("rules")
def rules_command() -> None:
    """List every rule: code, name, fix class, summary."""
    catalogue = catalogue_mod.load()
    width = max(len(rule.name) for rule in catalogue)
    for rule in catalogue:
        click.echo(f"{rule.code}  {rule.name:<{width}}  {rule.best_fix.value:<6}  {rule.summary}")


@main.command()
@click.argument("code")
def explain(code: str) -> None:
    """Print a rule's documentation."""
    catalogue = catalogue_mod.load()
    rule = catalogue.by_code.get(code.upper())
    if rule is None:
        _fail(f"unknown rule code {code!r} (see `xla2tpu rules`)")
    click.echo(render_rule(rule))

"""The `xla2tpu` command: check, fix, rules, explain."""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from xla2tpu import __version__
from xla2tpu.catalogue import rules as catalogue_mod
from xla2tpu.run import config as config_mod
from xla2tpu.run.cache import DEFAULT_DIR, Cache
from xla2tpu.catalogue.rules import Catalogue
from xla2tpu.run.config import Config, ConfigError
from xla2tpu.catalogue.diagnostics import FileResult
from xla2tpu.report import progress, text
from xla2tpu.run.shard import Shard, ShardError
from xla2tpu.project.model import EMPTY
from xla2tpu.project.line_length import LineLengths
from xla2tpu.run.workflow import Outcome, file_settings, process, run, settings_for, stdin_context, write_back

if TYPE_CHECKING:
    from xla2tpu.report.baseline import Baseline
    from xla2tpu.report.plan import Plan

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
SUMMARY_LIMIT = 1024 * 1024  # GitHub shows no job summary over 1 MiB
FORMATS = ("text", "concise", "json", "sarif", "github")
MACHINE_FORMATS = ("json", "sarif", "github")


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
        click.option("--output-format", type=click.Choice(FORMATS), default="text", show_default=True, help="How findings are printed: text, concise (one plain line each), json, sarif (2.1.0, for code scanning) or github (Actions annotations)."),
        click.option("--output-file", type=click.Path(path_type=Path, dir_okay=False), help="Write the findings there instead of standard output."),
        click.option("--show-reasons", is_flag=True, help="Print each finding's whole message (why its fix is made or withheld, what to do, the facts it rests on), not its one-line headline. JSON, SARIF and GitHub output always carry it."),
        click.option("--statistics", is_flag=True, help="Print how many findings each rule has (and how many are fixable) instead of each finding."),
        click.option("--exit-zero", is_flag=True, help="Exit 0 even with findings or unreadable files (2 still means xla2tpu itself failed)."),
        click.option("--no-cache", is_flag=True, help="Read and analyse every file, ignoring and not updating the cache."),
        click.option("--cache-dir", type=click.Path(path_type=Path, file_okay=False), help=f"Where results are cached (default: {DEFAULT_DIR} in the project root)."),
        click.option("--shard", help="K/N: process only this deterministic share of the files (by a hash of each path), for a CI matrix."),
        click.option("--project-root", type=click.Path(path_type=Path, file_okay=False, exists=True), help="The folder whose modules make up the project model (default: the nearest one above the first path holding pyproject.toml, .git, setup.py or setup.cfg; without one, the folder holding the outermost package around the first path)."),
    ]
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


def _cache(options: dict, config: Config) -> Cache | None:
    if options["no_cache"] or [str(p) for p in options["paths"]] == ["-"]:
        return None
    if options["cache_dir"] is not None:
        return Cache(options["cache_dir"])
    if config.cache_dir is not None:
        return Cache(config.root / config.cache_dir)
    return Cache(config.root / DEFAULT_DIR)


def _configure(options: dict) -> tuple[Config, Catalogue, Cache | None]:
    explicit = options["config_path"]
    if explicit is not None:
        config = config_mod.load(explicit, explicit=True)
    else:
        paths = [p for p in options["paths"] if str(p) != "-"]
        config = config_mod.load(config_mod.find_pyproject(paths[0] if paths else Path.cwd()))
    cache = _cache(options, config)
    catalogue = cache.catalogue() if cache is not None else catalogue_mod.load()
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
    return config, catalogue, cache


def _fail(message: str) -> NoReturn:
    click.echo(f"{click.style('error', fg='red', bold=True)}: {message}", err=True)
    sys.exit(EXIT_ERROR)


def _process(options: dict, rewrite: bool = True) -> tuple[Outcome, Config, Catalogue, bytes | None]:
    """Run the engine over the paths (or stdin); `rewrite`: the fixed code is wanted, not
    only the findings. The stdin bytes come back for `fix -`."""
    try:
        config, catalogue, cache = _configure(options)
        shard = Shard.parse(options["shard"]) if options["shard"] else None
    except (ConfigError, ShardError) as exc:
        _fail(str(exc))
    if options["statistics"] and options["output_format"] not in ("text", "concise", "json"):
        _fail("--statistics works with --output-format text, concise or json")
    settings = settings_for(config, catalogue, options["unsafe_fixes"], rewrite)
    paths = list(options["paths"]) or [Path(".")]
    if [str(p) for p in paths] == ["-"]:
        data = sys.stdin.buffer.read()
        name = options["stdin_filename"] or "-"
        lengths = LineLengths()
        if options["stdin_filename"]:
            context = stdin_context(name, data, config, catalogue, settings, cache, options["project_root"], lengths)
            settings = file_settings(config, catalogue, settings, name, lengths)
        else:  # no file name: no per-file-ignores apply, and the line length is the current folder's
            settings = dataclasses.replace(settings, line_length=config.line_length or lengths.of(name))
            context = EMPTY
        result = process(name, data, settings, context)
        outcome = Outcome(results=[result], warnings=lengths.warnings, files=1, lines=result.lines, parsed=int(result.parsed))
        return outcome, config, catalogue, data
    if any(str(p) == "-" for p in paths):
        _fail("`-` (standard input) cannot be combined with other paths")
    with progress.bar(progress.wanted(options["output_format"] in MACHINE_FORMATS)) as bar:
        outcome = run(paths, config, catalogue, settings, options["jobs"], cache, shard, bar, options["project_root"])
    return outcome, config, catalogue, None


def _warn(outcome: Outcome) -> None:
    for message in outcome.warnings:
        click.echo(f"{click.style('warning', fg='yellow', bold=True)}: {message}", err=True)


def _exit_code(outcome: Outcome, findings: bool, options: dict) -> int:
    if outcome.internal_errors:
        return EXIT_ERROR
    if (findings or outcome.input_errors) and not options["exit_zero"]:
        return EXIT_FINDINGS
    return EXIT_CLEAN


@contextmanager
def _sink(options: dict, stdout_taken: bool) -> Iterator[tuple[Callable[[str], None], Callable[[str], None]]]:
    """(report, problems): where findings and file errors go.

    Findings go to --output-file, else standard output, else (when standard output
    carries a diff or fixed source) standard error. Text-format file errors go to
    standard error, as before; every other format keeps them in the report.
    """
    if options["output_file"] is not None:
        try:
            handle = options["output_file"].open("w", encoding="utf-8")
        except OSError as exc:
            _fail(f"{options['output_file']}: cannot write: {exc.strerror or exc}")
        with handle:
            yield (lambda line: click.echo(line, file=handle, color=False)), (lambda line: click.echo(line, file=handle, color=False))
        return
    report = _to_stderr if stdout_taken else click.echo
    problems = _to_stderr if options["output_format"] == "text" else report
    yield report, problems


def _emit(results: list[FileResult], catalogue: Catalogue, config: Config, options: dict, report: Callable[[str], None], problems: Callable[[str], None]) -> bool:
    """Print findings (or statistics) in the chosen format; True when it was a text format."""
    from xla2tpu.report import github, json as json_report, sarif, statistics  # each run needs one

    fmt = options["output_format"]
    diagnostics = [d for r in results for d in r.diagnostics]
    if options["statistics"]:
        table = statistics.rows(diagnostics, catalogue)
        if fmt == "json":
            report(json_report.render(results, [row.as_dict() for row in table]).rstrip("\n"))
            return False
        for line in statistics.lines(table):
            report(line)
    elif fmt == "json":
        report(json_report.render(results).rstrip("\n"))
        return False
    elif fmt == "sarif":
        report(sarif.render(results, catalogue, config.root).rstrip("\n"))
        return False
    elif fmt == "github":
        for line in github.lines(results):
            report(line)
        return False
    else:
        show = text.finding if fmt == "text" else text.concise
        for result in results:
            for diagnostic in result.diagnostics:
                report(show(result.path, diagnostic, options["show_reasons"]))
    for result in results:
        if result.error:
            problems(text.problem(result.path, result.error) if fmt == "text" else f"{result.path}: error: {result.error}")
    return fmt == "text"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="xla2tpu")
def main() -> None:
    """Migrate PyTorch/XLA (torch_xla) and Optimum TPU code to native TorchTPU."""


@main.command()
@_options
@click.option("--show-facts", is_flag=True, help="Also print what each analysed file is (how its processes start, its hardware, SPMD), each fact with the line it came from: the reasons behind a withheld fix.")
def check(show_facts: bool, **options: object) -> None:
    """Report torch_xla idioms. Exit 0 when clean, 1 with findings, 2 on errors."""
    outcome, config, catalogue, _ = _process(options, rewrite=False)
    _warn(outcome)
    with _sink(options, stdout_taken=False) as (report, problems):
        if show_facts and options["output_format"] not in MACHINE_FORMATS:
            for line in text.facts(outcome.results):
                report(line)
        if _emit(outcome.results, catalogue, config, options, report, problems):
            errors = sum(1 for r in outcome.results if r.error)
            for line in text.check_summary(outcome.diagnostics, bool(options["unsafe_fixes"]), errors,
                                           options["show_reasons"]):
                report(line)
    sys.exit(_exit_code(outcome, any(True for _ in outcome.diagnostics), options))


@main.command()
@_options
@click.option("--diff", is_flag=True, help="Print a unified diff of the fixes and write nothing (exit 1 if anything would change).")
@click.option("--report", "report_paths", multiple=True, type=click.Path(path_type=Path, dir_okay=False, allow_dash=True), help="Also write the migration report there: the plan (blockers, folders, programs), then every file. Markdown, `-` for standard output (the diff then goes to standard error), `.html` for one self-contained page, `.json` for what a later --baseline reads. Repeat for several. On GitHub Actions the plan is also appended to the job summary.")
@click.option("--baseline", type=click.Path(path_type=Path, dir_okay=False), help="The JSON report of an earlier run (`--report FILE.json`): the report shows what changed since it.")
@click.option("--exit-non-zero-on-fix", is_flag=True, help="Exit 1 when any file was fixed, even if nothing remains.")
@click.option("-q", "--quiet", is_flag=True, help="Print the summary only, not each unsafe fix applied with what it may change.")
def fix(diff: bool, report_paths: tuple[Path, ...], baseline: Path | None, exit_non_zero_on_fix: bool, quiet: bool, **options: object) -> None:
    """Apply safe fixes in place (unsafe ones too with --unsafe-fixes)."""
    report_stdout = _check_reports(report_paths, baseline, options)
    earlier = _load_baseline(baseline) if baseline is not None else None
    outcome, config, catalogue, stdin_data = _process(options)
    _warn(outcome)
    fixed = changed = 0
    written: set[str] = set()
    for result in outcome.results:
        if result.new_source is None:
            continue
        if diff:
            _print_diff(result, stdin_data, to_stderr=report_stdout)
        elif stdin_data is None:
            problem = write_back(result)
            if problem is not None:
                result.error, result.new_source = problem, None
                continue
        changed += 1
        written.add(result.path)
        fixed += sum(1 for d in result.diagnostics if d.fixed)
    if stdin_data is not None and not diff:
        result = outcome.results[0]
        sys.stdout.buffer.write(result.new_source if result.new_source is not None else stdin_data)
        sys.stdout.flush()
    if report_paths:
        _reports(report_paths, outcome, written, catalogue, diff, earlier)
    # What is still there after this run: a fix counts only where its file was written.
    after = [_as_applied(r, r.path in written) for r in outcome.results]
    remaining = [d for r in after for d in r.diagnostics if not d.fixed]
    text_format = options["output_format"] in ("text", "concise") and not options["statistics"]
    shown = [dataclasses.replace(r, diagnostics=[d for d in r.diagnostics if not d.fixed]) for r in after] if text_format else after
    with _sink(options, stdout_taken=diff or stdin_data is not None or report_stdout) as (report, problems):
        if _emit(shown, catalogue, config, options, report, problems):
            report(text.fix_summary(fixed, changed, len(remaining), dry_run=diff))
            if text_format and not quiet:
                for line in text.unsafe_applied(after if not diff else outcome.results, dry_run=diff):
                    report(line)
            for line in text.errors_summary(sum(1 for r in outcome.results if r.error)):
                report(line)
    findings = bool(remaining) or (diff and changed > 0) or (exit_non_zero_on_fix and changed > 0)
    sys.exit(_exit_code(outcome, findings, options))


def _as_applied(result: FileResult, written: bool) -> FileResult:
    if written or not any(d.fixed for d in result.diagnostics):
        return result
    return dataclasses.replace(result, diagnostics=[dataclasses.replace(d, fixed=False) for d in result.diagnostics])


def _check_reports(paths: tuple[Path, ...], baseline: Path | None, options: dict) -> bool:
    """Refuse what cannot work before any file is read; True when the report takes standard output."""
    to_stdout = sum(1 for p in paths if str(p) == "-")
    if to_stdout > 1:
        _fail("`--report -` can be given once")
    if to_stdout and [str(p) for p in options["paths"]] == ["-"]:
        _fail("`--report -` cannot be combined with fixing standard input (`fix -` prints the fixed source there)")
    if baseline is not None and not paths:
        _fail("--baseline compares a report with an earlier one: give --report too")
    return bool(to_stdout)


def _load_baseline(path: Path) -> Baseline:
    from xla2tpu.report.baseline import BaselineError, load

    try:
        return load(path)
    except BaselineError as exc:
        _fail(str(exc))


def _reports(paths: tuple[Path, ...], outcome: Outcome, written: set[str], catalogue: Catalogue, dry_run: bool,
             earlier: Baseline | None) -> None:
    """Build the plan once and write each report asked for; on GitHub Actions the plan
    (not the per-file detail) goes to the job summary too."""
    from xla2tpu.report import baseline, plan as plan_mod

    plan = plan_mod.build(outcome.results, outcome.files, written, catalogue, dry_run)
    if earlier is not None:
        plan = dataclasses.replace(plan, delta=baseline.compare(earlier, plan))
    _write_plan(plan, paths, catalogue)


def _write_plan(plan: Plan, paths: tuple[Path, ...], catalogue: Catalogue) -> None:
    """Each report asked for, in the format its suffix names; on GitHub Actions the plan
    (not the per-file detail) goes to the job summary too."""
    from xla2tpu.report import baseline, html, migration

    for path in paths:
        suffix = path.suffix.lower()
        if suffix in (".html", ".htm"):
            content = html.render(plan, catalogue)
        elif suffix == ".json":
            content = baseline.render(plan)
        else:
            content = migration.render(plan, catalogue)
        if str(path) == "-":
            click.echo(content, nl=False)
        else:
            _write_report(path, content)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        try:
            with open(summary, "a", encoding="utf-8") as handle:
                handle.write(migration.plan_only(plan, limit=SUMMARY_LIMIT))
        except OSError as exc:
            _fail(f"{summary}: cannot append the plan to the job summary ($GITHUB_STEP_SUMMARY): {exc.strerror or exc}")


def _write_report(path: Path, content: str) -> None:
    try:
        path.write_text(content, encoding="utf-8")
    except OSError as exc:
        _fail(f"{path}: cannot write the report: {exc.strerror or exc}")


def _to_stderr(line: str) -> None:
    click.echo(line, err=True)


def _print_diff(result: FileResult, stdin_data: bytes | None, to_stderr: bool) -> None:
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
        click.echo(line if line.endswith(("\n", "\r")) else line + "\n", nl=False, err=to_stderr)


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
    from xla2tpu.catalogue.docs import render_rule

    click.echo(render_rule(rule))


@main.group()
def report() -> None:
    """Work with migration reports (`fix --report FILE.json`)."""


@report.command("merge")
@click.argument("reports", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--report", "report_paths", multiple=True, required=True,
              type=click.Path(path_type=Path, dir_okay=False, allow_dash=True),
              help="Where to write the merged plan: Markdown, `-` for standard output, `.html` for one page, `.json` for a report a later merge or --baseline reads. Repeat for several. On GitHub Actions the plan is also appended to the job summary.")
def merge_reports(reports: tuple[Path, ...], report_paths: tuple[Path, ...]) -> None:
    """Merge the JSON reports of shards (`--shard K/N`) or repositories into one plan."""
    from xla2tpu.report.merge import MergeError, merge

    catalogue = catalogue_mod.load()
    if sum(1 for path in report_paths if str(path) == "-") > 1:
        _fail("`--report -` can be given once")
    try:
        plan = merge(reports, catalogue)
    except MergeError as exc:
        _fail(str(exc))
    _write_plan(plan, report_paths, catalogue)


def _register_verify() -> None:
    from xla2tpu.verify_cli import verify_command

    main.add_command(verify_command)


_register_verify()

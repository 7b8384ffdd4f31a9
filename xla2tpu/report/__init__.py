"""Stage 7, the reports: what a run found and fixed, in the format a reader asked for.

`text` (ruff-like lines), `github` (workflow annotations), `json`, `sarif`, `statistics`,
and the migration report (`plan`: per-file and per-program status; rendered by `migration`
as Markdown and `html` as a page); `baseline` records findings to compare later runs with;
`progress` the live counter on a terminal.

Receives: the run's `FileResult`s and the catalogue. Hands on: text, files and exit codes to
the CLI.
"""

"""Stage 6, the run: one command over many files.

`workflow` discovers the files, reads them and writes fixes back; `scan` is the front
(prefilter, line counts, module summaries) that workers run over slices of the tree; `pool`
the worker processes; `engine` the per-file pipe (`process_source`: prefilter, decode,
facts, detection, then the LibCST pass only if needed); `notebook` runs a notebook's cells
through it as one module; `cache` keeps each file's result by content hash; `shard` picks a
deterministic share for a CI matrix; `config` reads `[tool.xla2tpu]` and merges the flags.

Receives: the CLI's paths and options. Hands on: one `FileResult` per file, to the reports.
"""

"""Formatting what the rewrite emits, the way the project's formatter would: a generated line
longer than the project's line length is split as black / ruff format split it (`wrap`,
`linesplit`), and a call rebuilt from a template keeps the layout of the call it replaces
(`call_layout`).

The rewrite stage calls it on the lines it writes; it knows nothing of rules. Receives:
generated code (tokens, LibCST calls) and a line length. Hands on: the lines to print.
"""

"""Stage 1, reading sources: from a path to text the later stages can trust.

Finds the files (`files`: discovery, .gitignore and excludes; also the atomic write-back),
turns bytes into text exactly (`decode`: encoding cookie, BOM, line endings, nesting the
parser cannot take), says why a file cannot be read (`parse_errors`), reads `# noqa` and
skip-file markers (`noqa`), decides on bytes alone whether a file can hold an idiom at all
(`prefilter`), and reads notebooks' cells as IPython does (`notebook_cells`,
`notebook_json`).

Receives: paths and bytes. Hands on: decoded text (`Decoded`), the verdict of the prefilter,
suppressions, and a clear reason for any file it cannot read.
"""

"""Stage 5, rewriting with LibCST: the only stage that loads LibCST, and only for a file with a
fix to write or a transform to try.

`parse_plan` picks, from CPython's tree, the top-level statements that can hold a site;
`reduction`, `layout` and `outline` parse and visit only those; `libcst_pass` runs the
pass: `rewriter` builds each site's fix (templates, or a `transforms/` builder),
`statements` and `pruner` delete statements and what they empty without losing comments,
`dead_flags` removes the availability flags the fixes left unread, `import_pass` makes the
imports follow the code; the emitted lines go through
`xla2tpu.formatting`.

Receives: decoded text, the detector's sites, the settings and the facts. Hands on: the
fixed source and the findings as applied (`FileResult`).
"""

"""Stage 3, the rule catalogue: what to look for and what to write instead, as data.

`rules` loads and validates `rules/*.toml` into typed rules and cases; `index` builds the
lookup tables of the selected rules; `patterns` / `pattern_text` and `templates` /
`template_text` read the expression patterns a rule matches and the replacement templates it
writes; `diagnostics` is what a finding is; `settings` what a run asks of the engine (which
rules, which fix classes, the target, the line length); `docs` renders a rule's
documentation (`xla2tpu explain`, docs/rules/).

Receives: the TOML files and the run's selection. Hands on: `Catalogue`, `RuleIndex`,
`Settings` and the finding types every later stage fills in.
"""

"""Analyses for `kind = "lint"` rules: findings that depend on context (the loop around a
call, say) rather than on one site. A lint is a pure function of one top-level statement of
CPython's tree returning `Hit`s, so what it finds may not depend on other statements; the
rewriter calls it for each top-level statement whose lines satisfy the rule's `when`, so a
`file-matches` gate there also spares it the statements that cannot hold a finding. It
reads CPython's tree only: LibCST parses no statement for a lint's sake. The rewriter
reports each hit with the rule's cases (always manual), where LibCST would put the node
(detect/positions.py). Register one with `@lint("name")` in a module of this package and
import it below.
"""

from __future__ import annotations

from xla2tpu.detect.lints.registry import LINTS

# Lint modules register themselves in LINTS on import.
from xla2tpu.detect.lints import host_sync  # noqa: F401

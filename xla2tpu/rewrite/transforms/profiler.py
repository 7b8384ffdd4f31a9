"""`xp.start_trace(log_dir)` … `xp.stop_trace()` → a `torch.profiler.profile` started and
stopped, where the detector found the pair unambiguous (detect/profiler_site.py): the start
becomes the profiler's creation and start, the stop its stop, both naming the profiler with
the same fresh word (derived from the module's source).
"""

from __future__ import annotations

import libcst as cst

from xla2tpu.detect import profiler_site
from xla2tpu.project.resolve import resolve
from xla2tpu.rewrite.transforms.base import CallSite, Rewrite, transform
from xla2tpu.rewrite.transforms.forms import fresh_name, render_expression, render_statements


@transform(profiler_site.TEMPLATE)
def profiler_trace(site: CallSite) -> Rewrite | None:
    if not isinstance(site.statement, cst.Expr):
        return None  # not the site the detector decided
    profiler = {"profiler": cst.Name(fresh_name(site, "prof"))}
    if resolve(site.scope, site.original.func) == profiler_site.START:
        return render_statements(site, list(profiler_site.START_LINES), profiler)
    imports: set[str] = set()
    return Rewrite(expression=render_expression(site, profiler_site.STOP_TEXT, imports, profiler), imports=imports)

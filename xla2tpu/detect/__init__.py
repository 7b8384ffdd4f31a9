"""Stage 4, detection on CPython's tree: every site of a file, its rule and case, and whether
its fix can be made, decided before LibCST sees the file (so `check` usually never loads it).

`sites` walks the module once (`Detector`) and records each site as a `found.Found`;
`conditions` evaluates a case's conditions, with `values`, `arguments`, `scopes`,
`emission` (how a name is spelled where a fix lands), `tensors`, `printers` and
`ast_earlier` / `ast_patterns`; the `*_site` modules decide the structural rewrites (launch,
loaders, collectives, profiler, ...); `import_sites` judges torch_xla imports; `lints/` the
context rules; `prechecks` the file rules and `project_findings` the sites another module
points at; `after_fixes` tells what the fixes leave, for `check` (with `probe_flags`: the availability
flags they leave unread); `positions` reports each
finding where LibCST would put it; `vendor_branches` leaves other hardware's branches alone.

Receives: the ast, the file's facts and context, the rule index. Hands on: the sites
(`SiteMap`) and findings; the rewrite stage builds the fixes of these sites.
"""

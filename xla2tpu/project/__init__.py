"""Stage 2, the project model and facts: what a file is, computed once before any rule runs.

`model` joins the modules of a repository (`module_summary` reads what each shows the
rest: imports, definitions, availability flags, backends); `canonical` and `resolve` say
which dotted name a module path or an alias means here; `scope` is a scope as both
resolvers see it; `facts` decides how a file's processes start, its hardware, SPMD and
more, each with the line that shows it; `pins` reads the Transformers release a project is
built on; `env_reads` the environment variables a file reads; `line_length` the length the
project's formatter keeps lines to.

Receives: decoded sources (and their project's files). Hands on: `Facts`, a `Context` of
cross-module facts per file, and name resolution. Rules key their cases on these facts.
"""

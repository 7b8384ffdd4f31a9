"""Structural rewrites that a template cannot express, by name (`action = "transform"`).

A transform is a pure function of a `CallSite` returning a `Rewrite`, or None when the
site's shape is not one it can rewrite (the finding is then reported as manual). It
never mutates anything: the rewriter applies the `Rewrite` only if the fix is applied.
Register one with `@transform("name")` in a module of this package and import that
module below.
"""

from __future__ import annotations

from xla2tpu.rewrite.transforms.base import REGISTRY

# Transform modules register themselves in REGISTRY on import.
from xla2tpu.rewrite.transforms import collectives  # noqa: F401
from xla2tpu.rewrite.transforms import distributed  # noqa: F401
from xla2tpu.rewrite.transforms import launch  # noqa: F401
from xla2tpu.rewrite.transforms import loaders  # noqa: F401
from xla2tpu.rewrite.transforms import loops  # noqa: F401
from xla2tpu.rewrite.transforms import optimum  # noqa: F401
from xla2tpu.rewrite.transforms import with_unwrap  # noqa: F401
from xla2tpu.rewrite.transforms import step_closure  # noqa: F401
from xla2tpu.rewrite.transforms import env_access  # noqa: F401
from xla2tpu.rewrite.transforms import profiler  # noqa: F401
from xla2tpu.rewrite.transforms import helpers  # noqa: F401
from xla2tpu.rewrite.transforms import spmd  # noqa: F401

"""Which dotted name a module path means here: the catalogue's renames of legacy torch_xla
modules, and (given a project model, project/model.py) the file's relative imports and the names
its project re-exports. Free of LibCST: facts and the project model use it too."""

from __future__ import annotations

from collections.abc import Mapping

# Names of the project's own availability probes and flags (project/model.py) resolve to
# `PROJECT` + "probe." + the defining module and name (one dotted part): rules match them
# like any other (XLA011), and the file's context says where each is defined.
PROJECT = "xla2tpu.project."


class Canonicaliser:
    """Maps a dotted name to the one rules match: project aliases first (a name the project
    re-exports, `mypkg.compat.xm` → `torch_xla.core.xla_model`), then the catalogue's prefix
    renames of legacy modules."""

    def __init__(
        self,
        renames: Mapping[str, str],
        aliases: Mapping[str, str] | None = None,
        relative: Mapping[tuple[int, str], str] | None = None,
    ) -> None:
        # Longest prefix first, so nested renames win.
        self._renames = sorted(renames.items(), key=lambda kv: -len(kv[0]))
        self._aliases = sorted((aliases or {}).items(), key=lambda kv: -len(kv[0]))
        self._relative = relative or {}

    def __call__(self, qualname: str) -> str:
        for old, new in self._aliases:
            if qualname == old or qualname.startswith(old + "."):
                qualname = new + qualname[len(old):]
                break
        for old, new in self._renames:
            if qualname == old or qualname.startswith(old + "."):
                return new + qualname[len(old):]
        return qualname

    def absolute(self, level: int, module: str) -> str | None:
        """The module a relative import (`level` dots, then `module`) names, when the
        project model resolved it; None otherwise (such an import only shadows)."""
        return self._relative.get((level, module))

    def reaches(self, package: str) -> bool:
        """Whether the project resolves some import of the file into `package` (a relative
        import inside it, or a re-export of one of its names)."""
        return any(target == package or target.startswith(package + ".")
                   for target in [*self._relative.values(), *(new for _, new in self._aliases)])

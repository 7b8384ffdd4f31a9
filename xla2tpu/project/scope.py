"""A scope as both resolvers see it (resolve.py on LibCST's tree, detect/scopes.py on
CPython's): what its imports bind, what else binds a name there, and what it reads. Nothing
here imports LibCST."""

from __future__ import annotations

from collections.abc import Iterable

OTHER = "<other>"


class Scope:
    __slots__ = ("parent", "is_class", "is_comprehension", "bindings", "declared", "reads", "_imports")

    def __init__(self, parent: Scope | None, is_class: bool = False, is_comprehension: bool = False) -> None:
        self.parent = parent
        self.is_class = is_class
        # A comprehension is a function of its own: its targets do not leak (a walrus does).
        self.is_comprehension = is_comprehension
        self.bindings: dict[str, set[str]] = {}
        # Names declared `global` (True) or `nonlocal` (False): bound in another scope.
        self.declared: dict[str, bool] = {}
        self.reads: set[str] = set()  # names read here (filled by UseResolver only)
        self._imports: dict[str, str] | None = None  # `imports`, computed when first asked

    @property
    def is_function(self) -> bool:
        """A function, lambda or comprehension: its names are locals, unbound until assigned."""
        return self.parent is not None and not self.is_class

    def bind(self, name: str, target: str) -> None:
        declared = self.declared.get(name)
        if declared is not None and self.parent is not None:
            # `global x` / `nonlocal x`: the binding is the module's / the enclosing function's.
            scope = self.module if declared else self.parent.owner(name)
            if scope is not None:
                scope.bind(name, target)
            return
        self.bindings.setdefault(name, set()).add(target)
        self._imports = None

    @property
    def imports(self) -> dict[str, str]:
        """The names this scope binds by an import alone, with what each imports: the only
        bindings a qualified name can be spelled with (an emitted name asks each scope around
        it, so this stays as small as the scope's imports however many functions it defines)."""
        if self._imports is None:
            self._imports = {name: next(iter(found)) for name, found in self.bindings.items()
                             if len(found) == 1 and OTHER not in found}
        return self._imports

    def owner(self, name: str) -> Scope | None:
        """The scope whose binding of `name` a read here reaches (Python's rules: class
        bodies do not enclose, `global` and `nonlocal` send it up), or None (a builtin, or
        nothing binds it)."""
        scope: Scope | None = self
        first = True
        while scope is not None:
            if first or not scope.is_class:
                declared = scope.declared.get(name)
                if declared is True:
                    return self.module.owner(name)
                if declared is None and name in scope.bindings:
                    return scope
            first = False
            scope = scope.parent
        return None

    @property
    def module(self) -> Scope:
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope

    def lookup(self, name: str) -> str | None:
        owner = self.owner(name)
        found = owner.bindings[name] if owner is not None else None
        if found is not None and len(found) == 1 and OTHER not in found:
            return next(iter(found))
        return None  # ambiguous (shadowed or monkey-patched) or not imported

    def qualify(self, name: str | None) -> str | None:
        """The qualified name a dotted name (`xm.mark_step`) means here, if its root is imported."""
        if name is None:
            return None
        root, dot, rest = name.partition(".")
        base = self.lookup(root)
        return None if base is None else base + dot + rest

    def binds(self, name: str) -> bool:
        """True when `name` is visible from this scope at all (import or otherwise)."""
        return self.owner(name) is not None

    def only_imports(self, name: str, target: str) -> bool:
        """True when every binding of `name` here is an import of `target` itself."""
        return self.bindings.get(name) == {target}


def matches_any(qualname: str, patterns: Iterable[str]) -> bool:
    """Exact match, or `prefix.*` matching anything below prefix."""
    for pattern in patterns:
        if pattern.endswith(".*"):
            if qualname.startswith(pattern[:-1]):
                return True
        elif qualname == pattern:
            return True
    return False

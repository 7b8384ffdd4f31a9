"""Compare two results objects (the JSON a runnable program prints on its last line).

Floats within `abs(a - e) <= atol + rtol * abs(e)` (numpy's isclose), where NaN matches
NaN and an infinity only itself; ints, bools, strings and None exactly; dict keys
starting with "_" are informational and skipped.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Comparison:
    ok: bool = True
    max_abs: float = 0.0
    max_rel: float = 0.0
    leaves: int = 0
    diffs: list[str] = field(default_factory=list)

    def fail(self, message: str) -> None:
        self.ok = False
        self.diffs.append(message)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _walk(exp: Any, act: Any, path: str, rtol: float, atol: float, out: Comparison) -> None:
    if isinstance(exp, dict) and isinstance(act, dict):
        for key in sorted(set(exp) | set(act)):
            if key.startswith("_"):
                continue
            sub = f"{path}.{key}"
            if key not in act:
                out.fail(f"{sub}: missing from the migrated run (expected {exp[key]!r})")
            elif key not in exp:
                out.fail(f"{sub}: not in the baseline (migrated run has {act[key]!r})")
            else:
                _walk(exp[key], act[key], sub, rtol, atol, out)
        return
    if isinstance(exp, list) and isinstance(act, list):
        if len(exp) != len(act):
            out.fail(f"{path}: length {len(act)} in the migrated run, expected {len(exp)}")
        for i, (e, a) in enumerate(zip(exp, act, strict=False)):  # lengths reported above
            _walk(e, a, f"{path}[{i}]", rtol, atol, out)
        return
    out.leaves += 1
    if _is_number(exp) and _is_number(act) and (isinstance(exp, float) or isinstance(act, float)):
        e, a = float(exp), float(act)
        if a == e:  # also two infinities of one sign, whose difference is nan
            return
        if not (math.isfinite(e) and math.isfinite(a)):
            # NaN matches NaN only; an infinity matches only itself (caught above), since
            # rtol * inf would let any value, even the other infinity, through.
            if not (math.isnan(e) and math.isnan(a)):
                out.fail(f"{path}: expected {e!r}, got {a!r}")
            return
        err = abs(a - e)
        rel = err / abs(e) if e else math.inf  # e == 0 here means a != 0 (equal returned above)
        out.max_abs = max(out.max_abs, err)
        out.max_rel = max(out.max_rel, rel)
        if not err <= atol + rtol * abs(e):
            out.fail(f"{path}: expected {e!r}, got {a!r} (abs err {err:.3g}, rel err {rel:.3g})")
        return
    if type(exp) is not type(act) or exp != act:
        out.fail(f"{path}: expected {exp!r}, got {act!r}")


def compare(expected: Any, actual: Any, *, rtol: float, atol: float) -> Comparison:
    out = Comparison()
    _walk(expected, actual, "$", rtol, atol, out)
    return out

"""What verify runs: runnable cases found under the given paths.

A case is a directory holding `main.py` and/or `case.toml`, or a single `.py` script.
A directory that is not a case is searched one level down (fixtures/runnable/*).

case.toml (every key optional):
    entry = "main.py"          # program to run, relative to the case directory
    args = []                  # its command-line arguments
    rtol = 1e-2                # tolerance floors: the CLI values apply when larger
    atol = 1e-3
    timeout = 300              # seconds per run
    requires = ["transformers"]            # modules both interpreters need, else skip
    legacy_env = { CPU_NUM_DEVICES = "1" } # extra environment for the torch_xla run
    devices = 2                # TPU chips the CPU stand-in reports (a launch spawns one
                               # process per chip); 1 unless given
    legacy = false             # never run a legacy leg (say why in a comment)
    baseline_from = "../other" # a borrowed baseline: that case's expected.json (say why)
    description = "..."
Beside it, optionally:
    expected.json   results of the torch_xla run, recorded with `verify --record`:
                    the baseline when no --legacy-python is given
    hand.patch      the documented hand step: a unified diff over the engine's output,
                    touching only the lines of the findings the engine leaves
                    (see handstep.py)
"""
from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CASE_FILE = "case.toml"
EXPECTED_FILE = "expected.json"
HAND_PATCH = "hand.patch"
# Not copied into the directory the engine migrates.
METADATA = frozenset({CASE_FILE, EXPECTED_FILE, HAND_PATCH, "__pycache__"})


@dataclass
class Case:
    name: str
    root: Path  # the directory (or, for a script, the file) that is copied
    entry: str
    args: list[str] = field(default_factory=list)
    rtol: float = 0.0
    atol: float = 0.0
    timeout: float | None = None
    requires: list[str] = field(default_factory=list)
    legacy_env: dict[str, str] = field(default_factory=dict)
    devices: int = 1
    legacy: bool = True
    description: str = ""
    expected: Any = None
    baseline_from: str | None = None  # the case whose expected.json is borrowed
    hand_patch: Path | None = None

    @property
    def is_script(self) -> bool:
        return self.root.is_file()


class CaseError(ValueError):
    pass


def _is_case_dir(path: Path) -> bool:
    return (path / CASE_FILE).is_file() or (path / "main.py").is_file()


def load_case(path: Path) -> Case:
    path = path.resolve()
    if path.is_file():
        if path.suffix != ".py":
            raise CaseError(f"{path}: not a Python script")
        return Case(name=path.stem, root=path, entry=path.name)
    meta: dict[str, Any] = {}
    if (path / CASE_FILE).is_file():
        try:
            meta = tomllib.loads((path / CASE_FILE).read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as e:
            raise CaseError(f"{path / CASE_FILE}: {e}") from e
    case = Case(
        name=path.name,
        root=path,
        entry=str(meta.get("entry", "main.py")),
        args=[str(a) for a in meta.get("args", [])],
        rtol=float(meta.get("rtol", 0.0)),
        atol=float(meta.get("atol", 0.0)),
        timeout=float(meta["timeout"]) if "timeout" in meta else None,
        requires=[str(m) for m in meta.get("requires", [])],
        legacy_env={str(k): str(v) for k, v in meta.get("legacy_env", {}).items()},
        legacy=bool(meta.get("legacy", True)),
        devices=int(meta.get("devices", 1)),
        description=str(meta.get("description", "")),
    )
    if not (path / case.entry).is_file():
        raise CaseError(f"{path}: entry {case.entry} not found")
    if "baseline_from" in meta:
        _borrow_baseline(case, path / str(meta["baseline_from"]))
    elif (path / EXPECTED_FILE).is_file():
        case.expected = json.loads((path / EXPECTED_FILE).read_text(encoding="utf-8"))
    if (path / HAND_PATCH).is_file():
        case.hand_patch = path / HAND_PATCH
    return case


def _borrow_baseline(case: Case, source: Path) -> None:
    # Read from the other case rather than copied, so the two cannot drift apart; a case
    # with its own expected.json as well would leave it unclear which one is compared.
    if (case.root / EXPECTED_FILE).is_file():
        raise CaseError(f"{case.root}: both {EXPECTED_FILE} and baseline_from; keep one")
    if not (source / EXPECTED_FILE).is_file():
        raise CaseError(f"{case.root / CASE_FILE}: baseline_from: no {EXPECTED_FILE} in {source}")
    case.expected = json.loads((source / EXPECTED_FILE).read_text(encoding="utf-8"))
    case.baseline_from = source.resolve().name


def discover(paths: list[Path]) -> list[Case]:
    cases: list[Case] = []
    for path in paths:
        if not path.exists():
            raise CaseError(f"{path}: no such file or directory")
        if path.is_file() or _is_case_dir(path):
            cases.append(load_case(path))
            continue
        found = sorted(p for p in path.iterdir() if p.is_dir() and _is_case_dir(p))
        if not found:
            raise CaseError(f"{path}: no runnable case (a main.py or case.toml) here or one level down")
        cases.extend(load_case(p) for p in found)
    return cases

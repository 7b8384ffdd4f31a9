"""verify's judgement of one run, branch by branch: the status, and the reasons and notes
the report shows. The engine is stubbed and the "legacy interpreter" is this Python, so
each case is a few small subprocesses and no torch."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from xla2tpu.verify import Options, verify_paths
from xla2tpu.verify.runner import Migration, Outcome

PYTHON = Path(sys.executable)
# True in the migrated leg only: the stand-in's variable is set there and never in the legacy one.
MIGRATED = "import os\nmigrated = bool(os.environ.get('XLA2TPU_STANDIN'))\n"


def _no_migration(workdir: Path, unsafe_fixes: bool, target: str) -> Migration:
    return Migration(0, "", 0.0)


def _verify(tmp_path: Path, body: str, **options: object) -> Outcome:
    script = tmp_path / "case.py"
    script.write_text(MIGRATED + body)
    (outcome,) = verify_paths([script], Options(**{"migrator": _no_migration, "timeout": 60, **options}))
    return outcome


def test_the_migration_gets_the_options_as_given(tmp_path: Path) -> None:
    calls: list[tuple[bool, str]] = []

    def recording(workdir: Path, unsafe_fixes: bool, target: str) -> Migration:
        calls.append((unsafe_fixes, target))
        return Migration(0, "", 0.0)

    for unsafe, target in ((True, "compile"), (False, "eager")):
        _verify(tmp_path, "", migrator=recording, unsafe_fixes=unsafe, target=target)
    assert calls == [(True, "compile"), (False, "eager")]


def test_a_migrated_run_that_fails_says_how(tmp_path: Path) -> None:
    o = _verify(tmp_path, "raise SystemExit(4)\n")
    assert (o.status, o.reasons) == ("fail", ["the migrated run exited 4"])


def test_a_migrated_run_that_loads_torch_xla_fails(tmp_path: Path) -> None:
    # On a TPU the stand-in only guards, and reports what got imported; written here as
    # the guard would write it.
    o = _verify(tmp_path, "import json\nwith open(os.environ['XLA2TPU_STANDIN_REPORT'], 'a') as f:\n"
                          "    f.write(json.dumps({'attempts': [], 'loaded': ['torch_xla', 'torch_xla.core']}) + '\\n')\n")
    assert (o.status, o.reasons) == ("fail", ["the migrated run imported torch_xla, torch_xla.core"])


def test_blocked_import_attempts_are_a_note_not_a_failure(tmp_path: Path) -> None:
    o = _verify(tmp_path, "".join(f"try:\n    import {m}\nexcept ImportError:\n    pass\n"
                                  for m in ("torch_xla", "torch_xla.core", "torch_xla.runtime",
                                            "torch_xla.distributed", "torch_xla.amp", "torch_xla.debug")))
    assert o.status == "pass", o.reasons
    [note] = o.notes
    attempts = note.removeprefix("blocked torch_xla/optimum.tpu import attempts: ").split("; ")
    assert len(attempts) == 5, note  # the first five of six
    assert all(re.fullmatch(r"torch_xla from .*/case\.py:\d+", a) for a in attempts), note


@pytest.mark.parametrize(("body", "baseline", "status", "reasons"), [
    # The legacy run prints a results line: it is the baseline.
    ("import json\nprint(json.dumps({'x': 1}))\n", "legacy", "pass", []),
    # No results line but a clean exit: exit status only.
    ("", "legacy", "pass", []),
    # A legacy run that fails gives no baseline, even with a results line.
    ("import json\nprint(json.dumps({'x': 1}))\nif not migrated:\n    raise SystemExit(3)\n", "", "fail",
     ["the legacy (torch_xla) run exited 3: no baseline"]),
    ("import time\nif not migrated:\n    time.sleep(60)\n", "", "fail",
     ["the legacy (torch_xla) run timed out: no baseline"]),
    # The baseline has a results line, the migrated run none.
    ("import json\nif not migrated:\n    print(json.dumps({'x': 1}))\n", "legacy", "fail",
     ["the migrated run printed no JSON results line (the baseline has one)"]),
])
def test_the_legacy_leg_decides_the_baseline(tmp_path: Path, body: str, baseline: str, status: str,
                                             reasons: list[str]) -> None:
    o = _verify(tmp_path, body, legacy_python=PYTHON, timeout=5)
    assert (o.baseline, o.status, o.reasons) == (baseline, status, reasons)


def _folder_case(root: Path, **toml: str) -> Path:
    root.mkdir()
    (root / "main.py").write_text("import json\nprint(json.dumps({'x': 1.5, 'n': [1, 2]}))\n")
    (root / "case.toml").write_text("".join(f"{key} = {value}\n" for key, value in toml.items()))
    return root


def test_record_writes_the_legacy_results_as_the_case_baseline(tmp_path: Path) -> None:
    case = _folder_case(tmp_path / "case")
    (o,) = verify_paths([case], Options(migrator=_no_migration, legacy_python=PYTHON, record=True, timeout=60))
    assert o.status == "pass", o.reasons
    assert (case / "expected.json").read_text() == json.dumps({"x": 1.5, "n": [1, 2]}, indent=1) + "\n"


def test_record_never_writes_for_a_script_or_over_a_borrowed_baseline(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text("import json\nprint(json.dumps({'x': 1}))\n")
    donor = _folder_case(tmp_path / "donor")
    (donor / "expected.json").write_text(json.dumps({"x": 1.5, "n": [1, 2]}))
    borrowed = _folder_case(tmp_path / "borrowed", baseline_from='"../donor"')
    for path in (script, borrowed):  # a script has no folder to record into
        (o,) = verify_paths([path], Options(migrator=_no_migration, legacy_python=PYTHON, record=True, timeout=60))
        assert (o.status, o.baseline) == ("pass", "legacy"), o.reasons
    assert not (borrowed / "expected.json").exists()
    (o,) = verify_paths([_folder_case(tmp_path / "plain")], Options(migrator=_no_migration, legacy_python=PYTHON, timeout=60))
    assert not (tmp_path / "plain" / "expected.json").exists()  # and only with --record


@pytest.mark.parametrize(("unsafe", "hint"), [(False, "; try --unsafe-fixes"), (True, "")])
def test_manual_findings_suggest_unsafe_fixes_only_when_they_were_off(tmp_path: Path, unsafe: bool, hint: str) -> None:
    def leaves_findings(workdir: Path, unsafe_fixes: bool, target: str) -> Migration:
        return Migration(1, "case.py:1:8: XLA001 `torch_xla` is still used\nFixed 0 findings in 0 files, 1 remaining.\n", 0.0)

    o = _verify(tmp_path, "import torch_xla\n", migrator=leaves_findings, unsafe_fixes=unsafe)
    assert o.status == "manual"
    assert o.reasons[0] == f"needs manual migration: the engine left 1 finding(s){hint}"

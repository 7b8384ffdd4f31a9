"""verify end to end with the real engine: no stub migrator, no patched engine_migrate,
no hand edits.

Every runnable case goes through `verify_paths` as `xla2tpu verify --unsafe-fixes` sends
it: migrated by verify's own `python -m xla2tpu fix` subprocess, run on the CPU stand-in,
compared with the original run live under torch_xla when XLA2TPU_LEGACY_PYTHON names a
torch_xla interpreter (`scripts/legacy-env.sh` builds one; `.ci/run` does), else with the
recorded torch_xla results. The code that ran is then held against the engine's output
computed here, in this process: a verify that skipped the engine, or ran anything but its
output (plus, for ddp_spawn, a hand step on the lines of the findings it left), fails here.
"""
from __future__ import annotations

import difflib
import importlib.util
import os
from pathlib import Path

import pytest

if importlib.util.find_spec("torch") is None:
    pytest.skip("torch is not installed", allow_module_level=True)

from xla2tpu.catalogue import rules as catalogue  # noqa: E402
from xla2tpu.run.config import Config  # noqa: E402
from xla2tpu.run.engine import process_source  # noqa: E402
from xla2tpu.verify import Options, Outcome, verify_paths  # noqa: E402
from xla2tpu.verify.runner import ENGINE, HAND_STEP  # noqa: E402
from xla2tpu.run.workflow import settings_for  # noqa: E402

pytestmark = pytest.mark.slow

RUNNABLE = Path(__file__).resolve().parents[1] / "fixtures" / "runnable"
# No hand step (mlp_train keeps a .item() lint); ddp_spawn's launch, ranks, gradient
# average, barrier and save are all the engine's since the launch migration (XLA601);
# idioms' optimizer_step in a program launched from elsewhere is the guarded average
# (XLA401), launch_flags' launch in main() under flags (debug_single_process, --ddp), and
# xla_fsdp's torch_xla FSDP (XLA714, FSDP2), spmd_data_parallel's and spmd_tensor_parallel's
# SPMD programs (XLA701, XLA703, XLA708: one process per chip, DeviceMesh and DTensor, the
# latter with sharded parameters), and loader_attribute's device loader kept in an
# attribute (XLA501's copy of torch_xla's MpDeviceLoader).
ENGINE_ONLY = ("mlp_train", "compile_infer", "ddp_spawn", "mp_mnist", "mp_imagenet", "idioms", "launch_flags",
               "xla_fsdp", "spmd_data_parallel", "spmd_tensor_parallel", "spmd_fsdp_v2", "loader_attribute")
HAND: tuple[str, ...] = ()  # cases the engine leaves findings in, finished by their hand.patch
ALL = sorted(p.name for p in RUNNABLE.iterdir() if (p / "main.py").is_file())
SETTINGS = settings_for(Config(root=RUNNABLE), catalogue.load(), unsafe_fixes=True)
LEGACY = os.environ.get("XLA2TPU_LEGACY_PYTHON") or None


@pytest.fixture(scope="module")
def outcomes() -> dict[str, Outcome]:
    options = Options(unsafe_fixes=True, backend="cpu-standin", legacy_python=Path(LEGACY) if LEGACY else None)
    return {o.case.name: o for o in verify_paths([RUNNABLE / name for name in ALL], options)}


@pytest.mark.parametrize("case", ALL)
def test_every_runnable_case_passes(outcomes: dict[str, Outcome], case: str) -> None:
    o = outcomes[case]
    assert o.status == "pass", (o.reasons, o.migrated.stderr[-2000:] if o.migrated else None)
    assert o.migrated is not None and o.migrated.exit_code == 0 and o.migrated.xla_loaded == []
    # Live torch_xla where asked and the case has a legacy leg; the recorded result otherwise.
    assert o.baseline == ("legacy" if LEGACY and o.case.legacy else "recorded")
    assert o.comparison is not None and o.comparison.ok
    assert o.comparison.leaves == _leaves(o.case.expected) > 0  # every recorded value compared


def _engine(case: str) -> tuple[str, int]:
    """The engine's output for the case's main.py, and how many findings it leaves."""
    original = (RUNNABLE / case / "main.py").read_bytes()
    result = process_source("main.py", original, SETTINGS)
    assert result.error is None and result.new_source is not None, result.error
    return result.new_source.decode(), sum(not d.fixed for d in result.diagnostics)


def _finding_lines(source: str) -> set[int]:
    """The lines of the findings the engine leaves in `source` (its own output)."""
    result = process_source("main.py", source.encode(), SETTINGS)
    assert result.new_source is None  # the engine's output is a fixed point
    return {row for d in result.diagnostics for row in range(d.line, max(d.end_line, d.line) + 1)}


def _leaves(value: object) -> int:
    if isinstance(value, dict):
        return sum(_leaves(v) for k, v in value.items() if not k.startswith("_"))
    if isinstance(value, list):
        return sum(_leaves(v) for v in value)
    return 1


@pytest.mark.parametrize("case", ENGINE_ONLY)
def test_the_code_that_ran_is_the_engine_output(outcomes: dict[str, Outcome], case: str) -> None:
    o = outcomes[case]
    engine, left = _engine(case)
    assert o.migration is not None and o.migration.findings == left
    assert o.migration.exit_code == (1 if left else 0)
    assert o.migration_source == ENGINE and not o.hand_step
    assert engine != (RUNNABLE / case / "main.py").read_text()
    assert o.entry_source == engine


@pytest.mark.parametrize("case", HAND)
def test_the_hand_step_changes_only_lines_of_remaining_findings(outcomes: dict[str, Outcome], case: str) -> None:
    o = outcomes[case]
    engine, left = _engine(case)
    assert o.migration is not None and o.migration.exit_code == 1 and o.migration.findings == left > 0
    assert o.migration_source == HAND_STEP
    findings = _finding_lines(engine)
    assert o.entry_source is not None and o.entry_source != engine
    matcher = difflib.SequenceMatcher(a=engine.splitlines(), b=o.entry_source.splitlines(), autojunk=False)
    changed = [(i1, i2) for tag, i1, i2, _, _ in matcher.get_opcodes() if tag != "equal"]
    assert changed
    for first, end in changed:
        touched = set(range(first + 1, end + 1))  # 1-based lines of the engine's output
        assert touched and touched <= findings, (touched, findings)

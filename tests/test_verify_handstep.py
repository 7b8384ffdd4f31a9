"""Hand steps (hand.patch over the engine's output): the diff reader, and the runner with
the real engine on a small torch-free case (the engine runs as a subprocess, as in verify)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from xla2tpu.verify import Options, verify_paths
from xla2tpu.verify.handstep import HandStepError, apply, parse
from xla2tpu.verify.output import summary

ENGINE_OUTPUT = "a = 1\nb = 2\nc = 3\nd = 4\ne = 5\n"


def test_parse_diff_u_with_prose_timestamps_and_counts() -> None:
    (patch,) = parse("Why: ...\n  indented prose\n"
                     "--- a/pkg/main.py\t2026-01-01 00:00:00 +0000\n"
                     "+++ b/pkg/main.py\t2026-01-01 00:00:00 +0000\n"
                     "@@ -2,3 +2,2 @@\n b = 2\n-c = 3\n d = 4\n"
                     "trailing prose is not a hunk line\n")
    assert patch.path == "pkg/main.py"
    (hunk,) = patch.hunks
    assert (hunk.old_start, hunk.old, hunk.new) == (2, ["b = 2\n", "c = 3\n", "d = 4\n"], ["b = 2\n", "d = 4\n"])
    assert hunk.removed == [1]


def test_parse_no_newline_marker_and_stripped_empty_context() -> None:
    (patch,) = parse("+++ main.py\n@@ -1,3 +1,3 @@\n x = 1\n\n-y = 2\n\\ No newline at end of file\n"
                     "+y = 3\n\\ No newline at end of file\n")
    (hunk,) = patch.hunks
    assert hunk.old == ["x = 1\n", "\n", "y = 2"] and hunk.new == ["x = 1\n", "\n", "y = 3"]


@pytest.mark.parametrize(("text", "message"), [
    ("no diff at all\n", "no hunk found"),
    ("@@ -1 +1 @@\n-a\n+b\n", "before any '+++ file' header"),
    ("+++ m.py\n@@ -1,2 +1,2 @@\n-a = 1\n+a = 2\n", "cut short"),
    ("+++ m.py\n@@ -1,2 +1,2 @@\n-a = 1\nprose\n", "ends early"),
])
def test_parse_refuses_what_is_not_a_whole_diff(text: str, message: str) -> None:
    with pytest.raises(HandStepError, match=re.escape(message)):
        parse(text)


def _one(text: str):
    (patch,) = parse(text)
    return patch


def test_apply_replaces_finding_lines_and_follows_a_shift() -> None:
    patch = _one("+++ b/m.py\n@@ -3 +3,2 @@\n-c = 3\n+c = 30\n+c2 = 31\n")
    assert apply(patch, ENGINE_OUTPUT, {3}) == "a = 1\nb = 2\nc = 30\nc2 = 31\nd = 4\ne = 5\n"
    # The engine's output gained a line above: the same lines, one further down.
    shifted = "z = 0\n" + ENGINE_OUTPUT
    assert apply(patch, shifted, {4}) == "z = 0\na = 1\nb = 2\nc = 30\nc2 = 31\nd = 4\ne = 5\n"


def test_apply_refuses_a_patch_that_no_longer_applies() -> None:
    patch = _one("+++ b/m.py\n@@ -2,2 +2,2 @@\n b = 2\n-c = 3\n+c = 30\n")
    with pytest.raises(HandStepError, match=r"hunk 1 \(@@ -2\) no longer applies.*'b = 2'"):
        apply(patch, ENGINE_OUTPUT.replace("b = 2", "b = 20"), {3})


def test_apply_refuses_lines_outside_the_findings() -> None:
    patch = _one("+++ b/m.py\n@@ -3,2 +3,2 @@\n-c = 3\n-d = 4\n+c = 30\n+d = 40\n")
    with pytest.raises(HandStepError, match=r"changes line\(s\) 4 of the engine's output, where the engine left no finding"):
        apply(patch, ENGINE_OUTPUT, {3})
    assert apply(patch, ENGINE_OUTPUT, {3, 4}).splitlines()[2:4] == ["c = 30", "d = 40"]


def test_apply_refuses_a_hunk_that_only_adds() -> None:
    patch = _one("+++ b/m.py\n@@ -3,0 +4 @@\n+import os\n")
    with pytest.raises(HandStepError, match="only adds lines"):
        apply(patch, ENGINE_OUTPUT, {1, 2, 3, 4, 5})


# ------------------------------------------------------------- the runner, real engine

# The engine deletes the PJRT_DEVICE line (a safe fix, so everything below moves up two
# lines) and leaves two findings: the xmp import (line 3 of its output) and xmp.spawn
# (line 11).
LEGACY = '''\
import json
import os
import torch_xla.distributed.xla_multiprocessing as xmp

os.environ["PJRT_DEVICE"] = "TPU"


def work(index, scale):
    print(json.dumps({"value": index + scale}))


if __name__ == "__main__":
    xmp.spawn(lambda i, s: work(i, s), args=(2,), start_method="fork")
'''
FINISHED = '''\
import json
import os


def work(index, scale):
    print(json.dumps({"value": index + scale}))


if __name__ == "__main__":
    work(0, 2)
'''
PATCH = """\
Finishes XLA601 (a forking xmp.spawn of a lambda, which the engine leaves) by calling the worker once,
and drops the import it kept.
--- a/main.py
+++ b/main.py
@@ -3 +2,0 @@
-import torch_xla.distributed.xla_multiprocessing as xmp
@@ -11 +10 @@
-    xmp.spawn(lambda i, s: work(i, s), args=(2,), start_method="fork")
+    work(0, 2)
"""


def _case(root: Path, patch: str, main: str = LEGACY) -> Path:
    root.mkdir()
    (root / "main.py").write_text(main)
    (root / "expected.json").write_text(json.dumps({"value": 2}))
    (root / "hand.patch").write_text(patch)
    return root


def test_hand_step_applies_over_the_engine_output(tmp_path: Path) -> None:
    (o,) = verify_paths([_case(tmp_path / "spawn", PATCH)], Options(unsafe_fixes=True, timeout=60))
    assert o.status == "pass", o.reasons
    assert o.migration is not None and o.migration.exit_code == 1 and o.migration.findings == 2
    assert o.hand_step and o.migration_source == "engine + hand.patch"
    assert o.notes == ["the engine left 2 finding(s); applied the documented hand step hand.patch over its output"]
    assert o.entry_source == FINISHED
    assert o.comparison is not None and o.comparison.ok and o.comparison.leaves == 1
    assert summary([o]) == {"passed": 0, "passed_after_hand_step": 1, "failed": 0, "skipped": 0}


@pytest.mark.parametrize(("patch", "main", "reason"), [
    # A hunk that also "corrects" a line the engine left no finding on (line 7).
    (PATCH.replace("@@ -11 +10 @@", "@@ -7,5 +6,5 @@\n-    print(json.dumps({\"value\": index + scale}))\n"
                   "+    print(json.dumps({\"value\": 2}))\n \n \n if __name__ == \"__main__\":"),
     LEGACY, "changes line(s) 7 of the engine's output, where the engine left no finding"),
    # The program (so the engine's output) changed under the patch.
    (PATCH, LEGACY.replace("args=(2,)", "args=(3,)"), "hunk 2 (@@ -11) no longer applies"),
    # The engine leaves nothing to finish: the hand step must not run anyway.
    (PATCH, FINISHED, "the engine left no finding, so hand.patch has nothing to finish: delete it"),
])
def test_a_hand_step_that_does_not_fit_is_an_error(tmp_path: Path, patch: str, main: str, reason: str) -> None:
    (o,) = verify_paths([_case(tmp_path / "spawn", patch, main)], Options(unsafe_fixes=True, timeout=60))
    assert o.status == "error"
    assert len(o.reasons) == 1 and o.reasons[0].startswith("the hand step hand.patch failed: ")
    assert reason in o.reasons[0]
    assert o.migrated is None and o.entry_source is None  # nothing ran
    assert not o.hand_step

"""A rule whose rewrite does not parse must never reach the disk.

The catalogue is data, so a template bug is one edit away: here XLA401's replacement
becomes the statement template `{optimizer} = None`, which LibCST builds for any argument
but CPython rejects when the argument is a call (`make() = None`). The engine's last
check before writing (engine.py: every generated part must parse) has to turn that into
an internal error naming the file, exit 2, and leave the file's bytes as they were.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from xla2tpu.catalogue import rules as catalogue
from xla2tpu.cli import EXIT_ERROR

# CRLF endings, a comment and a trailing space: bytes a rewrite of the text would not keep.
# A one-process program (its `__main__` block), where XLA401 is a safe fix.
BROKEN_SITE = (
    b"import torch_xla.core.xla_model as xm  # legacy\r\n"
    b"\r\n"
    b"def train(make):\r\n"
    b"    xm.optimizer_step(make()) \r\n"
    b"\r\n"
    b"if __name__ == \"__main__\":\r\n"
    b"    train(list)\r\n"
)

# Runs the real CLI in its own process, with the catalogue read from the folder in argv[1].
_DRIVER = (
    "import sys\n"
    "from pathlib import Path\n"
    "from xla2tpu.catalogue import rules as catalogue\n"
    "catalogue.rules_dir = lambda: Path(sys.argv[1])\n"
    "from xla2tpu.cli import main\n"
    "main(sys.argv[2:], prog_name='xla2tpu')\n"
)


def _broken_catalogue(folder: Path) -> Path:
    """A copy of rules/ in which XLA401 emits an assignment to its argument."""
    rules = folder / "rules"
    shutil.copytree(catalogue.rules_dir(), rules)
    training = rules / "training.toml"
    text = training.read_text(encoding="utf-8")
    broken = text.replace('replace = "{optimizer}.step()"', 'replace = "{optimizer} = None"')
    assert broken != text, "XLA401's template moved: point this test at its new spelling"
    training.write_text(broken, encoding="utf-8")
    return rules


@pytest.fixture
def broken_rules(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The broken catalogue, loaded in place of the real one for this test only."""
    rules = _broken_catalogue(tmp_path_factory.mktemp("catalogue"))
    catalogue.load.cache_clear()
    monkeypatch.setattr(catalogue, "rules_dir", lambda: rules)
    yield rules
    catalogue.load.cache_clear()  # the next load() reads the real rules/ again


def _assert_reported_and_untouched(output: str, targets: list[Path]) -> None:
    for target in targets:
        assert f"{target.name}: error: internal error, please report it" in output, output
        assert target.read_bytes() == BROKEN_SITE
    assert output.count("AssertionError: the rewrite does not parse") == len(targets), output
    folder = targets[0].parent
    assert sorted(folder.iterdir()) == sorted(targets)  # no temporary file left behind


@pytest.mark.parametrize("files", [1, 20])  # in this process, and in a pool of workers (forked)
def test_fix_in_process_reports_an_internal_error_and_writes_nothing(
    invoke, tmp_path: Path, broken_rules: Path, files: int
) -> None:
    targets = [tmp_path / f"train{number:02d}.py" for number in range(files)]
    for target in targets:  # the same broken site in each: every worker meets the bug
        target.write_bytes(BROKEN_SITE)
    result = invoke("fix", "--no-cache", "-j", "2", ".")
    assert result.exit_code == EXIT_ERROR
    _assert_reported_and_untouched(result.output, targets)


def test_fix_as_a_command_reports_an_internal_error_and_writes_nothing(tmp_path: Path, broken_rules: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    target = work / "train.py"
    target.write_bytes(BROKEN_SITE)
    process = subprocess.run(
        [sys.executable, "-c", _DRIVER, str(broken_rules), "fix", "--no-cache", "train.py"],
        cwd=work, capture_output=True, text=True, timeout=300,
    )
    assert process.returncode == EXIT_ERROR, process.stderr
    _assert_reported_and_untouched(process.stderr, [target])
    assert "Traceback" not in process.stderr.split("internal error", 1)[0]  # the run itself did not crash


def test_the_same_rule_still_fixes_a_site_it_renders_validly(invoke, tmp_path: Path, broken_rules: Path) -> None:
    # Proof that the broken catalogue is the one in use: on a plain name the template parses.
    target = tmp_path / "train.py"
    main = '\nif __name__ == "__main__":\n    train(None)\n'
    target.write_text("import torch_xla.core.xla_model as xm\n\ndef train(opt):\n    xm.optimizer_step(opt)\n" + main)
    assert invoke("fix", "--no-cache", "train.py").exit_code == 0
    assert target.read_text() == "def train(opt):\n    opt = None\n" + main

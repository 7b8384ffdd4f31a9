"""Facts a file's location shows: the modules of its folder that import it, and the results
cache keyed by them (the same bytes imported by another vendor's scripts are that vendor's
code)."""

from __future__ import annotations

from pathlib import Path

import pytest

from xla2tpu.catalogue import rules as catalogue_mod
from xla2tpu.project import facts
from xla2tpu.run.cache import Cache
from xla2tpu.run.config import Config
from xla2tpu.run.workflow import run, settings_for

HELPER = "import torch_xla\n\n\ndef to_device(model):\n    return model.to(torch_xla.device())\n"
TT_SCRIPT = 'import torch_xla.runtime as xr\nfrom utils import to_device\n\nxr.set_device_type("TT")\n'
TPU_SCRIPT = 'import os\n\nimport utils\n\nos.environ["PJRT_DEVICE"] = "TPU"\n'


def _codes(root: Path, cache: Cache | None = None) -> dict[str, list[str]]:
    config = Config(root=root)
    catalogue = catalogue_mod.load()
    outcome = run([root], config, catalogue, settings_for(config, catalogue, False), jobs=1, cache=cache)
    return {Path(r.path).relative_to(root).as_posix(): [d.code for d in r.diagnostics] for r in outcome.results}


def test_a_helper_beside_another_vendors_script_is_not_rewritten(tmp_path: Path) -> None:
    (tmp_path / "utils.py").write_text(HELPER)
    (tmp_path / "test_tt.py").write_text(TT_SCRIPT)
    found = _codes(tmp_path)
    assert found["utils.py"] == ["XLA100"]


def test_a_script_that_does_not_import_it_says_nothing(tmp_path: Path) -> None:
    (tmp_path / "utils.py").write_text(HELPER)
    (tmp_path / "test_tt.py").write_text(TT_SCRIPT.replace("from utils import to_device\n", ""))
    assert "XLA101" in _codes(tmp_path)["utils.py"]


def test_an_importer_that_shows_tpu_says_nothing(tmp_path: Path) -> None:
    (tmp_path / "utils.py").write_text(HELPER)
    (tmp_path / "test_tt.py").write_text(TT_SCRIPT)
    (tmp_path / "test_tpu.py").write_text(TPU_SCRIPT)
    assert "XLA101" in _codes(tmp_path)["utils.py"]


def test_the_cache_sees_the_folder(tmp_path: Path) -> None:
    plain, vendor = tmp_path / "plain", tmp_path / "vendor"
    plain.mkdir()
    vendor.mkdir()
    (plain / "utils.py").write_text(HELPER)
    (vendor / "utils.py").write_text(HELPER)
    cache = Cache(tmp_path / "cache")
    assert "XLA101" in _codes(plain, cache)["utils.py"]
    (vendor / "test_tt.py").write_text(TT_SCRIPT)
    assert _codes(vendor, Cache(tmp_path / "cache"))["utils.py"] == ["XLA100"]
    # a neighbour edited afterwards is seen by the next (warm) run
    (vendor / "test_tt.py").write_text(TPU_SCRIPT)
    assert "XLA101" in _codes(vendor, Cache(tmp_path / "cache"))["utils.py"]


PROBE = "from transformers import is_torch_xla_available\n\nif is_torch_xla_available():\n    print('tpu')\n"


def _fixes(root: Path) -> dict[str, list[tuple[str, bool]]]:
    config = Config(root=root)
    catalogue = catalogue_mod.load()
    outcome = run([root], config, catalogue, settings_for(config, catalogue, True), jobs=1, cache=None)
    return {Path(r.path).relative_to(root).as_posix(): [(d.code, d.fixed) for d in r.diagnostics] for r in outcome.results}


def test_a_project_held_to_transformers_4_keeps_the_probe_manual(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "requirements.txt").write_text("torch\ntransformers==4.40.2  # the last with torch_xla\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text(PROBE)
    assert ("XLA005", False) in _fixes(tmp_path)["pkg/train.py"]


def test_a_checkout_of_transformers_4_is_held_to_it(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text("")
    (tmp_path / "src" / "transformers").mkdir(parents=True)
    (tmp_path / "src" / "transformers" / "__init__.py").write_text('__version__ = "4.40.0.dev0"\n')
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "run.py").write_text(PROBE)
    assert ("XLA005", False) in _fixes(tmp_path)["examples/run.py"]


def test_a_project_on_transformers_5_gets_the_fix(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\ndependencies = ["transformers>=5.22"]\n')
    (tmp_path / "train.py").write_text(PROBE)
    assert ("XLA005", True) in _fixes(tmp_path)["train.py"]


def _top_level_alternatives(pattern: bytes) -> list[bytes]:
    parts, depth, start = [], 0, 0
    for i, char in enumerate(pattern):
        if char == ord("("):
            depth += 1
        elif char == ord(")"):
            depth -= 1
        elif char == ord("|") and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
    return [*parts, pattern[start:]]


@pytest.mark.parametrize("alternative", _top_level_alternatives(facts._HARDWARE_MARKERS.pattern), ids=lambda a: a.decode())
def test_every_hardware_marker_holds_a_literal_the_fast_scan_looks_for(alternative: bytes) -> None:
    assert any(literal in alternative for literal in facts._MARKER_LITERALS)

"""`--shard K/N`: the shards partition the files, deterministically; their JSON and SARIF merge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import LEGACY
from xla2tpu.run.shard import Shard, ShardError


def _tree(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    for i in range(30):
        (tmp_path / "pkg" / f"m{i:02}.py").write_text(LEGACY)


def _files(output: str) -> set[str]:
    return {f["filename"] for f in json.loads(output)["findings"]}


def test_shards_partition_the_files(invoke, tmp_path: Path) -> None:
    _tree(tmp_path)
    everything = _files(invoke("check", "--output-format", "json", ".").stdout)
    parts = [_files(invoke("check", "--output-format", "json", "--shard", f"{k}/3", ".").stdout) for k in (1, 2, 3)]
    assert set().union(*parts) == everything and sum(map(len, parts)) == len(everything) == 30
    assert all(parts)  # 30 files over 3 shards: none is empty
    again = _files(invoke("check", "--output-format", "json", "--shard", "2/3", "pkg").stdout)
    assert again == parts[1]  # the same share from another starting folder


def test_shard_is_stable_across_roots(tmp_path: Path) -> None:
    shard = Shard.parse("1/4")
    a, b = tmp_path / "a", tmp_path / "b"
    picks = [shard.owns(a / "src" / f"f{i}.py", a) for i in range(50)]
    assert picks == [shard.owns(b / "src" / f"f{i}.py", b) for i in range(50)]
    assert 0 < sum(picks) < 50


@pytest.mark.parametrize("spec", ["0/3", "4/3", "1", "a/b", "1/0"])
def test_bad_shard_is_a_usage_error(invoke, tmp_path: Path, spec: str) -> None:
    with pytest.raises(ShardError):
        Shard.parse(spec)
    (tmp_path / "a.py").write_text("x = 1\n")
    result = invoke("check", "--shard", spec, "a.py")
    assert result.exit_code == 2 and "--shard" in result.output


def test_sarif_shards_merge_by_concatenating_results(invoke, tmp_path: Path) -> None:
    _tree(tmp_path)
    whole = json.loads(invoke("check", "--output-format", "sarif", ".").stdout)
    parts = [json.loads(invoke("check", "--output-format", "sarif", "--shard", f"{k}/2", ".").stdout) for k in (1, 2)]
    # docs/ci.md: jq -s '.[0].runs[0].results = [.[].runs[0].results[]] | .[0]'
    merged = parts[0]
    merged["runs"][0]["results"] = [r for p in parts for r in p["runs"][0]["results"]]
    key = lambda r: (r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"])  # noqa: E731
    assert sorted(merged["runs"][0]["results"], key=key) == sorted(whole["runs"][0]["results"], key=key)
    assert merged["runs"][0]["tool"] == whole["runs"][0]["tool"]

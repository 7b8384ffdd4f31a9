"""The migration report (`fix --report`): the plan and its ranking, Markdown to a file or
standard output, the job summary, the baseline, and the HTML page as a browser shows it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.png import pixels
from xla2tpu.catalogue import rules as catalogue_mod
from xla2tpu import cli
from xla2tpu.catalogue.diagnostics import Diagnostic, FileResult, FixClass
from xla2tpu.report import html, migration, plan as plan_mod

DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "report" / "demo"
TITLE = "# torch_xla → TorchTPU migration report\n"


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    """A copy of the fixture repository, as the working directory of `invoke`, with a file
    that does not parse (written here: the suite reads every fixture as Python)."""
    shutil.copytree(DEMO, tmp_path, dirs_exist_ok=True)
    (tmp_path / "tools" / "broken.py").write_text("import torch_xla.core.xla_model as xm\n\ndef broken(:\n    xm.mark_step()\n")
    return tmp_path


def _d(code: str, fix: FixClass = FixClass.MANUAL, fixed: bool = False, because: str = "") -> Diagnostic:
    return Diagnostic(1, 1, code, f"{code} message" + (f" [because {because}]" if because else ""), fix, fixed)


def _result(path: str, *diagnostics: Diagnostic, new: bytes | None = b"import torch\n") -> FileResult:
    return FileResult(path, list(diagnostics), new_source=new)


def test_blockers_are_ranked_by_files_then_programs_with_imports_attributed_to_their_uses() -> None:
    main = b'import torch_xla\n\nif __name__ == "__main__":\n    pass\n'
    results = [
        # Only the import left: the use that keeps it is code no rule names.
        _result("b/m3.py", _d("XLA001"), new=b"import torch_xla\nX = torch_xla\n"),
        # XLA601 keeps torch_xla in a program: the import (XLA001) is its, not a blocker of its own.
        # Its XLA606 is manual only because of the launch (the fact its message names).
        _result("a/p1.py", _d("XLA601"), _d("XLA606", because="processes=spawn (line 3 `xmp.spawn(f)`)"), _d("XLA001"),
                _d("XLA101", FixClass.SAFE, fixed=True), new=main),
        _result("a/m1.py", _d("XLA932", because="hardware=tpu"), _d("XLA001"), new=b"import torch_xla.debug.metrics\n"),
        _result("b/m2.py", _d("XLA932"), _d("XLA202", FixClass.UNSAFE)),  # an unsafe fix not applied
        _result("b/p2.py", _d("XLA202", FixClass.UNSAFE), new=main),
        _result("b/done.py", _d("XLA101", FixClass.SAFE, fixed=True)),
        # A torch_xla import left with no finding at all counts under XLA001.
        _result("c/m4.py", _d("XLA101", FixClass.SAFE, fixed=True), new=b"from torch_xla import runtime\n"),
        FileResult("c/bad.py", error="syntax error at 1:1"),
    ]
    written = {r.path for r in results if r.new_source is not None}
    plan = plan_mod.build(results, 20, written, catalogue_mod.load(), dry_run=False)
    ranked = [(b.code, len(b.files), len(b.programs), b.only, b.fixes, b.findings) for b in plan.blockers]
    assert ranked == [
        ("XLA202", 2, 1, 1, ("unsafe",), 2),  # as many files as XLA932 and XLA001, more programs
        ("XLA001", 2, 0, 2, ("manual",), 1),  # m3's finding; the imports p1 and m1 keep are their uses'
        ("XLA932", 2, 0, 1, ("manual",), 2),
        ("XLA601", 1, 1, 0, ("manual",), 1),
        ("XLA606", 1, 1, 0, ("manual",), 1),
    ]
    assert plan.blockers[1].files == ("b/m3.py", "c/m4.py")
    assert plan.blockers[1].guidance.startswith("kept for a use no rule names")
    f = plan.figures
    assert (f.with_idioms, f.fully_migrated, f.no_import_left, f.programs, f.programs_running, f.unreadable) == (7, 1, 2, 2, 0, 1)
    assert (f.rewritten, f.left_for_a_human, f.files_scanned) == (3, 9, 20)
    assert [(x.path, x.files, x.migrated, x.blocked, x.unreadable) for x in plan.folders] == [
        ("a", 2, 0, 2, 0), ("b", 4, 1, 3, 0), ("c", 2, 0, 1, 1)]
    assert [x.path for x in plan.unreadable] == ["c/bad.py"]
    assert [p.path for p in plan.programs] == ["b/p2.py", "a/p1.py"]  # neither runs; p2 has one blocker, p1 two
    assert plan.launch == plan_mod.Launch(("a/p1.py",), (("XLA606", 1),), 1)  # the launch is all p1 has left
    assert plan.launch.describe().startswith("The torch_xla launch holds back findings in 1 file (XLA606 in 1): ")
    assert plan.launch.describe().endswith("; in 1 of these files nothing else is left.")


def test_a_big_tree_rolls_its_folders_up_to_fit_the_first_screen() -> None:
    folders = [plan_mod.Folder(path, 1, 2, 0, 1) for path in (".", "src", "src/a", "src/a/x", "src/b", "test/unit")]
    assert plan_mod.roll_up(folders, 10) == tuple(folders)  # they fit: every folder its own row
    rolled = plan_mod.roll_up(folders, 4)  # src/a/x into src/a, then (5 rows > 4) src/* into src
    assert [(f.path, f.migrated, f.blocked, f.no_import_left) for f in rolled] == [
        (".", 1, 2, 1), ("src", 4, 8, 4), ("test", 1, 2, 1)]
    shared = [plan_mod.Folder(path, 1, 0, 0, 1) for path in ("/r/p/a", "/r/p/b/c", "/r/p/b/d")]
    assert [f.path for f in plan_mod.roll_up(shared, 1)] == ["/r/p/a", "/r/p/b"]  # below the folder all share


def test_markdown_plan_on_the_fixture_repository(invoke, demo: Path) -> None:
    result = invoke("fix", "--unsafe-fixes", "--report", "migration.md", ".")
    assert result.exit_code == 1
    report = (demo / "migration.md").read_text()
    plan, files = report.split("\n## Files\n")
    assert plan.startswith(TITLE)
    assert ("**3 of 8 files with torch_xla idioms fully migrated** by this fix · 3 with no torch_xla import left · "
            "**2 of 4 programs run on TorchTPU** after it") in plan
    assert "_Fully migrated: no torch_xla / Optimum TPU import left and nothing left for a human." in plan
    rows = [line for line in plan.split("## Blockers")[1].split("\n\n")[2].splitlines()[2:]]
    assert rows[0].startswith("| 1 | XLA932 `xla-metrics-counters` | 2 | 1 | 1 | manual | ")
    assert rows[1].startswith("| 2 | XLA601 `xla-spawn` | 1 | 0 | 1 | manual | ")
    assert "- **XLA932** (2): `tools/counters.py`, `train/train_metrics.py`" in plan
    assert "**The torch_xla launch holds back findings in 1 file (XLA606 in 1): " in plan
    assert "| `train` | 4 | 2 | 2 | 0 | 2 | ▓▓▓▓▓░░░░░ 50% |" in plan
    assert "| `tools` | 3 | 0 | 2 | 1 | 0 | ░░░░░░░░░░ 0% |" in plan
    assert "| `train/train_simple.py` | runs on TorchTPU after this fix | python train/train_simple.py (as before) |" in plan
    assert "| `train/train_metrics.py` | blocked by XLA932 | XLA932 (manual) at line 10:28; still imports torch_xla.debug.metrics" in plan
    assert "| `tools/broken.py` | syntax error" in plan.split("## Files that could not be read")[1]
    # The detail: one collapsed section per folder, every file in it.
    assert files.count("<details><summary><b>") == 3
    assert "<details><summary><b>lib</b>: 2 files, 1 fully migrated, 1 blocked</summary>" in files
    assert "### `lib/devices.py`: fully migrated" in files and "### `lib/sharding.py`: blocked by XLA107, XLA703, XLA708" in files


def test_the_plan_shows_the_top_blockers_first_and_the_rest_after_the_progress(invoke, demo: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(migration, "TOP_BLOCKERS", 2)
    report = invoke("fix", "--unsafe-fixes", "--report", "-", ".").stdout
    top = report.split("## Blockers\n")[1].split("\n## ")[0]
    assert top.count("\n| ") == 4 and "6 more below, under _All blockers_." in top  # header, rule line, 2 rows
    assert report.index("## Progress by folder") < report.index("## Programs") < report.index("## All blockers")
    rest = report.split("## All blockers\n")[1].split("\n## ")[0]
    assert "<details><summary>6 more blockers</summary>" in rest and "| 3 | XLA606 `world-size` | 1 | 0 | 1 | manual |" in rest


def test_report_to_stdout_sends_the_diff_and_findings_to_stderr(invoke, demo: Path) -> None:
    result = invoke("fix", "--diff", "--unsafe-fixes", "--report", "-", ".")
    assert result.exit_code == 1
    assert result.stdout.startswith(TITLE) and "\n## Files\n" in result.stdout
    assert "--- a/" not in result.stdout and "Would fix" not in result.stdout
    assert "--- a/train/train_simple.py" in result.stderr and "Would fix " in result.stderr
    assert not (demo / "train" / "train_simple.py").read_text().startswith("import torch\n\n")  # a dry run


def test_report_to_stdout_is_refused_where_it_cannot_work(invoke, demo: Path) -> None:
    both = invoke("fix", "--report", "-", "--report", "-", ".")
    assert both.exit_code == 2 and "`--report -` can be given once" in both.stderr
    stdin = invoke("fix", "--report", "-", "-", input="import torch_xla\n")
    assert stdin.exit_code == 2 and "cannot be combined with fixing standard input" in stdin.stderr
    alone = invoke("fix", "--baseline", "b.json", ".")
    assert alone.exit_code == 2 and "give --report too" in alone.stderr


def test_the_plan_goes_to_the_github_job_summary(invoke, demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = demo / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    invoke("fix", "--diff", "--unsafe-fixes", "--report", "migration.md", ".")
    text = summary.read_text()
    assert text.startswith("earlier step\n" + TITLE)  # appended, as GitHub's steps do
    assert "| 1 | XLA932 `xla-metrics-counters` | 2 |" in text and "## Progress by folder" in text
    assert "\n## Files\n" not in text  # the per-file detail stays in the report file
    # A plan over GitHub's limit loses its last sections, and says so.
    monkeypatch.setattr(cli, "SUMMARY_LIMIT", 2500)
    summary.write_text("")
    invoke("fix", "--diff", "--unsafe-fixes", "--report", "migration.md", ".")
    cut = summary.read_bytes()
    assert len(cut) <= 2500 and cut.decode().startswith(TITLE) and "did not fit in the job summary" in cut.decode()


def test_a_tree_with_nothing_to_migrate_gets_a_short_report(invoke, tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("import torch\n")
    result = invoke("fix", "--report", "-", "--report", "r.html", ".")
    assert result.exit_code == 0
    assert "**0 of 0 files with torch_xla idioms fully migrated**" in result.stdout and "Nothing blocks the migration" in result.stdout
    assert "## Files" not in result.stdout and "<h2>Files</h2>" not in (tmp_path / "r.html").read_text()


def test_no_job_summary_without_a_report(invoke, demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = demo / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    invoke("fix", "--diff", ".")
    assert not summary.exists()


def test_baseline_shows_files_newly_migrated_and_findings_gone_and_new(invoke, demo: Path) -> None:
    assert invoke("fix", "--diff", "--unsafe-fixes", "--report", "before.json", ".").exit_code == 1
    before = json.loads((demo / "before.json").read_text())
    assert before["kind"] == "xla2tpu-migration-report" and before["figures"]["fully_migrated"] == 3
    # Between the runs: the metrics counter goes by hand, sharding.py loses its torch_xla
    # code altogether, version.py is deleted, and devices.py gains a manual finding.
    metrics = demo / "train" / "train_metrics.py"
    metrics.write_text(metrics.read_text().replace('    print("compilations:", met.counter_value("UncachedCompile"))\n', ""))
    (demo / "lib" / "sharding.py").write_text("def shard(t):\n    return t\n")
    (demo / "tools" / "version.py").unlink()  # gone: neither migrated nor blocked, its findings gone
    devices = demo / "lib" / "devices.py"
    devices.write_text(devices.read_text() + "\n\ndef kinds():\n    return xm.get_xla_supported_devices()\n")
    result = invoke("fix", "--diff", "--unsafe-fixes", "--baseline", "before.json", "--report", "-", "--report", "after.json",
                    "--report", "after.html", ".")
    assert result.exit_code == 1
    since = result.stdout.split("## Since the baseline (`before.json`)")[1].split("\n## ")[0]
    assert "| Files fully migrated | 3 | 4 |" in since  # train_metrics.py and sharding.py (no idiom left) in, devices.py out
    assert "| Programs that run on TorchTPU after this fix | 2 | 3 |" in since  # train_metrics.py
    assert "_Now counts as fully migrated (and as running, the programs) the 1 file of the baseline with no torch_xla" in since
    assert "**Newly migrated (2):** `lib/sharding.py`, `train/train_metrics.py`" in since
    assert "**No longer fully migrated (1):** `lib/devices.py`" in since
    assert "**Findings gone: 8** (XLA001 ×4, XLA107 ×1, XLA703 ×1, XLA708 ×1, XLA932 ×1)" in since
    assert "- `tools/version.py`: XLA001 ×1" in since
    assert "- `train/train_metrics.py`: XLA001 ×1, XLA932 ×1" in since
    assert "**New findings: 2** (XLA001 ×1, XLA106 ×1)" in since and "- `lib/devices.py`: XLA001 ×1, XLA106 ×1" in since
    page = (demo / "after.html").read_text()
    assert "<b>Newly migrated (2):</b> <code>lib/sharding.py</code>, <code>train/train_metrics.py</code>" in page
    assert "<b>Findings gone: 8</b> (XLA001 ×4, XLA107 ×1, XLA703 ×1, XLA708 ×1, XLA932 ×1)" in page
    assert "<li><code>lib/devices.py</code>: XLA001 ×1, XLA106 ×1</li>" in page
    after = json.loads((demo / "after.json").read_text())
    assert after["delta"]["newly_migrated"] == ["lib/sharding.py", "train/train_metrics.py"]
    # The baseline may be the report being written: it is read before anything is written.
    invoke("fix", "--diff", "--unsafe-fixes", "--baseline", "after.json", "--report", "after.json", ".")
    again = json.loads((demo / "after.json").read_text())
    assert again["delta"]["baseline"] == "after.json" and again["delta"]["newly_migrated"] == []
    assert again["delta"]["figures"][0] == ["with_idioms", 6, 6] and again["delta"]["cleaned"] == 0


@pytest.mark.parametrize(("content", "message"), [
    (None, "b.json: cannot read the baseline: No such file or directory"),
    ("{not json", "b.json: the baseline is not valid JSON: "),
    ('{"findings": []}', "b.json: not a migration report: write one with `xla2tpu fix --report FILE.json`"),
    ('{"kind": "xla2tpu-migration-report", "format": 1, "figures": {}}', "b.json: a damaged migration report"),
    ('{"kind": "xla2tpu-migration-report", "format": 99}', "b.json: a migration report in format 99"),
])
def test_a_bad_baseline_is_named_and_stops_the_run(invoke, demo: Path, content: str | None, message: str) -> None:
    if content is not None:
        (demo / "b.json").write_text(content)
    result = invoke("fix", "--baseline", "b.json", "--report", "r.md", ".")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {message}") and "Traceback" not in result.stderr
    assert not (demo / "r.md").exists()  # refused before any work
    assert (demo / "train" / "train_simple.py").read_text() == (DEMO / "train" / "train_simple.py").read_text()


def test_html_is_self_contained_and_escapes_every_text(invoke, tmp_path: Path) -> None:
    odd = tmp_path / "a<b&c"
    odd.mkdir()
    (odd / "x<y>.py").write_text('import torch_xla.debug.metrics as met\n\nprint(met.counter_value("<&>"))\n')
    invoke("fix", "--report", "r.html", ".")
    page = (tmp_path / "r.html").read_text()
    assert "<code>a&lt;b&amp;c/x&lt;y&gt;.py</code>" in page and "<b>a&lt;b&amp;c</b>" in page
    assert "a<b" not in page and "x<y>" not in page
    assert "<script" not in page and "http://" not in page and "https://" not in page and "src=" not in page
    assert page.count("<svg") == 2  # the blocker chart and the folder's bar
    # The catalogue's `code` spans (in the rule summaries and messages) become <code>.
    assert "<code>met.counter_value</code> / <code>metric_data</code>" in page and "`" not in page


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        # A newcomer's machine may have no browser: README's test command stays green there.
        # CI installs Chromium and sets XLA2TPU_REQUIRE_BROWSER=1, so there the page must render.
        if os.environ.get("XLA2TPU_REQUIRE_BROWSER") == "1":
            pytest.fail("XLA2TPU_REQUIRE_BROWSER=1 but chromium is not installed (`apt-get install chromium`)")
        pytest.skip("chromium is not installed: the HTML report is not rendered in a browser "
                    "(`apt-get install chromium` to run this test)")
    return found


def _browse(browser: str, page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess:
    # No network here: the flags keep Chromium from reaching for one (the page needs none).
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={profile}", "--window-size=1280,900", *args, page.as_uri()]
    return subprocess.run(command, capture_output=True, timeout=120, check=False)


def test_html_report_renders_in_a_headless_browser(invoke, demo: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    browser = _chromium()
    invoke("fix", "--diff", "--unsafe-fixes", "--report", "migration.html", ".")
    page = demo / "migration.html"
    shot = tmp_path_factory.mktemp("shot") / "report.png"
    profile = tmp_path_factory.mktemp("profile")
    taken = _browse(browser, page, profile, f"--screenshot={shot}")
    assert taken.returncode == 0 and shot.exists(), taken.stderr.decode(errors="replace")[-2000:]
    width, height, image = pixels(shot.read_bytes())
    assert (width, height) == (1280, 900)
    assert sum(1 for p in image if p != (255, 255, 255)) > len(image) // 10, "the screenshot is (nearly) blank"
    assert len(set(image)) > 50  # text, bars and cards, not one flat colour
    colours = set(image)
    for name in ("ONLY", "BAR", "GREEN", "ORANGE"):  # the blocker chart and the folder bars were drawn
        hex_colour = getattr(html, name)
        assert tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)) in colours, f"no {name} pixel in the screenshot"
    dom = _browse(browser, page, profile, "--dump-dom")
    assert dom.returncode == 0, dom.stderr.decode(errors="replace")[-2000:]
    text = dom.stdout.decode()
    assert "XLA932 xla-metrics-counters" in text and "2 files · 1 only · 1 program" in text  # the chart's top bar
    assert "<code>train</code>" in text and "<code>tools</code>" in text  # the folders
    assert "3 / 8" in text and "files fully migrated" in text

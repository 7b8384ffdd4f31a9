"""`check` against `fix`, finding by finding, over the ecosystem corpus (issue 16).

    .venv/bin/python bench/check_equals_fix.py --corpus WORK

`check` asks for findings only, and answers most files on CPython's tree without making
the fixes (detect/after_fixes.py); `fix` makes them on LibCST's. For every file of the
corpus past the prefilter (all repositories, controls included, as extracted under
WORK/src by `bench/ecosystem.py run --work WORK`), in three modes (safe fixes, unsafe
fixes, the `compile` target), each finding must be the same: place, code, message, fix
class and whether it is applied, and the file's error. The ecosystem run compares what
`fix` does with the recorded run; this compares `check` with `fix`. Exit 1 on a difference.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import ecosystem_corpus
from detect_share import files_of
from xla2tpu.catalogue import rules as catalogue
from xla2tpu.run import engine
from xla2tpu.catalogue.diagnostics import FileResult, FixClass
from xla2tpu.catalogue.settings import Settings


def seen(result: FileResult) -> tuple:
    return [(d, d.fix, d.fixed, d.end_line, d.end_col) for d in result.diagnostics], result.error


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True, help="an ecosystem work folder")
    args = parser.parse_args()
    repos = ecosystem_corpus.load(Path(__file__).with_name("ecosystem.toml"))
    files = files_of([args.corpus / "src" / r.slug for r in repos if (args.corpus / "src" / r.slug).is_dir()])
    rules = frozenset(rule.code for rule in catalogue.load().rules)
    modes = {
        "safe": Settings(rules, frozenset({FixClass.SAFE}), "eager"),
        "unsafe": Settings(rules, frozenset({FixClass.SAFE, FixClass.UNSAFE}), "eager"),
        "compile": Settings(rules, frozenset({FixClass.SAFE}), "compile"),
    }
    differ = on_ast = 0
    for mode, settings in modes.items():
        for path, data in files:
            checked = engine.process_source(path, data, dataclasses.replace(settings, rewrite=False))
            on_ast += not checked.parsed
            if seen(checked) != seen(engine.process_source(path, data, settings)):
                differ += 1
                print(f"differs ({mode}): {path}")
    print(f"{len(files)} files x {len(modes)} modes: {differ} differ; {on_ast} checked without LibCST")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()

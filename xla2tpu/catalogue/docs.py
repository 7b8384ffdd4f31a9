"""Rule documentation: `xla2tpu explain`, and docs/rules/ generated from the catalogue.

`python -m xla2tpu.catalogue.docs` rewrites docs/rules/; `python -m xla2tpu.catalogue.docs --check` fails
when the pages are stale (the test suite runs it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from xla2tpu.catalogue import rules as catalogue_mod
from xla2tpu.catalogue.rules import Rule

_CLASS_WORDS = {
    "safe": "safe (applied by `xla2tpu fix`)",
    "unsafe": "unsafe (applied with `--unsafe-fixes`)",
    "manual": "manual (reported with guidance, never rewritten)",
}


def render_rule(rule: Rule, example: tuple[str, str] | None = None) -> str:
    classes = sorted({case.fix.value for case in rule.cases}, key=list(_CLASS_WORDS).index)
    lines = [
        f"# {rule.code} `{rule.name}`",
        "",
        rule.summary,
        "",
        f"- Fix: {'; '.join(_CLASS_WORDS[c] for c in classes)}, depending on the case",
        f"- Area: {rule.area}",
        f"- Reference: {', '.join(rule.ref)} in the torch_xla → TorchTPU mapping",
        "",
        rule.docs,
        "",
    ]
    if example is not None:
        before, after = example
        lines += ["## Fixture", "", "Before:", "", "```python", before.rstrip("\n"), "```", "",
                  "After `xla2tpu fix --unsafe-fixes`:", "", "```python", after.rstrip("\n"), "```", ""]
    return "\n".join(lines)


def _example(fixtures: Path, code: str) -> tuple[str, str] | None:
    """The rule's first fixture, smallest first: the shortest contract to read."""
    cases = sorted((fixtures / code).glob("*.py"), key=lambda p: (p.stat().st_size, p.name))
    for case in cases:
        if case.name.endswith(".fixed.py"):
            continue
        fixed = case.with_name(case.stem + ".fixed.py")
        text = case.read_text(encoding="utf-8")
        # A known-wrong case shows what the rule should do, not what it does yet.
        if fixed.exists() and not (text.startswith("# fixture:") and "--known-wrong" in text.split("\n", 1)[0]):
            return text, fixed.read_text(encoding="utf-8")
    return None


def render_all(fixtures: Path) -> dict[str, str]:
    """File name -> content for docs/rules/."""
    catalogue = catalogue_mod.load()
    pages = {f"{rule.code}.md": render_rule(rule, _example(fixtures, rule.code)) for rule in catalogue}
    index = ["# Rules", "", "Generated from `rules/*.toml` by `python -m xla2tpu.catalogue.docs`; do not edit.", "",
             "| code | name | fix | summary |", "|---|---|---|---|"]
    for rule in catalogue:
        index.append(f"| [{rule.code}]({rule.code}.md) | `{rule.name}` | {rule.best_fix.value} | {rule.summary} |")
    pages["README.md"] = "\n".join(index) + "\n"
    return pages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xla2tpu.catalogue.docs", description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if docs/rules/ is stale")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2])
    args = parser.parse_args(argv)
    out = args.root / "docs" / "rules"
    pages = render_all(args.root / "fixtures")
    existing = {p.name for p in out.glob("*.md")} if out.is_dir() else set()
    stale = sorted(
        name for name, content in pages.items()
        if not (out / name).exists() or (out / name).read_text(encoding="utf-8") != content
    ) + sorted(existing - set(pages))
    if args.check:
        if stale:
            print(f"docs/rules is stale ({', '.join(stale)}): run `python -m xla2tpu.catalogue.docs`", file=sys.stderr)
            return 1
        return 0
    out.mkdir(parents=True, exist_ok=True)
    for name in existing - set(pages):
        (out / name).unlink()
    for name, content in pages.items():
        (out / name).write_text(content, encoding="utf-8")
    print(f"wrote {len(pages)} pages to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

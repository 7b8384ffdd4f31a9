"""docs/rules/ is generated from the catalogue and must not be stale."""

from __future__ import annotations

from xla2tpu.catalogue import docs


def test_rule_docs_are_current() -> None:
    assert docs.main(["--check"]) == 0, "run `python -m xla2tpu.catalogue.docs` and commit docs/rules/"


def test_every_rule_documents_its_fix_safety() -> None:
    from xla2tpu.catalogue import rules as catalogue

    for rule in catalogue.load():
        assert "## Fix safety" in rule.docs, rule.code
        assert "## What it does" in rule.docs, rule.code

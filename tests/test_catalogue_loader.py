"""The rule loader itself, on small hand-written catalogues: each TOML field lands in its
typed field, the defaults are the documented ones, every malformed rule is refused with
its own message, and rule selection by prefix."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from xla2tpu.catalogue import rules as catalogue
from xla2tpu.catalogue.rules import Case, CatalogueError, Condition, Rule, Site
from xla2tpu.catalogue.diagnostics import FixClass

FULL = r'''
module_renames = { "torch_xla.old" = "torch_xla.new" }

[[rule]]
code = "XLA901"
name = "full-rule"
kind = "string-arg"
summary = "Summary."
docs = """
  Docs.
"""
ref = ["a", "b"]
params = ["device"]
pattern = 'xla(:\d+)?'
when = ["file-contains:torch_xla"]
assignments = true
disable = ["XLA1"]
message = "rule message"
fix = "unsafe"

[[rule.site]]
call = ["torch.device"]
position = 0

[[rule.site]]
method = "to"
keyword = "device"

[[rule.case]]
when = ['literal:device="a=b"', "not-absent:device", "value:cpu", "value:3"]
fix = "safe"
message = "case message"
replace = '"tpu"'

[[rule.case]]
action = "none"
fix = "manual"

[[rule]]
code = "XLA902"
name = "minimal"
kind = "call"
summary = "S."
docs = "D."
ref = "only-one"
match = ["torch_xla.f"]
message = "m"

[[rule]]
code = "XLA903"
name = "implied-actions"
kind = "expression"
summary = "S."
docs = "D."
fix = "safe"
message = "m"

[[rule.case]]
match = ["a({x})", "b({x})"]
rename = "torch.x"

[[rule.case]]
match = ["b({x})"]
transform = "t"

[[rule.case]]
replace = "r"
'''


def _load(tmp_path: Path, text: str) -> catalogue.Catalogue:
    (tmp_path / "sample.toml").write_text(text, encoding="utf-8")
    return catalogue.load(tmp_path)


def test_every_field_is_read(tmp_path: Path) -> None:
    loaded = _load(tmp_path, FULL)
    assert loaded.module_renames == {"torch_xla.old": "torch_xla.new"}
    full, minimal, implied = loaded.rules
    assert full == Rule(
        code="XLA901", name="full-rule", kind="string-arg", area="sample", summary="Summary.", docs="Docs.",
        ref=("a", "b"), match=(), params=("device",),
        cases=(
            Case(
                when=(Condition("literal", "device", "a=b"), Condition("not-absent", "device"),
                      Condition("value", "", "cpu"), Condition("value", "", 3)),
                fix=FixClass.SAFE, message="case message", action="replace", template='"tpu"',
            ),
            Case(when=(), fix=FixClass.MANUAL, message="rule message", action="none"),
        ),
        sites=(Site(calls=("torch.device",), position=0), Site(method="to", keyword="device")),
        pattern=re.compile(r"xla(:\d+)?"),
        when=(Condition("file-contains", "torch_xla"),),
        assignments=True,
        disable=("XLA1",),
    )
    # Defaults: one catch-all manual case with the rule's message, a string `ref` is one ref.
    assert minimal == Rule(
        code="XLA902", name="minimal", kind="call", area="sample", summary="S.", docs="D.",
        ref=("only-one",), match=("torch_xla.f",), params=(),
        cases=(Case(when=(), fix=FixClass.MANUAL, message="m", action="none"),),
    )
    # The action follows from the key that carries the template; an expression rule's
    # patterns are its cases' when it lists none, each once.
    assert [(case.action, case.template, case.fix) for case in implied.cases] == [
        ("rename", "torch.x", FixClass.SAFE), ("transform", "t", FixClass.SAFE), ("replace", "r", FixClass.SAFE),
    ]
    assert implied.match == ("a({x})", "b({x})")
    assert [case.forms for case in implied.cases] == [("a({x})", "b({x})"), ("b({x})",), ()]


def test_an_unknown_condition_is_refused() -> None:
    with pytest.raises(CatalogueError) as raised:
        Condition.parse("bogus:x")
    assert str(raised.value) == "unknown condition 'bogus:x'"


def test_a_missing_field_names_the_file_and_the_rule(tmp_path: Path) -> None:
    with pytest.raises(CatalogueError) as raised:
        _load(tmp_path, '[[rule]]\ncode = "XLA901"\nname = "n"\nkind = "call"\ndocs = "d"\n')
    assert str(raised.value) == "sample.toml: rule XLA901: KeyError('summary')"


def _rule(code: str = "XLA901", body: str = 'kind = "call"\nmatch = ["f"]\n') -> str:
    return f'[[rule]]\ncode = "{code}"\nname = "n"\nsummary = "s"\ndocs = "d"\nmessage = "m"\nparams = ["p"]\n{body}'


_CALL = 'kind = "call"\nmatch = ["f"]\n'
_CASE = "[[rule.case]]\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_rule(code="XLA91"), "rule XLA91: code must look like XLA123"),
        (_rule() + _rule(), "rule XLA901: duplicate code"),
        (_rule(body='kind = "bogus"\n'), "rule XLA901: unknown kind 'bogus'"),
        (_rule(body=_CALL + _CASE + 'when = ["statement"]\n'),
         "rule XLA901: the last case must have no conditions (catch-all)"),
        (_rule(body=_CALL + _CASE + 'match = ["f"]\n'),
         "rule XLA901: the last case must have no conditions (catch-all)"),
        (_rule(body=_CALL + _CASE + 'action = "explode"\n'), "rule XLA901: unknown action 'explode'"),
        (_rule(body=_CALL + _CASE + 'message = ""\n'), "rule XLA901: a case has no message"),
        (_rule().replace('message = "m"\n', ""), "rule XLA901: a case has no message"),  # nor the rule
        (_rule(body=_CALL + _CASE + 'replace = "x"\n'), "rule XLA901: a manual case cannot carry a fix"),
        (_rule(body=_CALL + _CASE + 'fix = "unsafe"\n'), "rule XLA901: a unsafe case needs an action"),
        *(
            (_rule(body=_CALL + _CASE + f'when = ["{kind}:q"]\n' + _CASE),
             "rule XLA901: condition on unknown parameter 'q'")
            for kind in ("absent", "present", "literal", "falsy", "simple", "not-absent", "not-simple")
        ),
        (_rule(body='kind = "string-arg"\npattern = "x"\n'), "rule XLA901: a string-arg rule needs sites"),
        (_rule(body='kind = "lint"\nmatch = ["a", "b"]\n'),
         "rule XLA901: a lint rule names one analysis in `match` and only reports"),
        (_rule(body='kind = "lint"\nmatch = ["a"]\n' + _CASE + 'fix = "safe"\nreplace = "x"\n'),
         "rule XLA901: a lint rule names one analysis in `match` and only reports"),
        *(
            (_rule(body=f'kind = "{kind}"\n'), "rule XLA901: needs `match`")
            for kind in ("call", "reference", "import", "env", "expression")
        ),
        (_rule(body='kind = "file"\n'), "rule XLA901: a file rule needs `pattern` or a `fact:` condition in its `when`"),
        (_rule(body='kind = "expression"\nmatch = ["a"]\n' + _CASE + 'match = ["b"]\n' + _CASE),
         "rule XLA901: a case matches a form the rule does not list"),
    ],
)
def test_a_malformed_rule_is_refused_with_its_reason(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(CatalogueError) as raised:
        _load(tmp_path, text)
    assert str(raised.value) == message


def test_rules_that_need_no_match_load(tmp_path: Path) -> None:
    # The counterparts of the refusals above: what each check lets through.
    text = (_rule("XLA901", 'kind = "string-arg"\npattern = "x"\n[[rule.site]]\nposition = 0\n')
            + _rule("XLA902", 'kind = "file"\npattern = "x"\n')
            + _rule("XLA903", 'kind = "lint"\nmatch = ["a"]\n')
            + _rule("XLA904", _CALL + _CASE + 'when = ["not-present:p", "simple:p"]\n' + _CASE))
    assert [rule.code for rule in _load(tmp_path, text)] == ["XLA901", "XLA902", "XLA903", "XLA904"]


def test_selection_by_prefix(tmp_path: Path) -> None:
    loaded = _load(tmp_path, _rule("XLA101") + _rule("XLA102") + _rule("XLA201"))
    assert loaded.select(["ALL"], []) == {"XLA101", "XLA102", "XLA201"}
    assert loaded.select(["XLA1"], []) == {"XLA101", "XLA102"}
    assert loaded.select(["XLA"], ["XLA102"]) == {"XLA101", "XLA201"}
    assert loaded.select(["XLA101", "XLA2"], ["ALL"]) == frozenset()
    assert loaded.unknown_selectors(["XLA1", "XLA3", "ALL", "XLA10", "xla1"]) == ["XLA3", "xla1"]
    assert list(loaded) == list(loaded.rules)

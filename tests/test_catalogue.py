"""The rule data itself: reachable past the prefilter, templates that parse, no forbidden names."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
import re._parser as sre_parse  # the stdlib's regex parser, to build a string a pattern matches

import libcst as cst
import pytest

from tests import reference_rows
from xla2tpu.catalogue import rules as catalogue, template_text, templates
from xla2tpu.sources import prefilter
from xla2tpu.project.canonical import PROJECT
from xla2tpu.catalogue.rules import Condition, Rule
from xla2tpu.sources.prefilter import may_hold_idiom
from xla2tpu.catalogue.patterns import compile_pattern
from xla2tpu.rewrite.transforms import REGISTRY

RULES = catalogue.load().rules

# torch.tpu names that raise (or are deprecated, or exist only after device init) when user
# code uses them; from `never_emit` in ../shared/reference/torch_xla_api_map.toml.
NEVER_EMIT = {
    "torch.tpu.synchronize", "torch.tpu.device_count", "torch.tpu.is_available",
    "torch.tpu.current_device", "torch.tpu.set_device", "torch.tpu.device",
    "torch.tpu.current_stream", "torch.tpu.set_stream",
    "torch.tpu.get_rng_state", "torch.tpu.initial_seed",
    "torch.tpu.topology_aware_mesh",
}  # fmt: skip
# Methods generated only when the TPU device initialises (`t.is_tpu`, `t.tpu()`, `m.tpu()`).
GENERATED_METHODS = re.compile(r"\.is_tpu\b|\.tpu\(")
TPU_NAME = re.compile(r"\btorch\.tpu(?:\.\w+)+")


def _ids(rules: tuple[Rule, ...] | list[Rule]) -> list[str]:
    return [rule.code for rule in rules]


def _examples(pattern: str) -> list[str]:
    """One shortest string per alternative of `pattern`, so every branch gets checked."""

    def walk(items) -> list[str]:  # type: ignore[no-untyped-def]
        outs = [""]
        for op, arg in items:
            name = str(op)
            if name == "LITERAL":
                pieces = [chr(arg)]
            elif name == "SUBPATTERN":
                pieces = walk(arg[3])
            elif name == "BRANCH":
                pieces = [s for branch in arg[1] for s in walk(branch)]
            elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                low, _high, inner = arg
                pieces = [s * low for s in walk(inner)] if low else [""]
            elif name == "IN":
                first_op, first_arg = arg[0]
                if str(first_op) == "LITERAL":
                    pieces = [chr(first_arg)]
                else:  # a class: a space for `\s`, so `import\s+torch_xla` reads as it would be written
                    pieces = [" " if str(first_arg) == "CATEGORY_SPACE" else "a"]
            elif name == "AT":
                pieces = [""]
            else:  # ANY, categories: any character the pattern accepts there
                pieces = ["a"]
            outs = [o + p for o in outs for p in pieces]
        return outs

    return walk(sre_parse.parse(pattern))


def _gate_texts(rule: Rule) -> list[str]:
    """Texts one of which every file the rule fires in holds, by the rule's own `when`;
    empty for a rule with no such condition.

    `file-contains:T` needs T; `file-matches:R` one of R's alternatives; `literal:P=V` and
    `value:V` the string V written in the file, with either quote; `any:A || B` one of the
    texts of A or of B, when each has some.
    """
    for condition in rule.when:
        texts = _condition_texts(condition)
        if texts:
            return texts
    return []


def _condition_texts(condition: Condition) -> list[str]:
    if condition.kind == "file-contains":
        return [condition.arg]
    if condition.kind == "file-matches":
        return _examples(condition.arg)
    if condition.kind in ("literal", "value") and isinstance(condition.value, str):
        return [f'"{condition.value}"', f"'{condition.value}'"]
    if condition.kind == "any":
        alternatives = [_condition_texts(inner) for inner in condition.value]  # type: ignore[union-attr]
        return [text for texts in alternatives for text in texts] if all(alternatives) else []
    return []


def _reachable(text: str) -> bool:
    return may_hold_idiom(text.encode())


def _hidden_forms(rule: Rule) -> list[str]:
    """What the rule matches that a file could hold with no byte the prefilter looks for."""
    if rule.kind == "string-arg":
        assert rule.pattern is not None
        examples = _examples(rule.pattern.pattern)
        return [e for e in examples if not (_reachable(f'"{e}"') or _reachable(f"'{e}'"))]
    # `{slot}`s of expression patterns stand for arbitrary code: only the literal part counts.
    return [name for name in rule.match
            if not name.startswith(PROJECT) and not _reachable(re.sub(r"\{\w+\}", "", name.removesuffix(".*")))]


# File and lint rules are exempt: they judge files that are being migrated (a file rule
# changes what the other rules do, a lint reports a pattern of plain PyTorch that costs
# more once torch_xla's graph cuts are gone), so a file without any idiom has nothing
# for them to say. So are the names of the project's own probes (`xla2tpu.project.*`) and
# project rules: the project model has the engine read every file that imports one, token
# or not (tests/test_projects.py).
SITE_RULES = [r for r in RULES if r.kind not in ("file", "lint", "project")
              and not all(name.startswith(PROJECT) for name in r.match)]
GATED = [r for r in SITE_RULES if _gate_texts(r)]
UNGATED = [r for r in SITE_RULES if not _gate_texts(r)]


@pytest.mark.parametrize("rule", UNGATED, ids=_ids(UNGATED))
def test_prefilter_never_hides_an_idiom(rule: Rule) -> None:
    """Whatever a rule matches contains bytes the engine's prefilter looks for."""
    assert _hidden_forms(rule) == [], f"{rule.code}: the prefilter would skip a file whose only idiom is one of these"


@pytest.mark.parametrize("rule", GATED, ids=_ids(GATED))
def test_prefilter_never_hides_a_gated_idiom(rule: Rule) -> None:
    """A rule that fires only in files holding some text (`torch._dynamo.mark_dynamic` only
    next to a torch_xla import) is reachable when the prefilter looks for every such text,
    or else for whatever the rule matches."""
    unread = [text for text in _gate_texts(rule) if not _reachable(text)]
    assert unread == [] or _hidden_forms(rule) == [], f"{rule.code}: the prefilter reads neither {unread} nor {_hidden_forms(rule)}"


def test_the_prefilter_checks_can_fail() -> None:
    [rule] = [r for r in GATED if r.code == "XLA310"]  # `torch._dynamo.mark_dynamic`
    assert _hidden_forms(rule) == ["torch._dynamo.mark_dynamic"]  # only the gate makes it reachable
    assert _gate_texts(dataclasses.replace(rule, when=(Condition.parse("file-contains:mark_dynamic"),))) == ["mark_dynamic"]
    assert not _reachable("mark_dynamic")
    assert _gate_texts(rule) and all(_reachable(text) for text in _gate_texts(rule))


def test_example_builder_covers_every_branch() -> None:
    assert _examples(r"torch_xla(\.[\w.]+)?|torch-xla") == ["torch_xla", "torch-xla"]
    assert _examples(r"xla(:\d+)?") == ["xla"]


CASES = [(rule, case) for rule in RULES for case in rule.cases]
CASE_IDS = [f"{rule.code}-{i}" for rule in RULES for i, _ in enumerate(rule.cases)]


@pytest.mark.parametrize(("rule", "case"), CASES, ids=CASE_IDS)
def test_every_action_is_well_formed(rule: Rule, case: catalogue.Case) -> None:
    assert case.message.strip(), f"{rule.code}: a case has an empty message"
    if case.action == "replace":
        template_text.is_statement(case.template)  # raises when neither an expression nor a statement
        slots = template_text.required(case.template)
        allowed = set(rule.params) | ({"name"} if rule.kind == "reference" else set())
        allowed |= _pattern_slots(rule) if rule.kind == "expression" else set()
        assert slots <= allowed, f"{rule.code}: template slots {slots - allowed} are bound by nothing"
    elif case.action == "rename":
        assert isinstance(cst.parse_expression(case.template), (cst.Name, cst.Attribute)), rule.code
    elif case.action == "transform":
        assert case.template in REGISTRY, f"{rule.code}: unknown transform {case.template!r}"


def _pattern_slots(rule: Rule) -> set[str]:
    return {slot for text in rule.match for slot in re.findall(r"\{(\w+)\}", text)}


@pytest.mark.parametrize("rule", [r for r in RULES if r.kind == "expression"], ids=_ids([r for r in RULES if r.kind == "expression"]))
def test_expression_patterns_parse(rule: Rule) -> None:
    for text in rule.match:
        compile_pattern(text)


# Cases whose fix writes code from a template; transforms write theirs from Python (below).
EMITTING = [(pair, name) for pair, name in zip(CASES, CASE_IDS) if pair[1].action in ("replace", "rename")]
TRANSFORM_MODULES = sorted((Path(templates.__file__).parents[1] / "rewrite" / "transforms").glob("*.py"))


@pytest.mark.parametrize(("rule", "case"), [pair for pair, _ in EMITTING], ids=[name for _, name in EMITTING])
def test_no_fix_emits_a_forbidden_name(rule: Rule, case: catalogue.Case) -> None:
    _assert_emits_no_forbidden_name(rule.code, case.template)


@pytest.mark.parametrize("module", TRANSFORM_MODULES, ids=[path.stem for path in TRANSFORM_MODULES])
def test_no_transform_emits_a_forbidden_name(module: Path) -> None:
    # Transforms spell what they emit as strings in their module (templates, qualified names).
    _assert_emits_no_forbidden_name(module.name, module.read_text(encoding="utf-8"))


def _assert_emits_no_forbidden_name(where: str, code: str) -> None:
    emitted = set(TPU_NAME.findall(code))
    assert not emitted & NEVER_EMIT, f"{where} emits {emitted & NEVER_EMIT}: use torch.accelerator"
    assert not GENERATED_METHODS.search(code), f"{where} emits `.is_tpu` / `.tpu()`"


def test_the_forbidden_name_check_can_fail() -> None:
    assert TPU_NAME.findall("torch.tpu.synchronize()") == ["torch.tpu.synchronize"]
    assert "torch.tpu.device" not in set(TPU_NAME.findall("torch.tpu.device_count()"))
    assert GENERATED_METHODS.search("{x}.tpu()")


def test_every_reference_row_has_a_rule() -> None:
    """Each row ID of the torch_xla → TorchTPU mapping is named by some rule's `ref`
    (a rule that folds a row in says so in its docs), and every `ref` names a row."""
    ids = set(reference_rows.read_copy())
    assert len(ids) > 150
    covered = {ref for rule in RULES for ref in rule.ref}
    assert sorted(ids - covered) == []
    assert sorted(covered - ids) == []


def test_the_copy_of_the_reference_rows_is_current() -> None:
    if not reference_rows.REFERENCE.exists():
        pytest.skip("the project's shared/reference/ is not beside this checkout: the copy is all there is")
    current = reference_rows.render(reference_rows.row_ids(reference_rows.REFERENCE.read_text(encoding="utf-8")))
    assert reference_rows.COPY.read_text(encoding="utf-8") == current, "the reference changed: run `python -m tests.reference_rows`"


def test_reference_row_ids_are_read_from_table_rows_only() -> None:
    text = "| ID | idiom |\n|----|----|\n| IMP02 | b |\n| IMP01 | a |\nsee IMP03\n| DST15 | c |\n| IMP01 | again |\n"
    ids = reference_rows.row_ids(text)
    assert ids == ["DST15", "IMP01", "IMP02"]
    assert reference_rows.read_copy_text(reference_rows.render(ids)) == ids


@pytest.mark.parametrize("alternative", prefilter.PATTERN.pattern.split(b"|"), ids=lambda a: a.decode())
def test_every_prefilter_token_holds_a_literal_the_fast_scan_looks_for(alternative: bytes) -> None:
    # A literal written out in the alternative is in every text it matches (no alternative
    # nests a group, so splitting on `|` gives them all).
    assert b"(" not in alternative.replace(b"\\(", b"")
    assert any(literal in alternative for literal in prefilter.LITERALS)


def test_the_fast_scan_agrees_with_the_pattern() -> None:
    root = Path(__file__).resolve().parent.parent
    texts = [b"x = 1\n", b"ax.set_xlabel('a')\n", b"XRT_TPU_CONFIG", b"'xla'", b"tpu_num_cores"]
    for part in ("fixtures", "examples", "xla2tpu", "tests"):
        texts += [path.read_bytes() for path in sorted((root / part).rglob("*.py"))]
    assert [may_hold_idiom(t) for t in texts] == [prefilter.PATTERN.search(t) is not None for t in texts]

"""The rule data itself: reachable past the prefilter, templates that parse, no forbidden names."""

from __future__ import annotations

import re
from pathlib import Path
import re._parser as sre_parse  # the stdlib's regex parser, to build a string a pattern matches

import libcst as cst
import pytest

from xla2tpu import catalogue, prefilter, templates
from xla2tpu.catalogue import Rule
from xla2tpu.prefilter import may_hold_idiom
from xla2tpu.patterns import compile_pattern
from xla2tpu.transforms import REGISTRY

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
                pieces = [chr(first_arg) if str(first_op) == "LITERAL" else "a"]
            elif name == "AT":
                pieces = [""]
            else:  # ANY, categories: any character the pattern accepts there
                pieces = ["a"]
            outs = [o + p for o in outs for p in pieces]
        return outs

    return walk(sre_parse.parse(pattern))


def _file_gate(rule: Rule) -> str | None:
    """Source text the rule's own `when` requires in the file, if any.

    `file-contains:` / `file-matches:` name it; `literal:P=V` / `value:V` require the literal
    V to be written in the file.
    """
    for condition in rule.when:
        if condition.kind in ("file-contains", "file-matches"):
            return condition.arg
        if condition.kind in ("literal", "value") and isinstance(condition.value, str):
            return repr(condition.value)
    return None


def _reachable(text: str) -> bool:
    return may_hold_idiom(text.encode())


SITE_RULES = [r for r in RULES if r.kind not in ("file", "lint")]


@pytest.mark.parametrize("rule", SITE_RULES, ids=_ids(SITE_RULES))
def test_prefilter_never_hides_an_idiom(rule: Rule) -> None:
    """Whatever a rule matches contains bytes the engine's prefilter looks for.

    File and lint rules are exempt: they judge files that are being migrated (a file rule
    changes what the other rules do, a lint reports a pattern of plain PyTorch that costs
    more once torch_xla's graph cuts are gone), so a file without any idiom has nothing
    for them to say.
    """
    gate = _file_gate(rule)
    if gate is not None and _reachable(gate):
        return  # the rule only fires in files that contain the gate text
    if rule.kind == "string-arg":
        assert rule.pattern is not None
        for example in _examples(rule.pattern.pattern):
            assert _reachable(f'"{example}"') or _reachable(f"'{example}'"), (rule.code, example)
        return
    for name in rule.match:
        # `{slot}`s of expression patterns stand for arbitrary code: only the literal part counts.
        literal = re.sub(r"\{\w+\}", "", name.removesuffix(".*"))
        assert _reachable(literal), f"{rule.code}: the prefilter would skip a file whose only idiom is {name!r}"


def test_example_builder_covers_every_branch() -> None:
    assert _examples(r"torch_xla(\.[\w.]+)?|torch-xla") == ["torch_xla", "torch-xla"]
    assert _examples(r"xla(:\d+)?") == ["xla"]


CASES = [(rule, case) for rule in RULES for case in rule.cases]
CASE_IDS = [f"{rule.code}-{i}" for rule in RULES for i, _ in enumerate(rule.cases)]


@pytest.mark.parametrize(("rule", "case"), CASES, ids=CASE_IDS)
def test_every_action_is_well_formed(rule: Rule, case: catalogue.Case) -> None:
    assert case.message.strip(), f"{rule.code}: a case has an empty message"
    if case.action == "replace":
        templates.is_statement(case.template)  # raises when neither an expression nor a statement
        slots = templates.required(case.template)
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


@pytest.mark.parametrize(("rule", "case"), CASES, ids=CASE_IDS)
def test_no_fix_emits_a_forbidden_name(rule: Rule, case: catalogue.Case) -> None:
    if case.action not in ("replace", "rename"):
        return
    emitted = set(TPU_NAME.findall(case.template))
    assert not emitted & NEVER_EMIT, f"{rule.code} emits {emitted & NEVER_EMIT}: use torch.accelerator"
    assert not GENERATED_METHODS.search(case.template), f"{rule.code} emits `.is_tpu` / `.tpu()`"


def test_the_forbidden_name_check_can_fail() -> None:
    assert TPU_NAME.findall("torch.tpu.synchronize()") == ["torch.tpu.synchronize"]
    assert "torch.tpu.device" not in set(TPU_NAME.findall("torch.tpu.device_count()"))
    assert GENERATED_METHODS.search("{x}.tpu()")


def test_every_reference_row_has_a_rule() -> None:
    """Each row ID of the torch_xla → TorchTPU mapping is named by some rule's `ref`
    (a rule that folds a row in says so in its docs)."""
    reference = Path(__file__).resolve().parents[2] / "shared" / "reference" / "torch_xla_to_torch_tpu.md"
    if not reference.exists():
        pytest.skip("the project's shared/reference/ is not beside this checkout")
    ids = set(re.findall(r"^\| ([A-Z]{2,4}\d{2}) \|", reference.read_text(encoding="utf-8"), re.M))
    assert len(ids) > 150
    covered = {ref for rule in RULES for ref in rule.ref}
    assert sorted(ids - covered) == []


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

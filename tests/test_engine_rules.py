"""Engine features rules are written with, each on a small catalogue of its own.

Expression patterns, rule-level `when`, the `name:` / `store` / `with-item` / `simple:` /
`file-matches:` conditions, reference `replace` with `{name}`, renames that keep a
matched prefix's tail, statement templates, `os.environ.update(...)`, file rules and the
Python 2 / notebook hints.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest

from xla2tpu.catalogue import rules as catalogue_mod
from xla2tpu.run import engine
from xla2tpu.catalogue import patterns
from xla2tpu.catalogue.diagnostics import FileResult, FixClass
from xla2tpu.detect.prechecks import code_only
from xla2tpu.catalogue.settings import Settings

DOCS = 'docs = "d"\n'


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rules: str, source: str, unsafe: bool = True) -> FileResult:
    """`source` processed with only the rules in `rules` (TOML) loaded."""
    (tmp_path / "rules.toml").write_text(textwrap.dedent(rules))
    catalogue = catalogue_mod.load(tmp_path)
    monkeypatch.setattr(catalogue_mod, "load", lambda directory=None: catalogue)
    apply = {FixClass.SAFE, FixClass.UNSAFE} if unsafe else {FixClass.SAFE}
    settings = Settings(frozenset(catalogue.by_code), frozenset(apply))
    result = engine.process_source("t.py", textwrap.dedent(source).encode(), settings)
    assert result.error is None, result.error
    return result


def output(result: FileResult, source: str) -> str:
    return (result.new_source or textwrap.dedent(source).encode()).decode()


def codes(result: FileResult) -> list[tuple[int, str, str]]:
    return [(d.line, d.code, d.fix.value) for d in result.diagnostics]


# ---------------------------------------------------------------------- expression patterns
def _match(pattern: str, code: str, imports: str = "") -> dict[str, str] | None:
    from xla2tpu.project.resolve import Canonicaliser, ImportResolver, resolve

    module = cst.parse_module(imports)
    resolver = ImportResolver(Canonicaliser({}))
    module.visit(resolver)
    found = patterns.match(
        patterns.compile_pattern(pattern), cst.parse_expression(code), lambda n: resolve(resolver.module_scope, n)
    )
    if found is None:
        return None
    return {name: cst.Module([]).code_for_node(node) for name, node in found.slots.items()}


def test_pattern_slots_bind_any_expression_and_layout_is_ignored() -> None:
    assert _match('{d}.type == "xla"', "batch[0].device.type=='xla'") == {"d": "batch[0].device"}
    assert _match('{d}.type == "xla"', '(t.device).type  ==  "xla"') == {"d": "(t.device)"}
    assert _match('{d}.type == "xla"', 'd.type == "cuda"') is None
    assert _match('{d}.type == "xla"', 'd.type == f"xla"') is None  # an f-string is not the literal
    assert _match('{d}.type == "xla"', 'd.type == "xla" == e') is None  # a chain is another shape


def test_pattern_dotted_names_match_by_resolution() -> None:
    pattern = 'torch_xla.runtime.device_type() == "TPU"'
    assert _match(pattern, 'xr.device_type() == "TPU"', "import torch_xla.runtime as xr") == {}
    assert _match(pattern, 'dt() == "TPU"', "from torch_xla.runtime import device_type as dt") == {}
    assert _match(pattern, 'xr.device_type() == "TPU"', "xr = object()") is None
    assert _match(pattern, 'xr.device_type() == "TPU"') is None


def test_candidate_keys_find_method_patterns_on_any_receiver() -> None:
    key = patterns.compile_pattern("{x}.tpu()").key
    assert key in patterns.candidate_keys(cst.parse_expression("torch.ones(2).tpu()"))
    assert key not in patterns.candidate_keys(cst.parse_expression("torch.ones(2).cpu()"))


EXPRESSION_RULE = """
[[rule]]
code = "XLA990"
name = "t"
kind = "expression"
summary = "s"
""" + DOCS + """
[[rule.case]]
match = ['{d}.type == "xla"']
fix = "safe"
replace = '{d}.type == "tpu"'
message = "m"

[[rule.case]]
match = ['torch_xla.core.xla_model.xla_device_hw({d}) == "TPU"']
fix = "unsafe"
replace = 'torch.device({d}).type == "tpu"'
message = "m"

[[rule.case]]
fix = "manual"
message = "m"

[[rule]]
code = "XLA991"
name = "api"
kind = "reference"
summary = "s"
match = ["torch_xla.*"]
""" + DOCS + """
[[rule.case]]
fix = "manual"
message = "m"
"""


def test_expression_rules_rewrite_and_claim_their_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = """\
    import torch_xla.core.xla_model as xm

    ok = t.device.type == "xla" and xm.xla_device_hw(t.device) == "TPU"
    """
    result = run(tmp_path, monkeypatch, EXPRESSION_RULE, source)
    assert output(result, source).endswith('ok = t.device.type == "tpu" and torch.device(t.device).type == "tpu"\n')
    # the reference rule does not also report `xm.xla_device_hw`: the pattern owns it
    assert codes(result) == [(3, "XLA990", "safe"), (3, "XLA990", "unsafe")]


# ---------------------------------------------------------------------- rule-level `when`, conditions
GATED = """
[[rule]]
code = "XLA990"
name = "t"
kind = "call"
summary = "s"
match = ["torch._dynamo.mark_dynamic"]
when = ["file-matches:^import torch_xla"]
""" + DOCS + """
[[rule.case]]
fix = "manual"
message = "m"
"""


def test_rule_level_when_skips_the_site_entirely(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gated = run(tmp_path, monkeypatch, GATED, "import torch\nimport torch_xla\ntorch._dynamo.mark_dynamic(x, 0)\n")
    assert codes(gated) == [(3, "XLA990", "manual")]
    # "torch_xla" in a string is not an import: the regex is anchored on a line start
    plain = run(tmp_path, monkeypatch, GATED, 'import torch\nx = "import torch_xla"\ntorch._dynamo.mark_dynamic(x, 0)\n')
    assert codes(plain) == []


REFERENCES = """
[[rule]]
code = "XLA990"
name = "t"
kind = "reference"
summary = "s"
match = ["torch_xla.core.xla_env_vars.*"]
""" + DOCS + """
[[rule.case]]
when = ["name:torch_xla.core.xla_env_vars.TPU_MESH_CTLER_ADDR"]
fix = "safe"
replace = '"TPU_MESH_CONTROLLER_ADDRESS"'
message = "m"

[[rule.case]]
fix = "safe"
replace = '{name}'
message = "m"

[[rule]]
code = "XLA991"
name = "u"
kind = "reference"
summary = "s"
match = ["m.EagerMode", "m.EagerMode.*", "m.eager_mode"]
assignments = true
""" + DOCS + """
[[rule.case]]
when = ["name:m.EagerMode|m.EagerMode.*"]
fix = "safe"
rename = "torch.tpu.EagerMode"
message = "m"

[[rule.case]]
fix = "safe"
rename = "torch.tpu.eager_mode"
message = "m"
"""


def test_reference_replace_name_conditions_assignments_and_tails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = """\
    import m
    import torch_xla.core.xla_env_vars as xenv

    a = xenv.PJRT_DEVICE
    b = xenv.TPU_MESH_CTLER_ADDR
    m.eager_mode = m.EagerMode.DEFER_NEVER
    """
    result = run(tmp_path, monkeypatch, REFERENCES, source)
    assert output(result, source) == textwrap.dedent("""\
    import m
    import torch
    import torch_xla.core.xla_env_vars as xenv

    a = "PJRT_DEVICE"
    b = "TPU_MESH_CONTROLLER_ADDRESS"
    torch.tpu.eager_mode = torch.tpu.EagerMode.DEFER_NEVER
    """)


def test_assignments_stay_untouched_without_the_flag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = "import torch_xla.core.xla_env_vars as xenv\nxenv.PJRT_DEVICE = 'X'\n"
    assert codes(run(tmp_path, monkeypatch, REFERENCES, source)) == []


STATEMENTS = """
[[rule]]
code = "XLA990"
name = "t"
kind = "call"
summary = "s"
match = ["torch_xla.core.xla_model.optimization_barrier_"]
params = ["tensors"]
""" + DOCS + """
[[rule.case]]
when = ["statement", "simple:tensors"]
fix = "unsafe"
replace = "{tensors}[:] = torch.tpu.ops.optimization_barrier({tensors})"
message = "m"

[[rule.case]]
fix = "manual"
message = "m"

[[rule]]
code = "XLA991"
name = "u"
kind = "call"
summary = "s"
match = ["torch_xla.step"]
""" + DOCS + """
[[rule.case]]
when = ["with-item"]
fix = "manual"
message = "with"

[[rule.case]]
fix = "manual"
message = "other"
"""


def test_statement_templates_and_simple_arguments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = """\
    import torch
    import torch_xla.core.xla_model as xm

    xm.optimization_barrier_(grads)
    xm.optimization_barrier_([a, b])
    y = xm.optimization_barrier_(grads)
    """
    result = run(tmp_path, monkeypatch, STATEMENTS, source)
    assert "grads[:] = torch.tpu.ops.optimization_barrier(grads)\n" in output(result, source)
    assert codes(result) == [(4, "XLA990", "unsafe"), (5, "XLA990", "manual"), (6, "XLA990", "manual")]


def test_with_item_is_a_with_that_binds_no_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = "import torch_xla\nwith torch_xla.step():\n    pass\nwith torch_xla.step() as s:\n    pass\n"
    result = run(tmp_path, monkeypatch, STATEMENTS, source)
    assert [d.message for d in result.diagnostics] == ["with", "other"]


# ---------------------------------------------------------------------- environment updates
ENV = """
[[rule]]
code = "XLA990"
name = "t"
kind = "env"
summary = "s"
match = ["PT_XLA_DEBUG", "XLA_IR_DEBUG", "XLA_USE_BF16"]
""" + DOCS + """
[[rule.case]]
when = ["name:PT_XLA_DEBUG|XLA_IR_DEBUG"]
fix = "safe"
action = "delete"
message = "m"

[[rule.case]]
fix = "manual"
message = "m"
"""


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ('os.environ.update({"PT_XLA_DEBUG": "1", "A": "2"})\n', 'os.environ.update({"A": "2"})\n'),
        ('os.environ.update({"PT_XLA_DEBUG": "1", "XLA_IR_DEBUG": "1"})\nx = 1\n', "x = 1\n"),
        ('os.environ.update(PT_XLA_DEBUG="1", A="2")\n', 'os.environ.update(A="2")\n'),
        ('os.environ.update(XLA_IR_DEBUG="1")\nx = 1\n', "x = 1\n"),
        ('os.environ.update({"XLA_USE_BF16": "1"})\n', 'os.environ.update({"XLA_USE_BF16": "1"})\n'),
        ('os.environ.update(cfg)\n', "os.environ.update(cfg)\n"),
    ],
)
def test_environ_update_removes_one_key_or_the_statement(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: str, after: str
) -> None:
    source = "import os\n" + before
    assert output(run(tmp_path, monkeypatch, ENV, source), source) == "import os\n" + after


# ---------------------------------------------------------------------- file rules, parse hints
FILE_RULE = """
[[rule]]
code = "XLA990"
name = "t"
kind = "file"
summary = "s"
pattern = '''PJRT_DEVICE["']?\\]?\\s*[=:,]\\s*["']CPU'''
disable = ["XLA991"]
""" + DOCS + """
[[rule.case]]
fix = "manual"
message = "other hardware: `{source}`"

[[rule]]
code = "XLA991"
name = "u"
kind = "call"
summary = "s"
match = ["torch_xla.core.xla_model.xla_device"]
""" + DOCS + """
[[rule.case]]
fix = "safe"
replace = 'torch.device("tpu")'
message = "m"
"""


def test_file_rule_reports_once_and_switches_rules_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = """\
    import os
    os.environ["PJRT_DEVICE"] = "CPU"
    os.environ.setdefault("PJRT_DEVICE", "CPU")
    import torch_xla.core.xla_model as xm
    d = xm.xla_device()
    """
    result = run(tmp_path, monkeypatch, FILE_RULE, source)
    assert result.new_source is None
    assert [(d.line, d.code, d.message) for d in result.diagnostics] == [
        (2, "XLA990", 'other hardware: `os.environ["PJRT_DEVICE"] = "CPU"`')
    ]


def test_file_rule_ignores_comments_and_docstrings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = '''\
    """Debug with PJRT_DEVICE=CPU."""
    # os.environ["PJRT_DEVICE"] = "CPU"
    import torch_xla.core.xla_model as xm
    d = xm.xla_device()
    '''
    result = run(tmp_path, monkeypatch, FILE_RULE, source)
    assert codes(result) == [(4, "XLA991", "safe")]


def test_file_rule_noqa(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = 'import os\nos.environ["PJRT_DEVICE"] = "CPU"  # noqa: XLA990\n'
    assert codes(run(tmp_path, monkeypatch, FILE_RULE, source)) == []


def test_code_only_keeps_offsets() -> None:
    source = 'x = "kept"  # gone\n"""doc\nstring"""\ny = 1\n'
    blanked = code_only(source)
    assert blanked.splitlines() == ['x = "kept"        ', "      ", "         ", "y = 1"]
    assert len(blanked) == len(source)


@pytest.mark.parametrize(
    ("source", "hint"),
    [
        ('import torch_xla\nprint "hello"\n', "looks like Python 2"),
        ("import torch_xla\ntry:\n    pass\nexcept ImportError, e:\n    pass\n", "looks like Python 2"),
        ("import torch_xla\n!pip install torch_xla\n", "notebook cell"),
        ("import torch_xla\nx = (\n", ""),
    ],
)
def test_parse_errors_say_why(source: str, hint: str) -> None:
    settings = Settings(catalogue_mod.load().select(["ALL"], []), frozenset({FixClass.SAFE}))
    result = engine.process_source("t.py", source.encode(), settings)
    assert result.error is not None and result.error.startswith("syntax error at")
    assert (hint in result.error) if hint else ("Python 2" not in result.error and "notebook" not in result.error)

"""Engine pieces: name resolution, spelling, statement deletion, import placement, prefilter."""

from __future__ import annotations

import ast
import dataclasses
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from xla2tpu.catalogue import rules as catalogue
from xla2tpu.catalogue.diagnostics import FixClass
from xla2tpu.run.engine import process_source
from xla2tpu.rewrite.layout import Layout
from xla2tpu.project.resolve import Canonicaliser, ImportResolver, resolve
from xla2tpu.catalogue.settings import Settings

from tests.fixture_cases import FIXTURES, ROOT

ALL = Settings(catalogue.load().select(["ALL"], []), frozenset({FixClass.SAFE, FixClass.UNSAFE}))


def fix(source: str, settings: Settings = ALL) -> str:
    result = process_source("t.py", textwrap.dedent(source).encode(), settings)
    assert result.error is None, result.error
    return (result.new_source or textwrap.dedent(source).encode()).decode()


def _resolved(source: str, expression: str) -> str | None:
    module = cst.parse_module(textwrap.dedent(source))
    resolver = ImportResolver(Canonicaliser(catalogue.load().module_renames))
    module.visit(resolver)
    return resolve(resolver.module_scope, cst.parse_expression(expression))


@pytest.mark.parametrize(
    ("source", "expression"),
    [
        ("import torch_xla.core.xla_model as xm", "xm.mark_step"),
        ("from torch_xla.core import xla_model as xm", "xm.mark_step"),
        ("from torch_xla.core import xla_model", "xla_model.mark_step"),
        ("import torch_xla", "torch_xla.core.xla_model.mark_step"),
        ("import torch_xla.core.xla_model", "torch_xla.core.xla_model.mark_step"),
        ("from torch_xla.core.xla_model import mark_step", "mark_step"),
        ("from torch_xla.core.xla_model import mark_step as ms", "ms"),
        ("try:\n    import torch_xla.core.xla_model as xm\nexcept ImportError:\n    xm = None", "xm.mark_step"),
        ("if available():\n    import torch_xla.core.xla_model as xm", "xm.mark_step"),
    ],
)
def test_every_import_style_resolves_to_one_name(source: str, expression: str) -> None:
    assert _resolved(source, expression) == "torch_xla.core.xla_model.mark_step"


def test_legacy_module_paths_resolve_as_current_ones() -> None:
    assert _resolved("import torch_xla.experimental.xla_sharding as xs", "xs.Mesh") == "torch_xla.distributed.spmd.Mesh"


def test_shadowed_names_do_not_resolve() -> None:
    assert _resolved("import torch_xla.core.xla_model as xm\nxm = object()", "xm.mark_step") is None
    assert _resolved("import os", "xm.mark_step") is None


def test_function_scope_shadowing() -> None:
    source = """\
    import torch_xla.core.xla_model as xm

    def a(xm):
        xm.mark_step()

    def b():
        xm.mark_step()
    """
    # `a`'s `xm` is its parameter: no read reaches the module's import once `b` is migrated.
    assert fix(source) == textwrap.dedent("""\
    def a(xm):
        xm.mark_step()

    def b():
        pass
    """)


def test_templates_use_the_files_own_aliases() -> None:
    source = """\
    import torch.distributed as dist
    import torch_xla.core.xla_model as xm

    def f():
        import torch as T
        return xm.wait_device_ops()
    """
    assert "return T.accelerator.synchronize()" in fix(source)


def test_deleting_keeps_the_comments_above_and_blocks_valid() -> None:
    source = """\
    import torch_xla.core.xla_model as xm

    for i in range(3):
        # keep me: it heads the code that follows
        xm.mark_step()
        print(i)
    while True:
        xm.mark_step()  # trailing comments go with their statement
        # a closing comment stays
    """
    assert fix(source) == textwrap.dedent("""\
    for i in range(3):
        # keep me: it heads the code that follows
        print(i)
    while True:
        pass
        # a closing comment stays
    """)


def test_import_goes_after_docstring_and_future_imports() -> None:
    source = '''\
    """Doc."""
    from __future__ import annotations

    import torch_xla.core.xla_model as xm

    d = xm.xla_device()
    '''
    assert fix(source) == textwrap.dedent('''\
    """Doc."""
    from __future__ import annotations

    import torch

    d = torch.device("tpu")
    ''')


def test_argument_comments_and_formatting_survive() -> None:
    source = """\
    import torch_xla

    f = torch_xla.compile(
        step,  # the step
        full_graph=True,
    )
    """
    # The comment after `step`, one argument per line and the trailing comma all survive;
    # only the name, the new `backend` argument and the keyword's new name change.
    assert fix(source) == textwrap.dedent("""\
    import torch

    f = torch.compile(
        step,  # the step
        backend="tpu",
        fullgraph=True,
    )
    """)


def test_reordered_arguments_keep_their_own_comments_and_the_closing() -> None:
    # The template puts `name` last; its end-of-line comment goes with it (so `)` moves to
    # the next line: the original had no line end there), the comment line above `step`
    # stays above `step`, and the call still closes without a trailing comma.
    source = """\
    import torch_xla

    f = torch_xla.compile(  # open
        # about step
        step,
        name="x",  # the name
        full_graph=True)
    """
    assert fix(source) == textwrap.dedent("""\
    import torch

    f = torch.compile(  # open
        # about step
        step,
        backend="tpu",
        fullgraph=True,
        name="x"  # the name
    )
    """)


def test_star_args_are_not_guessed() -> None:
    source = "import torch_xla.core.xla_model as xm\nd = xm.xla_device(*args)\n"
    result = process_source("t.py", source.encode(), ALL)
    assert result.new_source is None
    assert [d.fix for d in result.diagnostics if d.code == "XLA101"] == [FixClass.MANUAL]


def test_prefilter_skips_parsing() -> None:
    result = process_source("t.py", b"import torch\nprint(1)\n", ALL)
    assert not result.parsed and result.lines == 2


def test_skip_file_marker() -> None:
    result = process_source("t.py", b"# xla2tpu: skip-file\nimport torch_xla\n", ALL)
    assert result.diagnostics == [] and result.new_source is None


def test_a_rule_that_raises_is_an_internal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from xla2tpu.rewrite import rewriter

    def boom(*args: object, **kwargs: object) -> None:
        raise ValueError("boom")

    monkeypatch.setattr(rewriter.Rewriter, "leave_Call", boom)
    result = process_source("t.py", b"import torch_xla.core.xla_model as xm\nxm.mark_step()\n", ALL)
    assert result.internal_error and "please report it" in result.error
    assert result.new_source is None


def test_new_imports_go_in_sorted_place_in_their_section() -> None:
    source = """\
    import argparse
    import time

    import numpy as np
    import torch_xla.core.xla_model as xm

    xm.save({}, "ckpt.pt")
    d = xm.xla_device()
    """
    fixed = fix(source)
    assert fixed.startswith("import argparse\nimport os\nimport time\n\nimport numpy as np\nimport torch\n")


def test_a_file_the_parser_cannot_reprint_exactly_is_not_fixed() -> None:
    source = b"import torch_xla.core.xla_model as xm\nd = xm.xla_device()\n \n  # c\n\t# d\n"
    result = process_source("t.py", source, ALL)
    assert result.new_source is None
    assert result.error is not None and result.error.startswith("not fixed:")
    assert [d.code for d in result.diagnostics] == ["XLA001", "XLA101"]
    assert not any(d.fixed for d in result.diagnostics)


def test_lines_the_parser_cannot_reprint_in_an_untouched_statement_are_kept() -> None:
    # The odd lines belong to `x = 1`, which no fix touches: its bytes are copied, not reprinted.
    source = b"import torch_xla.core.xla_model as xm\nd = xm.xla_device()\nx = 1\n \n  # c\n\t# d\n"
    result = process_source("t.py", source, ALL)
    assert result.error is None, result.error
    assert result.new_source is not None
    assert result.new_source.endswith(b"\nx = 1\n \n  # c\n\t# d\n")
    assert b"xla_device" not in result.new_source


_SPAN_SOURCES = sorted(
    [*FIXTURES.rglob("*.py"), *(ROOT / "xla2tpu").rglob("*.py"), *(ROOT / "tests").rglob("*.py")]
)


@pytest.mark.parametrize("path", _SPAN_SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_statement_spans_from_cpython_tree_match_libcst(path: Path) -> None:
    """The slices taken from `ast` line numbers are exactly the code LibCST gives each statement."""
    source = path.read_text(encoding="utf-8")
    try:
        tree = ast.parse(source)
    except SyntaxError:
        pytest.skip("not Python that CPython accepts")
    module = cst.parse_module(source)
    layout = Layout.full(module, source, tree)
    assert layout.exact
    assert layout.header(module) + "".join(layout.texts) + layout.footer(module) == source
    assert layout.texts == [module.code_for_node(statement) for statement in module.body]


# --------------------------------------------------------------------- the per-file pipe

def _process(source: bytes, path: str = "t.py"):  # type: ignore[no-untyped-def]
    return process_source(path, source, ALL)


def test_a_lint_reads_a_statement_that_holds_no_rewrite() -> None:
    # A reduced parse keeps the statements with sites, and the ones a lint asks for: this
    # training loop, far from any site, holds only a host sync XLA420 reports.
    train = textwrap.dedent("""\


        def train(model, loader, optimizer):
            for x, y in loader:
                loss = model(x, y)
                loss.backward()
                optimizer.step()
                print(loss.item())
        """)
    source = "import torch_xla.core.xla_model as xm\n\ndevice = xm.xla_device()\n" + _PLAIN + train
    line = source.splitlines().index("        print(loss.item())") + 1
    assert [(d.code, d.line, d.col) for d in _process(source.encode()).diagnostics if d.code == "XLA420"] == [("XLA420", line, 15)]


_PLAIN = "".join(f"\n\ndef f{n}(x):\n    return x + {n}\n" for n in range(50))


def test_a_file_is_parsed_in_part(monkeypatch: pytest.MonkeyPatch) -> None:
    # The reduced parse is taken when it pays: LibCST never sees the statements no pass needs.
    taken: list[bool] = []
    original = Layout.reduced_parse.__func__  # type: ignore[attr-defined]

    def spy(cls, *args, **kwargs):  # type: ignore[no-untyped-def]
        layout = original(cls, *args, **kwargs)
        taken.append(layout is not None)
        return layout

    monkeypatch.setattr(Layout, "reduced_parse", classmethod(spy))
    result = _process(f"import torch_xla.core.xla_model as xm\n{_PLAIN}\n\ndevice = xm.xla_device()\n".encode())
    assert taken == [True]
    assert result.parsed and result.new_source is not None
    assert not _process(b"x = 1\n").parsed  # the prefilter let nothing through


def test_a_hardware_finding_spans_its_evidence() -> None:
    result = _process(b"import torch\nimport torch_neuronx\nimport torch_xla.core.xla_model as xm\ndevice = xm.xla_device()\n")
    [finding] = [d for d in result.diagnostics if d.code == "XLA100"]
    assert (finding.line, finding.col, finding.end_line, finding.end_col) == (2, 1, 2, 21)  # the statement


def test_the_first_evidence_is_the_first_in_the_walk_decorators_too() -> None:
    # Statements that span no candidate line are not walked: a decorator's line is its
    # definition's (tenstorrent's vllm plugin, a method's `@torch.compile(backend="tt")`).
    source = (b"import os\nimport torch\nimport torch_xla\n\n\nclass P:\n    def a(self):\n        if x:\n"
              b"            w = os.environ.get('TTXLA_X')\n\n    @torch.compile(backend='tt')\n    def b(self):\n        pass\n")
    [finding] = [d for d in _process(source).diagnostics if d.code == "XLA100"]
    assert (finding.line, finding.col) == (11, 6)


@pytest.mark.parametrize("rewrite", [True, False])
def test_a_launch_of_one_process_made_a_call_leaves_one_process(rewrite: bool) -> None:
    # `xmp.spawn(fn, nprocs=1)` -> `fn(0)`: no worker joins a process group (a TorchTPU
    # launch's would), so the program runs one process and torch_xla reduced nothing.
    source = (b"import torch_xla.core.xla_model as xm\nimport torch_xla.distributed.xla_multiprocessing as xmp\n\n\n"
              b"def _mp_fn(index, model, opt):\n    model(1).backward()\n    xm.optimizer_step(opt)\n\n\n"
              b"if __name__ == '__main__':\n    xmp.spawn(_mp_fn, args=(m, o), nprocs=%s)\n")
    result = process_source("t.py", source % b"1", dataclasses.replace(ALL, rewrite=rewrite))
    assert result.facts is not None and result.facts.processes.value == "one"
    assert [(d.code, d.fix, d.fixed) for d in result.diagnostics if d.code == "XLA401"] == [("XLA401", FixClass.SAFE, True)]
    if rewrite:
        assert result.new_source is not None and b"    opt.step()\n" in result.new_source
    many = process_source("t.py", source % b"8", dataclasses.replace(ALL, rewrite=rewrite))
    assert many.facts is not None and many.facts.processes.value == "launched"  # TorchTPU's launch
    # Another launch left for a human still starts processes.
    both = process_source("t.py", source % b"1)\n    x = xmp.spawn(_mp_fn, args=(m, o)", dataclasses.replace(ALL, rewrite=rewrite))
    assert both.facts is not None and both.facts.processes.value == "spawn"
    assert [(d.code, d.fix) for d in both.diagnostics if d.code == "XLA401"] == [("XLA401", FixClass.MANUAL)]


def test_the_encoding_read_is_the_encoding_written() -> None:
    source = "# -*- coding: latin-1 -*-\nimport torch_xla.core.xla_model as xm\nname = 'caf\xe9'\nd = xm.xla_device()\n"
    result = _process(source.encode("latin-1"))
    assert result.encoding == "iso-8859-1"  # the codec's own name
    assert result.new_source is not None and "caf\xe9".encode("latin-1") in result.new_source


@pytest.mark.parametrize(
    ("source", "hint"),
    [
        (b'print "torch_xla"\n',  # on the first line
         " (this looks like Python 2 source; xla2tpu reads Python 3 only: port the file first, e.g. with `2to3`)"),
        (b"import torch_xla\n!pip install torch_xla\n",
         " (this looks like a notebook cell with a shell or magic command (`!pip`, `%env`): drop those lines"
         " or export the notebook with `jupyter nbconvert --to script`)"),
    ],
)
def test_a_syntax_error_names_cpythons_position_and_the_likely_cause(source: bytes, hint: str) -> None:
    try:
        ast.parse(source)
    except SyntaxError as exc:
        position = f"{exc.lineno}:{exc.offset}"
    error = _process(source).error
    assert error is not None and error.startswith(f"syntax error at {position}: ") and error.endswith(hint), error


def test_a_syntax_error_libcst_finds_is_reported_one_based() -> None:
    # CPython rejects this too; the position is the one LibCST gives, its column made 1-based.
    source = "import torch_xla\ndef f(:\n    pass\n"
    with pytest.raises(cst.ParserSyntaxError) as raised:
        cst.parse_module(source)
    exc = raised.value
    assert _process(source.encode()).error == f"syntax error at {exc.raw_line}:{exc.raw_column + 1}: {exc.message}"


@pytest.mark.parametrize(
    ("where", "message"),
    [("Outline", "cannot analyse: the code nests too deeply"), ("cst.parse_module", "cannot parse: the code nests too deeply")],
)
def test_recursion_in_a_pass_is_an_error_for_that_file(
    where: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Nesting deep enough to exhaust LibCST's or a pass's recursion, past the depth checks
    # made before: injected, as no input is known to get there.
    def too_deep(*args: object, **kwargs: object) -> None:
        raise RecursionError

    monkeypatch.setattr(f"xla2tpu.rewrite.libcst_pass.{where}", too_deep)
    result = _process(b"import torch_xla.core.xla_model as xm\ndevice = xm.xla_device()\n")
    assert (result.error, result.diagnostics, result.new_source) == (message, [], None)


@pytest.mark.parametrize("folder", ["optimum/neuron/trainers", "src/neuronx_distributed/utils", "torch-neuronx/training/mnist", "python_package/tt_torch"])
def test_a_file_inside_another_vendors_package_is_that_vendors_code(folder: str) -> None:
    """Relative imports only, no vendor named in the file: where it lives shows the hardware."""
    source = b"import torch_xla.core.xla_model as xm\n\n\ndef device():\n    return xm.xla_device()\n"
    result = _process(source, f"{folder}/utils.py")
    assert [(d.code, d.line, d.fixed) for d in result.diagnostics] == [("XLA100", 1, False)]
    assert "folder" in result.diagnostics[0].message and result.new_source is None
    elsewhere = _process(source, "src/mytpu/utils.py")
    assert {d.code for d in elsewhere.diagnostics} == {"XLA001", "XLA101"}

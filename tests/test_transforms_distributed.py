"""Launch, data-exchange and collective transforms (XLA601, XLA616, XLA618, XLA640-645)."""

from __future__ import annotations

import textwrap

import libcst as cst

from xla2tpu.catalogue import rules as catalogue
from xla2tpu.catalogue.diagnostics import Diagnostic, FixClass
from xla2tpu.run.engine import process_source
from xla2tpu.project.scope import Scope
from xla2tpu.catalogue.settings import Settings
from xla2tpu.rewrite.transforms.base import CallSite
from xla2tpu.project.line_length import LONGEST
from xla2tpu.rewrite.transforms.forms import fresh_name, tuple_items


def _run(source: str) -> tuple[str, list[Diagnostic]]:
    """The fixed text (unsafe fixes included) and every finding; generated lines as the
    transforms print them (the widest line length: nothing is wrapped)."""
    cat = catalogue.load()
    settings = Settings(cat.select(["ALL"], []), frozenset({FixClass.SAFE, FixClass.UNSAFE}), "eager", LONGEST)
    data = textwrap.dedent(source).encode()
    result = process_source("t.py", data, settings)
    assert result.error is None, result.error
    return (result.new_source or data).decode(), result.diagnostics


def _fix(source: str) -> str:
    return _run(source)[0]


def _findings(diagnostics: list[Diagnostic], code: str) -> list[tuple[int, int, FixClass, bool]]:
    return [(d.line, d.col, d.fix, d.fixed) for d in diagnostics if d.code == code]


def _site(code: str) -> CallSite:
    module = cst.parse_module(code)
    call = cst.parse_expression("f()")
    assert isinstance(call, cst.Call)
    return CallSite(call, call, {}, {}, None, module, code, Scope(None), [], lambda q: (q, None))


def test_fresh_name_avoids_every_word_of_the_module() -> None:
    assert fresh_name(_site("x = 1\n"), "tensor") == "tensor"
    assert fresh_name(_site("tensor = 1\ntensor_2 = 2\n"), "tensor") == "tensor_3"
    assert fresh_name(_site("my_tensor = 1\n"), "tensor") == "tensor"


def test_tuple_items_refuses_starred_elements() -> None:
    assert tuple_items(cst.parse_expression("(a, b)")) is not None
    assert tuple_items(cst.parse_expression("[a, *b]")) is None
    assert tuple_items(cst.parse_expression("a")) is None


def test_single_process_spawn_spreads_a_tuple_and_stars_a_name() -> None:
    fixed = _fix(
        """
        import torch_xla.distributed.xla_multiprocessing as xmp

        def fn(i, a, b):
            pass

        def main(args):
            xmp.spawn(fn, args=(1, 2), nprocs=1)
            xmp.spawn(fn, args, 1)
        """
    )
    assert "    fn(0, 1, 2)\n" in fixed
    assert "    fn(0, *args)\n" in fixed


def test_mesh_reduce_buffer_does_not_clobber_an_existing_name() -> None:
    fixed = _fix(
        """
        import torch_xla.core.xla_model as xm

        def f(acc, acc_per_rank):
            acc = xm.mesh_reduce("acc", acc, max)
            return acc_per_rank
        """
    )
    assert "acc_per_rank_2 = [" in fixed
    assert "acc = max(acc_per_rank_2)" in fixed


def test_reduce_type_is_read_from_a_keyword_or_a_string() -> None:
    fixed = _fix(
        """
        import torch_xla.core.xla_model as xm

        def f(t):
            a = xm.all_reduce(inputs=t, reduce_type="mul", scale=1.0)
            b = xm.all_reduce(xm.REDUCE_OR, t)
            return a, b
        """
    )
    assert 'all_reduce(t, "product", torch.distributed.group.WORLD)\n' in fixed  # scale 1.0 dropped
    assert 'all_reduce(t, "bor", torch.distributed.group.WORLD)\n' in fixed


def test_an_unknown_reduction_is_left_manual() -> None:
    # Next to a reduction the transform knows, which it rewrites: the rule read both calls
    # and left only the one whose reduction is a run-time value.
    fixed, diagnostics = _run(
        """
        import torch_xla.core.xla_model as xm

        def f(t, op):
            a = xm.reduce_scatter(op, t, 1.0, 0, 4)
            b = xm.reduce_scatter(xm.REDUCE_SUM, t, 1.0, 0, 4)
            return a, b
        """
    )
    assert _findings(diagnostics, "XLA642") == [(5, 9, FixClass.MANUAL, False), (6, 9, FixClass.UNSAFE, True)]
    assert "    a = xm.reduce_scatter(op, t, 1.0, 0, 4)\n" in fixed
    assert '    b = torch.distributed._functional_collectives.reduce_scatter_tensor(t, "sum", 0, torch.distributed.group.WORLD)\n' in fixed


def test_broadcast_of_a_computed_model_is_manual() -> None:
    # The fix names the model twice (`.parameters()`, `.buffers()`): a call would run twice,
    # so only a plain name is rewritten.
    fixed, diagnostics = _run(
        """
        import torch_xla.core.xla_model as xm

        def f(build, model):
            xm.broadcast_master_param(build())
            xm.broadcast_master_param(model)
        """
    )
    assert _findings(diagnostics, "XLA618") == [(5, 5, FixClass.MANUAL, False), (6, 5, FixClass.UNSAFE, True)]
    [manual] = [d for d in diagnostics if d.code == "XLA618" and not d.fixed]
    assert manual.message.startswith("`xm.broadcast_master_param(build())`: broadcast each of `model.parameters()`")
    assert "    xm.broadcast_master_param(build())\n" in fixed
    assert "for tensor in itertools.chain(model.parameters(), model.buffers()):" in fixed

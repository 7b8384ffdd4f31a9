"""The device-loader transforms (XLA501 / XLA502): which loop shapes are rewritten, and how."""

from __future__ import annotations

import textwrap

from xla2tpu.catalogue import rules as catalogue
from xla2tpu.catalogue.diagnostics import FixClass
from xla2tpu.run.engine import process_source
from xla2tpu.catalogue.settings import Settings


def _fix(source: str) -> tuple[str, list[str]]:
    """The fixed source (with every rule, unsafe fixes on) and the codes left manual."""
    cat = catalogue.load()
    settings = Settings(cat.select(["ALL"], []), frozenset({FixClass.SAFE, FixClass.UNSAFE}), "eager")
    data = textwrap.dedent(source).encode()
    result = process_source("t.py", data, settings)
    assert result.error is None, result.error
    manual = [d.code for d in result.diagnostics if d.fix is FixClass.MANUAL and d.code.startswith("XLA5")]
    return (result.new_source or data).decode(), manual


def test_a_function_fed_from_two_call_sites_gets_its_moves_once() -> None:
    fixed, manual = _fix(
        """
        import torch_xla.distributed.parallel_loader as pl

        def loop_fn(loader, model):
            for x, y in loader:
                model(x, y)

        def run(model, train, valid, device):
            loop_fn(pl.MpDeviceLoader(train, device), model)
            loop_fn(pl.MpDeviceLoader(valid, device), model)
        """
    )
    assert manual == []
    assert fixed.count('x, y = x.to("tpu"), y.to("tpu")') == 1


def test_a_parameter_shadowing_the_function_name_is_not_followed() -> None:
    fixed, manual = _fix(
        """
        import torch_xla.distributed.parallel_loader as pl

        def loop_fn(loader):
            for x in loader:
                print(x)

        def run(loop_fn, loader, device):
            loop_fn(pl.MpDeviceLoader(loader, device))
        """
    )
    # Not followed into `loop_fn`: the wrapper becomes the copy of torch_xla's class instead.
    assert manual == []
    assert "x = torch" not in fixed and "loop_fn(MpDeviceLoader(loader, device))" in fixed


def test_a_closure_keeps_the_callers_device_name() -> None:
    fixed, _ = _fix(
        """
        import torch_xla.core.xla_model as xm
        import torch_xla.distributed.parallel_loader as pl

        def run(model, loader):
            device = xm.xla_device()

            def loop_fn(batches):
                for x, y in batches:
                    model(x, y)

            loop_fn(pl.MpDeviceLoader(loader, device))
        """
    )
    assert "x, y = x.to(device), y.to(device)" in fixed


def test_a_use_before_the_assignment_is_not_rewritten() -> None:
    fixed, manual = _fix(
        """
        import torch_xla.distributed.parallel_loader as pl

        def run(model, loader, device):
            device_loader = loader
            for epoch in range(2):
                for x in device_loader:
                    model(x)
                device_loader = pl.MpDeviceLoader(loader, device)
        """
    )
    # The loop is not rewritten: the wrapper becomes the copy of torch_xla's class.
    assert manual == []
    assert "            model(x)\n        device_loader = MpDeviceLoader(loader, device)" in fixed


def test_enumerate_needs_an_index_and_a_batch() -> None:
    fixed, manual = _fix(
        """
        import torch_xla.distributed.parallel_loader as pl

        def run(model, loader, device):
            for pair in enumerate(pl.MpDeviceLoader(loader, device)):
                model(pair)
        """
    )
    # No batch to move in the loop: the wrapper becomes the copy of torch_xla's class.
    assert manual == []
    assert "for pair in enumerate(MpDeviceLoader(loader, device)):" in fixed


def test_underscore_items_are_not_moved() -> None:
    fixed, _ = _fix(
        """
        import torch_xla.distributed.parallel_loader as pl

        def run(model, loader, device):
            for _, (x, _) in enumerate(pl.MpDeviceLoader(loader, device)):
                model(x)
        """
    )
    assert "        x = x.to(device)\n" in fixed


def test_a_stored_parallel_loader_is_unwrapped_at_each_per_device_loader() -> None:
    fixed, manual = _fix(
        """
        import torch_xla.distributed.parallel_loader as pl

        def run(model, loader, device):
            para_loader = pl.ParallelLoader(loader, [device])
            for x in para_loader.per_device_loader(device):
                model(x)
        """
    )
    assert manual == []
    assert "para_loader" not in fixed  # no alias of the plain loader is left
    assert "for x in loader:\n" in fixed
    assert "x = torch.utils._pytree.tree_map_only(torch.Tensor, lambda t: t.to(device), x)" in fixed


def test_a_stored_parallel_loader_used_otherwise_becomes_the_copy() -> None:
    fixed, manual = _fix(
        """
        import torch_xla.distributed.parallel_loader as pl

        def run(model, loader, device):
            para_loader = pl.ParallelLoader(loader, [device])
            print(para_loader)
            for x in para_loader.per_device_loader(device):
                model(x)
        """
    )
    # Its loop is not rewritten: the wrapper becomes the copy of torch_xla's class.
    assert manual == []
    assert "para_loader = ParallelLoader(loader, [device])" in fixed and "x = torch" not in fixed
